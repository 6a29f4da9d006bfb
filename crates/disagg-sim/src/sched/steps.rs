//! The scheduling loop of a scheduled instance and its steps (`docs/levers.md#batch-policies`, `docs/levers.md#scheduled-pools`,
//! `docs/levers.md#scheduled-pools`, `docs/levers.md#speculative`): the pass, the steps a batch policy ([`super::batch`]) forms, what a step costs,
//! and what its end does.
//!
//! A step's cost is the mixed step of `docs/levers.md#batch-policies` (or the speculative step of `docs/levers.md#speculative`); a step may carry the
//! swap debt of `docs/levers.md#paged-kv` (`docs/levers.md#scheduled-instances`).

use disagg_model::{spec_cost, Chunk, StepCost};

use super::batch::{Formed, StepForm};
use super::{Kind, SchedSim};
use crate::engine::event::Ev;
use crate::observer::{Observer, StepEvent, StepKind};

impl<'a, O: Observer> SchedSim<'a, O> {
    /// One pass of instance `i`'s loop at the current time (`docs/levers.md#scheduled-instances`): ends by starting a step or by
    /// going idle.
    pub(super) fn pass(&mut self, i: usize) {
        let (policy, prefill) = (self.insts[i].policy, self.insts[i].kind == Kind::Prefill);
        loop {
            if self.insts[i].kind == Kind::Decode {
                self.boundary_hook(i);
            }
            if !self.insts[i].swapped.is_empty() {
                self.swap_in(i);
            }
            match policy.form_step(self, i, prefill) {
                Formed::Started => return,
                Formed::Idle => {
                    self.insts[i].busy = false;
                    return;
                }
                Formed::Again => {}
            }
        }
    }

    /// Decode instance, every pass (`docs/levers.md#scheduled-pools`): pull hand-offs, then let landed requests join.
    fn boundary_hook(&mut self, d: usize) {
        if self.reserve_on_transfer {
            self.serve_handoffs();
        } else {
            self.pull(d);
        }
        let now = self.core.q.now();
        while self.insts[d].running.len() < self.insts[d].cap {
            let Some(rid) = self.insts[d].landed.pop_front() else {
                break;
            };
            self.core.reqs[rid as usize].decode_start = now;
            let s = &mut self.rs[rid as usize];
            s.dp = self.core.reqs[rid as usize].prompt as u64;
            s.base = s.n;
            self.insert_running(d, rid);
        }
    }

    /// Whole prompts up to the budget (`docs/levers.md#batch-policies` `admit`), then a prefill step on them. False if no
    /// prompt could be admitted.
    fn prefill_step(&mut self, i: usize) -> bool {
        let mut part = std::mem::take(&mut self.insts[i].part);
        part.clear();
        let mut tokens = 0u64;
        loop {
            let inst = &self.insts[i];
            if inst.running.len() >= inst.cap || !inst.swapped.is_empty() {
                break;
            }
            let Some(&rid) = inst.queue.front() else {
                break;
            };
            let tau = inst.tau;
            let tgt = self.ensure_target(rid);
            let h = self.lookup_hit(i, rid, tgt);
            if !part.is_empty() && tokens + (tgt - h) > tau {
                break;
            }
            if !self.try_admit(i) {
                break;
            }
            let s = &self.rs[rid as usize];
            let c = s.tgt - s.dp;
            part.push((rid, c));
            tokens += c;
        }
        if part.is_empty() {
            self.insts[i].part = part;
            return false;
        }
        self.insts[i].rows.clear();
        self.insts[i].part = part;
        self.start_step(i, 0);
        true
    }

    /// A decode step over every running row (`docs/levers.md#batch-policies`), after the growth check. False if the growth
    /// check left nothing running (no step started).
    fn decode_step(&mut self, i: usize) -> bool {
        self.grow(i);
        if self.insts[i].running.is_empty() {
            return false;
        }
        let mut ctx = 0u64;
        for &r in &self.insts[i].running {
            ctx += self.core.reqs[r as usize].prompt as u64 + self.rs[r as usize].n;
        }
        let inst = &mut self.insts[i];
        inst.rows.clear();
        inst.rows.extend_from_slice(&inst.running);
        inst.part.clear();
        self.start_step(i, ctx);
        true
    }

