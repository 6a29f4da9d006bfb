//! The search of a `target_rate` plan: every candidate of the grid simulated (in parallel),
//! priced, and ranked with the Pareto frontier.

use std::fmt::Write as _;

use disagg_model::{Catalogue, Formats};
use disagg_sim::{simulate_config, Role, Scenario, SimConfig, Summary};
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

use super::*;
use crate::format::fixed;

/// The analytic per-pool ceiling of a configuration ([`disagg_sim::capacity::ceiling`]: each
/// pool with its own cost model, the KV link on the compressed wire bytes;
/// `docs/serving-model.md#per-pool-capacity`).
pub fn ceiling_rps(cfg: &SimConfig) -> Option<f64> {
    disagg_sim::capacity::ceiling(cfg).map(|c| c.rps)
}

/// One candidate configuration and what became of it.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    pub index: usize,
    pub prefill: u32,
    pub decode: u32,
    pub prefill_device: String,
    pub decode_device: String,
    pub link: String,
    pub compression: String,
    /// The prefill pool's layout `TPxPP` (null: the scenario has none); only in a plan with a
    /// layout axis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_layout: Option<Option<String>>,
    /// The decode pool's layout, as `prefill_layout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_layout: Option<Option<String>>,
    /// `W/KV/C` formats; only in a plan with a format axis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub formats: Option<String>,
    /// `pruned` (analytic ceiling hopeless), `infeasible` (simulated, misses the SLO target),
    /// `feasible`, or `invalid` (e.g. the model does not fit).
    pub status: String,
    pub reason: Option<String>,
    pub ceiling_rps: Option<f64>,
    pub slo_attainment: Option<f64>,
    pub latency_p99_s: Option<f64>,
    /// GPUs plus link ports, US$ per hour.
    pub gpu_usd_per_hour: f64,
    pub energy_usd_per_hour: Option<f64>,
    pub usd_per_hour: Option<f64>,
    pub usd_per_mtok: Option<f64>,
    pub pareto: bool,
    /// The run's summary (simulated candidates; not in the JSON).
    #[serde(skip)]
    pub summary: Option<Summary>,
}

/// A layout cell of the table: the layout, `-` for none, nothing when layouts are not an axis.
fn layout_cell(l: &Option<Option<String>>) -> &str {
    match l {
        Some(Some(x)) => x,
        Some(None) => "-",
        None => "",
    }
}

/// The extra cells of the layout and format axes, each with its leading space (empty when the
/// axis is not used): `(" 2x2      4x1     ", " fp8/fp8/fp8   ")`.
fn axis_cells(prefill: &str, decode: &str, formats: &str, c: &Candidate) -> (String, String) {
    let lay = if c.prefill_layout.is_some() {
        format!(" {prefill:<8} {decode:<8}")
    } else {
        String::new()
    };
    let fmt = if c.formats.is_some() {
        format!(" {formats:<14}")
    } else {
        String::new()
    };
    (lay, fmt)
}

/// A candidate in words: `1P h100 + 2D a100, ib-ndr, none`, with a pool's layout after its
/// device when it has one in a plan with a layout axis and the formats at the end when they are
/// an axis (`1P h100 2x2 + 2D a100, ib-ndr, none, fp8/fp8/fp8`).
pub fn describe(c: &Candidate) -> String {
    let lay = |l: &Option<Option<String>>| match l {
        Some(Some(x)) => format!(" {x}"),
        _ => String::new(),
    };
    let fmt = match &c.formats {
        Some(f) => format!(", {f}"),
        None => String::new(),
    };
    format!(
        "{}P {}{} + {}D {}{}, {}, {}{fmt}",
        c.prefill,
        c.prefill_device,
        lay(&c.prefill_layout),
        c.decode,
        c.decode_device,
        lay(&c.decode_layout),
        c.link,
        c.compression
    )
}

/// The p99 of latency `metric` (one of [`crate::metrics::PLAN_LATENCIES`]) in `s`.
fn latency_of(s: &Summary, metric: &str) -> f64 {
    let m = crate::metrics::metric(&format!("{metric}_p99_s"))
        .unwrap_or_else(|| crate::metrics::pick(["e2e_p99_s"])[0]);
    (m.get)(s)
}

