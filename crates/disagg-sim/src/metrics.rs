//! From a finished run to numbers (simulator.md §5, including the `results.py` extras of §5.8 and
//! the analytic bounds of §5.9): one typed, serialisable [`Summary`].
//!
//! Float expressions keep the reference's operation order; means are exact `fsum`s; percentiles use
//! the §5.2 formula; NaN (an empty sample, or an undefined ratio) serialises as `null`.

use serde::Serialize;

use crate::engine::request::Req;
use crate::engine::RunResult;
use crate::pymath::Fsum;
use crate::scenario::{FirstToken, HandoffOptions, Mode, Role, SimConfig};
use crate::search::{analytic_capacity, Analytic};
use crate::stats::{dist, p50_p99, Dist, P50P99};

/// Version of the [`Summary`] layout.
pub const SCHEMA_VERSION: u32 = 1;

/// Request counts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RequestCounts {
    /// Requests that finished.
    pub completed: u64,
    /// Requests rejected at arrival.
    pub rejected: u64,
    /// Finished requests after the warm-up cut (the latency sample).
    pub measured: u64,
}

/// KV link totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkSummary {
    /// Bytes on the wire.
    pub bytes: f64,
    /// Transfers.
    pub transfers: u64,
    /// Sum of channel waits, s.
    pub wait_s: f64,
    /// `wait_s / max(1, transfers)`.
    pub mean_wait_s: f64,
    /// `bytes / horizon`, bytes/s.
    pub achieved_bps: f64,
    /// Sum of transfer times, s.
    pub busy_s: f64,
    /// Link energy, J.
    pub energy_j: f64,
    /// Uncompressed hand-off bytes (with a compression stage; else 0).
    pub handoff_bytes: f64,
    /// In-link compression stage energy, J.
    pub transit_j: f64,
    /// Transfers the in-link stage's compute slowed.
    pub transit_bound: u64,
    /// `transit_bound / transfers` (0 without transfers).
    pub transit_bound_frac: f64,
    /// Compression preset, if any.
    pub compression: Option<String>,
    /// Where it runs (`transit` or `endpoint`), if any.
    pub compress_at: Option<String>,
    /// Its ratio, if any.
    pub compression_ratio: Option<f64>,
    /// `--prefix-handoff` (beyond the reference): uncompressed KV bytes of the hand-offs' prompts
    /// not sent because the decode instance's prefix cache held them (left out without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_bytes_saved: Option<f64>,
}

/// One KV link's load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkLoad {
    /// `kv-link`, `kv-link-p<i>` or `kv-link-p<i>-d<j>`.
    pub name: String,
    /// `busy / (channels x horizon)`.
    pub utilisation: f64,
    /// Channel-seconds used, s.
    pub busy_s: f64,
    /// Bytes on the wire.
    pub bytes: f64,
    /// Transfers.
    pub transfers: u64,
}

/// Time hand-offs waited for decode memory (`--reserve-kv-on transfer`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MemWaitSummary {
    /// Hand-offs that reserved decode memory.
    pub handoffs: u64,
    /// Total wait, s.
    pub total_s: f64,
    /// Per hand-off (all of them, warm-up included, like `handoff_s`), s.
    pub per_handoff: Dist,
}

/// Energy totals (simulator.md §5.7).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Energy {
    /// Total, J.
    pub total_j: f64,
    /// Static (idle power x horizon, every instance), J.
    pub static_j: f64,
    /// Dynamic compute, J.
    pub compute_j: f64,
    /// Dynamic memory, J.
    pub memory_j: f64,
    /// Link, J.
    pub link_j: f64,
    /// In-link compression stage, J (0 without one).
    pub transit_j: f64,
    /// `static / total`.
    pub static_frac: f64,
    /// `compute / total`.
    pub compute_frac: f64,
    /// `memory / total`.
    pub memory_frac: f64,
    /// `link / total`.
    pub link_frac: f64,
    /// `transit / total` (only with a compression stage).
    pub transit_frac: Option<f64>,
    /// Host-link swap energy, J (paged KV with swap preemption only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_j: Option<f64>,
    /// `swap / total` (with `swap_j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_frac: Option<f64>,
    /// Scale-up link energy of the parallel layouts, J (only when a pool has a layout;
    /// levers-cost.md §5.7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_up_j: Option<f64>,
    /// `scale_up / total` (with `scale_up_j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_up_frac: Option<f64>,
    /// Static energy of the optical transform engines, `Σ optical_static_w x H`, J (only when a
    /// device has an engine; levers-cost.md §10.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optical_static_j: Option<f64>,
    /// `optical_static / total` (with `optical_static_j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optical_static_frac: Option<f64>,
    /// The engines' conversion energy, J (with `optical_static_j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optical_conversions_j: Option<f64>,
    /// `optical_conversions / total` (with `optical_conversions_j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optical_conversions_frac: Option<f64>,
}

/// A pool whose device was fitted to measured step times (`disagg calibrate`): the pool's role,
/// the device key, and the device's provenance fields (flattened).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CalibrationSummary {
    /// `prefill`, `decode` or `colocated`.
    pub pool: String,
    /// The device's catalogue key (`h100-fit`).
    pub device: String,
    /// The provenance: measurements, fit, groups, MAPEs, tool.
    #[serde(flatten)]
    pub calibration: disagg_model::Calibration,
}

/// The pools of a configuration whose device carries a calibration, in pool order (the pools
/// of its mode: prefill and decode, or colocated) with at least one instance; `None` when there
/// is none.
pub fn calibration_of(cfg: &SimConfig) -> Option<Vec<CalibrationSummary>> {
    let out: Vec<CalibrationSummary> = cfg
        .pools
        .iter()
        .filter(|p| p.instances > 0)
        .filter_map(|p| {
            p.device.calibration.as_ref().map(|c| CalibrationSummary {
                pool: p.role.as_str().to_string(),
                device: p.device.key.clone(),
                calibration: c.clone(),
            })
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

/// One instance's optical-engine figures (levers-cost.md §10.3; every instance when any device
/// has an engine).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpticalSummary {
    /// `prefill-0`, ...
    pub name: String,
    /// Share of busy time in optical-bound steps (0 when idle).
    pub optical_bound_frac: f64,
    /// Transform and Fourier-plane FLOPs the engine took.
    pub optical_flops: f64,
    /// Conversion energy, J.
    pub conversion_j: f64,
    /// Engine static energy, `optical_static_w x H`, J.
    pub static_j: f64,
}

/// One pool role's parallel layout and what its scale-up traffic cost (levers-cost.md §5.7).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ParallelSummary {
    /// `prefill`, `decode` or `colocated`.
    pub role: Role,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Expert-parallel degree.
    pub ep: u32,
    /// Micro-batches as configured (`pp` if not given; not the per-step clamp).
    pub microbatches: u32,
    /// The busiest GPU's expert load over the mean.
    pub expert_imbalance: f64,
    /// The scale-up link's name.
    pub link: String,
    /// Busy time of the role's instances, s.
    pub busy_s: f64,
    /// Scale-up communication time inside their steps, s.
    pub comm_s: f64,
    /// Scale-up link energy, J.
    pub comm_j: f64,
    /// `comm_s / busy_s` (0 when idle).
    pub comm_frac: f64,
}

/// The formats of a quantised run (levers-cost.md §6.2 item 6).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FormatsSummary {
    /// Weight format.
    pub weights: disagg_model::QuantFormat,
    /// KV cache format.
    pub kv: disagg_model::QuantFormat,
    /// Compute format.
    pub compute: disagg_model::QuantFormat,
    /// Bytes per weight.
    pub weight_bytes: f64,
    /// Bytes per KV value.
    pub kv_bytes: f64,
}

/// One instance's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InstanceSummary {
    /// `prefill-0`, ...
    pub name: String,
    /// Role.
    pub role: Role,
    /// Device key.
    pub device: String,
    /// Device display name.
    pub device_name: String,
    /// Devices per instance.
    pub devices: u32,
    /// `busy / horizon`.
    pub utilisation: f64,
    /// Model FLOPs utilisation (un-derated peak).
    pub mfu: f64,
    /// Memory bandwidth utilisation (un-derated peak).
    pub mbu: f64,
    /// Sequences per step.
    pub mean_batch: f64,
    /// Steps run.
    pub steps: u64,
    /// Sum of step times, s.
    pub busy_s: f64,
    /// Share of busy time in compute-bound steps.
    pub compute_bound_frac: f64,
    /// Share of busy time in power-bound steps.
    pub power_bound_frac: f64,
    /// `(idle_w*H + compute_j + memory_j) / H`, W.
    pub avg_w: f64,
    /// Highest single-step power, W.
    pub peak_step_w: f64,
    /// Dynamic compute energy, J.
    pub compute_j: f64,
    /// Dynamic memory energy, J.
    pub memory_j: f64,
    /// KV capacity, tokens.
    pub kv_capacity_tokens: u64,
}

/// Per-stage values in stage order. Times before the first token (layer-wise transfers start
/// during the prefill step) count as prefill, so the stages still add up to E2E: with `ft` the
/// first token, `c(x) = max(x, ft)`, `m` the time decode memory was reserved (`ft` unless
/// `--reserve-kv-on transfer`) and `g` the link start, `kv_wait = c(g) - c(m)`,
/// `kv_transfer = kv_ready - c(g)`, and the wait for decode memory after the first token,
/// `c(m) - ft`, is charged to `decode_queue` (it is waiting for the decode instance, as it is in
/// `decode_queue` when the KV is reserved at admission). With the defaults these are the
/// reference's definitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stages {
    /// Arrival to prefill batch.
    pub prefill_queue: f64,
    /// Prefill step.
    pub prefill: f64,
    /// First token (or decode memory reserved) to link start.
    pub kv_wait: f64,
    /// Link start (or first token, if later) to KV ready.
    pub kv_transfer: f64,
    /// KV ready (or first token) to decode admission, plus any wait for decode memory after the
    /// first token.
    pub decode_queue: f64,
    /// Decode admission to finish.
    pub decode: f64,
}

