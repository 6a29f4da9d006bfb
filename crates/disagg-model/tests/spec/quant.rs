//! The quantisation lever's formats (`docs/cost-model.md#quantisation`, `docs/levers.md#scheduled-instances`, `docs/cost-model.md#parallelism`) and the transform
//! engine's field checks.

use disagg_model::*;

#[test]
fn bytes_per_value() {
    // 0.5 + 2/128 = 0.515625 and 0.5 + 1/32 = 0.53125 are exact binary fractions.
    let b: Vec<f64> = QuantFormat::NAMES
        .iter()
        .map(|n| QuantFormat::parse(n).unwrap().bytes())
        .collect();
    assert_eq!(b, [2.0, 1.0, 1.0, 0.515625, 0.53125]);
    for n in QuantFormat::NAMES {
        assert_eq!(QuantFormat::parse(n).unwrap().as_str(), n);
    }
    assert_eq!(
        QuantFormat::parse("fp16").unwrap_err().to_string(),
        "unknown format 'fp16'; valid: bf16, fp8, int8, int4, fp4"
    );
}

#[test]
fn speedups_and_checks() {
    let c = Catalogue::builtin();
    let f = |w: &str, k: &str, cf: &str| Formats {
        weight: QuantFormat::parse(w).unwrap(),
        kv: QuantFormat::parse(k).unwrap(),
        compute: QuantFormat::parse(cf).unwrap(),
    };
    let h100 = c.device("h100").unwrap();
    let a100 = c.device("a100").unwrap();
    let b200 = c.device("b200").unwrap();
    assert_eq!(
        f("fp8", "bf16", "fp8").compute_speedup(h100, "decode"),
        Ok(2.0)
    );
    assert_eq!(
        f("fp4", "bf16", "fp4").compute_speedup(b200, "decode"),
        Ok(4.0)
    );
    assert_eq!(
        f("fp8", "bf16", "bf16").compute_speedup(a100, "decode"),
        Ok(1.0)
    );
    assert_eq!(
        f("fp8", "bf16", "fp8")
            .compute_speedup(a100, "decode")
            .unwrap_err()
            .to_string(),
        "decode pool: A100-SXM has no fp8 units (use compute_format='bf16' for weight-only fp8)"
    );
    assert!(f("int4", "bf16", "int4")
        .compute_speedup(b200, "prefill")
        .is_err());
    let m = c.model("llama3-8b").unwrap();
    assert!(f("fp8", "fp8", "fp8").check(m).is_ok());
    assert!(f("int4", "bf16", "bf16").check(m).is_ok());
    assert!(f("fp8", "bf16", "int8").check(m).is_err());
    assert!(f("bf16", "bf16", "fp8").check(m).is_err());
    assert!(f("bf16", "fp8", "bf16")
        .check(c.model("llama3-8b-hyena").unwrap())
        .is_err());
    assert!(f("bf16", "fp8", "bf16")
        .check(c.model("llama3-8b-ced").unwrap())
        .is_err());
    assert!(Formats::default()
        .check(c.model("llama3-8b-ced").unwrap())
        .is_ok());
    let q = f("int4", "fp8", "bf16").apply(m);
    assert_eq!((q.weight_bytes, q.kv_bytes), (0.515625, 1.0));
    assert_eq!(&Formats::default().apply(m), m);
    assert!(!Formats::default().is_quantised());
    assert!(f("bf16", "int8", "bf16").is_quantised());
}

#[test]
fn engine_fields_are_checked() {
    let c = Catalogue::builtin();
    let base = c.device("optical-fft").unwrap().clone();
    assert!(base.validate().is_ok());
    let with = |f: &dyn Fn(&mut TransformEngine)| {
        let mut d = base.clone();
        f(d.engine.as_mut().unwrap());
        d.validate()
    };
    assert!(with(&|e| e.enob = 16).is_ok());
    assert!(with(&|e| e.enob = 1).is_ok());
    for (what, bad) in [
        ("enob", with(&|e| e.enob = 0)),
        ("enob", with(&|e| e.enob = 17)),
        ("mask_values", with(&|e| e.mask_values = 0)),
        ("samples_per_s", with(&|e| e.samples_per_s = 0.0)),
        ("mask_rate_hz", with(&|e| e.mask_rate_hz = -1.0)),
        ("laser_w", with(&|e| e.laser_w = -1.0)),
        ("tuning_w", with(&|e| e.tuning_w = f64::NAN)),
        ("fom_dac_fj", with(&|e| e.fom_dac_fj = -0.5)),
        ("fom_adc_fj", with(&|e| e.fom_adc_fj = -0.5)),
    ] {
        let e = bad.unwrap_err().to_string();
        assert!(e.contains(what), "{what}: {e}");
    }
    // Zero static power is allowed (a passive engine).
    assert!(with(&|e| {
        e.laser_w = 0.0;
        e.tuning_w = 0.0
    })
    .is_ok());
    // The passes and the conversion energy (`docs/levers.md#fft-mixing`): ENOB 8 needs 4^(11-8) = 64
    // passes for BF16, 4^0 = 1 for INT8; intensity detection doubles them; a pair costs
    // (10 * 256) * 1e-3 + (20 * 256) * 1e-3 = 7.68 pJ.
    let e = base.engine.clone().unwrap();
    assert_eq!(
        (
            e.passes(ActFormat::Bf16),
            e.passes(ActFormat::Int8),
            e.passes(ActFormat::Fp8)
        ),
        (64, 1, 1)
    );
    let i = TransformEngine {
        detection: Detection::Intensity,
        ..e.clone()
    };
    assert_eq!(i.passes(ActFormat::Bf16), 128);
    assert_eq!(
        e.pj_per_pair(),
        (10.0 * 256.0) * 1e-3 + (20.0 * 256.0) * 1e-3
    );
    assert_eq!(e.static_w(), 20.0);
    // fft_efficiency must be positive.
    let mut d = base.clone();
    d.fft_efficiency = 0.0;
    assert!(d
        .validate()
        .unwrap_err()
        .to_string()
        .contains("fft_efficiency"));
}
