//! Colours, dash patterns, markers and per-series style.

/// An sRGB colour, written as `#rrggbb`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Color {
    /// Red, 0–255.
    pub r: u8,
    /// Green, 0–255.
    pub g: u8,
    /// Blue, 0–255.
    pub b: u8,
}

impl Color {
    /// A colour from its components.
    pub const fn rgb(r: u8, g: u8, b: u8) -> Self {
        Color { r, g, b }
    }

    /// Parses `#rrggbb` or `rrggbb` (case-insensitive). `None` for anything else.
    pub fn from_hex(s: &str) -> Option<Self> {
        let h = s.strip_prefix('#').unwrap_or(s);
        if h.len() != 6 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let p = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).ok();
        Some(Color::rgb(p(0)?, p(2)?, p(4)?))
    }

    /// `#rrggbb`, lower case.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.r, self.g, self.b)
    }
}

/// The default series palette: the Okabe–Ito colourblind-safe set (its yellow replaced by a darker
/// olive that reads on white) followed by Paul Tol's muted colours and grey. Series beyond its
/// length reuse the colours with a dash pattern, so they stay distinguishable.
pub const PALETTE: [Color; 12] = [
    Color::rgb(0x00, 0x72, 0xb2), // blue
    Color::rgb(0xe6, 0x9f, 0x00), // orange
    Color::rgb(0x00, 0x9e, 0x73), // bluish green
    Color::rgb(0xd5, 0x5e, 0x00), // vermillion
    Color::rgb(0x56, 0xb4, 0xe9), // sky blue
    Color::rgb(0xcc, 0x79, 0xa7), // reddish purple
    Color::rgb(0x00, 0x00, 0x00), // black
    Color::rgb(0x99, 0x99, 0x33), // olive
    Color::rgb(0x88, 0x22, 0x55), // wine
    Color::rgb(0x44, 0xaa, 0x99), // teal
    Color::rgb(0x33, 0x22, 0x88), // indigo
    Color::rgb(0x88, 0x88, 0x88), // grey
];

/// The `i`-th palette colour (wrapping).
pub fn palette(i: usize) -> Color {
    PALETTE[i % PALETTE.len()]
}

/// Default dash for the `i`-th series: solid for the first palette round, then dashed, dotted,
/// dash-dot.
pub fn default_dash(i: usize) -> Dash {
    match (i / PALETTE.len()) % 4 {
        0 => Dash::Solid,
        1 => Dash::Dashed,
        2 => Dash::Dotted,
        _ => Dash::DashDot,
    }
}

/// Stroke pattern of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Dash {
    /// Continuous line.
    #[default]
    Solid,
    /// Long dashes.
    Dashed,
    /// Dots.
    Dotted,
    /// Alternating dash and dot.
    DashDot,
}

/// Point marker shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// Filled circle.
    Circle,
    /// Filled square.
    Square,
    /// Filled diamond.
    Diamond,
    /// Filled upward triangle.
    Triangle,
    /// An `x` cross (stroked).
    Cross,
}

impl Marker {
    /// Markers in the order used by [`Marker::nth`].
    pub const ALL: [Marker; 5] = [
        Marker::Circle,
        Marker::Square,
        Marker::Diamond,
        Marker::Triangle,
        Marker::Cross,
    ];

    /// The `i`-th marker (wrapping).
    pub fn nth(i: usize) -> Marker {
        Marker::ALL[i % Marker::ALL.len()]
    }
}

/// How one series is drawn. Fields left `None` take the chart's defaults (palette colour by
/// series index).
#[derive(Clone, Debug, PartialEq)]
pub struct Style {
    /// Line and marker colour; `None`: palette colour for the series' index.
    pub color: Option<Color>,
    /// Line pattern; `None`: solid for the first 12 series, then dashed and so on.
    pub dash: Option<Dash>,
    /// Marker drawn at every point, if any.
    pub marker: Option<Marker>,
    /// Whether to draw the connecting line.
    pub line: bool,
    /// Stroke width in px.
    pub width: f64,
    /// Marker radius in px.
    pub marker_size: f64,
    /// Draw as a step function (the value holds until the next point), e.g. utilisation samples.
    pub step: bool,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            color: None,
            dash: None,
            marker: None,
            line: true,
            width: 2.0,
            marker_size: 3.5,
            step: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let c = Color::from_hex("#0072B2").unwrap();
        assert_eq!(c, PALETTE[0]);
        assert_eq!(c.hex(), "#0072b2");
        assert!(Color::from_hex("#12345").is_none());
        assert!(Color::from_hex("zz0000").is_none());
    }

    #[test]
    fn palette_is_distinct() {
        for (i, a) in PALETTE.iter().enumerate() {
            assert!(PALETTE[..i].iter().all(|b| a != b));
        }
        assert_eq!(default_dash(0), Dash::Solid);
        assert_eq!(default_dash(12), Dash::Dashed);
    }
}
