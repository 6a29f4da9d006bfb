//! A model's shape: the dense transformer of the reference, the mixture-of-experts shape, and
//! what the cost model reads off them (parameters, weight and KV bytes, the hand-off parts).

use serde::{Deserialize, Serialize};

use crate::arch::{Arch, HandoffParts};
use crate::error::Error;
use crate::pymath::{int_div, ipow};
use crate::variants::{Ced, FftMixing};

crate::named_enum! {
    /// Where the LM head runs during prefill.
    pub enum LmHead: "prefill LM head" {
        /// On every prompt token (the reference default).
        #[default]
        All = "all",
        /// On the last token of each prompt only.
        Last = "last",
    }
}

/// A dense transformer's shape (`ModelSpec`, `docs/cost-model.md#catalogue`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Catalogue key (`llama3-8b`).
    pub key: String,
    /// Display name (`Llama-3-8B`).
    pub name: String,
    /// Transformer layers (L).
    pub n_layers: u64,
    /// Hidden size (d).
    pub d_model: u64,
    /// Query heads (H).
    pub n_heads: u64,
    /// Key/value heads (Hkv).
    pub n_kv_heads: u64,
    /// Head dimension; `None` means `d_model / n_heads` (integer floor division), as the reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_dim: Option<u64>,
    /// MLP width (three matrices, SwiGLU).
    pub d_ff: u64,
    /// Vocabulary size.
    pub vocab: u64,
    /// Bytes per weight (2.0 = BF16).
    pub weight_bytes: f64,
    /// Bytes per cached K or V value (2.0 = BF16).
    pub kv_bytes: f64,
    /// Where the LM head runs during prefill.
    pub prefill_lm_head: LmHead,
    /// Longest prompt the model takes, tokens (trace replay clips longer prompts to it, and says
    /// so). Not part of the reference's model; `None` means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// Mixture of experts (`docs/cost-model.md#moe`): every layer's MLP is routed experts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe: Option<Moe>,
    /// An FFT-mixing model (Hyena, hybrid, block-circulant; `docs/levers.md#fft-mixing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fft: Option<FftMixing>,
    /// A causal encoder-decoder (`docs/levers.md#ced`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ced: Option<Ced>,
    /// The layers kind by kind (MLA, sliding-window, chunked, linear attention, MoE; issue 16).
    /// `None`: every layer is the shape above (the reference's models). With an `arch`,
    /// `n_layers`, `d_model`, `n_heads` and `vocab` hold; `n_kv_heads`, `head_dim` and `d_ff` are
    /// the first full-attention layer's and first MLP's, for display only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<Box<Arch>>,
}

impl ModelSpec {
    /// Whether every layer is attention (no Hyena mixer): the models parallelism, quantisation and
    /// MoE apply to (with no CED, too).
    pub fn is_attention(&self) -> bool {
        self.fft.is_none()
    }

