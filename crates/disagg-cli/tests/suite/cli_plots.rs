//! `--plot DIR` on run, compare, sweep and plan: every command succeeds, every file is valid SVG
//! holding the expected series, and the plotted points of the CDFs are read back through the
//! chart's own tick labels and checked against values computed here from `--requests-out`.

use crate::common;
#[allow(unused_imports)]
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("disagg-plots-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Parses `file` as SVG and returns the names of its series.
fn series(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let doc =
        roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    doc.descendants()
        .filter(|n| n.attribute("class") == Some("series"))
        .filter_map(|n| n.attribute("data-series").map(str::to_string))
        .collect()
}

fn has(file: &Path, want: &[&str]) {
    let s = series(file);
    for w in want {
        assert!(
            s.iter().any(|x| x == w),
            "{}: no series '{w}' in {s:?}",
            file.display()
        );
    }
}

#[test]
fn run_plots() {
    let d = dir("run");
    let ds = d.to_str().unwrap();
    ok(&[
        "run",
        "--preset",
        "link-eth-25g",
        "--requests",
        "200",
        "--plot",
        ds,
    ]);
    let name = "1P h100 + 1D h100, eth-25g";
    for f in [
        "cdf-ttft",
        "cdf-tpot",
        "cdf-itl",
        "cdf-e2e",
        "cdf-handoff",
        "stages",
    ] {
        assert!(!series(&d.join(format!("{f}.svg"))).is_empty(), "{f}");
    }
    has(&d.join("cdf-ttft.svg"), &[name]);
    has(&d.join("cdf-handoff.svg"), &[name]);
    has(
        &d.join("timeline.svg"),
        &["prefill-0", "decode-0", "kv-link"],
    );
    has(
        &d.join("stages.svg"),
        &[
            "prefill_queue",
            "prefill",
            "kv_wait",
            "kv_transfer",
            "decode_queue",
            "decode",
        ],
    );
}

#[test]
fn compare_and_sweep_plots() {
    let d = dir("compare");
    let ds = d.to_str().unwrap();
    ok(&[
        "compare",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--requests",
        "200",
        "--sweep-rate",
        "4",
        "8",
        "--plot",
        ds,
    ]);
    has(
        &d.join("ttft-vs-rate.svg"),
        &["colocated p99", "colocated p50", "disagg p99", "disagg p50"],
    );
    has(
        &d.join("tpot-vs-rate.svg"),
        &["colocated p99", "disagg p50"],
    );
    has(&d.join("attainment-vs-rate.svg"), &["colocated", "disagg"]);
    has(
        &d.join("cdf-e2e.svg"),
        &["colocated @ 4 req/s", "disagg @ 8 req/s"],
    );
    let d = dir("sweep");
    let ds = d.to_str().unwrap();
    ok(&[
        "sweep",
        "--preset",
        "link-ib-ndr",
        "--requests",
        "200",
        "--vary",
        "rate=4,8,16",
        "--vary",
        "link=ib-ndr,eth-25g",
        "--quiet",
        "--plot",
        ds,
    ]);
    has(
        &d.join("attainment-vs-rate.svg"),
        &["link=ib-ndr", "link=eth-25g"],
    );
    has(
        &d.join("ttft-vs-rate.svg"),
        &["link=ib-ndr p99", "link=eth-25g p50"],
    );
    has(
        &d.join("cdf-tpot.svg"),
        &["rate=4 link=ib-ndr", "rate=16 link=eth-25g"],
    );
    assert!(!series(&d.join("stages.svg")).is_empty());
}

#[test]
fn plan_plots() {
    let d = dir("plan");
    let ds = d.to_str().unwrap();
    ok(&[
        "plan",
        "--preset",
        "link-eth-25g",
        "--requests",
        "200",
        "--target-rate",
        "10",
        "--prefill-counts",
        "1-2",
        "--decode-counts",
        "1-2",
        "--plot",
        ds,
    ]);
    has(
        &d.join("pareto.svg"),
        &["feasible configurations", "Pareto frontier"],
    );
    assert!(!series(&d.join("stages.svg")).is_empty());
}

#[test]
fn bad_plot_dir() {
    let f = std::env::temp_dir().join(format!("disagg-plots-file-{}", std::process::id()));
    std::fs::write(&f, "x").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .args(["run", "--requests", "10", "--plot", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--plot"));
}

/// The numeric value of a tick label ("20", "0.5", "1k", "2.5M", "5m" for milli, "20%").
fn tick_value(label: &str) -> Option<f64> {
    let (num, mult) = match label.chars().last()? {
        '%' => (&label[..label.len() - 1], 1e-2),
        'k' => (&label[..label.len() - 1], 1e3),
        'M' => (&label[..label.len() - 1], 1e6),
        'G' => (&label[..label.len() - 1], 1e9),
        'm' => (&label[..label.len() - 1], 1e-3),
        _ => (label, 1.0),
    };
    num.replace(',', "").parse::<f64>().ok().map(|v| v * mult)
}

/// Maps the pixel coordinates of a single-panel chart back to data coordinates, from the chart's
/// own tick labels (x: labels centred under the plot; y: labels right-aligned left of it), so the
/// check does not reuse the plotting code's scales. An axis is taken as logarithmic when its
/// ticks are evenly spaced in log10 and not linearly.
struct Inverse {
    x: (bool, f64, f64),
    y: (bool, f64, f64),
}

impl Inverse {
    fn fit(ticks: &[(f64, f64)]) -> (bool, f64, f64) {
        assert!(ticks.len() >= 3, "too few ticks: {ticks:?}");
        let fits = |f: &dyn Fn(f64) -> f64| {
            let (p0, v0) = ticks[0];
            let (p1, v1) = ticks[ticks.len() - 1];
            let b = (f(v1) - f(v0)) / (p1 - p0);
            let a = f(v0) - b * p0;
            let ok = ticks
                .iter()
                .all(|&(p, v)| ((a + b * p) - f(v)).abs() <= 0.02 * (f(v1) - f(v0)).abs());
            (ok, a, b)
        };
        let lin = fits(&|v| v);
        if lin.0 {
            return (false, lin.1, lin.2);
        }
        let log = fits(&|v: f64| v.log10());
        assert!(log.0, "ticks neither linear nor logarithmic: {ticks:?}");
        (true, log.1, log.2)
    }

    fn of(doc: &roxmltree::Document) -> Inverse {
        let texts: Vec<(String, f64, f64, String)> = doc
            .descendants()
            .filter(|n| n.tag_name().name() == "text" && n.attribute("class").is_none())
            .filter_map(|n| {
                Some((
                    n.text()?.to_string(),
                    n.attribute("x")?.parse().ok()?,
                    n.attribute("y")?.parse().ok()?,
                    n.attribute("text-anchor")?.to_string(),
                ))
            })
            .collect();
        // x tick labels: centred, all on the lowest common baseline.
        let baseline = texts
            .iter()
            .filter(|t| t.3 == "middle" && tick_value(&t.0).is_some())
            .map(|t| t.2)
            .fold(f64::NAN, f64::max);
        let xt: Vec<(f64, f64)> = texts
            .iter()
            .filter(|t| t.3 == "middle" && t.2 == baseline)
            .filter_map(|t| Some((t.1, tick_value(&t.0)?)))
            .collect();
        // y tick labels: right-aligned, the text baseline sits 0.35 em (11 px font) below the
        // tick; the offset cancels in the fit's slope but not its intercept, so remove it.
        let yt: Vec<(f64, f64)> = texts
            .iter()
            .filter(|t| t.3 == "end")
            .filter_map(|t| Some((t.2 - 11.0 * 0.35, tick_value(&t.0)?)))
            .collect();
        Inverse {
            x: Self::fit(&xt),
            y: Self::fit(&yt),
        }
    }

    fn map(axis: (bool, f64, f64), px: f64) -> f64 {
        let v = axis.1 + axis.2 * px;
        if axis.0 {
            10f64.powf(v)
        } else {
            v
        }
    }

    fn point(&self, (px, py): (f64, f64)) -> (f64, f64) {
        (Self::map(self.x, px), Self::map(self.y, py))
    }
}

/// The plotted vertices of series `name` in `file`, in data coordinates.
fn plotted(file: &Path, name: &str) -> Vec<(f64, f64)> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let doc = roxmltree::Document::parse(&text).unwrap();
    let inv = Inverse::of(&doc);
    let g = doc
        .descendants()
        .find(|n| {
            n.attribute("class") == Some("series") && n.attribute("data-series") == Some(name)
        })
        .unwrap_or_else(|| panic!("{}: no series '{name}'", file.display()));
    let pts = g
        .descendants()
        .find(|n| n.tag_name().name() == "polyline")
        .and_then(|n| n.attribute("points"))
        .expect("a polyline");
    pts.split_whitespace()
        .map(|xy| {
            let (x, y) = xy.split_once(',').unwrap();
            inv.point((x.parse().unwrap(), y.parse().unwrap()))
        })
        .collect()
}

/// One `--requests-out` row: (arrival, first_token, kv_ready, decode_start, finish), seconds.
type Stamps = (f64, Option<f64>, Option<f64>, Option<f64>, Option<f64>);

fn read_requests(csv: &Path) -> Vec<Stamps> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("rid,arrival_s,prompt_len,output_len,prefill_start_s,first_token_s,kv_start_s,kv_ready_s,decode_start_s,finish_s")
    );
    let cell = |c: &str| (!c.is_empty()).then(|| c.parse::<f64>().unwrap());
    lines
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (
                c[1].parse().unwrap(),
                cell(c[5]),
                cell(c[7]),
                cell(c[8]),
                cell(c[9]),
            )
        })
        .collect()
}

