//! The catalogue (`disagg_model::catalogue`): the presets as `docs/cost-model.md#catalogue`–`docs/cost-model.md#compression` lists them,
//! lookups and their errors, additions, the validation bounds, and the small formulas of links,
//! compression formats and the compression work (`docs/cost-model.md#compression`).

use disagg_model::*;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

#[test]
fn model_presets() {
    // `docs/cost-model.md#catalogue`: key, name, L, d, H, Hkv, ff, V; all BF16, LM head on every token.
    let rows = [
        (
            "llama3-8b",
            "Llama-3-8B",
            32,
            4096,
            32,
            8,
            14336,
            128256,
            131072,
        ),
        (
            "llama3-70b",
            "Llama-3-70B",
            80,
            8192,
            64,
            8,
            28672,
            128256,
            131072,
        ),
        (
            "mistral-7b",
            "Mistral-7B",
            32,
            4096,
            32,
            8,
            14336,
            32000,
            32768,
        ),
        ("yi-34b", "Yi-34B", 60, 7168, 56, 8, 20480, 64000, 4096),
        ("opt-13b", "OPT-13B", 40, 5120, 40, 40, 13653, 50272, 2048),
        (
            "llama3.2-1b",
            "Llama-3.2-1B",
            16,
            2048,
            32,
            8,
            8192,
            128256,
            131072,
        ),
    ];
    let c = cat();
    // The dense shapes first; the reference's other models follow (`docs/cost-model.md#catalogue`).
    // 7 of the reference's other models, then the 3 measured ones (issue 15), then the 15
    // served ones (issue 16).
    assert_eq!(c.models.len(), rows.len() + 7 + 3 + 15);
    for (i, (k, n, l, d, h, hkv, ff, v, ctx)) in rows.into_iter().enumerate() {
        let m = c.model(k).unwrap();
        assert_eq!(c.models[i].key, k, "catalogue order");
        assert_eq!(m.name, n);
        assert_eq!(
            (
                m.n_layers,
                m.d_model,
                m.n_heads,
                m.n_kv_heads,
                m.d_ff,
                m.vocab
            ),
            (l, d, h, hkv, ff, v)
        );
        assert_eq!(m.head_dim, None);
        assert_eq!(m.weight_bytes, 2.0);
        assert_eq!(m.kv_bytes, 2.0);
        assert_eq!(m.prefill_lm_head, LmHead::All);
        assert_eq!(m.context_tokens, Some(ctx), "{k}");
        assert!(m.validate().is_ok());
    }
}

