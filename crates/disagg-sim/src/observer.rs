//! Observers: one trait that receives what happens during a run (steps, transfers, arrivals,
//! finishes, periodic samples). The engine is generic over it, so the no-op observer `()` compiles
//! to nothing; observers only read, they never change results. One observer may stop a run early
//! ([`Observer::cancelled`], e.g. [`Cancel`]: a flag another thread sets); the run then returns
//! [`disagg_model::Error::Cancelled`] instead of a result.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::scenario::Role;

/// How often the event loops ask [`Observer::cancelled`]: every this many events (a power of two).
/// A run's events take well under a microsecond each, so a set flag stops it within a millisecond.
pub const CANCEL_CHECK_EVENTS: u64 = 1024;

/// What kind of step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// A prefill step (a batch of whole prompts).
    Prefill,
    /// A decode step (one token per running sequence).
    Decode,
}

impl StepKind {
    /// `prefill` or `decode` (the trace category).
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Prefill => "prefill",
            StepKind::Decode => "decode",
        }
    }
}

/// An instance, as observers see it.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceInfo {
    /// `prefill-0`, `decode-1`, `colocated-0`, ...
    pub name: String,
    /// Its role.
    pub role: Role,
    /// KV capacity, tokens.
    pub kv_capacity_tokens: u64,
}

/// A step that just ended (reported at its end; the fast path reports each committed step).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepEvent {
    /// Instance index (instance list order).
    pub instance: usize,
    /// Prefill or decode.
    pub kind: StepKind,
    /// Start time, s.
    pub start: f64,
    /// Duration, s.
    pub dur: f64,
    /// Sequences in the step.
    pub batch: u32,
    /// Tokens processed: prompt tokens (prefill) or tokens produced (decode).
    pub tokens: u64,
}

/// A KV transfer that just ended (its KV landed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransferEvent {
    /// Request id.
    pub rid: usize,
    /// Start: channel grant time (FIFO links) or the time it joined a fair-shared link, s.
    pub start: f64,
    /// Transfer time, s: the reference's `latency + bytes / bandwidth` for a whole-cache transfer
    /// over FIFO channels, otherwise KV landed minus `start`.
    pub dur: f64,
    /// Bytes on the wire.
    pub wire_bytes: f64,
    /// Uncompressed KV bytes.
    pub kv_bytes: f64,
}

/// Per-instance state in a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InstanceSample {
    /// Requests waiting in its queue.
    pub queue: usize,
    /// Running sequences (decode/colocated; 0 for prefill).
    pub running: usize,
    /// KV reserved, tokens.
    pub kv_used: u64,
    /// KV capacity, tokens.
    pub kv_cap: u64,
}

/// A periodic sample of the system (every `sample_dt`, from t = 0).
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    /// Sample time, s.
    pub t: f64,
    /// Requests in the system (arrived, not finished or rejected).
    pub in_system: i64,
    /// Transfers waiting for a link channel (every link).
    pub link_queue: usize,
    /// Link channels in use (fair-shared links: transfers with bytes to send), every link.
    pub link_busy: u32,
    /// Wire bytes of started transfers not yet through their link, every link.
    pub link_bytes_in_flight: f64,
    /// Hand-offs waiting for decode memory (`--reserve-kv-on transfer`).
    pub decode_mem_wait: usize,
    /// Per-instance state, instance list order.
    pub instances: &'a [InstanceSample],
}

