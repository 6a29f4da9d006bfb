//! Memory bounded by construction (issue 24): closed-loop turns are linear in memory, and every
//! command that simulates checks the one budget (`disagg_sim::budget`) before it allocates.

use std::process::Command;

/// Runs `disagg ARGS` under an address-space limit of `kib` KiB (`ulimit -v`), with `env` set.
fn limited(kib: u64, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_disagg"))
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("runs")
}

/// 20,000 requests in two sessions of 10,000 turns: the prefix chains used to copy every earlier
/// turn into each turn's chain (10^8 segments, a 1.6 GB peak, an abort under this 1 GB limit);
/// shared per session they take a few megabytes.
#[test]
fn ten_thousand_turns_run_in_a_bounded_address_space() {
    let args = [
        "run",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--requests",
        "20000",
        "--turns",
        "10000",
        "--json",
    ];
    let o = limited(1_000_000, &args, &[]);
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["summary"]["workload"]["requests"], 20000);
    assert_eq!(v["summary"]["workload"]["closed_loop_turns"], 19998);
}

/// Each command that simulates refuses a run over the budget before it allocates: under a 1 GB
/// address-space limit, an allocation of the requests would abort instead of this one line.
#[test]
fn every_command_checks_the_budget_before_allocating() {
    let budget = [("DISAGG_MEMORY_BUDGET_BYTES", "1000000000")];
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--requests", "40000000", "--fast"],
            "--requests: 40000000 requests need about",
        ),
        (
            &["compare", "--variant", "requests=5000000"],
            "--variant requests=5000000: 5000000 requests need about",
        ),
        (
            &["compare", "--sweep-rate", "1", "2", "--requests", "5000000"],
            "--requests: 5000000 requests need about",
        ),
        (
            &["sweep", "--vary", "requests=100,5000000", "--threads", "1"],
            "run 1 (requests=5000000): 5000000 requests need about",
        ),
        (
            &["sweep", "--vary", "requests=100,1000000", "--threads", "2"],
            "requests in each of 2 runs at once need about",
        ),
        (
            &["plan", "--max-rate", "--requests", "5000000"],
            "--requests: 5000000 requests need about",
        ),
        (
            &[
                "plan",
                "--target-rate",
                "5",
                "--requests",
                "5000000",
                "--prefill-counts",
                "1",
                "--decode-counts",
                "1",
            ],
            "--requests: 5000000 requests need about",
        ),
        // Sessions and the scheduling levers hold more per request (1.5 KiB).
        (
            &["run", "--requests", "700000", "--turns", "4"],
            "--requests: 700000 requests need about 1.0 GiB",
        ),
    ];
    for (args, needle) in cases {
        let o = limited(1_000_000, args, &budget);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("more than the 954 MiB available"),
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    // A budget that is not a whole number of bytes is refused, not ignored.
    let o = limited(
        1_000_000,
        &["run", "--requests", "100"],
        &[("DISAGG_MEMORY_BUDGET_BYTES", "lots")],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "error: DISAGG_MEMORY_BUDGET_BYTES: expected a whole number of bytes, got 'lots'"
    );
    // `--yes` runs anyway where a command has it; under the budget nothing is refused.
    let o = limited(
        1_000_000,
        &["run", "--requests", "2000", "--fast", "--json"],
        &budget,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
