//! Issue 15: the models measured in the calibration data, fitted devices (their overheads and
//! provenance) in the cost model, and catalogue overlays written by `device_overlay_toml`.
//! Expected values are hand arithmetic or `docs/cost-model.md#roofline`-`docs/cost-model.md#roofline` / `docs/cost-model.md#parallelism` written
//! out.

use disagg_model::custom::*;
use disagg_model::*;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

// ---- Models ------------------------------------------------------------------------------------

#[test]
fn llama2_7b_by_hand() {
    let c = cat();
    let m = c.model("llama2-7b").unwrap();
    assert_eq!(m.name, "Llama-2-7B");
    assert_eq!(
        (
            m.n_layers,
            m.d_model,
            m.n_heads,
            m.n_kv_heads,
            m.d_ff,
            m.vocab
        ),
        (32, 4096, 32, 32, 11008, 32000)
    );
    assert_eq!((m.weight_bytes, m.kv_bytes), (2.0, 2.0));
    assert_eq!(m.context_tokens, Some(4096));
    assert_eq!(m.hd(), 128); // 4096 / 32
                             // Per layer: 2*4096^2 (q, o) + 2*4096*4096 (k, v: 32 KV heads x 128) + 3*4096*11008
                             // = 33,554,432 + 33,554,432 + 135,266,304 = 202,375,168; x 32 = 6,476,005,376;
                             // + 2 * 32000 * 4096 = 262,144,000 -> 6,738,149,376 (the published 6.74 B).
    assert_eq!(m.params_per_layer(), 202_375_168);
    assert_eq!(m.params(), 6_738_149_376);
    // KV per token: 2 * 32 layers * 32 heads * 128 * 2 B = 524,288 B.
    assert_eq!(m.kv_bytes_per_token(), 524_288.0);
}

#[test]
fn llama2_70b_by_hand() {
    let c = cat();
    let m = c.model("llama2-70b").unwrap();
    assert_eq!(m.name, "Llama-2-70B");
    assert_eq!(
        (
            m.n_layers,
            m.d_model,
            m.n_heads,
            m.n_kv_heads,
            m.d_ff,
            m.vocab
        ),
        (80, 8192, 64, 8, 28672, 32000)
    );
    assert_eq!(m.context_tokens, Some(4096));
    // Per layer: 2*8192^2 = 134,217,728; 2*8192*(8*128) = 16,777,216; 3*8192*28672 =
    // 704,643,072; sum 855,638,016; x 80 = 68,451,041,280; + 2*32000*8192 = 524,288,000 ->
    // 68,975,329,280 (the calibration README's 68.98 G).
    assert_eq!(m.params_per_layer(), 855_638_016);
    assert_eq!(m.params(), 68_975_329_280);
    // KV per token: 2 * 80 * 8 * 128 * 2 = 327,680 B.
    assert_eq!(m.kv_bytes_per_token(), 327_680.0);
}

#[test]
fn bloom_176b_by_hand() {
    let c = cat();
    let m = c.model("bloom-176b").unwrap();
    assert_eq!(m.name, "BLOOM-176B");
    // d_ff: BLOOM's two 4d = 57344 matrices in three-matrix form, round(2 * 57344 / 3) =
    // round(38229.33) = 38229.
    assert_eq!(
        (
            m.n_layers,
            m.d_model,
            m.n_heads,
            m.n_kv_heads,
            m.d_ff,
            m.vocab
        ),
        (70, 14336, 112, 112, 38229, 250880)
    );
    assert_eq!(m.hd(), 128); // 14336 / 112
    assert_eq!(m.context_tokens, Some(2048));
    // Per layer: 4*14336^2 = 822,083,584 (q, k, v, o; MHA) + 3*14336*38229 = 1,644,152,832 ->
    // 2,466,236,416; x 70 = 172,636,549,120; + 2*250880*14336 = 7,193,231,360 ->
    // 179,829,780,480 (two exact 57344 matrices would give 179,830,790,400: 1 ppm apart).
    assert_eq!(m.params_per_layer(), 2_466_236_416);
    assert_eq!(m.params(), 179_829_780_480);
    // KV per token: 2 * 70 * 112 * 128 * 2 = 4,014,080 B.
    assert_eq!(m.kv_bytes_per_token(), 4_014_080.0);
}

