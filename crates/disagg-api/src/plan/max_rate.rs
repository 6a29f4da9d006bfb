//! `plan --max-rate`: the highest rate that meets the SLO-attainment target. The default search
//! (`ci`, `docs/planning.md#max-rate`) replays a trace time-scaled to each rate under test (or
//! generates the scenario's workload at it), cuts the warm-up MSER-5 finds, and estimates the
//! SLO attainment with a 95% confidence interval; the answer is the largest rate whose lower
//! bound meets the target, searched in [0, the per-pool analytic ceiling]. `bisect` is the
//! reference's bisection ([`disagg_sim::max_sustainable_rate`]), as before.

use std::fmt::Write as _;

use disagg_model::Catalogue;
use disagg_sim::steady::{attainment_ci, trace_native_rps, CiOptions, Estimate};
use disagg_sim::{max_sustainable_rate, Scenario, SimConfig};
use serde::Serialize;
use serde_json::{json, Value};

use super::{requests_flag, PlanOptions};
use crate::format::{fixed, thousands};
use crate::memory::Runs;
use crate::UsageError;

/// The `ci` search stops when its bracket is this narrow relative to its top (as the
/// reference's bisection).
pub const REL_TOL: f64 = 0.02;

/// The `ci` search gives up (no rate meets the target) below this fraction of the ceiling.
pub const MIN_FRACTION: f64 = 1e-3;

/// The highest rate that meets the SLO-attainment target, found by simulation.
pub struct MaxRate {
    base: Scenario,
    slo_target: f64,
    answer: Answer,
    analytic: Option<disagg_sim::Analytic>,
    calibration: Option<Vec<disagg_sim::CalibrationSummary>>,
}

enum Answer {
    Bisect(disagg_sim::SustainableRate),
    Ci(Box<CiAnswer>),
}

/// One rate the `ci` search simulated.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub rate_rps: f64,
    /// The `--time-scale` that replays the trace at `rate_rps` (a trace only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_scale: Option<f64>,
    /// `meets` (lower bound >= target), `misses` (upper bound < target, or not steady) or
    /// `inconclusive`.
    pub verdict: &'static str,
    #[serde(flatten)]
    pub estimate: Estimate,
}

/// What the `ci` search found (`docs/planning.md#max-rate`).
#[derive(Clone, Debug)]
pub struct CiAnswer {
    /// The largest rate tried whose lower bound met the target (0: none).
    pub rate_rps: f64,
    /// [`rate_rps`, the smallest rate tried shown to miss the target, else the ceiling].
    pub interval: (f64, f64),
    pub ceiling_rps: f64,
    /// The trace's rate at `--time-scale 1` (a trace only).
    pub native_rps: Option<f64>,
    pub options: CiOptions,
    /// Every rate simulated, in the order tried.
    pub points: Vec<Point>,
}

impl CiAnswer {
    /// The point of the answer (none if no rate met the target).
    pub fn at_answer(&self) -> Option<&Point> {
        self.points
            .iter()
            .find(|p| p.rate_rps == self.rate_rps && p.verdict == "meets")
    }

    /// The `--time-scale` that replays the trace at the answer.
    pub fn time_scale(&self) -> Option<f64> {
        self.at_answer().and_then(|p| p.time_scale)
    }
}

/// The scenario a plan simulates at `rate` req/s (`docs/planning.md#trace-rate`): with a
/// trace, the trace replayed with `time_scale = native / rate` (the same as `disagg run
/// --trace-file F --time-scale S`), where `native` is the trace's rate at scale 1
/// ([`trace_native_rps`]); otherwise the scenario's generator at `rate` (sessions stay sessions).
pub fn at_rate(base: &Scenario, rate: f64, cat: &Catalogue) -> Result<Scenario, UsageError> {
    let native = match base.trace_file {
        Some(_) => Some(native_of(&base.build(cat)?)?),
        None => None,
    };
    scaled(base, native, rate)
}

fn native_of(cfg: &SimConfig) -> Result<f64, UsageError> {
    trace_native_rps(cfg).ok_or_else(|| {
        UsageError(
            "--trace-file: the replayed requests span no time (fewer than 2 distinct arrival \
             times): there is no rate to scale"
                .into(),
        )
    })
}