    /// Head dimension: `d // H` unless overridden.
    pub fn hd(&self) -> u64 {
        self.head_dim.unwrap_or(self.d_model / self.n_heads)
    }
    /// Width of K (or of V): `Hkv * hd`.
    pub fn kvw(&self) -> i128 {
        self.n_kv_heads as i128 * self.hd() as i128
    }
    /// Parameters of one dense layer: `(2*d*d + 2*d*kvw) + 3*d*ff`; for an MoE model the active
    /// ones, `(2*d*d + 2*d*kvw) + d*X + (k + S)*(3*d*ff)`.
    pub fn params_per_layer(&self) -> i128 {
        if let Some(moe) = &self.moe {
            return moe.params_per_layer(self);
        }
        let d = self.d_model as i128;
        (2 * d * d + 2 * d * self.kvw()) + 3 * d * self.d_ff as i128
    }
    /// Parameters one layer keeps resident: every expert for MoE (`fixed + X*expert_params`),
    /// else [`ModelSpec::params_per_layer`].
    pub fn resident_params_per_layer(&self) -> i128 {
        match &self.moe {
            Some(moe) => moe.resident_params_per_layer(self),
            None => self.params_per_layer(),
        }
    }
    /// All layers' (active) parameters; an FFT-mixing model sums its attention and Hyena layers.
    pub fn layer_params(&self) -> i128 {
        if let Some(a) = &self.arch {
            return a.layer_params(self.d_model, self.n_heads).0;
        }
        if let Some(fft) = &self.fft {
            let n_attn = fft.n_attn(self.n_layers) as i128;
            let n_hy = self.n_layers as i128 - n_attn;
            return n_attn * self.params_per_layer()
                + n_hy * fft.hyena_params_per_layer(self.d_model, self.d_ff);
        }
        self.n_layers as i128 * self.params_per_layer()
    }
    /// `V*d`: the embedding (or the LM head).
    pub fn vocab_params(&self) -> i128 {
        self.vocab as i128 * self.d_model as i128
    }
    /// Resident parameters: layers plus the embedding and the LM head (`2*V*d`); every expert of
    /// an MoE model.
    pub fn params(&self) -> i128 {
        if let Some(a) = &self.arch {
            let heads = if a.tied_embeddings { 1 } else { 2 };
            return a.layer_params(self.d_model, self.n_heads).1 + heads * self.vocab_params();
        }
        match &self.moe {
            Some(moe) => moe.params(self),
            None => self.layer_params() + 2 * self.vocab_params(),
        }
    }
    /// Parameters read by every forward pass: layers plus the LM head (active ones for MoE).
    pub fn matmul_params(&self) -> i128 {
        self.layer_params() + self.vocab_params()
    }
    /// Resident weight bytes (capacity).
    pub fn weight_bytes_total(&self) -> f64 {
        self.params() as f64 * self.weight_bytes
    }
    /// Weight bytes streamed by every forward pass (never used for an MoE model, whose passes read
    /// the experts they touch: [`crate::Moe::weight_bytes_read`]).
    pub fn weight_bytes_streamed(&self) -> f64 {
        self.matmul_params() as f64 * self.weight_bytes
    }
    /// Weight bytes one forward pass over `t` tokens reads (`weight_bytes_read`): the weights
    /// streamed plus `t` embedding rows; an MoE model reads only the experts its tokens touch
    /// ([`crate::Moe::weight_bytes_read`]).
    pub fn weight_bytes_read(&self, t: u64) -> f64 {
        if let Some(w) = self.arch_weight_read() {
            return w.bytes(t);
        }
        match &self.moe {
            Some(moe) => moe.weight_bytes_read(self, t),
            None => self.weight_bytes_streamed() + t as f64 * self.embedding_row_bytes(),
        }
    }
    /// What a pass of a layer-kind model with MoE layers reads ([`crate::arch::WeightRead`]);
    /// `None` for every other model.
    pub fn arch_weight_read(&self) -> Option<crate::arch::WeightRead> {
        let a = self.arch.as_deref().filter(|a| a.is_moe())?;
        Some(a.weight_read(
            self.d_model,
            self.n_heads,
            self.vocab_params(),
            self.weight_bytes,
            self.embedding_row_bytes(),
        ))
    }

    /// Bytes of one embedding row.
    pub fn embedding_row_bytes(&self) -> f64 {
        self.d_model as f64 * self.weight_bytes
    }
    /// KV bytes per token: `(2 * L * Hkv * hd) * kv_bytes`; an FFT-mixing model caches
    /// `2*n_attn*Hkv*hd + n_hy*N*d` values (direct decode) or its attention layers' only
    /// (distilled).
    pub fn kv_bytes_per_token(&self) -> f64 {
        if let Some(a) = &self.arch {
            return a.unbounded_values_per_token() as f64 * self.kv_bytes;
        }
        let per_layer = 2 * self.n_kv_heads as i128 * self.hd() as i128;
        match &self.fft {
            None => (self.n_layers as i128 * per_layer) as f64 * self.kv_bytes,
            Some(fft) => {
                let n_attn = fft.n_attn(self.n_layers) as i128;
                ((n_attn * per_layer) + fft.conv_values(self.n_layers, self.d_model)) as f64
                    * self.kv_bytes
            }
        }
    }
    /// Bytes of a distilled Hyena state per sequence (0.0 for every other model).
    pub fn state_bytes_per_seq(&self) -> f64 {
        self.fft
            .as_ref()
            .map_or(0.0, |f| f.state_bytes_per_seq(self.n_layers, self.d_model))
    }
    /// Bytes of a prompt's hand-off: `P * kv_bytes_per_token`, or the distilled state of a
    /// distilled Hyena model whatever the prompt.
    pub fn handoff_bytes(&self, prompt_tokens: u64) -> f64 {
        if let Some(a) = &self.arch {
            let h = a.handoff_parts(prompt_tokens, self.kv_bytes);
            return h.kv_bytes + h.state_bytes;
        }
        let state = self.state_bytes_per_seq();
        if state != 0.0 {
            return state;
        }
        prompt_tokens as f64 * self.kv_bytes_per_token()
    }

    /// A prompt's hand-off split into attention KV and linear-attention state (a model without
    /// an [`Arch`]: all of it KV, the distilled Hyena state aside).
    pub fn handoff_parts(&self, prompt_tokens: u64) -> HandoffParts {
        match &self.arch {
            Some(a) => a.handoff_parts(prompt_tokens, self.kv_bytes),
            None => HandoffParts {
                kv_bytes: self.handoff_bytes(prompt_tokens),
                state_bytes: 0.0,
            },
        }
    }

