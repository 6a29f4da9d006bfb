//! Workloads from files: the reference's workload JSON (`--workload-file`, simulator.md §7.2) and
//! real traces (`--trace-file`), both read by `disagg-trace` and turned into the simulator's
//! requests.

use std::path::Path;

use disagg_sim::GenRequest;
use disagg_trace::{ReadOptions, Trace, TraceFormat};

use crate::UsageError;

/// The trace's rows as requests (rid = row index); a row with 0 prompt or output tokens is an
/// error naming its line.
pub fn to_requests(name: &str, t: &Trace) -> Result<Vec<GenRequest>, UsageError> {
    t.rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if r.prompt_len == 0 || r.output_len == 0 || r.prompt_len > u32::MAX as u64 || r.output_len > u32::MAX as u64 {
                return Err(UsageError(format!(
                    "{name}:{}: row {i}: prompt and output lengths must be between 1 and {}, got {} and {}",
                    r.line,
                    u32::MAX,
                    r.prompt_len,
                    r.output_len
                )));
            }
            Ok(GenRequest { rid: i, arrival_s: r.arrival_s, prompt_len: r.prompt_len as u32, output_len: r.output_len as u32 })
        })
        .collect()
}

/// Reads a workload file (the reference's JSON rows, arrivals kept as given).
pub fn read(path: &Path) -> Result<Vec<GenRequest>, UsageError> {
    let opts = ReadOptions {
        format: Some(TraceFormat::Reference),
        keep_hash_ids: false,
        ..ReadOptions::default()
    };
    let t = disagg_trace::read_path(path, &opts)
        .map_err(|e| UsageError(format!("--workload-file: {e}")))?;
    to_requests(&path.display().to_string(), &t)
        .map_err(|e| UsageError(format!("--workload-file: {}", e.0)))
}
