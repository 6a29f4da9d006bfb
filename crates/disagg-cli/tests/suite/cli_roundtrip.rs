//! `plan --emit` then `run --deployment`, field by field: for every emitted format and several
//! plans, the file's `# disagg run ARGS` line and its `# round trip:` line (both run as they
//! stand, in the emit directory) give the same `run --json` document, and its SLO attainment and
//! p99 TTFT are the plan's figures for the winner, bit for bit (`docs/deployment.md#round-trip`).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common;
#[allow(unused_imports)]
use common::*;

const FILES: [&str; 4] = ["dynamo.yaml", "llm-d-values.yaml", "sglang.sh", "vllm.sh"];

/// Runs disagg in `dir` with `args`; its standard output as JSON.
fn run_in(dir: &Path, args: &[String]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The words after `prefix` on the one header line that starts with it.
fn header_line(text: &str, prefix: &str) -> Vec<String> {
    let lines: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .collect();
    assert_eq!(lines.len(), 1, "{prefix}\n{text}");
    disagg_api::deploy::script::shell_words(lines[0]).unwrap()
}

/// Plans with `plan` (`--json --latency ttft` and the four formats added), then checks the round
/// trip of every file. Returns the emit directory.
fn round_trip(name: &str, plan: &[&str]) -> std::path::PathBuf {
    let dir = tmp_dir(&format!("rt-{name}"));
    let mut args: Vec<&str> = plan.to_vec();
    args.extend([
        "--json",
        "--quiet",
        "--emit",
        "dynamo,llm-d,vllm,sglang",
        "--emit-dir",
        s(&dir),
    ]);
    let p = ok_json(&args);
    // The winner's figures: a --target-rate plan's best candidate (a --max-rate plan gives
    // the rate and the SLO target it met).
    let best = p["best"]
        .as_u64()
        .map(|b| p["candidates"][b as usize].clone());
    assert_eq!(names(&dir), FILES);
    for f in FILES {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(!text.contains("cannot say this plan exactly"), "{text}");
        let mut direct = header_line(&text, "# disagg run ");
        direct.insert(0, "run".into());
        direct.push("--json".into());
        let mut rt = header_line(&text, "# round trip: disagg ");
        assert_eq!(rt[..3], ["run", "--deployment", f], "{f}");
        rt.push("--json".into());
        let a = run_in(&dir, &direct);
        let mut b = run_in(&dir, &rt);
        let dep = b.as_object_mut().unwrap().remove("deployment").unwrap();
        // Nothing left unmapped; llm-d values say their colocated workers are the decode pool.
        let colocated = "prefill: none (replicas 0 or create false): the decode workers serve \
                         whole requests, simulated as colocated";
        let unmapped: Vec<&Value> = dep["not_mapped"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| *l != colocated)
            .collect();
        assert!(unmapped.is_empty(), "{f}: {dep}");
        assert_eq!(
            serde_json::to_string_pretty(&a).unwrap(),
            serde_json::to_string_pretty(&b).unwrap(),
            "{name} {f}"
        );
        // A --max-rate answer: the run is at the rate found, and meets the target there.
        if let Some(r) = p["max_rate_rps"].as_f64() {
            assert_eq!(a["scenario"]["rate"].as_f64(), Some(r), "{f}");
            let met = a["summary"]["slo_attainment"].as_f64().unwrap();
            assert!(met >= p["slo_target"].as_f64().unwrap(), "{f}: {met}");
        }
        if let Some(best) = &best {
            assert_eq!(
                a["summary"]["slo_attainment"].as_f64(),
                best["slo_attainment"].as_f64(),
                "{name} {f}"
            );
            assert_eq!(
                a["summary"]["ttft_s"]["p99"].as_f64(),
                best["latency_p99_s"].as_f64(),
                "{name} {f}"
            );
        }
    }
    dir
}

/// A `--target-rate` plan at `rate` req/s of `requests` requests.
fn target(rate: &'static str, requests: &'static str, extra: &[&'static str]) -> Vec<&'static str> {
    let mut v = vec![
        "plan",
        "--target-rate",
        rate,
        "--requests",
        requests,
        "--latency",
        "ttft",
    ];
    v.extend(extra);
    v
}

/// A plan of Llama 3 8B on H100s at 3 req/s (200 requests), one device per instance unless
/// `extra` gives layouts.
fn llama8b(
    prefill_counts: &'static str,
    decode_counts: &'static str,
    extra: &[&'static str],
) -> Vec<&'static str> {
    let mut v = vec![
        "--model",
        "llama3-8b",
        "--prefill-counts",
        prefill_counts,
        "--decode-counts",
        decode_counts,
        "--prefill-devices",
        "h100",
        "--decode-devices",
        "h100",
    ];
    if !extra.contains(&"--layouts") {
        v.extend(["--devices-per-instance", "1"]);
    }
    v.extend(extra);
    target("3", "200", &v)
}

#[test]
fn llama3_8b_plain_round_trips() {
    // Disaggregated candidates only: the edit below is the prefill pool's.
    let dir = round_trip("plain", &llama8b("2", "1-2", &["--colocated", "no"]));
    // A file edited by hand reads as edited: 2 prefill replicas -> 3.
    for f in ["dynamo.yaml", "llm-d-values.yaml"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        let at = text.find("prefill:").unwrap_or(0);
        let edited = format!(
            "{}{}",
            &text[..at],
            text[at..].replacen("replicas: 2", "replicas: 3", 1)
        );
        assert_ne!(edited, text, "{f}");
        let path = dir.join(format!("edited-{f}"));
        std::fs::write(&path, edited).unwrap();
        let r = ok_json(&[
            "run",
            "--deployment",
            s(&path),
            "--requests",
            "20",
            "--json",
        ]);
        let args: Vec<&str> = r["deployment"]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            args.join(" ").contains("--prefill 3 --decode"),
            "{f}: {args:?}"
        );
        assert_eq!(r["scenario"]["prefill"], 3, "{f}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tp_pp_layout_winner_round_trips() {
    let dir = round_trip("layout", &llama8b("1", "1", &["--layouts", "2x2"]));
    let text = std::fs::read_to_string(dir.join("dynamo.yaml")).unwrap();
    assert!(text.contains("disagg.dev/layouts: modelled"), "{text}");
    assert!(text.contains("--pipeline-parallel-size"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_colocated_winner_round_trips() {
    let dir = round_trip("colocated", &llama8b("1-2", "1", &["--colocated", "only"]));
    let text = std::fs::read_to_string(dir.join("dynamo.yaml")).unwrap();
    assert!(text.contains("type: worker"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn deepseek_v3_fp8_ideal_instances_round_trip() {
    let dir = round_trip(
        "deepseek",
        &target(
            "0.5",
            "100",
            &[
                "--model",
                "deepseek-v3",
                "--weight-format",
                "fp8",
                "--prefill-counts",
                "1",
                "--decode-counts",
                "1",
                "--prefill-devices",
                "h200",
                "--decode-devices",
                "h200",
                "--layouts",
                "8",
            ],
        ),
    );
    // Native FP8 weights need no annotation; the instances are ideal groups of 8 GPUs.
    let text = std::fs::read_to_string(dir.join("dynamo.yaml")).unwrap();
    assert!(text.contains("disagg.dev/layouts: ideal"), "{text}");
    assert!(!text.contains("disagg.dev/weight-format"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn chunked_prefill_prefix_caching_and_kv_compression_round_trip() {
    let dir = round_trip(
        "levers",
        &llama8b(
            "1",
            "1",
            &[
                "--batch-policy",
                "chunked",
                "--max-num-batched-tokens",
                "4096",
                "--prefix-caching",
                "--system-prompts",
                "4",
                "--compressions",
                "fp8",
                // A disaggregated winner, whose KV hand-off is compressed.
                "--colocated",
                "no",
            ],
        ),
    );
    let text = std::fs::read_to_string(dir.join("sglang.sh")).unwrap();
    assert!(text.contains("--chunked-prefill-size 4096"), "{text}");
    assert!(text.contains("# disagg.dev/kv-compress: fp8"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_max_rate_emission_round_trips() {
    let dir = round_trip(
        "max-rate",
        &[
            "plan",
            "--max-rate",
            "--model",
            "llama3-8b",
            "--devices-per-instance",
            "1",
            "--requests",
            "200",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn instances_span_the_plans_gpus_per_node() {
    let dir = round_trip(
        "per-node",
        &target(
            "1",
            "100",
            &[
                "--model",
                "llama3-8b",
                "--devices-per-instance",
                "8",
                "--prefill-counts",
                "1",
                "--decode-counts",
                "1",
                "--prefill-devices",
                "h100",
                "--decode-devices",
                "h100",
                "--gpus-per-node",
                "4",
            ],
        ),
    );
    let text = std::fs::read_to_string(dir.join("dynamo.yaml")).unwrap();
    assert!(text.contains("disagg.dev/gpus-per-node: \"4\""), "{text}");
    assert!(text.contains("nodeCount: 2"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A plan on a trace: the winner is the trace time-scaled to the target, and the emitted lines
/// carry `--trace-file` and `--time-scale` (never `--rate`, which `run` refuses beside a trace);
/// both lines give the plan's figures for the winner, bit for bit.
#[test]
fn a_trace_winner_round_trips_at_its_time_scale() {
    let tdir = tmp_dir("rt-trace-src");
    let trace = crate::cli_plan_ci::synthetic_trace(&tdir, 300);
    let trace = trace.to_str().unwrap().to_string();
    let trace: &'static str = Box::leak(trace.into_boxed_str());
    let mut v = vec![
        "plan",
        "--target-rate",
        "4",
        "--latency",
        "ttft",
        "--trace-file",
        trace,
        "--colocated",
        "no",
    ];
    v.extend(&llama8b("1", "1-2", &[])[7..]);
    let dir = round_trip("trace", &v);
    let text = std::fs::read_to_string(dir.join("dynamo.yaml")).unwrap();
    let line = header_line(&text, "# disagg run ");
    assert!(line.contains(&"--time-scale".to_string()), "{line:?}");
    assert!(!line.contains(&"--rate".to_string()), "{line:?}");
}
