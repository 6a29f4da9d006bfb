//! User-described hardware: models, devices and links added to the catalogue from a TOML/JSON file
//! or from flags. Friendly units at this edge (GB/s, µs, TFLOP/s, GB), SI inside.
//!
//! Each entry may start from a preset (`base = "llama3-8b"`) and override fields; without a base
//! every field without a default must be given.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::arch::{Arch, LayerRun, Retention};
use crate::catalogue::Moe;
use crate::catalogue::{Calibration, Catalogue, Device, Link, LmHead, ModelSpec, GB, TB};
use crate::error::{escape, Error};
use crate::variants::{ActFormat, Ced, DecodeStyle, FftMixing, Mixer, ReplayOn};

/// A model shape. Field names are the file's keys.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomModel {
    /// Preset to start from.
    pub base: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// Transformer layers.
    pub layers: Option<u64>,
    /// Hidden size.
    pub d_model: Option<u64>,
    /// Query heads.
    pub heads: Option<u64>,
    /// KV heads.
    pub kv_heads: Option<u64>,
    /// Head dimension (default `d_model / heads`).
    pub head_dim: Option<u64>,
    /// MLP width.
    pub d_ff: Option<u64>,
    /// Vocabulary.
    pub vocab: Option<u64>,
    /// Bytes per weight.
    pub weight_bytes: Option<f64>,
    /// Bytes per KV value.
    pub kv_bytes: Option<f64>,
    /// `all` or `last`.
    pub prefill_lm_head: Option<String>,
    /// Longest prompt, tokens.
    pub context_tokens: Option<u64>,
    /// Mixture of experts: routed experts per layer (0: dense).
    pub n_experts: Option<u64>,
    /// Experts each token runs.
    pub top_k: Option<u64>,
    /// Always-on shared experts.
    pub n_shared_experts: Option<u64>,
    /// `attention`, `hyena` or `hybrid`.
    pub mixer: Option<String>,
    /// Hybrid: every how many layers one is attention (4).
    pub attn_every: Option<u64>,
    /// Hyena: long convolutions per layer (2).
    pub hyena_order: Option<u64>,
    /// Hyena: short convolution taps (3).
    pub short_taps: Option<u64>,
    /// Hyena: block-circulant block size (0: dense weights).
    pub circulant_block: Option<u64>,
    /// Hyena: `direct` or `distilled`.
    pub decode_style: Option<String>,
    /// Hyena distilled: state values per channel (16).
    pub distill_state: Option<u64>,
    /// Optical engine output format: `bf16`, `int8` or `fp8`.
    pub act_format: Option<String>,
    /// CED: encoder layers (0: not a CED model).
    pub ced_encoder_layers: Option<u64>,
    /// CED: prompt tokens replayed through the decoder (128).
    pub ced_replay: Option<u64>,
    /// CED: `prefill` or `decode`.
    pub ced_replay_on: Option<String>,
    /// Layer kinds: one period of the layer pattern (`[[models.KEY.cycle]]` tables of `count`,
    /// `attention = {kind = ...}`, `mlp = {kind = ...}`); the model is then described by its
    /// layers (issue 16) and `layers`, `kv_heads`, `d_ff` default to what they say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle: Option<Vec<LayerRun>>,
    /// How many times `cycle` repeats (1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u64>,
    /// Layer runs after the repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<Vec<LayerRun>>,
    /// `window` or `strict`: what sliding-window and chunked layers keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_retention: Option<String>,
    /// One line on why the model's KV is sized as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_kv: Option<String>,
    /// The LM head shares the embedding (layer-kind models only; default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tied_embeddings: Option<bool>,
}