/// Stage names in order.
pub const STAGES: [&str; 6] = [
    "prefill_queue",
    "prefill",
    "kv_wait",
    "kv_transfer",
    "decode_queue",
    "decode",
];

impl Stages {
    /// Values in [`STAGES`] order.
    pub fn as_array(&self) -> [f64; 6] {
        [
            self.prefill_queue,
            self.prefill,
            self.kv_wait,
            self.kv_transfer,
            self.decode_queue,
            self.decode,
        ]
    }
    fn from_array(a: [f64; 6]) -> Stages {
        Stages {
            prefill_queue: a[0],
            prefill: a[1],
            kv_wait: a[2],
            kv_transfer: a[3],
            decode_queue: a[4],
            decode: a[5],
        }
    }
}

/// The stage where the mean request waits longest (decode excluded) and the busiest resource that
/// owns it (simulator.md §5.5).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hotspot {
    /// Stage name (`None` without measured requests).
    pub stage: Option<String>,
    /// Resource name (instance or `kv-link`).
    pub resource: String,
    /// Its utilisation.
    pub resource_util: f64,
    /// Resources busier than 90%, instance order then `kv-link`.
    pub busy_over_90pct: Vec<String>,
}

/// Little's law check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LittlesLaw {
    /// Time-average population.
    pub l_measured: f64,
    /// Throughput x mean E2E (all finished requests).
    pub lambda_w: f64,
}

/// Pools of a heterogeneous run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pools {
    /// `"<n>x <device name>"`.
    pub prefill: String,
    /// `"<n>x <device name>"`.
    pub decode: String,
}

/// Everything a run says (simulator.md §5).
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
    /// Analytic capacity bounds (simulator.md §5.9; `None` if the model does not fit on the base
    /// device).
    pub analytic: Option<Analytic>,
    /// The scheduling levers' figures (levers-scheduling.md §11; only when they are on).
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
    /// Area, silicon cost and performance per W / mm² / $ (`--ppa` only; levers-cost.md §11).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ppa: Option<disagg_model::ppa::PpaReport>,
    /// The pools whose device was fitted to measurements, with the fit's provenance (only when
    /// one is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Vec<CalibrationSummary>>,
}

impl Req {
    #[inline]
    fn stages(&self) -> [f64; 6] {
        // The end of prefill: the first token, or a CED encoder step's end (levers-cost.md §8.3).
        let ft = self.prefill_end();
        let handoff = if self.kv_ready.is_nan() {
            ft
        } else {
            self.kv_ready
        };
        let mut s = [
            self.prefill_start - self.arrival,
            ft - self.prefill_start,
            0.0,
            0.0,
            0.0,
            0.0,
        ];
        // Decode memory reserved, clamped to the first token (`ft` without a reservation).
        let m = if self.kv_mem.is_nan() || self.kv_mem < ft {
            ft
        } else {
            self.kv_mem
        };
        if !self.kv_start.is_nan() {
            let g = if self.kv_start < ft {
                ft
            } else {
                self.kv_start
            };
            s[2] = g - m;
            s[3] = self.kv_ready - g;
        }
        if !self.decode_start.is_nan() {
            s[4] = self.decode_start - handoff;
            if m != ft {
                s[4] += m - ft;
            }
            s[5] = self.finish - self.decode_start;
        }
        s
    }
}

/// Finished requests sorted by arrival (stable), and the index of the first measured one.
fn done_order(reqs: &[Req], warmup_frac: f64) -> (Vec<u32>, usize) {
    let mut done: Vec<u32> = (0..reqs.len() as u32)
        .filter(|&i| !reqs[i as usize].finish.is_nan())
        .collect();
    let sorted = done
        .windows(2)
        .all(|w| reqs[w[0] as usize].arrival <= reqs[w[1] as usize].arrival);
    if !sorted {
        done.sort_by(|&a, &b| {
            reqs[a as usize]
                .arrival
                .total_cmp(&reqs[b as usize].arrival)
        });
    }
    let cut = (done.len() as f64 * warmup_frac) as usize;
    let cut = cut.min(done.len());
    (done, cut)
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

/// Latencies of the measured requests, in seconds (see [`RunResult::measured_latencies`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeasuredLatencies {
    /// The measured requests' ids, in arrival order.
    pub rids: Vec<u32>,
    /// Time to first token, one per measured request.
    pub ttft_s: Vec<f64>,
    /// Time per output token after the first, one per measured request with output >= 2.
    pub tpot_s: Vec<f64>,
    /// End to end, one per measured request.
    pub e2e_s: Vec<f64>,
}

fn measured_latencies(reqs: &[Req], steady: &[u32], conv: FirstToken) -> MeasuredLatencies {
    MeasuredLatencies {
        rids: steady.to_vec(),
        ttft_s: steady
            .iter()
            .map(|&i| {
                let r = &reqs[i as usize];
                r.emitted(conv) - r.arrival
            })
            .collect(),
        tpot_s: steady
            .iter()
            .filter_map(|&i| tpot(&reqs[i as usize], conv))
            .collect(),
        e2e_s: steady
            .iter()
            .map(|&i| {
                let r = &reqs[i as usize];
                r.finish - r.arrival
            })
            .collect(),
    }
}

#[inline]
fn tpot(r: &Req, conv: FirstToken) -> Option<f64> {
    if r.output < 2 {
        None
    } else {
        Some((r.finish - r.emitted(conv)) / (r.output - 1) as f64)
    }
}

#[inline]
fn meets_slo(r: &Req, cfg: &SimConfig) -> bool {
    let conv = cfg.handoff.first_token;
    r.emitted(conv) - r.arrival <= cfg.ttft_slo_s
        && match tpot(r, conv) {
            None => true,
            Some(t) => t <= cfg.tpot_slo_s,
        }
}

