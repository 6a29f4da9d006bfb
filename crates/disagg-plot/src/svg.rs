//! Low-level SVG text output: escaping, fixed-precision numbers, a small element writer and the
//! fixed-width text metrics the layout relies on (no glyph measuring, so no fonts are needed).

use std::fmt::Write as _;

use crate::style::{Color, Dash};

/// The font stack written on the root element. Only generic, widely shipped families; the layout
/// never depends on the font actually used.
pub const FONT_FAMILY: &str = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";

/// Estimated advance width of one character, as a fraction of the font size. Wide enough for
/// DejaVu Sans (the widest of the stack) in typical mixed-case labels.
pub const CHAR_WIDTH_EM: f64 = 0.6;

/// Font sizes in px.
pub(crate) const TITLE_SIZE: f64 = 16.0;
pub(crate) const AXIS_TITLE_SIZE: f64 = 13.0;
pub(crate) const TICK_SIZE: f64 = 11.0;
pub(crate) const LEGEND_SIZE: f64 = 12.0;
pub(crate) const LABEL_SIZE: f64 = 11.0;

pub(crate) const INK: &str = "#222222";
pub(crate) const GRID: &str = "#e3e3e3";
pub(crate) const FRAME: &str = "#888888";
pub(crate) const MUTED: &str = "#555555";

/// Estimated width in px of `s` at `size` px (fixed per-character width).
pub fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * CHAR_WIDTH_EM * size
}

/// `s` shortened with a trailing ellipsis so that its estimated width is at most `max_w`.
pub(crate) fn truncate_to_width(s: &str, size: f64, max_w: f64) -> String {
    if text_width(s, size) <= max_w {
        return s.to_string();
    }
    let per = CHAR_WIDTH_EM * size;
    let keep = ((max_w / per).floor() as usize).saturating_sub(1);
    let mut out: String = s.chars().take(keep).collect();
    out.push('\u{2026}');
    out
}

/// Escapes XML special characters (`& < > " '`) so the result is safe in text and attribute
/// values; characters not allowed in XML 1.0 (most C0 controls, U+FFFE, U+FFFF) become `?`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with at most two decimals, trailing zeros trimmed, never `-0`.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "0".to_string();
    }
    let r = (v * 100.0).round() / 100.0;
    let mut s = format!("{r:.2}");
    trim_decimal(&mut s);
    if s == "-0" {
        s = "0".to_string();
    }
    s
}

/// Removes trailing zeros after a decimal point, and the point itself if nothing follows it.
pub(crate) fn trim_decimal(s: &mut String) {
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
}

/// Horizontal anchoring of a text element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// Appends SVG elements to a string. Attribute order is fixed, so output is deterministic.
pub(crate) struct SvgWriter {
    pub out: String,
}

