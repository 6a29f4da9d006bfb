//! FFT-mixing models (Hyena, hybrid, block-circulant) and the optical transform engine: the op
//! ledger [`Ops`] and the steps built on it (`docs/levers.md#fft-mixing`).
//!
//! Bit-exactness: every ledger entry is a double built in the spec's order and grouping; integer
//! products are exact (`i128`) and converted once (`fl(N)`, `as f64`, round to nearest even) at the
//! point the spec converts them. A model without an [`crate::FftMixing`] part never reaches the
//! steps here: [`CostModel::prefill`] and [`CostModel::decode_sum`] dispatch to them only for an
//! FFT-mixing model, so the dense path is unchanged.

use crate::catalogue::{LmHead, ModelSpec};
use crate::cost::{Bound, CostModel, PyNum, StepCost};
use crate::pymath::{pow2_at_least, rfft_flops};
use crate::variants::{DecodeStyle, FftMixing};

/// The op ledger of a pass (`Ops`, `docs/levers.md#fft-mixing`): FLOPs by kind. Dense matrix work,
/// attention scores, Fourier transforms, Fourier-plane (spectral) multiplies and everything else
/// (short convolutions, gating, cached-input reads, block-circulant accumulation).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ops {
    /// Dense matrix FLOPs (projections, MLP, LM head).
    pub dense: f64,
    /// Attention FLOPs (QKᵀ and AV).
    pub attention: f64,
    /// Fourier-transform FLOPs.
    pub transform: f64,
    /// Fourier-plane multiply FLOPs.
    pub spectral: f64,
    /// Everything else.
    pub other: f64,
}

impl std::ops::AddAssign for Ops {
    /// `o += p`: field by field, `o.x = o.x + p.x`.
    #[inline]
    fn add_assign(&mut self, p: Ops) {
        self.dense = self.dense + p.dense;
        self.attention = self.attention + p.attention;
        self.transform = self.transform + p.transform;
        self.spectral = self.spectral + p.spectral;
        self.other = self.other + p.other;
    }
}

impl Ops {
    /// `(((dense + attention) + transform) + spectral) + other`.
    pub fn total(&self) -> f64 {
        (((self.dense + self.attention) + self.transform) + self.spectral) + self.other
    }

    /// The work an optical engine can take: `transform + spectral`.
    pub fn optical(&self) -> f64 {
        self.transform + self.spectral
    }

    /// The work that stays on the GPU: `(dense + attention) + other`.
    pub fn digital(&self) -> f64 {
        (self.dense + self.attention) + self.other
    }
}

/// `DM(m, c, t)`: a dense `m x c` matrix applied to `t` tokens; with block size `k > 0` a
/// block-circulant one (transforms of the `c/k` input and `m/k` output blocks, a complex multiply
/// per block pair and bin, and the accumulation over input blocks).
pub fn dm(m: u64, c: u64, t: u64, k: u64) -> Ops {
    if k == 0 {
        return Ops {
            dense: ((2.0 * m as f64) * c as f64) * t as f64,
            ..Ops::default()
        };
    }
    let (t, mk, ck) = (t as i128, (m / k) as i128, (c / k) as i128);
    let bins = (k / 2 + 1) as i128;
    let r = rfft_flops(k);
    Ops {
        transform: t as f64 * ((ck as f64 * r) + (mk as f64 * r)),
        spectral: ((((t * mk) * ck) * bins) as f64) * 6.0,
        other: ((((t * mk) * (ck - 1)) * bins) as f64) * 2.0,
        ..Ops::default()
    }
}

/// The distinct transform lengths `pow2(2s)` of the prompts, ascending.
fn transform_lengths(lens: &[u64]) -> Vec<u64> {
    let mut fs: Vec<u64> = lens.iter().map(|&s| pow2_at_least(2 * s)).collect();
    fs.sort_unstable();
    fs.dedup();
    fs
}

/// The FFT-mixing part of a model as the ledgers use it; a transformer has none and uses the
/// defaults only for its (absent) Hyena layers.
fn mixing(m: &ModelSpec) -> Option<&FftMixing> {
    m.fft.as_ref()
}

impl ModelSpec {
    /// Attention layers: all `L` for a transformer, `n_attn` of an FFT-mixing model.
    pub fn n_attention_layers(&self) -> u64 {
        mixing(self).map_or(self.n_layers, |f| f.n_attn(self.n_layers))
    }

