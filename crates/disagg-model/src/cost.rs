//! The roofline cost model with a power roof (`docs/cost-model.md#roofline`): the only place that knows how long a
//! step takes and what it costs in energy.
//!
//! Bit-exactness rules (`docs/exactness.md`): FLOP counts are exact integers (`i128`) converted once
//! with `as f64`; every float expression keeps the reference's grouping; the cube root is
//! `pow(|x|, 1/3)` with the sign copied; KV capacity uses CPython's float floor division.

use serde::{Deserialize, Serialize};

use crate::arch::Arch;
use crate::catalogue::Catalogue;
use crate::catalogue::{Device, KvTransit, Link, LmHead, ModelSpec, Moe};
use crate::draft::Draft;
use crate::error::Error;
use crate::parallel::Parallel;
use crate::pymath::{cbrt_py, fl, int_div, py_floordiv};

/// A number as Python holds it: an exact integer until it meets a float.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PyNum {
    /// An exact integer.
    Int(i128),
    /// A double.
    Float(f64),
}

/// Python's `a + b`: int + int stays exact, anything else converts the int to the nearest double.
impl std::ops::Add for PyNum {
    type Output = PyNum;
    #[inline]
    fn add(self, other: PyNum) -> PyNum {
        match (self, other) {
            (PyNum::Int(a), PyNum::Int(b)) => PyNum::Int(a + b),
            (a, b) => PyNum::Float(a.to_f64() + b.to_f64()),
        }
    }
}

impl PyNum {
    /// The value as a double (round to nearest, ties to even).
    #[inline]
    pub fn to_f64(self) -> f64 {
        match self {
            PyNum::Int(a) => crate::pymath::fl(a),
            PyNum::Float(a) => a,
        }
    }
}

impl Default for PyNum {
    fn default() -> Self {
        PyNum::Int(0)
    }
}

/// Which roof set a step's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// FLOPs set the time (also a tie).
    Compute,
    /// HBM bytes set the time.
    Memory,
    /// The power budget lowered the clock or stretched the step.
    Power,
    /// The optical transform engine took longer than the GPU part (`docs/levers.md#fft-mixing`).
    Optical,
}

impl Bound {
    /// `compute`, `memory`, `power` or `optical`.
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
            Bound::Power => "power",
            Bound::Optical => "optical",
        }
    }
}

/// The cost of one step (`StepCost`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StepCost {
    /// FLOPs (an exact integer unless an endpoint compression pass was added).
    pub flops: PyNum,
    /// HBM bytes moved.
    pub bytes: f64,
    /// Wall time including the fixed step overhead, seconds.
    pub time_s: f64,
    /// What set the time.
    pub bound: Bound,
    /// Dynamic energy (compute + memory), joules.
    pub energy_j: f64,
    /// Compute energy after any clock scaling, joules.
    pub compute_j: f64,
    /// Memory energy, joules.
    pub memory_j: f64,
    /// Seconds of scale-up communication inside the step (0.0 without a parallel layout;
    /// `docs/cost-model.md#parallelism`).
    pub comm_time_s: f64,
    /// Scale-up link energy of the step, joules (0.0 without a parallel layout).
    pub comm_j: f64,
}

/// The raw result of the three roofs, before the step overhead.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawStep {
    /// Step time without overhead, seconds.
    pub t: f64,
    /// Compute energy (after s² scaling), joules.
    pub ec: f64,
    /// Memory energy, joules.
    pub em: f64,
    /// What set the time.
    pub bound: Bound,
}

/// Settings of a cost model besides the model, device and device count (reference defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostOptions {
    /// Fixed per-step scheduler/launch time, seconds (0.5 ms).
    pub step_overhead_s: f64,
    /// Fraction of HBM usable for weights and KV (0.9).
    pub mem_util: f64,
    /// Per-device power cap, W.
    pub power_cap_w: Option<f64>,
    /// Enforce the device's TDP as a cap (true).
    pub enforce_tdp: bool,
    /// Lower the clock on memory-bound steps.
    pub dvfs: bool,
    /// Lowest clock fraction (0.4).
    pub s_min: f64,
    /// Rate multiple of the compute format's native units over BF16 (1.0; 2.0 for FP8/INT8
    /// W8A8, 4.0 for FP4 on B200; `docs/cost-model.md#quantisation`). Multiplies the FLOP rate and divides the
    /// energy per FLOP.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub compute_speedup: f64,
    /// The prefill pool's cost model (false): a CED model with the replay on decode then runs the
    /// encoder only (`docs/levers.md#ced`); changes nothing for any other model.
    #[serde(default, skip_serializing_if = "is_false")]
    pub prefill_only: bool,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

fn is_false(x: &bool) -> bool {
    !*x
}

