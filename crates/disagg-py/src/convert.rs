//! Values between Python and JSON: [`to_py`], [`from_py`], keyword options as a JSON object, and
//! the checks of whole-number arguments.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

use crate::error::config_error;

/// A JSON value as a Python object: objects are dicts (key order kept), arrays lists, whole
/// numbers ints, other numbers floats.
pub(crate) fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// How deep an option value may nest (dicts, lists, tuples and `os.PathLike` in one another).
/// Scenario keys are a few levels deep at most; the limit keeps the conversion's recursion far
/// from the end of the stack, whichever thread runs it.
const MAX_DEPTH: usize = 64;

/// A Python value as JSON: None, bool, int, float (finite), str, os.PathLike, list/tuple, dict
/// with str keys, and NumPy scalars. `what` names the value in messages. A container that holds
/// itself, or values nested more than [`MAX_DEPTH`] deep, are a `ConfigError`.
pub(crate) fn from_py(o: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    from_py_in(o, what, &mut Vec::new())
}

/// [`from_py`] inside the containers `open` (their addresses, outermost first).
fn from_py_in(o: &Bound<'_, PyAny>, what: &str, open: &mut Vec<usize>) -> PyResult<Value> {
    let py = o.py();
    if o.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = o.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if o.is_instance_of::<PyInt>() {
        if let Ok(i) = o.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = o.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(config_error(
            py,
            &format!("{what}: {o} is too large"),
            Some(what),
        ));
    }
    if o.is_instance_of::<PyFloat>() {
        let x: f64 = o.extract()?;
        return serde_json::Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| {
                config_error(
                    py,
                    &format!("{what}: expected a finite number, got {x}"),
                    Some(what),
                )
            });
    }
    if let Ok(s) = o.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    let container = o.is_instance_of::<PyDict>()
        || o.is_instance_of::<PyList>()
        || o.is_instance_of::<PyTuple>()
        || o.hasattr("__fspath__")?;
    if container {
        let at = o.as_ptr() as usize;
        if open.contains(&at) {
            return Err(config_error(
                py,
                &format!(
                    "{what}: the value contains itself (a {} inside itself); give plain values",
                    o.get_type().name()?
                ),
                Some(what),
            ));
        }
        if open.len() >= MAX_DEPTH {
            return Err(config_error(
                py,
                &format!("{what}: the value is nested more than {MAX_DEPTH} levels deep"),
                Some(what),
            ));
        }
        open.push(at);
        let v = container_from_py(o, what, open);
        open.pop();
        return v;
    }
    // NumPy scalars and other numbers: an integer if it says it is one, else a float.
    if o.hasattr("__index__")? {
        if let Ok(i) = o.extract::<i64>() {
            return Ok(Value::from(i));
        }
    }
    if let Ok(x) = o.extract::<f64>() {
        return from_py_in(&PyFloat::new(py, x).into_any(), what, open);
    }
    Err(PyTypeError::new_err(format!(
        "{what}: cannot use a {} as an option value",
        o.get_type().name()?
    )))
}

/// A dict, list, tuple or `os.PathLike` `o` (already entered in `open`) as JSON.
fn container_from_py(o: &Bound<'_, PyAny>, what: &str, open: &mut Vec<usize>) -> PyResult<Value> {
    if let Ok(d) = o.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, v) in d.iter() {
            let key: String = k.extract().map_err(|_| {
                PyTypeError::new_err(format!("{what}: keys must be strings, got {k:?}"))
            })?;
            let inner = format!("{what}.{key}");
            m.insert(key, from_py_in(&v, &inner, open)?);
        }
        return Ok(Value::Object(m));
    }
    if let Ok(l) = o.cast::<PyList>() {
        return l
            .iter()
            .map(|x| from_py_in(&x, what, open))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = o.cast::<PyTuple>() {
        return t
            .iter()
            .map(|x| from_py_in(&x, what, open))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    let p = o.call_method0("__fspath__")?;
    from_py_in(&p, what, open)
}

pub(crate) fn options_map(options: Option<&Bound<'_, PyDict>>) -> PyResult<Map<String, Value>> {
    let mut m = Map::new();
    if let Some(d) = options {
        for (k, v) in d.iter() {
            let key: String = k.extract()?;
            let val = from_py(&v, &key)?;
            m.insert(key, val);
        }
    }
    Ok(m)
}

/// A whole number (an int or an object with `__index__`, not a bool or a float) from `lo` to
/// `hi`, else `Err(())`.
pub(crate) fn whole_in(o: &Bound<'_, PyAny>, lo: i64, hi: i64) -> Result<i64, ()> {
    if o.is_instance_of::<PyBool>()
        || o.is_instance_of::<PyFloat>()
        || o.is_instance_of::<PyString>()
    {
        return Err(());
    }
    match o.extract::<i64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(()),
    }
}

/// A value as messages show it: its `repr`.
pub(crate) fn shown(o: &Bound<'_, PyAny>) -> String {
    o.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into())
}
