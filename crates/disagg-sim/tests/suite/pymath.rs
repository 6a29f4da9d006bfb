//! Python numeric helpers against CPython 3.11 (values from CPython, see each test).
use disagg_sim::pymath::*;

fn naive(xs: &[f64]) -> f64 {
    let mut s = 0.0;
    for &x in xs {
        s += x;
    }
    s
}

/// Deterministic test data: `(random() - 0.5) * 2**(getrandbits(bits) - off)` from CPython's
/// generator, reproduced by `PyRandom` (the Python script built the same lists).
fn mk(seed: u64, n: usize, bits: u32, off: i32) -> Vec<f64> {
    let mut r = disagg_sim::pyrand::PyRandom::new(seed);
    (0..n)
        .map(|_| {
            let u = r.random() - 0.5;
            let e = r.getrandbits(bits) as i32 - off;
            u * 2.0f64.powi(e)
        })
        .collect()
}

fn uniform_list(seed: u64, n: usize) -> Vec<f64> {
    let mut r = disagg_sim::pyrand::PyRandom::new(seed);
    (0..n).map(|_| r.random() * 0.1).collect()
}

#[test]
fn round_half_even_matches_python_round() {
    assert_eq!(round_half_even(0.5), 0.0);
    assert_eq!(round_half_even(1.5), 2.0);
    assert_eq!(round_half_even(2.5), 2.0);
    assert_eq!(round_half_even(-2.5), -2.0);
    assert_eq!(round_half_even(1236.0341986042965), 1236.0);
    assert_eq!(round_half_even(203.59316150802104), 204.0);
    assert_eq!(round_half_even(2.5000000000000004), 3.0);
}

#[test]
fn fsum_classic_cases() {
    // Expected values from CPython 3.11 math.fsum; the naive sums differ.
    let v = [1e100, 1.0, -1e100, 1e-100, 1e50, -1.0, -1e50];
    assert_eq!(fsum(&v), 1e-100);
    assert_eq!(naive(&v), 0.0);
    let v = [0.1; 10];
    assert_eq!(fsum(&v), 1.0);
    assert_eq!(naive(&v), 0.9999999999999999);
    let v = [0.1, 0.2, 0.3];
    assert_eq!(fsum(&v), 0.6);
    assert_eq!(naive(&v), 0.6000000000000001);
    assert_eq!(fsum(&[1e308, -1e308, 1e-300]), 1e-300);
}

#[test]
fn fsum_half_even_correction() {
    // Cases that need CPython's final half-even fix-up across partials (CPython 3.11 values).
    assert_eq!(fsum(&[1e-16, 1.0, 1e16]), 1.0000000000000002e16);
    assert_eq!(fsum(&[1.0, 1e-16, 1e-16]), 1.0000000000000002);
    let mut v = vec![1.0];
    v.extend([1e-16; 10]);
    assert_eq!(fsum(&v), 1.000000000000001);
    let t53 = 9007199254740992.0; // 2**53
    assert_eq!(fsum(&[t53, 1.0, 2f64.powi(-60)]), 9007199254740994.0);
    assert_eq!(fsum(&[t53, -1.0, -(2f64.powi(-60))]), 9007199254740991.0);
    assert_eq!(fsum(&[t53, 1.0, -(2f64.powi(-60))]), 9007199254740992.0);
    assert_eq!(
        fsum(&[1.0, 2f64.powi(-53), 2f64.powi(-106)]),
        1.0000000000000002
    );
    assert_eq!(
        fsum(&[3.0 * 2f64.powi(52), 1.5, 2f64.powi(-100)]),
        1.351079888211149e16
    );
}

