//! Axes: scale, range, 1-2-5 ticks and tick-label formatting.

use crate::svg::trim_decimal;

/// Linear or base-10 logarithmic axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scale {
    /// Linear.
    #[default]
    Linear,
    /// Base-10 logarithmic. Non-positive values cannot be placed and are skipped (counted in the
    /// series' `data-skipped` attribute).
    Log10,
}

/// How tick labels are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TickFormat {
    /// Short numbers with SI suffixes for large values: `0.05`, `0.5`, `10`, `1k`, `2.5M`; tiny
    /// values in exponent form (`1e-6`).
    #[default]
    Auto,
    /// Values are fractions written as percentages: `0.25` → `25%`.
    Percent,
    /// Plain decimals, no SI suffix (years, IDs, ...).
    Plain,
}

/// One axis: title (with units, supplied by the caller), scale, optional fixed range, tick format.
///
/// ```
/// use disagg_plot::Axis;
/// let y = Axis::new("SLO attainment").range(0.0, 1.0).percent();
/// let x = Axis::new("TTFT (ms)").log();
/// # let _ = (x, y);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub(crate) title: String,
    pub(crate) scale: Scale,
    pub(crate) min: Option<f64>,
    pub(crate) max: Option<f64>,
    pub(crate) format: TickFormat,
    pub(crate) include_zero: bool,
}

impl Default for Axis {
    fn default() -> Self {
        Axis::new("")
    }
}

impl Axis {
    /// A linear axis with an automatic range and the given title (include the unit, e.g.
    /// `"TTFT (ms)"`; an empty title draws none).
    pub fn new(title: impl Into<String>) -> Self {
        Axis {
            title: title.into(),
            scale: Scale::Linear,
            min: None,
            max: None,
            format: TickFormat::Auto,
            include_zero: false,
        }
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// Uses a base-10 logarithmic scale.
    pub fn log(mut self) -> Self {
        self.scale = Scale::Log10;
        self
    }

    /// Sets the scale.
    pub fn scale(mut self, scale: Scale) -> Self {
        self.scale = scale;
        self
    }

    /// Fixes both ends of the range (data outside is clipped). Non-finite bounds, and
    /// non-positive bounds on a log axis, are ignored (automatic instead).
    pub fn range(mut self, min: f64, max: f64) -> Self {
        self.min = Some(min);
        self.max = Some(max);
        self
    }

    /// Fixes the lower end of the range.
    pub fn min(mut self, min: f64) -> Self {
        self.min = Some(min);
        self
    }

    /// Fixes the upper end of the range.
    pub fn max(mut self, max: f64) -> Self {
        self.max = Some(max);
        self
    }

    /// Writes tick labels as percentages of fractions (`0.5` → `50%`).
    pub fn percent(mut self) -> Self {
        self.format = TickFormat::Percent;
        self
    }

    /// Sets the tick-label format.
    pub fn format(mut self, format: TickFormat) -> Self {
        self.format = format;
        self
    }

    /// Extends an automatic range to include zero (linear axes only).
    pub fn include_zero(mut self) -> Self {
        self.include_zero = true;
        self
    }

    pub(crate) fn is_log(&self) -> bool {
        self.scale == Scale::Log10
    }

    /// Whether `v` can be placed on this axis.
    pub(crate) fn accepts(&self, v: f64) -> bool {
        v.is_finite() && (!self.is_log() || v > 0.0)
    }

    fn bound(&self, b: Option<f64>) -> Option<f64> {
        b.filter(|v| self.accepts(*v))
    }

    /// Resolves the displayed range and ticks from the data extent (`None` when there is no data)
    /// and a target number of labelled ticks.
    pub(crate) fn resolve(&self, extent: Option<(f64, f64)>, target: usize) -> Resolved {
        let target = target.max(2);
        let (fmin, fmax) = (self.bound(self.min), self.bound(self.max));
        let (dlo, dhi) = match extent {
            Some(e) => e,
            None if self.is_log() => (1.0, 10.0),
            None => (0.0, 1.0),
        };
        let mut lo = fmin.unwrap_or(dlo);
        let mut hi = fmax.unwrap_or(dhi);
        if self.include_zero && !self.is_log() {
            if fmin.is_none() {
                lo = lo.min(0.0);
            }
            if fmax.is_none() {
                hi = hi.max(0.0);
            }
        }
        if lo > hi {
            std::mem::swap(&mut lo, &mut hi);
        }
        // Zero-width range: pad it.
        if self.is_log() {
            if hi / lo < 1.000_001 {
                match (fmin.is_some(), fmax.is_some()) {
                    (true, false) => hi = lo * 4.0,
                    (false, true) => lo = hi / 4.0,
                    _ => {
                        lo /= 2.0;
                        hi *= 2.0;
                    }
                }
            }
        } else {
            let span = hi - lo;
            let scale = lo.abs().max(hi.abs());
            if span <= scale * 1e-9 || span == 0.0 {
                let d = if scale == 0.0 { 1.0 } else { scale * 0.1 };
                match (fmin.is_some(), fmax.is_some()) {
                    (true, false) => hi = lo + 2.0 * d,
                    (false, true) => lo = hi - 2.0 * d,
                    _ => {
                        lo -= d;
                        hi += d;
                    }
                }
            }
        }
        if self.is_log() {
            if fmin.is_none() {
                lo = nice_floor_125(lo);
            }
            if fmax.is_none() {
                hi = nice_ceil_125(hi);
            }
            let ticks = log_ticks(lo, hi, target, self.format);
            Resolved {
                lo,
                hi,
                log: true,
                ticks,
            }
        } else {
            let step = nice_step((hi - lo) / target as f64);
            if fmin.is_none() {
                lo = (lo / step + 1e-9).floor() * step;
            }
            if fmax.is_none() {
                hi = (hi / step - 1e-9).ceil() * step;
            }
            let ticks = linear_ticks(lo, hi, target, self.format);
            Resolved {
                lo,
                hi,
                log: false,
                ticks,
            }
        }
    }
}

/// A resolved axis range with its ticks.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub ticks: Ticks,
}

