//! Hostile numbers: every numeric flag of every command, given 0, -1, NaN, inf, -inf, 1e308,
//! 1e-300, 2^64, "abc" and "" wherever that is out of its range, must fail cleanly: exit code 2,
//! one line on stderr naming the flag and quoting the value as typed, no panic, nothing on stdout,
//! no output file left behind. The flags come from the range table (`disagg list ranges --json`),
//! so a new numeric flag is covered as soon as it has a range (and a unit test in the CLI makes
//! every numeric flag have one).

use crate::common;
#[allow(unused_imports)]
use common::*;

use std::path::{Path, PathBuf};

use serde_json::Value;

const HOSTILE: [&str; 10] = [
    "0",
    "-1",
    "NaN",
    "inf",
    "-inf",
    "1e308",
    "1e-300",
    "18446744073709551616",
    "abc",
    "",
];

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("disagg-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Whether the text `v` is a valid value of a table entry's bounds (independent of the code under
/// test: Rust's own number parsing and the bounds as the table publishes them).
fn valid(bounds: &Value, v: &str) -> bool {
    let f = |k: &str| bounds[k].as_f64().unwrap();
    match bounds["type"].as_str().unwrap() {
        "int" => v.parse::<u64>().is_ok_and(|x| {
            x >= bounds["min"].as_u64().unwrap() && x <= bounds["max"].as_u64().unwrap()
        }),
        "float" => v.parse::<f64>().is_ok_and(|x| {
            let lo = if bounds["min_inclusive"].as_bool().unwrap() {
                x >= f("min")
            } else {
                x > f("min")
            };
            let hi = if bounds["max_inclusive"].as_bool().unwrap() {
                x <= f("max")
            } else {
                x < f("max")
            };
            x.is_finite() && lo && hi
        }),
        t => panic!("unknown bounds type {t}"),
    }
}

/// Output flags of each command, pointing into `dir`: none of them may exist after a bad value.
fn outputs(cmd: &str, dir: &Path) -> Vec<String> {
    let p = |n: &str| dir.join(n).display().to_string();
    match cmd {
        "run" => vec![
            "--requests-out".into(),
            p("requests.csv"),
            "--plot".into(),
            p("plots"),
        ],
        "compare" | "plan" => vec!["--plot".into(), p("plots")],
        "sweep" => vec![
            "--csv".into(),
            p("sweep.csv"),
            "--jsonl".into(),
            p("sweep.jsonl"),
        ],
        _ => vec![],
    }
}

/// The arguments that put `value` into `flag` of `cmd` (plus what the command needs to get as
/// far as checking it).
fn invocation(cmd: &str, flag: &str, value: &str, dir: &Path) -> Vec<String> {
    let mut args = vec![cmd.to_string()];
    match cmd {
        "trace-stats" => args.push(dir.join("no-such-trace.csv").display().to_string()),
        "plan" if flag != "--target-rate" => args.extend(["--target-rate".into(), "1".into()]),
        _ => {}
    }
    let value = if flag == "--price" {
        format!("h100={value}")
    } else {
        value.to_string()
    };
    if flag == "--sweep-rate" {
        // Takes several values: the `=` form keeps a leading '-' a value.
        args.push(format!("{flag}={value}"));
    } else {
        args.extend([flag.to_string(), value]);
    }
    args.extend(outputs(cmd, dir));
    args
}

/// Runs `disagg ARGS`, killing it if it has not finished after a minute: a bad value that is
/// accepted can start an absurd simulation (before the fix, `rate = 1e-300` with `--plot` grew to
/// 23 GB), and that must fail this test, not hang the machine. Not a timing assertion.
fn disagg_bounded(args: &[&str]) -> std::process::Output {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let start = Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} accepted: still running after a minute");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().expect("output")
}

/// Exit code 2, one `error: ` line holding every needle, no panic, nothing on stdout, and
/// nothing left in `dir`.
fn check(args: &[String], needles: &[&str], dir: &Path) {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = disagg_bounded(&a);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{n}' not in: {err}");
    }
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?} printed to stdout");
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{args:?} left {left:?}");
}

