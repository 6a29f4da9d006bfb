//! From a finished run to numbers (simulator.md §5, including the `results.py` extras of §5.8 and
//! the analytic bounds of §5.9): one typed, serialisable [`Summary`].
//!
//! Float expressions keep the reference's operation order; means are exact `fsum`s; percentiles use
//! the §5.2 formula; NaN (an empty sample, or an undefined ratio) serialises as `null`.

use serde::Serialize;

use crate::pymath::Fsum;
use crate::scenario::{FirstToken, HandoffOptions, Mode, Role, SimConfig};
use crate::search::{analytic_capacity, Analytic};
use crate::serving::{Req, RunResult};
use crate::stats::{dist, p50_p99, weighted, Dist, P50P99};

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
}

impl Req {
    #[inline]
    fn stages(&self) -> [f64; 6] {
        let ft = self.first_token;
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

    // Energy (§5.7).
    let mut static_j = 0.0;
    let mut compute_j = 0.0;
    let mut memory_j = 0.0;
    let mut instances = Vec::with_capacity(res.instances.len());
    for i in &res.instances {
        let pool = &cfg.pools[i.pool];
        let idle = pool.cost.idle_w();
        let s_j = idle * h;
        let st = &i.stats;
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
            avg_w: (s_j + st.compute_j + st.memory_j) / h,
            peak_step_w: st.peak_power_w,
            compute_j: st.compute_j,
            memory_j: st.memory_j,
            kv_capacity_tokens: pool.kv_capacity_tokens,
        });
    }
    let link_j = res.link.energy_j;
    let mut total = static_j + compute_j + memory_j + link_j;
    let transit = cfg.kv_transit.is_some();
    if transit {
        total += res.link.transit_j;
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
    };

    let handoffs: Vec<f64> = reqs
        .iter()
        .filter(|r| !r.kv_ready.is_nan())
        .map(|r| r.kv_ready - r.first_token)
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
        throughput_tok_s: out_tokens as f64 / h,
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
        tokens_per_j: if total != 0.0 {
            out_tokens as f64 / total
        } else {
            f64::NAN
        },
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
    }
}

/// The ITL distribution of the measured requests, from the step-end arrays: every request shares
/// its step's ITL `e[j] - e[j-1]` except its first, `e[adm] - first_token`.
fn itl_dist(res: &RunResult, steady: &[u32]) -> Dist {
    let reqs = &res.reqs;
    // Difference arrays of "measured requests taking part in step j" (j >= adm + 1).
    let mut diff: Vec<Vec<i32>> = res
        .step_ends
        .iter()
        .map(|e| vec![0i32; e.len() + 1])
        .collect();
    let mut firsts: Vec<f64> = Vec::with_capacity(steady.len());
    for &i in steady {
        let r = &reqs[i as usize];
        if r.output < 2 || r.decode_start.is_nan() || r.dinst == u32::MAX {
            continue;
        }
        let e = &res.step_ends[r.dinst as usize];
        let adm = r.adm as usize;
        let fin = adm + r.output as usize - 2;
        firsts.push(e[adm] - r.emitted(res.cfg.handoff.first_token));
        if fin > adm {
            let d = &mut diff[r.dinst as usize];
            d[adm + 1] += 1;
            d[fin + 1] -= 1;
        }
    }
    // Turn the difference arrays into counts in place.
    for d in diff.iter_mut() {
        let mut c = 0i32;
        for x in d.iter_mut() {
            c += *x;
            *x = c;
        }
    }
    let step_ends = &res.step_ends;
    weighted(|f| {
        for &v in &firsts {
            f(v, 1);
        }
        for (e, cnt) in step_ends.iter().zip(diff.iter()) {
            for j in 1..e.len() {
                let c = cnt[j];
                if c > 0 {
                    f(e[j] - e[j - 1], c as u64);
                }
            }
        }
    })
}
