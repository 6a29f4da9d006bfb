//! `--plot DIR` on run, compare, sweep and plan: every file is valid SVG holding the expected
//! series.

mod common;
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
    disagg(&[
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
    disagg(&[
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
    disagg(&[
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
    disagg(&[
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
