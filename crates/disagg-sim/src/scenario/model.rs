//! Build steps of the model: the catalogue entry with its custom overrides, a causal
//! encoder-decoder's options, and what a layer-kind model cannot run with.

use disagg_model::custom::{CustomModel, Overlay};
use disagg_model::{Catalogue, Error, ModelSpec, SendMode};

use super::{rename, FirstToken, Mode, Scenario};

impl Scenario {
    /// Step 1: the `model` preset with the custom-shape keys and `prefill_lm_head` applied.
    pub(super) fn resolve_model(&self, cat: &Catalogue) -> Result<ModelSpec, Error> {
        let mut model = self
            .custom_model()
            .overlay(cat)
            .map_err(|e| rename(e, "--model"))?;
        if let Some(h) = self.prefill_lm_head {
            model.prefill_lm_head = h;
        }
        if let Some(r) = self.kv_retention {
            match model.arch.as_deref_mut() {
                Some(a) if a.has_windows() => a.retention = r,
                _ => {
                    let have: Vec<&str> = cat
                        .models
                        .iter()
                        .filter(|m| m.arch.as_deref().is_some_and(|a| a.has_windows()))
                        .map(|m| m.key.as_str())
                        .collect();
                    return Err(Error::invalid(
                        "--kv-retention",
                        format!(
                            "{} has no sliding-window or chunked layers ({} have)",
                            model.key,
                            have.join(", ")
                        ),
                    ));
                }
            }
        }
        self.apply_ced(&mut model)?;
        Ok(model)
    }

    /// The CED overrides of `docs/cost-model.md#catalogue`, in order after the LM head: E, W, where the
    /// replay runs (each only if given; W and the placement are ignored unless E > 0 after the
    /// override; E = 0 turns CED off). Errors name the flag.
    pub(super) fn apply_ced(&self, model: &mut ModelSpec) -> Result<(), Error> {
        if self.ced_encoder_layers.is_none()
            && self.ced_replay.is_none()
            && self.ced_replay_on.is_none()
        {
            return Ok(());
        }
        let mut c = model.ced.unwrap_or(disagg_model::Ced::new(0));
        if let Some(e) = self.ced_encoder_layers {
            c.encoder_layers = e;
        }
        if let Some(w) = self.ced_replay {
            c.replay = w;
        }
        if let Some(on) = self.ced_replay_on {
            c.replay_on = on;
        }
        model.ced = (c.encoder_layers > 0).then_some(c);
        let Some(c) = model.ced else {
            return Ok(());
        };
        const E_FLAG: &str = "--ced-encoder-layers";
        if model.fft.is_some() || model.moe.is_some() {
            return Err(Error::invalid(
                E_FLAG,
                format!(
                    "CED is modelled for dense attention models only; {} is not one",
                    model.name
                ),
            ));
        }
        if c.encoder_layers >= model.n_layers {
            return Err(Error::invalid(
                E_FLAG,
                format!(
                    "{} must be below the {} layers of {} (the decoder needs at least one)",
                    c.encoder_layers, model.n_layers, model.name
                ),
            ));
        }
        // W >= 1 is the range of --ced-replay (step 0).
        Ok(())
    }

    /// Step 7b: what a CED model (`docs/levers.md#ced`) runs with. The replay on decode needs
    /// disaggregated mode and the plain decode loop (not `--fast`), and keeps the reference's
    /// hand-off: whole caches after the encoder step (`--send whole`), the first token from the
    /// decode instance's replay step (`--first-token prefill`, the convention that counts it). CED
    /// is not modelled with the scheduling levers (speculative decoding included); formats other
    /// than BF16 are refused before, by the lever checks, and parallel layouts after, by each
    /// pool's layout check (`docs/levers.md#scheduled-instances`, `docs/cost-model.md#parallelism`).
    pub(super) fn check_ced(&self, model: &ModelSpec, levers: bool) -> Result<(), Error> {
        let Some(c) = model.ced else {
            return Ok(());
        };
        if levers {
            return Err(Error::invalid(
                "--ced-encoder-layers",
                format!(
                    "{} is a causal encoder-decoder (CED): not modelled with the scheduling \
                     levers or speculative decoding",
                    model.name
                ),
            ));
        }
        if c.replay_on != disagg_model::ReplayOn::Decode {
            return Ok(());
        }
        const ON: &str = "--ced-replay-on";
        if self.mode != Mode::Disagg {
            return Err(Error::invalid(
                ON,
                "decode replays on the decode instance after the hand-off: needs --mode disagg",
            ));
        }
        if self.fast {
            return Err(Error::invalid(
                ON,
                "decode needs the plain decode loop: not with --fast",
            ));
        }
        if self.send != SendMode::Whole {
            return Err(Error::invalid(
                ON,
                "decode hands off after the encoder step: not modelled with --send layerwise",
            ));
        }
        if self.first_token != FirstToken::Prefill {
            return Err(Error::invalid(
                ON,
                "decode emits the first token at the end of the decode instance's replay step \
                 already: not with --first-token decode",
            ));
        }
        Ok(())
    }

    /// What a model described by layer kinds (issue 16) cannot run with, each refused naming the
    /// flag: parallel layouts and speculative decoding (their stage and draft arithmetic assume
    /// layers of one shape); with windowed layers or a linear state, the prefix cache (a cached
    /// segment would have to hold the windows of every prefix); with layers of different sizes,
    /// layer-wise sending in the simulator (its link sends equal slices; `disagg handoff
    /// --send layerwise` prices unequal ones).
    pub(super) fn check_layer_kinds(&self, model: &ModelSpec) -> Result<(), Error> {
        if model.arch.is_none() {
            return Ok(());
        }
        let why = |flag: &str, what: &str| {
            Err(Error::invalid(
                flag,
                format!(
                    "{what}: not modelled for {}, which is described by layer kinds",
                    model.key
                ),
            ))
        };
        if self.any_layout() {
            return why(
                "--tp/--pp",
                "parallel layouts split layers of one shape over stages (use \
                 --devices-per-instance)",
            );
        }
        if self.speculative.is_some() {
            return why(
                "--speculative",
                "the draft's capacity and verify-pass arithmetic",
            );
        }
        if model.kv_is_bounded() && (self.prefix_caching || self.prefix_handoff) {
            return why(
                "--prefix-caching",
                "a prefix cache of sliding-window, chunked or linear-attention layers",
            );
        }
        if self.send == SendMode::Layerwise {
            // At one token and beyond every window and chunk (at most 2^24 tokens).
            if [1, (1 << 24) + 1]
                .iter()
                .any(|&p| model.layer_fractions(p).is_some())
            {
                return why(
                    "--send",
                    "layer-wise sending of layers whose slices differ in the simulator (`disagg \
                     handoff --send layerwise` prices it)",
                );
            }
        }
        Ok(())
    }

    /// The custom model shape the scenario's keys describe on top of `model`.
    pub fn custom_model(&self) -> CustomModel {
        CustomModel {
            base: Some(self.model.clone()),
            layers: self.layers,
            d_model: self.d_model,
            heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            d_ff: self.d_ff,
            vocab: self.vocab,
            weight_bytes: self.weight_bytes,
            kv_bytes: self.kv_bytes,
            ..Default::default()
        }
    }
}
