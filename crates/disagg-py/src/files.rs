//! Input and output files: reading inputs and writing outputs by the command line's rules.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use serde_json::Value;

use crate::convert::from_py;
use crate::error::{config_error, guard, missing_file};

/// `read_text(path, field)`: the text of input file `path` (the value of option `field`), read as
/// the command line reads every input: a regular file only (never a FIFO or a device), at most
/// the input cap (1 GiB), UTF-8 text. A path that does not exist is a `MissingFileError`.
#[pyfunction]
pub(crate) fn read_text(py: Python<'_>, path: &Bound<'_, PyAny>, field: &str) -> PyResult<String> {
    guard(|| {
        let path = path_of(path, field)?;
        let read = py.detach(|| {
            disagg_trace::input::read_input(&path, disagg_trace::input::InputKind::Data)
        });
        read.map_err(|e| match e.problem {
            disagg_trace::input::InputProblem::Missing => {
                missing_file(py, field, &path.display().to_string())
            }
            _ => config_error(py, &format!("{field}: {e}"), Some(field)),
        })
    })
}

/// `write_text(path, text, field)`: writes `text` to output `path` (the value of option `field`)
/// whole or not at all, by the command line's rules ([`disagg_api::output`]), but only to a
/// regular file ([`output_path`]).
#[pyfunction]
pub(crate) fn write_text(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    text: &str,
    field: &str,
) -> PyResult<()> {
    guard(|| {
        let path = output_path(py, path, field)?;
        py.detach(|| disagg_api::output::write_file_atomic(field, &path, text.as_bytes()))
            .map_err(|e| config_error(py, &e.0, Some(field)))
    })
}

/// A str or os.PathLike path.
fn path_of(path: &Bound<'_, PyAny>, field: &str) -> PyResult<std::path::PathBuf> {
    match from_py(path, field)? {
        Value::String(s) => Ok(std::path::PathBuf::from(s)),
        _ => Err(PyTypeError::new_err(format!(
            "{field}: expected a str or os.PathLike"
        ))),
    }
}

/// An output path from Python, checked by the command line's rules
/// ([`disagg_api::output::resolve`]: not a directory, in a directory that exists), and refused
/// when it is a FIFO or a device: opening a FIFO waits for a reader (the call would hang) and a
/// device is no file to keep. `-` is a file of that name, not standard output.
pub(crate) fn output_path(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    field: &str,
) -> PyResult<std::path::PathBuf> {
    let mut path = path_of(path, field)?;
    if path.as_os_str() == "-" {
        path = std::path::Path::new(".").join("-");
    }
    match disagg_api::output::resolve(field, &path) {
        Ok(disagg_api::output::Target::Through(_)) => Err(config_error(
            py,
            &format!(
                "{field}: '{}' is a FIFO or a device; give the path of a regular file",
                path.display()
            ),
            Some(field),
        )),
        Ok(_) => Ok(path),
        Err(e) => Err(config_error(py, &e.0, Some(field))),
    }
}
