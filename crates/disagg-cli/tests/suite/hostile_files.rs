//! Hostile input files (issue 10, item 7): every input flag (`--config`, `--trace-file`,
//! `--workload-file`, `--catalogue`, `sweep --spec`, `sweep merge` inputs) against a missing
//! file, an empty file, binary garbage, a directory, a FIFO, `/dev/zero` and a file over the size
//! cap (a small cap set with `--max-input-bytes`). Each must exit with code 2 and one line on
//! stderr naming the flag and the path, without blocking (a FIFO is refused before it is opened),
//! without reading a device, without a panic, and without writing any output file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One input flag: its name in messages, and the command line that gives it `path`.
struct Flag {
    name: &'static str,
    args: fn(&str, &Path) -> Vec<String>,
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

const FLAGS: [Flag; 6] = [
    Flag {
        name: "--config",
        args: |p, _| s(&["run", "--config", p]),
    },
    Flag {
        name: "--trace-file",
        args: |p, _| s(&["run", "--trace-file", p]),
    },
    Flag {
        name: "--workload-file",
        args: |p, _| s(&["run", "--workload-file", p]),
    },
    Flag {
        name: "--catalogue",
        args: |p, _| s(&["list", "--catalogue", p]),
    },
    Flag {
        name: "--spec",
        args: |p, _| s(&["sweep", "--spec", p]),
    },
    Flag {
        name: "sweep merge",
        args: |p, out| {
            let out = out.join("merged.jsonl").display().to_string();
            s(&["sweep", "merge", p, "--jsonl", &out])
        },
    },
];

/// A fresh scratch directory for this test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("disagg-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `disagg ARGS` with stdin closed; kills it (and fails) if it has not ended after 20 s,
/// which only a blocking read would take. Returns (exit code, stdout bytes, stderr).
fn run_bounded(args: &[String]) -> (Option<i32>, usize, String) {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_disagg"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b.len()
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stderr.read_to_end(&mut b);
        String::from_utf8_lossy(&b).into_owned()
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still running after 20 s (blocked on the input?)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), out.join().unwrap(), err.join().unwrap())
}

/// Expects exit code 2 and exactly one stderr line `error: ...` naming the flag, the path and
/// containing `what`; no panic; no output file in `out`.
fn refused(flag: &Flag, path: &str, out: &Path, what: &str) {
    let args = (flag.args)(path, out);
    let (code, stdout_len, err) = run_bounded(&args);
    assert_eq!(code, Some(2), "{args:?}: {err}");
    assert_eq!(stdout_len, 0, "{args:?} printed to stdout");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for needle in [flag.name, path, what] {
        assert!(err.contains(needle), "{args:?}: '{needle}' not in: {err}");
    }
    let left: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{args:?} left files behind: {left:?}");
}

