//! The catalogue: model shapes, accelerators, links and KV compression formats, exactly as the
//! reference (`hardware.py` of Disaggregated_Inference_Sim, cost-model.md §2) defines them.
//!
//! Unit constants are multiplied at run time (`value * GB`), never written as literals, because
//! `2.039 * 1e12` is not the literal `2.039e12` (cost-model.md N3).

use serde::{Deserialize, Serialize};

use crate::arch::{Arch, HandoffParts};
use crate::error::Error;
use crate::parallel::Moe;
use crate::variants::{Ced, DecodeStyle, FftMixing, Mixer, TransformEngine};

/// 1e9: gigabytes (or giga-anything) as the reference spells it.
pub const GB: f64 = 1e9;
/// 1e12: terabytes / tera-FLOPs.
pub const TB: f64 = 1e12;

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

/// A dense transformer's shape (`ModelSpec`, cost-model.md §2.1).
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
    /// Mixture of experts (levers-cost.md §4): every layer's MLP is routed experts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe: Option<Moe>,
    /// An FFT-mixing model (Hyena, hybrid, block-circulant; levers-cost.md §9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fft: Option<FftMixing>,
    /// A causal encoder-decoder (levers-cost.md §8).
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
    #[allow(clippy::too_many_arguments)]
    fn preset(key: &str, name: &str, l: u64, d: u64, h: u64, hkv: u64, ff: u64, v: u64) -> Self {
        ModelSpec {
            key: key.into(),
            name: name.into(),
            n_layers: l,
            d_model: d,
            n_heads: h,
            n_kv_heads: hkv,
            head_dim: None,
            d_ff: ff,
            vocab: v,
            weight_bytes: 2.0,
            kv_bytes: 2.0,
            prefill_lm_head: LmHead::All,
            context_tokens: None,
            moe: None,
            fft: None,
            ced: None,
            arch: None,
        }
    }

    fn with_moe(mut self, moe: Moe) -> Self {
        self.moe = Some(moe);
        self
    }

    fn with_fft(mut self, fft: FftMixing) -> Self {
        self.fft = Some(fft);
        self
    }

    fn with_ced(mut self, e: u64) -> Self {
        self.ced = Some(Ced::new(e));
        self
    }

    /// A copy under a new key and name.
    fn renamed(&self, key: &str, name: &str) -> Self {
        ModelSpec {
            key: key.into(),
            name: name.into(),
            ..self.clone()
        }
    }

    /// Whether every layer is attention (no Hyena mixer): the models parallelism, quantisation and
    /// MoE apply to (with no CED, too).
    pub fn is_attention(&self) -> bool {
        self.fft.is_none()
    }

    fn with_context(mut self, tokens: u64) -> Self {
        self.context_tokens = Some(tokens);
        self
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

    /// The construction checks of levers-cost.md §3.1 for the FFT-mixing, CED and MoE parts, in
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

/// An accelerator (`Accelerator`, cost-model.md §2.3). Rates are SI: FLOP/s, bytes/s, bytes, W.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// Catalogue key (`h100`).
    pub key: String,
    /// Display name (`H100-SXM`).
    pub name: String,
    /// Dense BF16 peak, FLOP/s.
    pub peak_flops: f64,
    /// HBM bandwidth, bytes/s.
    pub mem_bw: f64,
    /// HBM capacity, bytes.
    pub mem_capacity: f64,
    /// Achievable fraction of the FLOP peak.
    pub flops_eff: f64,
    /// Achievable fraction of the memory bandwidth.
    pub bw_eff: f64,
    /// Thermal design power per device, W.
    pub tdp_w: f64,
    /// Static (idle) power per device, W.
    pub idle_w: f64,
    /// Dynamic energy per FLOP, pJ.
    pub pj_per_flop: f64,
    /// Dynamic energy per HBM byte, pJ.
    pub pj_per_byte: f64,
    /// Native low-precision formats and their rate multiple of BF16 (informational).
    #[serde(default)]
    pub native_formats: Vec<(String, f64)>,
    /// Scale-up link key (informational; used only by the tensor-parallel lever).
    #[serde(default)]
    pub scale_up: String,
    /// Efficiency of FFT work on the digital units relative to dense FLOPs (1.0): an FFT-mixing
    /// model's transform and spectral FLOPs take `1 / fft_efficiency` of their count in time and
    /// energy (levers-cost.md §9.3).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub fft_efficiency: f64,
    /// An optical Fourier-transform engine beside the GPU (levers-cost.md §10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<TransformEngine>,
    /// A fitted device's fixed time per step, seconds: replaces the cost model's
    /// `step_overhead_s` (0.5 ms) for an instance of this device. `None` on every built-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_overhead_s: Option<f64>,
    /// A fitted device's time per sequence served by a step, seconds: every step of an instance
    /// of this device takes `per_seq_overhead_s * rows` more (rows: [`crate::CostModel`]'s step
    /// functions say which). `None` on every built-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_seq_overhead_s: Option<f64>,
    /// Where a fitted device's numbers come from (`disagg calibrate`). `None` on every built-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// The provenance of a device fitted to measured step times (`disagg calibrate`): what it was
/// fitted to, how, and how well. MAPEs are fractions (0.079 = 7.9 %).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// The measurement files fitted to (file names, e.g. `perf_model.csv`).
    pub measurements: Vec<String>,
    /// The fitting method, one line.
    pub fit: String,
    /// The measurement groups used, as `model/device/tpN`.
    pub groups: Vec<String>,
    /// Mean absolute percentage error of prefill step times on the fitted data (a fraction).
    pub in_sample_prefill_mape: f64,
    /// Mean absolute percentage error of decode step times on the fitted data (a fraction).
    pub in_sample_decode_mape: f64,
    /// Cross-validated prefill MAPE (a fraction).
    pub cv_prefill_mape: f64,
    /// Cross-validated decode MAPE (a fraction).
    pub cv_decode_mape: f64,
    /// The tool and version that wrote it (`disagg calibrate 0.1.0`).
    pub tool: String,
}