impl Default for CostOptions {
    fn default() -> Self {
        CostOptions {
            step_overhead_s: 0.5e-3,
            mem_util: 0.9,
            power_cap_w: None,
            enforce_tdp: true,
            dvfs: false,
            s_min: 0.4,
            compute_speedup: 1.0,
            prefill_only: false,
        }
    }
}

/// A cost model for one instance: `n_devices` accelerators treated as one bigger device.
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    /// The model served.
    pub model: ModelSpec,
    /// The accelerator.
    pub device: Device,
    /// Devices per instance.
    pub n_devices: u32,
    /// Options.
    pub opts: CostOptions,
    flops_rate: f64,
    byte_rate: f64,
    j_f: f64,
    j_b: f64,
    idle_w: f64,
    budget_w: Option<f64>,
    matmul_params: i128,
    layer_params: i128,
    lm_head_params: i128,
    prefill_attn_coef: i128,
    decode_attn_coef: i128,
    weight_bytes_streamed: f64,
    embedding_row_bytes: f64,
    kv_bytes_per_token: f64,
    moe: Option<Moe>,
    /// A layer-kind model's constants (issue 16), computed once here rather than every step.
    arch: Option<Box<ArchTerms>>,
    layout: Option<Box<Layout>>,
    step_overhead: f64,
    per_seq_overhead: Option<f64>,
}

impl CostModel {
    /// Builds a cost model; fails if the power cap is not above the idle power.
    pub fn new(
        model: &ModelSpec,
        device: &Device,
        n_devices: u32,
        opts: CostOptions,
    ) -> Result<Self, Error> {
        model.validate()?;
        device.validate()?;
        if n_devices == 0 || n_devices > 1024 {
            return Err(Error::invalid(
                "devices per instance",
                format!("must be between 1 and 1024, got {n_devices}"),
            ));
        }
        let n = n_devices as f64;
        let compute_speedup = opts.compute_speedup;
        crate::error::positive("compute speed-up", compute_speedup)?;
        let flops_rate = ((device.peak_flops * device.flops_eff) * n) * compute_speedup;
        let byte_rate = (device.mem_bw * device.bw_eff) * n;
        let j_f = (device.pj_per_flop * 1e-12) / compute_speedup;
        let j_b = device.pj_per_byte * 1e-12;
        let mut caps: Vec<f64> = Vec::new();
        if let Some(c) = opts.power_cap_w {
            crate::error::positive("power cap (W)", c)?;
            caps.push(c);
        }
        if opts.enforce_tdp {
            caps.push(device.tdp_w);
        }
        let budget_w = if caps.is_empty() {
            None
        } else {
            let m = caps.iter().copied().fold(f64::INFINITY, f64::min);
            let b = (m - device.idle_w) * n;
            if b <= 0.0 {
                return Err(Error::invalid(
                    "power cap",
                    format!(
                        "{m} W per device is below the idle power of {} ({} W)",
                        device.name, device.idle_w
                    ),
                ));
            }
            Some(b)
        };
        let l = model.n_layers as i128;
        let d = model.d_model as i128;
        Ok(CostModel {
            model: model.clone(),
            device: device.clone(),
            n_devices,
            flops_rate,
            byte_rate,
            j_f,
            j_b,
            idle_w: device.idle_w * n,
            budget_w,
            matmul_params: model.matmul_params(),
            layer_params: model.layer_params(),
            lm_head_params: model.vocab as i128 * d,
            prefill_attn_coef: (2 * l) * d,
            decode_attn_coef: (4 * l) * d,
            weight_bytes_streamed: model.weight_bytes_streamed(),
            embedding_row_bytes: model.embedding_row_bytes(),
            kv_bytes_per_token: model.kv_bytes_per_token(),
            moe: model.moe,
            arch: model
                .arch
                .as_deref()
                .map(|a| Box::new(ArchTerms::new(model, a))),
            layout: None,
            step_overhead: device.step_overhead_s.unwrap_or(opts.step_overhead_s),
            per_seq_overhead: device.per_seq_overhead_s,
            opts,
        })
    }

    /// Achievable FLOP/s of the instance: `((peak * eff) * n) * speedup`.
    pub fn flops_rate(&self) -> f64 {
        self.flops_rate
    }
    /// Achievable HBM bytes/s of the instance: `(bw * eff) * n`.
    pub fn byte_rate(&self) -> f64 {
        self.byte_rate
    }
    /// Dynamic energy per FLOP, J (`(pj_per_flop * 1e-12) / compute_speedup`).
    pub fn joules_per_flop(&self) -> f64 {
        self.j_f
    }
    /// Static power of the instance, W.
    pub fn idle_w(&self) -> f64 {
        self.idle_w
    }
    /// Dynamic power budget of the instance, W (`None`: no power roof).
    pub fn budget_w(&self) -> Option<f64> {
        self.budget_w
    }
    /// KV bytes per token of the model.
    pub fn kv_bytes_per_token(&self) -> f64 {
        self.kv_bytes_per_token
    }