#[test]
fn model_formulas_by_hand() {
    let c = cat();
    let m = c.model("llama3-8b").unwrap();
    // hd = 4096 // 32 = 128 ; kvw = 8 * 128 = 1024
    assert_eq!(m.hd(), 128);
    assert_eq!(m.kvw(), 1024);
    // (2*4096*4096 + 2*4096*1024) + 3*4096*14336 = 33554432 + 8388608 + 176160768 = 218103808
    assert_eq!(m.params_per_layer(), 218103808);
    assert_eq!(m.layer_params(), 32 * 218103808);
    // + 2 * 128256 * 4096 = 1050673152 ; matmul: + 525336576
    assert_eq!(m.params(), 32 * 218103808i128 + 1050673152);
    assert_eq!(m.matmul_params(), 32 * 218103808i128 + 525336576);
    assert_eq!(
        m.weight_bytes_total(),
        (32 * 218103808i64 + 1050673152) as f64 * 2.0
    );
    assert_eq!(
        m.weight_bytes_streamed(),
        (32 * 218103808i64 + 525336576) as f64 * 2.0
    );
    assert_eq!(m.embedding_row_bytes(), 8192.0);
    // 2 * 32 * 8 * 128 = 65536 values * 2 bytes
    assert_eq!(m.kv_bytes_per_token(), 131072.0);
    assert_eq!(m.handoff_bytes(3), 393216.0);
    // A shape with an explicit head dimension and odd numbers: L=3, d=10, H=4, Hkv=2, hd=5,
    // ff=7, V=11, 1.5 bytes per weight, 0.5 per KV value.
    let odd = ModelSpec {
        key: "odd".into(),
        name: "Odd".into(),
        n_layers: 3,
        d_model: 10,
        n_heads: 4,
        n_kv_heads: 2,
        head_dim: Some(5),
        d_ff: 7,
        vocab: 11,
        weight_bytes: 1.5,
        kv_bytes: 0.5,
        prefill_lm_head: LmHead::Last,
        context_tokens: None,
        moe: None,
        fft: None,
        ced: None,
        arch: None,
    };
    assert!(odd.validate().is_ok());
    assert_eq!(odd.hd(), 5);
    assert_eq!(odd.kvw(), 10);
    // (2*10*10 + 2*10*10) + 3*10*7 = 400 + 210 = 610
    assert_eq!(odd.params_per_layer(), 610);
    assert_eq!(odd.layer_params(), 1830);
    // 1830 + 2*11*10 = 2050 ; 1830 + 110 = 1940
    assert_eq!(odd.params(), 2050);
    assert_eq!(odd.matmul_params(), 1940);
    assert_eq!(odd.weight_bytes_total(), 3075.0);
    assert_eq!(odd.weight_bytes_streamed(), 2910.0);
    assert_eq!(odd.embedding_row_bytes(), 15.0);
    // 2 * 3 * 2 * 5 = 60 values * 0.5 = 30 bytes
    assert_eq!(odd.kv_bytes_per_token(), 30.0);
    assert_eq!(odd.handoff_bytes(7), 210.0);
    // Without the override, hd = 10 // 4 = 2 (floor).
    let floor = ModelSpec {
        head_dim: None,
        ..odd.clone()
    };
    assert_eq!(floor.hd(), 2);
    assert_eq!(floor.kvw(), 4);
}

fn model() -> ModelSpec {
    cat().model("llama3-8b").unwrap().clone()
}

fn model_err(m: &ModelSpec) -> String {
    m.validate().unwrap_err().to_string()
}

