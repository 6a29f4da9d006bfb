//! Real workloads through `disagg run`: trace replay in every format (small synthetic files in
//! crates/disagg-trace/tests/fixtures, see its README), the real traces (read from
//! `../shared/traces/` or `$DISAGG_TRACES_DIR`, skipped with a message when absent), named session
//! workloads, and bad input.

use crate::common;
use crate::shared_traces;
#[allow(unused_imports)]
use common::*;
use shared_traces::shared_trace;

use serde_json::Value;

fn fixture(name: &str) -> String {
    format!(
        "{}/../disagg-trace/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

const SMALL: [&str; 4] = ["--model", "llama3-8b", "--devices-per-instance", "1"];

fn run(extra: &[&str]) -> Value {
    let mut a = vec!["run"];
    a.extend(SMALL);
    a.extend(extra);
    a.push("--json");
    ok_json(&a)
}

#[test]
fn every_format_replays() {
    for (f, format) in [
        ("azure_sample.csv", "azure"),
        ("mooncake_sample.jsonl", "mooncake"),
        ("burstgpt_sample.csv", "burstgpt"),
        ("reference_rows.json", "reference"),
    ] {
        let path = fixture(f);
        let v = run(&["--trace-file", &path]);
        let s = &v["summary"];
        let t = &s["workload"]["trace"];
        assert_eq!(s["workload"]["source"], "trace");
        assert_eq!(t["format"], format, "{f}");
        assert_eq!(s["requests"]["completed"], t["requests"], "{f}");
        assert!(s["requests"]["completed"].as_u64().unwrap() > 0);
    }
    // BurstGPT's failed requests (0 response tokens) are skipped and counted.
    let v = run(&["--trace-file", &fixture("burstgpt_sample.csv")]);
    assert!(
        v["summary"]["workload"]["trace"]["failed_requests_skipped"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn real_traces_replay_whole() {
    if let Some(path) = shared_trace("AzureLLMInferenceTrace_code.csv") {
        let v = run(&["--trace-file", &path, "--fast"]);
        assert_eq!(v["summary"]["requests"]["completed"], 8819);
    }
    let Some(path) = shared_trace("mooncake_conversation_trace.jsonl") else {
        return;
    };
    let v = run(&["--trace-file", &path, "--max-requests", "500", "--fast"]);
    assert_eq!(v["summary"]["requests"]["completed"], 500);
    assert_eq!(v["summary"]["workload"]["trace"]["max_context"], 131072);
}

#[test]
fn options_window_scale_and_clip() {
    let Some(path) = shared_trace("AzureLLMInferenceTrace_conv.csv") else {
        return;
    };
    let a = run(&["--trace-file", &path, "--duration", "60", "--fast"]);
    let n = a["summary"]["requests"]["completed"].as_u64().unwrap();
    assert!(n > 100 && n < 1000, "{n}");
    // Twice as fast: the same requests in half the time.
    let b = run(&[
        "--trace-file",
        &path,
        "--duration",
        "60",
        "--time-scale",
        "0.5",
        "--fast",
    ]);
    assert_eq!(
        b["summary"]["requests"]["completed"],
        a["summary"]["requests"]["completed"]
    );
    assert!(b["summary"]["horizon_s"].as_f64() < a["summary"]["horizon_s"].as_f64());
    // Clipping is reported.
    let c = run(&[
        "--trace-file",
        &path,
        "--max-requests",
        "300",
        "--max-context",
        "1024",
    ]);
    let clipped = c["summary"]["workload"]["trace"]["clipped_prompts"]
        .as_u64()
        .unwrap();
    assert!(clipped > 50, "{clipped}");
    let o = disagg(&[
        "run",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--trace-file",
        &path,
        "--max-requests",
        "300",
        "--max-context",
        "1024",
    ]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains(&format!("{clipped} prompts clipped to 1,024 tokens")),
        "{text}"
    );
}

#[test]
fn out_of_order_and_malformed_traces() {
    // Out of order: rejected, or sorted on request.
    bad(
        &["run", "--trace-file", &fixture("azure_out_of_order.csv")],
        &["azure_out_of_order.csv:"],
    );
    let s = run(&["--trace-file", &fixture("azure_out_of_order.csv"), "--sort"]);
    assert!(
        s["summary"]["workload"]["trace"]["out_of_order"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Malformed lines stop the run with file:line, or are skipped and counted.
    bad(
        &["run", "--trace-file", &fixture("azure_malformed.csv")],
        &["azure_malformed.csv:", "expected"],
    );
    let k = run(&[
        "--trace-file",
        &fixture("azure_malformed.csv"),
        "--skip-bad-lines",
    ]);
    assert!(
        k["summary"]["workload"]["trace"]["bad_lines_skipped"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn replay_bad_input() {
    bad(
        &["run", "--trace-file", "/no/such/trace.csv"],
        &["/no/such/trace.csv"],
    );
    bad(
        &["run", "--trace-file", &fixture("empty.csv")],
        &["empty.csv"],
    );
    bad(
        &["run", "--trace-file", &fixture("azure_header_only.csv")],
        &["azure_header_only.csv"],
    );
    bad(
        &["run", "--trace-file", &fixture("azure_negative.csv")],
        &["azure_negative.csv:"],
    );
    bad(
        &["run", "--trace-file", &fixture("unknown_format.csv")],
        &["--trace-format", "mooncake"],
    );
    bad(
        &[
            "run",
            "--trace-file",
            &fixture("mooncake_sample.jsonl"),
            "--trace-format",
            "parquet",
        ],
        &["parquet", "azure"],
    );
    bad(
        &[
            "run",
            "--trace-file",
            &fixture("mooncake_sample.jsonl"),
            "--time-scale",
            "0",
        ],
        &["--time-scale"],
    );
    bad(
        &["run", "--time-scale", "2"],
        &["--time-scale", "--trace-file"],
    );
    bad(
        &["run", "--skip-bad-lines"],
        &["--skip-bad-lines", "--trace-file"],
    );
    bad(
        &["run", "--workload", "karaoke"],
        &["karaoke", "chat", "voice"],
    );
    bad(
        &[
            "run",
            "--workload",
            "chat",
            "--trace-file",
            &fixture("mooncake_sample.jsonl"),
        ],
        &["--workload"],
    );
    bad(&["run", "--turns", "0"], &["--turns"]);
    bad(&["run", "--prefix-share", "2"], &["--prefix-share"]);
}

#[test]
fn named_workloads_and_sessions() {
    for w in ["chat", "coding-agent", "offline-batch", "long-rag", "voice"] {
        let v = run(&["--workload", w, "--requests", "120", "--rate", "1"]);
        let s = &v["summary"];
        assert_eq!(
            s["requests"]["completed"].as_u64().unwrap()
                + s["requests"]["rejected"].as_u64().unwrap(),
            120,
            "{w}"
        );
        assert_eq!(s["workload"]["name"], w);
    }
    // The voice workload is judged by its own SLOs (300 ms, 25 ms) unless SLOs are given.
    let v = run(&["--workload", "voice", "--requests", "60", "--rate", "1"]);
    assert!(
        v["summary"]["workload"]["closed_loop_turns"]
            .as_u64()
            .unwrap()
            > 0
    );
    let a = run(&[
        "--workload",
        "voice",
        "--requests",
        "60",
        "--rate",
        "1",
        "--ttft-slo",
        "0.001",
    ]);
    assert!(a["summary"]["slo_attainment"].as_f64() < v["summary"]["slo_attainment"].as_f64());
    // Closed loop: a turn arrives its think time after its predecessor finished.
    let d = std::env::temp_dir().join(format!("disagg-sessions-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let csv = d.join("req.csv");
    let o = disagg(&[
        "run",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--turns",
        "3",
        "--think",
        "2",
        "--requests",
        "90",
        "--rate",
        "1",
        "--requests-out",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|x| x.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 90);
    // Turn k+1 of a session (the next rid) arrives after turn k finishes.
    let mut later = 0;
    for w in rows.windows(2) {
        if w[1][1] >= w[0][9] {
            later += 1;
        }
    }
    assert!(
        later >= 55,
        "{later} of 89 successors arrive after their predecessor's finish"
    );
}