fn summarise(res: &RunResult) -> Summary {
    let cfg = &res.cfg;
    let reqs = &res.reqs;
    let h = res.horizon;
    let (done, cut) = done_order(reqs, cfg.warmup_frac);
    let steady = &done[cut..];
    let conv = cfg.handoff.first_token;

    let MeasuredLatencies {
        ttft_s: ttft,
        tpot_s: tpots,
        e2e_s: e2e,
        ..
    } = measured_latencies(reqs, steady, conv);
    let itl = itl_dist(res, steady);
    let met = steady
        .iter()
        .filter(|&&i| meets_slo(&reqs[i as usize], cfg))
        .count() as u64;
    let window = if steady.len() > 1 {
        reqs[steady[steady.len() - 1] as usize].arrival - reqs[steady[0] as usize].arrival
    } else {
        f64::NAN
    };
    let out_tokens: u64 = done.iter().map(|&i| reqs[i as usize].output as u64).sum();

    // Utilisation, instance order then the link.
    let mut util: Vec<(String, f64)> = res
        .instances
        .iter()
        .map(|i| (i.name.clone(), i.stats.busy_s / h))
        .collect();
    let n_links = res.links.len().max(1) as u64;
    let link_util = res.link.busy_s / ((cfg.link.channels as u64 * n_links) as f64 * h);
    util.push(("kv-link".into(), link_util));

    // Stages.
    let stage_means: Option<[f64; 6]> = if steady.is_empty() {
        None
    } else {
        let mut acc: [Fsum; 6] = Default::default();
        for &i in steady {
            let s = reqs[i as usize].stages();
            for k in 0..6 {
                acc[k].add(s[k]);
            }
        }
        let n = steady.len() as f64;
        Some(std::array::from_fn(|k| acc[k].value() / n))
    };
    let e2e_d = dist(&e2e);
    let mean_e2e = e2e_d.mean;
    let stage_breakdown = stage_means.unwrap_or([f64::NAN; 6]);
    let stage_share: [f64; 6] = std::array::from_fn(|k| stage_breakdown[k] / mean_e2e);

    // Little's law.
    let lam = done.len() as f64 / h;
    let w = if done.is_empty() {
        f64::NAN
    } else {
        let mut acc = Fsum::new();
        for &i in &done {
            let r = &reqs[i as usize];
            acc.add(r.finish - r.arrival);
        }
        acc.value() / done.len() as f64
    };

    // Hot-spot.
    let hotspot = {
        let mut stage: Option<usize> = None;
        if let Some(m) = stage_means {
            for (k, &v) in m.iter().enumerate().take(5) {
                match stage {
                    None => stage = Some(k),
                    Some(b) if v > m[b] => stage = Some(k),
                    _ => {}
                }
            }
        }
        let mut owner = match stage {
            Some(0) | Some(1) => "prefill",
            Some(2) | Some(3) => "kv-link",
            Some(4) => "decode",
            _ => "",
        };
        if cfg.mode == Mode::Colocated && owner != "kv-link" {
            owner = "colocated";
        }
        let pick = |filter: &dyn Fn(&str) -> bool| -> Option<usize> {
            let mut best: Option<usize> = None;
            for (k, (name, v)) in util.iter().enumerate() {
                if !filter(name) {
                    continue;
                }
                match best {
                    None => best = Some(k),
                    Some(b) if *v > util[b].1 => best = Some(k),
                    _ => {}
                }
            }
            best
        };
        let res_idx = pick(&|n: &str| n.starts_with(owner))
            .or_else(|| pick(&|_| true))
            .unwrap_or(0);
        Hotspot {
            stage: stage.map(|k| STAGES[k].to_string()),
            resource: util[res_idx].0.clone(),
            resource_util: util[res_idx].1,
            busy_over_90pct: util
                .iter()
                .filter(|(_, v)| *v > 0.9)
                .map(|(n, _)| n.clone())
                .collect(),
        }
    };

    // Energy (§5.7; the optical engines: levers-cost.md §10.3).
    let engines = cfg.pools.iter().any(|p| p.device.engine.is_some());
    let mut optical = Vec::new();
    let mut static_j = 0.0;
    let mut compute_j = 0.0;
    let mut memory_j = 0.0;
    let mut instances = Vec::with_capacity(res.instances.len());
    for i in &res.instances {
        let pool = &cfg.pools[i.pool];
        let idle = pool.cost.idle_w();
        let s_j = idle * h;
        let st = &i.stats;
        let os_j = pool.cost.optical_static_w() * h;
        if engines {
            optical.push(OpticalSummary {
                name: i.name.clone(),
                optical_bound_frac: if st.busy_s != 0.0 {
                    st.optical_bound_s / st.busy_s
                } else {
                    0.0
                },
                optical_flops: st.optical_flops,
                conversion_j: st.optical_j,
                static_j: os_j,
            });
        }
        static_j += s_j;
        compute_j += st.compute_j;
        memory_j += st.memory_j;
        let n = pool.devices as f64;
        instances.push(InstanceSummary {
            name: i.name.clone(),
            role: i.role,
            device: pool.device.key.clone(),
            device_name: pool.device.name.clone(),
            devices: pool.devices,
            utilisation: st.busy_s / h,
            mfu: st.flops / (h * pool.device.peak_flops * n),
            mbu: st.bytes / (h * pool.device.mem_bw * n),
            mean_batch: if st.steps > 0 {
                st.batch_sum as f64 / st.steps as f64
            } else {
                0.0
            },
            steps: st.steps,
            busy_s: st.busy_s,
            compute_bound_frac: if st.busy_s != 0.0 {
                st.compute_bound_s / st.busy_s
            } else {
                0.0
            },
            power_bound_frac: if st.busy_s != 0.0 {
                st.power_bound_s / st.busy_s
            } else {
                0.0
            },
            avg_w: if engines {
                ((((s_j + st.compute_j) + st.memory_j) + os_j) + st.optical_j) / h
            } else {
                (s_j + st.compute_j + st.memory_j) / h
            },
            peak_step_w: st.peak_power_w,
            compute_j: st.compute_j,
            memory_j: st.memory_j,
            kv_capacity_tokens: pool.kv_capacity_tokens,
        });
    }
    let link_j = res.link.energy_j;
    let mut total = static_j + compute_j + memory_j + link_j;
    let optical_j = engines.then(|| {
        let (mut o_static, mut o_conv) = (0.0, 0.0);
        for o in &optical {
            o_static += o.static_j;
            o_conv += o.conversion_j;
        }
        (o_static, o_conv)
    });
    if let Some((o_static, o_conv)) = optical_j {
        total = (total + o_static) + o_conv;
    }
    let transit = cfg.kv_transit.is_some();
    if transit {
        total += res.link.transit_j;
    }
    let swap_j = res.sched.as_ref().and_then(|s| s.swap_j);
    if let Some(sj) = swap_j {
        total += sj;
    }
    let scale_up_j = cfg.scenario.any_layout().then(|| {
        let mut c = 0.0;
        for i in &res.instances {
            c += i.stats.comm_j;
        }
        c
    });
    if let Some(c) = scale_up_j {
        total += c;
    }
    let energy = Energy {
        total_j: total,
        static_j,
        compute_j,
        memory_j,
        link_j,
        transit_j: res.link.transit_j,
        static_frac: static_j / total,
        compute_frac: compute_j / total,
        memory_frac: memory_j / total,
        link_frac: link_j / total,
        transit_frac: transit.then(|| res.link.transit_j / total),
        swap_j,
        swap_frac: swap_j.map(|sj| sj / total),
        scale_up_j,
        scale_up_frac: scale_up_j.map(|c| c / total),
        optical_static_j: optical_j.map(|o| o.0),
        optical_static_frac: optical_j.map(|o| o.0 / total),
        optical_conversions_j: optical_j.map(|o| o.1),
        optical_conversions_frac: optical_j.map(|o| o.1 / total),
    };

    let handoffs: Vec<f64> = reqs
        .iter()
        .filter(|r| !r.kv_ready.is_nan())
        .map(|r| r.kv_ready - r.prefill_end())
        .collect();
    let tr = cfg.kv_transit.as_ref();
    let lk = &res.link;
    let link = LinkSummary {
        bytes: lk.bytes,
        transfers: lk.transfers,
        wait_s: lk.wait_s,
        mean_wait_s: lk.wait_s / lk.transfers.max(1) as f64,
        achieved_bps: lk.bytes / h,
        busy_s: lk.busy_s,
        energy_j: lk.energy_j,
        handoff_bytes: lk.handoff_bytes,
        transit_j: lk.transit_j,
        transit_bound: lk.transit_bound,
        transit_bound_frac: if lk.transfers > 0 {
            lk.transit_bound as f64 / lk.transfers as f64
        } else {
            0.0
        },
        compression: tr.map(|t| t.compression.key.clone()),
        compress_at: tr.map(|t| t.at.as_str().to_string()),
        compression_ratio: tr.map(|t| t.compression.ratio),
        handoff_bytes_saved: lk.handoff_bytes_saved,
    };

    let links = res
        .links
        .iter()
        .map(|l| LinkLoad {
            name: l.name.clone(),
            utilisation: l.busy_s / (cfg.link.channels as f64 * h),
            busy_s: l.busy_s,
            bytes: l.bytes,
            transfers: l.transfers,
        })
        .collect();
    let decode_mem_wait_s = (cfg.handoff.reserve_kv_on == crate::scenario::ReserveKvOn::Transfer)
        .then(|| {
            let waits: Vec<f64> = reqs
                .iter()
                .filter(|r| !r.kv_mem.is_nan())
                .map(|r| r.kv_mem - r.kv_req)
                .collect();
            let mut acc = Fsum::new();
            for &w in &waits {
                acc.add(w);
            }
            MemWaitSummary {
                handoffs: waits.len() as u64,
                total_s: acc.value(),
                per_handoff: dist(&waits),
            }
        });

    let pools = cfg.heterogeneous.then(|| Pools {
        prefill: cfg.pool_labels[0].clone(),
        decode: cfg.pool_labels[1].clone(),
    });

    let mut workload = cfg.source.summary(res.reqs.len() as u64, res.closed_turns);
    let mut warnings = Vec::new();
    if res.clipped_prompts > 0 {
        let cap = cfg.workload.prompt.hi.max(0) as u64;
        workload.clipped_prompts = res.clipped_prompts;
        workload.prompt_cap_tokens = Some(cap);
        warnings.push(crate::workload::clipping_warning(
            res.clipped_prompts,
            res.reqs.len() as u64,
            cap,
        ));
    }
    let throughput_tok_s = out_tokens as f64 / h;
    let tokens_per_j = if total != 0.0 {
        out_tokens as f64 / total
    } else {
        f64::NAN
    };
    let ppa = cfg
        .scenario
        .ppa
        .then(|| ppa_block(cfg, tokens_per_j, throughput_tok_s));
    let layers =
        crate::layer_summary::of_run(&cfg.model, instances.iter().map(|i| (i.role, i.mean_batch)));
    Summary {
        workload,
        warnings,
        schema_version: SCHEMA_VERSION,
        mode: cfg.mode,
        first_token: conv,
        options: cfg.handoff,
        pools,
        horizon_s: h,
        requests: RequestCounts {
            completed: done.len() as u64,
            rejected: res.rejected,
            measured: steady.len() as u64,
        },
        ttft_s: dist(&ttft),
        tpot_s: dist(&tpots),
        itl_s: itl,
        e2e_s: e2e_d,
        handoff_s: p50_p99(&handoffs),
        decode_mem_wait_s,
        slo_met: met,
        slo_attainment: if steady.is_empty() {
            f64::NAN
        } else {
            met as f64 / steady.len() as f64
        },
        slo_attainment_offered: if steady.is_empty() && res.rejected == 0 {
            f64::NAN
        } else {
            met as f64 / (steady.len() as u64 + res.rejected) as f64
        },
        goodput_rps: if window > 0.0 {
            met as f64 / window
        } else {
            f64::NAN
        },
        throughput_tok_s,
        throughput_rps: lam,
        link_busy: link_util,
        link_j_per_request: (lk.energy_j + lk.transit_j) / lk.transfers.max(1) as f64,
        link,
        links,
        j_per_token: if out_tokens > 0 {
            total / out_tokens as f64
        } else {
            f64::NAN
        },
        tokens_per_j,
        j_per_slo_met_request: if met > 0 {
            total / met as f64
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
        littles_law: LittlesLaw {
            l_measured: res.area / h,
            lambda_w: lam * w,
        },
        analytic: analytic_capacity(cfg),
        scheduler: res.sched.as_ref().map(|s| {
            let mut b = s.report.clone();
            b.sched_delay_p50_s = Some(sched_delay_p50(reqs, steady));
            b.norm_latency_s_per_token = Some(
                crate::pymath::neumaier_sum(steady.iter().map(|&i| {
                    let r = &reqs[i as usize];
                    (r.finish - r.arrival) / r.output as f64
                })) / steady.len() as f64,
            );
            b
        }),
        parallel: parallel_summary(res),
        formats: formats_summary(cfg),
        layers,
        optical: engines.then_some(optical),
        ppa,
        calibration: calibration_of(cfg),
    }
}

/// The `ppa` block (levers-cost.md §11): one role per pool in order (prefill, decode; or
/// colocated), each with its device and devices per instance.
fn ppa_block(
    cfg: &SimConfig,
    tokens_per_j: f64,
    throughput_tok_s: f64,
) -> disagg_model::ppa::PpaReport {
    let roles: Vec<disagg_model::ppa::PpaRole<'_>> = cfg
        .pools
        .iter()
        .map(|p| disagg_model::ppa::PpaRole {
            role: p.role.as_str(),
            device: &p.device,
            instances: p.instances as u64,
            devices_per_instance: p.devices,
        })
        .collect();
    disagg_model::ppa::ppa_report(&roles, tokens_per_j, throughput_tok_s)
}

/// The `parallel` block (levers-cost.md §5.7): one entry per pool with a layout, in instance
/// order, its sums looping from 0.0 over the role's instances in order.
fn parallel_summary(res: &RunResult) -> Option<Vec<ParallelSummary>> {
    let cfg = &res.cfg;
    if !cfg.scenario.any_layout() {
        return None;
    }
    let mut out = Vec::new();
    for (k, pool) in cfg.pools.iter().enumerate() {
        let Some(l) = pool.cost.layout() else {
            continue;
        };
        let (mut busy, mut comm, mut cj) = (0.0, 0.0, 0.0);
        for i in res.instances.iter().filter(|i| i.pool == k) {
            busy += i.stats.busy_s;
            comm += i.stats.comm_s;
            cj += i.stats.comm_j;
        }
        out.push(ParallelSummary {
            role: pool.role,
            tp: l.tp,
            pp: l.pp,
            ep: l.ep,
            microbatches: l.microbatches.unwrap_or(l.pp),
            expert_imbalance: l.expert_imbalance,
            link: pool.cost.scale_up_link_name().unwrap_or_default(),
            busy_s: busy,
            comm_s: comm,
            comm_j: cj,
            comm_frac: if busy != 0.0 { comm / busy } else { 0.0 },
        });
    }
    Some(out)
}

/// The `formats` block (levers-cost.md §6.2 item 6), when any format is not BF16.
fn formats_summary(cfg: &SimConfig) -> Option<FormatsSummary> {
    let f = cfg.scenario.formats();
    f.is_quantised().then_some(FormatsSummary {
        weights: f.weight,
        kv: f.kv,
        compute: f.compute,
        weight_bytes: cfg.model.weight_bytes,
        kv_bytes: cfg.model.kv_bytes,
    })
}

/// `statistics.median` of `prefill_start - arrival` over the measured requests (NaN if none).
fn sched_delay_p50(reqs: &[Req], steady: &[u32]) -> f64 {
    let mut v: Vec<f64> = steady
        .iter()
        .map(|&i| {
            let r = &reqs[i as usize];
            r.prefill_start - r.arrival
        })
        .collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        (v[k - 1] + v[k]) / 2.0
    }
}

