//! [`SimConfig`]: a validated, resolved configuration, what the engine runs, and its pools.

use disagg_model::{
    CostModel, Device, Error, KvTransit, Link, ModelSpec, PortLoads, SendMode, Transfer,
};

use crate::levers::Levers;
use crate::pyrand::GenRequest;
use crate::workload::{Source, Workload};

use super::{
    FirstToken, HandoffOptions, LinkTopology, Mode, Role, Scenario, WorkloadSpec, MAX_LINKS,
};

/// One pool of identical instances, resolved.
#[derive(Clone, Debug)]
pub struct Pool {
    /// Role of its instances.
    pub role: Role,
    /// Number of instances.
    pub instances: usize,
    /// The accelerator.
    pub device: Device,
    /// Devices per instance.
    pub devices: u32,
    /// Per-device power cap, W.
    pub power_cap_w: Option<f64>,
    /// The pool's cost model.
    pub cost: CostModel,
    /// KV capacity of one instance, tokens.
    pub kv_capacity_tokens: u64,
    /// Speculative decoding: the draft's cost model on this pool's devices (no per-step
    /// overhead) and the KV bytes per token it stores (`docs/levers.md#speculative`).
    pub draft: Option<(CostModel, f64)>,
}

/// A validated, resolved configuration: what the engine runs.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Serving mode.
    pub mode: Mode,
    /// The model (with the prefill LM-head option applied).
    pub model: ModelSpec,
    /// The KV link, with its channel count.
    pub link: Link,
    /// KV hand-off compression, if any.
    pub kv_transit: Option<KvTransit>,
    /// Pools in instance order: `[prefill, decode]` (disagg) or `[colocated]`.
    pub pools: Vec<Pool>,
    /// Token budget of one prefill step (8192).
    pub max_prefill_tokens: u64,
    /// Most sequences in a decode batch (256).
    pub max_decode_batch: usize,
    /// Fixed per-step overhead, s (0.5 ms): informational; every step's overhead comes from its
    /// pool's cost model (`CostModel::step_time`: this value, or a fitted device's own).
    pub step_overhead_s: f64,
    /// Fraction of the earliest requests excluded from latency statistics (0.1).
    pub warmup_frac: f64,
    /// Sampling period of the time series, s (0.05).
    pub sample_dt_s: f64,
    /// TTFT SLO, s.
    pub ttft_slo_s: f64,
    /// TPOT SLO, s per token.
    pub tpot_slo_s: f64,
    /// Use the macro-step decode path (disaggregated decode instances only).
    pub fast_forward: bool,
    /// DVFS on memory-bound steps (every pool).
    pub dvfs: bool,
    /// A per-pool device or device count was given.
    pub heterogeneous: bool,
    /// `"<n>x <device name>"` of the prefill and decode pools as configured (also in colocated
    /// mode, where they are not used), for reports of heterogeneous runs.
    pub pool_labels: [String; 2],
    /// Global per-device power cap, W.
    pub power_cap_w: Option<f64>,
    /// The workload's rate, count, lengths and seed (for a trace: its observed rate and mean
    /// lengths, used by the analytic bounds).
    pub workload: WorkloadSpec,
    /// Where the requests come from.
    pub source: Source,
    /// The cost model of `device` x `devices_per_instance` with the global cap and no DVFS, used by the
    /// analytic capacity bounds (`docs/serving-model.md#capacity`); `None` if the model does not fit there.
    pub base_cost: Option<CostModel>,
    /// The hand-off options (layer-wise streaming, link sharing and topology, decode-side
    /// reservation, TTFT convention).
    pub handoff: HandoffOptions,
    /// The scheduling levers, present exactly when they switch the scheduled instances on
    /// (`docs/levers.md#scheduled-instances`); `None` runs the plain instances.
    pub levers: Option<Levers>,
    /// The scenario this was built from.
    pub scenario: Scenario,
    /// `--handoff-ranks`: the NICs of the rank-aware plan between the pools' layouts; `None`:
    /// each hand-off is one transfer (the reference).
    pub rank_ports: Option<PortLoads>,
}

impl SimConfig {
    /// A hand-off's transfer `x` of `prompt_tokens` tokens as the link sees it: unchanged, or
    /// with `--handoff-ranks` its stream time the busiest NIC's wire time (`fixed + stream`
    /// its time; bytes and energy unchanged).
    #[inline]
    pub fn handoff_transfer(&self, x: Transfer, prompt_tokens: u64) -> Transfer {
        match &self.rank_ports {
            None => x,
            Some(ports) => {
                let stream_s = ports.stream_s(&self.link, prompt_tokens);
                Transfer {
                    stream_s,
                    time_s: x.fixed_s + stream_s,
                    ..x
                }
            }
        }
    }