impl Calibration {
    /// Checks every MAPE is finite and at least 0 and `fit` is one line; errors name the device
    /// `key` and the field.
    pub fn validate(&self, key: &str) -> Result<(), Error> {
        for (what, v) in [
            ("in_sample_prefill_mape", self.in_sample_prefill_mape),
            ("in_sample_decode_mape", self.in_sample_decode_mape),
            ("cv_prefill_mape", self.cv_prefill_mape),
            ("cv_decode_mape", self.cv_decode_mape),
        ] {
            crate::error::non_negative(&format!("device '{key}' calibration.{what}"), v)?;
        }
        if self.fit.contains('\n') {
            return Err(Error::invalid(
                format!("device '{key}' calibration.fit"),
                "must be one line",
            ));
        }
        Ok(())
    }

    /// The groups' summary for a report line: `perf_model.csv (8 groups)`.
    pub fn summary(&self) -> String {
        let n = self.groups.len();
        format!(
            "{} ({n} group{})",
            self.measurements.join(", "),
            if n == 1 { "" } else { "s" }
        )
    }
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

impl Device {
    /// FLOP per byte at which compute and memory take equal time.
    pub fn ridge_point(&self) -> f64 {
        (self.peak_flops * self.flops_eff) / (self.mem_bw * self.bw_eff)
    }

    /// This device without its fitted overheads (`step_overhead_s`, `per_seq_overhead_s`): for
    /// the cost models that run no step of their own (a draft's passes, a parallel layout's
    /// stage).
    pub fn without_overheads(&self) -> Device {
        Device {
            step_overhead_s: None,
            per_seq_overhead_s: None,
            ..self.clone()
        }
    }

    /// Validates every field.
    pub fn validate(&self) -> Result<(), Error> {
        let k = &self.key;
        crate::error::positive(&format!("device '{k}' peak_flops"), self.peak_flops)?;
        crate::error::positive(&format!("device '{k}' mem_bw"), self.mem_bw)?;
        crate::error::positive(&format!("device '{k}' mem_capacity"), self.mem_capacity)?;
        for (what, v) in [("flops_eff", self.flops_eff), ("bw_eff", self.bw_eff)] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(Error::invalid(
                    format!("device '{k}' {what}"),
                    format!("must be in (0, 1], got {v}"),
                ));
            }
        }
        crate::error::positive(&format!("device '{k}' tdp_w"), self.tdp_w)?;
        crate::error::non_negative(&format!("device '{k}' idle_w"), self.idle_w)?;
        crate::error::non_negative(&format!("device '{k}' pj_per_flop"), self.pj_per_flop)?;
        crate::error::non_negative(&format!("device '{k}' pj_per_byte"), self.pj_per_byte)?;
        crate::error::positive(&format!("device '{k}' fft_efficiency"), self.fft_efficiency)?;
        if let Some(e) = &self.engine {
            e.validate(k)?;
        }
        if let Some(x) = self.step_overhead_s {
            crate::error::non_negative(&format!("device '{k}' step_overhead_s"), x)?;
        }
        if let Some(x) = self.per_seq_overhead_s {
            crate::error::non_negative(&format!("device '{k}' per_seq_overhead_s"), x)?;
        }
        if let Some(c) = &self.calibration {
            c.validate(k)?;
        }
        if self.idle_w >= self.tdp_w {
            return Err(Error::invalid(
                format!("device '{k}' idle_w"),
                format!("{} W is not below the TDP of {} W", self.idle_w, self.tdp_w),
            ));
        }
        Ok(())
    }
}

