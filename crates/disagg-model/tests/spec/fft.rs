//! FFT-mixing models, the optical transform engine and `--ppa` (`docs/levers.md#fft-mixing`-`docs/levers.md#ppa`): every
//! `hy.*`, `ops.*`, `opt.*`, `ppa.*` entry of the reference fixtures and the `model.*` entries of
//! the Hyena family (copied into tests/fixtures/levers/fft.json, see the README there), the `ppa`
//! blocks of the reference's `--ppa` runs (tests/fixtures/levers/ppa_runs.json), and hand-worked
//! values of the formulas with the arithmetic in the comments.

use std::collections::BTreeSet;

use disagg_model::fft::dm;
use disagg_model::ppa::{device_area, die_cost, dies_per_wafer, murphy_yield, ppa_report, PpaRole};
use disagg_model::*;
use serde_json::Value;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn model(key: &str) -> ModelSpec {
    cat().model(key).unwrap().clone()
}

fn device(key: &str) -> Device {
    cat().device(key).unwrap().clone()
}

fn cm(model_key: &str, device_key: &str) -> CostModel {
    CostModel::new(
        &model(model_key),
        &device(device_key),
        1,
        CostOptions::default(),
    )
    .unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn int(v: &Value) -> i128 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}")) as i128
}

fn lens_of(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// A model with the entry's `model_overrides` (`prefill_lm_head`, `circulant_block`).
fn model_of(key: &str, ov: Option<&Value>) -> ModelSpec {
    let mut m = model(key);
    if let Some(ov) = ov {
        for (k, v) in ov.as_object().unwrap() {
            match k.as_str() {
                "prefill_lm_head" => {
                    m.prefill_lm_head = LmHead::parse(v.as_str().unwrap()).unwrap()
                }
                "circulant_block" => m.fft.as_mut().unwrap().circulant_block = v.as_u64().unwrap(),
                other => panic!("model override {other} not handled"),
            }
        }
    }
    m
}

/// A device with the entry's `device_overrides` (`fft_efficiency` or engine fields).
fn device_of(key: &str, ov: Option<&Value>) -> Device {
    let mut d = device(key);
    if let Some(ov) = ov {
        for (k, v) in ov.as_object().unwrap() {
            if k == "fft_efficiency" {
                d.fft_efficiency = f(v);
                continue;
            }
            let e = d
                .engine
                .as_mut()
                .expect("engine override on a device with an engine");
            match k.as_str() {
                "enob" => e.enob = v.as_u64().unwrap() as u32,
                "mask_rate_hz" => e.mask_rate_hz = f(v),
                "overlap" => e.overlap = v.as_bool().unwrap(),
                "detection" => e.detection = Detection::parse(v.as_str().unwrap()).unwrap(),
                "samples_per_s" => e.samples_per_s = f(v),
                other => panic!("device override {other} not handled"),
            }
        }
    }
    d
}

fn cost_model_of(c: &Value) -> CostModel {
    for k in c.as_object().unwrap().keys() {
        assert!(
            [
                "model",
                "model_overrides",
                "device",
                "device_overrides",
                "n_devices",
                "power_cap_w"
            ]
            .contains(&k.as_str()),
            "cost_model field {k} not handled"
        );
    }
    let m = model_of(c["model"].as_str().unwrap(), c.get("model_overrides"));
    let d = device_of(c["device"].as_str().unwrap(), c.get("device_overrides"));
    let opts = CostOptions {
        power_cap_w: c.get("power_cap_w").map(f),
        ..CostOptions::default()
    };
    CostModel::new(&m, &d, c["n_devices"].as_u64().unwrap() as u32, opts).unwrap()
}

/// Checks `out`'s fields one by one; at the end every field must have been checked.
struct Out<'a> {
    id: &'a str,
    out: &'a Value,
    seen: BTreeSet<String>,
}

impl<'a> Out<'a> {
    fn new(id: &'a str, out: &'a Value) -> Self {
        Out {
            id,
            out,
            seen: BTreeSet::new(),
        }
    }
    fn get(&mut self, k: &str) -> &'a Value {
        self.seen.insert(k.to_string());
        self.out
            .get(k)
            .unwrap_or_else(|| panic!("{}: no field {k}", self.id))
    }
    fn has(&self, k: &str) -> bool {
        self.out.get(k).is_some()
    }
    fn f64(&mut self, k: &str, got: f64) {
        let want = f(self.get(k));
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "{} {k}: {got} != {want}",
            self.id
        );
    }
    fn int(&mut self, k: &str, got: i128) {
        let want = int(self.get(k));
        assert_eq!(got, want, "{} {k}", self.id);
    }
    fn str(&mut self, k: &str, got: &str) {
        let want = self.get(k).as_str().unwrap();
        assert_eq!(got, want, "{} {k}", self.id);
    }
    fn done(self) {
        let all: BTreeSet<String> = self.out.as_object().unwrap().keys().cloned().collect();
        assert_eq!(all, self.seen, "{}: fields left unchecked", self.id);
    }
}

