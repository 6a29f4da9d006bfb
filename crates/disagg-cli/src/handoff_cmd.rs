//! `disagg handoff`: the chapter's calculator as a command.

use disagg_model::calc::{evaluate, transit_for, HandoffRow, HandoffSpec};
use disagg_model::{Catalogue, CompressAt, SendMode};

use crate::format as f;
use crate::output::outln;
use crate::CmdResult;

mod args;
mod ranks_cmd;
pub mod served_table;

pub use args::{flag_error, HandoffArgs};

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
        let v = disagg_api::handoff::document(&doc, ranks.as_ref(), &device);
        outln!("{}", serde_json::to_string_pretty(&v).expect("json"));
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