/// The ITL distribution of the measured requests, from the step-end arrays (see
/// [`crate::engine::itl`]).
fn itl_dist(res: &RunResult, steady: &[u32]) -> Dist {
    crate::engine::itl::itl_dist(
        res.token_step_ends(),
        steady,
        |i| res.token_runs(i),
        res.sched.is_some(),
    )
}

#[cfg(test)]
mod tests {
    //! Summary metrics of hand-built run records (simulator.md §5): every request stamp, step
    //! total and link total below is chosen by hand (dyadic times, so the arithmetic is exact),
    //! and every expected value is counted by hand or is the spec's formula written out.

    use super::*;
    use crate::scenario::Scenario;
    use crate::serving::{InstanceResult, InstanceStats, LinkResult, LinkStats};

    const NAN: f64 = f64::NAN;

    fn cfg(flags: &[&str]) -> SimConfig {
        Scenario::from_flags(flags.iter().copied())
            .unwrap()
            .build(&disagg_model::Catalogue::builtin())
            .unwrap()
    }

    /// A request record with the given stamps: no decode-memory reservation, no decode steps.
    #[allow(clippy::too_many_arguments)]
    fn req(
        arrival: f64,
        prefill_start: f64,
        first_token: f64,
        kv_start: f64,
        kv_ready: f64,
        decode_start: f64,
        finish: f64,
        output: u32,
    ) -> Req {
        Req {
            arrival,
            prefill_start,
            first_token,
            kv_start,
            kv_ready,
            decode_start,
            finish,
            kv_req: NAN,
            kv_mem: NAN,
            prefill_done: NAN,
            adm: 0,
            prompt: 100,
            output,
            dinst: u32::MAX,
            dtarget: u32::MAX,
            units: 0,
        }
    }

    /// The main fixture's request shape: prefill queue `q`, prefill 0.5 s, KV wait 0.125 s,
    /// transfer 0.25 s, decode queue 0.125 s, decode `d`. So TTFT = q + 0.5,
    /// E2E = q + 1 + d, TPOT = (0.5 + d) / (output - 1), hand-off = 0.375.
    fn staged(a: f64, q: f64, d: f64, output: u32) -> Req {
        let ps = a + q;
        let ft = ps + 0.5;
        let ks = ft + 0.125;
        let kr = ks + 0.25;
        let ds = kr + 0.125;
        req(a, ps, ft, ks, kr, ds, ds + d, output)
    }

    fn run(cfg: SimConfig, reqs: Vec<Req>, horizon: f64) -> RunResult {
        RunResult {
            cfg,
            reqs,
            step_ends: vec![],
            instances: vec![],
            link: LinkStats::default(),
            links: vec![],
            horizon,
            area: 0.0,
            rejected: 0,
            events: 0,
            closed_turns: 0,
            clipped_prompts: 0,
            sched: None,
        }
    }

    fn inst(name: &str, role: Role, pool: usize, stats: InstanceStats) -> InstanceResult {
        InstanceResult {
            name: name.into(),
            role,
            pool,
            stats,
        }
    }

    fn busy(busy_s: f64) -> InstanceStats {
        InstanceStats {
            busy_s,
            ..InstanceStats::default()
        }
    }

    /// Ten finished requests given in *decreasing* arrival order (so the arrival sort matters),
    /// one unfinished request, 3 rejections; 4 prefill instances, 1 decode instance, 4 links
    /// with 2 channels each; horizon 20 s; SLOs 1 s TTFT (default) and 0.25 s TPOT.
    ///
    /// | rid | arrival | q    | d    | output | TTFT | TPOT       | E2E  | SLO  |
    /// |-----|---------|------|------|--------|------|------------|------|------|
    /// | 9   | 0       | 10   | 1    | 7      | 10.5 | warm-up (cut = floor(10 x 0.1) = 1) |
    /// | 8   | 1       | 0.25 | 1    | 7      | 0.75 | 1.5/6=0.25 | 2.25 | met  |
    /// | 7   | 2       | 0.75 | 1    | 7      | 1.25 | 0.25       | 2.75 | TTFT |
    /// | 6   | 3       | 0.5  | 1    | 7      | 1.0  | 0.25       | 2.5  | met (ties) |
    /// | 5   | 4       | 0.25 | 1.5  | 5      | 0.75 | 2/4=0.5    | 2.75 | TPOT |
    /// | 4   | 5       | 0.25 | 0.5  | 2      | 0.75 | 1/1=1.0    | 1.75 | TPOT |
    /// | 3   | 6       | 0.25 | 0.25 | 1      | 0.75 | -          | 1.5  | met  |
    /// | 2   | 7       | 0.25 | 1    | 7      | 0.75 | 0.25       | 2.25 | met  |
    /// | 1   | 8       | 0.25 | 1    | 7      | 0.75 | 0.25       | 2.25 | met  |
    /// | 0   | 9       | 0.25 | 1    | 7      | 0.75 | 0.25       | 2.25 | met  |
    fn main_run() -> RunResult {
        let c = cfg(&[
            "--prefill",
            "4",
            "--link-channels",
            "2",
            "--link-topology",
            "per-pair",
            "--tpot-slo",
            "0.25",
        ]);
        let mut reqs = vec![
            staged(9.0, 0.25, 1.0, 7),
            staged(8.0, 0.25, 1.0, 7),
            staged(7.0, 0.25, 1.0, 7),
            staged(6.0, 0.25, 0.25, 1),
            staged(5.0, 0.25, 0.5, 2),
            staged(4.0, 0.25, 1.5, 5),
            staged(3.0, 0.5, 1.0, 7),
            staged(2.0, 0.75, 1.0, 7),
            staged(1.0, 0.25, 1.0, 7),
            staged(0.0, 10.0, 1.0, 7),
        ];
        // Unfinished, but its KV landed: its hand-off (0.75 s) counts, nothing else does.
        reqs.push(req(4.5, 4.75, 5.0, 5.0, 5.75, NAN, NAN, 7));
        let mut r = run(c, reqs, 20.0);
        let st = |busy_s, steps, batch_sum, cb, pb, flops, bytes, cj, mj, peak| InstanceStats {
            busy_s,
            steps,
            compute_bound_s: cb,
            power_bound_s: pb,
            flops,
            bytes,
            batch_sum,
            compute_j: cj,
            memory_j: mj,
            peak_power_w: peak,
            // Scale-up energy without a layout is never added (the run below has none).
            comm_s: 1.0,
            comm_j: 2.0,
            // Nor optical energy without an engine device.
            optical_bound_s: 0.5,
            optical_flops: 4.0,
            optical_j: 3.0,
        };
        r.instances = vec![
            inst(
                "prefill-0",
                Role::Prefill,
                0,
                st(5.0, 10, 25, 4.0, 1.0, 4e15, 2e12, 100.0, 50.0, 700.0),
            ),
            inst(
                "prefill-1",
                Role::Prefill,
                0,
                st(15.0, 4, 6, 7.5, 0.0, 8e15, 1e12, 200.0, 25.0, 650.0),
            ),
            inst(
                "prefill-2",
                Role::Prefill,
                0,
                st(15.0, 3, 3, 15.0, 3.75, 6e15, 3e12, 300.0, 12.5, 600.0),
            ),
            inst("prefill-3", Role::Prefill, 0, InstanceStats::default()),
            inst(
                "decode-0",
                Role::Decode,
                1,
                st(19.0, 38, 95, 0.0, 9.5, 1e15, 5e13, 40.0, 400.0, 900.0),
            ),
        ];
        r.link = LinkStats {
            busy_s: 144.0,
            bytes: 3.2e10,
            transfers: 11,
            wait_s: 2.75,
            energy_j: 8.0,
            handoff_bytes: 0.0,
            transit_j: 0.75,
            transit_bound: 3,
            handoff_bytes_saved: None,
        };
        let link = |name: &str, busy_s, transfers| LinkResult {
            name: name.into(),
            busy_s,
            bytes: 1e9 * transfers as f64,
            transfers,
        };
        r.links = vec![
            link("kv-link-p0-d0", 40.0, 4),
            link("kv-link-p1-d0", 36.0, 3),
            link("kv-link-p2-d0", 36.0, 3),
            link("kv-link-p3-d0", 32.0, 1),
        ];
        r.area = 30.0;
        r.rejected = 3;
        r
    }

