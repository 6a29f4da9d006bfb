//! What every link discipline shares: the layer-wise production of a transfer's slices
//! ([`LayerPlan`]), the transfer ([`XferSpec`]), the link's events and notes, its totals, and the
//! [`Discipline`] trait, with the queue it schedules on ([`Schedule`]) and the calculator's case
//! for its closed form ([`SharedCase`]).

/// The last byte's time after the end of a `prefill_s` prefill whose KV leaves layer by layer, the
/// transfer granted `wait_s` (`>= 0`) after its first slice was ready:
/// `max(stream / L, (stream + wait) - (prefill * (L - 1)) / L)` (the one closed form behind
/// [`crate::layerwise_exposed`], [`crate::layerwise_exposed_after`] and the simulator's link; `stream + 0.0` is
/// `stream`, so `wait_s = 0` is the chapter's form bit for bit).
#[inline]
pub fn layerwise_tail(stream_s: f64, prefill_s: f64, layers: u64, wait_s: f64) -> f64 {
    let l = layers as f64;
    (stream_s / l).max((stream_s + wait_s) - (prefill_s * (layers - 1) as f64) / l)
}

/// When the slices of a layer-wise transfer are ready: the prefill step that produces them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerPlan {
    /// Step start, s.
    pub start: f64,
    /// Step duration `T`, s.
    pub step_s: f64,
    /// Step end as the engine computes it (`start + T`), s: the first-token time.
    pub end: f64,
    /// Layers `L` (at least 1).
    pub layers: u32,
}

impl LayerPlan {
    /// The plan of a step starting at `start` that lasts `step_s`.
    pub fn new(start: f64, step_s: f64, layers: u32) -> Self {
        LayerPlan {
            start,
            step_s,
            end: start + step_s,
            layers: layers.max(1),
        }
    }

    /// When slice `k` (1-based) is ready: `start + (k * T) / L`, the last one at `end`.
    #[inline]
    pub fn slice_ready(&self, k: u32) -> f64 {
        if k >= self.layers {
            self.end
        } else {
            self.start + (k as f64 * self.step_s) / self.layers as f64
        }
    }

    /// When the first slice is ready (`start + T / L`; the step end if `L = 1`).
    #[inline]
    pub fn first_ready(&self) -> f64 {
        self.slice_ready(1)
    }

    /// Number of slices ready at `t`.
    pub fn ready_at(&self, t: f64) -> u32 {
        let l = self.layers;
        let est = ((t - self.start) * l as f64 / self.step_s).floor();
        let mut k = if est.is_nan() || est < 0.0 {
            0
        } else if est >= l as f64 {
            l
        } else {
            est as u32
        };
        while k < l && self.slice_ready(k + 1) <= t {
            k += 1;
        }
        while k > 0 && self.slice_ready(k) > t {
            k -= 1;
        }
        k
    }

    /// Time from the step's end to the landing of a `stream_s` + `fixed_s` transfer that has a
    /// channel (or the whole link) to itself from `g`:
    /// `fixed + max(stream / L, (stream + (g - r1)) - (T * (L - 1)) / L)`.
    #[inline]
    pub fn solo_exposed(&self, fixed_s: f64, stream_s: f64, g: f64) -> f64 {
        fixed_s + self.solo_tail(stream_s, g)
    }

    /// Chunk-wise streaming (scheduled pools): a sender that has its channel to itself and is
    /// through with everything before this step at `f0` sends this step's `work` (its `L` equal
    /// slices, in order, each as soon as it is ready and the previous one is through); returns
    /// when its last byte is through: `max(max(f0, r1) + work, end + work / L)` (the slices are
    /// equal and equally spaced, so the latest of `r_j + (L - j + 1) * work / L` is at the first
    /// slice or at the last).
    #[inline]
    pub fn stream_through(&self, f0: f64, work: f64) -> f64 {
        let a = f0.max(self.first_ready()) + work;
        a.max(self.end + work / self.layers as f64)
    }

    /// The last byte's time after the step's end (the bracket of [`LayerPlan::solo_exposed`]).
    #[inline]
    pub fn solo_tail(&self, stream_s: f64, g: f64) -> f64 {
        let d = g - self.first_ready();
        let d = if d > 0.0 { d } else { 0.0 };
        layerwise_tail(stream_s, self.step_s, self.layers as u64, d)
    }
}

/// One transfer, as the serving model hands it to a link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XferSpec {
    /// Request id (echoed in the notes).
    pub rid: u32,
    /// Latency added once, s (link latency plus any in-link stage latency).
    pub fixed_s: f64,
    /// Work at one channel's full rate, s.
    pub stream_s: f64,
    /// `fixed_s + stream_s` as the cost model computes it (the reference's transfer time).
    pub time_s: f64,
    /// Bytes on the wire.
    pub wire_bytes: f64,
    /// Layer-wise: the prefill step that produces the slices. `None`: the whole cache is ready.
    pub plan: Option<LayerPlan>,
}

/// A link's own events (scheduled on the engine's queue wrapped in the caller's event type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkEv {
    /// FIFO: a channel is granted to slot.
    Grant(u32),
    /// FIFO: slot's KV has landed; its channel is released.
    End(u32),
    /// FIFO: examine the queue head after a release.
    Release,
    /// Fair: the next completion or slice arrival (stale if the epoch moved on).
    Wake(u32),
    /// Fair: slot's KV has landed (its last byte plus the latency).
    Land(u32),
}

