//! KV compression on the hand-off path: the format, where it runs, and its work.

use serde::{Deserialize, Serialize};

use super::model::ModelSpec;

/// A KV hand-off compression format (`KVCompression`, `docs/cost-model.md#compression`).
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

/// KV compression on the hand-off path (`KVTransit`, `docs/cost-model.md#compression`), with the reference's
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

    /// Compression work for `nbytes` of BF16 KV of a `prompt_tokens` prompt (`docs/cost-model.md#compression`).
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
