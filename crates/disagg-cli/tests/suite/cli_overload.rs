//! Issue 26 items 2 and 3 through the binary: the per-pool analytic bounds, `summary.overload`
//! and its one `warning:` line, and the header that says what was simulated
//! (`docs/serving-model.md#per-pool-capacity`, `#overload`, `#simulated`).

use crate::common;
#[allow(unused_imports)]
use common::*;

use serde_json::Value;

const TP2: &[&str] = &[
    "run",
    "--model",
    "llama3-70b",
    "--prefill",
    "4",
    "--decode",
    "2",
    "--prefill-devices-per-instance",
    "2",
    "--decode-devices-per-instance",
    "4",
    "--requests",
    "60",
];

fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    let mut v = base.to_vec();
    v.extend_from_slice(more);
    v
}

/// A 4 x TP2 prefill pool: the analytic bounds are the pools', whatever the global
/// `--devices-per-instance` says (it reported 59.87 req/s with 8 and 14.99 with 2).
#[test]
fn per_pool_analytic_ignores_the_global_device_count() {
    let at = |dpi: &str| ok_json(&with(TP2, &["--devices-per-instance", dpi, "--json"]));
    let (a8, a2) = (at("8"), at("2"));
    assert_eq!(a8["summary"]["analytic"], a2["summary"]["analytic"]);
    assert_eq!(a8["summary"]["overload"], a2["summary"]["overload"]);
    let pr = a8["summary"]["analytic"]["prefill_rps"].as_f64().unwrap();
    assert_eq!(pr, 14.989222803215412);
    assert_eq!(a8["summary"]["analytic"]["bottleneck"], "prefill");
}

/// `summary.overload`'s keys, and `overloaded` true far above the ceiling, false far below.
#[test]
fn overload_true_and_false() {
    let run = |rate: &str| ok_json(&with(TP2, &["--rate", rate, "--json"]));
    let over = run("40");
    let o = &over["summary"]["overload"];
    let keys: Vec<&str> = o.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "offered_rps",
            "capacity_rps",
            "bottleneck",
            "overloaded",
            "queues_growing",
            "queue_growth"
        ]
    );
    assert_eq!(o["offered_rps"], 40.0);
    assert_eq!(o["capacity_rps"].as_f64(), Some(14.989222803215412));
    assert_eq!(o["bottleneck"], "prefill");
    assert_eq!(o["overloaded"], true);
    let under = run("1");
    let o = &under["summary"]["overload"];
    assert_eq!(o["offered_rps"], 1.0);
    assert_eq!(o["overloaded"], false);
    assert_eq!(o["queues_growing"], false);
    // compare --json carries it per side.
    let c = ok_json(&[
        "compare",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--requests",
        "60",
        "--rate",
        "60",
        "--json",
    ]);
    for r in c["runs"].as_array().unwrap() {
        assert_eq!(
            r["summary"]["overload"]["overloaded"], true,
            "{}",
            r["mode"]
        );
        assert!(r["summary"]["simulated"]["pools"].is_array());
    }
}

/// One `warning:` line naming the bottleneck and both rates when overloaded; none otherwise.
#[test]
fn the_warning_line() {
    let over = ok_text(&with(TP2, &["--rate", "40"]));
    let w: Vec<&str> = over.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(w.len(), 1, "{over}");
    assert!(
        w[0].starts_with(
            "warning: overloaded: offered 40.00 req/s > capacity 14.99 req/s (prefill bound)"
        ),
        "{}",
        w[0]
    );
    let under = ok_text(&with(TP2, &["--rate", "1"]));
    assert!(!under.contains("warning"), "{under}");
    // compare: one line per overloaded side, named.
    let c = ok_text(&[
        "compare",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--requests",
        "60",
        "--rate",
        "60",
    ]);
    let w: Vec<&str> = c.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(w.len(), 2, "{c}");
    assert!(w[0].starts_with("warning: colocated overloaded: offered 60.00 req/s"));
    assert!(w[1].starts_with("warning: disagg overloaded: offered 60.00 req/s"));
}

/// The header of a per-pool layout run: model, formats, pools with their layouts, link with its
/// channels and topology, rate, requests, SLOs (which are defaults); the same in JSON.
#[test]
fn header_of_a_per_pool_layout_run() {
    let args = with(
        TP2,
        &[
            "--prefill-tp",
            "2",
            "--decode-tp",
            "2",
            "--decode-pp",
            "2",
            "--weight-format",
            "fp8",
            "--link-channels",
            "2",
            "--link-topology",
            "per-prefill",
            "--ttft-slo",
            "2",
            "--rate",
            "3",
        ],
    );
    let t = ok_text(&args);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(
        lines[1],
        "simulated    llama3-70b fp8/bf16/bf16: prefill 4 x 2 h100 (TP2xPP1), decode 2 x 4 h100 \
         (TP2xPP2); link ib-ndr, 2 channels, per-prefill links"
    );
    assert_eq!(
        lines[2],
        "workload     poisson 3 req/s: 60 requests; SLO TTFT 2 s (given), TPOT 0.025 s (default)"
    );
    assert!(lines[3].starts_with("latency (ms)"), "{t}");
    let v = ok_json(&with(&args, &["--json"]));
    let x = &v["summary"]["simulated"];
    assert_eq!(x["model"], "llama3-70b");
    assert_eq!(x["formats"], "fp8/bf16/bf16");
    assert_eq!(x["pools"][0]["layout"], "2x1");
    assert_eq!(x["pools"][1]["layout"], "2x2");
    assert_eq!(x["pools"][1]["devices_per_instance"], 4);
    assert_eq!(x["link"]["channels"], 2);
    assert_eq!(x["link"]["topology"], "per-prefill");
    assert_eq!(x["arrivals"]["rate_rps"], 3.0);
    assert_eq!(x["requests"], 60);
    assert_eq!(x["slo"]["ttft_s"], 2.0);
    assert_eq!(x["slo"]["ttft_from"], "given");
    assert_eq!(x["slo"]["tpot_from"], "default");
}

/// The header of a trace run names the file and its time scale; the offered rate is the
/// requests over the scaled arrival span.
#[test]
fn header_of_a_trace_run() {
    let dir = tmp_dir("overload-trace");
    let f = dir.join("t.csv");
    let mut csv = String::from("TIMESTAMP,ContextTokens,GeneratedTokens\n");
    for k in 0..41 {
        csv.push_str(&format!("2023-11-16 18:15:{:02}.0000000,512,32\n", k));
    }
    std::fs::write(&f, csv).unwrap();
    let args = [
        "run",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--trace-file",
        s(&f),
        "--time-scale",
        "0.5",
    ];
    let t = ok_text(&args);
    let want =
        "workload     trace t.csv (azure), time scale 0.5: 41 requests, 0 prompts clipped to \
                131,072 tokens; SLO TTFT 1 s, TPOT 0.025 s (defaults)";
    assert_eq!(t.lines().nth(2), Some(want), "{t}");
    let v: Value = ok_json(&[&args[..], &["--json"]].concat());
    let x = &v["summary"]["simulated"]["arrivals"];
    assert_eq!(x["source"], "trace");
    assert_eq!(x["trace_file"], s(&f));
    assert_eq!(x["time_scale"], 0.5);
    assert_eq!(x["rate_rps"], Value::Null);
    // 41 requests over 40 s of arrivals, halved: 41 / 20 s.
    assert_eq!(v["summary"]["overload"]["offered_rps"], 41.0 / 20.0);
    assert_eq!(v["summary"]["overload"]["overloaded"], false);
}
