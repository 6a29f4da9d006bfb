//! The Parallel lever and mixture of experts (`docs/cost-model.md#moe`, `docs/cost-model.md#parallelism`): every `par.*` and `moe.*`
//! entry of the reference fixtures (copied into tests/fixtures/levers/parallel.json, see the
//! README there) reproduced bit for bit, plus the spec's worked values and formulas written out.

use disagg_model::*;
use serde_json::Value;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

/// Mixtral-8x7B from the built-in catalogue (`docs/cost-model.md#catalogue`).
fn mixtral() -> ModelSpec {
    cat().model("mixtral-8x7b").unwrap().clone()
}

fn model_of(key: &str) -> (ModelSpec, Option<Moe>) {
    let m = cat().model(key).unwrap().clone();
    let moe = m.moe;
    (m, moe)
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
    let (m, _) = model_of(cm["model"].as_str().unwrap());
    let dev = c.device(cm["device"].as_str().unwrap()).unwrap();
    let n = cm["n_devices"].as_u64().unwrap() as u32;
    let opts = CostOptions {
        power_cap_w: cm.get("power_cap_w").and_then(Value::as_f64),
        dvfs: cm.get("dvfs").and_then(Value::as_bool).unwrap_or(false),
        ..CostOptions::default()
    };
    let layout = layout_of(cm);
    if let Some(l) = &layout {
        l.check(&m, n, "prefill", &c).unwrap();
    }
    ParallelCost::new(&m, dev, n, opts, layout, &c).unwrap()
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

// ---------------------------------------------------------------------------------------------
// R1: Python's int / int, correctly rounded (`docs/exactness.md#integer-flops`). Expected values are CPython's
// `a / b` on the same integers.

#[test]
fn int_div_is_correctly_rounded() {
    assert_eq!(int_div(0, 5), 0.0);
    assert_eq!(int_div(7, 2), 3.5);
    assert_eq!(int_div(1, 3), 0.3333333333333333);
    assert_eq!(int_div(2, 3), 0.6666666666666666);
    // 2(tp-1)/tp of the ring all-reduce: 6/4 = 1.5, 14/8 = 1.75.
    assert_eq!(int_div(6, 4), 1.5);
    assert_eq!(int_div(14, 8), 1.75);
    // Above 2^53: 2^53 + 1 is a tie between 2^53 and 2^53 + 2 (to even: 2^53); 2^53 + 3 a tie
    // between 2^53 + 2 and 2^53 + 4 (to even: 2^53 + 4).
    assert_eq!(int_div((1 << 53) + 1, 1), 9007199254740992.0);
    assert_eq!(int_div((1 << 53) + 3, 1), 9007199254740996.0);
    // Where fl(a) / fl(b) is off by an ulp (CPython: 2.6000999431748698e+17, while
    // float(a) / float(b) = 2.6000999431748694e+17).
    let a: i128 = 589182647123425453728;
    assert_eq!((a as f64) / 2266.0, 2.6000999431748694e+17);
    assert_eq!(int_div(a, 2266), 2.6000999431748698e+17);
    let a: i128 = 1027928714820674081584;
    assert_eq!((a as f64) / 1216.0, 8.453361141617386e+17);
    assert_eq!(int_div(a, 1216), 8.453361141617385e+17);
    // A quotient far above 56 bits (the shift goes the other way): (2^100 + 1) / 3.
    assert_eq!(int_div((1 << 100) + 1, 3), 4.2255020007607644e+29);
    // Exact quotients stay exact.
    assert_eq!(int_div(2365414583566336, 4), 591353645891584.0);
}

// ---------------------------------------------------------------------------------------------
// `docs/cost-model.md#catalogue` / `docs/cost-model.md#moe`: the Mixtral shape's derived quantities, the spec's table.

#[test]
fn mixtral_derived_quantities() {
    let m = mixtral();
    let x = Moe::mixtral();
    // 3 * 4096 * 14336
    assert_eq!(x.expert_params(&m), 176_160_768);
    // (2*4096^2 + 2*4096*1024) + 4096*8 = 33,554,432 + 8,388,608 + 32,768
    assert_eq!(x.fixed_params_per_layer(&m), 41_975_808);
    assert_eq!(x.params_per_layer(&m), 394_297_344);
    assert_eq!(x.layer_params(&m), 12_617_515_008);
    assert_eq!(x.matmul_params(&m), 12_748_587_008);
    assert_eq!(x.params(&m), 46_702_526_464);
    // 41,975,808 + 8 * 176,160,768
    assert_eq!(x.resident_params_per_layer(&m), 1_451_261_952);
    assert_eq!(x.weight_bytes_total(&m), 93_405_052_928.0);
    // A shared expert counts in the fixed part and in the active part.
    let s = Moe {
        n_shared_experts: 1,
        ..x
    };
    assert_eq!(s.fixed_params_per_layer(&m), 41_975_808 + 176_160_768);
    assert_eq!(s.params_per_layer(&m), 394_297_344 + 176_160_768);
}

#[test]
fn experts_touched_and_weight_bytes_read() {
    let m = mixtral();
    let x = Moe::mixtral();
    for (t, et) in [
        (0, 0.0),
        (1, 2.0),
        (2, 3.5),
        (4, 5.46875),
        (8, 7.1990966796875),
        (64, 7.999999919274481),
        (8192, 8.0),
    ] {
        assert_eq!(x.experts_touched(t), et, "et({t})");
    }
    for (t, wbr) in [
        (1, 25_497_182_208.0),
        (4, 64_604_897_280.0),
        (32, 93_134_110_834.451_25),
        (8192, 93_210_017_792.0),
    ] {
        assert_eq!(x.weight_bytes_read(&m, t), wbr, "wbr({t})");
    }
    // (((2.0 * 32) * 2) * 176,160,768) * 3 = 67,645,734,912
    assert_eq!(x.expert_flops(&m, 3), 67_645_734_912.0);
}

#[test]
fn moe_validation() {
    assert!(Moe::mixtral().validate().is_ok());
    let k0 = Moe {
        top_k: 0,
        ..Moe::mixtral()
    };
    let k9 = Moe {
        top_k: 9,
        ..Moe::mixtral()
    };
    let k8 = Moe {
        top_k: 8,
        ..Moe::mixtral()
    };
    assert!(k0.validate().is_err());
    assert!(k9.validate().is_err());
    assert!(k8.validate().is_ok());
    let k1 = Moe {
        top_k: 1,
        ..Moe::mixtral()
    };
    assert!(k1.validate().is_ok());
    let c = cat();
    let dev = c.device("h100").unwrap();
    assert!(ParallelCost::new(
        &ModelSpec {
            moe: Some(k9),
            ..mixtral()
        },
        dev,
        2,
        CostOptions::default(),
        None,
        &c
    )
    .is_err());
}

// ---------------------------------------------------------------------------------------------
// `docs/cost-model.md#parallelism`: validation, in order, one-line messages.

fn chk(p: &Parallel, moe: bool, n: u32) -> String {
    let m = if moe {
        mixtral()
    } else {
        cat().model("llama3-70b").unwrap().clone()
    };
    match p.check(&m, n, "decode", &cat()) {
        Ok(()) => "ok".into(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn parallel_check_messages_in_order() {
    let d = Parallel::default();
    assert_eq!(
        d,
        Parallel {
            tp: 1,
            pp: 1,
            ep: 1,
            microbatches: None,
            expert_imbalance: 1.0,
            scale_up_link: None
        }
    );
    assert_eq!(chk(&d, false, 1), "ok");
    let at_least = "decode pool: tp, pp and microbatches must be at least 1";
    assert_eq!(chk(&Parallel { tp: 0, ..d.clone() }, false, 0), at_least);
    assert_eq!(chk(&Parallel { pp: 0, ..d.clone() }, false, 0), at_least);
    let mb0 = Parallel {
        microbatches: Some(0),
        ..d.clone()
    };
    assert_eq!(chk(&mb0, false, 1), at_least);
    let mb1 = Parallel {
        microbatches: Some(1),
        ..d.clone()
    };
    assert_eq!(chk(&mb1, false, 1), "ok");
    let tp2pp2 = Parallel {
        tp: 2,
        pp: 2,
        ..d.clone()
    };
    assert_eq!(
        chk(&tp2pp2, false, 2),
        "decode pool: parallel tp=2 x pp=2 needs 4 devices per instance (got 2)"
    );
    assert_eq!(chk(&tp2pp2, false, 4), "ok");
    let ep3 = Parallel {
        tp: 2,
        ep: 3,
        ..d.clone()
    };
    assert_eq!(
        chk(&ep3, true, 2),
        "decode pool: ep must be 1 (experts split by TP) or equal to tp (whole experts per GPU)"
    );
    let ep2 = Parallel {
        tp: 2,
        ep: 2,
        ..d.clone()
    };
    assert_eq!(
        chk(&ep2, false, 2),
        "decode pool: expert parallelism needs a mixture-of-experts model"
    );
    assert_eq!(chk(&ep2, true, 2), "ok");
    let low = Parallel {
        expert_imbalance: 0.99,
        ..ep2.clone()
    };
    assert_eq!(
        chk(&low, true, 2),
        "decode pool: expert_imbalance is the busiest GPU's load over the mean: at least 1"
    );
    let one = Parallel {
        expert_imbalance: 1.0,
        ..ep2.clone()
    };
    assert_eq!(chk(&one, true, 2), "ok");
    // 80 layers into 3 stages.
    let pp3 = Parallel { pp: 3, ..d.clone() };
    assert_eq!(
        chk(&pp3, false, 3),
        "decode pool: Llama-3-70B has 80 layers: not divisible into 3 stages"
    );
    let bad_link = Parallel {
        scale_up_link: Some("warp".into()),
        ..d.clone()
    };
    assert_eq!(
        chk(&bad_link, false, 1),
        "decode pool: unknown scale-up link 'warp'"
    );
    let pcie = Parallel {
        scale_up_link: Some("pcie5".into()),
        ..d.clone()
    };
    assert_eq!(chk(&pcie, false, 1), "ok");
    // Order: the device count is checked before ep, ep before the imbalance.
    let both = Parallel {
        tp: 2,
        ep: 3,
        expert_imbalance: 0.5,
        ..d.clone()
    };
    assert_eq!(
        chk(&both, false, 3),
        "decode pool: parallel tp=2 x pp=1 needs 2 devices per instance (got 3)"
    );
    assert!(chk(&both, false, 2).contains("ep must be 1"));
}

#[test]
fn scale_up_link_defaults_to_the_devices() {
    let c = cat();
    let d = Parallel::default();
    let name = |dev: &str, p: &Parallel| p.link(c.device(dev).unwrap(), &c).unwrap().key.clone();
    assert_eq!(name("h100", &d), "nvlink4");
    assert_eq!(name("a100", &d), "nvlink3");
    assert_eq!(name("b200", &d), "nvlink5");
    let p = Parallel {
        scale_up_link: Some("pcie5".into()),
        ..d
    };
    assert_eq!(name("h100", &p), "pcie5");
}

// ---------------------------------------------------------------------------------------------
// `docs/cost-model.md#parallelism` written out on small cases.

fn pc(model: &str, dev: &str, n: u32, p: Option<Parallel>) -> ParallelCost {
    let c = cat();
    let (m, _) = model_of(model);
    ParallelCost::new(&m, c.device(dev).unwrap(), n, CostOptions::default(), p, &c).unwrap()
}

#[test]
fn tp4_decode_worked_example() {
    // `docs/cost-model.md#parallelism`: Llama-3-70B decode b = 1, ctx 2048, TP4 on 4xH100 (nvlink4: 450e9 B/s, 5e-6 s,
    // 5 pJ/bit). act = 1 x 8192 x 2.0 = 16384.0; 160 all-reduces of
    // (1.5 x 16384.0)/450e9 + 6 x 5e-6 each.
    let p = pc(
        "llama3-70b",
        "h100",
        4,
        Some(Parallel {
            tp: 4,
            ..Parallel::default()
        }),
    );
    let s = p.decode_sum(2048, 1);
    let one = (1.5 * 16384.0) / 450e9 + 6.0 * 5e-6;
    assert_eq!(one, 3.0054613333333337e-05);
    assert_eq!(s.comm_time_s, 1.0 * (160.0 * one + 0.0));
    assert_eq!(s.comm_time_s, 0.004808738133333334);
    // 160 x 2 x 3 x 16384 bytes, x 8 bits, x 5 pJ.
    assert_eq!(
        s.comm_j,
        (((160.0 * 2.0 * 3.0 * 16384.0) * 8.0) * 5.0) * 1e-12
    );
    assert_eq!(s.step.time_s, 0.018338109548258708);
    assert_eq!(s.draft_time_s, 0.0);
    // Without the lever the step is the plain one.
    let plain = pc("llama3-70b", "h100", 4, None).decode_sum(2048, 1);
    assert_eq!(plain.step.time_s, 0.013529371414925374);
    assert_eq!((plain.comm_time_s, plain.comm_j), (0.0, 0.0));
}

#[test]
fn empty_pass_and_zero_microbatches() {
    // Decode of b = 0 rows on PP2 (tp 1): mb = min(pp, max(1, 0)) = 1, act = (0/1)*d*2 = 0.0,
    // no all-reduce (tp 1), hop = 0/bw + 5e-6, slots = 1 + 2 - 1 = 2: comm_time = 2 x 5e-6;
    // comm bytes = 2 x 0 + 1 x 0.0 = 0.
    let pp2 = Parallel {
        pp: 2,
        ..Parallel::default()
    };
    let s = pc("llama3-8b", "h100", 2, Some(pp2.clone())).decode_sum(100, 0);
    assert_eq!(s.comm_time_s, 2.0 * 5e-6);
    assert_eq!(s.comm_j, 0.0);
    // microbatches = Some(0) falls back to pp, exactly like None.
    let mb0 = Parallel {
        microbatches: Some(0),
        ..pp2.clone()
    };
    let a = pc("llama3-8b", "h100", 2, Some(mb0)).prefill(&[1000, 999]);
    let b = pc("llama3-8b", "h100", 2, Some(pp2)).prefill(&[1000, 999]);
    assert_eq!(a, b);
    // mb = 2 micro-batches (of 999.5 tokens each): bytes = 2 x Wb + Ob.
    let m = cat().model("llama3-8b").unwrap().clone();
    let wb = m.weight_bytes_streamed() + 1999.0 * m.embedding_row_bytes();
    assert_eq!(a.step.bytes, (2.0 * wb) + 1999.0 * m.kv_bytes_per_token());
    // act = (1999/2) * 4096 * 2.0; comm bytes = mb*(pp-1)*act = 2 * act.
    let act = (999.5 * 4096.0) * 2.0;
    assert_eq!(a.comm_j, (((2.0 * act) * 8.0) * 5.0) * 1e-12);
    // slots = 2 + 2 - 1 = 3 hops.
    assert_eq!(a.comm_time_s, 3.0 * ((act / 450e9) + 5e-6));
}

#[test]
fn passes_count_tokens_and_kv_positions() {
    let p = pc("llama3-8b", "h100", 1, None);
    let ch = [
        Chunk {
            p0: 0,
            c: 1024,
            last: true,
        },
        Chunk {
            p0: 512,
            c: 256,
            last: false,
        },
    ];
    let q = p.mixed_pass(20000, 10, &ch);
    // t = 10 + 1024 + 256; k = 20000 + 10 + (0 + 1024) + (512 + 256)
    assert_eq!((q.t, q.k), (1290, 21802));
    assert_eq!(q.f, p.base.step_mixed_work(20000, 10, &ch).0);
    let d = p.decode_pass(300, 3);
    assert_eq!((d.t, d.k), (3, 303));
    let f = p.prefill_pass(&[5, 7]);
    assert_eq!((f.t, f.k), (12, 12));
    // Dense, no layout: the plain cost model's steps, unchanged.
    assert_eq!(p.decode_sum(300, 3).step, p.base.decode_sum(300, 3));
    assert_eq!(p.prefill(&[5, 7]).step, p.base.prefill([5, 7]));
    assert_eq!(
        p.step_mixed(20000, 10, &ch).step,
        p.base.step_mixed(20000, 10, &ch)
    );
    // MoE: two more (or fewer) active parameters per token: 2*(L*ppl_moe - L*ppl_dense)*t.
    let mx = pc("mixtral-8x7b", "h100", 2, None);
    let m = mixtral();
    let dense_m = ModelSpec {
        moe: None,
        ..m.clone()
    };
    let h100 = cat().device("h100").unwrap().clone();
    let dense = CostModel::new(&dense_m, &h100, 2, CostOptions::default())
        .unwrap()
        .decode_work(300, 3)
        .0;
    let delta = 2 * (12_617_515_008 - dense_m.layer_params()) * 3;
    assert_eq!(mx.decode_pass(300, 3).f, dense + delta);
}

#[test]
fn moe_capacity_without_a_layout() {
    // All experts resident: (80e9*2)*0.9 - 93,405,052,928 = 50,594,947,072 free;
    // // 131,072 B/token = 386,008.
    assert_eq!(
        pc("mixtral-8x7b", "h100", 2, None).kv_capacity_tokens(),
        Ok(386_008)
    );
    assert_eq!(
        pc("mixtral-8x7b", "a100-40g", 2, None)
            .kv_capacity_tokens()
            .unwrap_err()
            .to_string(),
        "model: Mixtral-8x7B does not fit on 2x A100-SXM-40GB"
    );
    // A dense model without a layout is cost-model `docs/cost-model.md#catalogue`.
    let p = pc("llama3-70b", "h100", 4, None);
    assert_eq!(p.kv_capacity_tokens(), p.base.kv_capacity_tokens());
}

#[test]
fn int_div_sticky_bit_and_wide_shifts() {
    // Quotient 2^56 + 8 after the right shift with a zero remainder: a tie, to even = 2^100
    // (CPython: (2**100 + 2**47) / 1 == 2.0**100). A stray sticky bit would round up.
    assert_eq!(int_div((1 << 100) + (1 << 47), 1), 2f64.powi(100));
    // Numerator and denominator both wide: (2^100 + 1) / 2^99 = 2 + 2^-99, rounds to 2.0.
    assert_eq!(int_div((1 << 100) + 1, 1 << 99), 2.0);
    // (2^100 + 2^48) / 1: exactly representable, stays.
    assert_eq!(
        int_div((1 << 100) + (1 << 48), 1),
        2f64.powi(100) + 2f64.powi(48)
    );
}

#[test]
fn imbalance_on_a_pipeline_written_out() {
    // `docs/cost-model.md#parallelism` steps 1-5 and 16-18 written out for Mixtral on 4xH100, TP2 x PP2, EP2, XI 1.5,
    // prefill [2048]x4: mb = 2, slots = 3, Feff = fl(F) + expert_flops(T) * 0.5,
    // slot = stage.step_time_raw(Feff / fl(4), Wb/2 + Ob/4), compute energy scaled by F/Feff.
    let c = cat();
    let dev = c.device("h100").unwrap();
    let (m, x) = (mixtral(), Moe::mixtral());
    let lay = Parallel {
        tp: 2,
        pp: 2,
        ep: 2,
        expert_imbalance: 1.5,
        ..Parallel::default()
    };
    let p = ParallelCost::new(&m, dev, 4, CostOptions::default(), Some(lay), &c).unwrap();
    let lens = [2048u64; 4];
    let s = p.prefill(&lens);
    let f: i128 = 213_273_043_533_824; // the moe.* prefill fixture's FLOPs
    assert_eq!(s.step.flops, PyNum::Int(f));
    let t = 8192u64;
    let feff = f as f64 + x.expert_flops(&m, t) * (1.5 - 1.0);
    let wb = x.weight_bytes_read(&m, t);
    let ob = 8192.0 * m.kv_bytes_per_token();
    let stage = CostModel::new(
        &m,
        dev,
        2,
        CostOptions {
            step_overhead_s: 0.0,
            ..CostOptions::default()
        },
    )
    .unwrap();
    let r = stage.step_time_raw(feff / 4.0, (wb / 2.0) + (ob / 4.0));
    assert_eq!(s.step.time_s, ((3.0 * r.t) + s.comm_time_s) + 0.5e-3);
    let ec = r.ec * (f as f64 / feff);
    assert_eq!(s.step.compute_j, 4.0 * ec);
    assert_eq!(s.step.memory_j, 4.0 * r.em);
    assert_eq!(s.step.energy_j, 4.0 * (ec + r.em));
    assert_eq!(s.step.bytes, (2.0 * wb) + ob);
    // The same layout without imbalance: comm identical, the slot from F / 4 exactly.
    let lay1 = Parallel {
        tp: 2,
        pp: 2,
        ep: 2,
        ..Parallel::default()
    };
    let p1 = ParallelCost::new(&m, dev, 4, CostOptions::default(), Some(lay1), &c).unwrap();
    let s1 = p1.prefill(&lens);
    assert_eq!(s1.comm_time_s, s.comm_time_s);
    assert_eq!(s1.step.time_s, 0.15946689177695497); // fixture moe.mixtral.h100x4.tp2pp2ep2
    assert!(s.step.time_s > s1.step.time_s);
}

#[test]
fn the_layout_names_its_scale_up_link() {
    let c = cat();
    let m = c.model("llama3-70b").unwrap();
    let plain = CostModel::new(m, c.device("h100").unwrap(), 4, CostOptions::default()).unwrap();
    assert_eq!(plain.layout(), None);
    assert_eq!(plain.scale_up_link_name(), None);
    let tp4 = Parallel {
        tp: 4,
        ..Parallel::default()
    };
    let cm = plain.clone().with_layout(tp4.clone(), &c).unwrap();
    assert_eq!(cm.layout(), Some(&tp4));
    assert_eq!(
        cm.scale_up_link_name().as_deref(),
        Some("NVLink 4 (one direction)")
    );
    let b200 = CostModel::new(m, c.device("b200").unwrap(), 4, CostOptions::default())
        .unwrap()
        .with_layout(tp4.clone(), &c)
        .unwrap();
    assert_eq!(
        b200.scale_up_link_name().as_deref(),
        Some("NVLink 5 (one direction)")
    );
    let pcie = Parallel {
        scale_up_link: Some("pcie5".into()),
        ..tp4
    };
    let cm = plain.with_layout(pcie, &c).unwrap();
    assert_eq!(cm.scale_up_link_name().as_deref(), Some("PCIe Gen5 x16"));
}
