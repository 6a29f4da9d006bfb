//! `disagg handoff`: the chapter's calculator as a command.

use clap::Args;
use disagg_model::{
    handoff_shared, Catalogue, CompressAt, CostModel, CostOptions, Handoff, KvTransit, Link,
    SendMode, Sharing,
};
use serde_json::{json, Map, Value};

use crate::custom::{DeviceFlags, LinkFlags, ModelFlags};
use crate::format as f;
use crate::{CmdResult, UsageError};

#[derive(Args, Debug)]
pub struct HandoffArgs {
    /// Model preset (see `disagg list models`), or the base of a custom shape.
    #[arg(long, default_value = "llama3-8b")]
    model: String,
    /// Prompt tokens whose KV cache is handed off.
    #[arg(long, default_value_t = 2048, value_name = "N", value_parser = crate::custom::count, allow_negative_numbers = true)]
    prompt_tokens: u64,
    /// KV link (see `disagg list links`).
    #[arg(long, default_value = "eth-25g")]
    link: String,
    /// Concurrent transfers on the link (overrides the preset's channels).
    #[arg(long, value_name = "N", value_parser = crate::custom::count, allow_negative_numbers = true)]
    link_channels: Option<u64>,
    /// KV compression: none, fp8, fp4-block, freq-keep-k, int8, fp4-g16, kivi2 (see `disagg list
    /// compression`; bytes and compute only, accuracy is out of scope).
    #[arg(long, default_value = "none")]
    compression: String,
    /// Where to compress: link (a stage in the link, at line rate; the reference's `transit`) or gpu
    /// (on the prefill GPU before sending; the reference's `endpoint`).
    #[arg(long, default_value = "link")]
    compress_at: String,
    /// Fraction of coefficients kept by freq-keep-k (its ratio becomes 1/F).
    #[arg(long, value_name = "F", value_parser = crate::custom::positive, allow_negative_numbers = true)]
    kv_keep: Option<f64>,
    /// whole (after the prefill, the reference) or layerwise (each layer as soon as it is done).
    #[arg(long, default_value = "whole")]
    send: String,
    /// Device of the prefill instance (see `disagg list devices`).
    #[arg(long, default_value = "h100")]
    prefill_device: String,
    /// Devices per prefill instance (tensor parallel, treated as one bigger device).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = crate::custom::count, allow_negative_numbers = true)]
    devices_per_instance: u64,
    /// How concurrent hand-offs share the link: fifo (channels, first come first served) or fair
    /// (processor sharing).
    #[arg(long, default_value = "fifo", value_name = "fifo|fair")]
    link_sharing: String,
    /// Hand-offs of this size leaving at once (a prefill batch): times are for the last of them.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = crate::custom::count, allow_negative_numbers = true)]
    concurrent: u64,
    /// One row per link in the catalogue (the chapter's link table).
    #[arg(long)]
    all_links: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    model_flags: ModelFlags,
    #[command(flatten)]
    link_flags: LinkFlags,
    #[command(flatten)]
    device_flags: DeviceFlags,
}

struct Resolved {
    cost: CostModel,
    transit: Option<KvTransit>,
    send: SendMode,
    compress_at: CompressAt,
}

fn transit_for(
    cat: &Catalogue,
    model: &disagg_model::ModelSpec,
    key: &str,
    at: CompressAt,
    keep: Option<f64>,
) -> Result<Option<KvTransit>, UsageError> {
    let mut c = cat.compression(key)?.for_model(model);
    if let Some(k) = keep {
        if c.key != "freq-keep-k" {
            return Err(UsageError(format!(
                "--kv-keep: only applies to --compression freq-keep-k, not '{}'",
                c.key
            )));
        }
        if k > 1.0 {
            return Err(UsageError(format!("--kv-keep: must be in (0, 1], got {k}")));
        }
        c.ratio = 1.0 / k;
    }
    Ok(if c.key == "none" {
        None
    } else {
        Some(KvTransit::new(c, at))
    })
}

