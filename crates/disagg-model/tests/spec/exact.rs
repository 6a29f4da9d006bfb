//! Every exact value of the reference cost model that the specification lists, asserted with `==`.
//!
//! Source of the expected values: `docs/cost-model.md` (a clean-room specification of
//! Disaggregated_Inference_Sim's `hardware.py`), `docs/cost-model.md#catalogue`–`docs/cost-model.md#catalogue` derived tables, `docs/cost-model.md#kv-capacity` capacities, `docs/cost-model.md#compression`
//! hand-off table, `docs/exactness.md#verification` fixture values (from the reference's `cost_model.json`), `docs/exactness.md#verification` hand
//! calculations E1–E8 and `docs/cost-model.md#seed-calculator` the seed chapter's numbers. Values copied verbatim, full precision.

#![allow(clippy::type_complexity)]

use disagg_model::*;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn cm(model: &str, dev: &str, n: u32) -> CostModel {
    let c = cat();
    CostModel::new(
        c.model(model).unwrap(),
        c.device(dev).unwrap(),
        n,
        CostOptions::default(),
    )
    .unwrap()
}

fn cm_opts(model: &ModelSpec, dev: &str, n: u32, opts: CostOptions) -> CostModel {
    CostModel::new(model, cat().device(dev).unwrap(), n, opts).unwrap()
}

fn quant(model: &str, wb: f64, kvb: f64) -> ModelSpec {
    let mut m = cat().model(model).unwrap().clone();
    m.weight_bytes = wb;
    m.kv_bytes = kvb;
    m
}

#[test]
fn derived_model_table() {
    // `docs/cost-model.md#catalogue`: hd, params_per_layer, layer_params, params, matmul_params, W resident,
    // W streamed, embedding row, KV bytes per token.
    let rows: [(&str, u64, i128, i128, i128, i128, f64, f64, f64, f64); 6] = [
        (
            "llama3-8b",
            128,
            218103808,
            6979321856,
            8029995008,
            7504658432,
            16059990016.0,
            15009316864.0,
            8192.0,
            131072.0,
        ),
        (
            "llama3-70b",
            128,
            855638016,
            68451041280,
            70552387584,
            69501714432,
            141104775168.0,
            139003428864.0,
            16384.0,
            327680.0,
        ),
        (
            "mistral-7b",
            128,
            218103808,
            6979321856,
            7241465856,
            7110393856,
            14482931712.0,
            14220787712.0,
            8192.0,
            131072.0,
        ),
        (
            "yi-34b",
            128,
            557842432,
            33470545920,
            34388049920,
            33929297920,
            68776099840.0,
            67858595840.0,
            14336.0,
            245760.0,
        ),
        (
            "opt-13b",
            128,
            314567680,
            12582707200,
            13097492480,
            12840099840,
            26194984960.0,
            25680199680.0,
            10240.0,
            819200.0,
        ),
        (
            "llama3.2-1b",
            64,
            60817408,
            973078528,
            1498415104,
            1235746816,
            2996830208.0,
            2471493632.0,
            4096.0,
            32768.0,
        ),
    ];
    let c = cat();
    for (k, hd, ppl, lp, p, mp, wr, ws, er, kv) in rows {
        let m = c.model(k).unwrap();
        assert_eq!(m.hd(), hd, "{k}");
        assert_eq!(m.params_per_layer(), ppl, "{k}");
        assert_eq!(m.layer_params(), lp, "{k}");
        assert_eq!(m.params(), p, "{k}");
        assert_eq!(m.matmul_params(), mp, "{k}");
        assert_eq!(m.weight_bytes_total(), wr, "{k}");
        assert_eq!(m.weight_bytes_streamed(), ws, "{k}");
        assert_eq!(m.embedding_row_bytes(), er, "{k}");
        assert_eq!(m.kv_bytes_per_token(), kv, "{k}");
    }
}

