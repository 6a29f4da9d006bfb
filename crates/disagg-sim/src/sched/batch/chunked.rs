//! Chunked prefill (Sarathi-Serve stall-free batching, `docs/levers.md#batch-policies`): every step
//! carries the decode rows plus prompt chunks up to the token budget.

use super::scheduler::{BatchScheduler, Formed, StepForm};

/// `--batch-policy chunked`.
pub(crate) struct Chunked;

impl BatchScheduler for Chunked {
    #[inline]
    fn form_step<S: StepForm>(sim: &mut S, i: usize) -> Formed {
        if sim.chunked_step(i) {
            Formed::Started
        } else {
            Formed::Idle
        }
    }
}