/// What a link tells the serving model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Note {
    /// The transfer of `rid` started (channel granted, or joined the sharing set) now.
    Started {
        /// Request id.
        rid: u32,
    },
    /// The KV of `rid` has landed now.
    Landed {
        /// Request id.
        rid: u32,
        /// When it started, s.
        start: f64,
        /// Channel-seconds it used (FIFO: holding time; fair: its stream work).
        busy_s: f64,
        /// Transfer duration to report, s (FIFO whole-cache: the reference's transfer time;
        /// otherwise landing minus start).
        dur_s: f64,
    },
}

/// Totals of one link.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkTotals {
    /// Channel-seconds used, s.
    pub busy_s: f64,
    /// Bytes on the wire of landed transfers.
    pub bytes: f64,
    /// Transfers landed.
    pub transfers: u64,
}

/// A fixed-size record store with reuse.
#[derive(Clone, Debug)]
pub(super) struct Slab<T> {
    pub(super) items: Vec<T>,
    pub(super) free: Vec<u32>,
}

impl<T> Slab<T> {
    pub(super) fn new() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
    #[inline]
    pub(super) fn alloc(&mut self, x: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = x;
                i
            }
            None => {
                self.items.push(x);
                (self.items.len() - 1) as u32
            }
        }
    }
    #[inline]
    pub(super) fn release(&mut self, i: u32) {
        self.free.push(i);
    }
}

/// The event queue a link schedules its events on: the simulator's engine queue implements it
/// (events run in `(time, insertion)` order; a time before `now` runs at `now`).
pub trait Schedule<E> {
    /// The clock: the time of the event being handled.
    fn now(&self) -> f64;
    /// Schedules `ev` at absolute time `time`.
    fn schedule_at(&mut self, time: f64, ev: E);
    /// Schedules `ev` at `now + delay`.
    fn schedule_in(&mut self, delay: f64, ev: E);
}

/// The hand-off calculator's case for a discipline's closed form: `concurrent` identical
/// transfers, prefilled together and handed off at once over one link of `channels` channels.
#[derive(Clone, Copy, Debug)]
pub struct SharedCase {
    /// One transfer's fixed latency, s.
    pub fixed_s: f64,
    /// One transfer's stream time at one channel's full rate, s.
    pub stream_s: f64,
    /// One transfer's reference time (`fixed + stream` as the cost model computes it), s.
    pub time_s: f64,
    /// The link's channels, as the catalogue gives them (0 counts as 1).
    pub channels: u32,
    /// Transfers handed off at once (at least 2).
    pub concurrent: u32,
    /// The prefill step that produces them, s.
    pub prefill_s: f64,
    /// The model's layers.
    pub layers: u64,
    /// Sent layer by layer (else whole).
    pub layerwise: bool,
}

/// The times of the last of a [`SharedCase`]'s transfers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SharedTimes {
    /// Its transfer time, s.
    pub transfer_s: f64,
    /// Its time exposed after the prefill, s.
    pub exposed_s: f64,
}

/// The caller's event type must carry `(link index, LinkEv)`.
pub type Tagged = (u32, LinkEv);

/// A link discipline: how one link's C channels serve the transfers submitted to it. Each
/// discipline is one file of this directory and one row of the registry in [`super`]; the
/// events it schedules are [`LinkEv`]s (the FIFO ones or the wake/land pair, or both), and what it
/// tells the serving model is [`Note`]s.
pub trait Discipline: Sized {
    /// A link of `channels` channels, idle.
    fn new(channels: u32) -> Self;
    /// Transfers waiting for a channel.
    fn waiting(&self) -> usize;
    /// Transfers moving bytes now.
    fn in_flight(&self) -> u32;
    /// Total rate now, in channel rates (never above the channel count).
    fn total_rate(&self) -> f64;
    /// Wire bytes of started transfers not yet through the link at `now`.
    fn bytes_in_flight(&self, now: f64) -> f64;
    /// Submits a transfer now (`q.now()`); `l` is the link's index (echoed in its events).
    fn submit<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        spec: XferSpec,
        q: &mut Q,
        notes: &mut Vec<Note>,
    );
    /// Submits a transfer whose landing time the caller gives later ([`Discipline::close`]);
    /// returns its slot. Only FIFO has them.
    fn submit_open<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        _l: u32,
        _spec: XferSpec,
        _q: &mut Q,
    ) -> u32 {
        panic!("open transfers are FIFO only")
    }
    /// The open transfer in `slot` lands at `at`.
    fn close<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        _l: u32,
        _slot: u32,
        _at: f64,
        _q: &mut Q,
    ) {
        panic!("open transfers are FIFO only")
    }
    /// The calculator's closed form: the times of the last of `case`'s transfers. `tail(stream_s,
    /// wait_s)` is the time from the end of the prefill until the last byte of a layer-wise
    /// transfer of stream time `stream_s` is sent, when it is granted `wait_s` after its first
    /// slice is ready.
    fn shared(case: &SharedCase, tail: impl Fn(f64, f64) -> f64) -> SharedTimes;
    /// Handles one of the link's events, adding what landed to `totals`.
    fn on_event<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        ev: LinkEv,
        q: &mut Q,
        notes: &mut Vec<Note>,
        totals: &mut LinkTotals,
    );
}