/// A KV link (`Link`, cost-model.md §2.4): per channel and per direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Catalogue key (`eth-25g`).
    pub key: String,
    /// Display name (`25 GbE`).
    pub name: String,
    /// Bytes per second per channel, one direction.
    pub bandwidth_bps: f64,
    /// Fixed latency per transfer, seconds.
    pub latency_s: f64,
    /// Concurrent transfers (independent FIFO servers).
    pub channels: u32,
    /// End-to-end energy per bit, pJ.
    pub pj_per_bit: f64,
}

impl Link {
    fn preset(key: &str, name: &str, bw_gb: f64, latency_s: f64, pj: f64) -> Self {
        Link {
            key: key.into(),
            name: name.into(),
            bandwidth_bps: bw_gb * GB,
            latency_s,
            channels: 1,
            pj_per_bit: pj,
        }
    }

    /// `nbytes / bandwidth`: the part of a transfer that scales with bytes.
    pub fn wire_time(&self, nbytes: f64) -> f64 {
        nbytes / self.bandwidth_bps
    }

    /// `latency + nbytes / bandwidth` (the one transfer-time formula; [`crate::transfer`] uses it).
    pub fn transfer_time(&self, nbytes: f64) -> f64 {
        self.latency_s + self.wire_time(nbytes)
    }

    /// A host-link swap of `blocks` KV blocks holding `nbytes` (levers-scheduling.md §6.2): one
    /// latency per block, `blocks * latency + nbytes / bandwidth`.
    pub fn blocks_transfer_time(&self, blocks: u64, nbytes: f64) -> f64 {
        blocks as f64 * self.latency_s + self.wire_time(nbytes)
    }

    /// Link energy of moving `nbytes`: `((nbytes * 8) * pj) * 1e-12`.
    pub fn energy_j(&self, nbytes: f64) -> f64 {
        ((nbytes * 8.0) * self.pj_per_bit) * 1e-12
    }

    /// Validates every field.
    pub fn validate(&self) -> Result<(), Error> {
        let k = &self.key;
        crate::error::positive(&format!("link '{k}' bandwidth"), self.bandwidth_bps)?;
        crate::error::non_negative(&format!("link '{k}' latency"), self.latency_s)?;
        crate::error::non_negative(&format!("link '{k}' pj_per_bit"), self.pj_per_bit)?;
        if self.channels == 0 || self.channels > 4096 {
            return Err(Error::invalid(
                format!("link '{k}' channels"),
                format!("must be between 1 and 4096, got {}", self.channels),
            ));
        }
        if self.latency_s > 3600.0 {
            return Err(Error::invalid(
                format!("link '{k}' latency"),
                format!("{} s is absurd", self.latency_s),
            ));
        }
        Ok(())
    }
}

/// A KV hand-off compression format (`KVCompression`, cost-model.md §2.5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvCompression {
    /// Catalogue key (`fp8`).
    pub key: String,
    /// What it is, with its byte formula.
    pub description: String,
    /// BF16 bytes in per byte out.
    pub ratio: f64,
    /// Element-wise work per BF16 value.
    pub ops_per_value: f64,
    /// Also a forward and an inverse real FFT along the token axis.
    pub fft: bool,
    /// Bytes of scale stored per KV vector (one layer's K, or V, of one token: `Hkv * hd`
    /// values), on top of `ratio`'s values. 0 for the reference's presets, whose `ratio` already
    /// includes their scales.
    #[serde(default)]
    pub scale_bytes_per_vector: f64,
}

