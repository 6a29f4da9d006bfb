//! disagg-trace: read real LLM request traces and compute their statistics.
//!
//! Four formats are read (see [`TraceFormat`]): the Azure LLM inference CSV (2023 and 2024), the
//! Mooncake (Kimi) FAST'25 JSON Lines, the BurstGPT CSV, and the reference simulator's workload
//! JSON rows. Every trace becomes a list of [`TraceRow`]s (arrival time in seconds, prompt
//! tokens, output tokens, source line) plus a [`ReadReport`] of what was skipped, clipped or
//! sorted. [`stats`] computes the statistics quoted in the traces' README exactly as its
//! `compute_stats.py` does (nearest-rank percentiles, busiest second and minute, ...).
//!
//! # Reading pipeline
//!
//! [`read_str`] / [`read_path`] do, in this order:
//!
//! 1. **Validate** the [`ReadOptions`] (`time_scale` finite and > 0, `start_s` finite and >= 0,
//!    `duration_s` finite and > 0, `max_context` >= 1).
//! 2. **Detect** the format if [`ReadOptions::format`] is `None` ([`TraceFormat::detect`]).
//! 3. **Parse** every line. Malformed lines and negative token counts are errors, or, with
//!    [`ReadOptions::skip_bad_lines`], skipped and counted. BurstGPT rows with 0 response tokens
//!    (failed requests) are skipped and counted. These counts cover the whole file.
//! 4. **Order**: a row whose timestamp is earlier than an earlier row's is an error
//!    ([`Unsorted::Reject`], the default) or counted, and all rows are then stable-sorted by
//!    timestamp ([`Unsorted::Sort`]).
//! 5. **Window**: with `start_s` and/or `duration_s`, keep the rows whose offset from the first
//!    row's timestamp, `t`, satisfies `start_s <= t < start_s + duration_s` (`start_s` defaults to
//!    0, a missing `duration_s` means no upper bound; `t` and `start_s + duration_s` are f64).
//!    The window is in the trace's own time, before `time_scale`.
//! 6. **Max**: keep only the first `max_requests` of the remaining rows.
//! 7. **Re-base and scale**: `arrival_s = since(stamp_i, stamp_k) * time_scale`, where `k` is
//!    the first kept row. `since` is exact for the integer formats: Azure timestamps are parsed to
//!    integer nanoseconds and Mooncake milliseconds converted to integer nanoseconds, and
//!    `since(a, b) = (a_ns - b_ns) as f64 / 1e9` (one rounding). For the float formats (BurstGPT,
//!    reference) `since(a, b) = a_s - b_s`. So the first kept row is at 0 and every inter-arrival
//!    gap is multiplied by `time_scale` (a scale of 1.0 changes nothing). **Exception:** reference
//!    rows hold absolute arrival times, and are kept exactly as given (not re-based) unless a
//!    window (`start_s` or `duration_s`) or a `time_scale != 1.0` is requested.
//! 8. **Clip**: prompts longer than `max_context` become `max_context` tokens (counted in
//!    [`ReadReport::clipped_prompts`]); a clipped Mooncake row's `hash_ids` are cut to
//!    `ceil(max_context / 512)` blocks.
//!
//! If no rows are left after 3, 5 or 6 the read fails ([`TraceErrorKind::NoRequests`] or
//! [`TraceErrorKind::NothingSelected`]).

#![warn(missing_docs)]

mod error;
mod format;
pub mod input;
mod options;
mod parse;
pub mod shared;
mod stats;

use std::path::Path;

pub use error::{TraceError, TraceErrorKind};
pub use format::TraceFormat;
pub use options::{ReadOptions, ReadReport, Unsorted};
pub use stats::{stats, BlockReuse, TokenStats, TraceStats};

use parse::Raw;

/// Tokens per Mooncake prefix block: each `hash_ids` entry names one block of 512 prompt tokens.
pub const MOONCAKE_BLOCK_TOKENS: u64 = 512;

