//! disagg-plot's integration tests, one test binary (one link): each chart kind's SVG checked
//! through the shared SVG helpers, and the gallery example.

mod common;

mod bars;
mod cdf;
mod gallery;
mod line_chart;
mod scatter;
mod timeseries;