/// An accelerator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomDevice {
    /// Preset to start from.
    pub base: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// Dense BF16 peak, TFLOP/s.
    pub peak_tflops: Option<f64>,
    /// HBM bandwidth, TB/s.
    pub mem_bw_tb_s: Option<f64>,
    /// HBM capacity, GB.
    pub mem_gb: Option<f64>,
    /// Achievable fraction of the FLOP peak (default 0.55).
    pub flops_eff: Option<f64>,
    /// Achievable fraction of HBM bandwidth (default 0.80).
    pub bw_eff: Option<f64>,
    /// TDP per device, W (default 700).
    pub tdp_w: Option<f64>,
    /// Idle power per device, W (default 100).
    pub idle_w: Option<f64>,
    /// pJ per FLOP (default 1.0).
    pub pj_per_flop: Option<f64>,
    /// pJ per HBM byte (default 60).
    pub pj_per_byte: Option<f64>,
    /// Efficiency of FFT work relative to dense FLOPs (default 1.0).
    pub fft_efficiency: Option<f64>,
    /// Native low-precision formats and their rate multiple of BF16, `[["fp8", 2.0]]` (default:
    /// the base's, else none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_formats: Option<Vec<(String, f64)>>,
    /// Scale-up link key for tensor parallelism (default: the base's, else none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_up: Option<String>,
    /// A fitted device's fixed time per step, seconds (replaces the 0.5 ms step overhead;
    /// default: the base's, else none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_overhead_s: Option<f64>,
    /// A fitted device's time per sequence a step serves, seconds (default: the base's, else
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_seq_overhead_s: Option<f64>,
    /// A fitted device's provenance, `[devices.KEY.calibration]` (default: the base's, else
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// A KV link.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomLink {
    /// Preset to start from.
    pub base: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// Bandwidth per channel and direction, GB/s (1e9 bytes/s).
    pub bandwidth_gb_s: Option<f64>,
    /// Latency per transfer, µs (default 10).
    pub latency_us: Option<f64>,
    /// Energy per bit, pJ (default 10).
    pub pj_per_bit: Option<f64>,
    /// Concurrent transfers (default 1).
    pub channels: Option<u32>,
}

/// A catalogue file: `[models.KEY]`, `[devices.KEY]`, `[links.KEY]` tables.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogueFile {
    /// Models by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, CustomModel>,
    /// Devices by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub devices: BTreeMap<String, CustomDevice>,
    /// Links by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub links: BTreeMap<String, CustomLink>,
}

fn need<T>(v: Option<T>, key: &str, kind: &str, field: &str) -> Result<T, Error> {
    v.ok_or_else(|| {
        Error::invalid(
            format!("{kind} '{key}'"),
            format!("missing '{field}' (give it, or start from a preset with base = \"...\")"),
        )
    })
}

/// A catalogue file's free text (names, a fit's provenance) as every report echoes it: escaped
/// ([`escape`]), so no control character of the file reaches a terminal, a CSV or an SVG.
fn printable(text: &mut String) {
    if let std::borrow::Cow::Owned(e) = escape(text) {
        *text = e;
    }
}

fn check_key(kind: &str, key: &str) -> Result<(), Error> {
    let ok = !key.is_empty()
        && key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            format!("{kind} key '{key}'"),
            "use 1 to 64 letters, digits, '-', '_' or '.'",
        ))
    }
}