    fn dist_of(mean: f64, p50: f64, p90: f64, p99: f64, max: f64) -> Dist {
        Dist {
            mean,
            p50,
            p90,
            p99,
            max,
        }
    }

    #[test]
    fn main_fixture_latencies_and_slos() {
        let r = main_run();
        let s = r.summary();
        assert_eq!(
            s.requests,
            RequestCounts {
                completed: 10,
                rejected: 3,
                measured: 9
            }
        );
        // TTFT sorted: 0.75 x 7, 1.0, 1.25; n - 1 = 8: k = 4, 7.2, 7.92; mean 7.5 / 9.
        assert_eq!(
            s.ttft_s,
            dist_of(
                7.5 / 9.0,
                0.75,
                1.0 + (1.25 - 1.0) * (7.2 - 7.0),
                1.0 + (1.25 - 1.0) * (7.92 - 7.0),
                1.25
            )
        );
        // TPOT (output >= 2, so rid 3 is out): 0.25 x 6, 0.5, 1.0; n - 1 = 7: k = 3.5, 6.3,
        // 6.93; mean (1.5 + 0.5 + 1.0) / 8.
        assert_eq!(
            s.tpot_s,
            dist_of(
                3.0 / 8.0,
                0.25,
                0.5 + (1.0 - 0.5) * (6.3 - 6.0),
                0.5 + (1.0 - 0.5) * (6.93 - 6.0),
                1.0
            )
        );
        // E2E sorted: 1.5, 1.75, 2.25 x 4, 2.5, 2.75 x 2; sum 20.25, mean 2.25; k = 4 -> 2.25,
        // k = 7.2 and 7.92 between the two 2.75s.
        assert_eq!(s.e2e_s, dist_of(2.25, 2.25, 2.75, 2.75, 2.75));
        // No decode-step data: no ITL.
        assert!(s.itl_s.mean.is_nan() && s.itl_s.max.is_nan());
        // Hand-offs of every request with a KV (warm-up and unfinished included): 0.375 x 10 and
        // 0.75; n - 1 = 10: p50 k = 5, p99 k = 9.9.
        assert_eq!(
            s.handoff_s,
            P50P99 {
                p50: 0.375,
                p99: 0.375 + (0.75 - 0.375) * (9.9 - 9.0)
            }
        );
        assert_eq!(s.decode_mem_wait_s, None);
        assert_eq!(s.slo_met, 6);
        assert_eq!(s.slo_attainment, 6.0 / 9.0);
        assert_eq!(r.slo_attainment(), 6.0 / 9.0);
        // Offered: 6 / (9 measured + 3 rejected).
        assert_eq!(s.slo_attainment_offered, 0.5);
        // Goodput: 6 met over the measured arrival span 9 - 1 = 8 s.
        assert_eq!(s.goodput_rps, 0.75);
        // Output tokens of all 10 finished: 7 x 7 + 5 + 2 + 1 = 57, over 20 s.
        assert_eq!(s.throughput_tok_s, 57.0 / 20.0);
        assert_eq!(s.throughput_rps, 0.5);
        assert_eq!(s.first_token, FirstToken::Prefill);
        assert_eq!(s.mode, Mode::Disagg);
        assert_eq!(s.schema_version, SCHEMA_VERSION);
        assert!(s.warnings.is_empty());
        assert_eq!(s.workload.clipped_prompts, 0);
        assert_eq!(s.workload.prompt_cap_tokens, None);
        // Little's law: area / H; (10 / 20) x mean E2E of all 10 = (20.25 + 12) / 10.
        assert_eq!(
            s.littles_law,
            LittlesLaw {
                l_measured: 1.5,
                lambda_w: 0.5 * (32.25 / 10.0)
            }
        );

        let m = r.measured_latencies();
        assert_eq!(m.rids, vec![8, 7, 6, 5, 4, 3, 2, 1, 0]);
        assert_eq!(
            m.ttft_s,
            vec![0.75, 1.25, 1.0, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75]
        );
        assert_eq!(m.tpot_s, vec![0.25, 0.25, 0.25, 0.5, 1.0, 0.25, 0.25, 0.25]);
        assert_eq!(
            m.e2e_s,
            vec![2.25, 2.75, 2.5, 2.75, 1.75, 1.5, 2.25, 2.25, 2.25]
        );
    }

    #[test]
    fn main_fixture_stages_and_hotspot() {
        let s = main_run().summary();
        // Means over the 9 measured: queue (0.25 x 6 + 0.75 + 0.5) / 9 = 3 / 9; prefill 0.5;
        // KV wait 0.125; transfer 0.25; decode queue 0.125; decode (1 x 6 + 1.5 + 0.5 + 0.25) / 9.
        let means = [3.0 / 9.0, 0.5, 0.125, 0.25, 0.125, 8.25 / 9.0];
        assert_eq!(s.stage_breakdown_s.as_array(), means);
        let share = means.map(|v| v / 2.25);
        assert_eq!(s.stage_share.as_array(), share);
        assert_eq!(s.stage_share.kv_wait, 0.125 / 2.25);
        assert_eq!(s.kv_share_of_e2e, 0.125 / 2.25 + 0.25 / 2.25);
        // Largest stage mean (decode excluded) is prefill; its owner's busiest instance is
        // prefill-1 (0.75; prefill-2 ties at 0.75 later, prefill-0 0.25, prefill-3 0).
        // Over 90%: decode-0 (19/20 = 0.95); kv-link is exactly 144 / (2 x 4 x 20) = 0.9.
        assert_eq!(
            s.hotspot,
            Hotspot {
                stage: Some("prefill".into()),
                resource: "prefill-1".into(),
                resource_util: 0.75,
                busy_over_90pct: vec!["decode-0".into()],
            }
        );
        assert_eq!(s.link_busy, 0.9);
    }

    #[test]
    fn main_fixture_energy_instances_and_link() {
        let r = main_run();
        let s = r.summary();
        let h = 20.0;
        let (ip, id) = (r.cfg.pools[0].cost.idle_w(), r.cfg.pools[1].cost.idle_w());
        assert!(ip > 0.0 && id > 0.0);
        // Left-to-right sums in instance order, as §5.7 says.
        let static_j = 0.0 + ip * h + ip * h + ip * h + ip * h + id * h;
        let compute_j = 0.0 + 100.0 + 200.0 + 300.0 + 0.0 + 40.0;
        let memory_j = 0.0 + 50.0 + 25.0 + 12.5 + 0.0 + 400.0;
        // Without a compression stage the link stats' transit_j (0.75) is not added.
        let total = static_j + compute_j + memory_j + 8.0;
        assert_eq!(
            s.energy,
            Energy {
                total_j: total,
                static_j,
                compute_j,
                memory_j,
                link_j: 8.0,
                transit_j: 0.75,
                static_frac: static_j / total,
                compute_frac: compute_j / total,
                memory_frac: memory_j / total,
                link_frac: 8.0 / total,
                transit_frac: None,
                swap_j: None,
                swap_frac: None,
                scale_up_j: None,
                scale_up_frac: None,
                optical_static_j: None,
                optical_static_frac: None,
                optical_conversions_j: None,
                optical_conversions_frac: None,
            }
        );
        assert!(s.optical.is_none() && s.ppa.is_none());
        assert_eq!(s.j_per_token, total / 57.0);
        assert_eq!(s.tokens_per_j, 57.0 / total);
        assert_eq!(s.j_per_slo_met_request, total / 6.0);
        assert_eq!(s.avg_power_w, total / h);
        // (link J + transit J) / transfers.
        assert_eq!(s.link_j_per_request, (8.0 + 0.75) / 11.0);
        assert_eq!(
            s.link,
            LinkSummary {
                bytes: 3.2e10,
                transfers: 11,
                wait_s: 2.75,
                mean_wait_s: 2.75 / 11.0,
                achieved_bps: 3.2e10 / h,
                busy_s: 144.0,
                energy_j: 8.0,
                handoff_bytes: 0.0,
                transit_j: 0.75,
                transit_bound: 3,
                transit_bound_frac: 3.0 / 11.0,
                compression: None,
                compress_at: None,
                compression_ratio: None,
                handoff_bytes_saved: None,
            }
        );
        // Per link: busy / (2 channels x 20 s).
        let utils: Vec<(String, f64, u64)> = s
            .links
            .iter()
            .map(|l| (l.name.clone(), l.utilisation, l.transfers))
            .collect();
        assert_eq!(
            utils,
            vec![
                ("kv-link-p0-d0".to_string(), 1.0, 4),
                ("kv-link-p1-d0".to_string(), 0.9, 3),
                ("kv-link-p2-d0".to_string(), 0.9, 3),
                ("kv-link-p3-d0".to_string(), 0.8, 1),
            ]
        );
        assert_eq!((s.links[3].busy_s, s.links[3].bytes), (32.0, 1e9));

        let pd = &r.cfg.pools[0];
        let dd = &r.cfg.pools[1];
        let n = pd.devices as f64;
        assert_eq!(n, 4.0);
        let p0 = &s.instances[0];
        assert_eq!(p0.name, "prefill-0");
        assert_eq!(p0.role, Role::Prefill);
        assert_eq!(p0.device, pd.device.key);
        assert_eq!(p0.device_name, pd.device.name);
        assert_eq!(p0.devices, 4);
        assert_eq!(p0.utilisation, 0.25);
        assert_eq!(p0.mfu, 4e15 / (h * pd.device.peak_flops * n));
        assert_eq!(p0.mbu, 2e12 / (h * pd.device.mem_bw * n));
        assert_eq!(p0.mean_batch, 2.5);
        assert_eq!(p0.steps, 10);
        assert_eq!(p0.busy_s, 5.0);
        assert_eq!(p0.compute_bound_frac, 0.8);
        assert_eq!(p0.power_bound_frac, 0.2);
        assert_eq!(p0.avg_w, (ip * h + 100.0 + 50.0) / h);
        assert_eq!(p0.peak_step_w, 700.0);
        assert_eq!((p0.compute_j, p0.memory_j), (100.0, 50.0));
        assert_eq!(p0.kv_capacity_tokens, pd.kv_capacity_tokens);
        let p2 = &s.instances[2];
        assert_eq!((p2.mean_batch, p2.compute_bound_frac), (1.0, 1.0));
        assert_eq!(p2.power_bound_frac, 0.25);
        // An idle instance: no steps, no busy time -> fractions and batch are 0, not NaN.
        let p3 = &s.instances[3];
        assert_eq!(
            (
                p3.utilisation,
                p3.mean_batch,
                p3.compute_bound_frac,
                p3.power_bound_frac
            ),
            (0.0, 0.0, 0.0, 0.0)
        );
        assert_eq!(p3.avg_w, ip * h / h);
        let d0 = &s.instances[4];
        assert_eq!(d0.role, Role::Decode);
        assert_eq!(d0.utilisation, 0.95);
        assert_eq!(d0.mean_batch, 2.5);
        assert_eq!(d0.power_bound_frac, 0.5);
        assert_eq!(
            d0.mfu,
            1e15 / (h * dd.device.peak_flops * dd.devices as f64)
        );
        assert_eq!(d0.mbu, 5e13 / (h * dd.device.mem_bw * dd.devices as f64));
        assert_eq!(d0.avg_w, (id * h + 40.0 + 400.0) / h);
        assert_eq!(d0.kv_capacity_tokens, dd.kv_capacity_tokens);
    }

