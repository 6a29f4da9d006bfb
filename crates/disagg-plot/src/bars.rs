//! [`StackedBars`]: one bar per category with stacked segments.

use crate::legend::{self, Entry, LegendPos, Obstacles, Rect, Swatch};
use crate::scale::{format_tick, Axis, Resolved, Scale, TickFormat};
use crate::style::{palette, Color};
use crate::svg::{
    escape, num, text_width, truncate_to_width, Anchor, SvgWriter, AXIS_TITLE_SIZE, INK,
    LABEL_SIZE, MUTED, TICK_SIZE,
};
use crate::xy::{
    draw_axes, draw_no_data, draw_x_title, draw_y_title, fit_x, fit_y, frame_methods, y_gutter,
    Frame,
};

/// Direction of the bars.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BarOrientation {
    /// Vertical when every category name fits under its bar, horizontal otherwise (long
    /// configuration names then sit left of the bars).
    #[default]
    Auto,
    /// Vertical bars; names that do not fit are rotated and shortened.
    Vertical,
    /// Horizontal bars, names on the left (shortened past 38 % of the width).
    Horizontal,
}

/// One bar per category (e.g. configuration), split into stacked segments (e.g. stages: queue,
/// prefill, hand-off, decode). Each segment is a series: `<g class="series" data-series="stage">`
/// holding one `<rect data-category="...">` per category. Negative and non-finite values count as
/// zero (and in the series' `data-skipped`). The value axis is always linear from zero.
///
/// ```
/// use disagg_plot::{Axis, StackedBars};
/// let svg = StackedBars::new()
///     .value_axis(Axis::new("Mean time per request (ms)"))
///     .categories(["1P:1D", "2P:1D"])
///     .segment("prefill", vec![40.0, 30.0])
///     .segment("hand-off", vec![12.0, 12.0])
///     .segment("decode", vec![300.0, 320.0])
///     .totals(true)
///     .render();
/// assert!(svg.contains("data-series=\"hand-off\""));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct StackedBars {
    frame: Frame,
    categories: Vec<String>,
    segments: Vec<(String, Vec<f64>, Option<Color>)>,
    value_axis: Axis,
    category_title: String,
    orientation: BarOrientation,
    legend: LegendPos,
    totals: bool,
}

impl Default for StackedBars {
    fn default() -> Self {
        StackedBars::new()
    }
}

impl StackedBars {
    /// No categories or segments yet.
    pub fn new() -> Self {
        StackedBars {
            frame: Frame::default(),
            categories: Vec::new(),
            segments: Vec::new(),
            value_axis: Axis::new(""),
            category_title: String::new(),
            orientation: BarOrientation::Auto,
            legend: LegendPos::Auto,
            totals: false,
        }
    }

    frame_methods!();

