//! `disagg trace-stats` reproduces the numbers of the shared traces' README
//! (`../shared/traces/README.md`). The real traces are read from `../shared/traces/` (or
//! `$DISAGG_TRACES_DIR`); each test is skipped with a message when its trace is absent.

use crate::common;
use crate::shared_traces;
#[allow(unused_imports)]
use common::*;
use shared_traces::shared_trace;

use serde_json::Value;

fn stats(file: &str) -> Option<Value> {
    let path = shared_trace(file)?;
    let o = disagg(&["trace-stats", &path, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(serde_json::from_slice(&o.stdout).unwrap())
}

fn r(x: &Value, d: usize) -> String {
    format!("{:.*}", d, x.as_f64().unwrap())
}

fn tokens(v: &Value) -> (String, u64, u64, u64, u64, u64) {
    let g = |k: &str| v[k].as_u64().unwrap();
    (
        r(&v["mean"], 1),
        g("p50"),
        g("p90"),
        g("p99"),
        g("min"),
        g("max"),
    )
}

#[test]
fn azure_code() {
    let Some(v) = stats("AzureLLMInferenceTrace_code.csv") else {
        return;
    };
    assert_eq!(v["rows"], 8819);
    assert_eq!(r(&v["duration_s"], 1), "3435.9");
    assert_eq!(r(&v["mean_rate_rps"], 2), "2.57");
    assert_eq!(v["busiest_1s_requests"], 67);
    assert_eq!(v["busiest_60s_requests"], 632);
    assert_eq!(
        tokens(&v["input_tokens"]),
        ("2047.8".into(), 1469, 5194, 7436, 3, 7437)
    );
    assert_eq!(
        tokens(&v["output_tokens"]),
        ("27.9".into(), 13, 55, 252, 6, 1899)
    );
}

#[test]
fn azure_conv() {
    let Some(v) = stats("AzureLLMInferenceTrace_conv.csv") else {
        return;
    };
    assert_eq!(v["rows"], 19366);
    assert_eq!(r(&v["duration_s"], 1), "3501.7");
    assert_eq!(r(&v["mean_rate_rps"], 2), "5.53");
    assert_eq!(
        tokens(&v["input_tokens"]),
        ("1154.7".into(), 1020, 2735, 4142, 2, 14050)
    );
    assert_eq!(
        tokens(&v["output_tokens"]),
        ("211.1".into(), 129, 424, 601, 7, 1000)
    );
}

#[test]
fn mooncake() {
    let Some(v) = stats("mooncake_conversation_trace.jsonl") else {
        return;
    };
    assert_eq!(v["rows"], 12031);
    assert_eq!(r(&v["duration_s"], 1), "3537.0");
    assert_eq!(r(&v["mean_rate_rps"], 2), "3.40");
    assert_eq!(
        tokens(&v["input_tokens"]),
        ("12035.1".into(), 6909, 27367, 85401, 891, 126195)
    );
    assert_eq!(
        tokens(&v["output_tokens"]),
        ("342.6".into(), 350, 597, 1120, 1, 2000)
    );
    assert_eq!(v["format"], "mooncake");
}

#[test]
fn text_output_and_errors() {
    let sample = format!(
        "{}/../disagg-trace/tests/fixtures/azure_sample.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    if let Some(path) = shared_trace("AzureLLMInferenceTrace_conv.csv") {
        let o = disagg(&["trace-stats", &path]);
        let t = String::from_utf8(o.stdout).unwrap();
        assert!(
            t.contains("19,366") && t.contains("5.53 req/s") && t.contains("1,154.7"),
            "{t}"
        );
    }
    let o = disagg(&["trace-stats", "/no/such/trace.csv"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("/no/such/trace.csv") && e.lines().count() == 1,
        "{e}"
    );
    let o = disagg(&["trace-stats", &sample, "--trace-format", "parquet"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("mooncake"));
}
