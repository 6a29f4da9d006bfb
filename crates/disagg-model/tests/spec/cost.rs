//! The cost model (`disagg_model::cost`) against `docs/cost-model.md#roofline` written out in this file: the
//! derived rates of `docs/cost-model.md#derived-rates`, the nine steps of `docs/cost-model.md#roofline`, the step cost of `docs/cost-model.md#roofline`, prefill (`docs/cost-model.md#prefill-step`, both LM-head
//! placements), decode (`docs/cost-model.md#decode-step`), the KV capacity (`docs/cost-model.md#kv-capacity`) and the endpoint pass (`docs/cost-model.md#compression`), evaluated over
//! a grid of presets, device counts and power/DVFS options, and compared bit for bit. The spec
//! functions below count which branch of `docs/cost-model.md#roofline` each case took, and the test checks that every
//! branch was taken, so the grid keeps exercising all of them.

use std::cell::RefCell;

use disagg_model::pymath::{cbrt_py, py_floordiv};
use disagg_model::*;

/// `docs/cost-model.md#derived-rates`: the derived rates, written out from the device's fields.
struct Rates {
    rf: f64,
    rb: f64,
    jf: f64,
    jb: f64,
    budget: Option<f64>,
    s_min: f64,
    dvfs: bool,
    overhead: f64,
}

fn rates(d: &Device, n: u32, o: &CostOptions) -> Rates {
    let nf = n as f64;
    let speedup = 1.0;
    let mut caps = vec![];
    if let Some(c) = o.power_cap_w {
        caps.push(c);
    }
    if o.enforce_tdp {
        caps.push(d.tdp_w);
    }
    let budget = if caps.is_empty() {
        None
    } else {
        let m = caps.iter().copied().fold(f64::INFINITY, f64::min);
        Some((m - d.idle_w) * nf)
    };
    Rates {
        rf: ((d.peak_flops * d.flops_eff) * nf) * speedup,
        rb: (d.mem_bw * d.bw_eff) * nf,
        jf: (d.pj_per_flop * 1e-12) / speedup,
        jb: d.pj_per_byte * 1e-12,
        budget,
        s_min: o.s_min,
        dvfs: o.dvfs,
        overhead: o.step_overhead_s,
    }
}

thread_local! {
    /// Branches of `docs/cost-model.md#roofline` taken: [dvfs lowered s, power check fired, sqrt branch, cubic branch,
    /// s raised to s_min after the power branch, step 8 stretch, compute label, memory label].
    static HITS: RefCell<[u32; 8]> = const { RefCell::new([0; 8]) };
}

fn hit(i: usize) {
    HITS.with(|h| h.borrow_mut()[i] += 1);
}

/// `docs/cost-model.md#roofline` steps 1 to 9, verbatim.
fn spec_raw(r: &Rates, f: f64, b: f64) -> (f64, f64, f64, Bound) {
    let tc = f / r.rf;
    let tm = b / r.rb;
    let mut ec = f * r.jf;
    let em = b * r.jb;
    let mut s = if r.dvfs && tc < tm {
        hit(0);
        r.s_min.max(tc / tm)
    } else {
        1.0
    };
    let mut bound = if tc >= tm {
        hit(6);
        Bound::Compute
    } else {
        hit(7);
        Bound::Memory
    };
    if let Some(budget) = r.budget {
        if ((ec * s) * s + em) / (tc / s).max(tm) > budget {
            hit(1);
            bound = Bound::Power;
            let x = (budget * tm - em) / ec;
            if x > 0.0 && x.sqrt() * tm >= tc {
                hit(2);
                s = s.min(x.sqrt());
            } else {
                hit(3);
                let p = em / ec;
                let q = ((-budget) * tc) / ec;
                let rr = ((q * q) / 4.0 + ((p * p) * p) / 27.0).sqrt();
                s = cbrt_py((-q) / 2.0 + rr) + cbrt_py((-q) / 2.0 - rr);
            }
            if s < r.s_min {
                hit(4);
            }
            s = s.max(r.s_min);
        }
    }
    let mut t = (tc / s).max(tm);
    ec = (ec * s) * s;
    if let Some(budget) = r.budget {
        if (ec + em) / t > budget {
            hit(5);
            t = (ec + em) / budget;
        }
    }
    (t, ec, em, bound)
}

