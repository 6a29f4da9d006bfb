//! From a finished run to numbers (`docs/serving-model.md#metrics`, including the `results.py` extras of `docs/serving-model.md#metrics` and
//! the analytic bounds of `docs/serving-model.md#capacity`): one typed, serialisable [`Summary`].
//!
//! Float expressions keep the reference's operation order; means are exact `fsum`s; percentiles use
//! the `docs/exactness.md#percentiles` formula; NaN (an empty sample, or an undefined ratio) serialises as `null`.
//!
//! One file per block of the summary, each with its types and the function that computes it from
//! the run ([`Ctx`]): [`requests`] (counts, latencies, SLOs), [`latency`] (the ITLs), [`link`],
//! [`instances`], [`energy`], [`stages`] (stage breakdown, hot-spot, Little's law), [`layout`]
//! (pools, parallel layouts, formats, PPA), [`calibration`] and [`scheduler`]. [`summarise`] (this
//! file) assembles them. Adding a metric: a field in its block's struct (or in [`Summary`]) and its
//! computation in that block's function.

use serde::Serialize;

use crate::engine::RunResult;
use crate::scenario::{FirstToken, HandoffOptions, Mode};
use crate::search::Analytic;
use crate::stats::{Dist, P50P99};
use ctx::{done_order, Ctx};
use requests::{measured_latencies, meets_slo};

pub mod calibration;
mod ctx;
pub mod energy;
pub mod instances;
mod latency;
pub mod layout;
pub mod link;
pub mod overload;
pub mod requests;
mod scheduler;
pub mod simulated;
pub mod stages;

pub use calibration::{calibration_of, CalibrationSummary};
pub use energy::Energy;
pub use instances::{InstanceSummary, OpticalSummary};
pub use layout::{FormatsSummary, ParallelSummary, Pools};
pub use link::{LinkLoad, LinkSummary, MemWaitSummary};
pub use overload::Overload;
pub use requests::{MeasuredLatencies, RequestCounts};
pub use simulated::Simulated;
pub use stages::{Hotspot, LittlesLaw, Stages, STAGES};

