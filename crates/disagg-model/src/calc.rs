//! The hand-off calculator as one function over named options, shared by `disagg handoff` and the
//! web API's `/api/handoff`: the options are the CLI's flags in snake_case, the document is what
//! `--json` prints. Errors name the option by its snake_case key; front ends respell it.

use serde::{Deserialize, Serialize};

use crate::catalogue::{Catalogue, CompressAt, Device, KvTransit, Link, ModelSpec};
use crate::cost::{CostModel, CostOptions};
use crate::draft::Draft;
use crate::error::Error;
use crate::handoff::{handoff_shared_draft, Handoff, SendMode, Sharing};
use crate::quant::{Formats, QuantFormat};

/// The calculator's options (`disagg handoff` flags), with its defaults: the chapter's
/// interactive (Llama-3-8B, 2,048 tokens, 25 GbE, no compression, sent whole, one H100).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HandoffSpec {
    /// Model key.
    pub model: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Link key.
    pub link: String,
    /// Channels (overrides the link's).
    pub link_channels: Option<u64>,
    /// Compression key (`none`: no compression stage).
    pub compression: String,
    /// `link`/`transit` or `gpu`/`endpoint`.
    pub compress_at: String,
    /// Kept fraction for `freq-keep-k`.
    pub kv_keep: Option<f64>,
    /// `whole` or `layerwise`.
    pub send: String,
    /// `fifo` or `fair`.
    pub link_sharing: String,
    /// Hand-offs leaving at once.
    pub concurrent: u64,
    /// Prefill device key.
    pub prefill_device: String,
    /// Devices per prefill instance.
    pub devices_per_instance: u64,
    /// One row per catalogue link.
    pub all_links: bool,
    /// KV cache format (`docs/cost-model.md#quantisation`): the hand-off's bytes per value; `None`: BF16.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_format: Option<String>,
    /// Weight format: the prefill step's weight bytes; `None`: BF16.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_format: Option<String>,
    /// Matmul format: `bf16` or the weight format (the prefill device's native units);
    /// `None`: BF16.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_format: Option<String>,
    /// Speculative decoding's draft, `mtp` or a model key: its KV of the prompt crosses too
    /// (`docs/levers.md#speculative`); `None`: no draft.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<String>,
}

impl Default for HandoffSpec {
    fn default() -> Self {
        HandoffSpec {
            model: "llama3-8b".into(),
            prompt_tokens: 2048,
            link: "eth-25g".into(),
            link_channels: None,
            compression: "none".into(),
            compress_at: "link".into(),
            kv_keep: None,
            send: "whole".into(),
            link_sharing: "fifo".into(),
            concurrent: 1,
            prefill_device: "h100".into(),
            devices_per_instance: 1,
            all_links: false,
            kv_format: None,
            weight_format: None,
            compute_format: None,
            speculative: None,
        }
    }
}

/// One link's answer: the link, then the [`Handoff`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HandoffRow {
    /// Link key.
    pub link: String,
    /// Link name.
    pub link_name: String,
    /// Bandwidth per channel and direction, bytes/s.
    pub link_bandwidth_bps: f64,
    /// Latency, s.
    pub link_latency_s: f64,
    /// Energy, pJ per bit.
    pub link_pj_per_bit: f64,
    /// Channels.
    pub link_channels: u32,
    /// The hand-off over it.
    #[serde(flatten)]
    pub handoff: Handoff,
}

/// The calculator's document (`disagg handoff --json`): the inputs echoed, then one link's row
/// flattened in, or `rows` with `all_links`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HandoffDoc {
    /// Version of this layout.
    pub schema_version: u32,
    /// Model key.
    pub model: String,
    /// Model name.
    pub model_name: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Compression key (`none` without a stage).
    pub compression: String,
    /// `transit` or `endpoint`.
    pub compress_at: String,
    /// `whole` or `layerwise`.
    pub send: String,
    /// `fifo` or `fair`.
    pub link_sharing: String,
    /// Hand-offs leaving at once.
    pub concurrent: u64,
    /// Prefill device key.
    pub prefill_device: String,
    /// Devices per prefill instance.
    pub devices_per_instance: u64,
    /// KV cache format (when given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_format: Option<String>,
    /// Weight format (when given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_format: Option<String>,
    /// Compute format (when given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_format: Option<String>,
    /// The speculative draft (when given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<String>,
    /// The single link's answer (without `all_links`).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub row: Option<HandoffRow>,
    /// Every link's answer, fastest first (with `all_links`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<Vec<HandoffRow>>,
}