fn row_json(link: &Link, h: &Handoff) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("link".into(), json!(link.key));
    m.insert("link_name".into(), json!(link.name));
    m.insert("link_bandwidth_bps".into(), json!(link.bandwidth_bps));
    m.insert("link_latency_s".into(), json!(link.latency_s));
    m.insert("link_pj_per_bit".into(), json!(link.pj_per_bit));
    m.insert("link_channels".into(), json!(link.channels));
    if let Value::Object(r) = serde_json::to_value(h).expect("plain struct") {
        m.extend(r);
    }
    m
}

pub fn run(a: HandoffArgs, cat: Catalogue) -> CmdResult {
    let model = a.model_flags.resolve(&a.model, &cat)?;
    let device = a.device_flags.resolve(&a.prefill_device, &cat)?;
    let send = SendMode::parse(&a.send).map_err(|e| UsageError(format!("--send: {e}")))?;
    let sharing =
        Sharing::parse(&a.link_sharing).map_err(|e| UsageError(format!("--link-sharing: {e}")))?;
    if a.concurrent > 65_536 {
        return Err(UsageError(format!(
            "--concurrent: at most 65536, got {}",
            a.concurrent
        )));
    }
    let compress_at =
        CompressAt::parse(&a.compress_at).map_err(|e| UsageError(format!("--compress-at: {e}")))?;
    let transit = transit_for(&cat, &model, &a.compression, compress_at, a.kv_keep)
        .map_err(|e| UsageError(format!("--compression: {}", e.0)))?;
    if transit.is_some() && model.kv_bytes != 2.0 {
        return Err(UsageError(format!(
            "--compression: KV compression starts from a BF16 cache (2 bytes per value); this model \
             stores {} bytes per value",
            model.kv_bytes
        )));
    }
    let cost = CostModel::new(
        &model,
        &device,
        a.devices_per_instance as u32,
        CostOptions::default(),
    )?;
    let r = Resolved {
        cost,
        transit,
        send,
        compress_at,
    };
    let mut links: Vec<Link> = if a.all_links {
        let mut v = cat.links.clone();
        v.sort_by(|x, y| y.bandwidth_bps.total_cmp(&x.bandwidth_bps));
        v
    } else {
        vec![a.link_flags.resolve(&a.link, &cat)?]
    };
    if let Some(c) = a.link_channels {
        for l in &mut links {
            l.channels = c as u32;
            l.validate()?;
        }
    }
    let results: Vec<(Link, Handoff)> = links
        .into_iter()
        .map(|l| {
            let h = handoff_shared(
                &r.cost,
                &l,
                r.transit.as_ref(),
                r.send,
                a.prompt_tokens,
                sharing,
                a.concurrent as u32,
            );
            (l, h)
        })
        .collect();

    let comp_key = r
        .transit
        .as_ref()
        .map_or("none", |t| t.compression.key.as_str());
    if a.json {
        let mut top = Map::new();
        top.insert("schema_version".into(), json!(1));
        top.insert("model".into(), json!(r.cost.model.key));
        top.insert("model_name".into(), json!(r.cost.model.name));
        top.insert("prompt_tokens".into(), json!(a.prompt_tokens));
        top.insert("compression".into(), json!(comp_key));
        top.insert("compress_at".into(), json!(r.compress_at.as_str()));
        top.insert("send".into(), json!(r.send.as_str()));
        top.insert("link_sharing".into(), json!(sharing.as_str()));
        top.insert("concurrent".into(), json!(a.concurrent));
        top.insert("prefill_device".into(), json!(r.cost.device.key));
        top.insert("devices_per_instance".into(), json!(a.devices_per_instance));
        if a.all_links {
            let rows: Vec<Value> = results
                .iter()
                .map(|(l, h)| Value::Object(row_json(l, h)))
                .collect();
            top.insert("rows".into(), Value::Array(rows));
        } else {
            let (l, h) = &results[0];
            top.extend(row_json(l, h));
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&Value::Object(top)).expect("json")
        );
        return Ok(());
    }

    let m = &r.cost.model;
    let comp_text = match &r.transit {
        None => "no compression".to_string(),
        Some(t) => format!(
            "{} compressed {}",
            t.compression.key,
            if t.at == CompressAt::Transit {
                "in the link"
            } else {
                "on the prefill GPU"
            }
        ),
    };
    let send_text = match r.send {
        SendMode::Whole => "sent after the whole prefill",
        SendMode::Layerwise => "streamed layer by layer",
    };
    println!(
        "{}, {} prompt tokens, {}x {} prefill, {}, {}",
        m.name,
        f::thousands(a.prompt_tokens),
        a.devices_per_instance,
        r.cost.device.name,
        comp_text,
        send_text
    );
    if a.all_links {
        print_table(&results, a.prompt_tokens, r.send);
        return Ok(());
    }
    let (l, h) = &results[0];
    let kib = h.kv_bytes_per_token / 1024.0;
    println!(
        "  link                   {} ({}, {} latency, {} pJ/bit, {} channel{})",
        l.name,
        f::gb_per_s(l.bandwidth_bps),
        f::time(l.latency_s),
        l.pj_per_bit,
        l.channels,
        if l.channels == 1 { "" } else { "s" }
    );
    println!(
        "  KV to hand off         {:<12} {} B per token ({} KiB)",
        f::bytes(h.kv_bytes),
        f::thousands(h.kv_bytes_per_token as u64),
        kib
    );
    let wire_note = if h.compression_ratio == 1.0 {
        "uncompressed".to_string()
    } else {
        format!("{:.2}x smaller", h.compression_ratio)
    };
    println!(
        "  on the wire            {:<12} {}",
        f::bytes(h.wire_bytes),
        wire_note
    );
    let bound = if h.transit_bound {
        "  (the in-link compressor, not the wire, sets this)"
    } else {
        ""
    };
    println!(
        "  transfer               {}{}",
        f::time(h.transfer_s),
        bound
    );
    println!("  prefill                {}", f::time(h.prefill_s));
    println!(
        "  exposed after prefill  {:<12} added before decode can start",
        f::time(h.exposed_s)
    );
    println!(
        "  link full at           {:<12} hand-offs alone, one channel ({} with latency and all channels)",
        f::rps(h.link_saturation_rps),
        f::rps(h.link_capacity_rps)
    );
    let transit_e = if h.transit_energy_j > 0.0 {
        format!(" + {} J in the compressor", f::sig3(h.transit_energy_j))
    } else {
        String::new()
    };
    println!(
        "  link energy            {} J per hand-off{}",
        f::sig3(h.link_energy_j),
        transit_e
    );
    Ok(())
}

fn print_table(rows: &[(Link, Handoff)], prompt: u64, send: SendMode) {
    let size = rows
        .first()
        .map(|(_, h)| f::bytes(h.kv_bytes))
        .unwrap_or_default();
    let takes = format!("{size} takes");
    let exposed = match send {
        SendMode::Whole => "exposed",
        SendMode::Layerwise => "exposed (layer-wise)",
    };
    let _ = prompt;
    println!();
    println!(
        "{:<36} {:>12} {:>16} {:>20} {:>14} {:>12}",
        "Link", "Bandwidth", takes, exposed, "link full at", "J/hand-off"
    );
    for (l, h) in rows {
        println!(
            "{:<36} {:>12} {:>16} {:>20} {:>14} {:>12}",
            l.name,
            f::gb_per_s(l.bandwidth_bps),
            f::time_1dp(h.transfer_s),
            f::time_1dp(h.exposed_s),
            f::rps(h.link_saturation_rps),
            format!("{:.3}", h.link_energy_j + h.transit_energy_j)
        );
    }
}