    /// Costs and starts the step formed in `rows` (decode rows, context `ctx`) and `part`
    /// (prompt chunks) (`docs/levers.md#scheduled-instances`).
    fn start_step(&mut self, i: usize, ctx: u64) {
        let now = self.core.q.now();
        // One buffer for every step's chunk list (no allocation per step).
        let mut chunks: Vec<Chunk> = std::mem::take(&mut self.chunk_buf);
        chunks.clear();
        let inst = &self.insts[i];
        let b = inst.rows.len() as u64;
        let mut computed = 0u64;
        let mut recomputed = 0u64;
        for &(r, c) in &inst.part {
            let s = &self.rs[r as usize];
            chunks.push(Chunk {
                p0: s.dp,
                c,
                last: s.dp + c == s.tgt,
            });
            computed += c;
            if s.n > 0 {
                recomputed += c;
            }
        }
        let cm = self.cost(i);
        let (mut cost, draft_s) = match (self.spec, self.draft_cost(i)) {
            (Some(sp), Some(dcm)) => spec_cost(cm, dcm, sp.gamma, ctx, b, &chunks),
            _ if cm.needs_rows() => {
                let (reqs, rs) = (&self.core.reqs, &self.rs);
                let mut rows = inst
                    .rows
                    .iter()
                    .map(|&r| reqs[r as usize].prompt as u64 + rs[r as usize].n);
                (cm.step_mixed_rows(ctx, b, &mut rows, &chunks), 0.0)
            }
            _ => (cm.step_mixed(ctx, b, &chunks), 0.0),
        };
        if inst.kind == Kind::Prefill {
            if let Some(tr) = self
                .cfg
                .kv_transit
                .as_ref()
                .filter(|t| t.at == disagg_model::CompressAt::Endpoint)
            {
                let reqs = &self.core.reqs;
                let handed = inst
                    .part
                    .iter()
                    .zip(&chunks)
                    .filter(|(&(r, _), ch)| ch.last && reqs[r as usize].output > 1)
                    .map(|(&(r, _), _)| reqs[r as usize].prompt as u64);
                cost = cm.endpoint_pass(cost, tr, handed);
            }
        }
        self.chunk_buf = chunks;
        // Occupancy over the running list before the step (`docs/levers.md#scheduled-instances` step 2).
        let mut tok = 0u64;
        let mut al = 0u64;
        for &r in &inst.running {
            let s = &self.rs[r as usize];
            tok += s.dp - s.cov + s.n - s.base;
            al += s.alloc;
        }
        let n_running = inst.running.len();
        let blk = inst.kv.block_tokens;
        debug_assert!(
            inst.used <= inst.kv.capacity,
            "instance {i}: {} units in use, capacity {}",
            inst.used,
            inst.kv.capacity
        );
        let inst = &mut self.insts[i];
        let dt = if inst.swap_t != 0.0 {
            let d = cost.time_s + inst.swap_t;
            inst.swap_t = 0.0;
            d
        } else {
            cost.time_s
        };
        inst.acc.run_area += dt * n_running as f64;
        inst.acc.tok_area += dt * tok as f64;
        inst.acc.alloc_area += dt * (al * blk) as f64;
        inst.acc.computed_tokens += computed;
        inst.acc.recompute_tokens += recomputed;
        inst.cur = cost;
        inst.dt = dt;
        inst.cur_draft = draft_s;
        inst.step_start = now;
        inst.busy = true;
        if inst.kind == Kind::Prefill {
            self.stream_chunks(i, dt);
        }
        self.core.q.schedule_in(dt, Ev::StepEnd(i as u32));
    }

