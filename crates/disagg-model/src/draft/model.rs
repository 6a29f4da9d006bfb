//! The draft model of a speculative target: its shape and the bytes it keeps resident. It names
//! only the catalogue; its cost model is in [`crate::draft`].

use crate::catalogue::{Catalogue, ModelSpec};
use crate::error::Error;

/// The draft model of a speculative target (`docs/levers.md#speculative`).
#[derive(Clone, Debug, PartialEq)]
pub struct Draft {
    /// `mtp` or the catalogue key of the draft model.
    pub key: String,
    /// The draft's shape. MTP: the target with `n_layers = 1` (its `prefill_lm_head` inherited);
    /// a named draft: that model with the target's `weight_bytes` and `kv_bytes`, keeping its own
    /// `prefill_lm_head`.
    pub model: ModelSpec,
    /// Bytes the draft adds to the instance's memory. MTP: `params_per_layer * weight_bytes` (it
    /// shares the target's embedding and LM head); a named draft: its `weight_bytes_total`.
    pub resident_bytes: f64,
}

impl Draft {
    /// The draft `name` (`mtp` or a catalogue model key) of `target`. Errors: an unknown name
    /// (listing `mtp` and the catalogue's model keys), and a named draft whose vocabulary differs
    /// from the target's.
    pub fn new(target: &ModelSpec, name: &str, catalogue: &Catalogue) -> Result<Draft, Error> {
        if name == "mtp" {
            let model = ModelSpec {
                key: format!("{}-mtp", target.key),
                name: format!("{} MTP head", target.name),
                n_layers: 1,
                ..target.clone()
            };
            let resident_bytes = target.resident_params_per_layer() as f64 * target.weight_bytes;
            return Ok(Draft {
                key: name.to_string(),
                model,
                resident_bytes,
            });
        }
        let Some(preset) = catalogue.models.iter().find(|m| m.key == name) else {
            let valid =
                std::iter::once("mtp").chain(catalogue.models.iter().map(|m| m.key.as_str()));
            return Err(Error::unknown("draft model", name, valid));
        };
        if preset.vocab != target.vocab {
            return Err(Error::invalid(
                "--speculative",
                format!(
                    "draft {name} has a {}-token vocabulary, the target {}: speculative decoding \
                     needs the same one",
                    preset.vocab, target.vocab
                ),
            ));
        }
        let model = ModelSpec {
            weight_bytes: target.weight_bytes,
            kv_bytes: target.kv_bytes,
            ..preset.clone()
        };
        let resident_bytes = model.weight_bytes_total();
        Ok(Draft {
            key: name.to_string(),
            model,
            resident_bytes,
        })
    }

    /// KV bytes per token the draft stores.
    pub fn kv_bytes_per_token(&self) -> f64 {
        self.model.kv_bytes_per_token()
    }
}