impl CustomModel {
    /// Resolves against `cat` into a validated model named `key`.
    pub fn resolve(&self, key: &str, cat: &Catalogue) -> Result<ModelSpec, Error> {
        check_key("model", key)?;
        let base = match &self.base {
            Some(b) => Some(cat.model(b)?.clone()),
            None => None,
        };
        let k = "model";
        let arch = self.arch(key, base.as_ref())?;
        let shape = arch.as_ref().map(|a| a.display_shape());
        let m = ModelSpec {
            key: key.to_string(),
            name: escape(self.name.as_deref().unwrap_or(key)).into_owned(),
            n_layers: need(
                self.layers
                    .or(arch.as_ref().map(|a| a.n_layers()))
                    .or(base.as_ref().map(|b| b.n_layers)),
                key,
                k,
                "layers",
            )?,
            d_model: need(
                self.d_model.or(base.as_ref().map(|b| b.d_model)),
                key,
                k,
                "d_model",
            )?,
            n_heads: need(
                self.heads.or(base.as_ref().map(|b| b.n_heads)),
                key,
                k,
                "heads",
            )?,
            n_kv_heads: need(
                self.kv_heads
                    .or(shape.map(|s| s.0))
                    .or(base.as_ref().map(|b| b.n_kv_heads)),
                key,
                k,
                "kv_heads",
            )?,
            head_dim: self
                .head_dim
                .or(shape.map(|s| s.1))
                .or(base.as_ref().and_then(|b| b.head_dim)),
            d_ff: need(
                self.d_ff
                    .or(shape.map(|s| s.2))
                    .or(base.as_ref().map(|b| b.d_ff)),
                key,
                k,
                "d_ff",
            )?,
            vocab: need(
                self.vocab.or(base.as_ref().map(|b| b.vocab)),
                key,
                k,
                "vocab",
            )?,
            weight_bytes: self
                .weight_bytes
                .or(base.as_ref().map(|b| b.weight_bytes))
                .unwrap_or(2.0),
            kv_bytes: self
                .kv_bytes
                .or(base.as_ref().map(|b| b.kv_bytes))
                .unwrap_or(2.0),
            prefill_lm_head: match &self.prefill_lm_head {
                Some(s) => LmHead::parse(s)?,
                None => base.as_ref().map_or(LmHead::All, |b| b.prefill_lm_head),
            },
            context_tokens: self
                .context_tokens
                .or(base.as_ref().and_then(|b| b.context_tokens)),
            moe: None,
            fft: None,
            ced: None,
            arch: None,
        };
        let mut m = if arch.is_some() {
            for (f, given) in [
                ("n_experts", self.n_experts.is_some()),
                ("mixer", self.mixer.is_some()),
                ("ced_encoder_layers", self.ced_encoder_layers.is_some()),
            ] {
                if given {
                    return Err(Error::invalid(
                        format!("model '{key}' {f}"),
                        "a model described by layer kinds ('cycle') gives its experts in its \
                         layers' mlp and cannot be FFT-mixing or CED",
                    ));
                }
            }
            m
        } else {
            self.variants(key, m, base.as_ref())?
        };
        m.arch = arch.map(Box::new);
        m.validate()?;
        Ok(m)
    }

    /// The layer kinds: this entry's `cycle` (with `cycles`, `tail`), else the base's; the
    /// retention rule and the "why" line laid over either.
    fn arch(&self, key: &str, base: Option<&ModelSpec>) -> Result<Option<Arch>, Error> {
        let mut a = match (&self.cycle, base.and_then(|b| b.arch.as_deref())) {
            (Some(c), _) => Arch {
                cycle: c.clone(),
                cycles: self.cycles.unwrap_or(1),
                tail: self.tail.clone().unwrap_or_default(),
                retention: Retention::Window,
                tied_embeddings: self.tied_embeddings.unwrap_or(false),
                why_kv: String::new(),
            },
            (None, Some(b)) => {
                let mut b = b.clone();
                if let Some(c) = self.cycles {
                    b.cycles = c;
                }
                if let Some(t) = &self.tail {
                    b.tail = t.clone();
                }
                if let Some(t) = self.tied_embeddings {
                    b.tied_embeddings = t;
                }
                b
            }
            (None, None) => {
                for (f, given) in [
                    ("cycles", self.cycles.is_some()),
                    ("tail", self.tail.is_some()),
                    ("kv_retention", self.kv_retention.is_some()),
                    ("why_kv", self.why_kv.is_some()),
                    ("tied_embeddings", self.tied_embeddings.is_some()),
                ] {
                    if given {
                        return Err(Error::invalid(
                            format!("model '{key}' {f}"),
                            "needs 'cycle' (the model's layer kinds)",
                        ));
                    }
                }
                return Ok(None);
            }
        };
        if let Some(r) = &self.kv_retention {
            a.retention = Retention::parse(r)?;
        }
        if let Some(w) = &self.why_kv {
            a.why_kv = w.clone();
        }
        Ok(Some(a))
    }

