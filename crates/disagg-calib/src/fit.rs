//! The fit: robust least squares on log error (Levenberg–Marquardt with soft-L1 IRLS weights,
//! parameters in transformed space), the scale-up link from the all-reduce profile, in-sample and
//! leave-one-group-out errors.

use std::collections::BTreeMap;

use disagg_model::{int_div, Catalogue, CostModel, CostOptions, Device, Parallel};

use crate::measure::{Collective, Measurement, Phase};
use crate::CalibError;

/// The fitted parameters of a device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Achievable fraction of the FLOP peak, (0, 1].
    pub flops_eff: f64,
    /// Achievable fraction of HBM bandwidth, (0, 1].
    pub bw_eff: f64,
    /// Fixed seconds per engine step, >= 0.
    pub step_overhead_s: f64,
    /// Seconds per sequence (row) in a step, >= 0.
    pub per_seq_overhead_s: f64,
}

/// The number of fitted parameters.
pub const N_PARAMS: usize = 4;

/// Scale of the overheads in transformed space: `overhead = O_SCALE * exp(theta)`.
const O_SCALE: f64 = 1e-3;
const S_SCALE: f64 = 1e-4;
/// Transformed parameters are kept in [-BOUND, BOUND].
const BOUND: f64 = 40.0;
/// Soft-L1 scale on log error (about 10 %).
pub const DELTA: f64 = 0.1;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}
fn logit(p: f64) -> f64 {
    (p / (1.0 - p)).ln()
}

impl Params {
    /// From transformed space: logistic efficiencies, exponential overheads.
    pub fn from_theta(t: &[f64; N_PARAMS]) -> Params {
        Params {
            flops_eff: sigmoid(t[0]),
            bw_eff: sigmoid(t[1]),
            step_overhead_s: O_SCALE * t[2].exp(),
            per_seq_overhead_s: S_SCALE * t[3].exp(),
        }
    }
    /// To transformed space (efficiencies in (0, 1), overheads above 0).
    pub fn theta(&self) -> [f64; N_PARAMS] {
        [
            logit(self.flops_eff),
            logit(self.bw_eff),
            (self.step_overhead_s / O_SCALE).ln(),
            (self.per_seq_overhead_s / S_SCALE).ln(),
        ]
    }
    /// `base` with the fitted efficiencies and overheads: the device the cost model runs, whose
    /// `step_time` adds `step_overhead_s + per_seq_overhead_s * rows` to every step.
    pub fn device(&self, base: &Device) -> Device {
        Device {
            flops_eff: self.flops_eff,
            bw_eff: self.bw_eff,
            step_overhead_s: Some(self.step_overhead_s),
            per_seq_overhead_s: Some(self.per_seq_overhead_s),
            ..base.clone()
        }
    }
}

/// The step time of one row on the cost model `cm` of its device, exactly what a run charges for
/// the step: the roofline step (with the Parallel lever's TP communication when `tp > 1`) plus
/// the device's `step_time` overheads (`step_overhead_s`, or the default 0.5 ms for a device
/// without one, and `per_seq_overhead_s * batch`). Prefill: `prefill([tokens; batch])`; decode:
/// `decode_sum(tokens * batch, batch)`.
pub fn predict_row(cm: &CostModel, row: &Measurement) -> f64 {
    let step = match row.phase {
        Phase::Prefill => cm.prefill(std::iter::repeat_n(row.tokens, row.batch as usize)),
        Phase::Decode => cm.decode_sum(row.tokens * row.batch, row.batch),
    };
    step.time_s
}

/// The cost model a row runs on: `row.devices` of `device` with the default cost options (the
/// device's own overheads apply), a TP layout on the device's scale-up link when `tp > 1`.
pub fn cost_model(
    cat: &Catalogue,
    device: &Device,
    model: &str,
    tp: u32,
    devices: u32,
) -> Result<CostModel, CalibError> {
    let m = cat.model(model).map_err(CalibError::from)?;
    let cm = CostModel::new(m, device, devices, CostOptions::default())?;
    if tp > 1 {
        let par = Parallel {
            tp,
            ..Parallel::default()
        };
        par.check(m, devices, "calibrated", cat)?;
        return Ok(cm.with_layout(par, cat)?);
    }
    Ok(cm)
}

