//! The catalogue: model shapes, accelerators, links and KV compression formats, exactly as the
//! reference (`hardware.py` of Disaggregated_Inference_Sim, `docs/cost-model.md#catalogue`) defines them.
//!
//! Unit constants are multiplied at run time (`value * GB`), never written as literals, because
//! `2.039 * 1e12` is not the literal `2.039e12` (`docs/cost-model.md` N3).
//!
//! One room per kind of entry: `model.rs` (a model's shape, [`ModelSpec`], with its
//! mixture-of-experts shape [`Moe`]), `device.rs` ([`Device`], [`Calibration`]), `link.rs`
//! ([`Link`]), `compression.rs` ([`KvCompression`], [`CompressAt`], [`KvTransit`]) and
//! `builtin.rs` (the presets: [`Catalogue::builtin`], [`model_source`]). This file holds the
//! catalogue itself, its look-ups and the unit constants.

mod builtin;
mod compression;
mod device;
mod link;
mod model;

pub use builtin::model_source;
pub use compression::{CompressAt, KvCompression, KvTransit};
pub use device::{Calibration, Device};
pub use link::Link;
pub use model::{LmHead, ModelSpec, Moe};

use serde::Serialize;

use crate::error::Error;

/// 1e9: gigabytes (or giga-anything) as the reference spells it.
pub const GB: f64 = 1e9;
/// 1e12: terabytes / tera-FLOPs.
pub const TB: f64 = 1e12;

/// The catalogue: every preset, in the reference's order, plus anything the user added.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Catalogue {
    /// Model shapes.
    pub models: Vec<ModelSpec>,
    /// Accelerators.
    pub devices: Vec<Device>,
    /// KV links.
    pub links: Vec<Link>,
    /// KV compression formats.
    pub compression: Vec<KvCompression>,
}

impl Catalogue {
    /// The model with key `key`.
    pub fn model(&self, key: &str) -> Result<&ModelSpec, Error> {
        self.models
            .iter()
            .find(|m| m.key == key)
            .ok_or_else(|| Error::unknown("model", key, self.models.iter().map(|m| m.key.as_str())))
    }
    /// The device with key `key`.
    pub fn device(&self, key: &str) -> Result<&Device, Error> {
        self.devices.iter().find(|m| m.key == key).ok_or_else(|| {
            Error::unknown("device", key, self.devices.iter().map(|m| m.key.as_str()))
        })
    }
    /// The link with key `key`.
    pub fn link(&self, key: &str) -> Result<&Link, Error> {
        self.links
            .iter()
            .find(|m| m.key == key)
            .ok_or_else(|| Error::unknown("link", key, self.links.iter().map(|m| m.key.as_str())))
    }
    /// The compression format with key `key`.
    pub fn compression(&self, key: &str) -> Result<&KvCompression, Error> {
        self.compression
            .iter()
            .find(|m| m.key == key)
            .ok_or_else(|| {
                Error::unknown(
                    "compression",
                    key,
                    self.compression.iter().map(|m| m.key.as_str()),
                )
            })
    }

    /// Adds or replaces a model (validated).
    pub fn put_model(&mut self, m: ModelSpec) -> Result<(), Error> {
        m.validate()?;
        put(&mut self.models, m, |x| &x.key);
        Ok(())
    }
    /// Adds or replaces a device (validated).
    pub fn put_device(&mut self, d: Device) -> Result<(), Error> {
        d.validate()?;
        put(&mut self.devices, d, |x| &x.key);
        Ok(())
    }
    /// Adds or replaces a link (validated).
    pub fn put_link(&mut self, l: Link) -> Result<(), Error> {
        l.validate()?;
        put(&mut self.links, l, |x| &x.key);
        Ok(())
    }
}

fn put<T>(v: &mut Vec<T>, item: T, key: impl Fn(&T) -> &String) {
    match v.iter().position(|x| key(x) == key(&item)) {
        Some(i) => v[i] = item,
        None => v.push(item),
    }
}
