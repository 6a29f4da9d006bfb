//! Errors: the `ConfigError` exception, the conversions of the library's messages to it (with
//! the `field` they name), and [`guard`], which turns a panic into a `RuntimeError`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use disagg_sim::input::{api_spelling, ApiError};
use disagg_sim::Scenario;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    disagg,
    ConfigError,
    PyValueError,
    "Bad input: an unknown name, a value out of range, a configuration that cannot run. The \
     message is one line naming the option; `field` is the option's name when one is at fault."
);

pub(crate) fn config_error(py: Python<'_>, message: &str, field: Option<&str>) -> PyErr {
    let e = ConfigError::new_err(message.to_string());
    let _ = e.value(py).setattr("field", field);
    e
}

pub(crate) fn api_error(py: Python<'_>, e: &ApiError) -> PyErr {
    if let Some(err) = unknown_option(py, e) {
        return err;
    }
    config_error(py, &e.message, e.field.as_deref())
}

/// Serde's "unknown field `x`, expected one of `a`, `b`, ..." as `disagg.UnknownOptionError` (a
/// `ConfigError` and a `TypeError`) with the close matches among the names it lists.
fn unknown_option(py: Python<'_>, e: &ApiError) -> Option<PyErr> {
    unknown_field(py, &e.message)
}

/// [`unknown_option`] of a message that holds serde's "unknown field `x`, expected ..." (after a
/// prefix such as a sweep's `sweep: base: `).
pub(crate) fn unknown_field(py: Python<'_>, message: &str) -> Option<PyErr> {
    let at = message.find("unknown field `")?;
    let rest = &message[at + "unknown field `".len()..];
    let (name, tail) = rest.split_once('`')?;
    let mut valid: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
    valid.extend(["preset", "catalogue"]);
    errors_make(py, "unknown_option", (name, valid)).ok()
}

/// The exception `disagg._errors.<make>(*args)` builds (an import failure is raised instead).
pub(crate) fn errors_make<'py, A>(py: Python<'py>, make: &str, args: A) -> PyResult<PyErr>
where
    A: pyo3::call::PyCallArgs<'py>,
{
    let exc = py.import("disagg._errors")?.call_method1(make, args)?;
    Ok(PyErr::from_value(exc))
}

/// `disagg.MissingFileError` (a `FileNotFoundError` and a `ConfigError`) for option `field`
/// naming `path`, which does not exist.
pub(crate) fn missing_file(py: Python<'_>, field: &str, path: &str) -> PyErr {
    errors_make(py, "missing_file", (field, path)).unwrap_or_else(|e| e)
}

/// A missing input file of a scenario (`trace_file`) as [`missing_file`].
pub(crate) fn check_files(py: Python<'_>, sc: &Scenario) -> PyResult<()> {
    match &sc.trace_file {
        Some(p) if !std::path::Path::new(p).exists() => Err(missing_file(py, "trace_file", p)),
        _ => Ok(()),
    }
}

/// A CLI or engine message (`--rate: ...`): the option it names becomes `field`.
pub(crate) fn cli_error(py: Python<'_>, message: &str) -> PyErr {
    let (_, field) = api_spelling(message);
    config_error(py, message, field.as_deref())
}

/// Runs `f`, turning a panic into a `RuntimeError` (a bug in disagg, never the caller's fault).
/// Every entry point runs its body in it; a panic inside `py.detach` unwinds to here too (the GIL
/// is taken back on the way), so code that releases the GIL needs no guard of its own.
pub(crate) fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in disagg (please report it): {what}"
            )))
        }
    }
}
