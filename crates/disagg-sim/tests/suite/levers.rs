//! Golden runs of the scheduling levers (tests/fixtures/levers, copied from shared/golden/levers):
//! each run's command line, replayed, gives every request stamp, the per-request ITL columns
//! (`n_itl`, first, largest, zeros), every summary number and the `scheduler` block bit for bit.

#[allow(unused_imports)]
use crate::golden_common;

use disagg_sim::{simulate_config, RunResult, Summary};
use golden_common::*;
use serde_json::Value;

/// The ITL columns of every request: count, first, largest, zeros.
fn check_itl_columns(g: &Value, run: &RunResult) {
    for row in g["requests"].as_array().unwrap() {
        let rid = row[0].as_u64().unwrap() as usize;
        let rejected = row[10].as_bool().unwrap();
        let r = run.request(rid);
        assert_eq!(r.finish_s.is_none(), rejected, "rid {rid} rejected");
        let itls = run.itls(rid);
        assert_eq!(
            itls.len() as u64,
            row[11].as_u64().unwrap(),
            "rid {rid} n_itl"
        );
        match itls.first() {
            None => assert!(row[12].is_null(), "rid {rid} itl_first"),
            Some(&x) => eq(x, &row[12], &format!("rid {rid} itl_first")),
        }
        let max = itls.iter().copied().fold(f64::NAN, f64::max);
        if itls.is_empty() {
            assert!(row[13].is_null(), "rid {rid} itl_max");
        } else {
            eq(max, &row[13], &format!("rid {rid} itl_max"));
        }
        let zeros = itls.iter().filter(|&&x| x == 0.0).count() as u64;
        assert_eq!(zeros, row[14].as_u64().unwrap(), "rid {rid} n_itl_zero");
    }
}

/// The scheduler block (`docs/levers.md#lever-metrics`) and the `docs/exactness.md#verification` extras (`docs/levers.md#fft-mixing`).
fn check_scheduler(g: &Value, s: &Summary) {
    let want = &g["summary"]["scheduler"];
    let got = s.scheduler.as_ref().expect("a scheduler block");
    let gv = serde_json::to_value(got).unwrap();
    for (k, w) in want.as_object().unwrap() {
        let x = &gv[k];
        match w {
            Value::Object(m) => {
                for (k2, w2) in m {
                    let x2 = &x[k2];
                    if w2.is_number() {
                        eq(f(x2), w2, &format!("scheduler.{k}.{k2}"));
                    } else {
                        assert_eq!(x2, w2, "scheduler.{k}.{k2}");
                    }
                }
            }
            Value::Number(_) => eq(f(x), w, &format!("scheduler.{k}")),
            _ => assert_eq!(x, w, "scheduler.{k}"),
        }
    }
    let sm = &g["summary"];
    eq(
        got.sched_delay_p50_s.unwrap(),
        &sm["sched_delay_p50_s"],
        "sched_delay_p50_s",
    );
    eq(
        got.norm_latency_s_per_token.unwrap(),
        &sm["norm_latency_s_per_token"],
        "norm_latency",
    );
}

fn lever_golden(name: &str) {
    let g = load_from("levers", name);
    let cfg = config(&g, None);
    assert!(cfg.levers.is_some(), "{name}: the levers are on");
    let run = simulate_config(&cfg).unwrap();
    check_requests(&g, &run, true);
    check_itl_columns(&g, &run);
    let s = run.summary();
    check_summary(&g, &s);
    check_scheduler(&g, &s);
}

#[test]
fn lv1_colocated_chunked_256_lm_head_last() {
    lever_golden("lv1_coloc_chunked256_lmlast_8b.json");
}

#[test]
fn lv2_colocated_paged_recompute() {
    lever_golden("lv2_coloc_paged_recompute_opt13b.json");
}

#[test]
fn lv3_disaggregated_paged_swap() {
    lever_golden("lv3_disagg_paged_swap_opt13b.json");
}

#[test]
fn lv4_colocated_prefix_caching_sessions() {
    lever_golden("lv4_coloc_prefix_paged_sessions_opt13b.json");
}

#[test]
fn lv5_colocated_decode_priority_max() {
    lever_golden("lv5_coloc_decode_priority_max_opt13b.json");
}

#[test]
fn lv6_disaggregated_speculative_chunked_prefix_pow2() {
    lever_golden("lv6_disagg_spec_mtp_chunked_prefix_pow2_8b.json");
}
