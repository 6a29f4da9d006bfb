//! Sweeps: `sweep` (the rows `disagg sweep --jsonl` writes, run in parallel in Rust), `jsonl`,
//! and the sweep's own arguments and messages.

use disagg_sim::input::{api_spelling, overlay};
use disagg_sim::Scenario;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde_json::{Map, Value};

use crate::budget::memory_limit;
use crate::convert::{from_py, options_map, shown, to_py, whole_in};
use crate::error::{config_error, errors_make, guard, missing_file, unknown_field};
use crate::interrupt::interruptible;
use crate::scenario::catalogue_of;

/// `sweep(base, vary, threads, shard, catalogue)`: the rows `disagg sweep --jsonl` writes.
#[pyfunction]
#[pyo3(signature = (base, vary, threads=None, shard=None, catalogue=None))]
pub(crate) fn sweep<'py>(
    py: Python<'py>,
    base: Option<&Bound<'py, PyAny>>,
    vary: Option<&Bound<'py, PyDict>>,
    threads: Option<&Bound<'py, PyAny>>,
    shard: Option<&Bound<'py, PyAny>>,
    catalogue: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let threads = threads_of(py, threads)?;
        let shard = shard_of(py, shard)?;
        let cat = catalogue_of(py, catalogue.as_deref())?;
        let base = match base {
            None => Map::new(),
            Some(b) if b.is_none() => Map::new(),
            Some(b) => match from_py(b, "base")? {
                Value::String(name) => {
                    let mut m = Map::new();
                    m.insert("preset".into(), Value::String(name));
                    m
                }
                Value::Object(m) => m,
                _ => {
                    return Err(config_error(
                        py,
                        "base: expected a preset name or a dict of scenario keys",
                        Some("base"),
                    ))
                }
            },
        };
        if let Some(Value::String(p)) = base.get("trace_file") {
            if !std::path::Path::new(p).exists() {
                return Err(missing_file(py, "trace_file", p));
            }
        }
        let vary = options_map(vary)?;
        // None among an axis's values is the option unset: only an optional option takes it.
        for (k, v) in &vary {
            let optional = disagg_sim::options::for_key(k).is_some_and(|o| o.optional);
            let has_none =
                v.is_null() || v.as_array().is_some_and(|a| a.iter().any(Value::is_null));
            if has_none && !optional {
                return Err(config_error(
                    py,
                    &format!("vary.{k}: None is not a value an axis can take"),
                    Some(k),
                ));
            }
        }
        let sw =
            disagg_api::sweep::from_json(base, vary, "sweep").map_err(|e| sweep_error(py, &e.0))?;
        let limit = memory_limit().map_err(|e| config_error(py, &e, Some("requests")))?;
        let rows = interruptible(py, |cancel| {
            disagg_api::sweep::rows(&sw, &cat, shard, threads, cancel, limit)
        })?
        .map_err(|e| {
            if e.0.starts_with("requests: ") {
                config_error(py, &e.0, Some("requests")) // over the memory budget
            } else {
                sweep_run_error(py, &sw, &e.0)
            }
        })?;
        let out = PyList::empty(py);
        for r in &rows {
            out.append(to_py(py, r)?)?;
        }
        Ok(out.into_any())
    })
}

/// `jsonl(rows)`: sweep rows as the JSON Lines text `disagg sweep --jsonl` writes.
#[pyfunction]
pub(crate) fn jsonl(rows: &Bound<'_, PyAny>) -> PyResult<String> {
    guard(|| {
        let mut out = String::new();
        for (k, r) in rows.try_iter()?.enumerate() {
            let v = from_py(&r?, &format!("rows[{k}]"))?;
            out.push_str(&v.to_string());
            out.push('\n');
        }
        Ok(out)
    })
}

