//! XY data (series, reference lines, marked points, panels) and the renderer shared by
//! [`LineChart`](crate::LineChart), [`Cdf`](crate::Cdf), [`Scatter`](crate::Scatter) and
//! [`TimeSeries`](crate::TimeSeries).

use crate::legend::{self, Entry, LegendPos, Obstacles, Rect, Swatch};
use crate::scale::{Axis, Resolved};
use crate::style::{default_dash, palette, Color, Dash, Marker, Style};
use crate::svg::{
    num, text_width, truncate_to_width, Anchor, SvgWriter, AXIS_TITLE_SIZE, FRAME, GRID, INK,
    LABEL_SIZE, MUTED, TICK_SIZE, TITLE_SIZE,
};

/// One named XY series. Non-finite points (and non-positive ones on a log axis) are skipped when
/// drawn.
///
/// ```
/// use disagg_plot::{Marker, Series};
/// let s = Series::new("p99 TTFT", vec![(1.0, 120.0), (2.0, 180.0)]).marker(Marker::Circle).dashed();
/// assert_eq!(s.points().len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
    pub(crate) style: Style,
    pub(crate) labels: Vec<String>,
}

impl Series {
    /// A series from `(x, y)` points, drawn as a line in the palette colour.
    pub fn new(name: impl Into<String>, points: impl IntoIterator<Item = (f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points: points.into_iter().collect(),
            style: Style::default(),
            labels: Vec::new(),
        }
    }

    /// A series from parallel x and y slices (the shorter length wins).
    pub fn from_xy(name: impl Into<String>, xs: &[f64], ys: &[f64]) -> Self {
        Series::new(name, xs.iter().copied().zip(ys.iter().copied()))
    }

    /// The name (legend text and `data-series` attribute).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The points as given.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// Replaces the whole style.
    pub fn style(mut self, style: Style) -> Self {
        self.style = style;
        self
    }

    /// Sets the colour (default: palette by series index).
    pub fn color(mut self, color: Color) -> Self {
        self.style.color = Some(color);
        self
    }

    /// Draws the line dashed.
    pub fn dashed(mut self) -> Self {
        self.style.dash = Some(Dash::Dashed);
        self
    }

    /// Sets the line pattern.
    pub fn dash(mut self, dash: Dash) -> Self {
        self.style.dash = Some(dash);
        self
    }

    /// Draws a marker at every point.
    pub fn marker(mut self, marker: Marker) -> Self {
        self.style.marker = Some(marker);
        self
    }

    /// Markers only, no connecting line (a circle unless a marker was set).
    pub fn markers_only(mut self) -> Self {
        self.style.line = false;
        self.style.marker.get_or_insert(Marker::Circle);
        self
    }

    /// Draws as a step function: each value holds until the next point's x.
    pub fn step(mut self) -> Self {
        self.style.step = true;
        self
    }

    /// Sets the stroke width in px.
    pub fn width(mut self, width: f64) -> Self {
        self.style.width = width;
        self
    }

    /// Sets the marker radius in px.
    pub fn marker_size(mut self, r: f64) -> Self {
        self.style.marker_size = r;
        self
    }

    /// Text labels for the points, in point order (empty strings draw nothing). Labels are placed
    /// next to their points, avoiding each other; a label that cannot be placed without overlap
    /// is left out (counted in the `data-hidden-labels` attribute).
    pub fn labels<S: Into<String>>(mut self, labels: impl IntoIterator<Item = S>) -> Self {
        self.labels = labels.into_iter().map(Into::into).collect();
        self
    }
}

/// Orientation of a [`RefLine`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Orientation {
    /// A line at a fixed y (e.g. an SLO threshold on a latency axis).
    Horizontal,
    /// A line at a fixed x (e.g. an SLO on a CDF's latency axis, or a saturation rate).
    Vertical,
}

/// A labelled reference line, such as an SLO. Drawn in `<g class="refline" data-label="...">`.
#[derive(Clone, Debug, PartialEq)]
pub struct RefLine {
    pub(crate) orientation: Orientation,
    pub(crate) value: f64,
    pub(crate) label: String,
    pub(crate) color: Color,
    pub(crate) dash: Dash,
}

impl RefLine {
    /// A horizontal line at `y`.
    pub fn horizontal(y: f64, label: impl Into<String>) -> Self {
        RefLine {
            orientation: Orientation::Horizontal,
            value: y,
            label: label.into(),
            color: REF_COLOR,
            dash: Dash::Dashed,
        }
    }

    /// A vertical line at `x`.
    pub fn vertical(x: f64, label: impl Into<String>) -> Self {
        RefLine {
            orientation: Orientation::Vertical,
            value: x,
            label: label.into(),
            color: REF_COLOR,
            dash: Dash::Dashed,
        }
    }

    /// Sets the colour (default dark red).
    pub fn color(mut self, color: Color) -> Self {
        self.color = color;
        self
    }

    /// Sets the line pattern (default dashed).
    pub fn dash(mut self, dash: Dash) -> Self {
        self.dash = dash;
        self
    }
}