/// The search of a `target_rate` plan, validated and counted: [`Search::run`] simulates it.
pub struct Search<'a> {
    cat: &'a Catalogue,
    base: Scenario,
    o: PlanOptions,
    rate: f64,
    prices: Vec<(String, f64)>,
    pcs: Vec<u32>,
    dcs: Vec<u32>,
    pds: Vec<String>,
    dds: Vec<String>,
    pls: Vec<Option<Layout>>,
    dls: Vec<Option<Layout>>,
    links: Vec<String>,
    comps: Vec<String>,
    fmts: Vec<Option<Formats>>,
    layout_axis: bool,
    format_axis: bool,
    dims: [usize; 9],
    /// How many candidates.
    pub count: u64,
}

/// Checks a `target_rate` plan's lists against `base` (and the memory budget) and counts its
/// candidates.
pub(super) fn prepare<'a>(
    base: Scenario,
    cat: &'a Catalogue,
    o: &PlanOptions,
) -> Result<Search<'a>, UsageError> {
    let Some(rate) = o.target_rate else {
        return Err(UsageError("give --max-rate or --target-rate R".into()));
    };
    let prices = prices(&o.price, cat)?;
    let pcs = parse_counts("--prefill-counts", &o.prefill_counts)?;
    let dcs = parse_counts("--decode-counts", &o.decode_counts)?;
    let pds = parse_list("--prefill-devices", &o.prefill_devices)?;
    let dds = parse_list("--decode-devices", &o.decode_devices)?;
    let links = match &o.links {
        Some(l) => parse_list("--links", l)?,
        None => vec![base.link.clone()],
    };
    let comps = parse_list("--compressions", &o.compressions)?;
    // The layout and format axes: `None` is the scenario's own (one value: no axis).
    let layouts = match &o.layouts {
        Some(l) => Some(parse_layouts("--layouts", l)?),
        None => None,
    };
    let pool_layouts =
        |flag: &str, own: &Option<String>| -> Result<Vec<Option<Layout>>, UsageError> {
            Ok(match (own, &layouts) {
                (Some(l), _) => parse_layouts(flag, l)?.into_iter().map(Some).collect(),
                (None, Some(all)) => all.iter().copied().map(Some).collect(),
                (None, None) => vec![None],
            })
        };
    let pls = pool_layouts("--prefill-layouts", &o.prefill_layouts)?;
    let dls = pool_layouts("--decode-layouts", &o.decode_layouts)?;
    let fmts: Vec<Option<Formats>> = match &o.formats {
        Some(f) => parse_formats("--formats", f)?
            .into_iter()
            .map(Some)
            .collect(),
        None => vec![None],
    };
    let layout_axis =
        o.layouts.is_some() || o.prefill_layouts.is_some() || o.decode_layouts.is_some();
    let format_axis = o.formats.is_some();
    for d in pds.iter().chain(&dds) {
        cat.device(d)
            .map_err(|e| UsageError(format!("--prefill-devices/--decode-devices: {e}")))?;
        if price_of(&prices, d).is_none() {
            return Err(UsageError(format!(
                "--price: no price for device '{d}'; give --price {d}=USD"
            )));
        }
    }
    for l in &links {
        cat.link(l)
            .map_err(|e| UsageError(format!("--links: {e}")))?;
        if price_of(&prices, l).is_none() {
            return Err(UsageError(format!(
                "--price: no price for link '{l}'; give --price {l}=USD"
            )));
        }
    }
    for c in &comps {
        cat.compression(c)
            .map_err(|e| UsageError(format!("--compressions: {e}")))?;
    }
    if base.mode != disagg_sim::Mode::Disagg {
        return Err(UsageError(
            "--mode: plan searches disaggregated configurations; use --mode disagg".into(),
        ));
    }
    // The grid, in a fixed order (the last list varies fastest), counted before anything is
    // allocated per candidate.
    // The layout and format axes have one value (the scenario's own) unless given.
    let dims = [
        pcs.len(),
        dcs.len(),
        pds.len(),
        dds.len(),
        pls.len(),
        dls.len(),
        links.len(),
        comps.len(),
        fmts.len(),
    ];
    let count = dims.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64));
    let lists = match (layout_axis, format_axis) {
        (false, false) => "the device, link or compression lists",
        (true, false) => "the device, layout, link or compression lists",
        (false, true) => "the device, link, compression or format lists",
        (true, true) => "the device, layout, link, compression or format lists",
    };
    let shorten = format!("--prefill-counts, --decode-counts, {lists}");
    check_count("plan", count, "candidates", &shorten, o.yes)?;
    // The one memory budget: every candidate holds the scenario's requests; the workers run
    // as many candidates at once.
    let base_cfg = Scenario {
        rate,
        ..base.clone()
    }
    .build(cat);
    if let Ok(cfg) = &base_cfg {
        let runs = Runs {
            parallel: (crate::memory::threads(None) as u64).min(count.max(1)) as usize,
            yes: Some(o.yes),
            threads_flag: false,
        };
        crate::memory::check(requests_flag(&base), cfg, false, runs)?;
    }
    Ok(Search {
        cat,
        base,
        o: o.clone(),
        rate,
        prices,
        pcs,
        dcs,
        pds,
        dds,
        pls,
        dls,
        links,
        comps,
        fmts,
        layout_axis,
        format_axis,
        dims,
        count,
    })
}

