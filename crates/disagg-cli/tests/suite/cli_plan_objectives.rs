//! `disagg plan --target-rate` with a GPU budget (`--gpus`, `--gpus-per-node`), the colocated
//! baseline (`--colocated`, `--mode colocated`), the objectives (`--objective`), the labelled
//! Pareto chart and device-count shapes for models described by layer kinds.

use crate::common;
#[allow(unused_imports)]
use common::*;

use serde_json::Value;

/// A small plan: llama3-8b, 1 device per instance, 60 requests at 4 req/s, a 2 x 2 grid of
/// counts on h100.
const SMALL: [&str; 17] = [
    "plan",
    "--model",
    "llama3-8b",
    "--devices-per-instance",
    "1",
    "--requests",
    "60",
    "--target-rate",
    "4",
    "--prefill-counts",
    "1-2",
    "--decode-counts",
    "1-2",
    "--prefill-devices",
    "h100",
    "--decode-devices",
    "h100",
];

fn plan(extra: &[&str]) -> Value {
    plan_of(&SMALL, extra)
}

fn plan_of(base: &[&str], extra: &[&str]) -> Value {
    let mut a: Vec<&str> = base.to_vec();
    a.extend(extra);
    a.extend(["--json", "--quiet"]);
    ok_json(&a)
}

fn f(c: &Value, k: &str) -> f64 {
    c[k].as_f64().unwrap_or_else(|| panic!("{k} in {c}"))
}

#[test]
fn every_objective_ranks_with_the_candidate_figures_and_the_colocated_margin() {
    for (obj, higher, measure) in [
        ("cost", false, "usd_per_hour"),
        ("goodput-per-gpu", true, "goodput_per_gpu"),
        ("tokens-per-gpu@100", true, "tokens_per_s_per_gpu"),
        ("min-gpus", false, "gpus"),
        ("pareto", true, "tokens_per_s_per_gpu"),
    ] {
        let doc = plan(&["--colocated", "yes", "--objective", obj]);
        assert_eq!(doc["objective"], obj);
        let cands = doc["candidates"].as_array().unwrap();
        // 4 disaggregated candidates, then colocated ones on h100 with 2, 3 and 4 instances.
        assert_eq!(cands.len(), 7, "{obj}");
        for (i, c) in cands.iter().enumerate() {
            let coloc = i >= 4;
            assert_eq!(c["mode"], if coloc { "colocated" } else { "disagg" });
            let gpus = c["gpus"].as_u64().unwrap();
            let want = if coloc {
                i as u64 - 2
            } else {
                c["prefill"].as_u64().unwrap() + c["decode"].as_u64().unwrap()
            };
            assert_eq!(gpus, want, "{c}");
            assert_eq!(c["status"], "feasible", "{c}");
            let s = c["summary"].clone();
            assert!(s.is_null(), "the summary is not in the JSON");
            assert!(f(c, "goodput_per_gpu") > 0.0);
            assert!(f(c, "tokens_per_s_per_gpu") > 0.0);
            assert!(f(c, "tokens_per_s_per_user") > 0.0);
        }
        let ranked: Vec<usize> = doc["ranked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        assert!(!ranked.is_empty(), "{obj}");
        assert_eq!(doc["best"].as_u64(), Some(ranked[0] as u64));
        // Ranked best first by the measure.
        for w in ranked.windows(2) {
            let (a, b) = (f(&cands[w[0]], measure), f(&cands[w[1]], measure));
            assert!(if higher { a >= b } else { a <= b }, "{obj}: {a} {b}");
        }
        if obj == "tokens-per-gpu@100" {
            assert!(ranked
                .iter()
                .all(|&i| f(&cands[i], "tokens_per_s_per_user") >= 100.0));
        }
        // The margin over the best colocated candidate, from the candidates' own figures.
        let m = &doc["colocated_margin"];
        assert_eq!(m["objective"], obj);
        let b = m["best_colocated"].as_u64().unwrap() as usize;
        assert_eq!(cands[b]["mode"], "colocated");
        let (vw, vc) = (f(&cands[ranked[0]], measure), f(&cands[b], measure));
        let want = if higher {
            (vw - vc) / vc
        } else {
            (vc - vw) / vc
        };
        assert_eq!(f(m, "margin"), want, "{obj}");
    }
}

#[test]
fn the_text_gains_the_objective_columns_and_the_margin_line() {
    let mut a: Vec<&str> = SMALL.to_vec();
    a.extend([
        "--quiet",
        "--colocated",
        "yes",
        "--objective",
        "goodput-per-gpu",
    ]);
    let t = ok_text(&a);
    assert!(
        t.starts_with("7 candidates (3 colocated) at 4 req/s:"),
        "{t}"
    );
    assert!(t.contains("objective: goodput-per-gpu\n"), "{t}");
    assert!(t.contains(" GPUs goodput/GPU  at req/s\n"), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("beats the best colocated plan (")
                || l.starts_with("ties with the best colocated plan (")
                || l.starts_with("the winner is colocated (")),
        "{t}"
    );
    // Colocated candidates are planned by default: the same candidates and margin line.
    let mut a: Vec<&str> = SMALL.to_vec();
    a.extend(["--quiet", "--objective", "goodput-per-gpu"]);
    let d = ok_text(&a);
    assert!(
        d.starts_with("7 candidates (3 colocated) at 4 req/s:"),
        "{d}"
    );
    assert_eq!(d, t);
    // Without them (--colocated no) and the objective: no GPUs column, no objective line.
    let mut a: Vec<&str> = SMALL.to_vec();
    a.extend(["--quiet", "--colocated", "no"]);
    let t = ok_text(&a);
    assert!(t.starts_with("4 candidates at 4 req/s:"), "{t}");
    assert!(
        !t.contains("GPUs") && !t.contains("objective") && !t.contains("colocated"),
        "{t}"
    );
}

