//! `disagg handoff --handoff-ranks` and `--rank-table`: the rank-aware hand-off
//! (`disagg_model::ranks`) as text and JSON.

use disagg_model::calc::{HandoffDoc, HandoffSpec};
use disagg_model::ranks::{self, RankSpec, Side};
use disagg_model::{
    rank_plan, Catalogue, Device, Link, ModelSpec, RankLayout, RankOptions, RankPlan, Relayout,
    SendMode,
};

use super::args::{flag_error, HandoffArgs};
use crate::format as f;
use crate::output::outln;
use crate::{CmdResult, UsageError};

fn err(flag: &str, why: impl std::fmt::Display) -> UsageError {
    UsageError(format!("{flag}: {why}"))
}

/// Refuses the rank flags without `--handoff-ranks` / `--rank-table`, and the calculator options
/// the rank-aware hand-off does not model.
pub(super) fn check_flags(a: &HandoffArgs) -> Result<(), UsageError> {
    let layout = [
        ("--prefill-tp", a.prefill_tp.is_some()),
        ("--prefill-pp", a.prefill_pp.is_some()),
        ("--decode-tp", a.decode_tp.is_some()),
        ("--decode-pp", a.decode_pp.is_some()),
        ("--prefill-microbatches", a.prefill_microbatches.is_some()),
    ];
    let shared = [
        ("--nics-per-instance", a.nics_per_instance.is_some()),
        ("--kv-relayout-cost", a.kv_relayout_cost.is_some()),
        ("--decode-device", a.decode_device.is_some()),
    ];
    if !a.handoff_ranks {
        for (flag, given) in layout {
            if given && a.rank_table {
                return Err(err(
                    flag,
                    "--rank-table prints fixed layouts; use --handoff-ranks for your own",
                ));
            }
            if given {
                return Err(err(flag, "applies only with --handoff-ranks"));
            }
        }
    }
    if a.rank_table && a.devices_per_instance != 1 {
        return Err(err(
            "--devices-per-instance",
            "--rank-table prints fixed layouts; use --handoff-ranks for your own",
        ));
    }
    if !(a.handoff_ranks || a.rank_table) {
        for (flag, given) in shared {
            if given {
                return Err(err(
                    flag,
                    "applies only with --handoff-ranks or --rank-table",
                ));
            }
        }
        return Ok(());
    }
    if !a.rank_table {
        // --handoff-ranks: disagg_model::ranks::evaluate checks the rest.
        return Ok(());
    }
    let why = "the rank-aware hand-off models one uncompressed prompt sent after the prefill, one \
               port per NIC";
    if a.compression != "none" {
        return Err(err("--compression", format!("'{}': {why}", a.compression)));
    }
    if SendMode::parse(&a.send).ok() != Some(SendMode::Whole) {
        return Err(err("--send", format!("'{}': {why}", a.send)));
    }
    if a.concurrent != 1 {
        return Err(err("--concurrent", format!("{}: {why}", a.concurrent)));
    }
    if let Some(c) = a.link_channels {
        return Err(err("--link-channels", format!("{c}: {why}")));
    }
    Ok(())
}

/// The decode instance's device (`--decode-device`, default the prefill's).
pub(super) fn decode_device(a: &HandoffArgs, cat: &Catalogue) -> Result<Device, UsageError> {
    let key = a.decode_device.as_deref().unwrap_or(&a.prefill_device);
    a.hardware.device(key, "--decode-device", cat)
}

fn relayout(a: &HandoffArgs) -> Result<Relayout, UsageError> {
    Relayout::parse(a.kv_relayout_cost.as_deref().unwrap_or("off")).map_err(|e| {
        flag_error(disagg_model::Error::invalid(
            "kv_relayout_cost",
            e.to_string(),
        ))
    })
}

fn plan_with(
    model: &ModelSpec,
    link: &Link,
    device: &Device,
    cat: &Catalogue,
    tokens: u64,
    o: &RankOptions,
) -> Result<RankPlan, UsageError> {
    let scale_up = cat.link(&device.scale_up).ok();
    rank_plan(model, link, scale_up, device, tokens, o).map_err(flag_error)
}

/// The plan of `--handoff-ranks` for the calculator's answer `doc` (`disagg_model::ranks::evaluate`,
/// as `/api/handoff` computes it); `None` without the flag.
pub(super) fn plan(
    a: &HandoffArgs,
    cat: &Catalogue,
    spec: &HandoffSpec,
    doc: &HandoffDoc,
    model: &ModelSpec,
) -> Result<Option<RankPlan>, UsageError> {
    let rs = RankSpec {
        handoff_ranks: a.handoff_ranks,
        prefill_tp: a.prefill_tp,
        prefill_pp: a.prefill_pp,
        decode_tp: a.decode_tp,
        decode_pp: a.decode_pp,
        prefill_microbatches: a.prefill_microbatches,
        nics_per_instance: a.nics_per_instance,
        kv_relayout_cost: a.kv_relayout_cost.clone().unwrap_or_else(|| "off".into()),
        decode_device: a.decode_device.clone(),
    };
    let device = if a.handoff_ranks {
        Some(decode_device(a, cat)?)
    } else {
        None
    };
    ranks::evaluate(cat, spec, doc, &rs, model, device).map_err(flag_error)
}