    /// The fixed time added to every step, seconds: the device's fitted `step_overhead_s` if it
    /// has one, else the options' (0.5 ms by default).
    pub fn step_overhead_s(&self) -> f64 {
        self.step_overhead
    }

    /// The device's fitted time per sequence served by a step, seconds (`None`: no such term).
    pub fn per_seq_overhead_s(&self) -> Option<f64> {
        self.per_seq_overhead
    }

    /// A step's wall time from its time `t` after the power logic (`docs/cost-model.md#roofline`; with a
    /// layout, `(slots * t) + comm_time`): `t + step_overhead`, then `+ per_seq_overhead *
    /// fl(rows)` for a device that has one (fitted devices; `rows` is the sequences the step
    /// serves). Without a per-sequence term this is `t + step_overhead`, bit for bit as before.
    #[inline]
    pub fn step_time(&self, t: f64, rows: u64) -> f64 {
        self.with_rows(t + self.step_overhead, rows)
    }

    /// `time + per_seq_overhead * fl(rows)`, or `time` unchanged without a per-sequence term.
    #[inline]
    fn with_rows(&self, time: f64, rows: u64) -> f64 {
        match self.per_seq_overhead {
            None => time,
            Some(p) => time + p * rows as f64,
        }
    }

    /// `cost` with the per-sequence term of `rows` sequences added to its time.
    #[inline]
    pub(crate) fn add_rows(&self, mut cost: StepCost, rows: u64) -> StepCost {
        cost.time_s = self.with_rows(cost.time_s, rows);
        cost
    }

    /// Weight bytes a pass over `t` tokens reads: `W + fl(t)*e` for a dense model, the experts
    /// touched `wbr(t)` for MoE (`docs/cost-model.md#moe`).
    #[inline]
    pub fn weight_read(&self, t: u64) -> f64 {
        match &self.moe {
            None => match self.arch.as_deref().and_then(|x| x.weights.as_ref()) {
                Some(w) => w.bytes(t),
                None => self.weight_bytes_streamed + t as f64 * self.embedding_row_bytes,
            },
            Some(m) => m.weight_bytes_read(&self.model, t),
        }
    }

    /// KV capacity of the instance in tokens (`docs/cost-model.md#kv-capacity`); in sequences for a distilled
    /// Hyena model ([`CostModel::cache_unit_bytes`], `docs/levers.md#fft-mixing`).
    pub fn kv_capacity_tokens(&self) -> Result<u64, Error> {
        if self.layout.is_some() {
            return self.kv_capacity_levers(None);
        }
        let free = ((self.device.mem_capacity * self.n_devices as f64) * self.opts.mem_util)
            - self.resident_weight_bytes();
        if free <= 0.0 {
            return Err(Error::invalid(
                "model",
                format!(
                    "{} does not fit on {}x {}",
                    self.model.name, self.n_devices, self.device.name
                ),
            ));
        }
        Ok(py_floordiv(free, self.cache_unit_bytes()) as u64)
    }

    /// The three roofs (`docs/cost-model.md#roofline`), steps 1 to 9 in order.
    pub fn step_time_raw(&self, f: f64, b: f64) -> RawStep {
        let tc = f / self.flops_rate;
        let tm = b / self.byte_rate;
        let mut ec = f * self.j_f;
        let em = b * self.j_b;
        let s_min = self.opts.s_min;
        let mut s = if self.opts.dvfs && tc < tm {
            s_min.max(tc / tm)
        } else {
            1.0
        };
        let mut bound = if tc >= tm {
            Bound::Compute
        } else {
            Bound::Memory
        };
        if let Some(budget) = self.budget_w {
            if ((ec * s) * s + em) / (tc / s).max(tm) > budget {
                bound = Bound::Power;
                let x = (budget * tm - em) / ec;
                if x > 0.0 && x.sqrt() * tm >= tc {
                    s = s.min(x.sqrt());
                } else {
                    let p = em / ec;
                    let q = ((-budget) * tc) / ec;
                    let r = ((q * q) / 4.0 + ((p * p) * p) / 27.0).sqrt();
                    s = cbrt_py((-q) / 2.0 + r) + cbrt_py((-q) / 2.0 - r);
                }
                s = s.max(s_min);
            }
        }
        let mut t = (tc / s).max(tm);
        ec = (ec * s) * s;
        if let Some(budget) = self.budget_w {
            if (ec + em) / t > budget {
                t = (ec + em) / budget;
            }
        }
        RawStep { t, ec, em, bound }
    }

    /// A step of `flops` and `bytes` (`docs/cost-model.md#roofline`): the roofs plus the fixed overhead.
    pub fn step(&self, flops: i128, bytes: f64) -> StepCost {
        self.step_of(PyNum::Int(flops), crate::pymath::fl(flops), bytes)
    }

