//! The causal encoder-decoder (CED; `docs/levers.md#ced`): its derived sizes (`docs/levers.md#ced`) and its steps
//! (`docs/levers.md#ced`). The bottom E of the model's L layers are a causal encoder; each of the D = L − E decoder
//! layers projects its K and V from the last encoder state with its own weights. A prompt token
//! runs the encoder and those projections; the last W prompt tokens are replayed through the whole
//! model, on the prefill instance (the default) or on the decode instance (`replay_on = decode`,
//! whose prefill pool then runs the encoder only).
//!
//! Everything is integer FLOPs and the reference's float grouping (`docs/exactness.md`); a model
//! without CED never reaches this file (one branch at the top of [`CostModel::prefill`] and
//! [`CostModel::prefill_work`], and one in [`CostModel::resident_weight_bytes`]).

use crate::catalogue::{LmHead, ModelSpec};
use crate::cost::{CostModel, StepCost};
use crate::variants::{Ced, ReplayOn};

impl Ced {
    /// The decoder layers' K and V projections: `(L - E) * 2 * d * Hkv * hd`.
    pub fn ced_kv_proj_params(&self, m: &ModelSpec) -> i128 {
        let dec = m.n_layers as i128 - self.encoder_layers as i128;
        ((dec * 2) * m.d_model as i128) * m.kvw()
    }

    /// What a prompt token runs: `E * params_per_layer + ced_kv_proj_params`.
    pub fn ced_prompt_params(&self, m: &ModelSpec) -> i128 {
        self.encoder_layers as i128 * m.params_per_layer() + self.ced_kv_proj_params(m)
    }

    /// What an encoder-only prefill instance keeps resident: `ced_prompt_params + V*d` (the input
    /// embedding).
    pub fn ced_prefill_resident_params(&self, m: &ModelSpec) -> i128 {
        self.ced_prompt_params(m) + m.vocab_params()
    }

    /// Prompt tokens replayed for a prompt of `p`: `min(p, W)`.
    pub fn replay_len(&self, p: u64) -> u64 {
        p.min(self.replay)
    }
}

/// The causal attention of the last `w` of `s` positions over `layers` layers of width `d`:
/// `2*layers*d*w*(2*s - w + 1)` (the tail `Σ_{c=s-w+1..s} 4*d*c` per layer; needs `w <= s`).
pub fn replay_attn(layers: u64, d: u64, s: u64, w: u64) -> i128 {
    let (s, w) = (s as i128, w as i128);
    (((2 * layers as i128) * d as i128) * w) * ((2 * s - w) + 1)
}

impl CostModel {
    /// The model's CED part, if any.
    #[inline]
    fn ced(&self) -> Option<&Ced> {
        self.model.ced.as_ref()
    }

    /// Whether this is an encoder-only prefill instance: the prefill pool's cost model
    /// (`prefill_only`) of a CED model with the replay on decode.
    pub fn encoder_only(&self) -> bool {
        self.opts.prefill_only && self.ced().is_some_and(|c| c.replay_on == ReplayOn::Decode)
    }

    /// Weight bytes the instance keeps resident (the KV capacity's deduction, `docs/cost-model.md`
    /// `docs/cost-model.md#kv-capacity`): `fl(ced_prefill_resident_params) * wb` on an encoder-only instance, else the whole
    /// model's `weight_bytes_total`.
    pub fn resident_weight_bytes(&self) -> f64 {
        match self.ced() {
            Some(c) if self.encoder_only() => {
                c.ced_prefill_resident_params(&self.model) as f64 * self.model.weight_bytes
            }
            _ => self.model.weight_bytes_total(),
        }
    }

