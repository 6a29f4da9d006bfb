//! Exact reimplementations of the Python numeric helpers the reference simulator relies on.
//!
//! Everything here reproduces CPython (3.11/3.12) results bit for bit:
//! [`round_half_even`] is `round(float)`, [`fsum`]/[`Fsum`] are `math.fsum`, [`fmean`] is
//! `statistics.fmean`, [`py_floordiv`] is float `//`, [`cbrt_py`] is the cost model's cube root
//! (`docs/cost-model.md` N5), [`percentile`] is the simulator's linear percentile (`docs/exactness.md#percentiles`),
//! [`bit_length`], [`pow2_at_least`], [`rfft_flops`], [`ipow`] are the helpers of `docs/cost-model.md` N9,
//! and [`neumaier_sum`] is CPython 3.12's builtin `sum()` of floats (`docs/exactness.md#fsum`).

/// Python `round(x)` for a float: round half to even, returned as a float holding an integer.
#[inline]
pub fn round_half_even(x: f64) -> f64 {
    x.round_ties_even()
}

/// Correctly rounded sum of `xs`, identical to CPython's `math.fsum` (Shewchuk partials followed by
/// CPython's half-even correction across partials).
///
/// Differences from CPython, which raises instead: `-inf + inf` gives NaN, and an intermediate
/// overflow of finite inputs gives the overflowed infinity (CPython: `OverflowError`).
/// The empty sum and sums of zeros are `+0.0`, as in CPython.
pub fn fsum(xs: &[f64]) -> f64 {
    let mut acc = Fsum::new();
    for &x in xs {
        acc.add(x);
    }
    acc.value()
}

/// `statistics.fmean(xs)` = `fsum(xs) / len(xs)`. Empty input gives NaN (Python raises).
pub fn fmean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    fsum(xs) / xs.len() as f64
}

/// Incremental exact summation: feeding values one at a time with [`Fsum::add`] and reading
/// [`Fsum::value`] gives exactly `math.fsum` of the values added so far.
#[derive(Clone, Debug, Default)]
pub struct Fsum {
    /// Non-overlapping partials, increasing magnitude (CPython's `p[0..n]`).
    partials: Vec<f64>,
    /// Sum of the non-finite inputs (CPython's `special_sum`).
    special_sum: f64,
    /// Sum of the infinite inputs (CPython's `inf_sum`), NaN iff `-inf + inf` occurred.
    inf_sum: f64,
    /// Set when finite inputs overflowed an intermediate partial; holds that infinity.
    overflow: Option<f64>,
    /// Number of values added.
    count: usize,
}

impl Fsum {
    /// An empty accumulator (value `0.0`).
    pub fn new() -> Self {
        Fsum {
            partials: Vec::with_capacity(32),
            special_sum: 0.0,
            inf_sum: 0.0,
            overflow: None,
            count: 0,
        }
    }

    /// Number of values added so far.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True if nothing has been added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Add one value (CPython's loop body of `math.fsum`).
    pub fn add(&mut self, x: f64) {
        self.count += 1;
        if self.overflow.is_some() {
            return;
        }
        let xsave = x;
        let mut x = x;
        let p = &mut self.partials;
        let mut i = 0;
        for j in 0..p.len() {
            let mut y = p[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let yr = hi - x;
            let lo = y - yr;
            if lo != 0.0 {
                p[i] = lo;
                i += 1;
            }
            x = hi;
        }
        p.truncate(i);
        if x != 0.0 {
            if !x.is_finite() {
                if xsave.is_finite() {
                    // CPython raises OverflowError("intermediate overflow in fsum").
                    self.overflow = Some(x);
                    return;
                }
                if xsave.is_infinite() {
                    self.inf_sum += xsave;
                }
                self.special_sum += xsave;
                p.clear();
            } else {
                p.push(x);
            }
        }
    }

    /// The correctly rounded sum of everything added so far (same result as `math.fsum`).
    pub fn value(&self) -> f64 {
        if let Some(inf) = self.overflow {
            return inf;
        }
        if self.special_sum != 0.0 {
            if self.inf_sum.is_nan() {
                // CPython raises ValueError("-inf + inf in fsum").
                return f64::NAN;
            }
            return self.special_sum;
        }
        let p = &self.partials;
        let mut n = p.len();
        let mut hi = 0.0;
        if n > 0 {
            n -= 1;
            hi = p[n];
            let mut lo = 0.0;
            while n > 0 {
                let x = hi;
                n -= 1;
                let y = p[n];
                hi = x + y;
                let yr = hi - x;
                lo = y - yr;
                if lo != 0.0 {
                    break;
                }
            }
            // Half-even rounding across multiple partials (CPython's fix-up step).
            if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
                let y = lo * 2.0;
                let x = hi + y;
                let yr = x - hi;
                if y == yr {
                    hi = x;
                }
            }
        }
        hi
    }