impl Resolved {
    /// Maps data values to pixels between `p0` (at `lo`) and `p1` (at `hi`).
    pub fn map(&self, p0: f64, p1: f64) -> AxisMap {
        AxisMap {
            lo: self.t(self.lo),
            hi: self.t(self.hi),
            log: self.log,
            p0,
            p1,
        }
    }

    fn t(&self, v: f64) -> f64 {
        if self.log {
            v.log10()
        } else {
            v
        }
    }

    /// Whether `v` lies within the displayed range (with a small tolerance).
    pub fn contains(&self, v: f64) -> bool {
        let tol = if self.log {
            0.0
        } else {
            (self.hi - self.lo) * 1e-9
        };
        v >= self.lo - tol && v <= self.hi + tol
    }
}

/// Data-to-pixel mapping of one axis.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AxisMap {
    lo: f64,
    hi: f64,
    log: bool,
    p0: f64,
    p1: f64,
}

impl AxisMap {
    pub fn px(&self, v: f64) -> f64 {
        let t = if self.log { v.log10() } else { v };
        let span = self.hi - self.lo;
        let f = if span == 0.0 {
            0.5
        } else {
            (t - self.lo) / span
        };
        self.p0 + f * (self.p1 - self.p0)
    }
}

/// Labelled (major) and unlabelled (minor) tick positions.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ticks {
    pub major: Vec<(f64, String)>,
    pub minor: Vec<f64>,
}

impl Ticks {
    /// Widest label, in characters.
    pub fn max_label_chars(&self) -> usize {
        self.major
            .iter()
            .map(|(_, l)| l.chars().count())
            .max()
            .unwrap_or(0)
    }
}

/// The 1-2-5 step closest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let exp = raw.log10().floor();
    let base = 10f64.powf(exp);
    let f = raw / base;
    let nf = if f <= 1.0 + 1e-9 {
        1.0
    } else if f <= 2.0 + 1e-9 {
        2.0
    } else if f <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    nf * base
}

/// Largest value of the form {1,2,5}·10^k not above `v` (`v` > 0).
fn nice_floor_125(v: f64) -> f64 {
    let e = v.log10().floor();
    let base = 10f64.powf(e);
    for m in [5.0, 2.0, 1.0] {
        if m * base <= v * (1.0 + 1e-9) {
            return m * base;
        }
    }
    base / 2.0
}

/// Smallest value of the form {1,2,5}·10^k not below `v` (`v` > 0).
fn nice_ceil_125(v: f64) -> f64 {
    let e = v.log10().floor();
    let base = 10f64.powf(e);
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * base >= v * (1.0 - 1e-9) {
            return m * base;
        }
    }
    10.0 * base
}