/// The measured TTFTs in ms, computed from the stamps by the rules the README states: finished
/// requests in arrival order, the first `floor(0.1 n)` cut as warm-up; the first token is the end
/// of prefill, or with `--first-token decode` the decode admission of a handed-off request.
fn measured_ttfts_ms(rows: &[Stamps], decode_first: bool) -> Vec<f64> {
    let mut done: Vec<&Stamps> = rows.iter().filter(|r| r.4.is_some()).collect();
    done.sort_by(|a, b| a.0.total_cmp(&b.0));
    let cut = done.len() / 10;
    done[cut..]
        .iter()
        .map(|r| {
            let first = match (decode_first, r.2, r.3) {
                (true, Some(_), Some(d)) => d,
                _ => r.1.unwrap(),
            };
            1e3 * (first - r.0)
        })
        .collect()
}

/// Asserts that the plotted step curve is the empirical CDF of `samples`: for each distinct value
/// `v` (ascending) the vertices `(v, below/n)` and `(v, at_or_below/n)`.
fn assert_ecdf(pts: &[(f64, f64)], samples: &[f64]) {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mut want = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j < v.len() && v[j] == v[i] {
            j += 1;
        }
        want.push((v[i], i as f64 / n));
        want.push((v[i], j as f64 / n));
        i = j;
    }
    assert_eq!(
        pts.len(),
        want.len(),
        "vertices plotted, vertices of the ECDF"
    );
    for (got, w) in pts.iter().zip(&want) {
        assert!(
            (got.0 - w.0).abs() <= 2e-3 * w.0.abs() && (got.1 - w.1).abs() <= 2e-3,
            "plotted {got:?}, want {w:?}"
        );
    }
}

