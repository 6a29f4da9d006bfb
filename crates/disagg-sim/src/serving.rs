//! Running a configuration: the front door of the engine. [`simulate`] and its variants check the
//! workload and hand it to the plain instances ([`crate::plain`]) or, when a scheduling lever is
//! on ([`SimConfig::levers`]), to the scheduled instances ([`crate::sched`]); both run on the one
//! engine core ([`crate::engine`]) and give the same [`RunResult`].

use disagg_model::Error;

use crate::observer::Observer;
use crate::pyrand::GenRequest;
use crate::scenario::SimConfig;
use crate::workload::{ClosedLoop, Workload};

pub use crate::engine::{
    InstanceResult, InstanceStats, LinkResult, LinkStats, RequestRecord, RunResult,
};

/// Runs `cfg` on `workload` (rows in rid order; `GenRequest::rid` is ignored, the row index is the
/// rid, as the reference's `load_workload`).
///
/// Errors if an arrival time is negative or not finite, or the workload has more than
/// `u32::MAX - 1` requests.
pub fn simulate(cfg: &SimConfig, workload: &[GenRequest]) -> Result<RunResult, Error> {
    simulate_observed(cfg, workload, &mut ())
}

/// [`simulate`] with an observer.
pub fn simulate_observed<O: Observer>(
    cfg: &SimConfig,
    workload: &[GenRequest],
    obs: &mut O,
) -> Result<RunResult, Error> {
    run_requests(cfg, workload, None, None, obs)
}

/// Runs `cfg`'s own requests ([`SimConfig::requests`]: generated, sessions with closed-loop
/// turns, or a replayed trace).
pub fn simulate_config(cfg: &SimConfig) -> Result<RunResult, Error> {
    simulate_config_observed(cfg, &mut ())
}

/// [`simulate_config`] with an observer.
pub fn simulate_config_observed<O: Observer>(
    cfg: &SimConfig,
    obs: &mut O,
) -> Result<RunResult, Error> {
    let w = cfg.requests();
    simulate_workload(cfg, &w, obs)
}

/// Runs a [`Workload`]: its open-loop requests arrive at their times; a closed-loop turn is
/// released `think_s` after its predecessor finishes (or is rejected), and its arrival is then.
pub fn simulate_workload<O: Observer>(
    cfg: &SimConfig,
    w: &Workload,
    obs: &mut O,
) -> Result<RunResult, Error> {
    if let Some(c) = &w.closed {
        let n = w.requests.len();
        if c.after.len() != n || c.think_s.len() != n {
            return Err(Error::invalid(
                "workload",
                "closed-loop tables do not match the requests",
            ));
        }
        for (i, a) in c.after.iter().enumerate() {
            if a.is_some_and(|p| p as usize >= i) {
                return Err(Error::invalid(
                    "workload",
                    format!("request {i}: its predecessor must come before it"),
                ));
            }
            if !(c.think_s[i].is_finite() && c.think_s[i] >= 0.0) {
                return Err(Error::invalid(
                    "workload",
                    format!("request {i}: think time must be >= 0"),
                ));
            }
        }
    }
    let mut run = run_requests(
        cfg,
        &w.requests,
        w.closed.as_ref(),
        w.chains.as_deref(),
        obs,
    )?;
    run.clipped_prompts = w.clipped_prompts;
    Ok(run)
}

fn run_requests<O: Observer>(
    cfg: &SimConfig,
    workload: &[GenRequest],
    closed: Option<&ClosedLoop>,
    chains: Option<&crate::levers::PrefixChains>,
    obs: &mut O,
) -> Result<RunResult, Error> {
    cfg.check()?;
    if workload.len() >= u32::MAX as usize {
        return Err(Error::invalid(
            "workload",
            format!("{} requests is too many", workload.len()),
        ));
    }
    for (i, w) in workload.iter().enumerate() {
        if !(w.arrival_s.is_finite() && w.arrival_s >= 0.0) {
            return Err(Error::invalid(
                "workload",
                format!(
                    "request {i}: arrival must be a finite time >= 0, got {}",
                    w.arrival_s
                ),
            ));
        }
    }
    if cfg.levers.is_some() {
        crate::sched::run(cfg, workload, closed, chains, obs)
    } else {
        crate::plain::run(cfg, workload, closed, obs)
    }
}
