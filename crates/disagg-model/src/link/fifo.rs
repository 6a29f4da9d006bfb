//! `fifo`: C independent FIFO channels, first come first served (the reference's link, a SimPy
//! `Resource` of capacity C).

use std::collections::VecDeque;

use super::common::{
    Discipline, LinkEv, LinkTotals, Note, Schedule, SharedCase, SharedTimes, Slab, Tagged, XferSpec,
};

#[derive(Clone, Copy, Debug)]
pub(super) struct FifoSlot {
    pub(super) spec: XferSpec,
    pub(super) start: f64,
    pub(super) live: bool,
    /// Submitted with [`LinkModel::submit_open`]: its landing time is given later
    /// ([`LinkModel::close`]), not computed at the grant.
    pub(super) open: bool,
}

/// C FIFO channels.
#[derive(Clone, Debug)]
pub(super) struct Fifo {
    pub(super) channels: u32,
    pub(super) in_use: u32,
    pub(super) queue: VecDeque<u32>,
    pub(super) slots: Slab<FifoSlot>,
}

impl Fifo {
    /// SimPy's `_trigger_put`: examine the queue head once; grant it if a channel is free.
    #[inline]
    pub(super) fn try_grant<E: From<Tagged>, Q: Schedule<E>>(&mut self, l: u32, q: &mut Q) {
        if self.in_use < self.channels {
            if let Some(s) = self.queue.pop_front() {
                self.in_use += 1;
                q.schedule_in(0.0, E::from((l, LinkEv::Grant(s))));
            }
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
        match ev {
            LinkEv::Grant(s) => {
                let now = q.now();
                let slot = &mut self.slots.items[s as usize];
                slot.start = now;
                notes.push(Note::Started { rid: slot.spec.rid });
                let sp = slot.spec;
                if slot.open {
                    return;
                }
                match sp.plan {
                    None => q.schedule_in(sp.time_s, E::from((l, LinkEv::End(s)))),
                    Some(p) => {
                        let end = p.end + p.solo_exposed(sp.fixed_s, sp.stream_s, now);
                        q.schedule_at(end, E::from((l, LinkEv::End(s))));
                    }
                }
            }
            LinkEv::End(s) => {
                let now = q.now();
                // Release the channel (the Release event grants the next head at this same time).
                self.in_use -= 1;
                q.schedule_in(0.0, E::from((l, LinkEv::Release)));
                let slot = &mut self.slots.items[s as usize];
                slot.live = false;
                let sp = slot.spec;
                let busy = match sp.plan {
                    None if !slot.open => sp.time_s,
                    _ => now - slot.start,
                };
                totals.busy_s += busy;
                totals.bytes += sp.wire_bytes;
                totals.transfers += 1;
                notes.push(Note::Landed {
                    rid: sp.rid,
                    start: slot.start,
                    busy_s: busy,
                    dur_s: busy,
                });
                self.slots.release(s);
            }
            LinkEv::Release => self.try_grant(l, q),
            LinkEv::Wake(_) | LinkEv::Land(_) => unreachable!("fair-link event on a FIFO link"),
        }
    }
}

impl Discipline for Fifo {
    fn new(channels: u32) -> Self {
        Fifo {
            channels,
            in_use: 0,
            queue: VecDeque::new(),
            slots: Slab::new(),
        }
    }

    fn waiting(&self) -> usize {
        self.queue.len()
    }

    fn in_flight(&self) -> u32 {
        self.in_use
    }

    fn total_rate(&self) -> f64 {
        self.in_use as f64
    }

    fn bytes_in_flight(&self, _now: f64) -> f64 {
        self.slots
            .items
            .iter()
            .filter(|s| s.live && !s.start.is_nan())
            .map(|s| s.spec.wire_bytes)
            .sum()
    }

    fn submit<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        spec: XferSpec,
        q: &mut Q,
        _notes: &mut Vec<Note>,
    ) {
        let s = self.slots.alloc(FifoSlot {
            spec,
            start: f64::NAN,
            live: true,
            open: false,
        });
        self.queue.push_back(s);
        self.try_grant(l, q);
    }

    fn submit_open<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        spec: XferSpec,
        q: &mut Q,
    ) -> u32 {
        let s = self.slots.alloc(FifoSlot {
            spec,
            start: f64::NAN,
            live: true,
            open: true,
        });
        self.queue.push_back(s);
        self.try_grant(l, q);
        s
    }

    fn close<E: From<Tagged>, Q: Schedule<E>>(&mut self, l: u32, slot: u32, at: f64, q: &mut Q) {
        let sl = &self.slots.items[slot as usize];
        assert!(
            sl.live && sl.open && !sl.start.is_nan(),
            "close an open transfer after its grant"
        );
        q.schedule_at(at, E::from((l, LinkEv::End(slot))));
    }

    /// Each holds one of the link's channels from its grant to its landing, so the k-th waits for
    /// the `ceil(k / channels) - 1` before it on its channel.
    fn shared(case: &SharedCase, tail: impl Fn(f64, f64) -> f64) -> SharedTimes {
        let rounds = (case.concurrent as u64).div_ceil(case.channels.max(1) as u64);
        if !case.layerwise {
            let transfer_s = rounds as f64 * case.time_s;
            return SharedTimes {
                transfer_s,
                exposed_s: transfer_s,
            };
        }
        // Relative to the end of prefill; the first slice is ready T/L after its start.
        let layers = case.layers;
        let first_ready = -(case.prefill_s * (layers - 1) as f64) / layers as f64;
        let mut landed = f64::NEG_INFINITY;
        for k in 0..rounds {
            let wait = if k == 0 { 0.0 } else { landed - first_ready };
            landed = case.fixed_s + tail(case.stream_s, wait);
        }
        SharedTimes {
            transfer_s: rounds as f64 * case.time_s,
            exposed_s: landed,
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
