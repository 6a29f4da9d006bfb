//! The books of a run: the population and completion counts (with the closed-loop successors),
//! the step accounting of an instance, and the KV link totals. One copy serves the plain and the
//! scheduled instances.

use disagg_model::{Bound, PyNum, StepCost};

use super::event::Ev;
use super::request::Req;
use super::EventQueue;
use crate::observer::Observer;
use crate::workload::ClosedLoop;

/// Step accounting of one instance (`docs/serving-model.md#metrics`, `docs/cost-model.md#energy`). Every accumulator is a plain
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
    /// Scale-up communication time inside the steps, s (parallel layouts; `docs/cost-model.md#parallelism`).
    pub comm_s: f64,
    /// Scale-up link energy, J.
    pub comm_j: f64,
    /// Time of steps whose bound was `optical` (the transform engine), s (`docs/levers.md#fft-mixing`).
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
    /// Accounts a prefill step on a transform-engine device (`account_optical`, `docs/levers.md`
    /// `docs/levers.md#fft-mixing`): `c` is the step (its `compute_j` and `memory_j` are the GPU part's), `oj` and `of`
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

    /// Adds a step's scale-up communication time and energy (`docs/cost-model.md#parallelism`).
    #[inline(always)]
    pub(crate) fn account_comm(&mut self, c: &StepCost) {
        self.comm_s += c.comm_time_s;
        self.comm_j += c.comm_j;
    }
}

/// KV link totals over every link (`docs/serving-model.md#kv-link`).
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

/// A step that costs nothing (an instance's step before its first).
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

/// What a rejection at arrival does to the rest of the rejected request's closed-loop session.
/// The plain and the scheduled instances differ here, and both behaviours are kept (the outputs
/// show them); [`Books::reject`] takes the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnReject {
    /// The plain instances (no scheduling lever on): the rejected turn ends like a finished one,
    /// so the session's next turn is released `think` seconds later and is judged on its own.
    ReleaseNextTurn,
    /// The scheduled instances (a scheduling lever on): the rejected turn and every later turn of
    /// its session are rejected at once (they are never released).
    RejectSession,
}

impl Books {
    /// Rejects request `rid` at its arrival `now` (it can never be held), and the rest of its
    /// session as `rule` says; the run ends when nothing is left.
    #[inline]
    pub(crate) fn reject<O: Observer>(
        &mut self,
        q: &mut EventQueue<Ev>,
        obs: &mut O,
        rid: u32,
        now: f64,
        rule: OnReject,
    ) {
        self.population(now, -1);
        match rule {
            OnReject::ReleaseNextTurn => {
                self.n_rejected += 1;
                obs.rejected(rid as usize, now);
                self.release_successor(q, rid, now);
            }
            OnReject::RejectSession => {
                let mut r = rid;
                loop {
                    self.n_rejected += 1;
                    obs.rejected(r as usize, now);
                    match self.succ.get(r as usize) {
                        Some(&s) if s != NO_SUCC => r = s,
                        _ => break,
                    }
                }
            }
        }
        if self.n_done + self.n_rejected == self.n_total {
            q.schedule_at(now, Ev::Done);
        }
    }
}