impl KvCompression {
    fn preset(key: &str, ratio: f64, ops: f64, fft: bool, description: &str) -> Self {
        KvCompression {
            key: key.into(),
            description: description.into(),
            ratio,
            ops_per_value: ops,
            fft,
            scale_bytes_per_vector: 0.0,
        }
    }

    /// This format for `model`'s cache: a per-vector scale folds into the ratio,
    /// `ratio' = 2W / (2W / ratio + scale)` with `W = Hkv * hd` values per vector. Formats without
    /// one are returned unchanged (bit for bit).
    pub fn for_model(&self, model: &ModelSpec) -> KvCompression {
        let mut c = self.clone();
        if self.scale_bytes_per_vector != 0.0 {
            let w2 = 2.0 * model.kvw() as f64;
            c.ratio = w2 / (w2 / self.ratio + self.scale_bytes_per_vector);
            c.scale_bytes_per_vector = 0.0;
        }
        c
    }
    /// True for the identity preset (`none`): no work, no change in size.
    pub fn is_identity(&self) -> bool {
        self.ratio == 1.0 && self.ops_per_value == 0.0 && !self.fft
    }
}

crate::named_enum! {
    /// Where the KV cache is compressed.
    pub enum CompressAt: "compression placement" {
        /// A stage inside the link compresses at line rate (the reference's `transit`, the default).
        #[default]
        Transit = "transit" | "link",
        /// The prefill GPU compresses before sending (the reference's `endpoint`).
        Endpoint = "endpoint" | "gpu",
    }
}

/// KV compression on the hand-off path (`KVTransit`, cost-model.md §2.5), with the reference's
/// defaults for the in-link stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvTransit {
    /// The format.
    pub compression: KvCompression,
    /// Where it runs.
    pub at: CompressAt,
    /// In-link compute budget, operations per line byte (1.6).
    pub ops_per_byte: f64,
    /// In-link stage energy per input bit, pJ (1.0).
    pub pj_per_bit: f64,
    /// In-link stage latency, seconds (1e-6).
    pub latency_s: f64,
    /// The in-link stage does the FFT passively (free).
    pub native_fft: bool,
}

impl KvTransit {
    /// The reference's defaults for a format and a placement.
    pub fn new(compression: KvCompression, at: CompressAt) -> Self {
        KvTransit {
            compression,
            at,
            ops_per_byte: 1.6,
            pj_per_bit: 1.0,
            latency_s: 1e-6,
            native_fft: true,
        }
    }

    /// Compression work for `nbytes` of BF16 KV of a `prompt_tokens` prompt (cost-model.md §4.3).
    pub fn ops(&self, nbytes: f64, prompt_tokens: u64, kv_bytes: f64, on_gpu: bool) -> f64 {
        let values = nbytes / kv_bytes;
        let mut per = self.compression.ops_per_value;
        if self.compression.fft && (on_gpu || !self.native_fft) {
            let n = crate::pymath::pow2_at_least(prompt_tokens.max(1));
            per += (2.0 * crate::pymath::rfft_flops(n)) / n as f64;
        }
        per * values
    }
}

/// The catalogue: every preset, in the reference's order, plus anything the user added.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Catalogue {
    /// Model shapes.
    pub models: Vec<ModelSpec>,
    /// Accelerators.
    pub devices: Vec<Device>,
    /// KV links.
    pub links: Vec<Link>,
    /// KV compression formats.
    pub compression: Vec<KvCompression>,
}

impl Default for Catalogue {
    fn default() -> Self {
        Self::builtin()
    }
}

/// Where a built-in model's configuration comes from, for the models added with the
/// calibration data (issue 15): the Hugging Face repository and file. `None` for the reference's
/// models (cost-model.md §2.2 is their source).
pub fn model_source(key: &str) -> Option<&'static str> {
    match key {
        "llama2-7b" => Some("huggingface.co/meta-llama/Llama-2-7b-hf config.json"),
        "llama2-70b" => Some("huggingface.co/meta-llama/Llama-2-70b-hf config.json"),
        "bloom-176b" => Some(
            "huggingface.co/bigscience/bloom config.json (MLP 2 x 57344 GELU written as d_ff 38229)",
        ),
        other => crate::served::served_source(other),
    }
}