#[test]
fn every_numeric_flag_rejects_hostile_values() {
    let table = ok_json(&["list", "ranges", "--json"]);
    let table = table.as_array().expect("an array of ranges");
    let dir = tmp_dir("flags");
    let mut cases = 0;
    for r in table {
        let flag = r["flag"].as_str().unwrap();
        for cmd in r["commands"].as_array().unwrap() {
            let cmd = cmd.as_str().unwrap();
            if !["run", "compare", "sweep", "plan", "handoff", "trace-stats"].contains(&cmd) {
                continue;
            }
            for v in HOSTILE {
                if valid(&r["bounds"], v) {
                    continue;
                }
                let shown = if flag == "--price" {
                    format!("h100={v}")
                } else {
                    format!("'{v}'")
                };
                check(&invocation(cmd, flag, v, &dir), &[flag, &shown], &dir);
                cases += 1;
            }
        }
    }
    assert!(cases > 400, "only {cases} cases");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_sweep_axis_rejects_hostile_values() {
    let table = ok_json(&["list", "ranges", "--json"]);
    let dir = tmp_dir("vary");
    let mut cases = 0;
    for r in table.as_array().unwrap() {
        let Some(key) = r["key"].as_str() else {
            continue;
        };
        for v in HOSTILE {
            if valid(&r["bounds"], v) || v.is_empty() {
                continue;
            }
            let mut args = vec!["sweep".to_string(), "--vary".into(), format!("{key}={v}")];
            args.extend(outputs("sweep", &dir));
            check(&args, &["--vary", &format!("{key}={v}")], &dir);
            cases += 1;
        }
        // An empty value is an empty list.
        let mut args = vec!["sweep".to_string(), "--vary".into(), format!("{key}=")];
        args.extend(outputs("sweep", &dir));
        check(&args, &["--vary", key], &dir);
    }
    assert!(cases > 150, "only {cases} cases");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn scenario_files_are_checked_against_the_same_ranges() {
    let dir = tmp_dir("config");
    let cfg = std::env::temp_dir().join(format!("disagg-hostile-{}.toml", std::process::id()));
    for (line, needles) in [
        (
            "rate = 1e-300",
            &["--rate", "1e-300", "[1e-6, 1e6] req/s"][..],
        ),
        ("think = 1e308", &["--think", "1e308", "[0, 1e7] s"]),
        ("time_scale = inf", &["--time-scale", "inf"]),
        ("prefix_share = nan", &["--prefix-share", "NaN"]),
        ("ttft_slo = 1e-300", &["--ttft-slo", "1e-300"]),
        ("trace_duration = -1.0", &["--duration", "-1"]),
    ] {
        std::fs::write(&cfg, format!("{line}\n")).unwrap();
        let mut args = vec![
            "run".to_string(),
            "--config".into(),
            cfg.display().to_string(),
        ];
        args.extend(outputs("run", &dir));
        check(&args, needles, &dir);
        let e = String::from_utf8_lossy(
            &disagg_bounded(&["run", "--config", cfg.to_str().unwrap()]).stderr,
        )
        .to_string();
        assert!(
            e.len() < 200,
            "a huge or tiny number written out in full: {e}"
        );
    }
    let _ = std::fs::remove_file(&cfg);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn messages_name_the_flag_the_user_gave() {
    // --think 1e308 is out of range, not negative.
    let o = disagg_bounded(&["run", "--think", "1e308"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("--think") && e.contains("'1e308'") && !e.contains(">= 0"),
        "{e}"
    );
    // --workload-file errors name --workload-file.
    let o = disagg_bounded(&["run", "--workload-file", "/no/such/rows.json"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--workload-file") && !e.contains("--trace-file"),
        "{e}"
    );
}

fn bad_bounded(args: &[&str], needles: &[&str]) {
    let dir = tmp_dir("issue");
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    check(&args, needles, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_issues_absurd_values_are_errors() {
    bad_bounded(
        &["run", "--rate", "1e-300"],
        &["--rate", "'1e-300'", "[1e-6, 1e6]"],
    );
    bad_bounded(
        &["run", "--time-scale", "1e308"],
        &["--time-scale", "'1e308'"],
    );
    bad_bounded(&["run", "--think", "1e308"], &["--think", "'1e308'"]);
    bad_bounded(
        &["handoff", "--link-pj-per-bit", "1e308"],
        &["--link-pj-per-bit", "'1e308'"],
    );
    bad_bounded(
        &["plan", "--target-rate", "1", "--price", "h100=1e308"],
        &["--price", "h100=1e308", "[0, 1e6] USD/h"],
    );
}

#[test]
fn rates_above_2_pow_64_print_with_their_magnitude() {
    // A catalogue link fast enough that one hand-off's rate passes 2^64 req/s: the text used to
    // say "link full at 0.0 req/s" while the JSON said 7.6e19.
    let cat = std::env::temp_dir().join(format!("disagg-hostile-cat-{}.toml", std::process::id()));
    std::fs::write(
        &cat,
        "[links.warp]\nbase = \"eth-25g\"\nbandwidth_gb_s = 1e16\nlatency_us = 0.0\n",
    )
    .unwrap();
    let c = cat.to_str().unwrap();
    let args = [
        "--catalogue",
        c,
        "handoff",
        "--link",
        "warp",
        "--prompt-tokens",
        "1",
    ];
    let json = ok_json(&[&args[..], &["--json"]].concat());
    let want = json["link_saturation_rps"].as_f64().unwrap();
    assert!(want >= 2f64.powi(64), "{want}");
    let text = ok_text(&args);
    let _ = std::fs::remove_file(&cat);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("link full at"))
        .expect("a 'link full at' line");
    let shown: f64 = line
        .trim_start()
        .trim_start_matches("link full at")
        .split_whitespace()
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {line}"));
    assert!(
        ((shown - want) / want).abs() < 0.005,
        "{line} against {want}"
    );
}

/// Hostile text (issue 24 item 13): terminal control sequences in names, file names and file
/// contents reach stdout and stderr escaped (`\u{1b}`), never as raw bytes: nothing below 0x20
/// but a line feed, and no 0x7f, whatever the command echoes (errors, warnings, reports, `list`
/// of a custom catalogue, the calibration report, `wrote` lines).
#[test]
fn control_bytes_in_echoed_text_reach_no_terminal() {
    const RED: &str = "\u{1b}[31mRED";
    const TITLE: &str = "\u{1b}]0;pwned\u{7}";
    let d = tmp_dir("escape");
    let file = |name: &str, body: &str| {
        let p = d.join(name);
        std::fs::write(&p, body).unwrap();
        p.display().to_string()
    };
    let header = "model,device,devices,tp,phase,batch,tokens,seconds,source";
    let csv = file(
        "m.csv",
        &format!("{header}\n{TITLE},h100,1,1,prefill,1,512,0.05,x\n"),
    );
    let good_csv = file(
        "ok.csv",
        &format!("{header}\nllama3-8b,h100,1,1,prefill,1,512,0.05,{RED}\n"),
    );
    let cat = file(
        "evil.toml",
        r#"
[models.evil-m]
name = "M\u001b]0;pwned\u0007"
base = "llama3-8b"

[devices.evil-d]
name = "D\u001b[31mRED\u007f"
base = "h100"
step_overhead_s = 0.004

[devices.evil-d.calibration]
measurements = ["p\u001b[2J.csv"]
fit = "f\u001b[2J"
groups = ["g\u001b[2J"]
tool = "t\u001b[2J"
in_sample_prefill_mape = 0.06
in_sample_decode_mape = 0.02
cv_prefill_mape = 0.07
cv_decode_mape = 0.03

[links.evil-l]
name = "L\r\u001b[31m"
base = "ib-ndr"
"#,
    );
    let trace = file(
        &format!("t{RED}.json"),
        "[[0.0, 100, 10], [0.5, 200, 20], [1.0, 300, 5]]",
    );
    let plot = d.join(format!("p{RED}")).display().to_string();
    let quick = ["--requests", "20", "--fast"];
    let evil = [
        "--catalogue",
        &cat,
        "--model",
        "evil-m",
        "--device",
        "evil-d",
        "--link",
        "evil-l",
    ];
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "--model", RED],
        vec!["run", "--device", TITLE],
        vec!["run", "--link", RED],
        vec!["run", "--preset", RED],
        vec!["run", "--mode", RED],
        vec!["run", "--workload", RED],
        vec!["run", "--scale-up-link", RED],
        vec!["run", "--kv-compress", RED],
        vec!["run", "--trace-file", RED],
        // clap drops the escape sequences of an unexpected argument itself.
        vec!["run", RED],
        vec![RED],
        vec!["calibrate", "--evaluate", &csv],
        vec!["calibrate", "--evaluate", &good_csv, "--plot", &plot],
        vec!["--catalogue", &cat, "list"],
        vec!["--catalogue", &cat, "list", "devices"],
        [&["run"][..], &evil, &quick].concat(),
        [&["compare"][..], &evil, &quick].concat(),
        vec!["run", "--trace-file", &trace],
        vec!["trace-stats", &trace],
        [&["run", "--plot", &plot][..], &quick].concat(),
    ];
    for args in &cases {
        let o = disagg(args);
        for (stream, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            let raw = bytes
                .iter()
                .position(|&b| (b < 0x20 && b != b'\n') || b == 0x7f);
            assert!(
                raw.is_none(),
                "{args:?}: raw byte {:#04x} on {stream}: {}",
                bytes[raw.unwrap()],
                String::from_utf8_lossy(bytes).escape_debug()
            );
        }
        // The text was echoed, escaped (not dropped).
        let all = [&o.stdout[..], &o.stderr[..]].concat();
        assert!(
            args.ends_with(&[RED]) || String::from_utf8_lossy(&all).contains("\\u{1b}"),
            "{args:?}: {}",
            String::from_utf8_lossy(&all)
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}
