//! The run: what every kind of instance shares (the [`Core`]: clock and events, requests, books,
//! arrivals, samples, the KV links' notes and totals, the result) and the one event loop, which
//! drives a set of instances through the small [`Roles`] interface. The plain instances
//! ([`crate::plain`]) and the scheduled instances ([`crate::sched`]) are its two implementations
//! (static dispatch: the loop is generic over them).

use disagg_model::Error;

use super::books::{Books, InstanceStats, LinkStats, OnReject, NO_SUCC};
use super::event::Ev;
use super::request::Req;
use super::result::{InstanceResult, LinkResult, RunResult};
use super::EventQueue;
use crate::link::{LinkEv, Note};
use crate::observer::{InstanceInfo, InstanceSample, Observer, Sample, TransferEvent};
use crate::scenario::SimConfig;
use crate::sched::result::SchedResult;
use crate::workload::ClosedLoop;

/// Event-free stretches longer than this many sample intervals are not sampled interval by
/// interval (see [`Core::schedule_next_sample`]).
const SKIP_SAMPLES_AFTER: f64 = 1000.0;

/// What every run has, whatever its instances.
pub(crate) struct Core<'a, O: Observer> {
    pub cfg: &'a SimConfig,
    pub q: EventQueue<Ev>,
    pub reqs: Vec<Req>,
    pub books: Books,
    pub obs: &'a mut O,
    /// Closed-loop workloads: the open-loop requests in arrival order, and the next one's index.
    pub open: Vec<u32>,
    pub open_pos: usize,
    /// What the KV links reported and the instances have not acted on yet.
    pub notes: Vec<Note>,
    /// KV link totals over every link.
    pub link_stats: LinkStats,
    /// The observer wants samples; and at every interval (no skipping of event-free stretches).
    pub sampling: bool,
    pub sample_every_interval: bool,
    /// One row per instance, filled by [`Roles::take_sample`].
    pub samples: Vec<InstanceSample>,
}

impl<'a, O: Observer> Core<'a, O> {
    /// The core of a run of `reqs` on `n_inst` instances, with the link totals starting at
    /// `link_stats`.
    pub(crate) fn new(
        cfg: &'a SimConfig,
        reqs: Vec<Req>,
        n_inst: usize,
        link_stats: LinkStats,
        obs: &'a mut O,
    ) -> Self {
        let sampling = obs.wants_samples();
        let sample_every_interval = obs.every_sample_interval();
        Core {
            cfg,
            q: EventQueue::new(),
            books: Books::new(reqs.len()),
            reqs,
            obs,
            open: Vec::new(),
            open_pos: 0,
            notes: Vec::new(),
            link_stats,
            sampling,
            sample_every_interval,
            samples: vec![InstanceSample::default(); n_inst],
        }
    }

    /// Takes the closed-loop turns of `c` (see [`Books::close_loop`]).
    pub(crate) fn close_loop(&mut self, c: Option<&ClosedLoop>) {
        if let Some(c) = c {
            self.open = self.books.close_loop(c);
        }
    }

    /// Finishes `rid` at `t` (population, completion, closed-loop successor, end of run).
    #[inline]
    pub(crate) fn finish(&mut self, rid: u32, t: f64) {
        super::books::finish(
            &mut self.reqs,
            &mut self.books,
            &mut self.q,
            &mut *self.obs,
            rid,
            t,
        );
    }

    /// Schedules the first arrival: the first open-loop request (the first root with
    /// closed-loop turns) at `max(0.0, arrival)` (`docs/serving-model.md#event-order`).
    #[inline]
    fn first_arrival(&mut self) {
        let first = self.open.first().copied().unwrap_or(0);
        let a0 = self.reqs[first as usize].arrival;
        self.q
            .schedule_in(if a0 > 0.0 { a0 } else { 0.0 }, Ev::Arrival(first));
    }

