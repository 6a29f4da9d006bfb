//! `disagg calibrate --plot DIR`: predicted against measured step times, and the signed error
//! against batch size next to the uncalibrated roofline's (drawn by `disagg-plot`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use disagg_calib::{Phase, RowPrediction};
use disagg_plot::{palette, Axis, Color, Dash, Marker, Panel, Scatter, Series, TimeSeries};

use crate::output::write_file_atomic;
use crate::CmdResult;

/// The y = x line's colour (near-black) and the ±10 % lines' (light grey).
const DIAGONAL: Color = Color::rgb(0x33, 0x33, 0x33);
const BAND: Color = Color::rgb(0xbb, 0xbb, 0xbb);

/// Axis margin beyond the data, as a factor on a log axis (before rounding to 1-2-5 values).
const PAD: f64 = 1.1;

/// The 1-2-5 steps of a decade a log axis range is rounded to.
const STEPS: [f64; 3] = [1.0, 2.0, 5.0];

/// The largest value `m * 10^e` (m in 1, 2, 5) at or below `v` (> 0), so a log axis starts on a
/// labelled value.
pub fn floor_125(v: f64) -> f64 {
    let d = 10f64.powi(v.log10().floor() as i32);
    STEPS
        .iter()
        .rev()
        .map(|m| m * d)
        .find(|x| *x <= v)
        .unwrap_or(d)
}

/// The smallest value `m * 10^e` (m in 1, 2, 5, 10) at or above `v` (> 0).
pub fn ceil_125(v: f64) -> f64 {
    let d = 10f64.powi(v.log10().floor() as i32);
    STEPS
        .iter()
        .map(|m| m * d)
        .find(|x| *x >= v)
        .unwrap_or(10.0 * d)
}

/// Horizontal offset between neighbouring groups on the error chart's log batch axis, in
/// octaves, so groups measured at the same batch sizes do not hide each other.
const DODGE_OCTAVES: f64 = 0.05;

/// The x of group `k` of `n` at batch `batch`: groups spread symmetrically about the batch size
/// by [`DODGE_OCTAVES`] octaves each (`batch * 2^((k - (n - 1) / 2) * DODGE_OCTAVES)`).
pub fn dodged(batch: u64, k: usize, n: usize) -> f64 {
    let offset = (k as f64 - (n as f64 - 1.0) / 2.0) * DODGE_OCTAVES;
    batch as f64 * offset.exp2()
}

/// The prediction a chart shows: the leave-one-group-out one where there is one, else in-sample.
pub fn shown_prediction(r: &RowPrediction) -> f64 {
    r.cv_predicted_s.unwrap_or(r.predicted_s)
}

/// Signed relative error in percent: `(predicted - measured) / measured * 100`.
pub fn signed_error_pct(predicted: f64, measured: f64) -> f64 {
    (predicted - measured) / measured * 100.0
}

/// Which prediction a group's points are: `LOGO` (all held out), `in-sample` (none) or both.
pub fn kind(rows: &[&RowPrediction]) -> &'static str {
    let cv = rows.iter().filter(|r| r.cv_predicted_s.is_some()).count();
    if cv == rows.len() {
        "LOGO"
    } else if cv == 0 {
        "in-sample"
    } else {
        "LOGO + in-sample"
    }
}

/// The rows of one phase by group (groups sorted, rows in input order).
pub fn by_group(rows: &[RowPrediction], phase: Phase) -> BTreeMap<&str, Vec<&RowPrediction>> {
    let mut m: BTreeMap<&str, Vec<&RowPrediction>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.phase == phase) {
        m.entry(r.group.as_str()).or_default().push(r);
    }
    m
}

/// The smallest and largest positive finite value (`None`: there is none).
pub fn positive_span(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((f64::min(lo, v), f64::max(hi, v))),
        })
}

fn phase_word(phase: Phase) -> &'static str {
    match phase {
        Phase::Prefill => "Prefill batch",
        Phase::Decode => "Decode step",
    }
}

