//! Whole runs with the cost levers (`docs/exactness.md#verification`): every run of the reference's
//! `levers-cost-runs.json` (copied into tests/fixtures/levers/cost-runs.json, see the README
//! there) replayed from its flags, every number of its summary compared with f64 `==`.

#[allow(unused_imports)]
use crate::golden_common;

use disagg_model::Catalogue;
use disagg_sim::{simulate_config, Scenario, Summary};
use golden_common::*;
use serde_json::Value;

fn runs() -> Vec<Value> {
    load_from("levers", "cost-runs.json")["runs"]
        .as_array()
        .unwrap()
        .clone()
}

/// The `parallel` block: one object per role with a layout, in instance order, keys in the
/// reference's order.
fn check_parallel(full: &Value, s: &Summary) {
    let Some(want) = full.get("parallel") else {
        assert!(s.parallel.is_none(), "no parallel block expected");
        return;
    };
    let want = want.as_object().unwrap();
    let got = s.parallel.as_ref().expect("parallel block");
    assert_eq!(got.len(), want.len());
    for (g, (role, w)) in got.iter().zip(want) {
        assert_eq!(g.role.as_str(), role);
        let keys: Vec<&str> = w.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "tp",
                "pp",
                "ep",
                "microbatches",
                "expert_imbalance",
                "link",
                "busy_s",
                "comm_s",
                "comm_J",
                "comm_frac"
            ]
        );
        assert_eq!(g.tp as u64, w["tp"].as_u64().unwrap());
        assert_eq!(g.pp as u64, w["pp"].as_u64().unwrap());
        assert_eq!(g.ep as u64, w["ep"].as_u64().unwrap());
        assert_eq!(g.microbatches as u64, w["microbatches"].as_u64().unwrap());
        eq(
            g.expert_imbalance,
            &w["expert_imbalance"],
            "expert_imbalance",
        );
        assert_eq!(g.link, w["link"].as_str().unwrap());
        eq(g.busy_s, &w["busy_s"], &format!("{role} busy_s"));
        eq(g.comm_s, &w["comm_s"], &format!("{role} comm_s"));
        eq(g.comm_j, &w["comm_J"], &format!("{role} comm_J"));
        eq(g.comm_frac, &w["comm_frac"], &format!("{role} comm_frac"));
    }
}

/// The `formats` block.
fn check_formats(full: &Value, s: &Summary) {
    let Some(w) = full.get("formats") else {
        assert!(s.formats.is_none(), "no formats block expected");
        return;
    };
    let g = s.formats.as_ref().expect("formats block");
    assert_eq!(g.weights.as_str(), w["weights"].as_str().unwrap());
    assert_eq!(g.kv.as_str(), w["kv"].as_str().unwrap());
    assert_eq!(g.compute.as_str(), w["compute"].as_str().unwrap());
    eq(g.weight_bytes, &w["weight_bytes"], "weight_bytes");
    eq(g.kv_bytes, &w["kv_bytes"], "kv_bytes");
}

fn replay(k: usize) {
    let r = &runs()[k];
    let flags: Vec<String> = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    let label = r["label"].as_str().unwrap();
    let cfg = Scenario::from_flags(&flags)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let run = simulate_config(&cfg).unwrap();
    let s = run.summary();
    let full = &r["summary"];
    check_full(full, &s);
    check_parallel(full, &s);
    check_formats(full, &s);
    check_optical(full, &s);
    check_ppa(full, &s);
}

#[test]
fn the_fixture_holds_eight_runs() {
    assert_eq!(runs().len(), 8);
}

#[test]
fn run0_colocated_tp4() {
    replay(0);
}

#[test]
fn run1_disaggregated_tp2_pp2_three_microbatches() {
    replay(1);
}

#[test]
fn run2_mixtral_ep2_with_imbalance() {
    replay(2);
}

#[test]
fn run3_fp8_w8a8_fp8_kv() {
    replay(3);
}

#[test]
fn run4_int8_kv_over_25gbe() {
    replay(4);
}

#[test]
fn run5_colocated_speculative_mtp() {
    replay(5);
    // The scheduler block's speculative figures, too.
    let r = &runs()[5];
    let flags: Vec<String> = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    let cfg = Scenario::from_flags(&flags)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap();
    let s = simulate_config(&cfg).unwrap().summary();
    let got = serde_json::to_value(s.scheduler.as_ref().unwrap()).unwrap();
    let want = &r["summary"]["scheduler"]["speculative"];
    let gs = &got["speculative"];
    for (k, w) in want.as_object().unwrap() {
        let g = &gs[k.as_str()];
        match w {
            Value::Number(_) => eq(f(g), w, &format!("speculative.{k}")),
            _ => assert_eq!(g, w, "speculative.{k}"),
        }
    }
}

#[test]
fn run7_optical_prefill_pool_circulant_hyena_with_ppa() {
    replay(7);
    // The blocks are there (`replay` checks them against the fixture when present).
    let full = &runs()[7]["summary"];
    assert!(full.get("optical").is_some() && full.get("ppa").is_some());
    let b = full["energy"]["breakdown"].as_object().unwrap();
    let keys: Vec<&str> = b.keys().map(|k| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "static",
            "compute",
            "memory",
            "link",
            "optical_static",
            "optical_conversions"
        ]
    );
}

/// Each whole run is a preset: `disagg run --preset NAME` is the reference's command line.
#[test]
fn the_presets_are_the_runs_flags() {
    let names = [
        "tp4-colocated",
        "tp2pp2-microbatches3",
        "mixtral-ep2-imbalance",
        "fp8-w8a8-colocated",
        "int8-a100-25gbe",
        "spec-mtp-colocated",
        "ced-70b-replay-decode",
    ];
    for (k, name) in names.iter().enumerate() {
        let r = &runs()[k];
        let flags: Vec<String> = r["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        let want = serde_json::to_value(Scenario::from_flags(&flags).unwrap()).unwrap();
        let got = serde_json::to_value(disagg_sim::presets::find(name).unwrap().scenario).unwrap();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn run6_ced_replay_on_decode() {
    replay(6);
}