/// Receives the events of a run. Every method has an empty default.
pub trait Observer {
    /// Before the run: the instance table (instance list order).
    fn begin(&mut self, _instances: &[InstanceInfo]) {}
    /// A request arrived (before the admission check).
    fn arrival(&mut self, _rid: usize, _t: f64) {}
    /// A request was rejected at arrival (it needs more KV than an instance holds).
    fn rejected(&mut self, _rid: usize, _t: f64) {}
    /// A request finished at `t` (its finish stamp).
    fn finish(&mut self, _rid: usize, _t: f64) {}
    /// A step ended.
    fn step(&mut self, _ev: &StepEvent) {}
    /// A KV transfer ended.
    fn transfer(&mut self, _ev: &TransferEvent) {}
    /// Whether to run the sampler (it only reads state; off by default).
    fn wants_samples(&self) -> bool {
        false
    }
    /// Whether the sampler must take a sample at every interval, as the reference does. By
    /// default it may skip the samples of an event-free stretch (they would all equal the one
    /// taken before it): see the sampler in `serving.rs`.
    fn every_sample_interval(&self) -> bool {
        false
    }
    /// A periodic sample.
    fn sample(&mut self, _s: &Sample<'_>) {}
    /// The run ended at `horizon`.
    fn end(&mut self, _horizon: f64) {}
    /// Whether to stop the run now: asked every [`CANCEL_CHECK_EVENTS`] events (the first time
    /// before the first event); `true` ends the run with [`disagg_model::Error::Cancelled`].
    /// Never by default (the check then compiles to nothing).
    fn cancelled(&mut self) -> bool {
        false
    }
}

/// An observer that only stops the run once its flag is set (by another thread: a Ctrl-C
/// handler, a caller that gave up). Pair it with another observer as `(other, Cancel(&flag))`.
#[derive(Clone, Copy, Debug)]
pub struct Cancel<'a>(pub &'a AtomicBool);

