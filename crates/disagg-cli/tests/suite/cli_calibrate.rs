//! `disagg calibrate` (issue 15): bad input, a synthetic file fitted back to the parameters it was
//! generated from, and the real measurements of `../shared/calibration/` (skipped with a message
//! when absent).

use crate::common;
#[allow(unused_imports)]
use common::*;

use std::path::PathBuf;

use disagg_calib::measure::Phase;
use disagg_calib::Params;
use serde_json::Value;

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli_calibrate_{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(d: &std::path::Path, name: &str, text: &str) -> String {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn rel(v: &Value, want: f64) -> f64 {
    (v.as_f64().unwrap() / want - 1.0).abs()
}

#[test]
fn a_synthetic_file_is_fitted_back_to_its_parameters() {
    let d = dir("synthetic");
    let truth = Params {
        flops_eff: 0.63,
        bw_eff: 0.74,
        step_overhead_s: 7e-3,
        per_seq_overhead_s: 6e-5,
    };
    let m = write(&d, "m.csv", &synthetic(&truth));
    let out = d.join("fitted.toml").display().to_string();
    let v = ok_json(&["calibrate", "--measurements", &m, "--out", &out, "--json"]);
    let dev = &v["devices"][0];
    assert_eq!(dev["device"], "a100");
    assert_eq!(dev["rows"], 18);
    assert!(rel(&dev["flops_eff"], 0.63) < 1e-6, "{dev}");
    assert!(rel(&dev["bw_eff"], 0.74) < 1e-6, "{dev}");
    assert!(rel(&dev["step_overhead_s"], 7e-3) < 1e-6, "{dev}");
    assert!(rel(&dev["per_seq_overhead_s"], 6e-5) < 1e-6, "{dev}");
    // Exact data: every held-out group is predicted exactly too.
    for g in dev["groups"].as_array().unwrap() {
        assert!(g["cv"]["prefill_mape"].as_f64().unwrap() < 1e-4, "{g}");
        assert!(g["cv"]["decode_mape"].as_f64().unwrap() < 1e-4, "{g}");
    }
    assert_eq!(dev["groups"].as_array().unwrap().len(), 3);
    // The uncalibrated a100 (0.55, 0.80, 0.5 ms, no per-sequence term) is off.
    assert!(dev["uncalibrated"]["decode_mape"].as_f64().unwrap() > 1.0);
    let toml = std::fs::read_to_string(&out).unwrap();
    assert!(toml.contains("[devices.a100-fit]"), "{toml}");
    assert!(toml.contains("[devices.a100-fit.calibration]"), "{toml}");
    // Written whole by the catalogue's writer (every field, no `base`), overheads included.
    assert!(!toml.contains("base = "), "{toml}");
    assert!(toml.contains("step_overhead_s = "), "{toml}");
    assert!(toml.contains("per_seq_overhead_s = "), "{toml}");
    assert!(toml.contains("scale_up = \"nvlink3\""), "{toml}");
    // Evaluate on the overlay (through the global --catalogue): the fit's own rows, near zero
    // error, and exactly the fit's in-sample errors (the same f64), pooled and per group.
    let e = ok_json(&["--catalogue", &out, "calibrate", "--evaluate", &m, "--json"]);
    assert_eq!(e["rows"], 18);
    assert!(e["prefill_mape"].as_f64().unwrap() < 1e-4, "{e}");
    assert!(e["decode_mape"].as_f64().unwrap() < 1e-4, "{e}");
    assert_eq!(e["prefill_mape"], dev["in_sample"]["prefill_mape"]);
    assert_eq!(e["decode_mape"], dev["in_sample"]["decode_mape"]);
    assert_eq!(e["groups"].as_array().unwrap().len(), 3);
    assert_eq!(e["groups"][0]["group"], "llama3-70b/a100/tp4");
    for (eg, g) in e["groups"]
        .as_array()
        .unwrap()
        .iter()
        .zip(dev["groups"].as_array().unwrap())
    {
        assert_eq!(eg["group"], g["group"]);
        assert_eq!(eg["prefill_mape"], g["in_sample"]["prefill_mape"], "{eg}");
        assert_eq!(eg["decode_mape"], g["in_sample"]["decode_mape"], "{eg}");
    }
    // A run on the fitted device says where its numbers come from, with the CV error.
    let cv_pf = dev["cv"]["prefill_mape"].as_f64().unwrap();
    let cv_dec = dev["cv"]["decode_mape"].as_f64().unwrap();
    let run = ok_text(&[
        "--catalogue",
        &out,
        "run",
        "--device",
        "a100-fit",
        "--model",
        "llama3-70b",
        "--tp",
        "8",
        "--devices-per-instance",
        "8",
        "--requests",
        "4",
    ]);
    assert!(
        run.contains(&format!(
            "calibrated   prefill/decode on a100-fit: fitted to m.csv (3 groups), CV MAPE \
             prefill {:.1}% decode {:.1}%\n",
            cv_pf, cv_dec
        )),
        "{run}"
    );
    let rj = ok_json(&[
        "--catalogue",
        &out,
        "run",
        "--device",
        "a100-fit",
        "--model",
        "llama3-70b",
        "--tp",
        "8",
        "--devices-per-instance",
        "8",
        "--requests",
        "4",
        "--json",
    ]);
    let c = &rj["summary"]["calibration"][0];
    assert_eq!(c["device"], "a100-fit");
    // The overlay holds fractions: the report's percent / 100.
    assert_eq!(c["cv_decode_mape"].as_f64().unwrap(), cv_dec / 100.0, "{c}");
    assert_eq!(c["cv_prefill_mape"].as_f64().unwrap(), cv_pf / 100.0, "{c}");
    assert_eq!(c["measurements"], serde_json::json!(["m.csv"]));
    assert_eq!(
        c["tool"],
        format!("disagg calibrate {}", env!("CARGO_PKG_VERSION"))
    );
    // --plot DIR: the directory is prepared (the figures are calibrate_plots' business).
    let pd = d.join("plots");
    let pds = pd.display().to_string();
    ok(&[
        "calibrate",
        "--measurements",
        &m,
        "--out",
        &out,
        "--plot",
        &pds,
    ]);
    assert!(pd.is_dir());
    ok(&[
        "--catalogue",
        &out,
        "calibrate",
        "--evaluate",
        &m,
        "--plot",
        &pds,
    ]);
    // --out over an existing file replaces it whole (rename), leaving no temporary file.
    std::fs::write(&out, "stale\n").unwrap();
    ok(&["calibrate", "--measurements", &m, "--out", &out]);
    let again = std::fs::read_to_string(&out).unwrap();
    assert_eq!(again, toml, "the rewrite differs from the first fit");
    assert!(!d.join(".fitted.toml.tmp").exists());
    let names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    // Without the overlay: the built-in's error, the same as the fit's "uncalibrated" column.
    let e0 = ok_json(&["calibrate", "--evaluate", &m, "--json"]);
    assert_eq!(e0["decode_mape"], dev["uncalibrated"]["decode_mape"]);
    assert_eq!(e0["prefill_mape"], dev["uncalibrated"]["prefill_mape"]);
    // Text output: the table.
    let t = ok_text(&["calibrate", "--measurements", &m, "--out", &out]);
    assert!(t.contains("a100-fit (18 rows"), "{t}");
    assert!(t.contains("llama3-70b/a100/tp8"), "{t}");
    assert!(t.contains("pf LOGO"), "{t}");
}

#[test]
fn bad_input_is_one_line_exit_2_and_no_toml() {
    let d = dir("bad");
    let out = d.join("fitted.toml");
    let o = out.display().to_string();
    let ok_row = "llama3-8b,a100,1,1,prefill,1,512,0.1,";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("cols.csv", "model,gpu,secs\nllama3-8b,a100,1\n".into(), vec!["cols.csv:1", "unknown columns"]),
        ("zero.csv", format!("{HEADER}\n{ok_row}\nllama3-8b,a100,1,1,decode,1,512,0,\n"), vec!["zero.csv:3", "seconds must be a finite time above zero"]),
        ("neg.csv", format!("{HEADER}\nllama3-8b,a100,1,1,decode,1,512,-0.2,\n"), vec!["neg.csv:2", "above zero"]),
        ("nan.csv", format!("{HEADER}\nllama3-8b,a100,1,1,decode,1,512,NaN,\n"), vec!["nan.csv:2", "above zero"]),
        ("model.csv", format!("{HEADER}\ngpt-5,a100,1,1,decode,1,512,0.1,\n"), vec!["model.csv:2", "model 'gpt-5' is not in the catalogue"]),
        ("dev.csv", format!("{HEADER}\nllama3-8b,v100,1,1,decode,1,512,0.1,\n"), vec!["dev.csv:2", "device 'v100' is not in the catalogue"]),
        ("num.csv", format!("{HEADER}\nllama3-8b,a100,1,1,decode,one,512,0.1,\n"), vec!["num.csv:2", "batch: malformed number 'one'"]),
        ("few.csv", format!("{HEADER}\n{ok_row}\n{ok_row}\n{ok_row}\n"), vec!["too few rows to fit a100: 3 rows, fewer than the 4 parameters"]),
        ("empty.csv", String::new(), vec!["--measurements", "empty.csv: file is empty"]),
        ("sw.csv", "model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,prompt_time,token_time,e2e_time,tensor_parallel\nllama3-8b,tpu-v5,512,1,128,0,0,100,10,1000,1\n".into(), vec!["sw.csv:2", "device 'tpu-v5'"]),
    ];
    for (name, text, needles) in &cases {
        let m = write(&d, name, text);
        bad(&["calibrate", "--measurements", &m, "--out", &o], needles);
        assert!(!out.exists(), "{name}: a TOML was written");
        let _ = std::fs::remove_file(d.join(format!(".{}.tmp", "fitted.toml")));
    }
    let good = write(
        &d,
        "good.csv",
        &synthetic(&Params {
            flops_eff: 0.5,
            bw_eff: 0.5,
            step_overhead_s: 1e-3,
            per_seq_overhead_s: 1e-4,
        }),
    );
    bad(
        &[
            "calibrate",
            "--measurements",
            &good,
            "--format",
            "csv",
            "--out",
            &o,
        ],
        &["unknown format 'csv'"],
    );
    bad(
        &[
            "calibrate",
            "--measurements",
            &good,
            "--format",
            "splitwise",
            "--out",
            &o,
        ],
        &["good.csv:1", "unknown columns for format splitwise"],
    );
    bad(
        &[
            "calibrate",
            "--measurements",
            &good,
            "--exclude",
            "x/a100/tp1",
            "--out",
            &o,
        ],
        &["--exclude x/a100/tp1: no such group"],
    );
    bad(
        &[
            "calibrate",
            "--measurements",
            &good,
            "--device",
            "tpu",
            "--out",
            &o,
        ],
        &["tpu"],
    );
    bad(
        &[
            "calibrate",
            "--measurements",
            &good,
            "--device",
            "h100",
            "--out",
            &o,
        ],
        &["no step-time rows to fit"],
    );
    bad(
        &[
            "calibrate",
            "--measurements",
            "/nonexistent/m.csv",
            "--out",
            &o,
        ],
        &[
            "/nonexistent/m.csv",
            "--measurements",
            "file does not exist",
        ],
    );
    assert!(!out.exists());
    // One group left: no leave-one-group-out error for the overlay's calibration record, so no
    // overlay (rather than an invented CV error).
    bad(
        &[
            "calibrate",
            "--measurements",
            &good,
            "--exclude",
            "llama3-70b/a100/tp4",
            "--exclude",
            "llama3-70b/a100/tp8",
            "--out",
            &o,
        ],
        &["cannot write the calibration of a100-fit: no LOGO prefill error"],
    );
    assert!(!out.exists());
    // A failure in a later file writes nothing either.
    let zero = d.join("zero.csv").display().to_string();
    bad(
        &["calibrate", "--measurements", &good, &zero, "--out", &o],
        &["zero.csv:3"],
    );
    assert!(!out.exists());
    // An overlay that cannot be read.
    let broken = write(
        &d,
        "broken.toml",
        "[devices.a100-fit]\nbase = \"a100\"\nstep_overhead_s = \"x\"\n",
    );
    bad(
        &["--catalogue", &broken, "calibrate", "--evaluate", &good],
        &["broken.toml"],
    );
    // A failed fit leaves an existing --out as it was.
    std::fs::write(&out, "kept\n").unwrap();
    bad(
        &["calibrate", "--measurements", &zero, "--out", &o],
        &["zero.csv:3"],
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept\n");
    std::fs::remove_file(&out).unwrap();
    // Fitting works from the same inputs.
    ok(&["calibrate", "--measurements", &good, "--out", &o]);
    assert!(out.exists());
}

/// `../shared/calibration/` from the repository root, or `$DISAGG_CALIBRATION_DIR`.
fn calibration_dir() -> Option<PathBuf> {
    let d = std::env::var_os("DISAGG_CALIBRATION_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/calibration")
        });
    if d.join("splitwise/perf_model.csv").is_file() {
        Some(d)
    } else {
        eprintln!(
            "skipped: {} is absent (the measured GPU timings are not in the repository)",
            d.display()
        );
        None
    }
}