/// `v` if it is between 1 and `max`, else an error naming `what`.
pub(crate) fn count(what: &str, v: u64, max: u64) -> Result<u64, Error> {
    if v < 1 {
        Err(Error::invalid(what, format!("must be at least 1, got {v}")))
    } else if v > max {
        Err(Error::invalid(
            what,
            format!("{v} is absurdly large (limit {max})"),
        ))
    } else {
        Ok(v)
    }
}

fn named(what: &str, e: Error) -> Error {
    match e {
        Error::UnknownName { .. } => Error::invalid(what, e.to_string()),
        other => other,
    }
}

/// The compression stage for `key` at `at` (None for `none`), for `model`'s cache.
pub fn transit_for(
    cat: &Catalogue,
    model: &ModelSpec,
    key: &str,
    at: CompressAt,
    keep: Option<f64>,
) -> Result<Option<KvTransit>, Error> {
    let mut c = cat
        .compression(key)
        .map_err(|e| named("compression", e))?
        .for_model(model);
    if let Some(k) = keep {
        if c.key != "freq-keep-k" {
            return Err(Error::invalid(
                "kv_keep",
                format!("only applies to compression freq-keep-k, not '{}'", c.key),
            ));
        }
        if !(k.is_finite() && k > 0.0 && k <= 1.0) {
            return Err(Error::invalid(
                "kv_keep",
                format!("must be in (0, 1], got {k}"),
            ));
        }
        c.ratio = 1.0 / k;
    }
    if c.key == "none" {
        return Ok(None);
    }
    if model.kv_bytes != 2.0 {
        return Err(Error::invalid(
            "compression",
            format!(
                "KV compression starts from a BF16 cache (2 bytes per value); this model stores {} \
                 bytes per value",
                model.kv_bytes
            ),
        ));
    }
    Ok(Some(KvTransit::new(c, at)))
}

/// The formats of `spec` (`None` is BF16); an unknown name is named by its option.
pub fn formats_of(spec: &HandoffSpec) -> Result<Formats, Error> {
    let one = |key: &str, v: &Option<String>| match v {
        None => Ok(QuantFormat::Bf16),
        Some(name) => QuantFormat::parse(name).map_err(|e| named(key, e)),
    };
    Ok(Formats {
        weight: one("weight_format", &spec.weight_format)?,
        kv: one("kv_format", &spec.kv_format)?,
        compute: one("compute_format", &spec.compute_format)?,
    })
}

/// An error named by a CLI flag (`--compute-format`) renamed to its option's key
/// (`compute_format`), so each front end spells it its own way.
fn keyed(e: Error) -> Error {
    match e {
        Error::Invalid { what, why } if what.starts_with("--") => Error::Invalid {
            what: what[2..].replace('-', "_"),
            why,
        },
        other => other,
    }
}

/// The checks of `docs/levers.md#scheduled-instances` items 2 to 4 and 6 that concern the calculator, in that
/// order, when a format is given or a draft is: the compute format is BF16 or the weight
/// format; formats and drafts need an attention model without CED; a non-BF16 KV format or a
/// draft without a compression stage (`compressed`).
fn check_levers(
    spec: &HandoffSpec,
    formats: &Formats,
    model: &ModelSpec,
    compressed: bool,
) -> Result<(), Error> {
    if !formats.is_quantised() && spec.speculative.is_none() {
        return Ok(());
    }
    formats.check(model).map_err(keyed)?;
    if formats.kv != QuantFormat::Bf16 && compressed {
        return Err(Error::invalid(
            "kv_format",
            "KV hand-off compression assumes a BF16 KV cache: not with kv_format != 'bf16'",
        ));
    }
    if spec.speculative.is_some() {
        if !model.is_attention() || model.ced.is_some() {
            return Err(Error::invalid(
                "speculative",
                "the draft's hand-off is modelled for attention models without CED only",
            ));
        }
        if model.arch.is_some() {
            return Err(Error::invalid(
                "speculative",
                format!(
                    "the draft's hand-off is not modelled for {}, which is described by layer kinds",
                    model.key
                ),
            ));
        }
        if compressed {
            return Err(Error::invalid(
                "speculative",
                "speculative decoding with KV hand-off compression is not modelled",
            ));
        }
    }
    Ok(())
}

