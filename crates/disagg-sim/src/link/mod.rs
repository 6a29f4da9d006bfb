//! The KV link models, as the serving model sees them: disagg-model's [`disagg_model::link`] (one
//! file per discipline there: its event-driven part and its closed form for the calculator),
//! scheduling its events on the engine's [`EventQueue`] through [`Schedule`].

pub use disagg_model::link::*;

use crate::engine::EventQueue;

/// The link schedules its events on the engine's queue.
impl<E> Schedule<E> for EventQueue<E> {
    #[inline]
    fn now(&self) -> f64 {
        EventQueue::now(self)
    }
    #[inline]
    fn schedule_at(&mut self, time: f64, ev: E) {
        EventQueue::schedule_at(self, time, ev)
    }
    #[inline]
    fn schedule_in(&mut self, delay: f64, ev: E) {
        EventQueue::schedule_in(self, delay, ev)
    }
}

#[cfg(test)]
mod tests;
