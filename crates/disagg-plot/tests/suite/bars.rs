use crate::common::*;
use disagg_plot::{Axis, BarOrientation, Color, LegendPos, StackedBars};

fn sample(cats: &[&str]) -> StackedBars {
    StackedBars::new()
        .title("Stage breakdown")
        .value_axis(Axis::new("Mean time per request (ms)"))
        .categories(cats.iter().copied())
        .segment("queue", vec![10.0, 20.0, 5.0])
        .segment("prefill", vec![100.0, 80.0, 90.0])
        .segment("hand-off", vec![30.0, 8.0])
        .segment_color(
            "decode",
            vec![400.0, 420.0, 380.0],
            Color::rgb(0x44, 0x44, 0x44),
        )
}

fn plot_orientation(doc: &roxmltree::Document) -> String {
    by_class(doc, "plot")[0]
        .attribute("data-orientation")
        .unwrap()
        .to_string()
}

#[test]
fn segments_are_series_with_one_rect_per_category() {
    let svg = sample(&["A", "B", "C"]).totals(true).render();
    let doc = parse(&svg);
    assert_eq!(plot_orientation(&doc), "vertical");
    for name in ["queue", "prefill", "hand-off", "decode"] {
        let g = one_series(&doc, name);
        let rects: Vec<_> = g.children().filter(|n| n.has_tag_name("rect")).collect();
        assert_eq!(rects.len(), 3);
        let cats: Vec<_> = rects
            .iter()
            .map(|r| r.attribute("data-category").unwrap())
            .collect();
        assert_eq!(cats, ["A", "B", "C"]);
    }
    // Vertical stacks list the legend top-down: last segment first.
    assert_eq!(
        legend_names(&doc),
        ["decode", "hand-off", "prefill", "queue"]
    );
    assert!(svg.contains("fill=\"#444444\""));
    // Totals: 540, 528, 475.
    let t = texts(&doc);
    for want in [
        "540",
        "528",
        "475",
        "A",
        "B",
        "C",
        "Mean time per request (ms)",
    ] {
        assert!(t.iter().any(|x| x == want), "missing {want}");
    }
    // Segments stack: in each category the rects touch end to end.
    let rect_y = |name: &str, i: usize| {
        let g = one_series(&doc, name);
        let r = g
            .children()
            .filter(|n| n.has_tag_name("rect"))
            .nth(i)
            .unwrap();
        let y: f64 = r.attribute("y").unwrap().parse().unwrap();
        let h: f64 = r.attribute("height").unwrap().parse().unwrap();
        (y, h)
    };
    let (qy, _) = rect_y("queue", 0);
    let (py, ph) = rect_y("prefill", 0);
    assert!((py + ph - qy).abs() < 0.02);
    assert_no_text_overlap(&doc);
}

#[test]
fn long_names_switch_to_horizontal_bars() {
    let long = [
        "1P:1D Llama-3-8B on H100 over 25 GbE, whole-cache hand-off",
        "2P:1D Llama-3-8B on H100 over InfiniBand NDR with fp8",
        "colocated",
    ];
    let svg = sample(&long).render();
    let doc = parse(&svg);
    assert_eq!(plot_orientation(&doc), "horizontal");
    assert_eq!(
        legend_names(&doc),
        ["queue", "prefill", "hand-off", "decode"]
    );
    assert_no_text_overlap(&doc);
    // Forced vertical with long names rotates the labels and still parses.
    let svg = sample(&long).orientation(BarOrientation::Vertical).render();
    let doc = parse(&svg);
    assert_eq!(plot_orientation(&doc), "vertical");
    let svg = sample(&["a", "b", "c"])
        .orientation(BarOrientation::Horizontal)
        .legend(LegendPos::OutsideRight)
        .render();
    let doc = parse(&svg);
    assert_eq!(plot_orientation(&doc), "horizontal");
    assert_no_text_overlap(&doc);
}

#[test]
fn negative_and_nan_count_as_zero_and_escaping() {
    let svg = StackedBars::new()
        .categories(["x<y", "\"q\" & 'r'"])
        .segment("a&b", vec![f64::NAN, 3.0])
        .segment("c", vec![-2.0, 1.0])
        .render();
    let doc = parse(&svg);
    assert_eq!(one_series(&doc, "a&b").attribute("data-skipped"), Some("1"));
    assert_eq!(one_series(&doc, "c").attribute("data-skipped"), Some("1"));
    let t = texts(&doc);
    assert!(t.iter().any(|x| x == "x<y"));
    assert!(t.iter().any(|x| x == "\"q\" & 'r'"));
}

#[test]
fn empty_and_deterministic() {
    for svg in [
        StackedBars::new().render(),
        StackedBars::new().categories(["a"]).render(),
        StackedBars::new().segment("s", vec![1.0]).render(),
        StackedBars::new()
            .categories(["a"])
            .segment("s", vec![0.0])
            .render(),
    ] {
        let doc = parse(&svg);
        assert_eq!(by_class(&doc, "no-data").len(), 1);
    }
    let cats = ["A", "B", "C"];
    assert_eq!(sample(&cats).render(), sample(&cats).render());
}

#[test]
fn many_categories() {
    let cats: Vec<String> = (0..40).map(|i| format!("cfg {i}")).collect();
    let svg = StackedBars::new()
        .categories(cats.clone())
        .segment("s", (0..40).map(f64::from).collect())
        .segment("t", vec![1.0; 40])
        .render();
    let doc = parse(&svg);
    assert_eq!(plot_orientation(&doc), "horizontal");
    assert_eq!(
        one_series(&doc, "s")
            .children()
            .filter(|n| n.has_tag_name("rect"))
            .count(),
        40
    );
}
