//! `disagg sweep --vary` and `compare --variant` over the cost levers' scenario keys (`tp`, `pp`,
//! `microbatches`, `weight_format`, ...): rows in order, the JSON shape, each row equal to the
//! `disagg run` of its options, and a layout that does not match the devices per instance refused
//! before anything runs.

use crate::common;
#[allow(unused_imports)]
use common::*;

use serde_json::Value;
use std::path::PathBuf;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("disagg-sweep-levers-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The JSON Lines rows of `sweep ARGS --jsonl - --quiet`.
fn rows(args: &[&str]) -> Vec<Value> {
    let mut a = vec!["sweep"];
    a.extend(args);
    a.extend(["--jsonl", "-", "--quiet"]);
    ok_text(&a)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The summary of `run ARGS --json`.
fn run_summary(args: &[&str]) -> Value {
    let mut a = vec!["run"];
    a.extend(args);
    a.push("--json");
    ok_json(&a)["summary"].clone()
}

#[test]
fn sweep_varies_the_weight_format_in_order() {
    let base = ["--model", "llama3-8b", "--requests", "60"];
    let mut args = base.to_vec();
    args.extend(["--vary", "weight_format=bf16,fp8,int4"]);
    let r = rows(&args);
    assert_eq!(r.len(), 3);
    for (i, (row, f)) in r.iter().zip(["bf16", "fp8", "int4"]).enumerate() {
        let keys: Vec<&str> = row
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            keys,
            ["run", "runs_total", "spec", "axes", "scenario", "summary"]
        );
        assert_eq!(row["run"], i);
        assert_eq!(row["runs_total"], 3);
        assert_eq!(row["axes"], serde_json::json!({ "weight_format": f }));
        // The row's scenario leaves the quiet default (BF16) out and names the others.
        let echoed = if f == "bf16" { Value::Null } else { f.into() };
        assert_eq!(row["scenario"]["weight_format"], echoed);
        // The row is the run of its options.
        let mut run = base.to_vec();
        run.extend(["--weight-format", f]);
        assert_eq!(row["summary"], run_summary(&run), "{f}");
    }
    // BF16 is no quantisation: no formats block. FP8 is 1 byte a weight; INT4 0.5 + 2/128 =
    // 0.515625 (an FP16 scale per 128 values); the KV cache stays BF16 (2 bytes).
    assert!(r[0]["summary"].get("formats").is_none());
    let f = |k: usize| r[k]["summary"]["formats"].clone();
    assert_eq!(f(1)["weights"], "fp8");
    assert_eq!(f(1)["weight_bytes"].as_f64(), Some(1.0));
    assert_eq!(f(2)["weight_bytes"].as_f64(), Some(0.5 + 2.0 / 128.0));
    assert_eq!(f(2)["kv_bytes"].as_f64(), Some(2.0));
    // Smaller weights read faster: each step down lowers the decode time per token.
    let tpot = |k: usize| r[k]["summary"]["tpot_s"]["p50"].as_f64().unwrap();
    assert!(tpot(1) < tpot(0) && tpot(2) < tpot(1));
}

#[test]
fn sweep_varies_layout_keys_with_matching_devices() {
    // Micro-batches on a 2 x 2 layout of 4 GPUs: rows in order, each with its parallel blocks.
    let base = [
        "--model",
        "llama3-8b",
        "--requests",
        "60",
        "--tp",
        "2",
        "--pp",
        "2",
    ];
    let mut args = base.to_vec();
    args.extend(["--vary", "microbatches=1,2,4"]);
    let r = rows(&args);
    assert_eq!(r.len(), 3);
    for (row, m) in r.iter().zip(["1", "2", "4"]) {
        assert_eq!(row["axes"]["microbatches"].to_string(), m);
        let par = row["summary"]["parallel"].as_array().unwrap();
        assert_eq!(par.len(), 2);
        for (b, role) in par.iter().zip(["prefill", "decode"]) {
            assert_eq!(b["role"], role);
            assert_eq!((b["tp"].clone(), b["pp"].clone()), (2.into(), 2.into()));
            assert_eq!(b["microbatches"].to_string(), m);
        }
        let mut run = base.to_vec();
        run.extend(["--microbatches", m]);
        assert_eq!(row["summary"], run_summary(&run), "microbatches {m}");
    }
    // A tp axis on one GPU per instance: tp 0 is tp 1 (Python's `or`), so the two rows are one
    // layout with one result.
    let r = rows(&[
        "--model",
        "llama3-8b",
        "--requests",
        "60",
        "--devices-per-instance",
        "1",
        "--vary",
        "tp=0,1",
    ]);
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0]["axes"]["tp"].clone(), r[1]["axes"]["tp"].clone()),
        (0.into(), 1.into())
    );
    assert_eq!(r[0]["summary"]["parallel"][0]["tp"], 1);
    assert_eq!(r[0]["summary"], r[1]["summary"]);
}