    /// Hyena layers: `L - n_attn`.
    pub fn n_hyena_layers(&self) -> u64 {
        self.n_layers - self.n_attention_layers()
    }

    /// Whether layer `i` (0-based) is attention.
    fn layer_is_attention(&self, i: u64) -> bool {
        mixing(self).is_none_or(|f| f.is_attention(i))
    }

    /// Block size of the block-circulant weights (0: dense).
    fn circulant_block(&self) -> u64 {
        mixing(self).map_or(0, |f| f.circulant_block)
    }

    /// `MLP(t) = 0 + DM(ff, d, t) + DM(ff, d, t) + DM(d, ff, t)`.
    pub fn mlp_ops(&self, t: u64) -> Ops {
        let (d, ff, k) = (self.d_model, self.d_ff, self.circulant_block());
        let mut o = Ops::default();
        o += dm(ff, d, t, k);
        o += dm(ff, d, t, k);
        o += dm(d, ff, t, k);
        o
    }

    /// An attention layer over the prompts `lens` (`A(lens)`): the projections
    /// `(2.0*fl(T))*fl(2*d*d + 2*d*kvw)` and the causal scores `Σ ((2.0*fl(d))*fl(s))*fl(s+1)`.
    pub fn attention_layer_ops(&self, lens: &[u64]) -> Ops {
        let d = self.d_model as i128;
        let t: i128 = lens.iter().map(|&s| s as i128).sum();
        let mut attention = 0.0;
        for &s in lens {
            attention += ((2.0 * d as f64) * s as f64) * (s as i128 + 1) as f64;
        }
        Ops {
            dense: (2.0 * t as f64) * (2 * d * d + 2 * d * self.kvw()) as f64,
            attention,
            ..Ops::default()
        }
    }

    /// A Hyena layer over the prompts `lens` (`Hy(lens)`, `docs/levers.md#fft-mixing`): the in- and
    /// out-projections, the short convolution and gating, then per prompt the transforms and
    /// Fourier-plane multiplies of the `N*d` long convolutions at length `pow2(2s)`.
    pub fn hyena_layer_ops(&self, f: &FftMixing, lens: &[u64]) -> Ops {
        let (d, n, k) = (self.d_model, f.order, f.circulant_block);
        let t: u64 = lens.iter().sum();
        let mut o = Ops::default();
        o += dm((n + 1) * d, d, t, k);
        o += dm(d, d, t, k);
        o.other += (((t as f64 * 2.0) * f.short_taps as f64) * (n + 1) as f64) * d as f64;
        o.other += ((t as i128 * n as i128) * d as i128) as f64;
        let nd = n as i128 * d as i128;
        for &s in lens {
            let fl = pow2_at_least(2 * s);
            o.transform += (nd * 2) as f64 * rfft_flops(fl);
            o.spectral += ((nd * (fl / 2 + 1) as i128) as f64) * 6.0;
        }
        o
    }

    /// The LM head over `t` rows: `dense = ((2.0*fl(V))*fl(d))*fl(t)`.
    fn head_ops(&self, t: u64) -> Ops {
        Ops {
            dense: ((2.0 * self.vocab as f64) * self.d_model as f64) * t as f64,
            ..Ops::default()
        }
    }

    /// The ledger of a prefill over whole prompts (`prefill_ops(lens)`): per layer its mixer and
    /// the MLP, then the LM head (on every token, or on each prompt's last).
    pub fn prefill_ops(&self, lens: &[u64]) -> Ops {
        let t: u64 = lens.iter().sum();
        let mlp = self.mlp_ops(t);
        let attn = self.attention_layer_ops(lens);
        let hy = mixing(self).map(|f| self.hyena_layer_ops(f, lens));
        let mut o = Ops::default();
        for i in 0..self.n_layers {
            match hy {
                Some(h) if !self.layer_is_attention(i) => o += h,
                _ => o += attn,
            }
            o += mlp;
        }
        let head = match self.prefill_lm_head {
            LmHead::All => t,
            LmHead::Last => lens.len() as u64,
        };
        o += self.head_ops(head);
        o
    }