fn check_step(what: &dyn Fn() -> String, r: &Rates, got: StepCost, f: i128, b: f64) {
    let (t, ec, em, bound) = spec_raw(r, f as f64, b);
    assert_eq!(got.flops, PyNum::Int(f), "{} flops", what());
    assert_eq!(got.bytes.to_bits(), b.to_bits(), "{} bytes", what());
    assert_eq!(
        got.time_s.to_bits(),
        (t + r.overhead).to_bits(),
        "{} time {} vs {}",
        what(),
        got.time_s,
        t + r.overhead
    );
    assert_eq!(got.bound, bound, "{} bound", what());
    assert_eq!(
        got.energy_j.to_bits(),
        (ec + em).to_bits(),
        "{} energy",
        what()
    );
    assert_eq!(
        got.compute_j.to_bits(),
        ec.to_bits(),
        "{} compute_j",
        what()
    );
    assert_eq!(got.memory_j.to_bits(), em.to_bits(), "{} memory_j", what());
}

/// `docs/cost-model.md#catalogue` derived quantities, integers as integers.
struct Shape {
    layer_params: i128,
    matmul_params: i128,
    params: i128,
    vd: i128,
    l: i128,
    d: i128,
    kv_per_token: f64,
    streamed: f64,
    emb_row: f64,
}

fn shape(m: &ModelSpec) -> Shape {
    let (l, d, h, hkv, ff, v) = (
        m.n_layers as i128,
        m.d_model as i128,
        m.n_heads as i128,
        m.n_kv_heads as i128,
        m.d_ff as i128,
        m.vocab as i128,
    );
    let hd = m.head_dim.map_or(d / h, |x| x as i128);
    let kvw = hkv * hd;
    let ppl = (2 * d * d + 2 * d * kvw) + 3 * d * ff;
    let layer_params = l * ppl;
    let matmul_params = layer_params + v * d;
    Shape {
        layer_params,
        matmul_params,
        params: layer_params + 2 * v * d,
        vd: v * d,
        l,
        d,
        kv_per_token: (2 * l * hkv * hd) as f64 * m.kv_bytes,
        streamed: matmul_params as f64 * m.weight_bytes,
        emb_row: d as f64 * m.weight_bytes,
    }
}

/// `docs/cost-model.md#prefill-step`.
fn spec_prefill(m: &ModelSpec, lens: &[u64]) -> (i128, f64) {
    let s = shape(m);
    let t: i128 = lens.iter().map(|&p| p as i128).sum();
    let mut f = match m.prefill_lm_head {
        LmHead::All => 2 * s.matmul_params * t,
        LmHead::Last => 2 * s.layer_params * t + 2 * s.vd * lens.len() as i128,
    };
    for &p in lens {
        let p = p as i128;
        f += (((2 * s.l) * s.d) * p) * (p + 1);
    }
    let tf = t as f64;
    let b = (s.streamed + tf * s.emb_row) + tf * s.kv_per_token;
    (f, b)
}

/// `docs/cost-model.md#decode-step`.
fn spec_decode(m: &ModelSpec, ctx: u64, b: u64) -> (i128, f64) {
    let s = shape(m);
    let (c, bi) = (ctx as i128, b as i128);
    let f = 2 * s.matmul_params * bi + ((4 * s.l) * s.d) * (c + bi);
    let by = (s.streamed + b as f64 * s.emb_row) + (c + bi) as f64 * s.kv_per_token;
    (f, by)
}

fn models() -> Vec<ModelSpec> {
    let cat = Catalogue::builtin();
    let mut v = vec![];
    // The dense shapes of `docs/cost-model.md#catalogue` (the other models have their own tests).
    for m in cat
        .models
        .iter()
        .filter(|m| m.moe.is_none() && m.fft.is_none() && m.ced.is_none() && m.arch.is_none())
    {
        v.push(m.clone());
        let mut last = m.clone();
        last.prefill_lm_head = LmHead::Last;
        v.push(last);
    }
    // A quantised cache, and an explicit head dimension (hd != d / H).
    let mut q = cat.model("llama3-8b").unwrap().clone();
    q.weight_bytes = 1.0;
    q.kv_bytes = 0.5;
    q.head_dim = Some(96);
    v.push(q);
    v
}

fn options() -> Vec<CostOptions> {
    let d = CostOptions::default();
    let mut v = vec![
        d.clone(),
        CostOptions {
            dvfs: true,
            ..d.clone()
        },
        CostOptions {
            enforce_tdp: false,
            ..d.clone()
        },
        CostOptions {
            enforce_tdp: false,
            dvfs: true,
            ..d.clone()
        },
        CostOptions {
            step_overhead_s: 0.0,
            s_min: 0.2,
            dvfs: true,
            ..d.clone()
        },
    ];
    for cap in [450.0, 300.0, 250.0, 200.0, 150.0, 120.0] {
        for dvfs in [false, true] {
            v.push(CostOptions {
                power_cap_w: Some(cap),
                dvfs,
                ..d.clone()
            });
        }
    }
    // A cap above the TDP: the TDP still rules (min of the caps).
    v.push(CostOptions {
        power_cap_w: Some(5000.0),
        ..d.clone()
    });
    // A cap alone, without the TDP.
    v.push(CostOptions {
        power_cap_w: Some(250.0),
        enforce_tdp: false,
        dvfs: true,
        ..d
    });
    v
}

