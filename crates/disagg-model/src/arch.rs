//! Models as a list of layer kinds (issue 16): full attention (GQA/MHA), MLA, sliding-window and
//! chunked attention, linear attention (Gated DeltaNet), each with a dense or mixture-of-experts
//! MLP. The reference's models are one shape repeated `L` times and have no [`Arch`]; a model with
//! one is sized and costed here, layer kind by layer kind.
//!
//! # What a sequence keeps (the KV rules)
//! For a sequence holding `n` tokens, per layer:
//! - full attention: `n * 2 * Hkv * hd` values;
//! - MLA: `n * (kv_lora_rank + qk_rope_head_dim)` values (one latent shared by every head);
//! - sliding window `W`: `min(n, W)` tokens' K and V (the window as of the last token);
//! - chunked attention `C`: the tokens of the current chunk, `((n - 1) mod C) + 1` (0 for n = 0);
//! - linear attention: a fixed state, `(kernel - 1) * (2*Hk*dk + Hv*dv)` conv values plus
//!   `Hv * dv * dk` recurrent values, whatever `n`.
//!
//! Under [`Retention::Strict`] the bounded layers keep only what the *next* token attends to:
//! `min(n, W - 1)` (vLLM frees positions below `n - W + 1`) and `n mod C` (a chunk boundary frees
//! the whole chunk). The default, [`Retention::Window`], is what the last prompt token attended
//! to, and gives the window-capped figures of the source data.
//!
//! The hand-off of a `P`-token prompt moves what the sequence keeps at `n = P`. A decode
//! instance reserves a sequence's peak: full and MLA layers grow by one token per token, a
//! sliding layer up to `W`, a chunked layer up to `C` (its current chunk is at most `C`), the
//! linear state is fixed.
//!
//! KV values are `kv_bytes` each (the model's KV format, which compression and quantisation
//! change); the linear state has its own element sizes (`conv_bytes`, `state_bytes`), which a
//! compression format leaves alone unless it says it applies to the state.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::pymath::int_div;
use crate::pymath::ipow;

crate::named_enum! {
    /// How long a sliding-window or chunked layer keeps a token (`--kv-retention`).
    pub enum Retention: "--kv-retention" {
        /// What the last token attended to: `min(n, W)`, `((n - 1) mod C) + 1` (the default).
        #[default]
        Window = "window",
        /// What the next token will attend to: `min(n, W - 1)`, `n mod C` (vLLM's freeing rule).
        Strict = "strict",
    }
}

impl Retention {
    fn is_default(&self) -> bool {
        *self == Retention::Window
    }
}

/// The attention (token mixer) of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Attention {
    /// Grouped-query (or multi-head) attention over every earlier token.
    Full {
        /// KV heads.
        kv_heads: u64,
        /// Head dimension.
        head_dim: u64,
    },
    /// Multi-head latent attention (DeepSeek-V2): one compressed latent per token.
    Mla {
        /// Latent width (`kv_lora_rank`).
        kv_lora_rank: u64,
        /// Decoupled RoPE key width (`qk_rope_head_dim`), cached beside the latent.
        qk_rope_head_dim: u64,
        /// Per-head query/key width without RoPE (`qk_nope_head_dim`).
        qk_nope_head_dim: u64,
        /// Per-head value width (`v_head_dim`).
        v_head_dim: u64,
        /// Query low-rank width (`q_lora_rank`; 0: a direct query projection).
        #[serde(default)]
        q_lora_rank: u64,
    },
    /// Attention over the last `window` tokens (the token itself included).
    Sliding {
        /// KV heads.
        kv_heads: u64,
        /// Head dimension.
        head_dim: u64,
        /// Window, tokens.
        window: u64,
    },
    /// Attention within fixed `chunk`-token chunks (Llama 4's local layers).
    Chunked {
        /// KV heads.
        kv_heads: u64,
        /// Head dimension.
        head_dim: u64,
        /// Chunk, tokens.
        chunk: u64,
    },
    /// Linear attention with a gated delta rule (Gated DeltaNet): a fixed state per sequence.
    Linear {
        /// Short convolution kernel.
        conv_kernel: u64,
        /// Key heads.
        k_heads: u64,
        /// Key head dimension.
        k_head_dim: u64,
        /// Value heads.
        v_heads: u64,
        /// Value head dimension.
        v_head_dim: u64,
        /// Bytes per conv-state value (2: BF16).
        #[serde(default = "two")]
        conv_bytes: f64,
        /// Bytes per recurrent-state value (2: BF16; 4 with an FP32 SSM cache).
        #[serde(default = "two")]
        state_bytes: f64,
    },
}

fn two() -> f64 {
    2.0
}

