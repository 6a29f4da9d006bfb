//! The search of a `target_rate` plan: every candidate of the grid simulated (in parallel),
//! priced, and ranked with the Pareto frontier.

use std::fmt::Write as _;

use disagg_model::{Catalogue, Formats};
use disagg_sim::{simulate_config, Role, Scenario, SimConfig, Summary};
use rayon::prelude::*;
use serde_json::{json, Value};

use super::candidate::SCREEN_MARGIN;
pub use super::candidate::{Candidate, LoadPoint};
use super::objective::{self, Objective};
use super::*;
use crate::format::fixed;

/// The analytic per-pool ceiling of a configuration ([`disagg_sim::capacity::ceiling`]: each
/// pool with its own cost model, the KV link on the compressed wire bytes;
/// `docs/serving-model.md#per-pool-capacity`).
pub fn ceiling_rps(cfg: &SimConfig) -> Option<f64> {
    disagg_sim::capacity::ceiling(cfg).map(|c| c.rps)
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

/// A candidate's pools in short: `1P h100 + 2D a100`, or `4 x h100` for a colocated one.
pub fn pools_label(c: &Candidate) -> String {
    if c.mode == "colocated" {
        format!("{} x {}", c.prefill, c.prefill_device)
    } else {
        format!(
            "{}P {} + {}D {}",
            c.prefill, c.prefill_device, c.decode, c.decode_device
        )
    }
}

/// A chart label: `2P+3D h100` (one device), `2P h100+3D a100`, or `4x h100` (colocated).
pub fn short_label(c: &Candidate) -> String {
    if c.mode == "colocated" {
        format!("{}x {}", c.prefill, c.prefill_device)
    } else if c.prefill_device == c.decode_device {
        format!("{}P+{}D {}", c.prefill, c.decode, c.prefill_device)
    } else {
        format!(
            "{}P {}+{}D {}",
            c.prefill, c.prefill_device, c.decode, c.decode_device
        )
    }
}

/// A candidate in words: `1P h100 + 2D a100, ib-ndr, none`, with a pool's layout after its
/// device when it has one in a plan with a layout axis and the formats at the end when they are
/// an axis (`1P h100 2x2 + 2D a100, ib-ndr, none, fp8/fp8/fp8`); a colocated one `4 x h100`
/// (with its layout and formats likewise).
pub fn describe(c: &Candidate) -> String {
    let lay = |l: &Option<Option<String>>| match l {
        Some(Some(x)) => format!(" {x}"),
        _ => String::new(),
    };
    let fmt = match &c.formats {
        Some(f) => format!(", {f}"),
        None => String::new(),
    };
    if c.mode == "colocated" {
        return format!(
            "{} x {}{}, colocated{fmt}",
            c.prefill,
            c.prefill_device,
            lay(&c.prefill_layout)
        );
    }
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

/// A pool's shape on a plan's layout axis: a `TPxPP` layout, or a device count without a
/// parallel layout (`--layouts 8,16`: the way to vary the instance size of a model described
/// by layer kinds, whose layouts are not modelled; `docs/objectives.md#layer-kinds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Layout(Layout),
    Devices(u32),
}

impl Shape {
    /// Devices per instance.
    pub fn devices(self) -> u32 {
        match self {
            Shape::Layout(l) => l.devices(),
            Shape::Devices(n) => n,
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Layout(l) => write!(f, "{l}"),
            Shape::Devices(n) => write!(f, "{n}"),
        }
    }
}

/// The shapes of a layout list: `TPxPP` items ([`parse_layouts`]) and device counts `N` (1 to
/// [`MAX_DEVICES`]). For a model described by layer kinds (`layered`: its name) a `TPxPP` item
/// is refused, naming the device counts to give instead.
pub fn parse_shapes(flag: &str, s: &str, layered: Option<&str>) -> Result<Vec<Shape>, UsageError> {
    let mut out = Vec::new();
    for part in items(flag, s)? {
        if part.bytes().all(|b| b.is_ascii_digit()) {
            match part.parse::<u32>() {
                Ok(n) if (1..=MAX_DEVICES).contains(&n) => out.push(Shape::Devices(n)),
                _ => {
                    return Err(UsageError(format!(
                        "{flag}: '{part}': a device count must be 1 to {MAX_DEVICES} (or give \
                         TPxPP layouts, e.g. 4x1,2x2)"
                    )))
                }
            }
            continue;
        }
        let l = parse_layouts(flag, part)?[0];
        if let Some(model) = layered {
            return Err(UsageError(format!(
                "{flag}: '{part}': parallel layouts are not modelled for {model}, which is \
                 described by layer kinds; give devices per instance instead, e.g. {flag} 8,16"
            )));
        }
        out.push(Shape::Layout(l));
    }
    if out.is_empty() {
        return parse_layouts(flag, s).map(|_| Vec::new());
    }
    Ok(out)
}

/// Whether colocated candidates are planned (`--colocated`; `docs/objectives.md#colocated`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colocated {
    /// Disaggregated candidates only.
    No,
    /// Colocated candidates beside the disaggregated ones.
    Yes,
    /// Colocated candidates only (also `--mode colocated`).
    Only,
}