const REF_COLOR: Color = Color::rgb(0xb2, 0x18, 0x2b);
const MARK_COLOR: Color = Color::rgb(0x11, 0x11, 0x11);

/// A highlighted, labelled point (e.g. the goodput). Drawn in `<g class="marker" data-label="...">`.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkPoint {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) label: String,
    pub(crate) color: Color,
}

impl MarkPoint {
    /// A marked point at (`x`, `y`) with a label.
    pub fn new(x: f64, y: f64, label: impl Into<String>) -> Self {
        MarkPoint {
            x,
            y,
            label: label.into(),
            color: MARK_COLOR,
        }
    }

    /// Sets the colour (default near-black).
    pub fn color(mut self, color: Color) -> Self {
        self.color = color;
        self
    }
}

/// One plot area with its own y axis: series, reference lines, marked points, legend. A
/// [`LineChart`](crate::LineChart) has one; a [`TimeSeries`](crate::TimeSeries) stacks several
/// that share the x axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    pub(crate) y_axis: Axis,
    pub(crate) series: Vec<Series>,
    pub(crate) reflines: Vec<RefLine>,
    pub(crate) marks: Vec<MarkPoint>,
    pub(crate) legend: LegendPos,
}

impl Default for Panel {
    fn default() -> Self {
        Panel::new(Axis::new(""))
    }
}

impl Panel {
    /// An empty panel with the given y axis.
    pub fn new(y_axis: Axis) -> Self {
        Panel {
            y_axis,
            series: Vec::new(),
            reflines: Vec::new(),
            marks: Vec::new(),
            legend: LegendPos::Auto,
        }
    }

    /// Sets the y axis.
    pub fn y_axis(mut self, axis: Axis) -> Self {
        self.y_axis = axis;
        self
    }

    /// Adds a series.
    pub fn series(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }

    decoration_builders!();
}

/// Size, title and id prefix shared by all charts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Frame {
    pub title: String,
    pub width: f64,
    pub height: Option<f64>,
    pub id_prefix: String,
    /// Lines of a key drawn under the x axis (e.g. what numbered points are); none by default.
    pub key: Vec<String>,
}

impl Default for Frame {
    fn default() -> Self {
        Frame {
            title: String::new(),
            width: 800.0,
            height: None,
            id_prefix: "dp".into(),
            key: Vec::new(),
        }
    }
}

/// Height of one line of a key, px.
pub(crate) const KEY_LINE: f64 = 15.0;

impl Frame {
    /// The height the key takes under the chart (0 without one).
    pub fn key_height(&self) -> f64 {
        if self.key.is_empty() {
            0.0
        } else {
            10.0 + KEY_LINE * self.key.len() as f64
        }
    }

    pub fn size(&self, default_height: f64) -> (f64, f64) {
        let w = if self.width.is_finite() {
            self.width.max(200.0)
        } else {
            800.0
        };
        let h = self
            .height
            .filter(|h| h.is_finite())
            .unwrap_or(default_height)
            .max(150.0);
        (w, h)
    }

    /// A prefix usable in XML ids (letters, digits, `-`, `_`).
    pub fn id(&self) -> String {
        let s: String = self
            .id_prefix
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if s.is_empty() || !s.starts_with(|c: char| c.is_ascii_alphabetic()) {
            format!("dp{s}")
        } else {
            s
        }
    }

    /// Draws the title (if any) and returns the y where content may start.
    pub fn draw_title(&self, w: &mut SvgWriter, width: f64) -> f64 {
        if self.title.is_empty() {
            return 12.0;
        }
        let t = truncate_to_width(&self.title, TITLE_SIZE, width - 20.0);
        w.text(
            width / 2.0,
            10.0 + TITLE_SIZE,
            &t,
            TITLE_SIZE,
            Anchor::Middle,
            INK,
            " class=\"title\" font-weight=\"bold\"",
        );
        16.0 + TITLE_SIZE + 10.0
    }
}

/// Generates the builder methods every chart shares (`title`, `size`, `id_prefix`).
macro_rules! frame_methods {
    () => {
        /// Sets the title drawn at the top.
        pub fn title(mut self, title: impl Into<String>) -> Self {
            self.frame.title = title.into();
            self
        }

        /// Sets the size in px (default 800×500; at least 200×150).
        pub fn size(mut self, width: u32, height: u32) -> Self {
            self.frame.width = f64::from(width);
            self.frame.height = Some(f64::from(height));
            self
        }

        /// Sets the prefix of the XML ids (clip paths) so several charts can be inlined in one
        /// HTML page (default `dp`).
        pub fn id_prefix(mut self, prefix: impl Into<String>) -> Self {
            self.frame.id_prefix = prefix.into();
            self
        }
    };
}
pub(crate) use frame_methods;

/// A series after filtering, in data space.
struct Prepared {
    name: String,
    color: Color,
    dash: Dash,
    style: Style,
    points: Vec<(f64, f64)>,
    labels: Vec<String>,
    skipped: usize,
}

