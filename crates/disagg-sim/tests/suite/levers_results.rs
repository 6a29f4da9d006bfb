//! `docs/levers.md#batch-policies` and `docs/levers.md#prefix-caching` of the reference, exactly (levers-results.json, copied to
//! tests/fixtures/levers/results.json; `docs/exactness.md#verification` and `docs/exactness.md#fsum`).
//!
//! Each row's configuration comes from its preset (`disagg run --preset NAME`: the point is that
//! the presets are the reference's configurations), checked field by field against the row's
//! `config`; its workload is generated from the row's own `workload` entry (`poisson_workload` or
//! `chat_sessions` with the row's `LengthDist(mean, cv, lo, hi)`, prefix chains for sessions),
//! checked equal to the preset's, and run with `simulate_workload`. Every value of the row
//! (`values`, or `off` / `on`) is compared with f64 `==`, under the field names of
//! `conventions.row_fields`. `docs/levers.md`'s capacity table is rerun with the reference's bisection.
//! (`docs/levers.md`'s chunk-overhead table is tested in disagg-model, tests/spec/levers.rs.)

#[allow(unused_imports)]
use crate::golden_common;

use std::sync::{Arc, OnceLock};

use disagg_model::Catalogue;
use disagg_sim::sessions::{chat_sessions, session_chains, SessionShape};
use disagg_sim::{
    poisson_workload, simulate_workload, ClosedLoop, LengthDist, RunResult, Scenario, SimConfig,
    Summary, Workload,
};
use golden_common::{eq, f};
use serde_json::Value;

