//! The Parallel lever (levers-cost.md §5): tensor, pipeline and expert parallelism inside one
//! instance, and the mixture-of-experts shape it needs (§4).
//!
//! [`ParallelCost`] wraps a [`CostModel`] (whose FLOP counts and byte terms stay untouched) and
//! adds the MoE substitutions of §4 and the step on a parallel instance `_parallel(F, Wb, Ob, T)`
//! of §5.4, plus the KV capacity with a layout (§5.6).

use crate::catalogue::{Catalogue, Device, Link, ModelSpec};
use crate::cost::{Chunk, CostModel, CostOptions, PyNum, StepCost};
use crate::error::Error;
use crate::pymath::{fl, ipow};

/// Python's `int / int` for non-negative integers (levers-cost.md §1 R1): the correctly rounded
/// double of the exact rational `a / b`. The quotient is taken with at least 55 significant bits,
/// its last bit forced to 1 when anything was discarded (round to odd), and then rounded once to
/// 53 bits by the `u128 -> f64` conversion: the same result as rounding the exact rational.
pub fn int_div(a: i128, b: i128) -> f64 {
    assert!(a >= 0 && b > 0, "int_div needs a >= 0 and b > 0");
    if a == 0 {
        return 0.0;
    }
    // Both exactly representable: one IEEE division is the correctly rounded quotient.
    const EXACT: i128 = 1 << 53;
    if a <= EXACT && b <= EXACT {
        return (a as i64) as f64 / (b as i64) as f64;
    }
    let (a, b) = (a as u128, b as u128);
    let bits = |x: u128| 128 - x.leading_zeros() as i32;
    // Shift so that the quotient has 55 or 56 bits.
    let s = 56 - (bits(a) - bits(b));
    let (q, r) = if s >= 0 {
        // Long division, one quotient bit per step: `a << s` could overflow when `a` and `b`
        // are both wide, `r << 1` cannot (`r < b < 2^127`).
        let (mut q, mut r) = (a / b, a % b);
        for _ in 0..s {
            q <<= 1;
            r <<= 1;
            if r >= b {
                q |= 1;
                r -= b;
            }
        }
        (q, r)
    } else {
        let den = b << (-s);
        (a / den, a % den)
    };
    let q = if r != 0 { q | 1 } else { q };
    (q as f64) * (2.0f64).powi(-s)
}

/// The mixture-of-experts shape of a model (levers-cost.md §3.1, §4): `X` routed experts of the
/// model's `d_ff` each, `k` of them per token, plus `S` always-on shared experts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Moe {
    /// Routed experts per layer (X).
    pub n_experts: u64,
    /// Experts each token runs (k).
    pub top_k: u64,
    /// Shared experts every token runs (S).
    pub n_shared_experts: u64,
}

impl Moe {
    /// Mixtral-8x7B: X = 8, k = 2, S = 0 (levers-cost.md §3.2).
    pub fn mixtral() -> Self {
        Moe {
            n_experts: 8,
            top_k: 2,
            n_shared_experts: 0,
        }
    }

    /// `1 <= k <= X` (levers-cost.md §3.1).
    pub fn validate(&self) -> Result<(), Error> {
        if self.top_k < 1 || self.top_k > self.n_experts {
            return Err(Error::invalid(
                "top_k",
                format!("must be between 1 and n_experts ({})", self.n_experts),
            ));
        }
        Ok(())
    }

    /// `3*d*ff`: one SwiGLU expert's parameters.
    pub fn expert_params(&self, m: &ModelSpec) -> i128 {
        3 * m.d_model as i128 * m.d_ff as i128
    }

    fn attn_params(m: &ModelSpec) -> i128 {
        let d = m.d_model as i128;
        2 * d * d + 2 * d * m.kvw()
    }

    /// `(2*d*d + 2*d*kvw) + d*X + S*expert_params`: attention, router and shared experts.
    pub fn fixed_params_per_layer(&self, m: &ModelSpec) -> i128 {
        let d = m.d_model as i128;
        Self::attn_params(m)
            + d * self.n_experts as i128
            + self.n_shared_experts as i128 * self.expert_params(m)
    }

    /// The active parameters per layer: `(2*d*d + 2*d*kvw) + d*X + (k + S)*(3*d*ff)`.
    pub fn params_per_layer(&self, m: &ModelSpec) -> i128 {
        let d = m.d_model as i128;
        Self::attn_params(m)
            + d * self.n_experts as i128
            + (self.top_k + self.n_shared_experts) as i128 * self.expert_params(m)
    }

    /// `L * params_per_layer` (active).
    pub fn layer_params(&self, m: &ModelSpec) -> i128 {
        m.n_layers as i128 * self.params_per_layer(m)
    }

    /// `layer_params + V*d` (active).
    pub fn matmul_params(&self, m: &ModelSpec) -> i128 {
        self.layer_params(m) + m.vocab as i128 * m.d_model as i128
    }

