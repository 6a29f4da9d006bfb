//! `disagg trace-stats`: what a request trace holds (rows, duration, rates, token distributions).

use std::path::PathBuf;

use clap::Args;

use crate::format::{fixed, thousands};
use crate::output::outln;
use crate::scenario_flags::TraceReadFlags;
use crate::CmdResult;

#[derive(Args, Debug)]
pub struct TraceStatsArgs {
    /// The trace file (Azure CSV, Mooncake JSONL, BurstGPT CSV or the reference's JSON rows).
    file: PathBuf,
    #[command(flatten)]
    read: TraceReadFlags,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: TraceStatsArgs) -> CmdResult {
    let opts = a.read.options(None)?;
    let t = disagg_api::trace::read_trace(&a.file, &opts)?;
    if a.json {
        let v = disagg_api::trace::stats_json(&a.file.display().to_string(), &t);
        outln!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return Ok(());
    }
    let s = t.stats();
    outln!(
        "{} ({} format)",
        disagg_model::escape(&a.file.display().to_string()),
        t.format.as_str()
    );
    outln!("  rows          {}", thousands(s.rows));
    outln!(
        "  duration      {} s ({} min)",
        fixed(s.duration_s, 1),
        fixed(s.duration_s / 60.0, 1)
    );
    outln!("  mean rate     {} req/s", fixed(s.mean_rate_rps, 2));
    outln!(
        "  peak rate     {} requests in the busiest second, {} in the busiest minute ({} req/s)",
        thousands(s.busiest_1s_requests),
        thousands(s.busiest_60s_requests),
        fixed(s.peak_rate_60s_rps, 2)
    );
    outln!("  longest gap   {} s", fixed(s.longest_gap_s, 1));
    outln!("  tokens            mean       p50       p90       p99       min       max");
    for (name, ts) in [("input", &s.input_tokens), ("output", &s.output_tokens)] {
        if let Some(x) = ts {
            outln!(
                "  {:<10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
                name,
                fixed(x.mean, 1),
                thousands(x.p50),
                thousands(x.p90),
                thousands(x.p99),
                thousands(x.min),
                thousands(x.max)
            );
        }
    }
    if let Some(b) = &s.prefix_blocks {
        outln!(
            "  prefix blocks {} in all, {} distinct, {}% seen before (512-token blocks)",
            thousands(b.total_blocks),
            thousands(b.distinct_blocks),
            fixed(100.0 * b.reused_fraction, 1)
        );
    }
    let r = &t.report;
    if r.bad_lines_skipped > 0 {
        outln!(
            "  skipped       {} malformed lines",
            thousands(r.bad_lines_skipped)
        );
    }
    if r.failed_requests_skipped > 0 {
        outln!(
            "  skipped       {} failed requests (0 response tokens)",
            thousands(r.failed_requests_skipped)
        );
    }
    for w in &r.warnings {
        eprintln!("warning: {}", disagg_model::escape(w));
    }
    Ok(())
}