fn h100_like(key: &str, name: &str, mem_bw: f64, mem_cap: f64) -> Device {
    Device {
        key: key.into(),
        name: name.into(),
        peak_flops: 989.0 * TB,
        mem_bw,
        mem_capacity: mem_cap,
        flops_eff: 0.55,
        bw_eff: 0.80,
        tdp_w: 700.0,
        idle_w: 100.0,
        pj_per_flop: 1.0,
        pj_per_byte: 60.0,
        native_formats: vec![("fp8".into(), 2.0), ("int8".into(), 2.0)],
        scale_up: "nvlink4".into(),
        fft_efficiency: 1.0,
        engine: None,
        step_overhead_s: None,
        per_seq_overhead_s: None,
        calibration: None,
    }
}

fn a100_like(key: &str, name: &str, mem_bw: f64, mem_cap: f64) -> Device {
    Device {
        key: key.into(),
        name: name.into(),
        peak_flops: 312.0 * TB,
        mem_bw,
        mem_capacity: mem_cap,
        flops_eff: 0.55,
        bw_eff: 0.80,
        tdp_w: 400.0,
        idle_w: 60.0,
        pj_per_flop: 1.6,
        pj_per_byte: 70.0,
        native_formats: vec![("int8".into(), 2.0)],
        scale_up: "nvlink3".into(),
        fft_efficiency: 1.0,
        engine: None,
        step_overhead_s: None,
        per_seq_overhead_s: None,
        calibration: None,
    }
}