    /// Sets the category names (one bar each, in order).
    pub fn categories<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.categories = names.into_iter().map(Into::into).collect();
        self
    }

    /// Adds a segment (stack layer) with one value per category, in category order; missing
    /// values are zero, extra ones ignored.
    pub fn segment(mut self, name: impl Into<String>, values: Vec<f64>) -> Self {
        self.segments.push((name.into(), values, None));
        self
    }

    /// Adds a segment with an explicit colour.
    pub fn segment_color(
        mut self,
        name: impl Into<String>,
        values: Vec<f64>,
        color: Color,
    ) -> Self {
        self.segments.push((name.into(), values, Some(color)));
        self
    }

    /// Sets the value axis (title with unit; range and format are honoured, the scale is always
    /// linear).
    pub fn value_axis(mut self, axis: Axis) -> Self {
        self.value_axis = axis;
        self
    }

    /// Sets the title of the category axis (default none).
    pub fn category_title(mut self, title: impl Into<String>) -> Self {
        self.category_title = title.into();
        self
    }

    /// Sets the bar direction.
    pub fn orientation(mut self, o: BarOrientation) -> Self {
        self.orientation = o;
        self
    }

    /// Sets the legend position.
    pub fn legend(mut self, pos: LegendPos) -> Self {
        self.legend = pos;
        self
    }

    /// Writes each bar's total at its end.
    pub fn totals(mut self, on: bool) -> Self {
        self.totals = on;
        self
    }

    fn value(&self, seg: usize, cat: usize) -> f64 {
        let v = self.segments[seg].1.get(cat).copied().unwrap_or(0.0);
        if v.is_finite() && v > 0.0 {
            v
        } else {
            0.0
        }
    }

    fn color(&self, seg: usize) -> Color {
        self.segments[seg].2.unwrap_or_else(|| palette(seg))
    }

    /// The SVG document.
    pub fn render(&self) -> String {
        let (width, height) = self.frame.size(500.0);
        let mut w = SvgWriter::new(width, height);
        let top = self.frame.draw_title(&mut w, width);
        let nc = self.categories.len();
        let totals: Vec<f64> = (0..nc)
            .map(|c| (0..self.segments.len()).map(|s| self.value(s, c)).sum())
            .collect();
        let max_total = totals.iter().copied().fold(0.0, f64::max);
        let has_data = nc > 0 && !self.segments.is_empty() && max_total > 0.0;
        let mut axis = self.value_axis.clone().scale(Scale::Linear).include_zero();
        if axis.format == TickFormat::Percent && axis.max.is_none() && max_total <= 1.0 {
            axis = axis.max(1.0);
        }
        let head = if self.totals { 1.1 } else { 1.0 };
        let ext = if has_data {
            Some((0.0, max_total * head))
        } else {
            None
        };

        let max_label_w = self
            .categories
            .iter()
            .map(|c| text_width(c, TICK_SIZE))
            .fold(0.0, f64::max);
        let entries: Vec<Entry> = self
            .segments
            .iter()
            .enumerate()
            .map(|(i, s)| Entry {
                name: s.0.clone(),
                swatch: Swatch::Block(self.color(i)),
            })
            .collect();
        let horizontal = match self.orientation {
            BarOrientation::Horizontal => true,
            BarOrientation::Vertical => false,
            BarOrientation::Auto => {
                let approx_plot_w = width - 90.0 - 22.0;
                nc > 16 || (nc > 0 && max_label_w > approx_plot_w / nc as f64 - 8.0)
            }
        };
        // Vertical bars list the legend top-down like the stack (last segment on top).
        let entries: Vec<Entry> = if horizontal {
            entries
        } else {
            entries.into_iter().rev().collect()
        };

        let value_title = !axis.title.is_empty();
        let cat_title = !self.category_title.is_empty();
        let mut right = 22.0;
        let mut legend_place: Option<(legend::Layout, f64, f64, bool)> = None;
        let mut outside = self.legend == LegendPos::OutsideRight;
        let show_legend = has_data && !entries.is_empty() && self.legend != LegendPos::Hidden;

        for _pass in 0..2 {
            if outside && show_legend {
                let lay = legend::layout(&entries, (width * 0.28).min(230.0), height - top - 20.0);
                right = lay.w + 18.0;
            }
            let g = self.geometry(
                horizontal,
                &axis,
                ext,
                width,
                height,
                top,
                right,
                value_title,
                cat_title,
                max_label_w,
            );
            legend_place = None;
            if !show_legend {
                break;
            }
            if outside {
                let lay = legend::layout(&entries, (width * 0.28).min(230.0), height - top - 20.0);
                legend_place = Some((lay, g.plot.right() + 12.0, g.plot.y, false));
                break;
            }
            let lay = legend::layout(&entries, g.plot.w * 0.45, g.plot.h - 12.0);
            let explicit = self.legend != LegendPos::Auto;
            for c in legend::inside_candidates(self.legend, &g.plot, &lay) {
                if explicit || g.obstacles.is_free(&c) {
                    legend_place = Some((lay.clone(), c.x, c.y, true));
                    break;
                }
            }
            if legend_place.is_some() {
                break;
            }
            outside = true;
        }
        let g = self.geometry(
            horizontal,
            &axis,
            ext,
            width,
            height,
            top,
            right,
            value_title,
            cat_title,
            max_label_w,
        );
        let plot = g.plot;

        // Axes: value axis ticks/grid only.
        if horizontal {
            draw_axes(&mut w, &plot, Some(&g.value), None, has_data, false);
        } else {
            draw_axes(&mut w, &plot, None, Some(&g.value), false, has_data);
        }
        if !has_data {
            draw_no_data(&mut w, &plot);
        }
        // Category labels.
        w.open_group("categories", &[]);
        for (c, name) in self.categories.iter().enumerate() {
            let mid = g.band_start + (c as f64 + 0.5) * g.band;
            if horizontal {
                let t = truncate_to_width(name, TICK_SIZE, g.cat_label_w);
                w.text(
                    plot.x - 8.0,
                    mid + TICK_SIZE * 0.35,
                    &t,
                    TICK_SIZE,
                    Anchor::End,
                    INK,
                    "",
                );
            } else if g.rotate {
                let t = truncate_to_width(name, TICK_SIZE, g.cat_label_w);
                let (x, y) = (mid + 3.0, plot.bottom() + 10.0);
                let extra = format!(" transform=\"rotate(-35 {} {})\"", num(x), num(y));
                w.text(x, y, &t, TICK_SIZE, Anchor::End, INK, &extra);
            } else {
                let t = truncate_to_width(name, TICK_SIZE, g.band - 4.0);
                w.text(
                    mid,
                    plot.bottom() + 7.0 + TICK_SIZE,
                    &t,
                    TICK_SIZE,
                    Anchor::Middle,
                    INK,
                    "",
                );
            }
        }
        w.close_group();

        // Bars.
        let vm = if horizontal {
            g.value.map(plot.x, plot.right())
        } else {
            g.value.map(plot.bottom(), plot.y)
        };
        let dir = if horizontal { "horizontal" } else { "vertical" };
        w.open_group("plot", &[("data-orientation", dir.to_string())]);
        for (s, (name, values, _)) in self.segments.iter().enumerate() {
            let skipped = values
                .iter()
                .take(nc)
                .filter(|v| !(v.is_finite() && **v >= 0.0))
                .count();
            let mut attrs = vec![
                ("data-series", name.clone()),
                ("data-points", nc.to_string()),
            ];
            if skipped > 0 {
                attrs.push(("data-skipped", skipped.to_string()));
            }
            w.open_group("series", &attrs);
            let color = self.color(s).hex();
            for c in 0..nc {
                let base: f64 = (0..s).map(|k| self.value(k, c)).sum();
                let v = self.value(s, c);
                let (p0, p1) = (vm.px(base), vm.px(base + v));
                let mid = g.band_start + (c as f64 + 0.5) * g.band;
                let (x, y, rw, rh) = if horizontal {
                    (p0.min(p1), mid - g.thick / 2.0, (p1 - p0).abs(), g.thick)
                } else {
                    (mid - g.thick / 2.0, p0.min(p1), g.thick, (p1 - p0).abs())
                };
                w.raw(&format!(
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{color}\" stroke=\"#ffffff\" stroke-width=\"0.5\" data-category=\"{}\"><title>{}</title></rect>\n",
                    num(x),
                    num(y),
                    num(rw),
                    num(rh),
                    escape(&self.categories[c]),
                    escape(&format!("{} / {}: {}", self.categories[c], name, short(v)))
                ));
            }
            w.close_group();
        }
        w.close_group();
        if self.totals && has_data {
            w.open_group("totals", &[]);
            for (c, t) in totals.iter().enumerate() {
                let mid = g.band_start + (c as f64 + 0.5) * g.band;
                let p = vm.px(*t);
                if horizontal {
                    w.text(
                        p + 4.0,
                        mid + LABEL_SIZE * 0.35,
                        &short(*t),
                        LABEL_SIZE,
                        Anchor::Start,
                        MUTED,
                        "",
                    );
                } else {
                    w.text(
                        mid,
                        p - 4.0,
                        &short(*t),
                        LABEL_SIZE,
                        Anchor::Middle,
                        MUTED,
                        "",
                    );
                }
            }
            w.close_group();
        }

        // Axis titles.
        if horizontal {
            draw_x_title(
                &mut w,
                plot.x + plot.w / 2.0,
                height - 10.0,
                &axis.title,
                plot.w,
            );
            draw_y_title(
                &mut w,
                10.0 + AXIS_TITLE_SIZE * 0.8,
                plot.y + plot.h / 2.0,
                &self.category_title,
                plot.h,
            );
        } else {
            draw_y_title(
                &mut w,
                10.0 + AXIS_TITLE_SIZE * 0.8,
                plot.y + plot.h / 2.0,
                &axis.title,
                plot.h,
            );
            draw_x_title(
                &mut w,
                plot.x + plot.w / 2.0,
                height - 10.0,
                &self.category_title,
                plot.w,
            );
        }
        if let Some((lay, x, y, boxed)) = &legend_place {
            legend::draw(&mut w, lay, *x, *y, *boxed);
        }
        w.finish()
    }

    #[allow(clippy::too_many_arguments)]
    fn geometry(
        &self,
        horizontal: bool,
        axis: &Axis,
        ext: Option<(f64, f64)>,
        width: f64,
        height: f64,
        top: f64,
        right: f64,
        value_title: bool,
        cat_title: bool,
        max_label_w: f64,
    ) -> BarGeometry {
        let nc = self.categories.len().max(1);
        let title_h = AXIS_TITLE_SIZE + 10.0;
        let (plot, value, cat_label_w, rotate) = if horizontal {
            let cat_label_w = max_label_w.min(width * 0.38);
            let left = 10.0 + if cat_title { title_h } else { 0.0 } + cat_label_w + 10.0;
            let bottom = 7.0 + TICK_SIZE + 6.0 + if value_title { title_h } else { 0.0 } + 8.0;
            let pw = (width - left - right).max(40.0);
            let ph = (height - top - bottom).max(40.0);
            let value = fit_x(axis, ext, left, left + pw);
            (Rect::new(left, top, pw, ph), value, cat_label_w, false)
        } else {
            let approx_left = 90.0;
            let band = (width - approx_left - right) / nc as f64;
            let rotate = max_label_w > band - 8.0;
            let cat_label_w = if rotate {
                max_label_w.min(height * 0.25)
            } else {
                band - 4.0
            };
            let label_h = if rotate {
                cat_label_w * 0.574 + TICK_SIZE * 0.82 + 12.0
            } else {
                7.0 + TICK_SIZE + 6.0
            };
            let bottom = label_h + if cat_title { title_h } else { 0.0 } + 8.0;
            let ph = (height - top - bottom).max(40.0);
            let value = fit_y(axis, ext, ph);
            let left = y_gutter(value.ticks.max_label_chars(), value_title);
            let pw = (width - left - right).max(40.0);
            (Rect::new(left, top, pw, ph), value, cat_label_w, rotate)
        };
        let (band_start, span) = if horizontal {
            (plot.y, plot.h)
        } else {
            (plot.x, plot.w)
        };
        let band = span / nc as f64;
        let thick = (band * 0.7).min(60.0);
        let vm = if horizontal {
            value.map(plot.x, plot.right())
        } else {
            value.map(plot.bottom(), plot.y)
        };
        let mut obstacles = Obstacles::default();
        for c in 0..self.categories.len() {
            let total: f64 = (0..self.segments.len()).map(|s| self.value(s, c)).sum();
            let mid = band_start + (c as f64 + 0.5) * band;
            let (p0, p1) = (vm.px(0.0), vm.px(total));
            let pad = if self.totals {
                16.0 + text_width(&short(total), LABEL_SIZE)
            } else {
                0.0
            };
            obstacles.rects.push(if horizontal {
                Rect::new(p0.min(p1), mid - thick / 2.0, (p1 - p0).abs() + pad, thick)
            } else {
                Rect::new(
                    mid - thick / 2.0,
                    p0.min(p1) - if self.totals { 16.0 } else { 0.0 },
                    thick,
                    (p1 - p0).abs() + pad.min(16.0),
                )
            });
        }
        BarGeometry {
            plot,
            value,
            band_start,
            band,
            thick,
            cat_label_w,
            rotate,
            obstacles,
        }
    }
}

struct BarGeometry {
    plot: Rect,
    value: Resolved,
    band_start: f64,
    band: f64,
    thick: f64,
    cat_label_w: f64,
    rotate: bool,
    obstacles: Obstacles,
}

/// A value with three significant digits (SI suffix for large ones).
fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    let res = 10f64.powf(v.abs().log10().floor() - 2.0);
    format_tick(v, res, TickFormat::Auto)
}