/// Linear ticks at multiples of a 1-2-5 step inside `[lo, hi]`.
pub(crate) fn linear_ticks(lo: f64, hi: f64, target: usize, format: TickFormat) -> Ticks {
    let step = nice_step((hi - lo) / target.max(1) as f64);
    let k0 = (lo / step - 1e-9).ceil() as i64;
    let k1 = (hi / step + 1e-9).floor() as i64;
    let mut major = Vec::new();
    if k1 >= k0 && k1 - k0 <= 1000 {
        for k in k0..=k1 {
            let v = k as f64 * step;
            major.push((v, format_tick(v, step, format)));
        }
    }
    Ticks {
        major,
        minor: Vec::new(),
    }
}

/// Log ticks: decades when the range spans two or more, else 1-2-5 or 1..9 multiples, else linear.
pub(crate) fn log_ticks(lo: f64, hi: f64, target: usize, format: TickFormat) -> Ticks {
    let (a, b) = (lo.log10(), hi.log10());
    let inside = |v: f64| v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9);
    let k0 = (a - 1e-9).ceil() as i64;
    let k1 = (b + 1e-9).floor() as i64;
    let label = |v: f64| format_tick(v, 10f64.powf(v.log10().floor()), format);
    let multiples = |mults: &[f64]| {
        let mut out = Vec::new();
        for k in (a.floor() as i64 - 1)..=(b.ceil() as i64) {
            let base = 10f64.powi(k as i32);
            for m in mults {
                let v = m * base;
                if inside(v) {
                    out.push(v);
                }
            }
        }
        out
    };
    let decades = (k1 - k0 + 1).max(0) as usize;
    // Few decades: label 1-2-5 multiples when they are not too many.
    if (2..=3).contains(&decades) {
        let v = multiples(&[1.0, 2.0, 5.0]);
        if v.len() <= target + 2 {
            let minor: Vec<f64> = multiples(&[3.0, 4.0, 6.0, 7.0, 8.0, 9.0]);
            return Ticks {
                major: v.into_iter().map(|v| (v, label(v))).collect(),
                minor,
            };
        }
    }
    if decades >= 2 {
        let n = decades;
        let every = n.div_ceil(target).max(1) as i64;
        let mut major = Vec::new();
        let mut minor = Vec::new();
        for k in k0..=k1 {
            let v = 10f64.powi(k as i32);
            if (k - k0) % every == 0 {
                major.push((v, label(v)));
            } else {
                minor.push(v);
            }
        }
        if b - a <= 8.0 {
            minor.extend(multiples(&[2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]));
        }
        minor.sort_by(f64::total_cmp);
        return Ticks { major, minor };
    }
    for mults in [
        &[1.0, 2.0, 5.0][..],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0][..],
    ] {
        let v = multiples(mults);
        if v.len() >= 2 && v.len() <= target + 2 {
            return Ticks {
                major: v.into_iter().map(|v| (v, label(v))).collect(),
                minor: Vec::new(),
            };
        }
    }
    let mut t = linear_ticks(lo, hi, target.min(5), format);
    t.major.retain(|(v, _)| *v > 0.0);
    t
}

/// Formats a tick value; `res` is the spacing the label must resolve (decides the decimals).
pub fn format_tick(v: f64, res: f64, format: TickFormat) -> String {
    match format {
        TickFormat::Percent => {
            let mut s = plain(v * 100.0, res * 100.0);
            s.push('%');
            s
        }
        TickFormat::Plain => plain(v, res),
        TickFormat::Auto => si(v, res),
    }
}

fn decimals_for(res: f64) -> usize {
    if !(res.is_finite() && res > 0.0) {
        return 0;
    }
    (-(res.log10() + 1e-9).floor()).clamp(0.0, 9.0) as usize
}

fn plain(v: f64, res: f64) -> String {
    let mut s = format!("{:.*}", decimals_for(res), v);
    trim_decimal(&mut s);
    if s == "-0" {
        s = "0".into();
    }
    s
}