/// The MLP of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Mlp {
    /// A gated MLP of three `d x d_ff` matrices.
    Dense {
        /// Width.
        d_ff: u64,
    },
    /// Routed experts (three matrices of `d x d_ff_expert` each), `top_k` per token, plus
    /// always-on shared experts.
    Moe {
        /// Routed experts (X).
        experts: u64,
        /// Experts per token (k).
        top_k: u64,
        /// Shared experts (S).
        #[serde(default)]
        shared_experts: u64,
        /// Width of one routed expert.
        d_ff_expert: u64,
        /// Width of one shared expert (default: `d_ff_expert`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        d_ff_shared: Option<u64>,
    },
}

/// `count` consecutive layers of one kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerRun {
    /// Layers.
    pub count: u64,
    /// Their attention.
    pub attention: Attention,
    /// Their MLP.
    pub mlp: Mlp,
}

/// A model's layers: `cycle` repeated `cycles` times, then `tail`, in layer order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arch {
    /// One period of the layer pattern.
    pub cycle: Vec<LayerRun>,
    /// How many times the period repeats (>= 1).
    #[serde(default = "one_u64")]
    pub cycles: u64,
    /// Layers after the repeats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tail: Vec<LayerRun>,
    /// Bounded layers' retention rule.
    #[serde(default, skip_serializing_if = "Retention::is_default")]
    pub retention: Retention,
    /// The LM head shares the embedding's weights (one `V x d` matrix resident, not two).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tied_embeddings: bool,
    /// One line: why this model's KV differs from "tokens x bytes per token".
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why_kv: String,
}

fn one_u64() -> u64 {
    1
}

/// Parameters (exact integers) of a layer kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LayerParams {
    /// Read by every token: attention, router, shared experts, dense MLP.
    pub fixed: i128,
    /// One routed expert (0 for a dense MLP).
    pub expert: i128,
    /// Routed experts (X; 0 for dense).
    pub experts: i128,
    /// Routed experts per token (k; 0 for dense).
    pub top_k: i128,
}

impl LayerParams {
    /// Parameters a token runs: `fixed + k * expert`.
    pub fn active(&self) -> i128 {
        self.fixed + self.top_k * self.expert
    }
    /// Parameters kept in memory: `fixed + X * expert`.
    pub fn resident(&self) -> i128 {
        self.fixed + self.experts * self.expert
    }
}

/// `Σ_{i=1..n} min(i, w)`: (query, key) pairs of a causal sliding window `w` over `n` tokens.
pub fn window_pairs(n: u64, w: u64) -> i128 {
    let (n, w) = (n as i128, w as i128);
    if n <= w {
        n * (n + 1) / 2
    } else {
        w * (w + 1) / 2 + (n - w) * w
    }
}

/// `Σ_{i=1..n} (((i - 1) mod c) + 1)`: (query, key) pairs of chunked causal attention.
pub fn chunk_pairs(n: u64, c: u64) -> i128 {
    let (q, r) = ((n / c) as i128, (n % c) as i128);
    let c = c as i128;
    q * (c * (c + 1) / 2) + r * (r + 1) / 2
}

/// The channels of a Gated DeltaNet layer's short convolution: `2*Hk*dk + Hv*dv` (queries,
/// keys, values).
fn conv_dim(k_heads: u64, k_head_dim: u64, v_heads: u64, v_head_dim: u64) -> i128 {
    2 * k_heads as i128 * k_head_dim as i128 + v_heads as i128 * v_head_dim as i128
}

impl Attention {
    /// `(kv_heads, head_dim)` of a (G)QA layer (full, sliding-window or chunked); `None` for MLA
    /// and linear attention.
    pub fn heads(&self) -> Option<(u64, u64)> {
        match *self {
            Attention::Full { kv_heads, head_dim }
            | Attention::Sliding {
                kv_heads, head_dim, ..
            }
            | Attention::Chunked {
                kv_heads, head_dim, ..
            } => Some((kv_heads, head_dim)),
            Attention::Mla { .. } | Attention::Linear { .. } => None,
        }
    }

    /// KV values a token keeps per layer (0 for linear attention).
    pub fn values_per_token(&self) -> i128 {
        if let Some((kv_heads, head_dim)) = self.heads() {
            return 2 * kv_heads as i128 * head_dim as i128;
        }
        match *self {
            Attention::Mla {
                kv_lora_rank,
                qk_rope_head_dim,
                ..
            } => kv_lora_rank as i128 + qk_rope_head_dim as i128,
            _ => 0,
        }
    }

    /// Whether its cache grows with every token (full attention, MLA).
    pub fn unbounded(&self) -> bool {
        matches!(self, Attention::Full { .. } | Attention::Mla { .. })
    }

