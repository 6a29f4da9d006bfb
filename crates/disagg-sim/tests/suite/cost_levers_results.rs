//! `docs/levers.md#ced` and `docs/serving-model.md#routing` of the reference at full precision (`docs/exactness.md#verification`,
//! `results_md.s17` / `s18` of tests/fixtures/levers/cost-runs.json): for every workload, model
//! (decoder-only, CED with the replay on prefill, CED with the replay on decode) and pool split,
//! the analytic ceiling that starts the bisection, the SLO attainment of every rate the
//! reference's `max_sustainable_rate` evaluated, and the result (rate, bracket, simulations), all
//! with f64 `==`. Every cell is checked (about 530 simulations of 1,000 requests).

#[allow(unused_imports)]
use crate::golden_common;

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

/// `docs/cost-model.md#kv-capacity`: the CED model's parameters per token, the prefill steps on 4xH100 of the
/// decoder-only model, CED with the replay on prefill and the encoder-only prefill instance, and
/// the prefill instance's resident weights and KV room on 1, 2 and 4 H100s.
#[test]
fn section_16_every_value() {
    use disagg_model::{CostModel, CostOptions, PyNum, ReplayOn};
    let s16 = &results()["s16"];
    let cat = Catalogue::builtin();
    let dense = cat.model("llama3-70b").unwrap().clone();
    let ced = cat.model("llama3-70b-ced").unwrap().clone();
    let c = ced.ced.unwrap();
    let p = &s16["params"];
    let int = |v: &Value| v.as_i64().unwrap() as i128;
    assert_eq!(dense.matmul_params(), int(&p["decoder_only_token"]));
    assert_eq!(c.ced_prompt_params(&ced), int(&p["ced_prompt_token"]));
    assert_eq!(ced.matmul_params(), int(&p["ced_decode_token"]));
    assert_eq!(c.ced_kv_proj_params(&ced), int(&p["ced_kv_proj"]));
    assert_eq!(ced.layer_params(), int(&p["layer_params"]));
    assert_eq!(ced.vocab_params(), int(&p["lm_head"]));
    assert_eq!(c.replay as i128, int(&p["replay"]));
    let on_decode = {
        let mut m = ced.clone();
        m.ced.as_mut().unwrap().replay_on = ReplayOn::Decode;
        m
    };
    let h100 = cat.device("h100").unwrap();
    let cm = |m: &disagg_model::ModelSpec, n: u32, prefill_only: bool| {
        CostModel::new(
            m,
            h100,
            n,
            CostOptions {
                prefill_only,
                ..CostOptions::default()
            },
        )
        .unwrap()
    };
    let mut n = 0;
    for (s, row) in s16["prefill_steps_4xH100"].as_object().unwrap() {
        let s: u64 = s.parse().unwrap();
        for (name, m, po) in [
            ("decoder_only", &dense, false),
            ("ced_replay_on_prefill", &ced, false),
            ("ced_encoder_only", &on_decode, true),
        ] {
            let got = cm(m, 4, po).prefill([s]);
            let w = &row[name];
            assert_eq!(got.flops, PyNum::Int(int(&w["flops"])), "{s} {name}");
            eq(got.time_s, &w["time"], &format!("{s} {name} time"));
            assert_eq!(
                got.bound.as_str(),
                w["bound"].as_str().unwrap(),
                "{s} {name}"
            );
            n += 1;
        }
    }
    for (k, row) in s16["prefill_instance_room"].as_object().unwrap() {
        let devices: u32 = k[..1].parse().unwrap();
        for (name, m, po) in [
            ("decoder_only", &dense, false),
            ("ced_replay_on_decode_prefill_instance", &on_decode, true),
        ] {
            let c = cm(m, devices, po);
            let w = &row[name];
            eq(c.resident_weight_bytes(), &w["resident_weight_bytes"], name);
            match (c.kv_capacity_tokens(), &w["kv_capacity_tokens"]) {
                (Ok(t), Value::Number(x)) => assert_eq!(Some(t), x.as_u64(), "{k} {name}"),
                (Err(e), Value::String(x)) => {
                    assert!(x.starts_with("error: "), "{x}");
                    assert!(e.to_string().ends_with(&x["error: ".len()..]), "{e} vs {x}");
                }
                other => panic!("{k} {name}: {other:?}"),
            }
            n += 1;
        }
    }
    assert_eq!(n, 9 + 6);
}

fn preset_json(name: &str) -> Value {
    serde_json::to_value(disagg_sim::presets::find(name).unwrap().scenario).unwrap()
}

fn cell_json(cell: &Value, rate: f64) -> Value {
    let flags: Vec<String> = cell["cli_flags_per_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| match x.as_str().unwrap() {
            "<RATE>" => format!("{rate:?}"),
            s => s.to_string(),
        })
        .collect();
    serde_json::to_value(Scenario::from_flags(&flags).unwrap()).unwrap()
}

/// The `docs/levers.md#ced` presets are the 3P3D cells' command lines, the `docs/serving-model.md#routing` ones the 4x2+4x4 cells' (the rate
/// is the preset's default: `plan --max-rate` searches it).
#[test]
fn the_section_17_and_18_presets_are_the_cells_flags() {
    let r = results();
    let rate = Scenario::default().rate;
    let models = [
        ("decoder-only", "decoder-only"),
        ("ced-prefill", "CED, replay on prefill"),
        ("ced-decode", "CED, replay on decode"),
    ];
    let mut n = 0;
    for (w, v) in r["s17"]["workloads"].as_object().unwrap() {
        let (p, o) = w.split_once(':').unwrap();
        for (key, label) in models {
            let cell = &v["rates"][label]["3P3D"];
            assert_eq!(
                preset_json(&format!("ced17-{p}-{o}-{key}")),
                cell_json(cell, rate),
                "{w} {label}"
            );
            n += 1;
        }
    }
    for (key, label) in models {
        let cell = &r["s18"]["rates"][label]["4x2+4x4"];
        assert_eq!(
            preset_json(&format!("ced18-{key}")),
            cell_json(cell, rate),
            "{label}"
        );
        n += 1;
    }
    assert_eq!(n, 15);
}

/// The `docs/levers.md#fft-mixing` presets are its 30 rows' command lines.
#[test]
fn the_section_11_presets_are_the_rows_flags() {
    let rows = results()["s11"]["rows"].as_array().unwrap().clone();
    let models = [
        "transformer",
        "hyena",
        "hybrid",
        "hyena-dist",
        "hyena-circ",
        "hyena-circ-last",
    ];
    let configs = [
        "colocated",
        "h100",
        "gpu-fft16",
        "engine",
        "engine-optimistic",
    ];
    assert_eq!(rows.len(), models.len() * configs.len());
    for (k, row) in rows.iter().enumerate() {
        let name = format!("optical-{}-{}", models[k / 5], configs[k % 5]);
        let flags: Vec<String> = row["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        let want = serde_json::to_value(Scenario::from_flags(&flags).unwrap()).unwrap();
        assert_eq!(preset_json(&name), want, "{name}: {}", row["row"]);
    }
}