#[test]
fn the_real_measurements_fit_and_cross_validate() {
    let Some(c) = calibration_dir() else { return };
    let d = dir("real");
    let sw = c.join("splitwise/perf_model.csv").display().to_string();
    let ar_a = c.join("vidur/data/profiling/network/a100_dgx/all_reduce.csv");
    let ar_h = c.join("vidur/data/profiling/network/h100_dgx/all_reduce.csv");
    let (ar_a, ar_h) = (ar_a.display().to_string(), ar_h.display().to_string());
    let out = d.join("fitted.toml").display().to_string();
    let v = ok_json(&[
        "calibrate",
        "--measurements",
        &sw,
        &ar_a,
        &ar_h,
        "--out",
        &out,
        "--json",
    ]);
    // README: 12 groups x 105 lines; the base point's 5 lines appear 3 times (10 duplicates per
    // group); 4 pcap groups (llama TP2/4/8, bloom TP8) x 95 distinct lines x 2 rows; TP2 batch
    // 64 and 32: 2 groups x 2
    // configurations x 5 runs x 2 rows.
    assert_eq!(v["duplicates"], 12 * 10);
    let ex = v["excluded"].as_object().unwrap();
    let pcap = ex
        .iter()
        .find(|(k, _)| k.starts_with("h100-80gb-pcap"))
        .unwrap()
        .1;
    assert_eq!(pcap, 4 * 95 * 2);
    let tp2 = ex
        .iter()
        .find(|(k, _)| k.starts_with("TP2 batch"))
        .unwrap()
        .1;
    assert_eq!(tp2, 2 * 2 * 5 * 2);
    let devs = v["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 2);
    for dv in devs {
        // 4 groups: bloom tp8, llama tp2 (85 lines), tp4, tp8 (95 lines each); 2 rows a line.
        assert_eq!(dv["rows"], (3 * 95 + 85) * 2, "{}", dv["device"]);
        assert_eq!(dv["groups"].as_array().unwrap().len(), 4);
        let f = dv["flops_eff"].as_f64().unwrap();
        assert!(f > 0.0 && f <= 1.0);
        assert!(dv["link"]["rows"].as_u64().unwrap() > 0);
        // The fit beats the uncalibrated roofline on its rows and out of sample, pooled.
        for ph in ["prefill_mape", "decode_mape"] {
            let fit = dv["in_sample"][ph].as_f64().unwrap();
            let cv = dv["cv"][ph].as_f64().unwrap();
            let unc = dv["uncalibrated"][ph].as_f64().unwrap();
            assert!(
                fit < unc && cv < unc,
                "{} {ph}: {fit} {cv} {unc}",
                dv["device"]
            );
        }
    }
    // The overlay (through the global --catalogue) scores its own rows exactly as the fit did:
    // the same f64 per group.
    let e = ok_json(&[
        "--catalogue",
        &out,
        "calibrate",
        "--evaluate",
        &sw,
        "--json",
    ]);
    assert_eq!(e["rows"], 2 * devs[0]["rows"].as_u64().unwrap());
    let groups = e["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 8);
    for dv in devs {
        for g in dv["groups"].as_array().unwrap() {
            let eg = groups.iter().find(|x| x["group"] == g["group"]).unwrap();
            for ph in ["prefill_mape", "decode_mape"] {
                assert_eq!(eg[ph], g["in_sample"][ph], "{} {ph}", g["group"]);
            }
        }
    }
    // A run on the fitted H100 (Llama-2-70B, TP8) names its provenance and CV error.
    let h = devs.iter().find(|x| x["device"] == "h100").unwrap();
    let run = ok_text(&[
        "--catalogue",
        &out,
        "run",
        "--device",
        "h100-fit",
        "--model",
        "llama2-70b",
        "--tp",
        "8",
        "--devices-per-instance",
        "8",
        "--requests",
        "4",
    ]);
    assert!(
        run.contains(&format!(
            "calibrated   prefill/decode on h100-fit: fitted to perf_model.csv, a100_dgx/all_reduce.csv, \
             h100_dgx/all_reduce.csv (4 groups), CV MAPE prefill {:.1}% decode {:.1}%\n",
            h["cv"]["prefill_mape"].as_f64().unwrap(),
            h["cv"]["decode_mape"].as_f64().unwrap()
        )),
        "{run}"
    );
}

#[test]
fn the_plot_hook_gets_one_tuple_per_row() {
    use disagg_calib::RowPrediction;
    let r = RowPrediction {
        group: "llama3-8b/a100/tp1".into(),
        phase: Phase::Decode,
        batch: 16,
        tokens: 900,
        measured_s: 0.03,
        predicted_s: 0.031,
        cv_predicted_s: Some(0.032),
        uncalibrated_s: 0.02,
    };
    let got = disagg_cli::calibrate_cmd::plot_rows(&[r]);
    assert_eq!(
        got,
        vec![("llama3-8b/a100/tp1".to_string(), "decode", 16, 0.03, 0.031)]
    );
}
