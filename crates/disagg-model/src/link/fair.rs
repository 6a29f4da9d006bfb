//! `fair` (beyond the reference): processor sharing: the transfers with ready bytes split the
//! link's C channels' bandwidth equally (each at most one channel's rate).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::common::{
    Discipline, LinkEv, LinkTotals, Note, Schedule, SharedCase, SharedTimes, Slab, Tagged, XferSpec,
};

/// A heap key: `(value, version, slot)` ordered by value, then version (deterministic).
#[derive(Clone, Copy, Debug)]
pub(super) struct Key {
    pub(super) x: f64,
    pub(super) ver: u64,
    pub(super) slot: u32,
}
impl PartialEq for Key {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Self) -> Ordering {
        self.x
            .total_cmp(&o.x)
            .then(self.ver.cmp(&o.ver))
            .then(self.slot.cmp(&o.slot))
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct FairSlot {
    pub(super) spec: XferSpec,
    /// Join time.
    pub(super) start: f64,
    /// Slices counted as ready (whole cache: 1 of 1).
    pub(super) k: u32,
    /// Slices in all.
    pub(super) n_slices: u32,
    /// Work per slice.
    pub(super) w: f64,
    /// Virtual finish time of its ready bytes (valid while `active`).
    pub(super) f: f64,
    /// Version of its live heap entry.
    pub(super) ver: u64,
    /// In the sharing set (has ready bytes).
    pub(super) active: bool,
    /// Bytes through, waiting for the latency to land.
    pub(super) landing: bool,
    pub(super) live: bool,
}

/// Processor sharing of C channels.
#[derive(Clone, Debug)]
pub(super) struct Fair {
    pub(super) cap: f64,
    /// Virtual time: service received by each active transfer since the origin.
    pub(super) v: f64,
    pub(super) t_last: f64,
    /// Active transfers (ready bytes), solo excluded.
    pub(super) n: u32,
    /// Transfers with bytes still to send (solo included).
    pub(super) flows: u32,
    pub(super) solo: Option<u32>,
    pub(super) solo_done: f64,
    pub(super) solo_land: f64,
    pub(super) heap: BinaryHeap<Reverse<Key>>,
    pub(super) pend: BinaryHeap<Reverse<Key>>,
    pub(super) epoch: u32,
    pub(super) wake_ps: bool,
    pub(super) wake_f: f64,
    pub(super) ver: u64,
    pub(super) slots: Slab<FairSlot>,
}

/// Progress of a solo transfer (alone on the link at full rate since it joined) at `now`:
/// `(slices ready, work sent)`, by walking its slices (used once, when another transfer joins).
pub(super) fn solo_progress(s: &FairSlot, now: f64) -> (u32, f64) {
    let Some(p) = s.spec.plan else {
        let sent = (now - s.start).clamp(0.0, s.w);
        return (1, sent);
    };
    let l = s.n_slices;
    let mut k = p.ready_at(s.start).max(1);
    let mut t = s.start;
    let mut sent = 0.0;
    loop {
        let ready = k as f64 * s.w;
        let next = if k < l {
            p.slice_ready(k + 1)
        } else {
            f64::INFINITY
        };
        let drain = t + (ready - sent);
        if drain <= next && drain <= now {
            sent = ready;
            if next <= now {
                t = next;
                k += 1;
            } else {
                break;
            }
        } else if next <= now {
            sent += next - t;
            t = next;
            k += 1;
        } else {
            sent += now - t;
            break;
        }
    }
    (k, sent.min(k as f64 * s.w))
}

impl Fair {
    #[inline]
    pub(super) fn rate(&self) -> f64 {
        let n = self.n as f64;
        if n <= self.cap {
            1.0
        } else {
            self.cap / n
        }
    }

    #[inline]
    pub(super) fn advance(&mut self, now: f64) {
        if self.n > 0 {
            self.v += (now - self.t_last) * self.rate();
        }
        self.t_last = now;
    }

    #[inline]
    pub(super) fn next_ver(&mut self) -> u64 {
        self.ver += 1;
        self.ver
    }

    pub(super) fn push_active(&mut self, s: u32) {
        let ver = self.next_ver();
        let slot = &mut self.slots.items[s as usize];
        slot.ver = ver;
        let f = slot.f;
        self.heap.push(Reverse(Key { x: f, ver, slot: s }));
    }

    pub(super) fn push_pend(&mut self, s: u32) {
        let slot = &self.slots.items[s as usize];
        if slot.k < slot.n_slices {
            let p = slot.spec.plan.expect("a multi-slice transfer has a plan");
            let t = p.slice_ready(slot.k + 1);
            let ver = slot.k as u64 + 1;
            self.pend.push(Reverse(Key { x: t, ver, slot: s }));
        }
    }