impl Colocated {
    /// Parses `--colocated`.
    pub fn parse(s: &str) -> Result<Colocated, UsageError> {
        match s.trim() {
            "no" => Ok(Colocated::No),
            "yes" => Ok(Colocated::Yes),
            "only" => Ok(Colocated::Only),
            _ => Err(UsageError(format!(
                "--colocated: unknown value '{s}'; valid: no, yes, only"
            ))),
        }
    }
}

/// The pools of a scenario as (instances, devices per instance), as its build makes them
/// (`scenario/pools.rs`: a layout gives the device count only with `devices_from_layout`).
pub fn pools_of(sc: &Scenario) -> Vec<(u64, u32)> {
    let n = |role: Role, own: u32| match sc.layout_for(role).filter(|_| sc.devices_from_layout) {
        Some(l) => l.tp.saturating_mul(l.pp),
        None => own,
    };
    match sc.mode {
        disagg_sim::Mode::Disagg => vec![
            (
                u64::from(sc.prefill),
                n(
                    Role::Prefill,
                    sc.prefill_devices_per_instance
                        .unwrap_or(sc.devices_per_instance),
                ),
            ),
            (
                u64::from(sc.decode),
                n(
                    Role::Decode,
                    sc.decode_devices_per_instance
                        .unwrap_or(sc.devices_per_instance),
                ),
            ),
        ],
        disagg_sim::Mode::Colocated => vec![(
            u64::from(sc.prefill) + u64::from(sc.decode),
            n(Role::Colocated, sc.devices_per_instance),
        )],
    }
}

/// GPUs of pools: the sum of instances x devices per instance.
pub fn gpus_of(pools: &[(u64, u32)]) -> u64 {
    pools.iter().map(|&(i, d)| i * u64::from(d)).sum()
}

