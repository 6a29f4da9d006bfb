//! One scheduled instance and the per-request scheduler fields: the state the scheduling loop
//! ([`super::batch`]), KV memory ([`super::kv`]) and the `scheduler` block ([`super::report`])
//! work on.

use std::collections::VecDeque;

use disagg_model::StepCost;

use crate::engine::books::InstanceStats;
use crate::kv_memory::{KvPolicy, KvUnits};
use crate::levers::BatchPolicy;
use crate::prefix_cache::{NodeId, PrefixCache};

/// A request's scheduler fields (`docs/exactness.md#operation-order`) and the record of its tokens.
#[derive(Clone, Debug, Default)]
pub(crate) struct RState {
    /// Prompt tokens this (re)prefill computes up to (0: not yet admitted).
    pub tgt: u64,
    /// Tokens of `tgt` in the KV cache.
    pub dp: u64,
    /// Tokens emitted at the latest (re)admission or landing.
    pub base: u64,
    /// Private KV units held on the current instance.
    pub alloc: u64,
    /// Tokens covered by `nodes`.
    pub cov: u64,
    /// Units parked in host memory while swapped out.
    pub swapped_units: u64,
    /// Tokens emitted so far, the first included.
    pub n: u64,
    /// Time of the latest token.
    pub last_token: f64,
    /// Speculative acceptance generator state (`None` until first used).
    pub rng: Option<u32>,
    /// Prefix-cache segments it pins, root first.
    pub nodes: Vec<NodeId>,
    /// Disaggregated: units and segments its prefill instance holds until the hand-off lands.
    pub held_units: u64,
    pub held_nodes: Vec<NodeId>,
    /// Disaggregated: its prefill instance and the decode instance chosen at hand-off.
    pub src: u32,
    pub dst: u32,
    /// Tokens after the first, as runs `(first, last)` of consecutive step indices of instance
    /// `tok_inst`; `zeros` more arrived with zero gaps (speculative verify passes).
    pub runs: Vec<(u32, u32)>,
    pub zeros: u32,
    pub tok_inst: u32,
    /// Times it was preempted, and prompt tokens its first admission found cached.
    pub preemptions: u32,
    pub hit_tokens: u64,
    /// Chunk-wise streaming (`--send layerwise`): its prompt's chunks on the prefill instance as
    /// `(step start, step duration, tokens)` (cached tokens first, as a step of length 0), ...
    pub xf_chunks: Vec<(f64, f64, u64)>,
    /// ... when its last byte sent so far is through the link (`NaN` until its transfer is granted),
    pub xf_sent: f64,
    /// ... its open transfer's link slot, and whether its last chunk has started.
    pub xf_slot: u32,
    pub xf_done: bool,
    /// Units a decode instance reserved for it while it was still prefilling (streamed); they
    /// become its `alloc` when its prompt is done.
    pub xf_dalloc: u64,
    /// `--prefix-handoff`: prompt tokens its decode instance held when it pulled the hand-off
    /// (their KV is not sent; 0 otherwise).
    pub ho_hit: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Coloc,
    Prefill,
    Decode,
}

/// Scheduler statistics of one instance (`docs/levers.md#scheduled-instances`, `docs/levers.md#paged-kv`, `docs/levers.md#prefix-caching`, `docs/levers.md#speculative`, `docs/levers.md#lever-metrics`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SchedStats {
    /// `∫ len(running) dt` over steps, s.
    pub run_area: f64,
    /// `∫ tokens held dt`, token-s.
    pub tok_area: f64,
    /// `∫ allocated tokens dt`, token-s.
    pub alloc_area: f64,
    /// Prompt tokens computed (re-prefills included, hits excluded).
    pub computed_tokens: u64,
    /// Tokens of re-prefill chunks.
    pub recompute_tokens: u64,
    /// Preemptions.
    pub preemptions: u64,
    /// Bytes swapped out / in over the host link.
    pub swap_out_bytes: f64,
    pub swap_in_bytes: f64,
    /// Host-link transfer time, s.
    pub swap_s: f64,
    /// Host-link energy, J.
    pub swap_j: f64,
    /// Prompt tokens at first admissions, and those covered by prefix hits.
    pub prompt_tokens: u64,
    pub hit_tokens: u64,
    /// Speculative verify rows and the tokens they produced.
    pub spec_rows: u64,
    pub spec_tokens: u64,
    /// Time of the draft model's passes, s.
    pub draft_s: f64,
    /// `--prefix-handoff`, decode instances: prompt tokens of the hand-offs pulled, and those the
    /// instance's prefix cache held (not sent).
    pub ho_prompt_tokens: u64,
    pub ho_hit_tokens: u64,
    /// `--prefix-handoff`, decode instances: hand-offs pulled, and those with a hit.
    pub ho_pulls: u64,
    pub ho_hit_pulls: u64,
}

/// One scheduled instance.
pub(crate) struct Inst {
    pub(crate) kind: Kind,
    /// Its pool in `cfg.pools`.
    pub(crate) pool: usize,
    pub(crate) kv: KvUnits,
    pub(crate) tau: u64,
    pub(crate) cap: usize,
    pub(crate) policy: BatchPolicy,
    pub(crate) cache: Option<PrefixCache<u32>>,
    pub(crate) queue: VecDeque<u32>,
    /// Prompt tokens in `queue` (a prefill instance's load).
    pub(crate) queued_tokens: u64,
    /// Sorted by `(arrival, rid)`.
    pub(crate) running: Vec<u32>,
    pub(crate) swapped: Vec<u32>,
    pub(crate) used: u64,
    /// Swap time owed to the next step, s.
    pub(crate) swap_t: f64,
    pub(crate) busy: bool,
    pub(crate) wake_pending: bool,
    // decode instance
    pub(crate) inbox: VecDeque<u32>,
    pub(crate) landed: VecDeque<u32>,
    pub(crate) inflight: u32,
    // the step in flight
    pub(crate) cur: StepCost,
    pub(crate) dt: f64,
    pub(crate) cur_draft: f64,
    pub(crate) step_start: f64,
    pub(crate) rows: Vec<u32>,
    pub(crate) part: Vec<(u32, u64)>,
    // accounting
    pub(crate) idle_w: f64,
    pub(crate) stats: InstanceStats,
    pub(crate) acc: SchedStats,
    pub(crate) step_end: Vec<f64>,
}

impl Inst {
    /// Frees `units` (set to 0) and unpins `nodes` (emptied) in order at `now`.
    pub(crate) fn give_back(&mut self, units: &mut u64, nodes: &mut Vec<NodeId>, now: f64) {
        self.used -= *units;
        *units = 0;
        if let Some(cache) = self.cache.as_mut() {
            for &n in nodes.iter() {
                cache.unpin(n, now);
            }
        }
        nodes.clear();
    }
}

/// Speculative decoding as the scheduler uses it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec {
    pub(crate) gamma: u64,
    pub(crate) alpha: f64,
    pub(crate) seed: u64,
}

impl KvPolicy {
    /// Whether the policy grows allocations and preempts (paged).
    pub(crate) fn is_paged(self) -> bool {
        self == KvPolicy::Paged
    }
}
