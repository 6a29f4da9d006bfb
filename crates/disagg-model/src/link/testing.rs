//! Test support shared by the link's tests here and the statistical ones in disagg-sim (which run on
//! the engine's queue): a transfer of given times, and a driver that feeds arrivals to one link and
//! checks its capacity invariant after every event. Not part of the API.

use super::{LayerPlan, LinkEv, LinkModel, Note, Schedule, Tagged, XferSpec};

/// The events of a driven link: the link's own, and the next arrival.
#[derive(Clone, Copy, Debug)]
pub enum TEv {
    /// A link event.
    Link(u32, LinkEv),
    /// The arrival of transfer `i`.
    Arrive(u32),
}

impl From<Tagged> for TEv {
    fn from((l, e): Tagged) -> Self {
        TEv::Link(l, e)
    }
}

/// A queue a test can drain: [`Schedule`] plus taking the next event.
pub trait Drain<E>: Schedule<E> {
    /// The next event and its time, in the queue's order.
    fn pop(&mut self) -> Option<(f64, E)>;
    /// Events taken so far.
    fn processed(&self) -> u64;
}

/// A transfer `rid` of `stream` seconds at one channel's rate after `fixed` seconds of latency.
pub fn spec(rid: u32, stream: f64, fixed: f64, plan: Option<LayerPlan>) -> XferSpec {
    XferSpec {
        rid,
        fixed_s: fixed,
        stream_s: stream,
        time_s: fixed + stream,
        wire_bytes: stream * 1e9,
        plan,
    }
}

/// Drives one link over `arrivals` (time, spec) on the queue `q`, returning per rid (start,
/// landed) and checking the capacity invariant after every event.
pub fn drive<Q: Drain<TEv>>(
    link: &mut LinkModel,
    cap: f64,
    arrivals: &[(f64, XferSpec)],
    mut q: Q,
) -> Vec<(f64, f64)> {
    let mut notes = Vec::new();
    let mut out = vec![(f64::NAN, f64::NAN); arrivals.len()];
    if !arrivals.is_empty() {
        q.schedule_at(arrivals[0].0, TEv::Arrive(0));
    }
    while let Some((t, ev)) = q.pop() {
        // At most a few events per transfer and layer: a link that keeps waking itself
        // fails here instead of running for ever.
        assert!(
            q.processed() <= 1000 * (arrivals.len() as u64 + 1),
            "event storm"
        );
        match ev {
            TEv::Arrive(i) => {
                link.submit(0, arrivals[i as usize].1, &mut q, &mut notes);
                if (i as usize) + 1 < arrivals.len() {
                    q.schedule_at(arrivals[i as usize + 1].0, TEv::Arrive(i + 1));
                }
            }
            TEv::Link(l, e) => link.on_event(l, e, &mut q, &mut notes),
        }
        let r = link.total_rate();
        assert!(r <= cap + 1e-12, "total rate {r} above capacity {cap}");
        assert!(link.bytes_in_flight(t) >= 0.0);
        for n in notes.drain(..) {
            match n {
                Note::Started { rid } => out[rid as usize].0 = t,
                Note::Landed { rid, .. } => out[rid as usize].1 = t,
            }
        }
    }
    out
}
