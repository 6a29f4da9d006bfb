//! The serving model (simulator.md §1–§3): requests, prefill/decode/colocated instances as explicit
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

use disagg_model::{
    transfer, Bound, CompressAt, CostModel, Error, KvTransit, PyNum, SendMode, StepCost,
};

use crate::engine::EventQueue;
use crate::link::{LayerPlan, LinkEv, LinkModel, Note, Sharing, Tagged, XferSpec};
use crate::observer::{
    InstanceInfo, InstanceSample, Observer, Sample, StepEvent, StepKind, TransferEvent,
};
use crate::pyrand::GenRequest;
use crate::scenario::{LinkTopology, Mode, ReserveKvOn, Role, SimConfig};
use crate::workload::{ClosedLoop, Workload};

/// The decode instance of a CED model with the replay on decode (levers-cost.md §8.3).
#[path = "ced.rs"]
mod ced;

/// "Not stamped" (Python `None`) inside the engine.
pub(crate) const UNSET: f64 = f64::NAN;
pub(crate) const NO_INST: u32 = u32::MAX;

/// One request's stamps (seconds; NaN = not reached).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Req {
    pub arrival: f64,
    pub prefill_start: f64,
    pub first_token: f64,
    pub kv_start: f64,
    pub kv_ready: f64,
    pub decode_start: f64,
    pub finish: f64,
    /// The hand-off started: it asked for decode memory or the link (first token; layer-wise: the
    /// first slice ready).
    pub kv_req: f64,
    /// Decode memory reserved (`--reserve-kv-on transfer` only).
    pub kv_mem: f64,
    /// CED with the replay on decode: the encoder-only prefill step ended (the first token comes
    /// later, from the decode instance); NaN otherwise (the prefill ends at the first token).
    pub prefill_done: f64,
    /// Index of the first decode step it takes part in, in its decode-side instance's step list.
    pub adm: u64,
    pub prompt: u32,
    pub output: u32,
    /// Decode-side instance (decode pool index, or colocated index) whose steps it took part in.
    pub dinst: u32,
    /// Decode instance chosen when the hand-off started (per-pair links, or reservation at
    /// transfer), else `NO_INST`.
    pub dtarget: u32,
    /// Cache units it reserves on a decode-side instance when they are not `prompt + output`
    /// ([`Need::Units`]: a model with windowed layers or a linear state); 0 otherwise.
    pub units: u32,
}

/// What a request reserves on a decode-side instance, in cache units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// `prompt + output` tokens (the reference).
    Tokens,
    /// One sequence (a distilled Hyena model: its capacity counts sequences).
    One,
    /// The request's own `units` (a layer-kind model with windowed layers or a linear state:
    /// [`disagg_model::ModelSpec::kv_units`]).
    Units,
}

impl Need {
    /// The units `r` reserves.
    #[inline]
    pub(crate) fn of(self, r: &Req) -> u64 {
        match self {
            Need::Tokens => r.prompt as u64 + r.output as u64,
            Need::One => 1,
            Need::Units => r.units as u64,
        }
    }
}

/// Step accounting of one instance (simulator.md §5.4, §5.7). Every accumulator is a plain
/// left-to-right float sum in step order, as the reference.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InstanceStats {
    /// Sum of step times, s.
    pub busy_s: f64,
    /// Steps run.
    pub steps: u64,
    /// Time of steps whose bound was `compute`, s.
    pub compute_bound_s: f64,
    /// Time of steps whose bound was `power`, s.
    pub power_bound_s: f64,
    /// FLOPs done (a float sum of each step's FLOPs, as the reference).
    pub flops: f64,
    /// HBM bytes moved.
    pub bytes: f64,
    /// Sequences processed, summed over steps.
    pub batch_sum: u64,
    /// Dynamic compute energy, J.
    pub compute_j: f64,
    /// Dynamic memory energy, J.
    pub memory_j: f64,
    /// Highest `idle_w + dynamic J / step time` over any step, W.
    pub peak_power_w: f64,
    /// Scale-up communication time inside the steps, s (parallel layouts; levers-cost.md §5.7).
    pub comm_s: f64,
    /// Scale-up link energy, J.
    pub comm_j: f64,
    /// Time of steps whose bound was `optical` (the transform engine), s (levers-cost.md §10.3).
    pub optical_bound_s: f64,
    /// Transform and Fourier-plane FLOPs the optical engine took.
    pub optical_flops: f64,
    /// The engine's conversion energy, J.
    pub optical_j: f64,
}

impl InstanceStats {
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn account(
        &mut self,
        dt: f64,
        flops: f64,
        bytes: f64,
        batch: u64,
        ec: f64,
        em: f64,
        bound: Bound,
        idle_w: f64,
    ) {
        self.busy_s += dt;
        self.steps += 1;
        self.flops += flops;
        self.bytes += bytes;
        self.batch_sum += batch;
        self.compute_j += ec;
        self.memory_j += em;
        let p = idle_w + (ec + em) / dt;
        if p > self.peak_power_w {
            self.peak_power_w = p;
        }
        match bound {
            Bound::Compute => self.compute_bound_s += dt,
            Bound::Power => self.power_bound_s += dt,
            // Only an engine step is optical-bound, and those go through `account_optical`.
            Bound::Memory | Bound::Optical => {}
        }
    }

    #[inline(always)]
    pub(crate) fn account_cost(&mut self, c: &StepCost, batch: u64, idle_w: f64) {
        self.account_comm(c);
        let f = c.flops.to_f64();
        self.account(
            c.time_s,
            f,
            c.bytes,
            batch,
            c.compute_j,
            c.memory_j,
            c.bound,
            idle_w,
        );
    }
}

