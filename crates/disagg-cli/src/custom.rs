//! The catalogue as the user sees it: the built-in presets, plus a `--catalogue FILE.toml`, plus
//! custom hardware described with flags.

use std::path::Path;

use clap::Args;
use disagg_model::custom::{CatalogueFile, CustomDevice, CustomLink, CustomModel};
use disagg_model::Catalogue;

use crate::UsageError;

/// Reads the TOML file given to `flag` into `T`, with errors that name the flag and the file (and
/// the line, for syntax errors and unknown keys). The file is read with
/// `disagg_trace::input::read_input` (a regular file of at most 16 MiB, or `--max-input-bytes`).
pub fn read_toml<T: serde::de::DeserializeOwned>(flag: &str, path: &Path) -> Result<T, UsageError> {
    use disagg_trace::input::{read_input, InputKind};
    let text =
        read_input(path, InputKind::Config).map_err(|e| UsageError(format!("{flag}: {e}")))?;
    parse_toml(flag, &path.display().to_string(), &text)
}

/// Parses the TOML `text` of the file `name` given to `flag` into `T` (errors as [`read_toml`]).
pub fn parse_toml<T: serde::de::DeserializeOwned>(
    flag: &str,
    name: &str,
    text: &str,
) -> Result<T, UsageError> {
    toml::from_str(text).map_err(|e| {
        let mut msg = e.message().replace('\n', " ");
        if msg.trim().is_empty() {
            // Some syntax errors (e.g. `key =` and nothing after) come without a message.
            msg = "invalid TOML: expected a value".into();
        }
        let at = e
            .span()
            .map(|s| {
                let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                format!(":{line}")
            })
            .unwrap_or_default();
        UsageError(format!("{flag}: {name}{at}: {msg}"))
    })
}

/// The built-in catalogue plus the file's entries.
pub fn load_catalogue(path: Option<&Path>) -> Result<Catalogue, UsageError> {
    let mut cat = Catalogue::builtin();
    if let Some(p) = path {
        let f: CatalogueFile = read_toml("--catalogue", p)?;
        f.apply(&mut cat)
            .map_err(|e| UsageError(format!("{}: {e}", p.display())))?;
    }
    Ok(cat)
}

/// Flags that describe a custom model shape on top of `--model`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Custom model shape (overrides the --model preset)")]
pub struct ModelFlags {
    /// Transformer layers.
    #[arg(long, value_name = "N", value_parser = crate::custom::count)]
    pub layers: Option<u64>,
    /// Hidden size.
    #[arg(long, value_name = "N", value_parser = crate::custom::count)]
    pub d_model: Option<u64>,
    /// Query heads.
    #[arg(long, value_name = "N", value_parser = crate::custom::count)]
    pub heads: Option<u64>,
    /// Key/value heads.
    #[arg(long, value_name = "N", value_parser = crate::custom::count)]
    pub kv_heads: Option<u64>,
    /// Head dimension (default d_model / heads).
    #[arg(long, value_name = "N", value_parser = crate::custom::count)]
    pub head_dim: Option<u64>,
    /// MLP width.
    #[arg(long, value_name = "N", value_parser = crate::custom::count)]
    pub d_ff: Option<u64>,
    /// Vocabulary size.
    #[arg(long, value_name = "N", value_parser = crate::custom::count)]
    pub vocab: Option<u64>,
    /// Bytes per weight (2 = BF16).
    #[arg(long, value_name = "B", value_parser = crate::custom::positive, allow_negative_numbers = true)]
    pub weight_bytes: Option<f64>,
    /// Bytes per cached K or V value (2 = BF16, 1 = FP8).
    #[arg(long, value_name = "B", value_parser = crate::custom::positive, allow_negative_numbers = true)]
    pub kv_bytes: Option<f64>,
}

/// Flags that describe a custom link on top of `--link`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Custom link (overrides the --link preset)")]
pub struct LinkFlags {
    /// Bandwidth per channel and direction, GB/s.
    #[arg(long, value_name = "GB/s", value_parser = crate::custom::positive, allow_negative_numbers = true)]
    pub link_bandwidth_gb_s: Option<f64>,
    /// Latency per transfer, µs.
    #[arg(long, value_name = "US", value_parser = crate::custom::non_negative, allow_negative_numbers = true)]
    pub link_latency_us: Option<f64>,
    /// Link energy, pJ per bit.
    #[arg(long, value_name = "PJ", value_parser = crate::custom::non_negative, allow_negative_numbers = true)]
    pub link_pj_per_bit: Option<f64>,
}

