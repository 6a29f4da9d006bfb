//! The cost levers at the command line (`docs/levers.md#scheduled-instances`, `docs/cost-model.md#parallelism`, `docs/cost-model.md#quantisation`): every combination the
//! reference refuses is one line naming the option, exit status 2; the levers' blocks in `--json`
//! and the report; a run that does not use them is unchanged.

use crate::common;

use common::*;

#[test]
fn lever_checks_of_2_3_in_order() {
    // 1. Unknown format names (the reference's argparse choices).
    bad(
        &["run", "--weight-format", "fp6"],
        &["--weight-format", "'fp6'", "bf16, fp8, int8, int4, fp4"],
    );
    bad(&["run", "--kv-format", "int2"], &["--kv-format", "'int2'"]);
    bad(
        &["run", "--compute-format", "tf32"],
        &["--compute-format", "'tf32'"],
    );
    // 2. Compute is BF16 or the weight format.
    bad(
        &["run", "--weight-format", "fp8", "--compute-format", "int8"],
        &["--compute-format", "the weight format itself (W8A8, W4A4)"],
    );
    bad(
        &["run", "--compute-format", "fp8"],
        &["--compute-format", "compute_format is 'bf16'"],
    );
    // 4. A quantised KV cache with hand-off compression.
    bad(
        &["run", "--kv-format", "fp8", "--kv-compress", "fp8"],
        &["--kv-format", "assumes a BF16 KV cache"],
    );
    // 5. The fast path in disaggregated mode, for each lever (an MoE model alone, too).
    for lever in [
        &["--tp", "4"][..],
        &["--weight-format", "int8"],
        &["--speculative", "mtp"],
        &["--model", "mixtral-8x7b", "--devices-per-instance", "2"],
        &["--prefill-tp", "4"],
    ] {
        let mut args = vec!["run", "--fast"];
        args.extend(lever);
        bad(
            &args,
            &[
                "--fast",
                "not with parallelism, quantisation, speculative decoding",
            ],
        );
    }
    // 6. Speculative decoding: draft name, vocabulary, no pipeline.
    bad(
        &["run", "--speculative", "tiny"],
        &["unknown draft model 'tiny'", "mtp, llama3-8b"],
    );
    bad(
        &["run", "--speculative", "mistral-7b"],
        &["draft mistral-7b has a 32000-token vocabulary, the target 128256"],
    );
    bad(
        &["run", "--speculative", "mtp", "--pp", "2", "--tp", "2"],
        &["--speculative", "pipeline parallelism is not modelled"],
    );
    bad(
        &["run", "--speculative", "mtp", "--decode-pp", "4"],
        &["pipeline parallelism is not modelled"],
    );
}

#[test]
fn layout_checks_of_5_3_in_order() {
    let cases: [(&[&str], &str); 8] = [
        (
            &["--tp", "4", "--microbatches", "0"],
            "prefill pool: tp, pp and microbatches must be at least 1",
        ),
        (
            &["--tp", "2"],
            "prefill pool: parallel tp=2 x pp=1 needs 2 devices per instance (got 4)",
        ),
        (
            &["--decode-tp", "8"],
            "decode pool: parallel tp=8 x pp=1 needs 8 devices per instance (got 4)",
        ),
        (
            &["--tp", "4", "--ep", "2"],
            "prefill pool: ep must be 1 (experts split by TP) or equal to tp",
        ),
        (
            &["--tp", "4", "--ep", "4"],
            "prefill pool: expert parallelism needs a mixture-of-experts model",
        ),
        (
            &[
                "--model",
                "mixtral-8x7b",
                "--tp",
                "4",
                "--ep",
                "4",
                "--expert-imbalance",
                "0.5",
            ],
            "prefill pool: expert_imbalance is the busiest GPU's load over the mean: at least 1",
        ),
        (
            &["--pp", "3", "--devices-per-instance", "3"],
            "prefill pool: Llama-3-70B has 80 layers: not divisible into 3 stages",
        ),
        (
            &["--tp", "4", "--scale-up-link", "warp"],
            "prefill pool: unknown scale-up link 'warp'",
        ),
    ];
    for (flags, want) in cases {
        let mut args = vec!["run"];
        args.extend(flags);
        bad(&args, &[want]);
    }
    // A layout that does not fit names the stage (`docs/cost-model.md#parallelism`).
    bad(
        &["run", "--device", "a100-40g", "--pp", "4"],
        &["Llama-3-70B does not fit: 36.3 GB of weights per GPU in stage 0 of 1 x 4 A100-SXM-40GB (36.0 GB usable)"],
    );
    // Python's `or`: zero degrees and imbalance mean the default (`docs/levers.md#quirks` item 1).
    let v = ok_json(&[
        "run",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--tp",
        "0",
        "--pp",
        "0",
        "--requests",
        "20",
        "--json",
    ]);
    let p = &v["summary"]["parallel"][0];
    assert_eq!((p["tp"].as_u64(), p["pp"].as_u64()), (Some(1), Some(1)));
}

