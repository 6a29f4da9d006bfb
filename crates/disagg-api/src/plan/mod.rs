//! Capacity planning (`disagg plan`, Python's `disagg.plan`). `max_rate` finds the highest
//! request rate that meets an SLO-attainment target (the reference's analytic bracket, then
//! bisection); `target_rate R` searches prefill and decode instance counts, the device of each
//! pool, links and compression for the cheapest configurations that meet the SLOs at R, prices
//! them (GPU-hours plus energy), and ranks them with the Pareto frontier of cost against p99
//! latency. Optional axes vary each pool's parallel layout (`layouts`, `prefill_layouts`,
//! `decode_layouts`) and the weight/KV/compute formats (`formats`); their columns appear only
//! when they are used. Front ends parse their input into [`PlanOptions`], call [`prepare`], run
//! a [`Search`], and print [`MaxRate::json`] / [`Targets::json`] or the text reports.

use disagg_model::{Catalogue, Formats, QuantFormat};
use disagg_sim::scenario::MAX_DEVICES;
use disagg_sim::Scenario;

use crate::memory::Runs;
use crate::UsageError;

mod max_rate;
mod search;

pub use max_rate::{at_rate, MaxRate};
pub use search::{ceiling_rps, describe, Candidate, Search, Targets};

// Issue 26 item 4 ("objectives"): budget, colocated baseline, objectives, layer-kind shapes.
mod candidate;
pub mod objective;
pub use objective::Objective;
pub use search::{
    gpus_of, node_violation, parse_shapes, pools_label, pools_of, short_label, Colocated, Shape,
};

/// Illustrative on-demand prices, US$ per GPU-hour (override with `--price KEY=USD`).
pub const DEFAULT_PRICES: [(&str, f64); 6] = [
    ("h100", 2.50),
    ("a100", 1.50),
    ("a100-40g", 1.10),
    ("h200", 3.50),
    ("b200", 5.50),
    ("optical", 3.00),
];

/// Illustrative prices of a KV-fabric port, US$ per hour per instance (every prefill and decode
/// instance needs one; links inside a node cost nothing extra). Override with `--price KEY=USD`.
pub const DEFAULT_LINK_PRICES: [(&str, f64); 9] = [
    ("nvlink4", 0.0),
    ("nvlink3", 0.0),
    ("nvlink5", 0.0),
    ("pcie5", 0.0),
    ("pcie4", 0.0),
    ("ib-ndr", 0.25),
    ("eth-100g", 0.08),
    ("eth-25g", 0.03),
    ("cpo-optical", 0.20),
];

/// An analytic ceiling more than this factor below the target rate is "hopeless": not simulated.
pub const PRUNE_FACTOR: f64 = 1.25;

pub use crate::memory::{check_count, MAX_CANDIDATES_WITHOUT_YES};

/// What a plan searches, as `disagg plan`'s flags give it (the lists as their text, parsed and
/// checked by [`prepare`], whose messages name the flags).
#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// Find the highest rate that meets the SLO-attainment target (`--max-rate`).
    pub max_rate: bool,
    /// Find the cheapest configurations that meet the SLOs at this rate (`--target-rate`).
    pub target_rate: Option<f64>,
    /// Fraction of measured requests that must meet both SLOs.
    pub slo_target: f64,
    pub prefill_counts: String,
    pub decode_counts: String,
    pub prefill_devices: String,
    pub decode_devices: String,
    /// None: the scenario's link.
    pub links: Option<String>,
    pub compressions: String,
    pub layouts: Option<String>,
    pub prefill_layouts: Option<String>,
    pub decode_layouts: Option<String>,
    pub formats: Option<String>,
    /// Price overrides, `KEY=USD` each.
    pub price: Vec<String>,
    /// US$ per kWh.
    pub energy_price: f64,
    /// `ttft`, `tpot` or `e2e`: the p99 of the Pareto frontier.
    pub latency: String,
    /// Rows of the ranked table.
    pub top: usize,
    /// Allow more than 10,000 candidates and runs over the memory budget.
    pub yes: bool,
    /// No candidate count on standard error.
    pub quiet: bool,
    /// Total GPUs a candidate may use (`--gpus`; None: no limit).
    pub gpus: Option<u64>,
    /// GPUs per node (`--gpus-per-node`): an instance has at most this many devices or a
    /// whole multiple of it.
    pub gpus_per_node: u32,
    /// `no`, `yes` or `only`: colocated candidates beside the disaggregated ones (`--colocated`).
    pub colocated: String,
    /// What the ranking optimises (`--objective`; [`objective::NAMES`]).
    pub objective: String,
    /// `max_rate`'s search: `ci` (confidence intervals, the default) or `bisect` (the
    /// reference's bisection, as before issue 26).
    pub search: String,
    /// `max_rate` (`ci`): replicate until the 95% interval of the SLO attainment is at most this
    /// wide on each side (0.01 = 1 percentage point).
    pub ci_half_width: f64,
    /// `max_rate` (`ci`): at most this many replications per rate.
    pub max_replications: u32,
}

