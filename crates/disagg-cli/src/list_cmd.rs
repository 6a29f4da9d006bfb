//! `disagg list`: the catalogue with units, or as JSON.

use clap::{Args, ValueEnum};
use disagg_api::catalogue::Section;
use disagg_model::Catalogue;

use crate::format as f;
use crate::output::{out, outln};
use crate::CmdResult;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum What {
    Models,
    Devices,
    Links,
    Compression,
    /// Weight, KV and compute formats (the quantisation lever).
    Formats,
    // The valid range of every numeric flag and scenario key (a Markdown table, the README's
    // "Valid ranges"; not part of `disagg list` without a name).
    Ranges,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// What to list (everything when omitted).
    what: Option<What>,
    /// Print JSON (SI units: bytes, bytes/s, seconds, FLOP/s, W, pJ).
    #[arg(long)]
    json: bool,
}

/// What kind of model: dense, MoE, FFT-mixing or CED, with its defining numbers.
fn model_kind(m: &disagg_model::ModelSpec) -> String {
    if let Some(a) = m.arch.as_deref() {
        let cache = crate::handoff_cmd::served_table::cache_kinds(m);
        let moe = a.groups().find_map(|(_, r)| match r.mlp {
            disagg_model::Mlp::Moe {
                experts,
                top_k,
                shared_experts,
                ..
            } => Some(if shared_experts > 0 {
                format!("; MoE: {experts} experts, top-{top_k} + {shared_experts} shared")
            } else {
                format!("; MoE: {experts} experts, top-{top_k}")
            }),
            disagg_model::Mlp::Dense { .. } => None,
        });
        return format!("layers: {cache}{}", moe.unwrap_or_default());
    }
    if let Some(x) = &m.moe {
        let shared = if x.n_shared_experts > 0 {
            format!(" + {} shared", x.n_shared_experts)
        } else {
            String::new()
        };
        return format!("MoE: {} experts, top-{}{shared}", x.n_experts, x.top_k);
    }
    if let Some(f) = &m.fft {
        let mut k = match f.mixer {
            disagg_model::Mixer::Hyena => format!("Hyena-{}", f.order),
            disagg_model::Mixer::Hybrid => format!(
                "hybrid: attention every {} layers, Hyena-{} between",
                f.attn_every, f.order
            ),
        };
        if f.circulant_block > 0 {
            k.push_str(&format!(", block-circulant {}", f.circulant_block));
        }
        if f.decode_style == disagg_model::DecodeStyle::Distilled {
            k.push_str(&format!(", distilled state {}", f.distill_state));
        }
        return k;
    }
    if let Some(c) = &m.ced {
        return format!(
            "CED: {} encoder + {} decoder layers, replay {} on {}",
            c.encoder_layers,
            m.n_layers - c.encoder_layers,
            c.replay,
            c.replay_on.as_str()
        );
    }
    "dense".into()
}