/// One request of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRow {
    /// Arrival time in seconds after the first kept row (which is at 0), scaled by
    /// [`ReadOptions::time_scale`]. Reference-format rows keep their absolute arrival time
    /// unless a window or time scale is requested (module docs, step 7).
    pub arrival_s: f64,
    /// Prompt (input, context) tokens, after clipping to [`ReadOptions::max_context`].
    pub prompt_len: u64,
    /// Output (generated, response) tokens.
    pub output_len: u64,
    /// 1-based line number of the row in the file.
    pub line: usize,
    /// Mooncake prefix-block hash ids (one per 512-token block of the prompt), when the format
    /// has them and [`ReadOptions::keep_hash_ids`] is set; `None` otherwise.
    pub hash_ids: Option<Vec<u64>>,
}

/// A trace that was read: its format, its rows in arrival order, and the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The format it was read as (given or detected).
    pub format: TraceFormat,
    /// The kept rows, in non-decreasing `arrival_s` order.
    pub rows: Vec<TraceRow>,
    /// What was read, skipped, clipped and sorted.
    pub report: ReadReport,
}

impl Trace {
    /// The statistics of the rows: `stats(&self.rows)`.
    pub fn stats(&self) -> TraceStats {
        stats(&self.rows)
    }
}

/// Reads the trace at `path` (the path's display form names it in messages) with
/// [`input::read_input`] ([`input::InputKind::Data`]: a regular file of at most 1 GiB by default,
/// UTF-8 text): what it refuses is an error of kind [`TraceErrorKind::Io`] (an empty file:
/// [`TraceErrorKind::NoRequests`]); the rest is [`read_str`].
pub fn read_path(path: &Path, opts: &ReadOptions) -> Result<Trace, TraceError> {
    let name = path.display().to_string();
    let text = input::read_input(path, input::InputKind::Data)
        .map_err(|e| input_error(&name, &e.problem))?;
    read_str(&text, &name, opts)
}

/// Reads a trace from raw bytes (e.g. a file's content): the text checks of [`read_path`] (not
/// empty, no NUL byte, UTF-8), then [`read_str`].
pub fn read_bytes(bytes: &[u8], name: &str, opts: &ReadOptions) -> Result<Trace, TraceError> {
    let text = input::text_from_bytes(bytes.to_vec()).map_err(|p| input_error(name, &p))?;
    read_str(&text, name, opts)
}

/// An input problem as a trace error: an empty file has no requests, the rest is [`TraceErrorKind::Io`].
fn input_error(name: &str, problem: &input::InputProblem) -> TraceError {
    if *problem == input::InputProblem::Empty {
        // As for a whitespace-only text: no requests.
        TraceError::new(
            TraceErrorKind::NoRequests,
            Some(name),
            None,
            "empty file: no requests",
        )
    } else {
        TraceError::new(
            TraceErrorKind::Io,
            Some(name),
            problem.line(),
            problem.message(),
        )
    }
}

/// Reads a trace from `text`; `name` (usually the file name) prefixes every message. See the
/// module docs for what is done in which order.
pub fn read_str(text: &str, name: &str, opts: &ReadOptions) -> Result<Trace, TraceError> {
    validate(opts, name)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let format = match opts.format {
        Some(f) => f,
        None => TraceFormat::detect(text, name)?,
    };
    let mut report = ReadReport {
        lines_read: text.lines().count() as u64,
        ..ReadReport::default()
    };
    let rows = parse::parse(format, text, name, opts, &mut report)?;
    finish(format, rows, name, opts, report)
}

fn validate(opts: &ReadOptions, name: &str) -> Result<(), TraceError> {
    let bad = |what: String| {
        Err(TraceError::new(
            TraceErrorKind::InvalidOption,
            Some(name),
            None,
            what,
        ))
    };
    if !(opts.time_scale.is_finite() && opts.time_scale > 0.0) {
        return bad(format!(
            "time_scale must be finite and > 0, got {}",
            opts.time_scale
        ));
    }
    if let Some(s) = opts.start_s {
        if !(s.is_finite() && s >= 0.0) {
            return bad(format!(
                "the window start must be finite and >= 0 s, got {s}"
            ));
        }
    }
    if let Some(d) = opts.duration_s {
        if !(d.is_finite() && d > 0.0) {
            return bad(format!(
                "the window duration must be finite and > 0 s, got {d}"
            ));
        }
    }
    if opts.max_context == Some(0) {
        return bad("max_context must be at least 1 token, got 0".to_owned());
    }
    Ok(())
}

