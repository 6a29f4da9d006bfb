//! Fitted devices through the binary (issue 15): a catalogue overlay with `h100-fit` (the test
//! fixture `tests/fixtures/calibrated.toml`, invented numbers), its provenance in `run` and
//! `handoff` output, its overheads in the step times (hand arithmetic), bad overlay values, and
//! the models added with the calibration data.

use crate::common;
#[allow(unused_imports)]
use common::*;

use std::path::PathBuf;

use serde_json::Value;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/calibrated.toml"
);

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("disagg-cli-cal-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// One request of 1000 prompt tokens and 2 output tokens on one GPU per instance: one prefill
/// step and one decode step.
const ONE: [&str; 14] = [
    "--model",
    "llama2-7b",
    "--requests",
    "1",
    "--prompt",
    "1000",
    "--prompt-cv",
    "0",
    "--output",
    "2",
    "--output-cv",
    "0",
    "--devices-per-instance",
    "1",
];

fn run_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["run", "--catalogue", FIXTURE];
    a.extend(extra);
    a.extend(ONE);
    a
}

fn instance<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap()
}

// Llama-2-7B (`docs/cost-model.md#prefill-step`, `docs/cost-model.md#decode-step`): matmul params 6,476,005,376 + 32000*4096 =
// 6,607,077,376; W = 2 B each; e = 4096*2 = 8192 B; kvb = 2*32*32*128*2 = 524,288 B.
const MATMUL: i128 = 6_607_077_376;
const L: i128 = 32;
const D: i128 = 4096;

#[test]
fn a_run_on_a_fitted_device_says_so_and_steps_carry_its_overheads() {
    let text = ok_text(&run_args(&["--device", "h100-fit"]));
    assert!(
        text.contains(
            "calibrated   prefill/decode on h100-fit: fitted to perf_model.csv (8 groups), CV MAPE \
             prefill 7.9% decode 3.1%\n"
        ),
        "{text}"
    );
    let v = ok_json(&run_args(&["--device", "h100-fit", "--json"]));
    let s = &v["summary"];
    let c = s["calibration"].as_array().expect("calibration block");
    assert_eq!(c.len(), 2);
    for (x, pool) in c.iter().zip(["prefill", "decode"]) {
        assert_eq!(x["pool"], pool);
        assert_eq!(x["device"], "h100-fit");
        assert_eq!(x["measurements"], serde_json::json!(["perf_model.csv"]));
        assert_eq!(x["groups"].as_array().unwrap().len(), 8);
        assert_eq!(x["cv_prefill_mape"], 0.079);
        assert_eq!(x["cv_decode_mape"], 0.031);
        assert_eq!(x["in_sample_prefill_mape"], 0.061);
        assert_eq!(x["in_sample_decode_mape"], 0.024);
        assert_eq!(x["tool"], "disagg calibrate 0.1.0");
        assert!(x["fit"].as_str().unwrap().contains("test fixture"));
    }
    // The prefill step: F = 2*matmul*1000 + 2*L*d*1000*1001; B = (W + 1000*e) + 1000*kvb on
    // one H100 at the fixture's flops_eff 0.5 and bw_eff 0.6; compute-bound, under the power
    // roof (asserted below), so t = F / (989e12*0.5); then (t + 4 ms) + 0.2 ms * 1 prompt.
    let f_ = 2 * MATMUL * 1000 + (2 * L * D) * (1000 * 1001);
    let b = ((MATMUL as f64 * 2.0) + 1000.0 * 8192.0) + 1000.0 * 524_288.0;
    let t = (f_ as f64 / (((989.0 * 1e12) * 0.5) * 1.0)).max(b / (((3.35 * 1e12) * 0.6) * 1.0));
    let want = (t + 0.004) + 0.0002 * 1.0;
    let p = instance(s, "prefill-0");
    assert_eq!(p["steps"], 1);
    assert_eq!(p["power_bound_frac"], 0.0);
    assert_eq!(p["compute_bound_frac"], 1.0);
    assert_eq!(
        f(&p["busy_s"]).to_bits(),
        want.to_bits(),
        "{} vs {want}",
        p["busy_s"]
    );
    // The decode step (the simulator's macro-step path): 1 row over the prompt and the first
    // token, ctx = 1001: F = 2*matmul + 4*L*d*(1001 + 1); B = (W + e) + 1002*kvb; memory-bound.
    let f_ = 2 * MATMUL + (4 * L * D) * 1002;
    let b = ((MATMUL as f64 * 2.0) + 8192.0) + 1002.0 * 524_288.0;
    let t = (f_ as f64 / ((989.0 * 1e12) * 0.5)).max(b / ((3.35 * 1e12) * 0.6));
    let want = (t + 0.004) + 0.0002 * 1.0;
    let d = instance(s, "decode-0");
    assert_eq!(d["steps"], 1);
    assert_eq!(
        f(&d["busy_s"]).to_bits(),
        want.to_bits(),
        "{} vs {want}",
        d["busy_s"]
    );
}

