//! `plan --target-rate` with `--search ci` (the default) against `--search bisect`: a trace is
//! replayed time-scaled to the target rate, exactly as `disagg run --trace-file F --time-scale S`
//! replays it, and candidates near the target carry a 95% interval
//! (`docs/planning.md#trace-rate`, `docs/planning.md#screen`).

use crate::common;
#[allow(unused_imports)]
use common::*;

use serde_json::Value;

/// Writes an Azure-format trace of `n` requests, about 2 req/s (gaps 0.1 to 0.9 s), prompts of
/// 100 to 1,099 tokens and 10 to 209 output tokens, from a fixed linear congruential generator.
pub(crate) fn synthetic_trace(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let mut x: u64 = 12345;
    let mut next = |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let mut csv = String::from("TIMESTAMP,ContextTokens,GeneratedTokens\n");
    let mut t_ms = 0u64;
    for _ in 0..n {
        t_ms += 100 + next(800);
        let (s, ms) = (t_ms / 1000, t_ms % 1000);
        csv.push_str(&format!(
            "2024-01-02 {:02}:{:02}:{:02}.{ms:03}0000,{},{}\n",
            3 + s / 3600,
            (s / 60) % 60,
            s % 60,
            100 + next(1000),
            10 + next(200)
        ));
    }
    let p = dir.join("synthetic.csv");
    std::fs::write(&p, csv).unwrap();
    p
}

/// Llama 3 8B on single H100s at 6 req/s with a 30 ms TTFT SLO: the synthetic trace's candidates
/// meet it for 85% to 95% of their requests, all within 5 points of the 90% target.
const GRID: [&str; 16] = [
    "--model",
    "llama3-8b",
    "--devices-per-instance",
    "1",
    "--ttft-slo",
    "0.03",
    "--prefill-counts",
    "1",
    "--decode-counts",
    "1-2",
    "--prefill-devices",
    "h100",
    "--decode-devices",
    "h100",
    "--target-rate",
    "6",
];

fn plan(trace: &str, extra: &[&str]) -> Value {
    let mut a = vec!["plan", "--trace-file", trace];
    a.extend(GRID);
    a.extend(extra);
    a.extend(["--json", "--quiet"]);
    ok_json(&a)
}

/// The `disagg run` flags of a candidate's configuration.
fn pool_flags(c: &Value) -> Vec<String> {
    let n = |k: &str| c[k].as_u64().unwrap().to_string();
    let mut v: Vec<String> = if c["mode"] == "colocated" {
        vec!["--mode".into(), "colocated".into(), "--device".into()]
    } else {
        vec!["--prefill-device".into()]
    };
    v.push(c["prefill_device"].as_str().unwrap().into());
    if c["mode"] != "colocated" {
        v.extend([
            "--decode-device".into(),
            c["decode_device"].as_str().unwrap().into(),
        ]);
    }
    v.extend([
        "--prefill".into(),
        n("prefill"),
        "--decode".into(),
        n("decode"),
    ]);
    v
}

