use crate::common::*;
use disagg_plot::{pareto_front, Axis, MarkPoint, Scatter};

/// Brute force: i is on the front iff no j dominates it.
fn brute(points: &[(f64, f64)], min_x: bool, min_y: bool) -> Vec<usize> {
    let better_eq = |a: f64, b: f64, min: bool| if min { a <= b } else { a >= b };
    let better = |a: f64, b: f64, min: bool| if min { a < b } else { a > b };
    (0..points.len())
        .filter(|&i| points[i].0.is_finite() && points[i].1.is_finite())
        .filter(|&i| {
            !(0..points.len()).any(|j| {
                let (p, q) = (points[j], points[i]);
                j != i
                    && p.0.is_finite()
                    && p.1.is_finite()
                    && better_eq(p.0, q.0, min_x)
                    && better_eq(p.1, q.1, min_y)
                    && (better(p.0, q.0, min_x) || better(p.1, q.1, min_y))
            })
        })
        .collect()
}

#[test]
fn pareto_matches_brute_force_on_random_sets() {
    let mut rng = Lcg(2024);
    for case in 0..2000 {
        let n = rng.below(25) as usize;
        // Small integer grids make ties and duplicates common.
        let span = 1 + rng.below(8);
        let mut pts: Vec<(f64, f64)> = (0..n)
            .map(|_| (rng.below(span) as f64, rng.below(span) as f64 - 3.0))
            .collect();
        if case % 10 == 0 && n > 0 {
            pts[0].1 = f64::NAN;
        }
        for (mx, my) in [(true, true), (true, false), (false, true), (false, false)] {
            let mut got = pareto_front(&pts, mx, my);
            // Ordered by x ascending.
            assert!(got.windows(2).all(|w| pts[w[0]].0 <= pts[w[1]].0));
            got.sort_unstable();
            assert_eq!(
                got,
                brute(&pts, mx, my),
                "case {case} {pts:?} min_x={mx} min_y={my}"
            );
        }
    }
}

#[test]
fn pareto_examples() {
    assert!(pareto_front(&[], true, true).is_empty());
    let pts = [(1.0, 5.0), (2.0, 3.0), (3.0, 4.0), (4.0, 1.0), (2.0, 3.0)];
    assert_eq!(pareto_front(&pts, true, true), vec![0, 1, 4, 3]);
    // Cost down, throughput up.
    assert_eq!(pareto_front(&pts, true, false), vec![0]);
    assert_eq!(
        pareto_front(&[(1.0, 1.0), (2.0, 3.0), (3.0, 2.0)], true, false),
        vec![0, 1]
    );
    // Both maximised.
    assert_eq!(
        pareto_front(&[(1.0, 1.0), (2.0, 3.0), (3.0, 2.0)], false, false),
        vec![1, 2]
    );
}

#[test]
fn scatter_with_frontier_and_labels() {
    let pts = vec![
        (1.0, 900.0),
        (2.0, 400.0),
        (3.0, 450.0),
        (4.0, 200.0),
        (5.0, 210.0),
    ];
    let labels = ["1P:1D", "1P:2D", "2P:1D", "2P:2D", "3P:2D"];
    let front: Vec<(f64, f64)> = pareto_front(&pts, true, true)
        .into_iter()
        .map(|i| pts[i])
        .collect();
    let mk = || {
        Scatter::new()
            .title("Plan")
            .x_axis(Axis::new("Cost ($/h)"))
            .y_axis(Axis::new("p99 TTFT (ms)").log())
            .labelled_points(
                "configs <all>",
                pts.iter().zip(labels).map(|(p, l)| (p.0, p.1, l)),
            )
            .points("other", vec![(2.5, 700.0), (f64::NAN, 1.0)])
            .frontier("Pareto frontier", front.iter().rev().copied())
            .hline(500.0, "SLO 500 ms")
            .mark(MarkPoint::new(4.0, 200.0, "chosen"))
            .render()
    };
    let svg = mk();
    assert_eq!(svg, mk());
    let doc = parse(&svg);
    let cfg = one_series(&doc, "configs <all>");
    assert!(polyline_points(&cfg).is_none(), "markers only");
    assert_eq!(
        cfg.descendants()
            .filter(|n| n.has_tag_name("circle"))
            .count(),
        5
    );
    let other = one_series(&doc, "other");
    assert_eq!(other.attribute("data-skipped"), Some("1"));
    let f = one_series(&doc, "Pareto frontier");
    assert_eq!(polyline_points(&f), Some(3));
    // Sorted by x even though given reversed.
    let c = polyline_coords(&f);
    assert!(c.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(
        legend_names(&doc),
        ["configs <all>", "other", "Pareto frontier"]
    );
    assert_eq!(labelled(&doc, "refline", "SLO 500 ms").len(), 1);
    assert_eq!(labelled(&doc, "marker", "chosen").len(), 1);
    let t = texts(&doc);
    let shown = labels.iter().filter(|l| t.iter().any(|x| x == *l)).count();
    let hidden: usize = by_class(&doc, "point-labels")[0]
        .attribute("data-hidden-labels")
        .map_or(0, |h| h.parse().unwrap());
    assert_eq!(shown + hidden, 5);
    assert!(shown >= 4, "only {shown} labels placed");
    assert_no_text_overlap(&doc);
}

#[test]
fn crowded_labels_are_dropped_not_overlapped() {
    let mut rng = Lcg(5);
    let pts: Vec<(f64, f64, String)> = (0..200)
        .map(|i| (rng.uniform(), rng.uniform(), format!("configuration {i}")))
        .collect();
    let svg = Scatter::new().labelled_points("many", pts).render();
    let doc = parse(&svg);
    let hidden: usize = by_class(&doc, "point-labels")[0]
        .attribute("data-hidden-labels")
        .unwrap()
        .parse()
        .unwrap();
    assert!(hidden > 0);
    assert_no_text_overlap(&doc);
}

#[test]
fn empty_scatter() {
    let svg = Scatter::new().render();
    let doc = parse(&svg);
    assert_eq!(by_class(&doc, "no-data").len(), 1);
    let svg = Scatter::new()
        .frontier("f", Vec::new())
        .points("p", vec![(f64::NAN, f64::NAN)])
        .render();
    let doc = parse(&svg);
    one_series(&doc, "f");
    one_series(&doc, "p");
}