    /// The end of instance `i`'s step: accounting (`docs/levers.md#scheduled-instances`), the decode rows' tokens, the chunks'
    /// progress and the prompts they complete, then the next pass.
    #[inline]
    pub(super) fn step_end(&mut self, i: usize) {
        let now = self.core.q.now();
        let rows = std::mem::take(&mut self.insts[i].rows);
        let part = std::mem::take(&mut self.insts[i].part);
        {
            let inst = &mut self.insts[i];
            let c: StepCost = inst.cur;
            let batch = (rows.len() + part.len()) as u64;
            let flops = c.flops.to_f64();
            inst.stats.account(
                inst.dt,
                flops,
                c.bytes,
                batch,
                c.compute_j,
                c.memory_j,
                c.bound,
                inst.idle_w,
            );
            inst.stats.account_comm(&c);
            inst.acc.draft_s += inst.cur_draft;
            inst.step_end.push(now);
            let prompt_tokens: u64 = part.iter().map(|&(_, c)| c).sum();
            self.core.obs.step(&StepEvent {
                instance: i,
                kind: if rows.is_empty() {
                    StepKind::Prefill
                } else {
                    StepKind::Decode
                },
                start: inst.step_start,
                dur: inst.dt,
                batch: batch as u32,
                tokens: prompt_tokens + rows.len() as u64,
            });
        }
        self.after_decode(i, &rows);
        for &(r, c) in &part {
            let s = &mut self.rs[r as usize];
            s.dp += c;
            if s.dp == s.tgt {
                self.prefill_done(i, r);
            }
        }
        self.insts[i].rows = rows;
        self.insts[i].part = part;
        self.pass(i);
    }

    /// The step index the current step end has (its position in the instance's step list).
    fn step_index(&self, i: usize) -> u32 {
        (self.insts[i].step_end.len() - 1) as u32
    }

    /// Records a token of `rid` at the current step of instance `i` that followed its previous
    /// one with a gap (an inter-token latency).
    fn record_token(&mut self, i: usize, rid: u32) {
        let j = self.step_index(i);
        let s = &mut self.rs[rid as usize];
        s.tok_inst = i as u32;
        match s.runs.last_mut() {
            Some(run) if run.1 + 1 == j => run.1 = j,
            _ => s.runs.push((j, j)),
        }
    }

    /// `after_decode` (`docs/levers.md#scheduled-instances`), or speculative acceptance (`docs/levers.md#speculative`), over `rows` in order.
    fn after_decode(&mut self, i: usize, rows: &[u32]) {
        let now = self.core.q.now();
        for &r in rows {
            let o = self.core.reqs[r as usize].output as u64;
            let m = match self.spec {
                None => 1,
                Some(sp) => {
                    let s = &mut self.rs[r as usize];
                    let a = *s
                        .rng
                        .get_or_insert_with(|| crate::speculative::seed_state(sp.seed, r as u64));
                    let (a, k) = crate::speculative::draw_accepted(a, sp.alpha, sp.gamma as u32);
                    s.rng = Some(a);
                    let m = (k as u64 + 1).min(o - s.n);
                    let acc = &mut self.insts[i].acc;
                    acc.spec_rows += 1;
                    acc.spec_tokens += m;
                    m
                }
            };
            self.record_token(i, r);
            let s = &mut self.rs[r as usize];
            s.zeros += (m - 1) as u32;
            s.n += m;
            s.last_token = now;
            if s.n >= o {
                self.remove_running(i, r);
                self.finish_row(i, r);
            }
        }
    }