/// The ranked candidates of a search.
pub struct Targets {
    /// Every candidate, by index.
    pub cands: Vec<Candidate>,
    /// The indices of the feasible ones, cheapest first.
    pub ranked: Vec<usize>,
    rate: f64,
    o: PlanOptions,
    prices: Vec<(String, f64)>,
}

impl Search<'_> {
    /// The note on standard error before a search: `plan: N candidates at R req/s`.
    pub fn note(&self) -> String {
        format!("plan: {} candidates at {} req/s", self.count, self.rate)
    }

    /// Simulates every candidate (in parallel), calling `done` after each.
    pub fn run(&self, done: &(dyn Fn() + Sync)) -> Result<Targets, UsageError> {
        let (o, rate, prices, base, cat) = (&self.o, self.rate, &self.prices, &self.base, self.cat);
        let (layout_axis, format_axis, dims) = (self.layout_axis, self.format_axis, self.dims);
        let own_layout = |role: Role| base.layout_for(role).map(|l| format!("{}x{}", l.tp, l.pp));
        let layout_label = |pick: Option<Layout>, role: Role| {
            layout_axis.then(|| match pick {
                Some(l) => Some(l.to_string()),
                None => own_layout(role),
            })
        };
        let candidate = |index: usize| {
            let mut rest = index;
            let mut pick = [0usize; 9];
            for (k, &d) in dims.iter().enumerate().rev() {
                pick[k] = rest % d;
                rest /= d;
            }
            (
                (
                    self.pcs[pick[0]],
                    self.dcs[pick[1]],
                    &self.pds[pick[2]],
                    &self.dds[pick[3]],
                ),
                (self.pls[pick[4]], self.dls[pick[5]]),
                (
                    &self.links[pick[6]],
                    &self.comps[pick[7]],
                    self.fmts[pick[8]],
                ),
            )
        };
        let mut cands: Vec<Candidate> = (0..self.count as usize)
            .into_par_iter()
            .map(|index| {
                let ((p, d, pd, dd), (pl, dl), (l, c, f)) = candidate(index);
                let mut sc = Scenario {
                    prefill: p,
                    decode: d,
                    prefill_device: Some(pd.clone()),
                    decode_device: Some(dd.clone()),
                    link: l.clone(),
                    kv_compress: if c == "none" { None } else { Some(c.clone()) },
                    rate,
                    ..base.clone()
                };
                if let Some(x) = pl {
                    sc.prefill_tp = Some(x.tp);
                    sc.prefill_pp = Some(x.pp);
                    sc.prefill_devices_per_instance = Some(x.devices());
                }
                if let Some(x) = dl {
                    sc.decode_tp = Some(x.tp);
                    sc.decode_pp = Some(x.pp);
                    sc.decode_devices_per_instance = Some(x.devices());
                }
                if let Some(x) = f {
                    sc.weight_format = x.weight;
                    sc.kv_format = x.kv;
                    sc.compute_format = x.compute;
                }
                let mut cand = Candidate {
                    index,
                    prefill: p,
                    decode: d,
                    prefill_device: pd.clone(),
                    decode_device: dd.clone(),
                    link: l.clone(),
                    compression: c.clone(),
                    prefill_layout: layout_label(pl, Role::Prefill),
                    decode_layout: layout_label(dl, Role::Decode),
                    formats: format_axis.then(|| formats_label(&sc.formats())),
                    status: String::new(),
                    reason: None,
                    ceiling_rps: None,
                    slo_attainment: None,
                    latency_p99_s: None,
                    gpu_usd_per_hour: 0.0,
                    energy_usd_per_hour: None,
                    usd_per_hour: None,
                    usd_per_mtok: None,
                    pareto: false,
                    summary: None,
                };
                let cfg = match sc.build(cat) {
                    Ok(c) => c,
                    Err(e) => {
                        cand.status = "invalid".into();
                        cand.reason = Some(e.to_string());
                        return cand;
                    }
                };
                let ports: f64 = cfg.pools.iter().map(|pl| pl.instances as f64).sum();
                cand.gpu_usd_per_hour = cfg
                    .pools
                    .iter()
                    .map(|pl| {
                        pl.instances as f64
                            * pl.devices as f64
                            * price_of(prices, &pl.device.key).unwrap_or(0.0)
                    })
                    .sum::<f64>()
                    + ports * price_of(prices, l).unwrap_or(0.0);
                cand.ceiling_rps = ceiling_rps(&cfg);
                if cand.ceiling_rps.is_some_and(|c| c * PRUNE_FACTOR < rate) {
                    cand.status = "pruned".into();
                    cand.reason = Some(format!(
                        "analytic ceiling {:.2} req/s is hopeless at {rate} req/s",
                        cand.ceiling_rps.unwrap_or(0.0)
                    ));
                    return cand;
                }
                match simulate_config(&cfg) {
                    Ok(run) => {
                        let s = run.summary();
                        let energy = s.avg_power_w / 1000.0 * o.energy_price;
                        let total = cand.gpu_usd_per_hour + energy;
                        cand.slo_attainment = Some(s.slo_attainment);
                        cand.latency_p99_s = Some(latency_of(&s, &o.latency));
                        cand.energy_usd_per_hour = Some(energy);
                        cand.usd_per_hour = Some(total);
                        cand.usd_per_mtok = Some(total / (s.throughput_tok_s * 3600.0) * 1e6);
                        cand.status = if s.slo_attainment >= o.slo_target {
                            "feasible"
                        } else {
                            "infeasible"
                        }
                        .into();
                        cand.summary = Some(s);
                    }
                    Err(e) => {
                        cand.status = "invalid".into();
                        cand.reason = Some(e.to_string());
                    }
                }
                cand
            })
            .inspect(|_| done())
            .collect();
        // Every candidate refused by the same configuration check (e.g. --fast with a scheduling lever
        // in disaggregated mode): that is a bad input, not an empty plan.
        if !cands.is_empty() && cands.iter().all(|c| c.status == "invalid") {
            let first = cands[0].reason.clone().unwrap_or_default();
            return Err(UsageError(format!(
                "every one of the {} candidates is invalid; the first: {first}",
                cands.len()
            )));
        }
        // Pareto frontier of (cost, latency) among feasible candidates.
        let feas: Vec<usize> = cands
            .iter()
            .filter(|c| c.status == "feasible")
            .map(|c| c.index)
            .collect();
        for &i in &feas {
            let (ci, li) = (
                cands[i].usd_per_hour.unwrap_or(f64::INFINITY),
                cands[i].latency_p99_s.unwrap_or(f64::INFINITY),
            );
            let dominated = feas.iter().any(|&j| {
                let (cj, lj) = (
                    cands[j].usd_per_hour.unwrap_or(f64::INFINITY),
                    cands[j].latency_p99_s.unwrap_or(f64::INFINITY),
                );
                j != i && cj <= ci && lj <= li && (cj < ci || lj < li)
            });
            cands[i].pareto = !dominated;
        }
        let mut ranked: Vec<&Candidate> = cands.iter().filter(|c| c.status == "feasible").collect();
        ranked.sort_by(|x, y| {
            x.usd_per_hour
                .unwrap_or(f64::INFINITY)
                .total_cmp(&y.usd_per_hour.unwrap_or(f64::INFINITY))
                .then(
                    x.latency_p99_s
                        .unwrap_or(f64::INFINITY)
                        .total_cmp(&y.latency_p99_s.unwrap_or(f64::INFINITY)),
                )
                .then(x.index.cmp(&y.index))
        });
        let ranked: Vec<usize> = ranked.iter().map(|c| c.index).collect();
        Ok(Targets {
            cands,
            ranked,
            rate,
            o: o.clone(),
            prices: prices.clone(),
        })
    }
}