#[test]
fn every_input_flag_refuses_hostile_files() {
    let dir = scratch("files");
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    let missing = dir.join("no-such-file.toml");
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    let blank = dir.join("blank.txt");
    std::fs::write(&blank, b" \n\t\r\n").unwrap();
    let binary = dir.join("binary.bin");
    std::fs::write(&binary, b"\x7fELF\x02\x01\x00\x00\xff\xfe\x00garbage").unwrap();
    let not_utf8 = dir.join("latin1.txt");
    std::fs::write(&not_utf8, b"rate = 1\nname = \"caf\xe9\"\n").unwrap();
    let subdir = dir.join("a-directory");
    std::fs::create_dir(&subdir).unwrap();
    let link_to_dir = dir.join("link-to-dir");
    std::os::unix::fs::symlink(&subdir, &link_to_dir).unwrap();
    let fifo = dir.join("a-fifo");
    let have_fifo = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if !have_fifo {
        println!("skipped the FIFO cases: mkfifo is not available");
    }
    let shown = |p: &Path| p.display().to_string();

    for flag in &FLAGS {
        refused(flag, &shown(&missing), &out, "does not exist");
        let empty_word = if matches!(flag.name, "--trace-file" | "--workload-file") {
            "empty file: no requests"
        } else {
            "file is empty"
        };
        refused(flag, &shown(&empty), &out, empty_word);
        refused(flag, &shown(&blank), &out, empty_word);
        refused(flag, &shown(&binary), &out, "binary data");
        refused(flag, &shown(&not_utf8), &out, "UTF-8");
        refused(
            flag,
            &shown(&subdir),
            &out,
            "not a regular file (a directory)",
        );
        refused(flag, &shown(&link_to_dir), &out, "(a directory)");
        if have_fifo {
            refused(flag, &shown(&fifo), &out, "not a regular file (a FIFO)");
        }
        if Path::new("/dev/zero").exists() {
            refused(flag, "/dev/zero", &out, "(a character device)");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_input_flag_caps_the_size() {
    let dir = scratch("cap");
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    // Valid inputs of each kind, each larger than the 64-byte cap set below.
    let config = dir.join("config.toml");
    std::fs::write(&config, format!("rate = 2.0\n# {}\n", "x".repeat(100))).unwrap();
    let trace = dir.join("trace.csv");
    let mut csv = String::from("TIMESTAMP,ContextTokens,GeneratedTokens\n");
    for i in 0..10 {
        csv.push_str(&format!("2024-01-02 03:04:{i:02},100,10\n"));
    }
    std::fs::write(&trace, &csv).unwrap();
    let workload = dir.join("workload.json");
    std::fs::write(
        &workload,
        "[[0.0, 100, 10],\n [0.5, 100, 10],\n [1.0, 100, 10],\n [1.5, 100, 10]]\n",
    )
    .unwrap();
    let catalogue = dir.join("catalogue.toml");
    std::fs::write(
        &catalogue,
        format!(
            "# {}\n[links.my-link]\nbandwidth_gb_s = 10.0\n",
            "y".repeat(100)
        ),
    )
    .unwrap();
    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        format!("# {}\n[vary]\nrate = [1.0, 2.0]\n", "z".repeat(100)),
    )
    .unwrap();
    let rows = dir.join("rows.jsonl");
    std::fs::write(
        &rows,
        format!(
            "{{\"spec\": \"{}\", \"runs_total\": 1, \"run\": 0}}\n",
            "0".repeat(100)
        ),
    )
    .unwrap();
    let files = [&config, &trace, &workload, &catalogue, &spec, &rows];
    for (flag, file) in FLAGS.iter().zip(files) {
        let path = file.display().to_string();
        let mut args = (flag.args)(&path, &out);
        args.extend(s(&["--max-input-bytes", "64"]));
        let (code, stdout_len, err) = run_bounded(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(stdout_len, 0, "{args:?} printed to stdout");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        for needle in [
            flag.name,
            &path,
            "more than the limit of 64 bytes",
            "--max-input-bytes",
        ] {
            assert!(err.contains(needle), "{args:?}: '{needle}' not in: {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "{args:?}");
    }
    // The same config file passes the size check with a larger cap (a KiB suffix).
    let (code, _, err) = run_bounded(&s(&[
        "run",
        "--config",
        &config.display().to_string(),
        "--requests",
        "20",
        "--max-input-bytes",
        "1KiB",
    ]));
    assert_eq!(code, Some(0), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn max_input_bytes_takes_sizes_with_units() {
    for bad in ["0", "-5", "1.5GiB", "4GB", "lots", "2TiB"] {
        let flag = format!("--max-input-bytes={bad}");
        let (code, _, err) = run_bounded(&s(&["list", &flag]));
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{bad}: {err}");
        assert!(
            err.contains("--max-input-bytes") && err.contains(&format!("'{bad}'")),
            "{bad}: {err}"
        );
        assert!(err.contains("KiB, MiB, GiB"), "{bad}: {err}");
    }
    for good in ["1048576", "512KiB", "16MiB", "4GiB"] {
        let (code, _, err) = run_bounded(&s(&["list", "--max-input-bytes", good]));
        assert_eq!(code, Some(0), "{good}: {err}");
    }
}

#[test]
fn merge_input_with_a_huge_run_count_is_an_error() {
    // A row claiming 10^18 runs made merge allocate a slot per run (capacity overflow panic).
    let dir = scratch("merge");
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    let rows = dir.join("rows.jsonl");
    std::fs::write(
        &rows,
        "{\"spec\": \"abc\", \"runs_total\": 1000000000000000000, \"run\": 0}\n",
    )
    .unwrap();
    let merged = out.join("merged.jsonl").display().to_string();
    let (code, stdout_len, err) = run_bounded(&s(&[
        "sweep",
        "merge",
        &rows.display().to_string(),
        "--jsonl",
        &merged,
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(stdout_len, 0);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("999999999999999999 runs missing (first: 1, 2"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_value_with_a_line_break_is_one_error_line() {
    // Found by the scenario fuzz target: the message quoted the value, line break and all.
    let dir = scratch("linebreak");
    let config = dir.join("send.toml");
    std::fs::write(&config, "send = \"a\\nb\"\n").unwrap();
    let path = config.display().to_string();
    for args in [
        s(&["run", "--config", &path]),
        s(&["run", "--send", "a\nb"]),
    ] {
        let (code, stdout_len, err) = run_bounded(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(stdout_len, 0);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("'a\\nb'") && err.contains("--send"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