/// Steps 4 to 8 of the module docs: `rows` are the parsed rows in file order, with the report's
/// parse counts filled in.
fn finish(
    format: TraceFormat,
    mut rows: Vec<Raw>,
    name: &str,
    opts: &ReadOptions,
    mut report: ReadReport,
) -> Result<Trace, TraceError> {
    if rows.is_empty() {
        let mut why = Vec::new();
        if report.bad_lines_skipped > 0 {
            why.push(format!("{} bad lines skipped", report.bad_lines_skipped));
        }
        if report.failed_requests_skipped > 0 {
            why.push(format!(
                "{} failed requests (0 response tokens) skipped",
                report.failed_requests_skipped
            ));
        }
        return Err(TraceError::new(
            TraceErrorKind::NoRequests,
            Some(name),
            None,
            format!("no requests left: {}", why.join(", ")),
        ));
    }
    if report.out_of_order > 0 {
        rows.sort_by(|a, b| a.t.cmp_total(b.t));
        report.warnings.push(format!(
            "{} rows were earlier than a row before them; all rows were stable-sorted by timestamp",
            report.out_of_order
        ));
    }

    let windowed = opts.start_s.is_some() || opts.duration_s.is_some();
    if windowed {
        let origin = rows[0].t;
        let span = rows[rows.len() - 1].t.since(origin);
        let start = opts.start_s.unwrap_or(0.0);
        let end = opts.duration_s.map(|d| start + d);
        rows.retain(|r| {
            let t = r.t.since(origin);
            t >= start && !matches!(end, Some(e) if t >= e)
        });
        if rows.is_empty() {
            let end_text = end.map_or_else(|| "end".to_owned(), |e| format!("{e} s"));
            return Err(TraceError::new(
                TraceErrorKind::NothingSelected,
                Some(name),
                None,
                format!(
                    "no requests in the window from {start} s to {end_text} after the first \
                     arrival (the trace spans 0 to {span} s)"
                ),
            ));
        }
    }
    if let Some(max) = opts.max_requests {
        if max == 0 {
            return Err(TraceError::new(
                TraceErrorKind::NothingSelected,
                Some(name),
                None,
                "max_requests = 0 leaves no requests",
            ));
        }
        rows.truncate(usize::try_from(max).unwrap_or(usize::MAX));
    }

    let rebase = format != TraceFormat::Reference || windowed || opts.time_scale != 1.0;
    let first = rows[0].t;
    let scale = opts.time_scale;
    let max_context = opts.max_context.unwrap_or(u64::MAX);
    let max_blocks = max_context.div_ceil(MOONCAKE_BLOCK_TOKENS);
    let mut clipped = 0u64;
    let mut out: Vec<TraceRow> = Vec::with_capacity(rows.len());
    for r in rows {
        let arrival_s = if rebase {
            r.t.since(first) * scale
        } else {
            r.t.as_secs()
        };
        if !arrival_s.is_finite() {
            // Only reachable with huge timestamps or a huge time_scale.
            return Err(TraceError::new(
                TraceErrorKind::InvalidOption,
                Some(name),
                Some(r.line),
                format!(
                    "the arrival time overflows: the time since the first request ({} s) times \
                     time_scale ({scale}) is not a finite number of seconds",
                    r.t.since(first)
                ),
            ));
        }
        let mut prompt_len = r.prompt;
        let mut hash_ids = r.hash_ids;
        if prompt_len > max_context {
            prompt_len = max_context;
            clipped += 1;
            if let Some(h) = hash_ids.as_mut() {
                h.truncate(usize::try_from(max_blocks).unwrap_or(usize::MAX));
            }
        }
        out.push(TraceRow {
            arrival_s,
            prompt_len,
            output_len: r.output,
            line: r.line,
            hash_ids,
        });
    }
    if clipped > 0 {
        report.warnings.push(format!(
            "{clipped} prompts longer than max_context = {max_context} tokens were clipped to it"
        ));
    }
    report.clipped_prompts = clipped;
    report.rows_kept = out.len() as u64;
    Ok(Trace {
        format,
        rows: out,
        report,
    })
}