impl SvgWriter {
    pub fn new(width: f64, height: f64) -> Self {
        let mut out = String::with_capacity(16 * 1024);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"{FONT_FAMILY}\" font-size=\"12\">",
            w = num(width),
            h = num(height)
        );
        let _ = writeln!(out, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>", num(width), num(height));
        SvgWriter { out }
    }

    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }

    pub fn raw(&mut self, s: &str) {
        self.out.push_str(s);
    }

    pub fn comment(&mut self, s: &str) {
        // "--" is not allowed inside a comment.
        let safe = escape(s).replace("--", "- -");
        let _ = writeln!(self.out, "<!-- {safe} -->");
    }

    /// Opens a `<g>` with a class and optional extra (already escaped) attributes.
    pub fn open_group(&mut self, class: &str, attrs: &[(&str, String)]) {
        let _ = write!(self.out, "<g class=\"{}\"", escape(class));
        for (k, v) in attrs {
            let _ = write!(self.out, " {k}=\"{}\"", escape(v));
        }
        self.out.push_str(">\n");
    }

    pub fn close_group(&mut self) {
        self.out.push_str("</g>\n");
    }

    #[allow(clippy::too_many_arguments)]
    pub fn line(
        &mut self,
        x1: f64,
        y1: f64,
        x2: f64,
        y2: f64,
        stroke: &str,
        width: f64,
        dash: Dash,
    ) {
        let _ = write!(
            self.out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{stroke}\" stroke-width=\"{}\"",
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            num(width)
        );
        write_dash(&mut self.out, dash, width);
        self.out.push_str("/>\n");
    }

    #[allow(clippy::too_many_arguments)]
    pub fn rect(
        &mut self,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: &str,
        stroke: Option<(&str, f64)>,
        extra: &str,
    ) {
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"",
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0))
        );
        if let Some((s, sw)) = stroke {
            let _ = write!(self.out, " stroke=\"{s}\" stroke-width=\"{}\"", num(sw));
        }
        self.out.push_str(extra);
        self.out.push_str("/>\n");
    }

    /// A text element; `text` is escaped here. `extra` is appended verbatim to the attributes.
    #[allow(clippy::too_many_arguments)]
    pub fn text(
        &mut self,
        x: f64,
        y: f64,
        text: &str,
        size: f64,
        anchor: Anchor,
        fill: &str,
        extra: &str,
    ) {
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\" fill=\"{fill}\"{extra}>{}</text>",
            num(x),
            num(y),
            num(size),
            anchor.as_str(),
            escape(text)
        );
    }

    /// Text drawn over a white halo so it stays readable on top of lines.
    #[allow(clippy::too_many_arguments)]
    pub fn halo_text(
        &mut self,
        x: f64,
        y: f64,
        text: &str,
        size: f64,
        anchor: Anchor,
        fill: &str,
        extra: &str,
    ) {
        let halo = format!(
            " stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" opacity=\"0.9\"{extra}"
        );
        self.text(x, y, text, size, anchor, "#ffffff", &halo);
        self.text(x, y, text, size, anchor, fill, extra);
    }

    /// A polyline through the given pixel points.
    pub fn polyline(&mut self, pts: &[(f64, f64)], color: Color, width: f64, dash: Dash) {
        self.out.push_str("<polyline fill=\"none\" stroke=\"");
        self.out.push_str(&color.hex());
        let _ = write!(
            self.out,
            "\" stroke-width=\"{}\" stroke-linejoin=\"round\" stroke-linecap=\"round\"",
            num(width)
        );
        write_dash(&mut self.out, dash, width);
        self.out.push_str(" points=\"");
        for (i, (x, y)) in pts.iter().enumerate() {
            if i > 0 {
                self.out.push(' ');
            }
            self.out.push_str(&num(*x));
            self.out.push(',');
            self.out.push_str(&num(*y));
        }
        self.out.push_str("\"/>\n");
    }
}

pub(crate) fn write_dash(out: &mut String, dash: Dash, width: f64) {
    let w = width.max(1.0);
    let pattern = match dash {
        Dash::Solid => return,
        Dash::Dashed => format!("{},{}", num(6.0 * w), num(4.0 * w)),
        Dash::Dotted => format!("{},{}", num(1.2 * w), num(3.0 * w)),
        Dash::DashDot => format!(
            "{},{},{},{}",
            num(7.0 * w),
            num(3.0 * w),
            num(1.5 * w),
            num(3.0 * w)
        ),
    };
    let _ = write!(out, " stroke-dasharray=\"{pattern}\"");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short_and_stable() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.234_567), "1.23");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(f64::NAN), "0");
    }

    #[test]
    fn escaping() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
        );
        assert_eq!(escape("x\u{1}y"), "x?y");
    }

    #[test]
    fn truncation() {
        let s = "abcdefghijklmnopqrstuvwxyz";
        let t = truncate_to_width(s, 10.0, 60.0);
        assert!(text_width(&t, 10.0) <= 60.0);
        assert!(t.ends_with('\u{2026}'));
        assert_eq!(truncate_to_width("abc", 10.0, 60.0), "abc");
    }
}