    /// Schedules the open-loop arrival after request `i` (every request in rid order, or with
    /// closed-loop turns the next root): `max(0.0, arrival - now)`, then `now + delay` (`docs/serving-model.md#event-order`).
    #[inline]
    fn next_arrival(&mut self, i: u32, now: f64) {
        let next = if self.open.is_empty() {
            i as usize + 1
        } else {
            self.open_pos += 1;
            self.open
                .get(self.open_pos)
                .map_or(usize::MAX, |&x| x as usize)
        };
        if next < self.reqs.len() {
            let d = self.reqs[next].arrival - now;
            self.q
                .schedule_in(if d > 0.0 { d } else { 0.0 }, Ev::Arrival(next as u32));
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
        let dt = self.cfg.sample_dt_s;
        let mut t = self.q.now() + dt;
        let next = self.q.peek_time().filter(|_| !self.sample_every_interval);
        if let Some(next) = next.filter(|&n| n - t > SKIP_SAMPLES_AFTER * dt) {
            while t + dt < next {
                t += dt;
            }
        }
        self.q.schedule_at(t, Ev::Sample);
    }

    /// Hands the observer a sample of now: the instance rows in [`Core::samples`] and the links'
    /// figures given.
    #[inline]
    pub(crate) fn emit_sample(
        &mut self,
        link_queue: usize,
        link_busy: u32,
        link_bytes_in_flight: f64,
        decode_mem_wait: usize,
    ) {
        let s = Sample {
            t: self.q.now(),
            in_system: self.books.in_system,
            link_queue,
            link_busy,
            link_bytes_in_flight,
            decode_mem_wait,
            instances: &self.samples,
        };
        self.obs.sample(&s);
    }

    /// A link granted `rid`'s transfer now: its `kv_start`, and its wait for the link since
    /// `asked` (the plain instances: since it asked for the link, or since its decode memory was
    /// reserved; the scheduled instances: since it asked, whatever it waited for).
    #[inline]
    pub(crate) fn kv_started(&mut self, rid: u32, asked: f64) {
        let now = self.q.now();
        self.reqs[rid as usize].kv_start = now;
        self.link_stats.wait_s += now - asked;
    }

    /// `rid`'s KV landed now, after `busy_s` channel-seconds of transfer `x` (which started at
    /// `start` and took `dur_s`; `transit`: it had a compression stage): the link totals, its
    /// `kv_ready`, and the observer.
    #[inline]
    pub(crate) fn landed(
        &mut self,
        rid: u32,
        (start, busy_s, dur_s): (f64, f64, f64),
        x: &disagg_model::Transfer,
        transit: bool,
    ) {
        let now = self.q.now();
        self.link_stats.land(busy_s, x, transit);
        self.reqs[rid as usize].kv_ready = now;
        self.obs.transfer(&TransferEvent {
            rid: rid as usize,
            start,
            dur: dur_s,
            wire_bytes: x.wire_bytes,
            kv_bytes: x.kv_bytes,
        });
    }

    /// The result of the run: the instances' totals and step ends, the links' totals, and (a
    /// scheduled run) its token records and scheduler block.
    pub(crate) fn into_result(
        self,
        instances: Vec<InstanceResult>,
        step_ends: Vec<Vec<f64>>,
        links: Vec<LinkResult>,
        sched: Option<Box<SchedResult>>,
    ) -> RunResult {
        let horizon = if self.reqs.is_empty() {
            0.0
        } else {
            self.q.now()
        };
        RunResult {
            cfg: self.cfg.clone(),
            closed_turns: self.books.succ.iter().filter(|&&x| x != NO_SUCC).count() as u64,
            reqs: self.reqs,
            step_ends,
            instances,
            link: self.link_stats,
            links,
            horizon,
            area: self.books.area,
            rejected: self.books.n_rejected,
            events: self.q.processed(),
            clipped_prompts: 0,
            sched,
        }
    }
}

/// One instance's totals for the result.
pub(crate) fn instance_result(
    role: crate::scenario::Role,
    i: usize,
    pool: usize,
    stats: InstanceStats,
) -> InstanceResult {
    InstanceResult {
        name: super::result::instance_name(role, i),
        role,
        pool,
        stats,
    }
}

/// The instances of a run, as the event loop sees them. Instance indices `g` are global (prefill
/// then decode, or colocated).
pub(crate) trait Roles<'a, O: Observer + 'a> {
    /// What a rejection at arrival does to the rest of the session.
    const ON_REJECT: OnReject;

