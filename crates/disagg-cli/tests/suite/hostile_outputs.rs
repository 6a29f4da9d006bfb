//! Special output paths, failed writes, closed pipes, streaming sweeps and big plans: nothing is
//! lost, nothing is left behind, nothing panics. Safe as root: /dev/null is only reached through
//! a symbolic link inside a temporary directory, FIFOs are made in temporary directories.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bad, bin, disagg, is_fifo, mkfifo, names, ok, read_fifo, s, tmp_dir};

const RUN: [&str; 3] = ["run", "--requests", "30"];

#[test]
fn a_regular_file_is_replaced_keeping_its_permissions() {
    let d = tmp_dir("perms");
    let f = d.join("req.csv");
    fs::write(&f, "old").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
    ok(&[RUN[0], RUN[1], RUN[2], "--requests-out", s(&f)]);
    let text = fs::read_to_string(&f).unwrap();
    assert!(text.starts_with("rid,arrival_s"), "{text}");
    assert_eq!(
        fs::metadata(&f).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(names(&d), ["req.csv"], "a temporary file was left");
}

#[test]
fn a_symlink_is_followed_and_stays() {
    let d = tmp_dir("link");
    let real = d.join("real.json");
    fs::write(&real, "old").unwrap();
    let link = d.join("trace.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    ok(&[RUN[0], RUN[1], RUN[2], "--trace", s(&link)]);
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let text = fs::read_to_string(&real).unwrap();
    assert!(
        text.starts_with('{') && text.len() > 100,
        "target not written"
    );
    assert_eq!(names(&d), ["real.json", "trace.json"]);
}

#[test]
fn a_symlink_to_a_device_writes_through_it() {
    let d = tmp_dir("devnull");
    let link = d.join("out.csv");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    ok(&[RUN[0], RUN[1], RUN[2], "--requests-out", s(&link)]);
    let jl = d.join("rows.jsonl");
    std::os::unix::fs::symlink("/dev/null", &jl).unwrap();
    ok(&[
        "sweep",
        "--requests",
        "20",
        "--vary",
        "rate=2,4",
        "--jsonl",
        s(&jl),
    ]);
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::metadata("/dev/null").unwrap().permissions().mode() & 0o666 == 0o666);
    assert_eq!(names(&d), ["out.csv", "rows.jsonl"]);
}

#[test]
fn a_fifo_is_written_through_never_replaced() {
    let d = tmp_dir("fifo");
    for (args, flag) in [
        (&RUN[..], "--requests-out"),
        (&RUN[..], "--trace"),
        (
            &["sweep", "--requests", "20", "--vary", "rate=2,4"][..],
            "--jsonl",
        ),
        (
            &["sweep", "--requests", "20", "--vary", "rate=2,4"][..],
            "--csv",
        ),
    ] {
        let f = d.join(flag.trim_start_matches('-'));
        mkfifo(&f);
        let reader = read_fifo(&f);
        let mut all: Vec<&str> = args.to_vec();
        all.extend([flag, s(&f)]);
        ok(&all);
        // (Checked first: a replaced FIFO leaves its reader waiting for a writer.)
        assert!(is_fifo(&f), "{flag}: the FIFO was replaced");
        let got = reader.join().unwrap();
        assert!(
            got.len() > 50,
            "{flag}: {} bytes through the FIFO",
            got.len()
        );
    }
    assert_eq!(names(&d), ["csv", "jsonl", "requests-out", "trace"]);
}

#[test]
fn dash_is_standard_output() {
    let out = ok(&[RUN[0], RUN[1], RUN[2], "--requests-out", "-"]);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("rid,arrival_s"), "{text}");
    let rows = text.lines().filter(|l| l.split(',').count() == 10);
    assert_eq!(rows.count(), 31, "{text}");
    let rows = ok(&[
        "sweep",
        "--requests",
        "20",
        "--vary",
        "rate=2,4",
        "--jsonl",
        "-",
    ]);
    let d = tmp_dir("dash");
    let f = d.join("rows.jsonl");
    ok(&[
        "sweep",
        "--requests",
        "20",
        "--vary",
        "rate=2,4",
        "--jsonl",
        s(&f),
    ]);
    assert_eq!(rows, fs::read(&f).unwrap());
    let csv = ok(&[
        "sweep",
        "--requests",
        "20",
        "--vary",
        "rate=2,4",
        "--csv",
        "-",
    ]);
    let c = d.join("rows.csv");
    ok(&[
        "sweep",
        "--requests",
        "20",
        "--vary",
        "rate=2,4",
        "--csv",
        s(&c),
    ]);
    assert_eq!(csv, fs::read(&c).unwrap());
    assert_eq!(names(&d), ["rows.csv", "rows.jsonl"]);
    bad(&[RUN[0], RUN[1], RUN[2], "--plot", "-"], &["--plot", "'-'"]);
    assert!(!Path::new("-").exists());
}

