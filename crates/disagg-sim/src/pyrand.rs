//! A bit-exact port of the parts of CPython's `random` module the reference simulator uses
//! (`docs/serving-model.md#arrivals`): the MT19937 generator seeded like `random.Random(int)`, `random()`,
//! `expovariate`, `normalvariate` (Kinderman–Monahan), `lognormvariate`, `getrandbits`,
//! `randrange`, plus the workload's [`LengthDist`] and [`poisson_workload`].
//!
//! Logarithms and exponentials use std `f64::ln`/`f64::exp`, which call the platform libm
//! (glibc on `*-linux-gnu`, the same functions CPython's `math.log`/`math.exp` use).

use crate::pymath::round_half_even;

/// MT19937 state size in 32-bit words.
const N: usize = 624;
/// MT19937 shift size.
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// `4 * exp(-0.5) / sqrt(2.0)` (CPython's `NV_MAGICCONST`), `1.7155277699214135`.
#[inline]
pub fn nv_magicconst() -> f64 {
    4.0 * (-0.5f64).exp() / 2.0f64.sqrt()
}

/// CPython-compatible pseudo-random generator (`random.Random`): Mersenne Twister MT19937.
#[derive(Clone, Debug)]
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
    random_calls: u64,
    nv_magic: f64,
}

impl PyRandom {
    /// Seed exactly like `random.Random(seed)` for a non-negative Python int: the seed's 32-bit
    /// words, least significant first, at least one word, passed to `init_by_array`.
    pub fn new(seed: u64) -> Self {
        let lo = seed as u32;
        let hi = (seed >> 32) as u32;
        if hi == 0 {
            Self::from_key(&[lo])
        } else {
            Self::from_key(&[lo, hi])
        }
    }

    /// Seed like `random.Random(seed)` for a possibly negative int (CPython uses `abs(seed)`).
    pub fn new_signed(seed: i64) -> Self {
        Self::new(seed.unsigned_abs())
    }

