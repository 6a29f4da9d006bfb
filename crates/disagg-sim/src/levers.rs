//! The scheduling and KV-memory levers of a run (`docs/levers.md#scheduled-instances`): batch policy, token
//! budget, KV reservation policy, paged blocks and preemption, prefix caching, speculative
//! decoding. [`Levers`] is what the engine sees, validated; it is present in a [`SimConfig`]
//! exactly when the levers switch the scheduled instances on (`docs/levers.md#scheduled-instances` "switch-on").
//!
//! [`SimConfig`]: crate::SimConfig

use disagg_model::{Error, Link};
use serde::{Deserialize, Serialize};

pub use crate::kv_memory::KvPolicy;

/// How a scheduled instance forms its steps (`--batch-policy`): one batch scheduler per policy,
/// listed in the registry of [`crate::sched::batch`].
pub use crate::sched::batch::BatchPolicy;

/// What a paged instance does with a victim when it runs out of blocks (`--preemption`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preemption {
    /// Free its blocks and prefill `prompt + tokens so far` again later (the reference's default).
    #[default]
    Recompute,
    /// Park its blocks in host memory over the host link and bring them back later.
    Swap,
}

impl Preemption {
    /// The names, in the reference's order.
    pub const NAMES: [&'static str; 2] = ["recompute", "swap"];

    /// The mode named `s`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        match s {
            "recompute" => Ok(Preemption::Recompute),
            "swap" => Ok(Preemption::Swap),
            other => Err(Error::unknown("--preemption", other, Self::NAMES)),
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Which decode instance a hand-off goes to (`--decode-router`; beyond the reference).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecodeRouter {
    /// The smallest load, the first on ties (the reference, `docs/serving-model.md#routing`).
    #[default]
    LeastLoaded,
    /// The longest cached prefix of the request's chain on the decode instance
    /// (`--prefix-handoff`); ties by the reference's rule among the tied.
    Prefix,
}

impl DecodeRouter {
    /// The names, the default first.
    pub const NAMES: [&'static str; 2] = ["least-loaded", "prefix"];

    /// The router named `s`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        match s {
            "least-loaded" => Ok(DecodeRouter::LeastLoaded),
            "prefix" => Ok(DecodeRouter::Prefix),
            other => Err(Error::unknown("--decode-router", other, Self::NAMES)),
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// When a swapped-out row comes back (`--swap-in`; `docs/levers.md#paged-kv`, `docs/levers.md#quirks`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwapIn {
    /// As soon as its own blocks fit (the reference): a row swapped out for lack of its next
    /// block comes back at the next boundary and is swapped out again by that step's growth check
    /// (two host transfers per step until memory frees, `docs/levers.md#quirks`).
    #[default]
    OwnBlocks,
    /// Only when the blocks its next step needs fit too (vLLM does not swap in a sequence it
    /// cannot extend): no thrash.
    NextStep,
}

impl SwapIn {
    /// The names, the reference's first.
    pub const NAMES: [&'static str; 2] = ["own-blocks", "next-step"];

    /// The rule named `s`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        match s {
            "own-blocks" => Ok(SwapIn::OwnBlocks),
            "next-step" => Ok(SwapIn::NextStep),
            other => Err(Error::unknown("--swap-in", other, Self::NAMES)),
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Speculative decoding's scheduling side (`docs/levers.md#speculative`): the draft, tokens drafted per verify pass and the
/// acceptance probability of each, and the seed of the acceptance draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Speculative {
    /// `mtp` (a one-layer multi-token-prediction head) or a catalogue model key.
    pub draft: String,
    /// Drafted tokens per verify pass (>= 1).
    pub gamma: u32,
    /// Acceptance probability of each drafted token, in [0, 1].
    pub alpha: f64,
    /// Seed of the acceptance draws.
    pub seed: u64,
}

/// The levers of a scheduled run, validated (`docs/levers.md#scheduled-instances`).
#[derive(Clone, Debug, PartialEq)]
pub struct Levers {
    /// Batch policy as configured (a prefill instance runs decode-priority as prefill-priority).
    pub batch_policy: BatchPolicy,
    /// Token budget `tau` of one step (`--max-num-batched-tokens`, else `max_prefill_tokens`).
    pub token_budget: u64,
    /// Whether `--max-num-batched-tokens` was given.
    pub budget_given: bool,
    /// KV reservation policy.
    pub kv_policy: KvPolicy,
    /// Tokens per block when paged (>= 1).
    pub kv_block_size: u64,
    /// Reservation floor of the `max` policy, tokens.
    pub max_seq_len: u64,
    /// Fraction of units kept free when admitting (paged; 0.01, not a flag in the reference).
    pub kv_watermark: f64,
    /// Paged, out of blocks: recompute or swap.
    pub preemption: Preemption,
    /// The swap path (host link; its channels are irrelevant).
    pub host_link: Link,
    /// When swapped-out rows come back.
    pub swap_in: SwapIn,
    /// Prefix caching on colocated and prefill instances.
    pub prefix_caching: bool,
    /// Speculative decoding.
    pub speculative: Option<Speculative>,
    /// Beyond the reference: decode instances keep a prefix cache too, and a hand-off sends only
    /// the KV of the prompt tokens the decode instance does not hold (`--prefix-handoff`).
    pub prefix_handoff: bool,
    /// Beyond the reference: how the decode instance of a hand-off is chosen.
    pub decode_router: DecodeRouter,
}

/// A request's cacheable prompt prefix (`docs/levers.md#prefix-caching`): its segments root first, each an interned key and
/// a token count, and the key of the segment it adds when it finishes. Keys are interned per
/// workload (`sys<k>`, `s<sid>t<j>` in the session generator; block hashes in a trace).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrefixChain {
    /// `(key, tokens)` of each segment, root first.
    pub segments: Segments,
    /// The key of the segment emitted at the finish, if any.
    pub emit: Option<u32>,
}

/// A chain's segments: the first `len` entries of a buffer that the turns of one session share
/// (turn `j`'s chain is a prefix of turn `j + 1`'s), so a session of `n` turns holds `O(n)`
/// segments, not `O(n^2)`. Reads as a slice.
#[derive(Clone, Debug, Default)]
pub struct Segments {
    buf: std::sync::Arc<[(u32, u64)]>,
    len: usize,
}

impl Segments {
    /// The first `len` segments of `buf` (all of them if `len` is larger).
    pub fn prefix(buf: &std::sync::Arc<[(u32, u64)]>, len: usize) -> Segments {
        Segments {
            buf: buf.clone(),
            len: len.min(buf.len()),
        }
    }
}

impl Segments {
    /// True if `self` and `other` read the same buffer (turns of one session).
    pub fn shares_buffer(&self, other: &Segments) -> bool {
        std::sync::Arc::ptr_eq(&self.buf, &other.buf)
    }

    /// The length of the buffer read (at least `len()`).
    pub fn buffer_len(&self) -> usize {
        self.buf.len()
    }
}

impl std::ops::Deref for Segments {
    type Target = [(u32, u64)];
    fn deref(&self) -> &[(u32, u64)] {
        &self.buf[..self.len]
    }
}

impl PartialEq for Segments {
    fn eq(&self, other: &Segments) -> bool {
        **self == **other
    }
}

impl From<Vec<(u32, u64)>> for Segments {
    fn from(v: Vec<(u32, u64)>) -> Segments {
        let len = v.len();
        Segments { buf: v.into(), len }
    }
}

impl From<&[(u32, u64)]> for Segments {
    fn from(v: &[(u32, u64)]) -> Segments {
        Segments {
            buf: v.into(),
            len: v.len(),
        }
    }
}

/// The prefix chains of a workload, one per request (rid order), and the key names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrefixChains {
    /// One chain per request.
    pub chains: Vec<PrefixChain>,
    /// The name of each interned key (`sys0`, `s12t3`).
    pub names: Vec<String>,
}

impl PrefixChains {
    /// The segments held in memory: each buffer counted once (consecutive chains that share a
    /// buffer, as a session's turns do, count it once).
    pub fn stored_segments(&self) -> u64 {
        let mut n = 0u64;
        let mut prev: Option<&Segments> = None;
        for c in &self.chains {
            if !prev.is_some_and(|p| p.shares_buffer(&c.segments)) {
                n += c.segments.buffer_len() as u64;
            }
            prev = Some(&c.segments);
        }
        n
    }
}

/// The prefix chains of a Mooncake trace (`--prefix-from-trace`, beyond the reference): each
/// row's `hash_ids` name its prompt's 512-token blocks, root first; block `j` becomes a segment
/// keyed by its hash (interned in first-use order, named by the hash in decimal) of
/// `min(512, prompt - 512 j)` tokens (so the last block holds the remainder), and blocks past the
/// prompt are dropped. A trace row has no reply identity: no segment is emitted at the finish.
/// `None` if no row has `hash_ids`.
pub fn trace_chains(rows: &[disagg_trace::TraceRow]) -> Option<PrefixChains> {
    use std::collections::HashMap;
    if rows.iter().all(|r| r.hash_ids.is_none()) {
        return None;
    }
    let block = disagg_trace::MOONCAKE_BLOCK_TOKENS;
    let mut names: Vec<String> = Vec::new();
    let mut ids: HashMap<u64, u32> = HashMap::new();
    let mut chains = Vec::with_capacity(rows.len());
    for r in rows {
        let mut segments = Vec::new();
        for (j, &h) in r.hash_ids.iter().flatten().enumerate() {
            let start = j as u64 * block;
            if start >= r.prompt_len {
                break;
            }
            let next = names.len() as u32;
            let key = *ids.entry(h).or_insert_with(|| {
                names.push(h.to_string());
                next
            });
            segments.push((key, block.min(r.prompt_len - start)));
        }
        chains.push(PrefixChain {
            segments: segments.into(),
            emit: None,
        });
    }
    Some(PrefixChains { chains, names })
}
