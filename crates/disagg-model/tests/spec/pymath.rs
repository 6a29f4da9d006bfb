//! CPython-compatible maths (`disagg_model::pymath`) pinned against CPython 3.11 itself: every
//! expected literal was printed by `python3 -c` with the expression written next to it, or
//! (where Python raises instead of returning) by the documented Rust behaviour.

use disagg_model::pymath::*;

#[test]
fn round_is_half_to_even() {
    // python3 -c 'print(round(0.5), round(1.5), round(2.5), round(-2.5), round(2.675))'
    // -> 0 2 2 -2 3
    assert_eq!(round_half_even(0.5), 0.0);
    assert_eq!(round_half_even(1.5), 2.0);
    assert_eq!(round_half_even(2.5), 2.0);
    assert_eq!(round_half_even(-2.5), -2.0);
    assert_eq!(round_half_even(2.675), 3.0);
    // round(0.49999999999999994) -> 0 ; round(7.0) -> 7
    assert_eq!(round_half_even(0.49999999999999994), 0.0);
    assert_eq!(round_half_even(7.0), 7.0);
}

#[test]
fn fsum_matches_math_fsum() {
    let p53 = 2f64.powi(53);
    let cases: [(&[f64], f64); 11] = [
        // math.fsum([0.1]*10) -> 1.0 (the naive sum is 0.9999999999999999)
        (&[0.1; 10], 1.0),
        // math.fsum([1e100, 1.0, -1e100, 1e-100, 1e50, -1.0, -1e50]) -> 1e-100
        (&[1e100, 1.0, -1e100, 1e-100, 1e50, -1.0, -1e50], 1e-100),
        // math.fsum([2.0**53, -0.5, -2.0**-54]) -> 9007199254740991.0
        (&[p53, -0.5, -(2f64.powi(-54))], 9007199254740991.0),
        // math.fsum([2.0**53, 1.0, 2.0**-100]) -> 9007199254740994.0
        (&[p53, 1.0, 2f64.powi(-100)], 9007199254740994.0),
        // math.fsum([2.0**53+10.0, 1.0, 2.0**-100]) -> 9007199254741004.0
        (&[p53 + 10.0, 1.0, 2f64.powi(-100)], 9007199254741004.0),
        // math.fsum([2.0**53-4.0, 0.5, 2.0**-54]) -> 9007199254740989.0
        (&[p53 - 4.0, 0.5, 2f64.powi(-54)], 9007199254740989.0),
        // math.fsum([2.0**53, 1.0, -2.0**-100]) -> 9007199254740992.0
        (&[p53, 1.0, -(2f64.powi(-100))], 9007199254740992.0),
        // math.fsum([2.0**53, -1.0, 2.0**-100]) -> 9007199254740991.0
        (&[p53, -1.0, 2f64.powi(-100)], 9007199254740991.0),
        // math.fsum([2.0**53, -1.0, -2.0**-100]) -> 9007199254740991.0
        (&[p53, -1.0, -(2f64.powi(-100))], 9007199254740991.0),
        // math.fsum([1.0, 2.0**-53, 2.0**-106]) -> 1.0000000000000002 (sum(...) -> 1.0)
        (&[1.0, 2f64.powi(-53), 2f64.powi(-106)], 1.0000000000000002),
        // math.fsum([]) -> 0.0
        (&[], 0.0),
    ];
    for (xs, want) in cases {
        assert_eq!(fsum(xs).to_bits(), want.to_bits(), "fsum({xs:?})");
        // The incremental accumulator gives the same value, count and mean.
        let acc: Fsum = xs.iter().copied().collect();
        assert_eq!(acc.value().to_bits(), want.to_bits(), "Fsum({xs:?})");
        assert_eq!(acc.len(), xs.len());
        assert_eq!(acc.is_empty(), xs.is_empty());
    }
    // Ties of the last two partials, and the half-even fix-up across three partials:
    let ties: [(&[f64], f64); 8] = [
        // math.fsum([2.0**53, 1.0]) -> 9007199254740992.0
        (&[p53, 1.0], 9007199254740992.0),
        // math.fsum([1.0, 2.0**53]) -> 9007199254740992.0
        (&[1.0, p53], 9007199254740992.0),
        // math.fsum([2.0**53+2.0, 1.0]) -> 9007199254740996.0
        (&[p53 + 2.0, 1.0], 9007199254740996.0),
        // math.fsum([-2.0**53, -1.0]) -> -9007199254740992.0
        (&[-p53, -1.0], -9007199254740992.0),
        // math.fsum([-(2.0**53), -1.0, -2.0**-100]) -> -9007199254740994.0
        (&[-p53, -1.0, -(2f64.powi(-100))], -9007199254740994.0),
        // math.fsum([2.0**53, -1.0, -2.0**-60]) -> 9007199254740991.0
        (&[p53, -1.0, -(2f64.powi(-60))], 9007199254740991.0),
        // math.fsum([1e16, 1.0, 1e-16]) -> 1.0000000000000002e+16
        (&[1e16, 1.0, 1e-16], 1.0000000000000002e+16),
        // math.fsum([1e-16, 1.0, 1e16]) -> 1.0000000000000002e+16
        (&[1e-16, 1.0, 1e16], 1.0000000000000002e+16),
    ];
    // Cancellation leaves partials whose top two add exactly, so the loop must go on to the next:
    // math.fsum([1.1102230246251565e-15, -1.3510798882111488e+16, 2.0, 1.3510798882111488e+16])
    // -> 2.000000000000001 (5 * 2**-52, -3 * 2**52, 2, 3 * 2**52)
    let a = [
        5.0 * 2f64.powi(-52),
        -3.0 * 2f64.powi(52),
        2.0,
        3.0 * 2f64.powi(52),
    ];
    assert_eq!(fsum(&a), 2.000000000000001);
    // math.fsum([2.7021597764222976e+16, -2.220446049250313e-16, 3.0, -1.3510798882111488e+16,
    // -1.3510798882111488e+16]) -> 3.0 (3 * 2**53, -2**-52, 3, -3 * 2**52, -3 * 2**52)
    let b = [
        3.0 * 2f64.powi(53),
        -(2f64.powi(-52)),
        3.0,
        -3.0 * 2f64.powi(52),
        -3.0 * 2f64.powi(52),
    ];
    assert_eq!(fsum(&b), 3.0);
    for (xs, want) in ties {
        assert_eq!(fsum(xs).to_bits(), want.to_bits(), "fsum({xs:?})");
    }
    // math.fsum([-0.0]) -> 0.0 (positive zero)
    assert_eq!(fsum(&[-0.0]).to_bits(), 0.0f64.to_bits());
    // math.fsum([5.0, -5.0]) -> 0.0
    assert_eq!(fsum(&[5.0, -5.0]).to_bits(), 0.0f64.to_bits());
    // math.fsum([1.0, 1.0]) -> 2.0 ; math.fsum([3.0]) -> 3.0
    assert_eq!(fsum(&[1.0, 1.0]), 2.0);
    assert_eq!(fsum(&[3.0]), 3.0);
}