    /// The MoE, FFT-mixing and CED parts: the base's, with any field given here replacing it.
    fn variants(
        &self,
        key: &str,
        mut m: ModelSpec,
        base: Option<&ModelSpec>,
    ) -> Result<ModelSpec, Error> {
        let bad =
            |what: &str, why: String| Err(Error::invalid(format!("model '{key}' {what}"), why));
        // Mixture of experts.
        let bm = base.and_then(|b| b.moe);
        let x = self.n_experts.or(bm.map(|b| b.n_experts)).unwrap_or(0);
        m.moe = if x == 0 {
            if self.top_k.is_some() || self.n_shared_experts.is_some() {
                return bad(
                    "top_k",
                    "needs n_experts (the routed experts per layer)".into(),
                );
            }
            None
        } else {
            Some(Moe {
                n_experts: x,
                top_k: self.top_k.or(bm.map(|b| b.top_k)).unwrap_or(0),
                n_shared_experts: self
                    .n_shared_experts
                    .or(bm.map(|b| b.n_shared_experts))
                    .unwrap_or(0),
            })
        };
        // FFT mixing.
        let bf = base.and_then(|b| b.fft.clone());
        let mixer = match self.mixer.as_deref() {
            None => bf.as_ref().map(|f| f.mixer),
            Some("attention") => None,
            Some(s) => Some(Mixer::parse(s)?),
        };
        let hyena_fields = [
            ("attn_every", self.attn_every.is_some()),
            ("hyena_order", self.hyena_order.is_some()),
            ("short_taps", self.short_taps.is_some()),
            ("circulant_block", self.circulant_block.is_some()),
            ("decode_style", self.decode_style.is_some()),
            ("distill_state", self.distill_state.is_some()),
            ("act_format", self.act_format.is_some()),
        ];
        m.fft = match mixer {
            None => {
                if let Some((f, _)) = hyena_fields.iter().find(|(_, given)| *given) {
                    return bad(f, "needs mixer = \"hyena\" or \"hybrid\"".into());
                }
                None
            }
            Some(mixer) => {
                let d = bf
                    .filter(|f| f.mixer == mixer)
                    .unwrap_or(FftMixing::new(mixer));
                Some(FftMixing {
                    mixer,
                    attn_every: self.attn_every.unwrap_or(d.attn_every),
                    order: self.hyena_order.unwrap_or(d.order),
                    short_taps: self.short_taps.unwrap_or(d.short_taps),
                    circulant_block: self.circulant_block.unwrap_or(d.circulant_block),
                    decode_style: match &self.decode_style {
                        Some(s) => DecodeStyle::parse(s)?,
                        None => d.decode_style,
                    },
                    distill_state: self.distill_state.unwrap_or(d.distill_state),
                    act_format: match &self.act_format {
                        Some(s) => ActFormat::parse(s)?,
                        None => d.act_format,
                    },
                })
            }
        };
        // CED.
        let bc = base.and_then(|b| b.ced);
        let e = self
            .ced_encoder_layers
            .or(bc.map(|c| c.encoder_layers))
            .unwrap_or(0);
        m.ced = if e == 0 {
            if self.ced_replay.is_some() || self.ced_replay_on.is_some() {
                return bad(
                    "ced_replay",
                    "needs ced_encoder_layers (a CED model)".into(),
                );
            }
            None
        } else {
            let d = bc.unwrap_or(Ced::new(e));
            Some(Ced {
                encoder_layers: e,
                replay: self.ced_replay.unwrap_or(d.replay),
                replay_on: match &self.ced_replay_on {
                    Some(s) => ReplayOn::parse(s)?,
                    None => d.replay_on,
                },
            })
        };
        Ok(m)
    }

    /// True when no field is set (nothing to customise).
    pub fn is_empty(&self) -> bool {
        *self
            == CustomModel {
                base: self.base.clone(),
                ..Default::default()
            }
    }
}

