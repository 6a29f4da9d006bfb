//! The prefix cache of one scheduled instance (`docs/levers.md#prefix-caching`–`docs/levers.md#prefix-caching`): a tree of cached
//! prompt segments, keyed by segment key, with pin counts and eviction of unpinned leaves in an
//! [`eviction`] order (least recently used, the reference's, unless `--prefix-eviction` says
//! otherwise).
//!
//! Issue 12 groundwork: the data structure alone, pinned by the spec's API-level test and by the
//! cache operations of its worked trace (`docs/exactness.md#verification`). The scheduled instances that drive it (admission,
//! `insert_chain`, `emit`, `room`) come with the scheduling levers.
//!
//! Nodes live in a slab and are named by [`NodeId`] handles, so the cache is `Send` and a request
//! holds plain indices. The eviction candidates (unpinned leaves) are kept exactly, ordered by
//! the eviction order's key and then the insertion counter `seq`; for LRU that is `(last, seq)`:
//! the reference's lazy heap with stale entries gives the same order (`docs/levers.md#prefix-caching`).

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

pub mod eviction;

pub use eviction::PrefixEviction;
use eviction::Usage;

/// A handle on a cached segment. Valid while the segment is cached; a segment pinned by a request
/// is never evicted, so the handles a request holds stay valid until it unpins them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(u32);

#[derive(Clone, Debug)]
struct Node<K> {
    key: K,
    tokens: u64,
    units: u64,
    parent: Option<NodeId>,
    children: u32,
    refs: u32,
    last_s: f64,
    hits: u64,
    cached: bool,
}

impl<K> Node<K> {
    fn is_candidate(&self) -> bool {
        self.cached && self.refs == 0 && self.children == 0
    }

    /// Its place in eviction order `e`: the order's key, then the spec's insertion counter
    /// `seq`, which is the node's handle (the slab never reuses a slot).
    #[inline]
    fn order(&self, e: PrefixEviction, id: NodeId) -> (u64, u64, NodeId) {
        let (a, b) = e.key(&Usage {
            last_s: self.last_s,
            hits: self.hits,
        });
        (a, b, id)
    }
}

/// The prefix cache: segments keyed by `K` (unique keys), each with its token count and the units
/// it occupies in the instance's KV memory.
#[derive(Clone, Debug)]
pub struct PrefixCache<K> {
    nodes: Vec<Node<K>>,
    by_key: HashMap<K, NodeId>,
    candidates: BTreeSet<(u64, u64, NodeId)>,
    eviction: PrefixEviction,
    cached_tokens: u64,
    cached_units: u64,
    evicted_tokens: u64,
    evicted_units: u64,
}

impl<K: Eq + Hash + Clone> Default for PrefixCache<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash + Clone> PrefixCache<K> {
    /// An empty cache (insertion counter at 0) evicting least recently used first.
    pub fn new() -> Self {
        Self::with_eviction(PrefixEviction::Lru)
    }

    /// An empty cache evicting in order `eviction`.
    pub fn with_eviction(eviction: PrefixEviction) -> Self {
        PrefixCache {
            nodes: Vec::new(),
            by_key: HashMap::new(),
            candidates: BTreeSet::new(),
            eviction,
            cached_tokens: 0,
            cached_units: 0,
            evicted_tokens: 0,
            evicted_units: 0,
        }
    }

    fn node(&self, id: NodeId) -> &Node<K> {
        let n = &self.nodes[id.0 as usize];
        debug_assert!(n.cached, "node {id:?} is no longer cached");
        n
    }

    /// Applies `f` to node `id`, keeping the candidate set exact.
    fn update(&mut self, id: NodeId, f: impl FnOnce(&mut Node<K>)) {
        let e = self.eviction;
        let n = &mut self.nodes[id.0 as usize];
        if n.is_candidate() {
            self.candidates.remove(&n.order(e, id));
        }
        f(n);
        if n.is_candidate() {
            self.candidates.insert(n.order(e, id));
        }
    }