/// Version of the [`Summary`] layout.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything a run says (`docs/serving-model.md#metrics`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `disagg` or `colocated`.
    pub mode: Mode,
    /// The first token TTFT, TPOT and ITL are measured from: `prefill` (end of the prefill step,
    /// the reference) or `decode` (decode admission after the KV landed).
    pub first_token: FirstToken,
    /// The hand-off options of the run.
    pub options: HandoffOptions,
    /// Pools, when a per-pool device or device count was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pools: Option<Pools>,
    /// Simulated time at the end (the last finish), s.
    pub horizon_s: f64,
    /// Request counts.
    pub requests: RequestCounts,
    /// Time to first token (measured requests), s.
    pub ttft_s: Dist,
    /// Time per output token after the first (measured requests with output >= 2), s.
    pub tpot_s: Dist,
    /// Inter-token latencies (every one of every measured request), s.
    pub itl_s: Dist,
    /// End to end (measured requests), s.
    pub e2e_s: Dist,
    /// Hand-off latency `kv_ready - first_token` over all requests with a hand-off, s.
    pub handoff_s: P50P99,
    /// Waits for decode memory before the transfer (`--reserve-kv-on transfer`; else `null`).
    pub decode_mem_wait_s: Option<MemWaitSummary>,
    /// Measured requests meeting both SLOs.
    pub slo_met: u64,
    /// `slo_met / measured`: the reference's figure (rejected requests are not in it).
    pub slo_attainment: f64,
    /// `slo_met / (measured + rejected)`: every rejected request counts as one SLO miss (a
    /// rejection is not subject to the warm-up cut). Equals `slo_attainment` without rejections.
    pub slo_attainment_offered: f64,
    /// `slo_met / (arrival span of the measured requests)`, requests/s. The span leaves out the
    /// warm-up and the drain after the last arrival, so goodput can exceed `throughput_rps`
    /// (finished requests over the whole horizon).
    pub goodput_rps: f64,
    /// Output tokens of finished requests / horizon.
    pub throughput_tok_s: f64,
    /// Finished requests / horizon.
    pub throughput_rps: f64,
    /// `link busy / (channels x links x horizon)` (every link).
    pub link_busy: f64,
    /// `(link J + transit J) / max(1, transfers)`.
    pub link_j_per_request: f64,
    /// Link totals.
    pub link: LinkSummary,
    /// Each link's load (one entry for the shared link).
    pub links: Vec<LinkLoad>,
    /// Total J / output tokens of finished requests.
    pub j_per_token: f64,
    /// Output tokens / total J.
    pub tokens_per_j: f64,
    /// Total J / SLO-met requests (infinite, i.e. `null`, if none).
    pub j_per_slo_met_request: f64,
    /// Total J / horizon, W.
    pub avg_power_w: f64,
    /// Energy breakdown.
    pub energy: Energy,
    /// Per instance, instance order.
    pub instances: Vec<InstanceSummary>,
    /// Mean seconds per stage (measured requests).
    pub stage_breakdown_s: Stages,
    /// Stage means over mean E2E.
    pub stage_share: Stages,
    /// `stage_share.kv_wait + stage_share.kv_transfer`.
    pub kv_share_of_e2e: f64,
    /// Hot-spot.
    pub hotspot: Hotspot,
    /// Little's law.
    pub littles_law: LittlesLaw,
    /// Where the requests came from (generator, sessions, or a trace and what its read reported).
    pub workload: crate::workload::WorkloadSummary,
    /// What the run clipped or replaced on the way (e.g. generated prompts above the length
    /// cap); left out when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Analytic capacity bounds, each pool with its own cost model
    /// (`docs/serving-model.md#per-pool-capacity`; `None` if the mean lengths are below one token).
    pub analytic: Option<Analytic>,
    /// The scheduling levers' figures (`docs/levers.md#lever-metrics`; only when they are on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<crate::sched::SchedulerSummary>,
    /// Each role's parallel layout (only when a pool has one; empty for a colocated run with
    /// only pool layouts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel: Option<Vec<ParallelSummary>>,
    /// The formats (only when quantised).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub formats: Option<FormatsSummary>,
    /// A model described by layer kinds (issue 16): its cache kind by kind, MLA's and the
    /// experts' costs (only for such a model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<crate::layer_summary::LayersSummary>,
    /// Per instance, the optical engines' figures (only when a device has an engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optical: Option<Vec<OpticalSummary>>,
    /// Area, silicon cost and performance per W / mm² / $ (`--ppa` only; `docs/levers.md#ppa`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ppa: Option<disagg_model::ppa::PpaReport>,
    /// The pools whose device was fitted to measurements, with the fit's provenance (only when
    /// one is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Vec<CalibrationSummary>>,
    // The last two, so that a sweep's CSV keeps its earlier columns where they were.
    /// The offered rate against the per-pool ceiling, and whether the queues still grew at the
    /// end (`docs/serving-model.md#overload`).
    pub overload: Overload,
    /// What was simulated: model, pools, link, arrivals, requests, SLOs
    /// (`docs/serving-model.md#simulated`).
    pub simulated: Simulated,
}

impl RunResult {
    /// Fraction of measured requests meeting both SLOs (what `max_sustainable_rate` bisects on).
    pub fn slo_attainment(&self) -> f64 {
        let (done, cut) = done_order(&self.reqs, self.cfg.warmup_frac);
        let steady = &done[cut..];
        if steady.is_empty() {
            return f64::NAN;
        }
        let met = steady
            .iter()
            .filter(|&&i| meets_slo(&self.reqs[i as usize], &self.cfg))
            .count();
        met as f64 / steady.len() as f64
    }

    /// Whether request `rid` finished and met both SLOs (the test [`RunResult::slo_attainment`]
    /// counts; `plan --max-rate`'s confidence intervals use it, `docs/planning.md#outcomes`).
    pub fn met_slos(&self, rid: usize) -> bool {
        let r = &self.reqs[rid];
        !r.finish.is_nan() && meets_slo(r, &self.cfg)
    }

    /// The full summary.
    pub fn summary(&self) -> Summary {
        summarise(self)
    }

    /// The per-request latencies the summary's TTFT, TPOT and E2E distributions are computed
    /// from: the measured requests (finished, after the warm-up cut) with the run's first-token
    /// convention. Charts use this so they show the figures printed beside them.
    pub fn measured_latencies(&self) -> MeasuredLatencies {
        let (done, cut) = done_order(&self.reqs, self.cfg.warmup_frac);
        measured_latencies(&self.reqs, &done[cut..], self.cfg.handoff.first_token)
    }
}

