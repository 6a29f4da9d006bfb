//! `disagg sweep`: determinism across thread counts, shard-and-merge byte identity, specs and
//! bad input.

use crate::common;
#[allow(unused_imports)]
use common::*;

use std::path::PathBuf;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("disagg-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

const AXES: [&str; 9] = [
    "sweep",
    "--preset",
    "link-ib-ndr",
    "--requests",
    "120",
    "--vary",
    "rate=4,8,14",
    "--vary",
    "link=ib-ndr,eth-25g",
];

#[test]
fn identical_bytes_whatever_the_thread_count() {
    let d = dir();
    let (j1, c1, j2, c2) = (
        d.join("t1.jsonl"),
        d.join("t1.csv"),
        d.join("t2.jsonl"),
        d.join("t2.csv"),
    );
    let mut a1: Vec<&str> = AXES.to_vec();
    a1.extend([
        "--threads",
        "1",
        "--quiet",
        "--jsonl",
        s(&j1),
        "--csv",
        s(&c1),
    ]);
    ok(&a1);
    let mut a2: Vec<&str> = AXES.to_vec();
    a2.extend([
        "--threads",
        "2",
        "--quiet",
        "--jsonl",
        s(&j2),
        "--csv",
        s(&c2),
    ]);
    ok(&a2);
    let (x1, x2) = (std::fs::read(&j1).unwrap(), std::fs::read(&j2).unwrap());
    assert_eq!(x1, x2);
    assert_eq!(std::fs::read(&c1).unwrap(), std::fs::read(&c2).unwrap());
    let text = String::from_utf8(x1).unwrap();
    assert_eq!(text.lines().count(), 6);
    // Runs in order, last axis fastest, each with its options and summary.
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[1]["axes"]["rate"], 4.0);
    assert_eq!(rows[1]["axes"]["link"], "eth-25g");
    assert_eq!(rows[1]["scenario"]["link"], "eth-25g");
    assert_eq!(rows[5]["scenario"]["rate"], 14.0);
    assert!(rows[5]["summary"]["tpot_s"]["p99"].is_number());
    let csv = std::fs::read_to_string(&c1).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.starts_with("run,runs_total,spec,axes.rate,axes.link,scenario.model"),
        "{header}"
    );
    assert!(header.contains("summary.ttft_s.p99"));
    assert_eq!(csv.lines().count(), 7);
}

#[test]
fn shards_merge_into_the_one_machine_output() {
    let d = dir();
    let whole = d.join("whole.jsonl");
    let whole_csv = d.join("whole.csv");
    let mut a: Vec<&str> = AXES.to_vec();
    a.extend(["--quiet", "--jsonl", s(&whole), "--csv", s(&whole_csv)]);
    ok(&a);
    let shards: Vec<PathBuf> = (0..3).map(|i| d.join(format!("shard{i}.jsonl"))).collect();
    for (i, p) in shards.iter().enumerate() {
        let sh = format!("{i}/3");
        let mut a: Vec<&str> = AXES.to_vec();
        a.extend(["--quiet", "--shard", &sh, "--jsonl", s(p)]);
        ok(&a);
        assert_eq!(std::fs::read_to_string(p).unwrap().lines().count(), 2);
    }
    let merged = d.join("merged.jsonl");
    let merged_csv = d.join("merged.csv");
    // Any order of files.
    ok(&[
        "sweep",
        "merge",
        s(&shards[2]),
        s(&shards[0]),
        s(&shards[1]),
        "--jsonl",
        s(&merged),
        "--csv",
        s(&merged_csv),
    ]);
    assert_eq!(
        std::fs::read(&whole).unwrap(),
        std::fs::read(&merged).unwrap()
    );
    assert_eq!(
        std::fs::read(&whole_csv).unwrap(),
        std::fs::read(&merged_csv).unwrap()
    );
    // A missing shard, a shard twice, a shard of another sweep.
    bad(
        &[
            "sweep",
            "merge",
            s(&shards[0]),
            s(&shards[1]),
            "--jsonl",
            s(&d.join("m2.jsonl")),
        ],
        &["missing"],
    );
    bad(
        &[
            "sweep",
            "merge",
            s(&shards[0]),
            s(&shards[0]),
            s(&shards[1]),
            s(&shards[2]),
            "--jsonl",
            s(&d.join("m3.jsonl")),
        ],
        &["twice"],
    );
    let other = d.join("other.jsonl");
    ok(&[
        "sweep",
        "--preset",
        "link-ib-ndr",
        "--requests",
        "120",
        "--vary",
        "rate=4,8,15",
        "--vary",
        "link=ib-ndr,eth-25g",
        "--quiet",
        "--shard",
        "1/3",
        "--jsonl",
        s(&other),
    ]);
    bad(
        &[
            "sweep",
            "merge",
            s(&shards[0]),
            s(&other),
            s(&shards[2]),
            "--jsonl",
            s(&d.join("m4.jsonl")),
        ],
        &["different sweep"],
    );
    assert!(!d.join("m4.jsonl").exists());
}