    /// The cached segment with key `key`.
    pub fn get(&self, key: &K) -> Option<NodeId> {
        self.by_key.get(key).copied()
    }

    /// `match(chain)`: the cached segments of `chain` from its root, up to the first key that is
    /// not cached (matching is by key).
    pub fn match_chain(&self, chain: &[(K, u64)]) -> Vec<NodeId> {
        chain.iter().map_while(|(k, _)| self.get(k)).collect()
    }

    /// `lookup`: the hit of a request whose prefill target is `target_tokens`, as whole segments:
    /// the matched segments, dropping the last while their tokens exceed `target_tokens - 1` (the
    /// last prompt token is always computed). Returns the segments and their tokens.
    pub fn lookup(&self, chain: &[(K, u64)], target_tokens: u64) -> (Vec<NodeId>, u64) {
        let mut nodes = self.match_chain(chain);
        let mut hit: u64 = nodes.iter().map(|&n| self.node(n).tokens).sum();
        while let Some(&last) = nodes.last() {
            if hit < target_tokens {
                break;
            }
            hit -= self.node(last).tokens;
            nodes.pop();
        }
        (nodes, hit)
    }

    /// `ref`: pins segment `id` at time `now_s` (a hit, for the orders that count them).
    pub fn pin(&mut self, id: NodeId, now_s: f64) {
        self.update(id, |n| {
            n.refs += 1;
            n.hits += 1;
            n.last_s = now_s;
        });
    }

    /// `unref`: unpins segment `id` at time `now_s` (an unpinned leaf becomes evictable).
    pub fn unpin(&mut self, id: NodeId, now_s: f64) {
        self.update(id, |n| {
            assert!(n.refs > 0, "unpin of an unpinned segment");
            n.refs -= 1;
            n.last_s = now_s;
        });
    }

    /// `insert`: caches a new segment under `parent` (a root if `None`), pinned once by the
    /// request that computed it, at time `now_s`. The key must not be cached. (The caller counts
    /// `units` in the instance's memory.)
    pub fn insert(
        &mut self,
        key: K,
        tokens: u64,
        units: u64,
        parent: Option<NodeId>,
        now_s: f64,
    ) -> NodeId {
        assert!(self.get(&key).is_none(), "segment key inserted twice");
        let id = NodeId(u32::try_from(self.nodes.len()).expect("fewer than 2^32 insertions"));
        if let Some(p) = parent {
            self.update(p, |n| n.children += 1);
        }
        self.nodes.push(Node {
            key: key.clone(),
            tokens,
            units,
            parent,
            children: 0,
            refs: 1,
            last_s: now_s,
            hits: 0,
            cached: true,
        });
        self.by_key.insert(key, id);
        self.cached_tokens += tokens;
        self.cached_units += units;
        id
    }

    /// `evict(want)`: removes unpinned leaves in the cache's eviction order (LRU: smallest
    /// `(last, seq)`), until at least `want` units are freed or none is left; a parent left
    /// without children and unpinned is a candidate in the same call. Returns the units freed
    /// (whole segments: it may exceed `want`).
    pub fn evict(&mut self, want: u64) -> u64 {
        let mut freed = 0;
        while freed < want {
            let Some(&(_, _, id)) = self.candidates.first() else {
                break;
            };
            self.update(id, |n| n.cached = false);
            let n = &self.nodes[id.0 as usize];
            let (tokens, units, parent) = (n.tokens, n.units, n.parent);
            self.by_key.remove(&n.key);
            freed += units;
            self.cached_tokens -= tokens;
            self.cached_units -= units;
            self.evicted_tokens += tokens;
            self.evicted_units += units;
            if let Some(p) = parent {
                self.update(p, |n| n.children -= 1);
            }
        }
        freed
    }

    /// The eviction order.
    pub fn eviction(&self) -> PrefixEviction {
        self.eviction
    }

    /// How many times segment `id` was pinned after its insertion (its hits).
    pub fn hits(&self, id: NodeId) -> u64 {
        self.node(id).hits
    }

