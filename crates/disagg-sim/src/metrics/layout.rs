//! The hardware blocks: the pools, each role's parallel layout, the formats, and PPA.

use serde::Serialize;

use crate::engine::RunResult;
use crate::scenario::{Role, SimConfig};

/// One pool role's parallel layout and what its scale-up traffic cost (`docs/cost-model.md#parallelism`).
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

/// The formats of a quantised run (`docs/cost-model.md#quantisation` item 6).
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

/// Pools of a heterogeneous run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pools {
    /// `"<n>x <device name>"`.
    pub prefill: String,
    /// `"<n>x <device name>"`.
    pub decode: String,
}

/// The `ppa` block (`docs/levers.md#ppa`): one role per pool in order (prefill, decode; or
/// colocated), each with its device and devices per instance.
pub(super) fn ppa_block(
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

/// The `parallel` block (`docs/cost-model.md#parallelism`): one entry per pool with a layout, in instance
/// order, its sums looping from 0.0 over the role's instances in order.
pub(super) fn parallel_summary(res: &RunResult) -> Option<Vec<ParallelSummary>> {
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

/// The `formats` block (`docs/cost-model.md#quantisation` item 6), when any format is not BF16.
pub(super) fn formats_summary(cfg: &SimConfig) -> Option<FormatsSummary> {
    let f = cfg.scenario.formats();
    f.is_quantised().then_some(FormatsSummary {
        weights: f.weight,
        kv: f.kv,
        compute: f.compute,
        weight_bytes: cfg.model.weight_bytes,
        kv_bytes: cfg.model.kv_bytes,
    })
}

/// The pools, when a per-pool device or device count was given.
pub(super) fn pools(cfg: &SimConfig) -> Option<Pools> {
    cfg.heterogeneous.then(|| Pools {
        prefill: cfg.pool_labels[0].clone(),
        decode: cfg.pool_labels[1].clone(),
    })
}
