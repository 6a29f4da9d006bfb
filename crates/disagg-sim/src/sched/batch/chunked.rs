//! Chunked prefill (Sarathi-Serve stall-free batching, levers-scheduling.md §5.4): every step
//! carries the decode rows plus prompt chunks up to the token budget.

use super::{BatchPolicy, BatchScheduler, Formed, SchedSim};
use crate::observer::Observer;

/// `--batch-policy chunked`.
pub(crate) struct Chunked;

impl BatchScheduler for Chunked {
    const ON_PREFILL_INSTANCE: BatchPolicy = BatchPolicy::Chunked;

    #[inline]
    fn form_step<O: Observer>(sim: &mut SchedSim<'_, O>, i: usize) -> Formed {
        if sim.chunked_step(i) {
            Formed::Started
        } else {
            Formed::Idle
        }
    }
}

impl<O: Observer> SchedSim<'_, O> {
    /// A chunked step (§5.4). False if there is no work (the instance goes idle).
    pub(super) fn chunked_step(&mut self, i: usize) -> bool {
        self.grow(i);
        let per_row = self.spec.map_or(1, |s| s.gamma + 1);
        let mut rows = std::mem::take(&mut self.insts[i].rows);
        let mut part = std::mem::take(&mut self.insts[i].part);
        rows.clear();
        part.clear();
        let mut ctx = 0u64;
        let mut nt = 0u64;
        let tau = self.insts[i].tau;
        for &r in &self.insts[i].running {
            let s = &self.rs[r as usize];
            if s.dp >= s.tgt {
                rows.push(r);
                ctx += self.core.reqs[r as usize].prompt as u64 + s.n;
                nt += per_row;
            }
        }
        for &r in &self.insts[i].running {
            let s = &self.rs[r as usize];
            if s.dp < s.tgt && nt < tau {
                let c = (s.tgt - s.dp).min(tau - nt);
                part.push((r, c));
                nt += c;
            }
        }
        loop {
            let inst = &self.insts[i];
            if nt >= tau || inst.running.len() >= inst.cap || !inst.swapped.is_empty() {
                break;
            }
            let Some(&rid) = inst.queue.front() else {
                break;
            };
            if !self.try_admit(i) {
                break;
            }
            let s = &self.rs[rid as usize];
            let c = (s.tgt - s.dp).min(tau - nt);
            part.push((rid, c));
            nt += c;
        }
        debug_assert!(
            part.is_empty() || nt <= tau,
            "a chunked step of {nt} > {tau} tokens"
        );
        let work = !rows.is_empty() || !part.is_empty();
        self.insts[i].rows = rows;
        self.insts[i].part = part;
        if work {
            self.start_step(i, ctx);
        }
        work
    }
}