#[test]
fn a_trace_is_replayed_at_the_target_rate_and_near_candidates_get_an_interval() {
    let dir = tmp_dir("plan-ci");
    let n = 400;
    let trace = synthetic_trace(&dir, n);
    let trace = s(&trace);
    let doc = plan(trace, &[]);
    assert_eq!(doc["search"], "ci");
    // time_scale = native / target, native = (n - 1) / span (docs/planning.md#trace-rate); the
    // span is read from the timestamps in seconds, so the figure is checked to 1e-12.
    let scale = doc["time_scale"].as_f64().expect("time_scale with a trace");
    let lines: Vec<String> = std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .skip(1)
        .map(String::from)
        .collect();
    let secs = |l: &str| {
        let hms = &l[11..l.find(',').unwrap()];
        let p: Vec<f64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
        p[0] * 3600.0 + p[1] * 60.0 + p[2]
    };
    let span = secs(&lines[n - 1]) - secs(&lines[0]);
    let want = (n - 1) as f64 / span / 6.0;
    assert!((scale - want).abs() <= 1e-12 * want, "{scale} vs {want}");
    let cands = doc["candidates"].as_array().unwrap();
    // 1P + 1D, 1P + 2D, then 2 and 3 colocated instances.
    assert_eq!(cands.len(), 4);
    let (mut with_ci, mut feasible_n) = (0, 0);
    for c in cands {
        if c["slo_attainment"].is_null() {
            continue;
        }
        // The candidate's run is `disagg run` of the trace at that scale, bit for bit.
        let scale_s = scale.to_string();
        let mut run: Vec<String> = ["run", "--trace-file", trace, "--time-scale", &scale_s]
            .iter()
            .map(|x| x.to_string())
            .collect();
        run.extend(GRID[..6].iter().chain(&["--json"]).map(|x| x.to_string()));
        run.extend(pool_flags(c));
        let args: Vec<&str> = run.iter().map(String::as_str).collect();
        let r = ok_json(&args);
        let att = r["summary"]["slo_attainment"].as_f64().unwrap();
        let feasible = plan_feasible(&doc, c, att);
        assert_eq!(c["status"] == "feasible", feasible, "{c}");
        feasible_n += usize::from(feasible);
        assert_eq!(
            c["latency_p99_s"].as_f64(),
            r["summary"]["e2e_s"]["p99"].as_f64(),
            "{c}"
        );
        if let Some(e) = c.get("slo_attainment_ci") {
            with_ci += 1;
            let f = |k: &str| e[k].as_f64().unwrap();
            assert!(f("low") <= f("mean") && f("mean") <= f("high"), "{e}");
            assert!(f("low") < f("high"), "a real interval: {e}");
            assert_eq!(e["method"], "batch-means", "{e}");
            assert_eq!(e["replications"], 1, "{e}");
        }
    }
    // Every run is within 5 points of the target; some intervals meet it and some do not.
    assert_eq!(with_ci, 4, "{doc}");
    assert!(feasible_n > 0 && feasible_n < 4, "{doc}");
    // The text says the scale and has the interval column.
    let mut a = vec!["plan", "--trace-file", trace];
    a.extend(GRID);
    a.push("--quiet");
    let t = ok_text(&a);
    assert!(
        t.contains(&format!(
            "the trace replayed at --time-scale {scale} (6 req/s)\n"
        )),
        "{t}"
    );
    assert!(
        t.lines().nth(3).unwrap().ends_with("SLO 95% CI  GPUs"),
        "{t}"
    );
    // --search bisect: one run each, the trace at its own rate, no interval and no scale.
    let old = plan(trace, &["--search", "bisect"]);
    assert_eq!(old["search"], "bisect");
    assert!(old.get("time_scale").is_none(), "{old}");
    for c in old["candidates"].as_array().unwrap() {
        assert!(c.get("slo_attainment_ci").is_none(), "{c}");
    }
    a.extend(["--search", "bisect"]);
    let t = ok_text(&a);
    assert!(
        !t.contains("SLO 95% CI") && !t.contains("--time-scale"),
        "{t}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_trace_replications_bound_the_attainment() {
    // The generator at the target rate: replication 0 is the candidate's own run.
    // The default SLOs (every run near 100%).
    let mut a = vec!["plan", "--requests", "100"];
    a.extend(&GRID[..4]);
    a.extend(&GRID[6..]);
    a.extend(["--json", "--quiet"]);
    let doc = ok_json(&a);
    assert!(doc.get("time_scale").is_none(), "{doc}");
    let mut with_ci = 0;
    for c in doc["candidates"].as_array().unwrap() {
        let Some(e) = c.get("slo_attainment_ci") else {
            continue;
        };
        with_ci += 1;
        let f = |k: &str| e[k].as_f64().unwrap();
        assert!(f("low") <= f("mean") && f("mean") <= f("high"), "{e}");
        assert_eq!(e["method"], "replications", "{e}");
        assert!(e["replications"].as_u64().unwrap() >= 2, "{e}");
        assert_eq!(
            c["status"] == "feasible",
            f("low") >= 0.9 && e["steady"] == true
        );
    }
    assert!(with_ci > 0, "{doc}");
}