fn heads(r: [u64; 2]) -> String {
    format!("{}..{}", r[0], r[1])
}

/// A flow's heads: `2..3`, or by layer kind (`linear 0..8, full 0..1`; `mla latent`), each kind
/// and range once.
fn flow_heads(fl: &ranks::Flow) -> String {
    if fl.parts.is_empty() {
        return heads(fl.heads);
    }
    let mut out: Vec<String> = Vec::new();
    for p in &fl.parts {
        let s = match p.heads {
            Some(h) => format!("{} {}", p.kind, heads(h)),
            None => format!("{} latent", p.kind),
        };
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out.join(", ")
}

fn ranks_list(side: Side, ranks: &[u32]) -> String {
    let p = if side == Side::Prefill { "p" } else { "d" };
    if ranks.is_empty() {
        return "-".into();
    }
    ranks
        .iter()
        .map(|r| format!("{p}{r}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The per-rank section of the text report.
pub(super) fn print_plan(plan: &RankPlan, link_name: &str, device_name: &str) -> CmdResult {
    let (pl, dl) = (&plan.layouts.prefill, &plan.layouts.decode);
    outln!();
    outln!(
        "Rank by rank: prefill {} ({} NIC{}) -> decode {} ({} NIC{}, {}), {} per NIC",
        pl.label,
        pl.nics,
        if pl.nics == 1 { "" } else { "s" },
        dl.label,
        dl.nics,
        if dl.nics == 1 { "" } else { "s" },
        device_name,
        link_name
    );
    for (i, clause) in plan.rule.split("; ").enumerate() {
        outln!("  {:<6}{clause}", if i == 0 { "rule:" } else { "" });
    }
    outln!();
    outln!(
        "  {:<14} {:>10} {:>10} {:>12}",
        "Flow",
        "KV heads",
        "Layers",
        "Bytes"
    );
    for fl in &plan.flows {
        outln!(
            "  {:<14} {:>10} {:>10} {:>12}",
            format!("p{} -> d{}", fl.from, fl.to),
            flow_heads(fl),
            heads(fl.layers),
            f::bytes(fl.bytes)
        );
    }
    outln!();
    outln!(
        "  {:<12} {:<24} {:>12} {:>10}",
        "NIC",
        "Ranks",
        "Bytes",
        "Busy"
    );
    for n in &plan.nics {
        let side = if n.side == Side::Prefill {
            "prefill"
        } else {
            "decode"
        };
        outln!(
            "  {:<12} {:<24} {:>12} {:>10}",
            format!("{side} {}", n.nic),
            ranks_list(n.side, &n.ranks),
            f::bytes(n.bytes),
            f::time(n.busy_s)
        );
    }
    outln!();
    outln!("  {:<12} {:>8} {:>12}", "Prefill rank", "Fan-out", "Sends");
    for r in &plan.prefill_ranks {
        outln!(
            "  {:<12} {:>8} {:>12}",
            format!("p{}", r.rank),
            r.fan_out,
            f::bytes(r.bytes)
        );
    }
    outln!();
    outln!(
        "  {:<12} {:>8} {:>12} {:>10} {:>12} {:>10} {:>10}",
        "Decode rank",
        "Fan-in",
        "Over link",
        "Copy from",
        "Holds",
        "Arrives",
        "Gather"
    );
    for r in &plan.decode_ranks {
        outln!(
            "  {:<12} {:>8} {:>12} {:>10} {:>12} {:>10} {:>10}",
            format!("d{}", r.rank),
            r.fan_in,
            f::bytes(r.link_bytes),
            r.copy_from.map_or("-".into(), |c| format!("d{c}")),
            f::bytes(r.held_bytes),
            f::time(r.arrival_s),
            if plan.relayout == Relayout::Off {
                "-".to_string()
            } else {
                f::time(r.relayout_s)
            }
        );
    }
    outln!();
    if plan.stages.len() > 1 {
        for s in &plan.stages {
            outln!(
                "  stage {:<16} layers {:<8} sends from {} into the prefill ({})",
                s.stage,
                heads(s.layers),
                f::time(s.start_s),
                if s.lead_s > 0.0 {
                    format!("{} before its end", f::time(s.lead_s))
                } else {
                    "at its end".to_string()
                }
            );
        }
        outln!("  {:<22} {}", "prefill micro-batches", plan.microbatches);
    }
    if let Some(logical) = plan.logical_bytes {
        outln!(
            "  {:<22} {:<12} the logical hand-off {}",
            "bytes over link",
            f::bytes(plan.link_bytes),
            f::bytes(logical)
        );
    }
    if let (Some(copies), Some(latent)) = (plan.mla_copies, plan.mla_logical_bytes) {
        outln!(
            "  MLA latent: replicated on every TP rank, sent once per decode rank: {copies} x {}",
            f::bytes(latent)
        );
    }
    outln!(
        "  {:<22} {:<12} latency + the busiest NIC's bytes / bandwidth",
        "last byte over link",
        f::time(plan.finish_s)
    );
    if plan.replicate_bytes > 0.0 {
        outln!(
            "  {:<22} {:<12} {} copied to replicated heads' other decode ranks",
            "scale-up copies",
            f::time(plan.replicate_s),
            f::bytes(plan.replicate_bytes)
        );
    }
    if plan.relayout == Relayout::Hbm {
        outln!(
            "  {:<22} {:<12} each decode rank reads and writes its KV once in HBM",
            "gather pass",
            f::time(plan.relayout_s)
        );
    }
    outln!(
        "  {:<22} {:<12} vs {} as one transfer: {:.2}x",
        "hand-off",
        f::time(plan.total_s),
        f::time(plan.single_transfer_s),
        plan.speedup
    );
    outln!(
        "  {:<22} {:<12} with each prefill stage sending as it finishes",
        "exposed after prefill",
        f::time(plan.exposed_s)
    );
    Ok(())
}

/// The layouts of `--rank-table` (prefill, decode).
const TABLE: [(u32, u32); 3] = [(8, 8), (8, 4), (4, 8)];

/// `--rank-table`: one transfer against the TP layouts of [`TABLE`], each computed by
/// `disagg_model::ranks`.
pub(super) fn rank_table(a: &HandoffArgs, cat: &Catalogue) -> CmdResult {
    let model = a.hardware.model(&a.model, cat)?;
    let link = a.hardware.link(&a.link, cat)?;
    let device = decode_device(a, cat)?;
    let relayout = relayout(a)?;
    let tokens = a.prompt_tokens;
    let one = RankLayout::new(1, 1);
    let mut single = RankOptions::new(one, one);
    single.nics_per_instance = Some(1);
    let reference = plan_with(&model, &link, &device, cat, tokens, &single)?;
    let nic_text = match a.nics_per_instance {
        None => "per GPU".to_string(),
        Some(n) => format!("x {n} per instance"),
    };
    outln!(
        "{}, {} prompt tokens ({} of KV), {}, {} {} ({}, {} latency){}",
        model.name,
        f::thousands(tokens),
        f::bytes(reference.single_transfer_bytes),
        device.name,
        link.name,
        nic_text,
        f::gb_per_s(link.bandwidth_bps),
        f::time(link.latency_s),
        if relayout == Relayout::Hbm {
            ", HBM gather pass on each decode rank"
        } else {
            ""
        }
    );
    outln!();
    outln!(
        "{:<16} {:>8} {:>6} {:>7} {:>8} {:>12} {:>10} {:>9}",
        "Layout",
        "GPUs",
        "Flows",
        "Fan-in",
        "Fan-out",
        "Busiest NIC",
        "Hand-off",
        "Speed-up"
    );
    let row = |label: &str, p: &RankPlan| {
        let busiest = p.nics.iter().map(|n| n.bytes).fold(0.0, f64::max);
        let fan_in = p.decode_ranks.iter().map(|r| r.fan_in).max().unwrap_or(0);
        let fan_out = p.prefill_ranks.iter().map(|r| r.fan_out).max().unwrap_or(0);
        format!(
            "{:<16} {:>8} {:>6} {:>7} {:>8} {:>12} {:>10} {:>9}",
            label,
            format!(
                "{} -> {}",
                p.layouts.prefill.devices, p.layouts.decode.devices
            ),
            p.flows.len(),
            fan_in,
            fan_out,
            f::bytes(busiest),
            f::time(p.total_s),
            format!("{:.2}x", reference.total_s / p.total_s)
        )
    };
    outln!("{}", row("one transfer", &reference));
    for (ptp, dtp) in TABLE {
        let mut o = RankOptions::new(RankLayout::new(ptp, 1), RankLayout::new(dtp, 1));
        o.nics_per_instance = a.nics_per_instance;
        o.relayout = relayout;
        let p = plan_with(&model, &link, &device, cat, tokens, &o)?;
        let label = format!("TP{ptp} -> TP{dtp}");
        outln!("{}", row(&label, &p));
    }
    Ok(())
}
