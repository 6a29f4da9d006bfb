//! The serving model (`docs/serving-model.md#topology`–`docs/serving-model.md#event-order`): requests, prefill/decode/colocated instances as explicit
//! state machines, routers, the KV hand-off, and the end of the run. It drives the generic
//! [`EventQueue`] and asks the cost model how long each step and transfer takes; how bytes move on
//! a link is the link model's business ([`crate::link`]).
//!
//! # The hand-off (disaggregated mode)
//!
//! A hand-off starts at the first token (`--send whole`, the reference) or, layer-wise, when the
//! first layer's slices of its prefill batch are ready (`start + T / L`; one event per batch). Then:
//!
//! 1. `--reserve-kv-on transfer`: it waits, FIFO with head-of-line blocking, until a decode
//!    instance has `prompt + output` tokens of KV free, and reserves them on the least-loaded such
//!    instance (load = queue + running + hand-offs already bound for it; first minimum). The queue
//!    is served whenever a decode instance frees KV. The wait is `kv_reserved - handoff_start`.
//!    `--link-topology per-pair` (with `--reserve-kv-on arrival`): the decode instance is chosen the
//!    same way, without the memory condition.
//! 2. The transfer goes to its link: the shared one, its prefill instance's (`per-prefill`), or its
//!    prefill-decode pair's (`per-pair`). `kv_start` is when the link starts it (FIFO: channel
//!    grant; fair: at once).
//! 3. When its KV has landed (`kv_ready`) it joins the decode instance it is bound to, or the one
//!    the reference router picks then (least queue + running, first minimum). With the KV reserved
//!    at transfer, decode admission needs only a batch slot.
//!
//! With every option at its default this is the reference's event sequence, bit for bit.
//! Events per request stay bounded: O(1) for FIFO links (grant, end, release, plus one first-slice
//! event per layer-wise batch); fair links add O(1) per transfer while transfers do not overlap and
//! O(layers) per layer-wise transfer when they do (see [`crate::link`]).
//!
//! Requests live in a `Vec` indexed by rid; events carry indices; nothing is shared, so a run is
//! `Send`. Inter-token latencies are not stored per request: every decode-side instance keeps the end
//! time of each of its decode steps, and each request its admission step, from which every ITL is
//! reconstructed exactly at the end (`step_end[j] - step_end[j-1]`, the first one from the first
//! token), as the reference's fast path does.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use disagg_model::{transfer, Bound, CompressAt, CostModel, Error, KvTransit, SendMode, StepCost};

use crate::engine::books::{finish, Books, InstanceStats, LinkStats, OnReject, NO_COST};
use crate::engine::event::Ev;
use crate::engine::request::{Need, Req, NO_INST};
use crate::engine::result::{instance_name, link_name, LinkResult, RunResult};
use crate::engine::run::{self, instance_result, Core, Roles};
use crate::engine::EventQueue;
use crate::link::{LayerPlan, LinkEv, LinkModel, Sharing, XferSpec};
use crate::observer::{InstanceInfo, InstanceSample, Observer, StepEvent, StepKind};
use crate::pyrand::GenRequest;
use crate::scenario::{LinkTopology, Mode, ReserveKvOn, Role, SimConfig};
use crate::workload::ClosedLoop;

/// The decode instance of a CED model with the replay on decode (`docs/levers.md#ced`).
#[path = "ced.rs"]
mod ced;

/// A hand-off waiting for decode memory (`--reserve-kv-on transfer`).
#[derive(Clone, Copy, Debug)]
struct MemWait {
    rid: u32,
    p: u32,
    plan: Option<LayerPlan>,
}

#[derive(Clone, Copy, Debug)]
struct Planned {
    dt: f64,
    flops: f64,
    bytes: f64,
    ec: f64,
    em: f64,
    bound: Bound,
}

/// A prefill instance (`docs/cost-model.md#parallelism`).
struct PrefillInst {
    queue: VecDeque<u32>,
    queued_tokens: u64,
    busy: bool,
    wake_pending: bool,
    batch: Vec<u32>,
    tokens: u64,
    cur: StepCost,
    /// The optical engine's conversion energy and FLOPs of the step in flight.
    cur_optical: (f64, f64),
    step_start: f64,
    /// Layer-wise timing of the step in flight.
    plan: LayerPlan,
    stats: InstanceStats,
}

/// A decode instance: the plain per-step loop (`docs/cost-model.md#parallelism`) or the fast macro-step path (`docs/cost-model.md#parallelism`).
struct DecodeInst {
    queue: VecDeque<u32>,
    /// Plain path: running requests in admission order.
    running: Vec<u32>,
    n_running: usize,
    kv_used: u64,
    ctx_sum: u64,
    step_end: Vec<f64>,
    busy: bool,
    wake_pending: bool,
    // plain path
    cur: StepCost,
    step_start: f64,
    // fast path
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    horizon: usize,
    epoch: u32,
    in_macro: bool,
    interrupted_done: usize,
    plan_b: u64,
    plan_ends: Vec<f64>,
    plan_steps: Vec<Planned>,
    stats: InstanceStats,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Prefill,
    Decode,
}

/// A colocated instance (`docs/cost-model.md#parallelism`).
struct ColocInst {
    queue: VecDeque<u32>,
    running: Vec<u32>,
    kv_used: u64,
    ctx_sum: u64,
    step_end: Vec<f64>,
    busy: bool,
    wake_pending: bool,
    phase: Phase,
    batch: Vec<u32>,
    tokens: u64,
    cur: StepCost,
    /// The optical engine's conversion energy and FLOPs of the prefill step in flight.
    cur_optical: (f64, f64),
    step_start: f64,
    stats: InstanceStats,
}

/// Every KV link and the hand-off bookkeeping around them.
struct LinkState {
    links: Vec<LinkModel>,
    /// Hand-offs waiting for decode memory, FIFO.
    mem_wait: VecDeque<MemWait>,
    /// Per decode instance: hand-offs bound for it whose KV has not landed.
    inbound: Vec<u32>,
    topology: LinkTopology,
    /// Layer-wise streaming with this many layers (`None`: whole cache).
    layers: Option<u32>,
    /// Reserve decode KV before the transfer.
    reserve: bool,
    /// Choose the decode instance when the hand-off starts.
    preassign: bool,
    n_decode: u32,
}

