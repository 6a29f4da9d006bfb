//! What a scheduled run leaves besides the stamps, and what it measured of each request.

use super::report::SchedulerSummary;

/// What the scheduling levers measured of one request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeverRecord {
    /// `prefill_start - arrival`, s (NaN if it never started).
    pub sched_delay_s: f64,
    /// Times it was preempted (paged KV).
    pub preemptions: u32,
    /// Prompt tokens its first admission found in the prefix cache.
    pub prefix_hit_tokens: u64,
    /// Its inter-token latencies: how many, the largest, and how many were exactly 0
    /// (speculative verify passes).
    pub n_itl: u64,
    pub itl_max_s: Option<f64>,
    pub n_itl_zero: u64,
    /// `--prefix-handoff` only: prompt tokens its decode instance already held when it pulled
    /// the hand-off (their KV was not sent); `None` without the option.
    pub handoff_hit_tokens: Option<u64>,
}

/// One scheduled instance's KV memory when the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvEnd {
    /// Units in use (private allocations, cached segments, reservations).
    pub used_units: u64,
    /// Units held by cached prefix segments.
    pub cached_units: u64,
    /// Capacity, units.
    pub capacity_units: u64,
    /// Rows still swapped out.
    pub swapped: usize,
    /// Requests still waiting (queue, decode inbox, landed).
    pub queued: usize,
}

/// What a scheduled run leaves besides the stamps: every instance's step ends, each request's
/// token record (for its inter-token latencies) and the scheduler block.
#[derive(Clone, Debug)]
pub(crate) struct SchedResult {
    /// Per instance (instance order), the end time of every step.
    pub step_ends: Vec<Vec<f64>>,
    /// Per request, its tokens after the first as runs of consecutive step indices.
    pub runs: Vec<Vec<(u32, u32)>>,
    /// Per request, tokens that arrived with a zero gap.
    pub zeros: Vec<u32>,
    /// Per request, the instance whose steps `runs` index.
    pub tok_inst: Vec<u32>,
    /// Per request, its preemptions, prefix-hit tokens and (`--prefix-handoff`) prompt tokens
    /// its decode instance held.
    pub per_request: Vec<(u32, u64, u64)>,
    /// Per instance, its KV memory at the end.
    pub kv_end: Vec<KvEnd>,
    /// The summary's scheduler block.
    pub report: SchedulerSummary,
    /// Swap energy over every instance, J (paged + swap only).
    pub swap_j: Option<f64>,
}
