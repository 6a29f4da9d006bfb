//! results.md §17 and §18 of the reference at full precision (levers-cost.md §13.2,
//! `results_md.s17` / `s18` of tests/fixtures/levers/cost-runs.json): for every workload, model
//! (decoder-only, CED with the replay on prefill, CED with the replay on decode) and pool split,
//! the analytic ceiling that starts the bisection, the SLO attainment of every rate the
//! reference's `max_sustainable_rate` evaluated, and the result (rate, bracket, simulations), all
//! with f64 `==`. Every cell is checked (about 530 simulations of 1,000 requests).

mod golden_common;

use disagg_model::Catalogue;
use disagg_sim::search::{analytic_capacity, attainment_at, max_sustainable_rate};
use disagg_sim::Scenario;
use golden_common::*;
use serde_json::Value;

fn results() -> Value {
    load_from("levers", "cost-runs.json")["results_md"].clone()
}

/// Checks one bisection cell; returns the simulations it ran.
fn check_cell(label: &str, cell: &Value) -> u32 {
    let trace = cell["trace"].as_array().unwrap();
    let flags: Vec<String> = cell["cli_flags_per_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let s = x.as_str().unwrap();
            if s == "<RATE>" {
                // Any rate: the search regenerates the workload at each rate it tries.
                format!("{:?}", f(&trace[0][0]))
            } else {
                s.to_string()
            }
        })
        .collect();
    let cfg = Scenario::from_flags(&flags)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let a = analytic_capacity(&cfg).expect("analytic ceiling");
    eq(
        a.ceiling_rps,
        &cell["analytic_ceiling"],
        &format!("{label} ceiling"),
    );
    eq(
        f(&trace[0][0]),
        &cell["analytic_ceiling"],
        "the trace starts at the ceiling",
    );
    for (k, pair) in trace.iter().enumerate() {
        let rate = f(&pair[0]);
        let got = attainment_at(&cfg, rate).unwrap();
        eq(got, &pair[1], &format!("{label} trace[{k}] at {rate}"));
    }
    let r = max_sustainable_rate(&cfg, 0.9, 0.02, 0.0, None).unwrap();
    eq(r.rate, &cell["rate"], &format!("{label} rate"));
    eq(
        r.bracket.0,
        &cell["bracket"][0],
        &format!("{label} bracket lo"),
    );
    eq(
        r.bracket.1,
        &cell["bracket"][1],
        &format!("{label} bracket hi"),
    );
    assert_eq!(
        r.simulations as u64,
        cell["simulations"].as_u64().unwrap(),
        "{label} simulations"
    );
    assert_eq!(
        r.simulations as usize,
        trace.len(),
        "{label}: one run per trace entry"
    );
    r.simulations
}

fn check_rates(what: &str, rates: &Value, models: &[&str]) -> (usize, u32) {
    let (mut cells, mut sims) = (0, 0);
    for (model, splits) in rates.as_object().unwrap() {
        if !models.contains(&model.as_str()) {
            continue;
        }
        for (split, cell) in splits.as_object().unwrap() {
            sims += check_cell(&format!("{what} {model} {split}"), cell);
            cells += 1;
        }
    }
    (cells, sims)
}

const ALL: [&str; 3] = [
    "decoder-only",
    "CED, replay on prefill",
    "CED, replay on decode",
];

#[test]
fn section_17_every_cell() {
    let s17 = &results()["s17"]["workloads"];
    let (mut cells, mut sims) = (0, 0);
    for (w, v) in s17.as_object().unwrap() {
        let (c, s) = check_rates(&format!("§17 {w}"), &v["rates"], &ALL);
        cells += c;
        sims += s;
    }
    assert_eq!((cells, sims), (60, 425));
}

#[test]
fn section_18_every_cell() {
    let s18 = &results()["s18"];
    let (cells, sims) = check_rates("§18", &s18["rates"], &ALL);
    assert_eq!((cells, sims), (12, 105));
}