/// The decode-step state a plain decode instance and a colocated instance share.
struct DecodeSide<'b> {
    running: &'b mut Vec<u32>,
    step_end: &'b mut Vec<f64>,
    ctx_sum: &'b mut u64,
    kv_used: &'b mut u64,
    stats: &'b mut InstanceStats,
    cur: &'b StepCost,
    step_start: f64,
}

/// Commits a plain decode step that ended at `now` (`docs/serving-model.md#decode-instance` step 4): accounting, one
/// token for every running request, and the finishes, in running order.
#[allow(clippy::too_many_arguments)]
#[inline]
fn commit_decode_step<O: Observer>(
    side: DecodeSide<'_>,
    instance: usize,
    idle_w: f64,
    need: Need,
    now: f64,
    reqs: &mut [Req],
    books: &mut Books,
    q: &mut EventQueue<Ev>,
    obs: &mut O,
) {
    let b = side.running.len() as u64;
    side.stats.account_cost(side.cur, b, idle_w);
    obs.step(&StepEvent {
        instance,
        kind: StepKind::Decode,
        start: side.step_start,
        dur: side.cur.time_s,
        batch: b as u32,
        tokens: b,
    });
    let j = side.step_end.len() as u64;
    side.step_end.push(now);
    *side.ctx_sum += b;
    let kv_used = side.kv_used;
    let ctx_sum = side.ctx_sum;
    side.running.retain(|&rid| {
        let r = &reqs[rid as usize];
        if r.adm + r.output as u64 - 2 == j {
            *kv_used -= need.of(r);
            *ctx_sum -= r.prompt as u64 + r.output as u64;
            finish(reqs, books, q, obs, rid, now);
            false
        } else {
            true
        }
    });
}

/// A run on the plain instances.
struct Sim<'a, O: Observer> {
    /// Requests, events, books, arrivals, samples, link notes and totals.
    core: Core<'a, O>,
    cfg: &'a SimConfig,
    prefill: Vec<PrefillInst>,
    decode: Vec<DecodeInst>,
    coloc: Vec<ColocInst>,
    link: LinkState,
    scratch: Vec<u32>,
    // hoisted
    pcost: Option<&'a CostModel>,
    dcost: Option<&'a CostModel>,
    ccost: Option<&'a CostModel>,
    p_idle: f64,
    d_idle: f64,
    c_idle: f64,
    /// Static power of the prefill, colocated instances' optical engines, W.
    p_ostatic: f64,
    c_ostatic: f64,
    /// The model is FFT-mixing (`docs/levers.md#fft-mixing`): prefills through `prefill_optical`, fast
    /// decode steps through `fft_decode_work`.
    fft: bool,
    kv_cap0: u64,
    need: Need,
    /// Decode steps are costed row by row (a model with sliding-window or chunked layers,
    /// [`CostModel::decode_rows`]); the fast macro-step path, which advances a total context,
    /// is then not taken.
    rows_cost: bool,
    transit: Option<&'a KvTransit>,
    endpoint: Option<&'a KvTransit>,
    n_prefill: u32,
    max_prefill_tokens: u64,
    max_batch: usize,
    /// CED with the replay on decode (`docs/levers.md#ced`): the replay window W; `None` for
    /// every other run.
    ced_replay: Option<u64>,
}

/// The cached context of running row `r` at a decode-side instance's step `j` (steps so far):
/// its prompt, its first token, and one token per step since its admission at step `r.adm`.
#[inline]
fn row_ctx(r: &Req, j: u64) -> u64 {
    r.prompt as u64 + 1 + (j - r.adm)
}

/// A decode step over `running` after `steps` steps of the instance: `decode_sum(ctx, b)`, or
/// row by row ([`CostModel::decode_rows`]) when `rows_cost`.
#[inline]
fn decode_cost(
    cm: &CostModel,
    rows_cost: bool,
    ctx: u64,
    running: &[u32],
    steps: usize,
    reqs: &[Req],
) -> StepCost {
    if rows_cost {
        let j = steps as u64;
        cm.decode_rows(
            ctx,
            &mut running.iter().map(|&h| row_ctx(&reqs[h as usize], j)),
        )
    } else {
        cm.decode_sum(ctx, running.len() as u64)
    }
}

fn new_decode() -> DecodeInst {
    DecodeInst {
        queue: VecDeque::new(),
        running: Vec::new(),
        n_running: 0,
        kv_used: 0,
        ctx_sum: 0,
        step_end: Vec::new(),
        busy: false,
        wake_pending: false,
        cur: NO_COST,
        step_start: 0.0,
        heap: BinaryHeap::new(),
        horizon: 16,
        epoch: 0,
        in_macro: false,
        interrupted_done: 0,
        plan_b: 0,
        plan_ends: Vec::with_capacity(16),
        plan_steps: Vec::with_capacity(16),
        stats: InstanceStats::default(),
    }
}

/// Runs `workload` on the plain instances of `cfg` (whose `levers` are off).
pub(crate) fn run<O: Observer>(
    cfg: &SimConfig,
    workload: &[GenRequest],
    closed: Option<&ClosedLoop>,
    obs: &mut O,
) -> Result<RunResult, Error> {
    let mut sim = Sim::new(cfg, workload, obs);
    sim.core.close_loop(closed);
    run::run(&mut sim)?;
    Ok(sim.finish_run())
}

impl<'a, O: Observer + 'a> Roles<'a, O> for Sim<'a, O> {
    const ON_REJECT: OnReject = OnReject::ReleaseNextTurn;

