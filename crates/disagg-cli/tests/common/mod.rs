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