    /// The ledger of a decode step of `b` sequences over `ctx` cached positions in total
    /// (`decode_ops(ctx, b)`): attention layers read `ctx + b` positions; Hyena layers run their
    /// projections and read the cached inputs (direct) or update their state (distilled); no
    /// transforms of the long convolutions.
    pub fn decode_ops(&self, ctx: u64, b: u64) -> Ops {
        let d = self.d_model as i128;
        let k = self.circulant_block();
        let attn = Ops {
            dense: (2.0 * b as f64) * (2 * d * d + 2 * d * self.kvw()) as f64,
            attention: (4.0 * d as f64) * (ctx + b) as f64,
            ..Ops::default()
        };
        let mb = self.mlp_ops(b);
        let mut o = Ops::default();
        match mixing(self) {
            None => {
                for _ in 0..self.n_layers {
                    o += attn;
                    o += mb;
                }
            }
            Some(f) => {
                let n = f.order;
                let pi = dm((n + 1) * self.d_model, self.d_model, b, k);
                let po = dm(self.d_model, self.d_model, b, k);
                let nd = (n as i128 * d) as f64;
                let state = match f.decode_style {
                    DecodeStyle::Direct => (nd * 2.0) * (ctx + b) as f64,
                    DecodeStyle::Distilled => ((nd * 8.0) * f.distill_state as f64) * b as f64,
                };
                for i in 0..self.n_layers {
                    if f.is_attention(i) {
                        o += attn;
                    } else {
                        o += pi;
                        o += po;
                        o.other += state;
                    }
                    o += mb;
                }
            }
        }
        o += self.head_ops(b);
        o
    }

    /// Values of the long convolutions' filter spectra for the prompts: `Σ` over the distinct
    /// lengths `f = pow2(2s)` of `((n_hy*N)*d)*(f//2+1)` (0 for a transformer).
    fn filter_spectrum_values(&self, lens: &[u64]) -> i128 {
        let Some(f) = mixing(self) else { return 0 };
        let per_bin = (self.n_hyena_layers() as i128 * f.order as i128) * self.d_model as i128;
        transform_lengths(lens)
            .into_iter()
            .map(|fl| per_bin * (fl / 2 + 1) as i128)
            .sum()
    }

    /// Bytes of the cached filter spectra a prefill of `lens` reads (`filter_spectrum_bytes`):
    /// complex, 4 bytes per value, `fl(values) * 4.0`; 0.0 for a transformer.
    pub fn filter_spectrum_bytes(&self, lens: &[u64]) -> f64 {
        (self.filter_spectrum_values(lens) as f64) * 4.0
    }

    /// DAC/ADC conversion pairs per prompt token on an optical engine: `n_hy * (N*d + Σ max(m,
    /// c))` (the sum over the five matrices only with block-circulant weights); 0 for a
    /// transformer.
    pub fn conversion_pairs_per_token(&self) -> i128 {
        let Some(f) = mixing(self) else { return 0 };
        let mut per = f.order as i128 * self.d_model as i128;
        if f.circulant_block > 0 {
            per += f
                .matrices(self.d_model, self.d_ff)
                .iter()
                .map(|&(m, c)| m.max(c) as i128)
                .sum::<i128>();
        }
        self.n_hyena_layers() as i128 * per
    }

    /// Fourier-plane mask values a prefill of `lens` needs (`mask_values`): the filter spectra,
    /// plus with block-circulant weights `n_hy * Σ (m//k)*(c//k)*(k//2+1)`; 0 for a transformer.
    pub fn mask_values(&self, lens: &[u64]) -> i128 {
        let Some(f) = mixing(self) else { return 0 };
        let mut v = self.filter_spectrum_values(lens);
        let k = f.circulant_block;
        if k > 0 {
            let per: i128 = f
                .matrices(self.d_model, self.d_ff)
                .iter()
                .map(|&(m, c)| ((m / k) as i128 * (c / k) as i128) * (k / 2 + 1) as i128)
                .sum();
            v += self.n_hyena_layers() as i128 * per;
        }
        v
    }

    /// The admission unit (`cache_unit_bytes`, `docs/levers.md#fft-mixing`): the KV (or cached-input)
    /// bytes per token, or the distilled state per sequence when nothing is cached per token.
    pub fn cache_unit_bytes(&self) -> f64 {
        let kvb = self.kv_bytes_per_token();
        if kvb != 0.0 {
            kvb
        } else if let Some(a) = &self.arch {
            // No unbounded layer: a token of the windowed layers, else one sequence's state.
            let w = a.windowed_values_per_token() as f64 * self.kv_bytes;
            if w != 0.0 {
                w
            } else {
                a.state_bytes()
            }
        } else {
            self.state_bytes_per_seq()
        }
    }

