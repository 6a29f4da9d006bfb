//! KV memory of a scheduled instance (`docs/levers.md#kv-reservation`, `docs/levers.md#scheduled-instances`, `docs/levers.md#paged-kv`, `docs/levers.md#prefix-caching`, `docs/levers.md#scheduled-pools`): how a request
//! is admitted, how paged allocations grow and preempt (by recompute or by swap over the host
//! link), how swapped rows come back, how the prefix cache gains and loses segments, and how a
//! decode instance takes hand-offs only when it can hold them.
//!
//! Units are whole blocks (`kv.block_tokens` tokens; one token unless paged). `used` counts private
//! allocations, cached segments and (decode) the reservations of hand-offs in flight; it never
//! exceeds the capacity at a decision.

use super::{Kind, SchedSim};
use crate::observer::Observer;

impl<'a, O: Observer> SchedSim<'a, O> {
    /// Sets `rid`'s prefill target to its prompt on its first admission attempt; returns it.
    pub(super) fn ensure_target(&mut self, rid: u32) -> u64 {
        let s = &mut self.rs[rid as usize];
        if s.tgt == 0 {
            s.tgt = self.core.reqs[rid as usize].prompt as u64;
        }
        s.tgt
    }

    /// The prefix-cache segments `rid` would hit on instance `i` with prefill target `tgt`, and
    /// their tokens (`docs/levers.md#prefix-caching` `lookup`; nothing without a cache or a chain).
    pub(super) fn lookup(
        &self,
        i: usize,
        rid: u32,
        tgt: u64,
    ) -> (Vec<crate::prefix_cache::NodeId>, u64) {
        match (&self.insts[i].cache, self.chains) {
            (Some(cache), Some(ch)) => {
                let segs = &ch.chains[rid as usize].segments;
                if segs.is_empty() {
                    (Vec::new(), 0)
                } else {
                    cache.lookup(segs, tgt)
                }
            }
            _ => (Vec::new(), 0),
        }
    }

    /// The hit tokens alone (no pinning), as `admit` measures a prompt against the budget.
    pub(super) fn lookup_hit(&self, i: usize, rid: u32, tgt: u64) -> u64 {
        self.lookup(i, rid, tgt).1
    }

    /// `room(need)` (`docs/levers.md#kv-reservation`): evicts cached segments if short (even when that cannot free enough),
    /// then whether `need` more units fit.
    pub(super) fn room(&mut self, i: usize, need: i64) -> bool {
        let inst = &mut self.insts[i];
        let short = inst.used as i64 + need - inst.kv.capacity as i64;
        if short > 0 {
            if let Some(cache) = inst.cache.as_mut() {
                let freed = cache.evict(short as u64);
                inst.used -= freed;
            }
        }
        inst.used as i64 + need <= inst.kv.capacity as i64
    }

    /// `set_alloc(r, u)`: `rid` now holds `u` private units.
    fn set_alloc(&mut self, i: usize, rid: u32, u: u64) {
        let s = &mut self.rs[rid as usize];
        let inst = &mut self.insts[i];
        inst.used = inst.used + u - s.alloc;
        s.alloc = u;
    }

    /// `release(r)`: frees `rid`'s private units and unpins its segments, root first.
    pub(super) fn release(&mut self, i: usize, rid: u32) {
        let now = self.core.q.now();
        let s = &mut self.rs[rid as usize];
        self.insts[i].give_back(&mut s.alloc, &mut s.nodes, now);
        s.cov = 0;
    }

    /// Inserts segment `key` (`tokens` tokens, `u` units, under `parent`) into instance `i`'s
    /// cache at `now` and counts its units in use; returns its handle.
    pub(super) fn cache_insert(
        &mut self,
        i: usize,
        key: u32,
        tokens: u64,
        u: u64,
        parent: Option<crate::prefix_cache::NodeId>,
    ) -> crate::prefix_cache::NodeId {
        let now = self.core.q.now();
        let inst = &mut self.insts[i];
        let n = inst
            .cache
            .as_mut()
            .expect("a cache")
            .insert(key, tokens, u, parent, now);
        inst.used += u;
        n
    }