fn fixture() -> &'static Value {
    static F: OnceLock<Value> = OnceLock::new();
    F.get_or_init(|| golden_common::load_from("levers", "results.json"))
}

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn preset(name: &str) -> Scenario {
    disagg_sim::presets::find(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .scenario
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not a whole number: {v}"))
}

/// `LengthDist(mean, cv, lo, hi)` of a workload entry.
fn length(v: &Value) -> LengthDist {
    LengthDist::with_bounds(
        f(&v["mean"]),
        f(&v["cv"]),
        u(&v["lo"]) as i64,
        u(&v["hi"]) as i64,
    )
}

/// The requests of a row's `workload` entry, generated as the reference does: `poisson_workload`,
/// or `chat_sessions` with its closed-loop turns and prefix chains (`docs/levers.md#prefix-caching`).
fn workload(w: &Value) -> Workload {
    let (rate, n, seed) = (f(&w["rate"]), u(&w["n"]) as usize, u(&w["seed"]));
    let (p, o) = (length(&w["prompt"]), length(&w["output"]));
    match w["generator"].as_str().unwrap() {
        "poisson_workload" => poisson_workload(rate, n, &p, &o, seed).into(),
        "chat_sessions" => {
            let shape = SessionShape {
                turns: u(&w["turns"]) as u32,
                think_s: f(&w["think"]),
                system_prompts: u(&w["system_prompts"]),
                system_len: u(&w["system_len"]),
                share: f(&w["share"]),
            };
            let s = chat_sessions(rate, n, &p, &o, seed, &shape);
            let closed = s.iter().any(|r| r.after.is_some()).then(|| ClosedLoop {
                after: s.iter().map(|r| r.after).collect(),
                think_s: s.iter().map(|r| r.think_s).collect(),
            });
            Workload {
                requests: s.iter().map(|r| r.req).collect(),
                closed,
                chains: Some(Arc::new(session_chains(&s, shape.turns))),
                clipped_prompts: 0,
            }
        }
        other => panic!("generator {other}"),
    }
}

/// The scenario's workload entry matches the row's: rate, count, seed, both length
/// distributions with their bounds, the session shape; and its generated requests (and turns)
/// are the row's.
fn check_workload(sc: &Scenario, cfg: &SimConfig, w: &Value, mine: &Workload, what: &str) {
    let spec = sc.workload_spec();
    assert_eq!(spec.rate, f(&w["rate"]), "{what}: rate");
    assert_eq!(spec.requests, u(&w["n"]), "{what}: n");
    assert_eq!(spec.seed, u(&w["seed"]), "{what}: seed");
    assert_eq!(spec.prompt, length(&w["prompt"]), "{what}: prompt");
    assert_eq!(spec.output, length(&w["output"]), "{what}: output");
    if w["generator"] == "chat_sessions" {
        assert_eq!(
            (sc.turns as u64, sc.think, sc.system_prompts, sc.system_len),
            (
                u(&w["turns"]),
                f(&w["think"]),
                u(&w["system_prompts"]),
                u(&w["system_len"])
            ),
            "{what}: sessions"
        );
        assert_eq!(sc.prefix_share, f(&w["share"]), "{what}: share");
    }
    let theirs = cfg.requests();
    assert_eq!(theirs.requests, mine.requests, "{what}: requests");
    assert_eq!(theirs.closed, mine.closed, "{what}: closed-loop turns");
    if theirs.chains.is_some() {
        assert_eq!(theirs.chains, mine.chains, "{what}: prefix chains");
    }
}

/// The built configuration is the row's `config` (conventions.config_convention: what is not
/// listed is SimConfig's default).
fn check_config(cfg: &SimConfig, c: &Value, what: &str) {
    let sc = &cfg.scenario;
    assert_eq!(c["mode"], sc.mode.as_str(), "{what}: mode");
    assert_eq!(c["model"], sc.model.as_str(), "{what}: model");
    assert_eq!(c["device"], sc.device.as_str(), "{what}: device");
    assert_eq!(
        u(&c["devices_per_instance"]),
        sc.devices_per_instance as u64,
        "{what}: devices"
    );
    assert_eq!(
        u(&c["n_colocated"]),
        cfg.instance_count() as u64,
        "{what}: instances"
    );
    let cap = c.get("max_decode_batch").map_or(256, u);
    assert_eq!(cfg.max_decode_batch as u64, cap, "{what}: max_decode_batch");
    let host = c
        .get("host_link")
        .and_then(Value::as_str)
        .unwrap_or("pcie5");
    assert_eq!(sc.host_link, host, "{what}: host_link");
    // A budget, a non-default policy or the prefix cache switches the scheduled instance on
    // (`docs/levers.md#scheduled-instances`); the plain colocated instance otherwise.
    let policy = c
        .get("batch_policy")
        .and_then(Value::as_str)
        .unwrap_or("prefill-priority");
    let budget = c.get("max_num_batched_tokens").map(u);
    let caching = c.get("prefix_caching").and_then(Value::as_bool) == Some(true);
    assert_eq!(sc.batch_policy.as_str(), policy, "{what}: batch_policy");
    assert_eq!(sc.max_num_batched_tokens, budget, "{what}: budget");
    assert_eq!(sc.prefix_caching, caching, "{what}: prefix_caching");
    let on = policy != "prefill-priority" || budget.is_some() || caching;
    assert_eq!(cfg.levers.is_some(), on, "{what}: scheduled instance");
    // The rest at SimConfig's defaults.
    assert_eq!(cfg.step_overhead_s, 5e-4, "{what}: step overhead");
    assert_eq!(cfg.warmup_frac, 0.1, "{what}: warm-up");
    assert_eq!(cfg.max_prefill_tokens, 8192, "{what}: max_prefill_tokens");
    assert_eq!((sc.kv_block_size, sc.max_seq_len), (16, 2048), "{what}");
    assert_eq!(sc.link, "ib-ndr", "{what}: link");
    assert_eq!(sc.power_cap, None, "{what}: cap");
    assert!(!sc.dvfs, "{what}: dvfs");
}

/// The measured requests (`docs/serving-model.md#metrics`): the completed ones by arrival, the first
/// `floor(0.1 * completed)` dropped.
fn steady(run: &RunResult) -> Vec<disagg_sim::RequestRecord> {
    let mut done: Vec<_> = run.requests().filter(|r| r.finish_s.is_some()).collect();
    done.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s));
    let cut = (0.1 * done.len() as f64).floor() as usize;
    done.split_off(cut)
}