    /// FLOPs and bytes of a CED prefill over whole prompts (`docs/levers.md#ced`): the encoder
    /// and the decoder's K/V projections on every token; unless the instance is encoder-only, the
    /// replay of each prompt's last `min(s, W)` tokens through the D decoder layers and the LM
    /// head. Panics on a model without CED.
    pub fn ced_prefill_work(&self, lens: impl IntoIterator<Item = u64>) -> (i128, f64) {
        let ced = self.ced().expect("a CED model");
        let m = &self.model;
        let e = ced.encoder_layers;
        let dl = m.n_layers - e;
        let d = m.d_model;
        let enc_coef = (2 * e as i128) * d as i128;
        // Integer sums are exact, so one pass over the prompts collects every term.
        let (mut total, mut count, mut enc_attn, mut rt, mut rep_attn) = (0i128, 0i128, 0, 0, 0);
        for s in lens {
            let w = ced.replay_len(s);
            let si = s as i128;
            total += si;
            count += 1;
            enc_attn += (enc_coef * si) * (si + 1);
            rt += w as i128;
            rep_attn += replay_attn(dl, d, s, w);
        }
        let prompt_params = ced.ced_prompt_params(m);
        let mut f = 2 * prompt_params * total + enc_attn;
        let kv = total as f64 * self.kv_bytes_per_token();
        if self.encoder_only() {
            let b = ((prompt_params as f64 * m.weight_bytes)
                + (total as f64 * m.embedding_row_bytes()))
                + kv;
            return (f, b);
        }
        f += (2 * dl as i128) * m.params_per_layer() * rt;
        f += rep_attn;
        f += 2
            * m.vocab_params()
            * match m.prefill_lm_head {
                LmHead::All => rt,
                LmHead::Last => count,
            };
        (f, self.weight_read(total as u64) + kv)
    }

    /// The cost of a CED prefill step: `step(F, B)` of [`CostModel::ced_prefill_work`].
    pub fn ced_prefill(&self, lens: impl IntoIterator<Item = u64>) -> StepCost {
        let (f, b) = self.ced_prefill_work(lens);
        self.step(f, b)
    }

    /// FLOPs and bytes of a decode-pool step with replays (`docs/levers.md#ced`, `ced_step`): `b`
    /// rows decoding over `ctx` cached positions in total, as `decode_sum`, and each newly admitted
    /// request `(s, w)` running its last `w` prompt tokens through the whole model (its `s` prompt
    /// positions of KV are read). With no replay it is `decode_work(ctx, b)`.
    pub fn ced_step_work(&self, ctx: u64, b: u64, replay: &[(u64, u64)]) -> (i128, f64) {
        let m = &self.model;
        let (l, d) = (m.n_layers, m.d_model);
        let (ctxi, bi) = (ctx as i128, b as i128);
        let mut rt: i128 = 0;
        let mut attn: i128 = 0;
        let mut prompts: i128 = 0;
        for &(s, w) in replay {
            rt += w as i128;
            attn += replay_attn(l, d, s, w);
            prompts += s as i128;
        }
        let mut f = 2 * m.matmul_params() * bi + ((4 * l as i128) * d as i128) * (ctxi + bi);
        f += 2 * m.layer_params() * rt;
        f += 2
            * m.vocab_params()
            * match m.prefill_lm_head {
                LmHead::All => rt,
                LmHead::Last => replay.len() as i128,
            };
        f += attn;
        let kvb = self.kv_bytes_per_token();
        let by = self.weight_read((bi + rt) as u64) + (ctxi + bi) as f64 * kvb;
        let by = by + prompts as f64 * kvb;
        (f, by)
    }

    /// The cost of a decode-pool step with replays: `step(F, B)` of [`CostModel::ced_step_work`].
    /// A fitted device's per-sequence term counts the rows the step serves: the `b` decoding
    /// rows plus one per replay.
    pub fn ced_step(&self, ctx: u64, b: u64, replay: &[(u64, u64)]) -> StepCost {
        let (f, by) = self.ced_step_work(ctx, b, replay);
        self.add_rows(self.step(f, by), b + replay.len() as u64)
    }
}