#[test]
fn derived_device_table() {
    // `docs/cost-model.md#catalogue` and N3: the rates are products computed at run time.
    let rows: [(&str, f64, f64, f64, f64); 6] = [
        (
            "h100",
            543950000000000.06,
            2680000000000.0,
            202.96641791044777,
            600.0,
        ),
        (
            "a100",
            171600000000000.0,
            1631200000000.0002,
            105.19862677783226,
            340.0,
        ),
        (
            "a100-40g",
            171600000000000.0,
            1244000000000.0,
            137.94212218649517,
            340.0,
        ),
        (
            "h200",
            543950000000000.06,
            3840000000000.0,
            141.65364583333334,
            600.0,
        ),
        (
            "b200",
            1237500000000000.0,
            6400000000000.0,
            193.359375,
            860.0,
        ),
        (
            "optical",
            1600000000000000.0,
            2680000000000.0,
            597.0149253731344,
            520.0,
        ),
    ];
    for (k, rf, rb, ridge, budget) in rows {
        let c = cm("llama3-8b", k, 1);
        assert_eq!(c.flops_rate(), rf, "{k}");
        assert_eq!(c.byte_rate(), rb, "{k}");
        assert_eq!(c.device.ridge_point(), ridge, "{k}");
        assert_eq!(c.budget_w(), Some(budget), "{k}");
    }
    assert_eq!(cat().device("a100").unwrap().mem_bw, 2039000000000.0002);
    assert_ne!(cat().device("a100").unwrap().mem_bw, 2.039e12);
}

#[test]
fn kv_capacity() {
    // `docs/cost-model.md#kv-capacity`.
    let rows = [
        ("llama3-8b", "h100", 1, 426788),
        ("llama3-8b", "a100", 1, 426788),
        ("llama3-8b", "a100-40g", 1, 152130),
        ("llama3-8b", "h200", 1, 845642),
        ("llama3-8b", "b200", 1, 1113433),
        ("llama3-70b", "h100", 4, 448288),
        ("llama3-70b", "h100", 2, 8835),
        ("llama3-70b", "a100-40g", 4, 8835),
        ("llama3-70b", "h200", 4, 1118454),
        ("llama3-70b", "b200", 4, 1546921),
        ("opt-13b", "a100-40g", 1, 11969),
    ];
    for (m, d, n, want) in rows {
        assert_eq!(
            cm(m, d, n).kv_capacity_tokens().unwrap(),
            want,
            "{m} {d} x{n}"
        );
    }
    let e = cm("llama3-70b", "h100", 1)
        .kv_capacity_tokens()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "model: Llama-3-70B does not fit on 1x H100-SXM"
    );
}

struct Fx {
    f: Option<i128>,
    b: Option<f64>,
    t: f64,
    bound: Bound,
}

fn check(c: &StepCost, fx: &Fx, what: &str) {
    if let Some(f) = fx.f {
        assert_eq!(c.flops, PyNum::Int(f), "{what} flops");
    }
    if let Some(b) = fx.b {
        assert_eq!(c.bytes, b, "{what} bytes");
    }
    assert_eq!(c.time_s, fx.t, "{what} time");
    assert_eq!(c.bound, fx.bound, "{what} bound");
}

fn fx(f: Option<i128>, b: Option<f64>, t: f64, bound: Bound) -> Fx {
    Fx { f, b, t, bound }
}

