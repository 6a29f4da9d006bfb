//! Exact distribution summaries (`docs/exactness.md#percentiles`) of multisets given as `(value, count)` pairs,
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
    // c copies of one zero sum to that zero: one is enough (speculative decoding's ITLs are
    // mostly zeros, counted in the thousands).
    if c == 1 || v == 0.0 {
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

    /// The spec's percentile (`docs/exactness.md#percentiles`) of an ascending slice written out by hand:
    /// `k = ((n - 1) * p) / 100`, `s[lo] + (s[hi] - s[lo]) * (k - lo)`.
    fn spec_pct(s: &[f64], p: u64) -> f64 {
        let k = ((s.len() as u64 - 1) * p) as f64 / 100.0;
        let (lo, hi) = (k.floor(), k.ceil());
        s[lo as usize] + (s[hi as usize] - s[lo as usize]) * (k - lo)
    }

    #[test]
    fn hand_percentiles_with_exact_fractions() {
        // 26 values i^2, i = 0..=25, in a scrambled order (i * 7 mod 26; gcd(7, 26) = 1).
        // n - 1 = 25, so every rank has a dyadic fraction:
        //   p50: k = 25*50/100 = 12.5  -> 144 + (169 - 144) * 0.5  = 156.5
        //   p90: k = 25*90/100 = 22.5  -> 484 + (529 - 484) * 0.5  = 506.5
        //   p99: k = 25*99/100 = 24.75 -> 576 + (625 - 576) * 0.75 = 612.75
        // mean = (25*26*51/6) / 26 = 5525 / 26 = 212.5, max = 625.
        let xs: Vec<f64> = (0..26u64)
            .map(|i| ((i * 7) % 26) as f64)
            .map(|i| i * i)
            .collect();
        let d = dist(&xs);
        assert_eq!(
            d,
            Dist {
                mean: 212.5,
                p50: 156.5,
                p90: 506.5,
                p99: 612.75,
                max: 625.0
            }
        );
        assert_eq!(
            p50_p99(&xs),
            P50P99 {
                p50: 156.5,
                p99: 612.75
            }
        );
    }

    #[test]
    fn hand_small_samples() {
        // One value: every statistic is that value.
        let one = Dist {
            mean: 2.5,
            p50: 2.5,
            p90: 2.5,
            p99: 2.5,
            max: 2.5,
        };
        assert_eq!(dist(&[2.5]), one);
        // Two values 1 and 3 (given as 3, 1): k = 0.5, 0.9, 0.99 -> 1 + 2 * frac.
        let d = dist(&[3.0, 1.0]);
        assert_eq!(d.mean, 2.0);
        assert_eq!(d.p50, 2.0);
        assert_eq!(d.p90, 1.0 + 2.0 * 0.9);
        assert_eq!(d.p99, 1.0 + 2.0 * 0.99);
        assert_eq!(d.max, 3.0);
        // Negative numbers, both zeros and a tiny value, sorted by hand:
        // [-7.25, -1, -0.0, 0, 1e-300, 2.5, 3]; n - 1 = 6: k = 3, 5.4, 5.94.
        let xs = [3.0, -1.0, 0.0, 2.5, -7.25, -0.0, 1e-300];
        let s = [-7.25, -1.0, -0.0, 0.0, 1e-300, 2.5, 3.0];
        let d = dist(&xs);
        assert_eq!(d.p50.to_bits(), 0.0f64.to_bits());
        assert_eq!(d.p90, spec_pct(&s, 90));
        assert_eq!(d.p90, 2.5 + 0.5 * (5.4 - 5.0));
        assert_eq!(d.p99, spec_pct(&s, 99));
        assert_eq!(d.max, 3.0);
        // fsum = 3 - 1 + 2.5 - 7.25 + 1e-300 = -2.75 + 1e-300, rounded -2.75; / 7.
        assert_eq!(d.mean, -2.75 / 7.0);
        // All negative: the largest is the one closest to zero.
        let d = dist(&[-4.0, -2.0, -8.0]);
        assert_eq!((d.p50, d.max, d.mean), (-4.0, -2.0, -14.0 / 3.0));
        assert_eq!(d.p90, -4.0 + 2.0 * (1.8 - 1.0));
    }

    #[test]
    fn weighted_counts_hand() {
        // Multiset {1, 1, 1, 5, 5}: pairs given out of order, with a zero-count pair that must be
        // ignored. n - 1 = 4: p50 k = 2 -> 1; p90 k = 3.6 -> 5; p99 k = 3.96 -> 5.
        // mean = (3 + 10) / 5 = 2.6.
        let d = weighted(|f| {
            f(5.0, 2);
            f(100.0, 0);
            f(1.0, 3);
        });
        assert_eq!(
            d,
            Dist {
                mean: 13.0 / 5.0,
                p50: 1.0,
                p90: 5.0,
                p99: 5.0,
                max: 5.0
            }
        );
        // Only zero counts: empty.
        let d = weighted(|f| f(1.0, 0));
        assert!(d.mean.is_nan() && d.p50.is_nan() && d.p90.is_nan() && d.p99.is_nan());
        assert!(d.max.is_nan());
        // {2, 4, 4, 4}: p50 k = 1.5 -> 4, p90 k = 2.7, p99 k = 2.97 -> 4; mean 14 / 4.
        let d = weighted(|f| {
            f(4.0, 3);
            f(2.0, 1);
        });
        assert_eq!((d.mean, d.p50, d.p90, d.max), (3.5, 4.0, 4.0, 4.0));
    }

    #[test]
    fn weighted_mean_is_exact() {
        // Python: math.fsum([0.1]*3 + [8589934591.9]*3) / 6 == 4294967296.0, while the naive
        // (0.1*3 + 8589934591.9*3) / 6 == 4294967295.9999995: the scaled products must be exact.
        let d = weighted(|f| {
            f(0.1, 3);
            f(8_589_934_591.9, 3);
        });
        assert_eq!(d.mean, 4_294_967_296.0);
        assert_eq!(d.max, 8_589_934_591.9);
        // Python: math.fsum([0.1]*3 + [0.2]*3) / 6 == 0.15 (naive: 0.15000000000000002).
        let d = weighted(|f| {
            f(0.1, 3);
            f(0.2, 3);
        });
        assert_eq!(d.mean, 0.15);
        // Huge and infinite values take the plain (repeated) additions (the split would overflow:
        // 1e305 * 134217729 = inf): fsum([1e305]*2 + [1]*2) = 2e305 (the ones vanish), / 4;
        // fsum([inf]*2) = inf.
        let d = weighted(|f| {
            f(1e305, 2);
            f(1.0, 2);
        });
        assert_eq!(d.mean, 1e305 / 2.0);
        assert_eq!(d.max, 1e305);
        let d = weighted(|f| f(f64::INFINITY, 2));
        assert_eq!(d.mean, f64::INFINITY);
        // The spec's formula gives inf + (inf - inf) * 0 = NaN, as the reference does.
        assert!(d.p50.is_nan());
        assert_eq!(d.max, f64::INFINITY);
    }

    #[test]
    fn bucketed_ranks_of_a_large_sample() {
        // 70_026 distinct integers 0..=70_025 (more than SMALL pairs, so the bucket histogram is
        // used), in a scrambled order (i * 7919 mod 70_026; 7919 is prime and does not divide
        // 70_026 = 2 * 3 * 11 * 1061). Sorted, s[i] = i, so each percentile is its rank k:
        //   n - 1 = 70_025: p50 k = 35_012.5, p90 k = 63_022.5, p99 k = 69_324.75.
        // mean = 70_025 / 2 = 35_012.5, max = 70_025.
        let n = 70_026u64;
        let xs: Vec<f64> = (0..n).map(|i| ((i * 7919) % n) as f64).collect();
        assert_eq!(
            dist(&xs),
            Dist {
                mean: 35_012.5,
                p50: 35_012.5,
                p90: 63_022.5,
                p99: 69_324.75,
                max: 70_025.0
            }
        );
        // Negative copies: the order reverses. Sorted s[i] = i - 70_025, so the percentile at k
        // is k - 70_025; the max is 0 (as -0.0 from -(0.0)).
        let neg: Vec<f64> = xs.iter().map(|&x| -x).collect();
        let d = dist(&neg);
        assert_eq!(d.mean, -35_012.5);
        assert_eq!(d.p50, 35_012.5 - 70_025.0);
        assert_eq!(d.p90, 63_022.5 - 70_025.0);
        assert_eq!(d.p99, 69_324.75 - 70_025.0);
        assert_eq!(d.max, 0.0);
    }

    #[test]
    fn bucketed_weighted_pairs() {
        // 70_013 pairs (i + 0.5, 2), i = 0..70_013, so the multiset has n = 140_026 values and
        // sorted s[j] = floor(j / 2) + 0.5. n - 1 = 140_025:
        //   p50 k = 70_012.5  -> s[70_012] = s[70_013] = 35_006.5
        //   p90 k = 126_022.5 -> s[126_022] = s[126_023] = 63_011.5
        //   p99 k = 138_624.75 -> s[138_624] = s[138_625] = 69_312.5
        // mean = (70_012 / 2) + 0.5 = 35_006.5, max = 70_012.5.
        let m = 70_013u64;
        let d = weighted(|f| {
            for i in 0..m {
                f(((i * 7919) % m) as f64 + 0.5, 2);
            }
        });
        assert_eq!(
            d,
            Dist {
                mean: 35_006.5,
                p50: 35_006.5,
                p90: 63_011.5,
                p99: 69_312.5,
                max: 70_012.5
            }
        );
    }

    #[test]
    fn many_copies_of_one_value() {
        // 70_000 pairs with the same value (one key, more than SMALL pairs): every statistic is
        // that value.
        let d = weighted(|f| {
            for _ in 0..70_000 {
                f(1.5, 1);
            }
        });
        assert_eq!(
            d,
            Dist {
                mean: 1.5,
                p50: 1.5,
                p90: 1.5,
                p99: 1.5,
                max: 1.5
            }
        );
    }

    #[test]
    fn nested_buckets_with_far_outliers() {
        // 70_000 consecutive doubles from 1.0 (1 + i * 2^-52) plus 1e-10 and 1e10: the top-level
        // histogram puts all 70_000 in one bucket, so that bucket is histogrammed again, with
        // keys on both sides of its range. Sorted by construction: [1e-10, 1 + i * 2^-52 ..., 1e10].
        let one = 1.0f64.to_bits();
        let run: Vec<f64> = (0..70_000u64).map(|i| f64::from_bits(one + i)).collect();
        let mut sorted = vec![1e-10];
        sorted.extend_from_slice(&run);
        sorted.push(1e10);
        // Given in a scrambled order: the outliers in the middle, the run reversed.
        let mut xs: Vec<f64> = run.iter().rev().copied().collect();
        xs.insert(30_000, 1e10);
        xs.insert(50_000, 1e-10);
        let d = dist(&xs);
        assert_eq!(d.p50, spec_pct(&sorted, 50));
        assert_eq!(d.p90, spec_pct(&sorted, 90));
        assert_eq!(d.p99, spec_pct(&sorted, 99));
        assert_eq!(d.max, 1e10);
        assert_eq!(d.mean, fmean(&sorted));
        // n - 1 = 70_001: p50 k = 35_000.5 lies between 1 + 34_999 ulp and 1 + 35_000 ulp.
        assert!(d.p50 > f64::from_bits(one + 34_999) && d.p50 <= f64::from_bits(one + 35_000));
    }

    #[test]
    fn negative_and_zero_values() {
        let xs = [3.0, -1.0, 0.0, 2.5, -7.25, 0.0, 1e-300];
        assert_eq!(dist(&xs), reference(&xs));
    }
}
