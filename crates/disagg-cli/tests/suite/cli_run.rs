//! `disagg run`, `compare` and `presets` as a user runs them: the chapter's numbers through the
//! binary, JSON shape, output files, determinism and bad input.

use crate::common;
#[allow(unused_imports)]
use common::*;

use std::path::PathBuf;

use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("disagg-cli-run-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

#[test]
fn json_schema_and_the_chapters_saturated_link() {
    // `docs/cost-model.md#compression` load sweep, 14 req/s, no compression (`docs/exactness.md#verification`, full precision).
    let v = ok_json(&["run", "--preset", "eth25g-14rps", "--json"]);
    assert_eq!(v["schema_version"], 1);
    let s = &v["summary"];
    for k in ["ttft_s", "tpot_s", "itl_s", "e2e_s"] {
        for q in ["mean", "p50", "p90", "p99", "max"] {
            assert!(s[k][q].is_number(), "summary.{k}.{q}");
        }
    }
    for k in [
        "slo_attainment",
        "goodput_rps",
        "throughput_tok_s",
        "link_busy",
        "link_j_per_request",
        "j_per_token",
        "avg_power_w",
        "horizon_s",
    ] {
        assert!(s[k].is_number(), "summary.{k}");
    }
    assert!(s["handoff_s"]["p50"].is_number() && s["handoff_s"]["p99"].is_number());
    assert_eq!(s["requests"]["completed"], 800);
    assert_eq!(s["requests"]["rejected"], 0);
    assert_eq!(s["requests"]["measured"], 720);
    assert!(s["instances"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["utilisation"].is_number()));
    assert_eq!(f(&s["ttft_s"]["p99"]), 0.6266001783231071);
    assert_eq!(f(&s["tpot_s"]["p99"]), 0.07720868908627128);
    assert_eq!(f(&s["slo_attainment"]), 0.4097222222222222);
    assert_eq!(f(&s["goodput_rps"]), 5.517070071447792);
    assert_eq!(f(&s["j_per_token"]), 0.2682818484207911);
    assert_eq!(f(&s["handoff_s"]["p99"]), 9.657760737543722);
    assert_eq!(f(&s["link_busy"]), 0.9397610672138671);
    assert_eq!(v["scenario"]["link"], "eth-25g");
    assert_eq!(v["scenario"]["rate"], 14.0);
    // ... and with FP8 in the link.
    let v = ok_json(&["run", "--preset", "eth25g-14rps-fp8", "--json"]);
    let s = &v["summary"];
    assert_eq!(f(&s["tpot_s"]["p99"]), 0.011528352606089014);
    assert_eq!(f(&s["slo_attainment"]), 1.0);
    assert_eq!(f(&s["handoff_s"]["p99"]), 0.16662258699839966);
    assert_eq!(f(&s["link_busy"]), 0.5367480125794762);
}

#[test]
fn text_report_layout() {
    let t = String::from_utf8(ok(&["run", "--preset", "eth25g-14rps"])).unwrap();
    assert!(
        t.starts_with("── disagg ── 800 done, 0 rejected, sim "),
        "{t}"
    );
    for s in [
        "latency (ms)       mean      p50      p90      p99",
        "  ttft  ",
        "  tpot  ",
        "throughput ",
        "SLO met 41.0%",
        "kv-link 94%",
        "hand-off p50 ",
        "p99 9657.8 ms",
        "hot-spot     stage=kv_wait -> kv-link (busy 94%)",
    ] {
        assert!(t.contains(s), "'{s}' not in:\n{t}");
    }
}

#[test]
fn runs_are_deterministic() {
    let a = ok(&["run", "--preset", "pools-2a100-h100", "--json"]);
    let b = ok(&["run", "--preset", "pools-2a100-h100", "--json"]);
    assert_eq!(a, b);
}

#[test]
fn the_batch_cap_and_length_bounds_at_their_defaults_change_nothing() {
    // --max-decode-batch 256 and the generator's bounds 1 and 32768 are the reference's own
    // values: given explicitly, the run document is the same, byte for byte.
    let base = ["run", "--requests", "60", "--json"];
    let plain = ok(&base);
    let mut with = base.to_vec();
    with.extend([
        "--max-decode-batch",
        "256",
        "--prompt-min",
        "1",
        "--prompt-max",
        "32768",
        "--output-min",
        "1",
        "--output-max",
        "32768",
    ]);
    assert_eq!(
        String::from_utf8(ok(&with)).unwrap(),
        String::from_utf8(plain).unwrap()
    );
    // A smaller cap is a different run (same scenario otherwise).
    let mut capped = base.to_vec();
    capped.extend(["--max-decode-batch", "2"]);
    let (a, b) = (ok_json(&base), ok_json(&capped));
    // At their defaults the keys are left out of the echo (documents as before they existed).
    for k in [
        "max_decode_batch",
        "prompt_min",
        "prompt_max",
        "output_min",
        "output_max",
    ] {
        assert!(a["scenario"].get(k).is_none(), "{k} echoed at its default");
    }
    assert_eq!(b["scenario"]["max_decode_batch"], 2);
    assert_ne!(a["summary"]["horizon_s"], b["summary"]["horizon_s"]);
    // Bounds beside a named workload would be ignored: refused.
    bad(
        &["run", "--workload", "chat", "--prompt-max", "512"],
        &["--prompt-max 512: the named workload 'chat' sets the lengths"],
    );
    bad(
        &["run", "--trace-file", "/dev/null", "--output-min", "4"],
        &["--output-min 4: a replayed trace (--trace-file) brings its own"],
    );
    bad(
        &["run", "--prompt-min", "600", "--prompt-max", "512"],
        &["--prompt-min: 600 is above --prompt-max 512"],
    );
}

#[test]
fn requests_csv_matches_reference_stamps() {
    // `docs/exactness.md#verification`: stamps of the `docs/serving-model.md` H100+H100 run.
    let p = tmp("req.csv");
    ok(&[
        "run",
        "--preset",
        "link-ib-ndr",
        "--requests-out",
        p.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "rid,arrival_s,prompt_len,output_len,prefill_start_s,first_token_s,kv_start_s,kv_ready_s,decode_start_s,finish_s"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 800);
    let want: [(usize, [f64; 7]); 3] = [
        (
            0,
            [
                0.01803638301368865,
                0.01803638301368865,
                0.0533784015707472,
                0.0533784015707472,
                0.0566285014107472,
                0.0566285014107472,
                1.4057186049092538,
            ],
        ),
        (
            80,
            [
                9.398022964044028,
                9.398022964044028,
                9.578933819053496,
                9.578933819053496,
                9.594475851053497,
                9.602163982628653,
                11.817187200873434,
            ],
        ),
        (
            799,
            [
                102.97124087035998,
                102.97124087035998,
                103.00293496732613,
                103.00293496732613,
                103.00585214428612,
                103.01442638969712,
                106.47030498427627,
            ],
        ),
    ];
    for (rid, stamps) in want {
        let r = &rows[rid];
        assert_eq!(r[0], rid.to_string());
        let got: Vec<f64> = [1, 4, 5, 6, 7, 8, 9]
            .iter()
            .map(|&i| r[i].parse().unwrap())
            .collect();
        assert_eq!(got, stamps.to_vec(), "rid {rid}");
    }
    assert_eq!((rows[0][2], rows[0][3]), ("1236", "204"));
    // Colocated runs have no KV stamps: empty fields.
    let p2 = tmp("coloc.csv");
    ok(&[
        "run",
        "--mode",
        "colocated",
        "--requests",
        "20",
        "--requests-out",
        p2.to_str().unwrap(),
    ]);
    let t2 = std::fs::read_to_string(&p2).unwrap();
    let r1: Vec<&str> = t2.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(r1.len(), 10);
    assert!(r1[6].is_empty() && r1[7].is_empty());
}

#[test]
fn chrome_trace_is_valid_json() {
    let p = tmp("trace.json");
    ok(&[
        "run",
        "--preset",
        "link-eth-25g",
        "--requests",
        "50",
        "--trace",
        p.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    assert!(ev.iter().any(|e| e["ph"] == "X" && e["cat"] == "kv"));
    assert!(ev.iter().any(|e| e["ph"] == "X" && e["cat"] == "prefill"));
    assert!(ev
        .iter()
        .any(|e| e["ph"] == "C" && e["name"] == "population"));
    assert_eq!(v["displayTimeUnit"], "ms");
}

#[test]
fn workload_file_replay() {
    let p = tmp("wl.json");
    std::fs::write(
        &p,
        "[[0.0, 2048, 10], [0.5, 1024, 5, {\"chain\": []}], [1.0, 512, 1]]",
    )
    .unwrap();
    let v = ok_json(&[
        "run",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--workload-file",
        p.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["summary"]["requests"]["completed"], 3);
    std::fs::write(&p, "[[0.0, 2048, 10], [0.5, -4, 5]]").unwrap();
    bad(
        &["run", "--workload-file", p.to_str().unwrap()],
        &["row 1", "prompt"],
    );
    std::fs::write(&p, "[[0.0, 2048, 10], [0.5, 4]]").unwrap();
    bad(&["run", "--workload-file", p.to_str().unwrap()], &["row 1"]);
    bad(
        &["run", "--workload-file", "/no/such/file.json"],
        &["/no/such/file.json"],
    );
}

#[test]
fn config_files_layer_over_presets() {
    let p = tmp("scenario.toml");
    std::fs::write(&p, "preset = \"link-eth-25g\"\nrate = 14.0\n").unwrap();
    let a = ok_json(&["run", "--config", p.to_str().unwrap(), "--json"]);
    let b = ok_json(&["run", "--preset", "eth25g-14rps", "--json"]);
    assert_eq!(a["summary"], b["summary"]);
    // Flags win over the file.
    let c = ok_json(&[
        "run",
        "--config",
        p.to_str().unwrap(),
        "--rate",
        "8",
        "--json",
    ]);
    let d = ok_json(&["run", "--preset", "link-eth-25g", "--json"]);
    assert_eq!(c["summary"], d["summary"]);
    std::fs::write(&p, "rate = 4.0\nwarp_factor = 9\n").unwrap();
    bad(
        &["run", "--config", p.to_str().unwrap()],
        &["scenario.toml", "warp_factor"],
    );
    std::fs::write(&p, "rate = \"fast\"\n").unwrap();
    bad(
        &["run", "--config", p.to_str().unwrap()],
        &["scenario.toml"],
    );
}

#[test]
fn compare_and_sweep_rate() {
    let v = ok_json(&[
        "compare",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--requests",
        "100",
        "--json",
    ]);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["mode"], "colocated");
    assert_eq!(runs[1]["mode"], "disagg");
    // Same request stream: the same number of output tokens over the same arrivals.
    assert_eq!(
        runs[0]["summary"]["requests"]["completed"],
        runs[1]["summary"]["requests"]["completed"]
    );
    let t = String::from_utf8(ok(&[
        "compare",
        "--requests",
        "100",
        "--sweep-rate",
        "2",
        "4",
    ]))
    .unwrap();
    assert_eq!(t.lines().filter(|l| l.contains("colocated")).count(), 2);
    assert_eq!(t.lines().filter(|l| l.contains(" disagg")).count(), 2);
    bad(
        &["compare", "--sweep-rate", "2", "-1"],
        &["--sweep-rate", "-1"],
    );
}

#[test]
fn presets_list_and_run() {
    let v = ok_json(&["presets", "--json"]);
    let names: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    for n in [
        "pools-h100-h100",
        "pools-h100-a100",
        "pools-a100-h100",
        "pools-a100-a100",
        "pools-2a100-h100",
        "link-nvlink4",
        "link-cpo-optical",
        "link-ib-ndr",
        "link-eth-100g",
        "link-eth-25g",
        "eth25g-14rps",
        "eth25g-14rps-fp8",
    ] {
        assert!(names.iter().any(|x| x == n), "{n}");
    }
    let t = String::from_utf8(ok(&["presets"])).unwrap();
    assert!(t.contains("eth25g-14rps-fp8"));
}

#[test]
fn bad_input_leaves_no_file() {
    let p = tmp("never.csv");
    let _ = std::fs::remove_file(&p);
    bad(
        &["run", "--rate", "0", "--requests-out", p.to_str().unwrap()],
        &["--rate"],
    );
    assert!(!p.exists());
    bad(&["run", "--requests", "0"], &["--requests"]);
    bad(&["run", "--prompt-cv", "-0.5"], &["--prompt-cv"]);
    bad(&["run", "--tpot-slo", "0"], &["--tpot-slo"]);
    bad(&["run", "--decode", "0"], &["--decode"]);
    bad(
        &[
            "run",
            "--model",
            "llama3-70b",
            "--devices-per-instance",
            "1",
        ],
        &["--model", "does not fit"],
    );
    bad(&["run", "--power-cap", "50"], &["--power-cap", "idle"]);
    bad(&["run", "--device", "tpu"], &["tpu", "h100"]);
    bad(
        &["run", "--link", "smoke-signals"],
        &["smoke-signals", "ib-ndr"],
    );
    bad(&["run", "--preset", "nope"], &["nope", "eth25g-14rps"]);
    bad(&["run", "--kv-compress", "zip"], &["zip", "fp8"]);
    bad(&["run", "--kv-compress-at", "moon"], &["moon", "transit"]);
    bad(&["run", "--mode", "hybrid"], &["hybrid", "colocated"]);
    bad(
        &["run", "--requests-out", "/no/such/dir/x.csv"],
        &["/no/such/dir"],
    );
}

/// A command's own flags (`--json`, `--requests-out`) are listed under "Options", not under the
/// last heading of the scenario flags ("Custom device"), in `run` and `handoff`.
#[test]
fn own_flags_are_not_listed_under_a_scenario_heading() {
    for (cmd, own) in [("run", "--requests-out"), ("handoff", "--json")] {
        let help = ok_text(&[cmd, "--help"]);
        let mut heading = "";
        for line in help.lines() {
            if !line.starts_with(' ') && line.ends_with(':') {
                heading = line;
            }
            if line.trim_start().starts_with(own) {
                assert_eq!(
                    heading, "Options:",
                    "{cmd} --help lists {own} under {heading}"
                );
            }
        }
    }
}

/// `text` with each `"key": new` of the JSON echo put back to `"key": old` (pretty-printed
/// scenario keys, one per line).
/// `text` (a pretty-printed run document) without the echo lines of `keys` at their given values:
/// at their defaults the lever keys are left out of the echo, so a run that does not use them
/// prints what it printed before they existed.
fn echo_restored(text: &str, keys: &[(&str, &str, &str)]) -> String {
    let mut t = text.to_string();
    for (k, new, default) in keys {
        let from = format!("    \"{k}\": {new},\n");
        assert_eq!(t.matches(&from).count(), 1, "{from}");
        let to = if disagg_sim::options::quiet_default_keys().any(|q| q == *k) {
            String::new()
        } else {
            format!("    \"{k}\": {default},\n")
        };
        t = t.replace(&from, &to);
    }
    t
}

#[test]
fn inert_scheduling_settings_leave_the_run_byte_identical() {
    // `docs/levers.md#scheduled-instances`: block size, max_seq_len, preemption mode, host link and the
    // speculative parameters without --speculative switch nothing on. The run's output is the
    // plain run's byte for byte, but for the echo of the options given.
    let inert: [(&str, &str, &str, &str); 7] = [
        // (flag, value, JSON as echoed, default JSON)
        ("--kv-block-size", "32", "32", "16"),
        ("--max-seq-len", "1024", "1024", "2048"),
        ("--preemption", "swap", "\"swap\"", "\"recompute\""),
        ("--host-link", "pcie4", "\"pcie4\"", "\"pcie5\""),
        ("--gamma", "5", "5", "3"),
        ("--alpha", "0.25", "0.25", "0.7"),
        ("--spec-seed", "9", "9", "0"),
    ];
    for mode in ["disagg", "colocated"] {
        let base = [
            "run",
            "--json",
            "--requests",
            "60",
            "--mode",
            mode,
            "--fast",
        ];
        let plain = ok_text(&base);
        // The brief's case: --kv-block-size 32 alone.
        let one = ok_text(&[&base[..], &["--kv-block-size", "32"]].concat());
        assert_ne!(one, plain, "the echo shows the block size");
        assert_eq!(
            echo_restored(&one, &[("kv_block_size", "32", "16")]),
            plain,
            "{mode}"
        );
        // All of them at once, and the per-request CSV.
        let csv_plain = tmp(&format!("inert-plain-{mode}.csv"));
        let csv_inert = tmp(&format!("inert-all-{mode}.csv"));
        let plain =
            ok_text(&[&base[..], &["--requests-out", csv_plain.to_str().unwrap()]].concat());
        let mut args: Vec<&str> = base.to_vec();
        args.extend(["--requests-out", csv_inert.to_str().unwrap()]);
        for (flag, v, _, _) in &inert {
            args.extend([*flag, *v]);
        }
        let all = ok_text(&args);
        let keys: Vec<(String, &str, &str)> = inert
            .iter()
            .map(|(flag, _, new, old)| (flag[2..].replace('-', "_"), *new, *old))
            .collect();
        let keys: Vec<(&str, &str, &str)> =
            keys.iter().map(|(k, n, o)| (k.as_str(), *n, *o)).collect();
        assert_eq!(echo_restored(&all, &keys), plain, "{mode}");
        assert_eq!(
            std::fs::read(&csv_inert).unwrap(),
            std::fs::read(&csv_plain).unwrap(),
            "{mode}"
        );
    }
}

#[test]
fn scheduling_lever_keys_in_a_scenario_file_and_a_sweep() {
    // A scenario file with every lever key at a value that leaves the levers off reads as the
    // flags do: the echo shows them, the run is the plain one.
    let p = tmp("levers.toml");
    std::fs::write(
        &p,
        "batch_policy = \"prefill-priority\"\nkv_policy = \"oracle\"\nkv_block_size = 32\n\
         max_seq_len = 1024\npreemption = \"swap\"\nhost_link = \"pcie4\"\nprefix_caching = false\n\
         gamma = 5\nalpha = 0.25\nspec_seed = 9\nrequests = 60\nfast = true\n",
    )
    .unwrap();
    let file = ok_json(&["run", "--config", p.to_str().unwrap(), "--json"]);
    let flags = ok_json(&[
        "run",
        "--json",
        "--requests",
        "60",
        "--fast",
        "--kv-block-size",
        "32",
        "--max-seq-len",
        "1024",
        "--preemption",
        "swap",
        "--host-link",
        "pcie4",
        "--gamma",
        "5",
        "--alpha",
        "0.25",
        "--spec-seed",
        "9",
    ]);
    assert_eq!(file, flags);
    let sc = &file["scenario"];
    // At their defaults the lever keys are left out of the echo.
    assert_eq!(sc.get("batch_policy"), None);
    assert_eq!(sc.get("max_num_batched_tokens"), None);
    assert_eq!(sc.get("kv_policy"), None);
    assert_eq!(sc["kv_block_size"], 32);
    assert_eq!(sc["max_seq_len"], 1024);
    assert_eq!(sc["preemption"], "swap");
    assert_eq!(sc["host_link"], "pcie4");
    assert_eq!(sc.get("prefix_caching"), None);
    assert_eq!(sc.get("speculative"), None);
    assert_eq!(sc["gamma"], 5);
    assert_eq!(sc["alpha"], 0.25);
    assert_eq!(sc["spec_seed"], 9);
    let plain = ok_json(&["run", "--json", "--requests", "60", "--fast"]);
    assert_eq!(file["summary"], plain["summary"]);
    // A sweep over an inert lever key: both runs are the plain run.
    let out = ok_text(&[
        "sweep",
        "--vary",
        "kv_block_size=16,64",
        "--requests",
        "60",
        "--fast",
        "--jsonl",
        "-",
        "--quiet",
    ]);
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    for (r, bs) in rows.iter().zip([16, 64]) {
        assert_eq!(r["axes"]["kv_block_size"], bs, "{r}");
        // The echo leaves a lever key out at its default.
        let echoed = r["scenario"].get("kv_block_size");
        assert_eq!(
            echoed,
            (bs != 16).then(|| serde_json::json!(bs)).as_ref(),
            "{r}"
        );
        assert_eq!(r["summary"], plain["summary"]);
    }
}

#[test]
fn help_lists_the_scheduling_levers_under_their_heading() {
    for cmd in ["run", "compare", "sweep", "plan"] {
        let help = ok_text(&[cmd, "--help"]);
        let start = help
            .find("\nScheduling and KV memory:\n")
            .unwrap_or_else(|| panic!("{cmd}: no heading"));
        let section = &help[start + 1..];
        // The section ends at the next heading (a line that starts without indentation).
        let end = section[1..].find("\n\n").map_or(section.len(), |i| i + 1);
        let section = &section[..end];
        for flag in [
            "--batch-policy",
            "--max-num-batched-tokens",
            "--kv-policy",
            "--kv-block-size",
            "--max-seq-len",
            "--preemption",
            "--host-link",
            "--prefix-caching",
            "--speculative",
            "--gamma",
            "--alpha",
            "--spec-seed",
        ] {
            assert!(
                section.contains(&format!("{flag} ")) || section.contains(&format!("{flag}\n")),
                "{cmd}: {flag} not under the heading:\n{section}"
            );
        }
        assert!(section.contains("[prefill-priority]"), "{section}");
        assert!(section.contains("[pcie5]"), "{section}");
    }
}

#[test]
fn the_hit_rate_presets_are_results_md_21s_runs() {
    // levers-results.json section_21.hit_rate_vs_latency, the 1024-token row (4 system prompts,
    // 600 one-turn sessions at 3.191262364481256/s, Mistral-7B on one A100): every value
    // full-precision from the reference, compared with ==.
    for (preset, ttft_p50, ttft_p99, tok_s, req_s, j_tok, horizon, computed, hit) in [
        (
            "prefix-sys1024-off",
            0.147141681663296,
            0.734072754320028,
            391.4984724970718,
            3.0718210451064234,
            0.6268938641299878,
            195.32387830854677,
            913351,
            None,
        ),
        (
            "prefix-sys1024-on",
            0.046140300511240184,
            0.18610891053349748,
            391.6936609047912,
            3.0733525551906618,
            0.5137452990291554,
            195.22654470169556,
            303047,
            Some(0.6682031332970567),
        ),
    ] {
        let s = &ok_json(&["run", "--preset", preset, "--json"])["summary"];
        assert_eq!(f(&s["ttft_s"]["p50"]), ttft_p50, "{preset}");
        assert_eq!(f(&s["ttft_s"]["p99"]), ttft_p99, "{preset}");
        assert_eq!(f(&s["throughput_tok_s"]), tok_s, "{preset}");
        assert_eq!(f(&s["throughput_rps"]), req_s, "{preset}");
        assert_eq!(f(&s["j_per_token"]), j_tok, "{preset}");
        assert_eq!(f(&s["horizon_s"]), horizon, "{preset}");
        let sched = &s["scheduler"];
        assert_eq!(sched["computed_prefill_tokens"], computed, "{preset}");
        match hit {
            Some(h) => assert_eq!(f(&sched["prefix_cache"]["hit_rate"]), h, "{preset}"),
            None => assert!(
                sched.get("prefix_cache").is_none_or(Value::is_null),
                "{preset}"
            ),
        }
    }
}

#[test]
fn a_batch_policy_sweep_runs_the_scheduled_and_the_plain_instance() {
    let base = [
        "--mode",
        "colocated",
        "--requests",
        "60",
        "--model",
        "llama3-8b",
    ];
    let out = ok_text(
        &[
            &["sweep", "--vary", "batch_policy=chunked,prefill-priority"][..],
            &base,
            &["--jsonl", "-", "--quiet"],
        ]
        .concat(),
    );
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    let plain = ok_json(&[&["run", "--json"][..], &base].concat());
    let chunked = ok_json(&[&["run", "--json", "--batch-policy", "chunked"][..], &base].concat());
    // Chunked runs the scheduled instance (its scheduler block says so); prefill-priority with
    // no budget given is the plain instance, byte for byte.
    assert_eq!(rows[0]["scenario"]["batch_policy"], "chunked");
    assert_eq!(rows[0]["summary"], chunked["summary"]);
    assert_eq!(rows[0]["summary"]["scheduler"]["batch_policy"], "chunked");
    assert_eq!(rows[0]["summary"]["scheduler"]["token_budget"], 8192);
    assert_eq!(
        rows[1]["scenario"].get("batch_policy"),
        None,
        "left out at its default"
    );
    assert_eq!(rows[1]["summary"], plain["summary"]);
    assert!(plain["summary"].get("scheduler").is_none_or(Value::is_null));
    assert_ne!(rows[0]["summary"], rows[1]["summary"]);
}

#[test]
fn fast_is_accepted_and_changes_nothing_with_the_levers_in_colocated_mode() {
    // `docs/levers.md#scheduled-instances` item 8: there is no colocated fast path, so --fast has no effect.
    let base = [
        "run",
        "--json",
        "--mode",
        "colocated",
        "--model",
        "llama3-8b",
        "--requests",
        "80",
        "--kv-policy",
        "paged",
        "--batch-policy",
        "chunked",
        "--max-num-batched-tokens",
        "512",
    ];
    let plain = ok_text(&base);
    let fast = ok_text(&[&base[..], &["--fast"]].concat());
    assert_eq!(
        echo_restored(&fast, &[("fast", "true", "false")]),
        plain,
        "only the echo of --fast differs"
    );
}
