//! disagg-sim: the exact discrete-event simulator of disaggregated serving.

pub use disagg_model::pymath;
pub mod pyrand;