#[test]
fn fixture_8b() {
    use Bound::*;
    // `docs/exactness.md#verification` (cost_model.json).
    let h = cm("llama3-8b", "h100", 1);
    check(
        &h.prefill([2048]),
        &fx(
            Some(31839129436160),
            Some(15294529536.0),
            0.05903319135244048,
            Compute,
        ),
        "8B prefill 2048",
    );
    check(
        &h.prefill([128]),
        &fx(
            Some(1925521080320),
            Some(15027142656.0),
            0.006107142782089552,
            Memory,
        ),
        "8B prefill 128",
    );
    check(
        &h.prefill([512, 1024]),
        &fx(
            Some(23398310739968),
            Some(15223226368.0),
            0.043515554260443054,
            Compute,
        ),
        "8B prefill 512,1024",
    );
    check(
        &h.prefill([8192]),
        &fx(
            Some(140550657277952),
            Some(16150167552.0),
            0.25888892780209943,
            Compute,
        ),
        "8B prefill 8192",
    );
    check(
        &h.prefill([4096; 4]),
        &fx(
            Some(263509128511488),
            Some(17291018240.0),
            0.4849363057477488,
            Compute,
        ),
        "8B prefill 4096x4",
    );
    check(
        &cm("llama3-8b", "a100", 1).prefill([4096; 4]),
        &fx(
            Some(263509128511488),
            Some(17291018240.0),
            1.5361009820016782,
            Compute,
        ),
        "8B prefill 4096x4 A100",
    );
    check(
        &h.decode_sum(2048, 1),
        &fx(
            Some(16083582976),
            Some(15277891584.0),
            0.006200705814925373,
            Memory,
        ),
        "8B decode 2048 b1",
    );
    check(
        &h.decode_sum(131072, 64),
        &fx(
            Some(1029349310464),
            Some(32198098944.0),
            0.012514216023880597,
            Memory,
        ),
        "8B decode 131072 b64",
    );
    check(
        &h.decode_sum(2097152, 256),
        &fx(
            Some(4942030962688),
            Some(289922875392.0),
            0.10868017738507463,
            Memory,
        ),
        "8B decode 2097152 b256",
    );
    check(
        &cm("llama3-8b", "h100", 2).prefill([2048]),
        &fx(None, None, 0.02976659567622024, Compute),
        "8B prefill 2xH100",
    );
    check(
        &cm("llama3-8b", "h100", 2).decode_sum(2048, 1),
        &fx(None, None, 0.0033503529074626866, Memory),
        "8B decode 2xH100",
    );
    check(
        &cm("llama3-8b", "h100", 8).prefill([8192]),
        &fx(None, None, 0.03279861597526243, Compute),
        "8B prefill 8192 8xH100",
    );
}

#[test]
fn fixture_70b() {
    use Bound::*;
    for (n, t) in [
        (1, 0.5339667980639984),
        (2, 0.2672333990319992),
        (4, 0.1338666995159996),
        (8, 0.0671833497579998),
    ] {
        check(
            &cm("llama3-70b", "h100", n).prefill([2048]),
            &fx(Some(290179264806912), Some(139708071936.0), t, Compute),
            "70B prefill 2048",
        );
    }
    check(
        &cm("llama3-70b", "h100", 1).prefill([128]),
        &fx(
            Some(17814081503232),
            Some(139047469056.0),
            0.052383383976119406,
            Memory,
        ),
        "70B prefill 128",
    );
    check(
        &cm("llama3-70b", "h100", 1).prefill([4096; 4]),
        &fx(
            Some(2365414583566336),
            Some(144640573440.0),
            4.349088259153112,
            Compute,
        ),
        "70B 4096x4 H100",
    );
    check(
        &cm("llama3-70b", "a100", 1).prefill([4096; 4]),
        &fx(
            Some(2365414583566336),
            Some(144640573440.0),
            13.784967270200093,
            Compute,
        ),
        "70B 4096x4 A100",
    );
    let h4 = cm("llama3-70b", "h100", 4);
    check(
        &h4.decode_sum(2048, 1),
        &fx(
            Some(144374759424),
            Some(139674861568.0),
            0.013529371414925374,
            Memory,
        ),
        "70B decode 2048",
    );
    check(
        &h4.decode_sum(2097152, 256),
        &fx(
            Some(41083107016704),
            Some(826286276608.0),
            0.07757894371343284,
            Memory,
        ),
        "70B decode 2097152",
    );
    for (n, t) in [
        (1, 0.07110800982220604),
        (2, 0.03580400491110302),
        (4, 0.01815200245555151),
    ] {
        check(
            &cm("llama3-70b", "h100", n).decode_sum(131072, 256),
            &fx(Some(35929146261504), Some(182041182208.0), t, Power),
            "70B decode 131072 b256 (power)",
        );
    }
}

