//! The `layers` block of a run on a model described by layer kinds (issue 16): what its cache
//! holds kind by kind, and what MLA and mixture-of-experts cost, so a report shows them.

use disagg_model::{Attention, Mlp, ModelSpec, Retention};
use serde::Serialize;

use crate::scenario::Role;

/// Layers of one attention kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindLayers {
    /// `full`, `mla`, `sliding`, `chunked` or `linear`.
    pub kind: String,
    /// Layers of that kind.
    pub layers: u64,
}

/// MLA's cache and attention, per layer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MlaSummary {
    /// MLA layers.
    pub layers: u64,
    /// Values cached per token per layer: `kv_lora_rank + qk_rope_head_dim`.
    pub latent_values: u64,
    /// Values per token per layer the heads' own keys and values would take:
    /// `H * (nope + rope) + H * v`.
    pub per_head_values: u64,
    /// FLOPs per (query, cached key) pair per layer in decode (attention in the latent space).
    pub decode_flops_per_key: u64,
    /// FLOPs per (query, key) pair per layer in prefill (keys and values decompressed).
    pub prefill_flops_per_key: u64,
}

/// Mixture of experts: the routing and the weights a decode step reads.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MoeSummary {
    /// MoE layers.
    pub layers: u64,
    /// Routed experts per layer.
    pub experts: u64,
    /// Experts per token.
    pub top_k: u64,
    /// Shared experts per layer.
    pub shared_experts: u64,
    /// Decode batch the second figures are for: the decode-side instances' mean batch, rounded
    /// (at least 1).
    pub batch: u64,
    /// Expected routed experts a decode step of one row touches per MoE layer.
    pub experts_touched_b1: f64,
    /// Weight bytes a decode step of one row reads.
    pub weight_bytes_read_b1: f64,
    /// Expected routed experts a decode step of `batch` rows touches per MoE layer.
    pub experts_touched: f64,
    /// Weight bytes a decode step of `batch` rows reads.
    pub weight_bytes_read: f64,
}

/// The `layers` block.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayersSummary {
    /// Layers per attention kind, in order of first appearance.
    pub kinds: Vec<KindLayers>,
    /// What sliding-window and chunked layers keep (`window` or `strict`).
    pub retention: Retention,
    /// KV bytes per token of the layers that keep every token (full, MLA).
    pub kv_bytes_per_token: f64,
    /// KV bytes per kept token of the sliding-window and chunked layers.
    pub windowed_kv_bytes_per_token: f64,
    /// Linear-attention state per request, bytes.
    pub state_bytes_per_request: f64,
    /// Resident parameters.
    pub params: f64,
    /// Parameters a token runs (the LM head included, the embedding not).
    pub active_params: f64,
    /// MLA (when any layer is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mla: Option<MlaSummary>,
    /// Mixture of experts (when any layer is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe: Option<MoeSummary>,
}

/// The block of a run: `model`'s, for the mean of the decode-side instances' mean batches
/// (`(role, mean_batch)` per instance; decode, else colocated instances; 1 without any).
pub fn of_run(
    model: &ModelSpec,
    instances: impl Iterator<Item = (Role, f64)>,
) -> Option<LayersSummary> {
    model.arch.as_ref()?;
    layers_summary(model, decode_side_batch(instances))
}

/// The mean of the decode and colocated instances' mean batches (1.0 when there are none).
pub fn decode_side_batch(instances: impl Iterator<Item = (Role, f64)>) -> f64 {
    let side: Vec<f64> = instances
        .filter(|(r, _)| matches!(r, Role::Decode | Role::Colocated))
        .map(|(_, b)| b)
        .collect();
    if side.is_empty() {
        1.0
    } else {
        side.iter().sum::<f64>() / side.len() as f64
    }
}