#[test]
fn format_units_of_each_pool() {
    // `docs/cost-model.md#parallelism`: each pool looks up its own device's units.
    bad(
        &[
            "run",
            "--decode-device",
            "a100",
            "--weight-format",
            "fp8",
            "--compute-format",
            "fp8",
        ],
        &["decode pool: A100-SXM has no fp8 units (use compute_format='bf16' for weight-only fp8)"],
    );
    bad(
        &[
            "run",
            "--device",
            "b200",
            "--weight-format",
            "int4",
            "--compute-format",
            "int4",
        ],
        &["B200 has no int4 units"],
    );
    // Weight-only INT4 runs anywhere.
    let v = ok_json(&[
        "run",
        "--device",
        "a100",
        "--weight-format",
        "int4",
        "--requests",
        "20",
        "--json",
    ]);
    let f = &v["summary"]["formats"];
    assert_eq!(f["weights"], "int4");
    assert_eq!(f["compute"], "bf16");
    assert_eq!(f["weight_bytes"].as_f64(), Some(0.515625));
}

#[test]
fn the_blocks_in_json_and_the_report() {
    let args = [
        "run",
        "--tp",
        "2",
        "--pp",
        "2",
        "--kv-format",
        "fp8",
        "--requests",
        "40",
    ];
    let t = ok_text(&args);
    assert!(
        t.contains("parallel     prefill tp 2 pp 2 ep 1 on NVLink 4 (one direction): "),
        "{t}"
    );
    assert!(
        t.contains("% of busy time on the link  decode tp 2 pp 2 ep 1"),
        "{t}"
    );
    assert!(t.contains("formats      weights bf16, KV fp8, compute bf16 (accuracy not simulated)"));
    assert!(t.contains("scale-up "), "{t}");
    let mut j = args.to_vec();
    j.push("--json");
    let v = ok_json(&j);
    let s = &v["summary"];
    assert_eq!(s["parallel"].as_array().unwrap().len(), 2);
    assert_eq!(s["parallel"][1]["role"], "decode");
    assert_eq!(s["parallel"][0]["microbatches"].as_u64(), Some(2));
    assert!(s["energy"]["scale_up_j"].as_f64().unwrap() > 0.0);
    assert_eq!(s["formats"]["kv_bytes"].as_f64(), Some(1.0));
    // The KV hand-off moves half the bytes of BF16 (2,048-token mean prompts over 40 requests).
    let b = ok_json(&["run", "--requests", "40", "--json"]);
    let half = b["summary"]["link"]["bytes"].as_f64().unwrap() / 2.0;
    assert_eq!(s["link"]["bytes"].as_f64(), Some(half));
    // Without the levers none of the keys appear.
    let sb = &b["summary"];
    assert!(sb.get("parallel").is_none() && sb.get("formats").is_none());
    assert!(sb["energy"].get("scale_up_j").is_none());
    assert!(!ok_text(&["run", "--requests", "40"]).contains("parallel "));
}

#[test]
fn devices_from_layout_lets_a_sweep_vary_tp() {
    // Without it the reference's check refuses the rows whose tp x pp differs from the devices.
    let base = ["--model", "llama3-8b", "--requests", "30"];
    let mut args = vec!["sweep", "--vary", "tp=1,2,4", "--jsonl", "-", "--quiet"];
    args.extend(base);
    let o = disagg(&args);
    assert_eq!(o.status.code(), Some(2));
    args.push("--devices-from-layout");
    let rows: Vec<serde_json::Value> = String::from_utf8(ok(&args))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    for (row, tp) in rows.iter().zip([1u64, 2, 4]) {
        let inst = &row["summary"]["instances"];
        assert_eq!(inst[0]["devices"].as_u64(), Some(tp), "{row}");
        assert_eq!(inst[1]["devices"].as_u64(), Some(tp), "{row}");
        // Each row is the run with explicit matching devices.
        let d = tp.to_string();
        let t = tp.to_string();
        let mut one = vec!["run", "--tp", &t, "--devices-per-instance", &d, "--json"];
        one.extend(base);
        let v = ok_json(&one);
        assert_eq!(row["summary"]["ttft_s"], v["summary"]["ttft_s"]);
        assert_eq!(row["summary"]["energy"], v["summary"]["energy"]);
    }
}