#[test]
fn fsum_zeros_and_specials() {
    assert_eq!(fsum(&[]).to_bits(), 0.0f64.to_bits());
    assert_eq!(fsum(&[-0.0]).to_bits(), 0.0f64.to_bits());
    assert_eq!(fsum(&[-0.0, -0.0]).to_bits(), 0.0f64.to_bits());
    assert_eq!(fsum(&[f64::INFINITY, 1.0, 1e300]), f64::INFINITY);
    assert_eq!(fsum(&[f64::NEG_INFINITY, 1.0]), f64::NEG_INFINITY);
    assert!(fsum(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
    assert!(fsum(&[1.0, f64::NAN]).is_nan());
    assert_eq!(fsum(&[1e308, 1e308]), f64::INFINITY);
    assert!(fmean(&[]).is_nan());
}

#[test]
fn fsum_random_lists_match_cpython() {
    // (seed, n, fsum, naive left-to-right sum, fmean) from CPython 3.11 math.fsum /
    // statistics.fmean on the lists built by `mk`.
    let cases: [(u64, usize, u32, i32, f64, f64, f64); 5] = [
        (
            11,
            10,
            7,
            64,
            -212769481512.8516,
            -212769481512.8516,
            -21276948151.28516,
        ),
        (
            12,
            100,
            7,
            64,
            -3.0469078638862285e18,
            -3.0469078638862285e18,
            -3.0469078638862284e16,
        ),
        (
            13,
            1000,
            7,
            64,
            5.169954089606057e18,
            5.169954089606056e18,
            5169954089606057.0,
        ),
        (
            21,
            1000,
            4,
            8,
            517.0520680155527,
            517.0520680155523,
            0.5170520680155527,
        ),
        (
            22,
            5000,
            4,
            8,
            -400.829755856927,
            -400.82975585692736,
            -0.0801659511713854,
        ),
    ];
    for (seed, n, bits, off, s, nv, m) in cases {
        let xs = mk(seed, n, bits, off);
        assert_eq!(fsum(&xs), s, "seed {seed}");
        assert_eq!(naive(&xs), nv, "seed {seed}");
        assert_eq!(fmean(&xs), m, "seed {seed}");
        let acc: Fsum = xs.iter().copied().collect();
        assert_eq!(acc.value(), s);
        assert_eq!(acc.mean(), m);
        // fsum is order independent.
        let mut rev = xs.clone();
        rev.reverse();
        assert_eq!(fsum(&rev), s);
    }
    // Latency-like lists (random() * 0.1), CPython 3.11.
    let cases: [(u64, usize, f64, f64, f64); 2] = [
        (
            31,
            720,
            35.882139385250376,
            35.88213938525037,
            0.04983630470173663,
        ),
        (
            32,
            1000,
            49.10093941805977,
            49.100939418059795,
            0.049100939418059764,
        ),
    ];
    for (seed, n, s, nv, m) in cases {
        let xs = uniform_list(seed, n);
        assert_eq!(fsum(&xs), s);
        assert_eq!(naive(&xs), nv);
        assert_eq!(fmean(&xs), m);
    }
}

#[test]
fn fsum_incremental_matches_batch_at_every_prefix() {
    let xs = mk(22, 500, 4, 8);
    let mut acc = Fsum::new();
    assert_eq!(acc.value(), 0.0);
    assert!(acc.is_empty());
    for (i, &x) in xs.iter().enumerate() {
        acc.add(x);
        assert_eq!(acc.value(), fsum(&xs[..=i]));
        assert_eq!(acc.len(), i + 1);
    }
}

#[test]
fn floordiv_matches_cpython() {
    // CPython 3.11: 1.0//0.1, 7.0//-2.0, -7.0//2.0, -0.0//5.0, 0.0//-5.0, 5.5//2.0,
    // -1e-300//1.0, 1e-300//-1.0, 0.7//0.1, 11969.0125//1.0
    assert_eq!(py_floordiv(1.0, 0.1), 9.0);
    assert_eq!(1.0f64 / 0.1, 10.0);
    assert_eq!(py_floordiv(7.0, -2.0), -4.0);
    assert_eq!(py_floordiv(-7.0, 2.0), -4.0);
    assert_eq!(py_floordiv(-0.0, 5.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(py_floordiv(0.0, -5.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(py_floordiv(0.0, 5.0).to_bits(), 0.0f64.to_bits());
    assert_eq!(py_floordiv(5.5, 2.0), 2.0);
    assert_eq!(py_floordiv(-1e-300, 1.0), -1.0);
    assert_eq!(py_floordiv(1e-300, -1.0), -1.0);
    assert_eq!(py_floordiv(0.7, 0.1), 6.0);
    assert_eq!(py_floordiv(11969.0125, 1.0), 11969.0);
    assert_eq!(py_mod(-7.0, 2.0), 1.0);
    assert_eq!(py_mod(7.0, -2.0), -1.0);
    assert_eq!(py_mod(4.0, -2.0).to_bits(), (-0.0f64).to_bits());
}

#[test]
fn cbrt_py_matches_cpython() {
    // CPython 3.11: abs(27.0)**(1/3), copysign(abs(-8.0)**(1/3), -8.0), 2.0**(1/3)
    assert_eq!(cbrt_py(27.0), 3.0);
    assert_eq!(cbrt_py(-8.0), -2.0);
    assert_eq!(cbrt_py(2.0), 1.2599210498948732);
    assert_eq!(cbrt_py(0.0), 0.0);
}

#[test]
fn percentile_linear() {
    assert!(percentile(&[], 50.0).is_nan());
    assert_eq!(percentile(&[3.5], 99.0), 3.5);
    assert_eq!(percentile(&[1.0, 2.0], 50.0), 1.5);
    assert_eq!(percentile(&[1.0, 2.0, 4.0], 100.0), 4.0);
    assert_eq!(percentile(&[1.0, 2.0, 4.0], 0.0), 1.0);
    // n = 720, p = 99: k = 711.81 as a double (`docs/exactness.md#percentiles`).
    assert_eq!(((720 - 1) as f64 * 99.0) / 100.0, 711.81);
    // Expected values: a Python transliteration of the `docs/exactness.md#percentiles` formula (CPython 3.11).
    let mut xs = uniform_list(31, 720);
    xs.sort_by(f64::total_cmp);
    let exp = [
        (0.0, 1.986047419416659e-05),
        (50.0, 0.0486366530964507),
        (90.0, 0.08973051960465638),
        (99.0, 0.09915965377882503),
        (100.0, 0.0998215492275375),
    ];
    for (p, v) in exp {
        assert_eq!(percentile(&xs, p), v, "p{p}");
    }
    let mut xs = uniform_list(32, 1000);
    xs.sort_by(f64::total_cmp);
    assert_eq!(percentile(&xs, 50.0), 0.049086158291405835);
    assert_eq!(percentile(&xs, 90.0), 0.09042831774561895);
    assert_eq!(percentile(&xs, 99.0), 0.09879582650271936);
}

#[test]
fn percentile_nearest_rank_matches_compute_stats() {
    assert!(percentile_nearest_rank(&[], 50.0).is_nan());
    assert_eq!(percentile_nearest_rank(&[1.0, 2.0, 3.0, 4.0], 50.0), 2.0);
    assert_eq!(percentile_nearest_rank(&[1.0, 2.0, 3.0, 4.0], 51.0), 3.0);
    assert_eq!(percentile_nearest_rank(&[1.0, 2.0, 3.0, 4.0], 0.0), 1.0);
    assert_eq!(percentile_nearest_rank(&[1.0, 2.0, 3.0, 4.0], 150.0), 4.0);
    // Expected values from compute_stats.py's `pct` under CPython 3.11.
    let mut xs = uniform_list(31, 720);
    xs.sort_by(f64::total_cmp);
    let exp = [
        (0.0, 1.986047419416659e-05),
        (50.0, 0.04859932249544013),
        (90.0, 0.08972828306754735),
        (99.0, 0.09916538289552596),
        (100.0, 0.0998215492275375),
    ];
    for (p, v) in exp {
        assert_eq!(percentile_nearest_rank(&xs, p), v, "p{p}");
    }
    let mut xs = uniform_list(32, 1000);
    xs.sort_by(f64::total_cmp);
    assert_eq!(percentile_nearest_rank(&xs, 50.0), 0.049001679840505);
    assert_eq!(percentile_nearest_rank(&xs, 90.0), 0.09042175861151126);
    assert_eq!(percentile_nearest_rank(&xs, 99.0), 0.09879514203918763);
    assert_eq!(percentile_nearest_rank(&xs, 99.9), 0.09976010811099684);
}

#[test]
fn integer_helpers() {
    assert_eq!(bit_length(0), 0);
    assert_eq!(bit_length(1), 1);
    assert_eq!(bit_length(2047), 11);
    assert_eq!(bit_length(2048), 12);
    assert_eq!(bit_length(u64::MAX), 64);
    assert_eq!(pow2_at_least(0), 2);
    assert_eq!(pow2_at_least(1), 1);
    assert_eq!(pow2_at_least(2), 2);
    assert_eq!(pow2_at_least(3), 4);
    assert_eq!(pow2_at_least(2048), 2048);
    assert_eq!(pow2_at_least(2049), 4096);
    assert_eq!(pow2_at_least(1 << 63), 1 << 63);
    assert_eq!(rfft_flops(2048), 56320.0);
    assert_eq!(rfft_flops(1), 0.0);
    assert_eq!(rfft_flops(3000), (2.5 * 3000.0) * 11.0);
    assert_eq!(rfft_flops(0).to_bits(), (-0.0f64).to_bits());
}