    /// What an admission allocates privately with `h` tokens hit (`docs/levers.md#kv-reservation`; a prefill instance needs
    /// the blocks of its target whatever the policy).
    fn admit_need(&self, i: usize, rid: u32, h: u64) -> u64 {
        let kv = &self.insts[i].kv;
        let r = &self.core.reqs[rid as usize];
        let tgt = self.rs[rid as usize].tgt;
        if self.insts[i].kind == Kind::Prefill {
            kv.units(tgt - h)
        } else {
            kv.admit_need(r.prompt as u64, r.output as u64, tgt, h)
        }
    }

    /// `try_admit` (`docs/levers.md#scheduled-instances`): admits the head of instance `i`'s queue if its memory (plus the
    /// watermark) can be found. A failed attempt still refreshes its segments' LRU times and may
    /// have evicted others (`docs/levers.md#quirks`).
    pub(super) fn try_admit(&mut self, i: usize) -> bool {
        let now = self.core.q.now();
        let rid = *self.insts[i].queue.front().expect("a queued request");
        let tgt = self.ensure_target(rid);
        let (nodes, h) = self.lookup(i, rid, tgt);
        let need = self.admit_need(i, rid, h);
        if let Some(cache) = self.insts[i].cache.as_mut() {
            for &n in &nodes {
                cache.pin(n, now);
            }
        }
        let wm = self.insts[i].kv.watermark;
        if !self.room(i, (need + wm) as i64) {
            if let Some(cache) = self.insts[i].cache.as_mut() {
                for &n in &nodes {
                    cache.unpin(n, now);
                }
            }
            return false;
        }
        let p = self.core.reqs[rid as usize].prompt as u64;
        let inst = &mut self.insts[i];
        inst.queue.pop_front();
        inst.queued_tokens -= p;
        let s = &mut self.rs[rid as usize];
        s.nodes = nodes;
        s.cov = h;
        s.alloc = 0;
        self.set_alloc(i, rid, need);
        let s = &mut self.rs[rid as usize];
        s.dp = h;
        s.base = s.n;
        let r = &mut self.core.reqs[rid as usize];
        if r.prefill_start.is_nan() {
            r.prefill_start = now;
            let acc = &mut self.insts[i].acc;
            acc.prompt_tokens += p;
            acc.hit_tokens += h;
            self.rs[rid as usize].hit_tokens = h;
        }
        self.insert_running(i, rid);
        true
    }

    /// Inserts `rid` into instance `i`'s running list, sorted by `(arrival, rid)`.
    pub(super) fn insert_running(&mut self, i: usize, rid: u32) {
        let pos = self.sorted_pos(&self.insts[i].running, rid);
        self.insts[i].running.insert(pos, rid);
    }

    fn sorted_pos(&self, list: &[u32], rid: u32) -> usize {
        let a = self.core.reqs[rid as usize].arrival;
        let reqs = &self.core.reqs;
        list.partition_point(|&x| {
            let ax = reqs[x as usize].arrival;
            ax < a || (ax == a && x < rid)
        })
    }

    /// Removes `rid` from instance `i`'s running list.
    pub(super) fn remove_running(&mut self, i: usize, rid: u32) {
        let run = &mut self.insts[i].running;
        let k = run.iter().position(|&x| x == rid).expect("a running row");
        run.remove(k);
    }