impl Default for PlanOptions {
    /// The defaults of `disagg plan`'s flags.
    fn default() -> Self {
        PlanOptions {
            max_rate: false,
            target_rate: None,
            slo_target: 0.9,
            prefill_counts: "1-4".into(),
            decode_counts: "1-4".into(),
            prefill_devices: "h100,a100".into(),
            decode_devices: "h100,a100".into(),
            links: None,
            compressions: "none".into(),
            layouts: None,
            prefill_layouts: None,
            decode_layouts: None,
            formats: None,
            price: Vec::new(),
            energy_price: 0.10,
            latency: "e2e".into(),
            top: 10,
            yes: false,
            quiet: false,
            gpus: None,
            gpus_per_node: 8,
            colocated: "yes".into(),
            objective: "cost".into(),
            search: "ci".into(),
            ci_half_width: 0.01,
            max_replications: 20,
        }
    }
}

/// The keys of [`PlanOptions`], as Python's `disagg.plan` takes them (the flags with '_' for
/// '-'; `plot` and `json` are the command line's only).
pub const KEYS: [&str; 26] = [
    "max_rate",
    "target_rate",
    "slo_target",
    "prefill_counts",
    "decode_counts",
    "prefill_devices",
    "decode_devices",
    "links",
    "compressions",
    "layouts",
    "prefill_layouts",
    "decode_layouts",
    "formats",
    "price",
    "energy_price",
    "latency",
    "top",
    "yes",
    "quiet",
    "gpus",
    "gpus_per_node",
    "colocated",
    "objective",
    "search",
    "ci_half_width",
    "max_replications",
];

pub(crate) fn parse_counts(flag: &str, s: &str) -> Result<Vec<u32>, UsageError> {
    let range = disagg_sim::ranges::for_command("plan", flag).expect("in the table");
    let count = |part: &str, x: &str| match range.parse(x) {
        Ok(disagg_sim::ranges::Num::Int(v)) => Ok(v as u32),
        _ => Err(UsageError(format!(
            "{flag}: '{part}': each count must be {} (a list like 1,2,4 or a range like 1-4)",
            range.expected()
        ))),
    };
    let mut out = Vec::new();
    for part in items(flag, s)? {
        match part.split_once('-') {
            Some((a, b)) if !a.trim().is_empty() => {
                let (a, b) = (count(part, a)?, count(part, b)?);
                if b < a {
                    return Err(UsageError(format!(
                        "{flag}: range '{part}' ends before it starts"
                    )));
                }
                out.extend(a..=b);
            }
            _ => out.push(count(part, part)?),
        }
    }
    if out.is_empty() {
        return Err(UsageError(format!(
            "{flag}: expected counts like 1-4 or 1,2,4, got '{s}'"
        )));
    }
    out.dedup();
    Ok(out)
}

pub use crate::sweep::items;

/// A parallel layout a plan tries in a pool: `tp` x `pp` devices per instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub tp: u32,
    pub pp: u32,
}

impl Layout {
    /// Devices per instance: tp x pp (`docs/cost-model.md#parallelism`: the reference does not derive it).
    pub fn devices(self) -> u32 {
        self.tp * self.pp
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.tp, self.pp)
    }
}

/// The layouts of a `TPxPP` list (`4x1,2x2,8x1`): whole degrees of at least 1 whose product,
/// the devices per instance, is at most [`MAX_DEVICES`].
pub fn parse_layouts(flag: &str, s: &str) -> Result<Vec<Layout>, UsageError> {
    let mut out = Vec::new();
    for part in items(flag, s)? {
        let bad = || {
            UsageError(format!(
                "{flag}: '{part}': each layout must be TPxPP, whole degrees of at least 1 with \
                 tp x pp at most {MAX_DEVICES} devices (e.g. 4x1,2x2,8x1)"
            ))
        };
        let (tp, pp) = part.split_once('x').ok_or_else(bad)?;
        let degree = |x: &str| x.trim().parse::<u32>().ok().filter(|&v| v >= 1);
        let (tp, pp) = (degree(tp).ok_or_else(bad)?, degree(pp).ok_or_else(bad)?);
        match tp.checked_mul(pp) {
            Some(n) if n <= MAX_DEVICES => out.push(Layout { tp, pp }),
            _ => return Err(bad()),
        }
    }
    if out.is_empty() {
        return Err(UsageError(format!(
            "{flag}: give at least one layout, e.g. 4x1,2x2"
        )));
    }
    Ok(out)
}

