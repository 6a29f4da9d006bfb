//! One memory budget for every caller: the CLI's commands, the server's simulations and the
//! Python package ask [`check`] (with their own limit) before they generate a single request.
//!
//! A run's memory is linear in what it holds: per request its stamps, records and latency
//! samples ([`BYTES_PER_REQUEST`]); per prefix-chain segment of a replayed trace
//! ([`BYTES_PER_SEGMENT`]); per request again when time series are kept for charts
//! ([`SERIES_BYTES_PER_REQUEST`]); and a fixed part ([`BASE_BYTES`]). Closed-loop session turns
//! share one segment buffer per session, so no part grows faster than the requests. The
//! constants are measured peaks (`/usr/bin/time -v`, see each), rounded up.

use crate::scenario::SimConfig;
use crate::workload::Source;

/// Bytes a run holds per request (requests, their stamps, the latency samples, a session's
/// closed-loop links and prefix chain). Measured as the peak RSS of `disagg run --requests N`
/// between N = 100,000 and 1,000,000: 336 bytes per request disaggregated, 447 colocated, 470
/// with `--turns 10` (prefix chains and session keys); rounded up.
pub const BYTES_PER_REQUEST: u64 = 512;

/// Bytes per request when time series are kept (`--plot`, the page): they grow with the simulated
/// time, which grows with the requests at a given rate; measured 6.2 to 6.4 KiB; rounded up.
pub const SERIES_BYTES_PER_REQUEST: u64 = 8 * 1024;

/// Bytes per prefix-chain segment read from a trace's block hashes (`(key, tokens)`, and the
/// key's name and index entry).
pub const BYTES_PER_SEGMENT: u64 = 64;

/// The fixed part (program, catalogue, buffers): measured under 10 MB; rounded up.
pub const BASE_BYTES: u64 = 32 << 20;

/// The estimated peak memory of a run of `requests` requests (`series`: with time series), bytes.
pub fn requests_bytes(requests: u64, series: bool) -> u64 {
    let per = if series {
        SERIES_BYTES_PER_REQUEST
    } else {
        BYTES_PER_REQUEST
    };
    BASE_BYTES.saturating_add(requests.saturating_mul(per))
}

/// The estimated peak memory of one run of `cfg`, bytes: its requests, and a replayed trace's
/// prefix-chain segments.
pub fn config_bytes(cfg: &SimConfig, series: bool) -> u64 {
    let segments: u64 = match &cfg.source {
        Source::File {
            chains: Some(ch), ..
        } => ch.chains.iter().map(|c| c.segments.len() as u64).sum(),
        _ => 0,
    };
    requests_bytes(cfg.workload.requests, series)
        .saturating_add(segments.saturating_mul(BYTES_PER_SEGMENT))
}

/// The memory the machine can give a new allocation without swapping (`MemAvailable` of
/// /proc/meminfo), bytes; `None` where that is not known.
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_available(&text)
}

fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// A run that would need more memory than its budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverBudget {
    /// The estimate, bytes.
    pub need_bytes: u64,
    /// The budget, bytes.
    pub limit_bytes: u64,
}

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "need about {} of memory, more than the {} budget",
            gib(self.need_bytes),
            gib(self.limit_bytes)
        )
    }
}

/// The one check: `need_bytes` fits in `limit_bytes`.
pub fn check(need_bytes: u64, limit_bytes: u64) -> Result<(), OverBudget> {
    if need_bytes <= limit_bytes {
        Ok(())
    } else {
        Err(OverBudget {
            need_bytes,
            limit_bytes,
        })
    }
}

/// The budget of a process that runs one thing at a time: what the machine has available now
/// (no limit where that is unknown).
pub fn machine_limit_bytes() -> u64 {
    available_bytes().unwrap_or(u64::MAX)
}

/// `bytes` in GiB with one decimal (`1.5 GiB`).
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_available() {
        let t = "MemTotal:       32000000 kB\nMemFree:  100 kB\nMemAvailable:   23554388 kB\n";
        assert_eq!(mem_available(t), Some(23554388 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn estimates_are_linear_and_saturate() {
        assert_eq!(requests_bytes(0, false), BASE_BYTES);
        assert_eq!(requests_bytes(1000, false), BASE_BYTES + 512_000);
        assert_eq!(requests_bytes(1000, true), BASE_BYTES + 8_192_000);
        assert_eq!(requests_bytes(u64::MAX, false), u64::MAX);
    }

    #[test]
    fn check_compares_need_with_limit() {
        assert_eq!(check(10, 10), Ok(()));
        let e = check(3 << 30, 1 << 30).unwrap_err();
        assert_eq!(
            e.to_string(),
            "need about 3.0 GiB of memory, more than the 1.0 GiB budget"
        );
    }
}