fn prepare(panel: &Panel, x_axis: &Axis, names: &[&str]) -> Vec<Prepared> {
    panel
        .series
        .iter()
        .map(|s| {
            let i = names.iter().position(|n| *n == s.name).unwrap_or(0);
            let mut points = Vec::with_capacity(s.points.len());
            let mut labels = Vec::new();
            let mut skipped = 0;
            for (j, &(x, y)) in s.points.iter().enumerate() {
                if x_axis.accepts(x) && panel.y_axis.accepts(y) {
                    points.push((x, y));
                    if !s.labels.is_empty() {
                        labels.push(s.labels.get(j).cloned().unwrap_or_default());
                    }
                } else {
                    skipped += 1;
                }
            }
            Prepared {
                name: s.name.clone(),
                color: s.style.color.unwrap_or_else(|| palette(i)),
                dash: s.style.dash.unwrap_or_else(|| default_dash(i)),
                style: s.style.clone(),
                points,
                labels,
                skipped,
            }
        })
        .collect()
}

fn extend(ext: &mut Option<(f64, f64)>, v: f64) {
    *ext = Some(match *ext {
        None => (v, v),
        Some((a, b)) => (a.min(v), b.max(v)),
    });
}

fn legend_entries(prep: &[Prepared]) -> Vec<Entry> {
    prep.iter()
        .map(|p| Entry {
            name: p.name.clone(),
            swatch: Swatch::Line {
                color: p.color,
                dash: p.dash,
                width: p.style.width,
                marker: p.style.marker,
                line: p.style.line,
            },
        })
        .collect()
}

/// A point in pixels.
type Pt = (f64, f64);
/// A segment in pixels.
type Seg = (Pt, Pt);

/// Placed text: position, anchor and the rectangle it covers.
#[derive(Clone, Debug)]
struct Placed {
    x: f64,
    y: f64,
    anchor: Anchor,
    rect: Rect,
}

fn text_rect(x: f64, baseline: f64, text: &str, size: f64, anchor: Anchor) -> Rect {
    let w = text_width(text, size);
    let x0 = match anchor {
        Anchor::Start => x,
        Anchor::Middle => x - w / 2.0,
        Anchor::End => x - w,
    };
    Rect::new(x0 - 1.0, baseline - size * 0.8, w + 2.0, size * 1.05)
}

fn inside(outer: &Rect, r: &Rect) -> bool {
    r.x >= outer.x - 0.5
        && r.right() <= outer.right() + 0.5
        && r.y >= outer.y - 0.5
        && r.bottom() <= outer.bottom() + 0.5
}

/// Pixel geometry of one panel for one layout pass.
struct Geometry {
    lines: Vec<Vec<(f64, f64)>>,
    markers: Vec<Vec<(f64, f64)>>,
    refs: Vec<Option<(Pt, Pt, Placed)>>,
    marks: Vec<Option<(Pt, Option<Placed>)>>,
    point_labels: Vec<Vec<(String, Placed)>>,
    hidden_labels: Vec<usize>,
    obstacles: Obstacles,
}

fn step_points(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(pts.len() * 2);
    for (i, &p) in pts.iter().enumerate() {
        if i > 0 {
            out.push((p.0, pts[i - 1].1));
        }
        out.push(p);
    }
    out
}