/// `W/KV/C`: the weight, KV-cache and compute format names.
pub fn formats_label(f: &Formats) -> String {
    format!(
        "{}/{}/{}",
        f.weight.as_str(),
        f.kv.as_str(),
        f.compute.as_str()
    )
}

/// The formats of a `--formats` list: items `W/KV/C`, or one name for all three.
pub fn parse_formats(flag: &str, s: &str) -> Result<Vec<Formats>, UsageError> {
    let valid = QuantFormat::NAMES.join(", ");
    let mut out = Vec::new();
    for part in items(flag, s)? {
        let names: Vec<&str> = part.split('/').map(str::trim).collect();
        let mut fs = Vec::with_capacity(3);
        for n in &names {
            fs.push(QuantFormat::parse(n).map_err(|_| {
                UsageError(format!(
                    "{flag}: '{part}': unknown format '{n}'; valid: {valid} (items W/KV/C, e.g. \
                     fp8/fp8/bf16, or one format for all three)"
                ))
            })?);
        }
        let (weight, kv, compute) = match fs[..] {
            [one] => (one, one, one),
            [w, k, c] => (w, k, c),
            _ => {
                return Err(UsageError(format!(
                    "{flag}: '{part}': expected W/KV/C (weight, KV cache and compute formats, e.g. \
                     fp8/fp8/bf16) or one format for all three; valid: {valid}"
                )))
            }
        };
        out.push(Formats {
            weight,
            kv,
            compute,
        });
    }
    if out.is_empty() {
        return Err(UsageError(format!(
            "{flag}: give at least one format, e.g. bf16,fp8"
        )));
    }
    Ok(out)
}

pub(crate) fn parse_list(flag: &str, s: &str) -> Result<Vec<String>, UsageError> {
    let v: Vec<String> = items(flag, s)?.into_iter().map(str::to_string).collect();
    if v.is_empty() {
        return Err(UsageError(format!("{flag}: give at least one value")));
    }
    Ok(v)
}

/// Prices in US$ per hour by device key (per GPU) and link key (per instance's port).
pub fn prices(overrides: &[String], cat: &Catalogue) -> Result<Vec<(String, f64)>, UsageError> {
    let mut p: Vec<(String, f64)> = DEFAULT_PRICES
        .iter()
        .chain(&DEFAULT_LINK_PRICES)
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    for o in overrides {
        let (k, v) = o
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--price: expected KEY=USD, got '{o}'")))?;
        if cat.device(k.trim()).is_err() && cat.link(k.trim()).is_err() {
            let mut valid: Vec<&str> = cat.devices.iter().map(|d| d.key.as_str()).collect();
            valid.extend(cat.links.iter().map(|l| l.key.as_str()));
            return Err(UsageError(format!(
                "--price: unknown device or link '{}'; valid: {}",
                k.trim(),
                valid.join(", ")
            )));
        }
        let range = disagg_sim::ranges::for_command("plan", "--price").expect("in the table");
        let v = match range.parse(v) {
            Ok(disagg_sim::ranges::Num::Float(x)) => x,
            _ => {
                return Err(UsageError(format!(
                    "--price: '{o}': the price must be {}",
                    range.expected()
                )))
            }
        };
        match p.iter_mut().find(|(key, _)| key == k.trim()) {
            Some(e) => e.1 = v,
            None => p.push((k.trim().to_string(), v)),
        }
    }
    Ok(p)
}

pub(crate) fn price_of(prices: &[(String, f64)], key: &str) -> Option<f64> {
    prices.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// Where a scenario's request count comes from, for the memory check's message.
pub(crate) fn requests_flag(sc: &Scenario) -> &'static str {
    if sc.trace_file.is_some() {
        "--trace-file"
    } else {
        "--requests"
    }
}

/// A plan, ready: the highest sustainable rate (computed), or a search to run.
pub enum Plan<'a> {
    MaxRate(Box<MaxRate>),
    Search(Box<Search<'a>>),
}