    #[inline(always)]
    fn core(&mut self) -> &mut Core<'a, O> {
        &mut self.core
    }

    fn instance_infos(&self) -> Vec<InstanceInfo> {
        Sim::instance_infos(self)
    }

    #[inline]
    fn rejects(&self, rid: u32) -> bool {
        Sim::rejects(self, rid)
    }

    #[inline]
    fn route(&mut self, rid: u32) {
        Sim::route(self, rid)
    }

    #[inline]
    fn on_wake(&mut self, g: u32) {
        Sim::on_wake(self, g)
    }

    #[inline]
    fn on_step_end(&mut self, g: u32) {
        Sim::on_step_end(self, g)
    }

    #[inline]
    fn on_macro_end(&mut self, g: u32, epoch: u32) {
        Sim::on_macro_end(self, g, epoch)
    }

    #[inline]
    fn on_first_slice(&mut self, p: u32) {
        Sim::on_first_slice(self, p as usize)
    }

    #[inline]
    fn on_link(&mut self, l: u32, e: LinkEv) {
        self.link.links[l as usize].on_event(l, e, &mut self.core.q, &mut self.core.notes);
    }

    #[inline]
    fn on_kv_start(&mut self, rid: u32) {
        Sim::on_kv_start(self, rid)
    }

    #[inline]
    fn on_kv_landed(&mut self, rid: u32, start: f64, busy_s: f64, dur_s: f64) {
        Sim::on_kv_landed(self, rid, start, busy_s, dur_s)
    }

    #[inline]
    fn take_sample(&mut self) {
        Sim::take_sample(self)
    }
}

impl<'a, O: Observer> Sim<'a, O> {
    fn new(cfg: &'a SimConfig, workload: &[GenRequest], obs: &'a mut O) -> Self {
        let mut reqs: Vec<Req> = workload.iter().map(Req::new).collect();
        if cfg.model.kv_is_bounded() {
            for r in &mut reqs {
                let u = cfg.model.kv_units(r.prompt as u64 + r.output as u64);
                r.units = u32::try_from(u).unwrap_or(u32::MAX);
            }
        }
        let pp = cfg.prefill_pool();
        let dp = cfg.decode_pool();
        let cp = cfg.colocated_pool();
        let (n_p, n_d, n_c) = match cfg.mode {
            Mode::Disagg => (
                pp.map_or(0, |p| p.instances),
                dp.map_or(0, |p| p.instances),
                0,
            ),
            Mode::Colocated => (0, 0, cp.map_or(0, |p| p.instances)),
        };
        let prefill = (0..n_p)
            .map(|_| PrefillInst {
                queue: VecDeque::new(),
                queued_tokens: 0,
                busy: false,
                wake_pending: false,
                batch: Vec::new(),
                tokens: 0,
                cur: NO_COST,
                cur_optical: (0.0, 0.0),
                step_start: 0.0,
                plan: LayerPlan::new(0.0, 0.0, 1),
                stats: InstanceStats::default(),
            })
            .collect();
        let decode = (0..n_d).map(|_| new_decode()).collect();
        let coloc = (0..n_c)
            .map(|_| ColocInst {
                queue: VecDeque::new(),
                running: Vec::new(),
                kv_used: 0,
                ctx_sum: 0,
                step_end: Vec::new(),
                busy: false,
                wake_pending: false,
                phase: Phase::Prefill,
                batch: Vec::new(),
                tokens: 0,
                cur: NO_COST,
                cur_optical: (0.0, 0.0),
                step_start: 0.0,
                stats: InstanceStats::default(),
            })
            .collect();
        let kv_cap0 = match cfg.mode {
            Mode::Disagg => dp.map_or(0, |p| p.kv_capacity_tokens),
            Mode::Colocated => cp.map_or(0, |p| p.kv_capacity_tokens),
        };
        let transit = cfg.kv_transit.as_ref();
        let endpoint = transit.filter(|t| t.at == CompressAt::Endpoint);
        let n_inst = n_p + n_d + n_c;
        let ho = cfg.handoff;
        // `--link-sharing` is the link's discipline (one enum: `disagg_model::Sharing`).
        let sharing: Sharing = ho.link_sharing;
        Sim {
            core: Core::new(cfg, reqs, n_inst, LinkStats::default(), obs),
            cfg,
            prefill,
            decode,
            coloc,
            link: LinkState {
                links: (0..cfg.link_count())
                    .map(|_| LinkModel::new(sharing, cfg.link.channels))
                    .collect(),
                mem_wait: VecDeque::new(),
                inbound: vec![0; n_d],
                topology: ho.link_topology,
                layers: (ho.send == SendMode::Layerwise)
                    .then(|| cfg.model.n_layers.clamp(1, u32::MAX as u64) as u32),
                reserve: ho.reserve_kv_on == ReserveKvOn::Transfer,
                preassign: ho.reserve_kv_on == ReserveKvOn::Transfer
                    || ho.link_topology == LinkTopology::PerPair,
                n_decode: n_d as u32,
            },
            scratch: Vec::new(),
            pcost: pp.map(|p| &p.cost),
            dcost: dp.map(|p| &p.cost),
            ccost: cp.map(|p| &p.cost),
            p_idle: pp.map_or(0.0, |p| p.cost.idle_w()),
            d_idle: dp.map_or(0.0, |p| p.cost.idle_w()),
            c_idle: cp.map_or(0.0, |p| p.cost.idle_w()),
            p_ostatic: pp.map_or(0.0, |p| p.cost.optical_static_w()),
            c_ostatic: cp.map_or(0.0, |p| p.cost.optical_static_w()),
            fft: cfg.model.fft.is_some(),
            kv_cap0,
            rows_cost: cfg.model.arch.as_deref().is_some_and(|a| a.has_windows()),
            need: if cfg.model.kv_is_bounded() {
                Need::Units
            } else if cfg.model.kv_bytes_per_token() == 0.0 {
                Need::One
            } else {
                Need::Tokens
            },
            transit,
            endpoint,
            n_prefill: n_p as u32,
            max_prefill_tokens: cfg.max_prefill_tokens,
            max_batch: cfg.max_decode_batch,
            ced_replay: cfg.ced_decode_replay(),
        }
    }

    fn instance_infos(&self) -> Vec<InstanceInfo> {
        let mut v = Vec::new();
        for pool in &self.cfg.pools {
            let n = match (self.cfg.mode, pool.role) {
                (Mode::Disagg, Role::Colocated)
                | (Mode::Colocated, Role::Prefill | Role::Decode) => 0,
                _ => pool.instances,
            };
            for i in 0..n {
                v.push(InstanceInfo {
                    name: instance_name(pool.role, i),
                    role: pool.role,
                    kv_capacity_tokens: pool.kv_capacity_tokens,
                });
            }
        }
        v
    }

