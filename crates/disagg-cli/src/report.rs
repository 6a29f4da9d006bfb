//! The text report of one run, in the reference's layout (simulator.md §7.1): renderers know nothing
//! about events, only the [`Summary`].

use std::fmt::Write;

use disagg_sim::metrics::STAGES;
use disagg_sim::{Mode, Summary};

use crate::format::fixed;

fn ms8(x: f64) -> String {
    if x.is_nan() {
        format!("{:>8}", "-")
    } else {
        format!("{:8.1}", 1e3 * x)
    }
}

/// `x` with `dp` decimals, or `n/a` when it is undefined (NaN: an empty sample, or a ratio
/// without a denominator).
pub fn or_na(x: f64, dp: usize) -> String {
    if x.is_nan() {
        "n/a".to_string()
    } else {
        format!("{x:.dp$}")
    }
}

/// A percentage of a fraction with one decimal, or `n/a`.
fn pct1(x: f64) -> String {
    fixed(100.0 * x, 1)
}

static WARNINGS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Prints `warning: MSG` on stderr (once per distinct message) and keeps it for the JSON output.
pub fn warn(msg: &str) {
    let mut w = WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    if !w.iter().any(|m| m == msg) {
        eprintln!("warning: {msg}");
        w.push(msg.to_string());
    }
}

/// Prints a run's own warnings ([`Summary::warnings`]) through [`warn`].
pub fn warn_summary(s: &Summary) {
    for m in &s.warnings {
        warn(m);
    }
}

/// The generator's prompt clipping of `cfg`'s workload, through [`warn`] (for commands that run
/// many configurations of one workload and print no per-run report: `plan`).
pub fn warn_clipping(cfg: &disagg_sim::SimConfig) {
    let w = cfg.requests();
    if w.clipped_prompts > 0 {
        warn(&disagg_sim::workload::clipping_warning(
            w.clipped_prompts,
            w.requests.len() as u64,
            cfg.workload.prompt.hi.max(0) as u64,
        ));
    }
}

/// The warnings of many runs (a sweep), told once at the end: the one warning, or how many runs
/// warned and the first warning.
#[derive(Default)]
pub struct RunWarnings {
    n: u64,
    warned: u64,
    first: Option<String>,
}

impl RunWarnings {
    /// Counts one run's summary.
    pub fn add(&mut self, summary: &serde_json::Value) {
        self.n += 1;
        if let Some(w) = summary["warnings"].as_array().filter(|w| !w.is_empty()) {
            self.warned += 1;
            if self.first.is_none() {
                self.first = w[0].as_str().map(str::to_string);
            }
        }
    }

    /// Prints one line if any run warned.
    pub fn finish(self) {
        match self.first {
            Some(m) if self.warned == 1 => warn(&m),
            Some(m) => warn(&format!(
                "{} of {} runs warned (each run's summary.warnings in --jsonl); the first: {m}",
                self.warned, self.n
            )),
            None => {}
        }
    }
}