    /// Nothing finished: one request still in the system, `rejected` rejections, link energy
    /// `link_j` with no transfers, no instances.
    fn empty_run(rejected: u64, link_j: f64) -> Summary {
        let mut r = run(
            cfg(&[]),
            vec![req(0.5, 1.0, 2.0, NAN, NAN, NAN, NAN, 5)],
            4.0,
        );
        r.rejected = rejected;
        r.link.energy_j = link_j;
        r.link.wait_s = 0.5;
        assert!(r.slo_attainment().is_nan());
        r.summary()
    }

    #[test]
    fn nothing_finished() {
        let s = empty_run(0, 0.0);
        assert_eq!(s.requests.completed, 0);
        assert_eq!(s.requests.measured, 0);
        assert!(s.slo_attainment.is_nan());
        assert!(s.slo_attainment_offered.is_nan());
        assert!(s.goodput_rps.is_nan());
        assert!(s.ttft_s.mean.is_nan() && s.e2e_s.p99.is_nan());
        assert!(s.stage_breakdown_s.as_array().iter().all(|v| v.is_nan()));
        // Zero energy, zero tokens, zero met.
        assert_eq!(s.energy.total_j, 0.0);
        assert!(s.j_per_token.is_nan());
        assert!(s.tokens_per_j.is_nan());
        assert_eq!(s.j_per_slo_met_request, f64::INFINITY);
        assert!(s.littles_law.lambda_w.is_nan());
        // No transfers: the transit-bound share is 0 and the mean wait divides by 1.
        assert_eq!(s.link.transit_bound_frac, 0.0);
        assert_eq!(s.link.mean_wait_s, 0.5);
        assert_eq!(s.link_j_per_request, 0.0);
        // No stage: the hot-spot is the busiest resource overall, here the only one.
        assert_eq!(s.hotspot.stage, None);
        assert_eq!(s.hotspot.resource, "kv-link");

        // With rejections, each counts as a miss: 0 / 2.
        let s = empty_run(2, 3.0);
        assert_eq!(s.slo_attainment_offered, 0.0);
        assert!(s.slo_attainment.is_nan());
        // Energy but no tokens and no met request.
        assert_eq!(s.energy.total_j, 3.0);
        assert!(s.j_per_token.is_nan());
        assert_eq!(s.tokens_per_j, 0.0);
        assert_eq!(s.j_per_slo_met_request, f64::INFINITY);
        assert_eq!(s.link_j_per_request, 3.0);
    }

    /// Two identical requests with the given stamps arriving together (so the goodput window is
    /// 0 and undefined); warm-up cut floor(2 x 0.1) = 0.
    fn twin_run(
        flags: &[&str],
        r0: Req,
        util: &[(&str, Role, usize, f64)],
        link_busy: f64,
    ) -> RunResult {
        let mut r = run(cfg(flags), vec![r0, r0], 10.0);
        r.instances = util
            .iter()
            .map(|&(n, role, pool, u)| inst(n, role, pool, busy(u * 10.0)))
            .collect();
        r.link.busy_s = link_busy;
        r
    }

    #[test]
    fn hotspot_kv_link_tie_goes_to_the_first_stage() {
        // Stages [0, 0.25, 1, 1, 0.25, 0.5]: KV wait and transfer tie; the first wins.
        let r0 = req(0.0, 0.0, 0.25, 1.25, 2.25, 2.5, 3.0, 1);
        let r = twin_run(
            &[],
            r0,
            &[
                ("prefill-0", Role::Prefill, 0, 0.8),
                ("decode-0", Role::Decode, 1, 0.5),
            ],
            2.5,
        );
        let s = r.summary();
        assert_eq!(
            s.stage_breakdown_s.as_array(),
            [0.0, 0.25, 1.0, 1.0, 0.25, 0.5]
        );
        assert_eq!(s.hotspot.stage.as_deref(), Some("kv_wait"));
        // Owner kv-link: 2.5 / (1 channel x 1 link x 10 s).
        assert_eq!(s.hotspot.resource, "kv-link");
        assert_eq!(s.hotspot.resource_util, 0.25);
        assert!(s.hotspot.busy_over_90pct.is_empty());
        // Both met (output 1: TTFT only), but they arrived together: no goodput.
        assert_eq!(s.slo_met, 2);
        assert!(s.goodput_rps.is_nan());
    }

    #[test]
    fn hotspot_decode_queue() {
        // Stages [0, 0.25, 0, 0.25, 2, 0.5]: decode queue is the largest -> decode-0, although
        // prefill-0 is busier.
        let r0 = req(0.0, 0.0, 0.25, 0.25, 0.5, 2.5, 3.0, 1);
        let r = twin_run(
            &[],
            r0,
            &[
                ("prefill-0", Role::Prefill, 0, 0.8),
                ("decode-0", Role::Decode, 1, 0.5),
            ],
            0.0,
        );
        let s = r.summary();
        assert_eq!(
            s.stage_breakdown_s.as_array(),
            [0.0, 0.25, 0.0, 0.25, 2.0, 0.5]
        );
        assert_eq!(s.hotspot.stage.as_deref(), Some("decode_queue"));
        assert_eq!(s.hotspot.resource, "decode-0");
        assert_eq!(s.hotspot.resource_util, 0.5);
    }

    #[test]
    fn hotspot_colocated_owner() {
        // Colocated: prefill queue is the largest stage; its owner becomes "colocated", and the
        // busier colocated instance wins even though the (synthetic) link is busier still.
        let r0 = req(0.0, 1.0, 1.5, NAN, NAN, 1.5, 2.0, 1);
        let r = twin_run(
            &["--mode", "colocated"],
            r0,
            &[
                ("colocated-0", Role::Colocated, 0, 0.25),
                ("colocated-1", Role::Colocated, 0, 0.5),
            ],
            7.5,
        );
        let s = r.summary();
        assert_eq!(
            s.stage_breakdown_s.as_array(),
            [1.0, 0.5, 0.0, 0.0, 0.0, 0.5]
        );
        assert_eq!(s.hotspot.stage.as_deref(), Some("prefill_queue"));
        assert_eq!(s.hotspot.resource, "colocated-1");
        assert_eq!(s.hotspot.resource_util, 0.5);
        assert_eq!(s.mode, Mode::Colocated);
        // No hand-offs.
        assert!(s.handoff_s.p50.is_nan());
    }

