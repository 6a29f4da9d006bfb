//! Hostile paths (issue 24, items 7-13): an output that is an input (or another output), planted
//! symbolic links at temporary and partial files, `calibrate --out` and `--measurements` through
//! the one writer and the one reader, output FIFOs without a reader, Ctrl-C, and an output link
//! to a file that does not exist yet. Safe as root: the only device used is /dev/null, FIFOs and
//! links are made in temporary directories.

use crate::common;

use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{bad, bin, is_fifo, mkfifo, names, ok, read_fifo, s, tmp_dir};
use disagg_calib::Params;

/// Waits for `child` at most `secs` seconds (killing it and failing after).
fn wait_bounded(mut child: std::process::Child, secs: u64) -> std::process::Output {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Step times of built-in models on `a100` computed by the cost model (a fit that succeeds).
fn measurements() -> String {
    common::synthetic(&Params {
        flops_eff: 0.6,
        bw_eff: 0.7,
        step_overhead_s: 5e-3,
        per_seq_overhead_s: 5e-5,
    })
}

#[test]
fn an_output_that_is_an_input_or_another_output_is_refused() {
    let d = tmp_dir("distinct");
    let write = |name: &str, text: &str| {
        let p = d.join(name);
        fs::write(&p, text).unwrap();
        p
    };
    let trace = write(
        "in.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n",
    );
    let config = write("c.toml", "rate = 2.0\n");
    let cat = write("cat.toml", "[links.my-link]\nbandwidth_gb_s = 10.0\n");
    let workload = write("w.json", "[[0.0, 100, 10]]\n");
    let spec = write("s.toml", "[vary]\nrate = [1.0, 2.0]\n");
    let shard = write(
        "a.jsonl",
        "{\"spec\": \"x\", \"runs_total\": 1, \"run\": 0}\n",
    );
    let meas = write("m.csv", &measurements());
    let sym = d.join("sym.csv");
    std::os::unix::fs::symlink(&trace, &sym).unwrap();
    let hard = d.join("hard.csv");
    fs::hard_link(&trace, &hard).unwrap();
    let dotted = d.join("sub/../in.csv");
    fs::create_dir(d.join("sub")).unwrap();
    let x = d.join("x.out");
    let cases: Vec<(Vec<&str>, [&str; 2])> = vec![
        (
            vec![
                "run",
                "--trace-file",
                s(&trace),
                "--requests-out",
                s(&trace),
            ],
            ["--requests-out", "--trace-file"],
        ),
        (
            vec!["run", "--config", s(&config), "--requests-out", s(&config)],
            ["--requests-out", "--config"],
        ),
        (
            vec!["run", "--catalogue", s(&cat), "--requests-out", s(&cat)],
            ["--requests-out", "--catalogue"],
        ),
        (
            vec![
                "run",
                "--workload-file",
                s(&workload),
                "--trace",
                s(&workload),
            ],
            ["--trace", "--workload-file"],
        ),
        (
            vec!["sweep", "--spec", s(&spec), "--csv", s(&spec)],
            ["--csv", "--spec"],
        ),
        (
            vec!["sweep", "--spec", s(&spec), "--jsonl", s(&spec)],
            ["--jsonl", "--spec"],
        ),
        (
            vec!["sweep", "--trace-file", s(&trace), "--vary", "rate=1,2"]
                .into_iter()
                .chain(["--jsonl", s(&trace)])
                .collect(),
            ["--jsonl", "--trace-file"],
        ),
        (
            vec!["sweep", "merge", s(&shard), "--jsonl", s(&shard)],
            ["--jsonl", "sweep merge"],
        ),
        (
            vec!["calibrate", "--measurements", s(&meas), "--out", s(&meas)],
            ["--out", "--measurements"],
        ),
        (
            vec![
                "--catalogue",
                s(&cat),
                "calibrate",
                "--measurements",
                s(&meas),
            ]
            .into_iter()
            .chain(["--out", s(&cat)])
            .collect(),
            ["--out", "--catalogue"],
        ),
        // A symbolic link, a hard link and a path with `..` name the same file.
        (
            vec!["run", "--trace-file", s(&sym), "--requests-out", s(&trace)],
            ["--requests-out", "--trace-file"],
        ),
        (
            vec!["run", "--trace-file", s(&trace), "--requests-out", s(&sym)],
            ["--requests-out", "--trace-file"],
        ),
        (
            vec!["run", "--trace-file", s(&hard), "--requests-out", s(&trace)],
            ["--requests-out", "--trace-file"],
        ),
        (
            vec!["run", "--trace-file", s(&trace), "--trace", s(&dotted)],
            ["--trace", "--trace-file"],
        ),
        // Two outputs on one path: one would be lost.
        (
            vec![
                "sweep",
                "--vary",
                "rate=1,2",
                "--csv",
                s(&x),
                "--jsonl",
                s(&x),
            ],
            ["--jsonl", "--csv"],
        ),
        (
            vec!["run", "--requests-out", s(&x), "--trace", s(&x)],
            ["--trace", "--requests-out"],
        ),
    ];
    let before: Vec<(PathBuf, Vec<u8>)> = [&trace, &config, &cat, &workload, &spec, &shard, &meas]
        .iter()
        .map(|p| (p.to_path_buf(), fs::read(p).unwrap()))
        .collect();
    let listing = names(&d);
    for (args, flags) in &cases {
        bad(args, &[flags[0], flags[1]]);
        for (p, bytes) in &before {
            assert_eq!(&fs::read(p).unwrap(), bytes, "{args:?} changed {p:?}");
        }
        assert_eq!(names(&d), listing, "{args:?} left a file");
    }
    // Standard output twice and a shared character device are fine.
    ok(&[
        "sweep",
        "--requests",
        "20",
        "--vary",
        "rate=1,2",
        "--csv",
        "/dev/null",
        "--jsonl",
        "/dev/null",
        "--quiet",
    ]);
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn planted_links_at_temporary_and_partial_files_are_not_followed() {
    let d = tmp_dir("planted");
    let victim = d.join("victim");
    fs::write(&victim, "precious").unwrap();
    let meas = d.join("m.csv");
    fs::write(&meas, measurements()).unwrap();
    // The names the temporary files had: `.NAME.tmp` (calibrate) and `.NAME.PID.tmp`.
    let out = d.join("o.toml");
    std::os::unix::fs::symlink(&victim, d.join(".o.toml.tmp")).unwrap();
    ok(&["calibrate", "--measurements", s(&meas), "--out", s(&out)]);
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    assert!(fs::read_to_string(&out)
        .unwrap()
        .contains("[devices.a100-fit]"));

    // A sweep's partial file planted as a link: refused, with and without --resume, the victim
    // untouched (and not created when it does not exist).
    let jsonl = d.join("o.jsonl");
    let partial = d.join("o.jsonl.partial");
    std::os::unix::fs::symlink(&victim, &partial).unwrap();
    let sweep = [
        "sweep",
        "--requests",
        "20",
        "--vary",
        "rate=1,2",
        "--quiet",
        "--jsonl",
    ];
    for extra in [&[][..], &["--resume"]] {
        let mut args = sweep.to_vec();
        args.push(s(&jsonl));
        args.extend(extra);
        bad(
            &args,
            &[
                "--jsonl",
                "o.jsonl.partial",
                "not a regular file owned by you",
            ],
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    }
    fs::remove_file(&partial).unwrap();
    let absent = d.join("absent");
    std::os::unix::fs::symlink(&absent, &partial).unwrap();
    let mut args = sweep.to_vec();
    args.push(s(&jsonl));
    bad(&args, &["--jsonl", "not a regular file owned by you"]);
    assert!(!absent.exists() && fs::symlink_metadata(&absent).is_err());
    // A FIFO as the partial file does not block --resume.
    fs::remove_file(&partial).unwrap();
    mkfifo(&partial);
    args.push("--resume");
    let child = bin()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = wait_bounded(child, 20);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a regular file owned by you"));
    assert!(!jsonl.exists());
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn calibrate_writes_through_the_common_writer_and_last() {
    let d = tmp_dir("calibrate-out");
    let meas = d.join("m.csv");
    fs::write(&meas, measurements()).unwrap();
    let fit =
        |out: &Path| ["calibrate", "--measurements", s(&meas), "--out", s(out)].map(String::from);
    // A FIFO is written through, never replaced.
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let reader = read_fifo(&fifo);
    ok(&fit(&fifo).each_ref().map(String::as_str));
    // Checked first: a replaced FIFO never gets a writer, and its reader would wait forever.
    assert!(is_fifo(&fifo), "the FIFO was replaced");
    assert!(String::from_utf8(reader.join().unwrap())
        .unwrap()
        .contains("[devices.a100-fit]"));
    // A character device, reached through a link: stays a device.
    let null = d.join("null");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    ok(&fit(&null).each_ref().map(String::as_str));
    assert!(fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    // `-` is standard output (the overlay alone), not a file named `-`.
    let o = bin()
        .current_dir(&d)
        .args(["calibrate", "--measurements", s(&meas), "--out", "-"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("[devices.a100-fit]") && !text.contains("wrote"),
        "{text}"
    );
    assert!(!d.join("-").exists());
    // A symbolic link is followed and stays.
    let real = d.join("real.toml");
    let link = d.join("link.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    ok(&fit(&link).each_ref().map(String::as_str));
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::read_to_string(&real)
        .unwrap()
        .contains("[devices.a100-fit]"));
    // A failing --plot leaves no overlay (it is written last).
    let out = d.join("o.toml");
    let mut args = fit(&out).to_vec();
    args.extend(["--plot".into(), s(&meas).into()]);
    bad(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &["--plot"],
    );
    assert!(
        !out.exists(),
        "the overlay was written before --plot failed"
    );
    // A directory is refused up front.
    bad(
        &fit(&d).each_ref().map(String::as_str),
        &["--out", "is a directory"],
    );
    // `--out -` and `--json` cannot share standard output.
    bad(
        &[
            "calibrate",
            "--measurements",
            s(&meas),
            "--out",
            "-",
            "--json",
        ],
        &["--out -", "--json"],
    );
    let left: Vec<String> = names(&d)
        .into_iter()
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn calibrate_inputs_are_capped_and_kind_checked() {
    let d = tmp_dir("calibrate-in");
    let meas = d.join("m.csv");
    fs::write(&meas, measurements()).unwrap();
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let out = d.join("o.toml");
    for flag in ["--measurements", "--evaluate"] {
        let with = |input: &str, extra: &[&str]| {
            let mut a = vec!["calibrate", flag, input];
            if flag == "--measurements" {
                a.extend(["--out", s(&out)]);
            }
            a.extend(extra);
            a.into_iter().map(String::from).collect::<Vec<_>>()
        };
        for (input, extra, what) in [
            ("/dev/zero", &[][..], "(a character device)"),
            (s(&fifo), &[], "(a FIFO)"),
            (
                s(&meas),
                &["--max-input-bytes", "64"],
                "more than the limit of 64 bytes",
            ),
        ] {
            let args = with(input, extra);
            let child = bin()
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let o = wait_bounded(child, 20);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            for needle in [flag, input, what] {
                assert!(err.contains(needle), "{args:?}: '{needle}' not in {err}");
            }
            assert!(!out.exists());
        }
    }
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn an_output_fifo_without_a_reader_fails_after_the_timeout() {
    let d = tmp_dir("fifo-timeout");
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    for (args, flag) in [
        (
            vec!["run", "--requests", "20", "--requests-out", s(&fifo)],
            "--requests-out",
        ),
        (
            vec![
                "sweep",
                "--requests",
                "20",
                "--vary",
                "rate=1,2",
                "--quiet",
                "--jsonl",
                s(&fifo),
            ],
            "--jsonl",
        ),
    ] {
        let child = bin()
            .args(&args)
            .env("DISAGG_FIFO_TIMEOUT", "0.3")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let o = wait_bounded(child, 20);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        for needle in [flag, s(&fifo), "no process opened the FIFO", "0.3 s"] {
            assert!(err.contains(needle), "{args:?}: '{needle}' not in {err}");
        }
        assert!(is_fifo(&fifo));
    }
    assert_eq!(names(&d), ["fifo"]);
    let _ = fs::remove_dir_all(&d);
}

/// Starts a long sweep (400 runs on one thread) with `args` added and `TMPDIR` set to `tmp`, waits
/// until `ready` holds of the directory `watch`, then sends `signal`; returns the exit code.
fn interrupt(
    args: &[&str],
    tmp: &Path,
    watch: &Path,
    ready: fn(&Path) -> bool,
    signal: i32,
) -> Option<i32> {
    let rates: Vec<String> = (1..=400).map(|r| format!("{}", r as f64 / 40.0)).collect();
    let vary = format!("rate={}", rates.join(","));
    let mut child = bin()
        .args([
            "sweep",
            "--requests",
            "500",
            "--threads",
            "1",
            "--quiet",
            "--vary",
            &vary,
        ])
        .args(args)
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready(watch) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before the signal"
        );
        assert!(Instant::now() < deadline, "the file never appeared");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill(2) of the child started above.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    wait_bounded(child, 20).status.code()
}

#[test]
fn ctrl_c_removes_temporary_files_and_keeps_the_partial_file() {
    let d = tmp_dir("sigint");
    // The CSV's rows spooled in a temporary file (standard output is the CSV): removed.
    let spool = |dir: &Path| {
        names(dir)
            .iter()
            .any(|n| n.starts_with(".disagg-sweep") && n.ends_with(".tmp"))
    };
    let code = interrupt(&["--csv", "-"], &d, &d, spool, libc::SIGINT);
    assert_eq!(code, Some(130));
    assert_eq!(names(&d), Vec::<String>::new(), "a temporary file was left");
    // SIGTERM too (128 + 15).
    let code = interrupt(&["--csv", "-"], &d, &d, spool, libc::SIGTERM);
    assert_eq!(code, Some(143));
    assert_eq!(names(&d), Vec::<String>::new(), "a temporary file was left");
    // The documented FILE.partial is kept for --resume, with every finished row.
    let jsonl = d.join("o.jsonl");
    let has_row = |dir: &Path| {
        fs::read_to_string(dir.join("o.jsonl.partial")).is_ok_and(|t| t.ends_with('\n'))
    };
    let code = interrupt(&["--jsonl", s(&jsonl)], &d, &d, has_row, libc::SIGINT);
    assert_eq!(code, Some(130));
    assert_eq!(names(&d), ["o.jsonl.partial"]);
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn an_output_link_to_a_new_file_stays_a_link() {
    let d = tmp_dir("new-target");
    let link = d.join("link.csv");
    std::os::unix::fs::symlink("new.csv", &link).unwrap();
    ok(&["run", "--requests", "20", "--requests-out", s(&link)]);
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let text = fs::read_to_string(d.join("new.csv")).unwrap();
    assert!(text.starts_with("rid,arrival_s"), "{text}");
    assert_eq!(names(&d), ["link.csv", "new.csv"]);
    let _ = fs::remove_dir_all(&d);
}