fn geometry(
    panel: &Panel,
    prep: &[Prepared],
    xr: &Resolved,
    yr: &Resolved,
    plot: &Rect,
) -> Geometry {
    let xm = xr.map(plot.x, plot.right());
    let ym = yr.map(plot.bottom(), plot.y);
    let to_px = |pts: &[(f64, f64)]| {
        pts.iter()
            .map(|&(x, y)| (xm.px(x), ym.px(y)))
            .collect::<Vec<_>>()
    };
    let mut obstacles = Obstacles::default();
    let mut lines = Vec::new();
    let mut markers = Vec::new();
    for p in prep {
        let line = if p.style.line {
            if p.style.step {
                to_px(&step_points(&p.points))
            } else {
                to_px(&p.points)
            }
        } else {
            Vec::new()
        };
        let mk = if p.style.marker.is_some() || (p.style.line && p.points.len() == 1) {
            to_px(&p.points)
        } else {
            Vec::new()
        };
        // Only the visible part matters for obstacles.
        let vis: Vec<(f64, f64)> = line.clone();
        obstacles.add_polyline(&vis, true, 0.0);
        for q in &mk {
            let r = p.style.marker_size.max(2.0) + 1.0;
            obstacles
                .rects
                .push(Rect::new(q.0 - r, q.1 - r, 2.0 * r, 2.0 * r));
        }
        lines.push(line);
        markers.push(mk);
    }

    // Reference lines, then their labels (kept off each other, other reference lines and, where
    // possible, the data).
    let mut placed_labels: Vec<Rect> = Vec::new();
    let segs: Vec<Option<Seg>> = panel
        .reflines
        .iter()
        .map(|r| match r.orientation {
            Orientation::Horizontal if panel.y_axis.accepts(r.value) && yr.contains(r.value) => {
                let y = ym.px(r.value);
                Some(((plot.x, y), (plot.right(), y)))
            }
            Orientation::Vertical if xr_accepts(xr, r.value) && xr.contains(r.value) => {
                let x = xm.px(r.value);
                Some(((x, plot.y), (x, plot.bottom())))
            }
            _ => None,
        })
        .collect();
    let mut refs = Vec::new();
    for (ri, r) in panel.reflines.iter().enumerate() {
        let Some((a, b)) = segs[ri] else {
            refs.push(None);
            continue;
        };
        let s = LABEL_SIZE;
        let tw = text_width(&r.label, s);
        let mut cands = Vec::new();
        match r.orientation {
            Orientation::Horizontal => {
                let y = a.1;
                for dy in [-4.0, s + 3.0] {
                    cands.push((plot.right() - 4.0, y + dy, Anchor::End));
                    cands.push((plot.x + 4.0, y + dy, Anchor::Start));
                    cands.push((plot.x + plot.w / 2.0, y + dy, Anchor::Middle));
                }
            }
            Orientation::Vertical => {
                let x = a.0;
                for k in 0..4 {
                    for y in [
                        plot.y + s + 3.0 + k as f64 * (s + 4.0),
                        plot.bottom() - 5.0 - k as f64 * (s + 4.0),
                    ] {
                        if x + 4.0 + tw <= plot.right() {
                            cands.push((x + 4.0, y, Anchor::Start));
                        }
                        cands.push((x - 4.0, y, Anchor::End));
                    }
                }
            }
        }
        let mut best = None;
        let mut ok_labels = None;
        for (cx, cy, an) in &cands {
            let rect = text_rect(*cx, *cy, &r.label, s, *an);
            if !inside(plot, &rect)
                || placed_labels.iter().any(|o| o.intersects(&rect))
                || segs
                    .iter()
                    .enumerate()
                    .any(|(j, sg)| j != ri && sg.is_some_and(|(p, q)| rect.hits_segment(p, q)))
            {
                continue;
            }
            let pl = Placed {
                x: *cx,
                y: *cy,
                anchor: *an,
                rect,
            };
            if obstacles.is_free(&rect) {
                best = Some(pl);
                break;
            }
            if ok_labels.is_none() {
                ok_labels = Some(pl);
            }
        }
        let placed = best.or(ok_labels).unwrap_or_else(|| {
            let (cx, cy, an) = cands[0];
            Placed {
                x: cx,
                y: cy,
                anchor: an,
                rect: text_rect(cx, cy, &r.label, s, an),
            }
        });
        if !r.label.is_empty() {
            placed_labels.push(placed.rect);
        }
        refs.push(Some((a, b, placed)));
    }
    for (a, b) in segs.iter().flatten() {
        obstacles.segments.push((*a, *b));
    }

    // Marked points.
    let mut marks = Vec::new();
    for m in &panel.marks {
        if !(xr_accepts(xr, m.x) && panel.y_axis.accepts(m.y)) {
            marks.push(None);
            continue;
        }
        let (px, py) = (xm.px(m.x), ym.px(m.y));
        obstacles
            .rects
            .push(Rect::new(px - 8.0, py - 8.0, 16.0, 16.0));
        let s = LABEL_SIZE + 1.0;
        let cands = [
            (px + 10.0, py - 10.0, Anchor::Start),
            (px - 10.0, py - 10.0, Anchor::End),
            (px + 10.0, py + s + 8.0, Anchor::Start),
            (px - 10.0, py + s + 8.0, Anchor::End),
            (px, py - 14.0, Anchor::Middle),
            (px, py + s + 12.0, Anchor::Middle),
        ];
        let mut best: Option<Placed> = None;
        let mut fallback: Option<Placed> = None;
        if !m.label.is_empty() {
            for (cx, cy, an) in cands {
                let rect = text_rect(cx, cy, &m.label, s, an);
                if !inside(plot, &rect) || placed_labels.iter().any(|o| o.intersects(&rect)) {
                    continue;
                }
                if fallback.is_none() {
                    fallback = Some(Placed {
                        x: cx,
                        y: cy,
                        anchor: an,
                        rect,
                    });
                }
                if obstacles.is_free(&rect) {
                    best = Some(Placed {
                        x: cx,
                        y: cy,
                        anchor: an,
                        rect,
                    });
                    break;
                }
            }
        }
        let placed = best.or(fallback).or_else(|| {
            if m.label.is_empty() {
                None
            } else {
                let (cx, cy, an) = cands[0];
                Some(Placed {
                    x: cx,
                    y: cy,
                    anchor: an,
                    rect: text_rect(cx, cy, &m.label, s, an),
                })
            }
        });
        if let Some(p) = &placed {
            placed_labels.push(p.rect);
        }
        marks.push(Some(((px, py), placed)));
    }

    // Per-point labels.
    let mut point_labels = Vec::new();
    let mut hidden_labels = Vec::new();
    let all_points: Vec<Rect> = markers
        .iter()
        .flatten()
        .map(|q| Rect::new(q.0 - 3.0, q.1 - 3.0, 6.0, 6.0))
        .collect();
    for p in prep {
        let mut out = Vec::new();
        let mut hidden = 0;
        for (j, label) in p.labels.iter().enumerate() {
            if label.is_empty() {
                continue;
            }
            let (x, y) = (xm.px(p.points[j].0), ym.px(p.points[j].1));
            let s = LABEL_SIZE;
            let cands = [
                (x + 7.0, y + s * 0.35, Anchor::Start),
                (x - 7.0, y + s * 0.35, Anchor::End),
                (x, y - 8.0, Anchor::Middle),
                (x, y + s + 6.0, Anchor::Middle),
                (x + 5.0, y - 6.0, Anchor::Start),
                (x - 5.0, y - 6.0, Anchor::End),
                (x + 5.0, y + s + 4.0, Anchor::Start),
                (x - 5.0, y + s + 4.0, Anchor::End),
            ];
            // Best: clear of everything, lines included; else clear of other labels and points.
            let mut ok = None;
            let mut fallback = None;
            for (cx, cy, an) in cands {
                let rect = text_rect(cx, cy, label, s, an);
                if inside(plot, &rect)
                    && !placed_labels.iter().any(|o| o.intersects(&rect))
                    && !all_points.iter().any(|o| o.intersects(&rect))
                {
                    let pl = Placed {
                        x: cx,
                        y: cy,
                        anchor: an,
                        rect,
                    };
                    if obstacles.is_free(&rect) {
                        ok = Some(pl);
                        break;
                    }
                    if fallback.is_none() {
                        fallback = Some(pl);
                    }
                }
            }
            let ok = ok.or(fallback);
            match ok {
                Some(pl) => {
                    placed_labels.push(pl.rect);
                    out.push((label.clone(), pl));
                }
                None => hidden += 1,
            }
        }
        point_labels.push(out);
        hidden_labels.push(hidden);
    }
    obstacles.rects.extend(placed_labels);
    Geometry {
        lines,
        markers,
        refs,
        marks,
        point_labels,
        hidden_labels,
        obstacles,
    }
}

