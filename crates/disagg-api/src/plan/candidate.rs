//! One candidate of a `target_rate` plan and what became of it (a file of its own so that
//! the search and the objectives both use it without importing each other).

use disagg_sim::Summary;
use serde::Serialize;

/// A candidate whose run misses the SLO-attainment target by more than this (a fraction) is
/// infeasible on that run alone; the others get a confidence interval
/// (`docs/planning.md#screen`).
pub const SCREEN_MARGIN: f64 = 0.05;

/// One point of a candidate's load curve: one run (replication 0) at `rate_rps`
/// (`docs/objectives.md#ladder`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadPoint {
    pub rate_rps: f64,
    pub slo_attainment: f64,
    /// The run is steady by `disagg_sim::steady::measure` (`docs/planning.md#steady`).
    pub steady: bool,
    /// Whether the point counts for the objectives: at the target rate the candidate is
    /// feasible (the plan's rule); on a rung `slo_attainment >= --slo-target` and `steady`.
    pub meets_slo: bool,
    pub tokens_per_s_per_user: Option<f64>,
    pub tokens_per_s_per_gpu: Option<f64>,
    pub goodput_per_gpu: Option<f64>,
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
    /// `disagg`, or `colocated` (the baseline: `prefill` instances that prefill and decode,
    /// `decode` 0, link `-`; `docs/objectives.md#colocated`).
    pub mode: String,
    /// GPUs: the sum over pools of instances x devices per instance.
    pub gpus: u64,
    /// `pruned` (analytic ceiling hopeless), `infeasible` (simulated, misses the SLO target),
    /// `feasible`, `over-budget` (more GPUs than `--gpus`; not simulated) or `invalid` (e.g.
    /// the model does not fit, or an instance spans part of a node).
    pub status: String,
    pub reason: Option<String>,
    pub ceiling_rps: Option<f64>,
    /// The SLO attainment of the candidate's run (the scenario's own seed, or the trace's one
    /// replay): the figure `disagg run` of the candidate prints.
    pub slo_attainment: Option<f64>,
    /// The attainment's 95% confidence interval (replications, or batch means of a trace;
    /// `docs/planning.md#estimate`): computed for candidates whose run is within
    /// [`SCREEN_MARGIN`] of the target; `feasible` needs its lower bound at the target. None
    /// with `--search bisect` (one run decides, as before issue 26) or when screened out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo_attainment_ci: Option<disagg_sim::steady::Estimate>,
    pub latency_p99_s: Option<f64>,
    /// GPUs plus link ports, US$ per hour.
    pub gpu_usd_per_hour: f64,
    pub energy_usd_per_hour: Option<f64>,
    pub usd_per_hour: Option<f64>,
    pub usd_per_mtok: Option<f64>,
    /// SLO-met requests/s (the summary's `goodput_rps`) per GPU.
    pub goodput_per_gpu: Option<f64>,
    /// Output tokens/s (the summary's `throughput_tok_s`) per GPU.
    pub tokens_per_s_per_gpu: Option<f64>,
    /// Tokens/s per user: 1 / mean TPOT (`docs/objectives.md#objectives`).
    pub tokens_per_s_per_user: Option<f64>,
    pub pareto: bool,
    /// With `--objective goodput-per-gpu`, `tokens-per-gpu@U` or `pareto`: the candidate's
    /// points along its load ladder, the target rate first (`docs/objectives.md#ladder`); the
    /// objective's figures above are taken at the best qualifying point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_curve: Option<Vec<LoadPoint>>,
    /// The rate of the load-curve point the objective's figures come from (None: no point
    /// qualifies, the figures are the target rate's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_rate_rps: Option<f64>,
    /// The run's summary (simulated candidates; not in the JSON).
    #[serde(skip)]
    pub summary: Option<Summary>,
}

impl Candidate {
    /// A candidate with no pools, figures or status (filled in by the search).
    pub fn blank(index: usize) -> Candidate {
        Candidate {
            index,
            prefill: 0,
            decode: 0,
            prefill_device: String::new(),
            decode_device: String::new(),
            link: String::new(),
            compression: String::new(),
            prefill_layout: None,
            decode_layout: None,
            formats: None,
            mode: "disagg".into(),
            gpus: 0,
            status: String::new(),
            reason: None,
            ceiling_rps: None,
            slo_attainment: None,
            slo_attainment_ci: None,
            latency_p99_s: None,
            gpu_usd_per_hour: 0.0,
            energy_usd_per_hour: None,
            usd_per_hour: None,
            usd_per_mtok: None,
            goodput_per_gpu: None,
            tokens_per_s_per_gpu: None,
            tokens_per_s_per_user: None,
            pareto: false,
            load_curve: None,
            at_rate_rps: None,
            summary: None,
        }
    }
}