/// Evaluates the calculator. `model`, `device` and `link` replace the catalogue entries named in
/// the spec when a front end built custom ones.
pub fn evaluate(
    cat: &Catalogue,
    spec: &HandoffSpec,
    model: Option<ModelSpec>,
    device: Option<Device>,
    link: Option<Link>,
) -> Result<HandoffDoc, Error> {
    count("prompt_tokens", spec.prompt_tokens, u32::MAX as u64)?;
    count("devices_per_instance", spec.devices_per_instance, 1024)?;
    count("concurrent", spec.concurrent, 65_536)?;
    if let Some(c) = spec.link_channels {
        count("link_channels", c, 4096)?;
    }
    let model = match model {
        Some(m) => m,
        None => cat
            .model(&spec.model)
            .map_err(|e| named("model", e))?
            .clone(),
    };
    let device = match device {
        Some(d) => d,
        None => cat
            .device(&spec.prefill_device)
            .map_err(|e| named("prefill_device", e))?
            .clone(),
    };
    let send = SendMode::parse(&spec.send).map_err(|e| named("send", e))?;
    let sharing = Sharing::parse(&spec.link_sharing).map_err(|e| named("link_sharing", e))?;
    let at = CompressAt::parse(&spec.compress_at).map_err(|e| named("compress_at", e))?;
    let transit = transit_for(cat, &model, &spec.compression, at, spec.kv_keep)?;
    let formats = formats_of(spec)?;
    check_levers(spec, &formats, &model, transit.is_some())?;
    let model = formats.apply(&model);
    let draft = match &spec.speculative {
        Some(name) => {
            Some(Draft::new(&model, name, cat).map_err(|e| keyed(named("speculative", e)))?)
        }
        None => None,
    };
    let opts = CostOptions {
        compute_speedup: formats.compute_speedup(&device, "prefill")?,
        ..CostOptions::default()
    };
    let n = spec.devices_per_instance as u32;
    let cost = CostModel::new(&model, &device, n, opts)?;
    let draft_cost = match &draft {
        Some(d) => Some(d.cost_model(&device, n, &cost.opts)?),
        None => None,
    };
    let mut links: Vec<Link> = if spec.all_links {
        let mut v = cat.links.clone();
        v.sort_by(|x, y| y.bandwidth_bps.total_cmp(&x.bandwidth_bps));
        v
    } else {
        match link {
            Some(l) => vec![l],
            None => vec![cat.link(&spec.link).map_err(|e| named("link", e))?.clone()],
        }
    };
    if let Some(c) = spec.link_channels {
        for l in &mut links {
            l.channels = c as u32;
        }
    }
    let rows: Vec<HandoffRow> = links
        .iter()
        .map(|l| HandoffRow {
            link: l.key.clone(),
            link_name: l.name.clone(),
            link_bandwidth_bps: l.bandwidth_bps,
            link_latency_s: l.latency_s,
            link_pj_per_bit: l.pj_per_bit,
            link_channels: l.channels,
            handoff: handoff_shared_draft(
                &cost,
                draft_cost.as_ref(),
                l,
                transit.as_ref(),
                send,
                spec.prompt_tokens,
                sharing,
                spec.concurrent as u32,
            ),
        })
        .collect();
    let (row, rows) = if spec.all_links {
        (None, Some(rows))
    } else {
        (rows.into_iter().next(), None)
    };
    Ok(HandoffDoc {
        schema_version: 1,
        model: cost.model.key.clone(),
        model_name: cost.model.name.clone(),
        prompt_tokens: spec.prompt_tokens,
        compression: transit
            .as_ref()
            .map_or("none".into(), |t| t.compression.key.clone()),
        compress_at: at.as_str().into(),
        send: send.as_str().into(),
        link_sharing: sharing.as_str().into(),
        concurrent: spec.concurrent,
        prefill_device: cost.device.key.clone(),
        devices_per_instance: spec.devices_per_instance,
        kv_format: spec.kv_format.as_ref().map(|_| formats.kv.as_str().into()),
        weight_format: spec
            .weight_format
            .as_ref()
            .map(|_| formats.weight.as_str().into()),
        compute_format: spec
            .compute_format
            .as_ref()
            .map(|_| formats.compute.as_str().into()),
        speculative: draft.map(|d| d.key),
        row,
        rows,
    })
}