    /// A step whose FLOPs are `flops` (`f` as a double): the roofs of `f` and `bytes` plus the
    /// fixed overhead, no scale-up terms.
    #[inline]
    pub(crate) fn step_of(&self, flops: PyNum, f: f64, bytes: f64) -> StepCost {
        let r = self.step_time_raw(f, bytes);
        StepCost {
            flops,
            bytes,
            time_s: r.t + self.step_overhead,
            bound: r.bound,
            energy_j: r.ec + r.em,
            compute_j: r.ec,
            memory_j: r.em,
            comm_time_s: 0.0,
            comm_j: 0.0,
        }
    }

    /// The cost of a pass of `f` FLOPs over `t` tokens touching `k` KV positions: weight bytes
    /// `Wb = weight_read(t)`, other bytes `Ob = fl(k) * kvb`; `step(F, Wb + Ob)`, or
    /// `_parallel(F, Wb, Ob, T)` with a layout (`docs/cost-model.md#parallelism`).
    #[inline]
    pub fn pass(&self, f: i128, t: u64, k: u64) -> StepCost {
        self.pass_ob(f, t, k as f64 * self.kv_bytes_per_token)
    }

    /// [`CostModel::pass`] with its other bytes `ob` given (a layer-kind model's KV and state
    /// traffic).
    #[inline]
    fn pass_ob(&self, f: i128, t: u64, ob: f64) -> StepCost {
        let wb = self.weight_read(t);
        match &self.layout {
            None => self.step(f, wb + ob),
            Some(l) => l.step(self, f, wb, ob, t),
        }
    }

    /// This cost model on a parallel layout (`docs/cost-model.md#parallelism`): its stage model (`tp` devices,
    /// no overhead) and scale-up link are built here; the layout is not checked (call
    /// [`Parallel::check`] first, as the reference does).
    pub fn with_layout(mut self, par: Parallel, catalogue: &Catalogue) -> Result<Self, Error> {
        self.layout = Some(Box::new(Layout::new(&self, par, catalogue)?));
        Ok(self)
    }

    /// The parallel layout, if any.
    pub fn layout(&self) -> Option<&Parallel> {
        self.layout.as_deref().map(|l| &l.par)
    }

    /// The name of the layout's scale-up link (`None` without a layout).
    pub fn scale_up_link_name(&self) -> Option<String> {
        self.layout.as_deref().map(|l| l.link_name().to_string())
    }

    /// FLOPs and bytes of a prefill batch of whole prompts (`docs/cost-model.md#prefill-step`).
    pub fn prefill_work(&self, lens: impl IntoIterator<Item = u64>) -> (i128, f64) {
        if self.model.ced.is_some() {
            return self.ced_prefill_work(lens);
        }
        if let Some(a) = self.model.arch.as_deref() {
            let (f, t, ob) = self.arch_prefill(a, lens);
            return (f, self.weight_read(t) + ob);
        }
        let (f, t) = self.prefill_flops(lens);
        (f, self.weight_read(t) + t as f64 * self.kv_bytes_per_token)
    }

    /// A layer-kind model's prefill (issue 16): FLOPs (the LM-head-dependent linear term, then
    /// per prompt [`Arch::chunk_attn_flops`]), tokens, and other bytes: every attention layer
    /// writes K/V (or the latent) for every prompt token, each linear layer its state once.
    fn arch_prefill(&self, a: &Arch, lens: impl IntoIterator<Item = u64>) -> (i128, u64, f64) {
        let h = self.model.n_heads;
        let per_token = a.unbounded_values_per_token() + a.windowed_values_per_token();
        let (mut total, mut count, mut attn) = (0i128, 0i128, 0i128);
        for p in lens {
            total += p as i128;
            count += 1;
            attn += a.chunk_attn_flops(h, 0, p);
        }
        let f = match self.model.prefill_lm_head {
            LmHead::All => 2 * self.matmul_params * total,
            LmHead::Last => 2 * self.layer_params * total + 2 * self.lm_head_params * count,
        } + attn;
        let ob =
            (per_token * total) as f64 * self.model.kv_bytes + count as f64 * self.terms().state;
        (f, total as u64, ob)
    }

    /// FLOPs (exact) and tokens of a prefill batch of whole prompts (`docs/cost-model.md#prefill-step`).
    pub fn prefill_flops(&self, lens: impl IntoIterator<Item = u64>) -> (i128, u64) {
        if let Some(a) = self.model.arch.as_deref() {
            let (f, t, _) = self.arch_prefill(a, lens);
            return (f, t);
        }
        let mut total: i128 = 0;
        let mut attn: i128 = 0;
        let mut count: i128 = 0;
        for p in lens {
            let p = p as i128;
            total += p;
            attn += ((self.prefill_attn_coef) * p) * (p + 1);
            count += 1;
        }
        let mut f = match self.model.prefill_lm_head {
            LmHead::All => 2 * self.matmul_params * total,
            LmHead::Last => 2 * self.layer_params * total + 2 * self.lm_head_params * count,
        };
        f += attn;
        (f, total as u64)
    }