    /// The cache units a decode instance reserves for a sequence of up to `tokens` tokens:
    /// `tokens` for every model whose cache is `tokens x bytes per token`; for a model with
    /// windowed layers or a linear state, `ceil(reserved_kv_bytes(tokens) / cache_unit_bytes)`
    /// (the windows at their peak, the state whole; issue 16).
    pub fn kv_units(&self, tokens: u64) -> u64 {
        match self.kv_reserve() {
            None => tokens,
            Some(r) => r.units(tokens),
        }
    }

    /// The reservation rule of [`ModelSpec::kv_units`] as plain numbers; `None` when units are
    /// tokens (every model whose cache is `tokens x bytes per token`).
    pub fn kv_reserve(&self) -> Option<crate::arch::KvReserve> {
        if !self.kv_is_bounded() {
            return None;
        }
        let a = self.arch.as_deref()?;
        a.reserve(self.kv_bytes, self.cache_unit_bytes())
    }
}

/// The optical engine's share of a prefill (`optical_terms`, `docs/levers.md#fft-mixing`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpticalTerms {
    /// Passes per conversion `K` for the model's output format.
    pub passes: u64,
    /// Conversion pairs: `(conversion_pairs_per_token * T) * K`.
    pub conversions: i128,
    /// Mask rewrites: `ceil(mask_values / engine.mask_values)`.
    pub rewrites: i128,
    /// Engine time: `(fl(conv) / samples_per_s) + (fl(rew) / mask_rate_hz)`, s.
    pub t_opt: f64,
    /// Conversion energy: `(fl(conv) * pj_per_pair) * 1e-12`, J.
    pub optical_j: f64,
}

/// A prefill on a transform-engine device: the step (its energy includes the conversions) and
/// the optical extras the simulator accounts separately (`docs/levers.md#fft-mixing`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpticalStep {
    /// The step: FLOPs are the GPU's (`o.digital`), `energy = (ec + em) + optical_j`.
    pub step: StepCost,
    /// Conversion energy, J.
    pub optical_j: f64,
    /// The transforms and Fourier-plane multiplies the engine took (`o.optical`).
    pub optical_flops: f64,
}

impl CostModel {
    /// FLOPs a ledger costs on this device's digital units: `o.total` at `fft_efficiency` 1.0,
    /// else `o.digital + (o.optical / fft_efficiency)`.
    pub fn digital_flops(&self, o: &Ops) -> f64 {
        let x = self.device.fft_efficiency;
        if x == 1.0 {
            o.total()
        } else {
            o.digital() + (o.optical() / x)
        }
    }

    /// The admission unit of the instance's cache (`docs/levers.md#fft-mixing`): bytes per token, or per
    /// sequence for a distilled Hyena model (its capacity counts sequences).
    pub fn cache_unit_bytes(&self) -> f64 {
        if self.model.arch.is_some() {
            return self.model.cache_unit_bytes();
        }
        let kvb = self.kv_bytes_per_token();
        if kvb != 0.0 {
            kvb
        } else {
            self.model.state_bytes_per_seq()
        }
    }

    /// Static power of the instance's optical engines: `static_w * fl(n)`; 0.0 without one.
    pub fn optical_static_w(&self) -> f64 {
        self.device
            .engine
            .as_ref()
            .map_or(0.0, |e| e.static_w() * self.n_devices as f64)
    }

    /// Bytes of an FFT-mixing prefill without the filter spectra: `(W + fl(T)*e) + fl(T)*kvb`,
    /// plus `fl(len(lens)) * state` for a distilled model.
    fn fft_prefill_bytes(&self, lens: &[u64]) -> f64 {
        let t: u64 = lens.iter().sum();
        let mut b = self.weight_read(t) + t as f64 * self.kv_bytes_per_token();
        let state = self.model.state_bytes_per_seq();
        if state != 0.0 {
            b += lens.len() as f64 * state;
        }
        b
    }