    #[test]
    fn stages_of_one_request() {
        // Plain hand-off: queue 0.25, prefill 0.5, KV wait 0.25, transfer 0.5, decode queue 0.5,
        // decode 2.
        let r = req(0.0, 0.25, 0.75, 1.0, 1.5, 2.0, 4.0, 9);
        assert_eq!(r.stages(), [0.25, 0.5, 0.25, 0.5, 0.5, 2.0]);
        // Layer-wise: the link started (0.5) before the first token (0.75): clamped to it, so
        // KV wait 0 and transfer = kv_ready - ft = 0.75.
        let r = req(0.0, 0.25, 0.75, 0.5, 1.5, 2.0, 4.0, 9);
        assert_eq!(r.stages(), [0.25, 0.5, 0.0, 0.75, 0.5, 2.0]);
        // Decode memory reserved at 1.25 (after ft 0.75): KV wait = 1.5 - 1.25 = 0.25; the 0.5
        // before the reservation goes to the decode queue: (2.25 - 2.0) + 0.5.
        let mut r = req(0.0, 0.25, 0.75, 1.5, 2.0, 2.25, 3.0, 9);
        r.kv_mem = 1.25;
        assert_eq!(r.stages(), [0.25, 0.5, 0.25, 0.5, 0.75, 0.75]);
        // Reserved before the first token (0.5 < 0.75): clamped to ft, nothing is moved.
        let mut r = req(0.0, 0.25, 0.75, 1.0, 1.5, 2.0, 4.0, 9);
        r.kv_mem = 0.5;
        assert_eq!(r.stages(), [0.25, 0.5, 0.25, 0.5, 0.5, 2.0]);
        // Colocated (no hand-off): decode queue from the first token.
        let r = req(1.0, 1.5, 2.0, NAN, NAN, 2.5, 3.5, 9);
        assert_eq!(r.stages(), [0.5, 0.5, 0.0, 0.0, 0.5, 1.0]);
        // Never reached decode: the decode stages stay 0.
        let r = req(1.0, 1.5, 2.0, NAN, NAN, NAN, 2.0, 1);
        assert_eq!(r.stages(), [0.5, 0.5, 0.0, 0.0, 0.0, 0.0]);
        // The array round trip keeps the order.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(Stages::from_array(a).as_array(), a);
        assert_eq!(Stages::from_array(a).decode_queue, 5.0);
    }

    #[test]
    fn itl_from_step_ends() {
        // One decode instance, step ends 1, 1.25, 1.75, 2.5, 3.5 (steps 1..4 last 0.25, 0.5,
        // 0.75, 1). Request A: output 4, admitted at step 0 + 1, first token 0.5: ITLs
        // e[1] - 0.5 = 0.75, then steps 2 and 3: 0.5, 0.75. B: output 2, step 0, ft 0.25:
        // 1 - 0.25 = 0.75 only. C: output 5, step 0, ft 0: 1.0, then steps 1..3: 0.25, 0.5,
        // 0.75. D (output 1), E (no decode instance) and F (never admitted) have none.
        let mut a = req(0.0, 0.0, 0.5, NAN, NAN, 1.0, 2.0, 4);
        a.adm = 1;
        a.dinst = 0;
        let mut b = req(0.0, 0.0, 0.25, NAN, NAN, 0.5, 1.0, 2);
        b.dinst = 0;
        let mut c = req(0.0, 0.0, 0.0, NAN, NAN, 0.5, 2.0, 5);
        c.dinst = 0;
        let mut d = req(0.0, 0.0, 0.0, NAN, NAN, 0.5, 1.0, 1);
        d.dinst = 0;
        let e = req(0.0, 0.0, 0.0, NAN, NAN, 0.5, 1.5, 3);
        let mut f = req(0.0, 0.0, 0.0, NAN, NAN, NAN, 1.5, 3);
        f.dinst = 0;
        let mut r = run(cfg(&[]), vec![a, b, c, d, e, f], 4.0);
        r.step_ends = vec![vec![1.0, 1.25, 1.75, 2.5, 3.5]];
        // ITLs sorted: 0.25, 0.5 x 2, 0.75 x 4, 1.0; sum 5.25; n - 1 = 7: k = 3.5, 6.3, 6.93.
        assert_eq!(
            r.summary().itl_s,
            dist_of(
                5.25 / 8.0,
                0.75,
                0.75 + (1.0 - 0.75) * (6.3 - 6.0),
                0.75 + (1.0 - 0.75) * (6.93 - 6.0),
                1.0
            )
        );
    }

    #[test]
    fn decode_memory_waits_transit_and_clipping() {
        // --reserve-kv-on transfer: waits kv_mem - kv_req of every request that reserved (the
        // unfinished one too): 0.5, 0, 0.25; total 0.75; n - 1 = 2: k = 1, 1.8, 1.98.
        let c = cfg(&["--reserve-kv-on", "transfer", "--kv-compress", "fp8"]);
        let mut r0 = staged(0.0, 0.25, 1.0, 7);
        r0.kv_req = 1.0;
        r0.kv_mem = 1.5;
        let mut r1 = staged(1.0, 0.25, 1.0, 7);
        r1.kv_req = 2.0;
        r1.kv_mem = 2.0;
        let r2 = staged(2.0, 0.25, 1.0, 7);
        let mut r3 = req(3.0, 3.25, 3.75, NAN, NAN, NAN, NAN, 7);
        r3.kv_req = 3.0;
        r3.kv_mem = 3.25;
        let mut r = run(c, vec![r0, r1, r2, r3], 8.0);
        r.link.energy_j = 2.0;
        r.link.transit_j = 0.5;
        r.link.transfers = 2;
        r.link.transit_bound = 1;
        r.clipped_prompts = 2;
        let s = r.summary();
        let w = s.decode_mem_wait_s.unwrap();
        assert_eq!(w.handoffs, 3);
        assert_eq!(w.total_s, 0.75);
        assert_eq!(
            w.per_handoff,
            dist_of(
                0.25,
                0.25,
                0.25 + 0.25 * (1.8 - 1.0),
                0.25 + 0.25 * (1.98 - 1.0),
                0.5
            )
        );
        // With a compression stage its energy is part of the total: 0 static (no instances) +
        // 0 + 0 + 2 link + 0.5 transit.
        assert_eq!(s.energy.total_j, 2.5);
        assert_eq!(s.energy.transit_frac, Some(0.5 / 2.5));
        assert_eq!(s.link_j_per_request, 2.5 / 2.0);
        assert_eq!(s.link.transit_bound_frac, 0.5);
        assert_eq!(s.link.compression.as_deref(), Some("fp8"));
        assert_eq!(s.link.compression_ratio, Some(2.0));
        // Clipped prompts: one warning, and the workload summary says how many.
        assert_eq!(s.warnings.len(), 1);
        assert_eq!(s.workload.clipped_prompts, 2);
    }

    #[test]
    fn parallel_and_formats_blocks_and_scale_up_energy() {
        // Per-pool layouts (prefill TP2 x PP2 with 3 micro-batches, decode TP4 on NVLink 3 of
        // A100s), FP8 weights and KV; hand-built step totals: horizon 10 s.
        let c = cfg(&[
            "--device",
            "a100",
            "--prefill-tp",
            "2",
            "--prefill-pp",
            "2",
            "--microbatches",
            "3",
            "--decode-tp",
            "4",
            "--weight-format",
            "fp8",
            "--kv-format",
            "fp8",
        ]);
        let reqs = vec![staged(0.0, 0.25, 1.0, 7)];
        let mut r = run(c, reqs, 10.0);
        let st = |busy_s, comm_s, comm_j| InstanceStats {
            busy_s,
            comm_s,
            comm_j,
            ..InstanceStats::default()
        };
        r.instances = vec![
            inst("prefill-0", Role::Prefill, 0, st(4.0, 1.0, 3.0)),
            inst("decode-0", Role::Decode, 1, st(8.0, 0.5, 1.0)),
            inst("decode-1", Role::Decode, 1, st(0.0, 0.0, 0.25)),
        ];
        let s = r.summary();
        let p = s.parallel.clone().expect("a parallel block");
        assert_eq!(p.len(), 2);
        let (a, b) = (&p[0], &p[1]);
        assert_eq!(
            (a.role, a.tp, a.pp, a.ep, a.microbatches),
            (Role::Prefill, 2, 2, 1, 3)
        );
        assert_eq!(
            (b.role, b.tp, b.pp, b.microbatches),
            (Role::Decode, 4, 1, 3)
        );
        assert_eq!(a.link, "NVLink 3 (one direction)");
        assert_eq!(
            (a.busy_s, a.comm_s, a.comm_j, a.comm_frac),
            (4.0, 1.0, 3.0, 0.25)
        );
        // The decode pool's sums over its two instances: 8 + 0, 0.5 + 0, 1 + 0.25.
        assert_eq!(
            (b.busy_s, b.comm_s, b.comm_j, b.comm_frac),
            (8.0, 0.5, 1.25, 0.0625)
        );
        // Scale-up energy: 3 + 1 + 0.25 J, added last to the total, with its share.
        let e = s.energy;
        assert_eq!(e.scale_up_j, Some(4.25));
        let before = e.static_j + e.compute_j + e.memory_j + e.link_j;
        assert_eq!(e.total_j, before + 4.25);
        assert_eq!(e.scale_up_frac, Some(4.25 / e.total_j));
        let f = s.formats.expect("a formats block");
        assert_eq!(
            (f.weights.as_str(), f.kv.as_str(), f.compute.as_str()),
            ("fp8", "fp8", "bf16")
        );
        assert_eq!((f.weight_bytes, f.kv_bytes), (1.0, 1.0));
        // An idle role's comm_frac is 0, not NaN; without layouts or formats, no blocks.
        let mut q = run(cfg(&["--tp", "4"]), vec![], 1.0);
        q.instances = vec![
            inst("prefill-0", Role::Prefill, 0, st(0.0, 0.0, 0.0)),
            inst("decode-0", Role::Decode, 1, st(0.0, 0.0, 0.0)),
        ];
        let sq = q.summary();
        assert!(sq.parallel.unwrap().iter().all(|x| x.comm_frac == 0.0));
        assert!(sq.formats.is_none());
        let plain = run(cfg(&[]), vec![], 1.0).summary();
        assert!(plain.parallel.is_none() && plain.formats.is_none());
        assert_eq!(plain.energy.scale_up_j, None);
    }

