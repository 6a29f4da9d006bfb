//! Decode-priority batching (request-level batching; `docs/levers.md#batch-policies`): decode while
//! anything runs; prompts only when the running batch has drained. A prefill instance, which has
//! no decode rows, batches prefill-priority.

use super::prefill_priority::PrefillPriority;
use super::scheduler::{BatchScheduler, Formed, StepForm};

/// `--batch-policy decode-priority`.
pub(crate) struct DecodePriority;

impl BatchScheduler for DecodePriority {
    #[inline]
    fn form_step<S: StepForm>(sim: &mut S, i: usize) -> Formed {
        if sim.is_running_empty(i) {
            return PrefillPriority::form_step(sim, i);
        }
        if sim.decode_step(i) {
            Formed::Started
        } else {
            Formed::Again
        }
    }

    /// A prefill instance has no decode rows: it batches prefill-priority.
    #[inline]
    fn form_prefill_instance_step<S: StepForm>(sim: &mut S, i: usize) -> Formed {
        PrefillPriority::form_step(sim, i)
    }
}