/// The numpy-style (linear interpolation) `p`-quantile of a sorted sample.
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let k = (sorted.len() - 1) as f64 * p;
    let (lo, hi) = (k.floor() as usize, k.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (k - lo as f64)
}

#[test]
fn ttft_cdf_plots_the_measured_ttfts() {
    for decode_first in [false, true] {
        let d = dir(&format!("ttft-{decode_first}"));
        std::fs::create_dir_all(&d).unwrap();
        let csv = d.join("requests.csv");
        let mut args = vec![
            "run",
            "--preset",
            "link-eth-25g",
            "--requests",
            "150",
            "--json",
            "--plot",
            d.to_str().unwrap(),
            "--requests-out",
            csv.to_str().unwrap(),
        ];
        if decode_first {
            args.extend(["--first-token", "decode"]);
        }
        let doc = ok_json(&args);
        let rows = read_requests(&csv);
        let ttfts = measured_ttfts_ms(&rows, decode_first);
        assert_eq!(
            doc["summary"]["requests"]["measured"].as_u64(),
            Some(ttfts.len() as u64)
        );
        let name = "1P h100 + 1D h100, eth-25g";
        let pts = plotted(&d.join("cdf-ttft.svg"), name);
        assert_ecdf(&pts, &ttfts);
        // The chart's p50 and p99 (read off its vertices) are the summary's, for TTFT and TPOT.
        let tpots = measured_tpots_ms(&csv, decode_first);
        let tpot_pts = plotted(&d.join("cdf-tpot.svg"), name);
        assert_ecdf(&tpot_pts, &tpots);
        for (metric, pts, n) in [
            ("ttft_s", &pts, ttfts.len()),
            ("tpot_s", &tpot_pts, tpots.len()),
        ] {
            let samples = chart_samples(pts, n);
            for (p, key) in [(0.5, "p50"), (0.99, "p99")] {
                let summary_ms = 1e3 * doc["summary"][metric][key].as_f64().unwrap();
                let chart_ms = quantile(&samples, p);
                assert!(
                    (chart_ms - summary_ms).abs() <= 2e-3 * summary_ms,
                    "first token from decode: {decode_first}: {metric} {key}: chart {chart_ms}, \
                     summary {summary_ms}"
                );
            }
        }
    }
}