/// Predicted (LOGO where available) against measured time of one phase, log-log, one series per
/// group, with the y = x line and ±10 % lines spanning the data.
pub fn predicted_vs_measured(rows: &[RowPrediction], phase: Phase) -> String {
    let groups = by_group(rows, phase);
    let mut chart = Scatter::new()
        .title(format!(
            "{}: predicted (held out per group, LOGO, where available) vs measured",
            phase_word(phase)
        ))
        .size(820, 620);
    for (name, g) in &groups {
        chart = chart.points(
            format!("{name} ({})", kind(g)),
            g.iter()
                .map(|r| (r.measured_s * 1e3, shown_prediction(r) * 1e3)),
        );
    }
    let span = positive_span(
        groups
            .values()
            .flatten()
            .flat_map(|r| [r.measured_s * 1e3, shown_prediction(r) * 1e3]),
    );
    let (x_axis, y_axis) = (
        Axis::new("Measured (ms)").log(),
        Axis::new("Predicted (ms)").log(),
    );
    chart = match span {
        // The same range on both axes, so y = x is the diagonal.
        Some((lo, hi)) => chart
            .x_axis(x_axis.range(floor_125(lo / PAD), ceil_125(hi * PAD)))
            .y_axis(y_axis.range(floor_125(lo / PAD), ceil_125(hi * PAD))),
        None => chart.x_axis(x_axis).y_axis(y_axis),
    };
    if let Some((lo, hi)) = span {
        chart = chart
            .series(
                Series::new("y = x", [(lo, lo), (hi, hi)])
                    .color(DIAGONAL)
                    .width(1.2),
            )
            .series(
                Series::new("+10 %", [(lo, lo * 1.1), (hi, hi * 1.1)])
                    .color(BAND)
                    .dash(Dash::Dashed)
                    .width(1.0),
            )
            .series(
                Series::new("−10 %", [(lo, lo * 0.9), (hi, hi * 0.9)])
                    .color(BAND)
                    .dash(Dash::Dashed)
                    .width(1.0),
            );
    }
    chart.render()
}

/// One panel of the error chart: per group, the fit's signed error (filled marker) and the
/// uncalibrated roofline's (a cross in the same colour) against batch size.
fn error_panel(rows: &[RowPrediction], phase: Phase) -> Panel {
    let groups = by_group(rows, phase);
    let n = groups.len();
    let mut panel = Panel::new(Axis::new(format!(
        "{}: (pred. − meas.) / meas. (%)",
        phase_word(phase)
    )));
    for (k, (name, g)) in groups.iter().enumerate() {
        let c = palette(k);
        panel = panel
            .series(
                Series::new(
                    name.to_string(),
                    g.iter().map(|r| {
                        (
                            dodged(r.batch, k, n),
                            signed_error_pct(shown_prediction(r), r.measured_s),
                        )
                    }),
                )
                .markers_only()
                .marker(Marker::Circle)
                .marker_size(3.5)
                .color(c),
            )
            .series(
                Series::new(
                    format!("{name} uncal."),
                    g.iter().map(|r| {
                        (
                            dodged(r.batch, k, n),
                            signed_error_pct(r.uncalibrated_s, r.measured_s),
                        )
                    }),
                )
                .markers_only()
                .marker(Marker::Cross)
                .marker_size(3.5)
                .color(c),
            );
    }
    panel
        .hline(0.0, "")
        .hline(10.0, "+10 %")
        .hline(-10.0, "−10 %")
}

/// Signed relative error against batch size (log x): prefill and decode panels, the fit's error
/// next to the uncalibrated roofline's.
pub fn error_chart(rows: &[RowPrediction]) -> String {
    let all: Vec<&RowPrediction> = rows.iter().collect();
    let mut x_axis = Axis::new("Batch size (sequences; groups offset slightly)").log();
    if let Some((lo, hi)) = positive_span(rows.iter().map(|r| r.batch as f64)) {
        x_axis = x_axis.range(lo / 1.5, hi * 1.5);
    }
    TimeSeries::new()
        .title(format!(
            "Step-time error vs batch: fit ● ({}) and uncalibrated roofline ×",
            kind(&all)
        ))
        .size(1000, 900)
        .x_axis(x_axis)
        .panel(error_panel(rows, Phase::Prefill))
        .panel(error_panel(rows, Phase::Decode))
        .render()
}

