//! Request traces: read one, and what it holds (`disagg trace-stats`, Python's
//! `disagg.trace_stats`).

use disagg_trace::{read_path, ReadOptions, Trace};
use serde_json::json;

use crate::error::UsageError;

/// Reads a trace with one-line errors (file:line, the text, what was expected).
pub fn read_trace(path: &std::path::Path, opts: &ReadOptions) -> Result<Trace, UsageError> {
    read_path(path, opts).map_err(|e| UsageError(e.to_string()))
}

/// `disagg trace-stats --json` of trace `t` read from `file` (as shown): the format, what the
/// read reported, and the statistics at the top level.
pub fn stats_json(file: &str, t: &Trace) -> serde_json::Value {
    let s = t.stats();
    let v = json!({
        "schema_version": 1,
        "file": file,
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
    v
}