fn xr_accepts(xr: &Resolved, v: f64) -> bool {
    v.is_finite() && (!xr.log || v > 0.0)
}

/// Chooses x ticks so that labels do not overlap at the given pixel width.
pub(crate) fn fit_x(axis: &Axis, extent: Option<(f64, f64)>, p0: f64, p1: f64) -> Resolved {
    let w = (p1 - p0).max(1.0);
    let mut t = ((w / 80.0) as usize).clamp(2, 10);
    loop {
        let r = axis.resolve(extent, t);
        if t <= 2 || x_labels_fit(&r, p0, p1) {
            return thin_x_labels(r, p0, p1);
        }
        t -= 1;
    }
}

fn x_labels_fit(r: &Resolved, p0: f64, p1: f64) -> bool {
    let m = r.map(p0, p1);
    r.ticks.major.windows(2).all(|w| {
        let d = (m.px(w[1].0) - m.px(w[0].0)).abs();
        d >= (text_width(&w[0].1, TICK_SIZE) + text_width(&w[1].1, TICK_SIZE)) / 2.0 + 10.0
    })
}

/// Last resort: drops labels (keeping the tick marks as minor ticks) until none overlap.
fn thin_x_labels(mut r: Resolved, p0: f64, p1: f64) -> Resolved {
    let m = r.map(p0, p1);
    let mut kept = Vec::new();
    let mut last_right = f64::NEG_INFINITY;
    for (v, l) in std::mem::take(&mut r.ticks.major) {
        let c = m.px(v);
        let hw = text_width(&l, TICK_SIZE) / 2.0;
        if c - hw >= last_right + 8.0 {
            last_right = c + hw;
            kept.push((v, l));
        } else {
            r.ticks.minor.push(v);
        }
    }
    r.ticks.major = kept;
    r
}

/// Y ticks for a panel of the given height.
pub(crate) fn fit_y(axis: &Axis, extent: Option<(f64, f64)>, h: f64) -> Resolved {
    let t = ((h / 36.0) as usize).clamp(2, 8);
    axis.resolve(extent, t)
}

