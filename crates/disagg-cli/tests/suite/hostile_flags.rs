//! Flags that used to be ignored, capped or replaced without a word (issue 10 items 10-12): each
//! is now an error (exit 2, one `error:` line naming the flag) or exactly one `warning:` line,
//! and the SLO figures say how rejected requests count.

use crate::common;
#[allow(unused_imports)]
use common::*;

use std::path::PathBuf;

use serde_json::Value;

fn tmp(name: &str, body: &str) -> String {
    let d = std::env::temp_dir().join(format!("disagg-hostile-flags-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p: PathBuf = d.join(name);
    std::fs::write(&p, body).unwrap();
    p.display().to_string()
}

/// A three-request workload in the reference's JSON rows (a trace the replay accepts).
fn rows_file() -> String {
    tmp(
        "rows.json",
        "[[0.0, 100, 10], [0.5, 200, 20], [1.0, 300, 5]]",
    )
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// Runs, expects exit 0 with exactly one stderr line, a `warning:` containing every needle.
fn one_warning(args: &[&str], needles: &[&str]) -> Vec<u8> {
    let o = disagg(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("warning: "), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{n}' not in: {err}");
    }
    o.stdout
}

const QUICK: [&str; 3] = ["--requests", "30", "--fast"];

fn with(quick: bool, args: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    if quick {
        v.extend(QUICK.iter().map(|s| s.to_string()));
    }
    v
}

#[test]
fn ignored_flags_are_errors_naming_the_flag() {
    let rows = rows_file();
    let r = rows.as_str();
    // (args, needles in the one error line). Each of these exited 0 before, ignoring the flag.
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            with(true, &["compare", "--mode", "nosuch"]),
            vec!["--mode", "nosuch", "disagg", "colocated"],
        ),
        (
            with(false, &["run", "--trace-file", r, "--rate", "3"]),
            vec!["--rate 3", "--trace-file"],
        ),
        (
            with(false, &["run", "--trace-file", r, "--requests", "5"]),
            vec!["--requests 5", "--trace-file"],
        ),
        (
            with(false, &["run", "--trace-file", r, "--prompt", "500"]),
            vec!["--prompt 500", "--trace-file"],
        ),
        (
            with(false, &["run", "--trace-file", r, "--seed", "7"]),
            vec!["--seed 7", "--trace-file"],
        ),
        (
            with(false, &["run", "--workload-file", r, "--rate", "3"]),
            vec!["--rate 3", "--workload-file"],
        ),
        (
            with(
                false,
                &[
                    "run",
                    "--workload",
                    "chat",
                    "--prompt",
                    "100",
                    "--requests",
                    "30",
                ],
            ),
            vec!["--prompt 100", "chat"],
        ),
        (
            with(
                false,
                &[
                    "run",
                    "--workload",
                    "voice",
                    "--output-cv",
                    "0.2",
                    "--requests",
                    "30",
                ],
            ),
            vec!["--output-cv 0.2", "voice"],
        ),
        (
            with(
                false,
                &[
                    "run",
                    "--workload",
                    "chat",
                    "--turns",
                    "3",
                    "--requests",
                    "30",
                ],
            ),
            vec!["--turns 3", "chat"],
        ),
        (
            with(
                true,
                &["run", "--mode", "colocated", "--link-channels", "2"],
            ),
            vec!["--link-channels 2", "colocated"],
        ),
        (
            with(true, &["run", "--mode", "colocated", "--link", "eth-25g"]),
            vec!["--link eth-25g", "colocated"],
        ),
        (
            with(
                true,
                &["run", "--mode", "colocated", "--link-bandwidth-gb-s", "9"],
            ),
            vec!["--link-bandwidth-gb-s 9", "colocated"],
        ),
        (
            with(false, &["handoff", "--all-links", "--link", "ib-ndr"]),
            vec!["--all-links", "--link"],
        ),
        (
            with(
                false,
                &["handoff", "--all-links", "--link-bandwidth-gb-s", "5"],
            ),
            vec!["--all-links", "--link-bandwidth-gb-s"],
        ),
        (
            with(true, &["plan", "--max-rate", "--top", "0"]),
            vec!["--top", "'0'"],
        ),
        (
            with(true, &["sweep", "--vary", "rate=2,,4"]),
            vec!["--vary", "2,,4"],
        ),
        (
            with(true, &["sweep", "--vary", "rate=2,4,"]),
            vec!["--vary", "2,4,"],
        ),
        (
            with(
                true,
                &[
                    "plan",
                    "--target-rate",
                    "2",
                    "--prefill-counts",
                    "1,,2",
                    "--decode-counts",
                    "1",
                    "--compressions",
                    "none",
                ],
            ),
            vec!["--prefill-counts", "1,,2"],
        ),
        (
            with(
                true,
                &[
                    "plan",
                    "--target-rate",
                    "2",
                    "--prefill-counts",
                    "1",
                    "--decode-counts",
                    "1",
                    "--compressions",
                    "none,,fp8",
                ],
            ),
            vec!["--compressions", "none,,fp8"],
        ),
        (
            with(
                true,
                &["compare", "--variant", "send=layerwise,,link_sharing=fair"],
            ),
            vec!["--variant", "send=layerwise,,link_sharing=fair"],
        ),
        (
            with(true, &["run", "--max-context", "100"]),
            vec!["--max-context", "--trace-file"],
        ),
        (
            with(
                false,
                &["compare", "--trace-file", r, "--sweep-rate", "1", "2"],
            ),
            vec!["--sweep-rate", "--trace-file"],
        ),
    ];
    for (args, needles) in &cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        bad(&a, needles);
    }
}