#[test]
fn steps_follow_the_spec_over_a_grid() {
    let cat = Catalogue::builtin();
    let prefills: [&[u64]; 5] = [&[1], &[2048], &[512, 3000], &[8192], &[7, 100, 1000, 4000]];
    let decodes = [
        (2048u64, 1u64),
        (36800, 16),
        (131072, 256),
        (524288, 256),
        (100000, 64),
        (0, 1),
    ];
    let mut cases = 0;
    for m in models() {
        for dev in &cat.devices {
            for n in [1u32, 2, 4] {
                for o in options() {
                    let Ok(c) = CostModel::new(&m, dev, n, o.clone()) else {
                        // Only a cap at or below the idle power may fail here.
                        let cap = o.power_cap_w.expect("only caps fail");
                        assert!(cap <= dev.idle_w, "{} {cap}", dev.key);
                        continue;
                    };
                    let r = rates(dev, n, &o);
                    assert_eq!(c.flops_rate().to_bits(), r.rf.to_bits());
                    assert_eq!(c.byte_rate().to_bits(), r.rb.to_bits());
                    assert_eq!(c.idle_w(), dev.idle_w * n as f64);
                    assert_eq!(c.budget_w(), r.budget);
                    assert_eq!(c.kv_bytes_per_token(), shape(&m).kv_per_token);
                    for lens in prefills {
                        let what = || format!("{} {} x{n} {o:?} prefill {lens:?}", m.key, dev.key);
                        let (f, b) = spec_prefill(&m, lens);
                        assert_eq!(c.prefill_work(lens.iter().copied()), (f, b), "{}", what());
                        check_step(&what, &r, c.prefill(lens.iter().copied()), f, b);
                        cases += 1;
                    }
                    for (ctx, b) in decodes {
                        let what = || format!("{} {} x{n} {o:?} decode {ctx} {b}", m.key, dev.key);
                        let (f, by) = spec_decode(&m, ctx, b);
                        assert_eq!(c.decode_work(ctx, b), (f, by), "{}", what());
                        check_step(&what, &r, c.decode_sum(ctx, b), f, by);
                        cases += 1;
                    }
                }
            }
        }
    }
    assert!(cases > 10_000, "{cases}");
    let hits = HITS.with(|h| *h.borrow());
    for (i, n) in hits.iter().enumerate() {
        assert!(*n > 0, "branch {i} of §3.4 never taken: {hits:?}");
    }
}

