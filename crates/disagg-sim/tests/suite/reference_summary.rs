//! `disagg_sim::reference::summarise`: our summary laid out as the reference's `summarise` dict,
//! compared with the reference's own output (golden and lever fixtures' `summary_full`, the
//! cost-lever runs' `summary`) leaf by leaf: the same keys in the same order, every number with
//! f64 `==`, integers exactly, every string equal.

#[allow(unused_imports)]
use crate::golden_common;

use disagg_model::Catalogue;
use disagg_sim::reference::summarise;
use disagg_sim::{simulate, simulate_config, GenRequest, Scenario};
use golden_common::{flags, load, load_from, same};
use serde_json::{json, Value};

/// Runs `flags` and compares `summarise` with `want`; returns the numbers compared.
fn check(flags: &[String], want: &Value, what: &str) -> usize {
    let cfg = Scenario::from_flags(flags)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let s = simulate_config(&cfg).unwrap().summary();
    same(&summarise(&s), want, what)
}

fn golden(name: &str) -> usize {
    let g = load(name);
    check(&flags(&g["cli_flags"]), &g["summary_full"], name)
}

fn lever(name: &str) -> usize {
    let g = load_from("levers", name);
    check(&flags(&g["cli_flags"]), &g["summary_full"], name)
}

fn cost_run(k: usize) -> usize {
    let r = load_from("levers", "cost-runs.json")["runs"][k].clone();
    check(
        &flags(&r["flags"]),
        &r["summary"],
        r["label"].as_str().unwrap(),
    )
}

// Numbers of the core layout of a run with `n` instances: 3 counts, 4 x 5 latencies, 4
// throughput, n + 1 utilisations, 4 link, 4n efficiency, n compute-bound, 2 x 6 stages,
// resource_util, 2 Little, 5 energy totals, 4 breakdown, 3n per instance, sim_time_s.
fn core_numbers(n: usize) -> usize {
    3 + 20 + 4 + (n + 1) + 4 + 4 * n + n + 12 + 1 + 2 + 5 + 4 + 3 * n + 1
}

#[test]
fn g2_heterogeneous_pools_block() {
    // + the two pools strings (not numbers).
    assert_eq!(
        golden("g2_8b_hetero_h100_prefill_a100_decode.json"),
        core_numbers(2)
    );
}

#[test]
fn g4_saturated_link() {
    assert_eq!(golden("g4_8b_eth25g_saturated_14rps.json"), core_numbers(2));
}

#[test]
fn g5_in_transit_compression_block() {
    // + transit: ratio, handoff_GB, transit_bound_frac, transit_J; + the breakdown's transit.
    assert_eq!(
        golden("g5_8b_eth25g_fp8_transit_14rps.json"),
        core_numbers(2) + 4 + 1
    );
}

#[test]
fn g7_colocated() {
    assert_eq!(golden("g7_70b_colocated_x2.json"), core_numbers(2));
}

#[test]
fn lv1_scheduler_block_chunked() {
    // + scheduler: token_budget, kv_capacity_units, kv_unit_tokens, mean_running,
    // kv_token_frac, computed_prefill_tokens.
    assert_eq!(
        lever("lv1_coloc_chunked256_lmlast_8b.json"),
        core_numbers(2) + 6
    );
}

#[test]
fn lv2_scheduler_block_paged_recompute() {
    // One colocated instance (OPT-13B on its own); + 6, + preemptions, recompute_tokens.
    assert_eq!(
        lever("lv2_coloc_paged_recompute_opt13b.json"),
        core_numbers(1) + 8
    );
}

#[test]
fn lv3_scheduler_block_paged_swap() {
    // + 6, prefill_kv_capacity_units, preemptions, recompute_tokens, 4 swap; + breakdown swap.
    assert_eq!(
        lever("lv3_disagg_paged_swap_opt13b.json"),
        core_numbers(2) + 6 + 1 + 2 + 4 + 1
    );
}

#[test]
fn lv4_scheduler_block_prefix_cache() {
    // One colocated instance; + 6, preemptions, recompute_tokens, 5 prefix_cache.
    assert_eq!(
        lever("lv4_coloc_prefix_paged_sessions_opt13b.json"),
        core_numbers(1) + 6 + 2 + 5
    );
}

#[test]
fn lv5_scheduler_block_decode_priority() {
    assert_eq!(
        lever("lv5_coloc_decode_priority_max_opt13b.json"),
        core_numbers(2) + 6
    );
}