    /// The cost of a prefill step over whole prompts (an FFT-mixing model's: `docs/levers.md#fft-mixing`,
    /// `docs/levers.md#fft-mixing`; a CED model's: `docs/levers.md#ced`). A fitted device's per-sequence term counts the prompts.
    pub fn prefill(&self, lens: impl IntoIterator<Item = u64>) -> StepCost {
        if self.model.fft.is_some() {
            return self.fft_prefill(&lens.into_iter().collect::<Vec<_>>());
        }
        let mut rows = 0u64;
        let lens = lens.into_iter().inspect(|_| rows += 1);
        let cost = if self.model.ced.is_some() {
            self.ced_prefill(lens)
        } else if let Some(a) = self.model.arch.as_deref() {
            let (f, t, ob) = self.arch_prefill(a, lens);
            self.pass_ob(f, t, ob)
        } else {
            let (f, t) = self.prefill_flops(lens);
            self.pass(f, t, t)
        };
        self.add_rows(cost, rows)
    }

    /// FLOPs and bytes of a decode step: `ctx` is the total cached context over a batch of `b`
    /// (`docs/cost-model.md#decode-step`).
    #[inline]
    pub fn decode_work(&self, ctx: u64, b: u64) -> (i128, f64) {
        if self.model.arch.is_some() {
            let (f, ob, _) = self.arch_decode(ctx, Rows::Alike(b));
            return (f, self.weight_read(b) + ob);
        }
        let (ctx, bi) = (ctx as i128, b as i128);
        let f = 2 * self.matmul_params * bi + self.decode_attn_coef * (ctx + bi);
        let by = self.weight_read(b) + (ctx + bi) as f64 * self.kv_bytes_per_token;
        (f, by)
    }

    /// The cost of a decode step (`decode_sum`). A fitted device's per-sequence term counts the
    /// `b` rows.
    #[inline]
    pub fn decode_sum(&self, ctx: u64, b: u64) -> StepCost {
        let cost = if self.model.fft.is_some() {
            self.fft_decode_sum(ctx, b)
        } else if self.model.arch.is_some() {
            let (f, ob, _) = self.arch_decode(ctx, Rows::Alike(b));
            self.pass_ob(f, b, ob)
        } else {
            let f = 2 * self.matmul_params * b as i128
                + self.decode_attn_coef * (ctx as i128 + b as i128);
            self.pass(f, b, ctx + b)
        };
        self.add_rows(cost, b)
    }

    /// A decode step whose rows have cached contexts `rows` (`ctx` their sum): a model with
    /// sliding-window or chunked layers is costed row by row ([`Arch::windowed_decode`]); any
    /// other model is [`CostModel::decode_sum`]`(ctx, b)` exactly (`rows` is not read).
    pub fn decode_rows(&self, ctx: u64, rows: &mut dyn Iterator<Item = u64>) -> StepCost {
        match self.model.arch.as_deref() {
            Some(a) if a.has_windows() => {
                let (f, ob, b) = self.arch_decode(ctx, Rows::Each(rows));
                self.add_rows(self.pass_ob(f, b, ob), b)
            }
            _ => {
                let b = rows.count() as u64;
                self.decode_sum(ctx, b)
            }
        }
    }

    /// Whether a step must be costed from its rows' contexts ([`CostModel::decode_rows`],
    /// [`CostModel::step_mixed_rows`]): a model with sliding-window or chunked layers.
    pub fn needs_rows(&self) -> bool {
        self.arch.as_deref().is_some_and(|x| x.windows)
    }

    /// The layer-kind constants (only called for a layer-kind model).
    #[inline]
    fn terms(&self) -> &ArchTerms {
        self.arch.as_deref().expect("a layer-kind model")
    }

