//! `disagg plan --target-rate` with the layout axes (`--layouts`, `--prefill-layouts`,
//! `--decode-layouts`) and the format axis (`--formats`): every candidate against the `disagg run`
//! of the same configuration, the columns that appear only with the axes, the candidate count
//! guard and bad items.

use crate::common;
#[allow(unused_imports)]
use common::*;

use serde_json::Value;

/// `TPxPP` as (tp, pp).
fn layout(s: &str) -> (u32, u32) {
    let (t, p) = s.split_once('x').expect("TPxPP");
    (t.parse().unwrap(), p.parse().unwrap())
}

/// Checks every candidate of `plan` (run with `base` scenario flags at `rate`) against
/// `disagg run` of the same configuration, the pool flags coming from `extra(candidate)`;
/// `devices(candidate)` gives the devices per (prefill, decode) instance. Returns the index of
/// the cheapest feasible candidate (cost, then latency, then index).
fn check_against_runs(
    plan: &Value,
    base: &[&str],
    rate: &str,
    extra: impl Fn(&Value) -> Vec<String>,
    devices: impl Fn(&Value) -> (f64, f64),
) -> Option<usize> {
    let prices = plan["prices_usd_per_hour"].as_object().unwrap().clone();
    let kwh = plan["energy_usd_per_kwh"].as_f64().unwrap();
    let mut best: Option<(f64, f64, usize)> = None;
    for c in plan["candidates"].as_array().unwrap() {
        let (p, d) = (c["prefill"].to_string(), c["decode"].to_string());
        let (pd, dd) = (
            c["prefill_device"].as_str().unwrap(),
            c["decode_device"].as_str().unwrap(),
        );
        let link = c["link"].as_str().unwrap();
        let mut run: Vec<String> = ["run"].iter().chain(base).map(|s| s.to_string()).collect();
        for x in [
            "--rate",
            rate,
            "--prefill",
            &p,
            "--decode",
            &d,
            "--prefill-device",
            pd,
            "--decode-device",
            dd,
            "--json",
        ] {
            run.push(x.to_string());
        }
        run.extend(extra(c));
        let args: Vec<&str> = run.iter().map(String::as_str).collect();
        let o = disagg(&args);
        if c["status"] == "invalid" {
            // The run refuses the configuration with the candidate's reason.
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            let why = c["reason"].as_str().unwrap();
            assert!(err.contains(why), "{args:?}: '{why}' not in {err}");
            continue;
        }
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let s = serde_json::from_slice::<Value>(&o.stdout).unwrap()["summary"].clone();
        let feasible = match c["status"].as_str().unwrap() {
            "pruned" => s["slo_attainment"].as_f64().unwrap() >= 0.9,
            _ => plan_feasible(plan, c, s["slo_attainment"].as_f64().unwrap()),
        };
        let n = |x: &str| x.parse::<f64>().unwrap();
        let (pn, dn) = devices(c);
        // GPUs: instances x devices per instance x price per GPU; one link port per instance.
        let gpu = n(&p) * pn * prices[pd].as_f64().unwrap()
            + n(&d) * dn * prices[dd].as_f64().unwrap()
            + (n(&p) + n(&d)) * prices[link].as_f64().unwrap();
        assert_eq!(c["gpu_usd_per_hour"].as_f64(), Some(gpu), "{c}");
        let cost = gpu + s["avg_power_w"].as_f64().unwrap() / 1000.0 * kwh;
        let lat = s["e2e_s"]["p99"].as_f64().unwrap();
        match c["status"].as_str().unwrap() {
            "pruned" => assert!(!feasible, "pruned a feasible candidate: {c}"),
            "feasible" => {
                assert!(feasible, "{c}");
                assert_eq!(c["usd_per_hour"].as_f64(), Some(cost), "{c}");
                assert_eq!(c["latency_p99_s"].as_f64(), Some(lat), "{c}");
            }
            "infeasible" => assert!(!feasible, "{c}"),
            other => panic!("unexpected status {other}"),
        }
        if feasible {
            let i = c["index"].as_u64().unwrap() as usize;
            if best.is_none_or(|b| (cost, lat, i) < b) {
                best = Some((cost, lat, i));
            }
        }
    }
    best.map(|b| b.2)
}

