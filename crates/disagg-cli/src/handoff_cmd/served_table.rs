//! `disagg handoff --models-table`: the chapter's link table for the models served today (issue
//! 16), one row per model described by layer kinds: what its cache holds, the hand-off of a
//! 2,048- and a 32,768-token prompt, and how long each takes over 25 GbE, 100 GbE and InfiniBand
//! NDR (`latency + bytes / bandwidth`, uncompressed, sent after the prefill, one transfer alone).

use disagg_model::{transfer, Attention, Catalogue, ModelSpec};

use crate::format as f;
use crate::output::outln;
use crate::CmdResult;

/// The prompt lengths of the table.
pub const TOKENS: [u64; 2] = [2048, 32768];

/// The links of the table, by catalogue key.
pub const LINKS: [&str; 3] = ["eth-25g", "eth-100g", "ib-ndr"];

/// A layer kind as the tables name it: `full`, `MLA`, `sliding (128)`, `chunked (8,192)`,
/// `linear`.
fn kind_label(a: &Attention) -> String {
    match *a {
        Attention::Full { .. } => "full".to_string(),
        Attention::Mla { .. } => "MLA".to_string(),
        Attention::Sliding { window, .. } => format!("sliding ({})", f::thousands(window)),
        Attention::Chunked { chunk, .. } => format!("chunked ({})", f::thousands(chunk)),
        Attention::Linear { .. } => "linear".to_string(),
    }
}

/// What a model's cache holds, per kind, in layer order of first appearance: `61 MLA`,
/// `18 sliding (128) + 18 full`.
pub fn cache_kinds(m: &ModelSpec) -> String {
    let Some(a) = m.arch.as_deref() else {
        return format!("{} full", m.n_layers);
    };
    let mut parts: Vec<(String, u64)> = Vec::new();
    for (n, r) in a.groups() {
        let label = kind_label(&r.attention);
        match parts.iter_mut().find(|(l, _)| *l == label) {
            Some(p) => p.1 += n,
            None => parts.push((label, n)),
        }
    }
    parts
        .iter()
        .map(|(l, n)| format!("{n} {l}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The hand-off of a `p`-token prompt kind by kind, one phrase per kind in order of first
/// appearance: `18 sliding (128): 4.7 MB (128 tokens)`, `36 linear: 39.5 MB of state`; `None`
/// for a model of one layer shape.
pub fn kind_breakdown(m: &ModelSpec, p: u64) -> Option<String> {
    let a = m.arch.as_deref()?;
    let mut parts: Vec<(String, u64, u64, f64, bool)> = Vec::new();
    for (n, r) in a.groups() {
        let label = kind_label(&r.attention);
        let kept = r.attention.kept_tokens(p, a.retention);
        let state = r.attention.state_bytes();
        let bytes = n as f64
            * ((r.attention.values_per_token() * kept as i128) as f64 * m.kv_bytes + state);
        match parts.iter_mut().find(|x| x.0 == label) {
            Some(x) => {
                x.1 += n;
                x.3 += bytes;
            }
            None => parts.push((label, n, kept, bytes, state > 0.0)),
        }
    }
    Some(
        parts
            .iter()
            .map(|(l, n, kept, b, state)| {
                if *state {
                    format!("{n} {l}: {} of state", f::bytes(*b))
                } else {
                    format!("{n} {l}: {} ({} tokens)", f::bytes(*b), f::thousands(*kept))
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    )
}

pub(super) fn models_table(cat: &Catalogue) -> CmdResult {
    let links: Vec<_> = LINKS
        .iter()
        .map(|k| cat.link(k).cloned())
        .collect::<Result<_, _>>()
        .map_err(|e| crate::UsageError(e.to_string()))?;
    let mut head =
        "| Model | Cache (layers) | KV B/token, growing | Fixed per request |".to_string();
    let mut rule = "|---|---|---:|---:|".to_string();
    for t in TOKENS {
        head.push_str(&format!(" Hand-off, {} tokens |", f::thousands(t)));
        rule.push_str("---:|");
        for l in &links {
            head.push_str(&format!(" {} |", l.name));
            rule.push_str("---:|");
        }
    }
    outln!("{head}");
    outln!("{rule}");
    // The chapter's own model first, for scale; then every model described by layer kinds.
    let chapter = cat
        .model("llama3-70b")
        .map_err(|e| crate::UsageError(e.to_string()))?;
    let rows = std::iter::once(chapter).chain(cat.models.iter().filter(|m| m.arch.is_some()));
    for m in rows {
        let fixed = m.arch.as_deref().map_or(0.0, |a| a.state_bytes());
        let name = if m.arch.is_none() {
            format!("{} (the chapter's)", m.key)
        } else {
            m.key.clone()
        };
        let mut row = format!(
            "| {} | {} | {} | {} |",
            name,
            cache_kinds(m),
            f::thousands(m.kv_bytes_per_token() as u64),
            if fixed == 0.0 {
                "—".to_string()
            } else {
                f::bytes(fixed)
            }
        );
        for t in TOKENS {
            let b = m.handoff_bytes(t);
            row.push_str(&format!(" {} ({}) |", f::thousands(b as u64), f::bytes(b)));
            for l in &links {
                row.push_str(&format!(" {} |", f::time(transfer(m, l, None, t).time_s)));
            }
        }
        outln!("{row}");
    }
    Ok(())
}
