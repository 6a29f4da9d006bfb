//! [`Scatter`] with an optional frontier, and the [`pareto_front`] helper.

use std::cmp::Ordering;

use crate::scale::Axis;
use crate::style::Marker;
use crate::xy::{frame_methods, render, Frame, Panel, Series};

/// Points (optionally labelled) plus a highlighted frontier line, e.g. the plan's configurations
/// as cost against p99 latency with their Pareto frontier. The caller computes the frontier (see
/// [`pareto_front`]).
///
/// ```
/// use disagg_plot::{pareto_front, Axis, Scatter};
/// let pts = vec![(1.0, 900.0), (2.0, 400.0), (3.0, 450.0), (4.0, 200.0)];
/// let front: Vec<(f64, f64)> = pareto_front(&pts, true, true).into_iter().map(|i| pts[i]).collect();
/// let svg = Scatter::new()
///     .x_axis(Axis::new("Cost ($/h)"))
///     .y_axis(Axis::new("p99 TTFT (ms)"))
///     .labelled_points("configurations", pts.iter().zip(["a", "b", "c", "d"]).map(|(p, l)| (p.0, p.1, l)))
///     .frontier("Pareto frontier", front)
///     .render();
/// assert!(svg.contains("data-series=\"Pareto frontier\""));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Scatter {
    frame: Frame,
    x_axis: Axis,
    panel: Panel,
}

impl Default for Scatter {
    fn default() -> Self {
        Scatter::new()
    }
}

impl Scatter {
    /// An empty 800×500 scatter plot.
    pub fn new() -> Self {
        Scatter {
            frame: Frame::default(),
            x_axis: Axis::new(""),
            panel: Panel::default(),
        }
    }

    frame_methods!();

    /// Sets the x axis.
    pub fn x_axis(mut self, axis: Axis) -> Self {
        self.x_axis = axis;
        self
    }

    /// Sets the y axis.
    pub fn y_axis(mut self, axis: Axis) -> Self {
        self.panel.y_axis = axis;
        self
    }

    /// Adds a group of unlabelled points (markers only; the marker shape cycles per group).
    pub fn points(
        mut self,
        name: impl Into<String>,
        points: impl IntoIterator<Item = (f64, f64)>,
    ) -> Self {
        let k = self.panel.series.len();
        self.panel.series.push(
            Series::new(name, points)
                .markers_only()
                .marker(Marker::nth(k))
                .marker_size(4.0),
        );
        self
    }

    /// Adds a group of points, each with a text label drawn beside it where it fits.
    pub fn labelled_points<S: Into<String>>(
        mut self,
        name: impl Into<String>,
        points: impl IntoIterator<Item = (f64, f64, S)>,
    ) -> Self {
        let (pts, labels): (Vec<(f64, f64)>, Vec<String>) = points
            .into_iter()
            .map(|(x, y, l)| ((x, y), l.into()))
            .unzip();
        let k = self.panel.series.len();
        self.panel.series.push(
            Series::new(name, pts)
                .markers_only()
                .marker(Marker::nth(k))
                .marker_size(4.0)
                .labels(labels),
        );
        self
    }

    /// Adds a group of points numbered 1, 2, ... in the given order, with a key under the chart
    /// giving each number's text (`1. 2P+3D h100`): the numbers are short enough to sit beside
    /// their points without overlapping where long labels would not; a number that cannot be
    /// placed is left out of the plot (counted in `data-hidden-labels`) but stays in the key.
    pub fn numbered_points<S: Into<String>>(
        mut self,
        name: impl Into<String>,
        points: impl IntoIterator<Item = (f64, f64, S)>,
    ) -> Self {
        let mut pts = Vec::new();
        let mut numbers = Vec::new();
        for (k, (x, y, l)) in points.into_iter().enumerate() {
            pts.push((x, y, (k + 1).to_string()));
            numbers.push(format!("{}. {}", k + 1, l.into()));
        }
        self.frame.key.extend(numbers);
        self.labelled_points(name, pts)
    }

    /// Adds any series (full control over style).
    pub fn series(mut self, series: Series) -> Self {
        self.panel.series.push(series);
        self
    }

    /// Adds a frontier: the points sorted by x and joined by a thick line with markers.
    pub fn frontier(
        mut self,
        name: impl Into<String>,
        points: impl IntoIterator<Item = (f64, f64)>,
    ) -> Self {
        let mut pts: Vec<(f64, f64)> = points.into_iter().collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        self.panel.series.push(
            Series::new(name, pts)
                .width(2.5)
                .marker(Marker::Circle)
                .marker_size(5.0),
        );
        self
    }

    decoration_builders!(panel);

    /// The SVG document.
    pub fn render(&self) -> String {
        render(
            &self.frame,
            &self.x_axis,
            std::slice::from_ref(&self.panel),
            500.0 + self.frame.key_height(),
        )
    }
}

/// Indices of the Pareto-optimal points: those no other point dominates. `a` dominates `b` when it
/// is at least as good in both coordinates and strictly better in one ("good" is smaller where
/// `minimize_*` is true, larger otherwise). Identical points do not dominate each other, so
/// duplicates on the frontier are all returned. Points with a non-finite coordinate are ignored.
///
/// The indices are ordered by x ascending (ties by y ascending, then index). O(n log n).
///
/// ```
/// let pts = [(1.0, 5.0), (2.0, 3.0), (3.0, 4.0), (4.0, 1.0)];
/// assert_eq!(disagg_plot::pareto_front(&pts, true, true), vec![0, 1, 3]);
/// ```
pub fn pareto_front(points: &[(f64, f64)], minimize_x: bool, minimize_y: bool) -> Vec<usize> {
    let key = |i: usize| {
        let (x, y) = points[i];
        (
            if minimize_x { x } else { -x },
            if minimize_y { y } else { -y },
        )
    };
    let mut idx: Vec<usize> = (0..points.len())
        .filter(|&i| points[i].0.is_finite() && points[i].1.is_finite())
        .collect();
    let cmp = |a: &usize, b: &usize| {
        let (ka, kb) = (key(*a), key(*b));
        ka.0.partial_cmp(&kb.0)
            .unwrap_or(Ordering::Equal)
            .then(ka.1.partial_cmp(&kb.1).unwrap_or(Ordering::Equal))
            .then(a.cmp(b))
    };
    idx.sort_by(cmp);
    let mut front = Vec::new();
    let mut best_before = f64::INFINITY; // best (smallest) transformed y among strictly smaller x
    let mut g = 0;
    while g < idx.len() {
        let gx = key(idx[g]).0;
        let mut end = g;
        while end < idx.len() && key(idx[end]).0 == gx {
            end += 1;
        }
        let gmin = key(idx[g]).1; // sorted by y within the group
        if gmin < best_before {
            for &i in &idx[g..end] {
                if key(i).1 == gmin {
                    front.push(i);
                }
            }
        }
        best_before = best_before.min(gmin);
        g = end;
    }
    front.sort_by(|a, b| {
        let (pa, pb) = (points[*a], points[*b]);
        pa.0.total_cmp(&pb.0)
            .then(pa.1.total_cmp(&pb.1))
            .then(a.cmp(b))
    });
    front
}
