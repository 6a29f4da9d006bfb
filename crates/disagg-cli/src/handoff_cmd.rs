//! `disagg handoff`: the chapter's calculator as a command.

use clap::Args;
use disagg_model::calc::{evaluate, transit_for, HandoffRow, HandoffSpec};
use disagg_model::{Catalogue, CompressAt, SendMode};

use crate::format as f;
use crate::output::outln;
use crate::scenario_flags::HardwareFlags;
use crate::{CmdResult, UsageError};

mod ranks_cmd;
pub mod served_table;

#[derive(Args, Debug)]
pub struct HandoffArgs {
    /// Model preset (see `disagg list models`), or the base of a custom shape.
    #[arg(long, default_value = "llama3-8b")]
    model: String,
    /// Prompt tokens whose KV cache is handed off.
    #[arg(
        long,
        default_value_t = 2048,
        value_name = "N",
        allow_negative_numbers = true
    )]
    prompt_tokens: u64,
    /// KV link (see `disagg list links`).
    #[arg(long, default_value = "eth-25g")]
    link: String,
    /// Concurrent transfers on the link (overrides the preset's channels).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
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
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    kv_keep: Option<f64>,
    /// whole (after the prefill, the reference) or layerwise (each layer as soon as it is done).
    #[arg(long, default_value = "whole")]
    send: String,
    /// Device of the prefill instance (see `disagg list devices`).
    #[arg(long, default_value = "h100")]
    prefill_device: String,
    /// Devices per prefill instance (tensor parallel, treated as one bigger device).
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        allow_negative_numbers = true
    )]
    devices_per_instance: u64,
    /// How concurrent hand-offs share the link: fifo (channels, first come first served) or fair
    /// (processor sharing).
    #[arg(long, default_value = "fifo", value_name = "fifo|fair")]
    link_sharing: String,
    /// Hand-offs of this size leaving at once (a prefill batch): times are for the last of them.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        allow_negative_numbers = true
    )]
    concurrent: u64,
    /// One row per link in the catalogue (the chapter's link table).
    #[arg(long, conflicts_with_all = ["link", "link_bandwidth_gb_s", "link_latency_us", "link_pj_per_bit"])]
    all_links: bool,
    /// KV cache format: bf16, fp8, int8, int4 or fp4 (the hand-off's bytes per value) [bf16].
    #[arg(long, value_name = "FORMAT")]
    kv_format: Option<String>,
    /// Weight format: bf16, fp8, int8, int4 or fp4 (the prefill step's weight bytes) [bf16].
    #[arg(long, value_name = "FORMAT")]
    weight_format: Option<String>,
    /// Matmul format: bf16 (weight-only quantisation) or the weight format (W8A8, W4A4: the
    /// prefill device's native units) [bf16].
    #[arg(long, value_name = "FORMAT")]
    compute_format: Option<String>,
    /// Speculative decoding's draft, mtp or a model key: the draft's KV of the prompt crosses
    /// too, and its prefill pass follows the target's [off].
    #[arg(long, value_name = "DRAFT")]
    speculative: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Model the hand-off rank by rank: each prefill rank sends its KV shard over its own NIC to
    /// the decode ranks that own those heads and layers (adds a per-rank table, or `ranks` in the
    /// JSON).
    #[arg(long, conflicts_with = "all_links")]
    handoff_ranks: bool,
    /// Tensor-parallel ranks of the prefill instance (with --handoff-ranks; default:
    /// --devices-per-instance / --prefill-pp).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    prefill_tp: Option<u64>,
    /// Pipeline stages of the prefill instance (with --handoff-ranks; default 1).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    prefill_pp: Option<u64>,
    /// Tensor-parallel ranks of the decode instance (with --handoff-ranks; default:
    /// --devices-per-instance / --decode-pp).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    decode_tp: Option<u64>,
    /// Pipeline stages of the decode instance (with --handoff-ranks; default 1).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    decode_pp: Option<u64>,
    /// Micro-batches of the prefill pipeline (with --handoff-ranks; default: --prefill-pp).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    prefill_microbatches: Option<u64>,
    /// NICs per instance, each with the link's bandwidth and latency; rank i uses NIC i % N (with
    /// --handoff-ranks or --rank-table; default: one per GPU).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    nics_per_instance: Option<u64>,
    /// An on-GPU gather pass on each decode rank after its KV arrives: off (default) or hbm (read
    /// and write it once at the decode device's effective HBM bandwidth).
    #[arg(long, value_name = "off|hbm")]
    kv_relayout_cost: Option<String>,
    /// Device of the decode instance, for its HBM and scale-up link (with --handoff-ranks or
    /// --rank-table; default: --prefill-device).
    #[arg(long)]
    decode_device: Option<String>,
    /// The rank-aware table: one transfer against TP8->TP8, TP8->TP4 and TP4->TP8 with a NIC per
    /// GPU (the README's table).
    #[arg(long, conflicts_with_all = ["all_links", "json", "handoff_ranks"])]
    rank_table: bool,
    /// The chapter's link table for the models served today (every model described by layer
    /// kinds: hand-off bytes and times over 25 GbE, 100 GbE and InfiniBand NDR at 2,048 and
    /// 32,768 prompt tokens; the README's table), as Markdown.
    #[arg(long, conflicts_with_all = ["all_links", "json", "handoff_ranks", "rank_table"])]
    models_table: bool,
    #[command(flatten)]
    pub(crate) hardware: HardwareFlags,
}