/// Flags that describe a custom device on top of the chosen device.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Custom device (overrides the device preset)")]
pub struct DeviceFlags {
    /// Dense BF16 peak, TFLOP/s.
    #[arg(long, value_name = "TFLOPS", value_parser = crate::custom::positive, allow_negative_numbers = true)]
    pub device_peak_tflops: Option<f64>,
    /// HBM bandwidth, TB/s.
    #[arg(long, value_name = "TB/s", value_parser = crate::custom::positive, allow_negative_numbers = true)]
    pub device_mem_bw_tb_s: Option<f64>,
    /// HBM capacity, GB.
    #[arg(long, value_name = "GB", value_parser = crate::custom::positive, allow_negative_numbers = true)]
    pub device_mem_gb: Option<f64>,
    /// TDP per device, W.
    #[arg(long, value_name = "W", value_parser = crate::custom::positive, allow_negative_numbers = true)]
    pub device_tdp_w: Option<f64>,
    /// Idle power per device, W.
    #[arg(long, value_name = "W", value_parser = crate::custom::non_negative, allow_negative_numbers = true)]
    pub device_idle_w: Option<f64>,
}

impl ModelFlags {
    /// The model `key` from `cat`, with any flags applied (key becomes `custom`).
    pub fn resolve(
        &self,
        key: &str,
        cat: &Catalogue,
    ) -> Result<disagg_model::ModelSpec, UsageError> {
        let c = CustomModel {
            base: Some(key.to_string()),
            name: None,
            layers: self.layers,
            d_model: self.d_model,
            heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            d_ff: self.d_ff,
            vocab: self.vocab,
            weight_bytes: self.weight_bytes,
            kv_bytes: self.kv_bytes,
            prefill_lm_head: None,
            context_tokens: None,
        };
        let base = cat
            .model(key)
            .map_err(|e| UsageError(format!("--model: {e}")))?;
        if c.is_empty() {
            return Ok(base.clone());
        }
        let mut m = c.resolve("custom", cat)?;
        m.name = format!("{} (custom shape)", base.name);
        Ok(m)
    }
}

impl LinkFlags {
    /// The link `key` from `cat`, with any flags applied.
    pub fn resolve(&self, key: &str, cat: &Catalogue) -> Result<disagg_model::Link, UsageError> {
        let c = CustomLink {
            base: Some(key.to_string()),
            name: None,
            bandwidth_gb_s: self.link_bandwidth_gb_s,
            latency_us: self.link_latency_us,
            pj_per_bit: self.link_pj_per_bit,
            channels: None,
        };
        let base = cat
            .link(key)
            .map_err(|e| UsageError(format!("--link: {e}")))?;
        if c.is_empty() {
            return Ok(base.clone());
        }
        let mut l = c.resolve("custom", cat)?;
        l.name = format!("{} (custom)", base.name);
        Ok(l)
    }
}

impl DeviceFlags {
    /// The device `key` from `cat`, with any flags applied.
    pub fn resolve(&self, key: &str, cat: &Catalogue) -> Result<disagg_model::Device, UsageError> {
        let c = CustomDevice {
            base: Some(key.to_string()),
            peak_tflops: self.device_peak_tflops,
            mem_bw_tb_s: self.device_mem_bw_tb_s,
            mem_gb: self.device_mem_gb,
            tdp_w: self.device_tdp_w,
            idle_w: self.device_idle_w,
            ..Default::default()
        };
        let base = cat
            .device(key)
            .map_err(|e| UsageError(format!("--prefill-device: {e}")))?;
        if c.is_empty() {
            return Ok(base.clone());
        }
        let mut d = c.resolve("custom", cat)?;
        d.name = format!("{} (custom)", base.name);
        Ok(d)
    }
}

/// A whole number of at least 1.
pub fn count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if v >= 1 && v <= u32::MAX as i128 => Ok(v as u64),
        Ok(v) if v < 1 => Err(format!("must be at least 1, got {v}")),
        Ok(v) => Err(format!("{v} is absurdly large (limit {})", u32::MAX)),
        Err(_) => Err("not a whole number".into()),
    }
}

/// A finite number > 0.
pub fn positive(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(v) => Err(format!("must be a positive number, got {v}")),
        Err(_) => Err("not a number".into()),
    }
}

/// A finite number >= 0.
pub fn non_negative(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) => Err(format!("must be a number >= 0, got {v}")),
        Err(_) => Err("not a number".into()),
    }
}