/// The sorted sample a CDF of `n` values was drawn from: each step `(v, a) -> (v, b)` stands for
/// `(b - a) n` copies of `v`.
fn chart_samples(pts: &[(f64, f64)], n: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for pair in pts.chunks(2) {
        let copies = ((pair[1].1 - pair[0].1) * n as f64).round() as usize;
        for _ in 0..copies {
            out.push(pair[0].0);
        }
    }
    assert_eq!(out.len(), n);
    out
}

/// The measured TPOTs in ms from the requests CSV: `(finish - first token) / (output - 1)` of the
/// measured requests (as in [`measured_ttfts_ms`]) with at least two output tokens.
fn measured_tpots_ms(csv: &Path, decode_first: bool) -> Vec<f64> {
    let text = std::fs::read_to_string(csv).unwrap();
    let cell = |c: &str| (!c.is_empty()).then(|| c.parse::<f64>().unwrap());
    // (arrival, output_len, first_token, kv_ready, decode_start, finish) of finished requests.
    type Row = (f64, f64, f64, Option<f64>, Option<f64>, f64);
    let mut done: Vec<Row> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            Some((
                c[1].parse().unwrap(),
                c[3].parse().unwrap(),
                cell(c[5])?,
                cell(c[7]),
                cell(c[8]),
                cell(c[9])?,
            ))
        })
        .collect();
    done.sort_by(|a, b| a.0.total_cmp(&b.0));
    let cut = done.len() / 10;
    done[cut..]
        .iter()
        .filter(|r| r.1 >= 2.0)
        .map(|r| {
            let first = match (decode_first, r.3, r.4) {
                (true, Some(_), Some(d)) => d,
                _ => r.2,
            };
            1e3 * (r.5 - first) / (r.1 - 1.0)
        })
        .collect()
}