#[test]
fn fixture_quantised() {
    use Bound::*;
    let q70 = quant("llama3-70b", 0.5, 1.0);
    let o = CostOptions::default;
    for (n, t) in [
        (2, 0.02765707108918974),
        (4, 0.01407853554459487),
        (8, 0.007289267772297435),
    ] {
        check(
            &cm_opts(&q70, "a100", n, o()).decode_sum(131072, 64),
            &fx(Some(9239984603136), Some(56236441600.0), t, Power),
            "q70 decode 131072 b64",
        );
    }
    for (n, t) in [
        (2, 0.12658475019232737),
        (4, 0.06354237509616369),
        (8, 0.03202118754808184),
    ] {
        check(
            &cm_opts(&q70, "a100", n, o()).decode_sum(2097152, 256),
            &fx(Some(41083107016704), Some(378391232512.0), t, Power),
            "q70 decode 2097152 b256",
        );
    }
    check(
        &cm_opts(&q70, "a100", 2, o()).decode_sum(32768, 64),
        &fx(
            Some(8982286565376),
            Some(40130314240.0),
            0.026672163652027972,
            Compute,
        ),
        "q70 32768 b64",
    );
    check(
        &cm_opts(&q70, "a100", 2, o()).decode_sum(524288, 64),
        &fx(
            Some(10270776754176),
            Some(120660951040.0),
            0.037485333202550264,
            Memory,
        ),
        "q70 524288 b64",
    );
    check(
        &cm_opts(&q70, "a100", 8, o()).decode_sum(524288, 256),
        &fx(
            Some(36959938412544),
            Some(120693194752.0),
            0.027423032060419582,
            Compute,
        ),
        "q70 524288 b256 n8",
    );
    check(
        &cm_opts(&q70, "a100", 4, o()).prefill([2048]),
        &fx(
            Some(290179264806912),
            Some(35094790144.0),
            0.4232553391709091,
            Compute,
        ),
        "q70 prefill n4",
    );
    let q8 = quant("llama3-8b", 0.5, 1.0);
    check(
        &cm_opts(&q8, "a100", 8, o()).decode_sum(524288, 256),
        &fx(
            Some(4117397241856),
            Some(38129369088.0),
            0.0036613233302496325,
            Power,
        ),
        "q8 524288 b256 n8",
    );
}

#[test]
fn hand_calculations_e1_to_e3() {
    // E1: 8B prefill 2048 on 1xH100.
    let h = cm("llama3-8b", "h100", 1);
    let (f, b) = h.prefill_work([2048]);
    let r = h.step_time_raw(f as f64, b);
    assert_eq!(r.t, 0.05853319135244048);
    assert_eq!(b / h.byte_rate(), 0.005706914005970149);
    assert_eq!(r.ec, 31.83912943616);
    assert_eq!(r.em, 0.91767177216);
    assert_eq!(h.prefill([2048]).energy_j, 32.75680120832);
    // E2: 8B decode b=1 ctx=2048.
    let (f, b) = h.decode_work(2048, 1);
    assert_eq!(f as f64 / h.flops_rate(), 2.9568127541134293e-05);
    let r = h.step_time_raw(f as f64, b);
    assert_eq!(r.t, 0.005700705814925373);
    assert_eq!(r.ec, 0.016083582976);
    assert_eq!(r.em, 0.91667349504);
    // E3: 70B prefill 2048 on 4xH100.
    let h4 = cm("llama3-70b", "h100", 4);
    assert_eq!(h4.flops_rate(), 2175800000000000.2);
    assert_eq!(h4.byte_rate(), 1.072e13);
    let (f, b) = h4.prefill_work([2048]);
    let r = h4.step_time_raw(f as f64, b);
    assert_eq!(r.t, 0.1333666995159996);
    assert_eq!(b / h4.byte_rate(), 0.013032469397014926);
    assert_eq!(r.ec, 290.179264806912);
    assert_eq!(r.em, 8.38248431616);
}