fn check_step(o: &mut Out, s: &StepCost) {
    match s.flops {
        PyNum::Int(x) => o.int("flops", x),
        PyNum::Float(x) => {
            // The FFT-mixing ledgers are doubles: the reference prints them as floats.
            assert!(o.out["flops"].is_f64(), "{} flops is a float", o.id);
            o.f64("flops", x)
        }
    }
    o.f64("bytes", s.bytes);
    o.f64("time", s.time_s);
    o.str("bound", s.bound.as_str());
    o.f64("energy", s.energy_j);
    o.f64("compute_j", s.compute_j);
    o.f64("memory_j", s.memory_j);
}

fn check_ops(o: &mut Out, ops: &Ops) {
    o.f64("dense", ops.dense);
    o.f64("attention", ops.attention);
    o.f64("transform", ops.transform);
    o.f64("spectral", ops.spectral);
    o.f64("other", ops.other);
    o.f64("total", ops.total());
    if o.has("optical") {
        o.f64("optical", ops.optical());
        o.f64("digital", ops.digital());
    }
}

/// `ModelSpec (derived)`: every field the reference printed.
fn check_derived(o: &mut Out, m: &ModelSpec, c: &CostModel) {
    let keys: Vec<String> = o.out.as_object().unwrap().keys().cloned().collect();
    for k in keys {
        match k.as_str() {
            "params_per_layer" => o.int(&k, m.params_per_layer()),
            "layer_params" => o.int(&k, m.layer_params()),
            "params" => o.int(&k, m.params()),
            "matmul_params" => o.int(&k, m.matmul_params()),
            "weight_bytes_total" => o.f64(&k, m.weight_bytes_total()),
            "weight_bytes_streamed" => o.f64(&k, m.weight_bytes_streamed()),
            "embedding_row_bytes" => o.f64(&k, m.embedding_row_bytes()),
            "kv_bytes_per_token" => o.f64(&k, m.kv_bytes_per_token()),
            "n_attention_layers" => o.int(&k, m.n_attention_layers() as i128),
            "n_hyena_layers" => o.int(&k, m.n_hyena_layers() as i128),
            "hyena_params_per_layer" => o.int(
                &k,
                m.fft
                    .as_ref()
                    .unwrap()
                    .hyena_params_per_layer(m.d_model, m.d_ff),
            ),
            "state_bytes_per_seq" => o.f64(&k, m.state_bytes_per_seq()),
            "cache_unit_bytes" => {
                o.f64(&k, m.cache_unit_bytes());
                o.f64(&k, c.cache_unit_bytes());
            }
            "conversion_pairs_per_token" => o.int(&k, m.conversion_pairs_per_token()),
            "handoff_bytes(2048)" => o.f64(&k, m.handoff_bytes(2048)),
            "mask_values([2048])" => o.int(&k, m.mask_values(&[2048])),
            "mask_values([2048, 1000, 3000])" => o.int(&k, m.mask_values(&[2048, 1000, 3000])),
            "filter_spectrum_bytes([2048])" => o.f64(&k, m.filter_spectrum_bytes(&[2048])),
            "weight_bytes_read(2048)" => o.f64(&k, c.weight_read(2048)),
            other => panic!("{}: derived field {other} not handled", o.id),
        }
    }
}

fn entries() -> Vec<Value> {
    let v: Value = serde_json::from_str(include_str!("../fixtures/levers/fft.json")).unwrap();
    v.as_array().unwrap().clone()
}

