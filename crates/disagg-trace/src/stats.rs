//! Trace statistics, computed exactly as the traces' `compute_stats.py` does.

use std::collections::HashSet;

use serde::{Serialize, Serializer};

use crate::TraceRow;

/// Summary of one token-count column (prompt or output).
///
/// Percentiles use the nearest-rank method of `compute_stats.py`: the p-th percentile of `n`
/// values is the value at 1-based rank `max(1, ceil(p / 100.0 * n))` of the ascending sort
/// (the float expression evaluated as written), so every percentile is a value of the data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TokenStats {
    /// Arithmetic mean: the exact integer sum converted to f64, divided by the count (the same
    /// double as Python's `sum(ints) / len` while the sum is below 2^53).
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: u64,
    /// 90th percentile (nearest rank).
    pub p90: u64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Smallest value.
    pub min: u64,
    /// Largest value.
    pub max: u64,
}

/// Mooncake prefix-block reuse: how many of the `hash_ids` blocks were already seen earlier in
/// the trace (in row order), an upper bound on the prefix-cache hit rate with an infinite cache.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BlockReuse {
    /// Blocks over all rows (sum of `hash_ids` lengths).
    pub total_blocks: u64,
    /// Distinct block ids.
    pub distinct_blocks: u64,
    /// Blocks whose id appeared earlier in the trace (`total_blocks - distinct_blocks`).
    pub reused_blocks: u64,
    /// `reused_blocks / total_blocks` (null in JSON when there are no blocks).
    #[serde(serialize_with = "finite_or_null")]
    pub reused_fraction: f64,
}

/// Statistics of a list of rows ([`stats`]). Non-finite floats (NaN when undefined) serialize
/// as `null`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceStats {
    /// Number of rows.
    pub rows: u64,
    /// Last minus first arrival, in seconds (computed as max minus min, which is the same for
    /// rows in arrival order); NaN for no rows.
    #[serde(serialize_with = "finite_or_null")]
    pub duration_s: f64,
    /// `rows / duration_s`, requests per second; NaN (JSON null) when the duration is 0 or
    /// undefined.
    #[serde(serialize_with = "finite_or_null")]
    pub mean_rate_rps: f64,
    /// Requests in the busiest 1-second bucket. Buckets are `int(t - t0)` with `t0` the first
    /// (smallest) arrival, i.e. whole seconds after the first arrival, as in `compute_stats.py`.
    pub busiest_1s_requests: u64,
    /// Requests in the busiest 60-second bucket, buckets `int((t - t0) // 60)` with Python's
    /// float floor division.
    pub busiest_60s_requests: u64,
    /// `busiest_1s_requests / 1 s`.
    pub peak_rate_1s_rps: f64,
    /// `busiest_60s_requests / 60 s`.
    pub peak_rate_60s_rps: f64,
    /// The largest difference between consecutive rows' arrivals, in row order; NaN (JSON null)
    /// with fewer than 2 rows.
    #[serde(serialize_with = "finite_or_null")]
    pub longest_gap_s: f64,
    /// Number of distinct arrival times.
    pub distinct_arrivals: u64,
    /// Prompt tokens; `None` for no rows.
    pub input_tokens: Option<TokenStats>,
    /// Output tokens; `None` for no rows.
    pub output_tokens: Option<TokenStats>,
    /// Prefix-block reuse, when any row has `hash_ids` (Mooncake); `None` otherwise.
    pub prefix_blocks: Option<BlockReuse>,
}

fn finite_or_null<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_none()
    }
}

/// Nearest-rank percentile of ascending `sorted` (non-empty), as `compute_stats.py`'s `pct`.
fn nearest_rank(sorted: &[u64], p: f64) -> u64 {
    let n = sorted.len();
    let k = (p / 100.0 * n as f64).ceil().max(1.0) as usize;
    sorted[k.min(n) - 1]
}

fn summarize(mut xs: Vec<u64>) -> Option<TokenStats> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_unstable();
    let sum: u128 = xs.iter().map(|&x| u128::from(x)).sum();
    Some(TokenStats {
        mean: sum as f64 / xs.len() as f64,
        p50: nearest_rank(&xs, 50.0),
        p90: nearest_rank(&xs, 90.0),
        p99: nearest_rank(&xs, 99.0),
        min: xs[0],
        max: xs[xs.len() - 1],
    })
}

