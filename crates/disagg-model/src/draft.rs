//! Speculative decoding's cost side (`docs/levers.md#speculative`-`docs/levers.md#speculative`): the
//! draft model of a target, its cost model, and the cost of one speculative step (the target's
//! verify pass followed by the draft's passes).
//!
//! The draft's shape ([`Draft`], its construction and resident bytes) is in `draft/model.rs`,
//! below the cost model; this file adds its cost model and the speculative step's cost.

mod model;

pub use model::Draft;

use crate::catalogue::Device;
use crate::cost::{Chunk, CostModel, CostOptions, StepCost};
use crate::error::Error;

impl Draft {
    /// The pool's draft cost model: the draft on the pool's device and devices per instance, with
    /// no per-pass overhead, not a prefill pool's (`prefill_only` false, `docs/cost-model.md#parallelism`) and
    /// every other option (power cap, DVFS, ...) the target's.
    pub fn cost_model(
        &self,
        device: &Device,
        n_devices: u32,
        target_opts: &CostOptions,
    ) -> Result<CostModel, Error> {
        let opts = CostOptions {
            step_overhead_s: 0.0,
            prefill_only: false,
            ..target_opts.clone()
        };
        CostModel::new(&self.model, &device.without_overheads(), n_devices, opts)
    }
}

/// The cost of one speculative step (`docs/levers.md#speculative`) with `gamma` drafted tokens per
/// row: the target's verify pass (`step_spec(ctx, b, gamma + 1, chunks)`, or `step_mixed(0, 0,
/// chunks)` when `b = 0`), then the draft's prefill of the chunks (if any), then its `gamma`
/// decode passes `decode_sum(ctx + j*b, b)` (if `b > 0`). Times, FLOPs, bytes, compute and memory
/// energy are summed left to right from the target part; the bound is the target's; energy is
/// `compute_j + memory_j`. Returns the combined cost and the draft time (`0.0 + x1 + x2 + ...`).
pub fn spec_cost(
    target: &CostModel,
    draft: &CostModel,
    gamma: u64,
    ctx: u64,
    b: u64,
    chunks: &[Chunk],
) -> (StepCost, f64) {
    let t = if b > 0 {
        target.step_spec(ctx, b, gamma + 1, chunks)
    } else {
        target.step_mixed(0, 0, chunks)
    };
    let mut time = t.time_s;
    let mut flops = t.flops;
    let mut bytes = t.bytes;
    let mut ec = t.compute_j;
    let mut em = t.memory_j;
    let mut dt = 0.0;
    // The draft's parts in order, each added as it is computed (no list per step).
    let mut add = |x: StepCost| {
        time += x.time_s;
        flops = flops + x.flops;
        bytes += x.bytes;
        ec += x.compute_j;
        em += x.memory_j;
        dt += x.time_s;
    };
    if !chunks.is_empty() {
        add(draft.step_mixed(0, 0, chunks));
    }
    if b > 0 {
        for j in 0..gamma {
            add(draft.decode_sum(ctx + j * b, b));
        }
    }
    let cost = StepCost {
        flops,
        bytes,
        time_s: time,
        bound: t.bound,
        energy_j: ec + em,
        compute_j: ec,
        memory_j: em,
        comm_time_s: t.comm_time_s,
        comm_j: t.comm_j,
    };
    (cost, dt)
}