/// Every warning printed so far (for a `warnings` array in JSON output; empty: leave it out).
pub fn warnings() -> Vec<String> {
    WARNINGS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn pct0(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

/// The reference's `format_report`, line for line, plus a line on the hand-off.
pub fn text(s: &Summary) -> String {
    let mut o = String::new();
    let mode = s.mode.as_str();
    let _ = writeln!(
        o,
        "── {mode} ── {} done, {} rejected, sim {:.1}s",
        s.requests.completed, s.requests.rejected, s.horizon_s
    );
    let w = &s.workload;
    if let Some(t) = &w.trace {
        let mut line = format!(
            "workload     trace {} ({}): {} requests",
            t.file,
            t.format,
            crate::format::thousands(t.requests)
        );
        if let Some(c) = t.max_context {
            line.push_str(&format!(
                ", {} prompts clipped to {} tokens",
                crate::format::thousands(t.clipped_prompts),
                crate::format::thousands(c)
            ));
        }
        if t.bad_lines_skipped > 0 {
            line.push_str(&format!(
                ", {} malformed lines skipped",
                t.bad_lines_skipped
            ));
        }
        if t.failed_requests_skipped > 0 {
            line.push_str(&format!(
                ", {} failed requests skipped",
                t.failed_requests_skipped
            ));
        }
        if t.out_of_order > 0 {
            line.push_str(&format!(", {} out-of-order rows sorted", t.out_of_order));
        }
        if t.time_scale != 1.0 {
            line.push_str(&format!(", gaps x{}", t.time_scale));
        }
        let _ = writeln!(o, "{line}");
    } else if w.source == "sessions" {
        let _ = writeln!(
            o,
            "workload     sessions{}: {} requests, {} closed-loop turns{}",
            w.name
                .as_deref()
                .map(|n| format!(" '{n}'"))
                .unwrap_or_default(),
            crate::format::thousands(w.requests),
            crate::format::thousands(w.closed_loop_turns),
            clipped_note(w)
        );
    } else if w.clipped_prompts > 0 {
        let _ = writeln!(
            o,
            "workload     generated: {} requests{}",
            crate::format::thousands(w.requests),
            clipped_note(w)
        );
    }
    if let Some(p) = &s.pools {
        let _ = writeln!(
            o,
            "pools        prefill {}   decode {}",
            p.prefill, p.decode
        );
    }
    let opts = &s.options;
    let beyond: Vec<String> = [
        ("send", opts.send.as_str(), "whole"),
        ("link-sharing", opts.link_sharing.as_str(), "fifo"),
        ("link-topology", opts.link_topology.as_str(), "shared"),
        ("reserve-kv-on", opts.reserve_kv_on.as_str(), "arrival"),
    ]
    .iter()
    .filter(|(_, v, d)| v != d)
    .map(|(k, v, _)| format!("{k} {v}"))
    .collect();
    if !beyond.is_empty() {
        let _ = writeln!(o, "hand-off     {}", beyond.join("   "));
    }
    let _ = writeln!(
        o,
        "latency (ms)       mean      p50      p90      p99   (first token from {})",
        s.first_token.as_str()
    );
    for (k, d) in [
        ("ttft", &s.ttft_s),
        ("tpot", &s.tpot_s),
        ("itl", &s.itl_s),
        ("e2e", &s.e2e_s),
    ] {
        let _ = writeln!(
            o,
            "  {k:<10} {} {} {} {}",
            ms8(d.mean),
            ms8(d.p50),
            ms8(d.p90),
            ms8(d.p99)
        );
    }
    let _ = writeln!(
        o,
        "throughput   {:9.0} tok/s   {:.2} req/s   goodput {} req/s   SLO met {}{}",
        s.throughput_tok_s,
        s.throughput_rps,
        or_na(s.goodput_rps, 2),
        pct_sign(s.slo_attainment),
        offered_note(s)
    );
    let mut util: Vec<String> = s
        .instances
        .iter()
        .map(|i| format!("{} {}", i.name, pct0(i.utilisation)))
        .collect();
    if s.mode == Mode::Disagg {
        util.push(format!("kv-link {}", pct0(s.link_busy)));
    }
    let _ = writeln!(o, "utilisation  {}", util.join("  "));
    let eff: Vec<String> = s
        .instances
        .iter()
        .map(|i| {
            format!(
                "{} MFU {} MBU {} batch {:.1}",
                i.name,
                pct0(i.mfu),
                pct0(i.mbu),
                i.mean_batch
            )
        })
        .collect();
    let _ = writeln!(o, "efficiency   {}", eff.join("  "));
    let shares = s.stage_share.as_array();
    let stages: Vec<String> = STAGES
        .iter()
        .zip(shares)
        .filter(|(_, v)| *v >= 0.005)
        .map(|(k, v)| format!("{k} {}", pct0(v)))
        .collect();
    let _ = writeln!(o, "where time goes  {}", stages.join("  "));
    let e = &s.energy;
    let mut parts = vec![
        format!("static {}", pct0(e.static_frac)),
        format!("compute {}", pct0(e.compute_frac)),
        format!("memory {}", pct0(e.memory_frac)),
        format!("link {}", pct0(e.link_frac)),
    ];
    if let Some(t) = e.transit_frac {
        parts.push(format!("transit {}", pct0(t)));
    }
    let _ = writeln!(
        o,
        "power        avg {} W   {} J/token   {} tok/J   energy: {}",
        fixed(s.avg_power_w, 0),
        or_na(s.j_per_token, 2),
        or_na(s.tokens_per_j, 2),
        parts.join("  ")
    );
    if s.mode == Mode::Disagg {
        let l = &s.link;
        if let (Some(c), Some(at), Some(r)) = (&l.compression, &l.compress_at, l.compression_ratio)
        {
            let _ = writeln!(
                o,
                "kv hand-off  {c} at {at} (ratio {r:.2}): {:.1} GB -> {:.1} GB on the link, \
                 transit-bound {} of transfers, stage {} J",
                l.handoff_bytes / 1e9,
                l.bytes / 1e9,
                pct0(l.transit_bound_frac),
                fixed(l.transit_j, 1)
            );
        }
        let _ = writeln!(
            o,
            "kv link      {} transfers, {:.1} GB, hand-off p50 {} ms p99 {} ms, {:.3} J per request",
            l.transfers,
            l.bytes / 1e9,
            ms8(s.handoff_s.p50).trim(),
            ms8(s.handoff_s.p99).trim(),
            s.link_j_per_request
        );
    }
    if s.links.len() > 1 {
        let busiest = s
            .links
            .iter()
            .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation));
        if let Some(b) = busiest {
            let _ = writeln!(
                o,
                "kv links     {} links, busiest {} {}",
                s.links.len(),
                b.name,
                pct0(b.utilisation)
            );
        }
    }
    if let Some(w) = &s.decode_mem_wait_s {
        let _ = writeln!(
            o,
            "decode mem   {} hand-offs waited {:.1} s for decode KV memory in all; per hand-off p50 {} ms p99 {} ms",
            w.handoffs,
            w.total_s,
            ms8(w.per_handoff.p50).trim(),
            ms8(w.per_handoff.p99).trim()
        );
    }
    let capped: Vec<String> = s
        .instances
        .iter()
        .filter(|i| i.power_bound_frac > 0.0)
        .map(|i| format!("{} {} of busy time", i.name, pct0(i.power_bound_frac)))
        .collect();
    if !capped.is_empty() {
        let _ = writeln!(o, "power-capped {}", capped.join("  "));
    }
    let h = &s.hotspot;
    let mut line = format!(
        "hot-spot     stage={} -> {} (busy {})",
        h.stage.as_deref().unwrap_or("-"),
        h.resource,
        pct0(h.resource_util)
    );
    if !h.busy_over_90pct.is_empty() {
        let _ = write!(line, "   busy>90%: {}", h.busy_over_90pct.join(", "));
    }
    let _ = writeln!(o, "{line}");
    o
}

