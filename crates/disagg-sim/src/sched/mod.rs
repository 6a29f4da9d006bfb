//! The scheduled instances (levers-scheduling.md): what runs when the scheduling levers are on.
//!
//! The plain instances of [`crate::serving`] stay as they are (and as fast); a run whose
//! [`SimConfig::levers`] is set runs here instead, over the same event queue, event type, request
//! stamps, population books, KV link model and result type. The files:
//!
//! * this one: the run (arrivals, rejection and routing §4, closed-loop releases, the KV
//!   transfers of the scheduled disaggregated pools §9.3, samples, the result);
//! * [`batch`]: the scheduling loop of one instance and its steps, one policy at a time
//!   (prefill-priority and decode-priority §5.3, chunked §5.4), the end handlers (§5.5, §9.1,
//!   §9.2) and speculative acceptance (§10.4);
//! * [`kv`]: KV memory: room, admission, the prefix cache's insertions (§8.3), paged growth,
//!   preemption by recompute or swap, and swap-in (§3.3, §5.2, §6);
//! * [`report`]: the `scheduler` block of the summary (§11);
//! * [`prefix_ho`]: beyond the reference, the prefix-aware hand-off (`--prefix-handoff`: decode
//!   instances keep a prefix cache and a hand-off sends only what the decode instance lacks) and
//!   the prefix router of hand-offs (`--decode-router prefix`).
//!
//! Instances are one `Vec` (prefill then decode, or colocated, in instance order), requests are
//! indices, and the per-request scheduler fields live beside the stamps, so a run stays `Send`.

use std::collections::VecDeque;

use disagg_model::{transfer, CostModel, SendMode, StepCost};

use crate::engine::EventQueue;
use crate::kv_memory::{KvPolicy, KvUnits};
use crate::levers::{BatchPolicy, Levers, PrefixChains};
use crate::link::{LayerPlan, LinkModel, Note, Sharing, XferSpec};
use crate::observer::{InstanceInfo, InstanceSample, Observer, Sample, TransferEvent};
use crate::prefix_cache::{NodeId, PrefixCache};
use crate::pyrand::GenRequest;
use crate::scenario::{Mode, ReserveKvOn, Role, SimConfig};
use crate::serving::{
    finish, Books, Ev, InstanceResult, InstanceStats, LinkResult, LinkStats, Req, RunResult,
    NO_INST, NO_SUCC, UNSET,
};
use crate::workload::ClosedLoop;

mod batch;
mod kv;
mod prefix_ho;
pub mod report;

pub use report::SchedulerSummary;

/// A request's scheduler fields (§1.1) and the record of its tokens.
#[derive(Clone, Debug, Default)]
pub(crate) struct RState {
    /// Prompt tokens this (re)prefill computes up to (0: not yet admitted).
    pub tgt: u64,
    /// Tokens of `tgt` in the KV cache.
    pub dp: u64,
    /// Tokens emitted at the latest (re)admission or landing.
    pub base: u64,
    /// Private KV units held on the current instance.
    pub alloc: u64,
    /// Tokens covered by `nodes`.
    pub cov: u64,
    /// Units parked in host memory while swapped out.
    pub swapped_units: u64,
    /// Tokens emitted so far, the first included.
    pub n: u64,
    /// Time of the latest token.
    pub last_token: f64,
    /// Speculative acceptance generator state (`None` until first used).
    pub rng: Option<u32>,
    /// Prefix-cache segments it pins, root first.
    pub nodes: Vec<NodeId>,
    /// Disaggregated: units and segments its prefill instance holds until the hand-off lands.
    pub held_units: u64,
    pub held_nodes: Vec<NodeId>,
    /// Disaggregated: its prefill instance and the decode instance chosen at hand-off.
    pub src: u32,
    pub dst: u32,
    /// Tokens after the first, as runs `(first, last)` of consecutive step indices of instance
    /// `tok_inst`; `zeros` more arrived with zero gaps (speculative verify passes).
    pub runs: Vec<(u32, u32)>,
    pub zeros: u32,
    pub tok_inst: u32,
    /// Times it was preempted, and prompt tokens its first admission found cached.
    pub preemptions: u32,
    pub hit_tokens: u64,
    /// Chunk-wise streaming (`--send layerwise`): its prompt's chunks on the prefill instance as
    /// `(step start, step duration, tokens)` (cached tokens first, as a step of length 0), ...
    pub xf_chunks: Vec<(f64, f64, u64)>,
    /// ... when its last byte sent so far is through the link (`NaN` until its transfer is granted),
    pub xf_sent: f64,
    /// ... its open transfer's link slot, and whether its last chunk has started.
    pub xf_slot: u32,
    pub xf_done: bool,
    /// Units a decode instance reserved for it while it was still prefilling (streamed); they
    /// become its `alloc` when its prompt is done.
    pub xf_dalloc: u64,
    /// `--prefix-handoff`: prompt tokens its decode instance held when it pulled the hand-off
    /// (their KV is not sent; 0 otherwise).
    pub ho_hit: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Coloc,
    Prefill,
    Decode,
}

