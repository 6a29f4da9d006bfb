//! The scheduled instances (`docs/levers.md`): what runs when the scheduling levers are on.
//!
//! The plain instances of [`crate::serving`] stay as they are (and as fast); a run whose
//! [`SimConfig::levers`] is set runs here instead, over the same event queue, event type, request
//! stamps, population books, KV link model and result type. The files:
//!
//! * this one: the run (arrivals, rejection and routing `docs/serving-model.md#routing`, closed-loop releases, the KV
//!   transfers of the scheduled disaggregated pools `docs/levers.md#scheduled-pools`, samples, the result);
//! * [`batch`]: the scheduling loop of one instance and its steps, one policy at a time
//!   (prefill-priority and decode-priority `docs/levers.md#batch-policies`, chunked `docs/levers.md#batch-policies`), the end handlers (`docs/levers.md#scheduled-instances`, `docs/levers.md#scheduled-pools`,
//!   `docs/levers.md#scheduled-pools`) and speculative acceptance (`docs/levers.md#speculative`);
//! * [`kv`]: KV memory: room, admission, the prefix cache's insertions (`docs/levers.md#prefix-caching`), paged growth,
//!   preemption by recompute or swap, and swap-in (`docs/levers.md#kv-reservation`, `docs/levers.md#scheduled-instances`, `docs/levers.md#paged-kv`);
//! * [`report`]: the `scheduler` block of the summary (`docs/levers.md#lever-metrics`);
//! * [`prefix_ho`]: beyond the reference, the prefix-aware hand-off (`--prefix-handoff`: decode
//!   instances keep a prefix cache and a hand-off sends only what the decode instance lacks) and
//!   the prefix router of hand-offs (`--decode-router prefix`).
//!
//! Instances are one `Vec` (prefill then decode, or colocated, in instance order), requests are
//! indices, and the per-request scheduler fields live beside the stamps, so a run stays `Send`.

use std::collections::VecDeque;

use disagg_model::{transfer, CostModel, SendMode};

use crate::engine::books::{InstanceStats, LinkStats, OnReject, NO_COST};
use crate::engine::event::Ev;
use crate::engine::request::{Req, NO_INST, UNSET};
use crate::engine::result::{instance_name, link_name, LinkResult, RunResult};
use crate::engine::run::{self, instance_result, Core, Roles};
use crate::kv_memory::KvUnits;
use crate::levers::{Levers, PrefixChains};
use crate::link::{LayerPlan, LinkEv, LinkModel, Sharing, XferSpec};
use crate::observer::{InstanceInfo, InstanceSample, Observer};
use crate::prefix_cache::PrefixCache;
use crate::pyrand::GenRequest;
use crate::scenario::{Mode, ReserveKvOn, Role, SimConfig};
use crate::workload::ClosedLoop;

pub(crate) mod batch;
mod inst;
mod kv;
mod prefix_ho;
pub mod report;
pub(crate) mod result;
mod steps;

use inst::{Inst, Kind, RState, SchedStats, Spec};
pub use report::SchedulerSummary;
pub use result::{KvEnd, LeverRecord};

/// A scheduled run.
pub(crate) struct SchedSim<'a, O: Observer> {
    /// Requests, events, books, arrivals, samples, link notes and totals.
    core: Core<'a, O>,
    cfg: &'a SimConfig,
    lv: &'a Levers,
    rs: Vec<RState>,
    /// Prefix chains, read only with prefix caching on.
    chains: Option<&'a PrefixChains>,
    insts: Vec<Inst>,
    /// Number of prefill instances (the first decode instance's index), 0 in colocated mode.
    n_prefill: usize,
    link: LinkModel,
    spec: Option<Spec>,
    /// KV bytes per token, the draft's included (swap and hand-off bytes).
    kv_tok_bytes: f64,
    /// The draft's KV bytes per token (0 without speculative decoding).
    draft_kv: f64,
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
    sim.core.close_loop(closed);
    run::run(&mut sim)?;
    Ok(sim.finish_run())
}

impl<'a, O: Observer + 'a> Roles<'a, O> for SchedSim<'a, O> {
    const ON_REJECT: OnReject = OnReject::RejectSession;