/// `statistics.median` of `prefill_start - arrival` over the measured requests (row_fields
/// `sched_delay_p50`), for runs without a scheduler block.
fn sched_delay_p50(run: &RunResult) -> f64 {
    let mut v: Vec<f64> = steady(run)
        .iter()
        .map(|r| r.prefill_start_s.unwrap() - r.arrival_s)
        .collect();
    v.sort_by(f64::total_cmp);
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        (v[k - 1] + v[k]) / 2.0
    }
}

/// row_fields `norm_latency_plain_sum`: `e2e / output_len` summed left to right in steady order
/// (Python 3.11's `sum`), over the number of measured requests.
fn norm_latency_plain(run: &RunResult) -> f64 {
    let s = steady(run);
    let mut sum = 0.0;
    for r in &s {
        sum += (r.finish_s.unwrap() - r.arrival_s) / r.output_len as f64;
    }
    sum / s.len() as f64
}

/// Every value of a row entry, by its row_fields name.
fn check_values(sum: &Summary, run: &RunResult, values: &Value, what: &str) {
    let sched = sum.scheduler.as_ref();
    let sb = || sched.unwrap_or_else(|| panic!("{what}: no scheduler block"));
    let prefix = || {
        sb().prefix_cache
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: no prefix_cache block"))
    };
    for (k, want) in values.as_object().unwrap() {
        let label = format!("{what}: {k}");
        let got: f64 = match k.as_str() {
            "ttft_p50" => sum.ttft_s.p50,
            "ttft_p99" => sum.ttft_s.p99,
            "itl_p50" => sum.itl_s.p50,
            "itl_p99" => sum.itl_s.p99,
            "tpot_p99" => sum.tpot_s.p99,
            "sched_delay_p50" => {
                // The block's median, and the same from the request stamps.
                let mine = sched_delay_p50(run);
                eq(mine, want, &format!("{label} (from the stamps)"));
                sb().sched_delay_p50_s.unwrap()
            }
            "norm_latency" => sb().norm_latency_s_per_token.unwrap(),
            "norm_latency_plain_sum" => norm_latency_plain(run),
            "tok_s" => sum.throughput_tok_s,
            "req_s" => sum.throughput_rps,
            "j_tok" => sum.j_per_token,
            "completed" => sum.requests.completed as f64,
            "rejected" => sum.requests.rejected as f64,
            "sim_time" => sum.horizon_s,
            "mean_running" => sb().mean_running,
            "kv_token_frac" => sb().kv_token_frac,
            "preemptions" => sb().preemptions.unwrap() as f64,
            "recompute_tokens" => sb().recompute_tokens.unwrap() as f64,
            "computed_prefill_tokens" => sb().computed_prefill_tokens as f64,
            "kv_capacity_units" => sb().kv_capacity_units as f64,
            "swap_s" => sb().swap.as_ref().unwrap().seconds,
            "swap_gb" => {
                let s = sb().swap.as_ref().unwrap();
                s.out_gb + s.in_gb
            }
            "hit_rate" => prefix().hit_rate,
            "evicted_tokens" => prefix().evicted_tokens as f64,
            other => panic!("{what}: no mapping for row field {other}"),
        };
        if want.is_u64() {
            assert_eq!(got, u(want) as f64, "{label}");
        } else {
            eq(got, want, &label);
        }
    }
}

/// Runs `sc` (its configuration checked against `config`) on the row's workload `w`.
fn run_row(sc: &Scenario, config: &Value, w: &Value, what: &str) -> (Summary, RunResult) {
    let cfg = sc.build(&cat()).unwrap_or_else(|e| panic!("{what}: {e}"));
    check_config(&cfg, config, what);
    let mine = workload(w);
    check_workload(sc, &cfg, w, &mine, what);
    let run = simulate_workload(&cfg, &mine, &mut ()).unwrap();
    let sum = run.summary();
    // `disagg run --preset NAME` (the configuration's own workload) is the same run; only the
    // workload block differs (it counts the prompts clipped at the cap, with a warning).
    let own = disagg_sim::simulate_config(&cfg).unwrap().summary();
    let json = |s: &Summary| {
        let mut v = serde_json::to_value(s).unwrap();
        let o = v.as_object_mut().unwrap();
        // `retain` keeps the order (`remove` may swap the last key into the hole).
        o.retain(|k, _| k != "workload" && k != "warnings");
        v.to_string()
    };
    assert_eq!(json(&own), json(&sum), "{what}: the preset's own run");
    (sum, run)
}