impl Catalogue {
    /// The reference's presets (cost-model.md §2.2–§2.5).
    pub fn builtin() -> Self {
        let models = vec![
            // Context lengths: Llama 3.1's 128k for the Llama-3 shapes (3.1 has the same shapes),
            // Mistral-7B v0.2's 32k, Yi-34B's 4k, OPT's 2k.
            ModelSpec::preset("llama3-8b", "Llama-3-8B", 32, 4096, 32, 8, 14336, 128256)
                .with_context(131072),
            ModelSpec::preset("llama3-70b", "Llama-3-70B", 80, 8192, 64, 8, 28672, 128256)
                .with_context(131072),
            ModelSpec::preset("mistral-7b", "Mistral-7B", 32, 4096, 32, 8, 14336, 32000)
                .with_context(32768),
            ModelSpec::preset("yi-34b", "Yi-34B", 60, 7168, 56, 8, 20480, 64000).with_context(4096),
            ModelSpec::preset("opt-13b", "OPT-13B", 40, 5120, 40, 40, 13653, 50272)
                .with_context(2048),
            ModelSpec::preset("llama3.2-1b", "Llama-3.2-1B", 16, 2048, 32, 8, 8192, 128256)
                .with_context(131072),
        ];
        // The reference's other models (levers-cost.md §3.2): Mixtral with its experts, and the
        // FFT-mixing and CED variants of the Llama-3 shapes.
        let l8 = models[0].clone();
        let l70 = models[1].clone();
        let hyena = FftMixing::new(Mixer::Hyena);
        let extra = [
            ModelSpec::preset(
                "mixtral-8x7b",
                "Mixtral-8x7B",
                32,
                4096,
                32,
                8,
                14336,
                32000,
            )
            .with_context(32768)
            .with_moe(Moe::mixtral()),
            l8.renamed("llama3-8b-hyena", "Llama-3-8B-shape Hyena-2")
                .with_fft(hyena.clone()),
            l8.renamed(
                "llama3-8b-hyena-dist",
                "Llama-3-8B-shape Hyena-2 (distilled decode)",
            )
            .with_fft(FftMixing {
                decode_style: DecodeStyle::Distilled,
                ..hyena.clone()
            }),
            l8.renamed("llama3-8b-hybrid", "Llama-3-8B-shape hybrid 1:3")
                .with_fft(FftMixing::new(Mixer::Hybrid)),
            l8.renamed(
                "llama3-8b-hyena-circ",
                "Llama-3-8B-shape Hyena-2 + block-circulant 256",
            )
            .with_fft(FftMixing {
                circulant_block: 256,
                ..hyena
            }),
            l8.renamed("llama3-8b-ced", "Llama-3-8B-shape CED 16+16")
                .with_ced(16),
            l70.renamed("llama3-70b-ced", "Llama-3-70B-shape CED 40+40")
                .with_ced(40),
        ];
        let mut models = models;
        models.extend(extra);
        // The models measured in the calibration data (issue 15), fp16 weights and KV, each
        // config from its Hugging Face repository's `config.json` ([`model_source`]):
        // meta-llama/Llama-2-7b-hf (32 layers, hidden 4096, 32 heads, 32 KV heads, FFN 11008,
        // vocab 32000, 4096 positions), meta-llama/Llama-2-70b-hf (80, 8192, 64, 8, 28672, 32000,
        // 4096) and bigscience/bloom (BLOOM-176B: n_layer 70, hidden 14336, n_head 112 (MHA,
        // head dim 128), vocab 250880, trained on 2048-token sequences). BLOOM's MLP is two
        // matrices of 4*d = 57344 with GELU, not three (SwiGLU): in the catalogue's
        // three-matrix convention, as the reference writes OPT-13B's 2 x 20480 as d_ff 13653,
        // it is d_ff = round(2 * 57344 / 3) = round(38229.33) = 38229.
        models.extend([
            ModelSpec::preset("llama2-7b", "Llama-2-7B", 32, 4096, 32, 32, 11008, 32000)
                .with_context(4096),
            ModelSpec::preset("llama2-70b", "Llama-2-70B", 80, 8192, 64, 8, 28672, 32000)
                .with_context(4096),
            ModelSpec::preset(
                "bloom-176b",
                "BLOOM-176B",
                70,
                14336,
                112,
                112,
                38229,
                250880,
            )
            .with_context(2048),
        ]);
        // The models served disaggregated today, layer kind by layer kind (issue 16).
        models.extend(crate::served::served_models());
        let devices = vec![
            h100_like("h100", "H100-SXM", 3.35 * TB, 80.0 * GB),
            a100_like("a100", "A100-SXM", 2.039 * TB, 80.0 * GB),
            a100_like("a100-40g", "A100-SXM-40GB", 1.555 * TB, 40.0 * GB),
            h100_like("h200", "H200-SXM", 4.8 * TB, 141.0 * GB),
            Device {
                key: "b200".into(),
                name: "B200".into(),
                peak_flops: 2250.0 * TB,
                mem_bw: 8.0 * TB,
                mem_capacity: 180.0 * GB,
                flops_eff: 0.55,
                bw_eff: 0.80,
                tdp_w: 1000.0,
                idle_w: 140.0,
                pj_per_flop: 0.6,
                pj_per_byte: 45.0,
                native_formats: vec![("fp8".into(), 2.0), ("fp4".into(), 4.0)],
                scale_up: "nvlink5".into(),
                fft_efficiency: 1.0,
                engine: None,
                step_overhead_s: None,
                per_seq_overhead_s: None,
                calibration: None,
            },
            Device {
                key: "optical".into(),
                name: "Hypothetical-optical-MAC".into(),
                peak_flops: 4000.0 * TB,
                mem_bw: 3.35 * TB,
                mem_capacity: 80.0 * GB,
                flops_eff: 0.4,
                bw_eff: 0.80,
                tdp_w: 700.0,
                idle_w: 180.0,
                pj_per_flop: 0.1,
                pj_per_byte: 60.0,
                native_formats: vec![],
                scale_up: "nvlink4".into(),
                fft_efficiency: 1.0,
                engine: None,
                step_overhead_s: None,
                per_seq_overhead_s: None,
                calibration: None,
            },
            // The host GPU with an optical Fourier-transform engine (levers-cost.md §10.1).
            Device {
                engine: Some(TransformEngine::default()),
                ..h100_like(
                    "optical-fft",
                    "Optical-FFT + H100-class",
                    3.35 * TB,
                    80.0 * GB,
                )
            },
            Device {
                engine: Some(TransformEngine::default()),
                ..a100_like(
                    "optical-fft-small",
                    "Optical-FFT + A100-class",
                    2.039 * TB,
                    80.0 * GB,
                )
            },
        ];
        let links = vec![
            Link::preset("nvlink4", "NVLink 4 (one direction)", 450.0, 5e-6, 5.0),
            Link::preset("ib-ndr", "InfiniBand NDR 400G", 50.0, 10e-6, 15.0),
            Link::preset("pcie5", "PCIe Gen5 x16", 64.0, 5e-6, 6.0),
            Link::preset("pcie4", "PCIe Gen4 x16", 32.0, 5e-6, 6.0),
            Link::preset("eth-100g", "100 GbE", 12.5, 20e-6, 15.0),
            Link::preset("eth-25g", "25 GbE", 3.125, 20e-6, 15.0),
            Link::preset(
                "cpo-optical",
                "Co-packaged optics (illustrative)",
                200.0,
                5e-6,
                3.0,
            ),
            Link::preset("nvlink3", "NVLink 3 (one direction)", 300.0, 5e-6, 5.0),
            Link::preset("nvlink5", "NVLink 5 (one direction)", 900.0, 5e-6, 5.0),
        ];
        let compression = vec![
            KvCompression::preset("none", 1.0, 0.0, false, "BF16 as is: 2 bytes per value"),
            KvCompression::preset(
                "fp8",
                2.0,
                1.0,
                false,
                "FP8 values: 1 byte per value (ratio 2), 1 op per value",
            ),
            KvCompression::preset(
                "fp4-block",
                64.0 / 17.0,
                2.0,
                false,
                "4-bit E2M1 values with one 8-bit scale per 32-value block: 4.25 bits per value \
                 (ratio 64/17 = 3.76), 2 ops per value",
            ),
            KvCompression::preset(
                "freq-keep-k",
                2.0,
                1.0,
                true,
                "frequency domain: real FFT along tokens, keep half the coefficients (ratio 2; \
                 --kv-keep sets the kept fraction), 1 op per value plus the FFTs on a GPU",
            ),
            KvCompression {
                scale_bytes_per_vector: 2.0,
                ..KvCompression::preset(
                    "int8",
                    2.0,
                    2.0,
                    false,
                    "INT8 values with one FP16 scale per token per layer for K and for V: \
                     W + 2 bytes for W = kv_heads x head_dim values (ratio 2W/(W+2), 1.996 for \
                     Llama-3-8B), 2 ops per value (abs-max, scale and round)",
                )
            },
            KvCompression::preset(
                "fp4-g16",
                16.0 / 5.0,
                2.0,
                false,
                "4-bit values with one FP16 scale per 16 values (the chapter's wording): \
                 4 + 16/16 = 5 bits per value (ratio 16/5 = 3.2), 2 ops per value",
            ),
            KvCompression::preset(
                "kivi2",
                16.0 / 3.0,
                4.0,
                false,
                "KIVI-style 2-bit: keys quantised per channel, values per token, groups of 32 \
                 with an FP16 scale and an FP16 zero point: 2 + 32/32 = 3 bits per value \
                 (ratio 16/3 = 5.33; KIVI's full-precision residual window is not modelled), \
                 4 ops per value (min, max, scale, round)",
            ),
        ];
        Catalogue {
            models,
            devices,
            links,
            compression,
        }
    }