fn capped(model: &str, dev: &str, n: u32, cap: Option<f64>, dvfs: bool) -> CostModel {
    let m = cat().model(model).unwrap().clone();
    cm_opts(
        &m,
        dev,
        n,
        CostOptions {
            power_cap_w: cap,
            dvfs,
            ..CostOptions::default()
        },
    )
}

#[test]
fn hand_calculations_power() {
    // E4: sqrt branch, 70B decode b=256 ctx=524288 on 1xH100 with a 400 W cap.
    let c = capped("llama3-70b", "h100", 1, Some(400.0), false);
    let s = c.decode_sum(524288, 256);
    assert_eq!(s.flops, PyNum::Int(36959938412544));
    assert_eq!(s.bytes, 310890201088.0);
    assert_eq!(s.time_s, 0.1165038063761194);
    assert_eq!(s.bound, Bound::Power);
    assert_eq!(s.compute_j, 16.147729847555812);
    assert_eq!(s.energy_j, 34.80114191283582);
    let u = cm("llama3-70b", "h100", 1).decode_sum(524288, 256);
    assert_eq!(u.energy_j, 55.613350477824);
    // DVFS moves the last bit (`docs/cost-model.md#roofline` notes).
    let d = capped("llama3-70b", "h100", 1, None, true).decode_sum(524288, 256);
    assert_eq!(d.time_s, 0.11650380637611941);
    assert_eq!(u.time_s, 0.1165038063761194);
    // E5: Cardano branch plus the rounding-triggered stretch (a fixture case).
    let c = cm("llama3-70b", "h100", 1);
    let s = c.decode_sum(131072, 256);
    assert_eq!(s.time_s, 0.07110800982220604);
    assert_eq!(s.energy_j, 42.36480589332362);
    assert_eq!(s.bound, Bound::Power);
    // E6: Cardano without a stretch: 70B prefill 2048, 4xH100, caps 400/300/120 W, DVFS.
    let s = capped("llama3-70b", "h100", 4, Some(400.0), true).prefill([2048]);
    assert_eq!(s.time_s, 0.16548937244031756);
    assert_eq!(s.energy_j, 197.98724692835873);
    assert_eq!(s.bound, Bound::Power);
    assert_eq!(
        capped("llama3-70b", "h100", 4, Some(300.0), true)
            .prefill([2048])
            .time_s,
        0.1902207768027685
    );
    assert_eq!(
        capped("llama3-70b", "h100", 4, Some(120.0), true)
            .prefill([2048])
            .time_s,
        0.6856395835658241
    );
    // E7: DVFS and the stretch at s_min: 70B decode b=16 ctx=36800 on 4xH100.
    let s = capped("llama3-70b", "h100", 4, None, true).decode_sum(36800, 16);
    assert_eq!(s.time_s, 0.014592122937313433);
    assert_eq!(s.compute_j, 0.37129052749824004);
    assert_eq!(s.energy_j, 9.43534400077824);
    assert_eq!(s.bound, Bound::Memory);
    assert_eq!(
        cm("llama3-70b", "h100", 4).decode_sum(36800, 16).energy_j,
        11.384619270144
    );
    let s = capped("llama3-70b", "h100", 4, Some(250.0), true).decode_sum(36800, 16);
    assert_eq!(s.time_s, 0.0162255733346304);
    assert_eq!(s.bound, Bound::Power);
    assert_eq!(
        capped("llama3-70b", "h100", 4, Some(200.0), true)
            .decode_sum(36800, 16)
            .time_s,
        0.0240883600019456
    );
}

