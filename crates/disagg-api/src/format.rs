//! Friendly units at the edges: every number the text reports print goes through here.

/// `2048` → `2,048`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// From this magnitude on, [`fixed`] writes three significant digits and an exponent.
pub const HUGE: f64 = 1e18;

/// A float with `decimals` decimals and thousands separators (`1234.5` → `1,234.5`); from
/// [`HUGE`] on, three significant digits and an exponent (`6.9e19`).
pub fn fixed(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "n/a".into()
        } else {
            format!("{x}")
        };
    }
    if x.abs() >= HUGE {
        let s = format!("{x:.2e}");
        let (mantissa, exp) = s.split_once('e').expect("exponent form");
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{mantissa}e{exp}");
    }
    let s = format!("{:.*}", decimals, x.abs());
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i.to_string(), Some(f.to_string())),
        None => (s.clone(), None),
    };
    let int = int.parse::<u64>().map_or(int, thousands);
    let sign = if x < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    match frac {
        Some(f) => format!("{sign}{int}.{f}"),
        None => format!("{sign}{int}"),
    }
}

/// Bytes in decimal units: `268435456` → `268.4 MB`.
pub fn bytes(b: f64) -> String {
    let (v, unit) = if b >= 1e12 {
        (b / 1e12, "TB")
    } else if b >= 1e9 {
        (b / 1e9, "GB")
    } else if b >= 1e6 {
        (b / 1e6, "MB")
    } else if b >= 1e3 {
        (b / 1e3, "kB")
    } else {
        return format!("{} B", fixed(b, 0));
    };
    format!("{} {unit}", fixed(v, 1))
}

/// Three significant digits in ms (µs below 0.1 ms, s from 10 s): `0.00136217728` → `1.36 ms`.
pub fn time(s: f64) -> String {
    if !s.is_finite() {
        return "n/a".into();
    }
    let (v, unit) = if s >= 10.0 {
        (s, "s")
    } else if s >= 1e-4 {
        (s * 1e3, "ms")
    } else {
        (s * 1e6, "µs")
    };
    format!("{} {unit}", sig3(v))
}

/// One decimal in ms (µs below 0.1 ms), as the chapter's link table prints it.
pub fn time_1dp(s: f64) -> String {
    if s >= 1e-4 {
        format!("{} ms", fixed(s * 1e3, 1))
    } else {
        format!("{} µs", fixed(s * 1e6, 1))
    }
}

/// Three significant digits, at least one decimal below 1,000.
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    let d = if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else if a >= 0.1 {
        3
    } else {
        4
    };
    fixed(v, d)
}

/// A bandwidth in bytes/s as GB/s, shortest form (`3.125 GB/s`, `450 GB/s`).
pub fn gb_per_s(bps: f64) -> String {
    format!("{} GB/s", bps / 1e9)
}

/// A rate in requests per second, one decimal.
pub fn rps(r: f64) -> String {
    format!("{} req/s", fixed(r, 1))
}

/// `x` with `dp` decimals, or `n/a` when it is undefined (NaN: an empty sample, or a ratio
/// without a denominator).
pub fn or_na(x: f64, dp: usize) -> String {
    if x.is_nan() {
        "n/a".to_string()
    } else {
        format!("{x:.dp$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(2048), "2,048");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(fixed(9657.760737543722, 1), "9,657.8");
        assert_eq!(fixed(-0.04, 1), "0.0");
        assert_eq!(bytes(268435456.0), "268.4 MB");
        assert_eq!(bytes(671088640.0), "671.1 MB");
        assert_eq!(time(0.08591934592), "85.9 ms");
        assert_eq!(time(0.00136217728), "1.36 ms");
        assert_eq!(time(0.05903319135244048), "59.0 ms");
        assert_eq!(time(0.00017777216), "0.178 ms");
        assert_eq!(time(0.00001), "10.0 µs");
        assert_eq!(time_1dp(0.0006015232355555556), "0.6 ms");
        assert_eq!(gb_per_s(3.125e9), "3.125 GB/s");
        assert_eq!(gb_per_s(450e9), "450 GB/s");
        assert_eq!(rps(11.641532182693481), "11.6 req/s");
    }

    #[test]
    fn huge_numbers_keep_their_magnitude() {
        // Before: every value >= 2^64 printed as "0.0".
        assert_eq!(fixed(6.9e19, 1), "6.9e19");
        assert_eq!(rps(6.9e19), "6.9e19 req/s");
        assert_eq!(fixed(-1.2345e30, 2), "-1.23e30");
        assert_eq!(fixed(1e308, 0), "1e308");
        assert_eq!(fixed(18446744073709551616.0, 1), "1.84e19");
        assert_eq!(fixed(1e18, 1), "1e18");
        // Just below: full digits, as before.
        assert_eq!(
            fixed(999_999_999_999_999_872.0, 0),
            "999,999,999,999,999,872"
        );
        assert_eq!(fixed(123_456_789_012.345, 2), "123,456,789,012.35");
    }
}