/// Draws grid, frame, ticks and tick labels of one plot rectangle.
#[allow(clippy::too_many_arguments)]
pub(crate) fn draw_axes(
    w: &mut SvgWriter,
    plot: &Rect,
    xr: Option<&Resolved>,
    yr: Option<&Resolved>,
    x_labels: bool,
    y_labels: bool,
) {
    w.open_group("axes", &[]);
    let xm = xr.map(|r| r.map(plot.x, plot.right()));
    let ym = yr.map(|r| r.map(plot.bottom(), plot.y));
    w.open_group("grid", &[]);
    if let (Some(r), Some(m)) = (xr, xm) {
        for (v, _) in &r.ticks.major {
            let x = m.px(*v);
            w.line(x, plot.y, x, plot.bottom(), GRID, 1.0, Dash::Solid);
        }
    }
    if let (Some(r), Some(m)) = (yr, ym) {
        for (v, _) in &r.ticks.major {
            let y = m.px(*v);
            w.line(plot.x, y, plot.right(), y, GRID, 1.0, Dash::Solid);
        }
    }
    w.close_group();
    w.rect(
        plot.x,
        plot.y,
        plot.w,
        plot.h,
        "none",
        Some((FRAME, 1.0)),
        "",
    );
    if let (Some(r), Some(m)) = (xr, xm) {
        for v in &r.ticks.minor {
            let x = m.px(*v);
            w.line(
                x,
                plot.bottom(),
                x,
                plot.bottom() + 3.0,
                FRAME,
                1.0,
                Dash::Solid,
            );
        }
        for (v, l) in &r.ticks.major {
            let x = m.px(*v);
            w.line(
                x,
                plot.bottom(),
                x,
                plot.bottom() + 5.0,
                FRAME,
                1.0,
                Dash::Solid,
            );
            if x_labels {
                w.text(
                    x,
                    plot.bottom() + 7.0 + TICK_SIZE,
                    l,
                    TICK_SIZE,
                    Anchor::Middle,
                    MUTED,
                    "",
                );
            }
        }
    }
    if let (Some(r), Some(m)) = (yr, ym) {
        for v in &r.ticks.minor {
            let y = m.px(*v);
            w.line(plot.x - 3.0, y, plot.x, y, FRAME, 1.0, Dash::Solid);
        }
        for (v, l) in &r.ticks.major {
            let y = m.px(*v);
            w.line(plot.x - 5.0, y, plot.x, y, FRAME, 1.0, Dash::Solid);
            if y_labels {
                w.text(
                    plot.x - 8.0,
                    y + TICK_SIZE * 0.35,
                    l,
                    TICK_SIZE,
                    Anchor::End,
                    MUTED,
                    "",
                );
            }
        }
    }
    w.close_group();
}

/// A rotated (vertical) axis title centred on `cy`, truncated to `max_len` px.
pub(crate) fn draw_y_title(w: &mut SvgWriter, x: f64, cy: f64, title: &str, max_len: f64) {
    if title.is_empty() {
        return;
    }
    let t = truncate_to_width(title, AXIS_TITLE_SIZE, max_len);
    let extra = format!(
        " class=\"axis-title\" transform=\"rotate(-90 {} {})\"",
        num(x),
        num(cy)
    );
    w.text(x, cy, &t, AXIS_TITLE_SIZE, Anchor::Middle, INK, &extra);
}

/// A horizontal axis title centred on `cx` with its baseline at `y`.
pub(crate) fn draw_x_title(w: &mut SvgWriter, cx: f64, y: f64, title: &str, max_len: f64) {
    if title.is_empty() {
        return;
    }
    let t = truncate_to_width(title, AXIS_TITLE_SIZE, max_len);
    w.text(
        cx,
        y,
        &t,
        AXIS_TITLE_SIZE,
        Anchor::Middle,
        INK,
        " class=\"axis-title\"",
    );
}

pub(crate) fn draw_no_data(w: &mut SvgWriter, plot: &Rect) {
    w.text(
        plot.x + plot.w / 2.0,
        plot.y + plot.h / 2.0 + 5.0,
        "no data",
        14.0,
        Anchor::Middle,
        "#999999",
        " class=\"no-data\"",
    );
}

/// Width reserved left of the plot for y tick labels and the y title.
pub(crate) fn y_gutter(max_label_chars: usize, has_title: bool) -> f64 {
    10.0 + if has_title {
        AXIS_TITLE_SIZE + 8.0
    } else {
        0.0
    } + max_label_chars as f64 * 0.6 * TICK_SIZE
        + 9.0
}

