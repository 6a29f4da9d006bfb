//! The causal encoder-decoder (`docs/levers.md#ced`): every `ced.*` entry and the CED `model.*`
//! entries of the reference fixtures (copied into tests/fixtures/levers/ced.json, see the README
//! there) reproduced bit for bit, the `docs/levers.md#ced` sizes by hand, and `docs/levers.md#ced`'s prefill and `ced_step`
//! written out in this file from the model's raw shape and compared over a grid of shapes,
//! prompts, replay windows, LM-head placements and pool roles.

use disagg_model::*;
use serde_json::Value;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

/// A catalogue model with the fixture's `model_overrides` applied (`docs/cost-model.md#catalogue`: the
/// LM head, then E, W and where the replay runs).
fn model_of(cm: &Value) -> ModelSpec {
    let mut m = cat().model(cm["model"].as_str().unwrap()).unwrap().clone();
    if let Some(o) = cm.get("model_overrides") {
        if let Some(h) = o.get("prefill_lm_head") {
            m.prefill_lm_head = LmHead::parse(h.as_str().unwrap()).unwrap();
        }
        let mut c = m.ced.unwrap_or(Ced::new(0));
        if let Some(e) = o.get("ced_encoder_layers") {
            c.encoder_layers = e.as_u64().unwrap();
        }
        if let Some(w) = o.get("ced_replay") {
            c.replay = w.as_u64().unwrap();
        }
        if let Some(r) = o.get("ced_replay_on") {
            c.replay_on = ReplayOn::parse(r.as_str().unwrap()).unwrap();
        }
        m.ced = (c.encoder_layers > 0).then_some(c);
    }
    m
}

fn build(cm: &Value) -> CostModel {
    let c = cat();
    let dev = c.device(cm["device"].as_str().unwrap()).unwrap();
    let opts = CostOptions {
        prefill_only: cm
            .get("prefill_only")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        ..CostOptions::default()
    };
    CostModel::new(
        &model_of(cm),
        dev,
        cm["n_devices"].as_u64().unwrap() as u32,
        opts,
    )
    .unwrap()
}

