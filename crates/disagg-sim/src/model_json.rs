//! The JSON of a model described by layer kinds (issue 16), as `disagg list models --json` and
//! the page's `/api/catalogue` both give it.

use disagg_model::{Arch, Attention, Mlp, ModelSpec};
use serde_json::{json, Map, Value};

/// A model as `disagg list models --json` and `/api/catalogue` give it: its spec plus the derived
/// `head_dim`, `params`, `kv_bytes_per_token` and `weight_bytes_total`, and for a model with
/// layer kinds [`layer_kinds_json`]'s keys.
pub fn model_json(m: &ModelSpec) -> Value {
    let mut v = serde_json::to_value(m).expect("json");
    let o = v.as_object_mut().expect("object");
    o.insert("head_dim".into(), json!(m.hd()));
    o.insert("params".into(), json!(m.params() as f64));
    o.insert("kv_bytes_per_token".into(), json!(m.kv_bytes_per_token()));
    o.insert("weight_bytes_total".into(), json!(m.weight_bytes_total()));
    if let Some(a) = &m.arch {
        o.extend(layer_kinds_json(m, a));
    }
    v
}

/// What the page's "why this model's KV is different" line reads, for a model with layer kinds:
/// - `why_kv`: the model's one line ([`Arch::why_kv`]);
/// - `kv_kinds`: layers per attention kind, in layer order (`{"mla": 61}`,
///   `{"sliding": 18, "full": 18}`);
/// - `windowed_kv_bytes_per_token`: KV bytes per token of the sliding-window and chunked layers
///   (`kv_bytes_per_token` is the unbounded layers' rate);
/// - `kv_windows`: those layers grouped by kind and bound (`{"kind", "layers", "tokens",
///   "kv_bytes_per_token"}`): each group keeps at most `tokens` tokens;
/// - `state_bytes_per_request`: the linear-attention state a sequence keeps whatever its length;
/// - `moe` (MoE models only): the first MoE layer's `experts`, `top_k` and `shared_experts`;
/// - `source`: where the configuration comes from ([`disagg_model::model_source`]).
pub fn layer_kinds_json(m: &ModelSpec, a: &Arch) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("why_kv".into(), json!(a.why_kv));
    let kinds: Map<String, Value> = a
        .kind_counts()
        .into_iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    o.insert("kv_kinds".into(), Value::Object(kinds));
    o.insert(
        "windowed_kv_bytes_per_token".into(),
        json!(a.windowed_values_per_token() as f64 * m.kv_bytes),
    );
    o.insert("kv_windows".into(), kv_windows(a, m.kv_bytes));
    o.insert("state_bytes_per_request".into(), json!(a.state_bytes()));
    let moe = a.runs().find_map(|r| match r.mlp {
        Mlp::Moe {
            experts,
            top_k,
            shared_experts,
            ..
        } => Some(json!({"experts": experts, "top_k": top_k, "shared_experts": shared_experts})),
        Mlp::Dense { .. } => None,
    });
    if let Some(moe) = moe {
        o.insert("moe".into(), moe);
    }
    o.insert("source".into(), json!(disagg_model::model_source(&m.key)));
    o
}

/// The sliding-window and chunked layers of `a`, grouped by kind and bound in layer order:
/// `[{"kind": "sliding", "layers": 18, "tokens": 128, "kv_bytes_per_token": 36864}]` for values
/// of `kv_bytes` bytes.
pub fn kv_windows(a: &Arch, kv_bytes: f64) -> Value {
    let mut out: Vec<(&'static str, u64, u64, i128)> = Vec::new();
    for (n, r) in a.groups() {
        let bound = match r.attention {
            Attention::Sliding { window, .. } => window,
            Attention::Chunked { chunk, .. } => chunk,
            _ => continue,
        };
        let kind = r.attention.kind();
        let values = n as i128 * r.attention.values_per_token();
        match out.iter_mut().find(|w| w.0 == kind && w.2 == bound) {
            Some(w) => {
                w.1 += n;
                w.3 += values;
            }
            None => out.push((kind, n, bound, values)),
        }
    }
    Value::Array(
        out.into_iter()
            .map(|(kind, layers, tokens, values)| {
                json!({
                    "kind": kind,
                    "layers": layers,
                    "tokens": tokens,
                    "kv_bytes_per_token": values as f64 * kv_bytes,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use disagg_model::Catalogue;
    use disagg_model::{LayerRun, Retention};

    fn run(count: u64, attention: Attention) -> LayerRun {
        LayerRun {
            count,
            attention,
            mlp: Mlp::Dense { d_ff: 8 },
        }
    }
    fn sliding(window: u64) -> Attention {
        Attention::Sliding {
            kv_heads: 2,
            head_dim: 4,
            window,
        }
    }

    /// Windows group by kind *and* bound: two sliding windows stay apart, a chunk of the same
    /// size as a window stays apart, and the tail's layers join the cycle's group.
    #[test]
    fn kv_windows_groups_by_kind_and_bound() {
        let a = Arch {
            cycle: vec![
                run(1, sliding(16)),
                run(1, sliding(32)),
                run(
                    1,
                    Attention::Chunked {
                        kv_heads: 2,
                        head_dim: 4,
                        chunk: 16,
                    },
                ),
                run(
                    1,
                    Attention::Full {
                        kv_heads: 2,
                        head_dim: 4,
                    },
                ),
            ],
            cycles: 2,
            tail: vec![run(1, sliding(16))],
            retention: Retention::Window,
            tied_embeddings: false,
            why_kv: String::new(),
        };
        // 2 KV heads x 4 x 2 (K, V) = 16 values a layer token, 2 bytes each = 32 bytes:
        // sliding 16: 2 cycle layers + 1 tail = 3 -> 96; sliding 32: 2 -> 64; chunked 16: 2 -> 64.
        assert_eq!(
            kv_windows(&a, 2.0),
            json!([
                {"kind": "sliding", "layers": 3, "tokens": 16, "kv_bytes_per_token": 96.0},
                {"kind": "sliding", "layers": 2, "tokens": 32, "kv_bytes_per_token": 64.0},
                {"kind": "chunked", "layers": 2, "tokens": 16, "kv_bytes_per_token": 64.0},
            ])
        );
    }

    /// A model with layer kinds but no recorded source (a custom one) says `"source": null`; a
    /// dense one has no `moe`.
    #[test]
    fn layer_kinds_of_a_custom_model() {
        let cat = Catalogue::builtin();
        let mut m = cat.model("gemma3-27b").unwrap().clone();
        m.key = "my-gemma".into();
        m.kv_bytes = 1.0;
        let o = layer_kinds_json(&m, m.arch.as_deref().unwrap());
        assert_eq!(o["source"], Value::Null);
        assert!(!o.contains_key("moe"));
        // 52 sliding layers of 16 x 128 x 2 = 4,096 values, 1 byte each: 212,992.
        assert_eq!(o["windowed_kv_bytes_per_token"], json!(212992.0));
        let keys: Vec<&str> = o.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "why_kv",
                "kv_kinds",
                "windowed_kv_bytes_per_token",
                "kv_windows",
                "state_bytes_per_request",
                "source"
            ]
        );
    }
}
