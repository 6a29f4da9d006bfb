//! The inter-token latency distribution (`docs/exactness.md#percentiles`), reconstructed from step ends.

use crate::engine::RunResult;
use crate::stats::Dist;

/// The ITL distribution of the measured requests, from the step-end arrays (see
/// [`crate::engine::itl`]).
pub(super) fn itl_dist(res: &RunResult, steady: &[u32]) -> Dist {
    crate::engine::itl::itl_dist(
        res.token_step_ends(),
        steady,
        |i| res.token_runs(i),
        res.sched.is_some(),
    )
}