    /// A (re)prefill completed on instance `i` (`docs/levers.md#scheduled-instances`, `docs/levers.md#scheduled-pools`).
    fn prefill_done(&mut self, i: usize, rid: u32) {
        let now = self.core.q.now();
        self.insert_chain(i, rid);
        let o = self.core.reqs[rid as usize].output as u64;
        if self.insts[i].kind == Kind::Prefill {
            let s = &mut self.rs[rid as usize];
            s.n = 1;
            s.last_token = now;
            self.core.reqs[rid as usize].first_token = now;
            self.remove_running(i, rid);
            if o <= 1 {
                self.release(i, rid);
                self.finish_now(rid);
            } else {
                self.hand_off(i, rid);
            }
            return;
        }
        let s = &mut self.rs[rid as usize];
        if s.n > 0 {
            self.record_token(i, rid);
            let s = &mut self.rs[rid as usize];
            s.n += 1;
            s.last_token = now;
        } else {
            s.n = 1;
            s.last_token = now;
            self.core.reqs[rid as usize].first_token = now;
        }
        let r = &mut self.core.reqs[rid as usize];
        if r.decode_start.is_nan() && o > 1 {
            r.decode_start = now;
        }
        if self.rs[rid as usize].n >= o {
            self.remove_running(i, rid);
            self.finish_row(i, rid);
        }
    }

    /// Prefill instance `p` holds `rid`'s memory until its KV has landed and, unless it is
    /// streamed (its hand-off started with its first chunk), hands it off (`docs/levers.md#scheduled-pools` step 5).
    fn hand_off(&mut self, p: usize, rid: u32) {
        let s = &mut self.rs[rid as usize];
        s.held_units = s.alloc;
        s.held_nodes = std::mem::take(&mut s.nodes);
        s.alloc = std::mem::take(&mut s.xf_dalloc);
        s.cov = 0;
        s.src = p as u32;
        if self.layers.is_some() {
            // Streamed: routed when its first chunk's first layer was ready.
            return;
        }
        self.start_hand_off(rid);
    }

    /// `rid`'s hand-off starts now: to the inbox of the decode instance [`Self::route_handoff`]
    /// picks (`docs/levers.md#scheduled-pools` step 5), or with `--reserve-kv-on transfer` to the FIFO of hand-offs waiting
    /// for decode memory. Streamed (`--send layerwise`), when its first chunk's first layer is
    /// ready; otherwise when its prompt is done.
    pub(super) fn start_hand_off(&mut self, rid: u32) {
        let now = self.core.q.now();
        self.core.reqs[rid as usize].kv_req = now;
        if self.reserve_on_transfer {
            self.handoff_wait.push_back(rid);
            self.serve_handoffs();
            return;
        }
        let d = self.route_handoff(rid);
        self.rs[rid as usize].dst = d as u32;
        self.core.reqs[rid as usize].dtarget = (d - self.n_prefill) as u32;
        self.insts[d].inbox.push_back(rid);
        self.pull(d);
    }

    /// `finish_row` (`docs/levers.md#scheduled-instances`): emit the request's own segment, release its memory, finish it. On a
    /// decode instance (which has a prefix cache only with `--prefix-handoff`) the chain's
    /// segments and its own segment enter the decode cache instead (`keep_on_decode`).
    pub(super) fn finish_row(&mut self, i: usize, rid: u32) {
        if self.insts[i].kind == Kind::Decode {
            self.keep_on_decode(i, rid);
        } else {
            self.emit(i, rid);
        }
        self.release(i, rid);
        self.finish_now(rid);
    }
}

impl<O: Observer> SchedSim<'_, O> {
    /// A chunked step (`docs/levers.md#batch-policies`). False if there is no work (the instance goes idle).
    fn chunked_step(&mut self, i: usize) -> bool {
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

impl<O: Observer> StepForm for SchedSim<'_, O> {
    #[inline]
    fn prefill_step(&mut self, i: usize) -> bool {
        SchedSim::prefill_step(self, i)
    }
    #[inline]
    fn decode_step(&mut self, i: usize) -> bool {
        SchedSim::decode_step(self, i)
    }
    #[inline]
    fn chunked_step(&mut self, i: usize) -> bool {
        SchedSim::chunked_step(self, i)
    }
    #[inline]
    fn is_running_empty(&self, i: usize) -> bool {
        self.insts[i].running.is_empty()
    }
}