#[test]
fn the_new_models_come_last_and_cite_their_source() {
    let c = cat();
    let keys: Vec<&str> = c.models.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(keys[..2], ["llama3-8b", "llama3-70b"]);
    // The measured models come after the reference's, before the served ones (issue 16).
    assert_eq!(keys[13..16], ["llama2-7b", "llama2-70b", "bloom-176b"]);
    assert!(model_source("llama2-7b")
        .unwrap()
        .contains("meta-llama/Llama-2-7b-hf"));
    assert!(model_source("llama2-70b")
        .unwrap()
        .contains("meta-llama/Llama-2-70b-hf"));
    assert!(model_source("bloom-176b")
        .unwrap()
        .contains("bigscience/bloom"));
    assert_eq!(model_source("llama3-8b"), None);
    assert_eq!(model_source("nope"), None);
}

// ---- Fitted devices in the cost model ----------------------------------------------------------

fn calibration() -> Calibration {
    Calibration {
        measurements: vec!["perf_model.csv".into()],
        fit: "least squares on log step time".into(),
        groups: vec![
            "llama2-70b/h100-80gb/tp2".into(),
            "llama2-70b/h100-80gb/tp4".into(),
        ],
        in_sample_prefill_mape: 0.05,
        in_sample_decode_mape: 0.02,
        cv_prefill_mape: 0.079,
        cv_decode_mape: 0.031,
        tool: "disagg calibrate 0.1.0".into(),
    }
}

/// The H100 with fitted overheads: 4 ms per step, 0.2 ms per sequence.
fn fitted() -> Device {
    Device {
        key: "h100-fit".into(),
        step_overhead_s: Some(0.004),
        per_seq_overhead_s: Some(0.0002),
        calibration: Some(calibration()),
        ..cat().device("h100").unwrap().clone()
    }
}

/// No power roof, so a step is `max(F / flops_rate, B / byte_rate)` (`docs/cost-model.md#roofline`).
fn no_cap() -> CostOptions {
    CostOptions {
        enforce_tdp: false,
        ..CostOptions::default()
    }
}

// Llama-2-7B: matmul params = 6,476,005,376 + 32000*4096 = 6,607,077,376; W = 2 * that;
// e = 4096 * 2 = 8192 B per embedding row; kvb = 524,288 B per token.
const MATMUL: i128 = 6_607_077_376;
const L: i128 = 32;
const D: i128 = 4096;

#[test]
fn a_fitted_prefill_step_by_hand() {
    let c = cat();
    let m = c.model("llama2-7b").unwrap();
    let cm = CostModel::new(m, &fitted(), 1, no_cap()).unwrap();
    assert_eq!(cm.step_overhead_s(), 0.004);
    assert_eq!(cm.per_seq_overhead_s(), Some(0.0002));
    // Two prompts, 100 and 200 tokens: F = 2*matmul*300 + 2*L*d*(100*101 + 200*201).
    let f = 2 * MATMUL * 300 + (2 * L * D) * (100 * 101 + 200 * 201);
    let b = ((MATMUL as f64 * 2.0) + 300.0 * 8192.0) + 300.0 * 524_288.0;
    let tc = f as f64 / (((989.0 * TB) * 0.55) * 1.0);
    let tm = b / (((3.35 * TB) * 0.80) * 1.0);
    let t = tc.max(tm);
    // Overheads after the roofs: (t + 4 ms) + 0.2 ms * 2 rows.
    let want = (t + 0.004) + 0.0002 * 2.0;
    let s = cm.prefill([100, 200]);
    assert_eq!(s.time_s.to_bits(), want.to_bits(), "{} vs {want}", s.time_s);
    assert_eq!(s.bytes, b);
    // The raw roofs are untouched by the overheads.
    assert_eq!(cm.step_time_raw(f as f64, b).t, t);
    // The same step on the built-in H100: the fixed 0.5 ms, no per-sequence term.
    let plain = CostModel::new(m, c.device("h100").unwrap(), 1, no_cap()).unwrap();
    assert_eq!(plain.step_overhead_s(), 0.5e-3);
    assert_eq!(plain.per_seq_overhead_s(), None);
    assert_eq!(
        plain.prefill([100, 200]).time_s.to_bits(),
        (t + 0.5e-3).to_bits()
    );
}

