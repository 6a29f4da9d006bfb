//! Decode-priority batching (request-level batching; levers-scheduling.md §5.3): decode while
//! anything runs; prompts only when the running batch has drained. A prefill instance, which has
//! no decode rows, batches prefill-priority.

use super::prefill_priority::PrefillPriority;
use super::{BatchPolicy, BatchScheduler, Formed, SchedSim};
use crate::observer::Observer;

/// `--batch-policy decode-priority`.
pub(crate) struct DecodePriority;

impl BatchScheduler for DecodePriority {
    const ON_PREFILL_INSTANCE: BatchPolicy = BatchPolicy::PrefillPriority;

    #[inline]
    fn form_step<O: Observer>(sim: &mut SchedSim<'_, O>, i: usize) -> Formed {
        if sim.insts[i].running.is_empty() {
            return PrefillPriority::form_step(sim, i);
        }
        if sim.decode_step(i) {
            Formed::Started
        } else {
            Formed::Again
        }
    }
}
