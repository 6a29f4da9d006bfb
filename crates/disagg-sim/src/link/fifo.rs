//! `fifo`: C independent FIFO channels, first come first served (the reference's link, a SimPy
//! `Resource` of capacity C).

use std::collections::VecDeque;

use crate::engine::EventQueue;

use super::common::{Discipline, LinkEv, LinkTotals, Note, Slab, Tagged, XferSpec};

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
    pub(super) fn try_grant<E: From<Tagged>>(&mut self, l: u32, q: &mut EventQueue<E>) {
        if self.in_use < self.channels {
            if let Some(s) = self.queue.pop_front() {
                self.in_use += 1;
                q.schedule_in(0.0, E::from((l, LinkEv::Grant(s))));
            }
        }
    }

    pub(super) fn handle<E: From<Tagged>>(
        &mut self,
        l: u32,
        ev: LinkEv,
        q: &mut EventQueue<E>,
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

    fn submit<E: From<Tagged>>(
        &mut self,
        l: u32,
        spec: XferSpec,
        q: &mut EventQueue<E>,
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

    fn submit_open<E: From<Tagged>>(
        &mut self,
        l: u32,
        spec: XferSpec,
        q: &mut EventQueue<E>,
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

    fn close<E: From<Tagged>>(&mut self, l: u32, slot: u32, at: f64, q: &mut EventQueue<E>) {
        let sl = &self.slots.items[slot as usize];
        assert!(
            sl.live && sl.open && !sl.start.is_nan(),
            "close an open transfer after its grant"
        );
        q.schedule_at(at, E::from((l, LinkEv::End(slot))));
    }

    #[inline]
    fn on_event<E: From<Tagged>>(
        &mut self,
        l: u32,
        ev: LinkEv,
        q: &mut EventQueue<E>,
        notes: &mut Vec<Note>,
        totals: &mut LinkTotals,
    ) {
        self.handle(l, ev, q, notes, totals)
    }
}