pub fn run(a: ListArgs, cat: &Catalogue) -> CmdResult {
    if a.what == Some(What::Ranges) {
        if a.json {
            let v = serde_json::to_value(disagg_sim::ranges::RANGES).expect("json");
            outln!("{}", serde_json::to_string_pretty(&v).expect("json"));
        } else {
            out!("{}", disagg_sim::ranges::markdown_table());
        }
        return Ok(());
    }
    let all = a.what.is_none();
    let want = |w: What| all || a.what == Some(w);
    if a.json {
        let section = a.what.map(|w| match w {
            What::Models => Section::Models,
            What::Devices => Section::Devices,
            What::Links => Section::Links,
            What::Compression => Section::Compression,
            What::Formats => Section::Formats,
            What::Ranges => unreachable!("answered above"),
        });
        let v = disagg_api::catalogue::list_json(cat, section);
        outln!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return Ok(());
    }
    let mut first = true;
    let mut sep = || -> CmdResult {
        if !std::mem::take(&mut first) {
            outln!();
        }
        Ok(())
    };
    if want(What::Models) {
        sep()?;
        let kw = cat
            .models
            .iter()
            .map(|m| m.key.len())
            .max()
            .unwrap_or(5)
            .max(5);
        let nw = cat
            .models
            .iter()
            .map(|m| m.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        outln!(
            "{:<kw$} {:<nw$} {:>6} {:>7} {:>6} {:>8} {:>8} {:>7} {:>8} {:>9} {:>10} {:>11}  kind",
            "model",
            "name",
            "layers",
            "d_model",
            "heads",
            "kv_heads",
            "head_dim",
            "d_ff",
            "vocab",
            "params",
            "KV/token",
            "weights"
        );
        for m in &cat.models {
            outln!(
                "{:<kw$} {:<nw$} {:>6} {:>7} {:>6} {:>8} {:>8} {:>7} {:>8} {:>8}B {:>6} KiB {:>8} GB  {}",
                m.key,
                m.name,
                m.n_layers,
                m.d_model,
                m.n_heads,
                m.n_kv_heads,
                m.hd(),
                m.d_ff,
                m.vocab,
                format!("{:.2}", m.params() as f64 / 1e9),
                m.kv_bytes_per_token() / 1024.0,
                format!("{:.2}", m.weight_bytes_total() / 1e9),
                model_kind(m),
            );
        }
    }
    if want(What::Formats) {
        sep()?;
        outln!(
            "{:<7} {:>14}  native units (rate x BF16)",
            "format",
            "bytes/value"
        );
        for q in disagg_model::QuantFormat::NAMES {
            let f = disagg_model::QuantFormat::parse(q).expect("a format");
            let units: Vec<String> = cat
                .devices
                .iter()
                .filter_map(|d| {
                    d.native_formats
                        .iter()
                        .find(|(n, _)| n == q)
                        .map(|(_, x)| format!("{} x{x}", d.key))
                })
                .collect();
            let units = if q == "bf16" {
                "every device".to_string()
            } else if units.is_empty() {
                "none (weight-only: --compute-format bf16)".to_string()
            } else {
                units.join(", ")
            };
            outln!("{:<7} {:>14}  {units}", q, f.bytes());
        }
        outln!("(--weight-format, --kv-format, --compute-format; accuracy is not simulated)");
    }
    if want(What::Devices) {
        sep()?;
        let kw = cat
            .devices
            .iter()
            .map(|d| d.key.len())
            .max()
            .unwrap_or(6)
            .max(10);
        outln!(
            "{:<kw$} {:<25} {:>9} {:>8} {:>7} {:>5} {:>5} {:>6} {:>6} {:>7} {:>7} {:>7}",
            "device",
            "name",
            "BF16",
            "HBM",
            "HBM",
            "eff",
            "bw",
            "TDP",
            "idle",
            "energy",
            "energy",
            "ridge"
        );
        outln!(
            "{:<kw$} {:<25} {:>9} {:>8} {:>7} {:>5} {:>5} {:>6} {:>6} {:>7} {:>7} {:>7}",
            "",
            "",
            "TFLOP/s",
            "TB/s",
            "GB",
            "flop",
            "eff",
            "W",
            "W",
            "pJ/FLOP",
            "pJ/B",
            "FLOP/B"
        );
        for d in &cat.devices {
            outln!(
                "{:<kw$} {:<25} {:>9} {:>8} {:>7} {:>5} {:>5} {:>6} {:>6} {:>7} {:>7} {:>7.1}",
                d.key,
                d.name,
                d.peak_flops / 1e12,
                d.mem_bw / 1e12,
                d.mem_capacity / 1e9,
                d.flops_eff,
                d.bw_eff,
                d.tdp_w,
                d.idle_w,
                d.pj_per_flop,
                d.pj_per_byte,
                d.ridge_point()
            );
            if let Some(e) = &d.engine {
                outln!(
                    "{:<kw$}   + optical transform engine: {:e} samples/s, ENOB {}, {} W static, \
                     mask {} values at {} Hz",
                    "",
                    e.samples_per_s,
                    e.enob,
                    e.static_w(),
                    e.mask_values,
                    e.mask_rate_hz
                );
            }
        }
    }
    if want(What::Links) {
        sep()?;
        outln!(
            "{:<12} {:<36} {:>14} {:>10} {:>7} {:>8}",
            "link",
            "name",
            "bandwidth",
            "latency",
            "pJ/bit",
            "channels"
        );
        for l in &cat.links {
            outln!(
                "{:<12} {:<36} {:>14} {:>10} {:>7} {:>8}",
                l.key,
                l.name,
                f::gb_per_s(l.bandwidth_bps),
                f::time(l.latency_s),
                l.pj_per_bit,
                l.channels
            );
        }
        outln!("(bandwidth per channel and direction)");
    }
    if want(What::Compression) {
        sep()?;
        outln!(
            "{:<12} {:>6} {:>10} {:>4}  description",
            "compression",
            "ratio",
            "ops/value",
            "fft"
        );
        for c in &cat.compression {
            outln!(
                "{:<12} {:>6.3} {:>10} {:>4}  {}",
                c.key,
                c.ratio,
                c.ops_per_value,
                if c.fft { "yes" } else { "no" },
                c.description
            );
        }
        outln!(
            "where: link (transit: a stage in the link at line rate, 1.6 ops/byte, 1 pJ/bit, 1 µs)"
        );
        outln!("       gpu (endpoint: the prefill GPU compresses; the pass lengthens the prefill step)");
        outln!("accuracy is out of scope: the model counts bytes and compute only");
    }
    Ok(())
}