    /// `value() / len()`, i.e. `statistics.fmean` of the values added (NaN if empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        self.value() / self.count as f64
    }
}

impl Extend<f64> for Fsum {
    fn extend<T: IntoIterator<Item = f64>>(&mut self, iter: T) {
        for x in iter {
            self.add(x);
        }
    }
}

impl FromIterator<f64> for Fsum {
    fn from_iter<T: IntoIterator<Item = f64>>(iter: T) -> Self {
        let mut acc = Fsum::new();
        acc.extend(iter);
        acc
    }
}

/// CPython `divmod(a, b)` for floats: `(a // b, a % b)` (`docs/cost-model.md` N6).
///
/// `b == 0` raises `ZeroDivisionError` in Python; here it yields `(a / b, NaN)`.
pub fn py_divmod(a: f64, b: f64) -> (f64, f64) {
    if b == 0.0 {
        return (a / b, f64::NAN);
    }
    let mut m = a % b; // C fmod
    let mut div = (a - m) / b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(b);
    }
    let floordiv = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(a / b)
    };
    (floordiv, m)
}

/// CPython float floor division `a // b` (`docs/cost-model.md` N6). `py_floordiv(1.0, 0.1) == 9.0`.
///
/// `b == 0` raises in Python; here it returns `a / b` (±inf or NaN).
#[inline]
pub fn py_floordiv(a: f64, b: f64) -> f64 {
    py_divmod(a, b).0
}

/// CPython float modulo `a % b` (result has the sign of `b`). `b == 0` gives NaN.
#[inline]
pub fn py_mod(a: f64, b: f64) -> f64 {
    py_divmod(a, b).1
}

/// The cost model's cube root: `copysign(pow(|x|, 1/3), x)` with the platform libm `pow`
/// (`docs/cost-model.md` N5). Deliberately not `f64::cbrt`.
#[inline]
pub fn cbrt_py(x: f64) -> f64 {
    x.abs().powf(1.0 / 3.0).copysign(x)
}

/// Linear-interpolation percentile of an ascending-sorted slice (`docs/exactness.md#percentiles`, `docs/cost-model.md`
/// Appendix C): `k = ((n-1)*p)/100`, `lo = floor(k)`, `hi = ceil(k)`,
/// value `s[lo] + (s[hi] - s[lo]) * (k - lo)`. Empty input gives NaN.
///
/// `p` is normally a whole number (50, 90, 99); `(n-1) as f64 * p` is then the exact integer
/// product (for `(n-1)*p < 2^53`), matching the reference's integer multiplication.
/// Indices are clamped to the slice, so `p` outside `[0, 100]` gives the first/last element
/// (Python would index out of range or wrap).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let k = ((n - 1) as f64 * p) / 100.0;
    let lo_f = k.floor();
    let hi_f = k.ceil();
    let lo = (lo_f.max(0.0) as usize).min(n - 1);
    let hi = (hi_f.max(0.0) as usize).min(n - 1);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (k - lo_f)
}

/// Nearest-rank percentile of an ascending-sorted slice, as in `/work/shared/traces/compute_stats.py`:
/// rank `max(1, ceil(p / 100.0 * n))` (1-based, also clamped to `n`), returning an actual element.
/// Empty input gives NaN.
pub fn percentile_nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let r = (p / 100.0 * n as f64).ceil();
    let k = if r.is_nan() || r < 1.0 {
        1
    } else if r >= n as f64 {
        n
    } else {
        r as usize
    };
    sorted[k - 1]
}

/// Python `int.bit_length()` for a non-negative integer (`bit_length(0) == 0`).
#[inline]
pub fn bit_length(n: u64) -> u32 {
    u64::BITS - n.leading_zeros()
}

