pub mod pymath;
pub mod pyrand;
