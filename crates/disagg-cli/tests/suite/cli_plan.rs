//! `disagg plan` against brute force on a small grid, and its bad input.

use crate::common;
#[allow(unused_imports)]
use common::*;

#[test]
fn target_rate_matches_brute_force() {
    let base = ["--preset", "link-eth-25g", "--requests", "300"];
    let mut args = vec!["plan"];
    args.extend(base);
    args.extend([
        "--target-rate",
        "12",
        "--prefill-counts",
        "1-2",
        "--decode-counts",
        "1,2",
        "--prefill-devices",
        "h100,a100",
        "--decode-devices",
        "h100,a100",
        "--compressions",
        "none,fp8",
        "--colocated",
        "no",
        "--json",
    ]);
    let plan = ok_json(&args);
    assert_eq!(plan["search"], "ci");
    let prices = plan["prices_usd_per_hour"].as_object().unwrap().clone();
    let kwh = plan["energy_usd_per_kwh"].as_f64().unwrap();
    let cands = plan["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 2 * 2 * 2 * 2 * 2);
    let mut best: Option<(f64, f64, usize)> = None;
    for c in cands {
        let (p, d) = (c["prefill"].to_string(), c["decode"].to_string());
        let (pd, dd) = (
            c["prefill_device"].as_str().unwrap(),
            c["decode_device"].as_str().unwrap(),
        );
        let comp = c["compression"].as_str().unwrap();
        let mut run = vec!["run"];
        run.extend(base);
        run.extend([
            "--rate",
            "12",
            "--prefill",
            &p,
            "--decode",
            &d,
            "--prefill-device",
            pd,
            "--decode-device",
            dd,
            "--json",
        ]);
        if comp != "none" {
            run.extend(["--kv-compress", comp]);
        }
        let s = ok_json(&run)["summary"].clone();
        let att = s["slo_attainment"].as_f64().unwrap();
        // The plan's rule (a 95% interval for runs near the target, `--search ci`).
        let feasible = match c["status"].as_str().unwrap() {
            "pruned" => att >= 0.9,
            _ => plan_feasible(&plan, c, att),
        };
        let n = |x: &str| x.parse::<f64>().unwrap();
        let gpu = n(&p) * prices[pd].as_f64().unwrap()
            + n(&d) * prices[dd].as_f64().unwrap()
            + (n(&p) + n(&d)) * prices["eth-25g"].as_f64().unwrap();
        let cost = gpu + s["avg_power_w"].as_f64().unwrap() / 1000.0 * kwh;
        let lat = s["e2e_s"]["p99"].as_f64().unwrap();
        match c["status"].as_str().unwrap() {
            "pruned" => assert!(!feasible, "pruned a feasible candidate: {c}"),
            "feasible" => {
                assert!(feasible);
                assert_eq!(c["usd_per_hour"].as_f64(), Some(cost));
                assert_eq!(c["latency_p99_s"].as_f64(), Some(lat));
            }
            "infeasible" => assert!(!feasible),
            other => panic!("unexpected status {other}"),
        }
        if feasible {
            let i = c["index"].as_u64().unwrap() as usize;
            let better = match best {
                None => true,
                Some((bc, bl, bi)) => (cost, lat, i) < (bc, bl, bi),
            };
            if better {
                best = Some((cost, lat, i));
            }
        }
    }
    let (_, _, bi) = best.expect("something is feasible at 12 req/s");
    assert_eq!(plan["best"].as_u64(), Some(bi as u64));
    assert!(plan["pareto"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x.as_u64() == Some(bi as u64)));
}

#[test]
fn max_rate_bisection() {
    let v = ok_json(&[
        "plan",
        "--preset",
        "link-ib-ndr",
        "--requests",
        "300",
        "--max-rate",
        "--search",
        "bisect",
        "--json",
    ]);
    let r = v["max_rate_rps"].as_f64().unwrap();
    let (lo, hi) = (
        v["bracket_rps"][0].as_f64().unwrap(),
        v["bracket_rps"][1].as_f64().unwrap(),
    );
    assert_eq!(r, lo);
    assert!(hi - lo <= 0.02 * hi);
    // It meets the target at the answer and not at the top of the bracket.
    let at = |rate: f64| {
        let s = rate.to_string();
        ok_json(&[
            "run",
            "--preset",
            "link-ib-ndr",
            "--requests",
            "300",
            "--rate",
            &s,
            "--json",
        ])["summary"]["slo_attainment"]
            .as_f64()
            .unwrap()
    };
    assert!(at(lo) >= 0.9);
    assert!(at(hi) < 0.9);
}

#[test]
fn plan_bad_input() {
    bad(&["plan"], &["--max-rate", "--target-rate"]);
    // A scheduling lever with the fast decode path in disaggregated mode: every candidate is
    // refused by the same check, which is reported (not an empty plan).
    bad(
        &[
            "plan",
            "--preset",
            "link-ib-ndr",
            "--target-rate",
            "16",
            "--batch-policy",
            "chunked",
            "--colocated",
            "no",
            "--quiet",
        ],
        &["every one of the", "--fast", "scheduling levers"],
    );
    bad(&["plan", "--target-rate", "0"], &["--target-rate"]);
    bad(
        &["plan", "--target-rate", "4", "--prefill-counts", "0-3"],
        &["--prefill-counts"],
    );
    bad(
        &["plan", "--target-rate", "4", "--decode-devices", "tpu"],
        &["tpu", "h100"],
    );
    bad(
        &["plan", "--target-rate", "4", "--links", "smoke"],
        &["smoke"],
    );
    bad(
        &["plan", "--target-rate", "4", "--price", "h100=-1"],
        &["--price"],
    );
    bad(
        &["plan", "--target-rate", "4", "--price", "tpu=1"],
        &["tpu"],
    );
    bad(
        &["plan", "--target-rate", "4", "--slo-target", "1.5"],
        &["--slo-target"],
    );
    bad(
        &["plan", "--target-rate", "4", "--latency", "vibes"],
        &["vibes", "e2e"],
    );
}