#[test]
fn model_validation_bounds() {
    type Set = fn(&mut ModelSpec, u64);
    let fields: [(&str, Set); 6] = [
        ("layers", |m, v| m.n_layers = v),
        ("d_model", |m, v| m.d_model = v),
        ("heads", |m, v| m.n_heads = v),
        ("kv_heads", |m, v| m.n_kv_heads = v),
        ("d_ff", |m, v| m.d_ff = v),
        ("vocab", |m, v| m.vocab = v),
    ];
    for (what, set) in fields {
        let mut m = model();
        set(&mut m, 0);
        assert_eq!(
            model_err(&m),
            format!("model 'llama3-8b' {what}: must be at least 1")
        );
        let mut m = model();
        set(&mut m, (1 << 24) + 1);
        if what == "heads" || what == "kv_heads" {
            // Heads have their own limits too; the count check comes first.
            m.n_heads = (1 << 24) + 1;
            m.n_kv_heads = (1 << 24) + 1;
            m.head_dim = Some(1);
        }
        let e = model_err(&m);
        assert!(
            e.ends_with(&format!(
                "{}: 16777217 is absurdly large (limit 16777216)",
                if what == "kv_heads" { "heads" } else { what }
            )),
            "{e}"
        );
    }
    // Exactly 2^24 is accepted.
    let mut m = model();
    m.vocab = 1 << 24;
    m.d_ff = 1 << 24;
    m.n_layers = 1 << 24;
    assert!(m.validate().is_ok());
    let mut m = model();
    m.n_heads = 1 << 24;
    m.n_kv_heads = 1 << 24;
    m.d_model = 1 << 24;
    assert!(m.validate().is_ok());
    // kv_heads may equal heads, not exceed them.
    let mut m = model();
    m.n_kv_heads = 32;
    assert!(m.validate().is_ok());
    m.n_kv_heads = 33;
    assert_eq!(
        model_err(&m),
        "model 'llama3-8b' kv_heads: 33 is more than the 32 query heads"
    );
    // d_model < heads: hd = 0.
    let mut m = model();
    m.d_model = 31;
    assert_eq!(
        model_err(&m),
        "model 'llama3-8b' head_dim: must be at least 1 (d_model is smaller than heads)"
    );
    m.head_dim = Some(1);
    assert!(m.validate().is_ok());
    m.d_model = 32;
    m.head_dim = None;
    assert!(m.validate().is_ok());
    // head_dim up to 2^16.
    let mut m = model();
    m.head_dim = Some(1 << 16);
    assert!(m.validate().is_ok());
    m.head_dim = Some((1 << 16) + 1);
    assert_eq!(
        model_err(&m),
        "model 'llama3-8b' head_dim: 65537 is absurdly large"
    );
    m.head_dim = Some(0);
    assert_eq!(
        model_err(&m),
        "model 'llama3-8b' head_dim: must be at least 1 (d_model is smaller than heads)"
    );
    // Bytes per value: positive and at most 16.
    for (wb, kvb, ok) in [
        (16.0, 16.0, true),
        (0.5, 0.25, true),
        (16.5, 2.0, false),
        (2.0, 16.5, false),
        (0.0, 2.0, false),
        (2.0, 0.0, false),
        (-1.0, 2.0, false),
        (2.0, f64::NAN, false),
    ] {
        let mut m = model();
        m.weight_bytes = wb;
        m.kv_bytes = kvb;
        assert_eq!(m.validate().is_ok(), ok, "{wb} {kvb}");
    }
    let mut m = model();
    m.kv_bytes = 17.0;
    assert_eq!(
        model_err(&m),
        "model 'llama3-8b' bytes per value: must be at most 16"
    );
    m.kv_bytes = 0.0;
    assert_eq!(
        model_err(&m),
        "model 'llama3-8b' kv_bytes: must be a positive number, got 0"
    );
    m.kv_bytes = 2.0;
    m.weight_bytes = -2.0;
    assert_eq!(
        model_err(&m),
        "model 'llama3-8b' weight_bytes: must be a positive number, got -2"
    );
}

