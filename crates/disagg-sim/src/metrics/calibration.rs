//! The `calibration` block: the pools whose device was fitted to measurements.

use serde::Serialize;

use crate::scenario::SimConfig;

/// A pool whose device was fitted to measured step times (`disagg calibrate`): the pool's role,
/// the device key, and the device's provenance fields (flattened).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CalibrationSummary {
    /// `prefill`, `decode` or `colocated`.
    pub pool: String,
    /// The device's catalogue key (`h100-fit`).
    pub device: String,
    /// The provenance: measurements, fit, groups, MAPEs, tool.
    #[serde(flatten)]
    pub calibration: disagg_model::Calibration,
}

/// The pools of a configuration whose device carries a calibration, in pool order (the pools
/// of its mode: prefill and decode, or colocated) with at least one instance; `None` when there
/// is none.
pub fn calibration_of(cfg: &SimConfig) -> Option<Vec<CalibrationSummary>> {
    let out: Vec<CalibrationSummary> = cfg
        .pools
        .iter()
        .filter(|p| p.instances > 0)
        .filter_map(|p| {
            p.device.calibration.as_ref().map(|c| CalibrationSummary {
                pool: p.role.as_str().to_string(),
                device: p.device.key.clone(),
                calibration: c.clone(),
            })
        })
        .collect();
    (!out.is_empty()).then_some(out)
}
