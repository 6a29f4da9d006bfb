//! [`LineChart`]: XY series with reference lines and marked points.

use crate::scale::Axis;
use crate::xy::{frame_methods, render, Frame, Panel, Series};

/// Several XY series as lines (optionally with markers), with labelled reference lines (SLOs) and
/// marked points (the goodput), on linear or log axes.
///
/// ```
/// use disagg_plot::{Axis, LineChart, MarkPoint, Marker, Series};
/// let svg = LineChart::new()
///     .title("TTFT against rate")
///     .x_axis(Axis::new("Request rate (req/s)"))
///     .y_axis(Axis::new("TTFT (ms)").log())
///     .series(Series::new("p50", vec![(1.0, 80.0), (2.0, 95.0), (4.0, 160.0)]).marker(Marker::Circle))
///     .series(Series::new("p99", vec![(1.0, 150.0), (2.0, 240.0), (4.0, 900.0)]).marker(Marker::Square))
///     .hline(500.0, "TTFT SLO 500 ms")
///     .mark(MarkPoint::new(2.0, 240.0, "goodput"))
///     .render();
/// assert!(svg.contains("data-series=\"p99\""));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    pub(crate) frame: Frame,
    pub(crate) x_axis: Axis,
    pub(crate) panel: Panel,
}

impl Default for LineChart {
    fn default() -> Self {
        LineChart::new()
    }
}

impl LineChart {
    /// An empty 800×500 chart with untitled linear axes.
    pub fn new() -> Self {
        LineChart {
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

    /// Adds a series (drawn in the order added; default colours follow the palette).
    pub fn series(mut self, series: Series) -> Self {
        self.panel.series.push(series);
        self
    }

    decoration_builders!(panel);

    /// The SVG document.
    pub fn render(&self) -> String {
        render(
            &self.frame,
            &self.x_axis,
            std::slice::from_ref(&self.panel),
            500.0,
        )
    }
}