fn scaled(base: &Scenario, native: Option<f64>, rate: f64) -> Result<Scenario, UsageError> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(UsageError(format!("rate {rate} must be finite and > 0")));
    }
    Ok(match native {
        Some(n) => Scenario {
            time_scale: n / rate,
            ..base.clone()
        },
        None => Scenario {
            rate,
            ..base.clone()
        },
    })
}

pub(super) fn check_options(o: &PlanOptions) -> Result<CiOptions, UsageError> {
    if !["ci", "bisect"].contains(&o.search.as_str()) {
        return Err(UsageError(format!(
            "--search: unknown search '{}'; valid: ci, bisect",
            o.search
        )));
    }
    for (flag, v) in [
        ("--ci-half-width", o.ci_half_width.to_string()),
        ("--max-replications", o.max_replications.to_string()),
    ] {
        let r = disagg_sim::ranges::for_command("plan", flag).expect("in the table");
        if r.parse(&v).is_err() {
            return Err(UsageError(format!(
                "{flag}: '{v}': must be {}",
                r.expected()
            )));
        }
    }
    Ok(CiOptions {
        half_width: o.ci_half_width,
        max_replications: o.max_replications,
    })
}

pub(super) fn max_rate(
    o: &PlanOptions,
    base: Scenario,
    cat: &Catalogue,
) -> Result<MaxRate, UsageError> {
    let ci = check_options(o)?;
    let cfg = base.build(cat)?;
    crate::memory::check(requests_flag(&base), &cfg, false, Runs::one(Some(o.yes)))?;
    let answer = if o.search == "bisect" {
        Answer::Bisect(max_sustainable_rate(&cfg, o.slo_target, 0.02, 0.0, None)?)
    } else {
        Answer::Ci(Box::new(ci_search(&base, &cfg, cat, o.slo_target, ci)?))
    };
    let analytic = disagg_sim::analytic_capacity(&cfg);
    let calibration = disagg_sim::metrics::calibration_of(&cfg);
    Ok(MaxRate {
        base,
        slo_target: o.slo_target,
        answer,
        analytic,
        calibration,
    })
}

/// The `ci` search (`docs/planning.md#max-rate`): the ceiling first (the answer if it meets the
/// target), then bisection of [largest rate meeting, smallest rate not meeting] until it is
/// narrower than [`REL_TOL`] of its top, or its top is below [`MIN_FRACTION`] of the ceiling.
fn ci_search(
    base: &Scenario,
    cfg: &SimConfig,
    cat: &Catalogue,
    target: f64,
    options: CiOptions,
) -> Result<CiAnswer, UsageError> {
    let ceiling = super::ceiling_rps(cfg)
        .or_else(|| disagg_sim::analytic_capacity(cfg).map(|a| a.ceiling_rps))
        .filter(|c| c.is_finite() && *c > 0.0)
        .ok_or_else(|| {
            UsageError(
                "--max-rate: this configuration has no analytic ceiling to bound the search \
                 (the model does not fit, or the mean lengths are below one token)"
                    .into(),
            )
        })?;
    let native = match base.trace_file {
        Some(_) => Some(native_of(cfg)?),
        None => None,
    };
    let mut points = Vec::new();
    let mut eval = |rate: f64| -> Result<&'static str, UsageError> {
        let sc = scaled(base, native, rate)?;
        let c = sc.build(cat)?;
        let e = attainment_ci(&c, &options)?;
        let verdict = if e.meets(target) {
            "meets"
        } else if e.misses(target) {
            "misses"
        } else {
            "inconclusive"
        };
        points.push(Point {
            rate_rps: rate,
            time_scale: native.map(|_| sc.time_scale),
            verdict,
            estimate: e,
        });
        Ok(verdict)
    };
    let (mut lo, mut hi) = (0.0, ceiling);
    let mut missed: Option<f64> = None;
    match eval(ceiling)? {
        "meets" => lo = ceiling,
        "misses" => missed = Some(ceiling),
        _ => {}
    }
    while lo < hi && hi - lo > REL_TOL * hi && hi > MIN_FRACTION * ceiling {
        let mid = (lo + hi) / 2.0;
        match eval(mid)? {
            "meets" => lo = mid,
            v => {
                hi = mid;
                if v == "misses" {
                    missed = Some(missed.map_or(mid, |m: f64| m.min(mid)));
                }
            }
        }
    }
    Ok(CiAnswer {
        rate_rps: lo,
        interval: (lo, missed.unwrap_or(ceiling)),
        ceiling_rps: ceiling,
        native_rps: native,
        options,
        points,
    })
}