    /// A layer-kind model's decode terms: attention FLOPs plus `2 * active * b`, other bytes
    /// (KV values read times `kv_bytes`, each linear state read and written) and the rows `b`.
    /// [`Rows::Each`] gives each row's cached context (its query is at position `ctx_i + 1`);
    /// with [`Rows::Alike`] a model with windows takes `b` rows of equal context (`ctx / b`, the
    /// first `ctx mod b` one more): the calculators' rule, exact when the rows are alike.
    fn arch_decode(&self, ctx: u64, rows: Rows<'_>) -> (i128, f64, u64) {
        let x = self.terms();
        let a = self.model.arch.as_deref().expect("a layer-kind model");
        let h = self.model.n_heads;
        let (mut wf, mut wv) = (0i128, 0i128);
        let nb = match rows {
            Rows::Alike(b) if x.windows && b > 0 => {
                let (q, r) = (ctx / b, ctx % b);
                let (f, v) = a.windowed_decode(h, q + 1);
                let (f1, v1) = a.windowed_decode(h, q + 2);
                let (rb, lb) = (r as i128, (b - r) as i128);
                wf = lb * f + rb * f1;
                wv = lb * v + rb * v1;
                b
            }
            Rows::Alike(b) => b,
            Rows::Each(it) => {
                let mut nb = 0u64;
                for c in it {
                    if x.windows {
                        let (f, v) = a.windowed_decode(h, c + 1);
                        wf += f;
                        wv += v;
                    }
                    nb += 1;
                }
                nb
            }
        };
        let (k, bi) = ((ctx + nb) as i128, nb as i128);
        let f = 2 * self.matmul_params * bi + x.per_key_flops * k + x.per_row_flops * bi + wf;
        let ob = ((x.per_key_values * k + wv) as f64) * self.model.kv_bytes
            + nb as f64 * (2.0 * x.state);
        (f, ob, nb)
    }

    /// Adds the endpoint compression pass for the prompts handed off by a prefill batch
    /// (`docs/cost-model.md#compression`). `handed_off` yields the prompt lengths of the requests with more than
    /// one output token, in batch order. Returns the cost unchanged for `none` or when nothing is
    /// handed off.
    pub fn endpoint_pass(
        &self,
        cost: StepCost,
        transit: &KvTransit,
        handed_off: impl IntoIterator<Item = u64>,
    ) -> StepCost {
        let c = &transit.compression;
        if c.ratio == 1.0 && c.ops_per_value == 0.0 {
            return cost;
        }
        let mut ops = 0.0;
        let mut nb = 0.0;
        for p in handed_off {
            let hb = match self.model.arch.as_deref() {
                // A layer-kind model compresses its attention KV, not its linear state.
                Some(a) => a.handoff_parts(p, self.model.kv_bytes).kv_bytes,
                None => p as f64 * self.kv_bytes_per_token,
            };
            ops += transit.ops(hb, p, self.model.kv_bytes, true);
            nb += hb + hb / c.ratio;
        }
        if nb == 0.0 {
            return cost;
        }
        let tc = ops / self.flops_rate;
        let tm = nb / self.byte_rate;
        let ec = ops * self.j_f;
        let em = nb * self.j_b;
        StepCost {
            flops: cost.flops + PyNum::Float(ops),
            bytes: cost.bytes + nb,
            time_s: cost.time_s + tc.max(tm),
            bound: cost.bound,
            energy_j: (cost.energy_j + ec) + em,
            compute_j: cost.compute_j + ec,
            memory_j: cost.memory_j + em,
            comm_time_s: cost.comm_time_s,
            comm_j: cost.comm_j,
        }
    }

    /// Adds the prefill chunks of a pass to its FLOPs `f`, tokens `t` and KV positions `k`
    /// (`docs/levers.md#batch-policies`, the loop): the LM-head-dependent linear term, the causal tail
    /// `2*L*d*c*(2*p0 + c + 1)`, `t += c`, `k += p0 + c`.
    fn add_chunks(&self, chunks: &[Chunk], f: &mut i128, t: &mut i128, k: &mut i128) {
        for ch in chunks {
            let (p0, c) = (ch.p0 as i128, ch.c as i128);
            *f += match self.model.prefill_lm_head {
                LmHead::All => 2 * self.matmul_params * c,
                LmHead::Last => {
                    2 * self.layer_params * c + if ch.last { 2 * self.lm_head_params } else { 0 }
                }
            };
            *f += (self.prefill_attn_coef * c) * ((2 * p0 + c) + 1);
            *t += c;
            *k += p0 + c;
        }
    }

    /// The bytes of a pass over `t` tokens touching `k` KV positions: `(W + T*e) + K*k`.
    fn pass_bytes(&self, t: i128, k: i128) -> f64 {
        self.weight_read(t as u64) + k as f64 * self.kv_bytes_per_token
    }

    /// FLOPs (exact), tokens and KV positions of a mixed step (`docs/levers.md#batch-policies`): `b`
    /// decode rows over `ctx` cached positions in total, plus the prefill `chunks` in order.
    pub fn step_mixed_pass(&self, ctx: u64, b: u64, chunks: &[Chunk]) -> (i128, u64, u64) {
        let (ctx, b) = (ctx as i128, b as i128);
        let mut f = 2 * self.matmul_params * b + self.decode_attn_coef * (ctx + b);
        let mut t = b;
        let mut k = ctx + b;
        self.add_chunks(chunks, &mut f, &mut t, &mut k);
        (f, t as u64, k as u64)
    }