/// Scheduler statistics of one instance (§5.6, §6, §8.3, §10.4, §11.1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SchedStats {
    /// `∫ len(running) dt` over steps, s.
    pub run_area: f64,
    /// `∫ tokens held dt`, token-s.
    pub tok_area: f64,
    /// `∫ allocated tokens dt`, token-s.
    pub alloc_area: f64,
    /// Prompt tokens computed (re-prefills included, hits excluded).
    pub computed_tokens: u64,
    /// Tokens of re-prefill chunks.
    pub recompute_tokens: u64,
    /// Preemptions.
    pub preemptions: u64,
    /// Bytes swapped out / in over the host link.
    pub swap_out_bytes: f64,
    pub swap_in_bytes: f64,
    /// Host-link transfer time, s.
    pub swap_s: f64,
    /// Host-link energy, J.
    pub swap_j: f64,
    /// Prompt tokens at first admissions, and those covered by prefix hits.
    pub prompt_tokens: u64,
    pub hit_tokens: u64,
    /// Speculative verify rows and the tokens they produced.
    pub spec_rows: u64,
    pub spec_tokens: u64,
    /// Time of the draft model's passes, s.
    pub draft_s: f64,
    /// `--prefix-handoff`, decode instances: prompt tokens of the hand-offs pulled, and those the
    /// instance's prefix cache held (not sent).
    pub ho_prompt_tokens: u64,
    pub ho_hit_tokens: u64,
    /// `--prefix-handoff`, decode instances: hand-offs pulled, and those with a hit.
    pub ho_pulls: u64,
    pub ho_hit_pulls: u64,
}

/// One scheduled instance.
struct Inst {
    kind: Kind,
    /// Its pool in `cfg.pools`.
    pool: usize,
    kv: KvUnits,
    tau: u64,
    cap: usize,
    policy: BatchPolicy,
    cache: Option<PrefixCache<u32>>,
    queue: VecDeque<u32>,
    /// Prompt tokens in `queue` (a prefill instance's load).
    queued_tokens: u64,
    /// Sorted by `(arrival, rid)`.
    running: Vec<u32>,
    swapped: Vec<u32>,
    used: u64,
    /// Swap time owed to the next step, s.
    swap_t: f64,
    busy: bool,
    wake_pending: bool,
    // decode instance
    inbox: VecDeque<u32>,
    landed: VecDeque<u32>,
    inflight: u32,
    // the step in flight
    cur: StepCost,
    dt: f64,
    cur_draft: f64,
    step_start: f64,
    rows: Vec<u32>,
    part: Vec<(u32, u64)>,
    // accounting
    idle_w: f64,
    stats: InstanceStats,
    acc: SchedStats,
    step_end: Vec<f64>,
}

impl Inst {
    /// Frees `units` (set to 0) and unpins `nodes` (emptied) in order at `now`.
    fn give_back(&mut self, units: &mut u64, nodes: &mut Vec<NodeId>, now: f64) {
        self.used -= *units;
        *units = 0;
        if let Some(cache) = self.cache.as_mut() {
            for &n in nodes.iter() {
                cache.unpin(n, now);
            }
        }
        nodes.clear();
    }
}

/// Speculative decoding as the scheduler uses it.
#[derive(Clone, Copy, Debug)]
struct Spec {
    gamma: u64,
    alpha: f64,
    seed: u64,
}