impl MaxRate {
    /// The `ci` search's answer (`None` with `--search bisect`).
    pub fn ci(&self) -> Option<&CiAnswer> {
        match &self.answer {
            Answer::Ci(c) => Some(c),
            Answer::Bisect(_) => None,
        }
    }

    /// The document of `disagg plan --max-rate --json`.
    pub fn json(&self) -> Value {
        let c = match &self.answer {
            Answer::Bisect(r) => return self.bisect_json(r),
            Answer::Ci(c) => c,
        };
        let at = c.at_answer();
        let e = at.map(|p| &p.estimate);
        let mut doc = json!({
            "schema_version": 1,
            "scenario": self.base.with_slos_resolved(),
            "slo_target": self.slo_target,
            "search": "ci",
            "max_rate_rps": c.rate_rps,
            "max_rate_ci_rps": [c.interval.0, c.interval.1],
            "ceiling_rps": c.ceiling_rps,
            "attainment": e.map(|e| json!({"mean": e.mean, "low": e.low, "high": e.high})),
            "ci_half_width": e.map(|e| e.half_width),
            "ci_half_width_target": c.options.half_width,
            "method": e.map(|e| e.method.clone()),
            "replications": e.map(|e| e.replications),
            "max_replications": c.options.max_replications,
            "requests_measured": e.map(|e| e.requests),
            "warmup_cut": e.map(|e| e.warmup_cut),
            "capped": e.map(|e| e.capped),
            "simulations": c.points.iter().map(|p| p.estimate.replications as u64).sum::<u64>(),
            "points": c.points,
            "analytic": self.analytic,
        });
        if let Some(n) = c.native_rps {
            doc["time_scale"] = json!(c.time_scale());
            doc["native_rate_rps"] = json!(n);
        }
        if let Some(cal) = &self.calibration {
            doc["calibration"] = json!(cal);
        }
        doc
    }

    fn bisect_json(&self, r: &disagg_sim::SustainableRate) -> Value {
        let mut doc = json!({
            "schema_version": 1,
            "scenario": self.base.with_slos_resolved(),
            "slo_target": self.slo_target,
            "max_rate_rps": r.rate,
            "bracket_rps": [r.bracket.0, r.bracket.1],
            "simulations": r.simulations,
            "analytic": self.analytic,
        });
        if let Some(c) = &self.calibration {
            doc["calibration"] = json!(c);
        }
        doc
    }