/// A sweep's `threads`: None (all cores) or a whole number in the CLI's range of `--threads`
/// (1 to 1024).
fn threads_of(py: Python<'_>, threads: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(t) = threads.filter(|t| !t.is_none()) else {
        return Ok(None);
    };
    let (lo, hi) = match disagg_sim::ranges::for_command("sweep", "--threads").map(|r| r.bounds) {
        Some(disagg_sim::ranges::Bounds::Int { min, max }) => (min as i64, max as i64),
        _ => (1, 1024),
    };
    whole_in(t, lo, hi).map(|v| Some(v as usize)).map_err(|()| {
        config_error(
            py,
            &format!(
                "threads: expected a whole number of worker threads from {lo} to {hi}, got {}",
                shown(t)
            ),
            Some("threads"),
        )
    })
}

/// A sweep's `shard`: None (every run) or a pair `(i, n)` of whole numbers with `0 <= i < n`.
fn shard_of(py: Python<'_>, shard: Option<&Bound<'_, PyAny>>) -> PyResult<(u64, u64)> {
    let Some(s) = shard.filter(|s| !s.is_none()) else {
        return Ok((0, 1));
    };
    let bad = || {
        config_error(
            py,
            &format!(
                "shard: expected a pair (i, n) of whole numbers with 0 <= i < n, got {}",
                shown(s)
            ),
            Some("shard"),
        )
    };
    let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = s.cast::<PyTuple>() {
        t.iter().collect()
    } else if let Ok(l) = s.cast::<PyList>() {
        l.iter().collect()
    } else {
        return Err(bad());
    };
    match items.as_slice() {
        [i, n] => {
            let n = whole_in(n, 1, i64::MAX).map_err(|()| bad())?;
            let i = whole_in(i, 0, n - 1).map_err(|()| bad())?;
            Ok((i as u64, n as u64))
        }
        _ => Err(bad()),
    }
}

/// A sweep's message: like [`cli_error`], and when it names no `--flag`, the key of a
/// `vary.KEY` or `base.KEY` it names (`sweep: vary.rate: expected an array of values`).
fn sweep_error(py: Python<'_>, message: &str) -> PyErr {
    if let Some(err) = unknown_field(py, message) {
        return err;
    }
    // A sweep spec's "unknown axis 'x'; valid: a, b, ...".
    if let Some((name, valid)) = message
        .find("unknown axis '")
        .map(|at| &message[at + "unknown axis '".len()..])
        .and_then(|rest| rest.split_once("'; valid: "))
    {
        let valid: Vec<&str> = valid.split(", ").collect();
        if let Ok(err) = errors_make(py, "unknown_option", (name, valid)) {
            return err;
        }
    }
    let (_, mut field) = api_spelling(message);
    if field.is_none() {
        field = ["vary.", "base."].iter().find_map(|prefix| {
            let at = message.find(prefix)? + prefix.len();
            let key: String = message[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (!key.is_empty()).then_some(key)
        });
    }
    config_error(py, message, field.as_deref())
}

/// A sweep run's message. `run I: invalid type: ...` (a value of the wrong type for its key)
/// names no option: the axis value of run I that the scenario keys reject on its own names it,
/// and the message gains the run's axis values as the CLI writes them for other errors
/// (`run 0 (rate="x"): invalid type: string "x", expected f64`).
fn sweep_run_error(py: Python<'_>, sw: &disagg_api::sweep::Sweep, message: &str) -> PyErr {
    let run = message
        .strip_prefix("run ")
        .and_then(|rest| rest.split_once(": "))
        .and_then(|(i, rest)| Some((i.parse::<u64>().ok()?, rest)));
    if let (None, Some((i, rest))) = (api_spelling(message).1, run) {
        let point = sw.point(i);
        let culprit = point.iter().find_map(|(key, value)| {
            let mut one = Map::new();
            one.insert(key.clone(), value.clone());
            overlay(&Scenario::default(), &one).err()?.field
        });
        if let Some(field) = culprit {
            let shown: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let message = format!("run {i} ({}): {rest}", shown.join(" "));
            return config_error(py, &message, Some(&field));
        }
    }
    sweep_error(py, message)
}