    /// The tokens of segment `id`.
    pub fn tokens(&self, id: NodeId) -> u64 {
        self.node(id).tokens
    }

    /// The units of segment `id`.
    pub fn units(&self, id: NodeId) -> u64 {
        self.node(id).units
    }

    /// The parent of segment `id`.
    pub fn parent(&self, id: NodeId) -> Option<NodeId> {
        self.node(id).parent
    }

    /// How many requests pin segment `id`.
    pub fn refs(&self, id: NodeId) -> u32 {
        self.node(id).refs
    }

    /// Segments cached now.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether no segment is cached.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Tokens of the segments cached now (`cached_tokens_end` at the end of a run).
    pub fn cached_tokens(&self) -> u64 {
        self.cached_tokens
    }

    /// Units of the segments cached now.
    pub fn cached_units(&self) -> u64 {
        self.cached_units
    }

    /// Tokens evicted so far.
    pub fn evicted_tokens(&self) -> u64 {
        self.evicted_tokens
    }

    /// Units evicted so far.
    pub fn evicted_units(&self) -> u64 {
        self.evicted_units
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(segs: &[(&'static str, u64)]) -> Vec<(&'static str, u64)> {
        segs.to_vec()
    }

    #[test]
    fn lru_order_of_the_reference_unit_test() {
        // `docs/exactness.md#verification`, "LRU order at the API level": a (10, root, 0.0), b (20,
        // child of a, 1.0), d (30, root, 2.0); unpin a at 3.0, b at 4.0, d at 3.5.
        let mut c = PrefixCache::new();
        let a = c.insert("a", 10, 10, None, 0.0);
        let b = c.insert("b", 20, 20, Some(a), 1.0);
        let d = c.insert("d", 30, 30, None, 2.0);
        c.unpin(a, 3.0);
        c.unpin(b, 4.0);
        c.unpin(d, 3.5);
        assert_eq!(c.cached_units(), 60);
        // evict(1) frees 30: d (b is newer, a has a child).
        assert_eq!(c.evict(1), 30);
        assert_eq!(c.get(&"d"), None);
        // Pin b at 5.0: nothing can go.
        c.pin(b, 5.0);
        assert_eq!(c.evict(100), 0);
        // Unpin b at 6.0: b goes, then a (a leaf now, last 3.0): 30 units.
        c.unpin(b, 6.0);
        assert_eq!(c.evict(100), 30);
        assert!(c.is_empty());
        assert_eq!(c.evicted_tokens(), 60);
        assert_eq!(c.evicted_units(), 60);
        assert_eq!(c.cached_tokens(), 0);
    }

    /// Two unpinned roots: `hot` (inserted first, hit twice, last used at 2.0) and `cold` (never
    /// hit, last used at 3.0). LRU evicts `hot` (older), LFU `cold` (fewer hits), FIFO `hot`
    /// (inserted first).
    fn hot_and_cold(e: PrefixEviction) -> PrefixCache<&'static str> {
        let mut c = PrefixCache::with_eviction(e);
        let hot = c.insert("hot", 10, 10, None, 0.0);
        let cold = c.insert("cold", 20, 20, None, 0.5);
        c.unpin(hot, 0.5);
        c.pin(hot, 1.0);
        c.unpin(hot, 1.5);
        c.pin(hot, 1.8);
        c.unpin(hot, 2.0);
        c.unpin(cold, 3.0);
        assert_eq!((c.hits(hot), c.hits(cold)), (2, 0));
        c
    }

    #[test]
    fn lfu_evicts_the_least_hit_leaf_first() {
        let mut c = hot_and_cold(PrefixEviction::Lfu);
        assert_eq!(c.evict(1), 20, "cold: no hits");
        assert_eq!(c.get(&"cold"), None);
        let mut c = hot_and_cold(PrefixEviction::Lru);
        assert_eq!(c.evict(1), 10, "hot: least recently used");
        assert_eq!(c.get(&"hot"), None);
        let mut c = hot_and_cold(PrefixEviction::Fifo);
        assert_eq!(c.evict(1), 10, "hot: inserted first");
        // LFU ties by the LRU order: equal hits, the older last use goes first.
        let mut c = PrefixCache::with_eviction(PrefixEviction::Lfu);
        let a = c.insert("a", 1, 1, None, 0.0);
        let b = c.insert("b", 1, 2, None, 0.0);
        c.unpin(b, 1.0);
        c.unpin(a, 2.0);
        assert_eq!(c.evict(1), 2, "b: same hits, used before a");
        assert_eq!(c.eviction(), PrefixEviction::Lfu);
    }

    /// A run with reuse (multi-turn chat on 50 shared system prompts, a cache too small for all):
    /// `--prefix-eviction lfu` keeps the hot system prompts and hits more than `lru`, while an
    /// explicit `lru` is the default, echo included.
    #[test]
    fn a_run_with_reuse_differs_under_lfu_and_lru_is_the_default() {
        let cat = disagg_model::Catalogue::builtin();
        let base = crate::presets::find("prefix-multiturn-long-on")
            .unwrap()
            .scenario;
        let run = |eviction: Option<&str>| {
            let mut sc = base.clone();
            sc.set("system_prompts", "50").unwrap();
            sc.set("system_len", "1500").unwrap();
            if let Some(e) = eviction {
                sc.set("prefix_eviction", e).unwrap();
            }
            let cfg = sc.build(&cat).unwrap();
            let s = crate::simulate_config(&cfg).unwrap().summary();
            let json = serde_json::to_string(&s).unwrap();
            let pc = s.scheduler.as_ref().unwrap().prefix_cache.clone().unwrap();
            (json, sc.echo_value(), pc.hit_tokens)
        };
        let (default, default_echo, default_hits) = run(None);
        let (lru, lru_echo, _) = run(Some("lru"));
        assert_eq!(lru, default);
        assert_eq!(lru_echo, default_echo);
        assert!(default_echo.get("prefix_eviction").is_none());
        let (lfu, lfu_echo, lfu_hits) = run(Some("lfu"));
        assert_ne!(lfu, default);
        assert!(lfu_hits > default_hits, "{lfu_hits} <= {default_hits}");
        assert_eq!(lfu_echo["prefix_eviction"], "lfu");
    }

    #[test]
    fn lookup_takes_whole_segments_and_leaves_the_last_prompt_token() {
        let mut c = PrefixCache::new();
        let s = c.insert("sys", 4000, 4000, None, 0.0);
        let t = c.insert("t0", 700, 700, Some(s), 1.0);
        let ch = chain(&[("sys", 4000), ("t0", 700), ("t1", 300)]);
        // 4700 cached tokens <= 5000 - 1: both segments hit; t1 is not cached.
        assert_eq!(c.lookup(&ch, 5000), (vec![s, t], 4700));
        // 4700 <= 4701 - 1 still hits both; at 4700 the last segment is dropped whole.
        assert_eq!(c.lookup(&ch, 4701), (vec![s, t], 4700));
        assert_eq!(c.lookup(&ch, 4700), (vec![s], 4000));
        // A segment that would cover the whole target is no hit at all.
        assert_eq!(c.lookup(&ch, 4000), (vec![], 0));
        assert_eq!(c.lookup(&ch[..1], 4001), (vec![s], 4000));
        // Matching stops at the first absent key, even if a later one is cached.
        assert_eq!(
            c.lookup(&chain(&[("x", 1), ("t0", 700)]), 9999),
            (vec![], 0)
        );
        assert_eq!(c.lookup(&[], 100), (vec![], 0));
    }

    #[test]
    fn equal_times_evict_the_oldest_insertion_first() {
        let mut c = PrefixCache::new();
        let x = c.insert("x", 1, 2, None, 0.0);
        let y = c.insert("y", 1, 3, None, 0.0);
        c.unpin(y, 5.0);
        c.unpin(x, 5.0);
        // Same last (5.0): x (seq 0) before y (seq 1), whatever the unpin order.
        assert_eq!(c.evict(1), 2);
        assert_eq!(c.get(&"x"), None);
        assert_eq!(c.get(&"y"), Some(y));
        // A re-inserted key is a new segment with a new sequence number.
        let x2 = c.insert("x", 1, 4, None, 5.0);
        c.unpin(x2, 5.0);
        assert_eq!(c.evict(1), 3, "y (seq 1) before the new x (seq 2)");
        assert_eq!(c.evict(1), 4);
        assert_eq!(c.evicted_units(), 9);
    }

    #[test]
    fn a_negative_zero_time_is_the_same_time_as_zero() {
        // x unpinned at -0.0 (inserted first), y at +0.0: one time, so x goes first.
        let mut c = PrefixCache::new();
        let x = c.insert("x", 1, 1, None, 0.0);
        let y = c.insert("y", 1, 2, None, 0.0);
        c.unpin(y, 0.0);
        c.unpin(x, -0.0);
        assert_eq!(c.evict(1), 1);
        assert_eq!(c.get(&"y"), Some(y));
    }

    #[test]
    fn accessors_report_each_segment_and_the_totals() {
        let mut c = PrefixCache::new();
        assert!(c.is_empty());
        let a = c.insert("a", 10, 2, None, 0.0);
        let b = c.insert("b", 33, 3, Some(a), 0.0);
        assert!(!c.is_empty());
        assert_eq!((c.tokens(a), c.units(a), c.parent(a)), (10, 2, None));
        assert_eq!((c.tokens(b), c.units(b), c.parent(b)), (33, 3, Some(a)));
        assert_eq!((c.cached_tokens(), c.cached_units()), (43, 5));
        c.unpin(b, 1.0);
        assert_eq!(c.evict(1), 3);
        assert_eq!((c.cached_tokens(), c.cached_units()), (10, 2));
        assert_eq!((c.evicted_tokens(), c.evicted_units()), (33, 3));
    }

    #[test]
    fn a_pinned_segment_or_one_with_children_stays() {
        let mut c = PrefixCache::new();
        let a = c.insert("a", 5, 5, None, 0.0);
        let b = c.insert("b", 5, 5, Some(a), 0.0);
        c.unpin(a, 1.0);
        assert_eq!(c.evict(1), 0, "a has a child, b is pinned");
        assert_eq!((c.refs(a), c.refs(b)), (0, 1));
        c.pin(b, 2.0);
        c.unpin(b, 3.0);
        assert_eq!(c.refs(b), 1);
        assert_eq!(c.evict(1), 0);
        c.unpin(b, 4.0);
        // evict frees whole segments: asking for 1 unit frees b's 5.
        assert_eq!(c.evict(1), 5);
        assert_eq!(c.len(), 1);
        assert_eq!(c.cached_tokens(), 5);
    }

    /// The cache operations of the worked trace of `docs/exactness.md#verification` (one OPT-13B instance, oracle policy,
    /// so a segment's units are its tokens), at the trace's times; the instance's decisions (who
    /// is admitted when, how much to evict) are taken from the trace.
    #[test]
    fn worked_trace_of_section_13_2() {
        let mut c = PrefixCache::new();
        // 0.7222782153846153: r0's prefill ends, sys0 (4000) inserted, pinned by r0.
        let sys0 = c.insert("sys0", 4000, 4000, None, 0.7222782153846153);
        // 1.6005126332867132: r2's prefill ends, sys1 (5000).
        let sys1 = c.insert("sys1", 5000, 5000, None, 1.6005126332867132);
        // 7.131845377209543: r0 finishes: emit s0t0 (700, parent sys0), release root first.
        let t = 7.131845377209543;
        let s0t0 = c.insert("s0t0", 700, 700, Some(sys0), t);
        c.unpin(sys0, t);
        c.unpin(s0t0, t);
        // 8.150482240489286: r1 admitted, hit sys0 + s0t0 = 4700 of its 5000-token prompt.
        let t = 8.150482240489286;
        let r1 = chain(&[("sys0", 4000), ("s0t0", 700)]);
        let (hit, h) = c.lookup(&r1, 5000);
        assert_eq!((hit.clone(), h), (vec![sys0, s0t0], 4700));
        hit.iter().for_each(|&n| c.pin(n, t));
        // 9.86607893824298: r2 finishes: emit s1t0 (700, parent sys1).
        let t = 9.86607893824298;
        let s1t0 = c.insert("s1t0", 700, 700, Some(sys1), t);
        c.unpin(sys1, t);
        c.unpin(s1t0, t);
        // 10.845633778114362: r1 finishes: emit s0t1 (400, parent s0t0).
        let t = 10.845633778114362;
        let s0t1 = c.insert("s0t1", 400, 400, Some(s0t0), t);
        for n in [sys0, s0t0, s0t1] {
            c.unpin(n, t);
        }
        assert_eq!(c.cached_tokens(), 4000 + 5000 + 700 + 700 + 400);
        // 30.0: r3 needs 6050, short = 10800 + 6050 - 11969 = 4881: s1t0 goes, then sys1 (a
        // leaf now, (9.866..., seq 1) before s0t1 (10.845..., seq 4)): 5700 freed.
        assert_eq!(c.evict(4881), 5700);
        assert_eq!((c.get(&"s1t0"), c.get(&"sys1")), (None, None));
        // 30.98435347132867: sys2 (3000); 31.009449169335102: r4 hits sys0 (4000 <= 4001 - 1).
        let sys2 = c.insert("sys2", 3000, 3000, None, 30.98435347132867);
        let (hit, h) = c.lookup(&chain(&[("sys0", 4000)]), 4001);
        assert_eq!((hit, h), (vec![sys0], 4000));
        c.pin(sys0, 31.009449169335102);
        // 31.56036843570166: r4 finishes, no emit key: sys0 unpinned.
        c.unpin(sys0, 31.56036843570166);
        // 32.288792979495874: r3 finishes: emit s2t0 (3050, parent sys2).
        let t = 32.288792979495874;
        let s2t0 = c.insert("s2t0", 3050, 3050, Some(sys2), t);
        c.unpin(sys2, t);
        c.unpin(s2t0, t);
        // 40.0: r5's 4000-token prompt: sys0 would cover it all: capped, no hit, not pinned.
        assert_eq!(c.lookup(&chain(&[("sys0", 4000)]), 4000), (vec![], 0));
        // need 4020, short 3201: s0t1, s0t0, then sys0 (31.56..., older than s2t0): 5100.
        assert_eq!(c.evict(3201), 5100);
        // 40.637306743123546: sys0 inserted again (a new segment); 41.089...: r5 releases it.
        let sys0b = c.insert("sys0", 4000, 4000, None, 40.637306743123546);
        assert_ne!(sys0b, sys0);
        c.unpin(sys0b, 41.08921381810747);
        // End state: {sys2, s2t0, sys0} = 10,050 tokens; 10,800 evicted.
        assert_eq!(c.len(), 3);
        assert_eq!(c.cached_tokens(), 10_050);
        assert_eq!(c.evicted_tokens(), 10_800);
    }

    /// The spec's `docs/levers.md#prefix-caching` text, literally: a list of segments, eviction by a linear scan for the
    /// unpinned leaf with the smallest `(last, seq)`.
    #[derive(Default)]
    struct Naive {
        // (key, tokens, parent key, refs, last, seq)
        segs: Vec<(u32, u64, Option<u32>, u32, f64, u64)>,
        seq: u64,
    }

    impl Naive {
        fn children(&self, key: u32) -> usize {
            self.segs.iter().filter(|s| s.2 == Some(key)).count()
        }
        fn evict(&mut self, want: u64) -> (u64, Vec<u32>) {
            let (mut freed, mut gone) = (0, vec![]);
            while freed < want {
                let best = (0..self.segs.len())
                    .filter(|&i| self.segs[i].3 == 0 && self.children(self.segs[i].0) == 0)
                    .min_by(|&i, &j| {
                        let (a, b) = (&self.segs[i], &self.segs[j]);
                        a.4.partial_cmp(&b.4).unwrap().then(a.5.cmp(&b.5))
                    });
                let Some(i) = best else { break };
                let s = self.segs.remove(i);
                freed += s.1;
                gone.push(s.0);
            }
            (freed, gone)
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Insert key (if absent) under the cached key `parent % len` or as a root.
        Insert {
            key: u32,
            tokens: u64,
            parent: Option<usize>,
        },
        Pin(usize),
        Unpin(usize),
        Evict(u64),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0u32..12, 1u64..50, proptest::option::of(0usize..16)).prop_map(
                |(key, tokens, parent)| Op::Insert {
                    key,
                    tokens,
                    parent
                }
            ),
            (0usize..16).prop_map(Op::Pin),
            (0usize..16).prop_map(Op::Unpin),
            (0u64..120).prop_map(Op::Evict),
        ]
    }

    proptest::proptest! {
        /// Random operations give the same evictions, in the same order, as the spec's text; no
        /// pinned segment or segment with children is ever evicted; the token counts add up.
        #[test]
        fn agrees_with_the_spec_text(ops in proptest::collection::vec(op(), 1..80)) {
            let mut c = PrefixCache::new();
            let mut n = Naive::default();
            let mut t = 0.0;
            for o in ops {
                // Times advance by 0 or 0.5: ties on `last` are common.
                t += if n.seq % 2 == 0 { 0.5 } else { 0.0 };
                let keys: Vec<u32> = n.segs.iter().map(|s| s.0).collect();
                match o {
                    Op::Insert { key, tokens, parent } => {
                        if c.get(&key).is_some() {
                            continue;
                        }
                        let p = parent.filter(|_| !keys.is_empty()).map(|i| keys[i % keys.len()]);
                        c.insert(key, tokens, tokens, p.and_then(|k| c.get(&k)), t);
                        n.segs.push((key, tokens, p, 1, t, n.seq));
                        n.seq += 1;
                    }
                    Op::Pin(i) | Op::Unpin(i) if !keys.is_empty() => {
                        let k = keys[i % keys.len()];
                        let s = n.segs.iter_mut().find(|s| s.0 == k).unwrap();
                        if matches!(o, Op::Pin(_)) {
                            c.pin(c.get(&k).unwrap(), t);
                            s.3 += 1;
                        } else if s.3 > 0 {
                            c.unpin(c.get(&k).unwrap(), t);
                            s.3 -= 1;
                        } else {
                            continue;
                        }
                        s.4 = t;
                    }
                    Op::Evict(want) => {
                        let before: Vec<(u32, u32, usize)> = n
                            .segs
                            .iter()
                            .map(|s| (s.0, s.3, n.children(s.0)))
                            .collect();
                        let cached_before: Vec<u32> = before.iter().map(|b| b.0).collect();
                        let (freed, gone) = n.evict(want);
                        proptest::prop_assert_eq!(c.evict(want), freed);
                        for k in &gone {
                            proptest::prop_assert!(c.get(k).is_none());
                            let (_, refs, _) = before.iter().find(|b| b.0 == *k).unwrap();
                            proptest::prop_assert_eq!(*refs, 0);
                        }
                        for k in cached_before.iter().filter(|k| !gone.contains(k)) {
                            proptest::prop_assert!(c.get(k).is_some());
                        }
                    }
                    _ => {}
                }
                let total: u64 = n.segs.iter().map(|s| s.1).sum();
                proptest::prop_assert_eq!(c.cached_tokens(), total);
                proptest::prop_assert_eq!(c.len(), n.segs.len());
            }
        }
    }
}
