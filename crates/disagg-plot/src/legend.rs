//! Legend placement and drawing, and the obstacle test used to keep it off the data.

use crate::style::{Color, Dash, Marker};
use crate::svg::{escape, text_width, truncate_to_width, Anchor, SvgWriter, INK, LEGEND_SIZE};

/// Where the legend goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LegendPos {
    /// Inside the plot in the first corner (top-right, top-left, bottom-right, bottom-left) where
    /// it covers no data, reference line or label; otherwise outside on the right.
    #[default]
    Auto,
    /// Inside, top-right corner.
    TopRight,
    /// Inside, top-left corner.
    TopLeft,
    /// Inside, bottom-right corner.
    BottomRight,
    /// Inside, bottom-left corner.
    BottomLeft,
    /// Outside the plot, to the right (the plot narrows to make room).
    OutsideRight,
    /// No legend.
    Hidden,
}

/// An axis-aligned rectangle in pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    pub fn new(x: f64, y: f64, w: f64, h: f64) -> Self {
        Rect { x, y, w, h }
    }

    pub fn right(&self) -> f64 {
        self.x + self.w
    }

    pub fn bottom(&self) -> f64 {
        self.y + self.h
    }

    pub fn intersects(&self, o: &Rect) -> bool {
        self.x < o.right() && o.x < self.right() && self.y < o.bottom() && o.y < self.bottom()
    }

    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= self.x && x <= self.right() && y >= self.y && y <= self.bottom()
    }

    /// Liang–Barsky: whether any part of the segment lies inside.
    pub fn hits_segment(&self, a: (f64, f64), b: (f64, f64)) -> bool {
        if self.contains(a.0, a.1) || self.contains(b.0, b.1) {
            return true;
        }
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let p = [-dx, dx, -dy, dy];
        let q = [
            a.0 - self.x,
            self.right() - a.0,
            a.1 - self.y,
            self.bottom() - a.1,
        ];
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for i in 0..4 {
            if p[i] == 0.0 {
                if q[i] < 0.0 {
                    return false;
                }
            } else {
                let t = q[i] / p[i];
                if p[i] < 0.0 {
                    t0 = t0.max(t);
                } else {
                    t1 = t1.min(t);
                }
                if t0 > t1 {
                    return false;
                }
            }
        }
        true
    }
}

/// Things drawn in the plot area that a legend or label should not cover.
#[derive(Clone, Debug, Default)]
pub(crate) struct Obstacles {
    pub segments: Vec<((f64, f64), (f64, f64))>,
    pub rects: Vec<Rect>,
}

impl Obstacles {
    pub fn is_free(&self, r: &Rect) -> bool {
        !self.rects.iter().any(|o| o.intersects(r))
            && !self.segments.iter().any(|(a, b)| r.hits_segment(*a, *b))
    }

    /// Adds a polyline's segments (a single point becomes a small rectangle).
    pub fn add_polyline(&mut self, pts: &[(f64, f64)], line: bool, marker_r: f64) {
        if line && pts.len() >= 2 {
            for w in pts.windows(2) {
                self.segments.push((w[0], w[1]));
            }
        }
        if !line || pts.len() == 1 || marker_r > 0.0 {
            let r = marker_r.max(2.0);
            for p in pts {
                self.rects
                    .push(Rect::new(p.0 - r, p.1 - r, 2.0 * r, 2.0 * r));
            }
        }
    }
}

/// What the legend shows next to a name.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Swatch {
    Line {
        color: Color,
        dash: Dash,
        width: f64,
        marker: Option<Marker>,
        line: bool,
    },
    Block(Color),
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub name: String,
    pub swatch: Swatch,
}

const ROW_H: f64 = 18.0;
const PAD: f64 = 6.0;
const SWATCH_W: f64 = 24.0;
const GAP: f64 = 6.0;

/// A legend's size and arrangement in columns.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub entries: Vec<Entry>,
    pub labels: Vec<String>,
    pub rows: usize,
    pub col_w: f64,
    pub w: f64,
    pub h: f64,
}

/// Lays out entries with text at most `max_text_w` wide, in as many columns as needed to keep the
/// height within `max_h`.
pub(crate) fn layout(entries: &[Entry], max_text_w: f64, max_h: f64) -> Layout {
    let labels: Vec<String> = entries
        .iter()
        .map(|e| truncate_to_width(&e.name, LEGEND_SIZE, max_text_w.max(30.0)))
        .collect();
    let text_w = labels
        .iter()
        .map(|l| text_width(l, LEGEND_SIZE))
        .fold(0.0, f64::max);
    let col_w = SWATCH_W + GAP + text_w + PAD;
    let fit_rows = (((max_h - 2.0 * PAD) / ROW_H).floor() as usize).max(1);
    let n = entries.len();
    let cols = n.div_ceil(fit_rows).max(1);
    let rows = n.div_ceil(cols).max(1);
    Layout {
        entries: entries.to_vec(),
        labels,
        rows,
        col_w,
        w: PAD + cols as f64 * col_w,
        h: 2.0 * PAD + rows as f64 * ROW_H - 2.0,
    }
}