/// Renders panels stacked vertically that share one x axis.
pub(crate) fn render(
    frame: &Frame,
    x_axis: &Axis,
    panels: &[Panel],
    default_height: f64,
) -> String {
    let (width, height) = frame.size(default_height);
    let mut w = SvgWriter::new(width, height);
    let top = if frame.title.is_empty() {
        12.0
    } else {
        16.0 + TITLE_SIZE + 10.0
    };
    let panels: Vec<Panel> = if panels.is_empty() {
        vec![Panel::default()]
    } else {
        panels.to_vec()
    };
    let n = panels.len();

    // Default colours by name in order of first appearance, so a name keeps its colour across
    // panels.
    let mut names: Vec<&str> = Vec::new();
    for s in panels.iter().flat_map(|p| &p.series) {
        if !names.contains(&s.name.as_str()) {
            names.push(&s.name);
        }
    }
    let preps: Vec<Vec<Prepared>> = panels.iter().map(|p| prepare(p, x_axis, &names)).collect();
    let has_data: Vec<bool> = preps
        .iter()
        .map(|ps| ps.iter().any(|s| !s.points.is_empty()))
        .collect();

    // Extents.
    let mut xext = None;
    for (panel, prep) in panels.iter().zip(&preps) {
        for s in prep {
            for p in &s.points {
                extend(&mut xext, p.0);
            }
        }
        for r in &panel.reflines {
            if r.orientation == Orientation::Vertical && x_axis.accepts(r.value) {
                extend(&mut xext, r.value);
            }
        }
        for m in &panel.marks {
            if x_axis.accepts(m.x) && panel.y_axis.accepts(m.y) {
                extend(&mut xext, m.x);
            }
        }
    }
    let yexts: Vec<Option<(f64, f64)>> = panels
        .iter()
        .zip(&preps)
        .map(|(panel, prep)| {
            let mut e = None;
            for s in prep {
                for p in &s.points {
                    extend(&mut e, p.1);
                }
            }
            for r in &panel.reflines {
                if r.orientation == Orientation::Horizontal && panel.y_axis.accepts(r.value) {
                    extend(&mut e, r.value);
                }
            }
            for m in &panel.marks {
                if x_axis.accepts(m.x) && panel.y_axis.accepts(m.y) {
                    extend(&mut e, m.y);
                }
            }
            e
        })
        .collect();

    // Vertical layout.
    let x_title = !x_axis.title.is_empty();
    let bottom = 7.0
        + TICK_SIZE
        + 6.0
        + if x_title { AXIS_TITLE_SIZE + 10.0 } else { 0.0 }
        + 8.0
        + frame.key_height();
    let gap = 14.0;
    let avail = (height - top - bottom - gap * (n as f64 - 1.0)).max(20.0 * n as f64);
    let ph = avail / n as f64;
    let ys: Vec<f64> = (0..n).map(|i| top + i as f64 * (ph + gap)).collect();
    let yrs: Vec<Resolved> = panels
        .iter()
        .zip(&yexts)
        .map(|(p, e)| fit_y(&p.y_axis, *e, ph))
        .collect();
    let any_y_title = panels.iter().any(|p| !p.y_axis.title.is_empty());
    let max_chars = yrs
        .iter()
        .map(|r| r.ticks.max_label_chars())
        .max()
        .unwrap_or(1);
    let left = y_gutter(max_chars, any_y_title);

    // Horizontal layout with legend placement, iterated until the right margin is stable.
    let base_right = 22.0;
    let entries: Vec<Vec<Entry>> = preps.iter().map(|p| legend_entries(p)).collect();
    let mut outside = vec![false; n];
    for (i, p) in panels.iter().enumerate() {
        outside[i] = p.legend == LegendPos::OutsideRight && has_data[i] && !entries[i].is_empty();
    }
    let mut right = base_right;
    let mut pass = 0;
    let (xr, geoms, legends) = loop {
        pass += 1;
        let pw = (width - left - right).max(40.0);
        let xr = fit_x(x_axis, xext, left, left + pw);
        let mut geoms = Vec::with_capacity(n);
        let mut legends: Vec<Option<(legend::Layout, f64, f64, bool)>> = Vec::with_capacity(n);
        for i in 0..n {
            let plot = Rect::new(left, ys[i], pw, ph);
            let g = geometry(&panels[i], &preps[i], &xr, &yrs[i], &plot);
            let mut placed = None;
            let pos = panels[i].legend;
            if has_data[i] && !entries[i].is_empty() && pos != LegendPos::Hidden && !outside[i] {
                let lay = legend::layout(&entries[i], pw * 0.45, ph - 12.0);
                let cands = legend::inside_candidates(pos, &plot, &lay);
                let explicit = pos != LegendPos::Auto;
                for c in &cands {
                    if explicit || (c.w <= pw * 0.6 && c.h <= ph - 8.0 && g.obstacles.is_free(c)) {
                        placed = Some((lay.clone(), c.x, c.y, true));
                        break;
                    }
                }
                if placed.is_none() {
                    outside[i] = true;
                }
            }
            geoms.push(g);
            legends.push(placed);
        }
        let out_w = (0..n)
            .filter(|&i| outside[i])
            .map(|i| legend::layout(&entries[i], (width * 0.28).min(230.0), ph).w)
            .fold(0.0, f64::max);
        let need = if out_w > 0.0 {
            out_w + 18.0
        } else {
            base_right
        };
        if (need - right).abs() < 0.5 || pass >= n + 3 {
            // Outside legends, placed now that the plot width is final.
            for i in 0..n {
                if outside[i] {
                    let lay = legend::layout(&entries[i], (width * 0.28).min(230.0), ph);
                    legends[i] = Some((lay, left + pw + 12.0, ys[i], false));
                }
            }
            break (xr, geoms, legends);
        }
        right = need;
    };
    let pw = (width - left - right).max(40.0);

    frame.draw_title(&mut w, width);
    let id = frame.id();
    w.raw("<defs>\n");
    for (i, y) in ys.iter().enumerate() {
        w.raw(&format!(
            "<clipPath id=\"{id}-clip{i}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n",
            num(left - 4.0),
            num(y - 4.0),
            num(pw + 8.0),
            num(ph + 8.0)
        ));
    }
    w.raw("</defs>\n");

    for i in 0..n {
        let plot = Rect::new(left, ys[i], pw, ph);
        let panel = &panels[i];
        let yr = &yrs[i];
        w.open_group("panel", &[("data-panel", i.to_string())]);
        draw_axes(
            &mut w,
            &plot,
            Some(&xr),
            Some(yr),
            i + 1 == n && has_data.iter().any(|d| *d),
            has_data[i],
        );
        draw_y_title(
            &mut w,
            10.0 + AXIS_TITLE_SIZE * 0.8,
            plot.y + ph / 2.0,
            &panel.y_axis.title,
            ph,
        );
        if !has_data[i] {
            draw_no_data(&mut w, &plot);
        }
        let g = &geoms[i];
        w.raw(&format!(
            "<g class=\"plot\" clip-path=\"url(#{id}-clip{i})\">\n"
        ));
        for (si, p) in preps[i].iter().enumerate() {
            let mut attrs = vec![
                ("data-series", p.name.clone()),
                ("data-points", p.points.len().to_string()),
            ];
            if p.skipped > 0 {
                attrs.push(("data-skipped", p.skipped.to_string()));
            }
            if n > 1 {
                attrs.push(("data-panel", i.to_string()));
            }
            w.open_group("series", &attrs);
            if p.skipped > 0 {
                w.comment(&format!(
                    "{} points skipped (non-finite, or not positive on a log axis)",
                    p.skipped
                ));
            }
            if !g.lines[si].is_empty() {
                w.polyline(&g.lines[si], p.color, p.style.width, p.dash);
            }
            if !g.markers[si].is_empty() {
                let m = p.style.marker.unwrap_or(crate::Marker::Circle);
                let r = if p.style.marker.is_some() {
                    p.style.marker_size
                } else {
                    p.style.width.max(1.5) + 1.0
                };
                w.open_group("points", &[]);
                for q in &g.markers[si] {
                    legend::draw_marker(&mut w, m, q.0, q.1, r, p.color);
                }
                w.close_group();
            }
            w.close_group();
        }
        w.raw("</g>\n");

        for (r, geo) in panel.reflines.iter().zip(&g.refs) {
            w.open_group("refline", &[("data-label", r.label.clone())]);
            if let Some((a, b, pl)) = geo {
                w.line(a.0, a.1, b.0, b.1, &r.color.hex(), 1.5, r.dash);
                if !r.label.is_empty() {
                    w.halo_text(
                        pl.x,
                        pl.y,
                        &r.label,
                        LABEL_SIZE,
                        pl.anchor,
                        &r.color.hex(),
                        "",
                    );
                }
            } else {
                w.comment("outside the displayed range");
            }
            w.close_group();
        }
        for (m, geo) in panel.marks.iter().zip(&g.marks) {
            w.open_group("marker", &[("data-label", m.label.clone())]);
            if let Some(((x, y), pl)) = geo {
                let c = m.color.hex();
                w.raw(&format!(
                    "<circle cx=\"{}\" cy=\"{}\" r=\"7\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>\n\
                     <circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{c}\"/>\n",
                    num(*x),
                    num(*y),
                    num(*x),
                    num(*y)
                ));
                if let Some(pl) = pl {
                    w.halo_text(
                        pl.x,
                        pl.y,
                        &m.label,
                        LABEL_SIZE + 1.0,
                        pl.anchor,
                        &c,
                        " font-weight=\"bold\"",
                    );
                }
            } else {
                w.comment("outside the displayed range or not drawable");
            }
            w.close_group();
        }
        for (si, p) in preps[i].iter().enumerate() {
            if p.labels.is_empty() {
                continue;
            }
            let mut attrs = vec![("data-series", p.name.clone())];
            if g.hidden_labels[si] > 0 {
                attrs.push(("data-hidden-labels", g.hidden_labels[si].to_string()));
            }
            w.open_group("point-labels", &attrs);
            for (label, pl) in &g.point_labels[si] {
                w.halo_text(pl.x, pl.y, label, LABEL_SIZE, pl.anchor, INK, "");
            }
            w.close_group();
        }
        if let Some((lay, lx, ly, boxed)) = &legends[i] {
            legend::draw(&mut w, lay, *lx, *ly, *boxed);
        }
        w.close_group();
    }
    let last_bottom = ys[n - 1] + ph;
    draw_x_title(
        &mut w,
        left + pw / 2.0,
        last_bottom + 7.0 + TICK_SIZE + 8.0 + AXIS_TITLE_SIZE,
        &x_axis.title,
        pw,
    );
    if !frame.key.is_empty() {
        // The key: one line each, left-aligned with the plot, under the x axis title.
        w.open_group("key", &[]);
        let y0 = height - frame.key_height() + 4.0;
        for (k, line) in frame.key.iter().enumerate() {
            w.text(
                left,
                y0 + KEY_LINE * (k as f64 + 1.0),
                line,
                LABEL_SIZE,
                Anchor::Start,
                INK,
                "",
            );
        }
        w.close_group();
    }
    w.finish()
}