    /// Paged growth check before a decode or chunked step (`docs/levers.md#paged-kv`): every decoding row gets the
    /// blocks its next positions need, preempting the last rows of `running` when none are free.
    pub(super) fn grow(&mut self, i: usize) {
        if !self.insts[i].kv.policy.is_paged() {
            return;
        }
        let mut k = 0;
        while k < self.insts[i].running.len() {
            let rid = self.insts[i].running[k];
            let (p, o) = {
                let r = &self.core.reqs[rid as usize];
                (r.prompt as u64, r.output as u64)
            };
            let s = &self.rs[rid as usize];
            if s.dp < s.tgt {
                k += 1;
                continue;
            }
            let toks = self.growth_tokens(rid, p, o);
            // units(toks) <= alloc, without the division on the common path (units are
            // tokens / blk unless the model reserves by layer kind).
            let kv = &self.insts[i].kv;
            if kv.reserve.is_none() && toks <= s.alloc * kv.block_tokens {
                k += 1;
                continue;
            }
            let need = kv.units(toks);
            if need <= s.alloc {
                k += 1;
                continue;
            }
            let mut self_preempted = false;
            while !self.room(i, need as i64 - self.rs[rid as usize].alloc as i64) {
                let v = *self.insts[i].running.last().expect("a row to preempt");
                self.preempt(i, v);
                if v == rid {
                    self_preempted = true;
                    break;
                }
            }
            if !self_preempted {
                self.set_alloc(i, rid, need);
                k += 1;
            }
        }
    }

    /// The tokens a decoding row's next step needs room for (`docs/levers.md#paged-kv`): its sequence so far plus the
    /// next token (with speculative decoding, the positions a verify pass writes), less what the
    /// cache covers.
    fn growth_tokens(&self, rid: u32, p: u64, o: u64) -> u64 {
        let s = &self.rs[rid as usize];
        match self.spec {
            None => p + s.n - s.cov,
            Some(sp) => (p + s.n + sp.gamma).min(p + o) - s.cov,
        }
    }

    /// The units a decoding row's next step needs on instance `i`.
    fn growth_need(&self, i: usize, rid: u32) -> u64 {
        let r = &self.core.reqs[rid as usize];
        let toks = self.growth_tokens(rid, r.prompt as u64, r.output as u64);
        self.insts[i].kv.units(toks)
    }

    /// The host-link transfer of `units` blocks: `(bytes, seconds)` (`docs/levers.md#paged-kv`).
    fn swap_cost(&self, i: usize, units: u64) -> (f64, f64) {
        let bytes = (units * self.insts[i].kv.block_tokens) as f64 * self.kv_tok_bytes;
        (bytes, self.lv.host_link.blocks_transfer_time(units, bytes))
    }

    /// Preempts `v` (`docs/levers.md#paged-kv`): swap it out if swapping and it is decoding, else free it for a
    /// recompute from the front of the queue.
    fn preempt(&mut self, i: usize, v: u32) {
        self.remove_running(i, v);
        self.insts[i].acc.preemptions += 1;
        self.rs[v as usize].preemptions += 1;
        let s = &self.rs[v as usize];
        let swap = self.lv.preemption == crate::levers::Preemption::Swap && s.dp >= s.tgt;
        if swap {
            let a = s.alloc;
            let (bytes, t) = self.swap_cost(i, a);
            let j = self.lv.host_link.energy_j(bytes);
            let inst = &mut self.insts[i];
            inst.swap_t += t;
            inst.acc.swap_s += t;
            inst.acc.swap_out_bytes += bytes;
            inst.acc.swap_j += j;
            inst.used -= a;
            let s = &mut self.rs[v as usize];
            s.swapped_units = a;
            s.alloc = 0;
            let pos = self.sorted_pos(&self.insts[i].swapped, v);
            self.insts[i].swapped.insert(pos, v);
        } else {
            self.release(i, v);
            let p = self.core.reqs[v as usize].prompt as u64;
            let s = &mut self.rs[v as usize];
            s.tgt = p + s.n;
            s.dp = 0;
            let inst = &mut self.insts[i];
            inst.queue.push_front(v);
            inst.queued_tokens += p;
        }
    }