/// A scheduled run.
pub(crate) struct SchedSim<'a, O: Observer> {
    cfg: &'a SimConfig,
    lv: &'a Levers,
    q: EventQueue<Ev>,
    reqs: Vec<Req>,
    rs: Vec<RState>,
    /// Prefix chains, read only with prefix caching on.
    chains: Option<&'a PrefixChains>,
    open: Vec<u32>,
    open_pos: usize,
    insts: Vec<Inst>,
    /// Number of prefill instances (the first decode instance's index), 0 in colocated mode.
    n_prefill: usize,
    link: LinkModel,
    link_stats: LinkStats,
    notes: Vec<Note>,
    books: Books,
    obs: &'a mut O,
    spec: Option<Spec>,
    /// KV bytes per token, the draft's included (swap and hand-off bytes).
    kv_tok_bytes: f64,
    /// The draft's KV bytes per token (0 without speculative decoding).
    draft_kv: f64,
    sampling: bool,
    sample_every_interval: bool,
    samples: Vec<InstanceSample>,
    /// Scratch: the chunk list of the step being costed.
    chunk_buf: Vec<disagg_model::Chunk>,
    /// `--reserve-kv-on transfer`: hand-offs reserve decode memory and pick their decode instance
    /// when they can be held ([`SchedSim::serve_handoffs`]), instead of routing first.
    reserve_on_transfer: bool,
    /// With `reserve_on_transfer`: the hand-offs waiting for decode memory, FIFO.
    handoff_wait: VecDeque<u32>,
    /// `--send layerwise`: the model's layers; prompts stream chunk by chunk
    /// ([`SchedSim::stream_chunks`]). `None`: the whole cache leaves after the prompt (reference).
    layers: Option<u32>,
}

/// Runs `workload` on the scheduled instances of `cfg` (whose `levers` must be set).
pub(crate) fn run<O: Observer>(
    cfg: &SimConfig,
    workload: &[GenRequest],
    closed: Option<&ClosedLoop>,
    chains: Option<&PrefixChains>,
    obs: &mut O,
) -> Result<RunResult, disagg_model::Error> {
    let lv = cfg.levers.as_ref().expect("a scheduled run has levers");
    let mut sim = SchedSim::new(cfg, lv, workload, chains, obs);
    if let Some(c) = closed {
        sim.open = sim.books.close_loop(c);
    }
    sim.run()?;
    Ok(sim.finish_run())
}

impl<'a, O: Observer> SchedSim<'a, O> {
    fn new(
        cfg: &'a SimConfig,
        lv: &'a Levers,
        workload: &[GenRequest],
        chains: Option<&'a PrefixChains>,
        obs: &'a mut O,
    ) -> Self {
        let reqs: Vec<Req> = workload.iter().map(Req::new).collect();
        let rs = vec![
            RState {
                last_token: UNSET,
                xf_sent: UNSET,
                src: NO_INST,
                dst: NO_INST,
                tok_inst: NO_INST,
                ..RState::default()
            };
            reqs.len()
        ];
        let mut insts = Vec::new();
        let roles: &[(Role, Kind)] = match cfg.mode {
            Mode::Disagg => &[(Role::Prefill, Kind::Prefill), (Role::Decode, Kind::Decode)],
            Mode::Colocated => &[(Role::Colocated, Kind::Coloc)],
        };
        let mut n_prefill = 0;
        for &(role, kind) in roles {
            let (pi, pool) = cfg
                .pools
                .iter()
                .enumerate()
                .find(|(_, p)| p.role == role)
                .expect("the mode's pools");
            let prefill = kind == Kind::Prefill;
            if prefill {
                n_prefill = pool.instances;
            }
            for _ in 0..pool.instances {
                insts.push(Inst {
                    kind,
                    pool: pi,
                    kv: KvUnits::new(
                        lv.kv_policy,
                        pool.kv_capacity_tokens,
                        lv.kv_block_size,
                        lv.kv_watermark,
                        lv.max_seq_len,
                        prefill,
                    )
                    .with_reserve(cfg.model.kv_reserve()),
                    tau: lv.token_budget,
                    cap: if prefill {
                        1 << 62
                    } else {
                        cfg.max_decode_batch
                    },
                    policy: if prefill && lv.batch_policy == BatchPolicy::DecodePriority {
                        BatchPolicy::PrefillPriority
                    } else {
                        lv.batch_policy
                    },
                    cache: (lv.prefix_caching && (kind != Kind::Decode || lv.prefix_handoff))
                        .then(|| PrefixCache::with_eviction(cfg.scenario.prefix_eviction)),
                    queue: VecDeque::new(),
                    queued_tokens: 0,
                    running: Vec::new(),
                    swapped: Vec::new(),
                    used: 0,
                    swap_t: 0.0,
                    busy: false,
                    wake_pending: false,
                    inbox: VecDeque::new(),
                    landed: VecDeque::new(),
                    inflight: 0,
                    cur: crate::serving::NO_COST,
                    dt: 0.0,
                    cur_draft: 0.0,
                    step_start: 0.0,
                    rows: Vec::new(),
                    part: Vec::new(),
                    idle_w: pool.cost.idle_w(),
                    stats: InstanceStats::default(),
                    acc: SchedStats::default(),
                    step_end: Vec::new(),
                });
            }
        }
        let draft_kv = cfg
            .pools
            .iter()
            .find_map(|p| p.draft.as_ref().map(|d| d.1))
            .unwrap_or(0.0);
        let spec = lv.speculative.as_ref().map(|s| Spec {
            gamma: s.gamma as u64,
            alpha: s.alpha,
            seed: s.seed,
        });
        let n_inst = insts.len();
        let sampling = obs.wants_samples();
        let sample_every_interval = obs.every_sample_interval();
        SchedSim {
            cfg,
            lv,
            q: EventQueue::new(),
            books: Books::new(reqs.len()),
            reqs,
            rs,
            chains: chains.filter(|_| lv.prefix_caching),
            open: Vec::new(),
            open_pos: 0,
            insts,
            n_prefill,
            link: LinkModel::new(Sharing::Fifo, cfg.link.channels),
            link_stats: LinkStats {
                handoff_bytes_saved: lv.prefix_handoff.then_some(0.0),
                ..LinkStats::default()
            },
            notes: Vec::new(),
            obs,
            spec,
            kv_tok_bytes: if cfg.model.arch.is_some() {
                cfg.model.cache_unit_bytes() + draft_kv
            } else {
                cfg.model.kv_bytes_per_token() + draft_kv
            },
            draft_kv,
            sampling,
            sample_every_interval,
            samples: vec![InstanceSample::default(); n_inst],
            chunk_buf: Vec::new(),
            reserve_on_transfer: cfg.mode == Mode::Disagg
                && cfg.handoff.reserve_kv_on == ReserveKvOn::Transfer,
            handoff_wait: VecDeque::new(),
            layers: (cfg.mode == Mode::Disagg && cfg.handoff.send == SendMode::Layerwise)
                .then(|| cfg.model.n_layers.clamp(1, u32::MAX as u64) as u32),
        }
    }