#[test]
fn raw_step_memory_bound_with_dvfs_and_a_budget() {
    // `docs/cost-model.md#roofline` by hand, with round numbers: a device of 1e15 FLOP/s and 1e12 B/s
    // (eff 1), 1 pJ/FLOP and 100 pJ/B, TDP 700 W and idle 100 W: budget 600 W.
    let dev = round_device(700.0);
    let m = Catalogue::builtin().model("llama3-8b").unwrap().clone();
    let o = CostOptions {
        dvfs: true,
        ..CostOptions::default()
    };
    let c = CostModel::new(&m, &dev, 1, o.clone()).unwrap();
    // F = 4e14, B = 1e12: tc = 0.4 s, tm = 1 s (memory bound), ec = 400 J, em = 100 J.
    // DVFS: s = max(0.4, 0.4 / 1) = 0.4; power (400*0.16 + 100) / max(1, 1) = 164 W < 600: no
    // power branch. t = max(0.4 / 0.4, 1) = 1, ec = 400 * 0.4 * 0.4 = 64.00000000000001 (0.4*0.4
    // rounds up): energy 164.
    let r = c.step_time_raw(4e14, 1e12);
    assert_eq!(r.bound, Bound::Memory);
    assert_eq!(r.t, 1.0);
    assert_eq!(r.ec, (400.0 * 0.4) * 0.4);
    assert_eq!(r.em, 100.0);
    // F = 5e14, B = 1e12 with a budget of 1 W per device (cap 101 W): tc = 0.5, tm = 1,
    // s = 0.5; power (500*0.25 + 100) / 1 = 225 W > 1 W: power branch. x = (1*1 - 100)/500 < 0:
    // cubic, which gives a tiny s, raised to s_min = 0.4. t = max(0.5/0.4, 1) = 1.25,
    // ec = 500*0.4*0.4 = 80, (80 + 100) / 1.25 = 144 > 1: stretched to t = 180 / 1 = 180 s.
    let capped = CostModel::new(
        &m,
        &dev,
        1,
        CostOptions {
            power_cap_w: Some(101.0),
            ..o.clone()
        },
    )
    .unwrap();
    let r = capped.step_time_raw(5e14, 1e12);
    assert_eq!(r.bound, Bound::Power);
    assert_eq!(r.ec, (500.0 * 0.4) * 0.4);
    assert_eq!(r.t, ((500.0 * 0.4) * 0.4 + 100.0) / 1.0);
    // Same step with a 150 W budget per device (cap 250 W): s = 0.5 from DVFS; power
    // (500*0.25 + 100)/1 = 225 > 150: x = (150*1 - 100)/500 = 0.1, sqrt(0.1)*1 = 0.316 < tc = 0.5:
    // the cubic s^3 + p s + q = 0 with p = 100/500 = 0.2, q = -150*0.5/500 = -0.15. Its root is
    // s = 0.40868... (0.40868^3 + 0.2 * 0.40868 = 0.15), above s_min; then t = 0.5 / s.
    let c150 = CostModel::new(
        &m,
        &dev,
        1,
        CostOptions {
            power_cap_w: Some(250.0),
            ..o.clone()
        },
    )
    .unwrap();
    let r = c150.step_time_raw(5e14, 1e12);
    let (p, q): (f64, f64) = (100.0 / 500.0, ((-150.0) * 0.5) / 500.0);
    let rr = ((q * q) / 4.0 + ((p * p) * p) / 27.0).sqrt();
    let s = cbrt_py((-q) / 2.0 + rr) + cbrt_py((-q) / 2.0 - rr);
    assert!(s > 0.4086 && s < 0.4087, "{s}");
    assert!((s * s * s + p * s + q).abs() < 1e-12);
    assert_eq!(r.bound, Bound::Power);
    let mut t = (0.5 / s).max(1.0);
    let ec = (500.0 * s) * s;
    if (ec + 100.0) / t > 150.0 {
        t = (ec + 100.0) / 150.0;
    }
    assert_eq!(r.t, t);
    assert_eq!(r.ec, ec);
    // Memory bound, DVFS to s = 0.5, and a budget between the DVFS power and the full-clock
    // power: F = 5e14, B = 1e12, cap 300 W (budget 200): (500*0.25 + 100)/1 = 225 > 200: power.
    // x = (200*1 - 100)/500 = 0.2, sqrt(0.2) = 0.447 < tc = 0.5: cubic again. With B = 2e12
    // instead: tm = 2, em = 200, s = 0.4 (floor) from DVFS: (500*0.16 + 200)/2 = 140 < 200, no
    // power: t = max(0.5/0.4, 2) = 2, ec = 80.
    let c200 = CostModel::new(
        &m,
        &dev,
        1,
        CostOptions {
            power_cap_w: Some(300.0),
            ..o.clone()
        },
    )
    .unwrap();
    let r = c200.step_time_raw(5e14, 2e12);
    assert_eq!(r.bound, Bound::Memory);
    assert_eq!(r.t, 2.0);
    assert_eq!(r.ec, (500.0 * 0.4) * 0.4);
    // The sqrt branch with DVFS: F = 2e14, B = 1e12, budget 60 W per device (cap 160):
    // tc = 0.2, tm = 1, DVFS s = max(0.4, 0.2) = 0.4: power (200*0.16 + 100)/1 = 132 > 60.
    // x = (60*1 - 100)/200 < 0: cubic, then s_min. With em small instead (B = 1e11, tm = 0.1,
    // compute bound): no DVFS; see the grid for the sqrt branch under DVFS.
    let c60 = CostModel::new(
        &m,
        &dev,
        1,
        CostOptions {
            power_cap_w: Some(160.0),
            ..o
        },
    )
    .unwrap();
    let r = c60.step_time_raw(2e14, 1e12);
    assert_eq!(r.bound, Bound::Power);
    // s = 0.4: t = max(0.2/0.4, 1) = 1, ec = 200 * 0.4 * 0.4 = 32, (32 + 100)/1 = 132 > 60:
    // stretched to 132 / 60 = 2.2.
    assert_eq!(r.ec, (200.0 * 0.4) * 0.4);
    assert_eq!(r.t, ((200.0 * 0.4) * 0.4 + 100.0) / 60.0);
    assert_eq!(r.em, 100.0);
}