#[test]
fn hand_calculations_e8_device_sweep() {
    let rows: [(&str, f64, f64, u64); 6] = [
        ("h100", 0.05903319135244048, 0.006200705814925373, 426788),
        ("a100", 0.18604271233193473, 0.009866044374693477, 426788),
        ("a100-40g", 0.18604271233193473, 0.01278126333118971, 152130),
        ("h200", 0.05903319135244048, 0.0044786176, 845642),
        ("b200", 0.02622858944336162, 0.00288717056, 1113433),
        ("optical", 0.0203994558976, 0.006200705814925373, 426788),
    ];
    for (d, p, dec, kv) in rows {
        let c = cm("llama3-8b", d, 1);
        assert_eq!(c.prefill([2048]).time_s, p, "{d}");
        assert_eq!(c.decode_sum(2048, 1).time_s, dec, "{d}");
        assert_eq!(c.kv_capacity_tokens().unwrap(), kv, "{d}");
    }
    assert_eq!(
        cm("llama3-70b", "a100", 4).prefill([2048]).time_s,
        0.4232553391709091
    );
    assert_eq!(
        cm("llama3-70b", "b200", 4).prefill([2048]).time_s,
        0.059122073698366064
    );
    assert_eq!(
        cm("llama3-70b", "optical", 4).prefill([2048]).time_s,
        0.04584051012608
    );
    assert_eq!(
        cm("llama3-70b", "a100", 4).decode_sum(2048, 1).time_s,
        0.021906765198626776
    );
    assert_eq!(
        cm("llama3-70b", "h200", 4).decode_sum(2048, 1).time_s,
        0.009593415466666666
    );
}

