//! What the CLI tests share: running the binary and checking its answers.
#![allow(dead_code)]

use std::process::{Command, Output};

use serde_json::Value;

/// Runs `disagg ARGS`.
pub fn disagg(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_disagg"))
        .args(args)
        .output()
        .expect("runs")
}

/// Runs and expects success; returns stdout.
pub fn ok(args: &[&str]) -> Vec<u8> {
    let o = disagg(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Runs, expects success, parses stdout as JSON.
pub fn ok_json(args: &[&str]) -> Value {
    serde_json::from_slice(&ok(args)).expect("valid JSON")
}

/// Runs, expects success, returns stdout as text.
pub fn ok_text(args: &[&str]) -> String {
    String::from_utf8(ok(args)).expect("UTF-8")
}

/// Runs, expects exit code 2 with one line on stderr (starting `error: `) that contains every
/// needle, no panic, and nothing on stdout.
pub fn bad(args: &[&str], needles: &[&str]) {
    let o = disagg(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    assert!(err.starts_with("error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{n}' not in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(o.stdout.is_empty(), "{args:?} printed to stdout");
}

/// The README's DeepSeek-V3 cluster (issue 16): 2 prefill and 2 decode instances of 8 H100s, its
/// weights in INT4 (its 671 GB FP8 checkpoint does not fit), 8 requests/s of 2,048-token prompts
/// over 100 GbE.
pub const DEEPSEEK_2P2D_8XH100: [&str; 21] = [
    "run",
    "--model",
    "deepseek-v3",
    "--prefill",
    "2",
    "--decode",
    "2",
    "--device",
    "h100",
    "--devices-per-instance",
    "8",
    "--weight-format",
    "int4",
    "--rate",
    "8",
    "--prompt",
    "2048",
    "--prompt-cv",
    "0",
    "--link",
    "eth-100g",
];

/// A `disagg` command to configure (stdin, stdout, environment) before running it.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_disagg"))
}

/// A fresh temporary directory for one test (`name` unique within its test binary).
pub fn tmp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("disagg-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `p` as a `&str` (test paths are UTF-8).
pub fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// The names in `dir`, sorted (hidden ones too).
pub fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Makes a FIFO at `p`.
pub fn mkfifo(p: &std::path::Path) {
    let st = Command::new("mkfifo").arg(p).status().expect("mkfifo");
    assert!(st.success());
}

/// `p` is a FIFO (not followed if a link).
pub fn is_fifo(p: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).unwrap().file_type().is_fifo()
}

/// Reads a FIFO to its end on a thread.
pub fn read_fifo(p: &std::path::Path) -> std::thread::JoinHandle<Vec<u8>> {
    use std::io::Read;
    let p = p.to_path_buf();
    std::thread::spawn(move || {
        let mut v = Vec::new();
        std::fs::File::open(&p)
            .unwrap()
            .read_to_end(&mut v)
            .unwrap();
        v
    })
}

/// The header of a measurements CSV.
pub const HEADER: &str = "model,device,devices,tp,phase,batch,tokens,seconds,source";

/// A measurements CSV (`disagg calibrate --measurements`): rows of built-in models on `a100`
/// whose times come from the cost model at `truth`.
pub fn synthetic(truth: &disagg_calib::Params) -> String {
    use disagg_calib::fit::predict;
    use disagg_calib::measure::{group_key, Measurement, Phase};
    let cat = disagg_model::Catalogue::builtin();
    let mut rows = Vec::new();
    for (model, tp) in [("llama3-8b", 1), ("llama3-70b", 4), ("llama3-70b", 8)] {
        for (phase, b, t) in [
            (Phase::Prefill, 1, 256),
            (Phase::Prefill, 1, 4096),
            (Phase::Prefill, 8, 512),
            (Phase::Decode, 1, 700),
            (Phase::Decode, 16, 900),
            (Phase::Decode, 64, 1200),
        ] {
            rows.push(Measurement {
                model: model.into(),
                device: "a100".into(),
                devices: tp,
                tp,
                phase,
                batch: b,
                tokens: t,
                seconds: 1.0,
                source: String::new(),
                group: group_key(model, "a100", tp),
            });
        }
    }
    let dev = truth.device(cat.device("a100").unwrap());
    let refs: Vec<&Measurement> = rows.iter().collect();
    let p = predict(&cat, &dev, &refs).unwrap();
    let mut out = format!("{HEADER}\n");
    for (r, s) in rows.iter().zip(p) {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{:e},synthetic\n",
            r.model,
            r.device,
            r.devices,
            r.tp,
            r.phase.as_str(),
            r.batch,
            r.tokens,
            s
        ));
    }
    out
}

/// Whether a simulated candidate of a `plan --target-rate --json` document `plan` should be
/// feasible, given the SLO attainment `run_attainment` of `disagg run` of its configuration
/// (asserted equal to the candidate's own, bit for bit). `--search bisect`: the run decides.
/// `--search ci` (`docs/planning.md#screen`): a run within 5 percentage points of the target has
/// a 95% interval and is feasible when steady with its lower bound at the target; a run further
/// below has none and is infeasible.
pub fn plan_feasible(plan: &Value, c: &Value, run_attainment: f64) -> bool {
    let target = plan["slo_target"].as_f64().unwrap();
    assert_eq!(c["slo_attainment"].as_f64(), Some(run_attainment), "{c}");
    let ci = c.get("slo_attainment_ci");
    match plan["search"].as_str() {
        Some("bisect") => {
            assert!(ci.is_none(), "{c}");
            run_attainment >= target
        }
        Some("ci") => match ci {
            Some(e) => {
                assert!(run_attainment >= target - 0.05, "{c}");
                let (low, high) = (e["low"].as_f64().unwrap(), e["high"].as_f64().unwrap());
                assert!(low <= e["mean"].as_f64().unwrap() && e["mean"].as_f64().unwrap() <= high);
                e["steady"] == true && low >= target
            }
            None => {
                assert!(run_attainment < target - 0.05, "{c}");
                false
            }
        },
        other => panic!("search {other:?} in the plan"),
    }
}
