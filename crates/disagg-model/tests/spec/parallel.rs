//! The Parallel lever and mixture of experts (levers-cost.md §4, §5): every `par.*` and `moe.*`
//! entry of the reference fixtures (copied into tests/fixtures/levers/parallel.json, see the
//! README there) reproduced bit for bit, plus the spec's worked values and formulas written out.

use disagg_model::*;
use serde_json::Value;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

/// Mixtral-8x7B from levers-cost.md §3.2: L 32, d 4096, H 32, Hkv 8, ff 14336, V 32000 (not in
/// the built-in catalogue yet).
fn mixtral() -> ModelSpec {
    let mut m = cat().model("llama3-8b").unwrap().clone();
    m.key = "mixtral-8x7b".into();
    m.name = "Mixtral-8x7B".into();
    m.vocab = 32000;
    m
}

fn model_of(key: &str) -> (ModelSpec, Option<Moe>) {
    if key == "mixtral-8x7b" {
        (mixtral(), Some(Moe::mixtral()))
    } else {
        (cat().model(key).unwrap().clone(), None)
    }
}

fn layout_of(v: &Value) -> Option<Parallel> {
    let p = v.get("parallel")?;
    Some(Parallel {
        tp: p["tp"].as_u64().unwrap() as u32,
        pp: p["pp"].as_u64().unwrap() as u32,
        ep: p["ep"].as_u64().unwrap() as u32,
        microbatches: p["microbatches"].as_u64().map(|x| x as u32),
        expert_imbalance: p["expert_imbalance"].as_f64().unwrap(),
        scale_up_link: p["link"].as_str().map(str::to_string),
    })
}

fn build(cm: &Value) -> ParallelCost {
    let c = cat();
    let (m, moe) = model_of(cm["model"].as_str().unwrap());
    let dev = c.device(cm["device"].as_str().unwrap()).unwrap();
    let n = cm["n_devices"].as_u64().unwrap() as u32;
    let opts = CostOptions {
        power_cap_w: cm.get("power_cap_w").and_then(Value::as_f64),
        dvfs: cm.get("dvfs").and_then(Value::as_bool).unwrap_or(false),
        ..CostOptions::default()
    };
    let layout = layout_of(cm);
    if let Some(l) = &layout {
        l.check(&m, moe.as_ref(), n, "prefill", &c).unwrap();
    }
    ParallelCost::new(&m, moe, dev, n, opts, layout, &c).unwrap()
}

fn entries() -> Vec<Value> {
    let v: Value = serde_json::from_str(include_str!("../fixtures/levers/parallel.json")).unwrap();
    v.as_array().unwrap().clone()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

fn check_step(id: &str, got: &LeverStep, out: &Value) {
    let s = &got.step;
    assert_eq!(
        s.flops,
        PyNum::Int(out["flops"].as_i64().unwrap() as i128),
        "{id} flops"
    );
    assert_eq!(s.bytes, f(&out["bytes"]), "{id} bytes");
    assert_eq!(s.time_s, f(&out["time"]), "{id} time");
    assert_eq!(
        s.bound.as_str(),
        out["bound"].as_str().unwrap(),
        "{id} bound"
    );
    assert_eq!(s.energy_j, f(&out["energy"]), "{id} energy");
    assert_eq!(s.compute_j, f(&out["compute_j"]), "{id} compute_j");
    assert_eq!(s.memory_j, f(&out["memory_j"]), "{id} memory_j");
    // Entries without a layout are plain steps: no comm fields in the reference's output.
    let z = Value::from(0.0);
    assert_eq!(
        got.comm_time_s,
        f(out.get("comm_time").unwrap_or(&z)),
        "{id} comm_time"
    );
    assert_eq!(
        got.comm_j,
        f(out.get("comm_j").unwrap_or(&z)),
        "{id} comm_j"
    );
    assert_eq!(
        got.draft_time_s,
        f(out.get("draft_time").unwrap_or(&z)),
        "{id} draft_time"
    );
}

#[test]
fn every_par_and_moe_fixture_entry() {
    let es = entries();
    let count = |p: &str| {
        es.iter()
            .filter(|e| e["id"].as_str().unwrap().starts_with(p))
            .count()
    };
    assert_eq!((count("par."), count("moe."), es.len()), (48, 19, 67));
    let mut failed = Vec::new();
    for e in &es {
        let id = e["id"].as_str().unwrap();
        let pc = build(&e["cost_model"]);
        let a = &e["args"];
        let out = &e["out"];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match e["function"].as_str().unwrap() {
                "CostModel.prefill" => {
                    let lens: Vec<u64> = a["prompt_lens"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap())
                        .collect();
                    check_step(id, &pc.prefill(&lens), out)
                }
                "CostModel.decode_sum" => check_step(
                    id,
                    &pc.decode_sum(a["ctx"].as_u64().unwrap(), a["batch"].as_u64().unwrap()),
                    out,
                ),
                "CostModel.step_mixed" => {
                    let chunks: Vec<Chunk> = a["chunks"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|c| Chunk {
                            p0: c[0].as_u64().unwrap(),
                            c: c[1].as_u64().unwrap(),
                            last: c[2].as_bool().unwrap(),
                        })
                        .collect();
                    check_step(
                        id,
                        &pc.step_mixed(
                            a["ctx"].as_u64().unwrap(),
                            a["batch"].as_u64().unwrap(),
                            &chunks,
                        ),
                        out,
                    )
                }
                "CostModel.kv_capacity_tokens" => match out.get("error") {
                    Some(msg) => assert_eq!(
                        pc.kv_capacity_tokens().unwrap_err().to_string(),
                        format!("model: {}", msg.as_str().unwrap()),
                        "{id}"
                    ),
                    None => assert_eq!(
                        pc.kv_capacity_tokens().unwrap(),
                        out["kv_capacity_tokens"].as_u64().unwrap(),
                        "{id}"
                    ),
                },
                other => panic!("{id}: unexpected function {other}"),
            }
        }));
        if r.is_err() {
            failed.push(id.to_string());
        }
    }
    assert!(failed.is_empty(), "{} failed: {failed:?}", failed.len());
}
