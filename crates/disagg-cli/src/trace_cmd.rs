//! `disagg trace-stats`: what a request trace holds (rows, duration, rates, token distributions),
//! and the trace-reading options shared by every command that replays one.

use std::path::PathBuf;

use clap::Args;
use disagg_trace::{read_path, ReadOptions, Trace, TraceFormat, Unsorted};
use serde_json::json;

use crate::format::{fixed, thousands};
use crate::output::outln;
use crate::{CmdResult, UsageError};

/// How to read a trace file.
#[derive(Args, Debug, Clone, Default)]
pub struct TraceReadFlags {
    /// Force the format instead of detecting it: azure, mooncake, burstgpt, reference.
    #[arg(long, value_name = "FORMAT", help_heading = "Trace replay")]
    pub trace_format: Option<String>,
    /// Multiply every inter-arrival gap by X (0.5 replays twice as fast).
    #[arg(
        long,
        value_name = "X",
        allow_negative_numbers = true,
        help_heading = "Trace replay"
    )]
    pub time_scale: Option<f64>,
    /// Start of the replayed window, seconds after the first arrival.
    #[arg(
        long,
        value_name = "S",
        allow_negative_numbers = true,
        help_heading = "Trace replay"
    )]
    pub start: Option<f64>,
    /// Length of the replayed window, seconds.
    #[arg(
        long,
        value_name = "S",
        allow_negative_numbers = true,
        help_heading = "Trace replay"
    )]
    pub duration: Option<f64>,
    /// Replay at most N requests (the first after the window).
    #[arg(long, value_name = "N", help_heading = "Trace replay")]
    pub max_requests: Option<u64>,
    /// Skip (and count) malformed lines instead of stopping at the first.
    #[arg(long, help_heading = "Trace replay")]
    pub skip_bad_lines: bool,
    /// Timestamps out of order: sort them (stable, with a warning) instead of rejecting the file.
    #[arg(long, help_heading = "Trace replay")]
    pub sort: bool,
}

impl TraceReadFlags {
    /// The reader options, with prompts clipped to `max_context` tokens if given.
    pub fn options(&self, max_context: Option<u64>) -> Result<ReadOptions, UsageError> {
        let format = match &self.trace_format {
            Some(f) => Some(
                TraceFormat::parse(f).map_err(|e| UsageError(format!("--trace-format: {e}")))?,
            ),
            None => None,
        };
        Ok(ReadOptions {
            format,
            time_scale: self.time_scale.unwrap_or(1.0),
            start_s: self.start,
            duration_s: self.duration,
            max_requests: self.max_requests,
            skip_bad_lines: self.skip_bad_lines,
            max_context,
            unsorted: if self.sort {
                Unsorted::Sort
            } else {
                Unsorted::Reject
            },
            keep_hash_ids: true,
        })
    }
}

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

/// Reads a trace with one-line errors (file:line, the text, what was expected).
pub fn read_trace(path: &std::path::Path, opts: &ReadOptions) -> Result<Trace, UsageError> {
    read_path(path, opts).map_err(|e| UsageError(e.to_string()))
}

pub fn run(a: TraceStatsArgs) -> CmdResult {
    let opts = a.read.options(None)?;
    let t = read_trace(&a.file, &opts)?;
    let s = t.stats();
    if a.json {
        let v = json!({
            "schema_version": 1,
            "file": a.file.display().to_string(),
            "format": t.format,
            "report": t.report,
            "stats": s,
            "rows": s.rows,
            "duration_s": s.duration_s,
            "mean_rate_rps": s.mean_rate_rps,
            "input_tokens": s.input_tokens,
            "output_tokens": s.output_tokens,
        });
        // Keep the stats at the top level (rows, duration_s, mean_rate_rps, ...), once.
        let mut v = v;
        if let Some(o) = v.as_object_mut() {
            if let Some(serde_json::Value::Object(st)) = o.remove("stats") {
                for (k, x) in st {
                    o.entry(k).or_insert(x);
                }
            }
        }
        outln!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return Ok(());
    }
    outln!("{} ({} format)", a.file.display(), t.format.as_str());
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
        eprintln!("warning: {w}");
    }
    Ok(())
}