    /// The KV bytes a decode instance reserves for a sequence of up to `tokens` tokens: the
    /// peak of what it keeps ([`Arch::peak_values`]) plus its states; `tokens * kv_bytes_per_token`
    /// without an [`Arch`].
    pub fn reserved_kv_bytes(&self, tokens: u64) -> f64 {
        match &self.arch {
            Some(a) => a.peak_values(tokens) as f64 * self.kv_bytes + a.state_bytes(),
            None => tokens as f64 * self.kv_bytes_per_token(),
        }
    }

    /// Each layer's share of a `prompt_tokens` hand-off, in layer order, when the layers' slices
    /// differ (a layer-kind model with windowed and full layers, or linear states); `None` when
    /// every layer sends the same bytes (every other model: the chapter's `L` equal slices).
    pub fn layer_fractions(&self, prompt_tokens: u64) -> Option<Vec<f64>> {
        let a = self.arch.as_deref()?;
        let s = a.layer_slices(prompt_tokens, self.kv_bytes);
        if s.iter().all(|x| *x == s[0]) {
            return None;
        }
        let total: f64 = s.iter().sum();
        Some(s.iter().map(|x| x / total).collect())
    }

    /// Whether the cache is sized by layer kind and is not `tokens x kv_bytes_per_token` (a model
    /// with windowed layers or a linear state).
    pub fn kv_is_bounded(&self) -> bool {
        self.arch
            .as_ref()
            .is_some_and(|a| a.has_windows() || a.state_bytes() > 0.0)
    }

    /// Validates the shape (every count at least 1, byte sizes positive).
    pub fn validate(&self) -> Result<(), Error> {
        let counts = [
            ("layers", self.n_layers),
            ("d_model", self.d_model),
            ("heads", self.n_heads),
            ("kv_heads", self.n_kv_heads),
            ("d_ff", self.d_ff),
            ("vocab", self.vocab),
        ];
        for (what, v) in counts {
            if v == 0 {
                return Err(Error::invalid(
                    format!("model '{}' {what}", self.key),
                    "must be at least 1",
                ));
            }
            if v > 1 << 24 {
                return Err(Error::invalid(
                    format!("model '{}' {what}", self.key),
                    format!("{v} is absurdly large (limit {})", 1u64 << 24),
                ));
            }
        }
        if self.n_kv_heads > self.n_heads {
            return Err(Error::invalid(
                format!("model '{}' kv_heads", self.key),
                format!(
                    "{} is more than the {} query heads",
                    self.n_kv_heads, self.n_heads
                ),
            ));
        }
        if self.hd() == 0 {
            return Err(Error::invalid(
                format!("model '{}' head_dim", self.key),
                "must be at least 1 (d_model is smaller than heads)",
            ));
        }
        if let Some(hd) = self.head_dim {
            if hd > 1 << 16 {
                return Err(Error::invalid(
                    format!("model '{}' head_dim", self.key),
                    format!("{hd} is absurdly large"),
                ));
            }
        }
        crate::error::positive(
            &format!("model '{}' weight_bytes", self.key),
            self.weight_bytes,
        )?;
        crate::error::positive(&format!("model '{}' kv_bytes", self.key), self.kv_bytes)?;
        if self.weight_bytes > 16.0 || self.kv_bytes > 16.0 {
            return Err(Error::invalid(
                format!("model '{}' bytes per value", self.key),
                "must be at most 16",
            ));
        }
        self.validate_variants()
    }

    /// The construction checks of `docs/cost-model.md#catalogue` for the FFT-mixing, CED and MoE parts, in
    /// the reference's order.
    fn validate_variants(&self) -> Result<(), Error> {
        let key = &self.key;
        if let Some(a) = &self.arch {
            a.validate(&format!("model '{key}'"))?;
            if a.n_layers() != self.n_layers {
                return Err(Error::invalid(
                    format!("model '{key}' layers"),
                    format!(
                        "{} does not match the {} layers its layer runs describe",
                        self.n_layers,
                        a.n_layers()
                    ),
                ));
            }
            if self.fft.is_some() || self.ced.is_some() || self.moe.is_some() {
                return Err(Error::invalid(
                    format!("model '{key}' layers"),
                    "a model described by layer kinds takes its MoE from its layers and cannot \
                     be an FFT-mixing or CED model",
                ));
            }
        }
        if let Some(f) = &self.fft {
            f.validate(key)?;
        }
        if let Some(c) = &self.ced {
            if self.fft.is_some() {
                return Err(Error::invalid(
                    format!("model '{key}' ced_encoder_layers"),
                    "CED is modelled for attention models only",
                ));
            }
            c.validate(key, self.n_layers)?;
        }
        if let Some(m) = &self.moe {
            if self.fft.is_some() || self.ced.is_some() {
                return Err(Error::invalid(
                    format!("model '{key}' n_experts"),
                    "mixture of experts is modelled for attention models without CED only",
                ));
            }
            m.validate()?;
        }
        Ok(())
    }
}

