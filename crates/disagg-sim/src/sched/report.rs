//! The `scheduler` block of a scheduled run's summary (`docs/levers.md#lever-metrics`).

use serde::Serialize;

use super::inst::{Inst, Kind, Spec};
use crate::levers::{KvPolicy, Levers, Preemption};

/// Swap traffic over the host link (paged + swap).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SwapSummary {
    /// Swapped out, GB (1e9 bytes).
    #[serde(rename = "out_GB")]
    pub out_gb: f64,
    /// Swapped in, GB.
    #[serde(rename = "in_GB")]
    pub in_gb: f64,
    /// Host-link time, s (added to the steps that carried it).
    pub seconds: f64,
    /// Host-link energy, J.
    #[serde(rename = "J")]
    pub j: f64,
}

/// The prefix caches' totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PrefixSummary {
    /// `hit_tokens / prompt_tokens` (0 if no prompt).
    pub hit_rate: f64,
    /// Prompt tokens covered by cached segments at first admissions.
    pub hit_tokens: u64,
    /// Prompt tokens at first admissions.
    pub prompt_tokens: u64,
    /// Tokens of the segments evicted.
    pub evicted_tokens: u64,
    /// Tokens of the segments cached at the end.
    pub cached_tokens_end: u64,
}

/// The decode instances' prefix caches (`--prefix-handoff`, beyond the reference).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HandoffPrefixSummary {
    /// Hand-offs pulled by decode instances.
    pub handoffs: u64,
    /// Those whose decode instance held part of the prompt.
    pub handoffs_hit: u64,
    /// Prompt tokens of the hand-offs pulled.
    pub prompt_tokens: u64,
    /// Prompt tokens the decode instances held (their KV was not sent).
    pub hit_tokens: u64,
    /// `hit_tokens / prompt_tokens` (0 if no hand-off).
    pub hit_rate: f64,
    /// Tokens of the segments the decode caches evicted.
    pub evicted_tokens: u64,
    /// Tokens of the segments cached on decode instances at the end.
    pub cached_tokens_end: u64,
    /// How hand-offs chose their decode instance (`least-loaded` or `prefix`).
    pub decode_router: String,
}

/// Speculative decoding's totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpecSummary {
    /// The draft (`mtp` or a model key).
    pub draft: String,
    /// Drafted tokens per verify pass.
    pub gamma: u32,
    /// Acceptance probability per drafted token.
    pub alpha: f64,
    /// Verify passes over a row.
    pub verify_rows: u64,
    /// Tokens per verify row (NaN if none).
    pub tokens_per_verify: f64,
    /// The closed form `(1 - alpha^(gamma+1)) / (1 - alpha)`.
    pub closed_form: f64,
    /// Draft time of every instance over the decode-side busy time (the reference's ratio).
    pub draft_time_frac: f64,
}

/// The scheduler block (present exactly when the levers are on).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SchedulerSummary {
    /// As configured.
    pub batch_policy: String,
    /// Token budget of one step (instance 0's).
    pub token_budget: u64,
    /// KV reservation policy.
    pub kv_policy: String,
    /// KV capacity of the first decode-side instance, units.
    pub kv_capacity_units: u64,
    /// Tokens per unit.
    pub kv_unit_tokens: u64,
    /// Mean rows running over the decode side's busy time.
    pub mean_running: f64,
    /// Share of allocated KV that holds tokens ("KV holding share"; NaN if nothing allocated).
    pub kv_token_frac: f64,
    /// Prompt tokens computed, re-prefills included, hits excluded.
    pub computed_prefill_tokens: u64,
    /// Disaggregated: the prefill instance's capacity, units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_kv_capacity_units: Option<u64>,
    /// Paged: the preemption mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption: Option<String>,
    /// Paged: preemptions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<u64>,
    /// Paged: tokens of re-prefill chunks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recompute_tokens: Option<u64>,
    /// Paged + swap: host-link traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapSummary>,
    /// Prefix caching.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<PrefixSummary>,
    /// `--prefix-handoff`: the decode instances' prefix caches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_handoff: Option<HandoffPrefixSummary>,
    /// Speculative decoding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SpecSummary>,
    /// Median of `prefill_start - arrival` over the measured requests, s (the scheduling delay).
    pub sched_delay_p50_s: Option<f64>,
    /// Mean of `e2e / output_len` over the measured requests, s per token (vLLM's normalised
    /// latency; summed as CPython 3.12's `sum`).
    pub norm_latency_s_per_token: Option<f64>,
}