fn summarise(res: &RunResult) -> Summary {
    let c = Ctx::new(res);
    let (cfg, h) = (c.cfg, c.h);
    let lat = requests::latencies(&c);
    let slo = requests::slo(&c);
    let out_tokens: u64 = c
        .done
        .iter()
        .map(|&i| c.reqs[i as usize].output as u64)
        .sum();

    // Utilisation, instance order then the link.
    let mut util: Vec<(String, f64)> = res
        .instances
        .iter()
        .map(|i| (i.name.clone(), i.stats.busy_s / h))
        .collect();
    let link_util = link::link_util(&c);
    util.push(("kv-link".into(), link_util));

    let stage_means = stages::stage_means(&c);
    let stage_breakdown = stage_means.unwrap_or([f64::NAN; 6]);
    let mean_e2e = lat.e2e_s.mean;
    let stage_share: [f64; 6] = std::array::from_fn(|k| stage_breakdown[k] / mean_e2e);
    let hotspot = stages::hotspot(&c, stage_means, &util);

    let instances = instances::instances(&c);
    let optical = instances::optical(&c);
    let energy = energy::energy(&c, &optical);
    let total = energy.total_j;

    let (workload, warnings) = workload(&c);
    let throughput_tok_s = out_tokens as f64 / h;
    let tokens_per_j = if total != 0.0 {
        out_tokens as f64 / total
    } else {
        f64::NAN
    };
    let ppa = cfg
        .scenario
        .ppa
        .then(|| layout::ppa_block(cfg, tokens_per_j, throughput_tok_s));
    let layers =
        crate::layer_summary::of_run(&cfg.model, instances.iter().map(|i| (i.role, i.mean_batch)));
    Summary {
        workload,
        warnings,
        schema_version: SCHEMA_VERSION,
        mode: cfg.mode,
        first_token: c.conv,
        options: cfg.handoff,
        pools: layout::pools(cfg),
        horizon_s: h,
        requests: requests::counts(&c),
        ttft_s: lat.ttft_s,
        tpot_s: lat.tpot_s,
        itl_s: lat.itl_s,
        e2e_s: lat.e2e_s,
        handoff_s: lat.handoff_s,
        decode_mem_wait_s: link::decode_mem_wait(&c),
        slo_met: slo.met,
        slo_attainment: slo.attainment,
        slo_attainment_offered: slo.attainment_offered,
        goodput_rps: slo.goodput_rps,
        throughput_tok_s,
        throughput_rps: c.done.len() as f64 / h,
        link_busy: link_util,
        link_j_per_request: link::link_j_per_request(&c),
        link: link::link(&c),
        links: link::links(&c),
        j_per_token: if out_tokens > 0 {
            total / out_tokens as f64
        } else {
            f64::NAN
        },
        tokens_per_j,
        j_per_slo_met_request: if slo.met > 0 {
            total / slo.met as f64
        } else {
            f64::INFINITY
        },
        avg_power_w: total / h,
        energy,
        instances,
        stage_breakdown_s: Stages::from_array(stage_breakdown),
        stage_share: Stages::from_array(stage_share),
        kv_share_of_e2e: stage_share[2] + stage_share[3],
        hotspot,
        littles_law: stages::littles_law(&c),
        analytic: crate::capacity::per_pool(cfg),
        scheduler: scheduler::scheduler(&c),
        parallel: layout::parallel_summary(res),
        formats: layout::formats_summary(cfg),
        layers,
        optical: c.engines().then_some(optical),
        ppa,
        calibration: calibration_of(cfg),
        overload: overload::overload(&c),
        simulated: simulated::simulated(&c),
    }
}

/// Where the requests came from, and what the run clipped or replaced on the way.
fn workload(c: &Ctx<'_>) -> (crate::workload::WorkloadSummary, Vec<String>) {
    let res = c.res;
    let mut workload = c
        .cfg
        .source
        .summary(res.reqs.len() as u64, res.closed_turns);
    let mut warnings = Vec::new();
    if res.clipped_prompts > 0 {
        let cap = c.cfg.workload.prompt.hi.max(0) as u64;
        workload.clipped_prompts = res.clipped_prompts;
        workload.prompt_cap_tokens = Some(cap);
        warnings.push(crate::workload::clipping_warning(
            res.clipped_prompts,
            res.reqs.len() as u64,
            cap,
        ));
    }
    (workload, warnings)
}

#[cfg(test)]
mod tests;