#[test]
fn lv6_scheduler_block_speculative_and_prefix() {
    // + 6, prefill_kv_capacity_units, 5 prefix_cache, 6 speculative numbers (gamma, alpha,
    // verify_rows, tokens_per_verify, closed_form, draft_time_frac).
    assert_eq!(
        lever("lv6_disagg_spec_mtp_chunked_prefix_pow2_8b.json"),
        core_numbers(2) + 6 + 1 + 5 + 6
    );
}

#[test]
fn cost_runs_parallel_blocks() {
    // + breakdown scale_up; parallel per role: tp, pp, ep, microbatches, expert_imbalance,
    // busy_s, comm_s, comm_J, comm_frac (9 numbers).
    assert_eq!(cost_run(0), core_numbers(2) + 1 + 9);
    assert_eq!(cost_run(1), core_numbers(2) + 1 + 2 * 9);
    assert_eq!(cost_run(2), core_numbers(2) + 1 + 9);
}

#[test]
fn cost_runs_formats_blocks() {
    // + formats: weight_bytes, kv_bytes.
    assert_eq!(cost_run(3), core_numbers(2) + 2);
    assert_eq!(cost_run(4), core_numbers(2) + 2);
}

#[test]
fn cost_run_speculative_scheduler_block() {
    assert_eq!(cost_run(5), core_numbers(2) + 6 + 6);
}

#[test]
fn cost_run_ced_replay_on_decode() {
    assert_eq!(cost_run(6), core_numbers(2));
}

#[test]
fn cost_run_optical_and_ppa_blocks() {
    // Compared leaf by leaf (the ppa block's size is its own; at least the optical block's
    // 2 x 4 numbers and the breakdown's two optical terms come on top of the core).
    assert!(cost_run(7) > core_numbers(2) + 8 + 2);
}

#[test]
fn the_lever_blocks_follow_sim_time_in_the_references_order() {
    // Mixtral EP2 (parallel) with FP8 formats and speculative decoding would put scheduler,
    // parallel and formats together; the reference's order is optical, scheduler, parallel,
    // formats (metrics.summarise), then ppa.
    let f: Vec<String> = [
        "--mode",
        "colocated",
        "--model",
        "llama3-8b",
        "--device",
        "optical-fft",
        "--devices-per-instance",
        "2",
        "--tp",
        "2",
        "--weight-format",
        "fp8",
        "--compute-format",
        "fp8",
        "--batch-policy",
        "chunked",
        "--requests",
        "40",
        "--ppa",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cfg = Scenario::from_flags(&f)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap();
    let v = summarise(&simulate_config(&cfg).unwrap().summary());
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    let tail = &keys[keys.iter().position(|k| *k == "sim_time_s").unwrap()..];
    assert_eq!(
        tail,
        [
            "sim_time_s",
            "optical",
            "scheduler",
            "parallel",
            "formats",
            "ppa"
        ]
    );
}

#[test]
fn a_run_with_nothing_measured_has_empty_stages_and_non_finite_numbers() {
    // One request whose KV can never fit (2^31 tokens, more than an 80 GB H100 holds for
    // Llama-3-8B): rejected on arrival. Nothing completes, so every latency is NaN, no request
    // met its SLO (J per SLO-met request: total / 0 = inf), and the stage means are the empty
    // dict the reference builds from an empty request set.
    let sc = Scenario {
        model: "llama3-8b".into(),
        devices_per_instance: 1,
        ..Scenario::default()
    };
    let cfg = sc.build(&Catalogue::builtin()).unwrap();
    let wl = [GenRequest {
        rid: 0,
        arrival_s: 0.5,
        prompt_len: 1 << 31,
        output_len: 4,
    }];
    let s = simulate(&cfg, &wl).unwrap().summary();
    let v = summarise(&s);
    assert_eq!(
        v["requests"],
        json!({"completed": 0, "rejected": 1, "measured": 0})
    );
    assert_eq!(v["stage_breakdown_s"], json!({}));
    assert_eq!(v["stage_share"], json!({}));
    for k in ["ttft", "tpot", "itl", "e2e"] {
        assert_eq!(
            v["latency_s"][k],
            json!({"mean": "NaN", "p50": "NaN", "p90": "NaN", "p99": "NaN", "max": "NaN"}),
            "{k}"
        );
    }
    assert_eq!(v["energy"]["J_per_slo_met_request"], json!("Infinity"));
    // No output tokens: J per token is total / 0 -> NaN in the reference (`if out_tokens`).
    assert_eq!(v["energy"]["J_per_output_token"], json!("NaN"));
    // No transfer: the mean wait divides by max(1, 0) = 1.
    assert_eq!(v["kv_link"]["mean_wait_ms"], json!(0.0));
    assert_eq!(v["kv_link"]["transfers"], json!(0));
}