/// Writes `calibration-prefill.svg`, `calibration-decode.svg` and `calibration-error.svg` into
/// `dir` (which must exist), pushing each path to `written`.
pub fn draw(dir: &Path, rows: &[RowPrediction], written: &mut Vec<PathBuf>) -> CmdResult {
    let charts = [
        (
            "calibration-prefill.svg",
            predicted_vs_measured(rows, Phase::Prefill),
        ),
        (
            "calibration-decode.svg",
            predicted_vs_measured(rows, Phase::Decode),
        ),
        ("calibration-error.svg", error_chart(rows)),
    ];
    for (name, svg) in charts {
        let p = dir.join(name);
        write_file_atomic("--plot", &p, svg.as_bytes())?;
        written.push(p);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        group: &str,
        phase: Phase,
        batch: u64,
        m: f64,
        p: f64,
        cv: Option<f64>,
        u: f64,
    ) -> RowPrediction {
        RowPrediction {
            group: group.into(),
            phase,
            batch,
            tokens: 512,
            measured_s: m,
            predicted_s: p,
            cv_predicted_s: cv,
            uncalibrated_s: u,
        }
    }

    /// Two prefill groups (one held out, one in-sample only) and one decode group.
    fn sample() -> Vec<RowPrediction> {
        vec![
            row(
                "m/a100/tp4",
                Phase::Prefill,
                1,
                0.004,
                0.005,
                Some(0.003),
                0.002,
            ),
            row(
                "m/a100/tp4",
                Phase::Prefill,
                8,
                0.032,
                0.030,
                Some(0.040),
                0.016,
            ),
            row("m/a100/tp2", Phase::Prefill, 2, 0.010, 0.0125, None, 0.020),
            row(
                "m/a100/tp4",
                Phase::Decode,
                16,
                0.025,
                0.020,
                Some(0.030),
                0.050,
            ),
            row(
                "m/a100/tp2",
                Phase::Decode,
                4,
                0.020,
                0.022,
                Some(0.024),
                0.010,
            ),
        ]
    }

    #[test]
    fn shown_prediction_prefers_the_held_out_one() {
        let r = sample();
        assert_eq!(shown_prediction(&r[0]), 0.003);
        assert_eq!(shown_prediction(&r[2]), 0.0125);
    }

    #[test]
    fn signed_error_is_relative_to_measured_in_percent() {
        // (3 - 2) / 2 * 100 = 50; (1 - 4) / 4 * 100 = -75; exact in binary.
        assert_eq!(signed_error_pct(3.0, 2.0), 50.0);
        assert_eq!(signed_error_pct(1.0, 4.0), -75.0);
        assert_eq!(signed_error_pct(2.0, 2.0), 0.0);
    }

    #[test]
    fn kind_names_which_prediction_a_group_shows() {
        let r = sample();
        assert_eq!(kind(&[&r[0], &r[1]]), "LOGO");
        assert_eq!(kind(&[&r[2]]), "in-sample");
        assert_eq!(kind(&[&r[0], &r[2]]), "LOGO + in-sample");
        assert_eq!(kind(&[&r[2], &r[0]]), "LOGO + in-sample");
    }

    #[test]
    fn by_group_sorts_groups_and_keeps_one_phase() {
        let r = sample();
        let g = by_group(&r, Phase::Prefill);
        assert_eq!(
            g.keys().copied().collect::<Vec<_>>(),
            ["m/a100/tp2", "m/a100/tp4"]
        );
        assert_eq!(
            g["m/a100/tp4"].iter().map(|r| r.batch).collect::<Vec<_>>(),
            [1, 8]
        );
        assert_eq!(g["m/a100/tp2"].len(), 1);
        let d = by_group(&r, Phase::Decode);
        assert_eq!(
            d["m/a100/tp4"].iter().map(|r| r.batch).collect::<Vec<_>>(),
            [16]
        );
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn positive_span_ignores_non_positive_and_non_finite() {
        assert_eq!(
            positive_span([3.0, -1.0, 0.0, f64::NAN, 0.5, 7.0, f64::INFINITY]),
            Some((0.5, 7.0))
        );
        assert_eq!(positive_span([2.0]), Some((2.0, 2.0)));
        assert_eq!(positive_span([0.0, -2.0]), None);
        assert_eq!(positive_span(std::iter::empty()), None);
    }

    fn attr(n: &roxmltree::Node, a: &str) -> f64 {
        n.attribute(a).unwrap().parse().unwrap()
    }

    /// `data-series` → (data-points, marker centres, polyline points) of every series group.
    type Drawn = Vec<(String, usize, Vec<(f64, f64)>, Vec<(f64, f64)>)>;

    fn series(svg: &str) -> Drawn {
        let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
        doc.descendants()
            .filter(|n| n.attribute("class") == Some("series"))
            .map(|g| {
                let mut centres = Vec::new();
                let mut line = Vec::new();
                for e in g.descendants() {
                    match e.tag_name().name() {
                        "circle" => centres.push((attr(&e, "cx"), attr(&e, "cy"))),
                        "rect" => centres.push((
                            attr(&e, "x") + attr(&e, "width") / 2.0,
                            attr(&e, "y") + attr(&e, "height") / 2.0,
                        )),
                        "polyline" => {
                            for p in e.attribute("points").unwrap().split_whitespace() {
                                let (x, y) = p.split_once(',').unwrap();
                                line.push((x.parse().unwrap(), y.parse().unwrap()));
                            }
                        }
                        _ => {}
                    }
                }
                let name = g.attribute("data-series").unwrap().to_string();
                let n = g.attribute("data-points").unwrap().parse().unwrap();
                (name, n, centres, line)
            })
            .collect()
    }

    #[test]
    fn prefill_chart_has_one_series_per_group_and_a_diagonal_spanning_the_data() {
        let svg = predicted_vs_measured(&sample(), Phase::Prefill);
        assert!(svg.contains("Prefill batch: predicted (held out per group, LOGO"));
        assert!(svg.contains(">Measured (ms)<") && svg.contains(">Predicted (ms)<"));
        let s = series(&svg);
        let names: Vec<&str> = s.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "m/a100/tp2 (in-sample)",
                "m/a100/tp4 (LOGO)",
                "y = x",
                "+10 %",
                "−10 %"
            ]
        );
        assert_eq!(s.iter().map(|x| x.1).collect::<Vec<_>>(), [1, 2, 2, 2, 2]);
        // Markers of both groups, in pixels (a square's centre is rebuilt from its corner, so
        // allow 1e-6 px of rounding); the y = x line goes from the smallest value (3 ms,
        // tp4's held-out prediction at batch 1) to the largest (40 ms), so it covers them all.
        let marks: Vec<(f64, f64)> = s[..2].iter().flat_map(|x| x.2.clone()).collect();
        assert_eq!(marks.len(), 3);
        let diag = &s[2].3;
        assert_eq!(diag.len(), 2);
        let (xs, ys): (Vec<f64>, Vec<f64>) = marks.iter().copied().unzip();
        let (x0, x1) = (diag[0].0.min(diag[1].0), diag[0].0.max(diag[1].0));
        let (y0, y1) = (diag[0].1.min(diag[1].1), diag[0].1.max(diag[1].1));
        assert!(
            xs.iter().all(|x| (x0 - 1e-6..=x1 + 1e-6).contains(x)),
            "{xs:?} outside {x0}..{x1}"
        );
        assert!(
            ys.iter().all(|y| (y0 - 1e-6..=y1 + 1e-6).contains(y)),
            "{ys:?} outside {y0}..{y1}"
        );
        // Its lower end is at 3 ms on both axes: the same pixel y as the 3 ms prediction, which
        // is the lowest marker.
        let low_pred = marks.iter().map(|m| m.1).fold(f64::MIN, f64::max);
        assert_eq!(diag.iter().map(|p| p.1).fold(f64::MIN, f64::max), low_pred);
        // The +10 % line lies above the diagonal (smaller pixel y), the −10 % one below.
        assert!(s[3].3[1].1 < diag[1].1 && s[4].3[1].1 > diag[1].1);
    }

    #[test]
    fn decode_chart_uses_decode_rows_only() {
        let svg = predicted_vs_measured(&sample(), Phase::Decode);
        assert!(svg.contains("Decode step: predicted"));
        let s = series(&svg);
        let names: Vec<&str> = s.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "m/a100/tp2 (LOGO)",
                "m/a100/tp4 (LOGO)",
                "y = x",
                "+10 %",
                "−10 %"
            ]
        );
        assert_eq!(s.iter().map(|x| x.1).collect::<Vec<_>>(), [1, 1, 2, 2, 2]);
    }

    #[test]
    fn empty_phase_has_no_reference_lines() {
        let r: Vec<RowPrediction> = sample()
            .into_iter()
            .filter(|r| r.phase == Phase::Decode)
            .collect();
        let s = series(&predicted_vs_measured(&r, Phase::Prefill));
        assert!(
            s.is_empty(),
            "{:?}",
            s.iter().map(|x| &x.0).collect::<Vec<_>>()
        );
    }

    #[test]
    fn error_chart_pairs_each_group_with_its_uncalibrated_error() {
        let svg = error_chart(&sample());
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let panel_of = |name: &str| -> Vec<String> {
            doc.descendants()
                .filter(|n| {
                    n.attribute("class") == Some("series")
                        && n.attribute("data-series") == Some(name)
                })
                .map(|n| n.attribute("data-panel").unwrap().to_string())
                .collect()
        };
        assert_eq!(panel_of("m/a100/tp4"), ["0", "1"]);
        assert_eq!(panel_of("m/a100/tp2"), ["0", "1"]);
        assert_eq!(panel_of("m/a100/tp2 uncal."), ["0", "1"]);
        assert_eq!(panel_of("m/a100/tp4 uncal."), ["0", "1"]);
        // One prefill row of tp2 is in-sample only.
        assert!(svg.contains("fit ● (LOGO + in-sample) and uncalibrated roofline ×"));
        assert_eq!(series(&svg).len(), 8);
        assert!(
            svg.contains(">Prefill batch: (pred. − meas.) / meas. (%)<")
                && svg.contains(">Decode step: (pred. − meas.) / meas. (%)<")
        );
        assert!(svg.contains(">Batch size (sequences; groups offset slightly)<"));
        // Reference lines at 0 and ±10 % in each panel.
        let refs = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("refline"))
            .count();
        assert_eq!(refs, 6);
    }

    /// The y pixel of each fit marker orders as the signed errors do. Prefill tp4 errors:
    /// (3 - 4) / 4 = -25 % at batch 1 and (40 - 32) / 32 = +25 % at batch 8; uncalibrated
    /// (2 - 4) / 4 = -50 % and (16 - 32) / 32 = -50 %.
    #[test]
    fn error_markers_sit_at_the_signed_errors() {
        let r: Vec<RowPrediction> = sample()
            .into_iter()
            .filter(|r| r.group == "m/a100/tp4")
            .collect();
        let s = series(&error_chart(&r));
        let fit = &s.iter().find(|x| x.0 == "m/a100/tp4").unwrap().2;
        let unc = &s.iter().find(|x| x.0 == "m/a100/tp4 uncal.").unwrap().2;
        assert_eq!(fit.len(), 2);
        // Batch 1 left of batch 8; -25 % below +25 % (larger pixel y).
        assert!(fit[0].0 < fit[1].0 && fit[0].1 > fit[1].1);
        // -50 % twice: same height, below both fit points. Crosses are paths, not circles.
        assert!(unc.is_empty());
        let svg = error_chart(&r);
        assert!(svg.contains("data-series=\"m/a100/tp4 uncal.\" data-points=\"2\""));
        assert!(svg.contains("fit ● (LOGO) and uncalibrated"));
    }

    #[test]
    fn log_ranges_round_to_1_2_5() {
        assert_eq!(floor_125(26.0), 20.0);
        assert_eq!(floor_125(57.0), 50.0);
        assert_eq!(floor_125(19.0), 10.0);
        assert_eq!(floor_125(0.3), 0.2);
        assert_eq!(floor_125(2.0), 2.0);
        assert_eq!(ceil_125(107.0), 200.0);
        assert_eq!(ceil_125(13_200.0), 20_000.0);
        assert_eq!(ceil_125(3.0), 5.0);
        assert_eq!(ceil_125(6.0), 10.0);
        assert_eq!(ceil_125(5.0), 5.0);
        assert_eq!(ceil_125(1.5), 2.0);
    }

    /// Both axes run over the same 1-2-5 range around the data with a 10 % margin: values of
    /// 2.1-4.8 ms give 2.1 / 1.1 = 1.9 → 1 ms and 4.8 * 1.1 = 5.28 → 10 ms, so the diagonal starts
    /// log10(2.1) of the way along each axis and ends at log10(4.8).
    #[test]
    fn predicted_vs_measured_axes_share_a_padded_range() {
        let rows = vec![
            row("g", Phase::Decode, 1, 0.0021, 0.003, None, 0.001),
            row("g", Phase::Decode, 2, 0.0048, 0.004, None, 0.001),
        ];
        let svg = predicted_vs_measured(&rows, Phase::Decode);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let r = doc
            .descendants()
            .find(|n| n.tag_name().name() == "clipPath")
            .unwrap()
            .first_element_child()
            .unwrap();
        // The clip rectangle is the plot area grown by 4 px on every side.
        let (x, y) = (attr(&r, "x") + 4.0, attr(&r, "y") + 4.0);
        let (w, h) = (attr(&r, "width") - 8.0, attr(&r, "height") - 8.0);
        let s = series(&svg);
        let diag = &s.iter().find(|d| d.0 == "y = x").unwrap().3;
        let close = |a: f64, b: f64| (a - b).abs() < 0.01;
        for (p, v) in diag.iter().zip([2.1f64, 4.8]) {
            let f = v.log10(); // (log10 v - log10 1) / (log10 10 - log10 1)
            assert!(close(p.0, x + w * f), "{p:?} {x} {w}");
            assert!(close(p.1, y + h * (1.0 - f)), "{p:?} {y} {h}");
        }
    }

    #[test]
    fn dodge_spreads_groups_symmetrically_by_octaves() {
        // One group: no offset. 41 groups: the last is (40 - 20) * 0.05 = 1 octave right, the
        // first 1 octave left (exact powers of two).
        assert_eq!(dodged(8, 0, 1), 8.0);
        assert_eq!(dodged(3, 40, 41), 6.0);
        assert_eq!(dodged(3, 0, 41), 1.5);
        assert_eq!(dodged(3, 20, 41), 3.0);
        // Two groups: 2^(∓0.025) around the batch.
        let (a, b) = (dodged(4, 0, 2), dodged(4, 1, 2));
        assert!((a - 4.0 * 2f64.powf(-0.025)).abs() < 1e-12, "{a}");
        assert!((b - 4.0 * 2f64.powf(0.025)).abs() < 1e-12, "{b}");
    }

    /// Every marker lies inside its panel (the batch axis has a margin on both sides), and the
    /// predicted-vs-measured chart's markers inside its plot area.
    #[test]
    fn markers_are_inside_the_plot_areas() {
        // Filled markers: 5 fit points on the error chart (its crosses are paths), 3 prefill.
        for (svg, want) in [
            (error_chart(&sample()), 5),
            (predicted_vs_measured(&sample(), Phase::Prefill), 3),
        ] {
            let doc = roxmltree::Document::parse(&svg).unwrap();
            let clips: Vec<(f64, f64, f64, f64)> = doc
                .descendants()
                .filter(|n| n.tag_name().name() == "clipPath")
                .map(|c| {
                    let r = c.first_element_child().unwrap();
                    let (x, y) = (attr(&r, "x"), attr(&r, "y"));
                    (x, y, x + attr(&r, "width"), y + attr(&r, "height"))
                })
                .collect();
            let mut n = 0;
            for g in doc
                .descendants()
                .filter(|n| n.attribute("class") == Some("series"))
            {
                let panel: usize = g.attribute("data-panel").map_or(0, |p| p.parse().unwrap());
                let (x0, y0, x1, y1) = clips[panel];
                let s = series(&format!("<svg>{}</svg>", &svg[g.range()]));
                for &(x, y) in &s[0].2 {
                    assert!(
                        x > x0 + 3.0 && x < x1 - 3.0 && y > y0 && y < y1,
                        "{x},{y} {:?}",
                        clips[panel]
                    );
                    n += 1;
                }
            }
            assert_eq!(n, want);
        }
    }

    #[test]
    fn draw_writes_three_deterministic_files() {
        let dir = std::env::temp_dir().join(format!("disagg-calplot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut written = Vec::new();
        draw(&dir, &sample(), &mut written).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "calibration-prefill.svg",
                "calibration-decode.svg",
                "calibration-error.svg"
            ]
        );
        let first: Vec<Vec<u8>> = written.iter().map(|p| std::fs::read(p).unwrap()).collect();
        assert_eq!(
            first[0],
            predicted_vs_measured(&sample(), Phase::Prefill).into_bytes()
        );
        assert_eq!(
            first[1],
            predicted_vs_measured(&sample(), Phase::Decode).into_bytes()
        );
        assert_eq!(first[2], error_chart(&sample()).into_bytes());
        let mut again = Vec::new();
        draw(&dir, &sample(), &mut again).unwrap();
        assert_eq!(again, written);
        for (p, f) in again.iter().zip(&first) {
            assert_eq!(&std::fs::read(p).unwrap(), f);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn draw_reports_an_unwritable_directory() {
        let dir =
            std::env::temp_dir().join(format!("disagg-calplot-missing-{}/x/y", std::process::id()));
        let mut written = Vec::new();
        assert!(draw(&dir, &sample(), &mut written).is_err());
        assert!(written.is_empty());
    }
}