#[test]
fn spec_file() {
    let d = dir();
    let spec = d.join("spec.toml");
    std::fs::write(&spec, "[base]\npreset = \"link-ib-ndr\"\nrequests = 120\n\n[vary]\nrate = [4, 8, 14]\nlink = [\"ib-ndr\", \"eth-25g\"]\n").unwrap();
    let a = d.join("spec.jsonl");
    ok(&["sweep", "--spec", s(&spec), "--quiet", "--jsonl", s(&a)]);
    let b = d.join("flags.jsonl");
    let mut f: Vec<&str> = AXES.to_vec();
    f.extend(["--quiet", "--jsonl", s(&b)]);
    ok(&f);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    std::fs::write(&spec, "[vary]\nwarp = [1, 2]\n").unwrap();
    bad(&["sweep", "--spec", s(&spec)], &["spec.toml", "warp"]);
    std::fs::write(&spec, "[vary]\nrate = []\n").unwrap();
    bad(&["sweep", "--spec", s(&spec)], &["rate", "at least one"]);
}

#[test]
fn bad_sweeps() {
    bad(
        &["sweep", "--vary", "warp_factor=1,2"],
        &["warp_factor", "rate", "link"],
    );
    bad(&["sweep", "--vary", "rate="], &["rate", "at least one"]);
    bad(&["sweep", "--vary", "rate"], &["NAME=V1"]);
    bad(
        &["sweep", "--vary", "rate=1", "--vary", "rate=2"],
        &["twice"],
    );
    bad(&["sweep", "--shard", "3/3"], &["--shard", "3"]);
    bad(&["sweep", "--shard", "x"], &["--shard"]);
    // Checked against the range table before any run starts, quoting the value as typed.
    bad(
        &["sweep", "--vary", "rate=0,4"],
        &["--vary", "rate=0", "[1e-6, 1e6]"],
    );
    bad(
        &["sweep", "--vary", "link=ib-ndr,carrier-pigeon"],
        &["carrier-pigeon"],
    );
    // More than 100,000 runs needs --yes (refused before anything runs).
    let v: Vec<String> = (1..=47).map(|i| i.to_string()).collect();
    let vals = v.join(",");
    let a1 = format!("seed={vals}");
    let a2 = format!("requests={vals}");
    let a3 = format!("prompt={vals}");
    bad(
        &["sweep", "--vary", &a1, "--vary", &a2, "--vary", &a3],
        &["103823", "--yes"],
    );
}

/// Splits one CSV record per RFC 4180: fields separated by commas, a field in double quotes may
/// hold commas and doubled quotes.
fn rfc4180_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            (true, '"') => quoted = false,
            (false, '"') => quoted = true,
            (false, ',') => fields.push(String::new()),
            (_, c) => fields.last_mut().unwrap().push(c),
        }
    }
    assert!(!quoted, "unterminated quote: {line}");
    fields
}

#[test]
fn csv_cells_with_commas_and_quotes_are_quoted() {
    // A trace file whose path holds a comma and a double quote: its CSV cell must be
    // `"...,...""..."` so the row keeps one field per column.
    let d = dir().join("a,b\"c");
    std::fs::create_dir_all(&d).unwrap();
    let trace = d.join("trace,1.csv");
    std::fs::write(
        &trace,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n\
         2024-01-02 03:04:05.0,300,40\n\
         2024-01-02 03:04:06.0,420,100\n",
    )
    .unwrap();
    let csv = d.join("out.csv");
    ok(&[
        "sweep",
        "--trace-file",
        s(&trace),
        "--vary",
        "rate=4,8",
        "--quiet",
        "--csv",
        s(&csv),
    ]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "scenario.trace_file")
        .expect("a scenario.trace_file column");
    let path = s(&trace);
    let cell = format!("\"{}\"", path.replace('"', "\"\""));
    assert!(cell.ends_with("a,b\"\"c/trace,1.csv\""), "{cell}");
    for line in &lines[1..] {
        assert!(line.contains(&format!(",{cell},")), "{line}");
        let f = rfc4180_fields(line);
        assert_eq!(f.len(), header.len(), "{line}");
        assert_eq!(f[col], path);
    }
}