impl CustomDevice {
    /// Resolves against `cat` into a validated device named `key`.
    pub fn resolve(&self, key: &str, cat: &Catalogue) -> Result<Device, Error> {
        check_key("device", key)?;
        let base = match &self.base {
            Some(b) => Some(cat.device(b)?.clone()),
            None => None,
        };
        let k = "device";
        let d = Device {
            key: key.to_string(),
            name: self.name.clone().unwrap_or_else(|| key.to_string()),
            peak_flops: match self.peak_tflops {
                Some(v) => v * TB,
                None => need(base.as_ref().map(|b| b.peak_flops), key, k, "peak_tflops")?,
            },
            mem_bw: match self.mem_bw_tb_s {
                Some(v) => v * TB,
                None => need(base.as_ref().map(|b| b.mem_bw), key, k, "mem_bw_tb_s")?,
            },
            mem_capacity: match self.mem_gb {
                Some(v) => v * GB,
                None => need(base.as_ref().map(|b| b.mem_capacity), key, k, "mem_gb")?,
            },
            flops_eff: self
                .flops_eff
                .or(base.as_ref().map(|b| b.flops_eff))
                .unwrap_or(0.55),
            bw_eff: self
                .bw_eff
                .or(base.as_ref().map(|b| b.bw_eff))
                .unwrap_or(0.80),
            tdp_w: self
                .tdp_w
                .or(base.as_ref().map(|b| b.tdp_w))
                .unwrap_or(700.0),
            idle_w: self
                .idle_w
                .or(base.as_ref().map(|b| b.idle_w))
                .unwrap_or(100.0),
            pj_per_flop: self
                .pj_per_flop
                .or(base.as_ref().map(|b| b.pj_per_flop))
                .unwrap_or(1.0),
            pj_per_byte: self
                .pj_per_byte
                .or(base.as_ref().map(|b| b.pj_per_byte))
                .unwrap_or(60.0),
            native_formats: self
                .native_formats
                .clone()
                .or(base.as_ref().map(|b| b.native_formats.clone()))
                .unwrap_or_default(),
            scale_up: self
                .scale_up
                .clone()
                .or(base.as_ref().map(|b| b.scale_up.clone()))
                .unwrap_or_default(),
            fft_efficiency: self
                .fft_efficiency
                .or(base.as_ref().map(|b| b.fft_efficiency))
                .unwrap_or(1.0),
            engine: base.as_ref().and_then(|b| b.engine.clone()),
            step_overhead_s: self
                .step_overhead_s
                .or(base.as_ref().and_then(|b| b.step_overhead_s)),
            per_seq_overhead_s: self
                .per_seq_overhead_s
                .or(base.as_ref().and_then(|b| b.per_seq_overhead_s)),
            calibration: self
                .calibration
                .clone()
                .or(base.as_ref().and_then(|b| b.calibration.clone())),
        };
        d.validate()?;
        let mut d = d;
        printable(&mut d.name);
        printable(&mut d.scale_up);
        if let Some(c) = d.calibration.as_mut() {
            c.measurements.iter_mut().for_each(printable);
            printable(&mut c.fit);
            c.groups.iter_mut().for_each(printable);
            printable(&mut c.tool);
        }
        Ok(d)
    }

    /// True when no field besides `base` is set.
    pub fn is_empty(&self) -> bool {
        *self
            == CustomDevice {
                base: self.base.clone(),
                ..Default::default()
            }
    }
}

impl CustomLink {
    /// Resolves against `cat` into a validated link named `key`.
    pub fn resolve(&self, key: &str, cat: &Catalogue) -> Result<Link, Error> {
        check_key("link", key)?;
        let base = match &self.base {
            Some(b) => Some(cat.link(b)?.clone()),
            None => None,
        };
        let l = Link {
            key: key.to_string(),
            name: escape(self.name.as_deref().unwrap_or(key)).into_owned(),
            bandwidth_bps: match self.bandwidth_gb_s {
                Some(v) => v * GB,
                None => need(
                    base.as_ref().map(|b| b.bandwidth_bps),
                    key,
                    "link",
                    "bandwidth_gb_s",
                )?,
            },
            latency_s: match self.latency_us {
                Some(v) => v * 1e-6,
                None => base.as_ref().map_or(10e-6, |b| b.latency_s),
            },
            channels: self
                .channels
                .or(base.as_ref().map(|b| b.channels))
                .unwrap_or(1),
            pj_per_bit: self
                .pj_per_bit
                .or(base.as_ref().map(|b| b.pj_per_bit))
                .unwrap_or(10.0),
        };
        l.validate()?;
        Ok(l)
    }

