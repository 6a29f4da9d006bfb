//! Helpers shared by the integration tests: parse the SVG and find the tagged groups.

#![allow(dead_code)]

use roxmltree::{Document, Node};

pub const SVG_NS: &str = "http://www.w3.org/2000/svg";

/// Parses and checks the root: `svg` in the SVG namespace with width, height and viewBox.
pub fn parse(svg: &str) -> Document<'_> {
    let doc = Document::parse(svg).unwrap_or_else(|e| panic!("invalid XML: {e}\n{svg}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.tag_name().namespace(), Some(SVG_NS));
    assert!(root
        .attribute("width")
        .is_some_and(|w| w.parse::<f64>().unwrap() > 0.0));
    assert!(root
        .attribute("height")
        .is_some_and(|h| h.parse::<f64>().unwrap() > 0.0));
    assert!(root.attribute("viewBox").is_some());
    assert_self_contained(svg);
    doc
}

/// No external references, images, scripts or style sheets; no non-finite numbers.
pub fn assert_self_contained(svg: &str) {
    for bad in [
        "href",
        "<image",
        "@import",
        "<style",
        "<script",
        "NaN",
        "inf\"",
        "http://www.w3.org/1999/xlink",
    ] {
        assert!(!svg.contains(bad), "SVG contains {bad:?}");
    }
    for (i, _) in svg.match_indices("url(") {
        assert!(svg[i..].starts_with("url(#"), "external url() in SVG");
    }
}

pub fn has_class(n: &Node, class: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|x| x == class))
}

/// All elements with the given class.
pub fn by_class<'a, 'i>(doc: &'a Document<'i>, class: &str) -> Vec<Node<'a, 'i>> {
    doc.descendants()
        .filter(|n| n.is_element() && has_class(n, class))
        .collect()
}

/// `g.series[data-series=name]` groups.
pub fn series<'a, 'i>(doc: &'a Document<'i>, name: &str) -> Vec<Node<'a, 'i>> {
    by_class(doc, "series")
        .into_iter()
        .filter(|n| n.attribute("data-series") == Some(name))
        .collect()
}

/// The one series group with this name (panics unless exactly one).
pub fn one_series<'a, 'i>(doc: &'a Document<'i>, name: &str) -> Node<'a, 'i> {
    let v = series(doc, name);
    assert_eq!(v.len(), 1, "series {name:?} should appear exactly once");
    v[0]
}

/// Number of points of the polyline in a series group (None without a polyline).
pub fn polyline_points(g: &Node) -> Option<usize> {
    let pl = g.descendants().find(|n| n.has_tag_name("polyline"))?;
    Some(pl.attribute("points").unwrap().split_whitespace().count())
}

/// Parsed polyline coordinates in a series group.
pub fn polyline_coords(g: &Node) -> Vec<(f64, f64)> {
    let pl = g
        .descendants()
        .find(|n| n.has_tag_name("polyline"))
        .expect("polyline");
    pl.attribute("points")
        .unwrap()
        .split_whitespace()
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

/// Names listed in the legend(s), in order.
pub fn legend_names(doc: &Document) -> Vec<String> {
    by_class(doc, "legend-entry")
        .iter()
        .map(|n| n.attribute("data-series").unwrap().to_string())
        .collect()
}

/// Texts of all `<text>` elements.
pub fn texts(doc: &Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect()
}

/// Elements with the given class whose `data-label` equals `label`.
pub fn labelled<'a, 'i>(doc: &'a Document<'i>, class: &str, label: &str) -> Vec<Node<'a, 'i>> {
    by_class(doc, class)
        .into_iter()
        .filter(|n| n.attribute("data-label") == Some(label))
        .collect()
}

/// Tiny deterministic generator (64-bit LCG) for test data.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 11
    }

    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() as f64 + 0.5) / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Estimated box of a non-rotated text element (same fixed per-character width as the layout).
fn text_box(n: &Node) -> Option<(f64, f64, f64, f64)> {
    if n.attribute("transform").is_some() || n.attribute("fill") == Some("#ffffff") {
        return None;
    }
    let x: f64 = n.attribute("x")?.parse().ok()?;
    let y: f64 = n.attribute("y")?.parse().ok()?;
    let size: f64 = n.attribute("font-size").unwrap_or("12").parse().ok()?;
    let w = n.text()?.chars().count() as f64 * disagg_plot::CHAR_WIDTH_EM * size;
    let x0 = match n.attribute("text-anchor") {
        Some("middle") => x - w / 2.0,
        Some("end") => x - w,
        _ => x,
    };
    Some((x0, y - 0.75 * size, x0 + w, y + 0.2 * size))
}

/// No two (non-rotated) texts overlap, and all lie within the canvas width.
pub fn assert_no_text_overlap(doc: &Document) {
    let width: f64 = doc
        .root_element()
        .attribute("width")
        .unwrap()
        .parse()
        .unwrap();
    let boxes: Vec<(String, (f64, f64, f64, f64))> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| Some((n.text()?.to_string(), text_box(&n)?)))
        .collect();
    for (t, b) in &boxes {
        assert!(
            b.0 >= -0.5 && b.2 <= width + 0.5,
            "text {t:?} leaves the canvas: {b:?}"
        );
    }
    for i in 0..boxes.len() {
        for j in 0..i {
            let (a, b) = (boxes[i].1, boxes[j].1);
            let overlap = a.0 < b.2 - 0.5 && b.0 < a.2 - 0.5 && a.1 < b.3 - 0.5 && b.1 < a.3 - 0.5;
            assert!(
                !overlap,
                "texts overlap: {:?} {:?} and {:?} {:?}",
                boxes[i].0, a, boxes[j].0, b
            );
        }
    }
}