    fn cost(&self, i: usize) -> &'a CostModel {
        &self.cfg.pools[self.insts[i].pool].cost
    }

    fn draft_cost(&self, i: usize) -> Option<&'a CostModel> {
        self.cfg.pools[self.insts[i].pool]
            .draft
            .as_ref()
            .map(|d| &d.0)
    }

    fn instance_name(&self, i: usize) -> String {
        match self.insts[i].kind {
            Kind::Prefill => format!("prefill-{i}"),
            Kind::Decode => format!("decode-{}", i - self.n_prefill),
            Kind::Coloc => format!("colocated-{i}"),
        }
    }

    /// The event loop; `Error::Cancelled` if the observer stopped it.
    fn run(&mut self) -> Result<(), disagg_model::Error> {
        let infos: Vec<InstanceInfo> = (0..self.insts.len())
            .map(|i| {
                let p = &self.cfg.pools[self.insts[i].pool];
                InstanceInfo {
                    name: self.instance_name(i),
                    role: p.role,
                    kv_capacity_tokens: p.kv_capacity_tokens,
                }
            })
            .collect();
        self.obs.begin(&infos);
        if self.reqs.is_empty() {
            self.obs.end(0.0);
            return Ok(());
        }
        crate::serving::first_arrival(&mut self.q, &self.reqs, &self.open);
        if self.sampling {
            self.take_sample();
            self.q.schedule_in(self.cfg.sample_dt_s, Ev::Sample);
        }
        let mut events = 0u64;
        while let Some((_, ev)) = self.q.pop() {
            if crate::observer::should_stop(&mut events, &mut *self.obs) {
                return Err(disagg_model::Error::Cancelled);
            }
            match ev {
                Ev::Arrival(i) => self.on_arrival(i),
                Ev::Release(i) => {
                    self.reqs[i as usize].arrival = self.q.now();
                    self.admit_arrival(i);
                }
                Ev::Wake(g) => {
                    self.insts[g as usize].wake_pending = false;
                    self.pass(g as usize);
                }
                Ev::StepEnd(g) => self.step_end(g as usize),
                Ev::Link(l, e) => {
                    self.link.on_event(l, e, &mut self.q, &mut self.notes);
                    self.take_notes();
                }
                Ev::Sample => {
                    self.take_sample();
                    let t = crate::serving::next_sample_time(
                        &self.q,
                        self.cfg.sample_dt_s,
                        self.sample_every_interval,
                    );
                    self.q.schedule_at(t, Ev::Sample);
                }
                Ev::Done => break,
                // Scheduled runs: the first slice of request `rid`'s first chunk is ready.
                Ev::FirstSlice(rid) => self.start_hand_off(rid),
                Ev::MacroEnd(..) => unreachable!("plain-instance event in a scheduled run"),
            }
        }
        let now = self.q.now();
        self.books.population(now, 0);
        self.obs.end(now);
        Ok(())
    }

    fn take_sample(&mut self) {
        for (k, inst) in self.insts.iter().enumerate() {
            let blk = inst.kv.block_tokens;
            self.samples[k] = InstanceSample {
                queue: inst.queue.len() + inst.inbox.len(),
                running: inst.running.len(),
                kv_used: inst.used * blk,
                kv_cap: inst.kv.capacity * blk,
            };
        }
        let now = self.q.now();
        let s = Sample {
            t: now,
            in_system: self.books.in_system,
            link_queue: self.link.waiting(),
            link_busy: self.link.in_flight(),
            link_bytes_in_flight: self.link.bytes_in_flight(now),
            decode_mem_wait: self.insts.iter().map(|d| d.inbox.len()).sum::<usize>()
                + self.handoff_wait.len(),
            instances: &self.samples,
        };
        self.obs.sample(&s);
    }

    // ── arrivals, rejection and routing (§4) ─────────────────────────────

    fn on_arrival(&mut self, i: u32) {
        let now = self.q.now();
        self.admit_arrival(i);
        crate::serving::next_arrival(
            &mut self.q,
            &self.reqs,
            &self.open,
            &mut self.open_pos,
            i,
            now,
        );
    }

    /// `load()` of instance `i` (§4).
    fn load(&self, i: usize) -> u64 {
        let inst = &self.insts[i];
        let decoding = || {
            inst.running
                .iter()
                .filter(|&&r| {
                    let s = &self.rs[r as usize];
                    s.dp >= s.tgt
                })
                .count() as u64
        };
        match inst.kind {
            Kind::Prefill => inst.queued_tokens,
            Kind::Coloc => inst.queue.len() as u64 + inst.swapped.len() as u64 + decoding(),
            Kind::Decode => {
                inst.inbox.len() as u64
                    + inst.inflight as u64
                    + inst.landed.len() as u64
                    + inst.queue.len() as u64
                    + inst.swapped.len() as u64
                    + decoding()
            }
        }
    }

    /// The first instance of `range` with the smallest load.
    fn least_loaded(&self, range: std::ops::Range<usize>) -> usize {
        let mut best = range.start;
        let mut best_load = u64::MAX;
        for k in range {
            let l = self.load(k);
            if l < best_load {
                best_load = l;
                best = k;
            }
        }
        best
    }

    fn admit_arrival(&mut self, rid: u32) {
        let now = self.q.now();
        self.books.population(now, 1);
        self.obs.arrival(rid as usize, now);
        let (p, o) = {
            let r = &self.reqs[rid as usize];
            (r.prompt as u64, r.output as u64)
        };
        let reject = match self.cfg.mode {
            Mode::Colocated => self.insts[0].kv.full_need(p, o) > self.insts[0].kv.capacity,
            Mode::Disagg => {
                let d0 = &self.insts[self.n_prefill].kv;
                let p0 = &self.insts[0].kv;
                d0.full_need(p, o) > d0.capacity || p0.units(p) > p0.capacity
            }
        };
        if reject {
            self.books.population(now, -1);
            // It and every later turn of its session (never released).
            let mut r = rid;
            loop {
                self.books.n_rejected += 1;
                self.obs.rejected(r as usize, now);
                match self.books.succ.get(r as usize) {
                    Some(&s) if s != NO_SUCC => r = s,
                    _ => break,
                }
            }
            if self.books.n_done + self.books.n_rejected == self.books.n_total {
                self.q.schedule_at(now, Ev::Done);
            }
            return;
        }
        let target = match self.cfg.mode {
            Mode::Colocated => self.least_loaded(0..self.insts.len()),
            Mode::Disagg => self.least_loaded(0..self.n_prefill),
        };
        self.submit(target, rid);
    }

    /// Appends `rid` to instance `i`'s queue and wakes it if idle.
    fn submit(&mut self, i: usize, rid: u32) {
        let p = self.reqs[rid as usize].prompt as u64;
        let inst = &mut self.insts[i];
        inst.queue.push_back(rid);
        inst.queued_tokens += p;
        self.wake(i);
    }

    /// Schedules a wake-up of instance `i` now, if it is idle and none is pending (§12.3 1).
    fn wake(&mut self, i: usize) {
        let inst = &mut self.insts[i];
        if !inst.busy && !inst.wake_pending {
            inst.wake_pending = true;
            self.q.schedule_in(0.0, Ev::Wake(i as u32));
        }
    }

    /// Finishes `rid` now (population, completion, closed-loop successor, end of run).
    fn finish_now(&mut self, rid: u32) {
        let now = self.q.now();
        finish(
            &mut self.reqs,
            &mut self.books,
            &mut self.q,
            &mut *self.obs,
            rid,
            now,
        );
    }

    // ── the KV transfer of the scheduled pools (§9.3) ────────────────────

    /// Starts `rid`'s transfer now (its decode memory is allocated).
    fn start_transfer(&mut self, rid: u32) {
        if self.layers.is_some() {
            self.start_stream(rid);
            return;
        }
        let spec = {
            let p = self.reqs[rid as usize].prompt as u64;
            XferSpec::of(
                rid,
                &self.transfer_of(p - self.rs[rid as usize].ho_hit),
                None,
            )
        };
        self.link.submit(0, spec, &mut self.q, &mut self.notes);
        self.take_notes();
    }

    /// The transfer of a `p`-token prompt's KV (with the draft's KV under speculative decoding).
    fn transfer_of(&self, p: u64) -> disagg_model::Transfer {
        let cfg = self.cfg;
        let x = if self.draft_kv == 0.0 {
            transfer(&cfg.model, &cfg.link, cfg.kv_transit.as_ref(), p)
        } else {
            let s = cfg.model.handoff_bytes(p) + p as f64 * self.draft_kv;
            disagg_model::transfer_bytes(cfg.model.kv_bytes, &cfg.link, None, p, s)
        };
        cfg.handoff_transfer(x, p)
    }

    // ── chunk-wise streaming (`--send layerwise`, beyond the reference) ────

    /// The link work of `c` of `rid`'s prompt tokens: their share of its transfer's stream time.
    fn chunk_work(&self, rid: u32, c: u64) -> f64 {
        let p = self.reqs[rid as usize].prompt as u64;
        self.transfer_of(p).stream_s * c as f64 / p as f64
    }

    /// A step of prefill instance `i` starts now and lasts `dt`: each prompt chunk in it that will
    /// be handed off is recorded; a prompt's first chunk schedules its hand-off when the chunk's
    /// first layer is ready (`now + dt / L`); a granted transfer sends the chunk's slices as they
    /// come ([`LayerPlan::stream_through`]), and once its last chunk has started its landing is
    /// known: the link is closed at `last byte + fixed`.
    fn stream_chunks(&mut self, i: usize, dt: f64) {
        let Some(layers) = self.layers else {
            return;
        };
        let now = self.q.now();
        let plan = LayerPlan::new(now, dt, layers);
        for k in 0..self.insts[i].part.len() {
            let (rid, c) = self.insts[i].part[k];
            if self.reqs[rid as usize].output <= 1 {
                continue;
            }
            let s = &mut self.rs[rid as usize];
            if s.xf_chunks.is_empty() {
                // Its prefix-cached tokens (none: no work), ready from the start.
                s.xf_chunks.push((now, 0.0, s.dp));
                self.q.schedule_in(dt / layers as f64, Ev::FirstSlice(rid));
            }
            let s = &mut self.rs[rid as usize];
            s.xf_chunks.push((now, dt, c));
            s.xf_done = s.dp + c == s.tgt;
            if !s.xf_sent.is_nan() {
                let w = self.chunk_work(rid, c);
                let s = &mut self.rs[rid as usize];
                s.xf_sent = plan.stream_through(s.xf_sent, w);
                if s.xf_done {
                    self.close_stream(rid);
                }
            }
        }
    }

    /// Submits `rid`'s transfer as an open one: it holds its channel from the grant until it is
    /// closed.
    fn start_stream(&mut self, rid: u32) {
        let p = self.reqs[rid as usize].prompt as u64;
        let spec = XferSpec::of(rid, &self.transfer_of(p), None);
        self.rs[rid as usize].xf_slot = self.link.submit_open(0, spec, &mut self.q);
    }

    /// `rid`'s transfer was granted now: it sends what its chunks have produced so far, and is
    /// closed at once if its last chunk has started.
    fn stream_granted(&mut self, rid: u32) {
        let layers = self.layers.expect("layer-wise");
        let mut f = self.q.now();
        for k in 0..self.rs[rid as usize].xf_chunks.len() {
            let (start, dt, c) = self.rs[rid as usize].xf_chunks[k];
            let w = self.chunk_work(rid, c);
            f = LayerPlan::new(start, dt, layers).stream_through(f, w);
        }
        let s = &mut self.rs[rid as usize];
        s.xf_sent = f;
        if s.xf_done {
            self.close_stream(rid);
        }
    }

    /// `rid`'s last byte is through at `xf_sent`: its KV lands `fixed` later.
    fn close_stream(&mut self, rid: u32) {
        let p = self.reqs[rid as usize].prompt as u64;
        let fixed = self.transfer_of(p).fixed_s;
        let s = &self.rs[rid as usize];
        let at = s.xf_sent + fixed;
        self.link.close(0, s.xf_slot, at, &mut self.q);
    }

    fn take_notes(&mut self) {
        if self.notes.is_empty() {
            return;
        }
        let mut notes = std::mem::take(&mut self.notes);
        for n in notes.drain(..) {
            match n {
                Note::Started { rid } => {
                    let now = self.q.now();
                    let r = &mut self.reqs[rid as usize];
                    r.kv_start = now;
                    self.link_stats.wait_s += now - r.kv_req;
                    if self.layers.is_some() {
                        self.stream_granted(rid);
                    }
                }
                Note::Landed {
                    rid,
                    start,
                    busy_s,
                    dur_s,
                } => self.on_landed(rid, start, busy_s, dur_s),
            }
        }
        self.notes = notes;
    }

    fn on_landed(&mut self, rid: u32, start: f64, busy_s: f64, dur_s: f64) {
        let now = self.q.now();
        let p = self.reqs[rid as usize].prompt as u64;
        let x = self.transfer_of(p - self.rs[rid as usize].ho_hit);
        self.count_saved(p, x.kv_bytes);
        self.link_stats
            .land(busy_s, &x, self.cfg.kv_transit.is_some());
        self.reqs[rid as usize].kv_ready = now;
        self.obs.transfer(&TransferEvent {
            rid: rid as usize,
            start,
            dur: dur_s,
            wire_bytes: x.wire_bytes,
            kv_bytes: x.kv_bytes,
        });
        let (src, dst) = {
            let s = &self.rs[rid as usize];
            (s.src as usize, s.dst as usize)
        };
        // free_held on the source, then land on the destination (§12.3 5).
        self.free_held(src, rid);
        let d = &mut self.insts[dst];
        d.inflight -= 1;
        d.landed.push_back(rid);
        self.wake(dst);
    }

    // ── the result ───────────────────────────────────────────────────────

    fn finish_run(self) -> RunResult {
        let horizon = if self.reqs.is_empty() {
            0.0
        } else {
            self.q.now()
        };
        let cfg = self.cfg;
        let mut instances = Vec::with_capacity(self.insts.len());
        for (i, inst) in self.insts.iter().enumerate() {
            instances.push(InstanceResult {
                name: self.instance_name(i),
                role: cfg.pools[inst.pool].role,
                pool: inst.pool,
                stats: inst.stats,
            });
        }
        let report = report::scheduler_summary(self.lv, &self.insts, self.n_prefill, self.spec);
        let swap_j = report.swap.as_ref().map(|_| {
            let mut s = 0.0;
            for inst in &self.insts {
                s += inst.acc.swap_j;
            }
            s
        });
        let closed_turns = self.books.succ.iter().filter(|&&x| x != NO_SUCC).count() as u64;
        let zeros = self.rs.iter().map(|s| s.zeros).collect();
        let per_request = self
            .rs
            .iter()
            .map(|s| (s.preemptions, s.hit_tokens, s.ho_hit))
            .collect();
        let tok_inst = self.rs.iter().map(|s| s.tok_inst).collect();
        let kv_end = self
            .insts
            .iter()
            .map(|i| KvEnd {
                used_units: i.used,
                cached_units: i.cache.as_ref().map_or(0, |c| c.cached_units()),
                capacity_units: i.kv.capacity,
                swapped: i.swapped.len(),
                queued: i.queue.len() + i.inbox.len() + i.landed.len(),
            })
            .collect();
        let sched = SchedResult {
            kv_end,
            step_ends: self.insts.into_iter().map(|i| i.step_end).collect(),
            runs: self.rs.into_iter().map(|s| s.runs).collect(),
            zeros,
            tok_inst,
            per_request,
            report,
            swap_j,
        };
        let t = self.link.totals();
        RunResult {
            cfg: cfg.clone(),
            reqs: self.reqs,
            step_ends: Vec::new(),
            instances,
            link: self.link_stats,
            links: vec![LinkResult {
                name: crate::serving::link_name(cfg, 0),
                busy_s: t.busy_s,
                bytes: t.bytes,
                transfers: t.transfers,
            }],
            horizon,
            area: self.books.area,
            rejected: self.books.n_rejected,
            events: self.q.processed(),
            closed_turns,
            clipped_prompts: 0,
            sched: Some(Box::new(sched)),
        }
    }
}