#[test]
fn a_fitted_decode_step_by_hand() {
    let c = cat();
    let m = c.model("llama2-7b").unwrap();
    let cm = CostModel::new(m, &fitted(), 1, no_cap()).unwrap();
    // 4 rows over 1000 cached positions: F = 2*matmul*4 + 4*L*d*(1000 + 4);
    // B = (W + 4*e) + 1004*kvb.
    let f = 2 * MATMUL * 4 + (4 * L * D) * 1004;
    let b = ((MATMUL as f64 * 2.0) + 4.0 * 8192.0) + 1004.0 * 524_288.0;
    let t = (f as f64 / ((989.0 * TB) * 0.55)).max(b / ((3.35 * TB) * 0.80));
    let want = (t + 0.004) + 0.0002 * 4.0;
    assert_eq!(cm.decode_sum(1000, 4).time_s.to_bits(), want.to_bits());
    // step_time is the same arithmetic for the simulator's macro steps.
    assert_eq!(cm.step_time(t, 4).to_bits(), want.to_bits());
    assert_eq!(cm.step_time(0.25, 0), 0.25 + 0.004);
    // Only a per-step overhead: the options' 0.5 ms is replaced, nothing per sequence.
    let only_step = Device {
        per_seq_overhead_s: None,
        ..fitted()
    };
    let cm1 = CostModel::new(m, &only_step, 1, no_cap()).unwrap();
    assert_eq!(
        cm1.decode_sum(1000, 4).time_s.to_bits(),
        (t + 0.004).to_bits()
    );
    assert_eq!(cm1.step_time(0.25, 7), 0.25 + 0.004);
    // Only a per-sequence term: the options' 0.5 ms stays.
    let only_seq = Device {
        step_overhead_s: None,
        ..fitted()
    };
    let cm2 = CostModel::new(m, &only_seq, 1, no_cap()).unwrap();
    assert_eq!(
        cm2.decode_sum(1000, 4).time_s.to_bits(),
        ((t + 0.5e-3) + 0.0002 * 4.0).to_bits()
    );
}

#[test]
fn mixed_and_speculative_steps_count_rows_and_chunks() {
    let c = cat();
    let m = c.model("llama2-7b").unwrap();
    let cm = CostModel::new(m, &fitted(), 1, no_cap()).unwrap();
    // The roofs alone: the device without its overheads and no fixed overhead (`t + 0.0 == t`).
    let zero = CostOptions {
        step_overhead_s: 0.0,
        ..no_cap()
    };
    let plain = CostModel::new(m, &fitted().without_overheads(), 1, zero).unwrap();
    assert_eq!(plain.per_seq_overhead_s(), None);
    let chunks = [
        Chunk {
            p0: 0,
            c: 64,
            last: true,
        },
        Chunk {
            p0: 10,
            c: 32,
            last: false,
        },
    ];
    // 3 decode rows + 2 chunks = 5 rows.
    let t = plain.step_mixed(500, 3, &chunks).time_s;
    let want = (t + 0.004) + 0.0002 * 5.0;
    assert_eq!(
        cm.step_mixed(500, 3, &chunks).time_s.to_bits(),
        want.to_bits()
    );
    // Chunks only (a prefill-only mixed step): 2 rows.
    let t = plain.step_mixed(0, 0, &chunks).time_s;
    let want = (t + 0.004) + 0.0002 * 2.0;
    assert_eq!(
        cm.step_mixed(0, 0, &chunks).time_s.to_bits(),
        want.to_bits()
    );
    // A verify pass of 3 rows of gamma + 1 = 4 positions plus 2 chunks: still 5 rows.
    let t = plain.step_spec(500, 3, 4, &chunks).time_s;
    let want = (t + 0.004) + 0.0002 * 5.0;
    assert_eq!(
        cm.step_spec(500, 3, 4, &chunks).time_s.to_bits(),
        want.to_bits()
    );
    // The draft's passes carry no overhead at all, fitted or not.
    let d = Draft::new(m, "mtp", &c).unwrap();
    let dcm = d.cost_model(&fitted(), 1, &no_cap()).unwrap();
    assert_eq!(dcm.step_overhead_s(), 0.0);
    assert_eq!(dcm.per_seq_overhead_s(), None);
}

