//! The Parallel lever (`docs/cost-model.md#parallelism`): tensor, pipeline and expert parallelism inside one
//! instance, and the mixture-of-experts shape it needs (`docs/cost-model.md#moe`).
//!
//! [`ParallelCost`] wraps a [`CostModel`] (whose FLOP counts and byte terms stay untouched) and
//! adds the MoE substitutions of `docs/cost-model.md#moe` and the step on a parallel instance `_parallel(F, Wb, Ob, T)`
//! of `docs/cost-model.md#parallelism`, plus the KV capacity with a layout (`docs/cost-model.md#kv-capacity`).
//!
//! Where the parts live, all re-exported here: the layout's degrees and checks in
//! `parallel/spec.rs` ([`Parallel`]), the mixture-of-experts shape beside the model it belongs to
//! (`catalogue/model.rs`, [`Moe`]), the step on a layout inside the cost model (`cost.rs`,
//! [`Layout`]) and [`int_div`] with the other Python numerics (`pymath.rs`). Each of them
//! depends only on files below the cost model, so no file imports one that imports it back.

mod spec;

pub use crate::catalogue::Moe;
pub use crate::cost::Layout;
pub use crate::pymath::int_div;
pub use spec::Parallel;

use crate::catalogue::{Catalogue, Device, ModelSpec};
use crate::cost::{Chunk, CostModel, CostOptions, StepCost};
use crate::error::Error;

/// A step cost of the lever path: the step plus its scale-up communication (`docs/cost-model.md#parallelism`
/// step 18).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeverStep {
    /// The step (flops, bytes, time, bound, energy, compute_j, memory_j, comm).
    pub step: StepCost,
    /// Seconds of scale-up communication inside the step.
    pub comm_time_s: f64,
    /// Scale-up link energy, joules.
    pub comm_j: f64,
    /// Draft time (0.0: no draft on this path).
    pub draft_time_s: f64,
}

impl From<StepCost> for LeverStep {
    fn from(step: StepCost) -> Self {
        LeverStep {
            step,
            comm_time_s: step.comm_time_s,
            comm_j: step.comm_j,
            draft_time_s: 0.0,
        }
    }
}

/// One pass: exact FLOPs `f`, tokens `t` and KV positions touched `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// FLOPs (exact, active parameters for an MoE model).
    pub f: i128,
    /// Tokens computed.
    pub t: u64,
    /// KV positions read and written.
    pub k: u64,
}

/// A cost model with an optional parallel layout (the step functions return [`LeverStep`]s).
#[derive(Clone, Debug)]
pub struct ParallelCost {
    /// The cost model (with the layout, if any).
    pub base: CostModel,
    /// The layout, if any.
    pub layout: Option<Parallel>,
}

impl ParallelCost {
    /// Builds the cost model with its layout. The layout is not checked here (as in the
    /// reference: call [`Parallel::check`]).
    pub fn new(
        model: &ModelSpec,
        device: &Device,
        n_devices: u32,
        opts: CostOptions,
        layout: Option<Parallel>,
        catalogue: &Catalogue,
    ) -> Result<Self, Error> {
        let mut base = CostModel::new(model, device, n_devices, opts)?;
        if let Some(l) = &layout {
            base = base.with_layout(l.clone(), catalogue)?;
        }
        Ok(ParallelCost { base, layout })
    }

    /// The prefill pass over whole prompts.
    pub fn prefill_pass(&self, lens: &[u64]) -> Pass {
        let (f, t) = self.base.prefill_flops(lens.iter().copied());
        Pass { f, t, k: t }
    }

    /// The decode pass: `b` rows over `ctx` cached positions in total.
    pub fn decode_pass(&self, ctx: u64, b: u64) -> Pass {
        let (f, _) = self.base.decode_work(ctx, b);
        Pass {
            f,
            t: b,
            k: ctx + b,
        }
    }

    /// The mixed pass: `b` decode rows plus the prefill `chunks`.
    pub fn mixed_pass(&self, ctx: u64, b: u64, chunks: &[Chunk]) -> Pass {
        let (f, t, k) = self.base.step_mixed_pass(ctx, b, chunks);
        Pass { f, t, k }
    }

    /// Weight bytes a pass over `t` tokens reads: `wbr(t)` (MoE, `docs/cost-model.md#moe`) or `W + fl(t)*e` (dense).
    pub fn weight_bytes_read(&self, t: u64) -> f64 {
        self.base.weight_read(t)
    }

    /// The cost of a pass: `_parallel(F, Wb, Ob, T)` with a layout, else the plain step of
    /// `F` and `Wb + Ob` (comm terms 0.0).
    pub fn cost(&self, p: Pass) -> LeverStep {
        self.base.pass(p.f, p.t, p.k).into()
    }

    /// `prefill(lens)`.
    pub fn prefill(&self, lens: &[u64]) -> LeverStep {
        self.cost(self.prefill_pass(lens))
    }

    /// `decode_sum(ctx, b)`.
    pub fn decode_sum(&self, ctx: u64, b: u64) -> LeverStep {
        self.cost(self.decode_pass(ctx, b))
    }

    /// `step_mixed(ctx, b, chunks)`.
    pub fn step_mixed(&self, ctx: u64, b: u64, chunks: &[Chunk]) -> LeverStep {
        self.cost(self.mixed_pass(ctx, b, chunks))
    }

    /// KV capacity in tokens: `docs/cost-model.md#kv-capacity` with a layout, else `docs/cost-model.md#kv-capacity` (with the MoE
    /// `weight_bytes_total`, all experts, for an MoE model).
    pub fn kv_capacity_tokens(&self) -> Result<u64, Error> {
        self.base.kv_capacity_tokens()
    }
}