    /// Tokens a sequence of `n` tokens keeps in this layer under `rule` (`n` for unbounded
    /// layers, 0 for linear attention).
    pub fn kept_tokens(&self, n: u64, rule: Retention) -> u64 {
        match (*self, rule) {
            (Attention::Full { .. } | Attention::Mla { .. }, _) => n,
            (Attention::Sliding { window, .. }, Retention::Window) => n.min(window),
            (Attention::Sliding { window, .. }, Retention::Strict) => n.min(window - 1),
            (Attention::Chunked { chunk, .. }, Retention::Window) => {
                if n == 0 {
                    0
                } else {
                    (n - 1) % chunk + 1
                }
            }
            (Attention::Chunked { chunk, .. }, Retention::Strict) => n % chunk,
            (Attention::Linear { .. }, _) => 0,
        }
    }

    /// The most tokens a sequence of up to `n` tokens keeps at once (`n`, `min(n, W)`, `min(n, C)`).
    pub fn peak_tokens(&self, n: u64) -> u64 {
        match *self {
            Attention::Sliding { window, .. } => n.min(window),
            Attention::Chunked { chunk, .. } => n.min(chunk),
            Attention::Linear { .. } => 0,
            _ => n,
        }
    }

    /// (conv values, recurrent values) of a linear-attention state; (0, 0) otherwise.
    pub fn state_values(&self) -> (i128, i128) {
        match *self {
            Attention::Linear {
                conv_kernel,
                k_heads,
                k_head_dim,
                v_heads,
                v_head_dim,
                ..
            } => {
                let conv_dim = conv_dim(k_heads, k_head_dim, v_heads, v_head_dim);
                (
                    (conv_kernel as i128 - 1) * conv_dim,
                    v_heads as i128 * v_head_dim as i128 * k_head_dim as i128,
                )
            }
            _ => (0, 0),
        }
    }

    /// Bytes of a linear-attention state (`conv * conv_bytes + recurrent * state_bytes`); 0.0
    /// otherwise.
    pub fn state_bytes(&self) -> f64 {
        match *self {
            Attention::Linear {
                conv_bytes,
                state_bytes,
                ..
            } => {
                let (c, r) = self.state_values();
                c as f64 * conv_bytes + r as f64 * state_bytes
            }
            _ => 0.0,
        }
    }

    /// Parameters of the token mixer for hidden size `d` and `h` query heads.
    pub fn params(&self, d: u64, h: u64) -> i128 {
        let (d, h) = (d as i128, h as i128);
        if let Some((kv_heads, head_dim)) = self.heads() {
            let (q, kv) = (h * head_dim as i128, kv_heads as i128 * head_dim as i128);
            return 2 * d * q + 2 * d * kv;
        }
        match *self {
            Attention::Mla {
                kv_lora_rank,
                qk_rope_head_dim,
                qk_nope_head_dim,
                v_head_dim,
                q_lora_rank,
            } => {
                let (r, rope, nope, v, ql) = (
                    kv_lora_rank as i128,
                    qk_rope_head_dim as i128,
                    qk_nope_head_dim as i128,
                    v_head_dim as i128,
                    q_lora_rank as i128,
                );
                let q = if ql == 0 {
                    d * h * (nope + rope)
                } else {
                    d * ql + ql * h * (nope + rope)
                };
                q + d * (r + rope) + r * h * (nope + v) + h * v * d
            }
            Attention::Linear {
                conv_kernel,
                k_heads,
                k_head_dim,
                v_heads,
                v_head_dim,
                ..
            } => {
                let (kd, vd) = (
                    k_heads as i128 * k_head_dim as i128,
                    v_heads as i128 * v_head_dim as i128,
                );
                // in_proj_qkvz, in_proj_ba, conv1d, out_proj (vLLM/transformers Qwen3-Next).
                d * (2 * kd + 2 * vd)
                    + d * 2 * v_heads as i128
                    + (2 * kd + vd) * conv_kernel as i128
                    + vd * d
            }
            _ => unreachable!("(G)QA returned above"),
        }
    }

    /// FLOPs per (query, key) pair in prefill: `4*H*hd` for (G)QA (`QK^T` and `AV`); MLA
    /// decompresses its keys and values: `2*H*(nope + rope) + 2*H*v`. 0 for linear attention.
    pub fn prefill_pair_flops(&self, h: u64) -> i128 {
        let h = h as i128;
        match *self {
            Attention::Full { head_dim, .. }
            | Attention::Sliding { head_dim, .. }
            | Attention::Chunked { head_dim, .. } => 4 * h * head_dim as i128,
            Attention::Mla {
                qk_rope_head_dim,
                qk_nope_head_dim,
                v_head_dim,
                ..
            } => 2 * h * (qk_nope_head_dim + qk_rope_head_dim + v_head_dim) as i128,
            Attention::Linear { .. } => 0,
        }
    }

    /// FLOPs per (query, key) pair in decode: as prefill for (G)QA; MLA attends in the latent
    /// space (weights absorbed): `2*H*(kv_lora + rope) + 2*H*kv_lora`.
    pub fn decode_pair_flops(&self, h: u64) -> i128 {
        match *self {
            Attention::Mla {
                kv_lora_rank,
                qk_rope_head_dim,
                ..
            } => {
                let (h, r) = (h as i128, kv_lora_rank as i128);
                2 * h * (r + qk_rope_head_dim as i128) + 2 * h * r
            }
            _ => self.prefill_pair_flops(h),
        }
    }