#[test]
fn the_flags_above_still_work_where_they_apply() {
    let rows = rows_file();
    // The same flags without the conflict: no error, no warning.
    for args in [
        vec!["run", "--trace-file", rows.as_str()],
        vec![
            "run",
            "--workload",
            "chat",
            "--rate",
            "2",
            "--requests",
            "30",
        ],
        // chat caps its prompts at 1,024 tokens by definition: not reported as clipping.
        vec![
            "run",
            "--workload",
            "chat",
            "--model",
            "llama3-8b",
            "--devices-per-instance",
            "1",
        ],
        vec!["run", "--mode", "colocated", "--requests", "30", "--fast"],
        vec!["handoff", "--all-links"],
        vec!["sweep", "--vary", "rate=2,4", "--requests", "20", "--fast"],
        vec![
            "sweep",
            "--vary",
            "mode=disagg,colocated",
            "--link-channels",
            "2",
            "--requests",
            "20",
            "--fast",
        ],
    ] {
        let o = disagg(&args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            o.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn a_catalogue_entry_with_a_builtin_key_warns() {
    let cat = tmp(
        "cat.toml",
        "[links.eth-25g]\nbase = \"eth-25g\"\nbandwidth_gb_s = 10\n\n[links.my-link]\nbase = \"eth-25g\"\n",
    );
    let out = one_warning(
        &[
            "--catalogue",
            &cat,
            "handoff",
            "--link",
            "eth-25g",
            "--json",
        ],
        &["--catalogue", "links.eth-25g", "replaces the built-in link"],
    );
    // The file's entry is the one used (10 GB/s).
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(f(&v["link_bandwidth_bps"]), 10e9);
    // `run --json` lists it.
    let out = one_warning(
        &[
            "--catalogue",
            &cat,
            "run",
            "--link",
            "eth-25g",
            "--requests",
            "20",
            "--fast",
            "--json",
        ],
        &["links.eth-25g"],
    );
    let v: Value = serde_json::from_slice(&out).unwrap();
    let w = v["warnings"].as_array().expect("warnings");
    assert_eq!(w.len(), 1);
    assert!(w[0].as_str().unwrap().contains("links.eth-25g"));
    // A new key is no warning.
    let cat2 = tmp("cat2.toml", "[links.my-link]\nbase = \"eth-25g\"\n");
    let o = disagg(&["--catalogue", &cat2, "handoff", "--link", "my-link"]);
    assert!(o.status.success() && o.stderr.is_empty());
}

#[test]
fn compare_says_it_ignores_a_valid_mode() {
    one_warning(
        &[
            "compare",
            "--mode",
            "colocated",
            "--requests",
            "30",
            "--fast",
        ],
        &["--mode colocated", "ignored"],
    );
}

#[test]
fn clipped_generated_prompts_are_reported() {
    let csv = std::env::temp_dir().join(format!("disagg-hostile-clip-{}.csv", std::process::id()));
    let csv_s = csv.display().to_string();
    let args = [
        "run",
        "--prompt",
        "20000",
        "--prompt-cv",
        "1",
        "--requests",
        "60",
        "--rate",
        "0.5",
        "--fast",
    ];
    let mut jargs = args.to_vec();
    jargs.extend(["--json", "--requests-out", csv_s.as_str()]);
    let out = one_warning(&jargs, &["prompts", "32768", "clipped"]);
    let v: Value = serde_json::from_slice(&out).unwrap();
    // Independent count: prompts at the generator's cap in the per-request CSV.
    let text = std::fs::read_to_string(&csv).unwrap();
    let at_cap = text
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(2) == Some("32768"))
        .count() as u64;
    assert!(at_cap > 0, "the case must clip some prompts");
    let w = &v["summary"]["workload"];
    assert_eq!(w["clipped_prompts"].as_u64(), Some(at_cap));
    assert_eq!(w["prompt_cap_tokens"].as_u64(), Some(32768));
    let warns = v["summary"]["warnings"]
        .as_array()
        .expect("summary.warnings");
    assert_eq!(warns.len(), 1);
    assert!(warns[0].as_str().unwrap().contains(&at_cap.to_string()));
    // The text report says it too.
    let o = disagg(&args);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains(&format!("{at_cap} prompts clipped to 32,768 tokens")),
        "{t}"
    );
    // sweep and plan say it once too.
    let mut sweep = vec!["sweep", "--vary", "rate=0.5,1"];
    sweep.extend(&args[1..]);
    one_warning(&sweep, &["2 of 2 runs", "32768", "clipped"]);
    let mut plan = vec!["plan", "--max-rate"];
    plan.extend(&args[1..]);
    one_warning(&plan, &[&format!("{at_cap} of 60"), "32768", "clipped"]);
    // A run without clipping keeps its JSON: no warnings key, no clipping keys.
    let v = ok_json(&["run", "--requests", "30", "--fast", "--json"]);
    assert!(v.get("warnings").is_none());
    assert!(v["summary"].get("warnings").is_none());
    assert!(v["summary"]["workload"].get("clipped_prompts").is_none());
    // Without rejections the offered figure is the reference's, bit for bit.
    assert_eq!(
        v["summary"]["slo_attainment_offered"],
        v["summary"]["slo_attainment"]
    );
}

#[test]
fn an_explicit_slo_wins_over_the_named_workloads() {
    // The reference meets 93.7% of SLOs with the explicit 1.0 s TTFT SLO (issue 11 item 7);
    // voice's own TTFT SLO is tighter.
    let given = ok_json(&[
        "run",
        "--workload",
        "voice",
        "--ttft-slo",
        "1.0",
        "--rate",
        "6",
        "--requests",
        "300",
        "--json",
    ]);
    let own = ok_json(&[
        "run",
        "--workload",
        "voice",
        "--rate",
        "6",
        "--requests",
        "300",
        "--json",
    ]);
    let a = f(&given["summary"]["slo_attainment"]);
    assert!((a - 0.937).abs() < 0.0005, "{a}");
    assert!(f(&own["summary"]["slo_attainment"]) < a - 0.3);
    assert_eq!(f(&given["scenario"]["ttft_slo"]), 1.0);
}

/// A small device: 6,000-token prompts on Llama-3-8B with 19 GB leave room for most, not all.
const REJECTING: [&str; 14] = [
    "--model",
    "llama3-8b",
    "--devices-per-instance",
    "1",
    "--device-mem-gb",
    "19",
    "--prompt",
    "6000",
    "--requests",
    "100",
    "--ttft-slo",
    "1000",
    "--tpot-slo",
    "10",
];

#[test]
fn rejected_requests_count_as_misses_over_offered_requests() {
    let mut args = vec!["run", "--fast", "--json"];
    args.extend(REJECTING);
    let v = ok_json(&args);
    let s = &v["summary"];
    let rejected = s["requests"]["rejected"].as_u64().unwrap();
    let measured = s["requests"]["measured"].as_u64().unwrap();
    let met = s["slo_met"].as_u64().unwrap();
    assert!(rejected > 0, "the case must reject requests");
    // Every finished request meets these generous SLOs: the reference's figure is 100%...
    assert_eq!(f(&s["slo_attainment"]), 1.0);
    // ...and over the offered requests each rejection is a miss.
    assert_eq!(
        f(&s["slo_attainment_offered"]),
        met as f64 / (measured + rejected) as f64
    );
    let mut targs = vec!["run", "--fast"];
    targs.extend(REJECTING);
    let t = String::from_utf8(ok(&targs)).unwrap();
    let want = format!(
        "SLO met 100.0% of measured ({:.1}% of offered: {rejected} rejected count as misses)",
        100.0 * met as f64 / (measured + rejected) as f64
    );
    assert!(t.contains(&want), "{t}");
}

#[test]
fn undefined_figures_print_n_a_not_nan() {
    // Every request is rejected: no latency sample, no goodput.
    let mut base = REJECTING.to_vec();
    base[5] = "18.5";
    base[7] = "9000";
    base.extend(["--prompt-cv", "0", "--fast"]);
    let mut run = vec!["run"];
    run.extend(&base);
    let t = String::from_utf8(ok(&run)).unwrap();
    assert!(t.contains("goodput n/a req/s"), "{t}");
    assert!(t.contains("SLO met n/a"), "{t}");
    assert!(!t.contains("NaN"), "{t}");
    let mut cmp = vec!["compare", "--sweep-rate", "1", "2"];
    cmp.extend(&base);
    let t = String::from_utf8(ok(&cmp)).unwrap();
    assert!(t.contains("n/a") && !t.contains("NaN"), "{t}");
    let mut cmp = vec!["compare"];
    cmp.extend(&base);
    let t = String::from_utf8(ok(&cmp)).unwrap();
    assert!(!t.contains("NaN"), "{t}");
}

/// Llama-3-70B cut to 8 layers with 8 KV heads of 128 values in BF16: 2 (K and V) x 8 x 8 x
/// 128 x 2 bytes = 32,768 bytes per prompt token.
const SHAPE: [&str; 10] = [
    "--layers",
    "8",
    "--kv-heads",
    "8",
    "--head-dim",
    "128",
    "--kv-bytes",
    "2",
    "--link-latency-us",
    "50",
];
const KV_BYTES_PER_TOKEN: f64 = 2.0 * 8.0 * 8.0 * 128.0 * 2.0;

/// The closed form of one uncontended hand-off: latency + bytes / bandwidth.
fn transfer_s(prompt: f64, gb_s: f64) -> f64 {
    50e-6 + prompt * KV_BYTES_PER_TOKEN / (gb_s * 1e9)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b
}

fn light(prompt: &str) -> Vec<&str> {
    vec![
        "--prompt",
        prompt,
        "--prompt-cv",
        "0",
        "--output",
        "20",
        "--output-cv",
        "0",
        "--rate",
        "0.2",
        "--requests",
        "10",
    ]
}

#[test]
fn custom_hardware_flags_work_in_run_compare_sweep_and_plan() {
    for gb_s in ["4", "10"] {
        let mut args = vec!["run", "--json", "--link-bandwidth-gb-s", gb_s];
        args.extend(SHAPE);
        args.extend(light("1000"));
        let v = ok_json(&args);
        let want = transfer_s(1000.0, gb_s.parse().unwrap());
        let h = &v["summary"]["handoff_s"];
        assert!(close(f(&h["p50"]), want), "{gb_s}: {h} vs {want}");
        assert!(close(f(&h["p99"]), want), "{gb_s}: {h} vs {want}");
        assert_eq!(
            f(&v["summary"]["link"]["bytes"]),
            10.0 * 1000.0 * KV_BYTES_PER_TOKEN
        );
    }
    // compare: the disaggregated column hands off the same way.
    let mut args = vec!["compare", "--json", "--link-bandwidth-gb-s", "4"];
    args.extend(SHAPE);
    args.extend(light("1000"));
    let v = ok_json(&args);
    let runs = v["runs"].as_array().unwrap();
    let d = runs.iter().find(|r| r["mode"] == "disagg").unwrap();
    assert!(close(
        f(&d["summary"]["handoff_s"]["p50"]),
        transfer_s(1000.0, 4.0)
    ));
    // A scenario file's key does the same as the flag.
    let cfg = tmp("hw.toml", "link_bandwidth_gb_s = 4\n");
    let mut args = vec!["run", "--json", "--config", cfg.as_str()];
    args.extend(SHAPE);
    args.extend(light("1000"));
    let v = ok_json(&args);
    assert!(close(
        f(&v["summary"]["handoff_s"]["p50"]),
        transfer_s(1000.0, 4.0)
    ));
    // sweep: a flag and an axis.
    let jsonl =
        std::env::temp_dir().join(format!("disagg-hostile-sweep-{}.jsonl", std::process::id()));
    let mut args = vec![
        "sweep",
        "--vary",
        "link_bandwidth_gb_s=4,10",
        "--jsonl",
        jsonl.to_str().unwrap(),
    ];
    args.extend(SHAPE);
    args.extend(light("1000"));
    ok(&args);
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    for (row, gb) in rows.iter().zip([4.0, 10.0]) {
        assert!(
            close(
                f(&row["summary"]["handoff_s"]["p50"]),
                transfer_s(1000.0, gb)
            ),
            "{row}"
        );
    }
    // plan: the analytic KV-link ceiling follows the custom bandwidth: Llama-3-70B's 2 x 80
    // layers x 8 KV heads x 128 x 2 bytes per token, 2,048-token prompts, 4 GB/s, 10 µs.
    let t = String::from_utf8(ok(&[
        "plan",
        "--max-rate",
        "--link-bandwidth-gb-s",
        "4",
        "--fast",
        "--requests",
        "50",
    ]))
    .unwrap();
    let ceiling = 1.0 / (10e-6 + 2048.0 * (2.0 * 80.0 * 8.0 * 128.0 * 2.0) / 4e9);
    assert!(
        t.contains(&format!(
            "analytic ceiling {ceiling:.2} req/s (kv-link bound)"
        )),
        "{t}"
    );
    // A device flag reaches every pool: less memory, fewer KV tokens.
    let mut small = vec!["run", "--json", "--device-mem-gb", "60"];
    small.extend(light("1000"));
    let mut full = vec!["run", "--json"];
    full.extend(light("1000"));
    let (s, b) = (ok_json(&small), ok_json(&full));
    assert_ne!(
        s["summary"]["instances"][1]["kv_capacity_tokens"],
        b["summary"]["instances"][1]["kv_capacity_tokens"]
    );
}

/// The scheduling levers (issue 12, `docs/levers.md#scheduled-instances`-`docs/levers.md#scheduled-instances`): every refusal is exit 2 and
/// one `error:` line naming the flag with its valid range or choices, in `run`, `compare`,
/// `sweep` and scenario files alike. Nothing here runs a simulation (each is refused while the
/// configuration is built).
#[test]
fn scheduling_lever_refusals_name_the_flag_and_what_is_valid() {
    let links = "nvlink4, ib-ndr, pcie5, pcie4, eth-100g, eth-25g, cpo-optical, nvlink3, nvlink5";
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        // Ranges (the range is named in the message).
        (vec!["--gamma", "0"], vec!["--gamma", "'0'", "1 to 64"]),
        (vec!["--gamma", "65"], vec!["--gamma", "'65'", "1 to 64"]),
        (vec!["--alpha", "1.5"], vec!["--alpha", "'1.5'", "[0, 1]"]),
        (vec!["--alpha=-0.1"], vec!["--alpha", "'-0.1'", "[0, 1]"]),
        (vec!["--alpha", "nan"], vec!["--alpha", "[0, 1]"]),
        (
            vec!["--kv-block-size", "0"],
            vec!["--kv-block-size", "'0'", "1 to 65536"],
        ),
        (
            vec!["--kv-block-size", "65537"],
            vec!["--kv-block-size", "1 to 65536"],
        ),
        (
            vec!["--max-num-batched-tokens", "0"],
            vec!["--max-num-batched-tokens", "'0'", "1 to 100000000"],
        ),
        (
            vec!["--max-seq-len", "1e9"],
            vec!["--max-seq-len", "0 to 100000000"],
        ),
        (vec!["--spec-seed", "-1"], vec!["--spec-seed"]),
        // Choices.
        (
            vec!["--batch-policy", "fcfs"],
            vec![
                "--batch-policy",
                "'fcfs'",
                "prefill-priority, decode-priority, chunked",
            ],
        ),
        (
            vec!["--kv-policy", "lru"],
            vec!["--kv-policy", "'lru'", "oracle, pow2, max, paged"],
        ),
        (
            vec!["--preemption", "drop"],
            vec!["--preemption", "'drop'", "recompute, swap"],
        ),
        (
            vec!["--host-link", "pcie6"],
            vec!["--host-link", "'pcie6'", links],
        ),
        // Combinations (`docs/levers.md#scheduled-instances`, in its order).
        (
            vec!["--batch-policy", "chunked", "--fast"],
            vec!["--fast", "fast path", "scheduling levers"],
        ),
        (
            vec!["--prefix-caching", "--fast"],
            vec!["--fast", "scheduling levers"],
        ),
        (
            vec!["--speculative", "mtp", "--kv-compress", "fp8"],
            vec!["--speculative", "--kv-compress", "not modelled"],
        ),
        (
            vec![
                "--prefix-caching",
                "--kv-policy",
                "paged",
                "--preemption",
                "swap",
            ],
            vec!["--prefix-caching", "swap", "--preemption recompute"],
        ),
        (
            vec!["--batch-policy", "chunked", "--link-sharing", "fair"],
            vec!["--link-sharing", "'fair'", "scheduling levers yet"],
        ),
        (
            vec!["--prefix-caching", "--link-topology", "per-pair"],
            vec!["--link-topology", "'per-pair'", "scheduling levers yet"],
        ),
    ];
    for (i, (flags, needles)) in cases.iter().enumerate() {
        bad(&[&["run"][..], flags].concat(), needles);
        // `compare` runs the scenario disaggregated and colocated: the cases up to --fast's
        // apply to both modes (the hand-off refusals after them are about the disaggregated run,
        // and colocated mode refuses hand-off options on its own).
        if i <= 15 {
            bad(&[&["compare"][..], flags].concat(), needles);
        }
    }
    // The same through sweep axes and compare variants.
    bad(
        &[
            "sweep",
            "--vary",
            "batch_policy=chunked,prefill-priority",
            "--fast",
        ],
        &[
            "run 0",
            "batch_policy=\"chunked\"",
            "--fast",
            "scheduling levers",
        ],
    );
    bad(
        &["sweep", "--vary", "kv_policy=oracle,lru"],
        &["--vary kv_policy=lru", "oracle, pow2, max, paged"],
    );
    bad(
        &["sweep", "--vary", "gamma=3,0"],
        &["--vary gamma=0", "1 to 64"],
    );
    bad(
        &["compare", "--variant", "prefix_caching=true", "--fast"],
        &[
            "--variant prefix_caching=true",
            "--fast",
            "scheduling levers",
        ],
    );
    bad(
        &["compare", "--variant", "preemption=drop"],
        &["preemption=drop", "recompute, swap"],
    );
    // Colocated, --fast is accepted with the levers (no colocated fast path); a validation error
    // after it is still reached.
    bad(
        &[
            "run",
            "--mode",
            "colocated",
            "--fast",
            "--prefix-caching",
            "--kv-policy",
            "paged",
            "--preemption",
            "swap",
        ],
        &["--prefix-caching", "swap"],
    );
}

