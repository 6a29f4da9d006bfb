//! The parallel layout an instance asks for: its degrees and the checks they pass. It names only
//! the catalogue; the cost of a step on it is in [`crate::cost`] and [`crate::parallel`].

use crate::catalogue::{Catalogue, Device, Link, ModelSpec};
use crate::error::Error;

/// A parallel layout of an instance (`docs/cost-model.md#parallelism`): `tp` × `pp` GPUs, `ep` = 1 or `tp`.
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
    /// `Parallel.check(model, n, "<role> pool")` (`docs/cost-model.md#parallelism`), the eight checks in order.
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
