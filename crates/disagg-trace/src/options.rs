//! How to read a trace ([`ReadOptions`]) and what reading it did ([`ReadReport`]).

use serde::Serialize;

use crate::format::TraceFormat;

/// What to do with rows whose timestamp is earlier than a row before them in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Unsorted {
    /// Fail with the file and line of the first such row (the default).
    #[default]
    Reject,
    /// Count them ([`ReadReport::out_of_order`]), add a warning, and stable-sort all rows by
    /// timestamp (rows with equal timestamps keep their file order).
    Sort,
}

/// How to read a trace. `ReadOptions::default()` detects the format and keeps every row as is.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadOptions {
    /// The format, or `None` to detect it from the content ([`TraceFormat::detect`]).
    pub format: Option<TraceFormat>,
    /// Every inter-arrival gap is multiplied by this (finite, > 0; default 1.0): 0.5 replays the
    /// trace twice as fast. Exact expression: module docs, step 7.
    pub time_scale: f64,
    /// Start of the time window, in seconds after the first row's timestamp (finite, >= 0;
    /// `None` = 0). Rows with offset `t >= start_s` are kept. Module docs, step 5.
    pub start_s: Option<f64>,
    /// Length of the time window in seconds (finite, > 0; `None` = to the end). Rows with
    /// offset `t < start_s + duration_s` are kept.
    pub duration_s: Option<f64>,
    /// Keep at most this many rows (the first ones after the window).
    pub max_requests: Option<u64>,
    /// Skip malformed lines and lines with negative token counts, counting them in
    /// [`ReadReport::bad_lines_skipped`], instead of failing. For the reference JSON format only
    /// rows that are valid JSON but not a valid row can be skipped; a JSON syntax error always
    /// fails.
    pub skip_bad_lines: bool,
    /// Clip prompts longer than this many tokens to it (>= 1), counting them in
    /// [`ReadReport::clipped_prompts`].
    pub max_context: Option<u64>,
    /// What to do with rows out of time order.
    pub unsorted: Unsorted,
    /// Keep Mooncake `hash_ids` in [`TraceRow::hash_ids`](crate::TraceRow::hash_ids) (default
    /// `true`). With `false` they are skipped while parsing (less memory; no
    /// [`TraceStats::prefix_blocks`](crate::TraceStats::prefix_blocks)).
    pub keep_hash_ids: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            time_scale: 1.0,
            start_s: None,
            duration_s: None,
            max_requests: None,
            skip_bad_lines: false,
            max_context: None,
            unsorted: Unsorted::Reject,
            keep_hash_ids: true,
        }
    }
}

/// What happened while reading a trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReadReport {
    /// Physical lines in the input, header and blank lines included (a final line break does
    /// not start another line).
    pub lines_read: u64,
    /// Rows in [`Trace::rows`](crate::Trace::rows).
    pub rows_kept: u64,
    /// Malformed lines (and lines with negative token counts) skipped because of
    /// [`ReadOptions::skip_bad_lines`], over the whole file.
    pub bad_lines_skipped: u64,
    /// BurstGPT rows with 0 response tokens (failed requests), skipped, over the whole file.
    pub failed_requests_skipped: u64,
    /// Kept rows whose prompt was clipped to [`ReadOptions::max_context`].
    pub clipped_prompts: u64,
    /// Rows whose timestamp is earlier than that of some row before them in the file (only
    /// non-zero with [`Unsorted::Sort`]; with [`Unsorted::Reject`] the first one is an error).
    pub out_of_order: u64,
    /// Human-readable notes: skipped lines (the first 10, then a count), sorting, clipping.
    pub warnings: Vec<String>,
}