#[test]
fn each_pool_takes_its_own_device_and_only_fitted_ones_are_named() {
    let v = ok_json(&run_args(&[
        "--prefill-device",
        "a100-fit",
        "--decode-device",
        "h100-fit",
        "--json",
    ]));
    let s = &v["summary"];
    let c = s["calibration"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0]["pool"], "decode");
    // a100-fit: 3 ms per step and no per-sequence term, on an A100 (312 TFLOP/s at 0.55,
    // 2.039 TB/s at 0.80): the same prefill step as above.
    let f_ = 2 * MATMUL * 1000 + (2 * L * D) * (1000 * 1001);
    let b = ((MATMUL as f64 * 2.0) + 1000.0 * 8192.0) + 1000.0 * 524_288.0;
    let tc = f_ as f64 / (((312.0 * 1e12) * 0.55) * 1.0);
    let tm = b / (((2.039 * 1e12) * 0.80) * 1.0);
    let p = instance(s, "prefill-0");
    assert_eq!(p["power_bound_frac"], 0.0);
    assert_eq!(f(&p["busy_s"]).to_bits(), (tc.max(tm) + 0.003).to_bits());
    let text = ok_text(&run_args(&[
        "--prefill-device",
        "a100-fit",
        "--decode-device",
        "h100-fit",
    ]));
    assert!(text.contains("calibrated   decode on h100-fit: "), "{text}");
    assert_eq!(text.matches("calibrated").count(), 1, "{text}");
}

#[test]
fn built_in_devices_have_no_calibration_output() {
    let v = ok_json(&run_args(&["--device", "h100", "--json"]));
    assert!(v["summary"].get("calibration").is_none());
    let text = ok_text(&run_args(&["--device", "h100"]));
    assert!(!text.contains("calibrated"), "{text}");
    // With the built-in H100: the reference's 0.5 ms and nothing per sequence (flops_eff 0.55).
    let f_ = 2 * MATMUL * 1000 + (2 * L * D) * (1000 * 1001);
    let b = ((MATMUL as f64 * 2.0) + 1000.0 * 8192.0) + 1000.0 * 524_288.0;
    let t = (f_ as f64 / (((989.0 * 1e12) * 0.55) * 1.0)).max(b / (((3.35 * 1e12) * 0.8) * 1.0));
    let p = instance(&v["summary"], "prefill-0");
    assert_eq!(f(&p["busy_s"]).to_bits(), (t + 0.5e-3).to_bits());
}

