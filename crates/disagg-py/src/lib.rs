//! `disagg._core`: the disagg engine as a Python extension module (PyO3, abi3).
//!
//! The Python package `disagg` (`python/disagg/__init__.py`) wraps these functions with
//! docstrings and optional pandas / Arrow conversions. Everything here calls the library crates
//! in-process: options are laid over a scenario exactly as `/api/run` and scenario files are
//! ([`disagg_sim::input::overlay`]), runs release the GIL, and sweeps run in parallel in Rust.
//! `compare`, `plan`, `trace_stats` and `catalogue` call the library the command line calls
//! ([`disagg_api`]) and return the documents its `--json` prints.
//!
//! Errors: bad input is `disagg.ConfigError` (a `ValueError`) with the CLI's or the API's one-line
//! message and a `field` attribute naming the option when one is at fault; a panic (a bug) is
//! caught and raised as `RuntimeError`, never unwound across the boundary.
//!
//! The modules, by concern (this file only declares them and registers the module):
//! * [`error`]: `ConfigError`, the library's messages as exceptions, panics as `RuntimeError`;
//! * [`convert`]: values between Python and JSON, keyword options, whole-number arguments;
//! * [`scenario`]: the catalogue and the scenario a call names, and its configuration;
//! * [`run`]: `run`, `simulate_rows`, `time_runs` and the `RunHandle` class;
//! * [`workload`]: the reference's `poisson_workload`;
//! * [`sweep`]: `sweep` and `jsonl`;
//! * [`commands`]: `handoff`, `compare`, `plan`, `catalogue`, `trace_stats`, `presets`, `options`;
//! * [`files`]: reading inputs and writing outputs;
//! * [`interrupt`]: Ctrl-C while the engine runs (the signal poll and engine threads);
//! * [`budget`]: the memory budget;
//! * [`reference`]: what `disagg.reference` needs beyond the rest.

mod budget;
mod commands;
mod convert;
mod error;
mod files;
mod interrupt;
mod reference;
mod run;
mod scenario;
mod sweep;
mod workload;

use pyo3::prelude::*;

use crate::error::ConfigError;
use crate::run::RunHandle;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SCHEMA_VERSION", disagg_sim::SCHEMA_VERSION)?;
    m.add_class::<RunHandle>()?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    m.add_function(wrap_pyfunction!(run::simulate_rows, m)?)?;
    m.add_function(wrap_pyfunction!(workload::poisson_workload, m)?)?;
    m.add_function(wrap_pyfunction!(commands::handoff, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::jsonl, m)?)?;
    m.add_function(wrap_pyfunction!(commands::compare, m)?)?;
    m.add_function(wrap_pyfunction!(commands::catalogue, m)?)?;
    m.add_function(wrap_pyfunction!(commands::trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(commands::plan, m)?)?;
    m.add_function(wrap_pyfunction!(commands::presets, m)?)?;
    m.add_function(wrap_pyfunction!(commands::options, m)?)?;
    m.add_function(wrap_pyfunction!(run::time_runs, m)?)?;
    m.add_function(wrap_pyfunction!(files::read_text, m)?)?;
    m.add_function(wrap_pyfunction!(files::write_text, m)?)?;
    m.add_function(wrap_pyfunction!(budget::_set_memory_budget, m)?)?;
    reference::register(m)?;
    Ok(())
}