impl InstanceStats {
    /// Accounts a prefill step on a transform-engine device (`account_optical`, levers-cost.md
    /// §10.3): `c` is the step (its `compute_j` and `memory_j` are the GPU part's), `oj` and `of`
    /// the engine's conversion energy and FLOPs, `static_w` the instance's engine static power.
    /// The step's power for the peak is `(idle_w + static_w) + (((ec + em) + oj) / time)`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn account_optical(
        &mut self,
        c: &StepCost,
        oj: f64,
        of: f64,
        batch: u64,
        idle_w: f64,
        static_w: f64,
    ) {
        let dt = c.time_s;
        self.busy_s += dt;
        self.steps += 1;
        self.flops += c.flops.to_f64();
        self.bytes += c.bytes;
        self.batch_sum += batch;
        self.compute_j += c.compute_j;
        self.memory_j += c.memory_j;
        self.optical_j += oj;
        self.optical_flops += of;
        let p = (idle_w + static_w) + (((c.compute_j + c.memory_j) + oj) / dt);
        if p > self.peak_power_w {
            self.peak_power_w = p;
        }
        match c.bound {
            Bound::Compute => self.compute_bound_s += dt,
            Bound::Power => self.power_bound_s += dt,
            Bound::Optical => self.optical_bound_s += dt,
            Bound::Memory => {}
        }
    }

    /// Accounts a prefill step: on the engine's books (`account_optical`) when it did optical
    /// work (`oj != 0`) or the engine bound it, else the ordinary way.
    #[inline(always)]
    pub(crate) fn account_prefill(
        &mut self,
        c: &StepCost,
        (oj, of): (f64, f64),
        batch: u64,
        idle_w: f64,
        static_w: f64,
    ) {
        if oj != 0.0 || c.bound == Bound::Optical {
            self.account_optical(c, oj, of, batch, idle_w, static_w);
        } else {
            self.account_cost(c, batch, idle_w);
        }
    }

    /// Adds a step's scale-up communication time and energy (levers-cost.md §5.7).
    #[inline(always)]
    pub(crate) fn account_comm(&mut self, c: &StepCost) {
        self.comm_s += c.comm_time_s;
        self.comm_j += c.comm_j;
    }
}

/// KV link totals over every link (simulator.md §2.3).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkStats {
    /// Channel-seconds used, s: the sum of transfer times (FIFO: how long each held its channel;
    /// fair sharing: each transfer's stream time at one channel's full rate).
    pub busy_s: f64,
    /// Bytes on the wire.
    pub bytes: f64,
    /// Transfers completed.
    pub transfers: u64,
    /// Sum of waits for a channel (grant − the time the transfer asked for the link), s.
    pub wait_s: f64,
    /// Link energy, J.
    pub energy_j: f64,
    /// Uncompressed hand-off bytes (only with a compression stage).
    pub handoff_bytes: f64,
    /// In-link compression stage energy, J.
    pub transit_j: f64,
    /// Transfers whose time the in-link stage's compute set.
    pub transit_bound: u64,
    /// `--prefix-handoff`: uncompressed KV bytes not sent because the decode instance held them
    /// (`None` without it).
    pub handoff_bytes_saved: Option<f64>,
}

impl LinkStats {
    /// Counts transfer `x`, landed after `busy_s` channel-seconds (`transit`: the hand-off has a
    /// compression stage, whose bytes, energy and bound are counted too).
    #[inline]
    pub(crate) fn land(&mut self, busy_s: f64, x: &disagg_model::Transfer, transit: bool) {
        self.busy_s += busy_s;
        self.bytes += x.wire_bytes;
        self.transfers += 1;
        self.energy_j += x.link_j;
        if transit {
            self.handoff_bytes += x.kv_bytes;
            self.transit_j += x.transit_j;
            self.transit_bound += x.transit_bound as u64;
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    Arrival(u32),
    /// A closed-loop session turn released `think` after its predecessor finished.
    Release(u32),
    Wake(u32),
    StepEnd(u32),
    MacroEnd(u32, u32),
    /// Layer-wise: the first slice of prefill instance `p`'s batch is ready.
    FirstSlice(u32),
    Link(u32, LinkEv),
    Sample,
    Done,
}

impl From<Tagged> for Ev {
    #[inline]
    fn from((l, e): Tagged) -> Self {
        Ev::Link(l, e)
    }
}

/// One KV link's totals.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkResult {
    /// `kv-link` (shared), `kv-link-p<i>` (per prefill instance), `kv-link-p<i>-d<j>` (per pair).
    pub name: String,
    /// Channel-seconds used, s.
    pub busy_s: f64,
    /// Bytes on the wire.
    pub bytes: f64,
    /// Transfers landed.
    pub transfers: u64,
}

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

pub(crate) const NO_COST: StepCost = StepCost {
    flops: PyNum::Int(0),
    bytes: 0.0,
    time_s: 0.0,
    bound: Bound::Memory,
    energy_j: 0.0,
    compute_j: 0.0,
    memory_j: 0.0,
    comm_time_s: 0.0,
    comm_j: 0.0,
};

/// A prefill instance (§2.2).
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

/// A decode instance: the plain per-step loop (§2.5) or the fast macro-step path (§2.6).
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

/// A colocated instance (§2.7).
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
    stats: LinkStats,
    notes: Vec<Note>,
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

/// Population accounting and completion counts.
pub(crate) struct Books {
    pub n_total: u64,
    pub in_system: i64,
    pub area: f64,
    pub area_t: f64,
    pub n_done: u64,
    pub n_rejected: u64,
    /// Closed loop: each request's successor (`NO_SUCC` for none) and the successor's think time;
    /// empty for open-loop workloads.
    pub succ: Vec<u32>,
    pub think: Vec<f64>,
}

pub(crate) const NO_SUCC: u32 = u32::MAX;

impl Books {
    /// Releases `rid`'s successor turn `think` seconds after `t` (never before now).
    #[inline]
    pub(crate) fn release_successor(&self, q: &mut EventQueue<Ev>, rid: u32, t: f64) {
        if let Some(&s) = self.succ.get(rid as usize) {
            if s != NO_SUCC {
                let at = t + self.think[s as usize];
                q.schedule_at(if at > q.now() { at } else { q.now() }, Ev::Release(s));
            }
        }
    }
}

impl Books {
    /// The books of a run of `n` requests, open loop.
    pub(crate) fn new(n: usize) -> Self {
        Books {
            n_total: n as u64,
            in_system: 0,
            area: 0.0,
            area_t: 0.0,
            n_done: 0,
            n_rejected: 0,
            succ: Vec::new(),
            think: Vec::new(),
        }
    }