#[test]
fn handoff_names_a_fitted_prefill_device() {
    let base = [
        "handoff",
        "--catalogue",
        FIXTURE,
        "--prefill-device",
        "h100-fit",
    ];
    let text = ok_text(&base);
    assert!(
        text.contains(
            "  calibrated             prefill on h100-fit: fitted to perf_model.csv (8 groups), \
             CV MAPE prefill 7.9% decode 3.1%\n"
        ),
        "{text}"
    );
    let mut a = base.to_vec();
    a.push("--json");
    let v = ok_json(&a);
    assert_eq!(v["calibration"]["pool"], "prefill");
    assert_eq!(v["calibration"]["device"], "h100-fit");
    assert_eq!(v["calibration"]["cv_decode_mape"], 0.031);
    // A fitted device without provenance, and a built-in: no line, no key.
    for dev in ["a100-fit", "h100"] {
        let t = ok_text(&["handoff", "--catalogue", FIXTURE, "--prefill-device", dev]);
        assert!(!t.contains("calibrated"), "{t}");
        let v = ok_json(&[
            "handoff",
            "--catalogue",
            FIXTURE,
            "--prefill-device",
            dev,
            "--json",
        ]);
        assert!(v.get("calibration").is_none());
    }
}

#[test]
fn bad_fitted_values_are_one_line_errors() {
    let cases = [
        ("step_overhead_s = -0.001", "step_overhead_s"),
        ("step_overhead_s = inf", "step_overhead_s"),
        ("per_seq_overhead_s = nan", "per_seq_overhead_s"),
        ("per_seq_overhead_s = -1e-4", "per_seq_overhead_s"),
    ];
    for (i, (line, field)) in cases.iter().enumerate() {
        let p = tmp(&format!("bad{i}.toml"));
        std::fs::write(&p, format!("[devices.my-fit]\nbase = \"h100\"\n{line}\n")).unwrap();
        let ps = p.to_str().unwrap();
        bad(
            &["run", "--catalogue", ps, "--device", "my-fit"],
            &[ps, "'my-fit'", field],
        );
    }
    let p = tmp("badmape.toml");
    std::fs::write(
        &p,
        "[devices.my-fit]\nbase = \"h100\"\n[devices.my-fit.calibration]\nmeasurements = []\n\
         fit = \"x\"\ngroups = []\nin_sample_prefill_mape = 0.1\nin_sample_decode_mape = 0.1\n\
         cv_prefill_mape = -0.2\ncv_decode_mape = 0.1\ntool = \"t\"\n",
    )
    .unwrap();
    let ps = p.to_str().unwrap();
    bad(
        &["list", "devices", "--catalogue", ps],
        &[ps, "'my-fit'", "calibration.cv_prefill_mape"],
    );
}

#[test]
fn the_measured_models_are_listed_with_their_sources() {
    let v = ok_json(&["list", "models", "--json"]);
    let models = v.as_array().unwrap();
    let get = |k: &str| models.iter().find(|m| m["key"] == k).unwrap().clone();
    let m = get("llama2-70b");
    assert_eq!(m["params"], 68_975_329_280.0);
    assert_eq!(m["kv_bytes_per_token"], 327_680.0);
    assert!(m["source"]
        .as_str()
        .unwrap()
        .contains("meta-llama/Llama-2-70b-hf config.json"));
    assert!(get("llama2-7b")["source"]
        .as_str()
        .unwrap()
        .contains("meta-llama/Llama-2-7b-hf"));
    assert!(get("bloom-176b")["source"]
        .as_str()
        .unwrap()
        .contains("bigscience/bloom"));
    assert!(get("llama3-8b").get("source").is_none());
}

#[test]
fn the_fast_decode_path_takes_the_same_overheads() {
    // `--fast` (the macro-step decode) and the step-by-step path agree bit for bit on a
    // fitted device, over a run with real batching.
    let args = |fast: bool| {
        let mut a = vec![
            "run",
            "--catalogue",
            FIXTURE,
            "--device",
            "h100-fit",
            "--model",
            "llama2-7b",
            "--requests",
            "120",
            "--json",
        ];
        if fast {
            a.push("--fast");
        }
        ok_json(&a)
    };
    let (slow, fast) = (args(false), args(true));
    for name in ["prefill-0", "decode-0"] {
        let (a, b) = (
            instance(&slow["summary"], name),
            instance(&fast["summary"], name),
        );
        assert_eq!(a["busy_s"], b["busy_s"], "{name}");
        assert_eq!(a["steps"], b["steps"], "{name}");
    }
    assert!(f(&instance(&slow["summary"], "decode-0")["mean_batch"]) > 1.0);
}

