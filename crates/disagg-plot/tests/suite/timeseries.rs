use crate::common::*;
use disagg_plot::{Axis, LegendPos, Panel, Series, TimeSeries};

fn sample() -> TimeSeries {
    let t: Vec<f64> = (0..50).map(f64::from).collect();
    let util = |k: f64| {
        t.iter()
            .map(move |&x| (x, (0.5 + 0.4 * (x / 5.0 + k).sin()).clamp(0.0, 1.0)))
            .collect::<Vec<_>>()
    };
    TimeSeries::new()
        .title("Over time")
        .x_axis(Axis::new("Time (s)"))
        .panel(
            Panel::new(Axis::new("Utilisation").range(0.0, 1.0).percent())
                .series(Series::new("prefill 0", util(0.0)).step())
                .series(Series::new("decode 0", util(1.0)).step())
                .series(Series::new("link", util(2.0)).dashed()),
        )
        .panel(
            Panel::new(Axis::new("Queue depth (requests)"))
                .series(Series::new("prefill 0", t.iter().map(|&x| (x, (x % 7.0).floor()))).step())
                .series(Series::new("decode 0", t.iter().map(|&x| (x, (x % 5.0).floor()))).step()),
        )
        .panel(
            Panel::new(Axis::new("KV occupancy").range(0.0, 1.0).percent())
                .series(Series::new("decode 0", t.iter().map(|&x| (x, x / 60.0))))
                .hline(0.9, "KV limit"),
        )
}

#[test]
fn panels_series_and_legends() {
    let svg = sample().render();
    let doc = parse(&svg);
    // Grows with the number of panels when no size is given.
    assert_eq!(doc.root_element().attribute("height"), Some("670"));
    let panels = by_class(&doc, "panel");
    assert_eq!(panels.len(), 3);
    // A name can repeat across panels, once per panel.
    let p0 = series(&doc, "prefill 0");
    assert_eq!(p0.len(), 2);
    assert_eq!(p0[0].attribute("data-panel"), Some("0"));
    assert_eq!(p0[1].attribute("data-panel"), Some("1"));
    // Step series: 2n - 1 vertices.
    assert_eq!(polyline_points(&p0[0]), Some(99));
    assert_eq!(polyline_points(&series(&doc, "link")[0]), Some(50));
    assert_eq!(series(&doc, "decode 0").len(), 3);
    assert_eq!(
        legend_names(&doc),
        [
            "prefill 0",
            "decode 0",
            "link",
            "prefill 0",
            "decode 0",
            "decode 0"
        ]
    );
    assert_eq!(by_class(&doc, "legend").len(), 3);
    assert_eq!(labelled(&doc, "refline", "KV limit").len(), 1);
    let t = texts(&doc);
    for want in [
        "Utilisation",
        "Queue depth (requests)",
        "KV occupancy",
        "Time (s)",
    ] {
        assert!(t.iter().any(|x| x == want), "missing {want}");
    }
    // The shared x axis is labelled once (bottom panel only): "20" appears as an x tick once.
    assert_eq!(t.iter().filter(|x| *x == "20").count(), 1);
    // A name keeps its colour across panels.
    let stroke = |g: &roxmltree::Node| {
        g.descendants()
            .find(|n| n.has_tag_name("polyline"))
            .unwrap()
            .attribute("stroke")
            .unwrap()
            .to_string()
    };
    let d = series(&doc, "decode 0");
    assert_eq!(stroke(&d[0]), stroke(&d[2]));
    assert_no_text_overlap(&doc);
}

#[test]
fn deterministic_and_sized() {
    assert_eq!(sample().render(), sample().render());
    let svg = sample().size(800, 500).render();
    let doc = parse(&svg);
    assert_eq!(doc.root_element().attribute("height"), Some("500"));
    assert_no_text_overlap(&doc);
}

#[test]
fn empty_panels() {
    let svg = TimeSeries::new().render();
    let doc = parse(&svg);
    assert_eq!(by_class(&doc, "no-data").len(), 1);
    let svg = TimeSeries::new()
        .panel(Panel::new(Axis::new("a")).series(Series::new("x", vec![(0.0, 1.0), (1.0, 2.0)])))
        .panel(Panel::new(Axis::new("b")).series(Series::new("empty", Vec::new())))
        .render();
    let doc = parse(&svg);
    assert_eq!(by_class(&doc, "no-data").len(), 1);
    one_series(&doc, "empty");
    assert_eq!(legend_names(&doc), ["x"]);
}

#[test]
fn many_series_legend_goes_outside_in_columns() {
    let mut p =
        Panel::new(Axis::new("Utilisation").range(0.0, 1.0).percent()).legend(LegendPos::Auto);
    for i in 0..16 {
        p = p.series(Series::new(
            format!("instance {i}"),
            (0..100).map(|t| (f64::from(t), ((t + i) % 10) as f64 / 10.0)),
        ));
    }
    let svg = TimeSeries::new()
        .panel(p)
        .panel(Panel::new(Axis::new("q")).series(Series::new("q", vec![(0.0, 1.0)])))
        .render();
    let doc = parse(&svg);
    assert_eq!(legend_names(&doc).len(), 17);
    assert_no_text_overlap(&doc);
}
