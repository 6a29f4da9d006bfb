//! One memory budget for every caller: the CLI's commands, the server's simulations and the
//! Python package ask [`check`] (with their own limit) before they generate a single request.
//!
//! A run's memory is linear in what it holds: per request its stamps, records and latency
//! samples ([`BYTES_PER_REQUEST`], [`SCHEDULED_BYTES_PER_REQUEST`] with sessions or the scheduling
//! levers); per prefix-chain segment of a replayed trace
//! ([`BYTES_PER_SEGMENT`]); per request again when time series are kept for charts
//! ([`SERIES_BYTES_PER_REQUEST`]); and a fixed part ([`BASE_BYTES`]). Closed-loop session turns
//! share one segment buffer per session, so no part grows faster than the requests. The
//! constants are measured peaks (`/usr/bin/time -v`, see each), rounded up.

use crate::scenario::SimConfig;
use crate::workload::Source;

/// Bytes a run holds per request (requests, their stamps, the latency samples, a session's
/// closed-loop links and prefix chain). Measured as the peak RSS of `disagg run --requests N`
/// between N = 100,000 and 1,000,000: 336 bytes per request disaggregated, 447 colocated;
/// rounded up.
pub const BYTES_PER_REQUEST: u64 = 512;

/// Bytes a run holds per request with closed-loop sessions or the scheduling levers (the
/// scheduled instances' per-request state, a session's links, prefix chain and keys). Measured
/// between 100,000 and 200,000 requests, the worst case overloaded (every request waiting at
/// once): 515 bytes with 4 turns at 2 sessions/s, 684 with `--prefix-caching`, 941 with 10 turns
/// at 20 sessions/s, 1,255 with that and `--prefix-caching` colocated; rounded up.
pub const SCHEDULED_BYTES_PER_REQUEST: u64 = 1536;

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

/// The estimated peak memory of one run of `cfg`, bytes: its requests (more per request with
/// sessions or the scheduling levers), and a replayed trace's prefix-chain segments.
pub fn config_bytes(cfg: &SimConfig, series: bool) -> u64 {
    let segments: u64 = match &cfg.source {
        Source::File {
            chains: Some(ch), ..
        } => ch.stored_segments(),
        _ => 0,
    };
    let sessions = matches!(&cfg.source, Source::Sessions { shape, .. } if !shape.is_plain());
    let scheduled = if sessions || cfg.levers.is_some() {
        cfg.workload
            .requests
            .saturating_mul(SCHEDULED_BYTES_PER_REQUEST - BYTES_PER_REQUEST)
    } else {
        0
    };
    requests_bytes(cfg.workload.requests, series)
        .saturating_add(scheduled)
        .saturating_add(segments.saturating_mul(BYTES_PER_SEGMENT))
}

/// Runs that are in memory at once: how many of the runs needing `needs` bytes each may run
/// together within `limit_bytes`, the largest first, at least one and at most `max`; and the bytes
/// those hold together (which may exceed `limit_bytes` when one run alone does).
pub fn runs_at_once(needs: &[u64], max: usize, limit_bytes: u64) -> (usize, u64) {
    let mut sorted = needs.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let mut held = sorted.first().copied().unwrap_or(0);
    let mut n = 1;
    while n < max.min(sorted.len()) {
        let more = held.saturating_add(sorted[n]);
        if more > limit_bytes {
            break;
        }
        held = more;
        n += 1;
    }
    (n, held)
}

/// The bytes that the `k` largest of `needs` hold together (`k` runs in memory at once).
pub fn largest_together(needs: &[u64], k: usize) -> u64 {
    let mut sorted = needs.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted
        .iter()
        .take(k)
        .fold(0u64, |a, &b| a.saturating_add(b))
}

/// The memory the machine can give a new allocation without swapping (`MemAvailable` of
/// /proc/meminfo), bytes; `None` where that is not known.
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_available(&text)
}

/// The memory this process can have: the least of the machine's available memory
/// ([`available_bytes`]), its address-space limit (`ulimit -v`, from /proc/self/limits) and its
/// cgroup's memory limit (v2 `memory.max`); `None` where none is known.
pub fn process_limit_bytes() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok();
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok();
    [
        available_bytes(),
        limits.as_deref().and_then(address_space_limit),
        cgroup.and_then(|t| t.trim().parse().ok()),
    ]
    .into_iter()
    .flatten()
    .min()
}