/// Predictions for `rows` (all on one device) on `device`, overheads included.
pub fn predict(
    cat: &Catalogue,
    device: &Device,
    rows: &[&Measurement],
) -> Result<Vec<f64>, CalibError> {
    let mut models: BTreeMap<(&str, u32, u32), CostModel> = BTreeMap::new();
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let k = (r.model.as_str(), r.tp, r.devices);
        let cm = match models.entry(k) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(cost_model(cat, device, &r.model, r.tp, r.devices)?)
            }
        };
        out.push(predict_row(cm, r));
    }
    Ok(out)
}

/// Mean absolute percentage error of `pred` against `meas` (percent); `None` for no rows.
pub fn mape(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<f64> {
    let (mut s, mut n) = (0.0, 0usize);
    for (p, m) in pairs {
        s += ((p - m) / m).abs();
        n += 1;
    }
    (n > 0).then(|| 100.0 * s / n as f64)
}

/// Soft-L1 loss of a log error `r` at scale `d`: `2 d^2 (sqrt(1 + (r/d)^2) - 1)`.
pub fn soft_l1(r: f64, d: f64) -> f64 {
    2.0 * d * d * ((1.0 + (r / d) * (r / d)).sqrt() - 1.0)
}

/// Its IRLS weight `rho'(r) / r = 1 / sqrt(1 + (r/d)^2)`.
pub fn soft_l1_weight(r: f64, d: f64) -> f64 {
    1.0 / (1.0 + (r / d) * (r / d)).sqrt()
}

/// Solves `a x = b` (Gaussian elimination with partial pivoting); `None` if singular.
#[allow(clippy::needless_range_loop)]
pub fn solve<const N: usize>(mut a: [[f64; N]; N], mut b: [f64; N]) -> Option<[f64; N]> {
    for c in 0..N {
        let p = (c..N).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c] == 0.0 || !a[p][c].is_finite() {
            return None;
        }
        a.swap(c, p);
        b.swap(c, p);
        for r in c + 1..N {
            let f = a[r][c] / a[c][c];
            for k in c..N {
                a[r][k] -= f * a[c][k];
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = [0.0; N];
    for c in (0..N).rev() {
        let mut s = b[c];
        for k in c + 1..N {
            s -= a[c][k] * x[k];
        }
        x[c] = s / a[c][c];
    }
    Some(x)
}

/// How the fit ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FitStats {
    /// Iterations taken.
    pub iterations: usize,
    /// Final robust cost.
    pub cost: f64,
}

/// Fits the four parameters of `base` (whose `scale_up` names a link of `cat`) to `rows`.
pub fn fit_params(
    cat: &Catalogue,
    base: &Device,
    rows: &[&Measurement],
) -> Result<(Params, FitStats), CalibError> {
    if rows.len() < N_PARAMS {
        return Err(CalibError(format!(
            "too few rows to fit {}: {} rows, fewer than the {N_PARAMS} parameters",
            base.key,
            rows.len()
        )));
    }
    let meas: Vec<f64> = rows.iter().map(|r| r.seconds.ln()).collect();
    let resid = |t: &[f64; N_PARAMS]| -> Result<Vec<f64>, CalibError> {
        let p = Params::from_theta(t);
        let pred = predict(cat, &p.device(base), rows)?;
        Ok(pred.iter().zip(&meas).map(|(p, m)| p.ln() - m).collect())
    };
    let cost = |r: &[f64]| r.iter().map(|x| soft_l1(*x, DELTA)).sum::<f64>();
    let start = Params {
        flops_eff: 0.5,
        bw_eff: 0.6,
        step_overhead_s: 5e-3,
        per_seq_overhead_s: 1e-4,
    };
    let mut theta = start.theta();
    let mut r = resid(&theta)?;
    let mut c = cost(&r);
    let mut lambda = 1e-3;
    for it in 0..500 {
        if c == 0.0 {
            return Ok((
                Params::from_theta(&theta),
                FitStats {
                    iterations: it,
                    cost: c,
                },
            ));
        }
        // Central-difference Jacobian in transformed space.
        let h = 1e-6;
        let mut jac = vec![[0.0; N_PARAMS]; rows.len()];
        for k in 0..N_PARAMS {
            let (mut up, mut dn) = (theta, theta);
            up[k] += h;
            dn[k] -= h;
            let (ru, rd) = (resid(&up)?, resid(&dn)?);
            for i in 0..rows.len() {
                jac[i][k] = (ru[i] - rd[i]) / (2.0 * h);
            }
        }
        let mut a = [[0.0; N_PARAMS]; N_PARAMS];
        let mut g = [0.0; N_PARAMS];
        for i in 0..rows.len() {
            let w = soft_l1_weight(r[i], DELTA);
            for p in 0..N_PARAMS {
                g[p] += w * jac[i][p] * r[i];
                for q in 0..N_PARAMS {
                    a[p][q] += w * jac[i][p] * jac[i][q];
                }
            }
        }
        loop {
            let mut m = a;
            for (p, row) in m.iter_mut().enumerate() {
                row[p] += lambda * a[p][p] + 1e-300;
            }
            let step = solve(m, g.map(|x| -x));
            let mut accepted = false;
            if let Some(d) = step {
                let mut nt = theta;
                for k in 0..N_PARAMS {
                    nt[k] = (theta[k] + d[k]).clamp(-BOUND, BOUND);
                }
                let moved = (0..N_PARAMS)
                    .map(|k| (nt[k] - theta[k]).abs())
                    .fold(0.0, f64::max);
                let nr = resid(&nt)?;
                let nc = cost(&nr);
                if nc.is_finite() && nc <= c {
                    let gain = c - nc;
                    theta = nt;
                    r = nr;
                    c = nc;
                    lambda = (lambda / 3.0).max(1e-12);
                    accepted = true;
                    if moved < 1e-10 || gain <= 1e-15 * c {
                        return Ok((
                            Params::from_theta(&theta),
                            FitStats {
                                iterations: it + 1,
                                cost: c,
                            },
                        ));
                    }
                }
            }
            if accepted {
                break;
            }
            lambda *= 4.0;
            if lambda > 1e12 {
                let gmax = g.iter().map(|x| x.abs()).fold(0.0, f64::max);
                if gmax <= 1e-9 * (1.0 + c) {
                    return Ok((
                        Params::from_theta(&theta),
                        FitStats {
                            iterations: it + 1,
                            cost: c,
                        },
                    ));
                }
                return Err(CalibError(format!(
                    "the fit of {} did not converge (no step lowers the cost; gradient {gmax:e})",
                    base.key
                )));
            }
        }
    }
    Err(CalibError(format!(
        "the fit of {} did not converge in 500 iterations",
        base.key
    )))
}

/// A scale-up link fitted to an all-reduce profile.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkFit {
    /// Bytes/s.
    pub bandwidth_bps: f64,
    /// Seconds per ring step.
    pub latency_s: f64,
    /// Profile rows used.
    pub rows: usize,
    /// Their in-sample MAPE, percent.
    pub mape: f64,
    /// The topology fitted (`a100_dgx`).
    pub topology: String,
}

/// The ring all-reduce time of `size` bytes over `n` GPUs (`docs/cost-model.md#parallelism` step 10):
/// `2(n-1)/n * S / bw + 2(n-1) * lat`.
pub fn ring_all_reduce(n: u32, size: f64, bw: f64, lat: f64) -> f64 {
    let n = n as i128;
    ((int_div(2 * (n - 1), n) * size) / bw) + (2 * (n - 1)) as f64 * lat
}

/// The topology of a device's profile: `a100_dgx` for `a100`, `h100_dgx` for `h100`.
pub fn topology_of(device: &str) -> Option<&'static str> {
    match device {
        "a100" => Some("a100_dgx"),
        "h100" => Some("h100_dgx"),
        _ => None,
    }
}