impl Observer for Cancel<'_> {
    fn cancelled(&mut self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counts a run's events and asks `obs` whether to stop every [`CANCEL_CHECK_EVENTS`] of them
/// (the first time at the first event). For the event loops of `serving.rs` and `sched`.
#[inline(always)]
pub(crate) fn should_stop<O: Observer + ?Sized>(events: &mut u64, obs: &mut O) -> bool {
    let due = events.is_multiple_of(CANCEL_CHECK_EVENTS);
    *events = events.wrapping_add(1);
    due && obs.cancelled()
}

/// The no-op observer.
impl Observer for () {}

/// One recorded sample row (`docs/serving-model.md#outputs` "Samples").
#[derive(Clone, Debug, PartialEq)]
pub struct SampleRow {
    /// Time, s.
    pub t: f64,
    /// Requests in the system.
    pub in_system: i64,
    /// Transfers waiting for a channel.
    pub link_queue: usize,
    /// Channels in use.
    pub link_busy: u32,
    /// Wire bytes in flight.
    pub link_bytes_in_flight: f64,
    /// Hand-offs waiting for decode memory.
    pub decode_mem_wait: usize,
    /// Per instance (instance order).
    pub instances: Vec<InstanceSample>,
}

/// An observer that records every sample (the reference's `samples` time series: one row per
/// interval, idle stretches included).
#[derive(Clone, Debug, Default)]
pub struct TimeSeries {
    /// Instance table.
    pub instances: Vec<InstanceInfo>,
    /// Rows in time order.
    pub rows: Vec<SampleRow>,
}

impl Observer for TimeSeries {
    fn begin(&mut self, instances: &[InstanceInfo]) {
        self.instances = instances.to_vec();
    }
    fn wants_samples(&self) -> bool {
        true
    }
    fn every_sample_interval(&self) -> bool {
        true
    }
    fn sample(&mut self, s: &Sample<'_>) {
        self.rows.push(SampleRow {
            t: s.t,
            in_system: s.in_system,
            link_queue: s.link_queue,
            link_busy: s.link_busy,
            link_bytes_in_flight: s.link_bytes_in_flight,
            decode_mem_wait: s.decode_mem_wait,
            instances: s.instances.to_vec(),
        });
    }
}

impl<O: Observer + ?Sized> Observer for &mut O {
    fn begin(&mut self, i: &[InstanceInfo]) {
        (**self).begin(i)
    }
    fn arrival(&mut self, rid: usize, t: f64) {
        (**self).arrival(rid, t)
    }
    fn rejected(&mut self, rid: usize, t: f64) {
        (**self).rejected(rid, t)
    }
    fn finish(&mut self, rid: usize, t: f64) {
        (**self).finish(rid, t)
    }
    fn step(&mut self, ev: &StepEvent) {
        (**self).step(ev)
    }
    fn transfer(&mut self, ev: &TransferEvent) {
        (**self).transfer(ev)
    }
    fn wants_samples(&self) -> bool {
        (**self).wants_samples()
    }
    fn every_sample_interval(&self) -> bool {
        (**self).every_sample_interval()
    }
    fn sample(&mut self, s: &Sample<'_>) {
        (**self).sample(s)
    }
    fn end(&mut self, h: f64) {
        (**self).end(h)
    }
    fn cancelled(&mut self) -> bool {
        (**self).cancelled()
    }
}

/// Two observers at once.
impl<A: Observer, B: Observer> Observer for (A, B) {
    fn begin(&mut self, i: &[InstanceInfo]) {
        self.0.begin(i);
        self.1.begin(i);
    }
    fn arrival(&mut self, rid: usize, t: f64) {
        self.0.arrival(rid, t);
        self.1.arrival(rid, t);
    }
    fn rejected(&mut self, rid: usize, t: f64) {
        self.0.rejected(rid, t);
        self.1.rejected(rid, t);
    }
    fn finish(&mut self, rid: usize, t: f64) {
        self.0.finish(rid, t);
        self.1.finish(rid, t);
    }
    fn step(&mut self, ev: &StepEvent) {
        self.0.step(ev);
        self.1.step(ev);
    }
    fn transfer(&mut self, ev: &TransferEvent) {
        self.0.transfer(ev);
        self.1.transfer(ev);
    }
    fn wants_samples(&self) -> bool {
        self.0.wants_samples() || self.1.wants_samples()
    }
    fn every_sample_interval(&self) -> bool {
        (self.0.wants_samples() && self.0.every_sample_interval())
            || (self.1.wants_samples() && self.1.every_sample_interval())
    }
    fn sample(&mut self, s: &Sample<'_>) {
        self.0.sample(s);
        self.1.sample(s);
    }
    fn end(&mut self, h: f64) {
        self.0.end(h);
        self.1.end(h);
    }
    fn cancelled(&mut self) -> bool {
        self.0.cancelled() || self.1.cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Scenario, SimConfig};
    use crate::serving::simulate_config_observed;
    use disagg_model::Error;

    fn cfg(flags: &[&str]) -> SimConfig {
        Scenario::from_flags(flags.iter().copied())
            .unwrap()
            .build(&disagg_model::Catalogue::builtin())
            .unwrap()
    }

    /// Stops the run at its `stop_at`-th check, counting the checks.
    struct StopAfter {
        checks: u64,
        stop_at: u64,
    }

    impl Observer for StopAfter {
        fn cancelled(&mut self) -> bool {
            self.checks += 1;
            self.checks >= self.stop_at
        }
    }

    /// The plain engine and the scheduled one (levers), each asked to stop.
    const KINDS: [&[&str]; 2] = [
        &["--requests", "2000", "--rate", "40"],
        &["--requests", "2000", "--rate", "40", "--kv-policy", "paged"],
    ];

    #[test]
    fn a_set_flag_stops_the_run_before_its_first_event() {
        for flags in KINDS {
            let c = cfg(flags);
            let flag = AtomicBool::new(true);
            let got = simulate_config_observed(&c, &mut Cancel(&flag));
            assert_eq!(got.err(), Some(Error::Cancelled), "{flags:?}");
        }
    }

    #[test]
    fn the_loops_ask_every_1024_events_and_stop_when_told() {
        for flags in KINDS {
            let c = cfg(flags);
            // Never stopping: the run completes, having been asked once per 1,024 events.
            let mut never = StopAfter {
                checks: 0,
                stop_at: u64::MAX,
            };
            simulate_config_observed(&c, &mut never).unwrap();
            assert!(never.checks >= 3, "{flags:?}: {} checks", never.checks);
            // Stopping at the third check: asked exactly three times, then no result.
            let mut third = StopAfter {
                checks: 0,
                stop_at: 3,
            };
            let got = simulate_config_observed(&c, &mut third);
            assert_eq!(got.err(), Some(Error::Cancelled), "{flags:?}");
            assert_eq!(third.checks, 3, "{flags:?}");
        }
    }

    #[test]
    fn an_unset_flag_changes_nothing() {
        for flags in KINDS {
            let c = cfg(flags);
            let flag = AtomicBool::new(false);
            let plain = simulate_config_observed(&c, &mut ()).unwrap().summary();
            let mut both = (TimeSeries::default(), Cancel(&flag));
            let flagged = simulate_config_observed(&c, &mut both).unwrap().summary();
            assert_eq!(
                serde_json::to_value(&plain).unwrap(),
                serde_json::to_value(&flagged).unwrap(),
                "{flags:?}"
            );
            assert!(
                !both.0.rows.is_empty(),
                "the paired observer still sees the run"
            );
        }
    }
}