/// `12.3%`, or `n/a`.
fn pct_sign(x: f64) -> String {
    if x.is_nan() {
        "n/a".into()
    } else {
        format!("{:.1}%", 100.0 * x)
    }
}

/// `, 3 prompts clipped to 32,768 tokens` when the generator clipped prompts.
fn clipped_note(w: &disagg_sim::workload::WorkloadSummary) -> String {
    match w.prompt_cap_tokens {
        Some(cap) if w.clipped_prompts > 0 => format!(
            ", {} prompts clipped to {} tokens",
            crate::format::thousands(w.clipped_prompts),
            crate::format::thousands(cap)
        ),
        _ => String::new(),
    }
}

/// ` of measured (12.3% of offered: 5 rejected count as misses)` when rejections make the two
/// figures differ.
fn offered_note(s: &Summary) -> String {
    if s.requests.rejected == 0 {
        return String::new();
    }
    format!(
        " of measured ({} of offered: {} rejected count as misses)",
        pct_sign(s.slo_attainment_offered),
        s.requests.rejected
    )
}

type Cell = Box<dyn Fn(&Summary) -> String>;

/// Key numbers of several runs, one column per run.
pub fn side_by_side(names: &[&str], runs: &[&Summary]) -> String {
    let mut o = String::new();
    let ms = |x: f64| {
        if x.is_nan() {
            "-".to_string()
        } else {
            fixed(1e3 * x, 1)
        }
    };
    let rows: Vec<(&str, Cell)> = vec![
        (
            "requests done",
            Box::new(|s: &Summary| s.requests.completed.to_string()),
        ),
        (
            "TTFT p50 (ms)",
            Box::new(move |s: &Summary| ms(s.ttft_s.p50)),
        ),
        (
            "TTFT p99 (ms)",
            Box::new(move |s: &Summary| ms(s.ttft_s.p99)),
        ),
        (
            "TPOT p50 (ms)",
            Box::new(move |s: &Summary| ms(s.tpot_s.p50)),
        ),
        (
            "TPOT p99 (ms)",
            Box::new(move |s: &Summary| ms(s.tpot_s.p99)),
        ),
        ("ITL p99 (ms)", Box::new(move |s: &Summary| ms(s.itl_s.p99))),
        ("E2E p99 (ms)", Box::new(move |s: &Summary| ms(s.e2e_s.p99))),
        (
            "hand-off p99 (ms)",
            Box::new(move |s: &Summary| ms(s.handoff_s.p99)),
        ),
        (
            "SLO met (%)",
            Box::new(|s: &Summary| pct1(s.slo_attainment)),
        ),
        (
            "goodput (req/s)",
            Box::new(|s: &Summary| or_na(s.goodput_rps, 2)),
        ),
        (
            "throughput (tok/s)",
            Box::new(|s: &Summary| fixed(s.throughput_tok_s, 0)),
        ),
        (
            "J per token",
            Box::new(|s: &Summary| or_na(s.j_per_token, 3)),
        ),
        (
            "average power (W)",
            Box::new(|s: &Summary| fixed(s.avg_power_w, 0)),
        ),
        (
            "KV link busy (%)",
            Box::new(|s: &Summary| {
                if s.mode == Mode::Disagg {
                    fixed(100.0 * s.link_busy, 1)
                } else {
                    "-".into()
                }
            }),
        ),
        (
            "hot-spot",
            Box::new(|s: &Summary| {
                format!(
                    "{} -> {}",
                    s.hotspot.stage.as_deref().unwrap_or("-"),
                    s.hotspot.resource
                )
            }),
        ),
    ];
    let _ = write!(o, "{:<20}", "");
    for n in names {
        let _ = write!(o, " {n:>26}");
    }
    o.push('\n');
    for (label, f) in rows {
        let _ = write!(o, "{label:<20}");
        for s in runs {
            let _ = write!(o, " {:>26}", f(s));
        }
        o.push('\n');
    }
    o
}