    /// Every resident parameter: `L*(fixed + X*expert_params) + 2*V*d`.
    pub fn params(&self, m: &ModelSpec) -> i128 {
        m.n_layers as i128 * self.resident_params_per_layer(m)
            + 2 * m.vocab as i128 * m.d_model as i128
    }

    /// `fixed + X*expert_params`: one layer with all its experts.
    pub fn resident_params_per_layer(&self, m: &ModelSpec) -> i128 {
        self.fixed_params_per_layer(m) + self.n_experts as i128 * self.expert_params(m)
    }

    /// `fl(params) * weight_bytes`.
    pub fn weight_bytes_total(&self, m: &ModelSpec) -> f64 {
        self.params(m) as f64 * m.weight_bytes
    }

    /// Expected experts touched by `t` tokens in one layer: `fl(X) * (1.0 - ipow(1.0 - k/X, t))`.
    pub fn experts_touched(&self, t: u64) -> f64 {
        let x = self.n_experts as i128;
        (x as f64) * (1.0 - ipow(1.0 - int_div(self.top_k as i128, x), t))
    }

    /// Weight bytes a pass over `t` tokens reads:
    /// `((fl(L) * (fl(fixed) + et(t) * fl(expert_params)) + fl(V*d)) * wb) + fl(t) * e`.
    pub fn weight_bytes_read(&self, m: &ModelSpec, t: u64) -> f64 {
        let per_layer = self.fixed_params_per_layer(m) as f64
            + self.experts_touched(t) * self.expert_params(m) as f64;
        ((m.n_layers as f64 * per_layer + (m.vocab as i128 * m.d_model as i128) as f64)
            * m.weight_bytes)
            + t as f64 * m.embedding_row_bytes()
    }

    /// FLOPs of the routed experts over `t` tokens: `(((2.0 * fl(L)) * fl(k)) * fl(expert_params)) * fl(t)`.
    pub fn expert_flops(&self, m: &ModelSpec, t: u64) -> f64 {
        (((2.0 * m.n_layers as f64) * self.top_k as f64) * self.expert_params(m) as f64) * t as f64
    }
}

/// A parallel layout of an instance (levers-cost.md §5.1): `tp` × `pp` GPUs, `ep` = 1 or `tp`.
#[derive(Clone, Debug, PartialEq)]
pub struct Parallel {
    /// Tensor-parallel degree (GPUs per stage).
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Expert-parallel degree: 1 (experts split by TP) or `tp` (whole experts per GPU).
    pub ep: u32,
    /// Micro-batches per step (`None`: `pp`).
    pub microbatches: Option<u32>,
    /// The busiest GPU's expert load over the mean (>= 1.0).
    pub expert_imbalance: f64,
    /// The scale-up link (a catalogue link key; `None`: the device's `scale_up`).
    pub scale_up_link: Option<String>,
}

impl Default for Parallel {
    fn default() -> Self {
        Parallel {
            tp: 1,
            pp: 1,
            ep: 1,
            microbatches: None,
            expert_imbalance: 1.0,
            scale_up_link: None,
        }
    }
}

impl Parallel {
    /// `Parallel.check(model, n, "<role> pool")` (levers-cost.md §5.3), the eight checks in order.
    /// Errors read `<role> pool: <message>`.
    pub fn check(
        &self,
        model: &ModelSpec,
        n: u32,
        role: &str,
        catalogue: &Catalogue,
    ) -> Result<(), Error> {
        let err = |why: String| Err(Error::invalid(format!("{role} pool"), why));
        if self.tp < 1 || self.pp < 1 || self.microbatches.is_some_and(|m| m < 1) {
            return err("tp, pp and microbatches must be at least 1".into());
        }
        let devices = self.tp as u64 * self.pp as u64;
        if devices != n as u64 {
            return err(format!(
                "parallel tp={} x pp={} needs {devices} devices per instance (got {n})",
                self.tp, self.pp
            ));
        }
        if self.ep != 1 && self.ep != self.tp {
            return err(
                "ep must be 1 (experts split by TP) or equal to tp (whole experts per GPU)".into(),
            );
        }
        if self.ep > 1 && model.moe.is_none() {
            return err("expert parallelism needs a mixture-of-experts model".into());
        }
        if self.expert_imbalance < 1.0 {
            return err(
                "expert_imbalance is the busiest GPU's load over the mean: at least 1".into(),
            );
        }
        if !model.n_layers.is_multiple_of(self.pp as u64) {
            return err(format!(
                "{} has {} layers: not divisible into {} stages",
                model.name, model.n_layers, self.pp
            ));
        }
        if !model.is_attention() || model.ced.is_some() {
            return err("parallelism is modelled for attention models without CED only".into());
        }
        if let Some(l) = &self.scale_up_link {
            if catalogue.link(l).is_err() {
                return err(format!("unknown scale-up link '{l}'"));
            }
        }
        Ok(())
    }

