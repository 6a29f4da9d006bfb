//! Prefill-priority batching (vLLM v0, the reference's default; `docs/levers.md#batch-policies`): a
//! batch of whole prompts whenever the head of the queue can be admitted, else a decode step.

use super::scheduler::{BatchScheduler, Formed, StepForm};

/// `--batch-policy prefill-priority`.
pub(crate) struct PrefillPriority;

impl BatchScheduler for PrefillPriority {
    #[inline]
    fn form_step<S: StepForm>(sim: &mut S, i: usize) -> Formed {
        if sim.prefill_step(i) {
            return Formed::Started;
        }
        if sim.is_running_empty(i) {
            return Formed::Idle;
        }
        if sim.decode_step(i) {
            Formed::Started
        } else {
            Formed::Again
        }
    }
}