#[test]
fn cdf_of_known_values_passes_through_known_points() {
    // At 0.01 req/s every request finds the cluster idle; the E2E chart must be the empirical CDF
    // of the measured requests' `finish - arrival` from the requests CSV.
    let d = dir("known");
    std::fs::create_dir_all(&d).unwrap();
    let csv = d.join("requests.csv");
    ok(&[
        "run",
        "--preset",
        "link-eth-25g",
        "--requests",
        "40",
        "--rate",
        "0.01",
        "--plot",
        d.to_str().unwrap(),
        "--requests-out",
        csv.to_str().unwrap(),
    ]);
    let rows = read_requests(&csv);
    let e2e: Vec<f64> = {
        let mut done: Vec<&Stamps> = rows.iter().filter(|r| r.4.is_some()).collect();
        done.sort_by(|a, b| a.0.total_cmp(&b.0));
        let cut = done.len() / 10;
        done[cut..]
            .iter()
            .map(|r| 1e3 * (r.4.unwrap() - r.0))
            .collect()
    };
    assert_eq!(e2e.len(), 36);
    let pts = plotted(&d.join("cdf-e2e.svg"), "1P h100 + 1D h100, eth-25g");
    assert_ecdf(&pts, &e2e);
    // Hand-checked: the curve starts at (min, 0), ends at (max, 1), and its 18th of 36 samples
    // sits at height 0.5.
    let mut s = e2e.clone();
    s.sort_by(f64::total_cmp);
    let first = pts[0];
    let last = pts[pts.len() - 1];
    assert!((first.0 / s[0] - 1.0).abs() < 2e-3 && first.1.abs() < 2e-3);
    assert!((last.0 / s[35] - 1.0).abs() < 2e-3 && (last.1 - 1.0).abs() < 2e-3);
    assert!(pts
        .iter()
        .any(|p| (p.0 / s[17] - 1.0).abs() < 2e-3 && (p.1 - 0.5).abs() < 2e-3));
}

/// The charts of the README's load sweep (tpot-vs-rate.svg, attainment-vs-rate.svg) plot the
/// figures of the sweep's own rows: read back through the tick labels, each point is
/// (rate, TPOT p50/p99 in ms) or (rate, SLO attainment) of the matching `--jsonl` row.
#[test]
fn rate_charts_plot_the_sweep_rows() {
    let d = dir("rates");
    std::fs::create_dir_all(&d).unwrap();
    let rows = d.join("rows.jsonl");
    ok(&[
        "sweep",
        "--preset",
        "link-eth-25g",
        "--requests",
        "200",
        "--vary",
        "rate=4,8,16",
        "--quiet",
        "--jsonl",
        rows.to_str().unwrap(),
        "--plot",
        d.to_str().unwrap(),
    ]);
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&rows)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    let close = |got: (f64, f64), want: (f64, f64), what: &str| {
        assert!(
            (got.0 - want.0).abs() <= 2e-3 * want.0
                && (got.1 - want.1).abs() <= 2e-3 * want.1.max(0.1),
            "{what}: plotted {got:?}, want {want:?}"
        );
    };
    let tpot = |name: &str| plotted(&d.join("tpot-vs-rate.svg"), name);
    for (series, key) in [("base p50", "p50"), ("base p99", "p99")] {
        let pts = tpot(series);
        assert_eq!(pts.len(), rows.len(), "{series}");
        for (p, r) in pts.iter().zip(&rows) {
            let want = (
                r["axes"]["rate"].as_f64().unwrap(),
                1e3 * r["summary"]["tpot_s"][key].as_f64().unwrap(),
            );
            close(*p, want, series);
        }
    }
    let att = plotted(&d.join("attainment-vs-rate.svg"), "base");
    assert_eq!(att.len(), rows.len());
    for (p, r) in att.iter().zip(&rows) {
        let want = (
            r["axes"]["rate"].as_f64().unwrap(),
            r["summary"]["slo_attainment"].as_f64().unwrap(),
        );
        close(*p, want, "attainment");
    }
    // At 16 req/s the 200-request run misses the 90% target and 8 req/s meets it.
    assert!(att[2].1 < 0.9 && att[1].1 >= 0.9, "{att:?}");
}