fn entries() -> Vec<Value> {
    let v: Value = serde_json::from_str(include_str!("../fixtures/levers/ced.json")).unwrap();
    v.as_array().unwrap().clone()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

fn int(v: &Value) -> i128 {
    v.as_i64().unwrap() as i128
}

fn check_step(id: &str, s: &StepCost, out: &Value) {
    assert_eq!(s.flops, PyNum::Int(int(&out["flops"])), "{id} flops");
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
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn every_ced_fixture_entry() {
    let es = entries();
    let count = |p: &str| {
        es.iter()
            .filter(|e| e["id"].as_str().unwrap().starts_with(p))
            .count()
    };
    assert_eq!((count("ced."), count("model."), es.len()), (20, 3, 23));
    let mut seen = std::collections::BTreeMap::new();
    for e in &es {
        let id = e["id"].as_str().unwrap();
        let a = &e["args"];
        let out = &e["out"];
        let func = e["function"].as_str().unwrap();
        *seen.entry(func.to_string()).or_insert(0) += 1;
        if func == "ModelSpec (derived)" {
            let m = model_of(a);
            let c = m.ced.unwrap();
            assert_eq!(
                c.ced_kv_proj_params(&m),
                int(&out["ced_kv_proj_params"]),
                "{id}"
            );
            assert_eq!(
                c.ced_prompt_params(&m),
                int(&out["ced_prompt_params"]),
                "{id}"
            );
            assert_eq!(
                c.ced_prefill_resident_params(&m),
                int(&out["ced_prefill_resident_params"]),
                "{id}"
            );
            // The dense model's sizes are unchanged by CED (`docs/levers.md#ced`).
            if let Some(p) = out.get("params") {
                assert_eq!(m.params(), int(p), "{id}");
                assert_eq!(m.matmul_params(), int(&out["matmul_params"]), "{id}");
                assert_eq!(
                    m.kv_bytes_per_token(),
                    f(&out["kv_bytes_per_token"]),
                    "{id}"
                );
            }
            continue;
        }
        let cm = build(&e["cost_model"]);
        match func {
            "CostModel.prefill" => check_step(id, &cm.prefill(u64s(&a["prompt_lens"])), out),
            "CostModel.decode_sum" => check_step(
                id,
                &cm.decode_sum(a["ctx"].as_u64().unwrap(), a["batch"].as_u64().unwrap()),
                out,
            ),
            "CostModel.ced_step" => {
                let replay: Vec<(u64, u64)> = a["replay"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
                    .collect();
                check_step(
                    id,
                    &cm.ced_step(
                        a["ctx"].as_u64().unwrap(),
                        a["batch"].as_u64().unwrap(),
                        &replay,
                    ),
                    out,
                )
            }
            "CostModel.resident_weight_bytes" => assert_eq!(
                cm.resident_weight_bytes(),
                f(&out["resident_weight_bytes"]),
                "{id}"
            ),
            "CostModel.kv_capacity_tokens" => assert_eq!(
                cm.kv_capacity_tokens().unwrap(),
                out["kv_capacity_tokens"].as_u64().unwrap(),
                "{id}"
            ),
            other => panic!("{id}: unexpected function {other}"),
        }
    }
    let n = |k: &str| seen.get(k).copied().unwrap_or(0);
    assert_eq!(
        (
            n("CostModel.prefill"),
            n("CostModel.kv_capacity_tokens"),
            n("CostModel.ced_step"),
            n("CostModel.resident_weight_bytes"),
            n("CostModel.decode_sum"),
        ),
        (9, 4, 3, 3, 1)
    );
}

// ---------------------------------------------------------------------------------------------
// `docs/levers.md#ced` by hand.

#[test]
fn sizes_of_8_1_by_hand() {
    let c = cat();
    let m8 = c.model("llama3-8b-ced").unwrap();
    let ced = m8.ced.unwrap();
    assert_eq!(
        (ced.encoder_layers, ced.replay, ced.replay_on),
        (16, 128, ReplayOn::Prefill)
    );
    // Llama-3-8B shape: L 32, d 4096, Hkv 8, hd 128, ff 14336, V 128256, E 16.
    // kv_proj = (32 - 16) * 2 * 4096 * 8 * 128 = 16 * 8,388,608 = 134,217,728.
    assert_eq!(ced.ced_kv_proj_params(m8), 134_217_728);
    // params_per_layer = 2*4096² + 2*4096*1024 + 3*4096*14336
    //                  = 33,554,432 + 8,388,608 + 176,160,768 = 218,103,808;
    // prompt = 16 * 218,103,808 + 134,217,728 = 3,489,660,928 + 134,217,728 = 3,623,878,656.
    assert_eq!(ced.ced_prompt_params(m8), 3_623_878_656);
    // resident = prompt + V*d = 3,623,878,656 + 128,256 * 4096 (525,336,576) = 4,149,215,232.
    assert_eq!(ced.ced_prefill_resident_params(m8), 4_149_215_232);
    // Llama-3-70B shape: L 80, d 8192, Hkv 8, hd 128, E 40:
    // kv_proj = 40 * 2 * 8192 * 1024 = 671,088,640.
    let m70 = c.model("llama3-70b-ced").unwrap();
    let c70 = m70.ced.unwrap();
    assert_eq!(c70.encoder_layers, 40);
    assert_eq!(c70.ced_kv_proj_params(m70), 671_088_640);
    // replay_len = min(P, W) with W = 128.
    assert_eq!(
        [1, 127, 128, 129, 4096].map(|p| ced.replay_len(p)),
        [1, 127, 128, 128, 128]
    );
}

#[test]
fn replay_attn_is_the_tail_of_the_causal_sum() {
    // 2*layers*d*w*(2s - w + 1) by hand: layers 3, d 5, s 10, w 4:
    // 2*3*5*4 * (20 - 4 + 1) = 120 * 17 = 2040.
    assert_eq!(replay_attn(3, 5, 10, 4), 2040);
    // The closed form is the sum of 4*d*c per layer over the last w positions c = s-w+1..s.
    for (layers, d, s, w) in [
        (1, 1, 1, 1),
        (2, 7, 9, 9),
        (40, 8192, 4096, 128),
        (3, 4, 50, 1),
    ] {
        let tail: i128 = (s - w + 1..=s).map(|c| 4 * d as i128 * c as i128).sum();
        assert_eq!(replay_attn(layers, d, s, w), layers as i128 * tail);
    }
}

// ---------------------------------------------------------------------------------------------
// `docs/levers.md#ced` written out from the raw shape (nothing below calls the library's size functions).

struct Shape {
    l: i128,
    e: i128,
    d: i128,
    v: i128,
    ppl: i128,
    kvw: i128,
    w: u64,
    wb: f64,
    kvb: f64,
    last: bool,
}

fn shape(m: &ModelSpec) -> Shape {
    let d = m.d_model as i128;
    let kvw = m.n_kv_heads as i128 * (m.d_model / m.n_heads) as i128;
    let c = m.ced.unwrap();
    Shape {
        l: m.n_layers as i128,
        e: c.encoder_layers as i128,
        d,
        v: m.vocab as i128,
        ppl: (2 * d * d + 2 * d * kvw) + 3 * d * m.d_ff as i128,
        kvw,
        w: c.replay,
        wb: m.weight_bytes,
        // (2 * L * Hkv * hd) * kv_bytes
        kvb: (2 * m.n_layers as i128 * kvw) as f64 * m.kv_bytes,
        last: m.prefill_lm_head == LmHead::Last,
    }
}

impl Shape {
    fn kv_proj(&self) -> i128 {
        (self.l - self.e) * 2 * self.d * self.kvw
    }
    fn prompt(&self) -> i128 {
        self.e * self.ppl + self.kv_proj()
    }
    fn matmul(&self) -> i128 {
        self.l * self.ppl + self.v * self.d
    }
    /// wbr(T) = fl(matmul) * wb + fl(T) * (fl(d) * wb).
    fn wbr(&self, t: i128) -> f64 {
        self.matmul() as f64 * self.wb + t as f64 * (self.d as f64 * self.wb)
    }
    fn rattn(&self, layers: i128, s: i128, w: i128) -> i128 {
        2 * layers * self.d * w * (2 * s - w + 1)
    }
}

fn spec_prefill(s: &Shape, lens: &[u64], encoder_only: bool) -> (i128, f64) {
    let t: i128 = lens.iter().map(|&p| p as i128).sum();
    let mut f = 2 * s.prompt() * t;
    for &p in lens {
        let p = p as i128;
        f += ((2 * s.e) * s.d) * p * (p + 1);
    }
    if encoder_only {
        let b = ((s.prompt() as f64 * s.wb) + (t as f64 * (s.d as f64 * s.wb))) + t as f64 * s.kvb;
        return (f, b);
    }
    let dl = s.l - s.e;
    let reps: Vec<i128> = lens.iter().map(|&p| p.min(s.w) as i128).collect();
    let rt: i128 = reps.iter().sum();
    f += 2 * dl * s.ppl * rt;
    for (&p, &w) in lens.iter().zip(&reps) {
        f += s.rattn(dl, p as i128, w);
    }
    f += 2 * s.v * s.d * if s.last { lens.len() as i128 } else { rt };
    (f, s.wbr(t) + t as f64 * s.kvb)
}

fn spec_ced_step(s: &Shape, ctx: u64, b: u64, replay: &[(u64, u64)]) -> (i128, f64) {
    let (ctx, b) = (ctx as i128, b as i128);
    let rt: i128 = replay.iter().map(|r| r.1 as i128).sum();
    let mut f = 2 * s.matmul() * b + ((4 * s.l) * s.d) * (ctx + b);
    f += 2 * (s.l * s.ppl) * rt;
    f += 2 * s.v * s.d * if s.last { replay.len() as i128 } else { rt };
    for &(p, w) in replay {
        f += s.rattn(s.l, p as i128, w as i128);
    }
    let by = s.wbr(b + rt) + (ctx + b) as f64 * s.kvb;
    let sum_s: i128 = replay.iter().map(|r| r.0 as i128).sum();
    (f, by + sum_s as f64 * s.kvb)
}

/// CED variants of the two Llama-3 shapes: E, W, LM head, where the replay runs.
fn variants() -> Vec<ModelSpec> {
    let c = cat();
    let mut v = Vec::new();
    for base in ["llama3-8b", "llama3-70b"] {
        let m = c.model(base).unwrap();
        for e in [1, 16, m.n_layers - 1] {
            for w in [1, 128, 3000] {
                for head in [LmHead::All, LmHead::Last] {
                    for on in [ReplayOn::Prefill, ReplayOn::Decode] {
                        let mut x = m.clone();
                        x.prefill_lm_head = head;
                        x.ced = Some(Ced {
                            encoder_layers: e,
                            replay: w,
                            replay_on: on,
                        });
                        v.push(x);
                    }
                }
            }
        }
    }
    v
}

#[test]
fn prefill_is_the_formula_of_8_2() {
    let dev = cat().device("h100").unwrap().clone();
    let batches: [&[u64]; 5] = [
        &[1],
        &[2048],
        &[2048, 20, 1],
        &[127, 128, 129],
        &[5000, 3000],
    ];
    let mut encoder_only_cases = 0;
    for m in variants() {
        let s = shape(&m);
        for prefill_only in [false, true] {
            let opts = CostOptions {
                prefill_only,
                ..CostOptions::default()
            };
            let cm = CostModel::new(&m, &dev, 8, opts).unwrap();
            let eo = prefill_only && m.ced.unwrap().replay_on == ReplayOn::Decode;
            assert_eq!(cm.encoder_only(), eo);
            encoder_only_cases += eo as u32;
            for lens in batches {
                let (sf, sb) = spec_prefill(&s, lens, eo);
                let key = format!("{} {:?} {prefill_only} {lens:?}", m.key, m.ced);
                assert_eq!(cm.prefill_work(lens.iter().copied()), (sf, sb), "{key}");
                assert_eq!(cm.prefill(lens.iter().copied()), cm.step(sf, sb), "{key}");
            }
        }
    }
    // 2 shapes x 3 E x 3 W x 2 heads: the half with the replay on decode, on the prefill pool.
    assert_eq!(encoder_only_cases, 36);
}

#[test]
fn ced_step_is_the_formula_of_8_2() {
    let dev = cat().device("a100").unwrap().clone();
    type Case<'a> = (u64, u64, &'a [(u64, u64)]);
    let cases: [Case; 6] = [
        (0, 0, &[(1, 1)]),
        (30000, 12, &[(4096, 128)]),
        (6000, 3, &[(500, 128), (64, 64)]),
        (0, 0, &[(2048, 128), (100, 100), (7, 3)]),
        (123_456, 200, &[]),
        (1_000_000, 256, &[(32768, 3000), (1, 1)]),
    ];
    for m in variants() {
        let s = shape(&m);
        let cm = CostModel::new(&m, &dev, 8, CostOptions::default()).unwrap();
        for (ctx, b, replay) in cases {
            let (sf, sb) = spec_ced_step(&s, ctx, b, replay);
            let key = format!("{} {:?} {ctx} {b} {replay:?}", m.key, m.ced);
            assert_eq!(cm.ced_step_work(ctx, b, replay), (sf, sb), "{key}");
            assert_eq!(cm.ced_step(ctx, b, replay), cm.step(sf, sb), "{key}");
        }
        // With no replay it is decode_sum (`docs/levers.md#ced`), which CED leaves unchanged.
        assert_eq!(cm.ced_step(9000, 7, &[]), cm.decode_sum(9000, 7));
    }
}

// ---------------------------------------------------------------------------------------------
// Capacity and the pool role.

fn cm_of(key: &str, device: &str, n: u32, on: ReplayOn, prefill_only: bool) -> CostModel {
    let c = cat();
    let mut m = c.model(key).unwrap().clone();
    m.ced.as_mut().unwrap().replay_on = on;
    let opts = CostOptions {
        prefill_only,
        ..CostOptions::default()
    };
    CostModel::new(&m, c.device(device).unwrap(), n, opts).unwrap()
}

#[test]
fn capacity_uses_the_resident_weights() {
    use ReplayOn::*;
    // Encoder-only: resident = fl(35,947,282,432) * 2.0 = 71,894,564,864 B; on 4xH100:
    // free = (80e9 * 4) * 0.9 - 71,894,564,864 = 216,105,435,136; / 327,680 B = 659,501.6 -> 659,501.
    let eo = cm_of("llama3-70b-ced", "h100", 4, Decode, true);
    assert_eq!(eo.resident_weight_bytes(), 71_894_564_864.0);
    assert_eq!(eo.kv_capacity_tokens().unwrap(), 659_501);
    // Any other role or replay placement keeps the whole model resident: Llama-3-70B's 448,288
    // tokens on 4xH100 (`docs/cost-model.md#kv-capacity`), weights 2 * 70,552,387,584 B.
    for (on, po) in [(Decode, false), (Prefill, true), (Prefill, false)] {
        let cm = cm_of("llama3-70b-ced", "h100", 4, on, po);
        assert!(!cm.encoder_only());
        assert_eq!(cm.resident_weight_bytes(), 141_104_775_168.0);
        assert_eq!(cm.kv_capacity_tokens().unwrap(), 448_288);
    }
    // The whole 70B model does not fit on one H100; its encoder does (321 tokens, fixtures).
    let whole = cm_of("llama3-70b-ced", "h100", 1, Decode, false);
    assert!(whole
        .kv_capacity_tokens()
        .unwrap_err()
        .to_string()
        .contains("does not fit on 1x H100"));
    assert_eq!(
        cm_of("llama3-70b-ced", "h100", 1, Decode, true)
            .kv_capacity_tokens()
            .unwrap(),
        321
    );
    // 1xA100-40G: (40e9 * 1) * 0.9 = 36e9 < 71.9e9: even the encoder does not fit.
    let small = cm_of("llama3-70b-ced", "a100-40g", 1, Decode, true);
    assert!(small
        .kv_capacity_tokens()
        .unwrap_err()
        .to_string()
        .contains("does not fit"));
}

#[test]
fn prefill_only_changes_nothing_without_ced() {
    let c = cat();
    let dev = c.device("h100").unwrap();
    for key in ["llama3-8b", "llama3-70b", "mixtral-8x7b"] {
        let m = c.model(key).unwrap();
        let plain = CostModel::new(m, dev, 4, CostOptions::default()).unwrap();
        let po = CostModel::new(
            m,
            dev,
            4,
            CostOptions {
                prefill_only: true,
                ..CostOptions::default()
            },
        )
        .unwrap();
        assert!(!po.encoder_only());
        assert_eq!(po.resident_weight_bytes(), m.weight_bytes_total());
        assert_eq!(po.kv_capacity_tokens(), plain.kv_capacity_tokens());
        assert_eq!(po.prefill([2048, 100]), plain.prefill([2048, 100]));
    }
}

#[test]
fn prefill_only_is_serialised_only_when_set() {
    let plain = serde_json::to_string(&CostOptions::default()).unwrap();
    assert!(!plain.contains("prefill_only"), "{plain}");
    let set = CostOptions {
        prefill_only: true,
        ..CostOptions::default()
    };
    let js = serde_json::to_string(&set).unwrap();
    assert!(js.contains("\"prefill_only\":true"), "{js}");
    let back: CostOptions = serde_json::from_str(&js).unwrap();
    assert_eq!(back, set);
    let back: CostOptions = serde_json::from_str(&plain).unwrap();
    assert!(!back.prefill_only);
}