/// The soft "Max address space" of a /proc/PID/limits text, bytes (`None`: unlimited).
fn address_space_limit(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
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
            human_bytes(self.need_bytes),
            human_bytes(self.limit_bytes)
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

/// The environment variable that sets the budget of [`machine_limit_bytes`] (a whole number of
/// bytes), for a machine shared with other work, or tests.
pub const BUDGET_ENV: &str = "DISAGG_MEMORY_BUDGET_BYTES";

/// The budget of a process that runs one thing at a time: what it can have now
/// ([`process_limit_bytes`]; no limit where that is unknown), or `DISAGG_MEMORY_BUDGET_BYTES` if
/// that is set to a smaller whole number of bytes. A value that is not a whole number of bytes is
/// an error naming the variable.
///
/// Read at most once a second (a call within a second of the last read answers the same), so a
/// caller that runs many small simulations does not read /proc each time.
pub fn machine_limit_bytes() -> Result<u64, String> {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};
    static LAST: Mutex<Option<(Instant, u64)>> = Mutex::new(None);
    let set = env_limit_bytes(std::env::var(BUDGET_ENV).ok().as_deref())?;
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let machine = match *last {
        Some((at, v)) if at.elapsed() < Duration::from_secs(1) => v,
        _ => {
            let v = process_limit_bytes().unwrap_or(u64::MAX);
            *last = Some((Instant::now(), v));
            v
        }
    };
    Ok(set.map_or(machine, |s| s.min(machine)))
}

/// The value of `DISAGG_MEMORY_BUDGET_BYTES` (`None`: unset).
fn env_limit_bytes(value: Option<&str>) -> Result<Option<u64>, String> {
    value
        .map(|v| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| format!("{BUDGET_ENV}: expected a whole number of bytes, got '{v}'"))
        })
        .transpose()
}

/// `bytes` in GiB with one decimal (`1.5 GiB`), or below 1 GiB in whole MiB (`96 MiB`).
pub fn human_bytes(bytes: u64) -> String {
    if bytes < 1 << 30 {
        format!("{} MiB", bytes.div_ceil(1 << 20))
    } else {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    }
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
    fn reads_the_address_space_limit() {
        let head =
            "Limit                     Soft Limit           Hard Limit           Units     \n";
        let t = format!("{head}Max address space         1024000000           unlimited            bytes     \n");
        assert_eq!(address_space_limit(&t), Some(1_024_000_000));
        let t = format!("{head}Max address space         unlimited            unlimited            bytes     \n");
        assert_eq!(address_space_limit(&t), None);
        assert_eq!(address_space_limit(head), None);
    }

    #[test]
    fn the_environment_budget_is_a_whole_number_of_bytes() {
        assert_eq!(env_limit_bytes(None), Ok(None));
        assert_eq!(env_limit_bytes(Some(" 1000 ")), Ok(Some(1000)));
        assert_eq!(
            env_limit_bytes(Some("lots")),
            Err("DISAGG_MEMORY_BUDGET_BYTES: expected a whole number of bytes, got 'lots'".into())
        );
        assert!(env_limit_bytes(Some("-1")).is_err());
    }

    #[test]
    fn runs_at_once_take_the_largest_first() {
        let needs = [30, 100, 50, 20];
        assert_eq!(largest_together(&needs, 2), 150);
        assert_eq!(largest_together(&needs, 9), 200);
        assert_eq!(runs_at_once(&needs, 4, 180), (3, 180));
        assert_eq!(runs_at_once(&needs, 2, 1000), (2, 150));
        // One run alone over the limit still counts as one, holding its own need.
        assert_eq!(runs_at_once(&needs, 4, 10), (1, 100));
    }

    #[test]
    fn sizes_read_in_mib_below_a_gib() {
        assert_eq!(human_bytes(96 << 20), "96 MiB");
        assert_eq!(human_bytes((96 << 20) + 1), "97 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
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
