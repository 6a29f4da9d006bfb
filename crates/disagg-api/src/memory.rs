//! Will a command's runs fit? A count known before it starts is capped ([`check_count`]), and
//! its memory: every command asks the one budget of
//! [`disagg_sim::budget`] (as the server and the Python package do) before it generates a request.

use disagg_sim::budget;
use disagg_sim::SimConfig;

use crate::error::UsageError;

/// Most candidates a plan (or runs a comparison) may have without `--yes`.
pub const MAX_CANDIDATES_WITHOUT_YES: u64 = 10_000;

/// The rule of a command whose size is known before it starts (`plan --target-rate`'s
/// candidates, `compare --sweep-rate`'s runs): more than [`MAX_CANDIDATES_WITHOUT_YES`] is
/// refused without `--yes`, in one line that states the count and what to shorten.
pub fn check_count(
    command: &str,
    count: u64,
    what: &str,
    shorten: &str,
    yes: bool,
) -> Result<(), UsageError> {
    if count > MAX_CANDIDATES_WITHOUT_YES && !yes {
        return Err(UsageError(format!(
            "the {command} has {count} {what}, more than {MAX_CANDIDATES_WITHOUT_YES}: shorten {shorten}, or add --yes to run it"
        )));
    }
    Ok(())
}

/// How a command runs: `parallel` runs in memory at once; whether it has `--yes` (and its value)
/// and `--threads`, for the remedies the refusal names.
#[derive(Clone, Copy, Debug)]
pub struct Runs {
    /// Runs in memory at once.
    pub parallel: usize,
    /// `--yes`, if the command has it.
    pub yes: Option<bool>,
    /// The command has `--threads`.
    pub threads_flag: bool,
}

impl Runs {
    /// One run at a time.
    pub fn one(yes: Option<bool>) -> Runs {
        Runs {
            parallel: 1,
            yes,
            threads_flag: false,
        }
    }
}

/// Refuses a run of `cfg` whose estimated memory, times the runs that may be in memory at once,
/// exceeds what the machine has available, unless `--yes`. `flag` names where the request count
/// came from (`--requests`, `--trace-file`, `--variant requests=N`).
pub fn check(flag: &str, cfg: &SimConfig, series: bool, runs: Runs) -> Result<(), UsageError> {
    if runs.yes == Some(true) {
        return Ok(());
    }
    let need = budget::config_bytes(cfg, series).saturating_mul(runs.parallel.max(1) as u64);
    let limit = budget::machine_limit_bytes().map_err(UsageError)?;
    check_against(flag, cfg.workload.requests, series, runs, need, limit)
}

fn check_against(
    flag: &str,
    requests: u64,
    series: bool,
    runs: Runs,
    need: u64,
    limit: u64,
) -> Result<(), UsageError> {
    let Err(over) = budget::check(need, limit) else {
        return Ok(());
    };
    let parallel = runs.parallel > 1;
    let mut remedies = vec!["use fewer requests"];
    if parallel && runs.threads_flag {
        remedies.push("fewer --threads");
    }
    if runs.yes.is_some() {
        remedies.push("add --yes to run anyway");
    }
    let last = remedies.pop().unwrap_or_default();
    let remedy = if remedies.is_empty() {
        last.to_string()
    } else {
        format!("{}, or {last}", remedies.join(", "))
    };
    Err(UsageError(format!(
        "{flag}: {requests} requests{}{} need about {} of memory, more than the {} available: {remedy}",
        if series { " with --plot" } else { "" },
        if parallel {
            format!(" in each of {} runs at once", runs.parallel)
        } else {
            String::new()
        },
        budget::human_bytes(over.need_bytes),
        budget::human_bytes(over.limit_bytes),
    )))
}

/// The worker threads a parallel command uses: `--threads`, else rayon's default (all cores).
pub fn threads(given: Option<usize>) -> usize {
    given.unwrap_or_else(rayon::current_num_threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_above_the_limit_and_names_the_remedies() {
        let limit = 4u64 << 30;
        let need = |n: u64| budget::requests_bytes(n, false);
        let yes = Runs::one(Some(false));
        assert!(check_against("--requests", 1_000_000, false, yes, need(1_000_000), limit).is_ok());
        let e = check_against(
            "--requests",
            50_000_000,
            false,
            yes,
            need(50_000_000),
            limit,
        );
        assert_eq!(
            e.unwrap_err().0,
            "--requests: 50000000 requests need about 23.9 GiB of memory, more than the 4.0 GiB available: use fewer requests, or add --yes to run anyway"
        );
        let e = check_against(
            "--requests",
            50_000_000,
            false,
            Runs::one(None),
            need(50_000_000),
            limit,
        );
        assert!(e.unwrap_err().0.ends_with("available: use fewer requests"));
        let plot = budget::requests_bytes(1_000_000, true);
        assert!(check_against("--requests", 1_000_000, true, yes, plot, limit).is_err());
        // Parallel runs: named, with --threads only where the command has it.
        let runs = Runs {
            parallel: 8,
            yes: Some(false),
            threads_flag: true,
        };
        let e = check_against(
            "run 0 (requests=1000000)",
            1_000_000,
            false,
            runs,
            8 * need(1_000_000),
            1 << 30,
        );
        assert_eq!(
            e.unwrap_err().0,
            "run 0 (requests=1000000): 1000000 requests in each of 8 runs at once need about 4.1 GiB of memory, more than the 1.0 GiB available: use fewer requests, fewer --threads, or add --yes to run anyway"
        );
        let runs = Runs {
            threads_flag: false,
            ..runs
        };
        let e = check_against(
            "--requests",
            1_000_000,
            false,
            runs,
            8 * need(1_000_000),
            1 << 30,
        );
        assert!(e
            .unwrap_err()
            .0
            .ends_with("use fewer requests, or add --yes to run anyway"));
    }
}