    #[test]
    fn optical_engines_energy_block_and_ppa() {
        // An optical-fft prefill pool of 2-device instances and an H100 decode pool, a
        // compression stage in transit, --ppa; horizon 8 s; two finished requests of 7 tokens.
        let c = cfg(&[
            "--model",
            "llama3-8b-hyena",
            "--prefill-device",
            "optical-fft",
            "--devices-per-instance",
            "2",
            "--kv-compress",
            "fp8",
            "--ppa",
        ]);
        let (ip, id) = (c.pools[0].cost.idle_w(), c.pools[1].cost.idle_w());
        let reqs = vec![staged(0.0, 0.25, 1.0, 7), staged(1.0, 0.25, 1.0, 7)];
        let mut r = run(c, reqs, 8.0);
        r.link.energy_j = 2.0;
        r.link.transit_j = 0.5;
        r.link.transfers = 2;
        r.instances = vec![
            inst(
                "prefill-0",
                Role::Prefill,
                0,
                InstanceStats {
                    busy_s: 4.0,
                    compute_j: 10.0,
                    memory_j: 5.0,
                    optical_bound_s: 1.0,
                    optical_flops: 6.0,
                    optical_j: 2.5,
                    ..InstanceStats::default()
                },
            ),
            inst(
                "decode-0",
                Role::Decode,
                1,
                InstanceStats {
                    busy_s: 2.0,
                    compute_j: 1.0,
                    memory_j: 0.5,
                    ..InstanceStats::default()
                },
            ),
        ];
        let s = r.summary();
        let h = 8.0;
        // The engine's static power: laser 10 W + tuning 10 W per device, 2 devices: 40 W.
        let os = 40.0 * h;
        let static_j = 0.0 + ip * h + id * h;
        let (compute_j, memory_j) = (0.0 + 10.0 + 1.0, 0.0 + 5.0 + 0.5);
        // levers-cost.md §10.3 then §5.7: optical static, conversions, then transit.
        let total = (((static_j + compute_j + memory_j + 2.0) + (0.0 + os + 0.0))
            + (0.0 + 2.5 + 0.0))
            + 0.5;
        assert_eq!(s.energy.total_j, total);
        assert_eq!(s.energy.optical_static_j, Some(os));
        assert_eq!(s.energy.optical_static_frac, Some(os / total));
        assert_eq!(s.energy.optical_conversions_j, Some(2.5));
        assert_eq!(s.energy.optical_conversions_frac, Some(2.5 / total));
        assert_eq!(s.energy.transit_frac, Some(0.5 / total));
        let p0 = &s.instances[0];
        assert_eq!(p0.avg_w, ((((ip * h + 10.0) + 5.0) + os) + 2.5) / h);
        assert_eq!(s.instances[1].avg_w, (((id * h + 1.0) + 0.5) + 0.0) / h);
        let o = s.optical.as_ref().unwrap();
        assert_eq!(
            o,
            &vec![
                OpticalSummary {
                    name: "prefill-0".into(),
                    optical_bound_frac: 1.0 / 4.0,
                    optical_flops: 6.0,
                    conversion_j: 2.5,
                    static_j: os,
                },
                OpticalSummary {
                    name: "decode-0".into(),
                    optical_bound_frac: 0.0,
                    optical_flops: 0.0,
                    conversion_j: 0.0,
                    static_j: 0.0,
                },
            ]
        );
        // --ppa: optical-fft 817 + 100 mm², $357.23423079414755 per device; H100 814 mm²,
        // $339.09863688464617 (levers-cost.md §11); 14 tokens over 8 s.
        let tok_s = 14.0 / h;
        let usd = (0.0 + 2.0 * 357.23423079414755) + 2.0 * 339.09863688464617;
        let ppa = s.ppa.as_ref().unwrap();
        assert_eq!(ppa.total_mm2, Some((0.0 + 2.0 * 917.0) + 2.0 * 814.0));
        assert_eq!(ppa.total_usd, Some(usd));
        assert_eq!(ppa.perf_per_w, 14.0 / total);
        assert_eq!(ppa.perf_per_mm2, Some(tok_s / 3462.0));
        assert_eq!(ppa.perf_per_kusd, Some((1e3 * tok_s) / usd));
        let pools = &ppa.pools.0;
        assert_eq!(pools[0].0, "prefill");
        assert_eq!(pools[0].1.device, "Optical-FFT + H100-class");
        assert_eq!(pools[0].1.instances, 1);
        assert_eq!(pools[0].1.devices_per_instance, 2);
        assert_eq!(pools[0].1.mm2_per_instance, Some(2.0 * 917.0));
        assert_eq!(pools[1].0, "decode");
        assert_eq!(pools[1].1.device, "H100-SXM");
        assert_eq!(pools[1].1.usd_per_instance, Some(2.0 * 339.09863688464617));
    }

    #[test]
    fn an_idle_engine_instance_is_not_optical_bound() {
        // busy 0: the optical-bound share is 0.0, not NaN.
        let c = cfg(&[
            "--model",
            "llama3-8b-hyena",
            "--device",
            "optical-fft",
            "--mode",
            "colocated",
        ]);
        let mut r = run(c, vec![], 2.0);
        r.instances = vec![inst(
            "colocated-0",
            Role::Colocated,
            0,
            InstanceStats::default(),
        )];
        let s = r.summary();
        assert_eq!(s.optical.as_ref().unwrap()[0].optical_bound_frac, 0.0);
        // 4 devices (the default) x 20 W x 2 s.
        assert_eq!(s.optical.as_ref().unwrap()[0].static_j, 160.0);
        assert!(s.ppa.is_none());
    }

    #[test]
    fn scheduled_itls_and_normalised_latency_follow_the_request_records() {
        // A chunked-prefill run (the scheduled instances): the summary's ITL distribution comes
        // from the step-end difference arrays and the normalised latency from the steady set;
        // both are recomputed here from the per-request records, a different path.
        let c = cfg(&[
            "--model",
            "llama3-8b",
            "--devices-per-instance",
            "1",
            "--rate",
            "12",
            "--requests",
            "120",
            "--batch-policy",
            "chunked",
        ]);
        let run = crate::simulate_config(&c).unwrap();
        let s = run.summary();
        // The steady set: finished requests by (arrival, rid), the first 10% dropped.
        let mut done: Vec<_> = run.requests().filter(|r| r.finish_s.is_some()).collect();
        done.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.rid.cmp(&b.rid)));
        let steady = &done[done.len() / 10..];
        let norm: Vec<f64> = steady
            .iter()
            .map(|r| (r.finish_s.unwrap() - r.arrival_s) / r.output_len as f64)
            .collect();
        let want = norm.iter().sum::<f64>() / norm.len() as f64;
        let got = s
            .scheduler
            .as_ref()
            .unwrap()
            .norm_latency_s_per_token
            .unwrap();
        assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
        let mut itls: Vec<f64> = steady.iter().flat_map(|r| run.itls(r.rid)).collect();
        assert!(itls.len() > 1000, "{} ITLs", itls.len());
        itls.sort_by(f64::total_cmp);
        let mean = itls.iter().sum::<f64>() / itls.len() as f64;
        assert!((s.itl_s.mean - mean).abs() <= 1e-12 * mean);
        assert_eq!(s.itl_s.max, *itls.last().unwrap());
        // p50 by the spec's interpolation (simulator.md §5.2) over the sorted list.
        let k = ((itls.len() - 1) * 50) as f64 / 100.0;
        let (lo, hi) = (k.floor() as usize, k.ceil() as usize);
        let p50 = itls[lo] + (itls[hi] - itls[lo]) * (k - lo as f64);
        assert_eq!(s.itl_s.p50, p50);
    }

    #[test]
    fn calibration_of_names_each_fitted_pool_in_order() {
        let cal = disagg_model::Calibration {
            measurements: vec!["m.csv".into()],
            fit: "f".into(),
            groups: vec!["g".into()],
            in_sample_prefill_mape: 0.1,
            in_sample_decode_mape: 0.2,
            cv_prefill_mape: 0.3,
            cv_decode_mape: 0.4,
            tool: "t".into(),
        };
        let mut c = cfg(&["--prefill", "2", "--decode", "1"]);
        assert_eq!(calibration_of(&c), None);
        let roles: Vec<Role> = c.pools.iter().map(|p| p.role).collect();
        assert_eq!(roles, [Role::Prefill, Role::Decode]);
        c.pools[1].device.calibration = Some(cal.clone());
        c.pools[1].device.key = "d-fit".into();
        assert_eq!(
            calibration_of(&c),
            Some(vec![CalibrationSummary {
                pool: "decode".into(),
                device: "d-fit".into(),
                calibration: cal.clone(),
            }])
        );
        c.pools[0].device.calibration = Some(cal.clone());
        let got = calibration_of(&c).unwrap();
        let names: Vec<(&str, &str)> = got
            .iter()
            .map(|x| (x.pool.as_str(), x.device.as_str()))
            .collect();
        assert_eq!(names, [("prefill", "h100"), ("decode", "d-fit")]);
        // A pool without instances runs nothing, so it is not named.
        c.pools[0].instances = 0;
        assert_eq!(calibration_of(&c).unwrap().len(), 1);
        // The JSON flattens the provenance beside the pool and device.
        let v = serde_json::to_value(&got[0]).unwrap();
        assert_eq!(v["pool"], "prefill");
        assert_eq!(v["cv_decode_mape"], 0.4);
        assert_eq!(v["tool"], "t");
        // Colocated: the one pool.
        let mut c = cfg(&["--mode", "colocated"]);
        c.pools[0].device.calibration = Some(cal);
        assert_eq!(calibration_of(&c).unwrap()[0].pool, "colocated");
    }
}