    /// The model with key `key`.
    pub fn model(&self, key: &str) -> Result<&ModelSpec, Error> {
        self.models
            .iter()
            .find(|m| m.key == key)
            .ok_or_else(|| Error::unknown("model", key, self.models.iter().map(|m| m.key.as_str())))
    }
    /// The device with key `key`.
    pub fn device(&self, key: &str) -> Result<&Device, Error> {
        self.devices.iter().find(|m| m.key == key).ok_or_else(|| {
            Error::unknown("device", key, self.devices.iter().map(|m| m.key.as_str()))
        })
    }
    /// The link with key `key`.
    pub fn link(&self, key: &str) -> Result<&Link, Error> {
        self.links
            .iter()
            .find(|m| m.key == key)
            .ok_or_else(|| Error::unknown("link", key, self.links.iter().map(|m| m.key.as_str())))
    }
    /// The compression format with key `key`.
    pub fn compression(&self, key: &str) -> Result<&KvCompression, Error> {
        self.compression
            .iter()
            .find(|m| m.key == key)
            .ok_or_else(|| {
                Error::unknown(
                    "compression",
                    key,
                    self.compression.iter().map(|m| m.key.as_str()),
                )
            })
    }

    /// Adds or replaces a model (validated).
    pub fn put_model(&mut self, m: ModelSpec) -> Result<(), Error> {
        m.validate()?;
        put(&mut self.models, m, |x| &x.key);
        Ok(())
    }
    /// Adds or replaces a device (validated).
    pub fn put_device(&mut self, d: Device) -> Result<(), Error> {
        d.validate()?;
        put(&mut self.devices, d, |x| &x.key);
        Ok(())
    }
    /// Adds or replaces a link (validated).
    pub fn put_link(&mut self, l: Link) -> Result<(), Error> {
        l.validate()?;
        put(&mut self.links, l, |x| &x.key);
        Ok(())
    }
}

fn put<T>(v: &mut Vec<T>, item: T, key: impl Fn(&T) -> &String) {
    match v.iter().position(|x| key(x) == key(&item)) {
        Some(i) => v[i] = item,
        None => v.push(item),
    }
}
