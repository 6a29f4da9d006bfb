//! A KV link: bandwidth, latency, channels and energy per bit.

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A KV link (`Link`, `docs/cost-model.md#catalogue`): per channel and per direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Catalogue key (`eth-25g`).
    pub key: String,
    /// Display name (`25 GbE`).
    pub name: String,
    /// Bytes per second per channel, one direction.
    pub bandwidth_bps: f64,
    /// Fixed latency per transfer, seconds.
    pub latency_s: f64,
    /// Concurrent transfers (independent FIFO servers).
    pub channels: u32,
    /// End-to-end energy per bit, pJ.
    pub pj_per_bit: f64,
}

impl Link {
    /// `nbytes / bandwidth`: the part of a transfer that scales with bytes.
    pub fn wire_time(&self, nbytes: f64) -> f64 {
        nbytes / self.bandwidth_bps
    }

    /// `latency + nbytes / bandwidth` (the one transfer-time formula; [`crate::transfer`] uses it).
    pub fn transfer_time(&self, nbytes: f64) -> f64 {
        self.latency_s + self.wire_time(nbytes)
    }

    /// A host-link swap of `blocks` KV blocks holding `nbytes` (`docs/levers.md#paged-kv`): one
    /// latency per block, `blocks * latency + nbytes / bandwidth`.
    pub fn blocks_transfer_time(&self, blocks: u64, nbytes: f64) -> f64 {
        blocks as f64 * self.latency_s + self.wire_time(nbytes)
    }

    /// Link energy of moving `nbytes`: `((nbytes * 8) * pj) * 1e-12`.
    pub fn energy_j(&self, nbytes: f64) -> f64 {
        ((nbytes * 8.0) * self.pj_per_bit) * 1e-12
    }

    /// Validates every field.
    pub fn validate(&self) -> Result<(), Error> {
        let k = &self.key;
        crate::error::positive(&format!("link '{k}' bandwidth"), self.bandwidth_bps)?;
        crate::error::non_negative(&format!("link '{k}' latency"), self.latency_s)?;
        crate::error::non_negative(&format!("link '{k}' pj_per_bit"), self.pj_per_bit)?;
        if self.channels == 0 || self.channels > 4096 {
            return Err(Error::invalid(
                format!("link '{k}' channels"),
                format!("must be between 1 and 4096, got {}", self.channels),
            ));
        }
        if self.latency_s > 3600.0 {
            return Err(Error::invalid(
                format!("link '{k}' latency"),
                format!("{} s is absurd", self.latency_s),
            ));
        }
        Ok(())
    }
}