#[test]
fn scheduling_lever_keys_in_scenario_files_read_as_the_flags() {
    // Unknown names and values out of range name the flag, as on the command line.
    for (body, needles) in [
        (
            "kv_policy = \"lru\"\n",
            &["--kv-policy", "'lru'", "oracle, pow2, max, paged"][..],
        ),
        (
            "batch_policy = \"fcfs\"\n",
            &[
                "--batch-policy",
                "prefill-priority, decode-priority, chunked",
            ],
        ),
        (
            "preemption = \"drop\"\n",
            &["--preemption", "recompute, swap"],
        ),
        ("gamma = 0\n", &["--gamma", "1 to 64", "got 0"]),
        ("alpha = 2.0\n", &["--alpha", "[0, 1]", "got 2"]),
        ("kv_block_size = 0\n", &["--kv-block-size", "1 to 65536"]),
        (
            "max_num_batched_tokens = 0\n",
            &["--max-num-batched-tokens", "1 to 100000000"],
        ),
        (
            "host_link = \"pcie6\"\n",
            &["--host-link", "'pcie6'", "pcie4"],
        ),
        // Every switch key is read: each with `fast` in disaggregated mode is refused.
        (
            "batch_policy = \"decode-priority\"\nfast = true\n",
            &["--fast", "scheduling levers"],
        ),
        (
            "max_num_batched_tokens = 8192\nfast = true\n",
            &["--fast", "scheduling levers"],
        ),
        (
            "kv_policy = \"max\"\nfast = true\n",
            &["--fast", "scheduling levers"],
        ),
        (
            "prefix_caching = true\nfast = true\n",
            &["--fast", "scheduling levers"],
        ),
        (
            "speculative = \"mtp\"\nfast = true\n",
            &["--fast", "speculative decoding"],
        ),
        // The cost levers' keys, the same way (`docs/levers.md#scheduled-instances`).
        ("tp = 4\nfast = true\n", &["--fast", "parallelism"]),
        (
            "weight_format = \"fp8\"\nfast = true\n",
            &["--fast", "quantisation"],
        ),
        (
            "weight_format = \"fp6\"\n",
            &["--weight-format", "'fp6'", "bf16, fp8, int8, int4, fp4"],
        ),
        (
            "kv_format = \"int2\"\n",
            &["--kv-format", "'int2'", "bf16, fp8, int8, int4, fp4"],
        ),
        ("tp = 2000\n", &["--tp", "0 to 1024"]),
        (
            "expert_imbalance = -1\n",
            &["--expert-imbalance", "[0, 1000]"],
        ),
        (
            "prefix_caching = true\nkv_policy = \"paged\"\npreemption = \"swap\"\n",
            &["--prefix-caching", "--preemption recompute"],
        ),
    ] {
        let p = tmp("levers.toml", body);
        bad(&["run", "--config", &p], needles);
    }
}