#[test]
fn construction_errors() {
    let cat = Catalogue::builtin();
    let m = cat.model("llama3-8b").unwrap();
    let h = cat.device("h100").unwrap();
    let d = CostOptions::default();
    for n in [0u32, 1025] {
        let e = CostModel::new(m, h, n, d.clone()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("devices per instance: must be between 1 and 1024, got {n}")
        );
    }
    assert!(CostModel::new(m, h, 1024, d.clone()).is_ok());
    assert!(CostModel::new(m, h, 1, d.clone()).is_ok());
    // A cap at the idle power leaves no budget; just above it leaves one.
    let at_idle = CostOptions {
        power_cap_w: Some(100.0),
        ..d.clone()
    };
    assert_eq!(
        CostModel::new(m, h, 1, at_idle).unwrap_err().to_string(),
        "power cap: 100 W per device is below the idle power of H100-SXM (100 W)"
    );
    let above = CostOptions {
        power_cap_w: Some(100.5),
        ..d.clone()
    };
    // (100.5 - 100) * 2 = 1 W
    assert_eq!(
        CostModel::new(m, h, 2, above).unwrap().budget_w(),
        Some(1.0)
    );
    for bad in [0.0, -5.0, f64::NAN, f64::INFINITY] {
        let o = CostOptions {
            power_cap_w: Some(bad),
            ..d.clone()
        };
        assert!(CostModel::new(m, h, 1, o).is_err(), "{bad}");
    }
    // Without a TDP and without a cap: no power roof at all.
    let free = CostOptions {
        enforce_tdp: false,
        ..d.clone()
    };
    assert_eq!(CostModel::new(m, h, 1, free).unwrap().budget_w(), None);
    // An invalid model or device is rejected.
    let mut bad = m.clone();
    bad.n_layers = 0;
    assert!(CostModel::new(&bad, h, 1, d.clone()).is_err());
    let mut badd = h.clone();
    badd.bw_eff = 0.0;
    assert!(CostModel::new(m, &badd, 1, d).is_err());
}

#[test]
fn kv_capacity_by_the_spec() {
    // `docs/cost-model.md#kv-capacity`: free = ((cap * n) * mem_util) - weight_bytes_total; tokens = free // kv_per_token.
    let cat = Catalogue::builtin();
    for m in models() {
        for dev in &cat.devices {
            for n in [1u32, 2, 4, 8] {
                for mem_util in [0.9, 0.5] {
                    let o = CostOptions {
                        mem_util,
                        ..CostOptions::default()
                    };
                    let c = CostModel::new(&m, dev, n, o).unwrap();
                    let s = shape(&m);
                    let free = ((dev.mem_capacity * n as f64) * mem_util)
                        - s.params as f64 * m.weight_bytes;
                    let got = c.kv_capacity_tokens();
                    if free <= 0.0 {
                        assert_eq!(
                            got.unwrap_err().to_string(),
                            format!("model: {} does not fit on {n}x {}", m.name, dev.name)
                        );
                    } else {
                        assert_eq!(
                            got.unwrap(),
                            py_floordiv(free, s.kv_per_token) as u64,
                            "{} {} {n}",
                            m.key,
                            dev.key
                        );
                    }
                }
            }
        }
    }
    // Hand check: Llama-3-8B on 1xH100: free = 80e9 * 0.9 - 16059990016 = 55940009984;
    // / 131072 = 426788.0... -> 426788 (`docs/cost-model.md#kv-capacity`).
    let c = CostModel::new(
        cat.model("llama3-8b").unwrap(),
        cat.device("h100").unwrap(),
        1,
        CostOptions::default(),
    )
    .unwrap();
    assert_eq!(c.kv_capacity_tokens().unwrap(), 426788);
}