    pub(super) fn enqueue<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        spec: XferSpec,
        q: &mut Q,
        notes: &mut Vec<Note>,
    ) {
        let now = q.now();
        let (n_slices, w) = match spec.plan {
            Some(p) => (p.layers, spec.stream_s / p.layers as f64),
            None => (1, spec.stream_s),
        };
        let s = self.slots.alloc(FairSlot {
            spec,
            start: now,
            k: 0,
            n_slices,
            w,
            f: 0.0,
            ver: 0,
            active: false,
            landing: false,
            live: true,
        });
        notes.push(Note::Started { rid: spec.rid });
        if let Some(s0) = self.solo {
            if now >= self.solo_done {
                // Its last byte is through at this very time (its wake is still queued).
                self.retire_solo(l, s0, now, q);
            }
        }
        if self.flows == 0 {
            // Alone: closed form.
            self.flows = 1;
            self.solo = Some(s);
            let (done, land) = match spec.plan {
                None => (now + spec.stream_s, now + spec.time_s),
                Some(p) => {
                    let tail = p.solo_tail(spec.stream_s, now);
                    (p.end + tail, p.end + (spec.fixed_s + tail))
                }
            };
            self.solo_done = done;
            self.solo_land = land;
            self.epoch = self.epoch.wrapping_add(1);
            self.wake_ps = false;
            q.schedule_at(done, E::from((l, LinkEv::Wake(self.epoch))));
            return;
        }
        self.advance(now);
        if let Some(s0) = self.solo.take() {
            self.unsolo(l, s0, now, q);
        }
        let k0 = match spec.plan {
            Some(p) => p.ready_at(now).max(1),
            None => 1,
        };
        self.flows += 1;
        let v = self.v;
        let slot = &mut self.slots.items[s as usize];
        slot.k = k0;
        slot.f = v + k0 as f64 * w;
        slot.active = true;
        self.n += 1;
        self.push_active(s);
        self.push_pend(s);
        self.reschedule(l, q);
    }

    /// The solo transfer `s` has sent its last byte: it lands after its latency, at the time
    /// worked out when it started.
    pub(super) fn retire_solo<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        s: u32,
        now: f64,
        q: &mut Q,
    ) {
        self.solo = None;
        self.flows -= 1;
        self.slots.items[s as usize].landing = true;
        q.schedule_at(self.solo_land, E::from((l, LinkEv::Land(s))));
        if self.flows == 0 {
            self.v = 0.0;
            self.t_last = now;
        }
        // Its pending wake (if any) is stale from now on.
        self.epoch = self.epoch.wrapping_add(1);
    }

    /// The solo transfer `s` stops being alone at `now`: work out what it has sent and put it in
    /// the sharing set (the caller has advanced the clock; `n` is 0 here).
    pub(super) fn unsolo<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        s: u32,
        now: f64,
        q: &mut Q,
    ) {
        let slot = self.slots.items[s as usize];
        let (k, sent) = solo_progress(&slot, now);
        let backlog = k as f64 * slot.w - sent;
        if k >= slot.n_slices && backlog <= 0.0 {
            // Its bytes are through (rounding): it lands on time.
            self.solo = Some(s);
            self.retire_solo(l, s, now, q);
            return;
        }
        let v = self.v;
        let sl = &mut self.slots.items[s as usize];
        sl.k = k;
        if backlog > 0.0 {
            sl.f = v + backlog;
            sl.active = true;
            self.n += 1;
            self.push_active(s);
        } else {
            sl.active = false;
        }
        self.push_pend(s);
    }

    pub(super) fn reschedule<E: From<Tagged>, Q: Schedule<E>>(&mut self, l: u32, q: &mut Q) {
        // Drop stale heap tops.
        while let Some(Reverse(k)) = self.heap.peek() {
            let sl = &self.slots.items[k.slot as usize];
            if sl.live && sl.active && sl.ver == k.ver {
                break;
            }
            self.heap.pop();
        }
        let (t_ps, f) = match (self.n > 0, self.heap.peek()) {
            (true, Some(Reverse(k))) => (self.t_last + (k.x - self.v) / self.rate(), k.x),
            _ => (f64::INFINITY, 0.0),
        };
        let t_pend = self.pend.peek().map_or(f64::INFINITY, |Reverse(k)| k.x);
        let t = t_ps.min(t_pend);
        if t.is_finite() {
            self.epoch = self.epoch.wrapping_add(1);
            self.wake_ps = t_ps <= t_pend;
            self.wake_f = f;
            q.schedule_at(t, E::from((l, LinkEv::Wake(self.epoch))));
        }
    }

    pub(super) fn handle<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        ev: LinkEv,
        q: &mut Q,
        notes: &mut Vec<Note>,
        totals: &mut LinkTotals,
    ) {
        let now = q.now();
        match ev {
            LinkEv::Wake(e) => {
                if e != self.epoch {
                    return;
                }
                if let Some(s) = self.solo {
                    // The solo transfer's last byte is through.
                    self.retire_solo(l, s, now, q);
                    return;
                }
                self.advance(now);
                if self.wake_ps && self.wake_f > self.v {
                    self.v = self.wake_f;
                }
                // Transfers whose ready bytes are through.
                while let Some(Reverse(k)) = self.heap.peek().copied() {
                    let sl = &self.slots.items[k.slot as usize];
                    if !(sl.live && sl.active && sl.ver == k.ver) {
                        self.heap.pop();
                        continue;
                    }
                    if k.x > self.v {
                        break;
                    }
                    self.heap.pop();
                    self.n -= 1;
                    let sl = &mut self.slots.items[k.slot as usize];
                    sl.active = false;
                    if sl.k >= sl.n_slices {
                        sl.landing = true;
                        self.flows -= 1;
                        let fixed = sl.spec.fixed_s;
                        q.schedule_in(fixed, E::from((l, LinkEv::Land(k.slot))));
                    }
                }
                // Slices that became ready.
                while let Some(Reverse(k)) = self.pend.peek().copied() {
                    if k.x > now {
                        break;
                    }
                    self.pend.pop();
                    let v = self.v;
                    let sl = &mut self.slots.items[k.slot as usize];
                    debug_assert!(sl.live && sl.k as u64 + 1 == k.ver);
                    sl.k += 1;
                    if sl.active {
                        sl.f += sl.w;
                    } else {
                        sl.f = v + sl.w;
                        sl.active = true;
                        self.n += 1;
                    }
                    self.push_active(k.slot);
                    self.push_pend(k.slot);
                }
                if self.flows == 0 {
                    self.v = 0.0;
                    self.heap.clear();
                }
                self.reschedule(l, q);
            }
            LinkEv::Land(s) => {
                let sl = &mut self.slots.items[s as usize];
                sl.live = false;
                let sp = sl.spec;
                let start = sl.start;
                totals.busy_s += sp.stream_s;
                totals.bytes += sp.wire_bytes;
                totals.transfers += 1;
                notes.push(Note::Landed {
                    rid: sp.rid,
                    start,
                    busy_s: sp.stream_s,
                    dur_s: now - start,
                });
                self.slots.release(s);
            }
            LinkEv::Grant(_) | LinkEv::End(_) | LinkEv::Release => {
                unreachable!("FIFO-link event on a fair link")
            }
        }
    }
}