#[test]
fn a_tp_axis_against_fixed_devices_is_refused_before_anything_runs() {
    // Devices per instance must equal tp x pp and one axis cannot move both: the sweep checks
    // every run first and names the first that does not match, writing nothing.
    let d = dir();
    let (j, c) = (d.join("tp.jsonl"), d.join("tp.csv"));
    let (js, cs) = (j.to_str().unwrap(), c.to_str().unwrap());
    bad(
        &[
            "sweep",
            "--requests",
            "40",
            "--vary",
            "tp=4,2",
            "--devices-per-instance",
            "4",
            "--jsonl",
            js,
            "--csv",
            cs,
            "--quiet",
        ],
        &["error: run 1 (tp=2): prefill pool: parallel tp=2 x pp=1 needs 2 devices per instance (got 4)"],
    );
    for p in [
        &j,
        &c,
        &d.join("tp.jsonl.partial"),
        &d.join("tp.csv.partial"),
    ] {
        assert!(!p.exists(), "{} written", p.display());
    }
    bad(
        &["sweep", "--requests", "40", "--vary", "tp=1,2,4", "--quiet"],
        &["run 0 (tp=1)", "needs 1 devices per instance (got 4)"],
    );
    // Bad values of the keys: the flag's message.
    bad(
        &["sweep", "--vary", "weight_format=bf16,fp9"],
        &[
            "--vary weight_format=fp9",
            "valid: bf16, fp8, int8, int4, fp4",
        ],
    );
    bad(
        &["sweep", "--vary", "tp=2,2000"],
        &["--vary tp=2000", "0 to 1024"],
    );
}

#[test]
fn compare_variants_set_tp_with_its_devices() {
    let v = ok_json(&[
        "compare",
        "--model",
        "llama3-8b",
        "--requests",
        "60",
        "--variant",
        "tp=1,devices_per_instance=1",
        "--variant",
        "tp=2,devices_per_instance=2",
        "--variant",
        "tp=4,devices_per_instance=4,weight_format=fp8",
        "--json",
    ]);
    let runs = v["runs"].as_array().unwrap();
    // The scenario itself first, then the variants in order.
    let names: Vec<&str> = runs
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "reference",
            "tp=1,devices_per_instance=1",
            "tp=2,devices_per_instance=2",
            "tp=4,devices_per_instance=4,weight_format=fp8"
        ]
    );
    assert!(runs[0]["summary"].get("parallel").is_none());
    for (r, (tp, extra)) in runs[1..]
        .iter()
        .zip([("1", None), ("2", None), ("4", Some("fp8"))])
    {
        assert_eq!(r["scenario"]["tp"].to_string(), tp);
        assert_eq!(r["scenario"]["devices_per_instance"].to_string(), tp);
        for b in r["summary"]["parallel"].as_array().unwrap() {
            assert_eq!(b["tp"].to_string(), tp);
        }
        let mut run = vec![
            "--model",
            "llama3-8b",
            "--requests",
            "60",
            "--tp",
            tp,
            "--devices-per-instance",
            tp,
        ];
        if let Some(f) = extra {
            run.extend(["--weight-format", f]);
        }
        assert_eq!(r["summary"], run_summary(&run), "tp {tp}");
    }
    // A variant whose layout does not match the devices per instance: one error line.
    bad(
        &["compare", "--requests", "40", "--variant", "tp=2"],
        &["--variant tp=2: prefill pool: parallel tp=2 x pp=1 needs 2 devices per instance (got 4)"],
    );
}
