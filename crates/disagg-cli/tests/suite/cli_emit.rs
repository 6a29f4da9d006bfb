//! `disagg plan --emit`: the files, their headers (whose `# disagg run` line reproduces the
//! plan's figures), `--emit-top`, `--max-rate`, and bad input.

use crate::common;
#[allow(unused_imports)]
use common::*;

const SMALL: [&str; 12] = [
    "--model",
    "llama3-8b",
    "--devices-per-instance",
    "1",
    "--requests",
    "200",
    "--prefill-counts",
    "1-2",
    "--decode-counts",
    "1",
    "--prefill-devices",
    "h100",
];

fn plan_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "plan",
        "--target-rate",
        "3",
        "--decode-devices",
        "h100",
        "--quiet",
    ];
    v.extend(SMALL);
    v.extend(extra);
    v
}

/// The flags of a file's `# disagg run` line (exactly one).
fn run_line(text: &str) -> Vec<String> {
    let runs: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# disagg run "))
        .collect();
    assert_eq!(runs.len(), 1, "{text}");
    disagg_api::deploy::script::shell_words(runs[0]).unwrap()
}

#[test]
fn the_winner_is_written_in_every_format_and_its_run_line_reproduces_it() {
    let dir = tmp_dir("emit-all");
    let out = dir.join("out");
    let plan = ok_json(&plan_args(&[
        "--json",
        "--emit",
        "dynamo",
        "--emit",
        "llm-d,vllm,sglang",
        "--emit-dir",
        s(&out),
    ]));
    assert_eq!(
        names(&out),
        ["dynamo.yaml", "llm-d-values.yaml", "sglang.sh", "vllm.sh"]
    );
    let best = &plan["candidates"][plan["best"].as_u64().unwrap() as usize];
    for f in names(&out) {
        let text = std::fs::read_to_string(out.join(&f)).unwrap();
        let args = run_line(&text);
        assert!(text.contains(&format!("# round trip: disagg run --deployment {f}")));
        let sc = disagg_sim::Scenario::from_flags(&args).unwrap();
        assert_eq!(
            (sc.prefill, sc.rate),
            (best["prefill"].as_u64().unwrap() as u32, 3.0)
        );
        if f.ends_with(".sh") {
            let o = std::process::Command::new("bash")
                .arg("-n")
                .arg(out.join(&f))
                .output();
            if let Ok(o) = o {
                assert!(
                    o.status.success(),
                    "{f}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
        }
    }
    // The run line simulates the winner: the same SLO attainment, bit for bit.
    let text = std::fs::read_to_string(out.join("dynamo.yaml")).unwrap();
    let mut run = vec!["run".to_string()];
    run.extend(run_line(&text));
    run.push("--json".into());
    let r = ok_json(&run.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        r["summary"]["slo_attainment"].as_f64(),
        best["slo_attainment"].as_f64()
    );
    // Files already there are replaced, as --out replaces its file.
    std::fs::write(out.join("vllm.sh"), "old").unwrap();
    ok(&plan_args(&["--emit", "vllm", "--emit-dir", s(&out)]));
    assert!(std::fs::read_to_string(out.join("vllm.sh"))
        .unwrap()
        .starts_with("#!/usr/bin/env bash"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emit_top_writes_numbered_directories() {
    let dir = tmp_dir("emit-top");
    ok(&plan_args(&[
        "--emit",
        "sglang",
        "--emit-dir",
        s(&dir),
        "--emit-top",
        "2",
    ]));
    assert_eq!(names(&dir), ["1", "2"]);
    for k in ["1", "2"] {
        let text = std::fs::read_to_string(dir.join(k).join("sglang.sh")).unwrap();
        assert!(text.contains(&format!("rank {k} of 2")) || text.contains("the best of 2"));
        assert!(text.contains("# disagg.dev/name: disagg-llama3-8b-"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn max_rate_writes_the_scenario_at_the_rate_found() {
    let dir = tmp_dir("emit-max");
    let m = ok_json(&[
        "plan",
        "--max-rate",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--requests",
        "200",
        "--json",
        "--emit",
        "dynamo",
        "--emit-dir",
        s(&dir),
        "--engine",
        "sglang",
        "--namespace",
        "serving",
        "--image",
        "example.com/sglang:1",
    ]);
    let text = std::fs::read_to_string(dir.join("dynamo.yaml")).unwrap();
    let sc = disagg_sim::Scenario::from_flags(run_line(&text)).unwrap();
    assert_eq!(sc.rate, m["max_rate_rps"].as_f64().unwrap());
    assert!(text.contains("backendFramework: sglang"));
    assert!(text.contains("namespace: serving"));
    assert!(text.contains("image: \"example.com/sglang:1\""));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_emit_input_is_one_line() {
    let dir = tmp_dir("emit-bad");
    let d = s(&dir);
    bad(
        &plan_args(&["--emit", "helm", "--emit-dir", d]),
        &["unknown --emit format 'helm'; valid: dynamo, llm-d, vllm, sglang"],
    );
    bad(
        &plan_args(&["--emit-top", "2"]),
        &["--emit-top: give --emit FORMAT"],
    );
    bad(
        &plan_args(&["--emit", "vllm"]),
        &["--emit: give --emit-dir DIR"],
    );
    bad(
        &plan_args(&["--emit", "vllm", "--emit-dir", d, "--engine", "trt"]),
        &["unknown --engine 'trt'; valid: vllm, sglang"],
    );
    let file = dir.join("f");
    std::fs::write(&file, "x").unwrap();
    bad(
        &plan_args(&["--emit", "vllm", "--emit-dir", s(&file)]),
        &["is not a directory"],
    );
    bad(
        &[
            "plan",
            "--max-rate",
            "--model",
            "llama3-8b",
            "--devices-per-instance",
            "1",
            "--requests",
            "100",
            "--emit",
            "vllm",
            "--emit-dir",
            d,
            "--emit-top",
            "2",
        ],
        &["--emit-top: --max-rate has one answer"],
    );
    // A plan with no feasible configuration writes nothing.
    let none = dir.join("none");
    bad(
        &plan_args(&[
            "--ttft-slo",
            "0.000001",
            "--emit",
            "vllm",
            "--emit-dir",
            s(&none),
        ]),
        &["--emit: no configuration meets the SLOs at 3 req/s: nothing to write"],
    );
    assert!(!none.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