#[test]
fn layout_axis_matches_runs_and_changes_the_ranking() {
    let base = ["--model", "llama3-8b", "--requests", "200"];
    let grid = [
        "--target-rate",
        "4",
        "--prefill-counts",
        "1,2",
        "--decode-counts",
        "1",
        "--colocated",
        "no",
        "--quiet",
        "--json",
    ];
    let mut args = vec!["plan"];
    args.extend(base);
    args.extend(grid);
    let plain = ok_json(&args);
    args.extend(["--layouts", "1x1,2x1"]);
    let plan = ok_json(&args);
    // 2 prefill counts x 1 decode count x 2 x 2 devices x 2 x 2 layouts.
    assert_eq!(plan["candidates_total"], 32);
    assert_eq!(plain["candidates_total"], 8);
    let cands = plan["candidates"].as_array().unwrap();
    // The decode layout varies fastest, then the prefill layout, then the decode device.
    let lays: Vec<(&str, &str)> = cands[..5]
        .iter()
        .map(|c| {
            (
                c["prefill_layout"].as_str().unwrap(),
                c["decode_layout"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lays,
        [
            ("1x1", "1x1"),
            ("1x1", "2x1"),
            ("2x1", "1x1"),
            ("2x1", "2x1"),
            ("1x1", "1x1")
        ]
    );
    assert_eq!(cands[3]["decode_device"], "h100");
    assert_eq!(cands[4]["decode_device"], "a100");
    // Without the axis the JSON has no layout or format fields.
    for c in plain["candidates"].as_array().unwrap() {
        for k in ["prefill_layout", "decode_layout", "formats"] {
            assert!(c.get(k).is_none(), "{k} in {c}");
        }
    }
    let flags = |c: &Value| {
        let mut v = vec![];
        for (pool, key) in [("prefill", "prefill_layout"), ("decode", "decode_layout")] {
            let (tp, pp) = layout(c[key].as_str().unwrap());
            v.extend([
                format!("--{pool}-tp"),
                tp.to_string(),
                format!("--{pool}-pp"),
                pp.to_string(),
                format!("--{pool}-devices-per-instance"),
                (tp * pp).to_string(),
            ]);
        }
        v
    };
    let devices = |c: &Value| {
        let n = |k: &str| {
            let (tp, pp) = layout(c[k].as_str().unwrap());
            (tp * pp) as f64
        };
        (n("prefill_layout"), n("decode_layout"))
    };
    let best = check_against_runs(&plan, &base, "4", flags, devices).expect("a feasible one");
    assert_eq!(plan["best"].as_u64(), Some(best as u64));
    // Without the axis every instance has the scenario's 4 devices.
    let plain_best =
        check_against_runs(&plain, &base, "4", |_| vec![], |_| (4.0, 4.0)).expect("a feasible one");
    assert_eq!(plain["best"].as_u64(), Some(plain_best as u64));
    // The axis changes the ranking: the cheapest configuration now has smaller instances and
    // costs less than the cheapest of the scenario's own 4-device instances.
    let b = &cands[best];
    let (pn, dn) = devices(b);
    assert!(pn < 4.0 && dn < 4.0, "{b}");
    let plain_cost = plain["candidates"][plain_best]["usd_per_hour"]
        .as_f64()
        .unwrap();
    assert!(b["usd_per_hour"].as_f64().unwrap() < plain_cost, "{b}");
}

#[test]
fn one_pool_layout_axis_leaves_the_other_pool_as_given() {
    // The scenario's own layout of the pool without an axis: null without one, `TPxPP` with one.
    let run = |extra: &[&str]| {
        let mut a = vec![
            "plan",
            "--requests",
            "100",
            "--target-rate",
            "3",
            "--prefill-counts",
            "1",
            "--decode-counts",
            "1",
            "--prefill-devices",
            "h100",
            "--decode-devices",
            "h100",
            "--colocated",
            "no",
            "--quiet",
            "--json",
        ];
        a.extend(extra);
        ok_json(&a)
    };
    let plan = run(&["--decode-layouts", "1x1,1x128,4x1"]);
    let cands = plan["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 3);
    for c in cands {
        assert_eq!(c["prefill_layout"], Value::Null, "{c}");
        assert!(c.get("formats").is_none());
    }
    // Llama-3-70B: 141.1 GB of weights do not fit one H100; 80 layers are not 128 stages.
    assert_eq!(cands[0]["status"], "invalid");
    assert!(cands[0]["reason"]
        .as_str()
        .unwrap()
        .contains("Llama-3-70B does not fit"));
    assert_eq!(cands[1]["status"], "invalid");
    assert_eq!(
        cands[1]["reason"],
        "decode pool: Llama-3-70B has 80 layers: not divisible into 128 stages"
    );
    assert_eq!(cands[2]["status"], "feasible");
    assert_eq!(plan["invalid"], 2);
    // The scenario's global layout is the prefill pool's.
    let plan = run(&[
        "--tp",
        "2",
        "--pp",
        "2",
        "--devices-per-instance",
        "4",
        "--decode-layouts",
        "4x1",
    ]);
    let c = &plan["candidates"][0];
    assert_eq!(c["prefill_layout"], "2x2");
    assert_eq!(c["decode_layout"], "4x1");
    // --decode-layouts overrides --layouts for its pool.
    let plan = run(&["--layouts", "4x1,8x1", "--decode-layouts", "2x2"]);
    let got: Vec<(&str, &str)> = plan["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["prefill_layout"].as_str().unwrap(),
                c["decode_layout"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, [("4x1", "2x2"), ("8x1", "2x2")]);
}

#[test]
fn format_axis_marks_a100_fp8_compute_invalid() {
    let base = ["--requests", "200"];
    let mut args = vec!["plan"];
    args.extend(base);
    args.extend([
        "--target-rate",
        "3",
        "--prefill-counts",
        "1",
        "--decode-counts",
        "1",
        "--colocated",
        "no",
        "--quiet",
        "--json",
    ]);
    let plain = ok_json(&args);
    args.extend(["--formats", "bf16, fp8,fp8/fp8/bf16"]);
    let plan = ok_json(&args);
    // 2 x 2 devices x 3 formats; the formats vary fastest.
    assert_eq!(plan["candidates_total"], 12);
    let cands = plan["candidates"].as_array().unwrap();
    let fmts = ["bf16/bf16/bf16", "fp8/fp8/fp8", "fp8/fp8/bf16"];
    let pairs = [
        ("h100", "h100"),
        ("h100", "a100"),
        ("a100", "h100"),
        ("a100", "a100"),
    ];
    for (i, c) in cands.iter().enumerate() {
        assert_eq!(c["formats"], fmts[i % 3], "{c}");
        assert_eq!(c["prefill_device"], pairs[i / 3].0);
        assert_eq!(c["decode_device"], pairs[i / 3].1);
        assert!(c.get("prefill_layout").is_none());
        // FP8 matmuls need FP8 units, which the A100 lacks; weight-only FP8 runs anywhere.
        let a100_fp8 = i % 3 == 1 && i / 3 > 0;
        assert_eq!(c["status"] == "invalid", a100_fp8, "{c}");
    }
    let no_fp8 = |pool: &str| {
        format!(
            "{pool} pool: A100-SXM has no fp8 units (use compute_format='bf16' for weight-only fp8)"
        )
    };
    // (h100, a100): the decode pool; an A100 prefill pool is checked first.
    assert_eq!(cands[4]["reason"], no_fp8("decode").as_str());
    assert_eq!(cands[7]["reason"], no_fp8("prefill").as_str());
    assert_eq!(cands[10]["reason"], no_fp8("prefill").as_str());
    assert_eq!(plan["invalid"], 3);
    // `bf16` is no quantisation: those candidates are the plain plan's, number for number.
    for (k, c) in plain["candidates"].as_array().unwrap().iter().enumerate() {
        let q = &cands[3 * k];
        for key in [
            "status",
            "ceiling_rps",
            "slo_attainment",
            "latency_p99_s",
            "usd_per_hour",
            "usd_per_mtok",
        ] {
            assert_eq!(q[key], c[key], "{key}: {q} against {c}");
        }
    }
    let flags = |c: &Value| {
        let f: Vec<&str> = c["formats"].as_str().unwrap().split('/').collect();
        vec![
            "--weight-format".to_string(),
            f[0].to_string(),
            "--kv-format".to_string(),
            f[1].to_string(),
            "--compute-format".to_string(),
            f[2].to_string(),
        ]
    };
    let best = check_against_runs(&plan, &base, "3", flags, |_| (4.0, 4.0));
    assert_eq!(plan["best"].as_u64(), best.map(|b| b as u64));
}

#[test]
fn kv_format_with_compression_is_invalid_with_the_reason() {
    let plan = ok_json(&[
        "plan",
        "--requests",
        "100",
        "--target-rate",
        "3",
        "--prefill-counts",
        "1",
        "--decode-counts",
        "1",
        "--prefill-devices",
        "h100",
        "--decode-devices",
        "h100",
        "--compressions",
        "none,fp8",
        "--formats",
        "bf16/fp8/bf16",
        "--quiet",
        "--json",
    ]);
    let c = &plan["candidates"];
    assert_eq!(c[0]["status"], "feasible");
    assert_eq!(c[1]["status"], "invalid");
    assert_eq!(
        c[1]["reason"],
        "--kv-format: KV hand-off compression assumes a BF16 KV cache: not with kv_format != 'bf16'"
    );
}

#[test]
fn columns_appear_only_with_their_axes() {
    let run = |extra: &[&str]| {
        let mut a = vec![
            "plan",
            "--model",
            "llama3-8b",
            "--requests",
            "100",
            "--target-rate",
            "2",
            "--prefill-counts",
            "1",
            "--decode-counts",
            "1",
            "--prefill-devices",
            "h100",
            "--decode-devices",
            "h100",
            "--colocated",
            "no",
            "--quiet",
        ];
        a.extend(extra);
        ok_text(&a)
    };
    let header = |t: &str| t.lines().nth(2).unwrap().to_string();
    assert_eq!(
        header(&run(&[])),
        "rank   P   D prefill   decode    link         compression     SLO %  e2e p99 ms    $/hour    $/Mtok   pareto  SLO 95% CI"
    );
    let t = run(&["--decode-layouts", "1x1"]);
    assert_eq!(
        header(&t),
        "rank   P   D prefill   decode    P layout D layout link         compression     SLO %  e2e p99 ms    $/hour    $/Mtok   pareto  SLO 95% CI"
    );
    let row = t.lines().nth(3).unwrap();
    assert!(
        row.starts_with("   1   1   1 h100      h100      -        1x1      ib-ndr       none   "),
        "{row}"
    );
    // The frontier names the layout of the pool that has one.
    assert!(
        t.contains("   1P h100 + 1D h100 1x1, ib-ndr, none\n"),
        "{t}"
    );
    let t = run(&["--formats", "int4/fp8/bf16"]);
    assert_eq!(
        header(&t),
        "rank   P   D prefill   decode    link         compression  formats           SLO %  e2e p99 ms    $/hour    $/Mtok   pareto  SLO 95% CI"
    );
    let row = t.lines().nth(3).unwrap();
    assert!(
        row.starts_with(
            "   1   1   1 h100      h100      ib-ndr       none         int4/fp8/bf16    "
        ),
        "{row}"
    );
    assert!(
        t.contains("   1P h100 + 1D h100, ib-ndr, none, int4/fp8/bf16\n"),
        "{t}"
    );
}

#[test]
fn the_count_guard_includes_the_new_axes() {
    let thirteen = "1x1,2x1,3x1,4x1,5x1,6x1,7x1,8x1,1x2,2x2,3x2,4x2,1x4";
    // The default grid: 4 prefill x 4 decode counts x 2 x 2 devices = 64; 13 layouts in each
    // pool: 64 x 13 x 13 = 10816 > 10000.
    bad(
        &[
            "plan",
            "--target-rate",
            "2",
            "--colocated",
            "no",
            "--layouts",
            thirteen,
        ],
        &[
            "10816 candidates",
            "the device, layout, link or compression lists",
            "--yes",
        ],
    );
    // 64 x 13 (one pool) x 13 = 10816 again, with the pools' own lists.
    bad(
        &[
            "plan",
            "--target-rate",
            "2",
            "--colocated",
            "no",
            "--prefill-layouts",
            thirteen,
            "--decode-layouts",
            thirteen,
        ],
        &["10816 candidates"],
    );
    // 64 x 5 formats x 6 x 6 layouts = 11520.
    bad(
        &[
            "plan",
            "--target-rate",
            "2",
            "--colocated",
            "no",
            "--formats",
            "bf16,fp8,int8,int4,fp4",
            "--layouts",
            "1x1,2x1,4x1,8x1,2x2,4x2",
        ],
        &[
            "11520 candidates",
            "the device, layout, link, compression or format lists",
        ],
    );
    // 64 x 64 counts x 2 x 2 devices x 5 formats = 81920.
    bad(
        &[
            "plan",
            "--target-rate",
            "2",
            "--colocated",
            "no",
            "--prefill-counts",
            "1-64",
            "--decode-counts",
            "1-64",
            "--formats",
            "bf16,fp8,int8,int4,fp4",
        ],
        &[
            "81920 candidates",
            "the device, link, compression or format lists",
        ],
    );
    // Colocated candidates (the default) are counted and named: 64 x 13 x 13 disaggregated
    // and 2 devices x 7 totals P + D (2..8) x 13 layouts = 182 colocated.
    bad(
        &["plan", "--target-rate", "2", "--layouts", thirteen],
        &[
            "10998 candidates",
            "the device, layout, link or compression lists, drop the 182 colocated ones \
             (--colocated no), or add --yes",
        ],
    );
    // Without the new axes, the message is as before.
    bad(
        &[
            "plan",
            "--target-rate",
            "2",
            "--colocated",
            "no",
            "--prefill-counts",
            "1-64",
            "--decode-counts",
            "1-64",
        ],
        &["16384 candidates", "the device, link or compression lists"],
    );
}

#[test]
fn bad_layout_and_format_items() {
    for (flag, item) in [
        ("--layouts", "4x"),
        ("--layouts", "0x1"),
        ("--prefill-layouts", "x2"),
        ("--decode-layouts", "2x2x2"),
        ("--layouts", "2048x1"),
    ] {
        let list = format!("4x1,{item}");
        bad(
            &["plan", "--target-rate", "2", flag, &list],
            &[
                &format!("{flag}: '{item}'"),
                "TPxPP",
                "at least 1",
                "1024 devices",
                "4x1,2x2,8x1",
            ],
        );
    }
    bad(
        &[
            "plan",
            "--target-rate",
            "2",
            "--formats",
            "bf16,fp9/bf16/bf16",
        ],
        &[
            "--formats: 'fp9/bf16/bf16': unknown format 'fp9'",
            "valid: bf16, fp8, int8, int4, fp4",
        ],
    );
    bad(
        &["plan", "--target-rate", "2", "--formats", "fp8/bf16"],
        &["--formats: 'fp8/bf16': expected W/KV/C", "bf16, fp8"],
    );
    bad(
        &["plan", "--target-rate", "2", "--layouts", "4x1,,2x2"],
        &["--layouts", "empty item"],
    );
    // The axes are --target-rate's: not with --max-rate.
    for flag in [
        "--layouts",
        "--prefill-layouts",
        "--decode-layouts",
        "--formats",
    ] {
        let v = if flag == "--formats" { "fp8" } else { "2x2" };
        bad(
            &["plan", "--max-rate", flag, v],
            &[flag, "cannot be used with", "--max-rate"],
        );
    }
    // Every candidate invalid (FP8 matmuls on A100s only) is a bad input, not an empty plan.
    bad(
        &[
            "plan",
            "--target-rate",
            "2",
            "--prefill-devices",
            "a100",
            "--decode-devices",
            "a100",
            "--formats",
            "fp8",
            "--quiet",
        ],
        // 16 disaggregated and 7 colocated (a100 x 2..8 instances) candidates.
        &["every one of the 23 candidates is invalid", "no fp8 units"],
    );
}