/// Candidate inside positions for the legend box in the plot rectangle, in preference order.
pub(crate) fn inside_candidates(pos: LegendPos, plot: &Rect, l: &Layout) -> Vec<Rect> {
    let inset = 6.0;
    let tr = Rect::new(plot.right() - inset - l.w, plot.y + inset, l.w, l.h);
    let tl = Rect::new(plot.x + inset, plot.y + inset, l.w, l.h);
    let br = Rect::new(
        plot.right() - inset - l.w,
        plot.bottom() - inset - l.h,
        l.w,
        l.h,
    );
    let bl = Rect::new(plot.x + inset, plot.bottom() - inset - l.h, l.w, l.h);
    match pos {
        LegendPos::Auto => vec![tr, tl, br, bl],
        LegendPos::TopRight => vec![tr],
        LegendPos::TopLeft => vec![tl],
        LegendPos::BottomRight => vec![br],
        LegendPos::BottomLeft => vec![bl],
        LegendPos::OutsideRight | LegendPos::Hidden => vec![],
    }
}

/// Draws the legend with its top-left corner at (`x`, `y`).
pub(crate) fn draw(w: &mut SvgWriter, l: &Layout, x: f64, y: f64, boxed: bool) {
    w.open_group("legend", &[]);
    if boxed {
        w.rect(
            x,
            y,
            l.w,
            l.h,
            "#ffffff",
            Some(("#bbbbbb", 1.0)),
            " fill-opacity=\"0.88\"",
        );
    }
    for (i, (e, label)) in l.entries.iter().zip(&l.labels).enumerate() {
        let col = i / l.rows;
        let row = i % l.rows;
        let ex = x + PAD + col as f64 * l.col_w;
        let cy = y + PAD + row as f64 * ROW_H + ROW_H / 2.0 - 1.0;
        w.raw(&format!(
            "<g class=\"legend-entry\" data-series=\"{}\">\n",
            escape(&e.name)
        ));
        match &e.swatch {
            Swatch::Line {
                color,
                dash,
                width,
                marker,
                line,
            } => {
                if *line {
                    w.line(
                        ex,
                        cy,
                        ex + SWATCH_W,
                        cy,
                        &color.hex(),
                        width.min(3.0),
                        *dash,
                    );
                }
                if let Some(m) = marker {
                    draw_marker(w, *m, ex + SWATCH_W / 2.0, cy, 4.0, *color);
                }
            }
            Swatch::Block(c) => {
                w.rect(ex + 4.0, cy - 6.0, SWATCH_W - 8.0, 12.0, &c.hex(), None, "");
            }
        }
        w.text(
            ex + SWATCH_W + GAP,
            cy + LEGEND_SIZE * 0.35,
            label,
            LEGEND_SIZE,
            Anchor::Start,
            INK,
            "",
        );
        if label != &e.name {
            w.raw(&format!("<title>{}</title>\n", escape(&e.name)));
        }
        w.raw("</g>\n");
    }
    w.close_group();
}

/// One marker shape centred at (`x`, `y`) with radius `r`.
pub(crate) fn draw_marker(w: &mut SvgWriter, m: Marker, x: f64, y: f64, r: f64, color: Color) {
    use crate::svg::num;
    let c = color.hex();
    let s = match m {
        Marker::Circle => {
            format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{c}\"/>\n",
                num(x),
                num(y),
                num(r)
            )
        }
        Marker::Square => {
            let a = r * 0.9;
            format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{c}\"/>\n",
                num(x - a),
                num(y - a),
                num(2.0 * a),
                num(2.0 * a)
            )
        }
        Marker::Diamond => {
            let a = r * 1.25;
            format!(
                "<path d=\"M{},{}L{},{}L{},{}L{},{}Z\" fill=\"{c}\"/>\n",
                num(x),
                num(y - a),
                num(x + a),
                num(y),
                num(x),
                num(y + a),
                num(x - a),
                num(y)
            )
        }
        Marker::Triangle => {
            let a = r * 1.3;
            format!(
                "<path d=\"M{},{}L{},{}L{},{}Z\" fill=\"{c}\"/>\n",
                num(x),
                num(y - a),
                num(x + a * 0.87),
                num(y + a * 0.5),
                num(x - a * 0.87),
                num(y + a * 0.5)
            )
        }
        Marker::Cross => {
            let a = r * 0.9;
            format!(
                "<path d=\"M{},{}L{},{}M{},{}L{},{}\" stroke=\"{c}\" stroke-width=\"2\" fill=\"none\"/>\n",
                num(x - a),
                num(y - a),
                num(x + a),
                num(y + a),
                num(x - a),
                num(y + a),
                num(x + a),
                num(y - a)
            )
        }
    };
    w.raw(&s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_hits() {
        let r = Rect::new(10.0, 10.0, 10.0, 10.0);
        assert!(r.hits_segment((0.0, 15.0), (30.0, 15.0)));
        assert!(!r.hits_segment((0.0, 0.0), (30.0, 0.0)));
        assert!(r.hits_segment((0.0, 0.0), (30.0, 30.0)));
        assert!(!r.hits_segment((0.0, 30.0), (5.0, 0.0)));
    }

    #[test]
    fn columns_when_tall() {
        let e: Vec<Entry> = (0..20)
            .map(|i| Entry {
                name: format!("s{i}"),
                swatch: Swatch::Block(crate::style::palette(i)),
            })
            .collect();
        let l = layout(&e, 100.0, 100.0);
        assert!(l.h <= 100.0);
        assert!(l.rows * (l.w / l.col_w).ceil() as usize >= 20);
    }
}