    /// True when no field besides `base` is set.
    pub fn is_empty(&self) -> bool {
        *self
            == CustomLink {
                base: self.base.clone(),
                ..Default::default()
            }
    }
}

/// A preset with flag-style overrides laid over it: the one implementation of "`--model KEY` plus
/// `--layers`/`--d-model`/...", "`--link KEY` plus `--link-*`" and "a device plus `--device-*`",
/// shared by `Scenario::build` and the CLI's `disagg handoff`. With no override the preset comes
/// back unchanged; otherwise the entry is resolved as `custom` and named after its base ("Llama-3-8B
/// (custom shape)", "H100 (custom)"). Errors are the catalogue's (callers name their flag).
pub trait Overlay {
    /// What it resolves to.
    type Output;
    /// The base preset `self.base` (which must be set) with the overrides applied.
    fn overlay(&self, cat: &Catalogue) -> Result<Self::Output, Error>;
}

fn base_key(base: &Option<String>) -> &str {
    base.as_deref().unwrap_or_default()
}

impl Overlay for CustomModel {
    type Output = ModelSpec;
    fn overlay(&self, cat: &Catalogue) -> Result<ModelSpec, Error> {
        let base = cat.model(base_key(&self.base))?;
        if self.is_empty() {
            return Ok(base.clone());
        }
        let mut m = self.resolve("custom", cat)?;
        m.name = format!("{} (custom shape)", base.name);
        Ok(m)
    }
}

impl Overlay for CustomLink {
    type Output = Link;
    fn overlay(&self, cat: &Catalogue) -> Result<Link, Error> {
        let base = cat.link(base_key(&self.base))?;
        if self.is_empty() {
            return Ok(base.clone());
        }
        let mut l = self.resolve("custom", cat)?;
        l.name = format!("{} (custom)", base.name);
        Ok(l)
    }
}

impl Overlay for CustomDevice {
    type Output = Device;
    fn overlay(&self, cat: &Catalogue) -> Result<Device, Error> {
        let base = cat.device(base_key(&self.base))?;
        if self.is_empty() {
            return Ok(base.clone());
        }
        let mut d = self.resolve("custom", cat)?;
        d.name = format!("{} (custom)", base.name);
        Ok(d)
    }
}

impl CatalogueFile {
    /// The entries whose key is already in `cat` (`links.eth-25g`, ...): [`CatalogueFile::apply`]
    /// replaces those, and every scenario naming the key then uses the file's entry.
    pub fn replaced(&self, cat: &Catalogue) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(
            self.models
                .keys()
                .filter(|k| cat.model(k).is_ok())
                .map(|k| format!("models.{k}")),
        );
        out.extend(
            self.devices
                .keys()
                .filter(|k| cat.device(k).is_ok())
                .map(|k| format!("devices.{k}")),
        );
        out.extend(
            self.links
                .keys()
                .filter(|k| cat.link(k).is_ok())
                .map(|k| format!("links.{k}")),
        );
        out
    }

    /// Adds every entry to `cat` (models first, then devices, then links; each validated).
    pub fn apply(&self, cat: &mut Catalogue) -> Result<(), Error> {
        for (k, m) in &self.models {
            let m = m.resolve(k, cat)?;
            cat.put_model(m)?;
        }
        for (k, d) in &self.devices {
            let d = d.resolve(k, cat)?;
            cat.put_device(d)?;
        }
        for (k, l) in &self.links {
            let l = l.resolve(k, cat)?;
            cat.put_link(l)?;
        }
        Ok(())
    }
}

/// `x` in units of `unit`, `x / unit`, if reading it back (`v * unit`, as
/// [`CustomDevice::resolve`] and [`CustomLink::resolve`] do) gives `x` bit for bit. Every value
/// that is some `v * unit` qualifies (whatever a user or a fit writes in TFLOP/s, TB/s, GB, GB/s
/// or µs); about 7 % of arbitrary doubles do not, and no neighbour of `x / unit` helps then.
fn in_units(x: f64, unit: f64) -> Option<f64> {
    let v = x / unit;
    (v * unit == x).then_some(v)
}