/// One row per run: what the hand-off does to the latencies and the SLOs.
pub fn variants_table(names: &[&str], runs: &[&Summary]) -> String {
    let mut o = String::new();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(9).max(9);
    let ms = |x: f64| {
        if x.is_nan() {
            "-".to_string()
        } else {
            fixed(1e3 * x, 1)
        }
    };
    let _ = writeln!(
        o,
        "{:<w$}  {:>14} {:>13} {:>13} {:>9} {:>10} {:>9}",
        "variant", "hand-off p99", "TTFT p99", "TPOT p99", "SLO met", "link busy", "J/token"
    );
    let _ = writeln!(
        o,
        "{:<w$}  {:>14} {:>13} {:>13} {:>9} {:>10} {:>9}",
        "", "(ms)", "(ms)", "(ms)", "(%)", "(%)", ""
    );
    for (n, s) in names.iter().zip(runs) {
        let _ = writeln!(
            o,
            "{:<w$}  {:>14} {:>13} {:>13} {:>9} {:>10} {:>9}",
            n,
            ms(s.handoff_s.p99),
            ms(s.ttft_s.p99),
            ms(s.tpot_s.p99),
            pct1(s.slo_attainment),
            fixed(100.0 * s.link_busy, 1),
            or_na(s.j_per_token, 3)
        );
    }
    o
}