/// What the scheduling levers measured of one request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeverRecord {
    /// `prefill_start - arrival`, s (NaN if it never started).
    pub sched_delay_s: f64,
    /// Times it was preempted (paged KV).
    pub preemptions: u32,
    /// Prompt tokens its first admission found in the prefix cache.
    pub prefix_hit_tokens: u64,
    /// Its inter-token latencies: how many, the largest, and how many were exactly 0
    /// (speculative verify passes).
    pub n_itl: u64,
    pub itl_max_s: Option<f64>,
    pub n_itl_zero: u64,
    /// `--prefix-handoff` only: prompt tokens its decode instance already held when it pulled
    /// the hand-off (their KV was not sent); `None` without the option.
    pub handoff_hit_tokens: Option<u64>,
}

/// One scheduled instance's KV memory when the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvEnd {
    /// Units in use (private allocations, cached segments, reservations).
    pub used_units: u64,
    /// Units held by cached prefix segments.
    pub cached_units: u64,
    /// Capacity, units.
    pub capacity_units: u64,
    /// Rows still swapped out.
    pub swapped: usize,
    /// Requests still waiting (queue, decode inbox, landed).
    pub queued: usize,
}

/// What a scheduled run leaves besides the stamps: every instance's step ends, each request's
/// token record (for its inter-token latencies) and the scheduler block.
#[derive(Clone, Debug)]
pub(crate) struct SchedResult {
    /// Per instance (instance order), the end time of every step.
    pub step_ends: Vec<Vec<f64>>,
    /// Per request, its tokens after the first as runs of consecutive step indices.
    pub runs: Vec<Vec<(u32, u32)>>,
    /// Per request, tokens that arrived with a zero gap.
    pub zeros: Vec<u32>,
    /// Per request, the instance whose steps `runs` index.
    pub tok_inst: Vec<u32>,
    /// Per request, its preemptions, prefix-hit tokens and (`--prefix-handoff`) prompt tokens
    /// its decode instance held.
    pub per_request: Vec<(u32, u64, u64)>,
    /// Per instance, its KV memory at the end.
    pub kv_end: Vec<KvEnd>,
    /// The summary's scheduler block.
    pub report: SchedulerSummary,
    /// Swap energy over every instance, J (paged + swap only).
    pub swap_j: Option<f64>,
}

