//! The quantisation lever (`docs/cost-model.md#quantisation`): weight, KV-cache and compute formats.
//!
//! A non-BF16 weight or KV format replaces the model by a copy with `weight_bytes` / `kv_bytes`
//! of the format (everywhere: every pool, capacity, hand-off bytes, the speculative draft); a
//! compute format other than BF16 runs the matmuls on the device's native low-precision units
//! (`compute_speedup`). Accuracy is not simulated.

use serde::{Deserialize, Serialize};

use crate::catalogue::{Device, ModelSpec};
use crate::error::Error;

crate::named_enum! {
    /// A number format of weights, KV cache or compute (`QUANT_FORMATS`).
    pub enum QuantFormat: "format" {
        /// BF16, 2 bytes (the default: no quantisation).
        #[default]
        Bf16 = "bf16",
        /// FP8 (E4M3), 1 byte.
        Fp8 = "fp8",
        /// INT8, 1 byte.
        Int8 = "int8",
        /// INT4 with an FP16 scale per 128 values: 0.5 + 2/128 bytes.
        Int4 = "int4",
        /// MXFP4: 4-bit values with an 8-bit scale per 32: 0.5 + 1/32 bytes.
        Fp4 = "fp4",
    }
}

impl QuantFormat {
    /// Bytes per value, block scales included (`docs/cost-model.md#quantisation`): 2.0, 1.0, 1.0,
    /// `0.5 + 2/128`, `0.5 + 1/32`.
    pub fn bytes(self) -> f64 {
        match self {
            QuantFormat::Bf16 => 2.0,
            QuantFormat::Fp8 | QuantFormat::Int8 => 1.0,
            QuantFormat::Int4 => 0.5 + 2.0 / 128.0,
            QuantFormat::Fp4 => 0.5 + 1.0 / 32.0,
        }
    }
}

/// The three formats of a run (`--weight-format`, `--kv-format`, `--compute-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Formats {
    /// Weights.
    pub weight: QuantFormat,
    /// KV cache (and so the hand-off).
    pub kv: QuantFormat,
    /// The matmuls: BF16 (weight-only quantisation: dequantised before the multiply) or the
    /// weight format (W8A8, W4A4).
    pub compute: QuantFormat,
}

impl Formats {
    /// Any format other than BF16.
    pub fn is_quantised(&self) -> bool {
        *self != Formats::default()
    }

    /// The checks of `docs/levers.md#scheduled-instances` items 2 and 3 that concern the formats alone, in order:
    /// the compute format is BF16 or the weight format; formats need an attention model without
    /// CED.
    pub fn check(&self, model: &ModelSpec) -> Result<(), Error> {
        if self.compute != QuantFormat::Bf16 && self.compute != self.weight {
            return Err(Error::invalid(
                "--compute-format",
                "compute_format is 'bf16' (weight-only: dequantised before the multiply) or the \
                 weight format itself (W8A8, W4A4)",
            ));
        }
        if self.is_quantised() && (!model.is_attention() || model.ced.is_some()) {
            return Err(Error::invalid(
                "--weight-format",
                "weight and KV formats are modelled for attention models without CED only",
            ));
        }
        Ok(())
    }

    /// The model with the weight and KV formats' bytes per value (`docs/cost-model.md#quantisation` item 1);
    /// unchanged when both are BF16.
    pub fn apply(&self, model: &ModelSpec) -> ModelSpec {
        if self.weight == QuantFormat::Bf16 && self.kv == QuantFormat::Bf16 {
            return model.clone();
        }
        ModelSpec {
            weight_bytes: self.weight.bytes(),
            kv_bytes: self.kv.bytes(),
            ..model.clone()
        }
    }

    /// The compute speed-up on `device` (`docs/cost-model.md#parallelism` item 1): 1.0 for BF16, else the
    /// device's native multiple for the compute format; an error naming the role's pool when
    /// the device has no such units.
    pub fn compute_speedup(&self, device: &Device, role: &str) -> Result<f64, Error> {
        if self.compute == QuantFormat::Bf16 {
            return Ok(1.0);
        }
        let cf = self.compute.as_str();
        device
            .native_formats
            .iter()
            .find(|(f, _)| f == cf)
            .map(|&(_, s)| s)
            .ok_or_else(|| {
                Error::invalid(
                    format!("{role} pool"),
                    format!(
                        "{} has no {cf} units (use compute_format='bf16' for weight-only {})",
                        device.name,
                        self.weight.as_str()
                    ),
                )
            })
    }
}
