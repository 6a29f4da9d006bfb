//! The reference's direct cost-function calls of levers-cost-fixtures.json (`docs/levers.md`
//! `docs/exactness.md#verification`) for the model catalogue (`model.*`), the quantisation lever (`quant.*`), hand-off bytes
//! (`handoff.*`), speculative decoding's cost side (`spec.*`, with layouts and formats too) and
//! the plain capacity (`plain.*`): every output field with `==`. Each entry's cost model is built
//! from its description the way the simulator builds a pool's (formats applied to the model,
//! the device's compute speed-up, the layout, the draft).

use disagg_model::*;
use serde_json::Value;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn entries() -> Vec<Value> {
    let v: Value = serde_json::from_str(include_str!("../fixtures/levers/cost.json")).unwrap();
    v.as_array().unwrap().clone()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn formats(cm: &Value) -> Formats {
    let q = |k: &str| QuantFormat::parse(cm["formats"][k].as_str().unwrap()).unwrap();
    if cm.get("formats").is_none() {
        return Formats::default();
    }
    Formats {
        weight: q("weight"),
        kv: q("kv"),
        compute: q("compute"),
    }
}

/// The model of an entry: the preset, its overrides (here only bytes per value, which must be
/// what the formats give), the formats applied.
fn model(cm: &Value) -> ModelSpec {
    let base = cat().model(cm["model"].as_str().unwrap()).unwrap().clone();
    let m = formats(cm).apply(&base);
    if let Some(o) = cm.get("model_overrides") {
        for (k, v) in o.as_object().unwrap() {
            match k.as_str() {
                "weight_bytes" => assert_eq!(m.weight_bytes, f(v), "formats give the override"),
                "kv_bytes" => assert_eq!(m.kv_bytes, f(v), "formats give the override"),
                "prefill_lm_head" => {}
                other => panic!("override {other} is not this test's"),
            }
        }
        if let Some(h) = o.get("prefill_lm_head") {
            let mut m = m;
            m.prefill_lm_head = LmHead::parse(h.as_str().unwrap()).unwrap();
            return m;
        }
    }
    m
}

fn layout(cm: &Value) -> Option<Parallel> {
    let p = cm.get("parallel")?;
    Some(Parallel {
        tp: p["tp"].as_u64().unwrap() as u32,
        pp: p["pp"].as_u64().unwrap() as u32,
        ep: p["ep"].as_u64().unwrap() as u32,
        microbatches: p["microbatches"].as_u64().map(|x| x as u32),
        expert_imbalance: f(&p["expert_imbalance"]),
        scale_up_link: p["link"].as_str().map(str::to_string),
    })
}

/// A pool's cost model (`docs/cost-model.md#parallelism`), its draft's and the draft.
fn build(cm: &Value) -> (CostModel, Option<(Draft, CostModel)>) {
    let c = cat();
    let m = model(cm);
    let dev = c.device(cm["device"].as_str().unwrap()).unwrap();
    let n = cm["n_devices"].as_u64().unwrap() as u32;
    let speedup = formats(cm).compute_speedup(dev, "decode").unwrap();
    if let Some(s) = cm.get("compute_speedup") {
        assert_eq!(speedup, f(s), "the device's units give the speed-up");
    }
    let opts = CostOptions {
        power_cap_w: cm.get("power_cap_w").map(f),
        dvfs: cm.get("dvfs").and_then(Value::as_bool).unwrap_or(false),
        compute_speedup: speedup,
        ..CostOptions::default()
    };
    let mut cost = CostModel::new(&m, dev, n, opts.clone()).unwrap();
    if let Some(l) = layout(cm) {
        l.check(&m, n, "decode", &c).unwrap();
        cost = cost.with_layout(l, &c).unwrap();
    }
    let draft = cm.get("speculative").map(|s| {
        let d = Draft::new(&m, s["draft"].as_str().unwrap(), &c).unwrap();
        let dc = d.cost_model(dev, n, &opts).unwrap();
        (d, dc)
    });
    (cost, draft)
}

fn chunks(a: &Value) -> Vec<Chunk> {
    a.get("chunks")
        .and_then(Value::as_array)
        .map(|v| {
            v.iter()
                .map(|c| Chunk {
                    p0: c[0].as_u64().unwrap(),
                    c: c[1].as_u64().unwrap(),
                    last: c[2].as_bool().unwrap(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Compares a step (and its lever fields when the fixture has them); returns the fields checked.
fn check_step(id: &str, s: &StepCost, draft_time: f64, out: &Value) -> usize {
    let mut n = 0;
    for (k, w) in out.as_object().unwrap() {
        match k.as_str() {
            "flops" => assert_eq!(
                s.flops,
                PyNum::Int(w.as_i64().unwrap() as i128),
                "{id} flops"
            ),
            "bytes" => assert_eq!(s.bytes, f(w), "{id} bytes"),
            "time" => assert_eq!(s.time_s, f(w), "{id} time"),
            "bound" => assert_eq!(s.bound.as_str(), w.as_str().unwrap(), "{id} bound"),
            "energy" => assert_eq!(s.energy_j, f(w), "{id} energy"),
            "compute_j" => assert_eq!(s.compute_j, f(w), "{id} compute_j"),
            "memory_j" => assert_eq!(s.memory_j, f(w), "{id} memory_j"),
            "comm_time" => assert_eq!(s.comm_time_s, f(w), "{id} comm_time"),
            "comm_j" => assert_eq!(s.comm_j, f(w), "{id} comm_j"),
            "draft_time" => assert_eq!(draft_time, f(w), "{id} draft_time"),
            _ => continue,
        }
        n += 1;
    }
    n
}

fn check_model(id: &str, m: &ModelSpec, out: &Value) -> usize {
    let mut n = 0;
    for (k, w) in out.as_object().unwrap() {
        let int = |x: i128| assert_eq!(x, w.as_i64().unwrap() as i128, "{id} {k}");
        let dbl = |x: f64| assert_eq!(x, f(w), "{id} {k}");
        match k.as_str() {
            "params_per_layer" => int(m.params_per_layer()),
            "layer_params" => int(m.layer_params()),
            "params" => int(m.params()),
            "matmul_params" => int(m.matmul_params()),
            "weight_bytes_total" => dbl(m.weight_bytes_total()),
            "weight_bytes_streamed" => dbl(m.weight_bytes_streamed()),
            "embedding_row_bytes" => dbl(m.embedding_row_bytes()),
            "kv_bytes_per_token" => dbl(m.kv_bytes_per_token()),
            "handoff_bytes(2048)" => dbl(m.handoff_bytes(2048)),
            "state_bytes_per_seq" => dbl(m.state_bytes_per_seq()),
            "weight_bytes" => dbl(m.weight_bytes),
            "kv_bytes" => dbl(m.kv_bytes),
            "expert_params" => int(m.moe.unwrap().expert_params(m)),
            "moe_fixed_params_per_layer" => int(m.moe.unwrap().fixed_params_per_layer(m)),
            _ if k.starts_with("experts_touched(") => {
                let t: u64 = k[16..k.len() - 1].parse().unwrap();
                dbl(m.moe.unwrap().experts_touched(t))
            }
            _ if k.starts_with("weight_bytes_read(") => {
                let t: u64 = k[18..k.len() - 1].parse().unwrap();
                dbl(m.weight_bytes_read(t))
            }
            _ if k.starts_with("expert_flops(") => {
                let t: u64 = k[13..k.len() - 1].parse().unwrap();
                dbl(m.moe.unwrap().expert_flops(m, t))
            }
            // The FFT-mixing and CED quantities are checked by their own tests.
            _ => continue,
        }
        n += 1;
    }
    n
}

#[test]
fn every_entry() {
    let es = entries();
    let count = |p: &str| {
        es.iter()
            .filter(|e| e["id"].as_str().unwrap().starts_with(p))
            .count()
    };
    assert_eq!(
        (
            count("quant."),
            count("handoff."),
            count("plain."),
            count("spec."),
            count("model.")
        ),
        (58, 14, 1, 34, 14)
    );
    let mut fields = 0;
    for e in &es {
        let id = e["id"].as_str().unwrap();
        let func = e["function"].as_str().unwrap();
        let a = &e["args"];
        let out = &e["out"];
        match func {
            "ModelSpec (derived)" => {
                let m = cat().model(a["model"].as_str().unwrap()).unwrap().clone();
                if a.get("model_overrides").is_some() {
                    continue; // FFT-mixing and CED overrides: their own tests.
                }
                fields += check_model(id, &m, out);
            }
            "ModelSpec (quantised) + CostModel rates" => {
                let cm = &e["cost_model"];
                let (c, _) = build(cm);
                fields += check_model(id, &c.model, out);
                assert_eq!(c.flops_rate(), f(&out["flops_rate"]), "{id}");
                assert_eq!(c.joules_per_flop(), f(&out["joules_per_flop"]), "{id}");
                assert_eq!(
                    c.kv_capacity_tokens().unwrap(),
                    out["kv_capacity_tokens"].as_u64().unwrap(),
                    "{id}"
                );
                fields += 3;
            }
            "CostModel.decode_sum" => {
                let (c, _) = build(&e["cost_model"]);
                let s = c.decode_sum(a["ctx"].as_u64().unwrap(), a["batch"].as_u64().unwrap());
                fields += check_step(id, &s, 0.0, out);
            }
            "CostModel.decode_sum (draft cost model)" => {
                let (_, d) = build(&e["cost_model"]);
                let (_, dc) = d.unwrap();
                let s = dc.decode_sum(a["ctx"].as_u64().unwrap(), a["batch"].as_u64().unwrap());
                fields += check_step(id, &s, 0.0, out);
            }
            "CostModel.prefill" => {
                let (c, _) = build(&e["cost_model"]);
                let lens: Vec<u64> = a["prompt_lens"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect();
                fields += check_step(id, &c.prefill(lens), 0.0, out);
            }
            "CostModel.step_spec" => {
                let (c, _) = build(&e["cost_model"]);
                let s = c.step_spec(
                    a["ctx"].as_u64().unwrap(),
                    a["batch"].as_u64().unwrap(),
                    a["c"].as_u64().unwrap(),
                    &chunks(a),
                );
                fields += check_step(id, &s, 0.0, out);
            }
            "ScheduledInstance.spec_cost" => {
                let cm = &e["cost_model"];
                let (c, d) = build(cm);
                let (draft, dc) = d.unwrap();
                let gamma = cm["speculative"]["gamma"].as_u64().unwrap();
                let (s, dt) = spec_cost(
                    &c,
                    &dc,
                    gamma,
                    a["ctx"].as_u64().unwrap(),
                    a["batch"].as_u64().unwrap(),
                    &chunks(a),
                );
                fields += check_step(id, &s, dt, out);
                if let Some(k) = out.get("kv_capacity_tokens") {
                    assert_eq!(
                        c.kv_capacity_tokens_with_draft(&draft).unwrap(),
                        k.as_u64().unwrap(),
                        "{id} capacity"
                    );
                    fields += 1;
                }
                if let Some(r) = out.get("draft_resident_bytes") {
                    assert_eq!(draft.resident_bytes, f(r), "{id} resident");
                    fields += 1;
                }
            }
            "CostModel.kv_capacity_tokens" => {
                let (c, d) = build(&e["cost_model"]);
                let got = match &d {
                    Some((draft, _)) => c.kv_capacity_tokens_with_draft(draft),
                    None => c.kv_capacity_tokens(),
                };
                match out.get("kv_capacity_tokens") {
                    Some(k) => assert_eq!(got.unwrap(), k.as_u64().unwrap(), "{id}"),
                    None => assert!(got.is_err(), "{id}"),
                }
                fields += 1;
            }
            "Simulation.make_draft" => {
                let m = cat().model(a["model"].as_str().unwrap()).unwrap().clone();
                let d = Draft::new(&m, a["draft"].as_str().unwrap(), &cat()).unwrap();
                assert_eq!(
                    d.model.n_layers,
                    out["draft_n_layers"].as_u64().unwrap(),
                    "{id}"
                );
                assert_eq!(
                    d.kv_bytes_per_token(),
                    f(&out["draft_kv_bytes_per_token"]),
                    "{id}"
                );
                assert_eq!(d.resident_bytes, f(&out["draft_resident_bytes"]), "{id}");
                assert_eq!(
                    d.model.matmul_params(),
                    out["draft_matmul_params"].as_i64().unwrap() as i128,
                    "{id}"
                );
                fields += 4;
            }
            "Simulation.transfer" => {
                let cm = &e["cost_model"];
                let c = cat();
                let base = c.model(cm["model"].as_str().unwrap()).unwrap().clone();
                let kv = cm.get("kv_format").map_or(QuantFormat::Bf16, |k| {
                    QuantFormat::parse(k.as_str().unwrap()).unwrap()
                });
                let m = Formats {
                    kv,
                    ..Formats::default()
                }
                .apply(&base);
                let link = c.link(cm["link"].as_str().unwrap()).unwrap();
                let p = a["prompt_len"].as_u64().unwrap();
                let (x, kvb) = match cm.get("speculative") {
                    None => (transfer(&m, link, None, p), m.kv_bytes_per_token()),
                    Some(s) => {
                        let d = Draft::new(&m, s["draft"].as_str().unwrap(), &c).unwrap();
                        let bytes = m.handoff_bytes(p) + p as f64 * d.kv_bytes_per_token();
                        // Both pools' capacity with the draft: one H100 per instance
                        // (`docs/levers.md#speculative`'s values).
                        let h100 = c.device("h100").unwrap();
                        let cm1 = CostModel::new(&m, h100, 1, CostOptions::default()).unwrap();
                        let cap = cm1.kv_capacity_tokens_with_draft(&d).unwrap();
                        for k in ["prefill_kv_capacity_tokens", "decode_kv_capacity_tokens"] {
                            assert_eq!(cap, out[k].as_u64().unwrap(), "{id} {k}");
                            fields += 1;
                        }
                        (
                            transfer_bytes(m.kv_bytes, link, None, p, bytes),
                            m.kv_bytes_per_token() + d.kv_bytes_per_token(),
                        )
                    }
                };
                assert_eq!(x.time_s, f(&out["seconds"]), "{id} seconds");
                assert_eq!(x.wire_bytes, f(&out["wire_bytes"]), "{id} bytes");
                assert_eq!(x.link_j, f(&out["link_j"]), "{id} link_j");
                assert_eq!(x.transit_j, f(&out["transit_j"]), "{id} transit_j");
                assert_eq!(
                    x.transit_bound,
                    out["transit_bound"].as_bool().unwrap(),
                    "{id}"
                );
                if let Some(w) = out.get("kv_bytes_per_token") {
                    assert_eq!(kvb, f(w), "{id} kvb");
                    fields += 1;
                }
                fields += 5;
            }
            other => panic!("{id}: function {other} not handled"),
        }
    }
    assert!(fields > 600, "{fields} fields compared");
}