    /// Takes the closed-loop turns of `c`: each request's successor and think time. Returns the
    /// open-loop requests (the roots) in rid order, which the arrivals process walks.
    pub(crate) fn close_loop(&mut self, c: &ClosedLoop) -> Vec<u32> {
        let n = c.after.len();
        self.succ = vec![NO_SUCC; n];
        self.think = c.think_s.clone();
        for (i, a) in c.after.iter().enumerate() {
            if let Some(p) = a {
                self.succ[*p as usize] = i as u32;
            }
        }
        (0..n as u32)
            .filter(|&i| c.after[i as usize].is_none())
            .collect()
    }

    #[inline]
    pub(crate) fn population(&mut self, now: f64, delta: i64) {
        self.area += self.in_system as f64 * (now - self.area_t);
        self.area_t = now;
        self.in_system += delta;
    }
}

#[inline]
pub(crate) fn finish<O: Observer>(
    reqs: &mut [Req],
    books: &mut Books,
    q: &mut EventQueue<Ev>,
    obs: &mut O,
    rid: u32,
    t: f64,
) {
    reqs[rid as usize].finish = t;
    books.population(q.now(), -1);
    books.n_done += 1;
    obs.finish(rid as usize, t);
    books.release_successor(q, rid, t);
    if books.n_done + books.n_rejected == books.n_total {
        q.schedule_at(q.now(), Ev::Done);
    }
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

/// Commits a plain decode step that ended at `now` (simulator.md §2.5 step 4): accounting, one
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

/// A finished run: every stamp and counter the metrics need.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub(crate) cfg: SimConfig,
    pub(crate) reqs: Vec<Req>,
    /// Per decode-side instance, the end time of each decode step.
    pub(crate) step_ends: Vec<Vec<f64>>,
    pub(crate) instances: Vec<InstanceResult>,
    pub(crate) link: LinkStats,
    pub(crate) links: Vec<LinkResult>,
    pub(crate) horizon: f64,
    pub(crate) area: f64,
    pub(crate) rejected: u64,
    pub(crate) events: u64,
    /// Closed-loop session turns in the workload.
    pub(crate) closed_turns: u64,
    /// Generated prompts clipped to the length cap ([`Workload::clipped_prompts`]).
    pub(crate) clipped_prompts: u64,
    /// A scheduled run's token records and scheduler block (`None` for the plain instances).
    pub(crate) sched: Option<Box<crate::sched::SchedResult>>,
}

/// One instance's totals.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceResult {
    /// `prefill-0`, ...
    pub name: String,
    /// Role.
    pub role: Role,
    /// Index of its pool in [`SimConfig::pools`].
    pub pool: usize,
    /// Step accounting.
    pub stats: InstanceStats,
}

/// A request's stamps (seconds; `None` = never reached).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestRecord {
    /// Request id (workload row).
    pub rid: usize,
    /// Arrival time (the stored value).
    pub arrival_s: f64,
    /// Prompt tokens.
    pub prompt_len: u32,
    /// Output tokens.
    pub output_len: u32,
    /// Prefill batch formed.
    pub prefill_start_s: Option<f64>,
    /// First token emitted (end of its prefill step; a CED model replaying on decode: end of
    /// its replay step on the decode instance).
    pub first_token_s: Option<f64>,
    /// Link channel granted.
    pub kv_start_s: Option<f64>,
    /// KV landed on the decode side.
    pub kv_ready_s: Option<f64>,
    /// Admitted into a decode batch (colocated: first token).
    pub decode_start_s: Option<f64>,
    /// Finished.
    pub finish_s: Option<f64>,
    /// The hand-off started: first token, or (layer-wise) its first slice ready.
    pub handoff_start_s: Option<f64>,
    /// Decode memory reserved for it (`--reserve-kv-on transfer`).
    pub kv_reserved_s: Option<f64>,
}

#[inline]
fn opt(x: f64) -> Option<f64> {
    if x.is_nan() {
        None
    } else {
        Some(x)
    }
}

