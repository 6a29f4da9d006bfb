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