impl SchedResult {
    /// Request `rid`'s inter-token latencies, the first measured from `first_s` (in emission
    /// order, except that the zero gaps of speculative verify passes come last).
    pub fn itls(&self, rid: usize, first_s: f64) -> Vec<f64> {
        let mut v = Vec::new();
        self.each_itl(rid, first_s, |x, c| {
            for _ in 0..c {
                v.push(x)
            }
        });
        v
    }

    /// Calls `f(value, count)` for request `rid`'s inter-token latencies: the gap before each run
    /// of steps, each step-to-step gap inside a run, then the zero gaps (counted, not in order).
    pub fn each_itl(&self, rid: usize, first_s: f64, mut f: impl FnMut(f64, u64)) {
        let runs = &self.runs[rid];
        if runs.is_empty() {
            return;
        }
        let e = &self.step_ends[self.tok_inst[rid] as usize];
        let mut prev = first_s;
        let zeros = self.zeros[rid] as u64;
        for &(a, b) in runs {
            f(e[a as usize] - prev, 1);
            for j in a as usize + 1..=b as usize {
                f(e[j] - e[j - 1], 1);
            }
            prev = e[b as usize];
        }
        if zeros > 0 {
            f(0.0, zeros);
        }
    }
}

impl KvPolicy {
    /// Whether the policy grows allocations and preempts (paged).
    fn is_paged(self) -> bool {
        self == KvPolicy::Paged
    }
}

#[cfg(test)]
mod tests;