#[test]
fn endpoint_pass_by_the_spec() {
    // `docs/cost-model.md#compression` written out, for every compression preset, batches of several prompts.
    let cat = Catalogue::builtin();
    let m = cat.model("llama3-8b").unwrap();
    for dev in ["h100", "a100", "optical"] {
        let c = CostModel::new(m, cat.device(dev).unwrap(), 1, CostOptions::default()).unwrap();
        let r = rates(cat.device(dev).unwrap(), 1, &CostOptions::default());
        let kvt = shape(m).kv_per_token;
        for comp in &cat.compression {
            let tr = KvTransit::new(comp.for_model(m), CompressAt::Endpoint);
            for lens in [&[2048u64][..], &[100, 3000, 1], &[]] {
                let base = c.prefill([512, 700]);
                let got = c.endpoint_pass(base, &tr, lens.iter().copied());
                let cp = &tr.compression;
                if cp.ratio == 1.0 && cp.ops_per_value == 0.0 || lens.is_empty() {
                    assert_eq!(got, base, "{dev} {} {lens:?}", cp.key);
                    continue;
                }
                let (mut ops, mut nb) = (0.0, 0.0);
                for &p in lens {
                    let hb = p as f64 * kvt;
                    ops += tr.ops(hb, p, m.kv_bytes, true);
                    nb += hb + hb / cp.ratio;
                }
                let (tc, tm, ec, em) = (ops / r.rf, nb / r.rb, ops * r.jf, nb * r.jb);
                let what = format!("{dev} {} {lens:?}", cp.key);
                assert_eq!(got.flops, PyNum::Float(base.flops.to_f64() + ops), "{what}");
                assert_eq!(got.bytes, base.bytes + nb, "{what}");
                assert_eq!(got.time_s, base.time_s + tc.max(tm), "{what}");
                assert_eq!(got.bound, base.bound, "{what}");
                assert_eq!(got.energy_j, (base.energy_j + ec) + em, "{what}");
                assert_eq!(got.compute_j, base.compute_j + ec, "{what}");
                assert_eq!(got.memory_j, base.memory_j + em, "{what}");
            }
        }
    }
}

#[test]
fn endpoint_pass_by_hand() {
    // Round numbers: R_f = 1e15, R_b = 1e12, 1 pJ/FLOP, 100 pJ/B. Llama-3-8B, one 1000-token
    // prompt: hb = 1000 * 131072 = 131072000 B, 65536000 values.
    let dev = round_device(700.0);
    let cat = Catalogue::builtin();
    let m = cat.model("llama3-8b").unwrap();
    let c = CostModel::new(m, &dev, 1, CostOptions::default()).unwrap();
    let base = StepCost {
        flops: PyNum::Int(1000),
        bytes: 10.0,
        time_s: 1.0,
        bound: Bound::Memory,
        energy_j: 3.0,
        compute_j: 1.0,
        memory_j: 2.0,
        comm_time_s: 0.25,
        comm_j: 0.125,
    };
    // A stage that does work but keeps the size (ratio 1, 4 ops per value): ops = 4 * 65536000 =
    // 262144000; nb = 2 * 131072000 = 262144000 B. tc = 2.62144e-7 s, tm = 2.62144e-4 s.
    // ec = 2.62144e-4 J, em = 262144000 * 1e-10 = 0.0262144 J.
    let work_only = KvCompression {
        key: "work".into(),
        description: String::new(),
        ratio: 1.0,
        ops_per_value: 4.0,
        fft: false,
        scale_bytes_per_vector: 0.0,
    };
    let got = c.endpoint_pass(
        base,
        &KvTransit::new(work_only, CompressAt::Endpoint),
        [1000],
    );
    assert_eq!(got.flops, PyNum::Float(1000.0 + 262144000.0));
    assert_eq!(got.bytes, 10.0 + 262144000.0);
    assert_eq!(got.time_s, 1.0 + 262144000.0 / 1e12);
    assert_eq!(got.compute_j, 1.0 + 262144000.0 * 1e-12);
    assert_eq!(got.memory_j, 2.0 + 262144000.0 * 100e-12);
    assert_eq!(
        got.energy_j,
        (3.0 + 262144000.0 * 1e-12) + 262144000.0 * 100e-12
    );
    assert_eq!(got.bound, Bound::Memory);
    // A stage that shrinks without work (ratio 2, 0 ops): ops = 0, nb = 131072000 * 1.5 =
    // 196608000; time + 1.96608e-4 s; no compute energy.
    let free_shrink = KvCompression {
        key: "shrink".into(),
        description: String::new(),
        ratio: 2.0,
        ops_per_value: 0.0,
        fft: false,
        scale_bytes_per_vector: 0.0,
    };
    let got = c.endpoint_pass(
        base,
        &KvTransit::new(free_shrink, CompressAt::Endpoint),
        [1000],
    );
    assert_eq!(got.flops, PyNum::Float(1000.0));
    assert_eq!(got.bytes, 10.0 + 196608000.0);
    assert_eq!(got.time_s, 1.0 + 196608000.0 / 1e12);
    assert_eq!(got.compute_j, 1.0);
    assert_eq!(got.memory_j, 2.0 + 196608000.0 * 100e-12);
    // Compute-bound pass: 2e6 ops per value makes tc = 65536000 * 2e6 / 1e15 = 0.131072 s > tm.
    let heavy = KvCompression {
        key: "heavy".into(),
        description: String::new(),
        ratio: 2.0,
        ops_per_value: 2e6,
        fft: false,
        scale_bytes_per_vector: 0.0,
    };
    let got = c.endpoint_pass(base, &KvTransit::new(heavy, CompressAt::Endpoint), [1000]);
    assert_eq!(got.time_s, 1.0 + (65536000.0 * 2e6) / 1e15);
}