#[test]
fn a_fitted_tensor_parallel_step_by_hand() {
    let c = cat();
    let m = c.model("llama2-7b").unwrap();
    let par = Parallel {
        tp: 2,
        ..Default::default()
    };
    let cm = CostModel::new(m, &fitted(), 2, no_cap())
        .unwrap()
        .with_layout(par, &c)
        .unwrap();
    // One decode step, 4 rows over 1000 positions, tp 2, pp 1 (`docs/cost-model.md#parallelism`): mb = 1;
    // the stage (2 GPUs) takes F and B whole; act = (4 * d) * 2 bytes; 2*L all-reduces of
    // ((2*(2-1)/2) * act) / bw + 2*(2-1)*lat on NVLink 4 (450 GB/s, 5 µs); slots = 1.
    let f = 2 * MATMUL * 4 + (4 * L * D) * 1004;
    let b = ((MATMUL as f64 * 2.0) + 4.0 * 8192.0) + 1004.0 * 524_288.0;
    let t = (f as f64 / (((989.0 * TB) * 0.55) * 2.0)).max(b / (((3.35 * TB) * 0.80) * 2.0));
    let act = (4.0 * 4096.0) * 2.0;
    let ct = 64.0 * (((1.0 * act) / (450.0 * GB)) + 2.0 * 5e-6);
    let comm = 1.0 * (ct + 0.0);
    let want = (((1.0 * t) + comm) + 0.004) + 0.0002 * 4.0;
    let s = cm.decode_sum(1000, 4);
    assert_eq!(s.comm_time_s, comm);
    assert_eq!(s.time_s.to_bits(), want.to_bits(), "{} vs {want}", s.time_s);
    // Prefill of one 128-token prompt on the same layout: 1 row.
    let f = 2 * MATMUL * 128 + (2 * L * D) * (128 * 129);
    let b = ((MATMUL as f64 * 2.0) + 128.0 * 8192.0) + 128.0 * 524_288.0;
    let t = (f as f64 / (((989.0 * TB) * 0.55) * 2.0)).max(b / (((3.35 * TB) * 0.80) * 2.0));
    let act = (128.0 * 4096.0) * 2.0;
    let ct = 64.0 * (((1.0 * act) / (450.0 * GB)) + 2.0 * 5e-6);
    let want = (((1.0 * t) + 1.0 * (ct + 0.0)) + 0.004) + 0.0002 * 1.0;
    assert_eq!(cm.prefill([128]).time_s.to_bits(), want.to_bits());
}

// ---- Validation and overlays -------------------------------------------------------------------

#[test]
fn bad_fitted_values_name_the_device_and_field() {
    for (d, field) in [
        (
            Device {
                step_overhead_s: Some(-1e-3),
                ..fitted()
            },
            "step_overhead_s",
        ),
        (
            Device {
                step_overhead_s: Some(f64::NAN),
                ..fitted()
            },
            "step_overhead_s",
        ),
        (
            Device {
                per_seq_overhead_s: Some(f64::INFINITY),
                ..fitted()
            },
            "per_seq_overhead_s",
        ),
        (
            Device {
                per_seq_overhead_s: Some(-0.1),
                ..fitted()
            },
            "per_seq_overhead_s",
        ),
    ] {
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("'h100-fit'") && e.contains(field), "{e}");
    }
    for (i, field) in [
        "in_sample_prefill_mape",
        "in_sample_decode_mape",
        "cv_prefill_mape",
        "cv_decode_mape",
    ]
    .iter()
    .enumerate()
    {
        let mut c = calibration();
        let v = [
            &mut c.in_sample_prefill_mape,
            &mut c.in_sample_decode_mape,
            &mut c.cv_prefill_mape,
            &mut c.cv_decode_mape,
        ];
        *v.into_iter().nth(i).unwrap() = -0.01;
        let d = Device {
            calibration: Some(c),
            ..fitted()
        };
        let e = d.validate().unwrap_err().to_string();
        assert!(
            e.contains("'h100-fit'") && e.contains(&format!("calibration.{field}")),
            "{e}"
        );
    }
    let mut c = calibration();
    c.fit = "two\nlines".into();
    let e = Device {
        calibration: Some(c),
        ..fitted()
    }
    .validate()
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("calibration.fit") && e.contains("one line"),
        "{e}"
    );
    // Zero is a valid overhead and MAPE.
    let mut c = calibration();
    c.cv_decode_mape = 0.0;
    Device {
        step_overhead_s: Some(0.0),
        per_seq_overhead_s: Some(0.0),
        calibration: Some(c),
        ..fitted()
    }
    .validate()
    .unwrap();
}