/// `1 << bit_length(n - 1)`: the smallest power of two `>= n` for `n >= 1`
/// (`pow2_at_least(1) == 1`, `(2048) == 2048`, `(2049) == 4096`). Like Python,
/// `pow2_at_least(0) == 2` (because `(-1).bit_length() == 1`). Panics on overflow (`n > 2^63`).
#[inline]
pub fn pow2_at_least(n: u64) -> u64 {
    let bits = if n == 0 { 1 } else { bit_length(n - 1) };
    1u64.checked_shl(bits)
        .expect("pow2_at_least: result does not fit in u64")
}

/// FLOPs of a real FFT of length `n`: `(2.5 * n) * (bit_length(n) - 1)` with the logarithm an exact
/// integer (`docs/cost-model.md` N9).
#[inline]
pub fn rfft_flops(n: u64) -> f64 {
    (2.5 * n as f64) * ((bit_length(n) as i64 - 1) as f64)
}

/// CPython 3.12's builtin `sum()` of floats (`docs/exactness.md#fsum`): Neumaier-compensated.
/// The integer start `0` plus the first value gives `f` (so a lone `-0.0` sums to `+0.0`, as in
/// CPython), `c = 0.0`; for each further `x`: `t = f + x`, `c += (f - t) + x` if `|f| >= |x|`
/// else `(x - t) + f`, `f = t`; at the end `f += c` if `c` is non-zero and finite. The empty sum
/// is `0.0`. (CPython 3.11 adds plainly; the two differ in the last bits.)
pub fn neumaier_sum(xs: impl IntoIterator<Item = f64>) -> f64 {
    let mut it = xs.into_iter();
    let Some(x0) = it.next() else {
        return 0.0;
    };
    let mut f = 0.0 + x0;
    let mut c = 0.0;
    for x in it {
        let t = f + x;
        if f.abs() >= x.abs() {
            c += (f - t) + x;
        } else {
            c += (x - t) + f;
        }
        f = t;
    }
    if c != 0.0 && c.is_finite() {
        f += c;
    }
    f
}

/// `fl(N)`: the double nearest to the integer `x` (ties to even), as Python converts an int that
/// meets a float. The same value as `x as f64`, through the one-instruction `i64` conversion
/// whenever `x` fits (the `i128` one is a software routine).
#[inline(always)]
pub fn fl(x: i128) -> f64 {
    match i64::try_from(x) {
        Ok(v) => v as f64,
        Err(_) => x as f64,
    }
}

/// `x` to the integer power `n` by binary exponentiation, low bit first from `r = 1.0`
/// (`docs/cost-model.md` N9 `ipow`): while `n`: if `n` is odd `r *= x`; `x *= x`; `n >>= 1`.
pub fn ipow(mut x: f64, mut n: u64) -> f64 {
    let mut r = 1.0;
    while n != 0 {
        if n & 1 == 1 {
            r *= x;
        }
        x *= x;
        n >>= 1;
    }
    r
}

/// Python's `int / int` for non-negative integers (`docs/exactness.md#integer-flops` R1): the correctly rounded
/// double of the exact rational `a / b`. The quotient is taken with at least 55 significant bits,
/// its last bit forced to 1 when anything was discarded (round to odd), and then rounded once to
/// 53 bits by the `u128 -> f64` conversion: the same result as rounding the exact rational.
pub fn int_div(a: i128, b: i128) -> f64 {
    assert!(a >= 0 && b > 0, "int_div needs a >= 0 and b > 0");
    if a == 0 {
        return 0.0;
    }
    // Both exactly representable: one IEEE division is the correctly rounded quotient.
    const EXACT: i128 = 1 << 53;
    if a <= EXACT && b <= EXACT {
        return (a as i64) as f64 / (b as i64) as f64;
    }
    let (a, b) = (a as u128, b as u128);
    let bits = |x: u128| 128 - x.leading_zeros() as i32;
    // Shift so that the quotient has 55 or 56 bits.
    let s = 56 - (bits(a) - bits(b));
    let (q, r) = if s >= 0 {
        // Long division, one quotient bit per step: `a << s` could overflow when `a` and `b`
        // are both wide, `r << 1` cannot (`r < b < 2^127`).
        let (mut q, mut r) = (a / b, a % b);
        for _ in 0..s {
            q <<= 1;
            r <<= 1;
            if r >= b {
                q |= 1;
                r -= b;
            }
        }
        (q, r)
    } else {
        let den = b << (-s);
        (a / den, a % den)
    };
    let q = if r != 0 { q | 1 } else { q };
    (q as f64) * (2.0f64).powi(-s)
}