    /// Swap-in at the start of a pass (`docs/levers.md#paged-kv`): earliest swapped rows first, as long as their own
    /// blocks fit (no watermark, no room for growth: `docs/levers.md#quirks`'s thrash is the reference's).
    pub(super) fn swap_in(&mut self, i: usize) {
        while self.insts[i].running.len() < self.insts[i].cap {
            let Some(&rid) = self.insts[i].swapped.first() else {
                break;
            };
            let su = self.rs[rid as usize].swapped_units;
            let want = match self.lv.swap_in {
                crate::levers::SwapIn::OwnBlocks => su,
                // Its own blocks and those its next step needs (what the growth check will ask).
                crate::levers::SwapIn::NextStep => su.max(self.growth_need(i, rid)),
            };
            if !self.room(i, want as i64) {
                break;
            }
            self.insts[i].swapped.remove(0);
            let (bytes, t) = self.swap_cost(i, su);
            let j = self.lv.host_link.energy_j(bytes);
            let inst = &mut self.insts[i];
            inst.swap_t += t;
            inst.acc.swap_s += t;
            inst.acc.swap_in_bytes += bytes;
            inst.acc.swap_j += j;
            inst.used += su;
            let s = &mut self.rs[rid as usize];
            s.alloc = su;
            s.swapped_units = 0;
            self.insert_running(i, rid);
        }
    }

    /// The private units `rid` keeps when `c` of its tokens are covered by cached segments
    /// (`docs/levers.md#prefix-caching` `private`).
    fn private(&self, i: usize, rid: u32, c: u64) -> u64 {
        let s = &self.rs[rid as usize];
        let kv = &self.insts[i].kv;
        if kv.policy.is_paged() {
            let t = (s.dp + s.n) as i64 - s.base as i64 - c as i64;
            kv.units(t.max(0) as u64)
        } else {
            s.alloc + s.cov - c
        }
    }

    /// `insert_chain` at the end of a (re)prefill (`docs/levers.md#prefix-caching`): the chain's segments after those `rid`
    /// holds enter the cache (or are shared if another request computed them meanwhile), moving
    /// their memory from the request to the cache.
    pub(super) fn insert_chain(&mut self, i: usize, rid: u32) {
        if self.insts[i].cache.is_none() {
            return;
        }
        let Some(chains) = self.chains else {
            return;
        };
        let now = self.core.q.now();
        let segs = &chains.chains[rid as usize].segments;
        let held = self.rs[rid as usize].nodes.len();
        let mut parent = self.rs[rid as usize].nodes.last().copied();
        for &(key, tokens) in segs.iter().skip(held) {
            let cov = self.rs[rid as usize].cov;
            let found = self.insts[i].cache.as_ref().and_then(|c| c.get(&key));
            let node = match found {
                Some(n) => {
                    let cache = self.insts[i].cache.as_mut().expect("a cache");
                    if cache.parent(n) != parent {
                        break;
                    }
                    cache.pin(n, now);
                    n
                }
                None => {
                    let u = self.insts[i].kv.units(tokens);
                    let private = self.private(i, rid, cov + tokens);
                    let need = u as i64 + private as i64 - self.rs[rid as usize].alloc as i64;
                    if !self.room(i, need) {
                        break;
                    }
                    self.cache_insert(i, key, tokens, u, parent)
                }
            };
            let private = self.private(i, rid, cov + tokens);
            self.set_alloc(i, rid, private);
            let s = &mut self.rs[rid as usize];
            s.nodes.push(node);
            s.cov += tokens;
            parent = Some(node);
        }
    }

    /// `emit` at the finish (`docs/levers.md#prefix-caching`): the request's own segment (the rest of its prompt and its
    /// reply) enters the cache, if it holds its whole chain and there is room.
    pub(super) fn emit(&mut self, i: usize, rid: u32) {
        if self.insts[i].cache.is_none() {
            return;
        }
        let Some(chains) = self.chains else {
            return;
        };
        let chain = &chains.chains[rid as usize];
        let Some(key) = chain.emit else {
            return;
        };
        let s = &self.rs[rid as usize];
        if s.nodes.len() != chain.segments.len() {
            return;
        }
        let r = &self.core.reqs[rid as usize];
        let tokens = r.prompt as u64 - s.cov + r.output as u64;
        let u = self.insts[i].kv.units(tokens);
        if self.insts[i]
            .cache
            .as_ref()
            .is_some_and(|c| c.get(&key).is_some())
        {
            return;
        }
        if !self.room(i, u as i64 - s.alloc as i64) {
            return;
        }
        let parent = self.rs[rid as usize].nodes.last().copied();
        let n = self.cache_insert(i, key, tokens, u, parent);
        self.rs[rid as usize].nodes.push(n);
    }