#[test]
fn device_presets() {
    // `docs/cost-model.md#catalogue`: peak, bw, capacity, flops_eff, bw_eff, tdp, idle, pJ/FLOP, pJ/byte,
    // native formats, scale-up link.
    let tb = 1e12;
    let gb = 1e9;
    type Row = (
        &'static str,
        &'static str,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        &'static [(&'static str, f64)],
        &'static str,
    );
    let rows: [Row; 6] = [
        (
            "h100",
            "H100-SXM",
            989.0 * tb,
            3.35 * tb,
            80.0 * gb,
            0.55,
            0.80,
            700.0,
            100.0,
            1.0,
            60.0,
            &[("fp8", 2.0), ("int8", 2.0)],
            "nvlink4",
        ),
        (
            "a100",
            "A100-SXM",
            312.0 * tb,
            2.039 * tb,
            80.0 * gb,
            0.55,
            0.80,
            400.0,
            60.0,
            1.6,
            70.0,
            &[("int8", 2.0)],
            "nvlink3",
        ),
        (
            "a100-40g",
            "A100-SXM-40GB",
            312.0 * tb,
            1.555 * tb,
            40.0 * gb,
            0.55,
            0.80,
            400.0,
            60.0,
            1.6,
            70.0,
            &[("int8", 2.0)],
            "nvlink3",
        ),
        (
            "h200",
            "H200-SXM",
            989.0 * tb,
            4.8 * tb,
            141.0 * gb,
            0.55,
            0.80,
            700.0,
            100.0,
            1.0,
            60.0,
            &[("fp8", 2.0), ("int8", 2.0)],
            "nvlink4",
        ),
        (
            "b200",
            "B200",
            2250.0 * tb,
            8.0 * tb,
            180.0 * gb,
            0.55,
            0.80,
            1000.0,
            140.0,
            0.6,
            45.0,
            &[("fp8", 2.0), ("fp4", 4.0)],
            "nvlink5",
        ),
        (
            "optical",
            "Hypothetical-optical-MAC",
            4000.0 * tb,
            3.35 * tb,
            80.0 * gb,
            0.4,
            0.80,
            700.0,
            180.0,
            0.1,
            60.0,
            &[],
            "nvlink4",
        ),
    ];
    let c = cat();
    // The two transform-engine devices follow (`docs/levers.md#fft-mixing`): their host GPU's every
    // field, with an engine at the reference's defaults.
    assert_eq!(c.devices.len(), rows.len() + 2);
    for (k, host, n) in [
        ("optical-fft", "h100", "Optical-FFT + H100-class"),
        ("optical-fft-small", "a100", "Optical-FFT + A100-class"),
    ] {
        let d = c.device(k).unwrap();
        let e = d.engine.clone().unwrap();
        assert_eq!(d.name, n);
        assert_eq!(
            (e.samples_per_s, e.enob, e.fom_dac_fj, e.fom_adc_fj),
            (1e12, 8, 10.0, 20.0)
        );
        assert_eq!(
            (e.laser_w, e.tuning_w, e.mask_values),
            (10.0, 10.0, 2_000_000)
        );
        assert_eq!(
            (e.mask_rate_hz, e.detection, e.overlap),
            (1031.0, Detection::Coherent, false)
        );
        let plain = Device {
            key: host.into(),
            name: c.device(host).unwrap().name.clone(),
            engine: None,
            ..d.clone()
        };
        assert_eq!(&plain, c.device(host).unwrap());
    }
    for (i, (k, n, pf, bw, cap, fe, be, tdp, idle, pjf, pjb, nf, su)) in
        rows.into_iter().enumerate()
    {
        let d = c.device(k).unwrap();
        assert_eq!(c.devices[i].key, k, "catalogue order");
        assert_eq!(d.name, n);
        assert_eq!(d.peak_flops, pf, "{k}");
        assert_eq!(d.mem_bw, bw, "{k}");
        assert_eq!(d.mem_capacity, cap, "{k}");
        assert_eq!((d.flops_eff, d.bw_eff), (fe, be), "{k}");
        assert_eq!((d.tdp_w, d.idle_w), (tdp, idle), "{k}");
        assert_eq!((d.pj_per_flop, d.pj_per_byte), (pjf, pjb), "{k}");
        let nf: Vec<(String, f64)> = nf.iter().map(|(s, x)| (s.to_string(), *x)).collect();
        assert_eq!(d.native_formats, nf, "{k}");
        assert_eq!(d.scale_up, su, "{k}");
        assert!(d.validate().is_ok());
        // ridge = (peak * eff) / (bw * eff)
        assert_eq!(d.ridge_point(), (pf * fe) / (bw * be), "{k}");
    }
    // `docs/levers.md#scheduled-instances` derived table: H100 ridge 202.96641791044777, A100 105.19862677783226.
    assert_eq!(c.device("h100").unwrap().ridge_point(), 202.96641791044777);
    assert_eq!(c.device("a100").unwrap().ridge_point(), 105.19862677783226);
    assert_eq!(c.device("b200").unwrap().ridge_point(), 193.359375);
}

fn dev() -> Device {
    cat().device("h100").unwrap().clone()
}

#[test]
fn device_validation_bounds() {
    type Set = fn(&mut Device, f64);
    let positive: [(&str, Set); 4] = [
        ("peak_flops", |d, v| d.peak_flops = v),
        ("mem_bw", |d, v| d.mem_bw = v),
        ("mem_capacity", |d, v| d.mem_capacity = v),
        ("tdp_w", |d, v| d.tdp_w = v),
    ];
    for (what, set) in positive {
        for bad in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            let mut d = dev();
            set(&mut d, bad);
            assert_eq!(
                d.validate().unwrap_err().to_string(),
                format!("device 'h100' {what}: must be a positive number, got {bad}")
            );
        }
    }
    let non_negative: [(&str, Set); 3] = [
        ("idle_w", |d, v| d.idle_w = v),
        ("pj_per_flop", |d, v| d.pj_per_flop = v),
        ("pj_per_byte", |d, v| d.pj_per_byte = v),
    ];
    for (what, set) in non_negative {
        let mut d = dev();
        set(&mut d, 0.0);
        assert!(d.validate().is_ok(), "{what} = 0");
        for bad in [-1.0, f64::INFINITY, f64::NAN] {
            let mut d = dev();
            set(&mut d, bad);
            assert_eq!(
                d.validate().unwrap_err().to_string(),
                format!("device 'h100' {what}: must be a finite number >= 0, got {bad}")
            );
        }
    }
    let effs: [(&str, Set); 2] = [
        ("flops_eff", |d, v| d.flops_eff = v),
        ("bw_eff", |d, v| d.bw_eff = v),
    ];
    for (what, set) in effs {
        for ok in [1.0, 1e-9, 0.5] {
            let mut d = dev();
            set(&mut d, ok);
            assert!(d.validate().is_ok(), "{what} = {ok}");
        }
        for bad in [0.0, -0.5, 1.0000001, f64::NAN] {
            let mut d = dev();
            set(&mut d, bad);
            assert_eq!(
                d.validate().unwrap_err().to_string(),
                format!("device 'h100' {what}: must be in (0, 1], got {bad}")
            );
        }
    }
    let mut d = dev();
    d.idle_w = 700.0;
    assert_eq!(
        d.validate().unwrap_err().to_string(),
        "device 'h100' idle_w: 700 W is not below the TDP of 700 W"
    );
    d.idle_w = 699.5;
    assert!(d.validate().is_ok());
}

#[test]
fn link_presets_and_formulas() {
    // `docs/cost-model.md#catalogue`: key, name, bandwidth (GB/s), latency, pJ/bit; one channel each.
    let rows = [
        ("nvlink4", "NVLink 4 (one direction)", 450.0, 5e-6, 5.0),
        ("ib-ndr", "InfiniBand NDR 400G", 50.0, 10e-6, 15.0),
        ("pcie5", "PCIe Gen5 x16", 64.0, 5e-6, 6.0),
        ("pcie4", "PCIe Gen4 x16", 32.0, 5e-6, 6.0),
        ("eth-100g", "100 GbE", 12.5, 20e-6, 15.0),
        ("eth-25g", "25 GbE", 3.125, 20e-6, 15.0),
        (
            "cpo-optical",
            "Co-packaged optics (illustrative)",
            200.0,
            5e-6,
            3.0,
        ),
        ("nvlink3", "NVLink 3 (one direction)", 300.0, 5e-6, 5.0),
        ("nvlink5", "NVLink 5 (one direction)", 900.0, 5e-6, 5.0),
    ];
    let c = cat();
    assert_eq!(c.links.len(), rows.len());
    for (i, (k, n, bw, lat, pj)) in rows.into_iter().enumerate() {
        let l = c.link(k).unwrap();
        assert_eq!(c.links[i].key, k);
        assert_eq!(l.name, n);
        assert_eq!(l.bandwidth_bps, bw * 1e9, "{k}");
        assert_eq!(l.latency_s, lat);
        assert_eq!(l.pj_per_bit, pj);
        assert_eq!(l.channels, 1);
        assert!(l.validate().is_ok());
    }
    // 25 GbE: 3.125e9 B/s. 6.25e9 bytes take 2 s on the wire, 2.00002 s with the latency;
    // 1e9 bytes = 8e9 bits * 15 pJ = 0.12 J.
    let l = c.link("eth-25g").unwrap();
    assert_eq!(l.wire_time(6.25e9), 2.0);
    assert_eq!(l.transfer_time(6.25e9), 20e-6 + 2.0);
    assert_eq!(l.energy_j(1e9), ((1e9 * 8.0) * 15.0) * 1e-12);
    assert_eq!(l.energy_j(1e9), 0.12);
    // `docs/levers.md#paged-kv`'s example: 10 blocks of 16 OPT-13B tokens (819,200 B each) over
    // PCIe Gen4 (32 GB/s, 5 us): 131,072,000 B in 10 x 5e-6 + 0.004096 = 0.0041459999999999995 s;
    // over PCIe Gen5 (64 GB/s): 0.002098 s.
    let bytes = (10 * 16) as f64 * 819_200.0;
    assert_eq!(bytes, 131_072_000.0);
    assert_eq!(
        c.link("pcie4").unwrap().blocks_transfer_time(10, bytes),
        0.0041459999999999995
    );
    assert_eq!(
        c.link("pcie5").unwrap().blocks_transfer_time(10, bytes),
        0.002098
    );
    assert_eq!(c.link("pcie4").unwrap().blocks_transfer_time(1, 0.0), 5e-6);
    assert_eq!(c.link("pcie4").unwrap().energy_j(bytes), 0.006291456);
    assert_eq!(GB, 1e9);
    assert_eq!(TB, 1e12);
}

#[test]
fn link_validation_bounds() {
    let base = cat().link("ib-ndr").unwrap().clone();
    let mut l = base.clone();
    l.channels = 4096;
    l.latency_s = 3600.0;
    l.pj_per_bit = 0.0;
    assert!(l.validate().is_ok());
    l.latency_s = 0.0;
    assert!(l.validate().is_ok());
    for ch in [0, 4097] {
        let mut l = base.clone();
        l.channels = ch;
        assert_eq!(
            l.validate().unwrap_err().to_string(),
            format!("link 'ib-ndr' channels: must be between 1 and 4096, got {ch}")
        );
    }
    let mut l = base.clone();
    l.latency_s = 3600.5;
    assert_eq!(
        l.validate().unwrap_err().to_string(),
        "link 'ib-ndr' latency: 3600.5 s is absurd"
    );
    l.latency_s = -1e-6;
    assert_eq!(
        l.validate().unwrap_err().to_string(),
        "link 'ib-ndr' latency: must be a finite number >= 0, got -0.000001"
    );
    let mut l = base.clone();
    l.bandwidth_bps = 0.0;
    assert_eq!(
        l.validate().unwrap_err().to_string(),
        "link 'ib-ndr' bandwidth: must be a positive number, got 0"
    );
    let mut l = base;
    l.pj_per_bit = -1.0;
    assert_eq!(
        l.validate().unwrap_err().to_string(),
        "link 'ib-ndr' pj_per_bit: must be a finite number >= 0, got -1"
    );
}

#[test]
fn compression_presets_and_formulas() {
    // `docs/cost-model.md#compression` (the first four) and the catalogue's descriptions (the rest): key,
    // ratio, ops per value, FFT, scale bytes per vector.
    let rows = [
        ("none", 1.0, 0.0, false, 0.0),
        ("fp8", 2.0, 1.0, false, 0.0),
        ("fp4-block", 64.0 / 17.0, 2.0, false, 0.0),
        ("freq-keep-k", 2.0, 1.0, true, 0.0),
        ("int8", 2.0, 2.0, false, 2.0),
        ("fp4-g16", 16.0 / 5.0, 2.0, false, 0.0),
        ("kivi2", 16.0 / 3.0, 4.0, false, 0.0),
    ];
    let c = cat();
    assert_eq!(c.compression.len(), rows.len());
    for (i, (k, r, ops, fft, sb)) in rows.into_iter().enumerate() {
        let x = c.compression(k).unwrap();
        assert_eq!(c.compression[i].key, k);
        assert_eq!((x.ratio, x.ops_per_value, x.fft), (r, ops, fft), "{k}");
        assert_eq!(x.scale_bytes_per_vector, sb, "{k}");
        assert!(!x.description.is_empty());
        assert_eq!(x.is_identity(), k == "none", "{k}");
    }
    assert_eq!(64.0 / 17.0, 3.764705882352941);
    // is_identity needs all three: ratio 1, no ops, no FFT.
    let none = c.compression("none").unwrap().clone();
    for changed in [
        KvCompression {
            fft: true,
            ..none.clone()
        },
        KvCompression {
            ops_per_value: 1.0,
            ..none.clone()
        },
        KvCompression {
            ratio: 2.0,
            ..none.clone()
        },
    ] {
        assert!(!changed.is_identity(), "{changed:?}");
    }
    // for_model folds a per-vector scale: W = Hkv * hd values; ratio' = 2W / (2W / r + scale).
    // Llama-3-8B: W = 1024: 2048 / (1024 + 2) ; OPT-13B: W = 40 * 128 = 5120: 10240 / 5122.
    let int8 = c.compression("int8").unwrap();
    let f = int8.for_model(c.model("llama3-8b").unwrap());
    assert_eq!(f.ratio, 2048.0 / 1026.0);
    assert_eq!(f.scale_bytes_per_vector, 0.0);
    assert_eq!(f.key, "int8");
    let f = int8.for_model(c.model("opt-13b").unwrap());
    assert_eq!(f.ratio, 10240.0 / 5122.0);
    // A scale with another base ratio: r = 4, scale 3, W = 1024: 2048 / (512 + 3).
    let odd = KvCompression {
        ratio: 4.0,
        scale_bytes_per_vector: 3.0,
        ..int8.clone()
    };
    assert_eq!(
        odd.for_model(c.model("llama3-8b").unwrap()).ratio,
        2048.0 / 515.0
    );
    // Formats without a scale come back unchanged.
    for x in &c.compression {
        if x.scale_bytes_per_vector == 0.0 {
            assert_eq!(&x.for_model(c.model("llama3-70b").unwrap()), x);
        }
    }
}

#[test]
fn compression_work_by_hand() {
    // `docs/cost-model.md#compression`: values = nbytes / kv_bytes; per = ops_per_value (+ the FFTs: 2 *
    // rfft_flops(n) / n with n = pow2_at_least(P)); ops = per * values.
    let c = cat();
    let fp8 = KvTransit::new(c.compression("fp8").unwrap().clone(), CompressAt::Transit);
    assert_eq!(fp8.at, CompressAt::Transit);
    assert_eq!(fp8.ops_per_byte, 1.6);
    assert_eq!(fp8.pj_per_bit, 1.0);
    assert_eq!(fp8.latency_s, 1e-6);
    assert!(fp8.native_fft);
    // 1000 bytes of BF16 = 500 values, 1 op each; at 1 byte per value, 1000 values.
    assert_eq!(fp8.ops(1000.0, 3, 2.0, false), 500.0);
    assert_eq!(fp8.ops(1000.0, 3, 1.0, true), 1000.0);
    let kivi = KvTransit::new(
        c.compression("kivi2").unwrap().clone(),
        CompressAt::Endpoint,
    );
    assert_eq!(kivi.ops(1000.0, 3, 2.0, true), 2000.0);
    let mut fk = KvTransit::new(
        c.compression("freq-keep-k").unwrap().clone(),
        CompressAt::Endpoint,
    );
    // P = 3: n = 4, rfft_flops = (2.5 * 4) * 2 = 20; per = 1 + 40 / 4 = 11.
    assert_eq!(fk.ops(1000.0, 3, 2.0, true), 11.0 * 500.0);
    // P = 2048: 1 + (2 * 56320) / 2048 = 56 ops/value (`docs/cost-model.md#compression`).
    assert_eq!(fk.ops(1000.0, 2048, 2.0, true), 56.0 * 500.0);
    // In the link the FFT is passive (native_fft): 1 op per value ...
    assert_eq!(fk.ops(1000.0, 2048, 2.0, false), 500.0);
    // ... unless the stage has no native FFT.
    fk.native_fft = false;
    assert_eq!(fk.ops(1000.0, 2048, 2.0, false), 56.0 * 500.0);
    // P = 0 counts as 1 token: n = 1, rfft_flops(1) = 0: no FFT work.
    assert_eq!(fk.ops(1000.0, 0, 2.0, true), 500.0);
}

#[test]
fn lookups_and_additions() {
    let mut c = cat();
    assert_eq!(c, Catalogue::default());
    assert_eq!(c.model("llama3-70b").unwrap().n_layers, 80);
    assert_eq!(c.device("b200").unwrap().tdp_w, 1000.0);
    assert_eq!(c.link("pcie4").unwrap().bandwidth_bps, 32e9);
    assert_eq!(c.compression("kivi2").unwrap().ops_per_value, 4.0);
    assert_eq!(
        c.model("x").unwrap_err().to_string(),
        "unknown model 'x'; valid: llama3-8b, llama3-70b, mistral-7b, yi-34b, opt-13b, llama3.2-1b, mixtral-8x7b, llama3-8b-hyena, llama3-8b-hyena-dist, llama3-8b-hybrid, llama3-8b-hyena-circ, llama3-8b-ced, llama3-70b-ced, llama2-7b, llama2-70b, bloom-176b, deepseek-v3, deepseek-r1, kimi-k2, qwen3-235b-a22b, qwen3-30b-a3b, qwen3-32b, gpt-oss-120b, gpt-oss-20b, gemma3-27b, llama3.1-405b, llama4-scout, llama4-maverick, qwen3-next-80b-a3b, mixtral-8x22b, deepseek-v2-lite"
    );
    assert_eq!(
        c.device("x").unwrap_err().to_string(),
        "unknown device 'x'; valid: h100, a100, a100-40g, h200, b200, optical, optical-fft, \
         optical-fft-small"
    );
    assert_eq!(
        c.link("x").unwrap_err().to_string(),
        "unknown link 'x'; valid: nvlink4, ib-ndr, pcie5, pcie4, eth-100g, eth-25g, cpo-optical, \
         nvlink3, nvlink5"
    );
    assert_eq!(
        c.compression("x").unwrap_err(),
        Error::UnknownName {
            kind: "compression",
            name: "x".into(),
            valid: [
                "none",
                "fp8",
                "fp4-block",
                "freq-keep-k",
                "int8",
                "fp4-g16",
                "kivi2"
            ]
            .map(String::from)
            .to_vec(),
        }
    );

    // Replacing keeps the position; a new key is appended.
    let mut m = c.model("mistral-7b").unwrap().clone();
    m.n_layers = 7;
    c.put_model(m.clone()).unwrap();
    assert_eq!(c.models.len(), 31);
    assert_eq!(c.models[2].n_layers, 7);
    m.key = "new".into();
    c.put_model(m).unwrap();
    assert_eq!(c.models.len(), 32);
    assert_eq!(c.models[31].key, "new");
    assert_eq!(c.model("new").unwrap().n_layers, 7);
    let mut bad = c.models[0].clone();
    bad.vocab = 0;
    assert!(c.put_model(bad).is_err());
    assert_eq!(c.models[0].vocab, 128256);

    let mut d = c.device("a100").unwrap().clone();
    d.tdp_w = 450.0;
    c.put_device(d.clone()).unwrap();
    assert_eq!(c.devices.len(), 8);
    assert_eq!(c.devices[1].tdp_w, 450.0);
    d.key = "mine".into();
    c.put_device(d.clone()).unwrap();
    assert_eq!(c.devices.len(), 9);
    assert_eq!(c.device("mine").unwrap().tdp_w, 450.0);
    d.idle_w = 1000.0;
    assert!(c.put_device(d).is_err());
    assert_eq!(c.device("mine").unwrap().idle_w, 60.0);

    let mut l = c.link("pcie5").unwrap().clone();
    l.channels = 4;
    c.put_link(l.clone()).unwrap();
    assert_eq!(c.links.len(), 9);
    assert_eq!(c.links[2].channels, 4);
    l.key = "wire".into();
    c.put_link(l.clone()).unwrap();
    assert_eq!(c.links.len(), 10);
    assert_eq!(c.links[9].key, "wire");
    l.channels = 0;
    assert!(c.put_link(l).is_err());
    assert_eq!(c.link("wire").unwrap().channels, 4);
}