fn si(v: f64, res: f64) -> String {
    let a = v.abs();
    if a == 0.0 || (a < 0.5 * res && res > 0.0) {
        return "0".to_string();
    }
    const SUFFIX: [(f64, &str); 5] = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    for (s, suf) in SUFFIX {
        if a >= s * (1.0 - 1e-12) {
            let mut out = plain(v / s, res / s);
            out.push_str(suf);
            return out;
        }
    }
    if a >= 1e-3 || res >= 1e-3 {
        return plain(v, res);
    }
    // Tiny values: exponent form with as many mantissa digits as the resolution needs.
    let e = a.log10().floor();
    let digits = decimals_for(res / 10f64.powf(e)).min(6);
    let mut mant = format!("{:.*}", digits, v / 10f64.powf(e));
    trim_decimal(&mut mant);
    format!("{mant}e{}", e as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(t: &Ticks) -> Vec<String> {
        t.major.iter().map(|(_, l)| l.clone()).collect()
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.13), 0.2);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(100.0), 100.0);
    }

    #[test]
    fn si_labels() {
        assert_eq!(format_tick(0.5, 0.1, TickFormat::Auto), "0.5");
        assert_eq!(format_tick(10.0, 5.0, TickFormat::Auto), "10");
        assert_eq!(format_tick(1000.0, 500.0, TickFormat::Auto), "1k");
        assert_eq!(format_tick(1500.0, 500.0, TickFormat::Auto), "1.5k");
        assert_eq!(format_tick(2.5e6, 5e5, TickFormat::Auto), "2.5M");
        assert_eq!(format_tick(1e-5, 1e-5, TickFormat::Auto), "1e-5");
        assert_eq!(format_tick(0.001, 0.001, TickFormat::Auto), "0.001");
        assert_eq!(
            format_tick(0.30000000000000004, 0.1, TickFormat::Auto),
            "0.3"
        );
        assert_eq!(format_tick(0.25, 0.05, TickFormat::Percent), "25%");
        assert_eq!(format_tick(1.0, 0.2, TickFormat::Percent), "100%");
        assert_eq!(format_tick(2024.0, 1.0, TickFormat::Plain), "2024");
        assert_eq!(format_tick(-1e-17, 0.1, TickFormat::Auto), "0");
    }

    #[test]
    fn linear_resolve_is_nice() {
        let r = Axis::new("x").resolve(Some((0.3, 9.7)), 5);
        assert_eq!((r.lo, r.hi), (0.0, 10.0));
        assert_eq!(labels(&r.ticks), ["0", "2", "4", "6", "8", "10"]);
    }

    #[test]
    fn fixed_percent_range() {
        let r = Axis::new("a")
            .range(0.0, 1.0)
            .percent()
            .resolve(Some((0.5, 0.9)), 5);
        assert_eq!((r.lo, r.hi), (0.0, 1.0));
        assert_eq!(labels(&r.ticks), ["0%", "20%", "40%", "60%", "80%", "100%"]);
    }

    #[test]
    fn zero_range_is_padded() {
        let r = Axis::new("x").resolve(Some((5.0, 5.0)), 5);
        assert!(r.lo < 5.0 && r.hi > 5.0);
        let r = Axis::new("x").resolve(Some((0.0, 0.0)), 5);
        assert!(r.lo < 0.0 && r.hi > 0.0);
        let r = Axis::new("x").log().resolve(Some((3.0, 3.0)), 5);
        assert!(r.lo < 3.0 && r.hi > 3.0 && r.ticks.major.len() >= 2);
    }

    #[test]
    fn log_decades() {
        let r = Axis::new("x").log().resolve(Some((1.2, 1500.0)), 6);
        assert_eq!((r.lo, r.hi), (1.0, 2000.0));
        assert_eq!(labels(&r.ticks), ["1", "10", "100", "1k"]);
        assert!(!r.ticks.minor.is_empty());
        // Two or three decades with room: 1-2-5 labels.
        let r = Axis::new("x").log().resolve(Some((20.0, 2000.0)), 8);
        assert_eq!(
            labels(&r.ticks),
            ["20", "50", "100", "200", "500", "1k", "2k"]
        );
        // Less than two decades: 1-2-5 labels.
        let r = Axis::new("x").log().resolve(Some((120.0, 900.0)), 6);
        assert_eq!(labels(&r.ticks), ["100", "200", "500", "1k"]);
        // Many decades are thinned.
        let r = Axis::new("x").log().resolve(Some((1e-6, 1e9)), 4);
        assert!(r.ticks.major.len() <= 5, "{:?}", labels(&r.ticks));
    }

    #[test]
    fn log_ignores_nonpositive_bounds() {
        let r = Axis::new("x")
            .log()
            .range(0.0, 100.0)
            .resolve(Some((2.0, 50.0)), 5);
        assert!(r.lo > 0.0);
        assert_eq!(r.hi, 100.0);
    }
}