    #[inline(always)]
    fn core(&mut self) -> &mut Core<'a, O> {
        &mut self.core
    }

    fn instance_infos(&self) -> Vec<InstanceInfo> {
        (0..self.insts.len())
            .map(|i| {
                let p = &self.cfg.pools[self.insts[i].pool];
                InstanceInfo {
                    name: self.instance_name(i),
                    role: p.role,
                    kv_capacity_tokens: p.kv_capacity_tokens,
                }
            })
            .collect()
    }

    #[inline]
    fn rejects(&self, rid: u32) -> bool {
        SchedSim::rejects(self, rid)
    }

    #[inline]
    fn route(&mut self, rid: u32) {
        SchedSim::route(self, rid)
    }

    #[inline]
    fn on_wake(&mut self, g: u32) {
        self.insts[g as usize].wake_pending = false;
        self.pass(g as usize);
    }

    #[inline]
    fn on_step_end(&mut self, g: u32) {
        self.step_end(g as usize)
    }

    /// Never scheduled here (the macro-steps are the plain decode instances' fast path).
    #[inline]
    fn on_macro_end(&mut self, _g: u32, _epoch: u32) {}

    /// The first slice of request `rid`'s first chunk is ready.
    #[inline]
    fn on_first_slice(&mut self, rid: u32) {
        self.start_hand_off(rid)
    }

    #[inline]
    fn on_link(&mut self, l: u32, e: LinkEv) {
        self.link
            .on_event(l, e, &mut self.core.q, &mut self.core.notes);
    }

    #[inline]
    fn on_kv_start(&mut self, rid: u32) {
        let asked = self.core.reqs[rid as usize].kv_req;
        self.core.kv_started(rid, asked);
        if self.layers.is_some() {
            self.stream_granted(rid);
        }
    }

    #[inline]
    fn on_kv_landed(&mut self, rid: u32, start: f64, busy_s: f64, dur_s: f64) {
        self.on_landed(rid, start, busy_s, dur_s)
    }

    #[inline]
    fn take_sample(&mut self) {
        SchedSim::take_sample(self)
    }
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
                    policy: lv.batch_policy,
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
                    cur: NO_COST,
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
        let link_stats = LinkStats {
            handoff_bytes_saved: lv.prefix_handoff.then_some(0.0),
            ..LinkStats::default()
        };
        SchedSim {
            core: Core::new(cfg, reqs, n_inst, link_stats, obs),
            cfg,
            lv,
            rs,
            chains: chains.filter(|_| lv.prefix_caching),
            insts,
            n_prefill,
            link: LinkModel::new(Sharing::Fifo, cfg.link.channels),
            spec,
            kv_tok_bytes: if cfg.model.arch.is_some() {
                cfg.model.cache_unit_bytes() + draft_kv
            } else {
                cfg.model.kv_bytes_per_token() + draft_kv
            },
            draft_kv,
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
        let inst = &self.insts[i];
        let k = if inst.kind == Kind::Decode {
            i - self.n_prefill
        } else {
            i
        };
        instance_name(self.cfg.pools[inst.pool].role, k)
    }

    fn take_sample(&mut self) {
        for (k, inst) in self.insts.iter().enumerate() {
            let blk = inst.kv.block_tokens;
            self.core.samples[k] = InstanceSample {
                queue: inst.queue.len() + inst.inbox.len(),
                running: inst.running.len(),
                kv_used: inst.used * blk,
                kv_cap: inst.kv.capacity * blk,
            };
        }
        let now = self.core.q.now();
        self.core.emit_sample(
            self.link.waiting(),
            self.link.in_flight(),
            self.link.bytes_in_flight(now),
            self.insts.iter().map(|d| d.inbox.len()).sum::<usize>() + self.handoff_wait.len(),
        );
    }

    // ── arrivals, rejection and routing (`docs/serving-model.md#routing`) ─────────────────────────────

    /// `load()` of instance `i` (`docs/serving-model.md#routing`).
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

    /// A request is rejected at arrival if its full need exceeds a decode-side instance's
    /// capacity, or (disaggregated) its prompt a prefill instance's (`docs/serving-model.md#routing`).
    fn rejects(&self, rid: u32) -> bool {
        let (p, o) = {
            let r = &self.core.reqs[rid as usize];
            (r.prompt as u64, r.output as u64)
        };
        match self.cfg.mode {
            Mode::Colocated => self.insts[0].kv.full_need(p, o) > self.insts[0].kv.capacity,
            Mode::Disagg => {
                let d0 = &self.insts[self.n_prefill].kv;
                let p0 = &self.insts[0].kv;
                d0.full_need(p, o) > d0.capacity || p0.units(p) > p0.capacity
            }
        }
    }

    /// Routes an admitted request to the least-loaded instance that takes prompts (`docs/serving-model.md#routing`).
    fn route(&mut self, rid: u32) {
        let target = match self.cfg.mode {
            Mode::Colocated => self.least_loaded(0..self.insts.len()),
            Mode::Disagg => self.least_loaded(0..self.n_prefill),
        };
        self.submit(target, rid);
    }

    /// Appends `rid` to instance `i`'s queue and wakes it if idle.
    fn submit(&mut self, i: usize, rid: u32) {
        let p = self.core.reqs[rid as usize].prompt as u64;
        let inst = &mut self.insts[i];
        inst.queue.push_back(rid);
        inst.queued_tokens += p;
        self.wake(i);
    }

    /// Schedules a wake-up of instance `i` now, if it is idle and none is pending (`docs/serving-model.md#event-order` 1).
    fn wake(&mut self, i: usize) {
        let inst = &mut self.insts[i];
        if !inst.busy && !inst.wake_pending {
            inst.wake_pending = true;
            self.core.q.schedule_in(0.0, Ev::Wake(i as u32));
        }
    }

    /// Finishes `rid` now (population, completion, closed-loop successor, end of run).
    fn finish_now(&mut self, rid: u32) {
        let now = self.core.q.now();
        self.core.finish(rid, now);
    }

    // ── the KV transfer of the scheduled pools (`docs/levers.md#scheduled-pools`) ────────────────────

    /// Starts `rid`'s transfer now (its decode memory is allocated).
    fn start_transfer(&mut self, rid: u32) {
        if self.layers.is_some() {
            self.start_stream(rid);
            return;
        }
        let spec = {
            let p = self.core.reqs[rid as usize].prompt as u64;
            XferSpec::of(
                rid,
                &self.transfer_of(p - self.rs[rid as usize].ho_hit),
                None,
            )
        };
        self.link
            .submit(0, spec, &mut self.core.q, &mut self.core.notes);
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
        let p = self.core.reqs[rid as usize].prompt as u64;
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
        let now = self.core.q.now();
        let plan = LayerPlan::new(now, dt, layers);
        for k in 0..self.insts[i].part.len() {
            let (rid, c) = self.insts[i].part[k];
            if self.core.reqs[rid as usize].output <= 1 {
                continue;
            }
            let s = &mut self.rs[rid as usize];
            if s.xf_chunks.is_empty() {
                // Its prefix-cached tokens (none: no work), ready from the start.
                s.xf_chunks.push((now, 0.0, s.dp));
                self.core
                    .q
                    .schedule_in(dt / layers as f64, Ev::FirstSlice(rid));
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
        let p = self.core.reqs[rid as usize].prompt as u64;
        let spec = XferSpec::of(rid, &self.transfer_of(p), None);
        self.rs[rid as usize].xf_slot = self.link.submit_open(0, spec, &mut self.core.q);
    }

    /// `rid`'s transfer was granted now: it sends what its chunks have produced so far, and is
    /// closed at once if its last chunk has started.
    fn stream_granted(&mut self, rid: u32) {
        let layers = self.layers.expect("layer-wise");
        let mut f = self.core.q.now();
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
        let p = self.core.reqs[rid as usize].prompt as u64;
        let fixed = self.transfer_of(p).fixed_s;
        let s = &self.rs[rid as usize];
        let at = s.xf_sent + fixed;
        self.link.close(0, s.xf_slot, at, &mut self.core.q);
    }

    fn on_landed(&mut self, rid: u32, start: f64, busy_s: f64, dur_s: f64) {
        let p = self.core.reqs[rid as usize].prompt as u64;
        let x = self.transfer_of(p - self.rs[rid as usize].ho_hit);
        self.count_saved(p, x.kv_bytes);
        let transit = self.cfg.kv_transit.is_some();
        self.core.landed(rid, (start, busy_s, dur_s), &x, transit);
        let (src, dst) = {
            let s = &self.rs[rid as usize];
            (s.src as usize, s.dst as usize)
        };
        // free_held on the source, then land on the destination (`docs/serving-model.md#event-order` 5).
        self.free_held(src, rid);
        let d = &mut self.insts[dst];
        d.inflight -= 1;
        d.landed.push_back(rid);
        self.wake(dst);
    }

    // ── the result ───────────────────────────────────────────────────────

    fn finish_run(self) -> RunResult {
        let cfg = self.cfg;
        let mut instances = Vec::with_capacity(self.insts.len());
        for (i, inst) in self.insts.iter().enumerate() {
            let role = cfg.pools[inst.pool].role;
            let k = if inst.kind == Kind::Decode {
                i - self.n_prefill
            } else {
                i
            };
            instances.push(instance_result(role, k, inst.pool, inst.stats));
        }
        let report = report::scheduler_summary(self.lv, &self.insts, self.n_prefill, self.spec);
        let swap_j = report.swap.as_ref().map(|_| {
            let mut s = 0.0;
            for inst in &self.insts {
                s += inst.acc.swap_j;
            }
            s
        });
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
        let sched = result::SchedResult {
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
        let links = vec![LinkResult {
            name: link_name(cfg, 0),
            busy_s: t.busy_s,
            bytes: t.bytes,
            transfers: t.transfers,
        }];
        self.core
            .into_result(instances, Vec::new(), links, Some(Box::new(sched)))
    }
}

#[cfg(test)]
mod tests;