    /// FLOPs (exact) and bytes of a mixed step.
    pub fn step_mixed_work(&self, ctx: u64, b: u64, chunks: &[Chunk]) -> (i128, f64) {
        if self.model.arch.is_some() {
            let (f, t, ob) = self.arch_mixed(ctx, b, None, chunks);
            return (f, self.weight_read(t) + ob);
        }
        let (f, t, k) = self.step_mixed_pass(ctx, b, chunks);
        (f, self.pass_bytes(t as i128, k as i128))
    }

    /// The cost of a mixed step: the pass of [`CostModel::step_mixed_pass`]. A fitted device's
    /// per-sequence term counts the rows the step serves: the `b` decode rows plus one per
    /// prefill chunk.
    pub fn step_mixed(&self, ctx: u64, b: u64, chunks: &[Chunk]) -> StepCost {
        if self.model.arch.is_some() {
            let (f, t, ob) = self.arch_mixed(ctx, b, None, chunks);
            return self.add_rows(self.pass_ob(f, t, ob), b + chunks.len() as u64);
        }
        let (f, t, k) = self.step_mixed_pass(ctx, b, chunks);
        self.add_rows(self.pass(f, t, k), b + chunks.len() as u64)
    }

    /// A mixed step whose decode rows have cached contexts `rows` (`ctx` their sum, `b` of
    /// them): row by row for a model with sliding-window or chunked layers, else exactly
    /// [`CostModel::step_mixed`].
    pub fn step_mixed_rows(
        &self,
        ctx: u64,
        b: u64,
        rows: &mut dyn Iterator<Item = u64>,
        chunks: &[Chunk],
    ) -> StepCost {
        if !self.needs_rows() {
            return self.step_mixed(ctx, b, chunks);
        }
        let (f, t, ob) = self.arch_mixed(ctx, b, Some(rows), chunks);
        self.add_rows(self.pass_ob(f, t, ob), b + chunks.len() as u64)
    }

    /// A layer-kind model's mixed step: the decode rows of [`CostModel::arch_decode`] plus each
    /// chunk's linear term ([`CostModel::add_chunks`]'s), [`Arch::chunk_attn_flops`] and
    /// [`Arch::chunk_kv_values`] (each linear state read and written once per chunk).
    fn arch_mixed(
        &self,
        ctx: u64,
        b: u64,
        rows: Option<&mut dyn Iterator<Item = u64>>,
        chunks: &[Chunk],
    ) -> (i128, u64, f64) {
        let a = self.model.arch.as_deref().expect("a layer-kind model");
        let h = self.model.n_heads;
        let (mut f, mut ob) = match rows {
            _ if b == 0 => (0, 0.0),
            Some(it) => {
                let (f, ob, _) = self.arch_decode(ctx, Rows::Each(it));
                (f, ob)
            }
            None => {
                let (f, ob, _) = self.arch_decode(ctx, Rows::Alike(b));
                (f, ob)
            }
        };
        let mut t = b as i128;
        let mut kv: i128 = 0;
        for ch in chunks {
            let c = ch.c as i128;
            f += match self.model.prefill_lm_head {
                LmHead::All => 2 * self.matmul_params * c,
                LmHead::Last => {
                    2 * self.layer_params * c + if ch.last { 2 * self.lm_head_params } else { 0 }
                }
            };
            f += a.chunk_attn_flops(h, ch.p0, ch.c);
            kv += a.chunk_kv_values(ch.p0, ch.c);
            t += c;
        }
        ob += kv as f64 * self.model.kv_bytes + chunks.len() as f64 * (2.0 * self.terms().state);
        (f, t as u64, ob)
    }

    /// FLOPs (exact), tokens and KV positions of a speculative verify pass
    /// (`docs/levers.md#speculative`): `b` rows of `c` positions each
    /// (`c = gamma + 1`) after `ctx` cached positions in total, plus the prefill `chunks` exactly
    /// as in a mixed step.
    pub fn step_spec_pass(&self, ctx: u64, b: u64, c: u64, chunks: &[Chunk]) -> (i128, u64, u64) {
        let (ctx, b, c) = (ctx as i128, b as i128, c as i128);
        let mut f = (2 * self.matmul_params * b) * c
            + (self.prefill_attn_coef * c) * (2 * ctx + b * (c + 1));
        let mut t = b * c;
        let mut k = ctx + b * c;
        self.add_chunks(chunks, &mut f, &mut t, &mut k);
        (f, t as u64, k as u64)
    }

    /// FLOPs (exact) and bytes of a verify pass.
    pub fn step_spec_work(&self, ctx: u64, b: u64, c: u64, chunks: &[Chunk]) -> (i128, f64) {
        let (f, t, k) = self.step_spec_pass(ctx, b, c, chunks);
        (f, self.pass_bytes(t as i128, k as i128))
    }