#[test]
fn summary_names_files_and_groups() {
    assert_eq!(calibration().summary(), "perf_model.csv (2 groups)");
    let mut c = calibration();
    c.groups.truncate(1);
    c.measurements.push("mlp.csv".into());
    assert_eq!(c.summary(), "perf_model.csv, mlp.csv (1 group)");
}

#[test]
fn builtins_serialise_without_the_new_fields() {
    let v = serde_json::to_value(cat().device("h100").unwrap()).unwrap();
    let o = v.as_object().unwrap();
    for k in ["step_overhead_s", "per_seq_overhead_s", "calibration"] {
        assert!(!o.contains_key(k), "{k}");
    }
    let v = serde_json::to_value(fitted()).unwrap();
    assert_eq!(v["step_overhead_s"], 0.004);
    assert_eq!(v["calibration"]["cv_prefill_mape"], 0.079);
    let back: Device = serde_json::from_value(v).unwrap();
    assert_eq!(back, fitted());
}

#[test]
fn an_overlay_reads_back_bit_for_bit() {
    let mut a100 = fitted();
    a100.key = "a100-fit".into();
    a100.name = "A100 (fitted)".into();
    a100.peak_flops = 312.0 * TB;
    a100.mem_bw = 2.039 * TB;
    a100.flops_eff = 0.6123456789;
    a100.bw_eff = 0.5555555555555556;
    a100.per_seq_overhead_s = None;
    a100.calibration = None;
    let link = Link {
        key: "my-link".into(),
        name: "My link".into(),
        bandwidth_bps: 3.125 * GB,
        latency_s: 20e-6,
        channels: 2,
        pj_per_bit: 15.0,
    };
    let text = device_overlay_toml(&[fitted(), a100.clone()], std::slice::from_ref(&link)).unwrap();
    assert!(text.contains("[devices.h100-fit.calibration]"), "{text}");
    assert!(text.contains("step_overhead_s = 0.004"), "{text}");
    let file: CatalogueFile = toml::from_str(&text).unwrap();
    // The struct round-trips through TOML as is...
    assert_eq!(
        toml::from_str::<CatalogueFile>(&toml::to_string(&file).unwrap()).unwrap(),
        file
    );
    // ...and applies to the very devices and link.
    let mut c = cat();
    file.apply(&mut c).unwrap();
    assert_eq!(c.device("h100-fit").unwrap(), &fitted());
    assert_eq!(c.device("a100-fit").unwrap(), &a100);
    assert_eq!(c.link("my-link").unwrap(), &link);
    // Built-ins untouched.
    assert_eq!(c.device("h100").unwrap(), cat().device("h100").unwrap());
    // Refusals: an engine, an invalid device, a key twice.
    let e = device_overlay_toml(&[cat().device("optical-fft").unwrap().clone()], &[]).unwrap_err();
    assert!(e.to_string().contains("optical transform engine"), "{e}");
    let bad = Device {
        step_overhead_s: Some(-1.0),
        ..fitted()
    };
    assert!(device_overlay_toml(&[bad], &[])
        .unwrap_err()
        .to_string()
        .contains("step_overhead_s"));
    let e = device_overlay_toml(&[fitted(), fitted()], &[]).unwrap_err();
    assert!(e.to_string().contains("given twice"), "{e}");
    let e = device_overlay_toml(&[], &[link.clone(), link]).unwrap_err();
    assert!(e.to_string().contains("given twice"), "{e}");
    assert_eq!(device_overlay_toml(&[], &[]).unwrap().trim(), "");
    // A rate no TFLOP/s (GB, µs) decimal reproduces: 4177510840759435.0 / 1e12 * 1e12 is not
    // 4177510840759435.0 (nor is any neighbour's), so the overlay refuses rather than drift.
    let odd = Device {
        peak_flops: 4177510840759435.0,
        ..fitted()
    };
    let e = device_overlay_toml(&[odd], &[]).unwrap_err().to_string();
    assert!(
        e.contains("'h100-fit' peak_flops") && e.contains("exactly"),
        "{e}"
    );
    let odd = Link {
        latency_s: 0.0008074860203719212,
        ..cat().link("eth-25g").unwrap().clone()
    };
    let e = device_overlay_toml(&[], &[odd]).unwrap_err().to_string();
    assert!(e.contains("'eth-25g' latency_s"), "{e}");
    // Keys follow the catalogue file's rules.
    let spaced = Device {
        key: "h100 fit".into(),
        ..fitted()
    };
    assert!(device_overlay_toml(&[spaced], &[]).is_err());
    let spaced = Link {
        key: "my link".into(),
        ..cat().link("eth-25g").unwrap().clone()
    };
    assert!(device_overlay_toml(&[], &[spaced]).is_err());
}

