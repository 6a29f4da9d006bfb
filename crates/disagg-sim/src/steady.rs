//! Steady-state statistics of a plan answer (`docs/planning.md`): the warm-up cut detected by
//! MSER-5 on the number in system at each arrival, the per-request SLO outcomes after it, and
//! the 95% confidence interval of the SLO attainment, from independent replications (a generated
//! workload) or from batch means within the one replay (a trace).

use disagg_model::Error;
use serde::Serialize;

use crate::scenario::SimConfig;
use crate::serving::{simulate_workload, RunResult};
use crate::workload::Source;

/// Observations per batch of MSER-5 (`docs/planning.md#mser-5`).
pub const MSER_BATCH: usize = 5;

/// Batches of the batch-means interval of a trace replay (`docs/planning.md#batch-means`).
pub const TRACE_BATCHES: usize = 20;

/// How precise an estimate must be, and how much simulation it may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CiOptions {
    /// Replicate until the 95% interval's half-width is at most this (a fraction: 0.01 = 1 pp).
    pub half_width: f64,
    /// At most this many replications (at least 2).
    pub max_replications: u32,
}

impl Default for CiOptions {
    fn default() -> Self {
        CiOptions {
            half_width: 0.01,
            max_replications: 20,
        }
    }
}

/// The SLO-attainment estimate of one configuration (`docs/planning.md#estimate`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Point estimate: fraction of measured requests that finished and met both SLOs.
    pub mean: f64,
    /// Lower end of the 95% confidence interval (clipped to [0, 1]).
    pub low: f64,
    /// Upper end of the 95% confidence interval (clipped to [0, 1]).
    pub high: f64,
    /// Half-width: the larger distance from the mean to an end of the interval (the t
    /// interval `t * s / sqrt(k)`, or the Wilson floor where wider; `docs/planning.md#floor`).
    pub half_width: f64,
    /// `replications` (a generated workload) or `batch-means` (a trace replay).
    pub method: String,
    /// Simulations run (1 for a trace).
    pub replications: u32,
    /// Requests measured (after each replication's warm-up cut), summed.
    pub requests: u64,
    /// The largest warm-up cut of a replication, in requests (arrival order).
    pub warmup_cut: u64,
    /// Every replication reached a steady state (`docs/planning.md#steady`).
    pub steady: bool,
    /// Why not, when not steady.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsteady: Option<String>,
    /// The half-width target was not reached: the replication cap (or the trace's length) stopped it.
    pub capped: bool,
}

impl Estimate {
    /// Shown to meet `target`: steady, and the lower confidence bound at least `target`.
    pub fn meets(&self, target: f64) -> bool {
        self.steady && self.low >= target
    }