#[test]
fn a_directory_is_refused() {
    let d = tmp_dir("dir");
    for flag in ["--requests-out", "--trace"] {
        bad(
            &[RUN[0], RUN[1], RUN[2], flag, s(&d)],
            &[flag, "is a directory"],
        );
    }
    bad(
        &["sweep", "--vary", "rate=2,4", "--jsonl", s(&d)],
        &["--jsonl", "is a directory"],
    );
    assert!(names(&d).is_empty());
}

/// Runs `disagg ARGS` with writes limited to `blocks` 512-byte blocks (RLIMIT_FSIZE) and SIGXFSZ
/// ignored, so a write past the limit fails with EFBIG like a full disk.
fn with_file_size_limit(blocks: u32, args: &[&str]) -> std::process::Output {
    let mut script = format!("ulimit -f {blocks}; trap '' XFSZ; exec \"$0\"");
    for i in 1..=args.len() {
        script.push_str(&format!(" \"${i}\""));
    }
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_disagg"))
        .args(args)
        .output()
        .expect("sh")
}

#[test]
fn a_failed_write_leaves_nothing_behind() {
    let d = tmp_dir("full");
    let jl = d.join("rows.jsonl");
    let csv = d.join("rows.csv");
    let o = with_file_size_limit(
        4,
        &[
            "sweep",
            "--requests",
            "20",
            "--vary",
            "rate=1,2,3,4,5,6,7,8",
            "--jsonl",
            s(&jl),
            "--csv",
            s(&csv),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: --jsonl: cannot write"), "{err}");
    assert!(names(&d).is_empty(), "left behind: {:?}", names(&d));
    // A run's request file too, and the plot directory it created.
    let plot = d.join("charts").join("run");
    let o = with_file_size_limit(
        4,
        &[
            "run",
            "--requests",
            "300",
            "--requests-out",
            s(&d.join("req.csv")),
            "--plot",
            s(&plot),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(names(&d).is_empty(), "left behind: {:?}", names(&d));
}

#[test]
fn a_failed_command_removes_the_plot_directory_it_created() {
    let d = tmp_dir("plotdir");
    let plot = d.join("new").join("charts");
    // The run fails after the directory was made: the trace cannot be written.
    let out = d.join("trace.json");
    fs::create_dir(&out).unwrap();
    bad(
        &[
            "run",
            "--requests",
            "20",
            "--plot",
            s(&plot),
            "--trace",
            s(&out),
        ],
        &["--trace"],
    );
    assert_eq!(names(&d), ["trace.json"]);
}

/// Runs `disagg ARGS` with standard output a pipe whose read end is closed at once.
fn closed_stdout(args: &[&str]) -> std::process::Output {
    let mut child = bin()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let d = tmp_dir("pipe");
    let trace = d.join("t.csv");
    fs::write(
        &trace,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n",
    )
    .unwrap();
    let req = d.join("req.csv");
    for args in [
        &["list"][..],
        &["run", "--requests", "2000", "--requests-out", s(&req)],
        &["handoff", "--all-links"],
        &["sweep", "--requests", "50", "--vary", "rate=1,2,3,4,5,6"],
        &["plan", "--target-rate", "2", "--requests", "100", "--quiet"],
        &["trace-stats", s(&trace)],
        &["presets"],
    ] {
        let o = closed_stdout(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: stderr: {err}");
    }
    assert_eq!(names(&d), ["req.csv", "t.csv"]);
}

#[test]
fn a_full_stdout_is_one_line_and_exit_2() {
    for args in [
        &["list"][..],
        &["run", "--requests", "30"],
        &["handoff"],
        &["sweep", "--requests", "20", "--vary", "rate=2,4"],
    ] {
        let o = bin()
            .args(args)
            .stdout(
                fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: cannot write to standard output: "),
            "{args:?}: {err}"
        );
    }
}

const SWEEP: [&str; 6] = [
    "sweep",
    "--requests",
    "40",
    "--vary",
    "rate=1,2,3,4,5,6,7,8,9,10",
    "--threads",
];

fn sweep_args<'a>(threads: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = SWEEP.to_vec();
    v.push(threads);
    v.extend(extra);
    v
}

#[test]
fn resume_keeps_finished_rows_and_runs_the_rest() {
    let d = tmp_dir("resume");
    let full = d.join("full.jsonl");
    let full_csv = d.join("full.csv");
    ok(&sweep_args(
        "3",
        &["--jsonl", s(&full), "--csv", s(&full_csv)],
    ));
    let whole = fs::read(&full).unwrap();
    let lines: Vec<&[u8]> = whole.split_inclusive(|&b| b == b'\n').collect();
    assert_eq!(lines.len(), 10);
    // An interrupted sweep: four finished rows and half of the fifth in the partial file.
    let out = d.join("out.jsonl");
    let csv = d.join("out.csv");
    let partial = d.join("out.jsonl.partial");
    let mut cut = lines[..4].concat();
    cut.extend_from_slice(&lines[4][..lines[4].len() / 2]);
    fs::write(&partial, &cut).unwrap();
    // Without --resume the partial file is not overwritten.
    bad(
        &sweep_args("2", &["--jsonl", s(&out)]),
        &["--jsonl", "out.jsonl.partial", "--resume"],
    );
    assert_eq!(fs::read(&partial).unwrap(), cut);
    ok(&sweep_args(
        "2",
        &["--jsonl", s(&out), "--csv", s(&csv), "--resume"],
    ));
    assert_eq!(fs::read(&out).unwrap(), whole);
    assert_eq!(fs::read(&csv).unwrap(), fs::read(&full_csv).unwrap());
    assert!(!partial.exists());
    // A complete file resumes to itself.
    ok(&sweep_args("1", &["--jsonl", s(&out), "--resume"]));
    assert_eq!(fs::read(&out).unwrap(), whole);
    // Rows of another sweep are refused, and kept.
    let other = d.join("other.jsonl");
    fs::write(d.join("other.jsonl.partial"), lines[..3].concat()).unwrap();
    let mut args = sweep_args("1", &["--jsonl", s(&other), "--resume"]);
    args[4] = "rate=1,2,3";
    bad(&args, &["--resume", "another sweep"]);
    assert!(d.join("other.jsonl.partial").exists());
    // --resume needs a file.
    bad(&sweep_args("1", &["--resume"]), &["--resume"]);
}

#[test]
fn an_interrupted_sweep_keeps_every_finished_row() {
    let d = tmp_dir("interrupt");
    let out = d.join("big.jsonl");
    let partial = d.join("big.jsonl.partial");
    let mut child = bin()
        .args([
            "sweep",
            "--requests",
            "400",
            "--vary",
            "rate=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20",
            "--vary",
            "seed=1,2,3,4,5,6,7,8,9,10",
            "--threads",
            "2",
            "--jsonl",
            s(&out),
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for a few rows, then kill it.
    let t0 = Instant::now();
    while fs::read(&partial).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count()) < 3 {
        if t0.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("no rows streamed to {}", partial.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.exists(), "an unfinished sweep replaced its output");
    let kept = fs::read_to_string(&partial).unwrap();
    let rows: Vec<&str> = kept.lines().filter(|l| l.ends_with('}')).collect();
    assert!(rows.len() >= 3);
    for (k, r) in rows.iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(r).unwrap();
        assert_eq!(v["run"], k as u64, "rows are in run order");
    }
}

#[test]
fn a_huge_plan_is_refused_at_once_and_the_count_stated() {
    let t0 = Instant::now();
    bad(
        &[
            "plan",
            "--target-rate",
            "10",
            "--prefill-counts",
            "1-64",
            "--decode-counts",
            "1-64",
            "--prefill-devices",
            "h100,a100,h200,b200",
            "--decode-devices",
            "h100,a100,h200,b200",
            "--links",
            "ib-ndr,eth-25g,eth-100g,nvlink4",
            "--compressions",
            "none,fp8",
        ],
        // 64 x 64 counts x 4 x 4 devices x 4 links x 2 compressions = 524288 disaggregated,
        // and 4 devices x 127 totals P + D (2..128) = 508 colocated beside them.
        &[
            "524796 candidates",
            "10000",
            "drop the 508 colocated ones (--colocated no)",
            "--yes",
        ],
    );
    assert!(t0.elapsed() < Duration::from_secs(20));
    let o = disagg(&[
        "plan",
        "--target-rate",
        "2",
        "--requests",
        "60",
        "--prefill-counts",
        "1-2",
        "--decode-counts",
        "1",
    ]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    // 2 x 1 counts x 2 x 2 devices, and 2 devices x totals 2, 3 colocated.
    assert_eq!(err, "plan: 12 candidates (4 colocated) at 2 req/s\n");
}

#[test]
fn a_run_too_big_for_memory_is_refused_before_it_starts() {
    // 50 million requests with charts need hundreds of GB by the estimate.
    let mut child = bin()
        .args(["run", "--requests", "50000000", "--plot"])
        .arg(std::env::temp_dir().join(format!("disagg-outputs-{}-mem", std::process::id())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("the run started instead of being refused");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for n in ["--requests", "50000000", "GiB", "available", "--yes"] {
        assert!(err.contains(n), "'{n}' not in {err}");
    }
    assert!(!std::env::temp_dir()
        .join(format!("disagg-outputs-{}-mem", std::process::id()))
        .exists());
}

#[test]
fn no_progress_bytes_when_stderr_is_not_a_terminal() {
    for args in [
        &["sweep", "--requests", "20", "--vary", "rate=2,4"][..],
        &["compare", "--requests", "20", "--sweep-rate", "2", "4"],
        &["run", "--requests", "20"],
        &["plan", "--target-rate", "2", "--requests", "60", "--quiet"],
    ] {
        let o = disagg(args);
        assert!(o.status.success());
        assert!(o.stderr.is_empty(), "{args:?}: {:?}", o.stderr);
    }
}

/// With stderr a terminal (`script` gives the command a pseudo-terminal), long work draws a bar
/// there; stdout is unchanged. Skipped where `script` is missing.
#[test]
fn a_terminal_gets_a_progress_bar() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` command");
        return;
    }
    let d = tmp_dir("tty");
    let out = d.join("rows.jsonl");
    let cmd = format!(
        "{} sweep --requests 10000 --vary rate=1,2,3,4,5,6,7,8 --threads 1 --jsonl {} 2>&1 >/dev/null",
        env!("CARGO_BIN_EXE_disagg"),
        s(&out)
    );
    let o = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("8 runs") && text.contains("ETA"), "{text}");
    let plain = d.join("plain.jsonl");
    ok(&[
        "sweep",
        "--requests",
        "10000",
        "--vary",
        "rate=1,2,3,4,5,6,7,8",
        "--threads",
        "1",
        "--jsonl",
        s(&plain),
    ]);
    assert_eq!(fs::read(&out).unwrap(), fs::read(&plain).unwrap());
    let quiet = cmd.replace(" --jsonl", " --quiet --jsonl");
    let o = Command::new("script")
        .args(["-qec", &quiet, "/dev/null"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).contains("ETA"));
}