/// Rounds like Python's `format(x, '.Nf')` (half-even on the exact binary value, which is what
/// Rust's formatter does too).
fn r(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

#[test]
fn results_md_sections_1_and_2() {
    // `docs/exactness.md#verification`: `docs/cost-model.md#roofline`–`docs/cost-model.md#roofline` rows, at their published rounding.
    struct Row {
        c: CostModel,
        prefill: Option<u64>,
        ctx: u64,
        b: u64,
        gb: &'static str,
        ms: &'static str,
        intensity: Option<&'static str>,
        bound: Bound,
        dyn_j: Option<(&'static str, usize)>,
        w_dev: Option<&'static str>,
    }
    let rows = vec![
        Row {
            c: cm("llama3-8b", "h100", 1),
            prefill: None,
            ctx: 2048,
            b: 1,
            gb: "15.278",
            ms: "6.201",
            intensity: Some("1.1"),
            bound: Bound::Memory,
            dyn_j: Some(("0.93276", 5)),
            w_dev: None,
        },
        Row {
            c: cm("llama3-8b", "h100", 1),
            prefill: None,
            ctx: 131072,
            b: 64,
            gb: "32.198",
            ms: "12.514",
            intensity: Some("32.0"),
            bound: Bound::Memory,
            dyn_j: None,
            w_dev: None,
        },
        Row {
            c: cm("llama3-70b", "h100", 4),
            prefill: None,
            ctx: 36800,
            b: 16,
            gb: "151.068",
            ms: "14.592",
            intensity: Some("15.4"),
            bound: Bound::Memory,
            dyn_j: Some(("11.38", 2)),
            w_dev: Some("295.0"),
        },
        Row {
            c: capped("llama3-70b", "h100", 4, None, true),
            prefill: None,
            ctx: 36800,
            b: 16,
            gb: "151.068",
            ms: "14.592",
            intensity: None,
            bound: Bound::Memory,
            dyn_j: Some(("9.44", 2)),
            w_dev: Some("261.7"),
        },
        Row {
            c: cm("llama3-70b", "h100", 4),
            prefill: None,
            ctx: 2048,
            b: 1,
            gb: "139.675",
            ms: "13.529",
            intensity: Some("1.0"),
            bound: Bound::Memory,
            dyn_j: None,
            w_dev: None,
        },
        Row {
            c: cm("llama3-70b", "h100", 4),
            prefill: Some(2048),
            ctx: 0,
            b: 0,
            gb: "139.708",
            ms: "133.867",
            intensity: Some("2077.0"),
            bound: Bound::Compute,
            dyn_j: Some(("298.56", 2)),
            w_dev: Some("657.6"),
        },
        Row {
            c: cm("llama3-8b", "h100", 1),
            prefill: Some(2048),
            ctx: 0,
            b: 0,
            gb: "15.295",
            ms: "59.033",
            intensity: Some("2081.7"),
            bound: Bound::Compute,
            dyn_j: Some(("32.757", 3)),
            w_dev: None,
        },
    ];
    for row in rows {
        let s = match row.prefill {
            Some(p) => row.c.prefill([p]),
            None => row.c.decode_sum(row.ctx, row.b),
        };
        assert_eq!(r(s.bytes / 1e9, 3), row.gb);
        assert_eq!(r(s.time_s * 1e3, 3), row.ms);
        if let Some(i) = row.intensity {
            assert_eq!(r(s.flops.to_f64() / s.bytes, 1), i);
        }
        assert_eq!(s.bound, row.bound);
        if let Some((j, d)) = row.dyn_j {
            assert_eq!(r(s.energy_j, d), j);
        }
        if let Some(w) = row.w_dev {
            let n = row.c.n_devices as f64;
            assert_eq!(r((row.c.idle_w() + s.energy_j / s.time_s) / n, 1), w);
        }
    }
    // Resident against read weights, and the batch-1 floors.
    let c = cat();
    assert_eq!(
        r(c.model("llama3-8b").unwrap().weight_bytes_total() / 1e9, 2),
        "16.06"
    );
    assert_eq!(
        r(
            c.model("llama3-8b").unwrap().weight_bytes_streamed() / 1e9,
            2
        ),
        "15.01"
    );
    assert_eq!(
        r(c.model("llama3-70b").unwrap().weight_bytes_total() / 1e9, 2),
        "141.10"
    );
    assert_eq!(
        r(
            c.model("llama3-70b").unwrap().weight_bytes_streamed() / 1e9,
            2
        ),
        "139.00"
    );
    let h = cm("llama3-8b", "h100", 1);
    assert_eq!(
        r(h.model.weight_bytes_streamed() / h.byte_rate() * 1e3, 2),
        "5.60"
    );
    let h4 = cm("llama3-70b", "h100", 4);
    assert_eq!(
        r(h4.model.weight_bytes_streamed() / h4.byte_rate() * 1e3, 2),
        "12.97"
    );
}

fn transit(key: &str, at: CompressAt) -> KvTransit {
    KvTransit::new(cat().compression(key).unwrap().clone(), at)
}

#[test]
fn endpoint_pass_table() {
    // `docs/cost-model.md#compression`, compression pass at the endpoint on 1xH100, P = 2048.
    let h = cm("llama3-8b", "h100", 1);
    let rows = [
        (
            "fp8",
            134217728.0,
            402653184.0,
            0.00015024372537313432,
            0.000134217728,
            0.02415919104,
        ),
        (
            "fp4-block",
            268435456.0,
            339738624.0,
            0.00012676814328358208,
            0.000268435456,
            0.02038431744,
        ),
        (
            "freq-keep-k",
            7516192768.0,
            402653184.0,
            0.00015024372537313432,
            0.007516192768,
            0.02415919104,
        ),
    ];
    let base = h.prefill([2048]);
    for (k, ops, bytes, dt, ec, em) in rows {
        let tr = transit(k, CompressAt::Endpoint);
        let s = h.endpoint_pass(base, &tr, [2048]);
        assert_eq!(s.flops, PyNum::Float(base.flops.to_f64() + ops), "{k}");
        assert_eq!(s.bytes, base.bytes + bytes, "{k}");
        assert_eq!(s.time_s, base.time_s + dt, "{k}");
        assert_eq!(s.compute_j, base.compute_j + ec, "{k}");
        assert_eq!(s.memory_j, base.memory_j + em, "{k}");
    }
    // `none` leaves the step unchanged, as does a batch with nothing to hand off.
    assert_eq!(
        h.endpoint_pass(base, &transit("none", CompressAt::Endpoint), [2048]),
        base
    );
    assert_eq!(
        h.endpoint_pass(base, &transit("fp8", CompressAt::Endpoint), []),
        base
    );
    // FFT ops on the GPU: 56 ops/value at 2048 tokens, 61 at 2049.
    let tr = transit("freq-keep-k", CompressAt::Endpoint);
    assert_eq!(tr.ops(2.0 * 2048.0, 2048, 2.0, true), 56.0 * 2048.0);
    assert_eq!(tr.ops(2.0 * 2049.0, 2049, 2.0, true), 61.0 * 2049.0);
    assert_eq!(tr.ops(2.0 * 2049.0, 2049, 2.0, false), 2049.0);
}

#[test]
fn transfer_table() {
    // `docs/cost-model.md#compression`: transit and endpoint times, link and stage joules, transit-bound flags.
    let c = cat();
    let m = c.model("llama3-8b").unwrap();
    let rows = [
        (
            "eth-25g",
            "none",
            0.08592034591999999,
            false,
            0.08591934592,
            0.03221225472,
        ),
        (
            "eth-25g",
            "fp8",
            0.04297067296,
            false,
            0.04296967296,
            0.01610612736,
        ),
        (
            "eth-25g",
            "fp4-block",
            0.0537080912,
            true,
            0.02283701376,
            0.00855638016,
        ),
        (
            "eth-25g",
            "freq-keep-k",
            0.04297067296,
            false,
            0.04296967296,
            0.01610612736,
        ),
        (
            "ib-ndr",
            "none",
            0.005379709119999999,
            false,
            0.005378709119999999,
            0.03221225472,
        ),
        (
            "ib-ndr",
            "fp4-block",
            0.0033664432000000003,
            true,
            0.00143606336,
            0.00855638016,
        ),
        (
            "nvlink4",
            "fp8",
            0.0003042616177777778,
            false,
            0.0003032616177777778,
            0.00536870912,
        ),
    ];
    for (l, k, tt, bound, te, lj) in rows {
        let link = c.link(l).unwrap();
        let t = transfer(m, link, Some(&transit(k, CompressAt::Transit)), 2048);
        assert_eq!(t.time_s, tt, "{l} {k} transit");
        assert_eq!(t.transit_bound, bound, "{l} {k}");
        assert_eq!(t.link_j, lj, "{l} {k}");
        assert_eq!(t.transit_j, 0.002147483648, "{l} {k}");
        let e = transfer(m, link, Some(&transit(k, CompressAt::Endpoint)), 2048);
        assert_eq!(e.time_s, te, "{l} {k} endpoint");
        assert_eq!(e.link_j, lj, "{l} {k}");
        assert_eq!(e.transit_j, 0.0);
    }
    let plain = transfer(m, c.link("eth-25g").unwrap(), None, 2048);
    assert_eq!(plain.time_s, 0.08591934592);
    assert_eq!(plain.link_j, 0.03221225472);
    assert_eq!(
        transfer(m, c.link("cpo-optical").unwrap(), None, 2048).link_j,
        0.006442450944
    );
    assert_eq!(
        transfer(
            m,
            c.link("eth-25g").unwrap(),
            Some(&transit("fp4-block", CompressAt::Endpoint)),
            2048
        )
        .wire_bytes,
        71303168.0
    );
}