    /// Seed with MT19937's `init_by_array(key)`. An empty key is treated as `[0]`
    /// (CPython always passes at least one word).
    pub fn from_key(key: &[u32]) -> Self {
        let key: &[u32] = if key.is_empty() { &[0] } else { key };
        let mut mt = [0u32; N];
        // init_genrand(19650218)
        mt[0] = 19_650_218;
        for i in 1..N {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        let mut i = 1usize;
        let mut j = 0usize;
        for _ in 0..N.max(key.len()) {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        PyRandom {
            mt,
            index: N,
            random_calls: 0,
            nv_magic: nv_magicconst(),
        }
    }

    /// Regenerate the 624-word block in place.
    #[cold]
    fn twist(&mut self) {
        #[inline(always)]
        fn mag(y: u32) -> u32 {
            (y >> 1) ^ (if y & 1 != 0 { MATRIX_A } else { 0 })
        }
        let mt = &mut self.mt;
        for kk in 0..N - M {
            let y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
            mt[kk] = mt[kk + M] ^ mag(y);
        }
        for kk in N - M..N - 1 {
            let y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
            mt[kk] = mt[kk + M - N] ^ mag(y);
        }
        let y = (mt[N - 1] & UPPER_MASK) | (mt[0] & LOWER_MASK);
        mt[N - 1] = mt[M - 1] ^ mag(y);
        self.index = 0;
    }

    /// One tempered 32-bit output (`genrand_uint32`).
    #[inline]
    pub fn genrand_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random()`: a 53-bit float in [0, 1) from two 32-bit outputs.
    #[inline]
    pub fn random(&mut self) -> f64 {
        self.random_calls += 1;
        let a = self.genrand_u32() >> 5;
        let b = self.genrand_u32() >> 6;
        (a as f64 * 67_108_864.0 + b as f64) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// Number of `random()` calls made so far (each consumes two 32-bit outputs).
    #[inline]
    pub fn random_calls(&self) -> u64 {
        self.random_calls
    }

    /// `uniform(a, b)` = `a + (b - a) * random()`.
    #[inline]
    pub fn uniform(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.random()
    }

    /// `expovariate(lambd)` = `-log(1.0 - random()) / lambd`.
    #[inline]
    pub fn expovariate(&mut self, lambd: f64) -> f64 {
        -(1.0 - self.random()).ln() / lambd
    }

    /// `normalvariate(mu, sigma)`: Kinderman–Monahan ratio of uniforms, two `random()` per try.
    #[inline]
    pub fn normalvariate(&mut self, mu: f64, sigma: f64) -> f64 {
        let z = loop {
            let u1 = self.random();
            let u2 = 1.0 - self.random();
            let z = self.nv_magic * (u1 - 0.5) / u2;
            let zz = z * z / 4.0;
            if zz <= -u2.ln() {
                break z;
            }
        };
        mu + z * sigma
    }

    /// `lognormvariate(mu, sigma)` = `exp(normalvariate(mu, sigma))`.
    #[inline]
    pub fn lognormvariate(&mut self, mu: f64, sigma: f64) -> f64 {
        self.normalvariate(mu, sigma).exp()
    }

    /// `getrandbits(k)` for `k <= 64`: `k == 0` gives 0 with no draw; `k <= 32` is one output
    /// shifted right by `32 - k`; larger `k` takes the low word first, then the high word shifted
    /// right by `64 - k` (CPython's word order).
    ///
    /// # Panics
    /// If `k > 64`.
    #[inline]
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        assert!(k <= 64, "getrandbits: k = {k} > 64 is not supported");
        if k == 0 {
            0
        } else if k <= 32 {
            (self.genrand_u32() >> (32 - k)) as u64
        } else {
            let lo = self.genrand_u32() as u64;
            let hi = (self.genrand_u32() >> (64 - k)) as u64;
            lo | (hi << 32)
        }
    }

    /// `randrange(n)`: uniform in `[0, n)` by rejection, exactly like CPython's
    /// `_randbelow_with_getrandbits` (`k = n.bit_length()`, redraw `getrandbits(k)` while `>= n`).
    ///
    /// # Panics
    /// If `n == 0` (CPython raises `ValueError: empty range for randrange()`).
    #[inline]
    pub fn randrange(&mut self, n: u64) -> u64 {
        assert!(n > 0, "empty range for randrange()");
        let k = crate::pymath::bit_length(n);
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }
}

/// Log-normal length distribution of the reference workload (`LengthDist(mean, cv, lo=1, hi=32768)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LengthDist {
    /// Mean length in tokens.
    pub mean: f64,
    /// Coefficient of variation; `<= 0` means the constant `mean` (no RNG draw).
    pub cv: f64,
    /// Lower clip bound (applied after rounding).
    pub lo: i64,
    /// Upper clip bound (applied after rounding).
    pub hi: i64,
}

impl LengthDist {
    /// Default lower bound (`lo=1`).
    pub const DEFAULT_LO: i64 = 1;
    /// Default upper bound (`hi=32768`).
    pub const DEFAULT_HI: i64 = 32768;

    /// `LengthDist(mean, cv)` with the default bounds `[1, 32768]`.
    pub fn new(mean: f64, cv: f64) -> Self {
        LengthDist {
            mean,
            cv,
            lo: Self::DEFAULT_LO,
            hi: Self::DEFAULT_HI,
        }
    }

    /// `LengthDist(mean, cv, lo, hi)`.
    pub fn with_bounds(mean: f64, cv: f64, lo: i64, hi: i64) -> Self {
        LengthDist { mean, cv, lo, hi }
    }

    /// `sigma2 = log(1 + cv*cv)`.
    pub fn sigma2(&self) -> f64 {
        (1.0 + self.cv * self.cv).ln()
    }

    /// Log-normal parameters `(mu, sigma) = (log(mean) - sigma2/2, sqrt(sigma2))`.
    pub fn mu_sigma(&self) -> (f64, f64) {
        let sigma2 = self.sigma2();
        (self.mean.ln() - sigma2 / 2.0, sigma2.sqrt())
    }

    /// The unrounded draw `x`: `mean` if `cv <= 0` (no RNG call), else
    /// `lognormvariate(log(mean) - sigma2/2, sqrt(sigma2))`.
    #[inline]
    pub fn sample_raw(&self, rng: &mut PyRandom) -> f64 {
        if self.cv <= 0.0 {
            self.mean
        } else {
            let (mu, sigma) = self.mu_sigma();
            rng.lognormvariate(mu, sigma)
        }
    }

    /// Python's `int(min(hi, max(lo, round(x))))`: round half to even, then clip to `[lo, hi]`.
    #[inline]
    pub fn round_clip(&self, x: f64) -> i64 {
        let r = round_half_even(x);
        if r < self.lo as f64 {
            self.lo
        } else if r > self.hi as f64 {
            self.hi
        } else {
            r as i64
        }
    }

    /// `sample(rng)`: `round_clip(sample_raw(rng))`.
    #[inline]
    pub fn sample(&self, rng: &mut PyRandom) -> i64 {
        self.round_clip(self.sample_raw(rng))
    }
}

/// One generated request of [`poisson_workload`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenRequest {
    /// Request id (`0..n`, in arrival order).
    pub rid: usize,
    /// Arrival time in seconds.
    pub arrival_s: f64,
    /// Prompt length in tokens.
    pub prompt_len: u32,
    /// Output length in tokens.
    pub output_len: u32,
}

/// `poisson_workload(rate, n, prompt, output, seed)`: one `Random(seed)`; `t = 0.0`; per request,
/// in this order: `t = t + expovariate(rate)`, `prompt.sample`, `output.sample`.
///
/// # Panics
/// If a sampled length does not fit in `u32` (only possible with negative `lo` or huge `hi`).
pub fn poisson_workload(
    rate: f64,
    n: usize,
    prompt: &LengthDist,
    output: &LengthDist,
    seed: u64,
) -> Vec<GenRequest> {
    let mut rng = PyRandom::new(seed);
    poisson_workload_with(&mut rng, rate, n, prompt, output)
}

/// [`poisson_workload`] drawing from a caller-supplied generator (so its state and
/// [`PyRandom::random_calls`] can be inspected afterwards).
pub fn poisson_workload_with(
    rng: &mut PyRandom,
    rate: f64,
    n: usize,
    prompt: &LengthDist,
    output: &LengthDist,
) -> Vec<GenRequest> {
    let to_u32 = |v: i64| u32::try_from(v).expect("sampled length does not fit in u32");
    let mut out = Vec::with_capacity(n);
    let mut t = 0.0f64;
    for rid in 0..n {
        t += rng.expovariate(rate);
        let p = prompt.sample(rng);
        let o = output.sample(rng);
        out.push(GenRequest {
            rid,
            arrival_s: t,
            prompt_len: to_u32(p),
            output_len: to_u32(o),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parse a normal positive `float.hex()` string such as `0x1.278212cba49f0p-6`.
    fn hexf(s: &str) -> f64 {
        let s = s.strip_prefix("0x1.").expect("0x1. prefix");
        let (mant, exp) = s.split_once('p').expect("p exponent");
        let mant = u64::from_str_radix(mant, 16).unwrap();
        assert_eq!(s.split_once('p').unwrap().0.len(), 13);
        let exp: i64 = exp.parse().unwrap();
        f64::from_bits((((exp + 1023) as u64) << 52) | mant)
    }

    fn seed1_workload() -> (Vec<GenRequest>, u64) {
        let mut rng = PyRandom::new(1);
        let w = poisson_workload_with(
            &mut rng,
            8.0,
            800,
            &LengthDist::new(2048.0, 0.5),
            &LengthDist::new(256.0, 0.5),
        );
        (w, rng.random_calls())
    }

    #[test]
    fn nv_magicconst_value() {
        assert_eq!(nv_magicconst(), 1.7155277699214135);
    }

    #[test]
    fn random1_u32_outputs() {
        let mut r = PyRandom::new(1);
        let got: Vec<u32> = (0..5).map(|_| r.genrand_u32()).collect();
        assert_eq!(
            got,
            [577090037, 2444712010, 3639700191, 3445702192, 3280387012]
        );
    }

    #[test]
    fn random1_random_values() {
        let mut r = PyRandom::new(1);
        let exp = [
            0.13436424411240122,
            0.8474337369372327,
            0.763774618976614,
            0.2550690257394217,
            0.49543508709194095,
        ];
        for e in exp {
            assert_eq!(r.random(), e);
        }
        assert_eq!(r.random_calls(), 5);
    }

    #[test]
    fn random0_random_values() {
        let mut r = PyRandom::new(0);
        assert_eq!(r.random(), 0.8444218515250481);
        assert_eq!(r.random(), 0.7579544029403025);
        assert_eq!(r.random(), 0.420571580830845);
        assert_eq!(PyRandom::from_key(&[]).random(), 0.8444218515250481);
        assert_eq!(PyRandom::new_signed(-1).random(), 0.13436424411240122);
    }

    #[test]
    fn cpython_multiword_seeds_and_regeneration() {
        // Values from CPython 3.11's random module.
        let mut r = PyRandom::new(12345678901234567890);
        assert_eq!(r.random(), 0.5120180983871961);
        assert_eq!(r.random(), 0.9318805526703359);
        assert_eq!(r.random(), 0.6423121128048344);

        let mut r = PyRandom::new(u64::MAX);
        assert_eq!(r.getrandbits(32), 93740670);
        assert_eq!(r.getrandbits(32), 1068495656);
        assert_eq!(r.getrandbits(32), 1452108352);
        assert_eq!(r.random(), 0.6187512294349632);

        let mut r = PyRandom::new(1 << 32);
        let got: Vec<u64> = (0..3).map(|_| r.getrandbits(32)).collect();
        assert_eq!(got, [485306839, 1508871100, 1794561286]);

        // Crosses several 624-word regenerations.
        let mut r = PyRandom::new(0);
        for _ in 0..1000 {
            r.random();
        }
        assert_eq!(r.random(), 0.9466893945947962);

        // Clones continue identically.
        let mut a = PyRandom::new(3);
        a.random();
        let mut b = a.clone();
        assert_eq!(a.random(), b.random());
    }

    #[test]
    fn cpython_randrange_and_getrandbits() {
        // Values from CPython 3.11's random module.
        let mut r = PyRandom::new(7);
        let got: Vec<u64> = (0..20).map(|_| r.randrange(10)).collect();
        assert_eq!(
            got,
            [5, 2, 6, 0, 1, 8, 1, 5, 9, 0, 8, 3, 0, 1, 6, 6, 1, 3, 1, 8]
        );
        // randrange(1) still draws (getrandbits(1) until it is 0).
        let mut r = PyRandom::new(7);
        let got: Vec<u64> = (0..3).map(|_| r.randrange(1)).collect();
        assert_eq!(got, [0, 0, 0]);
        assert_eq!(r.getrandbits(32), 2795742288);
        let mut r = PyRandom::new(3);
        let got: Vec<u64> = (0..5).map(|_| r.randrange(5_000_000_000)).collect();
        assert_eq!(
            got,
            [2337446730, 2593816829, 4576411609, 4351523365, 3596902313]
        );
        let mut r = PyRandom::new(3);
        let got: Vec<u64> = [0, 1, 5, 31, 32, 33, 48, 64]
            .iter()
            .map(|&k| r.getrandbits(k))
            .collect();
        assert_eq!(
            got,
            [
                0,
                0,
                18,
                1168723365,
                560161641,
                5883912612,
                133434342801661,
                10714829862921516198
            ]
        );
    }

    #[test]
    fn cpython_variates() {
        // Values from CPython 3.11's random module.
        let mut r = PyRandom::new(42);
        let exp = [
            0.2453263417078634,
            -0.49684447341120286,
            1.2547859310574627,
            -0.1380590627428119,
            -0.9758203332953249,
        ];
        for e in exp {
            assert_eq!(r.normalvariate(0.0, 1.0), e);
        }
        let mut r = PyRandom::new(42);
        assert_eq!(r.expovariate(2.5), 0.4080241149099204);
        assert_eq!(r.expovariate(2.5), 0.010131535617095556);
        assert_eq!(r.expovariate(2.5), 0.12864962562998622);
        assert_eq!(r.lognormvariate(1.0, 0.5), 1.1041484323083057);
        let mut r = PyRandom::new(42);
        assert_eq!(r.uniform(-3.0, 5.0), 2.11541438766307);
        assert_eq!(r.uniform(-3.0, 5.0), -2.7999139582186645);
        assert_eq!(r.uniform(-3.0, 5.0), -0.7997654530470459);
    }

    #[test]
    fn length_dist_constants() {
        let p = LengthDist::new(2048.0, 0.5);
        let o = LengthDist::new(256.0, 0.5);
        assert_eq!(0.5f64 * 0.5, 0.25);
        assert_eq!(p.sigma2(), 0.22314355131420976);
        assert_eq!(p.mu_sigma(), (7.513047210502293, 0.47238072707743883));
        assert_eq!(o.mu_sigma(), (5.433605668822457, 0.47238072707743883));
        assert_eq!((p.lo, p.hi), (1, 32768));
    }

    #[test]
    fn length_dist_other_shapes() {
        // Values from CPython 3.11 with the reference LengthDist.
        let mut r = PyRandom::new(5);
        let d = LengthDist::new(100.5, 0.0);
        assert_eq!(d.sample(&mut r), 100); // round half to even, no draw
        assert_eq!(d.sample(&mut r), 100);
        assert_eq!(r.random_calls(), 0);

        let d = LengthDist::with_bounds(3000.0, 1.2, 16, 4096);
        let mut r = PyRandom::new(9);
        let got: Vec<i64> = (0..12).map(|_| d.sample(&mut r)).collect();
        assert_eq!(
            got,
            [1745, 2416, 580, 3505, 2960, 1191, 2195, 3675, 914, 773, 4096, 1671]
        );
        assert_eq!(r.random_calls(), 30);

        let d = LengthDist::new(3.0, 2.0);
        let mut r = PyRandom::new(9);
        let exp = [
            1.1798935232799146,
            1.8257691696291223,
            0.2684335230140648,
            3.010319081845087,
            2.39900716557143,
        ];
        for e in exp {
            assert_eq!(d.sample_raw(&mut r), e);
        }
        assert_eq!(d.round_clip(0.4), 1);
        assert_eq!(d.round_clip(1e300), 32768);
        assert_eq!(d.round_clip(2.5), 2);
    }

    #[test]
    fn poisson_unrounded_draws() {
        let p = LengthDist::new(2048.0, 0.5);
        let o = LengthDist::new(256.0, 0.5);
        let mut r = PyRandom::new(1);
        let exp = [
            (0.01803638301368865, 1236.0341986042965, 203.59316150802104),
            (0.19432335902874495, 2959.397391344624, 195.32598889895226),
            (0.03246981874297272, 3179.7525376895364, 202.49564454953912),
        ];
        for (gap, px, ox) in exp {
            assert_eq!(r.expovariate(8.0), gap);
            assert_eq!(p.sample_raw(&mut r), px);
            assert_eq!(o.sample_raw(&mut r), ox);
        }
    }

    #[test]
    fn poisson_workload_table() {
        let (w, calls) = seed1_workload();
        assert_eq!(w.len(), 800);
        let rows: [(usize, f64, &str, u32, u32); 14] = [
            (0, 0.01803638301368865, "0x1.278212cba49f0p-6", 1236, 204),
            (1, 0.2123597420424336, "0x1.b2e9aa1879575p-3", 2959, 195),
            (2, 0.24482956078540632, "0x1.f569336556c31p-3", 3180, 202),
            (3, 0.31337745059926425, "0x1.40e604b682c2ap-2", 1658, 173),
            (4, 0.34423992641338136, "0x1.60806e67b111dp-2", 1749, 260),
            (5, 0.3699498973065865, "0x1.7ad425585c841p-2", 1156, 426),
            (6, 0.714422418502744, "0x1.6dc8c675ff3cdp-1", 1264, 279),
            (7, 0.8251367311446273, "0x1.a6785255fd319p-1", 1851, 139),
            (8, 1.024704562720994, "0x1.065309c8f2dacp+0", 1684, 262),
            (9, 1.1649982235707586, "0x1.2a3d52d6226eep+0", 1529, 236),
            (79, 9.052211128880552, "0x1.21abb6ac60ef5p+3", 2187, 305),
            (80, 9.398022964044028, "0x1.2cbc9aa7b408ep+3", 5925, 261),
            (399, 50.436688676190684, "0x1.937e56a1f62e2p+5", 1409, 347),
            (799, 102.97124087035998, "0x1.9be28cf77af05p+6", 1109, 460),
        ];
        for (rid, repr, hex, p, o) in rows {
            let g = w[rid];
            assert_eq!(g.rid, rid);
            assert_eq!(g.arrival_s, repr, "rid {rid}");
            assert_eq!(g.arrival_s.to_bits(), hexf(hex).to_bits(), "rid {rid}");
            assert_eq!((g.prompt_len, g.output_len), (p, o), "rid {rid}");
        }
        assert_eq!(calls, 5212);
    }

    #[test]
    fn poisson_workload_totals() {
        let (w, _) = seed1_workload();
        let ps = w.iter().map(|g| g.prompt_len as u64);
        assert_eq!(ps.clone().sum::<u64>(), 1_642_027);
        assert_eq!(ps.clone().min(), Some(490));
        assert_eq!(ps.max(), Some(8632));
        let os = w.iter().map(|g| g.output_len as u64);
        assert_eq!(os.clone().sum::<u64>(), 206_235);
        assert_eq!(os.clone().min(), Some(55));
        assert_eq!(os.max(), Some(921));
    }

    #[test]
    fn poisson_workload_other_rates() {
        let (w8, _) = seed1_workload();
        let p = LengthDist::new(2048.0, 0.5);
        let o = LengthDist::new(256.0, 0.5);
        let w4 = poisson_workload(4.0, 800, &p, &o, 1);
        assert_eq!(w4[799].arrival_s, 205.94248174071996);
        for (a, b) in w8.iter().zip(&w4) {
            assert_eq!(a.arrival_s * 2.0, b.arrival_s);
            assert_eq!((a.prompt_len, a.output_len), (b.prompt_len, b.output_len));
        }
        // Last arrivals at 10/12/14 req/s from CPython 3.11; lengths identical to rate 8.
        for (rate, last) in [
            (10.0, 82.37699269628821),
            (12.0, 68.64749391357347),
            (14.0, 58.8407090687773),
        ] {
            let w = poisson_workload(rate, 800, &p, &o, 1);
            assert_eq!(w[799].arrival_s, last);
            for (a, b) in w8.iter().zip(&w) {
                assert_eq!((a.prompt_len, a.output_len), (b.prompt_len, b.output_len));
            }
        }
    }

    #[test]
    fn pyrandom_is_send() {
        fn assert_send<T: Send + Clone>() {}
        assert_send::<PyRandom>();
    }
}