/// Python's `x // y` for floats (CPython `float_floor_div`): the exact floor of `x / y`.
fn py_floordiv(x: f64, y: f64) -> f64 {
    let m = x % y;
    let mut div = (x - m) / y;
    if m != 0.0 && ((y < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let mut f = div.floor();
        if div - f > 0.5 {
            f += 1.0;
        }
        f
    } else {
        0.0f64.copysign(x / y)
    }
}

/// The size of the largest group of equal keys.
fn busiest(mut keys: Vec<i64>) -> u64 {
    keys.sort_unstable();
    keys.chunk_by(|a, b| a == b)
        .map(|c| c.len() as u64)
        .max()
        .unwrap_or(0)
}

/// Computes the statistics of `rows` (any order; [`crate::read_str`] returns them sorted).
pub fn stats(rows: &[TraceRow]) -> TraceStats {
    let n = rows.len();
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for r in rows {
        lo = lo.min(r.arrival_s);
        hi = hi.max(r.arrival_s);
    }
    let duration_s = if n == 0 { f64::NAN } else { hi - lo };
    let mean_rate_rps = if duration_s > 0.0 {
        n as f64 / duration_s
    } else {
        f64::NAN
    };
    let busiest_1s = busiest(
        rows.iter()
            .map(|r| (r.arrival_s - lo).trunc() as i64)
            .collect(),
    );
    let busiest_60s = busiest(
        rows.iter()
            .map(|r| py_floordiv(r.arrival_s - lo, 60.0) as i64)
            .collect(),
    );
    let longest_gap_s = rows
        .windows(2)
        .map(|w| w[1].arrival_s - w[0].arrival_s)
        .fold(f64::NAN, f64::max);
    let mut arrivals: Vec<f64> = rows.iter().map(|r| r.arrival_s).collect();
    arrivals.sort_unstable_by(f64::total_cmp);
    arrivals.dedup();

    let prefix_blocks = if rows.iter().any(|r| r.hash_ids.is_some()) {
        let total: usize = rows
            .iter()
            .filter_map(|r| r.hash_ids.as_ref())
            .map(Vec::len)
            .sum();
        let mut seen = HashSet::with_capacity(total);
        let mut reused = 0u64;
        for id in rows.iter().filter_map(|r| r.hash_ids.as_ref()).flatten() {
            if !seen.insert(*id) {
                reused += 1;
            }
        }
        Some(BlockReuse {
            total_blocks: total as u64,
            distinct_blocks: seen.len() as u64,
            reused_blocks: reused,
            reused_fraction: if total == 0 {
                f64::NAN
            } else {
                reused as f64 / total as f64
            },
        })
    } else {
        None
    };

    TraceStats {
        rows: n as u64,
        duration_s,
        mean_rate_rps,
        busiest_1s_requests: busiest_1s,
        busiest_60s_requests: busiest_60s,
        peak_rate_1s_rps: busiest_1s as f64,
        peak_rate_60s_rps: busiest_60s as f64 / 60.0,
        longest_gap_s,
        distinct_arrivals: arrivals.len() as u64,
        input_tokens: summarize(rows.iter().map(|r| r.prompt_len).collect()),
        output_tokens: summarize(rows.iter().map(|r| r.output_len).collect()),
        prefix_blocks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floordiv_matches_python() {
        assert_eq!(py_floordiv(59.999, 60.0), 0.0);
        assert_eq!(py_floordiv(60.0, 60.0), 1.0);
        assert_eq!(py_floordiv(3536.999, 60.0), 58.0);
        assert_eq!(py_floordiv(-1.0, 60.0), -1.0);
        // Python: 1 / 0.1 == 10.0 but 1 // 0.1 == 9.0 (0.1 is slightly above 1/10).
        assert_eq!(1.0 / 0.1, 10.0);
        assert_eq!(py_floordiv(1.0, 0.1), 9.0);
    }

    /// Python's `//` on floats (CPython 3), the values written out:
    /// `622.2781 // 0.7 == 888.0` (the quotient (x - x % y) / y is 887.9999999999999 and is
    /// rounded to the nearest integer), `-656.9658 // 0.1 == -6570.0`, `120.0 // -60.0 == -2.0`,
    /// `30.0 // -60.0 == -1.0`, `-30.0 // 60.0 == -1.0`, `-30.0 // -60.0 == 0.0`,
    /// `-0.0 // 60.0 == -0.0`, `0.0 // -60.0 == -0.0`.
    #[test]
    fn floordiv_signs_and_rounding() {
        assert_eq!(py_floordiv(622.2781, 0.7), 888.0);
        assert_eq!(py_floordiv(-656.9658, 0.1), -6570.0);
        assert_eq!(py_floordiv(120.0, 60.0), 2.0);
        assert_eq!(py_floordiv(-120.0, 60.0), -2.0);
        assert_eq!(py_floordiv(120.0, -60.0), -2.0);
        assert_eq!(py_floordiv(30.0, -60.0), -1.0);
        assert_eq!(py_floordiv(-30.0, 60.0), -1.0);
        assert_eq!(py_floordiv(-30.0, -60.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(py_floordiv(-0.0, 60.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(py_floordiv(0.0, -60.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(py_floordiv(30.0, 60.0).to_bits(), 0.0f64.to_bits());
        // A quotient that comes out exactly halfway, 3808740092831794.5, is rounded down:
        // Python's `2.666118064982256e16 // 7.0 == 3808740092831794.0`.
        assert_eq!(
            py_floordiv(2.666118064982256e16, 7.0),
            3_808_740_092_831_794.0
        );
    }

    #[test]
    fn token_summary_and_busiest_bucket() {
        // 1 + 2 + 3 + 10 = 16, mean 4.0; ranks: p50 ceil(2.0) = 2, p90 ceil(3.6) = 4,
        // p99 ceil(3.96) = 4.
        let s = summarize(vec![10, 3, 1, 2]).unwrap();
        assert_eq!(s.mean, 4.0);
        assert_eq!((s.p50, s.p90, s.p99, s.min, s.max), (2, 10, 10, 1, 10));
        assert_eq!(summarize(Vec::new()), None);
        assert_eq!(busiest(vec![3, 1, 3, 2, 3, 1]), 3);
        assert_eq!(busiest(vec![5]), 1);
        assert_eq!(busiest(Vec::new()), 0);
    }

    fn row(arrival_s: f64, hash_ids: Option<Vec<u64>>) -> TraceRow {
        TraceRow {
            arrival_s,
            prompt_len: 1,
            output_len: 1,
            line: 0,
            hash_ids,
        }
    }

    #[test]
    fn block_reuse_and_rates() {
        // Blocks 1 2 3 | 2 3 4 | (none) | 1: 7 in all, 4 distinct, 3 seen before.
        let rows = [
            row(0.0, Some(vec![1, 2, 3])),
            row(0.5, Some(vec![2, 3, 4])),
            row(0.5, None),
            row(130.0, Some(vec![1])),
        ];
        let s = stats(&rows);
        let b = s.prefix_blocks.clone().unwrap();
        assert_eq!(
            (b.total_blocks, b.distinct_blocks, b.reused_blocks),
            (7, 4, 3)
        );
        assert_eq!(b.reused_fraction, 3.0 / 7.0);
        assert_eq!(s.duration_s, 130.0);
        assert_eq!(s.mean_rate_rps, 4.0 / 130.0);
        assert_eq!(s.distinct_arrivals, 3);
        // Seconds 0, 0, 0, 130; minutes 0, 0, 0, 2.
        assert_eq!((s.busiest_1s_requests, s.peak_rate_1s_rps), (3, 3.0));
        assert_eq!(
            (s.busiest_60s_requests, s.peak_rate_60s_rps),
            (3, 3.0 / 60.0)
        );
        assert_eq!(s.longest_gap_s, 129.5);
        // Seconds count from the first arrival: 0.4 and 0.7 are both in [0.4, 1.4).
        let s = stats(&[row(0.4, None), row(0.7, None)]);
        assert_eq!(s.busiest_1s_requests, 2);
        // Rows with empty hash_ids: no blocks, the fraction undefined (JSON null).
        let s = stats(&[row(1.0, Some(Vec::new()))]);
        let b = s.prefix_blocks.clone().unwrap();
        assert_eq!((b.total_blocks, b.distinct_blocks), (0, 0));
        assert!(b.reused_fraction.is_nan());
        let json = serde_json::to_value(&s).unwrap();
        assert!(json["prefix_blocks"]["reused_fraction"].is_null());
        assert_eq!(json["rows"], 1);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<u64> = (1..=10).collect();
        assert_eq!(nearest_rank(&xs, 50.0), 5);
        assert_eq!(nearest_rank(&xs, 90.0), 9);
        assert_eq!(nearest_rank(&xs, 99.0), 10);
        assert_eq!(nearest_rank(&[7], 50.0), 7);
        assert_eq!(nearest_rank(&[1, 2], 0.0), 1);
    }
}
