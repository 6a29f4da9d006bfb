//! The README's "Scheduling and KV memory" tables: `docs/levers.md#batch-policies` (batching policies) and `docs/levers.md#prefix-caching`
//! (prefix caching: multi-turn chat, reuse distance under LRU), each row one run of its preset
//! (`disagg run --preset NAME` gives the same run), formatted as `docs/exactness.md#verification` formats them.
//!
//! `cargo run --release -p disagg-sim --example levers_tables` prints all three (Markdown);
//! `... -- batching`, `... -- multiturn` or `... -- reuse` one of them. The README's copies are
//! checked against this output by tests/suite/readme_levers.rs.

use disagg_sim::{simulate_config, Summary};

/// One preset's run summary.
pub fn run(preset: &str) -> Summary {
    let sc = disagg_sim::presets::find(preset)
        .unwrap_or_else(|e| panic!("{preset}: {e}"))
        .scenario;
    let cfg = sc
        .build(&disagg_model::Catalogue::builtin())
        .unwrap_or_else(|e| panic!("{preset}: {e}"));
    simulate_config(&cfg)
        .unwrap_or_else(|e| panic!("{preset}: {e}"))
        .summary()
}

/// `x` rounded to a whole number with thousands separators (`1,194`).
pub fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

/// Seconds as `docs/exactness.md#verification` writes them: `249.4 ms` below a second, `1,194 ms` above.
pub fn ms(s: f64) -> String {
    let m = 1e3 * s;
    if m < 1000.0 {
        format!("{m:.1} ms")
    } else {
        format!("{} ms", grouped(m))
    }
}

/// The scheduler block of a lever run.
fn sched(s: &Summary) -> &disagg_sim::sched::report::SchedulerSummary {
    s.scheduler.as_ref().expect("a scheduled run")
}

/// `docs/levers.md#batch-policies`: the batching policies on Mistral-7B, one A100, at 2.025 req/s.
pub fn batching() -> String {
    let mut t = String::from(
        "| Policy | TTFT p50 | TTFT p99 | ITL p50 | ITL p99 | TPOT p99 | Scheduling delay p50 \
         | Output tok/s | Mean running | J/token |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (policy, preset) in [
        ("prefill-priority", "batching-prefill-priority"),
        ("decode-priority", "batching-decode-priority"),
        ("chunked 256", "batching-chunked-256"),
        ("chunked 512", "batching-chunked-512"),
        ("chunked 1024", "batching-chunked-1024"),
        ("chunked 2048", "batching-chunked-2048"),
        ("chunked 4096", "batching-chunked-4096"),
    ] {
        let s = run(preset);
        let b = sched(&s);
        t.push_str(&format!(
            "| {policy} | {} | {} | {} | {} | {} | {} | {:.0} | {:.1} | {:.3} |\n",
            ms(s.ttft_s.p50),
            ms(s.ttft_s.p99),
            ms(s.itl_s.p50),
            ms(s.itl_s.p99),
            ms(s.tpot_s.p99),
            ms(b.sched_delay_p50_s.expect("scheduling delay")),
            s.throughput_tok_s,
            b.mean_running,
            s.j_per_token,
        ));
    }
    t
}

/// `docs/levers.md#prefix-caching`: 4-turn chat at 50 sessions/s, prefix cache off and on.
pub fn multiturn() -> String {
    let mut t = String::from(
        "| Outputs | Throughput off req/s | on req/s | Gain | Hit rate | TTFT p50 off \
         | TTFT p50 on | Mean running off | on |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (label, preset) in [
        ("short (4-8 tokens)", "prefix-multiturn-short"),
        ("long (256-512 tokens)", "prefix-multiturn-long"),
    ] {
        let off = run(&format!("{preset}-off"));
        let on = run(&format!("{preset}-on"));
        let hit = sched(&on)
            .prefix_cache
            .as_ref()
            .expect("prefix cache")
            .hit_rate;
        t.push_str(&format!(
            "| {label} | {:.2} | {:.2} | {:.2}x | {:.1}% | {} | {} | {:.1} | {:.1} |\n",
            off.throughput_rps,
            on.throughput_rps,
            on.throughput_rps / off.throughput_rps,
            100.0 * hit,
            ms(off.ttft_s.p50),
            ms(on.ttft_s.p50),
            sched(&off).mean_running,
            sched(&on).mean_running,
        ));
    }
    t
}

/// `docs/levers.md#prefix-caching`: reuse distance under LRU on OPT-13B, one A100-40GB, against the mean think time.
pub fn reuse() -> String {
    let mut t = String::from(
        "| Mean think time | Hit rate | Tokens evicted | TTFT p50 |\n|---|---:|---:|---:|\n",
    );
    for think in ["1", "10", "30", "100", "300"] {
        let s = run(&format!("prefix-think{think}"));
        let p = sched(&s).prefix_cache.as_ref().expect("prefix cache");
        t.push_str(&format!(
            "| {think} s | {:.1}% | {} | {} |\n",
            100.0 * p.hit_rate,
            grouped(p.evicted_tokens as f64),
            ms(s.ttft_s.p50),
        ));
    }
    t
}

#[allow(dead_code)]
fn main() {
    let which = std::env::args().nth(1);
    type Table = (&'static str, fn() -> String);
    let tables: [Table; 3] = [
        ("batching", batching),
        ("multiturn", multiturn),
        ("reuse", reuse),
    ];
    let mut shown = 0;
    for (name, table) in tables {
        if which.as_deref().is_none_or(|w| w == name) {
            if shown > 0 {
                println!();
            }
            print!("{}", table());
            shown += 1;
        }
    }
    if shown == 0 {
        eprintln!("error: unknown table; valid: batching, multiturn, reuse");
        std::process::exit(2);
    }
}
