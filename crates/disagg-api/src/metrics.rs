//! The registry of summary metrics: one row per metric (key, label, unit, how tables show it, and
//! its getter over [`Summary`]). The sweep and compare tables, plan's latency objective and the
//! server's compact sweep points (the page's metric names) read their metrics here.
//!
//! Adding a summary metric: compute it in disagg-sim's metrics (a `Summary` field), then add
//! one row to [`METRICS`]; it is then a key every front end knows.

use disagg_sim::Summary;

/// One summary metric.
#[derive(Debug)]
pub struct Metric {
    /// Its key (the server's and Python's name; SI units: `_s` seconds, `_rps` requests/s).
    pub key: &'static str,
    /// A short label for table heads.
    pub label: &'static str,
    /// The SI unit of [`Metric::get`] (`s`, `req/s`, `J/token`, `fraction`, ...).
    pub unit: &'static str,
    /// The unit tables show it in (`ms`, `%`, or the SI unit).
    pub shown_unit: &'static str,
    /// What the value is multiplied by to be shown in [`Metric::shown_unit`].
    pub scale: f64,
    /// Decimals shown in tables.
    pub decimals: usize,
    /// The value in a run's summary (NaN when undefined: an empty sample).
    pub get: fn(&Summary) -> f64,
}

impl Metric {
    /// The value in `s`, in [`Metric::shown_unit`].
    pub fn shown(&self, s: &Summary) -> f64 {
        self.scale * (self.get)(s)
    }

    /// The table cell of `s`: the shown value with its decimals, `-` when it is not a finite
    /// number (the sweep table's blank).
    pub fn cell(&self, s: &Summary) -> String {
        let x = (self.get)(s);
        if x.is_finite() {
            format!("{:.*}", self.decimals, self.scale * x)
        } else {
            "-".into()
        }
    }

    /// The table cell of `s`, `n/a` when it is undefined ([`crate::format::or_na`]).
    pub fn cell_or_na(&self, s: &Summary) -> String {
        crate::format::or_na(self.shown(s), self.decimals)
    }
}

/// Every summary metric the front ends name.
pub static METRICS: &[Metric] = &[
    Metric {
        key: "ttft_p50_s",
        label: "TTFT p50",
        unit: "s",
        shown_unit: "ms",
        scale: 1e3,
        decimals: 1,
        get: |s| s.ttft_s.p50,
    },
    Metric {
        key: "ttft_p99_s",
        label: "TTFT p99",
        unit: "s",
        shown_unit: "ms",
        scale: 1e3,
        decimals: 1,
        get: |s| s.ttft_s.p99,
    },
    Metric {
        key: "tpot_p50_s",
        label: "TPOT p50",
        unit: "s",
        shown_unit: "ms",
        scale: 1e3,
        decimals: 1,
        get: |s| s.tpot_s.p50,
    },
    Metric {
        key: "tpot_p99_s",
        label: "TPOT p99",
        unit: "s",
        shown_unit: "ms",
        scale: 1e3,
        decimals: 1,
        get: |s| s.tpot_s.p99,
    },
    Metric {
        key: "e2e_p99_s",
        label: "E2E p99",
        unit: "s",
        shown_unit: "ms",
        scale: 1e3,
        decimals: 1,
        get: |s| s.e2e_s.p99,
    },
    Metric {
        key: "handoff_p50_s",
        label: "hand-off p50",
        unit: "s",
        shown_unit: "ms",
        scale: 1e3,
        decimals: 1,
        get: |s| s.handoff_s.p50,
    },
    Metric {
        key: "handoff_p99_s",
        label: "hand-off p99",
        unit: "s",
        shown_unit: "ms",
        scale: 1e3,
        decimals: 1,
        get: |s| s.handoff_s.p99,
    },
    Metric {
        key: "slo_attainment",
        label: "SLO",
        unit: "fraction",
        shown_unit: "%",
        scale: 100.0,
        decimals: 1,
        get: |s| s.slo_attainment,
    },
    Metric {
        key: "goodput_rps",
        label: "goodput",
        unit: "req/s",
        shown_unit: "req/s",
        scale: 1.0,
        decimals: 2,
        get: |s| s.goodput_rps,
    },
    Metric {
        key: "throughput_rps",
        label: "throughput",
        unit: "req/s",
        shown_unit: "req/s",
        scale: 1.0,
        decimals: 2,
        get: |s| s.throughput_rps,
    },
    Metric {
        key: "link_busy",
        label: "link busy",
        unit: "fraction",
        shown_unit: "%",
        scale: 100.0,
        decimals: 1,
        get: |s| s.link_busy,
    },
    Metric {
        key: "j_per_token",
        label: "J/token",
        unit: "J/token",
        shown_unit: "J/token",
        scale: 1.0,
        decimals: 3,
        get: |s| s.j_per_token,
    },
];

/// The metric of `key`.
pub fn metric(key: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.key == key)
}

/// The metrics of `keys`, in that order (each key must be in [`METRICS`]).
pub fn pick<const N: usize>(keys: [&str; N]) -> [&'static Metric; N] {
    keys.map(|k| metric(k).unwrap_or_else(|| panic!("metric '{k}' is not in the registry")))
}

/// The sweep table's metric columns (`disagg sweep` without an output file).
pub const SWEEP_TABLE: [&str; 6] = [
    "ttft_p99_s",
    "tpot_p99_s",
    "handoff_p99_s",
    "slo_attainment",
    "goodput_rps",
    "j_per_token",
];

/// `disagg compare --sweep-rate`'s metric columns.
pub const COMPARE_TABLE: [&str; 4] = ["ttft_p99_s", "tpot_p99_s", "goodput_rps", "slo_attainment"];

/// The metrics of a sweep point in the server's compact answer (the page's metric names), after
/// `rate` and `completed`.
pub const COMPACT: [&str; 11] = [
    "ttft_p50_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p99_s",
    "handoff_p50_s",
    "handoff_p99_s",
    "slo_attainment",
    "goodput_rps",
    "throughput_rps",
    "link_busy",
    "j_per_token",
];

/// The latencies `disagg plan --latency` may judge by, as `NAME` of `NAME_p99_s`.
pub const PLAN_LATENCIES: [&str; 3] = ["ttft", "tpot", "e2e"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_metric_is_in_the_registry_once() {
        for k in SWEEP_TABLE.iter().chain(&COMPARE_TABLE).chain(&COMPACT) {
            assert!(metric(k).is_some(), "{k}");
        }
        for l in PLAN_LATENCIES {
            assert!(metric(&format!("{l}_p99_s")).is_some(), "{l}");
        }
        let mut keys: Vec<&str> = METRICS.iter().map(|m| m.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), METRICS.len());
    }
}
