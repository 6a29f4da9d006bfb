//! An accelerator and the provenance of a fitted one.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::variants::TransformEngine;

/// An accelerator (`Accelerator`, `docs/cost-model.md#catalogue`). Rates are SI: FLOP/s, bytes/s, bytes, W.
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
    /// energy (`docs/levers.md#fft-mixing`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub fft_efficiency: f64,
    /// An optical Fourier-transform engine beside the GPU (`docs/levers.md#fft-mixing`).
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
