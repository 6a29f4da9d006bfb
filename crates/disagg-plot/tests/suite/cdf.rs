use crate::common::*;
use disagg_plot::{ecdf, Axis, Cdf, Dash, Style, DEFAULT_CDF_POINTS};

#[test]
fn one_line_per_run_with_step_points() {
    let a = [3.0, 1.0, 2.0, 4.0, 5.0];
    let b = [10.0, 10.0, 20.0, f64::NAN];
    let svg = Cdf::new()
        .title("TTFT")
        .x_axis(Axis::new("TTFT (ms)"))
        .series("run a", &a)
        .series_styled(
            "run b",
            &b,
            Style {
                dash: Some(Dash::Dashed),
                ..Style::default()
            },
        )
        .vline(4.5, "SLO 4.5 ms")
        .hline(0.99, "p99")
        .render();
    let doc = parse(&svg);
    // n distinct values -> 2n step vertices.
    assert_eq!(polyline_points(&one_series(&doc, "run a")), Some(10));
    assert_eq!(polyline_points(&one_series(&doc, "run b")), Some(4));
    assert_eq!(legend_names(&doc), ["run a", "run b"]);
    assert_eq!(labelled(&doc, "refline", "SLO 4.5 ms").len(), 1);
    assert_eq!(labelled(&doc, "refline", "p99").len(), 1);
    // y goes from the bottom (0) to the top (1) of the plot; steps are monotone.
    let c = polyline_coords(&one_series(&doc, "run a"));
    assert!(c.windows(2).all(|w| w[1].0 >= w[0].0 && w[1].1 <= w[0].1));
    assert!(c[0].1 > c[c.len() - 1].1);
    assert_no_text_overlap(&doc);
}

#[test]
fn ecdf_values() {
    assert_eq!(
        ecdf(&[2.0, 1.0], 100),
        vec![(1.0, 0.0), (1.0, 0.5), (2.0, 0.5), (2.0, 1.0)]
    );
    assert_eq!(ecdf(&[f64::NAN, f64::INFINITY], 100), Vec::new());
    assert_eq!(ecdf(&[7.0], 1), vec![(7.0, 0.0), (7.0, 1.0)]);
}

#[test]
fn large_input_is_capped() {
    let mut rng = Lcg(7);
    let samples: Vec<f64> = (0..1_000_000)
        .map(|_| 10.0 + 1000.0 * rng.uniform() * rng.uniform())
        .collect();
    let pts = ecdf(&samples, DEFAULT_CDF_POINTS);
    assert!(pts.len() <= DEFAULT_CDF_POINTS && pts.len() >= DEFAULT_CDF_POINTS - 10);
    assert_eq!(pts.first().unwrap().1, 0.0);
    assert_eq!(pts.last().unwrap().1, 1.0);
    // The capped curve is exact at its quantiles: compare with a sorted copy.
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    for &(x, y) in pts.iter().skip(1).step_by(97) {
        let below = sorted.partition_point(|s| *s <= x) as f64 / sorted.len() as f64;
        let strictly = sorted.partition_point(|s| *s < x) as f64 / sorted.len() as f64;
        assert!(y == below || y <= strictly + 1e-12, "({x}, {y})");
    }
    let svg = Cdf::new()
        .x_axis(Axis::new("TTFT (ms)").log())
        .series("big", &samples)
        .max_points(500)
        .render();
    let doc = parse(&svg);
    assert!(polyline_points(&one_series(&doc, "big")).unwrap() <= 500);
    assert!(svg.len() < 60_000, "{} bytes", svg.len());
}

#[test]
fn log_axis_skips_non_positive_samples() {
    let svg = Cdf::new()
        .x_axis(Axis::new("hand-off (ms)").log())
        .series("h", &[0.0, 0.0, 1.0, 10.0, -3.0])
        .render();
    let doc = parse(&svg);
    let g = one_series(&doc, "h");
    // Steps at -3 and 0 cannot be placed (4 vertices); those at 1 and 10 can.
    assert_eq!(polyline_points(&g), Some(4));
    assert_eq!(g.attribute("data-skipped"), Some("4"));
}

#[test]
fn empty_and_deterministic() {
    let doc_svg = Cdf::new().render();
    let doc = parse(&doc_svg);
    assert_eq!(by_class(&doc, "no-data").len(), 1);
    let e = Cdf::new().series("none", &[]).render();
    let doc = parse(&e);
    one_series(&doc, "none");
    let mk = || {
        Cdf::new()
            .series("a", &[1.0, 2.0, 2.5, 9.0])
            .series("b", &[0.5, 3.0])
            .render()
    };
    assert_eq!(mk(), mk());
}

#[test]
fn percent_y_axis() {
    let svg = Cdf::new()
        .y_axis(Axis::new("Requests").range(0.0, 1.0).percent())
        .series("a", &[1.0, 2.0, 3.0])
        .render();
    let doc = parse(&svg);
    assert!(texts(&doc).iter().any(|t| t == "100%"));
}