fn exact_units(x: f64, unit: f64, key: &str, field: &str) -> Result<f64, Error> {
    in_units(x, unit).ok_or_else(|| {
        Error::invalid(
            format!("device or link '{key}' {field}"),
            format!("{x} cannot be written in the file's units exactly"),
        )
    })
}

impl CustomDevice {
    /// The entry that resolves back to `d` exactly ([`CustomDevice::resolve`] without a base
    /// gives `d` bit for bit): every field written out, rates in the file's units. Fails for a
    /// device with an optical transform engine (the file cannot describe one) or a rate that
    /// no decimal in the file's units reproduces exactly.
    pub fn from_device(d: &Device) -> Result<CustomDevice, Error> {
        if d.engine.is_some() {
            return Err(Error::invalid(
                format!("device '{}'", d.key),
                "a device with an optical transform engine cannot be written to a catalogue file",
            ));
        }
        let k = &d.key;
        Ok(CustomDevice {
            base: None,
            name: Some(d.name.clone()),
            peak_tflops: Some(exact_units(d.peak_flops, TB, k, "peak_flops")?),
            mem_bw_tb_s: Some(exact_units(d.mem_bw, TB, k, "mem_bw")?),
            mem_gb: Some(exact_units(d.mem_capacity, GB, k, "mem_capacity")?),
            flops_eff: Some(d.flops_eff),
            bw_eff: Some(d.bw_eff),
            tdp_w: Some(d.tdp_w),
            idle_w: Some(d.idle_w),
            pj_per_flop: Some(d.pj_per_flop),
            pj_per_byte: Some(d.pj_per_byte),
            fft_efficiency: Some(d.fft_efficiency),
            native_formats: Some(d.native_formats.clone()),
            scale_up: Some(d.scale_up.clone()),
            step_overhead_s: d.step_overhead_s,
            per_seq_overhead_s: d.per_seq_overhead_s,
            calibration: d.calibration.clone(),
        })
    }
}

impl CustomLink {
    /// The entry that resolves back to `l` exactly (every field written out, bandwidth in GB/s
    /// and latency in µs); fails for a value no decimal in those units reproduces exactly.
    pub fn from_link(l: &Link) -> Result<CustomLink, Error> {
        Ok(CustomLink {
            base: None,
            name: Some(l.name.clone()),
            bandwidth_gb_s: Some(exact_units(l.bandwidth_bps, GB, &l.key, "bandwidth_bps")?),
            latency_us: Some(exact_units(l.latency_s, 1e-6, &l.key, "latency_s")?),
            pj_per_bit: Some(l.pj_per_bit),
            channels: Some(l.channels),
        })
    }
}

/// A catalogue overlay (`--catalogue FILE`) holding `devices` and `links`, as TOML: one
/// `[devices.KEY]` table per device (a fitted device's `step_overhead_s`, `per_seq_overhead_s`
/// and `[devices.KEY.calibration]` included) and one `[links.KEY]` per link, every field written
/// out, so that reading the file back (`CatalogueFile::apply`) gives each device and link bit for
/// bit. `disagg calibrate` writes its fitted devices with it. Errors: an invalid device or link,
/// a key given twice, or a value [`CustomDevice::from_device`] / [`CustomLink::from_link`]
/// cannot write exactly.
pub fn device_overlay_toml(devices: &[Device], links: &[Link]) -> Result<String, Error> {
    let mut f = CatalogueFile::default();
    for d in devices {
        d.validate()?;
        check_key("device", &d.key)?;
        if f.devices
            .insert(d.key.clone(), CustomDevice::from_device(d)?)
            .is_some()
        {
            return Err(Error::invalid(format!("device '{}'", d.key), "given twice"));
        }
    }
    for l in links {
        l.validate()?;
        check_key("link", &l.key)?;
        if f.links
            .insert(l.key.clone(), CustomLink::from_link(l)?)
            .is_some()
        {
            return Err(Error::invalid(format!("link '{}'", l.key), "given twice"));
        }
    }
    toml::to_string(&f).map_err(|e| Error::invalid("catalogue overlay", e.to_string()))
}