    #[inline]
    fn need(&self, rid: u32) -> u64 {
        self.need.of(&self.core.reqs[rid as usize])
    }

    fn finish_run(self) -> RunResult {
        let mut instances = Vec::new();
        let mut step_ends = Vec::new();
        for (i, p) in self.prefill.iter().enumerate() {
            instances.push(instance_result(Role::Prefill, i, 0, p.stats));
        }
        for (i, d) in self.decode.into_iter().enumerate() {
            instances.push(instance_result(Role::Decode, i, 1, d.stats));
            step_ends.push(d.step_end);
        }
        for (i, c) in self.coloc.into_iter().enumerate() {
            instances.push(instance_result(Role::Colocated, i, 0, c.stats));
            step_ends.push(c.step_end);
        }
        let links = self
            .link
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let t = l.totals();
                LinkResult {
                    name: link_name(self.cfg, i),
                    busy_s: t.busy_s,
                    bytes: t.bytes,
                    transfers: t.transfers,
                }
            })
            .collect();
        self.core.into_result(instances, step_ends, links, None)
    }

    fn take_sample(&mut self) {
        let mut k = 0;
        for p in &self.prefill {
            self.core.samples[k] = InstanceSample {
                queue: p.queue.len(),
                running: 0,
                kv_used: 0,
                kv_cap: self.cfg.prefill_pool().map_or(0, |x| x.kv_capacity_tokens),
            };
            k += 1;
        }
        let dcap = self.cfg.decode_pool().map_or(0, |x| x.kv_capacity_tokens);
        for d in &self.decode {
            self.core.samples[k] = InstanceSample {
                queue: d.queue.len(),
                running: d.n_running,
                kv_used: d.kv_used,
                kv_cap: dcap,
            };
            k += 1;
        }
        let ccap = self
            .cfg
            .colocated_pool()
            .map_or(0, |x| x.kv_capacity_tokens);
        for c in &self.coloc {
            self.core.samples[k] = InstanceSample {
                queue: c.queue.len(),
                running: c.running.len(),
                kv_used: c.kv_used,
                kv_cap: ccap,
            };
            k += 1;
        }
        let now = self.core.q.now();
        let links = &self.link.links;
        self.core.emit_sample(
            links.iter().map(|l| l.waiting()).sum(),
            links.iter().map(|l| l.in_flight()).sum(),
            links.iter().map(|l| l.bytes_in_flight(now)).sum(),
            self.link.mem_wait.len(),
        );
    }

    // ── arrivals and routing ─────────────────────────────────────────────

    /// A request that needs more KV than a decode-side instance has is rejected at arrival.
    #[inline]
    fn rejects(&self, i: u32) -> bool {
        self.need(i) > self.kv_cap0
    }

    /// Routes an admitted request (`docs/exactness.md#integer-flops` step 3).
    #[inline]
    fn route(&mut self, i: u32) {
        {
            match self.cfg.mode {
                Mode::Disagg => {
                    // First instance with the least queued prompt tokens (`docs/cost-model.md#parallelism`).
                    let mut best = 0;
                    let mut best_load = u64::MAX;
                    for (k, p) in self.prefill.iter().enumerate() {
                        if p.queued_tokens < best_load {
                            best_load = p.queued_tokens;
                            best = k;
                        }
                    }
                    self.submit_prefill(best, i);
                }
                Mode::Colocated => {
                    let mut best = 0;
                    let mut best_load = usize::MAX;
                    for (k, c) in self.coloc.iter().enumerate() {
                        let l = c.queue.len() + c.running.len();
                        if l < best_load {
                            best_load = l;
                            best = k;
                        }
                    }
                    self.submit_coloc(best, i);
                }
            }
        }
    }

    fn submit_prefill(&mut self, p: usize, rid: u32) {
        let inst = &mut self.prefill[p];
        inst.queue.push_back(rid);
        inst.queued_tokens += self.core.reqs[rid as usize].prompt as u64;
        if !inst.busy && !inst.wake_pending {
            inst.wake_pending = true;
            self.core.q.schedule_in(0.0, Ev::Wake(p as u32));
        }
    }

    fn submit_coloc(&mut self, c: usize, rid: u32) {
        let inst = &mut self.coloc[c];
        inst.queue.push_back(rid);
        if !inst.busy && !inst.wake_pending {
            inst.wake_pending = true;
            self.core.q.schedule_in(0.0, Ev::Wake(c as u32));
        }
    }

    fn submit_decode(&mut self, d: usize, rid: u32) {
        let g = self.n_prefill + d as u32;
        let inst = &mut self.decode[d];
        inst.queue.push_back(rid);
        if !inst.busy && !inst.wake_pending {
            inst.wake_pending = true;
            self.core.q.schedule_in(0.0, Ev::Wake(g));
        }
        if inst.in_macro {
            // Interrupt (URGENT in SimPy, handled right after this handler): finish the step in
            // flight and stop at its boundary (`docs/cost-model.md#parallelism`).
            inst.in_macro = false;
            let now = self.core.q.now();
            let k = inst.plan_ends.len();
            let j = inst.plan_ends.partition_point(|&e| e <= now).min(k - 1);
            inst.epoch = inst.epoch.wrapping_add(1);
            inst.interrupted_done = j + 1;
            let delay = inst.plan_ends[j] - now;
            self.core.q.schedule_in(delay, Ev::MacroEnd(g, inst.epoch));
        }
    }

    // ── dispatch ─────────────────────────────────────────────────────────

    fn on_wake(&mut self, g: u32) {
        match self.cfg.mode {
            Mode::Disagg => {
                if g < self.n_prefill {
                    self.prefill[g as usize].wake_pending = false;
                    self.prefill_body(g as usize);
                } else {
                    let d = (g - self.n_prefill) as usize;
                    self.decode[d].wake_pending = false;
                    self.decode_body(d);
                }
            }
            Mode::Colocated => {
                self.coloc[g as usize].wake_pending = false;
                self.coloc_body(g as usize);
            }
        }
    }

    fn on_step_end(&mut self, g: u32) {
        match self.cfg.mode {
            Mode::Disagg => {
                if g < self.n_prefill {
                    self.prefill_step_end(g as usize);
                } else if self.ced_replay.is_some() {
                    self.ced_step_end((g - self.n_prefill) as usize);
                } else {
                    self.plain_decode_step_end((g - self.n_prefill) as usize);
                }
            }
            Mode::Colocated => self.coloc_step_end(g as usize),
        }
    }

    // ── prefill (`docs/cost-model.md#parallelism`) ───────────────────────────────────────────────────

    fn prefill_body(&mut self, p: usize) {
        let now = self.core.q.now();
        let inst = &mut self.prefill[p];
        if inst.queue.is_empty() {
            inst.busy = false;
            return;
        }
        inst.batch.clear();
        let mut tokens = 0u64;
        while let Some(&h) = inst.queue.front() {
            let pl = self.core.reqs[h as usize].prompt as u64;
            if !inst.batch.is_empty() && tokens + pl > self.max_prefill_tokens {
                break;
            }
            inst.queue.pop_front();
            inst.queued_tokens -= pl;
            inst.batch.push(h);
            tokens += pl;
        }
        let reqs = &mut self.core.reqs;
        for &rid in &inst.batch {
            reqs[rid as usize].prefill_start = now;
        }
        let cm = self.pcost.expect("prefill pool");
        // CED, replay on decode: every request is handed off (`docs/levers.md#ced`).
        let ced = self.ced_replay.is_some();
        let (mut cost, optical) = if self.fft {
            let lens: Vec<u64> = inst
                .batch
                .iter()
                .map(|&r| reqs[r as usize].prompt as u64)
                .collect();
            let o = cm.prefill_optical(&lens);
            (o.step, (o.optical_j, o.optical_flops))
        } else {
            (
                cm.prefill(inst.batch.iter().map(|&r| reqs[r as usize].prompt as u64)),
                (0.0, 0.0),
            )
        };
        inst.cur_optical = optical;
        if let Some(tr) = self.endpoint {
            cost = cm.endpoint_pass(
                cost,
                tr,
                inst.batch
                    .iter()
                    .map(|&r| &reqs[r as usize])
                    .filter(|r| ced || r.output > 1)
                    .map(|r| r.prompt as u64),
            );
        }
        inst.cur = cost;
        inst.step_start = now;
        inst.tokens = tokens;
        inst.busy = true;
        if let Some(layers) = self.link.layers {
            // Layer-wise: the hand-offs start when the first layer's slices are ready (scheduled
            // before the step end, so that with one layer it still comes first).
            if inst.batch.iter().any(|&r| reqs[r as usize].output > 1) {
                inst.plan = LayerPlan::new(now, cost.time_s, layers);
                self.core
                    .q
                    .schedule_in(cost.time_s / layers as f64, Ev::FirstSlice(p as u32));
            }
        }
        self.core.q.schedule_in(cost.time_s, Ev::StepEnd(p as u32));
    }

    fn prefill_step_end(&mut self, p: usize) {
        let now = self.core.q.now();
        let p_idle = self.p_idle;
        let p_ostatic = self.p_ostatic;
        let layerwise = self.link.layers.is_some();
        let ced = self.ced_replay.is_some();
        {
            let Sim {
                prefill,
                scratch,
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
            let inst = &mut prefill[p];
            let n = inst.batch.len() as u64;
            inst.stats
                .account_prefill(&inst.cur, inst.cur_optical, n, p_idle, p_ostatic);
            obs.step(&StepEvent {
                instance: p,
                kind: StepKind::Prefill,
                start: inst.step_start,
                dur: inst.cur.time_s,
                batch: n as u32,
                tokens: inst.tokens,
            });
            scratch.clear();
            if ced {
                // CED, replay on decode (`docs/levers.md#ced`): no first token here; every request is handed off.
                for &rid in &inst.batch {
                    reqs[rid as usize].prefill_done = now;
                    scratch.push(rid);
                }
            } else {
                for &rid in &inst.batch {
                    let r = &mut reqs[rid as usize];
                    r.first_token = now;
                    if r.output <= 1 {
                        finish(reqs, books, q, obs, rid, now);
                    } else if !layerwise {
                        scratch.push(rid);
                    }
                }
            }
        }
        // The instance loops at once (same timestamp), then the hand-off processes start and
        // request the link, in batch order (`docs/cost-model.md#catalogue` a).
        self.prefill_body(p);
        for k in 0..self.scratch.len() {
            let rid = self.scratch[k];
            self.start_handoff(rid, p as u32, None);
        }
    }

    /// Layer-wise: the first slices of prefill instance `p`'s batch are ready; its hand-offs start
    /// in batch order.
    fn on_first_slice(&mut self, p: usize) {
        let plan = self.prefill[p].plan;
        self.scratch.clear();
        for &rid in &self.prefill[p].batch {
            if self.core.reqs[rid as usize].output > 1 {
                self.scratch.push(rid);
            }
        }
        for k in 0..self.scratch.len() {
            let rid = self.scratch[k];
            self.start_handoff(rid, p as u32, Some(plan));
        }
    }

    // ── hand-off and KV links (`docs/levers.md#scheduled-instances`) ─────────────────────────────────────

    /// Decode router: the first instance with the least queue + running (+ hand-offs already bound
    /// for it, which is 0 unless decode instances are chosen at hand-off start), among those that
    /// have `room` free KV tokens if given (`docs/cost-model.md#parallelism`).
    fn pick_decode(&self, room: Option<u64>) -> Option<usize> {
        let cap = self.kv_cap0;
        let mut best = None;
        let mut best_load = usize::MAX;
        for (k, d) in self.decode.iter().enumerate() {
            if let Some(need) = room {
                if d.kv_used + need > cap {
                    continue;
                }
            }
            let l = d.queue.len() + d.n_running + self.link.inbound[k] as usize;
            if l < best_load {
                best_load = l;
                best = Some(k);
            }
        }
        best
    }

    /// A hand-off starts now: reserve decode memory if asked to (or wait for it), choose the decode
    /// instance if the topology needs it, then submit the transfer to its link.
    fn start_handoff(&mut self, rid: u32, p: u32, plan: Option<LayerPlan>) {
        let now = self.core.q.now();
        self.core.reqs[rid as usize].kv_req = now;
        if self.link.reserve {
            self.link.mem_wait.push_back(MemWait { rid, p, plan });
            if self.link.mem_wait.len() == 1 {
                self.serve_mem_waiters();
            }
        } else if self.link.preassign {
            let d = self.pick_decode(None).expect("a decode instance");
            self.bind(rid, d);
            self.submit_link(rid, p, plan);
        } else {
            self.submit_link(rid, p, plan);
        }
    }

    /// Binds `rid`'s hand-off to decode instance `d`.
    #[inline]
    fn bind(&mut self, rid: u32, d: usize) {
        self.core.reqs[rid as usize].dtarget = d as u32;
        self.link.inbound[d] += 1;
    }

    /// Serves the hand-offs waiting for decode memory, FIFO with head-of-line blocking: the head
    /// goes to the least-loaded decode instance that can hold its prompt + output.
    fn serve_mem_waiters(&mut self) {
        let now = self.core.q.now();
        while let Some(&w) = self.link.mem_wait.front() {
            let need = self.need(w.rid);
            let Some(d) = self.pick_decode(Some(need)) else {
                break;
            };
            self.link.mem_wait.pop_front();
            self.decode[d].kv_used += need;
            self.core.reqs[w.rid as usize].kv_mem = now;
            self.bind(w.rid, d);
            self.submit_link(w.rid, w.p, w.plan);
        }
    }

    fn submit_link(&mut self, rid: u32, p: u32, plan: Option<LayerPlan>) {
        let r = &self.core.reqs[rid as usize];
        let l = match self.link.topology {
            LinkTopology::Shared => 0,
            LinkTopology::PerPrefill => p,
            LinkTopology::PerPair => p * self.link.n_decode + r.dtarget,
        };
        let x = self.cfg.handoff_transfer(
            transfer(
                &self.cfg.model,
                &self.cfg.link,
                self.transit,
                r.prompt as u64,
            ),
            r.prompt as u64,
        );
        let spec = XferSpec::of(rid, &x, plan);
        self.link.links[l as usize].submit(l, spec, &mut self.core.q, &mut self.core.notes);
        self.take_notes();
    }

    /// Acts on what the links reported.
    fn on_kv_start(&mut self, rid: u32) {
        let r = &self.core.reqs[rid as usize];
        let asked = if r.kv_mem.is_nan() {
            r.kv_req
        } else {
            r.kv_mem
        };
        self.core.kv_started(rid, asked);
    }

    fn on_kv_landed(&mut self, rid: u32, start: f64, busy_s: f64, dur_s: f64) {
        let r = &self.core.reqs[rid as usize];
        let x = transfer(
            &self.cfg.model,
            &self.cfg.link,
            self.transit,
            r.prompt as u64,
        );
        let target = r.dtarget;
        self.core
            .landed(rid, (start, busy_s, dur_s), &x, self.transit.is_some());
        let d = if target != NO_INST {
            self.link.inbound[target as usize] -= 1;
            target as usize
        } else {
            // Decode router: first instance with the least queue + running (`docs/cost-model.md#parallelism`).
            self.pick_decode(None).expect("a decode instance")
        };
        self.submit_decode(d, rid);
    }

    // ── decode (`docs/cost-model.md#parallelism`) ──────────────────────────────────────────────

    fn decode_body(&mut self, d: usize) {
        if self.cfg.fast_forward && !self.rows_cost {
            self.fast_body(d);
        } else if let Some(w) = self.ced_replay {
            self.ced_body(d, w);
        } else {
            self.plain_body(d);
        }
    }

    /// Admits decode instance `d`'s queue FIFO with head-of-line blocking under the batch cap
    /// and the KV capacity (KV reserved at transfer: a batch slot suffices). Each admitted row
    /// gets `adm` (the index of its first decoding step); `count_ctx` adds its `prompt + 1`
    /// positions to the instance's context.
    #[inline]
    pub(super) fn admit_fifo(&mut self, d: usize, adm: u64, count_ctx: bool) {
        let now = self.core.q.now();
        let need_kind = self.need;
        let cap = self.kv_cap0;
        let reserved = self.link.reserve;
        let inst = &mut self.decode[d];
        while let Some(&h) = inst.queue.front() {
            if inst.running.len() >= self.max_batch {
                break;
            }
            let r = &mut self.core.reqs[h as usize];
            let need = need_kind.of(r);
            if !reserved {
                if inst.kv_used + need > cap {
                    break;
                }
                inst.kv_used += need;
            }
            inst.queue.pop_front();
            r.decode_start = now;
            r.adm = adm;
            r.dinst = d as u32;
            inst.running.push(h);
            if count_ctx {
                inst.ctx_sum += r.prompt as u64 + 1;
            }
        }
    }

    fn plain_body(&mut self, d: usize) {
        let now = self.core.q.now();
        let adm = self.decode[d].step_end.len() as u64;
        self.admit_fifo(d, adm, true);
        let inst = &mut self.decode[d];
        inst.n_running = inst.running.len();
        if inst.running.is_empty() {
            inst.busy = false;
            return;
        }
        let cm = self.dcost.expect("decode pool");
        let cost = decode_cost(
            cm,
            self.rows_cost,
            inst.ctx_sum,
            &inst.running,
            inst.step_end.len(),
            &self.core.reqs,
        );
        inst.cur = cost;
        inst.step_start = now;
        inst.busy = true;
        self.core
            .q
            .schedule_in(cost.time_s, Ev::StepEnd(self.n_prefill + d as u32));
    }

    fn plain_decode_step_end(&mut self, d: usize) {
        let now = self.core.q.now();
        let need_kind = self.need;
        let d_idle = self.d_idle;
        let g = self.n_prefill as usize + d;
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
            let side = DecodeSide {
                running: &mut inst.running,
                step_end: &mut inst.step_end,
                ctx_sum: &mut inst.ctx_sum,
                kv_used: &mut inst.kv_used,
                stats: &mut inst.stats,
                cur: &inst.cur,
                step_start: inst.step_start,
            };
            commit_decode_step(side, g, d_idle, need_kind, now, reqs, books, q, obs);
            inst.n_running = inst.running.len();
        }
        self.plain_body(d);
        if !self.link.mem_wait.is_empty() {
            self.serve_mem_waiters();
        }
    }

    fn fast_body(&mut self, d: usize) {
        let now = self.core.q.now();
        let need_kind = self.need;
        let cap = self.kv_cap0;
        let reserved = self.link.reserve;
        let inst = &mut self.decode[d];
        while let Some(&h) = inst.queue.front() {
            if inst.n_running >= self.max_batch {
                break;
            }
            let r = &mut self.core.reqs[h as usize];
            let need = need_kind.of(r);
            if !reserved {
                if inst.kv_used + need > cap {
                    break;
                }
                inst.kv_used += need;
            }
            inst.queue.pop_front();
            r.decode_start = now;
            r.adm = inst.step_end.len() as u64;
            r.dinst = d as u32;
            inst.n_running += 1;
            inst.ctx_sum += r.prompt as u64 + 1;
            // finish step = adm + output - tokens_out - 1, tokens_out = 1
            inst.heap.push(Reverse((r.adm + r.output as u64 - 2, h)));
        }
        if inst.n_running == 0 {
            inst.busy = false;
            return;
        }
        inst.busy = true;
        let b = inst.n_running as u64;
        let base = inst.step_end.len() as u64;
        let Reverse((fin0, _)) = *inst.heap.peek().expect("running implies a finish");
        let k = ((fin0 - base + 1) as usize).min(inst.horizon);
        let cm = self.dcost.expect("decode pool");
        let fft = self.fft;
        inst.plan_ends.clear();
        inst.plan_steps.clear();
        let mut t = now;
        let mut ctx = inst.ctx_sum;
        for _ in 0..k {
            let (ff, by) = if fft {
                // An FFT-mixing model's FLOPs are a double (`docs/levers.md#fft-mixing`).
                cm.fft_decode_work(ctx, b)
            } else {
                let (f, by) = cm.decode_work(ctx, b);
                (disagg_model::pymath::fl(f), by)
            };
            let raw = cm.step_time_raw(ff, by);
            let dt = cm.step_time(raw.t, b);
            t += dt;
            inst.plan_ends.push(t);
            inst.plan_steps.push(Planned {
                dt,
                flops: ff,
                bytes: by,
                ec: raw.ec,
                em: raw.em,
                bound: raw.bound,
            });
            ctx += b;
        }
        inst.plan_b = b;
        inst.in_macro = true;
        inst.interrupted_done = 0;
        inst.epoch = inst.epoch.wrapping_add(1);
        let delay = t - now;
        self.core
            .q
            .schedule_in(delay, Ev::MacroEnd(self.n_prefill + d as u32, inst.epoch));
    }

    fn on_macro_end(&mut self, g: u32, epoch: u32) {
        let d = (g - self.n_prefill) as usize;
        let need_kind = self.need;
        let d_idle = self.d_idle;
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
            if inst.epoch != epoch || !inst.busy {
                return; // a macro-step timeout that an interrupt superseded
            }
            let done = if inst.interrupted_done > 0 {
                let done = inst.interrupted_done;
                inst.horizon = 8.max(2 * done);
                done
            } else {
                inst.horizon = 4096.min(inst.horizon * 2);
                inst.plan_ends.len()
            };
            inst.in_macro = false;
            inst.interrupted_done = 0;
            let b = inst.plan_b;
            for i in 0..done {
                let s = inst.plan_steps[i];
                inst.stats
                    .account(s.dt, s.flops, s.bytes, b, s.ec, s.em, s.bound, d_idle);
                obs.step(&StepEvent {
                    instance: g as usize,
                    kind: StepKind::Decode,
                    start: inst.plan_ends[i] - s.dt,
                    dur: s.dt,
                    batch: b as u32,
                    tokens: b,
                });
            }
            inst.step_end.extend_from_slice(&inst.plan_ends[..done]);
            inst.ctx_sum += b * done as u64;
            let n = inst.step_end.len() as u64;
            while let Some(&Reverse((fin, rid))) = inst.heap.peek() {
                if fin >= n {
                    break;
                }
                inst.heap.pop();
                let r = &reqs[rid as usize];
                let need = need_kind.of(r);
                inst.ctx_sum -= r.prompt as u64 + r.output as u64;
                inst.kv_used -= need;
                inst.n_running -= 1;
                let t = inst.step_end[fin as usize];
                finish(reqs, books, q, obs, rid, t);
            }
        }
        self.fast_body(d);
        if !self.link.mem_wait.is_empty() {
            self.serve_mem_waiters();
        }
    }

    // ── colocated (`docs/cost-model.md#parallelism`) ─────────────────────────────────────────────────

    fn coloc_body(&mut self, c: usize) {
        let now = self.core.q.now();
        let need_kind = self.need;
        let cap = self.kv_cap0;
        let inst = &mut self.coloc[c];
        inst.batch.clear();
        let mut tokens = 0u64;
        while let Some(&h) = inst.queue.front() {
            if inst.running.len() + inst.batch.len() >= self.max_batch {
                break;
            }
            let r = &self.core.reqs[h as usize];
            let pl = r.prompt as u64;
            if !inst.batch.is_empty() && tokens + pl > self.max_prefill_tokens {
                break;
            }
            let need = need_kind.of(r);
            if inst.kv_used + need > cap {
                break;
            }
            inst.queue.pop_front();
            inst.kv_used += need;
            inst.batch.push(h);
            tokens += pl;
        }
        let cm = self.ccost.expect("colocated pool");
        if !inst.batch.is_empty() {
            let reqs = &mut self.core.reqs;
            for &rid in &inst.batch {
                reqs[rid as usize].prefill_start = now;
            }
            if self.fft {
                let lens: Vec<u64> = inst
                    .batch
                    .iter()
                    .map(|&r| reqs[r as usize].prompt as u64)
                    .collect();
                let o = cm.prefill_optical(&lens);
                inst.cur = o.step;
                inst.cur_optical = (o.optical_j, o.optical_flops);
            } else {
                inst.cur = cm.prefill(inst.batch.iter().map(|&r| reqs[r as usize].prompt as u64));
            }
            inst.tokens = tokens;
            inst.phase = Phase::Prefill;
        } else if !inst.running.is_empty() {
            inst.cur = decode_cost(
                cm,
                self.rows_cost,
                inst.ctx_sum,
                &inst.running,
                inst.step_end.len(),
                &self.core.reqs,
            );
            inst.phase = Phase::Decode;
        } else {
            inst.busy = false;
            return;
        }
        inst.step_start = now;
        inst.busy = true;
        self.core
            .q
            .schedule_in(inst.cur.time_s, Ev::StepEnd(c as u32));
    }

    fn coloc_step_end(&mut self, c: usize) {
        let now = self.core.q.now();
        let need_kind = self.need;
        let c_idle = self.c_idle;
        let c_ostatic = self.c_ostatic;
        {
            let Sim {
                coloc,
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
            let inst = &mut coloc[c];
            match inst.phase {
                Phase::Prefill => {
                    let n = inst.batch.len() as u64;
                    inst.stats
                        .account_prefill(&inst.cur, inst.cur_optical, n, c_idle, c_ostatic);
                    obs.step(&StepEvent {
                        instance: c,
                        kind: StepKind::Prefill,
                        start: inst.step_start,
                        dur: inst.cur.time_s,
                        batch: n as u32,
                        tokens: inst.tokens,
                    });
                    for &rid in &inst.batch {
                        let r = &mut reqs[rid as usize];
                        r.first_token = now;
                        if r.output <= 1 {
                            let need = need_kind.of(r);
                            inst.kv_used -= need;
                            finish(reqs, books, q, obs, rid, now);
                        } else {
                            r.decode_start = now;
                            r.adm = inst.step_end.len() as u64;
                            r.dinst = c as u32;
                            inst.ctx_sum += r.prompt as u64 + 1;
                            inst.running.push(rid);
                        }
                    }
                }
                Phase::Decode => {
                    let side = DecodeSide {
                        running: &mut inst.running,
                        step_end: &mut inst.step_end,
                        ctx_sum: &mut inst.ctx_sum,
                        kv_used: &mut inst.kv_used,
                        stats: &mut inst.stats,
                        cur: &inst.cur,
                        step_start: inst.step_start,
                    };
                    commit_decode_step(side, c, c_idle, need_kind, now, reqs, books, q, obs);
                }
            }
        }
        self.coloc_body(c);
    }
}