/// Issue 24 item 12: a name is checked whether or not it is used; `plan --max-rate` refuses the
/// flags of `--target-rate` (its `--plot` drew nothing); `compare --sweep-rate` counts its runs
/// up front and refuses more than 10,000 without `--yes`, as `plan` does its candidates.
#[test]
fn unused_names_are_checked_and_unbounded_or_ignored_flags_refused() {
    // The scale-up link matters only with a layout of more than one GPU: checked without one.
    for v in ["bogus", "", "../../etc/passwd"] {
        bad(
            &["run", "--scale-up-link", v, "--requests", "20", "--fast"],
            &["--scale-up-link", &format!("'{v}'"), "nvlink4"],
        );
    }
    bad(
        &["sweep", "--scale-up-link", "bogus", "--vary", "rate=1,2"],
        &["--scale-up-link", "'bogus'"],
    );
    let dir = std::env::temp_dir().join(format!("disagg-maxrate-plot-{}", std::process::id()));
    let ds = dir.display().to_string();
    bad(
        &["plan", "--max-rate", "--plot", &ds],
        &["--max-rate", "--plot"],
    );
    assert!(!dir.exists(), "--plot made {ds}");
    for (flag, v) in [
        ("--links", "bogus"),
        ("--prefill-devices", "bogus"),
        ("--compressions", "fp8"),
        ("--price", "h100=3"),
        ("--top", "3"),
    ] {
        bad(
            &["plan", "--max-rate", flag, v],
            &[flag, "cannot be used with", "--max-rate"],
        );
    }
    let rates: Vec<String> = (1..=5001).map(|r| r.to_string()).collect();
    let mut args = vec!["compare", "--sweep-rate"];
    args.extend(rates.iter().map(String::as_str));
    bad(
        &args,
        &[
            "the comparison has 10002 runs, more than 10000",
            "--sweep-rate",
            "--yes",
        ],
    );
}

/// Issue 24 item 14: `disagg` alone prints a short overview on stdout (usage and every command)
/// and exits 0.
#[test]
fn disagg_alone_prints_the_commands_on_stdout_and_succeeds() {
    let o = disagg(&[]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let t = String::from_utf8(o.stdout).unwrap();
    assert!(t.lines().count() <= 25, "{t}");
    assert!(t.contains("Usage: disagg"), "{t}");
    // Every command `disagg --help` lists (its "Commands:" section), named at a line's start.
    let help = ok_text(&["--help"]);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(commands.len() >= 10, "{help}");
    for c in commands {
        assert!(
            t.lines()
                .any(|l| l.trim_start().starts_with(&format!("{c} "))),
            "{c} missing: {t}"
        );
    }
}