impl Targets {
    /// The feasible candidates, cheapest first.
    pub fn ranked(&self) -> Vec<&Candidate> {
        self.ranked.iter().map(|&i| &self.cands[i]).collect()
    }

    /// The document of `disagg plan --target-rate R --json` (every candidate).
    pub fn json(&self) -> Value {
        let (cands, rate, prices) = (&self.cands, self.rate, &self.prices);
        let count = |st: &str| cands.iter().filter(|c| c.status == st).count();
        let best = self.ranked.first().copied();
        let mut doc = json!({
            "schema_version": 1,
            "target_rate_rps": rate,
            "slo_target": self.o.slo_target,
            "latency_metric": format!("{}_p99", self.o.latency),
            "energy_usd_per_kwh": self.o.energy_price,
            "prices_usd_per_hour": prices.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "candidates_total": cands.len(),
            "simulated": count("feasible") + count("infeasible"),
            "pruned": count("pruned"),
            "invalid": count("invalid"),
            "feasible": count("feasible"),
            "best": best,
            "ranked": self.ranked,
            "pareto": cands.iter().filter(|c| c.pareto).map(|c| c.index).collect::<Vec<_>>(),
            "candidates": cands,
        });
        let mut calibration = Vec::new();
        for s in cands.iter().filter_map(|c| c.summary.as_ref()) {
            crate::report::add_calibration(&mut calibration, s);
        }
        if !calibration.is_empty() {
            doc["calibration"] = json!(calibration);
        }
        doc
    }