impl RunResult {
    /// The configuration that was run.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }
    /// Simulated time at the end (the last finish).
    pub fn horizon(&self) -> f64 {
        self.horizon
    }
    /// `∫ N(t) dt` of the in-system population over the run (Little's law).
    pub fn population_integral(&self) -> f64 {
        self.area
    }
    /// Requests rejected at arrival.
    pub fn rejected(&self) -> u64 {
        self.rejected
    }
    /// Events processed by the engine.
    pub fn events(&self) -> u64 {
        self.events
    }
    /// KV link totals (every link).
    pub fn link(&self) -> &LinkStats {
        &self.link
    }
    /// Each KV link's totals (link order: one shared link, one per prefill instance, or one per
    /// prefill-decode pair with the decode index running fastest).
    pub fn links(&self) -> &[LinkResult] {
        &self.links
    }
    /// Per-instance totals, instance list order.
    pub fn instances(&self) -> &[InstanceResult] {
        &self.instances
    }
    /// Number of requests.
    pub fn len(&self) -> usize {
        self.reqs.len()
    }
    /// True if the workload was empty.
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }
    /// The stamps of request `rid`.
    pub fn request(&self, rid: usize) -> RequestRecord {
        let r = &self.reqs[rid];
        RequestRecord {
            rid,
            arrival_s: r.arrival,
            prompt_len: r.prompt,
            output_len: r.output,
            prefill_start_s: opt(r.prefill_start),
            first_token_s: opt(r.first_token),
            kv_start_s: opt(r.kv_start),
            kv_ready_s: opt(r.kv_ready),
            decode_start_s: opt(r.decode_start),
            finish_s: opt(r.finish),
            handoff_start_s: opt(r.kv_req),
            kv_reserved_s: opt(r.kv_mem),
        }
    }
    /// Every request's stamps, rid order.
    pub fn requests(&self) -> impl ExactSizeIterator<Item = RequestRecord> + '_ {
        (0..self.reqs.len()).map(|i| self.request(i))
    }
    /// Writes every request's stamps as CSV (header row, then one row per rid; times in seconds in
    /// shortest round-trip form; empty cells for stamps never reached).
    pub fn write_csv<W: std::io::Write>(&self, mut w: W) -> std::io::Result<()> {
        writeln!(
            w,
            "rid,arrival_s,prompt_len,output_len,prefill_start_s,first_token_s,kv_start_s,\
             kv_ready_s,decode_start_s,finish_s"
        )?;
        for r in self.requests() {
            write!(
                w,
                "{},{:?},{},{}",
                r.rid, r.arrival_s, r.prompt_len, r.output_len
            )?;
            for x in [
                r.prefill_start_s,
                r.first_token_s,
                r.kv_start_s,
                r.kv_ready_s,
                r.decode_start_s,
                r.finish_s,
            ] {
                match x {
                    Some(v) => write!(w, ",{v:?}")?,
                    None => w.write_all(b",")?,
                }
            }
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The decode-step end times of decode-side instance `i` (decode pool or colocated index).
    pub fn decode_step_ends(&self, i: usize) -> &[f64] {
        &self.step_ends[i]
    }
    /// What the scheduling levers measured of request `rid` (`None` unless the levers were on).
    pub fn lever_record(&self, rid: usize) -> Option<crate::sched::LeverRecord> {
        let s = self.sched.as_ref()?;
        let r = &self.reqs[rid];
        let mut n_itl = 0u64;
        let mut itl_max = f64::NAN;
        let mut zeros = 0u64;
        s.each_itl(rid, r.emitted(self.cfg.handoff.first_token), |x, c| {
            n_itl += c;
            if x == 0.0 {
                zeros += c;
            }
            if itl_max.is_nan() || x > itl_max {
                itl_max = x;
            }
        });
        let (preemptions, hit_tokens, ho_hit) = s.per_request[rid];
        Some(crate::sched::LeverRecord {
            sched_delay_s: r.prefill_start - r.arrival,
            preemptions,
            prefix_hit_tokens: hit_tokens,
            n_itl,
            itl_max_s: (n_itl > 0).then_some(itl_max),
            n_itl_zero: zeros,
            handoff_hit_tokens: s.report.prefix_handoff.is_some().then_some(ho_hit),
        })
    }
    /// Each scheduled instance's KV memory at the end of the run (`None` unless the levers were
    /// on): once every request has finished, only cached prefix segments hold units.
    pub fn kv_at_end(&self) -> Option<&[crate::sched::KvEnd]> {
        self.sched.as_ref().map(|s| s.kv_end.as_slice())
    }
    /// The scheduling levers' summary block (`None` unless the levers were on); the summary's
    /// `scheduler` adds the measured requests' scheduling delay and normalised latency.
    pub fn scheduler(&self) -> Option<&crate::sched::SchedulerSummary> {
        self.sched.as_ref().map(|s| &s.report)
    }
    /// Request `rid`'s inter-token latencies (empty if it never decoded), reconstructed from the
    /// step ends exactly as the reference records them.
    pub fn itls(&self, rid: usize) -> Vec<f64> {
        let r = &self.reqs[rid];
        if let Some(s) = &self.sched {
            return s.itls(rid, r.emitted(self.cfg.handoff.first_token));
        }
        if r.dinst == NO_INST || r.finish.is_nan() || r.output < 2 {
            return Vec::new();
        }
        let e = &self.step_ends[r.dinst as usize];
        let s = r.adm as usize;
        let fin = s + r.output as usize - 2;
        let mut v = Vec::with_capacity(fin - s + 1);
        v.push(e[s] - r.emitted(self.cfg.handoff.first_token));
        for j in s + 1..=fin {
            v.push(e[j] - e[j - 1]);
        }
        v
    }
}

struct Sim<'a, O: Observer> {
    cfg: &'a SimConfig,
    q: EventQueue<Ev>,
    reqs: Vec<Req>,
    /// Closed-loop workloads: the open-loop requests in arrival order, and the next one's index.
    open: Vec<u32>,
    open_pos: usize,
    prefill: Vec<PrefillInst>,
    decode: Vec<DecodeInst>,
    coloc: Vec<ColocInst>,
    link: LinkState,
    books: Books,
    obs: &'a mut O,
    scratch: Vec<u32>,
    samples: Vec<InstanceSample>,
    sampling: bool,
    /// The observer wants a sample at every interval (no skipping of event-free stretches).
    sample_every_interval: bool,
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
    /// The model is FFT-mixing (levers-cost.md §9): prefills through `prefill_optical`, fast
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
    /// CED with the replay on decode (levers-cost.md §8.3): the replay window W; `None` for
    /// every other run.
    ced_replay: Option<u64>,
}

