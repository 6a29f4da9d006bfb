//! Will a run fit in memory? An estimate from its request count, checked before it starts.

use crate::UsageError;

/// Bytes a run holds per request (requests, their stamps, the latency samples). Measured as the
/// peak RSS of `disagg run --requests N` (`/usr/bin/time -v`) between N = 100,000 and 1,000,000:
/// 336 bytes per request disaggregated, 447 colocated; rounded up.
pub const BYTES_PER_REQUEST: u64 = 512;

/// Bytes per request with `--plot` (the time series behind the charts grow with the simulated
/// time, which grows with the requests at a given rate): measured 6.2 to 6.4 KiB; rounded up.
pub const PLOT_BYTES_PER_REQUEST: u64 = 8 * 1024;

/// The fixed part (program, catalogue, buffers): measured under 10 MB; rounded up.
pub const BASE_BYTES: u64 = 32 << 20;

/// Estimated peak memory of a run of `requests` requests, bytes.
pub fn run_estimate_bytes(requests: u64, plot: bool) -> u64 {
    let per = if plot {
        PLOT_BYTES_PER_REQUEST
    } else {
        BYTES_PER_REQUEST
    };
    BASE_BYTES.saturating_add(requests.saturating_mul(per))
}

/// The memory the machine can give a new process without swapping (`MemAvailable` of
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

/// Refuses a run whose estimate exceeds the available memory, unless `yes`. `flag` names where
/// the request count came from (`--requests`, `--trace-file`).
pub fn check_run(flag: &str, requests: u64, plot: bool, yes: bool) -> Result<(), UsageError> {
    let Some(limit) = available_bytes() else {
        return Ok(());
    };
    check_against(flag, requests, plot, yes, limit)
}

fn check_against(
    flag: &str,
    requests: u64,
    plot: bool,
    yes: bool,
    limit: u64,
) -> Result<(), UsageError> {
    let need = run_estimate_bytes(requests, plot);
    if yes || need <= limit {
        return Ok(());
    }
    Err(UsageError(format!(
        "{flag}: {requests} requests{} need about {} of memory, more than the {} available: use fewer requests, or add --yes to run anyway",
        if plot { " with --plot" } else { "" },
        gib(need),
        gib(limit)
    )))
}

fn gib(bytes: u64) -> String {
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
    fn refuses_above_the_limit_unless_yes() {
        let limit = 4u64 << 30;
        assert!(check_against("--requests", 1_000_000, false, false, limit).is_ok());
        let e = check_against("--requests", 50_000_000, false, false, limit).unwrap_err();
        assert!(
            e.0.starts_with("--requests: 50000000 requests need about 23.9 GiB"),
            "{}",
            e.0
        );
        assert!(
            e.0.contains("4.0 GiB available") && e.0.contains("--yes"),
            "{}",
            e.0
        );
        assert!(check_against("--requests", 50_000_000, false, true, limit).is_ok());
        assert!(check_against("--requests", 1_000_000, true, false, limit).is_err());
    }
}