    /// The text report of `disagg plan --max-rate`.
    pub fn text(&self) -> String {
        let mut s = String::new();
        if let Some(an) = &self.analytic {
            let _ = writeln!(
                s,
                "analytic ceiling {} req/s ({} bound)",
                fixed(an.ceiling_rps, 2),
                an.bottleneck
            );
        }
        let c = match &self.answer {
            Answer::Bisect(r) => {
                let _ = writeln!(
                    s,
                    "highest rate meeting {}% SLO attainment: {} req/s (bracket {} to {}, {} simulations)",
                    fixed(100.0 * self.slo_target, 1),
                    fixed(r.rate, 2),
                    fixed(r.bracket.0, 2),
                    fixed(r.bracket.1, 2),
                    r.simulations
                );
                if let Some(c) = &self.calibration {
                    s.push_str(&crate::report::calibration_lines(c));
                }
                return s;
            }
            Answer::Ci(c) => c,
        };
        let pct = |x: f64| fixed(100.0 * x, 1);
        let _ = writeln!(
            s,
            "search bounded by the per-pool ceiling {} req/s (it never goes above it)",
            fixed(c.ceiling_rps, 2)
        );
        match c.at_answer() {
            Some(p) => {
                let e = &p.estimate;
                let _ = writeln!(
                    s,
                    "highest rate whose 95% lower bound meets {}% SLO attainment: {} req/s \
                     (interval {} to {} req/s)",
                    pct(self.slo_target),
                    fixed(c.rate_rps, 2),
                    fixed(c.interval.0, 2),
                    fixed(c.interval.1, 2)
                );
                if let (Some(ts), Some(n)) = (p.time_scale, c.native_rps) {
                    let _ = writeln!(
                        s,
                        "trace replayed at --time-scale {} (the trace runs at {} req/s at scale 1)",
                        fixed(ts, 4),
                        fixed(n, 2)
                    );
                }
                let how = if e.method == "batch-means" {
                    format!(
                        "batch means of 20 batches within the one replay (replications of a \
                         trace are not independent), {} requests measured",
                        thousands(e.requests)
                    )
                } else {
                    format!(
                        "{} replications, {} requests measured",
                        e.replications,
                        thousands(e.requests)
                    )
                };
                let _ = writeln!(
                    s,
                    "at {} req/s: SLO attainment {}% (95% CI {}% to {}%, +/-{} pp); {}, \
                     warm-up cut up to {} requests",
                    fixed(c.rate_rps, 2),
                    pct(e.mean),
                    pct(e.low),
                    pct(e.high),
                    fixed(100.0 * e.half_width, 2),
                    how,
                    thousands(e.warmup_cut)
                );
                if e.capped {
                    let why = if e.method == "batch-means" {
                        "the trace is too short".to_string()
                    } else {
                        format!("--max-replications {} reached", c.options.max_replications)
                    };
                    let _ = writeln!(
                        s,
                        "cap reached: {why}: the interval is +/-{} pp, wider than --ci-half-width \
                         {} pp",
                        fixed(100.0 * e.half_width, 2),
                        fixed(100.0 * c.options.half_width, 2)
                    );
                }
            }
            None => {
                let _ = writeln!(
                    s,
                    "no rate down to {} req/s has a 95% lower bound meeting {}% SLO attainment",
                    fixed(c.points.last().map_or(0.0, |p| p.rate_rps), 2),
                    pct(self.slo_target)
                );
            }
        }
        let unsteady: Vec<String> = c
            .points
            .iter()
            .filter(|p| !p.estimate.steady)
            .map(|p| format!("{} req/s", fixed(p.rate_rps, 2)))
            .collect();
        let sims: u64 = c
            .points
            .iter()
            .map(|p| p.estimate.replications as u64)
            .sum();
        let _ = writeln!(
            s,
            "{} rates simulated ({} simulations){}",
            c.points.len(),
            thousands(sims),
            if unsteady.is_empty() {
                String::new()
            } else {
                format!("; not steady (counted as missing): {}", unsteady.join(", "))
            }
        );
        let short = c.points.iter().any(|p| {
            p.estimate
                .unsteady
                .as_deref()
                .is_some_and(|u| u.starts_with("MSER-5"))
        });
        if short && c.native_rps.is_none() {
            let _ = writeln!(
                s,
                "runs too short for a steady state at some rates (MSER-5 would cut more than \
                 half): more --requests can measure them"
            );
        }
        if let Some(cal) = &self.calibration {
            s.push_str(&crate::report::calibration_lines(cal));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use disagg_sim::simulate_config;

    /// A synthetic Azure-format trace of `n` requests with irregular gaps (no third-party data).
    fn synthetic_trace(name: &str, n: usize) -> String {
        let dir =
            std::env::temp_dir().join(format!("disagg-max-rate-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("trace.csv");
        let mut s = String::from("TIMESTAMP,ContextTokens,GeneratedTokens\n");
        let mut t_us: u64 = 0;
        for i in 0..n {
            t_us += 50_000 + (i as u64 * 7_919 % 400_000);
            let (sec, us) = (t_us / 1_000_000, t_us % 1_000_000);
            let _ = writeln!(
                s,
                "2023-11-16 18:{:02}:{:02}.{:06}0,{},{}",
                sec / 60,
                sec % 60,
                us,
                200 + i * 37 % 900,
                20 + i * 13 % 150
            );
        }
        std::fs::write(&p, s).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn base(extra: &[&str]) -> Scenario {
        let mut flags = vec!["--model", "llama3-8b", "--devices-per-instance", "1"];
        flags.extend(extra);
        Scenario::from_flags(flags).unwrap()
    }

    /// The trace replayed at a rate is `disagg run --trace-file F --time-scale S` of the scale
    /// `at_rate` chose, request for request, bit for bit; the scale gives the rate asked.
    #[test]
    fn trace_replay_at_a_rate_is_run_with_that_time_scale() {
        let cat = Catalogue::builtin();
        let f = synthetic_trace("replay", 300);
        let b = base(&["--trace-file", &f]);
        let cfg = b.build(&cat).unwrap();
        let native = trace_native_rps(&cfg).unwrap();
        let disagg_sim::workload::Source::File { rows, .. } = &cfg.source else {
            panic!("a trace")
        };
        let span = rows.last().unwrap().arrival_s - rows[0].arrival_s;
        assert_eq!(native, 299.0 / span * 1.0);
        for rate in [3.0, 11.5] {
            let sc = at_rate(&b, rate, &cat).unwrap();
            assert_eq!(sc.time_scale, native / rate);
            let s = format!("{:?}", sc.time_scale);
            let run = base(&["--trace-file", &f, "--time-scale", &s]);
            let (a, r) = (
                simulate_config(&sc.build(&cat).unwrap()).unwrap(),
                simulate_config(&run.build(&cat).unwrap()).unwrap(),
            );
            let (ra, rr): (Vec<_>, Vec<_>) = (a.requests().collect(), r.requests().collect());
            assert_eq!(ra, rr, "rate {rate}");
            assert_eq!(a.slo_attainment().to_bits(), r.slo_attainment().to_bits());
            let got = 299.0 / (ra[299].arrival_s - ra[0].arrival_s);
            assert!((got / rate - 1.0).abs() < 1e-9, "{got} for {rate}");
        }
        // A scale given with the trace does not change the native rate.
        let half = base(&["--trace-file", &f, "--time-scale", "0.5"]);
        let n2 = trace_native_rps(&half.build(&cat).unwrap()).unwrap();
        assert!((n2 / native - 1.0).abs() < 1e-12);
        // Without a trace: the generator at the rate.
        let g = at_rate(&base(&["--requests", "50"]), 7.25, &cat).unwrap();
        assert_eq!((g.rate, g.time_scale), (7.25, 1.0));
        assert!(at_rate(&g, 0.0, &cat).is_err());
    }

    fn opts(extra: impl FnOnce(&mut PlanOptions)) -> PlanOptions {
        let mut o = PlanOptions {
            max_rate: true,
            max_replications: 4,
            ..PlanOptions::default()
        };
        extra(&mut o);
        o
    }

    #[test]
    fn ci_search_stays_under_the_ceiling_and_brackets_its_answer() {
        let cat = Catalogue::builtin();
        let b = base(&["--requests", "120", "--link", "eth-25g"]);
        let m = max_rate(&opts(|_| {}), b.clone(), &cat).unwrap();
        let c = m.ci().unwrap();
        assert!(c.rate_rps <= c.ceiling_rps);
        assert!(c.interval.0 == c.rate_rps && c.interval.1 >= c.rate_rps);
        assert!(c.interval.1 <= c.ceiling_rps);
        assert!(c.points.iter().all(|p| p.rate_rps <= c.ceiling_rps));
        let doc = m.json();
        for k in [
            "max_rate_rps",
            "max_rate_ci_rps",
            "ceiling_rps",
            "slo_target",
            "replications",
            "requests_measured",
            "warmup_cut",
            "ci_half_width",
            "capped",
            "scenario",
            "analytic",
        ] {
            assert!(doc.get(k).is_some(), "{k}: {doc}");
        }
        assert!(doc.get("time_scale").is_none());
        // With a trace: the scale of the answer, and the trace's own rate.
        let f = synthetic_trace("search", 200);
        let t = max_rate(&opts(|_| {}), base(&["--trace-file", &f]), &cat).unwrap();
        let doc = t.json();
        let c = t.ci().unwrap();
        if c.rate_rps > 0.0 {
            assert_eq!(
                doc["time_scale"].as_f64().unwrap(),
                c.native_rps.unwrap() / c.rate_rps
            );
            assert_eq!(doc["method"], "batch-means");
            assert_eq!(doc["replications"], 1);
        }
        assert!(t.text().contains("--time-scale"), "{}", t.text());
    }

    #[test]
    fn bad_search_options_are_one_line_errors() {
        let cat = Catalogue::builtin();
        let b = base(&["--requests", "50"]);
        let err = |o: PlanOptions| max_rate(&o, b.clone(), &cat).err().unwrap().0;
        assert_eq!(
            err(opts(|o| o.search = "grid".into())),
            "--search: unknown search 'grid'; valid: ci, bisect"
        );
        assert_eq!(
            err(opts(|o| o.ci_half_width = 0.0)),
            "--ci-half-width: '0': must be a positive number in [0.0001, 0.5]"
        );
        assert_eq!(
            err(opts(|o| o.max_replications = 1)),
            "--max-replications: '1': must be a whole number from 2 to 10000 replications"
        );
    }
}