#[test]
fn a_budget_skips_larger_candidates_and_names_the_smallest_when_none_fits() {
    let doc = plan(&["--gpus", "3"]);
    assert_eq!(doc["gpu_budget"], 3);
    // 2P + 2D and 4 colocated instances (the default plans them) need 4 GPUs.
    assert_eq!(doc["over_budget"], 2);
    for c in doc["candidates"].as_array().unwrap() {
        if c["gpus"].as_u64().unwrap() > 3 {
            assert_eq!(c["status"], "over-budget");
            assert_eq!(c["reason"], "needs 4 GPUs, over --gpus 3");
            assert!(c["slo_attainment"].is_null(), "not simulated");
        } else {
            assert_eq!(c["status"], "feasible");
        }
    }
    let mut a: Vec<&str> = SMALL.to_vec();
    a.extend(["--quiet", "--gpus", "3"]);
    assert!(ok_text(&a)
        .lines()
        .next()
        .unwrap()
        .ends_with(", 0 invalid, 2 over the budget of 3 GPUs"));
    let mut a: Vec<&str> = SMALL.to_vec();
    a.extend(["--gpus", "1"]);
    bad(
        &a,
        &["--gpus 1: no candidate fits; the smallest needs 2 GPUs (1P h100 + 1D h100)"],
    );
    a.extend(["--mode", "colocated"]);
    bad(
        &a,
        &["--gpus 1: no candidate fits; the smallest needs 2 GPUs (2 x h100)"],
    );
    let mut a: Vec<&str> = SMALL.to_vec();
    a.extend(["--gpus", "0"]);
    bad(
        &a,
        &["--gpus <N>': must be a whole number from 1 to 1000000 GPUs"],
    );
}

#[test]
fn an_instance_must_fit_a_node_or_span_whole_nodes() {
    // 12 devices per instance with 8 per node: invalid, with the reason; 16 spans 2 nodes.
    let one = [
        &SMALL[..9],
        &["--prefill-devices", "h100", "--decode-devices", "h100"],
    ]
    .concat();
    let one = &one[..];
    let doc = plan_of(
        one,
        &[
            "--prefill-counts",
            "1",
            "--decode-counts",
            "1",
            "--layouts",
            "12,16",
        ],
    );
    let cands = doc["candidates"].as_array().unwrap();
    // 2 x 2 disaggregated layouts, then 2 colocated instances of 12 or 16 devices: the rule
    // holds for both.
    assert_eq!(cands.len(), 6);
    assert_eq!(cands[5]["mode"], "colocated");
    for c in cands {
        let l = (c["prefill_layout"].as_str(), c["decode_layout"].as_str());
        if l.0 == Some("12") || l.1 == Some("12") {
            assert_eq!(c["status"], "invalid");
            assert_eq!(
                c["reason"],
                "an instance of 12 devices spans part of a node: with --gpus-per-node 8 an \
                 instance has at most 8 devices or a whole multiple of 8"
            );
        } else {
            assert_eq!(c["gpus"], 32);
            assert_ne!(c["status"], "invalid", "{c}");
        }
    }
    // With 12 GPUs per node it is simulated.
    let doc = plan_of(
        one,
        &[
            "--prefill-counts",
            "1",
            "--decode-counts",
            "1",
            "--layouts",
            "12",
            "--gpus-per-node",
            "12",
        ],
    );
    assert_ne!(doc["candidates"][0]["status"], "invalid");
}