    /// The cost of a verify pass: the pass of [`CostModel::step_spec_pass`]. A fitted device's
    /// per-sequence term counts the rows the step serves, as a mixed step: `b` plus one per
    /// chunk (not `b * c`: a row's `c` positions are one sequence).
    pub fn step_spec(&self, ctx: u64, b: u64, c: u64, chunks: &[Chunk]) -> StepCost {
        let (f, t, k) = self.step_spec_pass(ctx, b, c, chunks);
        self.add_rows(self.pass(f, t, k), b + chunks.len() as u64)
    }

    /// KV capacity in tokens with a speculative draft resident (`docs/levers.md#speculative`,
    /// `docs/cost-model.md#kv-capacity`, `docs/levers.md#speculative`).
    pub fn kv_capacity_tokens_with_draft(&self, draft: &Draft) -> Result<u64, Error> {
        self.kv_capacity_levers(Some(draft))
    }

    /// `_kv_capacity_levers` (`docs/cost-model.md#kv-capacity`), used with a layout or a draft: per GPU
    /// `room = cap * mem_util`; `(tp, pp)` the layout's, else `(n, 1)`; `unit = kvb / pp (+ the
    /// draft's kvb)`; stage s holds `L/pp` layers (all experts), the first also the embedding
    /// and the last the LM head, plus the draft's resident bytes; capacity
    /// `min_s int((room * tp - w_s) //py unit)`. The rounding differs from
    /// [`CostModel::kv_capacity_tokens`] (`(cap * n) * mem_util` there). The only error (strict
    /// `>`): a stage's weights per GPU exceed the room.
    fn kv_capacity_levers(&self, draft: Option<&Draft>) -> Result<u64, Error> {
        let m = &self.model;
        let (tp, pp) = match self.layout() {
            Some(l) => (l.tp, l.pp),
            None => (self.n_devices, 1),
        };
        let room = self.device.mem_capacity * self.opts.mem_util;
        let mut unit = self.kv_bytes_per_token / pp as f64;
        let mut resident = 0.0;
        if let Some(d) = draft {
            unit += d.kv_bytes_per_token();
            resident = d.resident_bytes;
        }
        let pl = m.resident_params_per_layer();
        let layers = m.n_layers as i128 / pp as i128;
        let vd = m.vocab_params();
        let mut cap: Option<u64> = None;
        for s in 0..pp {
            let p_s = layers * pl + if s == 0 { vd } else { 0 } + if s == pp - 1 { vd } else { 0 };
            let w = (p_s as f64 * m.weight_bytes) + resident;
            if w / tp as f64 > room {
                return Err(Error::invalid(
                    "model",
                    format!(
                        "{} does not fit: {:.1} GB of weights per GPU in stage {s} of {tp} x {pp} \
                         {} ({:.1} GB usable)",
                        m.name,
                        w / tp as f64 / 1e9,
                        self.device.name,
                        room / 1e9
                    ),
                ));
            }
            // `as u64` truncates like Python's `int()`; a quotient that rounding left just below
            // zero (weights filling the room to the last byte) saturates to 0.
            let c = py_floordiv(room * tp as f64 - w, unit) as u64;
            cap = Some(match cap {
                Some(x) if x <= c => x,
                _ => c,
            });
        }
        Ok(cap.unwrap_or(0))
    }
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

    /// `docs/cost-model.md#parallelism`, steps 1 to 18.
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

/// The rows of a layer-kind model's decode step: `b` alike, or each one's cached context.
enum Rows<'r> {
    Alike(u64),
    Each(&'r mut dyn Iterator<Item = u64>),
}

/// A layer-kind model's step constants (issue 16): the decode terms linear in the rows'
/// positions ([`Arch::decode_linear`]), one sequence's linear state, whether any layer has a
/// window, and the weights a pass reads when it has MoE layers.
#[derive(Clone, Debug, PartialEq)]
struct ArchTerms {
    per_key_flops: i128,
    per_row_flops: i128,
    per_key_values: i128,
    state: f64,
    windows: bool,
    weights: Option<crate::arch::WeightRead>,
}

impl ArchTerms {
    fn new(model: &ModelSpec, a: &Arch) -> Self {
        let (per_key_flops, per_row_flops, per_key_values) = a.decode_linear(model.n_heads);
        ArchTerms {
            per_key_flops,
            per_row_flops,
            per_key_values,
            state: a.state_bytes(),
            windows: a.has_windows(),
            weights: model.arch_weight_read(),
        }
    }
}

/// A prefill chunk of a mixed step (`docs/levers.md#batch-policies`): `c` new prompt tokens after `p0`
/// already in the KV cache; `last` when it ends its prompt (the LM head runs on it under
/// `prefill_lm_head = "last"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Prompt tokens already cached (earlier chunks, a prefix hit, or both).
    pub p0: u64,
    /// New prompt tokens computed by this pass.
    pub c: u64,
    /// Whether the chunk ends its prompt.
    pub last: bool,
}