#[cfg(test)]
mod tests {
    //! The step accounting of a transform-engine prefill (`docs/levers.md#fft-mixing`), with dyadic
    //! values chosen by hand so every sum below is exact.

    use super::*;
    use disagg_model::PyNum;

    fn step(time_s: f64, bound: Bound) -> StepCost {
        StepCost {
            flops: PyNum::Float(8.0),
            bytes: 16.0,
            time_s,
            bound,
            energy_j: 0.0,
            compute_j: 3.0,
            memory_j: 1.0,
            comm_time_s: 0.0,
            comm_j: 0.0,
        }
    }

    #[test]
    fn an_engine_step_goes_on_the_optical_books() {
        let mut s = InstanceStats::default();
        // Conversions 4 J, engine FLOPs 32, idle 100 W, engine static 20 W, 0.5 s, optical-bound.
        s.account_prefill(&step(0.5, Bound::Optical), (4.0, 32.0), 3, 100.0, 20.0);
        assert_eq!(s.busy_s, 0.5);
        assert_eq!(s.steps, 1);
        assert_eq!(s.flops, 8.0);
        assert_eq!(s.bytes, 16.0);
        assert_eq!(s.batch_sum, 3);
        assert_eq!((s.compute_j, s.memory_j), (3.0, 1.0));
        assert_eq!((s.optical_j, s.optical_flops), (4.0, 32.0));
        assert_eq!(s.optical_bound_s, 0.5);
        assert_eq!((s.compute_bound_s, s.power_bound_s), (0.0, 0.0));
        // (idle + static) + ((ec + em) + oj) / t = 120 + 8 / 0.5 = 136 W.
        assert_eq!(s.peak_power_w, 136.0);
        // A compute-bound engine step (the GPU part was slower) with conversions: 0.25 s,
        // (100 + 20) + 8 / 0.25 = 152 W, the new peak.
        s.account_prefill(&step(0.25, Bound::Compute), (4.0, 1.0), 1, 100.0, 20.0);
        assert_eq!(s.compute_bound_s, 0.25);
        assert_eq!(s.optical_bound_s, 0.5);
        assert_eq!((s.optical_j, s.optical_flops), (8.0, 33.0));
        assert_eq!(s.peak_power_w, 152.0);
        assert_eq!(s.steps, 2);
        // Power-bound, 1 s: 120 + 8 = 128 W stays below the peak.
        s.account_prefill(&step(1.0, Bound::Power), (4.0, 0.0), 1, 100.0, 20.0);
        assert_eq!(s.power_bound_s, 1.0);
        assert_eq!(s.peak_power_w, 152.0);
        assert_eq!(s.busy_s, 1.75);
    }

    #[test]
    fn an_optical_bound_step_without_conversions_is_an_engine_step() {
        let mut s = InstanceStats::default();
        s.account_prefill(&step(0.5, Bound::Optical), (0.0, 0.0), 1, 100.0, 20.0);
        assert_eq!(s.optical_bound_s, 0.5);
        // 120 + 4 / 0.5 = 128 W: the engine's static power is in the peak.
        assert_eq!(s.peak_power_w, 128.0);
    }

    #[test]
    fn other_steps_keep_the_ordinary_books() {
        let mut s = InstanceStats::default();
        // No conversions, memory-bound: the engine's static power is not in the peak
        // (`docs/levers.md#quirks` item 4): 100 + 4 / 0.5 = 108 W.
        s.account_prefill(&step(0.5, Bound::Memory), (0.0, 0.0), 2, 100.0, 20.0);
        assert_eq!(s.peak_power_w, 108.0);
        assert_eq!(
            (s.optical_j, s.optical_flops, s.optical_bound_s),
            (0.0, 0.0, 0.0)
        );
        assert_eq!((s.busy_s, s.steps, s.batch_sum), (0.5, 1, 2));
        assert_eq!((s.compute_j, s.memory_j), (3.0, 1.0));
    }
}
