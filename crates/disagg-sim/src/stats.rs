//! Exact distribution summaries (simulator.md §5.2) of multisets given as `(value, count)` pairs,
//! without materialising or sorting the whole multiset.
//!
//! * `mean` = `math.fsum(xs) / len(xs)`: each `value * count` is added to an exact [`Fsum`] as
//!   two exactly representable partial products, so the result is the correctly rounded exact sum,
//!   identical to CPython's `fsum` of the expanded list.
//! * `p50`, `p90`, `p99` = the reference's linear formula on the sorted multiset; the order
//!   statistics it needs are found by rank with a bucket histogram over the values' order-preserving
//!   bit patterns (a few linear passes), then a sort of only the small bucket that holds each rank.
//! * `max` = the largest value.

use serde::Serialize;

use crate::pymath::Fsum;

/// Mean, percentiles and maximum of a sample (NaN for an empty one, serialised as `null`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Dist {
    /// `statistics.fmean`.
    pub mean: f64,
    /// 50th percentile (linear interpolation).
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest value.
    pub max: f64,
}

impl Dist {
    /// All NaN (an empty sample).
    pub const EMPTY: Dist = Dist {
        mean: f64::NAN,
        p50: f64::NAN,
        p90: f64::NAN,
        p99: f64::NAN,
        max: f64::NAN,
    };
}

/// Two percentiles (hand-off latency).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct P50P99 {
    /// 50th percentile.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// Order-preserving map of a double to an unsigned key.
#[inline]
fn key(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 != 0 {
        !b
    } else {
        b | (1 << 63)
    }
}

#[inline]
fn unkey(k: u64) -> f64 {
    if k >> 63 != 0 {
        f64::from_bits(k & !(1 << 63))
    } else {
        f64::from_bits(!k)
    }
}

/// Adds `v * c` exactly to `acc` (as at most two exact partial products).
#[inline]
fn add_scaled(acc: &mut Fsum, v: f64, c: u64) {
    if c == 1 {
        acc.add(v);
        return;
    }
    let cf = c as f64;
    if c < (1 << 26) && v.is_finite() && v.abs() > 1e-280 && v.abs() < 1e280 {
        // Veltkamp split: hi and lo have at most 26 significant bits each, so with c < 2^26 both
        // products are exact.
        let t = v * 134_217_729.0;
        let hi = t - (t - v);
        let lo = v - hi;
        acc.add(hi * cf);
        acc.add(lo * cf);
    } else {
        for _ in 0..c {
            acc.add(v);
        }
    }
}

/// The linear-interpolation ranks `(lo, hi, frac)` of percentile `p` (an integer) of `n` values.
#[inline]
fn rank(n: u64, p: u64) -> (u64, u64, f64) {
    let k = ((n - 1) * p) as f64 / 100.0;
    let lo = k.floor();
    let hi = k.ceil();
    (lo as u64, hi as u64, k - lo)
}

/// Threshold under which the pairs of a key range are collected and sorted directly.
const SMALL: u64 = 1 << 16;
const BUCKET_BITS: u32 = 16;

/// Distribution of the multiset produced by `each`, which must call its argument with the same
/// `(value, count)` pairs (any order) every time it is invoked. Values must not be NaN.
pub fn weighted<F>(each: F) -> Dist
where
    F: Fn(&mut dyn FnMut(f64, u64)),
{
    let mut n: u64 = 0;
    let mut m: u64 = 0;
    let mut acc = Fsum::new();
    let mut kmin = u64::MAX;
    let mut kmax = 0u64;
    each(&mut |v: f64, c: u64| {
        if c == 0 {
            return;
        }
        n += c;
        m += 1;
        add_scaled(&mut acc, v, c);
        let k = key(v);
        kmin = kmin.min(k);
        kmax = kmax.max(k);
    });
    if n == 0 {
        return Dist::EMPTY;
    }
    let mean = acc.value() / n as f64;
    let r50 = rank(n, 50);
    let r90 = rank(n, 90);
    let r99 = rank(n, 99);
    let mut targets = [r50.0, r50.1, r90.0, r90.1, r99.0, r99.1, n - 1];
    let vals = select(&each, &mut targets, kmin, kmax, 0, m);
    let interp = |lo: f64, hi: f64, frac: f64| lo + (hi - lo) * frac;
    Dist {
        mean,
        p50: interp(vals[0], vals[1], r50.2),
        p90: interp(vals[2], vals[3], r90.2),
        p99: interp(vals[4], vals[5], r99.2),
        max: vals[6],
    }
}

/// Distribution of a plain sample.
pub fn dist(values: &[f64]) -> Dist {
    weighted(|f| {
        for &v in values {
            f(v, 1);
        }
    })
}

/// 50th and 99th percentiles of a plain sample.
pub fn p50_p99(values: &[f64]) -> P50P99 {
    let d = dist(values);
    P50P99 {
        p50: d.p50,
        p99: d.p99,
    }
}