    /// The engine's terms for a prefill of `lens`; `None` unless the device has an engine and the
    /// model is FFT-mixing.
    pub fn optical_terms(&self, lens: &[u64]) -> Option<OpticalTerms> {
        let e = self.device.engine.as_ref()?;
        let f = self.model.fft.as_ref()?;
        let t: i128 = lens.iter().map(|&s| s as i128).sum();
        let k = e.passes(f.act_format);
        let conversions = (self.model.conversion_pairs_per_token() * t) * k as i128;
        let mv = self.model.mask_values(lens);
        let cap = e.mask_values as i128;
        // ceil_div(A, B) = -((-A) // B) for positive B: Euclidean division floors here.
        let rewrites = -(-mv).div_euclid(cap);
        let t_opt = (conversions as f64 / e.samples_per_s) + (rewrites as f64 / e.mask_rate_hz);
        let optical_j = (conversions as f64 * e.pj_per_pair()) * 1e-12;
        Some(OpticalTerms {
            passes: k,
            conversions,
            rewrites,
            t_opt,
            optical_j,
        })
    }

    /// A prefill of an FFT-mixing model with its optical extras (`docs/levers.md#fft-mixing`): on
    /// a transform-engine device the engine takes the transforms and spectral multiplies
    /// (`optical_j`, `optical_flops` set); elsewhere the whole ledger runs digitally at the
    /// device's `fft_efficiency` and reads the filter spectra (extras 0.0). A transformer gets
    /// the dense step of [`CostModel::prefill`] with zero extras.
    pub fn prefill_optical(&self, lens: &[u64]) -> OpticalStep {
        if self.model.fft.is_none() {
            return OpticalStep {
                step: self.prefill(lens.iter().copied()),
                optical_j: 0.0,
                optical_flops: 0.0,
            };
        }
        let o = self.model.prefill_ops(lens);
        let b = self.fft_prefill_bytes(lens);
        let Some(ot) = self.optical_terms(lens) else {
            let b = b + self.model.filter_spectrum_bytes(lens);
            let f = self.digital_flops(&o);
            return OpticalStep {
                step: self.add_rows(self.step_of(PyNum::Float(f), f, b), lens.len() as u64),
                optical_j: 0.0,
                optical_flops: 0.0,
            };
        };
        let overlap = self.device.engine.as_ref().is_some_and(|e| e.overlap);
        let f = o.digital();
        let r = self.step_time_raw(f, b);
        let t = if overlap {
            r.t.max(ot.t_opt)
        } else {
            r.t + ot.t_opt
        };
        let bound = if ot.t_opt > r.t {
            Bound::Optical
        } else {
            r.bound
        };
        OpticalStep {
            step: StepCost {
                flops: PyNum::Float(f),
                bytes: b,
                time_s: self.step_time(t, lens.len() as u64),
                bound,
                energy_j: (r.ec + r.em) + ot.optical_j,
                compute_j: r.ec,
                memory_j: r.em,
                comm_time_s: 0.0,
                comm_j: 0.0,
            },
            optical_j: ot.optical_j,
            optical_flops: o.optical(),
        }
    }

    /// The step of an FFT-mixing prefill (the `step` of [`CostModel::prefill_optical`]).
    pub fn fft_prefill(&self, lens: &[u64]) -> StepCost {
        self.prefill_optical(lens).step
    }

    /// FLOPs (a double) and bytes of an FFT-mixing decode step (`docs/levers.md#fft-mixing`), on every
    /// device at its `fft_efficiency`: `B = (W + fl(b)*e) + fl(ctx + b)*kvb`, plus
    /// `fl(b) * state` for a distilled model.
    pub fn fft_decode_work(&self, ctx: u64, b: u64) -> (f64, f64) {
        let o = self.model.decode_ops(ctx, b);
        let mut by = self.weight_read(b) + (ctx + b) as f64 * self.kv_bytes_per_token();
        let state = self.model.state_bytes_per_seq();
        if state != 0.0 {
            by += b as f64 * state;
        }
        (self.digital_flops(&o), by)
    }

    /// The cost of an FFT-mixing decode step (`decode_sum`).
    pub fn fft_decode_sum(&self, ctx: u64, b: u64) -> StepCost {
        let (f, by) = self.fft_decode_work(ctx, b);
        self.step_of(PyNum::Float(f), f, by)
    }
}
