//! `docs/levers.md#fft-mixing` of the reference at full precision (`docs/levers.md#fft-mixing`-`docs/levers.md#ppa`, `docs/exactness.md#verification`:
//! `results_md.s11` of tests/fixtures/levers/cost-runs.json): the 30 runs of five models (the
//! Llama-3-8B transformer, Hyena-2 with a direct cache, the hybrid, the distilled Hyena-2, the
//! block-circulant Hyena-2 with either LM head) on five set-ups (colocated, disaggregated on
//! H100s, FFT work at 1/16 of the dense rate, an optical-fft prefill pool at the default engine,
//! and the optimistic engine), all with `--ppa`. Each run is replayed from its flags and every
//! number of its summary compared with f64 `==` (the core's, the `optical` and `ppa` blocks),
//! then the row's table columns.

#[allow(unused_imports)]
use crate::golden_common;

use disagg_model::Catalogue;
use disagg_sim::{simulate_config, Scenario, Summary};
use golden_common::*;
use serde_json::Value;

fn rows() -> Vec<Value> {
    load_from("levers", "cost-runs.json")["results_md"]["s11"]["rows"]
        .as_array()
        .unwrap()
        .clone()
}

fn flags(r: &Value) -> Vec<String> {
    r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

/// The `throughput` and `utilisation` blocks (check_full leaves them to the callers).
fn check_throughput(full: &Value, s: &Summary) {
    let t = &full["throughput"];
    eq(
        s.throughput_tok_s,
        &t["output_tok_per_s"],
        "output_tok_per_s",
    );
    eq(s.throughput_rps, &t["req_per_s"], "req_per_s");
    eq(s.goodput_rps, &t["goodput_req_per_s"], "goodput_req_per_s");
    eq(s.slo_attainment, &t["slo_attainment"], "slo_attainment");
    let util = full["utilisation"].as_object().unwrap();
    assert_eq!(util.len(), s.instances.len() + 1);
    for i in &s.instances {
        eq(i.utilisation, &util[&i.name], &format!("util {}", i.name));
    }
    eq(s.link_busy, &util["kv-link"], "util kv-link");
}

/// The table's columns, each from the summary the way `docs/levers.md#fft-mixing` reads it.
fn check_columns(c: &Value, s: &Summary, label: &str) {
    let at = |k: &str| format!("{label}: {k}");
    eq(s.ttft_s.p99, &c["ttft_p99_s"], &at("ttft_p99_s"));
    eq(s.tpot_s.p99, &c["tpot_p99_s"], &at("tpot_p99_s"));
    eq(
        s.goodput_rps,
        &c["goodput_req_per_s"],
        &at("goodput_req_per_s"),
    );
    eq(
        s.slo_attainment,
        &c["slo_attainment"],
        &at("slo_attainment"),
    );
    eq(
        s.j_per_token,
        &c["J_per_output_token"],
        &at("J_per_output_token"),
    );
    eq(s.avg_power_w, &c["avg_power_W"], &at("avg_power_W"));
    eq(
        s.tokens_per_j,
        &c["output_tokens_per_J"],
        &at("output_tokens_per_J"),
    );
    // `prefill-0`'s optical-bound share; 0.0 when no instance has an engine.
    let ob = s
        .optical
        .as_ref()
        .and_then(|o| o.iter().find(|i| i.name == "prefill-0"))
        .map_or(0.0, |i| i.optical_bound_frac);
    eq(
        ob,
        &c["prefill_optical_bound_frac"],
        &at("prefill_optical_bound_frac"),
    );
    let ppa = s.ppa.as_ref().expect("--ppa");
    eq(
        ppa.perf_per_kusd.expect("every device has an area"),
        &c["tok_s_per_kusd"],
        &at("tok_s_per_kusd"),
    );
}

fn check_row(k: usize) {
    let r = &rows()[k];
    let label = format!(
        "row {k} ({} / {})",
        r["table"].as_str().unwrap_or(""),
        r["row"].as_str().unwrap_or("")
    );
    let cfg = Scenario::from_flags(flags(r))
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let s = simulate_config(&cfg).unwrap().summary();
    let full = &r["summary"];
    check_full(full, &s);
    check_throughput(full, &s);
    check_optical(full, &s);
    check_ppa(full, &s);
    check_columns(&r["columns"], &s, &label);
}

#[test]
fn the_fixture_holds_thirty_rows_all_with_ppa() {
    let rows = rows();
    assert_eq!(rows.len(), 30);
    for r in &rows {
        assert!(flags(r).iter().any(|f| f == "--ppa"));
        assert!(r["summary"].get("ppa").is_some());
    }
    // An optical block exactly where a device has an engine (the optical-fft prefill pool).
    let engine = rows
        .iter()
        .filter(|r| r["summary"].get("optical").is_some())
        .count();
    assert_eq!(engine, 12);
}

macro_rules! rows {
    ($($name:ident = $k:expr;)*) => {$(
        #[test]
        fn $name() {
            check_row($k);
        }
    )*};
}

rows! {
    row00_llama3_8b_colocated = 0;
    row01_llama3_8b_disagg = 1;
    row02_llama3_8b_fft_efficiency = 2;
    row03_llama3_8b_optical_prefill = 3;
    row04_llama3_8b_optical_optimistic = 4;
    row05_hyena_colocated = 5;
    row06_hyena_disagg = 6;
    row07_hyena_fft_efficiency = 7;
    row08_hyena_optical_prefill = 8;
    row09_hyena_optical_optimistic = 9;
    row10_hybrid_colocated = 10;
    row11_hybrid_disagg = 11;
    row12_hybrid_fft_efficiency = 12;
    row13_hybrid_optical_prefill = 13;
    row14_hybrid_optical_optimistic = 14;
    row15_distilled_colocated = 15;
    row16_distilled_disagg = 16;
    row17_distilled_fft_efficiency = 17;
    row18_distilled_optical_prefill = 18;
    row19_distilled_optical_optimistic = 19;
    row20_circulant_colocated = 20;
    row21_circulant_disagg = 21;
    row22_circulant_fft_efficiency = 22;
    row23_circulant_optical_prefill = 23;
    row24_circulant_optical_optimistic = 24;
    row25_circulant_last_colocated = 25;
    row26_circulant_last_disagg = 26;
    row27_circulant_last_fft_efficiency = 27;
    row28_circulant_last_optical_prefill = 28;
    row29_circulant_last_optical_optimistic = 29;
}

/// The plain per-step decode path gives the fast macro-step path's numbers for every FFT-mixing
/// model (the fixture's disaggregated runs all use `--fast`; the plain path prices each step with
/// `decode_sum`, the fast one with `fft_decode_work` + `step_time_raw`), on an H100 prefill pool
/// and on an optical-fft one.
#[test]
fn the_plain_decode_path_equals_the_fast_one() {
    for model in [
        "llama3-8b-hyena",
        "llama3-8b-hybrid",
        "llama3-8b-hyena-dist",
        "llama3-8b-hyena-circ",
    ] {
        for dev in ["h100", "optical-fft"] {
            let base = [
                "--model",
                model,
                "--devices-per-instance",
                "1",
                "--rate",
                "8",
                "--requests",
                "200",
                "--prefill-device",
                dev,
            ];
            let run = |fast: bool| {
                let mut f: Vec<&str> = base.to_vec();
                if fast {
                    f.push("--fast");
                }
                let cfg = Scenario::from_flags(f)
                    .unwrap()
                    .build(&Catalogue::builtin())
                    .unwrap();
                simulate_config(&cfg).unwrap().summary()
            };
            let (plain, fast) = (run(false), run(true));
            let (a, b) = (
                serde_json::to_value(&plain).unwrap(),
                serde_json::to_value(&fast).unwrap(),
            );
            assert_eq!(a, b, "{model} on {dev}");
            assert!(plain.requests.completed == 200, "{model} on {dev}");
        }
    }
}

fn build(flags: &[&str]) -> disagg_sim::SimConfig {
    Scenario::from_flags(flags.iter().copied())
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap()
}

/// `--fft-efficiency` sets every device given on the command line; the `--ft-*` overrides set
/// the engine of each that has one (`docs/levers.md#fft-mixing`), and leave the others alone.
#[test]
fn engine_overrides_reach_the_devices_given() {
    let cfg = build(&[
        "--model",
        "llama3-8b-hyena",
        "--prefill-device",
        "optical-fft",
        "--decode-device",
        "a100",
        "--fft-efficiency",
        "0.25",
        "--ft-samples-per-s",
        "2e12",
        "--ft-enob",
        "10",
        "--ft-static-w",
        "30",
        "--ft-mask-rate",
        "5000",
        "--ft-detection",
        "intensity",
        "--ft-overlap",
    ]);
    let p = &cfg.pools[0].device;
    assert_eq!(p.fft_efficiency, 0.25);
    let e = p.engine.as_ref().expect("optical-fft has an engine");
    assert_eq!(e.samples_per_s, 2e12);
    assert_eq!(e.enob, 10);
    // W/2 each: 15 + 15.
    assert_eq!((e.laser_w, e.tuning_w), (15.0, 15.0));
    assert_eq!(e.mask_rate_hz, 5000.0);
    assert_eq!(e.detection, disagg_model::Detection::Intensity);
    assert!(e.overlap);
    // Untouched engine fields keep the defaults (10 and 20 fJ, 2,000,000 mask values).
    assert_eq!(
        (e.fom_dac_fj, e.fom_adc_fj, e.mask_values),
        (10.0, 20.0, 2_000_000)
    );
    // The decode pool's A100 has no engine: only the efficiency applies.
    let d = &cfg.pools[1].device;
    assert_eq!(d.fft_efficiency, 0.25);
    assert!(d.engine.is_none());
    // The pool's cost model sees the overridden engine: (15 + 15) W on each of 4 devices.
    assert_eq!(cfg.pools[0].cost.optical_static_w(), 30.0 * 4.0);

    // Without the overrides: the catalogue's engine (1e12, 8 bits, 10 + 10 W, 1031 Hz,
    // coherent, no overlap) and efficiency 1.0.
    let cfg = build(&["--model", "llama3-8b-hyena", "--device", "optical-fft"]);
    let dev = &cfg.pools[0].device;
    assert_eq!(dev.fft_efficiency, 1.0);
    let e = dev.engine.as_ref().unwrap();
    assert_eq!((e.samples_per_s, e.enob), (1e12, 8));
    assert_eq!(
        (e.laser_w, e.tuning_w, e.mask_rate_hz),
        (10.0, 10.0, 1031.0)
    );
    assert_eq!(e.detection, disagg_model::Detection::Coherent);
    assert!(!e.overlap);
    // --device alone is a device given: both pools (prefill and decode use it) take X.
    let cfg = build(&["--fft-efficiency", "0.5"]);
    assert!(cfg.pools.iter().all(|p| p.device.fft_efficiency == 0.5));
}
