//! Prefill-priority batching (vLLM v0, the reference's default; levers-scheduling.md §5.3): a
//! batch of whole prompts whenever the head of the queue can be admitted, else a decode step.

use super::{BatchPolicy, BatchScheduler, Formed, SchedSim};
use crate::observer::Observer;

/// `--batch-policy prefill-priority`.
pub(crate) struct PrefillPriority;

impl BatchScheduler for PrefillPriority {
    const ON_PREFILL_INSTANCE: BatchPolicy = BatchPolicy::PrefillPriority;

    #[inline]
    fn form_step<O: Observer>(sim: &mut SchedSim<'_, O>, i: usize) -> Formed {
        if sim.prefill_step(i) {
            return Formed::Started;
        }
        if sim.insts[i].running.is_empty() {
            return Formed::Idle;
        }
        if sim.decode_step(i) {
            Formed::Started
        } else {
            Formed::Again
        }
    }
}