    /// Shown to miss `target`: not steady, or the upper confidence bound below `target`.
    pub fn misses(&self, target: f64) -> bool {
        !self.steady || self.high < target
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (`docs/planning.md#interval`):
/// a table for 1 to 30, the Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5) above, which
/// agrees with the exact quantile to 1e-7 there. `df = 0` gives infinity.
pub fn t975(df: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.7062047, 4.3026527, 3.1824463, 2.7764451, 2.5705818, 2.4469119, 2.3646243, 2.3060041,
        2.2621572, 2.2281389, 2.2009852, 2.1788128, 2.1603687, 2.1447867, 2.1314495, 2.1199053,
        2.1098156, 2.1009220, 2.0930241, 2.0859634, 2.0796138, 2.0738731, 2.0686576, 2.0638986,
        2.0595386, 2.0555294, 2.0518305, 2.0484071, 2.0452296, 2.0422725,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df as usize - 1],
        _ => {
            let z: f64 = 1.959963984540054;
            let v = df as f64;
            let g1 = (z.powi(3) + z) / 4.0;
            let g2 = (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / 96.0;
            let g3 = (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / 384.0;
            let g4 = (79.0 * z.powi(9) + 776.0 * z.powi(7) + 1482.0 * z.powi(5)
                - 1920.0 * z.powi(3)
                - 945.0 * z)
                / 92160.0;
            z + g1 / v + g2 / (v * v) + g3 / v.powi(3) + g4 / v.powi(4)
        }
    }
}

/// Mean, half-width of the 95% t interval of `xs` (`docs/planning.md#interval`):
/// `t975(k - 1) * s / sqrt(k)` with `s` the sample standard deviation (divisor `k - 1`).
/// One value: infinite half-width.
pub fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let k = xs.len();
    if k == 0 {
        return (f64::NAN, f64::INFINITY);
    }
    let mean = xs.iter().sum::<f64>() / k as f64;
    if k == 1 {
        return (mean, f64::INFINITY);
    }
    let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    let s = (ss / (k - 1) as f64).sqrt();
    (mean, t975(k as u64 - 1) * s / (k as f64).sqrt())
}

/// The 95% Wilson score interval of `met` successes in `n` trials (`docs/planning.md#floor`):
/// centre `(p + z²/2n) / (1 + z²/n)`, half-width `z / (1 + z²/n) * sqrt(p(1-p)/n + z²/4n²)`, z =
/// 1.959964. `(0, 1)` when `n` is 0.
pub fn wilson(met: f64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (z, n) = (1.959964_f64, n as f64);
    let p = met / n;
    let z2n = z * z / n;
    let centre = (p + z2n / 2.0) / (1.0 + z2n);
    let half = z / (1.0 + z2n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The interval of an estimate (`docs/planning.md#floor`): the t interval `mean ± hw`, widened
/// to the Wilson interval of the `met` of `n` pooled requests where that is wider (a few
/// replications that agree by chance, e.g. all at 100%, give a t interval of width 0).
/// Returns `(low, high, half_width)`, the half-width the larger distance from the mean.
pub fn interval(mean: f64, hw: f64, met: f64, n: u64) -> (f64, f64, f64) {
    let (wl, wh) = wilson(met, n);
    let low = (mean - hw).min(wl).clamp(0.0, 1.0);
    let high = (mean + hw).max(wh).clamp(0.0, 1.0);
    (low, high, hw.max(mean - wl).max(wh - mean))
}

/// What MSER-5 found on a series (`docs/planning.md#mser-5`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mser {
    /// Observations to drop from the start (a multiple of the batch size).
    pub cut: usize,
    /// The statistic was still falling at the end of the searched first half: the truncation
    /// the run asks for lies beyond half the run.
    pub beyond_half: bool,
}

/// MSER with batches of `batch` observations (White 1997; MSER-5 with `batch` = 5): batch means
/// `z_1..z_k` of consecutive observations (a last partial batch is ignored), and the cut `d`
/// batches minimising `sum_{j>d} (z_j - mean_d)^2 / (k - d)^2` over `d` in `0..=k/2` (the first
/// minimum). A minimum at `d = k/2` (with `k >= 4`) means the statistic still falls at half the
/// run: `beyond_half`. Fewer than 4 batches: no cut.
pub fn mser(series: &[f64], batch: usize) -> Mser {
    let batch = batch.max(1);
    let k = series.len() / batch;
    if k < 4 {
        return Mser {
            cut: 0,
            beyond_half: false,
        };
    }
    let z: Vec<f64> = series
        .chunks_exact(batch)
        .map(|c| c.iter().sum::<f64>() / batch as f64)
        .collect();
    let half = k / 2;
    let (mut best, mut best_d) = (f64::INFINITY, 0);
    for d in 0..=half {
        let rest = &z[d..];
        let m = rest.len() as f64;
        let mean = rest.iter().sum::<f64>() / m;
        let ss: f64 = rest.iter().map(|x| (x - mean) * (x - mean)).sum();
        let stat = ss / (m * m);
        if stat < best {
            best = stat;
            best_d = d;
        }
    }
    Mser {
        cut: best_d * batch,
        beyond_half: best_d == half,
    }
}

/// One run read in arrival order (`docs/planning.md#outcomes`).
#[derive(Clone, Debug, PartialEq)]
pub struct RunSeries {
    /// Requests in the system (arrived, not finished, not rejected) just after each arrival,
    /// itself included.
    pub in_system: Vec<f64>,
    /// The arrival times, sorted (seconds).
    pub arrival_s: Vec<f64>,
    /// 1 if the request finished and met both SLOs, else 0 (a rejected request misses).
    pub met: Vec<f64>,
}

/// The series of `res` in arrival order (ties in rid order).
pub fn run_series(res: &RunResult) -> RunSeries {
    let recs: Vec<_> = res.requests().collect();
    let mut order: Vec<usize> = (0..recs.len()).collect();
    order.sort_by(|&a, &b| recs[a].arrival_s.total_cmp(&recs[b].arrival_s));
    let mut finishes: Vec<f64> = recs.iter().filter_map(|r| r.finish_s).collect();
    finishes.sort_by(f64::total_cmp);
    let (mut fin, mut rejected) = (0usize, 0usize);
    let mut in_system = Vec::with_capacity(order.len());
    let mut met = Vec::with_capacity(order.len());
    let mut arrival_s = Vec::with_capacity(order.len());
    for (i, &rid) in order.iter().enumerate() {
        let t = recs[rid].arrival_s;
        while fin < finishes.len() && finishes[fin] <= t {
            fin += 1;
        }
        if recs[rid].finish_s.is_none() {
            rejected += 1;
        }
        in_system.push((i + 1 - fin.min(i + 1)).saturating_sub(rejected) as f64);
        met.push(if res.met_slos(rid) { 1.0 } else { 0.0 });
        arrival_s.push(t);
    }
    RunSeries {
        in_system,
        arrival_s,
        met,
    }
}

/// One run's measured part (`docs/planning.md#steady`).
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Requests dropped from the start: max(MSER-5's cut, the reference's warm-up fraction).
    pub cut: usize,
    /// The SLO outcomes after the cut, arrival order.
    pub met: Vec<f64>,
    /// None if steady, else why not.
    pub unsteady: Option<String>,
}

/// The warm-up cut and the steadiness verdict of one run (`docs/planning.md#steady`): the cut is
/// the larger of MSER-5's on the number in system and `floor(n * warmup_frac)`; the run is not
/// steady if MSER-5 asks for more than half of it, or if the mean number in system over the last
/// tenth of the measured arrivals exceeds 1.5 x its mean over all measured arrivals plus 1 (the
/// queue still growing at the end).
pub fn measure(s: &RunSeries, warmup_frac: f64) -> Measured {
    let n = s.met.len();
    let m = mser(&s.in_system, MSER_BATCH);
    let reference = ((n as f64 * warmup_frac) as usize).min(n);
    let cut = m.cut.max(reference);
    let mut unsteady = None;
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    // `docs/planning.md#steady`: MSER-5 at half the run is a rising level only when the second
    // half holds clearly more requests than the first (a lightly loaded run's flat, integer-valued
    // tail also minimises the statistic there; it is steady, cut at half).
    let h = s.in_system.len() / 2;
    if m.beyond_half && h > 0 && mean(&s.in_system[h..]) > 1.5 * mean(&s.in_system[..h]) + 1.0 {
        unsteady = Some("MSER-5 puts the warm-up beyond half the run".to_string());
    } else {
        // Still growing at the end: the test of `summary.overload` (`docs/serving-model.md#overload`),
        // the least-squares growth of the number in system over the last quarter of the arrivals
        // above max(m/10, 3 sqrt m).
        use crate::metrics::overload::{growth_threshold, trend, MIN_WINDOW};
        let n = s.in_system.len();
        let start = (n * 3 / 4).max(cut);
        if n - start.min(n) >= MIN_WINDOW {
            let pts: Vec<(f64, f64)> = (start..n)
                .map(|k| (s.arrival_s[k], s.in_system[k]))
                .collect();
            let g = trend(&pts);
            if g > growth_threshold(pts.len()) {
                unsteady = Some(format!(
                    "the number in system is still growing at the end (by {} over the last {} \
                     arrivals)",
                    crate::ranges::show_f64(g.round()),
                    pts.len()
                ));
            }
        }
    }
    Measured {
        cut,
        met: s.met[cut..].to_vec(),
        unsteady,
    }
}

/// The seed of replication `k` of a workload seeded `seed` (`docs/planning.md#replications`):
/// `seed` itself for `k = 0` (the run `disagg run` makes), else SplitMix64 (Steele, Lea & Flood
/// 2014) of `seed + k * 0x9E3779B97F4A7C15` (wrapping).
pub fn replication_seed(seed: u64, k: u32) -> u64 {
    if k == 0 {
        return seed;
    }
    let mut z = seed.wrapping_add((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Replication `k` of `cfg` (`k = 0`: `cfg`'s own requests, as `disagg run`).
pub fn replicate(cfg: &SimConfig, k: u32) -> Result<RunResult, Error> {
    let mut spec = cfg.workload;
    spec.seed = replication_seed(spec.seed, k);
    let w = cfg.source.workload(&spec);
    simulate_workload(cfg, &w, &mut ())
}

/// The SLO attainment of `cfg` with its 95% confidence interval (`docs/planning.md#estimate`).
///
/// A trace (`Source::File`) is replayed once: its measured outcomes (after the cut) form
/// [`TRACE_BATCHES`] batches of equal size (the remainder dropped next to the cut) whose means
/// give the t interval; `capped` if it is wider than asked (the trace bounds the precision). A
/// generated workload is replicated with [`replication_seed`]s; each replication's attainment
/// (after its own cut) is one observation; replications are added until at least 2 give a
/// half-width at most `o.half_width`, or `o.max_replications` ran (`capped`). A replication that
/// is not steady stops the estimate (`steady = false`).
pub fn attainment_ci(cfg: &SimConfig, o: &CiOptions) -> Result<Estimate, Error> {
    attainment_ci_from(cfg, None, o)
}

/// [`attainment_ci`] with replication 0 already run: `first` is `cfg`'s own run (its seed, or
/// the trace's one replay), used as replication 0 instead of running it again.
pub fn attainment_ci_from(
    cfg: &SimConfig,
    first: Option<&RunResult>,
    o: &CiOptions,
) -> Result<Estimate, Error> {
    if !(o.half_width.is_finite() && o.half_width > 0.0 && o.max_replications >= 2) {
        return Err(Error::invalid(
            "attainment_ci",
            "the half-width must be finite and > 0 and at least 2 replications allowed",
        ));
    }
    let run0;
    let first = match first {
        Some(r) => r,
        None => {
            run0 = replicate(cfg, 0)?;
            &run0
        }
    };
    if let Source::File { .. } = cfg.source {
        let m = measure(&run_series(first), cfg.warmup_frac);
        let b = m.met.len() / TRACE_BATCHES;
        let (mean, hw) = if b == 0 {
            mean_ci(&m.met)
        } else {
            let used = &m.met[m.met.len() - b * TRACE_BATCHES..];
            let means: Vec<f64> = used
                .chunks_exact(b)
                .map(|c| c.iter().sum::<f64>() / b as f64)
                .collect();
            mean_ci(&means)
        };
        let used = if b == 0 {
            &m.met[..]
        } else {
            &m.met[m.met.len() - b * TRACE_BATCHES..]
        };
        let ci = interval(mean, hw, used.iter().sum(), used.len() as u64);
        return Ok(estimate(
            "batch-means",
            mean,
            ci,
            1,
            used.len() as u64,
            m.cut as u64,
            m.unsteady,
            ci.2 > o.half_width,
        ));
    }
    let (mut p, mut requests, mut cut, mut met) = (Vec::new(), 0u64, 0u64, 0.0);
    let mut k = 0u32;
    loop {
        let m = if k == 0 {
            measure(&run_series(first), cfg.warmup_frac)
        } else {
            measure(&run_series(&replicate(cfg, k)?), cfg.warmup_frac)
        };
        k += 1;
        requests += m.met.len() as u64;
        met += m.met.iter().sum::<f64>();
        cut = cut.max(m.cut as u64);
        let n = m.met.len();
        p.push(if n == 0 {
            0.0
        } else {
            m.met.iter().sum::<f64>() / n as f64
        });
        let (mean, hw) = mean_ci(&p);
        let hw = interval(mean, hw, met, requests);
        // Stop: a replication not steady, the precision reached (after at least 2), or the cap.
        let capped = k >= o.max_replications;
        if m.unsteady.is_some() || (k >= 2 && hw.2 <= o.half_width) || capped {
            let capped = capped && m.unsteady.is_none() && !(k >= 2 && hw.2 <= o.half_width);
            return Ok(estimate(
                "replications",
                mean,
                hw,
                k,
                requests,
                cut,
                m.unsteady,
                capped,
            ));
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn estimate(
    method: &str,
    mean: f64,
    (low, high, half_width): (f64, f64, f64),
    replications: u32,
    requests: u64,
    warmup_cut: u64,
    unsteady: Option<String>,
    capped: bool,
) -> Estimate {
    Estimate {
        mean,
        low,
        high,
        half_width,
        method: method.to_string(),
        replications,
        requests,
        warmup_cut,
        steady: unsteady.is_none(),
        unsteady,
        capped,
    }
}

/// The native rate of a replayed trace, requests/s at `--time-scale 1` (`docs/planning.md#trace-rate`):
/// `(n - 1) / (last arrival - first arrival)` of the `n` requests replayed, times the
/// scale they were read at. `None` without a trace, or with fewer than 2 distinct arrival times.
pub fn trace_native_rps(cfg: &SimConfig) -> Option<f64> {
    let Source::File { rows, info, .. } = &cfg.source else {
        return None;
    };
    let (first, last) = (rows.first()?.arrival_s, rows.last()?.arrival_s);
    let span = last - first;
    if !(rows.len() >= 2 && span > 0.0) {
        return None;
    }
    Some((rows.len() - 1) as f64 / span * info.time_scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles() {
        assert_eq!(t975(0), f64::INFINITY);
        assert_eq!(t975(1), 12.7062047);
        assert_eq!(t975(19), 2.0930241);
        // The expansion above the table: within 1e-7 of the exact quantiles.
        assert!((t975(31) - 2.0395134).abs() < 1e-7);
        assert!((t975(40) - 2.0210754).abs() < 1e-7);
        assert!((t975(120) - 1.9799304).abs() < 1e-7);
        assert!((t975(1_000_000) - 1.959964).abs() < 1e-5);
    }

    #[test]
    fn bernoulli_interval_closed_form() {
        // 0,1,1,1 repeated 5 times: k = 20, mean 0.75, s^2 = 20 * 0.1875 / 19.
        let xs: Vec<f64> = (0..20)
            .map(|i| if i % 4 == 0 { 0.0 } else { 1.0 })
            .collect();
        let (m, hw) = mean_ci(&xs);
        assert_eq!(m, 0.75);
        let s = (xs.iter().map(|x| (x - 0.75) * (x - 0.75)).sum::<f64>() / 19.0).sqrt();
        assert_eq!(hw, 2.0930241 * s / 20f64.sqrt());
        assert!((hw - 0.20792).abs() < 1e-5, "{hw}");
        // All ones: [1, 1].
        assert_eq!(mean_ci(&[1.0; 7]), (1.0, 0.0));
        // One value: unbounded.
        assert_eq!(mean_ci(&[0.5]).1, f64::INFINITY);
        // The t interval is wider than Wilson's for 75 of 100: it stands.
        let ci = interval(0.75, hw, 75.0, 100);
        assert!(wilson(75.0, 100).0 > 0.75 - hw && wilson(75.0, 100).1 < 0.75 + hw);
        let e = estimate("replications", 0.75, ci, 20, 100, 0, None, false);
        assert_eq!((e.low, e.high, e.half_width), (0.75 - hw, 0.75 + hw, hw));
        // Two replications at 100% give a t interval of width 0: Wilson's floor for 100 of 100
        // requests, [n / (n + z²), 1], holds it open.
        let ci = interval(1.0, 0.0, 100.0, 100);
        let e = estimate("replications", 1.0, ci, 2, 100, 0, None, false);
        let z2 = 1.959964_f64 * 1.959964;
        assert_eq!((e.low, e.high), (wilson(100.0, 100).0, 1.0));
        assert!((e.low - 100.0 / (100.0 + z2)).abs() < 1e-15, "{}", e.low);
        assert_eq!(e.half_width, 1.0 - e.low);
        assert!(e.meets(0.96) && !e.meets(0.97) && !e.misses(1.0));
        // None of 100: [0, z² / (n + z²)].
        let (lo, hi) = wilson(0.0, 100);
        assert_eq!(lo, 0.0);
        assert!((hi - z2 / (100.0 + z2)).abs() < 1e-15, "{hi}");
        assert_eq!(wilson(0.0, 0), (0.0, 1.0));
    }

    #[test]
    fn mser5_cuts_a_known_transient() {
        // 50 high values, then a flat series with a small 2-periodic wiggle (batch means alternate).
        let mut xs = vec![40.0; 50];
        xs.extend((0..450).map(|i| if i % 2 == 0 { 3.0 } else { 4.0 }));
        let m = mser(&xs, 5);
        assert_eq!(
            m,
            Mser {
                cut: 50,
                beyond_half: false
            }
        );
        // No transient: no cut.
        let flat: Vec<f64> = (0..500).map(|i| (i % 3) as f64).collect();
        assert_eq!(mser(&flat, 5).cut, 0);
        // A series that keeps growing asks for more than half of the run.
        let ramp: Vec<f64> = (0..500).map(|i| i as f64).collect();
        assert!(mser(&ramp, 5).beyond_half);
        // Too short to judge.
        assert_eq!(mser(&[1.0; 19], 5).cut, 0);
    }

    #[test]
    fn growth_at_the_end_is_not_steady() {
        let n = 400;
        let flat = RunSeries {
            in_system: (0..n).map(|i| 2.0 + (i % 2) as f64).collect(),
            arrival_s: (0..n).map(|i| i as f64 * 0.1).collect(),
            met: vec![1.0; n],
        };
        let m = measure(&flat, 0.1);
        assert_eq!((m.cut, m.unsteady.clone()), (40, None));
        assert_eq!(m.met.len(), 360);
        // A late pile-up (MSER's cut stays early: the statistic has its minimum at 0).
        let mut late = flat.clone();
        for (i, x) in late.in_system.iter_mut().enumerate().skip(370) {
            *x = 3.0 + 2.0 * (i - 369) as f64;
        }
        let m = measure(&late, 0.1);
        assert!(m
            .unsteady
            .unwrap()
            .starts_with("the number in system is still growing"));
    }

    fn cfg(flags: &[&str]) -> SimConfig {
        let cat = disagg_model::Catalogue::builtin();
        let mut f = vec!["--model", "llama3-8b", "--devices-per-instance", "1"];
        f.extend(flags);
        crate::Scenario::from_flags(f).unwrap().build(&cat).unwrap()
    }

    /// Replication 0 is the run `disagg run` makes; others differ.
    #[test]
    fn replication_zero_is_the_run() {
        let c = cfg(&["--requests", "80", "--rate", "6"]);
        let run = crate::simulate_config(&c).unwrap();
        let r0 = replicate(&c, 0).unwrap();
        let a: Vec<_> = run.requests().collect();
        assert_eq!(a, r0.requests().collect::<Vec<_>>());
        let r1 = replicate(&c, 1).unwrap();
        assert_ne!(a, r1.requests().collect::<Vec<_>>());
    }

    /// An idle system where every request meets its SLOs: every replication at 100%, so the
    /// interval is Wilson's floor `[n / (n + z²), 1]`, replicated until that is within 1 pp:
    /// n >= 99 z² = 380.3 pooled requests, 8 replications of 54 measured (432), steady, not
    /// capped.
    #[test]
    fn an_idle_system_is_one_to_one() {
        let c = cfg(&[
            "--requests",
            "60",
            "--rate",
            "0.0001",
            "--ttft-slo",
            "100",
            "--tpot-slo",
            "10",
        ]);
        let e = attainment_ci(&c, &CiOptions::default()).unwrap();
        assert_eq!((e.replications, e.steady, e.capped), (8, true, false));
        assert_eq!(e.method, "replications");
        // Every request is alone in the system: MSER-5 cuts nothing, the reference's 10% rules.
        assert_eq!(e.warmup_cut, 6);
        assert_eq!(e.requests, 8 * 54);
        assert_eq!((e.mean, e.low, e.high), (1.0, wilson(432.0, 432).0, 1.0));
        assert_eq!(e.half_width, 1.0 - e.low);
        assert!(e.half_width <= 0.01 && 1.0 - wilson(378.0, 378).0 > 0.01);
        // SLOs nobody meets: [0, Wilson's upper end], replicated as long.
        let c = cfg(&["--requests", "60", "--rate", "0.05", "--ttft-slo", "1e-6"]);
        let e = attainment_ci(&c, &CiOptions::default()).unwrap();
        assert_eq!((e.mean, e.low), (0.0, 0.0));
        assert_eq!(e.high, wilson(0.0, e.requests).1);
        assert!(e.misses(0.5) && !e.meets(0.0001));
    }

    /// Far above capacity the queue grows: not steady, counted as missing, stopped at once.
    #[test]
    fn overload_is_not_steady() {
        let c = cfg(&["--requests", "300", "--rate", "400"]);
        let e = attainment_ci(&c, &CiOptions::default()).unwrap();
        assert!(!e.steady && e.misses(0.0) && e.replications == 1, "{e:?}");
        assert!(e.unsteady.is_some());
    }

    #[test]
    fn replication_seeds() {
        assert_eq!(replication_seed(1, 0), 1);
        assert_ne!(replication_seed(1, 1), replication_seed(1, 2));
        assert_ne!(replication_seed(1, 1), replication_seed(2, 1));
        // SplitMix64's published first output for state 0 + golden gamma.
        assert_eq!(replication_seed(0, 1), 0xE220_A839_7B1D_CDAF);
    }
}