    /// Per-token FLOPs outside the matmuls: a linear-attention layer's short convolution
    /// `2*kernel*conv_dim` and delta-rule recurrence `6*Hv*dk*dv` (three `dk x dv`
    /// matrix-vector products per head: the key's read-out, the rank-one update, the query's
    /// read-out). 0 for attention.
    pub fn token_flops(&self) -> i128 {
        match *self {
            Attention::Linear {
                conv_kernel,
                k_heads,
                k_head_dim,
                v_heads,
                v_head_dim,
                ..
            } => {
                let conv_dim = conv_dim(k_heads, k_head_dim, v_heads, v_head_dim);
                2 * conv_kernel as i128 * conv_dim
                    + 6 * v_heads as i128 * k_head_dim as i128 * v_head_dim as i128
            }
            _ => 0,
        }
    }

    /// (query, key) pairs of a prefill of tokens `p0+1 ..= p0+c` (0 for linear attention).
    pub fn chunk_pairs(&self, p0: u64, c: u64) -> i128 {
        match *self {
            Attention::Full { .. } | Attention::Mla { .. } => {
                let (p0, c) = (p0 as i128, c as i128);
                c * (2 * p0 + c + 1) / 2
            }
            Attention::Sliding { window, .. } => {
                window_pairs(p0 + c, window) - window_pairs(p0, window)
            }
            Attention::Chunked { chunk, .. } => chunk_pairs(p0 + c, chunk) - chunk_pairs(p0, chunk),
            Attention::Linear { .. } => 0,
        }
    }

    /// Keys the query at 1-based position `n` attends to (`n`, `min(n, W)`, `((n-1) mod C)+1`).
    pub fn keys_at(&self, n: u64) -> u64 {
        match *self {
            Attention::Full { .. } | Attention::Mla { .. } => n,
            Attention::Sliding { window, .. } => n.min(window),
            Attention::Chunked { chunk, .. } => {
                if n == 0 {
                    0
                } else {
                    (n - 1) % chunk + 1
                }
            }
            Attention::Linear { .. } => 0,
        }
    }

    /// The kind's name (`full`, `mla`, `sliding`, `chunked`, `linear`).
    pub fn kind(&self) -> &'static str {
        match self {
            Attention::Full { .. } => "full",
            Attention::Mla { .. } => "mla",
            Attention::Sliding { .. } => "sliding",
            Attention::Chunked { .. } => "chunked",
            Attention::Linear { .. } => "linear",
        }
    }

    /// Heads a tensor-parallel rank can split the cache by: KV heads, value heads of a linear
    /// state; `None` for MLA (one latent, replicated on every rank).
    pub fn shard_heads(&self) -> Option<u64> {
        match *self {
            Attention::Linear { v_heads, .. } => Some(v_heads),
            _ => self.heads().map(|(kv_heads, _)| kv_heads),
        }
    }

    fn validate(&self, what: &str) -> Result<(), Error> {
        let fields: Vec<(&str, u64)> = match *self {
            Attention::Full { kv_heads, head_dim } => {
                vec![("kv_heads", kv_heads), ("head_dim", head_dim)]
            }
            Attention::Mla {
                kv_lora_rank,
                qk_rope_head_dim,
                qk_nope_head_dim,
                v_head_dim,
                ..
            } => vec![
                ("kv_lora_rank", kv_lora_rank),
                ("qk_rope_head_dim", qk_rope_head_dim),
                ("qk_nope_head_dim", qk_nope_head_dim),
                ("v_head_dim", v_head_dim),
            ],
            Attention::Sliding {
                kv_heads,
                head_dim,
                window,
            } => vec![
                ("kv_heads", kv_heads),
                ("head_dim", head_dim),
                ("window", window),
            ],
            Attention::Chunked {
                kv_heads,
                head_dim,
                chunk,
            } => vec![
                ("kv_heads", kv_heads),
                ("head_dim", head_dim),
                ("chunk", chunk),
            ],
            Attention::Linear {
                conv_kernel,
                k_heads,
                k_head_dim,
                v_heads,
                v_head_dim,
                conv_bytes,
                state_bytes,
            } => {
                for (f, v) in [("conv_bytes", conv_bytes), ("state_bytes", state_bytes)] {
                    if !(v > 0.0 && v <= 16.0) {
                        return Err(Error::invalid(
                            format!("{what} attention {f}"),
                            format!("{v} must be above 0 and at most 16"),
                        ));
                    }
                }
                vec![
                    ("conv_kernel", conv_kernel),
                    ("k_heads", k_heads),
                    ("k_head_dim", k_head_dim),
                    ("v_heads", v_heads),
                    ("v_head_dim", v_head_dim),
                ]
            }
        };
        check_counts(what, "attention", &fields)?;
        if let Attention::Sliding { window: 1, .. } = self {
            // W = 1 keeps nothing under the strict rule but is a valid (degenerate) window.
        }
        Ok(())
    }
}