/// The block for `model` (`None` unless it is described by layer kinds); `decode_batch` is the
/// decode-side mean batch of the run.
pub fn layers_summary(model: &ModelSpec, decode_batch: f64) -> Option<LayersSummary> {
    let a = model.arch.as_deref()?;
    let h = model.n_heads;
    let mut mla = None;
    let mut moe = None;
    for (n, r) in a.groups() {
        if let Attention::Mla {
            kv_lora_rank,
            qk_rope_head_dim,
            qk_nope_head_dim,
            v_head_dim,
            ..
        } = r.attention
        {
            let m = mla.get_or_insert(MlaSummary {
                layers: 0,
                latent_values: kv_lora_rank + qk_rope_head_dim,
                per_head_values: h * (qk_nope_head_dim + qk_rope_head_dim) + h * v_head_dim,
                decode_flops_per_key: r.attention.decode_pair_flops(h) as u64,
                prefill_flops_per_key: r.attention.prefill_pair_flops(h) as u64,
            });
            m.layers += n;
        }
        if let Mlp::Moe {
            experts,
            top_k,
            shared_experts,
            ..
        } = r.mlp
        {
            let b = if decode_batch.is_finite() && decode_batch >= 1.0 {
                decode_batch.round() as u64
            } else {
                1
            };
            let touched = |t: u64| {
                experts as f64
                    * (1.0
                        - disagg_model::pymath::ipow(
                            1.0 - disagg_model::int_div(top_k as i128, experts as i128),
                            t,
                        ))
            };
            let m = moe.get_or_insert(MoeSummary {
                layers: 0,
                experts,
                top_k,
                shared_experts,
                batch: b,
                experts_touched_b1: touched(1),
                weight_bytes_read_b1: model.weight_bytes_read(1),
                experts_touched: touched(b),
                weight_bytes_read: model.weight_bytes_read(b),
            });
            m.layers += n;
        }
    }
    Some(LayersSummary {
        kinds: a
            .kind_counts()
            .into_iter()
            .map(|(k, n)| KindLayers {
                kind: k.to_string(),
                layers: n,
            })
            .collect(),
        retention: a.retention,
        kv_bytes_per_token: model.kv_bytes_per_token(),
        windowed_kv_bytes_per_token: a.windowed_values_per_token() as f64 * model.kv_bytes,
        state_bytes_per_request: a.state_bytes(),
        params: model.params() as f64,
        active_params: model.matmul_params() as f64,
        mla,
        moe,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decode_side_batch() {
        let it = [
            (Role::Prefill, 9.0),
            (Role::Decode, 2.0),
            (Role::Decode, 3.0),
        ];
        assert_eq!(decode_side_batch(it.into_iter()), 2.5);
        assert_eq!(decode_side_batch([(Role::Colocated, 4.0)].into_iter()), 4.0);
        assert_eq!(decode_side_batch([(Role::Prefill, 4.0)].into_iter()), 1.0);
        let cat = disagg_model::Catalogue::builtin();
        let m = cat.model("deepseek-v3").unwrap();
        let s = of_run(m, [(Role::Decode, 3.4)].into_iter()).unwrap();
        assert_eq!(s.moe.unwrap().batch, 3);
        assert!(of_run(cat.model("llama3-8b").unwrap(), std::iter::empty()).is_none());
    }

    #[test]
    fn deepseek_v3_by_hand() {
        let cat = disagg_model::Catalogue::builtin();
        let m = cat.model("deepseek-v3").unwrap();
        let s = layers_summary(m, 3.4).unwrap();
        assert_eq!(
            s.kinds,
            vec![KindLayers {
                kind: "mla".into(),
                layers: 61
            }]
        );
        let mla = s.mla.unwrap();
        // 512 + 64 cached; 128 heads x (128 + 64) keys + 128 x 128 values = 40,960 per head set.
        assert_eq!(
            (mla.layers, mla.latent_values, mla.per_head_values),
            (61, 576, 40_960)
        );
        // Decode: 2 x 128 x (512 + 64) + 2 x 128 x 512 = 278,528; prefill 2 x 128 x 320 = 81,920.
        assert_eq!(
            (mla.decode_flops_per_key, mla.prefill_flops_per_key),
            (278_528, 81_920)
        );
        let moe = s.moe.unwrap();
        assert_eq!(
            (moe.layers, moe.experts, moe.top_k, moe.shared_experts),
            (58, 256, 8, 1)
        );
        assert_eq!(moe.batch, 3);
        // One token touches its 8 experts: 256 x (1 - (1 - 8/256)) = 8 (up to rounding).
        assert!((moe.experts_touched_b1 - 8.0).abs() < 1e-9);
        // Three tokens: 256 x (1 - (31/32)^3).
        let t3 = 256.0 * (1.0 - (31.0f64 / 32.0).powi(3));
        assert!((moe.experts_touched - t3).abs() < 1e-9);
        assert!(moe.weight_bytes_read > moe.weight_bytes_read_b1);
        assert_eq!(s.kv_bytes_per_token, 70_272.0);
        assert_eq!(s.state_bytes_per_request, 0.0);
        assert!(layers_summary(cat.model("llama3-70b").unwrap(), 1.0).is_none());
        // A dense layer-kind model has no moe block; a non-finite batch counts as one row.
        let q = layers_summary(cat.model("qwen3-32b").unwrap(), f64::NAN).unwrap();
        assert!(q.moe.is_none() && q.mla.is_none());
        let g = layers_summary(cat.model("gpt-oss-20b").unwrap(), f64::NAN).unwrap();
        assert_eq!(g.moe.unwrap().batch, 1);
    }
}