#[test]
fn pynum_and_bound() {
    // Python: 2 + 3 -> 5 (int); 2 + 0.5 -> 2.5; 0.5 + 2 -> 2.5; 2**60 + 1 stays exact as an int.
    assert_eq!(PyNum::Int(2) + PyNum::Int(3), PyNum::Int(5));
    assert_eq!(PyNum::Int(2) + PyNum::Float(0.5), PyNum::Float(2.5));
    assert_eq!(PyNum::Float(0.5) + PyNum::Int(2), PyNum::Float(2.5));
    assert_eq!(PyNum::Float(0.25) + PyNum::Float(0.5), PyNum::Float(0.75));
    assert_eq!(
        PyNum::Int(1 << 60) + PyNum::Int(1),
        PyNum::Int(1152921504606846977)
    );
    // float(2**60 + 1) rounds to 2**60: 1152921504606846976.0
    assert_eq!(PyNum::Int((1 << 60) + 1).to_f64(), 1152921504606846976.0);
    assert_eq!(PyNum::Float(-2.5).to_f64(), -2.5);
    assert_eq!(PyNum::Int(7).to_f64(), 7.0);
    assert_eq!(PyNum::default(), PyNum::Int(0));
    assert_eq!(Bound::Compute.as_str(), "compute");
    assert_eq!(Bound::Memory.as_str(), "memory");
    assert_eq!(Bound::Power.as_str(), "power");
}

fn round_device(tdp_w: f64) -> Device {
    // R_f = 1e15 FLOP/s, R_b = 1e12 B/s, 1 pJ/FLOP, 100 pJ/B, idle 100 W.
    Device {
        key: "round".into(),
        name: "Round".into(),
        peak_flops: 1e15,
        mem_bw: 1e12,
        mem_capacity: 80e9,
        flops_eff: 1.0,
        bw_eff: 1.0,
        tdp_w,
        idle_w: 100.0,
        pj_per_flop: 1.0,
        pj_per_byte: 100.0,
        native_formats: vec![],
        scale_up: String::new(),
        fft_efficiency: 1.0,
        engine: None,
        step_overhead_s: None,
        per_seq_overhead_s: None,
        calibration: None,
    }
}