#[test]
fn fsum_special_values() {
    // math.fsum([float('inf'), 1.0]) -> inf ; math.fsum([-inf, -inf, 2.0]) -> -inf
    assert_eq!(fsum(&[f64::INFINITY, 1.0]), f64::INFINITY);
    assert_eq!(fsum(&[1.0, f64::INFINITY]), f64::INFINITY);
    assert_eq!(
        fsum(&[f64::NEG_INFINITY, f64::NEG_INFINITY, 2.0]),
        f64::NEG_INFINITY
    );
    // math.fsum([nan, 1.0]) -> nan
    assert!(fsum(&[f64::NAN, 1.0]).is_nan());
    // math.fsum([inf, -inf]) raises ValueError; documented here as NaN.
    assert!(fsum(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
    assert!(fsum(&[f64::INFINITY, 3.0, f64::NEG_INFINITY]).is_nan());
    // math.fsum([1e308, 1e308, -1e308]) raises OverflowError; documented here as the overflowed
    // infinity, and later values (even finite ones that would bring it back) do not change it.
    assert_eq!(fsum(&[1e308, 1e308, -1e308]), f64::INFINITY);
    assert_eq!(fsum(&[-1e308, -1e308, 1e308]), f64::NEG_INFINITY);
    let mut acc = Fsum::new();
    acc.extend([1e308, 1e308, -1e308, -1e308]);
    assert_eq!(acc.value(), f64::INFINITY);
    assert_eq!(acc.len(), 4);
    assert_eq!(acc.mean(), f64::INFINITY);
    // A finite partial sum before an infinity is dropped: inf + 1 + 2 = inf, and the partials
    // cleared by the infinity do not come back: math.fsum([1.0, inf, 2.0]) -> inf
    assert_eq!(fsum(&[1.0, f64::INFINITY, 2.0]), f64::INFINITY);
}

#[test]
fn fmean_and_incremental_mean() {
    // statistics.fmean([1.0, 2.0, 4.0]) -> 2.3333333333333335
    assert_eq!(fmean(&[1.0, 2.0, 4.0]), 2.3333333333333335);
    // statistics.fmean([0.1]*10) -> 0.1 (fsum gives exactly 1.0, / 10)
    assert_eq!(fmean(&[0.1; 10]), 0.1);
    // statistics.fmean([6.0, 9.0]) -> 7.5
    assert_eq!(fmean(&[6.0, 9.0]), 7.5);
    // statistics.fmean([]) raises; documented here as NaN.
    assert!(fmean(&[]).is_nan());
    let mut acc = Fsum::new();
    assert!(acc.is_empty());
    assert_eq!(acc.len(), 0);
    assert!(acc.mean().is_nan());
    assert_eq!(acc.value(), 0.0);
    acc.add(1.0);
    assert!(!acc.is_empty());
    acc.add(2.0);
    acc.add(4.0);
    assert_eq!(acc.len(), 3);
    assert_eq!(acc.mean(), 2.3333333333333335);
    assert_eq!(acc.value(), 7.0);
    let d = Fsum::default();
    assert_eq!(d.len(), 0);
    assert_eq!(d.value(), 0.0);
}

fn divmod_bits(a: f64, b: f64) -> (u64, u64) {
    let (q, r) = py_divmod(a, b);
    (q.to_bits(), r.to_bits())
}

#[test]
fn divmod_matches_python() {
    let cases: [(f64, f64, f64, f64); 18] = [
        // divmod(7.0, 2.0) -> (3.0, 1.0)
        (7.0, 2.0, 3.0, 1.0),
        // divmod(-7.0, 2.0) -> (-4.0, 1.0)
        (-7.0, 2.0, -4.0, 1.0),
        // divmod(7.0, -2.0) -> (-4.0, -1.0)
        (7.0, -2.0, -4.0, -1.0),
        // divmod(-7.0, -2.0) -> (3.0, -1.0)
        (-7.0, -2.0, 3.0, -1.0),
        // divmod(6.0, -3.0) -> (-2.0, -0.0)
        (6.0, -3.0, -2.0, -0.0),
        // divmod(-6.0, 3.0) -> (-2.0, 0.0)
        (-6.0, 3.0, -2.0, 0.0),
        // divmod(0.0, -1.0) -> (-0.0, -0.0)
        (0.0, -1.0, -0.0, -0.0),
        // divmod(-0.0, 1.0) -> (-0.0, 0.0)
        (-0.0, 1.0, -0.0, 0.0),
        // divmod(1.0, 0.1) -> (9.0, 0.09999999999999995)
        (1.0, 0.1, 9.0, 0.09999999999999995),
        // divmod(0.5, 2.0) -> (0.0, 0.5)
        (0.5, 2.0, 0.0, 0.5),
        // divmod(-0.5, 2.0) -> (-1.0, 1.5)
        (-0.5, 2.0, -1.0, 1.5),
        // divmod(-0.5, -2.0) -> (0.0, -0.5)
        (-0.5, -2.0, 0.0, -0.5),
        // divmod(0.5, -2.0) -> (-1.0, -1.5)
        (0.5, -2.0, -1.0, -1.5),
        // Cases where (a - fmod(a, b)) / b is not an integer and rounds up:
        // divmod(8820.270226109096, -0.30149775544531643) -> (-29255.0, -0.04660944363586772)
        (
            8820.270226109096,
            -0.30149775544531643,
            -29255.0,
            -0.04660944363586772,
        ),
        // divmod(-4998743.502021841, 5558.392551534306) -> (-900.0, 3809.794359034826)
        (
            -4998743.502021841,
            5558.392551534306,
            -900.0,
            3809.794359034826,
        ),
        // divmod(9384570.83340842, 0.0006838617170870474) -> (13722907130.0, 6.053503969156624e-05)
        (
            9384570.83340842,
            0.0006838617170870474,
            13722907130.0,
            6.053503969156624e-05,
        ),
        // (a - fmod(a, b)) / b lands exactly half-way (x.5): CPython keeps the floor (`> 0.5`).
        // divmod(4.6635098165549496e+16, 13.110288282982136) -> (3557137505975697.0, 4.341252309746729)
        (
            4.6635098165549496e+16,
            13.110288282982136,
            3557137505975697.0,
            4.341252309746729,
        ),
        // divmod(-3.771601891116338e+17, 97.06212692721452) -> (-3885760605621808.0, 7.1633804930924185)
        (
            -3.771601891116338e+17,
            97.06212692721452,
            -3885760605621808.0,
            7.1633804930924185,
        ),
    ];
    for (a, b, q, r) in cases {
        assert_eq!(
            divmod_bits(a, b),
            (q.to_bits(), r.to_bits()),
            "divmod({a}, {b})"
        );
        assert_eq!(py_floordiv(a, b).to_bits(), q.to_bits(), "{a} // {b}");
        assert_eq!(py_mod(a, b).to_bits(), r.to_bits(), "{a} % {b}");
    }
    // Zero over an infinity: divmod(0.0, inf) -> (0.0, 0.0) ; divmod(0.0, -inf) -> (-0.0, -0.0) ;
    // divmod(-0.0, inf) -> (-0.0, 0.0)
    for (a, b, q, r) in [
        (0.0f64, f64::INFINITY, 0.0f64, 0.0f64),
        (0.0, f64::NEG_INFINITY, -0.0, -0.0),
        (-0.0, f64::INFINITY, -0.0, 0.0),
    ] {
        assert_eq!(
            divmod_bits(a, b),
            (q.to_bits(), r.to_bits()),
            "divmod({a}, {b})"
        );
    }
    // Python raises ZeroDivisionError; documented here as (a / b, NaN).
    let (q, r) = py_divmod(1.0, 0.0);
    assert_eq!(q, f64::INFINITY);
    assert!(r.is_nan());
    let (q, r) = py_divmod(-1.0, 0.0);
    assert_eq!(q, f64::NEG_INFINITY);
    assert!(r.is_nan());
    assert!(py_mod(1.0, 0.0).is_nan());
    assert_eq!(py_floordiv(1.0, 0.0), f64::INFINITY);
}

#[test]
fn cube_root_is_pow_one_third() {
    // python3 -c 'import math; f=lambda x: math.copysign(math.pow(abs(x), 1/3), x); ...'
    // f(27.0) -> 3.0 ; f(-8.0) -> -2.0 ; f(2.0) -> 1.2599210498948732 (math.cbrt(2.0) is
    // 1.2599210498948734: deliberately not the correctly rounded cube root) ;
    // f(-0.001) -> -0.10000000000000002 ; f(1e-300) -> 1.0000000000000128e-100
    assert_eq!(cbrt_py(27.0), 3.0);
    assert_eq!(cbrt_py(-8.0), -2.0);
    assert_eq!(cbrt_py(2.0), 1.2599210498948732);
    assert_eq!(cbrt_py(-0.001), -0.10000000000000002);
    assert_eq!(cbrt_py(1e-300), 1.0000000000000128e-100);
    assert_eq!(cbrt_py(-0.0).to_bits(), (-0.0f64).to_bits());
}

#[test]
fn linear_percentile() {
    let s = [1.0, 2.0, 3.0, 4.0];
    // k = (3 * 50) / 100 = 1.5: 2 + (3 - 2) * 0.5 = 2.5
    assert_eq!(percentile(&s, 50.0), 2.5);
    // k = (3 * 90) / 100 = 2.7: 3 + (4 - 3) * (2.7 - 2) = 3.7 -> python3 -c 'print(3+(4-3)*(270/100-2))'
    // -> 3.7
    assert_eq!(
        percentile(&s, 90.0),
        3.0 + (4.0 - 3.0) * (270.0 / 100.0 - 2.0)
    );
    assert_eq!(percentile(&s, 90.0), 3.7);
    // k = 0 and k = 3: the ends
    assert_eq!(percentile(&s, 0.0), 1.0);
    assert_eq!(percentile(&s, 100.0), 4.0);
    // k = (3 * 99) / 100 = 2.97: 3 + 1 * 0.9700000000000002 -> python3 -c 'print(3+(297/100-2))'
    // -> 3.97
    assert_eq!(percentile(&s, 99.0), 3.0 + (297.0 / 100.0 - 2.0));
    // unequal gaps: [0, 10, 30], p = 75: k = 1.5, 10 + (30 - 10) * 0.5 = 20
    assert_eq!(percentile(&[0.0, 10.0, 30.0], 75.0), 20.0);
    // one element
    assert_eq!(percentile(&[7.0], 50.0), 7.0);
    // clamped outside [0, 100]
    assert_eq!(percentile(&s, 150.0), 4.0);
    assert_eq!(percentile(&s, -10.0), 1.0);
    assert!(percentile(&[], 50.0).is_nan());
}

#[test]
fn nearest_rank_percentile() {
    let s: Vec<f64> = (1..=10).map(|i| i as f64 * 10.0).collect();
    // rank = max(1, ceil(p / 100.0 * n)), 1-based
    // p = 50: ceil(5.0) = 5 -> s[4] = 50
    assert_eq!(percentile_nearest_rank(&s, 50.0), 50.0);
    // p = 90: ceil(0.9 * 10) = ceil(9.0) = 9 -> 90
    assert_eq!(percentile_nearest_rank(&s, 90.0), 90.0);
    // p = 91: ceil(9.1) = 10 -> 100
    assert_eq!(percentile_nearest_rank(&s, 91.0), 100.0);
    // p = 11: ceil(1.1) = 2 -> 20
    assert_eq!(percentile_nearest_rank(&s, 11.0), 20.0);
    // p = 0: max(1, 0) = 1 -> 10 ; p = 100: 10 -> 100 ; p = 150: clamped to 10
    assert_eq!(percentile_nearest_rank(&s, 0.0), 10.0);
    assert_eq!(percentile_nearest_rank(&s, 100.0), 100.0);
    assert_eq!(percentile_nearest_rank(&s, 150.0), 100.0);
    assert_eq!(percentile_nearest_rank(&s, -5.0), 10.0);
    assert_eq!(percentile_nearest_rank(&s, f64::NAN), 10.0);
    assert!(percentile_nearest_rank(&[], 50.0).is_nan());
}

#[test]
fn integer_helpers() {
    // python3 -c 'print([n.bit_length() for n in (0, 1, 2, 3, 255, 256, 2**64-1)])'
    // -> [0, 1, 2, 2, 8, 9, 64]
    for (n, b) in [
        (0u64, 0u32),
        (1, 1),
        (2, 2),
        (3, 2),
        (255, 8),
        (256, 9),
        (u64::MAX, 64),
    ] {
        assert_eq!(bit_length(n), b, "bit_length({n})");
    }
    // 1 << (n - 1).bit_length(): python3 -c 'print([1 << (n-1).bit_length() for n in
    // (0, 1, 2, 3, 5, 2048, 2049, 2**63)])' -> [2, 1, 2, 4, 8, 2048, 4096, 9223372036854775808]
    for (n, p) in [
        (0u64, 2u64),
        (1, 1),
        (2, 2),
        (3, 4),
        (5, 8),
        (2048, 2048),
        (2049, 4096),
        (1 << 63, 1 << 63),
    ] {
        assert_eq!(pow2_at_least(n), p, "pow2_at_least({n})");
    }
    // (2.5 * n) * (n.bit_length() - 1): n = 2048 -> 5120 * 11 = 56320 ; n = 4096 -> 10240 * 12 =
    // 122880 ; n = 1 -> 2.5 * 0 = 0 ; n = 3 -> 7.5 * 1 = 7.5 ; n = 6 -> 15 * 2 = 30
    assert_eq!(rfft_flops(2048), 56320.0);
    assert_eq!(rfft_flops(4096), 122880.0);
    assert_eq!(rfft_flops(1), 0.0);
    assert_eq!(rfft_flops(3), 7.5);
    assert_eq!(rfft_flops(6), 30.0);
}

#[test]
#[should_panic(expected = "does not fit in u64")]
fn pow2_at_least_overflows_loudly() {
    pow2_at_least((1 << 63) + 1);
}

#[test]
fn neumaier_sum_is_python_3_12_sum() {
    // [1e16, 1.0, -1e16]: f = 1e16; x = 1.0: t = 1e16 (1e16 + 1 ties to the even 1e16),
    // |f| >= |x|: c += (1e16 - 1e16) + 1.0 = 1.0; x = -1e16: t = 0.0, c += (1e16 - 0.0) - 1e16 = 0;
    // end: f = 0.0 + c = 1.0. A plain sum gives 0.0.
    assert_eq!(neumaier_sum([1e16, 1.0, -1e16]), 1.0);
    // [1.0, 1e16, -1e16]: the other branch: x = 1e16, |f| < |x|: c += (1e16 - 1e16) + 1.0 = 1.0;
    // then c += (1e16 - 0.0) - 1e16 = 0; f = 0.0 + 1.0. (Plain: 0.0.)
    assert_eq!(neumaier_sum([1.0, 1e16, -1e16]), 1.0);
    // The 3.12 release notes' example: sum([0.1] * 10) == 1.0 (3.11: 0.9999999999999999).
    assert_eq!(neumaier_sum([0.1; 10]), 1.0);
    assert_eq!(
        [0.1f64; 10].iter().fold(0.0, |a, &x| a + x),
        0.9999999999999999
    );
    // Where both agree: exact binary fractions.
    assert_eq!(neumaier_sum([0.5, 0.25, 0.125]), 0.875);
    assert_eq!(neumaier_sum([3.0]), 3.0);
    // Empty: 0.0; the integer start makes a lone -0.0 into +0.0 (0 + -0.0), as CPython.
    assert_eq!(neumaier_sum([]).to_bits(), 0.0f64.to_bits());
    assert_eq!(neumaier_sum([-0.0]).to_bits(), 0.0f64.to_bits());
    assert_eq!(neumaier_sum([-2.5]), -2.5);
    // An overflowed sum stays infinite: c becomes -inf then NaN, and a non-finite c is not added.
    assert_eq!(neumaier_sum([1e308, 1e308, -1e308]), f64::INFINITY);
    // A vector iterator works like an array.
    assert_eq!(neumaier_sum(vec![1e16, 1.0, -1e16]), 1.0);
}

#[test]
fn ipow_is_binary_exponentiation() {
    // Closed forms.
    assert_eq!(ipow(2.0, 10), 1024.0);
    assert_eq!(ipow(3.0, 5), 243.0);
    assert_eq!(ipow(-2.0, 3), -8.0);
    assert_eq!(ipow(0.5, 3), 0.125);
    assert_eq!(ipow(7.5, 0), 1.0);
    assert_eq!(ipow(7.5, 1), 7.5);
    // The order of the rounded products, low bit first from r = 1.0:
    // n = 4: x -> x^2 -> (x^2)^2, r = 1.0 * (x^2)^2.
    assert_eq!(ipow(0.7, 4), (0.7 * 0.7) * (0.7 * 0.7));
    // n = 5: r = 1.0 * x; x -> x^2 -> (x^2)^2; r = x * (x^2)^2.
    assert_eq!(ipow(0.8, 5), 0.8 * ((0.8 * 0.8) * (0.8 * 0.8)));
    // n = 6: x -> x^2, r = x^2; x -> (x^2)^2, r = x^2 * (x^2)^2.
    assert_eq!(ipow(1.1, 6), (1.1 * 1.1) * ((1.1 * 1.1) * (1.1 * 1.1)));
}