fn check_counts(what: &str, part: &str, fields: &[(&str, u64)]) -> Result<(), Error> {
    for &(f, v) in fields {
        if v == 0 {
            return Err(Error::invalid(
                format!("{what} {part} {f}"),
                "must be at least 1",
            ));
        }
        if v > 1 << 24 {
            return Err(Error::invalid(
                format!("{what} {part} {f}"),
                format!("{v} is absurdly large (limit {})", 1u64 << 24),
            ));
        }
    }
    Ok(())
}

impl Mlp {
    /// Its parameters for hidden size `d`.
    pub fn params(&self, d: u64) -> LayerParams {
        let d = d as i128;
        match *self {
            Mlp::Dense { d_ff } => LayerParams {
                fixed: 3 * d * d_ff as i128,
                ..LayerParams::default()
            },
            Mlp::Moe {
                experts,
                top_k,
                shared_experts,
                d_ff_expert,
                d_ff_shared,
            } => {
                let shared_ff = d_ff_shared.unwrap_or(d_ff_expert) as i128;
                LayerParams {
                    fixed: d * experts as i128 + shared_experts as i128 * 3 * d * shared_ff,
                    expert: 3 * d * d_ff_expert as i128,
                    experts: experts as i128,
                    top_k: top_k as i128,
                }
            }
        }
    }

    /// `dense` or `moe`.
    pub fn kind(&self) -> &'static str {
        match self {
            Mlp::Dense { .. } => "dense",
            Mlp::Moe { .. } => "moe",
        }
    }

    fn validate(&self, what: &str) -> Result<(), Error> {
        match *self {
            Mlp::Dense { d_ff } => check_counts(what, "mlp", &[("d_ff", d_ff)]),
            Mlp::Moe {
                experts,
                top_k,
                d_ff_expert,
                d_ff_shared,
                ..
            } => {
                check_counts(
                    what,
                    "mlp",
                    &[
                        ("experts", experts),
                        ("top_k", top_k),
                        ("d_ff_expert", d_ff_expert),
                        ("d_ff_shared", d_ff_shared.unwrap_or(1)),
                    ],
                )?;
                if top_k > experts {
                    return Err(Error::invalid(
                        format!("{what} mlp top_k"),
                        format!("{top_k} is more than the {experts} experts"),
                    ));
                }
                Ok(())
            }
        }
    }
}

/// Distinct windows and chunks a model may have ([`KvReserve`] holds them inline).
pub const MAX_BOUNDS: usize = 6;

/// The reservation rule of a model with windowed layers or a linear state, as plain numbers
/// (`Copy`, for the simulator's per-instance constants): a sequence of up to `n` tokens reserves
/// `ceil((unbounded * n + sum_j values_j * min(n, bound_j)) * kv_bytes + state) / unit)` cache
/// units, [`Arch::peak_values`] regrouped by bound (integers, so the same sum).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KvReserve {
    unbounded: i128,
    bounds: [(i128, u64); MAX_BOUNDS],
    n: usize,
    kv_bytes: f64,
    state: f64,
    unit: f64,
}

impl KvReserve {
    /// Cache units reserved for a sequence of up to `tokens` tokens.
    pub fn units(&self, tokens: u64) -> u64 {
        let mut v = self.unbounded * tokens as i128;
        for &(vals, b) in &self.bounds[..self.n] {
            v += vals * tokens.min(b) as i128;
        }
        ((v as f64 * self.kv_bytes + self.state) / self.unit).ceil() as u64
    }
}

/// The weights a pass over `t` tokens reads ([`Arch::weight_read`]): the layers' fixed
/// parameters, per MoE layer group `(layers, X, k, one expert's parameters)`, the LM head `V*d`.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightRead {
    fixed: i128,
    moe: Vec<(u64, i128, i128, i128)>,
    vocab_params: i128,
    weight_bytes: f64,
    row_bytes: f64,
}

impl WeightRead {
    /// `((fl(fixed) + sum_g fl(n_g) * touched_g(t) * fl(expert_g)) + fl(V*d)) * weight_bytes +
    /// fl(t) * row_bytes`, with `touched(t) = fl(X) * (1 - ipow(1 - k/X, t))` (the levers'
    /// formula, `docs/cost-model.md#moe`) summed over the MoE groups in layer-group order.
    pub fn bytes(&self, t: u64) -> f64 {
        let mut experts = 0.0;
        for &(n, x, k, expert) in &self.moe {
            let touched = x as f64 * (1.0 - ipow(1.0 - int_div(k, x), t));
            experts += n as f64 * touched * expert as f64;
        }
        ((self.fixed as f64 + experts + self.vocab_params as f64) * self.weight_bytes)
            + t as f64 * self.row_bytes
    }
}

