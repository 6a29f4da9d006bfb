//! The memory budget every simulation is checked against.

use std::sync::atomic::{AtomicU64, Ordering};

use disagg_sim::budget;
use pyo3::prelude::*;

use crate::error::config_error;

/// 0: the machine's budget ([`budget::machine_limit_bytes`]); else the budget set by
/// `_set_memory_budget` (the tests').
static MEMORY_BUDGET: AtomicU64 = AtomicU64::new(0);

/// The budget a simulation's memory is checked against, bytes (an error: a bad
/// `DISAGG_MEMORY_BUDGET_BYTES`).
pub(crate) fn memory_limit() -> Result<u64, String> {
    match MEMORY_BUDGET.load(Ordering::Relaxed) {
        0 => budget::machine_limit_bytes(),
        n => Ok(n),
    }
}

/// `need` bytes fit in the budget, else a `ConfigError` for `field` saying what (`what`) needs
/// them.
pub(crate) fn check_budget(py: Python<'_>, need: u64, field: &str, what: &str) -> PyResult<()> {
    let limit = memory_limit().map_err(|e| config_error(py, &e, Some(field)))?;
    budget::check(need, limit)
        .map_err(|e| config_error(py, &format!("{field}: {what} {e}"), Some(field)))
}

/// `_set_memory_budget(bytes)`: sets the memory budget every simulation is checked against
/// (None: what the machine has available, the default). For tests.
#[pyfunction]
#[pyo3(signature = (bytes))]
pub(crate) fn _set_memory_budget(bytes: Option<u64>) {
    MEMORY_BUDGET.store(bytes.unwrap_or(0), Ordering::Relaxed);
}
