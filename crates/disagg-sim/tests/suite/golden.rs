//! Golden runs of the reference simulator (tests/fixtures/golden, copied from shared/golden): the
//! generated workload, every request's stamps and every summary number we produce must be
//! bit-identical.

#[allow(unused_imports)]
use crate::golden_common;

use disagg_sim::simulate;
use golden_common::*;

/// The whole golden check with the decode path the fixture used.
fn golden(name: &str) {
    let g = load(name);
    let cfg = config(&g, None);
    let wl = check_workload(&g, &cfg);
    let run = simulate(&cfg, &wl).unwrap();
    assert_eq!(check_requests(&g, &run, true), 0);
    check_summary(&g, &run.summary());
}

#[test]
fn g4_eth25g_saturated_fast() {
    golden("g4_8b_eth25g_saturated_14rps.json");
}

#[test]
fn g4_eth25g_saturated_plain_path_too() {
    // The fixture records that the plain decode loop gives identical stamps here.
    let g = load("g4_8b_eth25g_saturated_14rps.json");
    let cfg = config(&g, Some(false));
    let run = simulate(&cfg, &cfg.generate_workload()).unwrap();
    assert_eq!(check_requests(&g, &run, true), 0);
    check_summary(&g, &run.summary());
}

#[test]
fn g5_eth25g_fp8_transit_fast() {
    golden("g5_8b_eth25g_fp8_transit_14rps.json");
}

#[test]
fn g5_plain_path_too() {
    let g = load("g5_8b_eth25g_fp8_transit_14rps.json");
    let cfg = config(&g, Some(false));
    let run = simulate(&cfg, &cfg.generate_workload()).unwrap();
    assert_eq!(check_requests(&g, &run, true), 0);
    check_summary(&g, &run.summary());
}

#[test]
fn g2_hetero_fast() {
    golden("g2_8b_hetero_h100_prefill_a100_decode.json");
}

#[test]
fn g2_plain_path_differs_only_in_last_bits() {
    // `docs/serving-model.md#event-order` item 8: on this run the plain loop differs from the fast path in the last
    // bits of some early requests' stamps, while every summary number is identical.
    let g = load("g2_8b_hetero_h100_prefill_a100_decode.json");
    let cfg = config(&g, Some(false));
    let run = simulate(&cfg, &cfg.generate_workload()).unwrap();
    let bad = check_requests(&g, &run, false);
    // The spec measured 38 such requests.
    assert_eq!(bad, 38, "{bad} requests differ");
    check_summary(&g, &run.summary());
}

#[test]
fn g7_colocated_plain() {
    golden("g7_70b_colocated_x2.json");
}

#[test]
fn g7_colocated_ignores_fast() {
    // --fast only changes disaggregated decode instances.
    let g = load("g7_70b_colocated_x2.json");
    let cfg = config(&g, Some(true));
    let run = simulate(&cfg, &cfg.generate_workload()).unwrap();
    assert_eq!(check_requests(&g, &run, true), 0);
}

#[test]
fn replaying_the_workload_rows_gives_the_same_stamps() {
    let g = load("g4_8b_eth25g_saturated_14rps.json");
    let cfg = config(&g, None);
    let wl: Vec<disagg_sim::GenRequest> = g["workload"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(rid, r)| disagg_sim::GenRequest {
            rid,
            arrival_s: f(&r[0]),
            prompt_len: r[1].as_u64().unwrap() as u32,
            output_len: r[2].as_u64().unwrap() as u32,
        })
        .collect();
    let run = simulate(&cfg, &wl).unwrap();
    assert_eq!(check_requests(&g, &run, true), 0);
}