/// What one prompt's hand-off holds, split by what compression applies to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandoffParts {
    /// Attention KV bytes (full, MLA, windowed layers).
    pub kv_bytes: f64,
    /// Linear-attention state bytes.
    pub state_bytes: f64,
}

impl Arch {
    /// The runs in layer order (the cycle `cycles` times, then the tail).
    pub fn runs(&self) -> impl Iterator<Item = &LayerRun> + '_ {
        (0..self.cycles)
            .flat_map(move |_| self.cycle.iter())
            .chain(self.tail.iter())
    }

    /// Every distinct run with its total layer count (`count * cycles`, tail once), in cycle
    /// order: the sums below are over these.
    pub fn groups(&self) -> impl Iterator<Item = (u64, &LayerRun)> + '_ {
        self.cycle
            .iter()
            .map(move |r| (r.count * self.cycles, r))
            .chain(self.tail.iter().map(|r| (r.count, r)))
    }

    /// Total layers.
    pub fn n_layers(&self) -> u64 {
        self.groups().map(|(n, _)| n).sum()
    }

    /// Layers of each attention kind, `(kind, layers)` in first-seen order.
    pub fn kind_counts(&self) -> Vec<(&'static str, u64)> {
        let mut out: Vec<(&'static str, u64)> = Vec::new();
        for (n, r) in self.groups() {
            let k = r.attention.kind();
            match out.iter_mut().find(|(x, _)| *x == k) {
                Some(e) => e.1 += n,
                None => out.push((k, n)),
            }
        }
        out
    }

    /// Whether any layer has an MoE MLP.
    pub fn is_moe(&self) -> bool {
        self.groups().any(|(_, r)| matches!(r.mlp, Mlp::Moe { .. }))
    }

    /// Whether any layer is sliding-window or chunked (per-sequence sums are needed to cost a
    /// step exactly).
    pub fn has_windows(&self) -> bool {
        self.groups().any(|(_, r)| {
            matches!(
                r.attention,
                Attention::Sliding { .. } | Attention::Chunked { .. }
            )
        })
    }

    /// KV values per token of the unbounded layers (full attention and MLA): the part of a
    /// sequence's cache that grows with every token.
    pub fn unbounded_values_per_token(&self) -> i128 {
        self.groups()
            .filter(|(_, r)| r.attention.unbounded())
            .map(|(n, r)| n as i128 * r.attention.values_per_token())
            .sum()
    }

    /// KV values per token of the sliding-window and chunked layers.
    pub fn windowed_values_per_token(&self) -> i128 {
        self.groups()
            .filter(|(_, r)| !r.attention.unbounded())
            .map(|(n, r)| n as i128 * r.attention.values_per_token())
            .sum()
    }

    /// KV values a sequence of `n` tokens keeps under the model's rule (no linear state).
    pub fn kept_values(&self, n: u64) -> i128 {
        self.groups()
            .map(|(c, r)| {
                c as i128
                    * r.attention.values_per_token()
                    * r.attention.kept_tokens(n, self.retention) as i128
            })
            .sum()
    }

    /// The most KV values a sequence of up to `n` tokens keeps at once.
    pub fn peak_values(&self, n: u64) -> i128 {
        self.groups()
            .map(|(c, r)| {
                c as i128 * r.attention.values_per_token() * r.attention.peak_tokens(n) as i128
            })
            .sum()
    }

    /// The reservation rule for KV values of `kv_bytes` each and cache units of `unit` bytes;
    /// `None` with more than [`MAX_BOUNDS`] distinct windows and chunks (refused by
    /// [`Arch::validate`]).
    pub fn reserve(&self, kv_bytes: f64, unit: f64) -> Option<KvReserve> {
        let mut r = KvReserve {
            unbounded: self.unbounded_values_per_token(),
            bounds: [(0, 0); MAX_BOUNDS],
            n: 0,
            kv_bytes,
            state: self.state_bytes(),
            unit,
        };
        for (c, run) in self.groups() {
            let b = match run.attention {
                Attention::Sliding { window, .. } => window,
                Attention::Chunked { chunk, .. } => chunk,
                _ => continue,
            };
            let vals = c as i128 * run.attention.values_per_token();
            match r.bounds[..r.n].iter_mut().find(|(_, x)| *x == b) {
                Some(e) => e.0 += vals,
                None => {
                    if r.n == MAX_BOUNDS {
                        return None;
                    }
                    r.bounds[r.n] = (vals, b);
                    r.n += 1;
                }
            }
        }
        Some(r)
    }

    /// Bytes of one sequence's linear-attention states (all layers).
    pub fn state_bytes(&self) -> f64 {
        let (mut conv, mut rec) = (0.0, 0.0);
        for (n, r) in self.groups() {
            if let Attention::Linear {
                conv_bytes,
                state_bytes,
                ..
            } = r.attention
            {
                let (c, s) = r.attention.state_values();
                conv += (n as i128 * c) as f64 * conv_bytes;
                rec += (n as i128 * s) as f64 * state_bytes;
            }
        }
        conv + rec
    }

    /// The hand-off of a `p`-token prompt: `kept_values(p) * kv_bytes` and the states.
    pub fn handoff_parts(&self, p: u64, kv_bytes: f64) -> HandoffParts {
        HandoffParts {
            kv_bytes: self.kept_values(p) as f64 * kv_bytes,
            state_bytes: self.state_bytes(),
        }
    }

    /// Each layer's share of a `p`-token hand-off in layer order, bytes (the slices a layer-wise
    /// sender sends).
    pub fn layer_slices(&self, p: u64, kv_bytes: f64) -> Vec<f64> {
        let mut out = Vec::new();
        for r in self.runs() {
            let b = (r.attention.values_per_token()
                * r.attention.kept_tokens(p, self.retention) as i128) as f64
                * kv_bytes
                + r.attention.state_bytes();
            for _ in 0..r.count {
                out.push(b);
            }
        }
        out
    }

    /// Parameters of every layer, summed: `(active, resident)`.
    pub fn layer_params(&self, d: u64, h: u64) -> (i128, i128) {
        let (mut a, mut res) = (0i128, 0i128);
        for (n, r) in self.groups() {
            let att = r.attention.params(d, h);
            let m = r.mlp.params(d);
            a += n as i128 * (att + m.active());
            res += n as i128 * (att + m.resident());
        }
        (a, res)
    }

    /// What a pass reads of a model of hidden size `d`, `h` heads, `vocab_params = V*d`, weights
    /// of `weight_bytes` and embedding rows of `row_bytes`: every fixed parameter, and per MoE
    /// layer group the expected experts touched ([`WeightRead::bytes`]). Built once per cost
    /// model.
    pub fn weight_read(
        &self,
        d: u64,
        h: u64,
        vocab_params: i128,
        weight_bytes: f64,
        row_bytes: f64,
    ) -> WeightRead {
        let mut fixed: i128 = 0;
        let mut moe = Vec::new();
        for (n, r) in self.groups() {
            let m = r.mlp.params(d);
            fixed += n as i128 * (r.attention.params(d, h) + m.fixed);
            if m.experts > 0 {
                moe.push((n, m.experts, m.top_k, m.expert));
            }
        }
        WeightRead {
            fixed,
            moe,
            vocab_params,
            weight_bytes,
            row_bytes,
        }
    }

    /// Attention FLOPs of prefilling tokens `p0+1 ..= p0+c` of one sequence: per layer, pairs
    /// times [`Attention::prefill_pair_flops`], plus [`Attention::token_flops`] per token.
    pub fn chunk_attn_flops(&self, h: u64, p0: u64, c: u64) -> i128 {
        self.groups()
            .map(|(n, r)| {
                n as i128
                    * (r.attention.chunk_pairs(p0, c) * r.attention.prefill_pair_flops(h)
                        + c as i128 * r.attention.token_flops())
            })
            .sum()
    }

    /// The display shape a [`crate::ModelSpec`] carries beside its arch: `(kv_heads, head_dim,
    /// d_ff)` of the first full, sliding or chunked layer (MLA: one latent of `kv_lora + rope`
    /// values; linear only: its value heads) and of the first MLP (an expert's width for MoE).
    pub fn display_shape(&self) -> (u64, u64, u64) {
        let runs = || self.cycle.iter().chain(&self.tail);
        let att = runs()
            .find_map(|r| r.attention.heads())
            .or_else(|| {
                runs().find_map(|r| match r.attention {
                    Attention::Mla {
                        kv_lora_rank,
                        qk_rope_head_dim,
                        ..
                    } => Some((1, kv_lora_rank + qk_rope_head_dim)),
                    Attention::Linear {
                        v_heads,
                        v_head_dim,
                        ..
                    } => Some((v_heads, v_head_dim)),
                    _ => None,
                })
            })
            .unwrap_or((1, 1));
        let ff = self.cycle.first().map_or(1, |r| match r.mlp {
            Mlp::Dense { d_ff } => d_ff,
            Mlp::Moe { d_ff_expert, .. } => d_ff_expert,
        });
        (att.0, att.1, ff)
    }

    /// The decode terms linear in the rows' positions, summed over the unbounded and linear
    /// layers: `(FLOPs per key, FLOPs per row, KV values per key)`. A decode step of `b` rows at
    /// `K` positions in total (`sum n_i`) costs `per_key * K + per_row * b` FLOPs and reads
    /// `values * K` KV values there; the sliding and chunked layers add
    /// [`Arch::windowed_decode`] per row.
    pub fn decode_linear(&self, h: u64) -> (i128, i128, i128) {
        let (mut fk, mut fr, mut v) = (0i128, 0i128, 0i128);
        for (n, r) in self.groups() {
            let n = n as i128;
            fr += n * r.attention.token_flops();
            if r.attention.unbounded() {
                fk += n * r.attention.decode_pair_flops(h);
                v += n * r.attention.values_per_token();
            }
        }
        (fk, fr, v)
    }

    /// The sliding and chunked layers' decode terms for one row at 1-based position `n`:
    /// `(FLOPs, KV values read)`.
    pub fn windowed_decode(&self, h: u64, n: u64) -> (i128, i128) {
        let (mut f, mut v) = (0i128, 0i128);
        for (c, r) in self.groups() {
            if r.attention.unbounded() || matches!(r.attention, Attention::Linear { .. }) {
                continue;
            }
            let k = c as i128 * r.attention.keys_at(n) as i128;
            f += k * r.attention.decode_pair_flops(h);
            v += k * r.attention.values_per_token();
        }
        (f, v)
    }

    /// KV values a prefill chunk of tokens `p0+1 ..= p0+c` touches: it writes `c` tokens in every
    /// attention layer and reads what the sequence keeps of the `p0` before it.
    pub fn chunk_kv_values(&self, p0: u64, c: u64) -> i128 {
        self.groups()
            .map(|(n, r)| {
                n as i128
                    * r.attention.values_per_token()
                    * (r.attention.kept_tokens(p0, Retention::Window) + c) as i128
            })
            .sum()
    }

    /// Checks every run and the layer count; `what` names the model.
    pub fn validate(&self, what: &str) -> Result<(), Error> {
        if self.cycle.is_empty() {
            return Err(Error::invalid(
                format!("{what} layers"),
                "needs at least one layer run",
            ));
        }
        if self.cycles == 0 || self.cycles > 1 << 16 {
            return Err(Error::invalid(
                format!("{what} cycles"),
                format!("{} must be between 1 and 65536", self.cycles),
            ));
        }
        for r in self.cycle.iter().chain(&self.tail) {
            check_counts(what, "layers", &[("count", r.count)])?;
            r.attention.validate(what)?;
            r.mlp.validate(what)?;
        }
        if self.reserve(1.0, 1.0).is_none() {
            return Err(Error::invalid(
                format!("{what} layers"),
                format!("at most {MAX_BOUNDS} distinct windows and chunks are modelled"),
            ));
        }
        let n = self.n_layers();
        if n > 1 << 16 {
            return Err(Error::invalid(
                format!("{what} layers"),
                format!("{n} layers is absurdly many"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gqa(n: u64) -> LayerRun {
        LayerRun {
            count: n,
            attention: Attention::Full {
                kv_heads: 8,
                head_dim: 128,
            },
            mlp: Mlp::Dense { d_ff: 100 },
        }
    }

    #[test]
    fn pairs_closed_forms_match_the_sums() {
        for n in 0..40u64 {
            for w in 1..12u64 {
                let s: i128 = (1..=n).map(|i| i.min(w) as i128).sum();
                assert_eq!(window_pairs(n, w), s);
                let s: i128 = (1..=n).map(|i| ((i - 1) % w + 1) as i128).sum();
                assert_eq!(chunk_pairs(n, w), s);
            }
        }
    }

    #[test]
    fn retention_rules() {
        let s = Attention::Sliding {
            kv_heads: 1,
            head_dim: 1,
            window: 128,
        };
        assert_eq!(s.kept_tokens(2048, Retention::Window), 128);
        assert_eq!(s.kept_tokens(2048, Retention::Strict), 127);
        assert_eq!(s.kept_tokens(100, Retention::Strict), 100);
        let c = Attention::Chunked {
            kv_heads: 1,
            head_dim: 1,
            chunk: 8192,
        };
        assert_eq!(c.kept_tokens(32768, Retention::Window), 8192);
        assert_eq!(c.kept_tokens(32768, Retention::Strict), 0);
        assert_eq!(c.kept_tokens(10000, Retention::Window), 1808);
        assert_eq!(c.kept_tokens(10000, Retention::Strict), 1808);
        assert_eq!(c.kept_tokens(0, Retention::Window), 0);
        assert_eq!(c.peak_tokens(10000), 8192);
    }

    #[test]
    fn runs_expand_in_layer_order() {
        let a = Arch {
            cycle: vec![gqa(2), gqa(1)],
            cycles: 3,
            tail: vec![gqa(4)],
            retention: Retention::Window,
            tied_embeddings: false,
            why_kv: String::new(),
        };
        assert_eq!(a.n_layers(), 13);
        assert_eq!(
            a.runs().map(|r| r.count).collect::<Vec<_>>(),
            vec![2, 1, 2, 1, 2, 1, 4]
        );
        assert_eq!(a.layer_slices(10, 2.0).len(), 13);
        assert_eq!(a.unbounded_values_per_token(), 13 * 2 * 8 * 128);
    }
}
