//! Empirical CDFs: [`ecdf`] and the [`Cdf`] chart.

use crate::legend::LegendPos;
use crate::line::LineChart;
use crate::scale::Axis;
use crate::style::Style;
use crate::xy::{frame_methods, Frame, MarkPoint, RefLine, Series};

/// Default cap on the points drawn per CDF series.
pub const DEFAULT_CDF_POINTS: usize = 2000;

/// The empirical CDF of `samples` as the vertices of a step polyline: for each distinct value `v`
/// (ascending) the points `(v, F(v⁻))` and `(v, F(v))`, where `F(v)` is the fraction of samples
/// `≤ v`. It starts at `(min, 0)` and ends at `(max, 1)`. Non-finite samples are skipped (and do not
/// count in `n`).
///
/// At most `max_points` points are returned (at least 2): with more distinct values than
/// `max_points / 2`, the steps are taken at `max_points / 2` evenly spaced quantiles (ranks
/// `⌈k·n/m⌉`), so the curve stays exact at those quantiles and files stay small for millions of
/// samples.
///
/// ```
/// let pts = disagg_plot::ecdf(&[3.0, 1.0, 2.0, 2.0, f64::NAN], 2000);
/// assert_eq!(pts, vec![(1.0, 0.0), (1.0, 0.25), (2.0, 0.25), (2.0, 0.75), (3.0, 0.75), (3.0, 1.0)]);
/// ```
pub fn ecdf(samples: &[f64], max_points: usize) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    ecdf_sorted(&v, max_points)
}

fn ecdf_sorted(v: &[f64], max_points: usize) -> Vec<(f64, f64)> {
    let n = v.len();
    if n == 0 {
        return Vec::new();
    }
    let nf = n as f64;
    // (value, number of samples <= value) for each distinct value.
    let mut steps: Vec<(f64, usize)> = Vec::new();
    for (i, &x) in v.iter().enumerate() {
        match steps.last_mut() {
            Some(last) if last.0 == x => last.1 = i + 1,
            _ => steps.push((x, i + 1)),
        }
    }
    let m = (max_points.max(2)) / 2;
    if steps.len() > m {
        let mut sub: Vec<(f64, usize)> = Vec::with_capacity(m);
        for k in 1..=m {
            let rank = (k * n).div_ceil(m).clamp(1, n);
            let x = v[rank - 1];
            let count = v.partition_point(|s| *s <= x);
            if sub.last().map(|l| l.0) != Some(x) {
                sub.push((x, count));
            }
        }
        steps = sub;
    }
    let mut out = Vec::with_capacity(2 * steps.len());
    let mut prev = 0usize;
    for (x, c) in steps {
        out.push((x, prev as f64 / nf));
        out.push((x, c as f64 / nf));
        prev = c;
    }
    out
}

/// Latency CDFs, one line per run: give raw samples per series; the chart draws each one's
/// empirical CDF (see [`ecdf`]) on a 0–1 y axis.
///
/// ```
/// use disagg_plot::{Axis, Cdf};
/// let svg = Cdf::new()
///     .title("TTFT")
///     .x_axis(Axis::new("TTFT (ms)").log())
///     .series("run A", &[12.0, 15.0, 40.0, 90.0])
///     .series("run B", &[10.0, 11.0, 13.0, 300.0])
///     .vline(100.0, "SLO 100 ms")
///     .render();
/// assert!(svg.contains("data-series=\"run B\""));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Cdf {
    frame: Frame,
    x_axis: Axis,
    y_axis: Axis,
    series: Vec<(String, Vec<f64>, Style)>,
    reflines: Vec<RefLine>,
    marks: Vec<MarkPoint>,
    legend: LegendPos,
    max_points: usize,
}

impl Default for Cdf {
    fn default() -> Self {
        Cdf::new()
    }
}

impl Cdf {
    /// An empty CDF chart: y axis "Cumulative fraction" fixed to 0–1, at most
    /// [`DEFAULT_CDF_POINTS`] points per series.
    pub fn new() -> Self {
        Cdf {
            frame: Frame::default(),
            x_axis: Axis::new(""),
            y_axis: Axis::new("Cumulative fraction").range(0.0, 1.0),
            series: Vec::new(),
            reflines: Vec::new(),
            marks: Vec::new(),
            legend: LegendPos::Auto,
            max_points: DEFAULT_CDF_POINTS,
        }
    }

    frame_methods!();

    /// Sets the x axis (the measured quantity, e.g. `Axis::new("TPOT (ms)").log()`).
    pub fn x_axis(mut self, axis: Axis) -> Self {
        self.x_axis = axis;
        self
    }

    /// Replaces the y axis (e.g. `Axis::new("Requests").range(0.0, 1.0).percent()`).
    pub fn y_axis(mut self, axis: Axis) -> Self {
        self.y_axis = axis;
        self
    }

    /// Caps the points drawn per series (at least 2; default [`DEFAULT_CDF_POINTS`]).
    pub fn max_points(mut self, max_points: usize) -> Self {
        self.max_points = max_points.max(2);
        self
    }

    /// Adds a series from raw samples (non-finite ones are skipped).
    pub fn series(self, name: impl Into<String>, samples: &[f64]) -> Self {
        self.series_styled(name, samples, Style::default())
    }

    /// Adds a series from raw samples with a style (colour, dash, width).
    pub fn series_styled(mut self, name: impl Into<String>, samples: &[f64], style: Style) -> Self {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        self.series.push((name.into(), v, style));
        self
    }

    decoration_builders!();

    /// The equivalent [`LineChart`] (each series already reduced to its capped step points).
    pub fn to_line_chart(&self) -> LineChart {
        let mut c = LineChart::new()
            .x_axis(self.x_axis.clone())
            .y_axis(self.y_axis.clone())
            .legend(self.legend);
        c.frame = self.frame.clone();
        for (name, samples, style) in &self.series {
            let mut st = style.clone();
            st.step = false;
            c = c
                .series(Series::new(name.clone(), ecdf_sorted(samples, self.max_points)).style(st));
        }
        for r in &self.reflines {
            c = c.ref_line(r.clone());
        }
        for m in &self.marks {
            c = c.mark(m.clone());
        }
        c
    }

    /// The SVG document.
    pub fn render(&self) -> String {
        self.to_line_chart().render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_and_cap() {
        assert!(ecdf(&[], 10).is_empty());
        assert_eq!(ecdf(&[5.0, 5.0], 10), vec![(5.0, 0.0), (5.0, 1.0)]);
        let v: Vec<f64> = (0..10_000).map(f64::from).collect();
        let p = ecdf(&v, 100);
        assert!(p.len() <= 100);
        assert_eq!(p.last(), Some(&(9999.0, 1.0)));
        assert_eq!(p[0].1, 0.0);
        // Monotone.
        assert!(p.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        // Exact at the quantiles: F(x) at the 50th step is 0.5.
        assert!(p.iter().any(|&(x, y)| x == 4999.0 && y == 0.5));
    }
}