#[test]
fn compare_sweep_and_plan_name_the_fitted_devices() {
    let line =
        "calibrated   prefill/decode on h100-fit: fitted to perf_model.csv (8 groups), CV MAPE \
                prefill 7.9% decode 3.1%\n";
    let common = [
        "--catalogue",
        FIXTURE,
        "--model",
        "llama2-7b",
        "--requests",
        "30",
    ];
    let with = |cmd: &[&str], extra: &[&str]| {
        let mut a = cmd.to_vec();
        a.extend(common);
        a.extend(extra);
        ok_text(&a)
    };
    // compare: the colocated run's pool and the disaggregated run's two, on one line.
    let t = with(&["compare"], &["--device", "h100-fit"]);
    assert!(
        t.ends_with(
            "calibrated   colocated/prefill/decode on h100-fit: fitted to perf_model.csv (8 \
             groups), CV MAPE prefill 7.9% decode 3.1%\n"
        ),
        "{t}"
    );
    let v = {
        let mut a = vec!["compare", "--device", "h100-fit", "--json"];
        a.extend(common);
        ok_json(&a)
    };
    for r in v["runs"].as_array().unwrap() {
        assert_eq!(r["summary"]["calibration"][0]["device"], "h100-fit");
    }
    // sweep: under the table, once for all the runs on the fitted device.
    let t = with(
        &["sweep", "--quiet"],
        &["--vary", "device=h100-fit,h100,a100-fit"],
    );
    assert!(t.ends_with(line), "{t}");
    assert_eq!(t.matches("calibrated").count(), 1, "{t}");
    let t = with(&["sweep", "--quiet"], &["--vary", "device=h100,a100-fit"]);
    assert!(!t.contains("calibrated"), "{t}");
    // plan --max-rate (200 requests: 30 never load it): text and JSON.
    let plan = |dev: &str, json: bool| {
        let mut a = vec![
            "plan",
            "--max-rate",
            "--catalogue",
            FIXTURE,
            "--model",
            "llama2-7b",
            "--requests",
            "200",
            "--device",
        ];
        a.push(dev);
        if json {
            a.push("--json");
        }
        ok_text(&a)
    };
    let t = plan("h100-fit", false);
    assert!(t.ends_with(line), "{t}");
    let v: Value = serde_json::from_str(&plan("h100-fit", true)).unwrap();
    assert_eq!(v["calibration"][0]["pool"], "prefill");
    assert_eq!(v["calibration"][1]["pool"], "decode");
    assert_eq!(v["calibration"][1]["cv_prefill_mape"], 0.079);
    let v: Value = serde_json::from_str(&plan("h100", true)).unwrap();
    assert!(v.get("calibration").is_none());
    assert!(!plan("h100", false).contains("calibrated"));
    // plan --target-rate: the candidates simulated on the fitted device name it.
    let search = |json: bool| {
        let mut a = vec![
            "plan",
            "--catalogue",
            FIXTURE,
            "--model",
            "llama2-7b",
            "--requests",
            "200",
            "--target-rate",
            "4",
            "--prefill-counts",
            "1",
            "--decode-counts",
            "1",
            "--prefill-devices",
            "h100-fit,h100",
            "--decode-devices",
            "h100",
            "--price",
            "h100-fit=2.5",
            "--colocated",
            "no",
        ];
        if json {
            a.push("--json");
        }
        ok_text(&a)
    };
    let t = search(false);
    assert!(
        t.ends_with(
            "calibrated   prefill on h100-fit: fitted to perf_model.csv (8 groups), CV MAPE \
             prefill 7.9% decode 3.1%\n"
        ),
        "{t}"
    );
    let v: Value = serde_json::from_str(&search(true)).unwrap();
    let c = v["calibration"].as_array().unwrap();
    assert_eq!(
        (c.len(), &c[0]["pool"], &c[0]["device"]),
        (1, &"prefill".into(), &"h100-fit".into())
    );
}