impl Discipline for Fair {
    fn new(channels: u32) -> Self {
        Fair {
            cap: channels as f64,
            v: 0.0,
            t_last: 0.0,
            n: 0,
            flows: 0,
            solo: None,
            solo_done: 0.0,
            solo_land: 0.0,
            heap: BinaryHeap::new(),
            pend: BinaryHeap::new(),
            epoch: 0,
            wake_ps: false,
            wake_f: 0.0,
            ver: 0,
            slots: Slab::new(),
        }
    }

    fn waiting(&self) -> usize {
        0
    }

    fn in_flight(&self) -> u32 {
        self.n + self.solo.is_some() as u32
    }

    fn total_rate(&self) -> f64 {
        if self.solo.is_some() {
            1.0
        } else {
            self.n as f64 * self.rate()
        }
    }

    fn bytes_in_flight(&self, now: f64) -> f64 {
        let f = self;
        let mut total = 0.0;
        for (i, s) in f.slots.items.iter().enumerate() {
            if !s.live || s.landing {
                continue;
            }
            let done = if f.solo == Some(i as u32) {
                solo_progress(s, now).1
            } else {
                let v = if f.n > 0 {
                    f.v + (now - f.t_last) * f.rate()
                } else {
                    f.v
                };
                let ready = s.k as f64 * s.w;
                if s.active {
                    ready - (s.f - v).max(0.0)
                } else {
                    ready
                }
            };
            let total_w = s.n_slices as f64 * s.w;
            let left = (total_w - done).max(0.0);
            if total_w > 0.0 {
                total += s.spec.wire_bytes * (left / total_w);
            }
        }
        total
    }

    #[inline]
    fn submit<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        spec: XferSpec,
        q: &mut Q,
        notes: &mut Vec<Note>,
    ) {
        self.enqueue(l, spec, q, notes)
    }

    /// All share the bandwidth, each at `min(1, channels / n)` of a channel, and land together.
    fn shared(case: &SharedCase, tail: impl Fn(f64, f64) -> f64) -> SharedTimes {
        let c = case.channels.max(1) as f64;
        let n = case.concurrent as f64;
        let stream = case.stream_s * (n / c).max(1.0);
        let transfer_s = case.fixed_s + stream;
        let exposed_s = if case.layerwise {
            case.fixed_s + tail(stream, 0.0)
        } else {
            transfer_s
        };
        SharedTimes {
            transfer_s,
            exposed_s,
        }
    }

    #[inline]
    fn on_event<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        ev: LinkEv,
        q: &mut Q,
        notes: &mut Vec<Note>,
        totals: &mut LinkTotals,
    ) {
        self.handle(l, ev, q, notes, totals)
    }
}