#[test]
fn exact_ties_follow_the_spec_comparisons() {
    let m = Catalogue::builtin().model("llama3-8b").unwrap().clone();
    // Step 5's check is strict (`> budget`): F = 5e14, B = 5e11 gives tc = tm = 0.5 s, ec = 500 J,
    // em = 50 J, power (500 + 50) / 0.5 = 1100 W, exactly the budget of a 1200 W TDP over 100 W
    // idle. No power branch: the label stays `compute` (a tie of the roofs is `compute`), t = 0.5.
    let c = CostModel::new(&m, &round_device(1200.0), 1, CostOptions::default()).unwrap();
    let r = c.step_time_raw(5e14, 5e11);
    assert_eq!(r.bound, Bound::Compute);
    assert_eq!((r.t, r.ec, r.em), (0.5, 500.0, 50.0));
    // One watt less of budget and it fires: x = (1099 * 0.5 - 50) / 500 = 0.999, sqrt(x) * 0.5 <
    // tc: the cubic branch, labelled `power`.
    let c = CostModel::new(&m, &round_device(1199.0), 1, CostOptions::default()).unwrap();
    assert_eq!(c.step_time_raw(5e14, 5e11).bound, Bound::Power);
    // Step 3's DVFS test is strict (`tc < tm`): with tc == tm the clock stays at 1 even when
    // s_min is above 1 (a nonsense floor that makes the two readings differ): ec stays 500 J.
    let o = CostOptions {
        dvfs: true,
        s_min: 1.5,
        enforce_tdp: false,
        ..CostOptions::default()
    };
    let c = CostModel::new(&m, &round_device(1200.0), 1, o).unwrap();
    let r = c.step_time_raw(5e14, 5e11);
    assert_eq!((r.t, r.ec, r.bound), (0.5, 500.0, Bound::Compute));
    // Memory bound (tm = 1 > tc = 0.5) with that floor: s = max(1.5, 0.5) = 1.5: t = max(0.5/1.5,
    // 1) = 1, ec = 500 * 1.5 * 1.5 = 1125.
    let r = c.step_time_raw(5e14, 1e12);
    assert_eq!((r.t, r.ec, r.bound), (1.0, 1125.0, Bound::Memory));
    // Step 8's check is strict too, and at a tie its stretch would not give t back: a device
    // whose budget is exactly the step's power, (ec + em) / t. Found with python3 (IEEE doubles,
    // same as here): B = 114289041049, F = 809788000000 on R_f = 1e15, R_b = 1e12, 1 pJ/FLOP,
    // 100 pJ/B: tm = B / 1e12 = 0.114289041049 > tc = F / 1e15 = 0.000809788;
    // (F * 1e-12 + B * 1e-10) / tm = 107.08543874869694 (python3 -c 'B=114289041049.0;
    // F=809788000000.0; print((F*1e-12+B*(100*1e-12))/(B/1e12))'), and
    // (ec + em) / 107.08543874869694 = 0.11428904104899999 != tm. With idle 0 and that TDP the
    // budget is that power: neither check fires, the step stays memory-bound at t = tm.
    let mut d = round_device(107.08543874869694);
    d.idle_w = 0.0;
    let c = CostModel::new(&m, &d, 1, CostOptions::default()).unwrap();
    assert_eq!(c.budget_w(), Some(107.08543874869694));
    let r = c.step_time_raw(809788000000.0, 114289041049.0);
    assert_eq!(r.bound, Bound::Memory);
    assert_eq!(r.t, 0.114289041049);
    assert_eq!(r.t, 114289041049.0 / 1e12);
    assert_eq!(r.ec, 809788000000.0 * 1e-12);
    assert_eq!(r.em, 114289041049.0 * (100.0 * 1e-12));
    // The sqrt branch's test is `>=`: at sqrt(x) * tm == tc exactly the step keeps its memory
    // time. F = 5e14, B = 1e12 (tc = 0.5, tm = 1, ec = 500 J, em = 100 J), budget 225 W (TDP 325
    // over 100 W idle): power 600 W > 225; x = (225 * 1 - 100) / 500 = 0.25, sqrt(x) * tm = 0.5 =
    // tc: s = 0.5, t = max(0.5 / 0.5, 1) = 1, ec = 500 * 0.5 * 0.5 = 125, (125 + 100) / 1 = 225
    // is not above the budget: no stretch. (The cubic would give 1.0000000000000004 s.)
    let c = CostModel::new(&m, &round_device(325.0), 1, CostOptions::default()).unwrap();
    let r = c.step_time_raw(5e14, 1e12);
    assert_eq!(r.bound, Bound::Power);
    assert_eq!((r.t, r.ec, r.em), (1.0, 125.0, 100.0));
    // Step 5 divides by max(tc / s, tm) with the DVFS clock s: tc / (tc / tm) can round one ulp
    // above tm, and then only the spec's divisor keeps a step just under its budget. F =
    // 535761929853378, B = 882261405816 (found with python3 over the formulas of `docs/cost-model.md#roofline`):
    // tm = 0.882261405816, s = tc / tm, tc / s = 0.8822614058160001; the power over that divisor
    // is 323.93589151757817 W, over tm it would be 323.9358915175782 W. With the budget at the
    // former (idle 0, TDP 323.93589151757817) step 5 does not fire: memory-bound, t = tc / s,
    // ec = (ec * s) * s = 197.56999446295782 J. (python3 -c 'F=535761929853378.0;
    // B=882261405816.0; tc=F/1e15; tm=B/1e12; s=max(0.4,tc/tm); ec=F*1e-12; em=B*(100*1e-12);
    // print(tc/s, ((ec*s)*s+em)/(tc/s), ((ec*s)*s+em)/tm, (ec*s)*s)')
    let mut d = round_device(323.93589151757817);
    d.idle_w = 0.0;
    let o = CostOptions {
        dvfs: true,
        ..CostOptions::default()
    };
    let c = CostModel::new(&m, &d, 1, o).unwrap();
    let r = c.step_time_raw(535761929853378.0, 882261405816.0);
    assert_eq!(r.bound, Bound::Memory);
    assert_eq!(r.t, 0.8822614058160001);
    assert_eq!(r.ec, 197.56999446295782);
    assert_eq!(r.em, 88.2261405816);
}

/// The options' JSON leaves the compute speed-up out at 1.0 (every run that does not quantise
/// compute echoes what it echoed before the option) and writes any other value.
#[test]
fn compute_speedup_is_echoed_only_when_not_one() {
    let d = serde_json::to_value(CostOptions::default()).unwrap();
    assert!(d.get("compute_speedup").is_none(), "{d}");
    let two = CostOptions {
        compute_speedup: 2.0,
        ..CostOptions::default()
    };
    let v = serde_json::to_value(two).unwrap();
    assert_eq!(v["compute_speedup"].as_f64(), Some(2.0));
}