/// Why pools break `--gpus-per-node G`: an instance must have at most G devices or a whole
/// multiple of G (it spans whole nodes; `docs/objectives.md#budget`).
pub fn node_violation(pools: &[(u64, u32)], per_node: u32) -> Option<String> {
    pools
        .iter()
        .find(|&&(i, d)| i > 0 && d > per_node && d % per_node != 0)
        .map(|&(_, d)| {
            format!(
                "an instance of {d} devices spans part of a node: with --gpus-per-node \
                 {per_node} an instance has at most {per_node} devices or a whole multiple of \
                 {per_node}"
            )
        })
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
    pls: Vec<Option<Shape>>,
    dls: Vec<Option<Shape>>,
    links: Vec<String>,
    comps: Vec<String>,
    fmts: Vec<Option<Formats>>,
    layout_axis: bool,
    format_axis: bool,
    dims: [usize; 9],
    objective: Objective,
    budget: Option<u64>,
    per_node: u32,
    colocated: Colocated,
    /// The colocated grid: devices, total instance counts, shapes (then `fmts`).
    col_devs: Vec<String>,
    col_totals: Vec<u32>,
    col_shapes: Vec<Option<Shape>>,
    /// Disaggregated candidates (indices below this); the colocated ones follow.
    n_disagg: u64,
    /// The interval's precision (`--search ci`), or None (`--search bisect`: one run decides).
    ci: Option<disagg_sim::steady::CiOptions>,
    /// The scenario's own `--time-scale` (before a trace is scaled to the target rate): the
    /// load ladder scales from it (`docs/objectives.md#ladder`).
    raw_time_scale: f64,
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
    // `--search ci` (the default): a trace is replayed time-scaled to the target rate, and the
    // candidates near the target get confidence intervals; `bisect`: one run each, a trace at its
    // own rate (as before issue 26).
    let ci = super::max_rate::check_options(o)?;
    let ci = (o.search != "bisect").then_some(ci);
    let raw_time_scale = base.time_scale;
    let base = match (&ci, &base.trace_file) {
        (Some(_), Some(_)) => super::at_rate(&base, rate, cat)?,
        _ => base,
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
    let objective = Objective::parse(&o.objective)?;
    let colocated = match (base.mode, Colocated::parse(&o.colocated)?) {
        (disagg_sim::Mode::Colocated, _) => Colocated::Only,
        (_, c) => c,
    };
    let gpus = o.gpus.map(|g| ("--gpus", g));
    for (flag, v) in gpus
        .into_iter()
        .chain([("--gpus-per-node", o.gpus_per_node as u64)])
    {
        let r = disagg_sim::ranges::for_command("plan", flag).expect("in the table");
        if r.parse(&v.to_string()).is_err() {
            return Err(UsageError(format!("{flag} {v}: must be {}", r.expected())));
        }
    }
    // A model described by layer kinds takes device counts, not TPxPP layouts.
    let layered = cat
        .model(&base.model)
        .ok()
        .filter(|m| m.arch.is_some())
        .map(|m| m.key.clone());
    // The layout and format axes: `None` is the scenario's own (one value: no axis).
    let layouts = match &o.layouts {
        Some(l) => Some(parse_shapes("--layouts", l, layered.as_deref())?),
        None => None,
    };
    let pool_layouts =
        |flag: &str, own: &Option<String>| -> Result<Vec<Option<Shape>>, UsageError> {
            Ok(match (own, &layouts) {
                (Some(l), _) => parse_shapes(flag, l, layered.as_deref())?
                    .into_iter()
                    .map(Some)
                    .collect(),
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
    let n_disagg = if colocated == Colocated::Only {
        0
    } else {
        dims.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64))
    };
    // The colocated grid: every device of the lists, every total P + D of the counts, the
    // `--layouts` shapes (per-pool layouts do not apply), the formats.
    let mut col_devs: Vec<String> = Vec::new();
    let mut col_totals: Vec<u32> = Vec::new();
    let col_shapes: Vec<Option<Shape>> = match &layouts {
        Some(all) => all.iter().copied().map(Some).collect(),
        None => vec![None],
    };
    if colocated != Colocated::No {
        for d in pds.iter().chain(&dds) {
            if !col_devs.contains(d) {
                col_devs.push(d.clone());
            }
        }
        for p in &pcs {
            for d in &dcs {
                col_totals.push(p.saturating_add(*d));
            }
        }
        col_totals.sort_unstable();
        col_totals.dedup();
    }
    let n_col = [
        col_devs.len(),
        col_totals.len(),
        col_shapes.len(),
        fmts.len(),
    ]
    .iter()
    .fold(1u64, |n, &d| n.saturating_mul(d as u64))
        * u64::from(colocated != Colocated::No);
    let count = n_disagg.saturating_add(n_col);
    let lists = match (layout_axis, format_axis) {
        (false, false) => "the device, link or compression lists",
        (true, false) => "the device, layout, link or compression lists",
        (false, true) => "the device, link, compression or format lists",
        (true, true) => "the device, layout, link, compression or format lists",
    };
    let mut shorten = format!("--prefill-counts, --decode-counts, {lists}");
    if colocated == Colocated::Yes {
        // The count includes the colocated candidates planned beside the disaggregated ones.
        let _ = write!(
            shorten,
            ", drop the {n_col} colocated ones (--colocated no)"
        );
    }
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
    let search = Search {
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
        objective,
        budget: o.gpus,
        per_node: o.gpus_per_node,
        colocated,
        col_devs,
        col_totals,
        col_shapes,
        n_disagg,
        ci,
        raw_time_scale,
        count,
    };
    if let Some(b) = search.budget {
        search.check_budget(b)?;
    }
    Ok(search)
}

/// The ranked candidates of a search.
pub struct Targets {
    /// Every candidate, by index.
    pub cands: Vec<Candidate>,
    /// The indices of the ranked ones, best first by the objective (cost: cheapest first).
    pub ranked: Vec<usize>,
    /// The objective ranked by.
    pub objective: Objective,
    /// With colocated candidates planned: the best colocated one and the winner's margin over
    /// it (None: no winner, or no colocated candidate qualifies).
    pub colocated_margin: Option<Option<(usize, f64)>>,
    /// A trace replayed time-scaled to the target rate (`--search ci`): the `--time-scale`.
    pub time_scale: Option<f64>,
    /// With `--objective pareto`: the frontier over every load-curve point of every feasible
    /// candidate, from the highest tokens/s per GPU (`docs/objectives.md#ladder`).
    pub front: Option<Vec<objective::CurvePoint>>,
    rate: f64,
    o: PlanOptions,
    prices: Vec<(String, f64)>,
}

/// The grid position of `index` in a grid of `dims` (the last dimension varies fastest).
fn grid<const N: usize>(mut index: usize, dims: [usize; N]) -> [usize; N] {
    let mut pick = [0usize; N];
    for (k, &d) in dims.iter().enumerate().rev() {
        pick[k] = index % d;
        index /= d;
    }
    pick
}

/// A load-curve point of a run of a candidate with `gpus` GPUs at `rate`
/// (`docs/objectives.md#ladder`).
fn load_point(rate: f64, s: &Summary, steady: bool, meets_slo: bool, gpus: u64) -> LoadPoint {
    let g = gpus as f64;
    LoadPoint {
        rate_rps: rate,
        slo_attainment: s.slo_attainment,
        steady,
        meets_slo,
        tokens_per_s_per_user: (s.tpot_s.mean > 0.0).then(|| 1.0 / s.tpot_s.mean),
        tokens_per_s_per_gpu: (g > 0.0).then(|| s.throughput_tok_s / g),
        goodput_per_gpu: (g > 0.0).then(|| s.goodput_rps / g),
    }
}

/// Whether a run is steady (`docs/planning.md#steady`).
fn is_steady(run: &disagg_sim::RunResult, cfg: &SimConfig) -> bool {
    let series = disagg_sim::steady::run_series(run);
    disagg_sim::steady::measure(&series, cfg.warmup_frac)
        .unsteady
        .is_none()
}

impl Search<'_> {
    /// The `rate` of a candidate's scenario: the target rate, or with a trace the scenario's own
    /// (a trace brings its arrivals; the target is reached by `--time-scale`, and `disagg run`
    /// refuses `--rate` beside `--trace-file`, so an emitted `# disagg run` line must not carry it).
    fn scenario_rate(&self) -> f64 {
        if self.base.trace_file.is_some() {
            self.base.rate
        } else {
            self.rate
        }
    }

    /// One rung of candidate `index`'s load ladder: its run (replication 0) at `rate`, a trace
    /// time-scaled to it ([`super::at_rate`]); meets the SLOs when its attainment is at least
    /// `--slo-target` and it is steady (`docs/objectives.md#ladder`).
    fn rung(&self, index: usize, gpus: u64, rate: f64) -> Result<LoadPoint, String> {
        let (sc, _) = self.spec(index);
        let sc = Scenario {
            time_scale: self.raw_time_scale,
            ..sc
        };
        let sc = super::at_rate(&sc, rate, self.cat).map_err(|e| e.0)?;
        let cfg = sc.build(self.cat).map_err(|e| e.to_string())?;
        let run = simulate_config(&cfg).map_err(|e| e.to_string())?;
        let s = run.summary();
        let steady = is_steady(&run, &cfg);
        let meets = steady && s.slo_attainment >= self.o.slo_target;
        Ok(load_point(rate, &s, steady, meets, gpus))
    }

    /// The note on standard error before a search: `plan: N candidates at R req/s`, with
    /// `(C colocated)` after N when colocated candidates are planned (as the report's first line).
    pub fn note(&self) -> String {
        let colocated = self.count - self.n_disagg;
        let of = if colocated > 0 {
            format!(" ({colocated} colocated)")
        } else {
            String::new()
        };
        format!("plan: {} candidates{of} at {} req/s", self.count, self.rate)
    }

    /// The offered rate every candidate is simulated at, requests/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The scenario candidate `index` is simulated as: the one [`Search::run`] builds and
    /// simulates, and the one `plan --emit` writes (`docs/deployment.md#mapping`).
    pub fn scenario_of(&self, index: usize) -> Scenario {
        self.spec(index).0
    }

    /// The scenario of candidate `index` and the candidate's description (not built, not
    /// simulated: no GPUs, status or figures yet). Disaggregated candidates set each pool's
    /// counts, device, layout (TPxPP, or devices per instance), link, compression and formats;
    /// colocated ones the mode, the instance count (`--prefill N --decode 0`), the device, the
    /// shape and the formats.
    fn spec(&self, index: usize) -> (Scenario, Candidate) {
        let base = &self.base;
        let own_layout = |role: Role| base.layout_for(role).map(|l| format!("{}x{}", l.tp, l.pp));
        let layout_label = |pick: Option<Shape>, role: Role| {
            self.layout_axis.then(|| match pick {
                Some(l) => Some(l.to_string()),
                None => own_layout(role),
            })
        };
        let mut cand = Candidate::blank(index);
        if (index as u64) >= self.n_disagg {
            // A colocated candidate: `total` instances of `dev` that prefill and decode.
            let k = index - self.n_disagg as usize;
            let pick = grid(
                k,
                [
                    self.col_devs.len(),
                    self.col_totals.len(),
                    self.col_shapes.len(),
                    self.fmts.len(),
                ],
            );
            let (dev, total) = (&self.col_devs[pick[0]], self.col_totals[pick[1]]);
            let (shape, f) = (self.col_shapes[pick[2]], self.fmts[pick[3]]);
            let mut sc = Scenario {
                mode: disagg_sim::Mode::Colocated,
                prefill: total,
                decode: 0,
                device: dev.clone(),
                prefill_device: None,
                decode_device: None,
                prefill_devices_per_instance: None,
                decode_devices_per_instance: None,
                prefill_tp: None,
                prefill_pp: None,
                decode_tp: None,
                decode_pp: None,
                kv_compress: None,
                rate: self.scenario_rate(),
                ..base.clone()
            };
            match shape {
                Some(Shape::Layout(l)) => {
                    sc.tp = Some(l.tp);
                    sc.pp = Some(l.pp);
                    sc.devices_per_instance = l.devices();
                }
                Some(Shape::Devices(n)) => sc.devices_per_instance = n,
                None => {}
            }
            if let Some(x) = f {
                sc.weight_format = x.weight;
                sc.kv_format = x.kv;
                sc.compute_format = x.compute;
            }
            cand.mode = "colocated".into();
            cand.prefill = total;
            cand.prefill_device = dev.clone();
            cand.decode_device = dev.clone();
            cand.link = "-".into();
            cand.compression = "none".into();
            cand.prefill_layout = layout_label(shape, Role::Colocated);
            cand.decode_layout = self.layout_axis.then_some(None);
            cand.formats = self.format_axis.then(|| formats_label(&sc.formats()));
            return (sc, cand);
        }
        let pick = grid(index, self.dims);
        let (p, d) = (self.pcs[pick[0]], self.dcs[pick[1]]);
        let (pd, dd) = (&self.pds[pick[2]], &self.dds[pick[3]]);
        let (pl, dl) = (self.pls[pick[4]], self.dls[pick[5]]);
        let (l, c, f) = (
            &self.links[pick[6]],
            &self.comps[pick[7]],
            self.fmts[pick[8]],
        );
        let mut sc = Scenario {
            mode: disagg_sim::Mode::Disagg,
            prefill: p,
            decode: d,
            prefill_device: Some(pd.clone()),
            decode_device: Some(dd.clone()),
            link: l.clone(),
            kv_compress: if c == "none" { None } else { Some(c.clone()) },
            rate: self.scenario_rate(),
            ..base.clone()
        };
        match pl {
            Some(Shape::Layout(x)) => {
                sc.prefill_tp = Some(x.tp);
                sc.prefill_pp = Some(x.pp);
                sc.prefill_devices_per_instance = Some(x.devices());
            }
            Some(Shape::Devices(n)) => sc.prefill_devices_per_instance = Some(n),
            None => {}
        }
        match dl {
            Some(Shape::Layout(x)) => {
                sc.decode_tp = Some(x.tp);
                sc.decode_pp = Some(x.pp);
                sc.decode_devices_per_instance = Some(x.devices());
            }
            Some(Shape::Devices(n)) => sc.decode_devices_per_instance = Some(n),
            None => {}
        }
        if let Some(x) = f {
            sc.weight_format = x.weight;
            sc.kv_format = x.kv;
            sc.compute_format = x.compute;
        }
        cand.prefill = p;
        cand.decode = d;
        cand.prefill_device = pd.clone();
        cand.decode_device = dd.clone();
        cand.link = l.clone();
        cand.compression = c.clone();
        cand.prefill_layout = layout_label(pl, Role::Prefill);
        cand.decode_layout = layout_label(dl, Role::Decode);
        cand.formats = self.format_axis.then(|| formats_label(&sc.formats()));
        (sc, cand)
    }

    /// A budget no candidate fits is an error naming the smallest candidate (the fewest GPUs
    /// among those that respect `--gpus-per-node`; the first of equals).
    fn check_budget(&self, budget: u64) -> Result<(), UsageError> {
        let mut smallest: Option<(u64, usize)> = None;
        for index in 0..self.count as usize {
            let (sc, _) = self.spec(index);
            let pools = pools_of(&sc);
            if node_violation(&pools, self.per_node).is_some() {
                continue;
            }
            let g = gpus_of(&pools);
            if g <= budget {
                return Ok(());
            }
            if smallest.is_none_or(|(s, _)| g < s) {
                smallest = Some((g, index));
            }
        }
        Err(UsageError(match smallest {
            Some((g, index)) => format!(
                "--gpus {budget}: no candidate fits; the smallest needs {g} GPUs ({})",
                pools_label(&self.spec(index).1)
            ),
            None => format!(
                "--gpus {budget}: no candidate fits; every one breaks --gpus-per-node {}",
                self.per_node
            ),
        }))
    }

    /// Simulates every candidate (in parallel), calling `done` after each.
    pub fn run(&self, done: &(dyn Fn() + Sync)) -> Result<Targets, UsageError> {
        let (o, rate, prices, cat) = (&self.o, self.rate, &self.prices, self.cat);
        let mut cands: Vec<Candidate> = (0..self.count as usize)
            .into_par_iter()
            .map(|index| {
                let (sc, mut cand) = self.spec(index);
                let pools = pools_of(&sc);
                cand.gpus = gpus_of(&pools);
                if let Some(why) = node_violation(&pools, self.per_node) {
                    cand.status = "invalid".into();
                    cand.reason = Some(why);
                    return cand;
                }
                if let Some(b) = self.budget.filter(|&b| cand.gpus > b) {
                    cand.status = "over-budget".into();
                    cand.reason = Some(format!("needs {} GPUs, over --gpus {b}", cand.gpus));
                    return cand;
                }
                let cfg = match sc.build(cat) {
                    Ok(c) => c,
                    Err(e) => {
                        cand.status = "invalid".into();
                        cand.reason = Some(e.to_string());
                        return cand;
                    }
                };
                let built: u64 = cfg
                    .pools
                    .iter()
                    .map(|pl| pl.instances as u64 * u64::from(pl.devices))
                    .sum();
                debug_assert_eq!(built, cand.gpus, "pools_of agrees with the build");
                cand.gpus = built;
                // Colocated instances have no KV-fabric port to pay for.
                let ports: f64 = if cand.mode == "colocated" {
                    0.0
                } else {
                    cfg.pools.iter().map(|pl| pl.instances as f64).sum()
                };
                cand.gpu_usd_per_hour = cfg
                    .pools
                    .iter()
                    .map(|pl| {
                        pl.instances as f64
                            * pl.devices as f64
                            * price_of(prices, &pl.device.key).unwrap_or(0.0)
                    })
                    .sum::<f64>()
                    + ports * price_of(prices, &cand.link).unwrap_or(0.0);
                cand.ceiling_rps = ceiling_rps(&cfg);
                if cand.ceiling_rps.is_some_and(|c| c * PRUNE_FACTOR < rate) {
                    cand.status = "pruned".into();
                    cand.reason = Some(format!(
                        "analytic ceiling {:.2} req/s is hopeless at {rate} req/s",
                        cand.ceiling_rps.unwrap_or(0.0)
                    ));
                    return cand;
                }
                // The candidate's run (replication 0 of its interval, below).
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
                        let g = cand.gpus as f64;
                        cand.goodput_per_gpu = (g > 0.0).then(|| s.goodput_rps / g);
                        cand.tokens_per_s_per_gpu = (g > 0.0).then(|| s.throughput_tok_s / g);
                        // `docs/objectives.md#objectives`: 1 / mean TPOT (None without one).
                        cand.tokens_per_s_per_user =
                            (s.tpot_s.mean > 0.0).then(|| 1.0 / s.tpot_s.mean);
                        // `docs/planning.md#screen`: a run within SCREEN_MARGIN of the target
                        // gets its interval, and is feasible when the lower bound meets it.
                        let meets = match &self.ci {
                            Some(ci) if s.slo_attainment >= o.slo_target - SCREEN_MARGIN => {
                                match disagg_sim::steady::attainment_ci_from(&cfg, Some(&run), ci) {
                                    Ok(e) => {
                                        let meets = e.meets(o.slo_target);
                                        cand.slo_attainment_ci = Some(e);
                                        meets
                                    }
                                    Err(e) => {
                                        cand.status = "invalid".into();
                                        cand.reason = Some(e.to_string());
                                        return cand;
                                    }
                                }
                            }
                            Some(_) => false,
                            None => s.slo_attainment >= o.slo_target,
                        };
                        cand.status = if meets { "feasible" } else { "infeasible" }.into();
                        if self.objective.uses_ladder() {
                            // The load curve's first point: the target rate's run.
                            let steady = is_steady(&run, &cfg);
                            cand.load_curve =
                                Some(vec![load_point(rate, &s, steady, meets, cand.gpus)]);
                        }
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
        // Every candidate in the budget refused by the same configuration check (e.g. --fast
        // with a scheduling lever in disaggregated mode): that is a bad input, not an empty plan.
        let tried: Vec<&Candidate> = cands.iter().filter(|c| c.status != "over-budget").collect();
        if !tried.is_empty() && tried.iter().all(|c| c.status == "invalid") {
            let first = tried[0].reason.clone().unwrap_or_default();
            return Err(UsageError(format!(
                "every one of the {} candidates is invalid; the first: {first}",
                tried.len()
            )));
        }
        // `docs/objectives.md#ladder`: the feasible candidates along their load ladders, every
        // rung of every candidate in parallel, collected in (candidate, rate) order.
        let mut front = None;
        if self.objective.uses_ladder() {
            // `--search bisect` on a trace replays it at its own rate, not at R: no ladder
            // scaled from R then, the curve is the one point.
            let climb = self.ci.is_some() || self.base.trace_file.is_none();
            let jobs: Vec<(usize, u64, f64)> = cands
                .iter()
                .filter(|c| climb && c.status == "feasible" && c.load_curve.is_some())
                .flat_map(|c| {
                    objective::ladder(rate, c.ceiling_rps)
                        .into_iter()
                        .map(|r| (c.index, c.gpus, r))
                })
                .collect();
            let points: Vec<(usize, Result<LoadPoint, String>)> = jobs
                .into_par_iter()
                .map(|(i, g, r)| (i, self.rung(i, g, r)))
                .collect();
            // A rung that fails to build or simulate is left out of the curve.
            for (i, p) in points {
                if let (Ok(p), Some(curve)) = (p, cands[i].load_curve.as_mut()) {
                    curve.push(p);
                }
            }
            if self.objective == Objective::Pareto {
                front = Some(objective::settle_pareto(&mut cands));
            } else {
                for c in cands.iter_mut() {
                    objective::settle(c, self.objective);
                }
            }
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
        let ranked = objective::rank(&cands, self.objective);
        let colocated_margin = (self.colocated != Colocated::No)
            .then(|| objective::colocated_margin(&cands, self.objective, &ranked));
        Ok(Targets {
            cands,
            ranked,
            objective: self.objective,
            colocated_margin,
            time_scale: (self.ci.is_some() && self.base.trace_file.is_some())
                .then_some(self.base.time_scale),
            front,
            rate,
            o: o.clone(),
            prices: prices.clone(),
        })
    }
}

impl Targets {
    /// The ranked candidates, best first.
    pub fn ranked(&self) -> Vec<&Candidate> {
        self.ranked.iter().map(|&i| &self.cands[i]).collect()
    }

    /// Whether a new option of issue 26 is in use (a budget, colocated candidates, an objective
    /// other than cost): only then does the report show the GPUs and the objective's columns,
    /// so a plan without them prints what it printed before.
    fn extended(&self) -> bool {
        self.objective != Objective::Cost
            || self.o.gpus.is_some()
            || self.colocated_margin.is_some()
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
            "search": self.o.search,
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
        doc["objective"] = json!(self.objective.name());
        if let Some(t) = self.time_scale {
            doc["time_scale"] = json!(t);
        }
        if let Some(b) = self.o.gpus {
            doc["gpu_budget"] = json!(b);
            doc["over_budget"] = json!(count("over-budget"));
        }
        if self.extended() {
            doc["gpus_per_node"] = json!(self.o.gpus_per_node);
        }
        if let Some(m) = self.colocated_margin {
            doc["colocated_margin"] = objective::margin_json(m, self.objective);
        }
        if let Some(front) = &self.front {
            doc["pareto_points"] = json!(front);
        }
        let mut calibration = Vec::new();
        for s in cands.iter().filter_map(|c| c.summary.as_ref()) {
            crate::report::add_calibration(&mut calibration, s);
        }
        if !calibration.is_empty() {
            doc["calibration"] = json!(calibration);
        }
        doc
    }

    /// The line on the winner's margin over the best colocated candidate (with colocated
    /// candidates planned and a winner).
    pub fn margin_line(&self) -> Option<String> {
        let m = self.colocated_margin?;
        let &w = self.ranked.first()?;
        Some(match m {
            Some((b, _)) if b == w => {
                format!("the winner is colocated ({})", pools_label(&self.cands[b]))
            }
            Some((b, 0.0)) => format!(
                "ties with the best colocated plan ({}) on {}",
                pools_label(&self.cands[b]),
                self.objective.measure()
            ),
            Some((b, margin)) => format!(
                "beats the best colocated plan ({}) by {}% on {}",
                pools_label(&self.cands[b]),
                fixed(100.0 * margin, 1),
                self.objective.measure()
            ),
            None => format!(
                "no colocated plan qualifies at {} req/s (the SLOs{})",
                self.rate,
                match self.objective {
                    Objective::TokensPerGpu(r) => format!(", {r} tokens/s per user"),
                    _ => String::new(),
                }
            ),
        })
    }

    /// The text report of `disagg plan --target-rate R`: the counts, the ranked table, the
    /// Pareto frontier.
    pub fn text(&self) -> String {
        let (cands, rate, a) = (&self.cands, self.rate, &self.o);
        let ranked = self.ranked();
        let count = |st: &str| cands.iter().filter(|c| c.status == st).count();
        let ext = self.extended();
        let colocated = count_mode(cands, "colocated");
        let mut s = String::new();
        let _ = write!(
            s,
            "{} candidates{} at {rate} req/s: {} simulated ({} meet {}% SLO attainment), {} pruned by the analytic bounds, {} invalid",
            cands.len(),
            if self.colocated_margin.is_some() {
                format!(" ({colocated} colocated)")
            } else {
                String::new()
            },
            count("feasible") + count("infeasible"),
            count("feasible"),
            fixed(100.0 * a.slo_target, 1),
            count("pruned"),
            count("invalid")
        );
        if let Some(b) = a.gpus {
            let _ = write!(s, ", {} over the budget of {b} GPUs", count("over-budget"));
        }
        s.push('\n');
        if let Some(t) = self.time_scale {
            let _ = writeln!(s, "the trace replayed at --time-scale {t} ({rate} req/s)");
        }
        if ext && self.objective != Objective::Cost {
            let _ = writeln!(s, "objective: {}", self.objective.name());
        }
        if ranked.is_empty() {
            let _ = writeln!(
                s,
                "no configuration in the search space meets the SLOs at {rate} req/s{}",
                match self.objective {
                    Objective::TokensPerGpu(r) => format!(" with {r} tokens/s per user"),
                    _ => String::new(),
                }
            );
            return s;
        }
        s.push('\n');
        let (lay, fmt) = match ranked.first() {
            Some(c) => axis_cells("P layout", "D layout", "formats", c),
            None => (String::new(), String::new()),
        };
        let with_ci = ranked.iter().any(|c| c.slo_attainment_ci.is_some());
        let mut head_ext = if with_ci {
            format!(" {:>11}", "SLO 95% CI")
        } else {
            String::new()
        };
        if ext {
            head_ext.push_str(&self.objective_cells(None));
        }
        let _ = writeln!(
            s,
            "{:>4} {:>3} {:>3} {:<9} {:<9}{lay} {:<12} {:<12}{fmt} {:>8} {:>11} {:>9} {:>9} {:>8}{head_ext}",
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
            let mut row_ext = String::new();
            if with_ci {
                let ci = match &c.slo_attainment_ci {
                    Some(e) => format!(
                        "{}-{}{}",
                        fixed(100.0 * e.low, 1),
                        fixed(100.0 * e.high, 1),
                        if e.capped { "~" } else { "" }
                    ),
                    None => "-".into(),
                };
                let _ = write!(row_ext, " {ci:>11}");
            }
            if ext {
                row_ext.push_str(&self.objective_cells(Some(c)));
            }
            let coloc = c.mode == "colocated";
            let _ = writeln!(
                s,
                "{:>4} {:>3} {:>3} {:<9} {:<9}{lay} {:<12} {:<12}{fmt} {:>8} {:>11} {:>9} {:>9} {:>8}{row_ext}",
                k + 1,
                c.prefill,
                if coloc { "-".to_string() } else { c.decode.to_string() },
                c.prefill_device,
                if coloc { "colocated" } else { &c.decode_device },
                c.link,
                c.compression,
                fixed(100.0 * c.slo_attainment.unwrap_or(0.0), 1),
                fixed(1e3 * c.latency_p99_s.unwrap_or(f64::NAN), 1),
                fixed(c.usd_per_hour.unwrap_or(f64::NAN), 2),
                fixed(c.usd_per_mtok.unwrap_or(f64::NAN), 3),
                if c.pareto { "*" } else { "" }
            );
        }
        if let Some(line) = self.margin_line() {
            s.push('\n');
            let _ = writeln!(s, "{line}");
        }
        s.push('\n');
        if self.objective == Objective::Pareto {
            let _ = writeln!(
                s,
                "Pareto frontier (output tokens/s per GPU against tokens/s per user):"
            );
            match &self.front {
                // Every frontier point, with the rate it was reached at.
                Some(front) => {
                    for p in front {
                        let _ = writeln!(
                            s,
                            "  {:>10} tok/s/GPU  {:>9} tok/s/user  at {:>8} req/s   {}",
                            fixed(p.tokens_per_s_per_gpu, 1),
                            fixed(p.tokens_per_s_per_user, 1),
                            fixed(p.rate_rps.unwrap_or(f64::NAN), 2),
                            describe(&cands[p.candidate])
                        );
                    }
                }
                None => {
                    for c in &ranked {
                        let _ = writeln!(
                            s,
                            "  {:>10} tok/s/GPU  {:>9} tok/s/user   {}",
                            fixed(c.tokens_per_s_per_gpu.unwrap_or(f64::NAN), 1),
                            fixed(c.tokens_per_s_per_user.unwrap_or(f64::NAN), 1),
                            describe(c)
                        );
                    }
                }
            }
        } else {
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
        }
        s.push_str(&crate::report::calibration_of_runs(
            cands.iter().filter_map(|c| c.summary.as_ref()),
        ));
        s
    }

    /// The extra cells of an extended table (the header with `None`): GPUs, then the
    /// objective's figures (goodput per GPU; tokens/s per GPU and per user).
    fn objective_cells(&self, c: Option<&Candidate>) -> String {
        let mut s = match c {
            None => format!(" {:>5}", "GPUs"),
            Some(c) => format!(" {:>5}", c.gpus),
        };
        match self.objective {
            Objective::GoodputPerGpu => {
                let _ = match c {
                    None => write!(s, " {:>11}", "goodput/GPU"),
                    Some(c) => write!(
                        s,
                        " {:>11}",
                        fixed(c.goodput_per_gpu.unwrap_or(f64::NAN), 3)
                    ),
                };
            }
            Objective::TokensPerGpu(_) | Objective::Pareto => {
                let _ = match c {
                    None => write!(s, " {:>10} {:>10}", "tok/s/GPU", "tok/s/user"),
                    Some(c) => write!(
                        s,
                        " {:>10} {:>10}",
                        fixed(c.tokens_per_s_per_gpu.unwrap_or(f64::NAN), 1),
                        fixed(c.tokens_per_s_per_user.unwrap_or(f64::NAN), 1)
                    ),
                };
            }
            Objective::Cost | Objective::MinGpus => {}
        }
        // The rate of the load-curve point the figures come from (`docs/objectives.md#ladder`).
        if self.objective.uses_ladder() {
            let _ = match c {
                None => write!(s, " {:>9}", "at req/s"),
                Some(c) => write!(
                    s,
                    " {:>9}",
                    c.at_rate_rps.map_or("-".into(), |r| fixed(r, 2))
                ),
            };
        }
        s
    }
}

/// How many candidates have `mode`.
fn count_mode(cands: &[Candidate], mode: &str) -> usize {
    cands.iter().filter(|c| c.mode == mode).count()
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
        let mut c = Candidate::blank(0);
        c.prefill = 1;
        c.decode = 2;
        c.prefill_device = "h100".into();
        c.decode_device = "a100".into();
        c.link = "ib-ndr".into();
        c.compression = "none".into();
        c.prefill_layout = own(prefill_layout);
        c.decode_layout = own(decode_layout);
        c.formats = formats.map(str::to_string);
        c.status = "feasible".into();
        c
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