/// The mixture-of-experts shape of a model (`docs/cost-model.md#catalogue`, `docs/cost-model.md#moe`): `X` routed experts of the
/// model's `d_ff` each, `k` of them per token, plus `S` always-on shared experts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Moe {
    /// Routed experts per layer (X).
    pub n_experts: u64,
    /// Experts each token runs (k).
    pub top_k: u64,
    /// Shared experts every token runs (S).
    pub n_shared_experts: u64,
}

impl Moe {
    /// Mixtral-8x7B: X = 8, k = 2, S = 0 (`docs/cost-model.md#catalogue`).
    pub fn mixtral() -> Self {
        Moe {
            n_experts: 8,
            top_k: 2,
            n_shared_experts: 0,
        }
    }

    /// `1 <= k <= X` (`docs/cost-model.md#catalogue`).
    pub fn validate(&self) -> Result<(), Error> {
        if self.top_k < 1 || self.top_k > self.n_experts {
            return Err(Error::invalid(
                "top_k",
                format!("must be between 1 and n_experts ({})", self.n_experts),
            ));
        }
        Ok(())
    }

    /// `3*d*ff`: one SwiGLU expert's parameters.
    pub fn expert_params(&self, m: &ModelSpec) -> i128 {
        3 * m.d_model as i128 * m.d_ff as i128
    }

    fn attn_params(m: &ModelSpec) -> i128 {
        let d = m.d_model as i128;
        2 * d * d + 2 * d * m.kvw()
    }

    /// `(2*d*d + 2*d*kvw) + d*X + S*expert_params`: attention, router and shared experts.
    pub fn fixed_params_per_layer(&self, m: &ModelSpec) -> i128 {
        let d = m.d_model as i128;
        Self::attn_params(m)
            + d * self.n_experts as i128
            + self.n_shared_experts as i128 * self.expert_params(m)
    }

    /// The active parameters per layer: `(2*d*d + 2*d*kvw) + d*X + (k + S)*(3*d*ff)`.
    pub fn params_per_layer(&self, m: &ModelSpec) -> i128 {
        let d = m.d_model as i128;
        Self::attn_params(m)
            + d * self.n_experts as i128
            + (self.top_k + self.n_shared_experts) as i128 * self.expert_params(m)
    }

    /// `L * params_per_layer` (active).
    pub fn layer_params(&self, m: &ModelSpec) -> i128 {
        m.n_layers as i128 * self.params_per_layer(m)
    }

    /// `layer_params + V*d` (active).
    pub fn matmul_params(&self, m: &ModelSpec) -> i128 {
        self.layer_params(m) + m.vocab as i128 * m.d_model as i128
    }

    /// Every resident parameter: `L*(fixed + X*expert_params) + 2*V*d`.
    pub fn params(&self, m: &ModelSpec) -> i128 {
        m.n_layers as i128 * self.resident_params_per_layer(m)
            + 2 * m.vocab as i128 * m.d_model as i128
    }

    /// `fixed + X*expert_params`: one layer with all its experts.
    pub fn resident_params_per_layer(&self, m: &ModelSpec) -> i128 {
        self.fixed_params_per_layer(m) + self.n_experts as i128 * self.expert_params(m)
    }

    /// `fl(params) * weight_bytes`.
    pub fn weight_bytes_total(&self, m: &ModelSpec) -> f64 {
        self.params(m) as f64 * m.weight_bytes
    }

    /// Expected experts touched by `t` tokens in one layer: `fl(X) * (1.0 - ipow(1.0 - k/X, t))`.
    pub fn experts_touched(&self, t: u64) -> f64 {
        let x = self.n_experts as i128;
        (x as f64) * (1.0 - ipow(1.0 - int_div(self.top_k as i128, x), t))
    }

    /// Weight bytes a pass over `t` tokens reads:
    /// `((fl(L) * (fl(fixed) + et(t) * fl(expert_params)) + fl(V*d)) * wb) + fl(t) * e`.
    pub fn weight_bytes_read(&self, m: &ModelSpec, t: u64) -> f64 {
        let per_layer = self.fixed_params_per_layer(m) as f64
            + self.experts_touched(t) * self.expert_params(m) as f64;
        ((m.n_layers as f64 * per_layer + (m.vocab as i128 * m.d_model as i128) as f64)
            * m.weight_bytes)
            + t as f64 * m.embedding_row_bytes()
    }

    /// FLOPs of the routed experts over `t` tokens: `(((2.0 * fl(L)) * fl(k)) * fl(expert_params)) * fl(t)`.
    pub fn expert_flops(&self, m: &ModelSpec, t: u64) -> f64 {
        (((2.0 * m.n_layers as f64) * self.top_k as f64) * self.expert_params(m) as f64) * t as f64
    }
}