#[test]
fn colocated_only_and_bad_values() {
    let doc = plan(&["--mode", "colocated"]);
    let cands = doc["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 3);
    assert!(cands.iter().all(|c| c["mode"] == "colocated"));
    assert!(doc["colocated_margin"]["margin"].as_f64() == Some(0.0));
    let doc = plan(&["--colocated", "only"]);
    assert_eq!(doc["candidates"].as_array().unwrap().len(), 3);
    let mut a: Vec<&str> = SMALL.to_vec();
    a.extend(["--objective", "throughput"]);
    bad(
        &a,
        &[
            "--objective: unknown objective 'throughput'; valid: cost, goodput-per-gpu, \
           tokens-per-gpu@R, min-gpus, pareto",
        ],
    );
    let mut a: Vec<&str> = SMALL.to_vec();
    a.extend(["--colocated", "maybe"]);
    bad(
        &a,
        &["--colocated: unknown value 'maybe'; valid: no, yes, only"],
    );
}

#[test]
fn layer_kind_models_vary_devices_per_instance() {
    let base = [
        "plan",
        "--model",
        "deepseek-v3",
        "--prefill-devices",
        "h200",
        "--decode-devices",
        "h200",
        "--devices-per-instance",
        "8",
        "--weight-format",
        "fp8",
        "--requests",
        "30",
        "--target-rate",
        "2",
        "--prefill-counts",
        "1",
        "--decode-counts",
        "1",
        "--quiet",
    ];
    let mut a = base.to_vec();
    a.extend(["--layouts", "8,16", "--json"]);
    let doc = ok_json(&a);
    let gpus: Vec<u64> = doc["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["gpus"].as_u64().unwrap())
        .collect();
    // 1P + 1D of 8 or 16 devices each, then 2 colocated instances of 8 or 16.
    assert_eq!(gpus, vec![16, 24, 24, 32, 16, 32]);
    assert_eq!(doc["candidates"][1]["decode_layout"], "16");
    let mut a = base.to_vec();
    a.extend(["--layouts", "8,4x2"]);
    bad(
        &a,
        &[
            "--layouts: '4x2': parallel layouts are not modelled for deepseek-v3, which is \
           described by layer kinds; give devices per instance instead, e.g. --layouts 8,16",
        ],
    );
}

#[test]
fn the_pareto_chart_is_numbered_with_a_key() {
    let dir = tmp_dir("plan-objectives-plot");
    let mut a: Vec<&str> = SMALL.to_vec();
    let d = dir.join("p");
    a.extend([
        "--quiet",
        "--colocated",
        "yes",
        "--objective",
        "pareto",
        "--plot",
        s(&d),
    ]);
    ok(&a);
    let svg = std::fs::read_to_string(d.join("pareto.svg")).unwrap();
    assert!(svg.contains("Output tokens/s per GPU"), "y axis");
    assert!(svg.contains("Tokens/s per user (1 / mean TPOT)"), "x axis");
    assert!(svg.contains("<g class=\"key\">"));
    assert!(svg.contains(">1. "), "numbered key");
    assert!(svg.contains("x h100 @"), "a colocated label, at a rate");
    assert!(svg.contains("data-series=\"Pareto frontier\""));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The load-curve points of candidate `c` that qualify for an objective (`floor`: the
/// tokens/s per user of `tokens-per-gpu@U`).
fn qualifying(c: &Value, floor: Option<f64>) -> Vec<Value> {
    c["load_curve"]
        .as_array()
        .unwrap_or_else(|| panic!("load_curve in {c}"))
        .iter()
        .filter(|p| p["meets_slo"] == true)
        .filter(|p| floor.is_none_or(|u| p["tokens_per_s_per_user"].as_f64().unwrap() >= u))
        .cloned()
        .collect()
}

#[test]
fn each_objective_figure_is_the_best_qualifying_point_of_the_load_curve() {
    let target = 0.9; // the default --slo-target
    for (obj, measure, floor) in [
        ("goodput-per-gpu", "goodput_per_gpu", None),
        ("tokens-per-gpu@100", "tokens_per_s_per_gpu", Some(100.0)),
    ] {
        let doc = plan(&["--objective", obj]);
        let mut climbed = false;
        for c in doc["candidates"].as_array().unwrap() {
            if c["status"] != "feasible" {
                assert!(c.get("load_curve").is_none(), "{c}");
                continue;
            }
            let curve = c["load_curve"].as_array().unwrap();
            // The target rate first, then the ladder, ascending.
            assert_eq!(f(&curve[0], "rate_rps"), 4.0);
            assert_eq!(curve[0]["meets_slo"], true);
            for w in curve.windows(2) {
                assert!(f(&w[0], "rate_rps") < f(&w[1], "rate_rps"), "{c}");
            }
            for p in &curve[1..] {
                let meets = p["steady"] == true && f(p, "slo_attainment") >= target;
                assert_eq!(p["meets_slo"], meets, "{p}");
            }
            let q = qualifying(c, floor);
            let best = q
                .iter()
                .map(|p| f(p, measure))
                .fold(f64::NEG_INFINITY, f64::max);
            if q.is_empty() {
                assert!(c.get("at_rate_rps").is_none(), "{c}");
                continue;
            }
            assert_eq!(f(c, measure), best, "{obj}: {c}");
            let at = f(c, "at_rate_rps");
            let p = q.iter().find(|p| f(p, "rate_rps") == at).unwrap();
            assert_eq!(f(p, measure), best);
            if floor.is_some() {
                assert_eq!(f(c, "tokens_per_s_per_user"), f(p, "tokens_per_s_per_user"));
            }
            climbed |= at > 4.0;
        }
        assert!(
            climbed,
            "{obj}: some candidate does best above the target rate"
        );
    }
}

#[test]
fn a_load_curve_point_is_disagg_run_at_that_rate() {
    let doc = plan(&["--objective", "goodput-per-gpu"]);
    // Candidate 0: 1P + 1D h100 (2 GPUs); its rung at 2 x 4 req/s.
    let c = &doc["candidates"][0];
    assert_eq!(
        (c["prefill"].as_u64(), c["decode"].as_u64()),
        (Some(1), Some(1))
    );
    let p = c["load_curve"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| f(p, "rate_rps") == 8.0)
        .unwrap()
        .clone();
    let run = ok_json(&[
        "run",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--requests",
        "60",
        "--rate",
        "8",
        "--prefill",
        "1",
        "--decode",
        "1",
        "--prefill-device",
        "h100",
        "--decode-device",
        "h100",
        "--json",
    ]);
    let s = &run["summary"];
    assert_eq!(f(&p, "slo_attainment"), f(s, "slo_attainment"));
    assert_eq!(f(&p, "goodput_per_gpu"), f(s, "goodput_rps") / 2.0);
    assert_eq!(
        f(&p, "tokens_per_s_per_gpu"),
        f(s, "throughput_tok_s") / 2.0
    );
    assert_eq!(
        f(&p, "tokens_per_s_per_user"),
        1.0 / f(&s["tpot_s"], "mean")
    );
}

#[test]
fn cost_and_min_gpus_have_no_load_curve() {
    for obj in ["cost", "min-gpus"] {
        let doc = plan(&["--objective", obj]);
        assert!(doc.get("pareto_points").is_none());
        for c in doc["candidates"].as_array().unwrap() {
            assert!(c.get("load_curve").is_none() && c.get("at_rate_rps").is_none());
        }
    }
}

#[test]
fn the_pareto_frontier_is_over_every_point_and_non_dominated() {
    let doc = plan(&["--objective", "pareto"]);
    let cands = doc["candidates"].as_array().unwrap();
    let all: Vec<(usize, f64, f64, f64)> = cands
        .iter()
        .filter(|c| c["status"] == "feasible")
        .flat_map(|c| {
            let i = c["index"].as_u64().unwrap() as usize;
            qualifying(c, None).into_iter().map(move |p| {
                (
                    i,
                    f(&p, "rate_rps"),
                    f(&p, "tokens_per_s_per_gpu"),
                    f(&p, "tokens_per_s_per_user"),
                )
            })
        })
        .collect();
    let front: Vec<(usize, f64, f64, f64)> = doc["pareto_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["candidate"].as_u64().unwrap() as usize,
                f(p, "rate_rps"),
                f(p, "tokens_per_s_per_gpu"),
                f(p, "tokens_per_s_per_user"),
            )
        })
        .collect();
    assert!(front.len() >= 2, "{front:?}");
    let dominated = |&(_, _, g, u): &(usize, f64, f64, f64)| {
        all.iter()
            .any(|&(_, _, g2, u2)| g2 >= g && u2 >= u && (g2 > g || u2 > u))
    };
    // Every frontier point is a qualifying point that nothing beats, and every qualifying point
    // that nothing beats is on the frontier.
    for p in &front {
        assert!(all.contains(p), "{p:?}");
        assert!(!dominated(p), "{p:?}");
    }
    for p in &all {
        assert_eq!(front.contains(p), !dominated(p), "{p:?}");
    }
    // From the highest tokens/s per GPU; the ranked candidates are the frontier's, in order,
    // each at its first frontier point.
    for w in front.windows(2) {
        assert!(w[0].2 >= w[1].2);
    }
    let mut want: Vec<usize> = Vec::new();
    for p in &front {
        if !want.contains(&p.0) {
            want.push(p.0);
        }
    }
    let ranked: Vec<usize> = doc["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(ranked, want);
    for &i in &ranked {
        let p = front.iter().find(|p| p.0 == i).unwrap();
        assert_eq!(f(&cands[i], "at_rate_rps"), p.1);
        assert_eq!(f(&cands[i], "tokens_per_s_per_gpu"), p.2);
    }
}