/// The block of a finished scheduled run (`docs/levers.md#lever-metrics`: float sums are loops in instance order).
pub(super) fn scheduler_summary(
    lv: &Levers,
    insts: &[Inst],
    n_prefill: usize,
    spec: Option<Spec>,
) -> SchedulerSummary {
    let d: Vec<&Inst> = insts.iter().filter(|x| x.kind != Kind::Prefill).collect();
    let mut run = 0.0;
    let mut busy = 0.0;
    let mut tok = 0.0;
    let mut alloc = 0.0;
    for x in &d {
        run += x.acc.run_area;
        busy += x.stats.busy_s;
        tok += x.acc.tok_area;
        alloc += x.acc.alloc_area;
    }
    let sum = |f: fn(&Inst) -> u64| insts.iter().map(f).sum::<u64>();
    let paged = lv.kv_policy == KvPolicy::Paged;
    let swap = (paged && lv.preemption == Preemption::Swap).then(|| {
        let (mut so, mut si, mut ss, mut sj) = (0.0, 0.0, 0.0, 0.0);
        for x in insts {
            so += x.acc.swap_out_bytes;
            si += x.acc.swap_in_bytes;
            ss += x.acc.swap_s;
            sj += x.acc.swap_j;
        }
        SwapSummary {
            out_gb: so / 1e9,
            in_gb: si / 1e9,
            seconds: ss,
            j: sj,
        }
    });
    let prefix_cache = lv.prefix_caching.then(|| {
        // Colocated and prefill instances (decode instances have a cache only with
        // --prefix-handoff, reported on their own below).
        let cached: Vec<&Inst> = insts
            .iter()
            .filter(|x| x.cache.is_some() && x.kind != Kind::Decode)
            .collect();
        let hit: u64 = cached.iter().map(|x| x.acc.hit_tokens).sum();
        let prompt: u64 = cached.iter().map(|x| x.acc.prompt_tokens).sum();
        PrefixSummary {
            hit_rate: if prompt == 0 {
                0.0
            } else {
                hit as f64 / prompt as f64
            },
            hit_tokens: hit,
            prompt_tokens: prompt,
            evicted_tokens: cached
                .iter()
                .map(|x| x.cache.as_ref().map_or(0, |c| c.evicted_tokens()))
                .sum(),
            cached_tokens_end: cached
                .iter()
                .map(|x| x.cache.as_ref().map_or(0, |c| c.cached_tokens()))
                .sum(),
        }
    });
    let prefix_handoff = lv.prefix_handoff.then(|| handoff_prefix_summary(lv, insts));
    let speculative = lv.speculative.as_ref().zip(spec).map(|(s, sp)| {
        let rows = sum(|x| x.acc.spec_rows);
        let toks = sum(|x| x.acc.spec_tokens);
        let mut draft = 0.0;
        for x in insts {
            draft += x.acc.draft_s;
        }
        SpecSummary {
            draft: s.draft.clone(),
            gamma: s.gamma,
            alpha: s.alpha,
            verify_rows: rows,
            tokens_per_verify: if rows == 0 {
                f64::NAN
            } else {
                toks as f64 / rows as f64
            },
            closed_form: crate::speculative::expected_tokens(sp.alpha, sp.gamma as u32),
            draft_time_frac: if busy == 0.0 { 0.0 } else { draft / busy },
        }
    });
    let first_d = d.first().map(|x| x.kv);
    SchedulerSummary {
        batch_policy: lv.batch_policy.as_str().to_string(),
        token_budget: insts.first().map_or(lv.token_budget, |x| x.tau),
        kv_policy: lv.kv_policy.as_str().to_string(),
        kv_capacity_units: first_d.map_or(0, |k| k.capacity),
        kv_unit_tokens: first_d.map_or(1, |k| k.block_tokens),
        mean_running: if busy == 0.0 { 0.0 } else { run / busy },
        kv_token_frac: if alloc == 0.0 { f64::NAN } else { tok / alloc },
        computed_prefill_tokens: sum(|x| x.acc.computed_tokens),
        prefill_kv_capacity_units: (n_prefill > 0).then(|| insts[0].kv.capacity),
        preemption: paged.then(|| lv.preemption.as_str().to_string()),
        preemptions: paged.then(|| sum(|x| x.acc.preemptions)),
        recompute_tokens: paged.then(|| sum(|x| x.acc.recompute_tokens)),
        swap,
        prefix_cache,
        prefix_handoff,
        speculative,
        sched_delay_p50_s: None,
        norm_latency_s_per_token: None,
    }
}

/// The decode instances' prefix-cache figures (`--prefix-handoff`).
fn handoff_prefix_summary(lv: &Levers, insts: &[Inst]) -> HandoffPrefixSummary {
    let mut h = HandoffPrefixSummary {
        handoffs: 0,
        handoffs_hit: 0,
        prompt_tokens: 0,
        hit_tokens: 0,
        hit_rate: 0.0,
        evicted_tokens: 0,
        cached_tokens_end: 0,
        decode_router: lv.decode_router.as_str().to_string(),
    };
    for x in insts.iter().filter(|x| x.kind == Kind::Decode) {
        h.handoffs += x.acc.ho_pulls;
        h.handoffs_hit += x.acc.ho_hit_pulls;
        h.prompt_tokens += x.acc.ho_prompt_tokens;
        h.hit_tokens += x.acc.ho_hit_tokens;
        if let Some(c) = &x.cache {
            h.evicted_tokens += c.evicted_tokens();
            h.cached_tokens_end += c.cached_tokens();
        }
    }
    if h.prompt_tokens > 0 {
        h.hit_rate = h.hit_tokens as f64 / h.prompt_tokens as f64;
    }
    h
}