    /// The prefill pool (disagg).
    pub fn prefill_pool(&self) -> Option<&Pool> {
        self.pools.iter().find(|p| p.role == Role::Prefill)
    }
    /// The decode pool (disagg).
    pub fn decode_pool(&self) -> Option<&Pool> {
        self.pools.iter().find(|p| p.role == Role::Decode)
    }
    /// The colocated pool.
    pub fn colocated_pool(&self) -> Option<&Pool> {
        self.pools.iter().find(|p| p.role == Role::Colocated)
    }
    /// The replay window W of a CED model whose decode instances replay (`docs/levers.md#ced`:
    /// `--ced-replay-on decode`, disaggregated); `None` for every other run.
    pub fn ced_decode_replay(&self) -> Option<u64> {
        match self.model.ced {
            Some(c)
                if c.replay_on == disagg_model::ReplayOn::Decode && self.mode == Mode::Disagg =>
            {
                Some(c.replay)
            }
            _ => None,
        }
    }
    /// Total number of instances.
    pub fn instance_count(&self) -> usize {
        self.pools.iter().map(|p| p.instances).sum()
    }
    /// Number of KV links the topology gives (0 in colocated mode).
    pub fn link_count(&self) -> usize {
        if self.mode != Mode::Disagg {
            return 0;
        }
        let p = self.prefill_pool().map_or(0, |x| x.instances);
        let d = self.decode_pool().map_or(0, |x| x.instances);
        match self.handoff.link_topology {
            LinkTopology::Shared => 1,
            LinkTopology::PerPrefill => p,
            LinkTopology::PerPair => p * d,
        }
    }
    /// This configuration's requests, open-loop view (closed-loop turns keep placeholder
    /// arrivals; use [`SimConfig::requests`] to run them as sessions).
    pub fn generate_workload(&self) -> Vec<GenRequest> {
        self.requests().requests
    }

    /// This configuration's requests, with closed-loop turns (what [`crate::simulate_config`] runs).
    pub fn requests(&self) -> Workload {
        self.source.workload(&self.workload)
    }

    /// Checks the invariants the engine relies on (always true for a [`Scenario::build`] result;
    /// this guards hand-edited configurations).
    pub fn check(&self) -> Result<(), Error> {
        let has = |r: Role| self.pools.iter().any(|p| p.role == r && p.instances > 0);
        match self.mode {
            Mode::Disagg if !(has(Role::Prefill) && has(Role::Decode)) => {
                return Err(Error::invalid(
                    "config",
                    "disaggregated mode needs a prefill and a decode pool with instances",
                ))
            }
            Mode::Colocated if !has(Role::Colocated) => {
                return Err(Error::invalid(
                    "config",
                    "colocated mode needs a colocated pool with instances",
                ))
            }
            _ => {}
        }
        if self.max_decode_batch == 0 || self.max_prefill_tokens == 0 {
            return Err(Error::invalid("config", "batch limits must be at least 1"));
        }
        if self.link.channels == 0 {
            return Err(Error::invalid("--link-channels", "must be at least 1"));
        }
        if !(self.sample_dt_s.is_finite() && self.sample_dt_s > 0.0) {
            return Err(Error::invalid("config", "sample_dt must be positive"));
        }
        if !(self.warmup_frac >= 0.0 && self.warmup_frac <= 1.0) {
            return Err(Error::invalid("config", "warmup_frac must be in [0, 1]"));
        }
        if self.mode == Mode::Colocated {
            let d = HandoffOptions::default();
            let h = self.handoff;
            if h.send != d.send
                || h.link_sharing != d.link_sharing
                || h.link_topology != d.link_topology
                || h.reserve_kv_on != d.reserve_kv_on
            {
                return Err(Error::invalid(
                    "config",
                    "the KV hand-off options need disaggregated mode",
                ));
            }
        }
        if self.mode == Mode::Disagg && self.fast_forward && self.levers.is_some() {
            return Err(Error::invalid(
                "--fast",
                "the fast decode path does not exist with the scheduling levers",
            ));
        }
        let ced_decode = self
            .model
            .ced
            .is_some_and(|c| c.replay_on == disagg_model::ReplayOn::Decode);
        if ced_decode
            && (self.mode != Mode::Disagg
                || self.fast_forward
                || self.levers.is_some()
                || self.handoff.send != SendMode::Whole
                || self.handoff.first_token != FirstToken::Prefill)
        {
            return Err(Error::invalid(
                "--ced-replay-on",
                "decode needs --mode disagg, the plain decode loop and the default hand-off, \
                 without the scheduling levers",
            ));
        }
        if self.link_count() > MAX_LINKS as usize {
            return Err(Error::invalid(
                "--link-topology",
                format!("{} links; at most {MAX_LINKS}", self.link_count()),
            ));
        }
        Ok(())
    }
}
