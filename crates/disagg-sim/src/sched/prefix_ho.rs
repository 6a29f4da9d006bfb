//! Beyond the reference: the prefix-aware hand-off (`--prefix-handoff`) and the prefix router of
//! hand-offs (`--decode-router prefix`).
//!
//! The reference's decode instances keep no prefix cache, so a hand-off always sends the whole
//! prompt's KV (`docs/levers.md#quirks` item 6). With `--prefix-handoff` every decode instance
//! keeps its own [`PrefixCache`](crate::prefix_cache::PrefixCache) (same tree, pins and LRU
//! eviction as a prefill instance's, in the decode instance's own KV memory):
//!
//! * **at the pull** (`docs/levers.md#scheduled-pools`), the decode instance looks the request's chain up in its cache as a
//!   prefill admission does (whole segments, the hit `h <= P - 1`), pins the hit segments and
//!   allocates only the rest (`admit_need(P, O, P, h)`; paged: `units(P - h)`). The transfer
//!   carries the KV of the `P - h` missing tokens only: `handoff_bytes(P - h)` (plus the draft's
//!   `(P - h) x draft bytes/token` with speculative decoding). The `h` tokens' bytes are counted
//!   as saved when the transfer lands;
//! * **at the finish** on the decode instance (`keep_on_decode`), the request's private memory is
//!   freed, then its chain's segments it does not hold yet enter the decode cache (root first,
//!   each where its parent is the previous one and there is room, evicting unpinned segments as
//!   `room` does), then, if it holds its whole chain and has an emit key, its own segment (the
//!   rest of its prompt and its reply: `P - chain tokens + O`), as colocated `emit` does. So a
//!   later turn of the session finds its history on the decode instance that served the turn
//!   before.
//!
//! `--decode-router prefix` sends a hand-off to the decode instance whose cache holds the
//! longest hit of the request's chain at hand-off time; among the tied, the reference's rule
//! (smallest load, first on ties).

use super::{Kind, SchedSim};
use crate::levers::DecodeRouter;
use crate::observer::Observer;
use crate::prefix_cache::NodeId;

impl<'a, O: Observer> SchedSim<'a, O> {
    /// The decode instance `rid`'s hand-off goes to: least-loaded (the reference), or the
    /// longest cached prefix with `--decode-router prefix`.
    pub(super) fn route_handoff(&self, rid: u32) -> usize {
        let range = self.n_prefill..self.insts.len();
        match self.lv.decode_router {
            DecodeRouter::LeastLoaded => self.least_loaded(range),
            DecodeRouter::Prefix => {
                let p = self.core.reqs[rid as usize].prompt as u64;
                let mut best = range.start;
                let mut best_key = (0u64, u64::MAX);
                for k in range {
                    let h = self.lookup_hit(k, rid, p);
                    let l = self.load(k);
                    // Longer hit first, then smaller load; the first instance on full ties.
                    if h > best_key.0 || (h == best_key.0 && l < best_key.1) {
                        best = k;
                        best_key = (h, l);
                    }
                }
                best
            }
        }
    }

    /// The segments of `rid`'s chain decode instance `d` holds for its hand-off, and their
    /// tokens (at most `P - 1`); nothing without a decode cache.
    pub(super) fn handoff_hit(&self, d: usize, rid: u32) -> (Vec<NodeId>, u64) {
        if self.insts[d].cache.is_none() {
            return (Vec::new(), 0);
        }
        let p = self.core.reqs[rid as usize].prompt as u64;
        self.lookup(d, rid, p)
    }

    /// Pins `nodes` in instance `i`'s cache now.
    pub(super) fn pin_all(&mut self, i: usize, nodes: &[NodeId]) {
        let now = self.core.q.now();
        if let Some(cache) = self.insts[i].cache.as_mut() {
            for &n in nodes {
                cache.pin(n, now);
            }
        }
    }

    /// Unpins `nodes` in instance `i`'s cache now.
    pub(super) fn unpin_all(&mut self, i: usize, nodes: &[NodeId]) {
        let now = self.core.q.now();
        if let Some(cache) = self.insts[i].cache.as_mut() {
            for &n in nodes {
                cache.unpin(n, now);
            }
        }
    }

