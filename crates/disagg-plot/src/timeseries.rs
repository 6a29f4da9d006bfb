//! [`TimeSeries`]: stacked panels over a shared time axis.

use crate::scale::Axis;
use crate::xy::{frame_methods, render, Frame, Panel};

/// Several series over time sharing one x axis, in one or more stacked panels, each with its own
/// y axis and legend (e.g. utilisation per instance and link 0–100 %, queue depths, KV occupancy).
/// Only the bottom panel carries x tick labels.
///
/// Without [`size`](Self::size), the height grows with the number of panels: 500 px for one or two,
/// 170 px more for each further panel.
///
/// ```
/// use disagg_plot::{Axis, Panel, Series, TimeSeries};
/// let svg = TimeSeries::new()
///     .x_axis(Axis::new("Time (s)"))
///     .panel(
///         Panel::new(Axis::new("Utilisation").range(0.0, 1.0).percent())
///             .series(Series::new("prefill 0", vec![(0.0, 0.2), (1.0, 0.9), (2.0, 0.7)]).step()),
///     )
///     .panel(Panel::new(Axis::new("Queue depth (requests)")).series(Series::new("prefill 0", vec![(0.0, 0.0), (1.0, 4.0)])))
///     .render();
/// assert!(svg.contains("data-panel=\"1\""));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TimeSeries {
    frame: Frame,
    x_axis: Axis,
    panels: Vec<Panel>,
}

impl Default for TimeSeries {
    fn default() -> Self {
        TimeSeries::new()
    }
}

impl TimeSeries {
    /// No panels yet; x axis titled "Time (s)".
    pub fn new() -> Self {
        TimeSeries {
            frame: Frame::default(),
            x_axis: Axis::new("Time (s)"),
            panels: Vec::new(),
        }
    }

    frame_methods!();

    /// Sets the shared x axis.
    pub fn x_axis(mut self, axis: Axis) -> Self {
        self.x_axis = axis;
        self
    }

    /// Adds a panel below the previous ones.
    pub fn panel(mut self, panel: Panel) -> Self {
        self.panels.push(panel);
        self
    }

    /// The SVG document.
    pub fn render(&self) -> String {
        let n = self.panels.len().max(1);
        let default_h = if n <= 2 {
            500.0
        } else {
            500.0 + 170.0 * (n - 2) as f64
        };
        render(&self.frame, &self.x_axis, &self.panels, default_h)
    }
}