    /// Decode instance `d` pulls hand-offs from its inbox while it can allocate them (plus the
    /// watermark) and nothing is swapped out; each pulled hand-off starts its transfer (`docs/levers.md#scheduled-pools`).
    pub(super) fn pull(&mut self, d: usize) {
        while self.insts[d].swapped.is_empty() {
            let Some(&rid) = self.insts[d].inbox.front() else {
                break;
            };
            // Without --prefix-handoff the decode instance has no cache: no hit, nothing pinned.
            let (nodes, h) = self.handoff_hit(d, rid);
            let need = self.admit_need(d, rid, h);
            let wm = self.insts[d].kv.watermark;
            self.pin_all(d, &nodes);
            if !self.room(d, (need + wm) as i64) {
                self.unpin_all(d, &nodes);
                break;
            }
            self.insts[d].inbox.pop_front();
            self.reserve_decode(d, rid, need);
            self.took_hit(d, rid, nodes, h);
            self.insts[d].inflight += 1;
            self.start_transfer(rid);
        }
    }

    /// `--reserve-kv-on transfer` (beyond the reference): serves the hand-offs waiting for decode
    /// memory, FIFO with head-of-line blocking. The head goes to the least-loaded decode instance
    /// (first on ties) that can allocate it now under the same test as [`Self::pull`] (its
    /// `admit_need` plus the watermark fits, nothing swapped out); that instance allocates it and
    /// its transfer starts. When none can, the head and everything behind it wait for the next
    /// decode loop pass (memory is only freed at decode step boundaries).
    pub(super) fn serve_handoffs(&mut self) {
        while let Some(&rid) = self.handoff_wait.front() {
            let Some(d) = self.pick_decode_with_room(rid) else {
                break;
            };
            self.handoff_wait.pop_front();
            self.core.reqs[rid as usize].kv_mem = self.core.q.now();
            self.rs[rid as usize].dst = d as u32;
            self.core.reqs[rid as usize].dtarget = (d - self.n_prefill) as u32;
            let need = self.admit_need(d, rid, 0);
            self.reserve_decode(d, rid, need);
            self.insts[d].inflight += 1;
            self.start_transfer(rid);
        }
    }

    /// The first decode instance with the smallest `load()` among those that could pull `rid`
    /// now: nothing swapped out and `admit_need + watermark` units free. Decode instances have no
    /// prefix cache, so the test evicts nothing.
    fn pick_decode_with_room(&mut self, rid: u32) -> Option<usize> {
        let mut best = None;
        let mut best_load = u64::MAX;
        for d in self.n_prefill..self.insts.len() {
            if !self.insts[d].swapped.is_empty() {
                continue;
            }
            let need = self.admit_need(d, rid, 0) + self.insts[d].kv.watermark;
            if !self.room(d, need as i64) {
                continue;
            }
            let l = self.load(d);
            if l < best_load {
                best_load = l;
                best = Some(d);
            }
        }
        best
    }

    /// Decode instance `d` allocates `need` units for `rid`'s hand-off. A streamed hand-off can be
    /// pulled while its prompt is still prefilling (its prefill instance not yet holding, `src`
    /// unset): `alloc` is still its prefill allocation, so the units wait in `xf_dalloc` until
    /// the prompt is done ([`Self::hand_off`]).
    fn reserve_decode(&mut self, d: usize, rid: u32, need: u64) {
        if self.rs[rid as usize].src == super::NO_INST {
            self.rs[rid as usize].xf_dalloc = need;
            self.insts[d].used += need;
        } else {
            self.rs[rid as usize].alloc = 0;
            self.set_alloc(d, rid, need);
        }
    }

    /// `free_held` (`docs/levers.md#scheduled-pools`): `rid`'s transfer landed; prefill instance `p` frees what it held.
    pub(super) fn free_held(&mut self, p: usize, rid: u32) {
        let now = self.core.q.now();
        let s = &mut self.rs[rid as usize];
        self.insts[p].give_back(&mut s.held_units, &mut s.held_nodes, now);
        self.wake(p);
    }
}