    /// Decode instance `d` pulled `rid`'s hand-off with `nodes` (`h` tokens) hit: it holds them
    /// pinned until it finishes, and its transfer sends the rest.
    pub(super) fn took_hit(&mut self, d: usize, rid: u32, nodes: Vec<NodeId>, h: u64) {
        if self.insts[d].cache.is_none() {
            return;
        }
        let p = self.core.reqs[rid as usize].prompt as u64;
        let acc = &mut self.insts[d].acc;
        acc.ho_pulls += 1;
        acc.ho_prompt_tokens += p;
        acc.ho_hit_tokens += h;
        acc.ho_hit_pulls += (h > 0) as u64;
        let s = &mut self.rs[rid as usize];
        s.nodes = nodes;
        s.cov = h;
        s.ho_hit = h;
    }

    /// With `--prefix-handoff`, adds the KV bytes a `p`-token hand-off did not send (it sent
    /// `sent_kv` uncompressed bytes) to the link's saved bytes; nothing otherwise.
    pub(super) fn count_saved(&mut self, p: u64, sent_kv: f64) {
        if self.core.link_stats.handoff_bytes_saved.is_none() {
            return;
        }
        let full = self.transfer_of(p).kv_bytes;
        if let Some(saved) = self.core.link_stats.handoff_bytes_saved.as_mut() {
            *saved += full - sent_kv;
        }
    }

    /// At `rid`'s finish on decode instance `d` (with a cache): frees its private memory, caches
    /// the chain segments it does not hold yet, then its own segment (module docs). Its pins
    /// are released by `release` after this.
    pub(super) fn keep_on_decode(&mut self, d: usize, rid: u32) {
        debug_assert_eq!(self.insts[d].kind, Kind::Decode);
        if self.insts[d].cache.is_none() {
            return;
        }
        let Some(chains) = self.chains else {
            return;
        };
        let now = self.core.q.now();
        {
            let s = &mut self.rs[rid as usize];
            self.insts[d].used -= s.alloc;
            s.alloc = 0;
        }
        let chain = &chains.chains[rid as usize];
        let held = self.rs[rid as usize].nodes.len();
        let mut parent = self.rs[rid as usize].nodes.last().copied();
        for &(key, tokens) in chain.segments.iter().skip(held) {
            let Some(n) = self.cache_segment(d, key, tokens, parent, now) else {
                break;
            };
            let s = &mut self.rs[rid as usize];
            s.nodes.push(n);
            s.cov += tokens;
            parent = Some(n);
        }
        let Some(key) = chain.emit else {
            return;
        };
        if self.rs[rid as usize].nodes.len() != chain.segments.len() {
            return;
        }
        let r = &self.core.reqs[rid as usize];
        let tokens = r.prompt as u64 - self.rs[rid as usize].cov + r.output as u64;
        let cache = self.insts[d].cache.as_ref().expect("a cache");
        if cache.get(&key).is_some() {
            return;
        }
        if let Some(n) = self.cache_segment(d, key, tokens, parent, now) {
            self.rs[rid as usize].nodes.push(n);
        }
    }

    /// Segment `key` of `tokens` tokens under `parent` in instance `i`'s cache, pinned once
    /// more: the cached one if its parent is `parent`, else a new one if there is room for its
    /// units. `None` if cached under another parent or there is no room.
    fn cache_segment(
        &mut self,
        i: usize,
        key: u32,
        tokens: u64,
        parent: Option<NodeId>,
        now: f64,
    ) -> Option<NodeId> {
        let cache = self.insts[i].cache.as_mut().expect("a cache");
        if let Some(n) = cache.get(&key) {
            if cache.parent(n) != parent {
                return None;
            }
            cache.pin(n, now);
            return Some(n);
        }
        let u = self.insts[i].kv.units(tokens);
        if !self.room(i, u as i64) {
            return None;
        }
        Some(self.cache_insert(i, key, tokens, u, parent))
    }
}