    /// The shared state.
    fn core(&mut self) -> &mut Core<'a, O>;

    /// The instances, in instance order, for the observer.
    fn instance_infos(&self) -> Vec<InstanceInfo>;

    /// Request `rid` can never be held: it is rejected at arrival.
    fn rejects(&self, rid: u32) -> bool;

    /// Routes admitted request `rid` to an instance.
    fn route(&mut self, rid: u32);

    /// Instance `g` was woken ([`Ev::Wake`]).
    fn on_wake(&mut self, g: u32);

    /// Instance `g`'s step ended.
    fn on_step_end(&mut self, g: u32);

    /// A plain decode instance's macro-step ended ([`Ev::MacroEnd`]).
    fn on_macro_end(&mut self, g: u32, epoch: u32);

    /// A first slice is ready ([`Ev::FirstSlice`]).
    fn on_first_slice(&mut self, x: u32);

    /// Link `l` handles its event `e` (its notes go to [`Core::notes`]).
    fn on_link(&mut self, l: u32, e: LinkEv);

    /// A link granted `rid`'s transfer now.
    fn on_kv_start(&mut self, rid: u32);

    /// `rid`'s KV landed now.
    fn on_kv_landed(&mut self, rid: u32, start: f64, busy_s: f64, dur_s: f64);

    /// Fills [`Core::samples`] and calls [`Core::emit_sample`].
    fn take_sample(&mut self);

    /// A request enters: the population, the admission check, then the rejection or the routing
    /// (`docs/serving-model.md#topology` steps 1-3).
    #[inline]
    fn admit_arrival(&mut self, rid: u32) {
        let c = self.core();
        let now = c.q.now();
        c.books.population(now, 1);
        c.obs.arrival(rid as usize, now);
        if self.rejects(rid) {
            let c = self.core();
            c.books
                .reject(&mut c.q, &mut *c.obs, rid, now, Self::ON_REJECT);
        } else {
            self.route(rid);
        }
    }

    /// Acts on what the links reported, in order.
    #[inline]
    fn take_notes(&mut self) {
        if self.core().notes.is_empty() {
            return;
        }
        let mut notes = std::mem::take(&mut self.core().notes);
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
        self.core().notes = notes;
    }
}

/// The event loop; [`Error::Cancelled`] if the observer stopped it (it is asked every 1,024
/// events).
pub(crate) fn run<'a, O: Observer + 'a, R: Roles<'a, O>>(r: &mut R) -> Result<(), Error> {
    let infos = r.instance_infos();
    let c = r.core();
    c.obs.begin(&infos);
    // t = 0: every instance starts idle; then the arrivals process, then the sampler (`docs/serving-model.md#event-order`).
    if c.reqs.is_empty() {
        c.obs.end(0.0);
        return Ok(());
    }
    c.first_arrival();
    if c.sampling {
        r.take_sample();
        let c = r.core();
        c.q.schedule_in(c.cfg.sample_dt_s, Ev::Sample);
    }
    let mut events = 0u64;
    while let Some((_, ev)) = r.core().q.pop() {
        if crate::observer::should_stop(&mut events, &mut *r.core().obs) {
            return Err(Error::Cancelled);
        }
        match ev {
            Ev::Arrival(i) => {
                let now = r.core().q.now();
                r.admit_arrival(i);
                r.core().next_arrival(i, now);
            }
            Ev::Release(i) => {
                let c = r.core();
                c.reqs[i as usize].arrival = c.q.now();
                r.admit_arrival(i);
            }
            Ev::Wake(g) => r.on_wake(g),
            Ev::StepEnd(g) => r.on_step_end(g),
            Ev::MacroEnd(g, epoch) => r.on_macro_end(g, epoch),
            Ev::FirstSlice(x) => r.on_first_slice(x),
            Ev::Link(l, e) => {
                r.on_link(l, e);
                r.take_notes();
            }
            Ev::Sample => {
                r.take_sample();
                r.core().schedule_next_sample();
            }
            Ev::Done => break,
        }
    }
    let c = r.core();
    let now = c.q.now();
    c.books.population(now, 0);
    c.obs.end(now);
    Ok(())
}
