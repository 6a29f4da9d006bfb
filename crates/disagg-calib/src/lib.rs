//! `disagg calibrate`: the roofline fitted to measured GPU step times, with its error shown
//! (issue 15).
//!
//! * [`measure`]: measurements in, one schema ([`Measurement`]). Importers for SplitwiseSim's
//!   `perf_model.csv`, Vidur's network profiles (`all_reduce.csv`, `send_recv.csv`) and `mlp.csv`,
//!   and disagg's own CSV, the format detected from the header.
//! * [`fit`]: per device, `flops_eff`, `bw_eff`, a step overhead and a per-sequence overhead by
//!   robust least squares on log error; the scale-up link from the all-reduce profile.
//! * [`report`]: the fit of every device with in-sample, leave-one-group-out and uncalibrated
//!   errors; the catalogue TOML overlay; `evaluate`.
//!
//! # disagg's own CSV schema
//!
//! Header (exactly): `model,device,devices,tp,phase,batch,tokens,seconds,source`.
//!
//! | column | meaning |
//! |---|---|
//! | `model` | catalogue model key (`llama2-70b`) |
//! | `device` | catalogue device key (`h100`) |
//! | `devices` | GPUs of the instance (`tp` for a tensor-parallel instance) |
//! | `tp` | tensor-parallel degree |
//! | `phase` | `prefill` (one step over whole prompts) or `decode` (one step, one token per sequence) |
//! | `batch` | sequences in the step |
//! | `tokens` | prefill: prompt tokens per sequence; decode: context tokens per sequence |
//! | `seconds` | measured step time, seconds (finite, above zero) |
//! | `source` | free text without commas (where the number came from); empty: `file:line` |
//!
//! Fields are plain comma-separated values (no quoting). A row is predicted as
//! `prefill([tokens; batch])` or `decode_sum(tokens * batch, batch)` of the cost model of the
//! (fitted) device on `devices` GPUs, with a TP layout when `tp > 1`: the device's `step_time`
//! adds `step_overhead_s + per_seq_overhead_s * batch`, exactly as in a run.

pub mod fit;
pub mod measure;
pub mod report;

pub use fit::{LinkFit, Params};
pub use measure::{Format, Imported, Measurement, Phase};
pub use report::{evaluate, fit_all, Evaluation, FitReport, GroupScore, RowPrediction};

/// A calibration error: one line naming the file and line, or the reason. It displays
/// [escaped](disagg_model::escape): a file's bytes quoted in it (a `model` field) reach no
/// terminal raw.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibError(pub String);

impl std::fmt::Display for CalibError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&disagg_model::escape(&self.0))
    }
}

impl std::error::Error for CalibError {}

impl From<disagg_model::Error> for CalibError {
    fn from(e: disagg_model::Error) -> Self {
        CalibError(e.to_string())
    }
}

/// The three measured models with their published shapes, for tests while the catalogue lacks
/// them.
#[cfg(test)]
pub(crate) mod test_models {
    use disagg_model::{Catalogue, ModelSpec};

    fn spec(key: &str, l: u64, d: u64, h: u64, kv: u64, ff: u64, v: u64) -> ModelSpec {
        // A dense built-in with the shape replaced (other fields: BF16, LM head on every token).
        let base = Catalogue::builtin().model("llama3-70b").unwrap().clone();
        ModelSpec {
            key: key.into(),
            name: key.into(),
            n_layers: l,
            d_model: d,
            n_heads: h,
            n_kv_heads: kv,
            head_dim: None,
            d_ff: ff,
            vocab: v,
            context_tokens: None,
            ..base
        }
    }

    /// The built-in catalogue plus Llama-2-7B, Llama-2-70B and BLOOM-176B.
    pub fn catalogue() -> Catalogue {
        let mut c = Catalogue::builtin();
        for m in [
            spec("llama2-7b", 32, 4096, 32, 32, 11008, 32000),
            spec("llama2-70b", 80, 8192, 64, 8, 28672, 32000),
            // BLOOM's 4d GELU MLP (two matrices) as three matrices of 8d/3: the same parameters.
            spec("bloom-176b", 70, 14336, 112, 112, 38229, 250880),
        ] {
            if c.model(&m.key).is_err() {
                c.put_model(m).unwrap();
            }
        }
        c
    }
}