    /// The text report of `disagg plan --target-rate R`: the counts, the ranked table, the
    /// Pareto frontier.
    pub fn text(&self) -> String {
        let (cands, rate, a) = (&self.cands, self.rate, &self.o);
        let ranked = self.ranked();
        let count = |st: &str| cands.iter().filter(|c| c.status == st).count();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} candidates at {rate} req/s: {} simulated ({} meet {}% SLO attainment), {} pruned by the analytic bounds, {} invalid",
            cands.len(),
            count("feasible") + count("infeasible"),
            count("feasible"),
            fixed(100.0 * a.slo_target, 1),
            count("pruned"),
            count("invalid")
        );
        if ranked.is_empty() {
            let _ = writeln!(
                s,
                "no configuration in the search space meets the SLOs at {rate} req/s"
            );
            return s;
        }
        s.push('\n');
        let (lay, fmt) = match ranked.first() {
            Some(c) => axis_cells("P layout", "D layout", "formats", c),
            None => (String::new(), String::new()),
        };
        let _ = writeln!(
            s,
            "{:>4} {:>3} {:>3} {:<9} {:<9}{lay} {:<12} {:<12}{fmt} {:>8} {:>11} {:>9} {:>9} {:>8}",
            "rank",
            "P",
            "D",
            "prefill",
            "decode",
            "link",
            "compression",
            "SLO %",
            &format!("{} p99 ms", a.latency),
            "$/hour",
            "$/Mtok",
            "pareto"
        );
        for (k, c) in ranked.iter().take(a.top.max(1)).enumerate() {
            let (lay, fmt) = axis_cells(
                layout_cell(&c.prefill_layout),
                layout_cell(&c.decode_layout),
                c.formats.as_deref().unwrap_or(""),
                c,
            );
            let _ = writeln!(
                s,
                "{:>4} {:>3} {:>3} {:<9} {:<9}{lay} {:<12} {:<12}{fmt} {:>8} {:>11} {:>9} {:>9} {:>8}",
                k + 1,
                c.prefill,
                c.decode,
                c.prefill_device,
                c.decode_device,
                c.link,
                c.compression,
                fixed(100.0 * c.slo_attainment.unwrap_or(0.0), 1),
                fixed(1e3 * c.latency_p99_s.unwrap_or(f64::NAN), 1),
                fixed(c.usd_per_hour.unwrap_or(f64::NAN), 2),
                fixed(c.usd_per_mtok.unwrap_or(f64::NAN), 3),
                if c.pareto { "*" } else { "" }
            );
        }
        s.push('\n');
        let _ = writeln!(s, "Pareto frontier (cost against {} p99):", a.latency);
        let mut front: Vec<&Candidate> = cands.iter().filter(|c| c.pareto).collect();
        front.sort_by(|x, y| {
            x.usd_per_hour
                .unwrap_or(0.0)
                .total_cmp(&y.usd_per_hour.unwrap_or(0.0))
        });
        for c in front {
            let _ = writeln!(
                s,
                "  ${:>8}/hour  {:>10} ms   {}",
                fixed(c.usd_per_hour.unwrap_or(f64::NAN), 2),
                fixed(1e3 * c.latency_p99_s.unwrap_or(f64::NAN), 1),
                describe(c)
            );
        }
        s.push_str(&crate::report::calibration_of_runs(
            cands.iter().filter_map(|c| c.summary.as_ref()),
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(
        prefill_layout: Option<Option<&str>>,
        decode_layout: Option<Option<&str>>,
        formats: Option<&str>,
    ) -> Candidate {
        let own = |l: Option<Option<&str>>| l.map(|x| x.map(str::to_string));
        Candidate {
            index: 0,
            prefill: 1,
            decode: 2,
            prefill_device: "h100".into(),
            decode_device: "a100".into(),
            link: "ib-ndr".into(),
            compression: "none".into(),
            prefill_layout: own(prefill_layout),
            decode_layout: own(decode_layout),
            formats: formats.map(str::to_string),
            status: "feasible".into(),
            reason: None,
            ceiling_rps: None,
            slo_attainment: None,
            latency_p99_s: None,
            gpu_usd_per_hour: 0.0,
            energy_usd_per_hour: None,
            usd_per_hour: None,
            usd_per_mtok: None,
            pareto: false,
            summary: None,
        }
    }

    #[test]
    fn axis_cells_only_for_the_axes_in_use() {
        assert_eq!(layout_cell(&Some(Some("2x2".into()))), "2x2");
        assert_eq!(layout_cell(&Some(None)), "-");
        assert_eq!(layout_cell(&None), "");
        let none = cand(None, None, None);
        assert_eq!(
            axis_cells("a", "b", "c", &none),
            (String::new(), String::new())
        );
        let both = cand(Some(Some("2x2")), Some(None), Some("fp8/fp8/fp8"));
        // Each cell padded to its column: 8, 8 and 14 characters after one space.
        assert_eq!(
            axis_cells("2x2", "-", "fp8/fp8/fp8", &both),
            (
                " 2x2      -       ".to_string(),
                " fp8/fp8/fp8   ".to_string()
            )
        );
        let formats_only = cand(None, None, Some("bf16/bf16/bf16"));
        assert_eq!(
            axis_cells("x", "y", "bf16/bf16/bf16", &formats_only),
            (String::new(), " bf16/bf16/bf16".to_string())
        );
    }

    #[test]
    fn describe_names_the_axes_in_use() {
        assert_eq!(
            describe(&cand(None, None, None)),
            "1P h100 + 2D a100, ib-ndr, none"
        );
        assert_eq!(
            describe(&cand(Some(Some("2x2")), Some(None), None)),
            "1P h100 2x2 + 2D a100, ib-ndr, none"
        );
        assert_eq!(
            describe(&cand(Some(None), Some(Some("1x4")), Some("fp8/fp8/fp8"))),
            "1P h100 + 2D a100 1x4, ib-ndr, none, fp8/fp8/fp8"
        );
        assert_eq!(
            describe(&cand(None, None, Some("int4/fp8/bf16"))),
            "1P h100 + 2D a100, ib-ndr, none, int4/fp8/bf16"
        );
    }
}