#[test]
fn a_base_passes_its_fitted_fields_on_and_the_file_can_override_them() {
    let mut c = cat();
    c.put_device(fitted()).unwrap();
    let text = r#"
[devices.derived]
base = "h100-fit"
per_seq_overhead_s = 0.0003
scale_up = "nvlink3"
native_formats = [["int8", 2.0]]
"#;
    let f: CatalogueFile = toml::from_str(text).unwrap();
    f.apply(&mut c).unwrap();
    let d = c.device("derived").unwrap();
    assert_eq!(d.step_overhead_s, Some(0.004));
    assert_eq!(d.per_seq_overhead_s, Some(0.0003));
    assert_eq!(d.calibration, Some(calibration()));
    assert_eq!(d.scale_up, "nvlink3");
    assert_eq!(d.native_formats, vec![("int8".to_string(), 2.0)]);
    // Unknown keys in the calibration table are errors.
    let text = r#"
[devices.x]
base = "h100"
[devices.x.calibration]
measurements = []
fit = "f"
groups = []
in_sample_prefill_mape = 0.1
in_sample_decode_mape = 0.1
cv_prefill_mape = 0.1
cv_decode_mape = 0.1
tool = "t"
extra = 1
"#;
    assert!(toml::from_str::<CatalogueFile>(text).is_err());
}

/// `dev` fitted (4 ms per step, 0.2 ms per sequence), and the same device with no overhead at
/// all (its step times are the roofs alone: `t + 0.0 == t`).
fn fitted_and_bare(m: &ModelSpec, dev: &str) -> (CostModel, CostModel) {
    let c = cat();
    let d = c.device(dev).unwrap().clone();
    let fit = Device {
        step_overhead_s: Some(0.004),
        per_seq_overhead_s: Some(0.0002),
        ..d.clone()
    };
    let zero = CostOptions {
        step_overhead_s: 0.0,
        ..CostOptions::default()
    };
    (
        CostModel::new(m, &fit, 1, CostOptions::default()).unwrap(),
        CostModel::new(m, &d, 1, zero).unwrap(),
    )
}

#[test]
fn fft_and_ced_steps_count_their_rows() {
    let c = cat();
    // Hyena on a GPU (the digital ledger) and on the optical-FFT device (the engine branch):
    // prefill of 3 prompts -> 3 rows; decode of 5 rows.
    let hy = c.model("llama3-8b-hyena").unwrap();
    for dev in ["h100", "optical-fft"] {
        let (fit, bare) = fitted_and_bare(hy, dev);
        let lens = [100, 300, 50];
        let t = bare.prefill_optical(&lens).step.time_s;
        let got = fit.prefill_optical(&lens).step.time_s;
        assert_eq!(
            got.to_bits(),
            ((t + 0.004) + 0.0002 * 3.0).to_bits(),
            "{dev}"
        );
        assert_eq!(fit.prefill(lens).time_s, got, "{dev}");
        let t = bare.decode_sum(2000, 5).time_s;
        let got = fit.decode_sum(2000, 5).time_s;
        assert_eq!(
            got.to_bits(),
            ((t + 0.004) + 0.0002 * 5.0).to_bits(),
            "{dev}"
        );
    }
    // CED: a prefill of 2 prompts -> 2 rows; a decode step of 3 decoding rows and 2 replays -> 5.
    let ced = c.model("llama3-8b-ced").unwrap();
    let (fit, bare) = fitted_and_bare(ced, "h100");
    let t = bare.prefill([512, 256]).time_s;
    let got = fit.prefill([512, 256]).time_s;
    assert_eq!(got.to_bits(), ((t + 0.004) + 0.0002 * 2.0).to_bits());
    let replay = [(512, 128), (64, 64)];
    let t = bare.ced_step(4000, 3, &replay).time_s;
    let got = fit.ced_step(4000, 3, &replay).time_s;
    assert_eq!(got.to_bits(), ((t + 0.004) + 0.0002 * 5.0).to_bits());
}