/// The FFT-mixing models, the optical engine and `--ppa` at the command line
/// (`docs/levers.md#fft-mixing`, `docs/levers.md#ppa`): the report's lines, from the run of
/// tests/fixtures/levers/cost-runs.json runs[7], whose summary has prefill-0 optical-bound
/// 1.0, conversions 218.18524192210953 J, static 2137.2669171825232 J; the breakdown's optical
/// static 0.053394634567116385 and conversions 0.005450849946120237; ppa total_mm2 1731.0,
/// total_usd 696.3328676787937, perf_per_W 5.152300993114017, perf_per_mm2
/// 1.1149015916253375, perf_per_kusd 2771.511650077225.
#[test]
fn the_optical_and_ppa_lines() {
    let args = [
        "run",
        "--model",
        "llama3-8b-hyena-circ",
        "--prefill-lm-head",
        "last",
        "--devices-per-instance",
        "1",
        "--rate",
        "8",
        "--fast",
        "--prefill-device",
        "optical-fft",
        "--ft-enob",
        "11",
        "--ft-mask-rate",
        "20000",
        "--ft-overlap",
        "--ppa",
    ];
    let t = ok_text(&args);
    assert!(
        t.contains(
            "optical      prefill-0 100% optical-bound, conversions 218.2 J, static 2,137.3 J\n"
        ),
        "{t}"
    );
    assert!(
        t.contains(
            "ppa          1,731 mm2, $696 of silicon: 5.15 tok/J, 1.115 tok/s per mm2, \
             2,771.5 tok/s per $1k\n"
        ),
        "{t}"
    );
    assert!(
        t.contains("link 0%  optical static 5%  conversions 1%"),
        "{t}"
    );
    let mut j = args.to_vec();
    j.push("--json");
    let s = &ok_json(&j)["summary"];
    assert_eq!(s["optical"][0]["name"], "prefill-0");
    assert_eq!(s["optical"][0]["optical_bound_frac"].as_f64(), Some(1.0));
    assert_eq!(s["optical"][1]["static_j"].as_f64(), Some(0.0));
    assert_eq!(s["ppa"]["total_mm2"].as_f64(), Some(1731.0));
    assert_eq!(
        s["ppa"]["pools"]["prefill"]["mm2_per_instance"].as_f64(),
        Some(917.0)
    );
    assert!(s["energy"]["optical_static_j"].as_f64().unwrap() > 0.0);
    // A device without a die area: the totals are unknown (null), tokens per J is not.
    let u = ok_text(&["run", "--requests", "40", "--device", "b200", "--ppa"]);
    assert!(
        u.contains("ppa          area unknown (no die area for B200): 0."),
        "{u}"
    );
    // An A100 prefill pool (with an area) and a B200 decode pool: B200 named once.
    let m = ok_text(&[
        "run",
        "--requests",
        "40",
        "--prefill-device",
        "a100",
        "--decode-device",
        "b200",
        "--ppa",
    ]);
    assert!(
        m.contains("ppa          area unknown (no die area for B200): "),
        "{m}"
    );
    let v = ok_json(&[
        "run",
        "--requests",
        "40",
        "--device",
        "b200",
        "--ppa",
        "--json",
    ]);
    assert!(v["summary"]["ppa"]["total_mm2"].is_null());
    assert!(v["summary"]["ppa"]["perf_per_W"].as_f64().unwrap() > 0.0);
    // Without an engine and without --ppa none of it appears.
    let plain = ok_text(&["run", "--requests", "40"]);
    assert!(
        !plain.contains("optical") && !plain.contains("ppa "),
        "{plain}"
    );
    let pj = ok_json(&["run", "--requests", "40", "--json"]);
    let ps = &pj["summary"];
    assert!(ps.get("optical").is_none() && ps.get("ppa").is_none());
    assert!(ps["energy"].get("optical_static_j").is_none());
}

#[test]
fn fft_and_engine_options_refuse_bad_values() {
    bad(
        &["run", "--fft-efficiency", "fast"],
        &["--fft-efficiency", "'fast'"],
    );
    bad(&["run", "--fft-efficiency", "0"], &["--fft-efficiency"]);
    bad(&["run", "--ft-enob", "0"], &["--ft-enob"]);
    bad(&["run", "--ft-enob", "8.5"], &["--ft-enob"]);
    bad(
        &["run", "--ft-samples-per-s", "-1"],
        &["--ft-samples-per-s"],
    );
    bad(&["run", "--ft-static-w", "-5"], &["--ft-static-w"]);
    bad(&["run", "--ft-mask-rate", "0"], &["--ft-mask-rate"]);
    bad(
        &["run", "--ft-detection", "direct"],
        &["--ft-detection", "'direct'", "coherent, intensity"],
    );
}

#[test]
fn fft_mixing_models_refuse_the_levers_they_do_not_model() {
    for (lever, needle) in [
        (
            &["--tp", "2", "--devices-per-instance", "2"][..],
            "parallelism is modelled for attention models without CED only",
        ),
        (
            &["--weight-format", "fp8"],
            "formats are modelled for attention models without CED only",
        ),
        (
            &["--batch-policy", "chunked"],
            "are modelled for attention models without CED only",
        ),
        (
            &["--speculative", "mtp"],
            "are modelled for attention models without CED only",
        ),
    ] {
        let mut args = vec!["run", "--model", "llama3-8b-hyena", "--mode", "colocated"];
        args.extend(lever);
        bad(&args, &[needle]);
    }
}
