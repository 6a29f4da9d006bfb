//! What a batch policy is: a [`BatchScheduler`] forming steps from the [`StepForm`] building
//! blocks of the scheduled instances.

/// What forming a step did.
pub(crate) enum Formed {
    /// A step started.
    Started,
    /// Nothing to do: the instance goes idle.
    Idle,
    /// No step yet (e.g. the growth check preempted every row): run the loop's pass again.
    Again,
}

/// The steps a batch policy forms its next step from, as the scheduled instances provide them
/// (`i` is the instance; each returns whether a step started).
pub(crate) trait StepForm {
    /// Whole prompts up to the token budget, then a prefill step on them.
    fn prefill_step(&mut self, i: usize) -> bool;
    /// A decode step over every running row, after the growth check.
    fn decode_step(&mut self, i: usize) -> bool;
    /// Decode rows plus prompt chunks up to the token budget (`docs/levers.md#batch-policies`).
    fn chunked_step(&mut self, i: usize) -> bool;
    /// Nothing runs on instance `i`.
    fn is_running_empty(&self, i: usize) -> bool;
}

/// A batch policy: how a scheduled instance forms its next step.
pub(crate) trait BatchScheduler {
    /// Forms instance `i`'s next step at the current time (after the pass's hand-off pull and
    /// swap-in).
    fn form_step<S: StepForm>(sim: &mut S, i: usize) -> Formed;

    /// The same on a prefill instance of a disaggregated run (which has no decode rows); by
    /// default as anywhere else.
    #[inline]
    fn form_prefill_instance_step<S: StepForm>(sim: &mut S, i: usize) -> Formed {
        Self::form_step(sim, i)
    }
}
