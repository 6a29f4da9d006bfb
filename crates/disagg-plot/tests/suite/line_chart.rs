use crate::common::*;
use disagg_plot::{Axis, Color, LegendPos, LineChart, MarkPoint, Marker, RefLine, Series, PALETTE};

fn sample() -> LineChart {
    LineChart::new()
        .title("TTFT against rate")
        .x_axis(Axis::new("Request rate (req/s)"))
        .y_axis(Axis::new("TTFT (ms)"))
        .series(Series::new(
            "p50",
            vec![
                (1.0, 80.0),
                (2.0, 90.0),
                (3.0, 110.0),
                (4.0, 150.0),
                (5.0, 260.0),
            ],
        ))
        .series(
            Series::new("p99", vec![(1.0, 150.0), (2.0, 200.0), (3.0, 420.0)])
                .marker(Marker::Square)
                .dashed(),
        )
        .series(Series::new("single", vec![(2.5, 300.0)]))
        .hline(400.0, "TTFT SLO 400 ms")
        .vline(4.5, "saturation")
        .mark(MarkPoint::new(3.0, 110.0, "goodput 3 req/s"))
}

#[test]
fn structure_series_legend_reflines_markers() {
    let svg = sample().render();
    let doc = parse(&svg);
    let root = doc.root_element();
    assert_eq!(root.attribute("width"), Some("800"));
    assert_eq!(root.attribute("height"), Some("500"));
    assert_eq!(
        root.attribute("font-family"),
        Some(disagg_plot::FONT_FAMILY)
    );
    assert_eq!(polyline_points(&one_series(&doc, "p50")), Some(5));
    let p99 = one_series(&doc, "p99");
    assert_eq!(polyline_points(&p99), Some(3));
    assert!(p99
        .descendants()
        .find(|n| n.has_tag_name("polyline"))
        .unwrap()
        .attribute("stroke-dasharray")
        .is_some());
    assert_eq!(
        p99.descendants().filter(|n| n.has_tag_name("rect")).count(),
        3,
        "square markers"
    );
    let single = one_series(&doc, "single");
    assert_eq!(polyline_points(&single), Some(1));
    assert!(
        single.descendants().any(|n| n.has_tag_name("circle")),
        "a lone point is drawn as a dot"
    );
    assert_eq!(by_class(&doc, "series").len(), 3);
    assert_eq!(by_class(&doc, "legend").len(), 1);
    assert_eq!(legend_names(&doc), ["p50", "p99", "single"]);
    let slo = labelled(&doc, "refline", "TTFT SLO 400 ms");
    assert_eq!(slo.len(), 1);
    assert!(slo[0].descendants().any(|n| n.has_tag_name("line")));
    assert_eq!(labelled(&doc, "refline", "saturation").len(), 1);
    let m = labelled(&doc, "marker", "goodput 3 req/s");
    assert_eq!(m.len(), 1);
    assert!(m[0].descendants().any(|n| n.has_tag_name("circle")));
    let t = texts(&doc);
    for want in [
        "TTFT against rate",
        "Request rate (req/s)",
        "TTFT (ms)",
        "TTFT SLO 400 ms",
        "goodput 3 req/s",
    ] {
        assert!(t.iter().any(|x| x == want), "missing text {want:?}");
    }
    assert_no_text_overlap(&doc);
}

#[test]
fn deterministic_bytes() {
    assert_eq!(sample().render(), sample().render());
    assert_eq!(sample().render(), sample().clone().render());
}

#[test]
fn escaping_in_names_titles_and_labels() {
    let name = "a<b & \"c\" 'd'>";
    let svg = LineChart::new()
        .title("T & <t>")
        .x_axis(Axis::new("x \"q\""))
        .series(Series::new(name, vec![(0.0, 1.0), (1.0, 2.0)]))
        .hline(1.5, "SLO <&>")
        .mark(MarkPoint::new(0.5, 1.5, "it's"))
        .render();
    let doc = parse(&svg);
    one_series(&doc, name);
    assert_eq!(legend_names(&doc), [name]);
    assert_eq!(labelled(&doc, "refline", "SLO <&>").len(), 1);
    assert_eq!(labelled(&doc, "marker", "it's").len(), 1);
    let t = texts(&doc);
    assert!(t.iter().any(|x| x == "T & <t>"));
    assert!(t.iter().any(|x| x == name));
    // Control characters are replaced, not emitted.
    let svg = LineChart::new()
        .series(Series::new("bad\u{1}name", vec![(0.0, 1.0)]))
        .render();
    parse(&svg);
}

