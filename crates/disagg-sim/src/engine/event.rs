//! The events of a run. Instances are numbered globally (prefill then decode, or colocated), so
//! one event type serves the plain and the scheduled instances.

use crate::link::{LinkEv, Tagged};

/// An event of the serving model.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    /// Open-loop request `rid` arrives.
    Arrival(u32),
    /// A closed-loop session turn released `think` after its predecessor finished.
    Release(u32),
    /// Instance `g` runs its loop (it was idle and got work).
    Wake(u32),
    /// Instance `g`'s step ended.
    StepEnd(u32),
    /// Plain decode instance `g`'s macro-step (fast path) ended, if its epoch is still current.
    MacroEnd(u32, u32),
    /// Layer-wise: plain runs, the first slice of prefill instance `p`'s batch is ready;
    /// scheduled runs, the first slice of request `rid`'s first chunk is ready.
    FirstSlice(u32),
    /// An event of KV link `l`.
    Link(u32, LinkEv),
    /// Take a sample for the observer.
    Sample,
    /// Every request finished or was rejected.
    Done,
}

impl From<Tagged> for Ev {
    #[inline]
    fn from((l, e): Tagged) -> Self {
        Ev::Link(l, e)
    }
}