/// The name of link `i` of `cfg`'s topology.
pub(crate) fn link_name(cfg: &SimConfig, i: usize) -> String {
    match cfg.handoff.link_topology {
        LinkTopology::Shared => "kv-link".to_string(),
        LinkTopology::PerPrefill => format!("kv-link-p{i}"),
        LinkTopology::PerPair => {
            let d = cfg.decode_pool().map_or(1, |p| p.instances.max(1));
            format!("kv-link-p{}-d{}", i / d, i % d)
        }
    }
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

impl Req {
    /// A request of the workload, nothing stamped but its arrival.
    pub(crate) fn new(w: &GenRequest) -> Self {
        Req {
            arrival: w.arrival_s,
            prefill_start: UNSET,
            first_token: UNSET,
            kv_start: UNSET,
            kv_ready: UNSET,
            decode_start: UNSET,
            finish: UNSET,
            kv_req: UNSET,
            kv_mem: UNSET,
            prefill_done: UNSET,
            adm: 0,
            prompt: w.prompt_len,
            output: w.output_len,
            dinst: NO_INST,
            dtarget: NO_INST,
            units: 0,
        }
    }

    /// The end of its prefill step: `prefill_done` when a CED decode instance emits the first
    /// token, else the first token.
    #[inline]
    pub(crate) fn prefill_end(&self) -> f64 {
        if self.prefill_done.is_nan() {
            self.first_token
        } else {
            self.prefill_done
        }
    }

    /// The first token as TTFT and TPOT count it: the end of prefill, or (`--first-token decode`)
    /// the decode admission of a request that was handed off.
    #[inline]
    pub(crate) fn emitted(&self, conv: crate::scenario::FirstToken) -> f64 {
        match conv {
            crate::scenario::FirstToken::Decode
                if !self.kv_ready.is_nan() && !self.decode_start.is_nan() =>
            {
                self.decode_start
            }
            _ => self.first_token,
        }
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

/// Runs `cfg` on `workload` (rows in rid order; `GenRequest::rid` is ignored, the row index is the
/// rid, as the reference's `load_workload`).
///
/// Errors if an arrival time is negative or not finite, or the workload has more than
/// `u32::MAX - 1` requests.
pub fn simulate(cfg: &SimConfig, workload: &[GenRequest]) -> Result<RunResult, Error> {
    simulate_observed(cfg, workload, &mut ())
}

/// [`simulate`] with an observer.
pub fn simulate_observed<O: Observer>(
    cfg: &SimConfig,
    workload: &[GenRequest],
    obs: &mut O,
) -> Result<RunResult, Error> {
    run_requests(cfg, workload, None, None, obs)
}

/// Runs `cfg`'s own requests ([`SimConfig::requests`]: generated, sessions with closed-loop
/// turns, or a replayed trace).
pub fn simulate_config(cfg: &SimConfig) -> Result<RunResult, Error> {
    simulate_config_observed(cfg, &mut ())
}

/// [`simulate_config`] with an observer.
pub fn simulate_config_observed<O: Observer>(
    cfg: &SimConfig,
    obs: &mut O,
) -> Result<RunResult, Error> {
    let w = cfg.requests();
    simulate_workload(cfg, &w, obs)
}

/// Runs a [`Workload`]: its open-loop requests arrive at their times; a closed-loop turn is
/// released `think_s` after its predecessor finishes (or is rejected), and its arrival is then.
pub fn simulate_workload<O: Observer>(
    cfg: &SimConfig,
    w: &Workload,
    obs: &mut O,
) -> Result<RunResult, Error> {
    if let Some(c) = &w.closed {
        let n = w.requests.len();
        if c.after.len() != n || c.think_s.len() != n {
            return Err(Error::invalid(
                "workload",
                "closed-loop tables do not match the requests",
            ));
        }
        for (i, a) in c.after.iter().enumerate() {
            if a.is_some_and(|p| p as usize >= i) {
                return Err(Error::invalid(
                    "workload",
                    format!("request {i}: its predecessor must come before it"),
                ));
            }
            if !(c.think_s[i].is_finite() && c.think_s[i] >= 0.0) {
                return Err(Error::invalid(
                    "workload",
                    format!("request {i}: think time must be >= 0"),
                ));
            }
        }
    }
    let mut run = run_requests(
        cfg,
        &w.requests,
        w.closed.as_ref(),
        w.chains.as_deref(),
        obs,
    )?;
    run.clipped_prompts = w.clipped_prompts;
    Ok(run)
}

fn run_requests<O: Observer>(
    cfg: &SimConfig,
    workload: &[GenRequest],
    closed: Option<&ClosedLoop>,
    chains: Option<&crate::levers::PrefixChains>,
    obs: &mut O,
) -> Result<RunResult, Error> {
    cfg.check()?;
    if workload.len() >= u32::MAX as usize {
        return Err(Error::invalid(
            "workload",
            format!("{} requests is too many", workload.len()),
        ));
    }
    for (i, w) in workload.iter().enumerate() {
        if !(w.arrival_s.is_finite() && w.arrival_s >= 0.0) {
            return Err(Error::invalid(
                "workload",
                format!(
                    "request {i}: arrival must be a finite time >= 0, got {}",
                    w.arrival_s
                ),
            ));
        }
    }
    if cfg.levers.is_some() {
        return crate::sched::run(cfg, workload, closed, chains, obs);
    }
    let mut sim = Sim::new(cfg, workload, obs);
    if let Some(c) = closed {
        sim.open = sim.books.close_loop(c);
    }
    sim.run()?;
    Ok(sim.finish_run())
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
        let sampling = obs.wants_samples();
        let sample_every_interval = obs.every_sample_interval();
        let ho = cfg.handoff;
        // `--link-sharing` is the link's discipline (one enum: `disagg_model::Sharing`).
        let sharing: Sharing = ho.link_sharing;
        Sim {
            cfg,
            q: EventQueue::new(),
            books: Books::new(reqs.len()),
            open: Vec::new(),
            open_pos: 0,
            reqs,
            prefill,
            decode,
            coloc,
            link: LinkState {
                links: (0..cfg.link_count())
                    .map(|_| LinkModel::new(sharing, cfg.link.channels))
                    .collect(),
                stats: LinkStats::default(),
                notes: Vec::new(),
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
            obs,
            scratch: Vec::new(),
            samples: vec![InstanceSample::default(); n_inst],
            sampling,
            sample_every_interval,
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
                    name: format!("{}-{i}", pool.role.as_str()),
                    role: pool.role,
                    kv_capacity_tokens: pool.kv_capacity_tokens,
                });
            }
        }
        v
    }

    #[inline]
    fn need(&self, rid: u32) -> u64 {
        self.need.of(&self.reqs[rid as usize])
    }

    /// The event loop; [`Error::Cancelled`] if the observer stopped it.
    fn run(&mut self) -> Result<(), Error> {
        let infos = self.instance_infos();
        self.obs.begin(&infos);
        // t = 0: every instance starts idle; then the arrivals process, then the sampler (§3.2).
        if self.reqs.is_empty() {
            self.obs.end(0.0);
            return Ok(());
        }
        first_arrival(&mut self.q, &self.reqs, &self.open);
        if self.sampling {
            self.take_sample();
            self.q.schedule_in(self.cfg.sample_dt_s, Ev::Sample);
        }
        let mut events = 0u64;
        while let Some((_, ev)) = self.q.pop() {
            if crate::observer::should_stop(&mut events, &mut *self.obs) {
                return Err(Error::Cancelled);
            }
            match ev {
                Ev::Arrival(i) => self.on_arrival(i),
                Ev::Release(i) => {
                    self.reqs[i as usize].arrival = self.q.now();
                    self.admit_arrival(i);
                }
                Ev::Wake(g) => self.on_wake(g),
                Ev::StepEnd(g) => self.on_step_end(g),
                Ev::MacroEnd(g, epoch) => self.on_macro_end(g, epoch),
                Ev::FirstSlice(p) => self.on_first_slice(p as usize),
                Ev::Link(l, e) => {
                    self.link.links[l as usize].on_event(l, e, &mut self.q, &mut self.link.notes);
                    self.take_notes();
                }
                Ev::Sample => {
                    self.take_sample();
                    self.schedule_next_sample();
                }
                Ev::Done => break,
            }
        }
        let now = self.q.now();
        self.books.population(now, 0);
        self.obs.end(now);
        Ok(())
    }

    fn finish_run(self) -> RunResult {
        let horizon = if self.reqs.is_empty() {
            0.0
        } else {
            self.q.now()
        };
        let mut instances = Vec::new();
        let mut step_ends = Vec::new();
        for (i, p) in self.prefill.iter().enumerate() {
            instances.push(InstanceResult {
                name: format!("prefill-{i}"),
                role: Role::Prefill,
                pool: 0,
                stats: p.stats,
            });
        }
        for (i, d) in self.decode.into_iter().enumerate() {
            instances.push(InstanceResult {
                name: format!("decode-{i}"),
                role: Role::Decode,
                pool: 1,
                stats: d.stats,
            });
            step_ends.push(d.step_end);
        }
        for (i, c) in self.coloc.into_iter().enumerate() {
            instances.push(InstanceResult {
                name: format!("colocated-{i}"),
                role: Role::Colocated,
                pool: 0,
                stats: c.stats,
            });
            step_ends.push(c.step_end);
        }
        RunResult {
            cfg: self.cfg.clone(),
            reqs: self.reqs,
            step_ends,
            instances,
            link: self.link.stats,
            links: self
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
                .collect(),
            horizon,
            area: self.books.area,
            rejected: self.books.n_rejected,
            events: self.q.processed(),
            closed_turns: self.books.succ.iter().filter(|&&x| x != NO_SUCC).count() as u64,
            clipped_prompts: 0,
            sched: None,
        }
    }

    /// The next sample, `sample_dt_s` after this one (the reference's grid: each instant is the
    /// previous one plus `sample_dt_s`). The state only changes at events, so the samples between
    /// now and the next event would all equal this one: unless the observer wants every interval,
    /// the sampler walks the same grid to the last instant before that event and samples there
    /// (which keeps a step's shape in charts). The samples taken are then a subsequence of the
    /// reference's, time for time. Without this a long idle gap (`--rate 1e-6`, long think times)
    /// would take one sample per 50 ms of silence. Only stretches longer than
    /// [`SKIP_SAMPLES_AFTER`] intervals are skipped, so ordinary runs sample (and their traces and
    /// charts read) exactly as before.
    fn schedule_next_sample(&mut self) {
        let t = next_sample_time(&self.q, self.cfg.sample_dt_s, self.sample_every_interval);
        self.q.schedule_at(t, Ev::Sample);
    }

    fn take_sample(&mut self) {
        let mut k = 0;
        for p in &self.prefill {
            self.samples[k] = InstanceSample {
                queue: p.queue.len(),
                running: 0,
                kv_used: 0,
                kv_cap: self.cfg.prefill_pool().map_or(0, |x| x.kv_capacity_tokens),
            };
            k += 1;
        }
        let dcap = self.cfg.decode_pool().map_or(0, |x| x.kv_capacity_tokens);
        for d in &self.decode {
            self.samples[k] = InstanceSample {
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
            self.samples[k] = InstanceSample {
                queue: c.queue.len(),
                running: c.running.len(),
                kv_used: c.kv_used,
                kv_cap: ccap,
            };
            k += 1;
        }
        let now = self.q.now();
        let links = &self.link.links;
        let s = Sample {
            t: now,
            in_system: self.books.in_system,
            link_queue: links.iter().map(|l| l.waiting()).sum(),
            link_busy: links.iter().map(|l| l.in_flight()).sum(),
            link_bytes_in_flight: links.iter().map(|l| l.bytes_in_flight(now)).sum(),
            decode_mem_wait: self.link.mem_wait.len(),
            instances: &self.samples,
        };
        self.obs.sample(&s);
    }

    // ── arrivals and routing ─────────────────────────────────────────────

    fn on_arrival(&mut self, i: u32) {
        let now = self.q.now();
        self.admit_arrival(i);
        next_arrival(
            &mut self.q,
            &self.reqs,
            &self.open,
            &mut self.open_pos,
            i,
            now,
        );
    }

    /// A request enters: the admission check, then routing (§1.3 steps 1-3).
    fn admit_arrival(&mut self, i: u32) {
        let now = self.q.now();
        self.books.population(now, 1);
        self.obs.arrival(i as usize, now);
        if self.need(i) > self.kv_cap0 {
            self.books.population(now, -1);
            self.books.n_rejected += 1;
            self.obs.rejected(i as usize, now);
            self.books.release_successor(&mut self.q, i, now);
            if self.books.n_done + self.books.n_rejected == self.books.n_total {
                self.q.schedule_at(now, Ev::Done);
            }
        } else {
            match self.cfg.mode {
                Mode::Disagg => {
                    // First instance with the least queued prompt tokens (§2.1).
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
        inst.queued_tokens += self.reqs[rid as usize].prompt as u64;
        if !inst.busy && !inst.wake_pending {
            inst.wake_pending = true;
            self.q.schedule_in(0.0, Ev::Wake(p as u32));
        }
    }

    fn submit_coloc(&mut self, c: usize, rid: u32) {
        let inst = &mut self.coloc[c];
        inst.queue.push_back(rid);
        if !inst.busy && !inst.wake_pending {
            inst.wake_pending = true;
            self.q.schedule_in(0.0, Ev::Wake(c as u32));
        }
    }

    fn submit_decode(&mut self, d: usize, rid: u32) {
        let g = self.n_prefill + d as u32;
        let inst = &mut self.decode[d];
        inst.queue.push_back(rid);
        if !inst.busy && !inst.wake_pending {
            inst.wake_pending = true;
            self.q.schedule_in(0.0, Ev::Wake(g));
        }
        if inst.in_macro {
            // Interrupt (URGENT in SimPy, handled right after this handler): finish the step in
            // flight and stop at its boundary (§2.6).
            inst.in_macro = false;
            let now = self.q.now();
            let k = inst.plan_ends.len();
            let j = inst.plan_ends.partition_point(|&e| e <= now).min(k - 1);
            inst.epoch = inst.epoch.wrapping_add(1);
            inst.interrupted_done = j + 1;
            let delay = inst.plan_ends[j] - now;
            self.q.schedule_in(delay, Ev::MacroEnd(g, inst.epoch));
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

    // ── prefill (§2.2) ───────────────────────────────────────────────────

    fn prefill_body(&mut self, p: usize) {
        let now = self.q.now();
        let inst = &mut self.prefill[p];
        if inst.queue.is_empty() {
            inst.busy = false;
            return;
        }
        inst.batch.clear();
        let mut tokens = 0u64;
        while let Some(&h) = inst.queue.front() {
            let pl = self.reqs[h as usize].prompt as u64;
            if !inst.batch.is_empty() && tokens + pl > self.max_prefill_tokens {
                break;
            }
            inst.queue.pop_front();
            inst.queued_tokens -= pl;
            inst.batch.push(h);
            tokens += pl;
        }
        let reqs = &mut self.reqs;
        for &rid in &inst.batch {
            reqs[rid as usize].prefill_start = now;
        }
        let cm = self.pcost.expect("prefill pool");
        // CED, replay on decode: every request is handed off (§8.3).
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
                self.q
                    .schedule_in(cost.time_s / layers as f64, Ev::FirstSlice(p as u32));
            }
        }
        self.q.schedule_in(cost.time_s, Ev::StepEnd(p as u32));
    }

    fn prefill_step_end(&mut self, p: usize) {
        let now = self.q.now();
        let p_idle = self.p_idle;
        let p_ostatic = self.p_ostatic;
        let layerwise = self.link.layers.is_some();
        let ced = self.ced_replay.is_some();
        {
            let Sim {
                prefill,
                reqs,
                books,
                q,
                obs,
                scratch,
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
                // CED, replay on decode (§8.3): no first token here; every request is handed off.
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
        // request the link, in batch order (§3.4 a).
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
            if self.reqs[rid as usize].output > 1 {
                self.scratch.push(rid);
            }
        }
        for k in 0..self.scratch.len() {
            let rid = self.scratch[k];
            self.start_handoff(rid, p as u32, Some(plan));
        }
    }

    // ── hand-off and KV links (§2.3) ─────────────────────────────────────

    /// Decode router: the first instance with the least queue + running (+ hand-offs already bound
    /// for it, which is 0 unless decode instances are chosen at hand-off start), among those that
    /// have `room` free KV tokens if given (§2.1).
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
        let now = self.q.now();
        self.reqs[rid as usize].kv_req = now;
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
        self.reqs[rid as usize].dtarget = d as u32;
        self.link.inbound[d] += 1;
    }

    /// Serves the hand-offs waiting for decode memory, FIFO with head-of-line blocking: the head
    /// goes to the least-loaded decode instance that can hold its prompt + output.
    fn serve_mem_waiters(&mut self) {
        let now = self.q.now();
        while let Some(&w) = self.link.mem_wait.front() {
            let need = self.need(w.rid);
            let Some(d) = self.pick_decode(Some(need)) else {
                break;
            };
            self.link.mem_wait.pop_front();
            self.decode[d].kv_used += need;
            self.reqs[w.rid as usize].kv_mem = now;
            self.bind(w.rid, d);
            self.submit_link(w.rid, w.p, w.plan);
        }
    }

    fn submit_link(&mut self, rid: u32, p: u32, plan: Option<LayerPlan>) {
        let r = &self.reqs[rid as usize];
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
        self.link.links[l as usize].submit(l, spec, &mut self.q, &mut self.link.notes);
        self.take_notes();
    }

    /// Acts on what the links reported.
    fn take_notes(&mut self) {
        if self.link.notes.is_empty() {
            return;
        }
        let mut notes = std::mem::take(&mut self.link.notes);
        for n in notes.drain(..) {
            match n {
                Note::Started { rid } => self.on_kv_start(rid),
                Note::Landed {
                    rid,
                    start,
                    busy_s,
                    dur_s,
                } => self.on_kv_landed(rid, start, busy_s, dur_s),
            }
        }
        self.link.notes = notes;
    }

    fn on_kv_start(&mut self, rid: u32) {
        let now = self.q.now();
        let r = &mut self.reqs[rid as usize];
        r.kv_start = now;
        let asked = if r.kv_mem.is_nan() {
            r.kv_req
        } else {
            r.kv_mem
        };
        self.link.stats.wait_s += now - asked;
    }

    fn on_kv_landed(&mut self, rid: u32, start: f64, busy_s: f64, dur_s: f64) {
        let now = self.q.now();
        let r = &mut self.reqs[rid as usize];
        let x = transfer(
            &self.cfg.model,
            &self.cfg.link,
            self.transit,
            r.prompt as u64,
        );
        self.link.stats.land(busy_s, &x, self.transit.is_some());
        r.kv_ready = now;
        let target = r.dtarget;
        self.obs.transfer(&TransferEvent {
            rid: rid as usize,
            start,
            dur: dur_s,
            wire_bytes: x.wire_bytes,
            kv_bytes: x.kv_bytes,
        });
        let d = if target != NO_INST {
            self.link.inbound[target as usize] -= 1;
            target as usize
        } else {
            // Decode router: first instance with the least queue + running (§2.1).
            self.pick_decode(None).expect("a decode instance")
        };
        self.submit_decode(d, rid);
    }

    // ── decode (§2.5, §2.6) ──────────────────────────────────────────────

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
        let now = self.q.now();
        let need_kind = self.need;
        let cap = self.kv_cap0;
        let reserved = self.link.reserve;
        let inst = &mut self.decode[d];
        while let Some(&h) = inst.queue.front() {
            if inst.running.len() >= self.max_batch {
                break;
            }
            let r = &mut self.reqs[h as usize];
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
        let now = self.q.now();
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
            &self.reqs,
        );
        inst.cur = cost;
        inst.step_start = now;
        inst.busy = true;
        self.q
            .schedule_in(cost.time_s, Ev::StepEnd(self.n_prefill + d as u32));
    }

    fn plain_decode_step_end(&mut self, d: usize) {
        let now = self.q.now();
        let need_kind = self.need;
        let d_idle = self.d_idle;
        let g = self.n_prefill as usize + d;
        {
            let Sim {
                decode,
                reqs,
                books,
                q,
                obs,
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
        let now = self.q.now();
        let need_kind = self.need;
        let cap = self.kv_cap0;
        let reserved = self.link.reserve;
        let inst = &mut self.decode[d];
        while let Some(&h) = inst.queue.front() {
            if inst.n_running >= self.max_batch {
                break;
            }
            let r = &mut self.reqs[h as usize];
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
                // An FFT-mixing model's FLOPs are a double (levers-cost.md §9.3).
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
        self.q
            .schedule_in(delay, Ev::MacroEnd(self.n_prefill + d as u32, inst.epoch));
    }

    fn on_macro_end(&mut self, g: u32, epoch: u32) {
        let d = (g - self.n_prefill) as usize;
        let need_kind = self.need;
        let d_idle = self.d_idle;
        {
            let Sim {
                decode,
                reqs,
                books,
                q,
                obs,
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

    // ── colocated (§2.7) ─────────────────────────────────────────────────

    fn coloc_body(&mut self, c: usize) {
        let now = self.q.now();
        let need_kind = self.need;
        let cap = self.kv_cap0;
        let inst = &mut self.coloc[c];
        inst.batch.clear();
        let mut tokens = 0u64;
        while let Some(&h) = inst.queue.front() {
            if inst.running.len() + inst.batch.len() >= self.max_batch {
                break;
            }
            let r = &self.reqs[h as usize];
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
            let reqs = &mut self.reqs;
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
                &self.reqs,
            );
            inst.phase = Phase::Decode;
        } else {
            inst.busy = false;
            return;
        }
        inst.step_start = now;
        inst.busy = true;
        self.q.schedule_in(inst.cur.time_s, Ev::StepEnd(c as u32));
    }

    fn coloc_step_end(&mut self, c: usize) {
        let now = self.q.now();
        let need_kind = self.need;
        let c_idle = self.c_idle;
        let c_ostatic = self.c_ostatic;
        {
            let Sim {
                coloc,
                reqs,
                books,
                q,
                obs,
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

/// Schedules the first arrival: the first open-loop request (the first root with closed-loop
/// turns) at `max(0.0, arrival)` (§3.2).
#[inline]
pub(crate) fn first_arrival(q: &mut EventQueue<Ev>, reqs: &[Req], open: &[u32]) {
    let first = open.first().copied().unwrap_or(0);
    let a0 = reqs[first as usize].arrival;
    q.schedule_in(if a0 > 0.0 { a0 } else { 0.0 }, Ev::Arrival(first));
}

/// Schedules the open-loop arrival after request `i` (every request in rid order, or with
/// closed-loop turns the next root): `max(0.0, arrival - now)`, then `now + delay` (§3.5).
#[inline]
pub(crate) fn next_arrival(
    q: &mut EventQueue<Ev>,
    reqs: &[Req],
    open: &[u32],
    open_pos: &mut usize,
    i: u32,
    now: f64,
) {
    let next = if open.is_empty() {
        i as usize + 1
    } else {
        *open_pos += 1;
        open.get(*open_pos).map_or(usize::MAX, |&x| x as usize)
    };
    if next < reqs.len() {
        let d = reqs[next].arrival - now;
        q.schedule_in(if d > 0.0 { d } else { 0.0 }, Ev::Arrival(next as u32));
    }
}

/// The time of the next sample after one taken now (see `Sim::schedule_next_sample`).
#[inline]
pub(crate) fn next_sample_time<E>(q: &EventQueue<E>, dt: f64, every_interval: bool) -> f64 {
    let mut t = q.now() + dt;
    let next = q.peek_time().filter(|_| !every_interval);
    if let Some(next) = next.filter(|&n| n - t > SKIP_SAMPLES_AFTER * dt) {
        while t + dt < next {
            t += dt;
        }
    }
    t
}

/// Event-free stretches longer than this many sample intervals are not sampled interval by
/// interval (see `Sim::schedule_next_sample`).
const SKIP_SAMPLES_AFTER: f64 = 1000.0;

#[cfg(test)]
mod tests {
    //! The step accounting of a transform-engine prefill (levers-cost.md §10.3), with dyadic
    //! values chosen by hand so every sum below is exact.

    use super::*;

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
        // (levers-cost.md §14.3 item 4): 100 + 4 / 0.5 = 108 W.
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
