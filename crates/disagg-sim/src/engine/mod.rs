//! The engine core: the event kernel (a clock and a priority queue of timed events, which knows
//! nothing about LLMs, in this file) and what every run shares whatever its instances:
//!
//! * [`request`]: a request's stamps and what it reserves;
//! * [`event`]: the events;
//! * [`books`]: population and completion counts, step accounting, link totals, and the
//!   rejection rule ([`books::OnReject`]);
//! * [`run`]: the shared state of a run ([`run::Core`]: requests, arrivals, samples, link notes,
//!   landing) and the one event loop over a set of instances ([`run::Roles`]);
//! * [`result`]: the result of a run ([`RunResult`]);
//! * [`itl`]: the inter-token latencies, reconstructed from step ends.
//!
//! # Ordering
//!
//! Events are popped in increasing `(time, seq)` order, where `seq` is a global insertion counter.
//! Two events scheduled for bit-identical times therefore run in the order they were scheduled
//! (FIFO). This is SimPy's `(time, priority, eid)` order without the priority class: the serving
//! model reproduces SimPy's two URGENT cases (process start and interrupt) by doing that work
//! synchronously, right after the handler that caused it, which is exactly when SimPy runs them
//! (`docs/serving-model.md#event-order` item 1).
//!
//! Every scheduled time is computed by the caller as `now + delay` in double precision, as SimPy
//! does; the queue never rounds or re-bases times. Popping an event sets the clock to its time.

pub(crate) mod books;
pub(crate) mod event;
pub(crate) mod itl;
pub(crate) mod request;
pub mod result;
pub(crate) mod run;

pub use books::{InstanceStats, LinkStats};
pub use result::{InstanceResult, LinkResult, RequestRecord, RunResult};