    /// The scale-up link: the layout's, else the device's `scale_up`.
    pub fn link<'a>(&self, device: &Device, catalogue: &'a Catalogue) -> Result<&'a Link, Error> {
        catalogue.link(self.scale_up_link.as_deref().unwrap_or(&device.scale_up))
    }
}

/// A step cost of the lever path: the step plus its scale-up communication (levers-cost.md §5.4
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

/// A cost model's parallel layout with what its steps need: the stage model (`tp` devices, no
/// overhead) and the scale-up link.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// The layout.
    pub par: Parallel,
    stage: CostModel,
    link: Link,
}

impl Layout {
    /// The layout of `base` (whose model, device and options the stage keeps).
    pub(crate) fn new(
        base: &CostModel,
        par: Parallel,
        catalogue: &Catalogue,
    ) -> Result<Self, Error> {
        let so = CostOptions {
            step_overhead_s: 0.0,
            ..base.opts.clone()
        };
        let stage = CostModel::new(&base.model, &base.device.without_overheads(), par.tp, so)?;
        let link = par.link(&base.device, catalogue)?.clone();
        Ok(Layout { par, stage, link })
    }

    /// The scale-up link's display name.
    pub fn link_name(&self) -> &str {
        &self.link.name
    }

    /// levers-cost.md §5.4, steps 1 to 18.
    pub(crate) fn step(&self, base: &CostModel, f: i128, wb: f64, ob: f64, t: u64) -> StepCost {
        let (l, stage, link) = (&self.par, &self.stage, &self.link);
        let m = &base.model;
        let (tp, pp, ep) = (l.tp as i64, l.pp as i64, l.ep as i64);
        let ep_moe = m.moe.filter(|_| l.ep > 1);
        // 1.
        let mb_cfg = match l.microbatches {
            Some(x) if x != 0 => x as i64,
            _ => pp,
        };
        let mb = mb_cfg.min((t as i64).max(1));
        // 2.
        let feff = match &ep_moe {
            Some(moe) if l.expert_imbalance != 1.0 => {
                Some(fl(f) + moe.expert_flops(m, t) * (l.expert_imbalance - 1.0))
            }
            _ => None,
        };
        // 4.
        let f_slot = match feff {
            None => int_div(f, (mb * pp) as i128),
            Some(fe) => fe / (mb * pp) as f64,
        };
        let b_slot = (wb / pp as f64) + (ob / (mb * pp) as f64);
        let mut r = stage.step_time_raw(f_slot, b_slot);
        // 5.
        if let Some(fe) = feff {
            r.ec *= fl(f) / fe;
        }
        // 6.-8.
        let (bw, lat) = (link.bandwidth_bps, link.latency_s);
        let tmb = int_div(t as i128, mb as i128);
        let act = (tmb * m.d_model as f64) * 2.0;
        let layers = m.n_layers as i64 / pp;
        // 9.-11.
        let mut ct = 0.0;
        let mut cb = 0.0;
        if tp > 1 {
            let n_ar = if ep_moe.is_some() { layers } else { 2 * layers };
            ct += n_ar as f64
                * (((int_div((2 * (tp - 1)) as i128, tp as i128) * act) / bw)
                    + (2 * (tp - 1)) as f64 * lat);
            cb += ((n_ar * 2) * (tp - 1)) as f64 * act;
        }
        if let Some(moe) = &ep_moe {
            let a2a =
                ((((2.0 * tmb) * moe.top_k as f64) * m.d_model as f64) * 2.0 * (ep - 1) as f64)
                    / ep as f64;
            ct += layers as f64 * ((a2a / bw) + (2 * (ep - 1)) as f64 * lat);
            cb += layers as f64 * a2a;
        }
        // 12.-16.
        let hop = if pp > 1 { (act / bw) + lat } else { 0.0 };
        let slots = (mb + pp - 1) as f64;
        let comm_time = slots * (ct + hop);
        let comm_bytes = ((mb * pp) as f64 * cb) + ((mb * (pp - 1)) as f64 * act);
        let time = ((slots * r.t) + comm_time) + base.step_overhead_s();
        // 17.-18.
        let n = (mb * pp) as f64;
        StepCost {
            flops: PyNum::Int(f),
            bytes: (mb as f64 * wb) + ob,
            time_s: time,
            bound: r.bound,
            energy_j: n * (r.ec + r.em),
            compute_j: n * r.ec,
            memory_j: n * r.em,
            comm_time_s: comm_time,
            comm_j: ((comm_bytes * 8.0) * link.pj_per_bit) * 1e-12,
        }
    }
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

    /// Weight bytes a pass over `t` tokens reads: `wbr(t)` (MoE, §4) or `W + fl(t)*e` (dense).
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

    /// KV capacity in tokens: §5.6 with a layout, else cost-model.md §3.3 (with the MoE
    /// `weight_bytes_total`, all experts, for an MoE model).
    pub fn kv_capacity_tokens(&self) -> Result<u64, Error> {
        self.base.kv_capacity_tokens()
    }
}