#[test]
fn empty_chart_says_no_data() {
    for svg in [
        LineChart::new().render(),
        LineChart::new()
            .title("t")
            .series(Series::new("none", Vec::new()))
            .render(),
        LineChart::new()
            .series(Series::new(
                "nan",
                vec![(f64::NAN, 1.0), (1.0, f64::INFINITY)],
            ))
            .render(),
    ] {
        let doc = parse(&svg);
        assert_eq!(by_class(&doc, "no-data").len(), 1);
        assert!(texts(&doc).iter().any(|t| t == "no data"));
    }
    let doc_svg = LineChart::new()
        .series(Series::new("nan", vec![(f64::NAN, 1.0)]))
        .render();
    let doc = parse(&doc_svg);
    let g = one_series(&doc, "nan");
    assert_eq!(g.attribute("data-points"), Some("0"));
    assert_eq!(g.attribute("data-skipped"), Some("1"));
}

#[test]
fn non_finite_points_are_skipped() {
    let svg = LineChart::new()
        .series(Series::new(
            "s",
            vec![
                (0.0, 1.0),
                (1.0, f64::NAN),
                (f64::INFINITY, 2.0),
                (2.0, 3.0),
                (3.0, f64::NEG_INFINITY),
            ],
        ))
        .render();
    let doc = parse(&svg);
    let g = one_series(&doc, "s");
    assert_eq!(polyline_points(&g), Some(2));
    assert_eq!(g.attribute("data-skipped"), Some("3"));
}

#[test]
fn log_axes_skip_non_positive_values() {
    let svg = LineChart::new()
        .x_axis(Axis::new("Rate (req/s)").log())
        .y_axis(Axis::new("TTFT (ms)").log())
        .series(Series::new(
            "s",
            vec![
                (0.0, 10.0),
                (1.0, 10.0),
                (2.0, -5.0),
                (4.0, 100.0),
                (8.0, 0.0),
            ],
        ))
        .hline(-1.0, "impossible")
        .hline(50.0, "SLO")
        .mark(MarkPoint::new(-1.0, 5.0, "off-axis"))
        .render();
    let doc = parse(&svg);
    let g = one_series(&doc, "s");
    assert_eq!(polyline_points(&g), Some(2));
    assert_eq!(g.attribute("data-skipped"), Some("3"));
    // The reference line that cannot be placed is still listed, without a line.
    let r = labelled(&doc, "refline", "impossible");
    assert_eq!(r.len(), 1);
    assert!(!r[0].descendants().any(|n| n.has_tag_name("line")));
    assert!(labelled(&doc, "refline", "SLO")[0]
        .descendants()
        .any(|n| n.has_tag_name("line")));
    assert_eq!(labelled(&doc, "marker", "off-axis").len(), 1);
    // All non-positive: no data, no panic; nor with non-positive explicit bounds.
    let svg = LineChart::new()
        .y_axis(Axis::new("y").log().range(-1.0, 0.0))
        .series(Series::new("z", vec![(1.0, 0.0), (2.0, -1.0)]))
        .render();
    let doc = parse(&svg);
    assert_eq!(by_class(&doc, "no-data").len(), 1);
}

#[test]
fn single_point_and_zero_range() {
    for pts in [
        vec![(5.0, 5.0)],
        vec![(0.0, 0.0)],
        vec![(1.0, 7.0), (2.0, 7.0), (3.0, 7.0)],
        vec![(3.0, 1.0), (3.0, 2.0)],
    ] {
        let svg = LineChart::new()
            .series(Series::new("s", pts.clone()))
            .render();
        let doc = parse(&svg);
        let coords = polyline_coords(&one_series(&doc, "s"));
        assert_eq!(coords.len(), pts.len());
        // Inside the canvas.
        for (x, y) in coords {
            assert!((0.0..=800.0).contains(&x) && (0.0..=500.0).contains(&y));
        }
        assert_no_text_overlap(&doc);
    }
    let svg = LineChart::new()
        .x_axis(Axis::new("x").log())
        .series(Series::new("s", vec![(3.0, 3.0)]))
        .render();
    parse(&svg);
}

#[test]
fn percent_axis_and_fixed_range() {
    let svg = LineChart::new()
        .y_axis(Axis::new("SLO attainment").range(0.0, 1.0).percent())
        .series(Series::new("a", vec![(1.0, 1.0), (2.0, 0.95), (3.0, 0.4)]))
        .mark(MarkPoint::new(2.0, 0.95, "goodput"))
        .hline(0.9, "90%")
        .render();
    let doc = parse(&svg);
    let t = texts(&doc);
    assert!(t.iter().any(|x| x == "0%"));
    assert!(t.iter().any(|x| x == "100%"));
    assert_no_text_overlap(&doc);
}