#[test]
fn every_fft_optical_and_ppa_fixture_entry() {
    let es = entries();
    let count = |p: &str| {
        es.iter()
            .filter(|e| e["id"].as_str().unwrap().starts_with(p))
            .count()
    };
    assert_eq!(
        (
            count("hy."),
            count("ops."),
            count("opt."),
            count("ppa."),
            count("model."),
            es.len()
        ),
        (34, 12, 32, 12, 6, 96)
    );
    let mut checked = std::collections::BTreeMap::<&str, usize>::new();
    for e in &es {
        let id = e["id"].as_str().unwrap();
        let a = &e["args"];
        let mut o = Out::new(id, &e["out"]);
        let func = e["function"].as_str().unwrap();
        match func {
            "ModelSpec (derived)" => {
                let m = model_of(a["model"].as_str().unwrap(), a.get("model_overrides"));
                let c = CostModel::new(&m, &device("h100"), 1, CostOptions::default()).unwrap();
                check_derived(&mut o, &m, &c);
            }
            "ModelSpec.prefill_ops" => {
                let m = model_of(a["model"].as_str().unwrap(), a.get("model_overrides"));
                check_ops(&mut o, &m.prefill_ops(&lens_of(&a["prompt_lens"])));
            }
            "ModelSpec.decode_ops" => {
                let m = model_of(a["model"].as_str().unwrap(), a.get("model_overrides"));
                let ops = m.decode_ops(a["ctx"].as_u64().unwrap(), a["batch"].as_u64().unwrap());
                check_ops(&mut o, &ops);
            }
            "CostModel.prefill" => {
                let c = cost_model_of(&e["cost_model"]);
                let lens = lens_of(&a["prompt_lens"]);
                let s = c.prefill(lens.iter().copied());
                check_step(&mut o, &s);
                let ps = c.prefill_optical(&lens);
                assert_eq!(ps.step, s, "{id}: prefill_optical's step is prefill's");
                if o.has("optical_j") {
                    o.f64("optical_j", ps.optical_j);
                    o.f64("optical_flops", ps.optical_flops);
                } else {
                    assert_eq!((ps.optical_j, ps.optical_flops), (0.0, 0.0), "{id}");
                }
            }
            "CostModel.decode_sum" => {
                let c = cost_model_of(&e["cost_model"]);
                let (ctx, b) = (a["ctx"].as_u64().unwrap(), a["batch"].as_u64().unwrap());
                let s = c.decode_sum(ctx, b);
                check_step(&mut o, &s);
                let (fl, by) = c.fft_decode_work(ctx, b);
                assert_eq!((PyNum::Float(fl), by), (s.flops, s.bytes), "{id}");
            }
            "CostModel.kv_capacity_tokens" => {
                let c = cost_model_of(&e["cost_model"]);
                o.int(
                    "kv_capacity_tokens",
                    c.kv_capacity_tokens().unwrap() as i128,
                );
            }
            "CostModel.optical_terms (+ prefill)" | "CostModel.optical_terms" => {
                let c = cost_model_of(&e["cost_model"]);
                let lens = lens_of(&a["prompt_lens"]);
                assert_eq!(a["tokens"].as_u64().unwrap(), lens.iter().sum::<u64>());
                let t = c.optical_terms(&lens).unwrap();
                o.int("passes", t.passes as i128);
                o.int("conversions", t.conversions);
                o.int("rewrites", t.rewrites);
                o.f64("t_opt", t.t_opt);
                let ps = c.prefill_optical(&lens);
                o.f64("prefill_time", ps.step.time_s);
                if o.has("pj_per_pair") {
                    o.f64(
                        "pj_per_pair",
                        c.device.engine.as_ref().unwrap().pj_per_pair(),
                    );
                    o.f64("prefill_optical_j", ps.optical_j);
                    o.str("prefill_bound", ps.step.bound.as_str());
                }
                assert_eq!(t.optical_j, ps.optical_j, "{id}");
            }
            "TransformEngine.passes" => {
                let e = TransformEngine {
                    enob: a["enob"].as_u64().unwrap() as u32,
                    detection: Detection::parse(a["detection"].as_str().unwrap()).unwrap(),
                    ..TransformEngine::default()
                };
                let fmt = ActFormat::parse(a["act_format"].as_str().unwrap()).unwrap();
                o.int("passes", e.passes(fmt) as i128);
            }
            "CostModel.optical_static_w" => {
                let c = cost_model_of(&e["cost_model"]);
                o.f64("optical_static_w", c.optical_static_w());
                o.f64("idle_w", c.idle_w());
            }
            "ppa.device_area" => {
                let d = device_of(a["device"].as_str().unwrap(), a.get("device_overrides"));
                let got = serde_json::to_value(device_area(&d)).unwrap();
                let want = o.get("area");
                assert_eq!(
                    serde_json::to_string(&got).unwrap(),
                    serde_json::to_string(want).unwrap(),
                    "{id}"
                );
            }
            "ppa.die_cost" => {
                let got = die_cost(f(&a["area_mm2"]));
                o.f64("area_mm2", got.area_mm2);
                o.int("dies_per_wafer", got.dies_per_wafer as i128);
                o.f64("yield", got.yield_frac);
                o.f64("good_dies", got.good_dies);
                o.f64("usd_per_good_die", got.usd_per_good_die);
                assert_eq!(
                    Some(got.fits_reticle),
                    o.get("fits_reticle").as_bool(),
                    "{id}"
                );
                // And serialised with the reference's keys, in order.
                assert_eq!(
                    serde_json::to_string(&got).unwrap(),
                    serde_json::to_string(&e["out"]).unwrap(),
                    "{id}"
                );
            }
            other => panic!("{id}: function {other} not handled"),
        }
        o.done();
        *checked.entry(id.split('.').next().unwrap()).or_default() += 1;
    }
    let got: Vec<(&str, usize)> = checked.into_iter().collect();
    assert_eq!(
        got,
        [
            ("hy", 34),
            ("model", 6),
            ("ops", 12),
            ("opt", 32),
            ("ppa", 12)
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The `ppa` blocks of whole runs.

/// The roles of a run from its CLI flags (`docs/serving-model.md#prefill-instance`: one prefill and one decode instance,
/// or `--prefill + --decode` = 2 colocated ones; `--device` h100 unless given).
fn roles_of(flags: &[String]) -> (Vec<(&'static str, String, u64)>, u32) {
    let get = |k: &str| {
        flags
            .iter()
            .position(|x| x == k)
            .map(|i| flags[i + 1].clone())
    };
    for (i, x) in flags.iter().enumerate() {
        if x.starts_with("--") {
            let known = [
                "--model",
                "--prefill-lm-head",
                "--devices-per-instance",
                "--rate",
                "--fast",
                "--ppa",
                "--mode",
                "--fft-efficiency",
                "--prefill-device",
                "--ft-enob",
                "--ft-mask-rate",
                "--ft-overlap",
            ];
            assert!(known.contains(&x.as_str()), "flag {x} (#{i}) not handled");
        }
    }
    let dev = get("--device").unwrap_or_else(|| "h100".into());
    let n = get("--devices-per-instance").map_or(1, |x| x.parse().unwrap());
    if get("--mode").as_deref() == Some("colocated") {
        (vec![("colocated", dev, 2)], n)
    } else {
        let p = get("--prefill-device").unwrap_or_else(|| dev.clone());
        (vec![("prefill", p, 1), ("decode", dev, 1)], n)
    }
}

#[test]
fn ppa_blocks_of_the_reference_runs() {
    let v: Value = serde_json::from_str(include_str!("../fixtures/levers/ppa_runs.json")).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 31);
    assert_eq!(runs[0]["source"], "runs[7]");
    let mut optical = 0;
    for r in runs {
        let flags: Vec<String> = r["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        let (roles, n) = roles_of(&flags);
        let devs: Vec<Device> = roles.iter().map(|(_, d, _)| device(d)).collect();
        let rs: Vec<PpaRole> = roles
            .iter()
            .zip(&devs)
            .map(|(&(role, _, count), d)| PpaRole {
                role,
                device: d,
                instances: count,
                devices_per_instance: n,
            })
            .collect();
        optical += devs.iter().filter(|d| d.engine.is_some()).count();
        let got = ppa_report(&rs, f(&r["output_tokens_per_J"]), f(&r["output_tok_per_s"]));
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&r["ppa"]).unwrap(),
            "{}",
            r["source"]
        );
    }
    // 13 of the 31 runs have an optical-fft prefill pool: run 7, and 2 per model in `docs/serving-model.md` (6 models).
    assert_eq!(optical, 13);
}

#[test]
fn ppa_report_with_an_unknown_area_and_several_devices() {
    let (h100, b200) = (device("h100"), device("b200"));
    let roles = [
        PpaRole {
            role: "prefill",
            device: &h100,
            instances: 3,
            devices_per_instance: 2,
        },
        PpaRole {
            role: "decode",
            device: &b200,
            instances: 1,
            devices_per_instance: 1,
        },
    ];
    let r = ppa_report(&roles, 2.5, 1000.0);
    // The prefill pool: 2 devices of 814 mm² per instance = 1628.0; $ = 2 * 339.09863688464617.
    let p = &r.pools.0[0].1;
    assert_eq!(p.mm2_per_instance, Some(1628.0));
    assert_eq!(p.usd_per_instance, Some(2.0 * 339.09863688464617));
    assert_eq!((p.instances, p.devices_per_instance), (3, 2));
    // B200 has no area: its line and every total are null; perf_per_W never is.
    let d = &r.pools.0[1].1;
    assert_eq!((d.mm2_per_instance, d.usd_per_instance), (None, None));
    assert_eq!(d.device, "B200");
    assert_eq!(
        (r.total_mm2, r.total_usd, r.perf_per_mm2, r.perf_per_kusd),
        (None, None, None, None)
    );
    assert_eq!(r.perf_per_w, 2.5);
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        format!(
            "{{\"pools\":{{\"prefill\":{{\"device\":\"H100-SXM\",\"instances\":3,\
             \"devices_per_instance\":2,\"mm2_per_instance\":1628.0,\"usd_per_instance\":{}}},\
             \"decode\":{{\"device\":\"B200\",\"instances\":1,\"devices_per_instance\":1,\
             \"mm2_per_instance\":null,\"usd_per_instance\":null}}}},\"total_mm2\":null,\
             \"total_usd\":null,\"perf_per_W\":2.5,\"perf_per_mm2\":null,\"perf_per_kusd\":null}}",
            serde_json::to_string(&(2.0 * 339.09863688464617)).unwrap()
        )
    );
    // Without the B200: totals over fl(3*2) = 6 devices: 6 * 814.0 = 4884.0 mm²,
    // perf_per_mm2 = 1000 / 4884, perf_per_kusd = (1e3 * 1000) / (6 * $).
    let r = ppa_report(&roles[..1], 2.5, 1000.0);
    assert_eq!(r.total_mm2, Some(4884.0));
    assert_eq!(r.total_usd, Some(0.0 + 6.0 * 339.09863688464617));
    assert_eq!(r.perf_per_mm2, Some(1000.0 / 4884.0));
    assert_eq!(
        r.perf_per_kusd,
        Some((1e3 * 1000.0) / (6.0 * 339.09863688464617))
    );
}

#[test]
fn die_cost_by_hand() {
    // 100 mm²: pi*150*150/100 = 706.858..., pi*300/sqrt(200) = 66.643...; floor(640.2) = 640.
    assert_eq!(dies_per_wafer(100.0), 640);
    // 858 mm² (the reticle): 82.38 - 22.75 = 59.6 -> 59.
    assert_eq!(dies_per_wafer(858.0), 59);
    // A die larger than the wafer: 70686/1e6 - 942.48/1414.2 < 0 -> clamped to 0.
    assert_eq!(dies_per_wafer(1e6), 0);
    // Murphy: x = (A/100)*0.1, ((1 - e^-x)/x)^2 (the formula written out with the C expm1).
    for a in [1.0, 100.0, 814.0, 2000.0] {
        let x = (a / 100.0) * 0.1;
        let t = (-f64::exp_m1(-x)) / x;
        assert_eq!(murphy_yield(a), t * t);
    }
    // x = 0: yield 1.0 (not 0/0).
    assert_eq!(murphy_yield(0.0), 1.0);
    // No good die: the cost is infinite.
    let c = die_cost(1e6);
    assert_eq!((c.dies_per_wafer, c.good_dies), (0, 0.0));
    assert_eq!(c.usd_per_good_die, f64::INFINITY);
    assert!(!c.fits_reticle);
    assert!(die_cost(858.0).fits_reticle);
    assert!(!die_cost(858.0000000001).fits_reticle);
    // 640 dies * yield(100) good; $10,000 / good.
    let c = die_cost(100.0);
    assert_eq!(c.good_dies, 640.0 * murphy_yield(100.0));
    assert_eq!(c.usd_per_good_die, 10000.0 / c.good_dies);
    // An engine of 1e12 S/s: ceil(1e12 / 5e10) = 20 channels of 0.15000000000000002 mm²:
    // 814 + 3.0000000000000004 = 817.0; plus the 100 mm² photonic die, $ of both dies.
    let a = device_area(&device("optical-fft")).unwrap();
    assert_eq!(
        (a.die_mm2, a.photonic_mm2, a.total_mm2),
        (817.0, 100.0, 917.0)
    );
    assert_eq!(
        a.usd,
        die_cost(817.0).usd_per_good_die + die_cost(100.0).usd_per_good_die
    );
    // 1.01e12 S/s: ceil(20.2) = 21 channels: 814 + 21*0.15000000000000002.
    let mut d = device("optical-fft");
    d.engine.as_mut().unwrap().samples_per_s = 1.01e12;
    assert_eq!(
        device_area(&d).unwrap().die_mm2,
        814.0 + 21.0 * (0.05 + 0.10)
    );
    // No engine: no photonic die, the host's cost alone.
    let a = device_area(&device("a100")).unwrap();
    assert_eq!(
        (a.die_mm2, a.photonic_mm2, a.total_mm2),
        (826.0, 0.0, 826.0)
    );
    assert_eq!(a.usd, die_cost(826.0).usd_per_good_die);
    assert_eq!(device_area(&device("optical")), None);
}

// ---------------------------------------------------------------------------------------------
// The ledger by hand.

#[test]
fn dm_and_the_ledger_sums_by_hand() {
    // Dense: ((2*3)*5)*7 = 210.
    assert_eq!(
        dm(3, 5, 7, 0),
        Ops {
            dense: 210.0,
            ..Ops::default()
        }
    );
    // Block-circulant m = 8, c = 16, t = 3, k = 4: bins = 3, rfft(4) = (2.5*4)*2 = 20,
    // c/k = 4, m/k = 2. transform = 3*((4*20) + (2*20)) = 360; spectral = ((3*2)*4)*3 * 6 =
    // 432; other = ((3*2)*(4-1))*3 * 2 = 108.
    assert_eq!(
        dm(8, 16, 3, 4),
        Ops {
            transform: 360.0,
            spectral: 432.0,
            other: 108.0,
            ..Ops::default()
        }
    );
    // Sums over distinct powers of two, so each field is identifiable.
    let mut o = Ops {
        dense: 1.0,
        attention: 2.0,
        transform: 4.0,
        spectral: 8.0,
        other: 16.0,
    };
    assert_eq!((o.total(), o.optical(), o.digital()), (31.0, 12.0, 19.0));
    o += Ops {
        dense: 32.0,
        attention: 64.0,
        transform: 128.0,
        spectral: 256.0,
        other: 512.0,
    };
    assert_eq!(
        o,
        Ops {
            dense: 33.0,
            attention: 66.0,
            transform: 132.0,
            spectral: 264.0,
            other: 528.0,
        }
    );
    // total groups (((d + a) + t) + s) + o: 1e16 + 1 + 1 + 1 + 1 stays 1e16 (each +1 rounds
    // away at 1e16, ulp 2), while digital + optical would add 2 + 2.
    let big = Ops {
        dense: 1e16,
        attention: 1.0,
        transform: 1.0,
        spectral: 1.0,
        other: 1.0,
    };
    assert_eq!(big.total(), 1e16);
    assert_eq!(big.optical(), 2.0);
    assert_eq!(big.digital(), 1e16);
}

#[test]
fn hyena_2_prefill_2048_by_hand() {
    // L 32, d 4096, ff 14336, N 2, taps 3, V 128256, T 2048.
    let m = model("llama3-8b-hyena");
    let o = m.prefill_ops(&[2048]);
    // Per layer: DM(3d, d, T) = 2*12288*4096*2048 = 206,158,430,208; DM(d, d, T) =
    // 68,719,476,736; MLP = 3 * 2*14336*4096*2048 = 721,554,505,728; sum 996,432,412,672;
    // x 32 = 31,885,837,205,504; LM head 2*128256*4096*2048 = 2,151,778,615,296.
    assert_eq!(o.dense, 34_037_615_820_800.0);
    // Per layer 2*N*d = 16384 transforms of rfft(4096) = (2.5*4096)*12 = 122,880: 2,013,265,920,
    // x 32.
    assert_eq!(o.transform, 64_424_509_440.0);
    // Per layer N*d*(4096/2 + 1) = 8192*2049 = 16,785,408 bins x 6 = 100,712,448, x 32.
    assert_eq!(o.spectral, 3_222_798_336.0);
    // Per layer T*2*taps*(N+1)*d = 2048*2*3*3*4096 = 150,994,944 plus T*N*d = 16,777,216:
    // 167,772,160, x 32.
    assert_eq!(o.other, 5_368_709_120.0);
    assert_eq!(o.attention, 0.0);
    // Filter spectra: 32*2*4096 values per bin x 2049 bins = 537,133,056 values x 4 bytes.
    assert_eq!(m.mask_values(&[2048]), 537_133_056);
    assert_eq!(m.filter_spectrum_bytes(&[2048]), 2_148_532_224.0);
    // Prompts of 1500 and 2048 share pow2(2s) = 4096: the spectra are counted once.
    assert_eq!(m.mask_values(&[1500, 2048]), 537_133_056);
    assert_eq!(m.filter_spectrum_bytes(&[2048, 2048]), 2_148_532_224.0);
    // ... while 1000 (pow2 2048: 1025 bins) adds 32*8192*1025 = 268,697,600.
    assert_eq!(m.mask_values(&[1000, 2048]), 537_133_056 + 268_697_600);
    // The step on 1xH100 (`docs/levers.md#fft-mixing`'s example): F a double, B with the spectra.
    let s = cm("llama3-8b-hyena", "h100").prefill([2048]);
    assert_eq!(s.flops, PyNum::Float(34_110_631_837_696.0));
    assert_eq!(s.bytes, 19_858_980_864.0);
    assert_eq!(s.time_s, 0.06320913105560437);
}

#[test]
fn hyena_2_decode_by_hand() {
    let m = model("llama3-8b-hyena");
    // ctx 2048, b 1. Per layer dense: DM(3d, d, 1) = 100,663,296, DM(d, d, 1) = 33,554,432,
    // MLP(1) = 352,321,536: 486,539,264, x 32 = 15,569,256,448; head 2*128256*4096 =
    // 1,050,673,152; dense 16,619,929,600. Other: (N*d*2)*(ctx + b) = 16384*2049 = 33,570,816
    // per layer, x 32 = 1,074,266,112. F = 17,694,195,712.
    let o = m.decode_ops(2048, 1);
    assert_eq!(o.dense, 16_619_929_600.0);
    assert_eq!(o.other, 1_074_266_112.0);
    assert_eq!((o.attention, o.transform, o.spectral), (0.0, 0.0, 0.0));
    // B = (W + 1*8192) + 2049 * 524,288 = 16,619,929,600 + 8192 + 1,074,266,112.
    let s = cm("llama3-8b-hyena", "h100").decode_sum(2048, 1);
    assert_eq!(s.flops, PyNum::Float(17_694_195_712.0));
    assert_eq!(s.bytes, 17_694_203_904.0);
    // Distilled: the state update (N*d*8)*16*b = 65536*16 = 1,048,576 per layer, x 32; the
    // bytes read the state (16,777,216 per sequence) instead of a per-token cache.
    let md = model("llama3-8b-hyena-dist");
    assert_eq!(md.decode_ops(2048, 1).other, 33_554_432.0);
    let s = cm("llama3-8b-hyena-dist", "h100").decode_sum(2048, 1);
    assert_eq!(s.bytes, 16_619_929_600.0 + 8192.0 + 16_777_216.0);
    assert_eq!(s.flops, PyNum::Float(16_619_929_600.0 + 33_554_432.0));
}

#[test]
fn hybrid_layers_and_sizes_by_hand() {
    let m = model("llama3-8b-hybrid");
    // Layers 0, 4, ..., 28 are attention: 8 of 32.
    assert_eq!((m.n_attention_layers(), m.n_hyena_layers()), (8, 24));
    // 24 Hyena layers x N*d = 8192 pairs per token.
    assert_eq!(m.conversion_pairs_per_token(), 196_608);
    // Decode attention of one layer: (4.0*d)*(ctx + b) = 16384*(131072 + 64), x 8 layers.
    let o = m.decode_ops(131_072, 64);
    assert_eq!(o.attention, 8.0 * (16384.0 * 131_136.0));
    // Prefill attention: ((2*d)*s)*(s+1) per layer = 8192*2048*2049, x 8.
    assert_eq!(
        m.prefill_ops(&[2048]).attention,
        8.0 * ((8192.0 * 2048.0) * 2049.0)
    );
}

#[test]
fn transformer_ledger_is_the_dense_flop_count() {
    // For an attention model the ledger's total is `docs/cost-model.md#prefill-step`/`docs/cost-model.md#decode-step`'s integer F (every
    // partial sum an integer below 2^53, so exact): 2*M*T + 2*L*d*P*(P+1), 2*M*b + 4*L*d*(ctx+b).
    let m = model("llama3-8b");
    let (l, d, mm) = (32i128, 4096i128, m.matmul_params());
    let o = m.prefill_ops(&[2048, 1000]);
    let want = 2 * mm * 3048 + 2 * l * d * (2048 * 2049 + 1000 * 1001);
    assert_eq!(o.total(), want as f64);
    assert_eq!((o.transform, o.spectral, o.other), (0.0, 0.0, 0.0));
    let o = m.decode_ops(5000, 3);
    assert_eq!(o.total(), (2 * mm * 3 + 4 * l * d * 5003) as f64);
    // No Hyena layers, nothing for the engine, no spectra; the cache unit is the KV.
    assert_eq!((m.n_attention_layers(), m.n_hyena_layers()), (32, 0));
    assert_eq!(m.conversion_pairs_per_token(), 0);
    assert_eq!(m.mask_values(&[2048]), 0);
    assert_eq!(m.filter_spectrum_bytes(&[2048]), 0.0);
    assert_eq!(m.cache_unit_bytes(), 131_072.0);
    let c = cm("llama3-8b", "optical-fft");
    assert_eq!(c.cache_unit_bytes(), 131_072.0);
    assert_eq!(c.optical_terms(&[2048]), None);
    // A transformer on an engine device is priced as on its host (and gets no extras).
    let h = cm("llama3-8b", "h100");
    let ps = c.prefill_optical(&[2048]);
    assert_eq!(ps.step, h.prefill([2048]));
    assert_eq!((ps.optical_j, ps.optical_flops), (0.0, 0.0));
    assert_eq!(c.decode_sum(5000, 3), h.decode_sum(5000, 3));
}

#[test]
fn fft_efficiency_scales_only_the_fft_work() {
    // digital_flops = digital + optical / x; x = 1/16 multiplies the optical part by 16.
    let mut d = device("h100");
    d.fft_efficiency = 0.0625;
    let m = model("llama3-8b-hyena-circ");
    let c = CostModel::new(&m, &d, 1, CostOptions::default()).unwrap();
    let o = m.prefill_ops(&[2048]);
    assert_eq!(c.digital_flops(&o), o.digital() + o.optical() * 16.0);
    assert_eq!(
        cm("llama3-8b-hyena-circ", "h100").digital_flops(&o),
        o.total()
    );
    assert_eq!(
        c.prefill([2048]).flops,
        PyNum::Float(o.digital() + o.optical() * 16.0)
    );
}

#[test]
fn optical_prefill_by_hand() {
    // Circulant 256, last-token head, ENOB 11 (K = 4^0 = 1), 20 kHz masks, overlap
    // (`docs/levers.md#fft-mixing`'s example).
    let mut m = model("llama3-8b-hyena-circ");
    m.prefill_lm_head = LmHead::Last;
    let mut d = device("optical-fft");
    {
        let e = d.engine.as_mut().unwrap();
        e.enob = 11;
        e.mask_rate_hz = 20000.0;
        e.overlap = true;
    }
    let c = CostModel::new(&m, &d, 1, CostOptions::default()).unwrap();
    let t = c.optical_terms(&[2048]).unwrap();
    // conv = 2,162,688 pairs/token x 2048 x 1; rew = ceil(552,456,192 / 2,000,000) = 277;
    // t_opt = 4,429,185,024/1e12 + 277/20000.
    assert_eq!(t.passes, 1);
    assert_eq!(t.conversions, 2_162_688 * 2048);
    assert_eq!(t.rewrites, 277);
    assert_eq!(t.t_opt, 4_429_185_024.0 / 1e12 + 277.0 / 20000.0);
    // pj_per_pair = 10*2048e-3 + 20*2048e-3 = 61.44; oj = (conv * 61.44) * 1e-12.
    assert_eq!(t.optical_j, (4_429_185_024.0 * 61.44) * 1e-12);
    let ps = c.prefill_optical(&[2048]);
    // The engine (18.3 ms) is slower than the GPU part: optical-bound, time = t_opt + 0.5 ms.
    assert_eq!(ps.step.bound, Bound::Optical);
    assert_eq!(Bound::Optical.as_str(), "optical");
    assert_eq!(ps.step.time_s, t.t_opt + 0.5e-3);
    assert_eq!(
        ps.step.energy_j,
        (ps.step.compute_j + ps.step.memory_j) + t.optical_j
    );
    let o = m.prefill_ops(&[2048]);
    assert_eq!(ps.step.flops, PyNum::Float(o.digital()));
    assert_eq!(ps.optical_flops, o.optical());
    // Bytes without the filter spectra: (W + 2048*8192) + 2048*524288.
    assert_eq!(
        ps.step.bytes,
        (m.weight_bytes_streamed() + 2048.0 * 8192.0) + 2048.0 * 524_288.0
    );
    // Without overlap the two parts add up.
    d.engine.as_mut().unwrap().overlap = false;
    let c2 = CostModel::new(&m, &d, 1, CostOptions::default()).unwrap();
    let raw = c2.step_time_raw(o.digital(), ps.step.bytes);
    assert_eq!(c2.prefill([2048]).time_s, (raw.t + t.t_opt) + 0.5e-3);
    // A very fast engine leaves the GPU's bound: 1e18 samples/s, 1e12 Hz masks.
    {
        let e = d.engine.as_mut().unwrap();
        e.samples_per_s = 1e18;
        e.mask_rate_hz = 1e12;
    }
    let c3 = CostModel::new(&m, &d, 1, CostOptions::default()).unwrap();
    assert_eq!(c3.prefill([2048]).bound, raw.bound);
    // The engines' static power: (10 + 10) W per device; none on a plain GPU.
    assert_eq!(c3.optical_static_w(), 20.0);
    assert_eq!(cm("llama3-8b-hyena", "h100").optical_static_w(), 0.0);
    // Decode never uses the engine: same step as on the host H100.
    assert_eq!(
        cm("llama3-8b-hyena", "optical-fft").decode_sum(4096, 8),
        cm("llama3-8b-hyena", "h100").decode_sum(4096, 8)
    );
}

#[test]
fn distilled_capacity_counts_sequences() {
    // `docs/levers.md#fft-mixing`: the distilled model reserves one 16,777,216-byte state per request;
    // 1xH100 holds 3,238 (the direct Hyena-2: 103,625 tokens of 524,288 bytes).
    let c = cm("llama3-8b-hyena-dist", "h100");
    assert_eq!(c.cache_unit_bytes(), 16_777_216.0);
    assert_eq!(c.kv_capacity_tokens().unwrap(), 3238);
    assert_eq!(
        cm("llama3-8b-hyena", "h100").kv_capacity_tokens().unwrap(),
        103_625
    );
}

#[test]
fn an_engine_exactly_as_slow_as_the_gpu_keeps_the_gpu_bound() {
    // `docs/levers.md#fft-mixing`: the bound is `optical` only if t_opt > t_dig (strictly). Tune the converter rate so
    // that t_opt equals the GPU part's time to the last bit (mask rewrites made negligible: 277
    // rewrites at 1e300 Hz add ~1e-298 s, far below half an ulp of a millisecond).
    let m = model("llama3-8b-hyena-circ");
    let mut d = device("optical-fft");
    d.engine.as_mut().unwrap().mask_rate_hz = 1e300;
    d.engine.as_mut().unwrap().overlap = true;
    let c = CostModel::new(&m, &d, 1, CostOptions::default()).unwrap();
    let o = m.prefill_ops(&[2048]);
    let bytes = c.prefill_optical(&[2048]).step.bytes;
    let raw = c.step_time_raw(o.digital(), bytes);
    let conv = c.optical_terms(&[2048]).unwrap().conversions as f64;
    let mut sps = conv / raw.t;
    for _ in 0..64 {
        let t = conv / sps;
        if t == raw.t {
            break;
        }
        sps = if t > raw.t {
            sps.next_up()
        } else {
            sps.next_down()
        };
    }
    d.engine.as_mut().unwrap().samples_per_s = sps;
    let c = CostModel::new(&m, &d, 1, CostOptions::default()).unwrap();
    assert_eq!(c.optical_terms(&[2048]).unwrap().t_opt, raw.t);
    let s = c.prefill([2048]);
    assert_eq!(s.bound, raw.bound);
    assert_ne!(s.bound, Bound::Optical);
    assert_eq!(s.time_s, raw.t + 0.5e-3);
    // One ulp slower and the engine sets the bound.
    d.engine.as_mut().unwrap().samples_per_s = sps.next_down().next_down();
    let c = CostModel::new(&m, &d, 1, CostOptions::default()).unwrap();
    assert!(c.optical_terms(&[2048]).unwrap().t_opt > raw.t);
    assert_eq!(c.prefill([2048]).bound, Bound::Optical);
}