use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: f64,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the smallest `(time, seq)` first. Times
    /// compare as numbers, as Python's `heapq` compares them: -0.0 and +0.0 are the same time, so
    /// the insertion sequence decides between them. (Times are never NaN: `schedule_at` checks.)
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        let by_time = if other.time < self.time {
            Ordering::Less
        } else if other.time > self.time {
            Ordering::Greater
        } else {
            Ordering::Equal
        };
        by_time.then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A discrete-event queue ordered by `(time, insertion sequence)`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    now: f64,
    seq: u64,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue with the clock at 0.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(64),
            now: 0.0,
            seq: 0,
            popped: 0,
        }
    }

    /// The clock: the time of the event being handled.
    #[inline]
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Schedules `ev` at absolute time `time`. A time before `now` (only possible through a
    /// caller's rounding) is clamped to `now` so that the clock never runs backwards.
    #[inline]
    pub fn schedule_at(&mut self, time: f64, ev: E) {
        debug_assert!(!time.is_nan(), "event time is NaN");
        let time = if time < self.now { self.now } else { time };
        self.heap.push(Entry {
            time,
            seq: self.seq,
            ev,
        });
        self.seq += 1;
    }

    /// Schedules `ev` at `now + delay` (SimPy's `timeout(delay)`).
    #[inline]
    pub fn schedule_in(&mut self, delay: f64, ev: E) {
        self.schedule_at(self.now + delay, ev);
    }

    /// Pops the next event and advances the clock to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(f64, E)> {
        let e = self.heap.pop()?;
        self.now = e.time;
        self.popped += 1;
        Some((e.time, e.ev))
    }

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<f64> {
        self.heap.peek().map(|e| e.time)
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True if no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Events scheduled so far.
    pub fn scheduled(&self) -> u64 {
        self.seq
    }

    /// Events popped so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_then_fifo() {
        let mut q = EventQueue::new();
        q.schedule_at(2.0, 'a');
        q.schedule_at(1.0, 'b');
        q.schedule_at(2.0, 'c');
        q.schedule_at(1.0, 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|x| x.1)).collect();
        assert_eq!(order, ['b', 'd', 'a', 'c']);
        assert_eq!(q.now(), 2.0);
    }

    #[test]
    fn schedule_in_adds_to_now() {
        let mut q = EventQueue::new();
        q.schedule_at(0.1, 0);
        q.pop();
        q.schedule_in(0.2, 1);
        assert_eq!(q.pop(), Some((0.1 + 0.2, 1)));
    }

    #[test]
    fn counters_and_peek_follow_schedule_and_pop() {
        let mut q = EventQueue::new();
        assert!(q.is_empty());
        assert_eq!((q.len(), q.scheduled(), q.processed()), (0, 0, 0));
        assert_eq!(q.peek_time(), None);
        assert_eq!(q.pop(), None);
        // A failed pop counts nothing.
        assert_eq!(q.processed(), 0);
        q.schedule_at(3.0, 'a');
        assert!(!q.is_empty());
        q.schedule_at(1.5, 'b');
        q.schedule_in(2.25, 'c');
        // Three schedules: 3 waiting, 3 scheduled, the earliest is 1.5.
        assert_eq!((q.len(), q.scheduled(), q.processed()), (3, 3, 0));
        assert_eq!(q.peek_time(), Some(1.5));
        assert_eq!(q.pop(), Some((1.5, 'b')));
        // One pop: 2 waiting, still 3 scheduled, 1 processed; the clock is the popped time.
        assert_eq!((q.len(), q.scheduled(), q.processed()), (2, 3, 1));
        assert_eq!(q.now(), 1.5);
        assert_eq!(q.peek_time(), Some(2.25));
        assert_eq!(q.pop(), Some((2.25, 'c')));
        assert_eq!((q.len(), q.scheduled(), q.processed()), (1, 3, 2));
        assert_eq!(q.pop(), Some((3.0, 'a')));
        assert!(q.is_empty());
        assert_eq!((q.len(), q.scheduled(), q.processed()), (0, 3, 3));
        assert_eq!(q.now(), 3.0);
        assert_eq!(q.peek_time(), None);
    }

    #[test]
    fn relative_and_past_times_are_measured_from_the_clock() {
        let mut q = EventQueue::default();
        assert_eq!(q.now(), 0.0);
        q.schedule_at(2.0, 0);
        assert_eq!(q.pop(), Some((2.0, 0)));
        assert_eq!(q.now(), 2.0);
        // 2.0 + 0.5 = 2.5 (exact in binary).
        q.schedule_in(0.5, 1);
        assert_eq!(q.peek_time(), Some(2.5));
        // A time before the clock is clamped to it: 1.0 < 2.0, so it runs at 2.0, first.
        q.schedule_at(1.0, 2);
        assert_eq!(q.pop(), Some((2.0, 2)));
        assert_eq!(q.now(), 2.0);
        assert_eq!(q.pop(), Some((2.5, 1)));
        assert_eq!(q.now(), 2.5);
        // A zero delay lands at the clock itself, after what is already queued there.
        q.schedule_at(2.5, 3);
        q.schedule_in(0.0, 4);
        assert_eq!(q.pop(), Some((2.5, 3)));
        assert_eq!(q.pop(), Some((2.5, 4)));
    }

    #[test]
    fn a_time_equal_to_the_clock_is_kept_bit_for_bit() {
        // -0.0 is not before the clock's +0.0 (`-0.0 < 0.0` is false), so it is not clamped:
        // the queue hands back the caller's time unchanged, sign bit included.
        let mut q = EventQueue::new();
        q.schedule_at(-0.0, 'z');
        let (t, ev) = q.pop().unwrap();
        assert_eq!((t.to_bits(), ev), ((-0.0f64).to_bits(), 'z'));
        assert_eq!(q.now().to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn many_equal_times_pop_in_scheduling_order() {
        // 40 events at one time, interleaved with earlier and later ones: the tie-break is the
        // scheduling order, whatever the heap's internal layout.
        let mut q = EventQueue::new();
        for i in 0..40u32 {
            q.schedule_at(1.0, i);
            if i % 3 == 0 {
                q.schedule_at(2.0, 1000 + i);
                q.schedule_at(0.5, 2000 + i);
            }
        }
        // 40 + 2 x 14 (i = 0, 3, ..., 39) = 68 scheduled.
        assert_eq!(q.scheduled(), 68);
        let got: Vec<(f64, u32)> = std::iter::from_fn(|| q.pop()).collect();
        let mut want: Vec<(f64, u32)> = (0..40).step_by(3).map(|i| (0.5, 2000 + i)).collect();
        want.extend((0..40).map(|i| (1.0, i)));
        want.extend((0..40).step_by(3).map(|i| (2.0, 1000 + i)));
        assert_eq!(got, want);
        assert_eq!(q.processed(), 68);
    }

    #[test]
    fn entries_are_equal_exactly_when_time_and_sequence_are() {
        let e = |time: f64, seq: u64| Entry { time, seq, ev: () };
        assert!(e(1.0, 4) == e(1.0, 4));
        assert!(e(1.0, 4) != e(1.0, 5));
        assert!(e(1.0, 4) != e(2.0, 4));
        // Reversed order: the earlier (time, seq) is the greater entry (popped first).
        assert!(e(1.0, 4) > e(2.0, 0));
        assert!(e(1.0, 4) > e(1.0, 5));
        assert_eq!(e(1.0, 4).partial_cmp(&e(1.0, 4)), Some(Ordering::Equal));
    }

    #[test]
    fn signed_zeros_are_one_time_and_keep_scheduling_order() {
        // Python's heapq (the reference's SimPy queue) sees -0.0 == 0.0 and falls through to the
        // event id: an event at +0.0 scheduled first pops first, whatever the sign of the second.
        let mut q = EventQueue::new();
        q.schedule_at(0.0, 'a');
        q.schedule_at(-0.0, 'b');
        q.schedule_at(0.0, 'c');
        let order: Vec<char> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ['a', 'b', 'c']);
    }
}