/// Checks `o` against `base` (and the memory budget) and prepares the plan; a `max_rate` plan
/// is computed here.
pub fn prepare<'a>(
    base: Scenario,
    cat: &'a Catalogue,
    o: &PlanOptions,
    warnings: &mut crate::report::Warnings,
) -> Result<Plan<'a>, UsageError> {
    if base.trace_file.is_none() {
        if let Ok(cfg) = base.build(cat) {
            // The clipping count generates the requests: the memory check comes first.
            crate::memory::check(requests_flag(&base), &cfg, false, Runs::one(Some(o.yes)))?;
            warnings.clipping(&cfg);
        }
    }
    if !crate::metrics::PLAN_LATENCIES.contains(&o.latency.as_str()) {
        return Err(UsageError(format!(
            "--latency: unknown metric '{}'; valid: ttft, tpot, e2e",
            o.latency
        )));
    }
    if o.max_rate {
        return max_rate::max_rate(o, base, cat).map(|m| Plan::MaxRate(Box::new(m)));
    }
    search::prepare(base, cat, o).map(|s| Plan::Search(Box::new(s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_devices_are_tp_times_pp() {
        // 3 x 2 = 6 (3 + 2 = 5, 3 / 2 = 1), 1 x 7 = 7 (1 + 7 = 8), 8 x 1 = 8 (8 + 1 = 9).
        assert_eq!(Layout { tp: 3, pp: 2 }.devices(), 6);
        assert_eq!(Layout { tp: 1, pp: 7 }.devices(), 7);
        assert_eq!(Layout { tp: 8, pp: 1 }.devices(), 8);
        assert_eq!(Layout { tp: 3, pp: 2 }.to_string(), "3x2");
    }

    #[test]
    fn layouts_parse_tp_by_pp() {
        let l = |tp, pp| Layout { tp, pp };
        assert_eq!(
            parse_layouts("--layouts", "4x1, 2x2,8x1").unwrap(),
            vec![l(4, 1), l(2, 2), l(8, 1)]
        );
        assert_eq!(parse_layouts("--layouts", "1x1").unwrap(), vec![l(1, 1)]);
        // The largest instance: 1024 devices, 1024 x 1 or 32 x 32.
        assert_eq!(
            parse_layouts("--layouts", "1024x1,32x32,1x1024").unwrap(),
            vec![l(1024, 1), l(32, 32), l(1, 1024)]
        );
        for bad in [
            "4x",
            "x4",
            "0x1",
            "1x0",
            "4",
            "2x2x2",
            "-1x2",
            "1.5x2",
            "1025x1",
            "33x32",
            "4X1",
            "65536x65536",
        ] {
            let e = parse_layouts("--decode-layouts", &format!("2x2,{bad}"))
                .unwrap_err()
                .0;
            assert!(
                e.starts_with(&format!(
                    "--decode-layouts: '{bad}': each layout must be TPxPP"
                )),
                "{bad}: {e}"
            );
            assert!(e.contains("at most 1024 devices (e.g. 4x1,2x2,8x1)"), "{e}");
        }
        assert_eq!(
            parse_layouts("--layouts", " ").unwrap_err().0,
            "--layouts: give at least one layout, e.g. 4x1,2x2"
        );
        assert!(parse_layouts("--layouts", "4x1,").is_err());
    }

    #[test]
    fn formats_parse_w_kv_c_or_one_name() {
        let f = |weight, kv, compute| Formats {
            weight,
            kv,
            compute,
        };
        use QuantFormat::*;
        assert_eq!(
            parse_formats("--formats", "bf16, fp8,int4/fp8/bf16,int8/bf16/int8").unwrap(),
            vec![
                f(Bf16, Bf16, Bf16),
                f(Fp8, Fp8, Fp8),
                f(Int4, Fp8, Bf16),
                f(Int8, Bf16, Int8)
            ]
        );
        assert_eq!(
            parse_formats("--formats", "fp4").unwrap(),
            vec![f(Fp4, Fp4, Fp4)]
        );
        assert_eq!(formats_label(&f(Int4, Fp8, Bf16)), "int4/fp8/bf16");
        assert_eq!(formats_label(&Formats::default()), "bf16/bf16/bf16");
        assert_eq!(
            parse_formats("--formats", "bf16,fp9/bf16/bf16")
                .unwrap_err()
                .0,
            "--formats: 'fp9/bf16/bf16': unknown format 'fp9'; valid: bf16, fp8, int8, int4, fp4 \
             (items W/KV/C, e.g. fp8/fp8/bf16, or one format for all three)"
        );
        assert!(parse_formats("--formats", "fp8//bf16")
            .unwrap_err()
            .0
            .starts_with("--formats: 'fp8//bf16': unknown format ''"));
        for bad in ["fp8/bf16", "fp8/fp8/fp8/fp8"] {
            assert_eq!(
                parse_formats("--formats", bad).unwrap_err().0,
                format!(
                    "--formats: '{bad}': expected W/KV/C (weight, KV cache and compute formats, \
                     e.g. fp8/fp8/bf16) or one format for all three; valid: bf16, fp8, int8, \
                     int4, fp4"
                )
            );
        }
        assert_eq!(
            parse_formats("--formats", "").unwrap_err().0,
            "--formats: give at least one format, e.g. bf16,fp8"
        );
    }
}
