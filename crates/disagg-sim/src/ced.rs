//! The decode instance of a causal encoder-decoder with the replay on decode (`docs/levers.md#ced`,
//! the reference's `CedDecodeInstance`). A child module of [`crate::plain`]: it drives the same
//! instance state as the plain decode loop.
//!
//! The prefill pool runs the encoder only and hands off every request without a first token. A
//! decode instance admits as usual (FIFO under the batch cap, `prompt + output` tokens of KV
//! reserved). Each step runs the rows that already have a token as `decode_sum` rows (`ctx +=
//! prompt + tokens_out`, `b += 1`) and, for each row admitted since the last step, the replay of
//! its last `min(prompt, W)` prompt tokens through the whole model (`ced_step`). At the step's
//! end, in running order, decoding rows gain a token (an ITL), replayed rows get their first
//! token, and rows with every token out finish and release their KV.
//!
//! Bookkeeping: a row admitted before step `j` runs gets `adm = j + 1`, the index of its first
//! decoding step, so it is a replay row in step `j` (`adm > j`) and a decoding row from then on,
//! with the ITLs and finish step of the plain loop (`adm + output - 2`, the first ITL
//! `step_end[adm] - first_token`). Rows admitted since the last step are the tail of the running
//! list; `ctx_sum` counts the decoding rows only.

use super::*;

impl<O: Observer> Sim<'_, O> {
    /// Admits from the queue, then starts the next step (`docs/levers.md#ced`); idle when nothing runs.
    pub(super) fn ced_body(&mut self, d: usize, w: u64) {
        let now = self.core.q.now();
        let j = self.decode[d].step_end.len() as u64;
        // `ctx_sum` counts the decoding rows only: a replay row joins it after its replay.
        self.admit_fifo(d, j + 1, false);
        let inst = &mut self.decode[d];
        inst.n_running = inst.running.len();
        if inst.running.is_empty() {
            inst.busy = false;
            return;
        }
        // The replays: the rows admitted since the last step, at the tail, in running order.
        let fresh = inst
            .running
            .iter()
            .rev()
            .take_while(|&&rid| self.core.reqs[rid as usize].adm > j)
            .count();
        let first = inst.running.len() - fresh;
        let replay: Vec<(u64, u64)> = inst.running[first..]
            .iter()
            .map(|&rid| {
                let p = self.core.reqs[rid as usize].prompt as u64;
                (p, p.min(w))
            })
            .collect();
        let cm = self.dcost.expect("decode pool");
        let cost = cm.ced_step(inst.ctx_sum, first as u64, &replay);
        inst.cur = cost;
        inst.step_start = now;
        inst.busy = true;
        self.core
            .q
            .schedule_in(cost.time_s, Ev::StepEnd(self.n_prefill + d as u32));
    }

    /// The end of a decode step (`docs/levers.md#ced`): accounting over the whole running list, then in running
    /// order the first tokens of the replayed rows, a token for every decoding row, and the
    /// finishes; then the next step.
    pub(super) fn ced_step_end(&mut self, d: usize) {
        let now = self.core.q.now();
        let need_one = self.need == Need::One;
        let d_idle = self.d_idle;
        let g = self.n_prefill as usize + d;
        let w = self.ced_replay.expect("a CED run");
        {
            let Sim {
                decode,
                core:
                    Core {
                        reqs,
                        books,
                        q,
                        obs,
                        ..
                    },
                ..
            } = self;
            let inst = &mut decode[d];
            let b = inst.running.len() as u64;
            inst.stats.account_cost(&inst.cur, b, d_idle);
            obs.step(&StepEvent {
                instance: g,
                kind: StepKind::Decode,
                start: inst.step_start,
                dur: inst.cur.time_s,
                batch: b as u32,
                tokens: b,
            });
            let j = inst.step_end.len() as u64;
            inst.step_end.push(now);
            let kv_used = &mut inst.kv_used;
            let ctx_sum = &mut inst.ctx_sum;
            inst.running.retain(|&rid| {
                let r = &mut reqs[rid as usize];
                let (prompt, output) = (r.prompt as u64, r.output as u64);
                let done = if r.adm > j {
                    // Replayed: its first token now (one token out).
                    r.first_token = now;
                    *ctx_sum += prompt + 1;
                    output <= 1
                } else {
                    *ctx_sum += 1;
                    r.adm + output - 2 == j
                };
                if done {
                    *kv_used -= if need_one { 1 } else { prompt + output };
                    // Its context so far: the prompt and every token out.
                    *ctx_sum -= prompt + output.max(1);
                    finish(reqs, books, q, obs, rid, now);
                }
                !done
            });
            inst.n_running = inst.running.len();
        }
        self.ced_body(d, w);
        if !self.link.mem_wait.is_empty() {
            self.serve_mem_waiters();
        }
    }
}