/// Values at the given 0-based ranks of the sorted multiset, restricted to keys in
/// `[lo_key, hi_key]`, where `base` elements have keys below `lo_key` and `pairs` pairs fall in the
/// range.
fn select<F>(
    each: &F,
    ranks: &mut [u64],
    lo_key: u64,
    hi_key: u64,
    base: u64,
    pairs: u64,
) -> Vec<f64>
where
    F: Fn(&mut dyn FnMut(f64, u64)),
{
    let mut out = vec![f64::NAN; ranks.len()];
    if pairs <= SMALL || lo_key == hi_key {
        let mut v: Vec<(u64, u64)> = Vec::with_capacity(pairs.min(SMALL) as usize);
        each(&mut |x: f64, c: u64| {
            let k = key(x);
            if c > 0 && k >= lo_key && k <= hi_key {
                v.push((k, c));
            }
        });
        v.sort_unstable_by_key(|p| p.0);
        for (i, &r) in ranks.iter().enumerate() {
            let mut cum = base;
            for &(k, c) in &v {
                cum += c;
                if r < cum {
                    out[i] = unkey(k);
                    break;
                }
            }
        }
        return out;
    }
    let span = hi_key - lo_key;
    let bits = 64 - span.leading_zeros();
    let shift = bits.saturating_sub(BUCKET_BITS);
    let nb = ((span >> shift) + 1) as usize;
    let mut counts = vec![0u64; nb];
    let mut npairs = vec![0u64; nb];
    each(&mut |x: f64, c: u64| {
        let k = key(x);
        if c > 0 && k >= lo_key && k <= hi_key {
            let b = ((k - lo_key) >> shift) as usize;
            counts[b] += c;
            npairs[b] += 1;
        }
    });
    // Bucket of each rank, and the number of elements before that bucket.
    let mut where_: Vec<(usize, u64)> = Vec::with_capacity(ranks.len());
    for &r in ranks.iter() {
        let mut cum = base;
        let mut found = (nb - 1, cum);
        for (b, &c) in counts.iter().enumerate() {
            if r < cum + c {
                found = (b, cum);
                break;
            }
            cum += c;
        }
        where_.push(found);
    }
    let mut done = vec![false; ranks.len()];
    for i in 0..ranks.len() {
        if done[i] {
            continue;
        }
        let (b, before) = where_[i];
        let idx: Vec<usize> = (i..ranks.len()).filter(|&j| where_[j].0 == b).collect();
        let mut sub: Vec<u64> = idx.iter().map(|&j| ranks[j]).collect();
        let lo = lo_key + ((b as u64) << shift);
        let hi = if shift >= 64 {
            hi_key
        } else {
            (lo + ((1u64 << shift) - 1)).min(hi_key)
        };
        let vals = select(each, &mut sub, lo, hi, before, npairs[b]);
        for (t, &j) in idx.iter().enumerate() {
            out[j] = vals[t];
            done[j] = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pymath::{fmean, percentile};

    fn reference(xs: &[f64]) -> Dist {
        let mut s = xs.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        Dist {
            mean: fmean(xs),
            p50: percentile(&s, 50.0),
            p90: percentile(&s, 90.0),
            p99: percentile(&s, 99.0),
            max: s[s.len() - 1],
        }
    }

    #[test]
    fn matches_sorting_small_and_large() {
        let mut r = crate::pyrand::PyRandom::new(7);
        for n in [1usize, 2, 3, 10, 101, 5000, 200_000] {
            let xs: Vec<f64> = (0..n)
                .map(|i| {
                    let u = r.random();
                    if i % 97 == 0 {
                        u * 1e3
                    } else {
                        0.009 + u * 1e-3
                    }
                })
                .collect();
            assert_eq!(dist(&xs), reference(&xs), "n = {n}");
        }
    }

    #[test]
    fn weighted_equals_expanded() {
        let mut r = crate::pyrand::PyRandom::new(3);
        let pairs: Vec<(f64, u64)> = (0..70_000)
            .map(|_| (0.01 + r.random() * 0.002, 1 + r.getrandbits(8)))
            .collect();
        let mut xs = Vec::new();
        for &(v, c) in &pairs {
            for _ in 0..c {
                xs.push(v);
            }
        }
        let d = weighted(|f| {
            for &(v, c) in &pairs {
                f(v, c);
            }
        });
        assert_eq!(d, reference(&xs));
    }

    #[test]
    fn empty_is_nan() {
        let d = dist(&[]);
        assert!(d.mean.is_nan() && d.p50.is_nan() && d.max.is_nan());
    }

    #[test]
    fn negative_and_zero_values() {
        let xs = [3.0, -1.0, 0.0, 2.5, -7.25, 0.0, 1e-300];
        assert_eq!(dist(&xs), reference(&xs));
    }
}