// ---------------------------------------------------------------------------------------------
// `docs/serving-model.md`: batching policies, the mechanism table

fn mechanism_row(policy: &str) {
    let m = &fixture()["section_19"]["mechanism"];
    let row = m["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["policy"] == policy)
        .unwrap_or_else(|| panic!("no row {policy}"));
    // The rate rule: 0.8 x the bisected relaxed capacity of prefill-priority, 2.53125.
    assert_eq!(f(&m["workload"]["rate"]), 0.8 * 2.53125);
    let name = format!("batching-{}", policy.replace(' ', "-"));
    let (sum, run) = run_row(&preset(&name), &row["config"], &m["workload"], policy);
    check_values(&sum, &run, &row["values"], policy);
}

#[test]
fn s19_mechanism_prefill_priority() {
    mechanism_row("prefill-priority");
}

#[test]
fn s19_mechanism_decode_priority() {
    mechanism_row("decode-priority");
}

#[test]
fn s19_mechanism_chunked_256() {
    mechanism_row("chunked 256");
}

#[test]
fn s19_mechanism_chunked_512() {
    mechanism_row("chunked 512");
}

#[test]
fn s19_mechanism_chunked_1024() {
    mechanism_row("chunked 1024");
}

#[test]
fn s19_mechanism_chunked_2048() {
    mechanism_row("chunked 2048");
}

#[test]
fn s19_mechanism_chunked_4096() {
    mechanism_row("chunked 4096");
}

#[test]
fn s19_mechanism_has_seven_rows() {
    let rows = fixture()["section_19"]["mechanism"]["rows"]
        .as_array()
        .unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "prefill-priority",
            "decode-priority",
            "chunked 256",
            "chunked 512",
            "chunked 1024",
            "chunked 2048",
            "chunked 4096"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// `docs/serving-model.md`: capacity under an ITL SLO, by the reference's bisection

/// conventions.bisection: `bisect_rate(ok, lo=0.0, hi=0.5)`: double `hi` while `ok(hi)`, then
/// halve `[lo, hi]` while `hi - lo > 0.02 * hi`; returns `lo`.
fn bisect_rate(mut ok: impl FnMut(f64) -> bool) -> f64 {
    let (mut lo, mut hi) = (0.0, 0.5);
    while ok(hi) {
        lo = hi;
        hi *= 2.0;
    }
    while hi - lo > 0.02 * hi {
        let mid = (lo + hi) / 2.0;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[test]
fn bisection_follows_the_conventions() {
    // ok(r) = r <= 1.3, by hand: hi 0.5 ok, 1 ok, 2 not -> [1, 2]; mid 1.5 not -> [1, 1.5];
    // 1.25 ok -> [1.25, 1.5]; 1.375 not; 1.3125 not; 1.28125 ok; 1.296875 ok -> [1.296875,
    // 1.3125], width 0.015625 <= 0.02 * 1.3125 = 0.02625: stop.
    let mut probes = Vec::new();
    let r = bisect_rate(|x| {
        probes.push(x);
        x <= 1.3
    });
    assert_eq!(r, 1.296875);
    assert_eq!(
        probes,
        [0.5, 1.0, 2.0, 1.5, 1.25, 1.375, 1.3125, 1.28125, 1.296875]
    );
    // Never ok: lo stays 0 (0.5 fails, then [0, 0.5] halves down to width <= 0.02 * hi).
    assert_eq!(bisect_rate(|_| false), 0.0);
}

/// The capacity of one configuration of a capacity row: the bisected rate at which both
/// `itl_p99 <= slo` and `sched_delay_p50 <= 2.0` hold.
fn capacity(base: &Scenario, config: &Value, slo: f64, fit: &Value, what: &str) -> f64 {
    let mut checked = false;
    bisect_rate(|rate| {
        let sc = Scenario {
            rate,
            ..base.clone()
        };
        let w = serde_json::json!({
            "generator": "poisson_workload", "rate": rate, "n": 500,
            "prompt": fit["prompt"], "output": fit["output"], "seed": 1
        });
        let cfg = sc.build(&cat()).unwrap();
        let mine = workload(&w);
        if !checked {
            check_config(&cfg, config, what);
            check_workload(&sc, &cfg, &w, &mine, what);
            checked = true;
        }
        let run = simulate_workload(&cfg, &mine, &mut ()).unwrap();
        let s = run.summary();
        let delay = match &s.scheduler {
            Some(b) => b.sched_delay_p50_s.unwrap(),
            None => sched_delay_p50(&run),
        };
        s.itl_s.p99 <= slo && delay <= 2.0
    })
}

fn capacity_row(i: usize) {
    let s19 = &fixture()["section_19"];
    let row = &s19["capacity"]["rows"][i];
    let dataset = row["dataset"].as_str().unwrap();
    let fit = &s19["length_fits"][dataset];
    let slo = f(&row["itl_p99_slo_s"]);
    let what = format!(
        "{} | {dataset} | {}",
        row["model"].as_str().unwrap(),
        row["slo"].as_str().unwrap()
    );
    let mut got = Vec::new();
    for (label, key) in [
        ("prefill-priority (vLLM)", "prefill_priority_req_s"),
        ("chunked 512", "chunked_512_req_s"),
        ("chunked 2048", "chunked_2048_req_s"),
    ] {
        let c = &row["configs"][label];
        // The `docs/serving-model.md` preset of the policy, on the row's model, device and dataset.
        let name = match label {
            "chunked 512" => "batching-chunked-512",
            "chunked 2048" => "batching-chunked-2048",
            // The capacity rows' prefill-priority is the plain colocated instance: no budget.
            _ => "batching-prefill-priority",
        };
        let base = Scenario {
            model: c["model"].as_str().unwrap().into(),
            device: c["device"].as_str().unwrap().into(),
            devices_per_instance: u(&c["devices_per_instance"]) as u32,
            max_num_batched_tokens: c.get("max_num_batched_tokens").map(u),
            prompt: f(&fit["prompt"]["mean"]),
            prompt_cv: f(&fit["prompt"]["cv"]),
            prompt_max: u(&fit["prompt"]["hi"]),
            output: f(&fit["output"]["mean"]),
            output_cv: f(&fit["output"]["cv"]),
            output_max: u(&fit["output"]["hi"]),
            ..preset(name)
        };
        let what = format!("{what} | {label}");
        let r = capacity(&base, c, slo, fit, &what);
        assert_eq!(r, f(&row[key]), "{what}");
        got.push(r);
    }
    // The last column: best chunked over prefill-priority.
    assert_eq!(
        got[1].max(got[2]) / got[0],
        f(&row["best_chunked_over_prefill_priority"]),
        "{what}: best chunked"
    );
}

#[test]
fn s19_capacity_mistral_openchat_strict() {
    capacity_row(0);
}

#[test]
fn s19_capacity_mistral_openchat_relaxed() {
    capacity_row(1);
}

#[test]
fn s19_capacity_mistral_arxiv_strict() {
    capacity_row(2);
}

#[test]
fn s19_capacity_mistral_arxiv_relaxed() {
    capacity_row(3);
}

#[test]
fn s19_capacity_yi_openchat_strict() {
    capacity_row(4);
}

#[test]
fn s19_capacity_yi_openchat_relaxed() {
    capacity_row(5);
}

// ---------------------------------------------------------------------------------------------
// `docs/serving-model.md`: prefix caching

fn multi_turn_row(i: usize, name: &str) {
    let row = &fixture()["section_21"]["multi_turn"]["rows"][i];
    let what = row["outputs"].as_str().unwrap();
    let mut req_s = [0.0; 2];
    for (k, side) in ["off", "on"].into_iter().enumerate() {
        let what = format!("{what} {side}");
        let (sum, run) = run_row(
            &preset(&format!("{name}-{side}")),
            &row[format!("config_{side}")],
            &row["workload"],
            &what,
        );
        check_values(&sum, &run, &row[side], &what);
        req_s[k] = sum.throughput_rps;
    }
    eq(req_s[1] / req_s[0], &row["gain"], &format!("{what}: gain"));
}

#[test]
fn s21_multi_turn_short_outputs() {
    multi_turn_row(0, "prefix-multiturn-short");
}

#[test]
fn s21_multi_turn_long_outputs() {
    multi_turn_row(1, "prefix-multiturn-long");
}

fn hit_rate_row(i: usize) {
    let row = &fixture()["section_21"]["hit_rate_vs_latency"]["rows"][i];
    let len = u(&row["system_len"]);
    let what = format!("system prompts of {len} tokens");
    // Saturated throughput at 200 sessions/s, cache off and on.
    let mut sat = [0.0; 2];
    for (k, side) in ["off", "on"].into_iter().enumerate() {
        let sc = Scenario {
            rate: 200.0,
            ..preset(&format!("prefix-sys{len}-{side}"))
        };
        let what = format!("{what}, saturated, {side}");
        let (sum, _) = run_row(
            &sc,
            &row[format!("config_{side}")],
            &row["workload_saturated"],
            &what,
        );
        eq(sum.throughput_rps, &row["saturated_req_s"][side], &what);
        sat[k] = sum.throughput_rps;
    }
    eq(
        sat[1] / sat[0],
        &row["throughput_gain"],
        &format!("{what}: throughput gain"),
    );
    // The latency runs at half the saturated throughput with the cache off.
    assert_eq!(
        0.5 * sat[0],
        f(&row["latency_rate"]),
        "{what}: latency rate"
    );
    let mut ttft = [0.0; 2];
    for (k, side) in ["off", "on"].into_iter().enumerate() {
        let what = format!("{what}, {side}");
        let (sum, run) = run_row(
            &preset(&format!("prefix-sys{len}-{side}")),
            &row[format!("config_{side}")],
            &row["workload_latency"],
            &what,
        );
        check_values(&sum, &run, &row[side], &what);
        ttft[k] = sum.ttft_s.p50;
    }
    eq(
        ttft[0] / ttft[1],
        &row["ttft_gain"],
        &format!("{what}: TTFT gain"),
    );
}

#[test]
fn s21_hit_rate_system_0() {
    hit_rate_row(0);
}

#[test]
fn s21_hit_rate_system_256() {
    hit_rate_row(1);
}

#[test]
fn s21_hit_rate_system_1024() {
    hit_rate_row(2);
}

#[test]
fn s21_hit_rate_system_2048() {
    hit_rate_row(3);
}

#[test]
fn s21_hit_rate_system_4096() {
    hit_rate_row(4);
}

#[test]
fn s21_hit_rate_system_8192() {
    hit_rate_row(5);
}

fn reuse_row(i: usize) {
    let row = &fixture()["section_21"]["reuse_distance"]["rows"][i];
    let think = f(&row["think"]);
    let what = format!("think {think} s");
    let (sum, run) = run_row(
        &preset(&format!("prefix-think{think}")),
        &row["config"],
        &row["workload"],
        &what,
    );
    check_values(&sum, &run, &row["values"], &what);
}

#[test]
fn s21_reuse_think_1() {
    reuse_row(0);
}

#[test]
fn s21_reuse_think_10() {
    reuse_row(1);
}

#[test]
fn s21_reuse_think_30() {
    reuse_row(2);
}

#[test]
fn s21_reuse_think_100() {
    reuse_row(3);
}

#[test]
fn s21_reuse_think_300() {
    reuse_row(4);
}

#[test]
fn s21_tables_have_the_rows_tested() {
    let s = &fixture()["section_21"];
    let n = |k: &str| s[k]["rows"].as_array().unwrap().len();
    assert_eq!(
        (
            n("multi_turn"),
            n("hit_rate_vs_latency"),
            n("reuse_distance")
        ),
        (2, 6, 5)
    );
    assert_eq!(
        fixture()["section_19"]["capacity"]["rows"]
            .as_array()
            .unwrap()
            .len(),
        6
    );
}
