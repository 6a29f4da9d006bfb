//! # disagg-plot
//!
//! Small, dependency-free SVG charts for disagg's reports: latency CDFs, percentiles against rate
//! with SLO lines, SLO attainment with the goodput point, utilisation/queue/KV time series,
//! stacked stage breakdowns and the plan's Pareto frontier.
//!
//! The crate only draws: callers hand it numbers. Output is an SVG 1.1 document as a `String`:
//!
//! * **deterministic**: the same input gives the same bytes (fixed 2-decimal coordinates, no
//!   hashing, no locale, no randomness);
//! * **self-contained, needs no system fonts**: no external references, images or CSS; text uses a
//!   generic font stack ([`FONT_FAMILY`]) and the layout never measures glyphs: every text is
//!   assumed [`CHAR_WIDTH_EM`] em per character, generous enough that labels do not collide with
//!   any of the listed fonts;
//! * **inspectable**: every series is `<g class="series" data-series="NAME">`, reference lines
//!   `<g class="refline" data-label="...">`, marked points `<g class="marker" data-label="...">`,
//!   the legend `<g class="legend">` with one `<g class="legend-entry" data-series="NAME">` each.
//!
//! Robustness: empty input draws the axes with a "no data" text; NaN and infinite values are
//! skipped, as are non-positive values on log axes (the series' `data-skipped` attribute counts
//! them); a single point or a zero-width range gets a padded axis.
//!
//! ```
//! use disagg_plot::{Axis, Cdf};
//! let ttft_a: Vec<f64> = (1..=1000).map(|i| 20.0 + f64::from(i) * 0.3).collect();
//! let svg = Cdf::new()
//!     .title("Time to first token")
//!     .x_axis(Axis::new("TTFT (ms)").log())
//!     .series("1P:1D, 25 GbE", &ttft_a)
//!     .vline(250.0, "SLO")
//!     .render();
//! assert!(svg.starts_with("<?xml"));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// The builder methods every XY chart has, for reference lines, marked points and the legend,
/// on the fields `reflines`, `marks` and `legend` of `self` (or of `self.$panel`).
macro_rules! decoration_builders {
    ($($panel:ident)?) => {
        /// Adds a reference line.
        pub fn ref_line(mut self, line: $crate::RefLine) -> Self {
            self$(.$panel)?.reflines.push(line);
            self
        }

        /// Adds a horizontal reference line at `y` (e.g. an SLO on a latency axis, or 0.99 on a
        /// CDF).
        pub fn hline(self, y: f64, label: impl Into<String>) -> Self {
            self.ref_line($crate::RefLine::horizontal(y, label))
        }

        /// Adds a vertical reference line at `x` (e.g. an SLO on a CDF's latency axis).
        pub fn vline(self, x: f64, label: impl Into<String>) -> Self {
            self.ref_line($crate::RefLine::vertical(x, label))
        }

        /// Adds a marked, labelled point.
        pub fn mark(mut self, mark: $crate::MarkPoint) -> Self {
            self$(.$panel)?.marks.push(mark);
            self
        }

        /// Sets the legend position (default [`LegendPos::Auto`](crate::LegendPos::Auto)).
        pub fn legend(mut self, pos: $crate::LegendPos) -> Self {
            self$(.$panel)?.legend = pos;
            self
        }
    };
}

mod bars;
mod cdf;
mod legend;
mod line;
mod scale;
mod scatter;
mod style;
mod svg;
mod timeseries;
mod xy;

pub use bars::{BarOrientation, StackedBars};
pub use cdf::{ecdf, Cdf, DEFAULT_CDF_POINTS};
pub use legend::LegendPos;
pub use line::LineChart;
pub use scale::{format_tick, nice_step, Axis, Scale, TickFormat};
pub use scatter::{pareto_front, Scatter};
pub use style::{default_dash, palette, Color, Dash, Marker, Style, PALETTE};
pub use svg::{escape, num, text_width, CHAR_WIDTH_EM, FONT_FAMILY};
pub use timeseries::TimeSeries;
pub use xy::{MarkPoint, Orientation, Panel, RefLine, Series};