/// Fits latency and bandwidth to the single-node all-reduce rows of `topology` (workers =
/// devices per node >= 2): least squares on relative error with soft-L1 IRLS weights (40 rounds);
/// a negative latency is refitted at zero. `None` when no row matches.
pub fn fit_link(colls: &[Collective], topology: &str) -> Result<Option<LinkFit>, CalibError> {
    let rows: Vec<&Collective> = colls
        .iter()
        .filter(|c| {
            c.collective == "all_reduce"
                && c.topology == topology
                && c.workers >= 2
                && c.workers == c.devices_per_node
        })
        .collect();
    if rows.is_empty() {
        return Ok(None);
    }
    if rows.len() < 2 {
        return Err(CalibError(format!(
            "too few all-reduce rows for {topology}: 1, fewer than the 2 link parameters"
        )));
    }
    // t = a x + b y with x = 2(n-1)/n S, y = 2(n-1): relative residual (a x + b y) / t - 1.
    let feats: Vec<(f64, f64)> = rows
        .iter()
        .map(|c| {
            let n = c.workers as i128;
            (
                int_div(2 * (n - 1), n) * c.size / c.seconds,
                (2 * (n - 1)) as f64 / c.seconds,
            )
        })
        .collect();
    let mut w = vec![1.0; rows.len()];
    let mut ab = (0.0, 0.0);
    for _ in 0..40 {
        let (mut sxx, mut sxy, mut syy, mut sx, mut sy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (i, (x, y)) in feats.iter().enumerate() {
            sxx += w[i] * x * x;
            sxy += w[i] * x * y;
            syy += w[i] * y * y;
            sx += w[i] * x;
            sy += w[i] * y;
        }
        ab = match solve([[sxx, sxy], [sxy, syy]], [sx, sy]) {
            Some([a, b]) if b >= 0.0 => (a, b),
            _ => (sx / sxx, 0.0),
        };
        for (i, (x, y)) in feats.iter().enumerate() {
            w[i] = soft_l1_weight(ab.0 * x + ab.1 * y - 1.0, DELTA);
        }
    }
    if !(ab.0 > 0.0 && ab.0.is_finite()) {
        return Err(CalibError(format!(
            "the all-reduce fit for {topology} gave no positive bandwidth"
        )));
    }
    let (bw, lat) = (1.0 / ab.0, ab.1);
    let m = mape(
        rows.iter()
            .map(|c| (ring_all_reduce(c.workers, c.size, bw, lat), c.seconds)),
    )
    .unwrap_or(0.0);
    Ok(Some(LinkFit {
        bandwidth_bps: bw,
        latency_s: lat,
        rows: rows.len(),
        mape: m,
        topology: topology.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_models::catalogue;

    fn row(model: &str, tp: u32, phase: Phase, batch: u64, tokens: u64, s: f64) -> Measurement {
        Measurement {
            model: model.into(),
            device: "a100".into(),
            devices: tp,
            tp,
            phase,
            batch,
            tokens,
            seconds: s,
            source: "t".into(),
            group: crate::measure::group_key(model, "a100", tp),
        }
    }

    #[test]
    fn transforms_round_trip_and_map_ranges() {
        let p = Params {
            flops_eff: 0.7,
            bw_eff: 0.25,
            step_overhead_s: 3e-3,
            per_seq_overhead_s: 2e-4,
        };
        let t = p.theta();
        // logit(0.7) = ln(0.7/0.3); ln(3e-3/1e-3) = ln 3; ln(2e-4/1e-4) = ln 2
        assert_eq!(t[0], (0.7f64 / (1.0 - 0.7)).ln());
        assert_eq!(t[2], 3.0f64.ln());
        assert_eq!(t[3], 2.0f64.ln());
        let q = Params::from_theta(&t);
        for (a, b) in [
            (q.flops_eff, 0.7),
            (q.bw_eff, 0.25),
            (q.step_overhead_s, 3e-3),
            (q.per_seq_overhead_s, 2e-4),
        ] {
            assert!((a - b).abs() <= 1e-15 * b.abs().max(1e-3), "{a} vs {b}");
        }
        // sigmoid(0) = 1/2, exp(0) = 1
        let z = Params::from_theta(&[0.0; 4]);
        assert_eq!(z.flops_eff, 0.5);
        assert_eq!(z.bw_eff, 0.5);
        assert_eq!(z.step_overhead_s, 1e-3);
        assert_eq!(z.per_seq_overhead_s, 1e-4);
        let d = p.device(&catalogue().device("a100").unwrap().clone());
        assert_eq!((d.flops_eff, d.bw_eff, d.key.as_str()), (0.7, 0.25, "a100"));
    }

    #[test]
    fn losses_and_solve() {
        // soft_l1(0.1, 0.1) = 2 * 0.01 * (sqrt(2) - 1)
        assert_eq!(soft_l1(0.1, 0.1), 2.0 * 0.1 * 0.1 * (2.0f64.sqrt() - 1.0));
        assert_eq!(soft_l1(0.0, 0.1), 0.0);
        assert_eq!(soft_l1_weight(0.0, 0.1), 1.0);
        // r = 0.3, d = 0.1: 1/sqrt(1 + 9) = 1/sqrt(10)
        assert_eq!(
            soft_l1_weight(0.3, 0.1),
            1.0 / (1.0f64 + (0.3 / 0.1) * (0.3 / 0.1)).sqrt()
        );
        // 2x + y = 5, x + 3y = 10 -> x = 1, y = 3; needs a pivot swap in the second system.
        assert_eq!(
            solve([[2.0, 1.0], [1.0, 3.0]], [5.0, 10.0]),
            Some([1.0, 3.0])
        );
        assert_eq!(
            solve([[0.0, 1.0], [2.0, 0.0]], [3.0, 4.0]),
            Some([2.0, 3.0])
        );
        assert_eq!(solve([[1.0, 2.0], [2.0, 4.0]], [1.0, 2.0]), None);
        // 3x3: x = (1, -2, 0.5)
        let x = solve(
            [[1.0, 1.0, 4.0], [0.0, 2.0, 2.0], [1.0, 0.0, 2.0]],
            [1.0, -3.0, 2.0],
        )
        .unwrap();
        assert_eq!(x, [1.0, -2.0, 0.5]);
    }

    #[test]
    fn mape_is_mean_abs_relative_percent() {
        // |1.1-1|/1 = 0.1, |1.5-2|/2 = 0.25 -> mean 0.175 -> 17.5 %
        assert_eq!(
            mape([(1.1, 1.0), (1.5, 2.0)]),
            Some(100.0 * ((1.1f64 - 1.0) / 1.0 + (1.5f64 - 2.0).abs() / 2.0) / 2.0)
        );
        assert_eq!(mape(std::iter::empty()), None);
    }

    #[test]
    fn ring_all_reduce_formula() {
        // n = 4: 2*3/4 = 1.5; 1.5 * 1e6 B / 1e11 B/s = 1.5e-5 s; 2*3 * 2e-6 = 1.2e-5 s
        assert_eq!(
            ring_all_reduce(4, 1e6, 1e11, 2e-6),
            1.5 * 1e6 / 1e11 + 6.0 * 2e-6
        );
        assert_eq!(ring_all_reduce(2, 1e6, 1e11, 0.0), 1e6 / 1e11);
        assert_eq!(topology_of("a100"), Some("a100_dgx"));
        assert_eq!(topology_of("h100"), Some("h100_dgx"));
        assert_eq!(topology_of("b200"), None);
    }

    #[test]
    fn link_fit_recovers_a_synthetic_profile() {
        let (bw, lat) = (2.0e11, 7.0e-6);
        let mut colls = Vec::new();
        for n in [2u32, 4, 8] {
            for s in [2048.0, 65536.0, 1048576.0, 33554432.0] {
                colls.push(Collective {
                    collective: "all_reduce".into(),
                    topology: "a100_dgx".into(),
                    workers: n,
                    devices_per_node: n,
                    size: s,
                    seconds: ring_all_reduce(n, s, bw, lat),
                    source: "t".into(),
                });
            }
        }
        // cross-node rows and other topologies are ignored
        colls.push(Collective {
            devices_per_node: 1,
            seconds: 1.0,
            ..colls[0].clone()
        });
        colls.push(Collective {
            topology: "h100_dgx".into(),
            seconds: 1.0,
            ..colls[0].clone()
        });
        let f = fit_link(&colls, "a100_dgx").unwrap().unwrap();
        assert_eq!(f.rows, 12);
        assert!(
            (f.bandwidth_bps / bw - 1.0).abs() < 1e-9,
            "{}",
            f.bandwidth_bps
        );
        assert!((f.latency_s / lat - 1.0).abs() < 1e-9, "{}", f.latency_s);
        assert!(f.mape < 1e-7);
        assert_eq!(fit_link(&colls, "b200_dgx").unwrap(), None);
        let one = vec![colls[0].clone()];
        assert!(fit_link(&one, "a100_dgx")
            .unwrap_err()
            .0
            .contains("too few"));
    }

    #[test]
    fn predict_adds_overheads_to_the_cost_model() {
        let cat = catalogue();
        let base = cat.device("a100").unwrap().clone();
        let fitted = Params {
            flops_eff: base.flops_eff,
            bw_eff: base.bw_eff,
            step_overhead_s: 2e-3,
            per_seq_overhead_s: 5e-4,
        }
        .device(&base);
        assert_eq!(fitted.step_overhead_s, Some(2e-3));
        assert_eq!(fitted.per_seq_overhead_s, Some(5e-4));
        let r = row("llama2-7b", 1, Phase::Prefill, 3, 100, 1.0);
        let d = row("llama2-7b", 2, Phase::Decode, 4, 600, 1.0);
        let got = predict(&cat, &fitted, &[&r, &d]).unwrap();
        // The spec's step time written out: the bare roofline (no overhead at all) plus
        // `step_overhead + per_seq * rows` (cost-model step_time).
        let m = cat.model("llama2-7b").unwrap();
        let opts = CostOptions {
            step_overhead_s: 0.0,
            ..CostOptions::default()
        };
        let cm = CostModel::new(m, &base, 1, opts.clone()).unwrap();
        assert_eq!(
            got[0],
            (cm.prefill([100, 100, 100]).time_s + 2e-3) + 5e-4 * 3.0
        );
        let par = Parallel {
            tp: 2,
            ..Parallel::default()
        };
        let cm2 = CostModel::new(m, &base, 2, opts)
            .unwrap()
            .with_layout(par, &cat)
            .unwrap();
        let step = cm2.decode_sum(2400, 4);
        assert!(step.comm_time_s > 0.0);
        assert_eq!(got[1], (step.time_s + 2e-3) + 5e-4 * 4.0);
        // The built-in device: the default 0.5 ms step overhead, no per-sequence term.
        let unc = predict(&cat, &base, &[&r]).unwrap();
        assert_eq!(unc[0], cm.prefill([100, 100, 100]).time_s + 0.5e-3);
    }

    fn synthetic(cat: &Catalogue, truth: &Params) -> Vec<Measurement> {
        let dev = truth.device(cat.device("a100").unwrap());
        let mut rows = Vec::new();
        for (model, tp) in [("llama2-7b", 1), ("llama2-70b", 4)] {
            for (phase, b, t) in [
                (Phase::Prefill, 1, 128),
                (Phase::Prefill, 1, 2048),
                (Phase::Prefill, 8, 512),
                (Phase::Decode, 1, 600),
                (Phase::Decode, 16, 600),
                (Phase::Decode, 64, 1000),
            ] {
                rows.push(row(model, tp, phase, b, t, 1.0));
            }
        }
        let refs: Vec<&Measurement> = rows.iter().collect();
        let pred = predict(cat, &dev, &refs).unwrap();
        rows.iter()
            .zip(pred)
            .map(|(r, s)| Measurement {
                seconds: s,
                ..r.clone()
            })
            .collect()
    }

    #[test]
    fn fit_recovers_known_parameters() {
        let cat = catalogue();
        let truth = Params {
            flops_eff: 0.62,
            bw_eff: 0.71,
            step_overhead_s: 4e-3,
            per_seq_overhead_s: 3e-5,
        };
        let rows = synthetic(&cat, &truth);
        let refs: Vec<&Measurement> = rows.iter().collect();
        let (p, st) = fit_params(&cat, cat.device("a100").unwrap(), &refs).unwrap();
        for (a, b) in [
            (p.flops_eff, truth.flops_eff),
            (p.bw_eff, truth.bw_eff),
            (p.step_overhead_s, truth.step_overhead_s),
            (p.per_seq_overhead_s, truth.per_seq_overhead_s),
        ] {
            assert!((a / b - 1.0).abs() < 1e-6, "{a} vs {b}");
        }
        assert!(st.cost < 1e-12);
        let few = &refs[..3];
        let e = fit_params(&cat, cat.device("a100").unwrap(), few).unwrap_err();
        assert_eq!(
            e.0,
            "too few rows to fit a100: 3 rows, fewer than the 4 parameters"
        );
    }
}