#[test]
fn palette_has_ten_distinct_colours_and_dashes_after() {
    assert!(PALETTE.len() >= 10);
    let mut c = LineChart::new();
    for i in 0..14 {
        c = c.series(Series::new(
            format!("s{i}"),
            vec![(0.0, i as f64), (1.0, i as f64 + 1.0)],
        ));
    }
    let svg = c.render();
    let doc = parse(&svg);
    let strokes: Vec<String> = (0..12)
        .map(|i| {
            let g = one_series(&doc, &format!("s{i}"));
            g.descendants()
                .find(|n| n.has_tag_name("polyline"))
                .unwrap()
                .attribute("stroke")
                .unwrap()
                .to_string()
        })
        .collect();
    for i in 0..strokes.len() {
        for j in 0..i {
            assert_ne!(strokes[i], strokes[j]);
        }
    }
    let g12 = one_series(&doc, "s12");
    assert!(g12
        .descendants()
        .find(|n| n.has_tag_name("polyline"))
        .unwrap()
        .attribute("stroke-dasharray")
        .is_some());
    assert_eq!(legend_names(&doc).len(), 14);
    assert_no_text_overlap(&doc);
}

#[test]
fn custom_size_colour_and_legend_positions() {
    let base = || {
        LineChart::new()
            .size(640, 360)
            .series(Series::new("a", vec![(0.0, 0.0), (1.0, 1.0)]).color(Color::rgb(1, 2, 3)))
            .ref_line(RefLine::vertical(0.5, "v").color(Color::rgb(200, 0, 0)))
    };
    for pos in [
        LegendPos::Auto,
        LegendPos::TopLeft,
        LegendPos::TopRight,
        LegendPos::BottomLeft,
        LegendPos::BottomRight,
        LegendPos::OutsideRight,
    ] {
        let svg = base().legend(pos).render();
        let doc = parse(&svg);
        assert_eq!(doc.root_element().attribute("width"), Some("640"));
        assert_eq!(doc.root_element().attribute("height"), Some("360"));
        assert!(svg.contains("stroke=\"#010203\""));
        assert_eq!(legend_names(&doc), ["a"]);
    }
    let svg = base().legend(LegendPos::Hidden).render();
    let doc = parse(&svg);
    assert!(by_class(&doc, "legend").is_empty());
}

#[test]
fn auto_legend_avoids_data() {
    // Data fills the top-right corner: the legend must go elsewhere.
    let pts: Vec<(f64, f64)> = (0..=100).map(|i| (f64::from(i), f64::from(i))).collect();
    let svg = LineChart::new()
        .series(Series::new("diagonal", pts))
        .render();
    let doc = parse(&svg);
    let legend = by_class(&doc, "legend")[0];
    let rect = legend
        .children()
        .find(|n| n.has_tag_name("rect"))
        .expect("boxed inside legend");
    let x: f64 = rect.attribute("x").unwrap().parse().unwrap();
    let y: f64 = rect.attribute("y").unwrap().parse().unwrap();
    let w: f64 = rect.attribute("width").unwrap().parse().unwrap();
    let h: f64 = rect.attribute("height").unwrap().parse().unwrap();
    let line = polyline_coords(&one_series(&doc, "diagonal"));
    for p in &line {
        assert!(
            !(p.0 > x && p.0 < x + w && p.1 > y && p.1 < y + h),
            "legend covers a data point"
        );
    }
}

#[test]
fn long_names_and_narrow_canvas_do_not_overlap() {
    let long = "a configuration with a really very extremely long name that goes on";
    let svg = LineChart::new()
        .size(400, 300)
        .title(
            "A very long title that certainly does not fit into a small four hundred pixel chart",
        )
        .x_axis(Axis::new("Request rate (requests per second) with a long unit description").log())
        .y_axis(Axis::new("Time to first token (milliseconds)"))
        .series(Series::new(long, vec![(1e-3, 1.0), (1e9, 1e6)]))
        .series(Series::new("b", vec![(1.0, 5e5), (1e6, 2.0)]))
        .render();
    let doc = parse(&svg);
    one_series(&doc, long);
    assert_eq!(legend_names(&doc), [long, "b"]);
    assert_no_text_overlap(&doc);
}