/// Respells an option named by its snake_case key as the flag (`send` -> `--send`).
pub fn flag_error(e: disagg_model::Error) -> UsageError {
    match e {
        disagg_model::Error::Invalid { what, why }
            if what.chars().all(|c| c.is_ascii_lowercase() || c == '_') =>
        {
            UsageError(format!("--{}: {why}", what.replace('_', "-")))
        }
        other => UsageError(other.to_string()),
    }
}

pub fn run(a: HandoffArgs, cat: Catalogue) -> CmdResult {
    ranks_cmd::check_flags(&a)?;
    if a.rank_table {
        return ranks_cmd::rank_table(&a, &cat);
    }
    if a.models_table {
        return served_table::models_table(&cat);
    }
    let spec = HandoffSpec {
        model: a.model.clone(),
        prompt_tokens: a.prompt_tokens,
        link: a.link.clone(),
        link_channels: a.link_channels,
        compression: a.compression.clone(),
        compress_at: a.compress_at.clone(),
        kv_keep: a.kv_keep,
        send: a.send.clone(),
        link_sharing: a.link_sharing.clone(),
        concurrent: a.concurrent,
        prefill_device: a.prefill_device.clone(),
        devices_per_instance: a.devices_per_instance,
        all_links: a.all_links,
        kv_format: a.kv_format.clone(),
        weight_format: a.weight_format.clone(),
        compute_format: a.compute_format.clone(),
        speculative: a.speculative.clone(),
    };
    let model = a.hardware.model(&a.model, &cat)?;
    let device = a
        .hardware
        .device(&a.prefill_device, "--prefill-device", &cat)?;
    let link = if a.all_links {
        None
    } else {
        Some(a.hardware.link(&a.link, &cat)?)
    };
    let doc = evaluate(&cat, &spec, Some(model.clone()), Some(device.clone()), link)
        .map_err(flag_error)?;
    let ranks = ranks_cmd::plan(&a, &cat, &spec, &doc, &model)?;
    if a.json {
        match (&ranks, &device.calibration) {
            (None, None) => outln!("{}", serde_json::to_string_pretty(&doc).expect("json")),
            (plan, cal) => {
                let mut v = serde_json::to_value(&doc).expect("json");
                if let Some(plan) = plan {
                    v["ranks"] = serde_json::to_value(plan).expect("json");
                }
                if let Some(c) = cal {
                    // The fitted prefill device's provenance (`disagg calibrate`).
                    let mut cv = serde_json::json!({"pool": "prefill", "device": device.key});
                    if let (Some(o), serde_json::Value::Object(f)) =
                        (cv.as_object_mut(), serde_json::to_value(c).expect("json"))
                    {
                        o.extend(f);
                    }
                    v["calibration"] = cv;
                }
                outln!("{}", serde_json::to_string_pretty(&v).expect("json"));
            }
        }
        return Ok(());
    }
    let transit = transit_for(
        &cat,
        &model,
        &a.compression,
        CompressAt::parse(&doc.compress_at).map_err(flag_error)?,
        a.kv_keep,
    )
    .map_err(flag_error)?;
    let send = SendMode::parse(&doc.send).map_err(flag_error)?;
    let m = &model;
    let comp_text = match &transit {
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
    let send_text = match send {
        SendMode::Whole => "sent after the whole prefill",
        SendMode::Layerwise => "streamed layer by layer",
    };
    outln!(
        "{}, {} prompt tokens, {}x {} prefill, {}, {}",
        m.name,
        f::thousands(a.prompt_tokens),
        a.devices_per_instance,
        device.name,
        comp_text,
        send_text
    );
    if let Some(c) = &device.calibration {
        outln!(
            "  calibrated             {}",
            crate::report::calibration_phrase("prefill", &device.key, c)
        );
    }
    if a.kv_format.is_some() || a.weight_format.is_some() || a.compute_format.is_some() {
        let fm = disagg_model::calc::formats_of(&spec).map_err(flag_error)?;
        outln!(
            "  formats                weights {}, KV {}, compute {} (accuracy not simulated)",
            fm.weight.as_str(),
            fm.kv.as_str(),
            fm.compute.as_str()
        );
    }
    if let Some(d) = &doc.speculative {
        outln!("  draft                  {d} (its KV of the prompt crosses too)");
    }
    if let Some(rows) = &doc.rows {
        print_table(rows, send)?;
        return Ok(());
    }
    let Some(row) = &doc.row else { return Ok(()) };
    let h = &row.handoff;
    let kib = h.kv_bytes_per_token / 1024.0;
    outln!(
        "  link                   {} ({}, {} latency, {} pJ/bit, {} channel{})",
        row.link_name,
        f::gb_per_s(row.link_bandwidth_bps),
        f::time(row.link_latency_s),
        disagg_sim::ranges::show_f64(row.link_pj_per_bit),
        row.link_channels,
        if row.link_channels == 1 { "" } else { "s" }
    );
    outln!(
        "  KV to hand off         {:<12} {} B per token ({} KiB)",
        f::bytes(h.kv_bytes),
        f::thousands(h.kv_bytes_per_token as u64),
        kib
    );
    if let Some(k) = served_table::kind_breakdown(m, a.prompt_tokens) {
        outln!("  by layer kind          {k}");
    }
    let wire_note = if h.compression_ratio == 1.0 {
        "uncompressed".to_string()
    } else {
        format!("{:.2}x smaller", h.compression_ratio)
    };
    outln!(
        "  on the wire            {:<12} {}",
        f::bytes(h.wire_bytes),
        wire_note
    );
    let bound = if h.transit_bound {
        "  (the in-link compressor, not the wire, sets this)"
    } else {
        ""
    };
    outln!(
        "  transfer               {}{}",
        f::time(h.transfer_s),
        bound
    );
    outln!("  prefill                {}", f::time(h.prefill_s));
    outln!(
        "  exposed after prefill  {:<12} added before decode can start",
        f::time(h.exposed_s)
    );
    outln!(
        "  link full at           {:<12} hand-offs alone, one channel ({} with latency and all channels)",
        f::rps(h.link_saturation_rps),
        f::rps(h.link_capacity_rps)
    );
    let transit_e = if h.transit_energy_j > 0.0 {
        format!(" + {} J in the compressor", f::sig3(h.transit_energy_j))
    } else {
        String::new()
    };
    outln!(
        "  link energy            {} J per hand-off{}",
        f::sig3(h.link_energy_j),
        transit_e
    );
    if let Some(plan) = &ranks {
        ranks_cmd::print_plan(
            plan,
            &row.link_name,
            &ranks_cmd::decode_device(&a, &cat)?.name,
        )?;
    }
    Ok(())
}

fn print_table(rows: &[HandoffRow], send: SendMode) -> CmdResult {
    let size = rows
        .first()
        .map(|r| f::bytes(r.handoff.kv_bytes))
        .unwrap_or_default();
    let takes = format!("{size} takes");
    let exposed = match send {
        SendMode::Whole => "exposed",
        SendMode::Layerwise => "exposed (layer-wise)",
    };
    outln!();
    outln!(
        "{:<36} {:>12} {:>16} {:>20} {:>14} {:>12}",
        "Link",
        "Bandwidth",
        takes,
        exposed,
        "link full at",
        "J/hand-off"
    );
    for r in rows {
        let h = &r.handoff;
        outln!(
            "{:<36} {:>12} {:>16} {:>20} {:>14} {:>12}",
            r.link_name,
            f::gb_per_s(r.link_bandwidth_bps),
            f::time_1dp(h.transfer_s),
            f::time_1dp(h.exposed_s),
            f::rps(h.link_saturation_rps),
            format!("{:.3}", h.link_energy_j + h.transit_energy_j)
        );
    }
    Ok(())
}
