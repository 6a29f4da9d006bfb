//! The other commands: `handoff`, `compare`, `plan`, `catalogue`, `trace_stats`, `presets` and
//! `options`.

use disagg_model::calc::HandoffSpec;
use disagg_model::ranks::RankSpec;
use disagg_sim::input::{overlay, ApiError};
use disagg_sim::Scenario;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{Map, Value};

use crate::convert::{options_map, to_py};
use crate::error::{api_error, cli_error, config_error, errors_make, guard};
use crate::scenario::{catalogue_of, scenario_of, take_catalogue};

/// `handoff(options)`: the CLI's `handoff --json` object.
#[pyfunction]
#[pyo3(signature = (options=None))]
pub(crate) fn handoff<'py>(
    py: Python<'py>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let mut m = options_map(options)?;
        let cat = take_catalogue(py, &mut m)?;
        let mut rank_keys = Map::new();
        for k in RankSpec::KEYS {
            if let Some(v) = m.remove(k) {
                rank_keys.insert(k.to_string(), v);
            }
        }
        let ranks: RankSpec =
            overlay(&RankSpec::default(), &rank_keys).map_err(|e| api_error(py, &e))?;
        let spec: HandoffSpec =
            overlay(&HandoffSpec::default(), &m).map_err(|e| api_error(py, &e))?;
        let v = disagg_api::handoff::handoff(&cat, &spec, &ranks)
            .map_err(|e| api_error(py, &invalid(e)))?;
        to_py(py, &v)
    })
}

/// An engine's refusal as the server answers it: 422, naming the field when the message names a
/// key.
fn invalid(e: disagg_model::Error) -> ApiError {
    match e {
        disagg_model::Error::Invalid { what, why } => {
            let field = what.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            ApiError::invalid(field.then_some(what.as_str()), format!("{what}: {why}"))
        }
        other => ApiError::invalid(None, other.to_string()),
    }
}

/// `catalogue(path)`: `disagg list --json`, with the entries of a catalogue TOML file when given.
#[pyfunction]
#[pyo3(signature = (path=None))]
pub(crate) fn catalogue(py: Python<'_>, path: Option<String>) -> PyResult<Bound<'_, PyAny>> {
    guard(|| {
        let cat = catalogue_of(py, path.as_deref())?;
        to_py(py, &disagg_api::catalogue::list_json(&cat, None))
    })
}

/// `compare(scenario, options)`: `disagg compare --json`. Options are scenario keys, and
/// `variant` (one `NAME=VALUE,...` or a list of them), `sweep_rate` (a rate or a list), `yes`,
/// `quiet`, `catalogue`.
#[pyfunction]
#[pyo3(signature = (scenario=None, options=None))]
pub(crate) fn compare<'py>(
    py: Python<'py>,
    scenario: Option<&Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let mut m = options_map(options)?;
        let cat = take_catalogue(py, &mut m)?;
        let bad = |key: &str, what: &str, got: &Value| {
            config_error(py, &format!("{key}: expected {what}, got {got}"), Some(key))
        };
        let variants = match m.remove("variant") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(v)) => vec![v],
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(bad("variant", "NAME=VALUE,... strings", other)),
                })
                .collect::<PyResult<_>>()?,
            Some(other) => return Err(bad("variant", "NAME=VALUE,... strings", &other)),
        };
        let rate = |v: &Value| v.as_f64().ok_or_else(|| bad("sweep_rate", "rates", v));
        let sweep_rate = match m.remove("sweep_rate") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a.iter().map(rate).collect::<PyResult<Vec<f64>>>()?),
            Some(v) => Some(vec![rate(&v)?]),
        };
        let mut switch = |key: &str| match m.remove(key) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(false),
            Some(Value::Bool(true)) => Ok(true),
            Some(other) => Err(bad(key, "True or False", &other)),
        };
        let (yes, quiet) = (switch("yes")?, switch("quiet")?);
        let mode_given = m.get("mode").map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        let base = scenario_of(py, scenario, m)?;
        let opts = disagg_api::compare::CompareOptions {
            variants,
            sweep_rate,
            mode_given,
            yes,
            series: false,
            quiet,
        };
        let mut warnings = disagg_api::report::Warnings::default();
        let cmp = disagg_api::compare::prepare(&base, &cat, &opts, &mut warnings)
            .map_err(|e| cli_error(py, &e.0))?;
        let sums = py
            .detach(|| cmp.run(&mut warnings, |_, _| {}))
            .map_err(|e| cli_error(py, &e.0))?;
        to_py(py, &cmp.json(&sums, &warnings))
    })
}

/// `trace_stats(path, options)`: `disagg trace-stats PATH --json`. Options are the trace-reading
/// keys (`trace_format`, `time_scale`, `trace_start`, ...) or their flags' names with '_' for '-'
/// (`start`, `sort`); True is a switch given, False and None leave an option out.
#[pyfunction]
#[pyo3(signature = (path, options=None))]
pub(crate) fn trace_stats<'py>(
    py: Python<'py>,
    path: String,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let mut s = Scenario::default();
        for (name, v) in options_map(options)? {
            let flag = format!("--{}", name.replace('_', "-"));
            let Some(opt) =
                disagg_sim::options::trace_reading().find(|o| o.key == name || o.flag == flag)
            else {
                let valid: Vec<&str> = disagg_sim::options::trace_reading()
                    .map(|o| o.key)
                    .collect();
                return Err(errors_make(py, "unknown_option", (name, valid))?);
            };
            let raw = match v {
                Value::Null | Value::Bool(false) => continue,
                Value::Bool(true) => "true".to_string(),
                Value::String(text) => text,
                other => other.to_string(),
            };
            s.set(opt.key, &raw)
                .map_err(|e| cli_error(py, &e.to_string()))?;
        }
        let opts = disagg_trace::ReadOptions {
            keep_hash_ids: true,
            ..s.trace_read_options(None)
        };
        let file = std::path::PathBuf::from(&path);
        let t = py
            .detach(|| disagg_api::trace::read_trace(&file, &opts))
            .map_err(|e| cli_error(py, &e.0))?;
        for w in &t.report.warnings {
            eprintln!("warning: {}", disagg_model::escape(w));
        }
        to_py(
            py,
            &disagg_api::trace::stats_json(&file.display().to_string(), &t),
        )
    })
}

/// `plan(scenario, options)`: `disagg plan --json`. Options are `disagg plan`'s flags with '_'
/// for '-' ([`disagg_api::plan::KEYS`]: a list option as its text or a list of items, `price`
/// one `KEY=USD` or a list), the scenario keys, and `catalogue`.
#[pyfunction]
#[pyo3(signature = (scenario=None, options=None))]
pub(crate) fn plan<'py>(
    py: Python<'py>,
    scenario: Option<&Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let mut m = options_map(options)?;
        let cat = take_catalogue(py, &mut m)?;
        let o = plan_options(py, &mut m)?;
        let base = scenario_of(py, scenario, m).map_err(|e| with_plan_keys(py, e))?;
        let mut warnings = disagg_api::report::Warnings::default();
        let doc = match disagg_api::plan::prepare(base, &cat, &o, &mut warnings)
            .map_err(|e| cli_error(py, &e.0))?
        {
            disagg_api::plan::Plan::MaxRate(r) => r.json(),
            disagg_api::plan::Plan::Search(s) => {
                if !o.quiet {
                    eprintln!("{}", s.note());
                }
                py.detach(|| s.run(&|| {}))
                    .map_err(|e| cli_error(py, &e.0))?
                    .json()
            }
        };
        to_py(py, &doc)
    })
}

/// The plan's own keys of `m` (taken out) as [`disagg_api::plan::PlanOptions`].
fn plan_options(
    py: Python<'_>,
    m: &mut Map<String, Value>,
) -> PyResult<disagg_api::plan::PlanOptions> {
    let bad = |key: &str, what: &str, got: &Value| {
        config_error(py, &format!("{key}: expected {what}, got {got}"), Some(key))
    };
    // A list option: its text (`1-4`, `h100,a100`) or a list of items, joined with ','.
    let item = |key: &str, v: &Value| match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(bad(key, "a list's text or a list of items", other)),
    };
    let list = |key: &str, v: Value| match v {
        Value::Array(a) => Ok(a
            .iter()
            .map(|x| item(key, x))
            .collect::<PyResult<Vec<_>>>()?
            .join(",")),
        other => item(key, &other),
    };
    let number = |key: &str, v: &Value| v.as_f64().ok_or_else(|| bad(key, "a number", v));
    let mut o = disagg_api::plan::PlanOptions::default();
    for key in disagg_api::plan::KEYS {
        let v = match m.remove(key) {
            None | Some(Value::Null) => continue,
            Some(v) => v,
        };
        let switch = |v: &Value| match v {
            Value::Bool(b) => Ok(*b),
            other => Err(bad(key, "True or False", other)),
        };
        match key {
            "max_rate" => o.max_rate = switch(&v)?,
            "yes" => o.yes = switch(&v)?,
            "quiet" => o.quiet = switch(&v)?,
            "target_rate" => o.target_rate = Some(number(key, &v)?),
            "slo_target" => o.slo_target = number(key, &v)?,
            "energy_price" => o.energy_price = number(key, &v)?,
            "top" => {
                o.top = v
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| bad(key, "a whole number of at least 0", &v))?
            }
            "latency" => o.latency = item(key, &v)?,
            "gpus" => {
                o.gpus = Some(
                    v.as_u64()
                        .ok_or_else(|| bad(key, "a whole number of at least 1", &v))?,
                )
            }
            "gpus_per_node" => {
                o.gpus_per_node = v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad(key, "a whole number of at least 1", &v))?
            }
            "colocated" => o.colocated = item(key, &v)?,
            "objective" => o.objective = item(key, &v)?,
            "search" => o.search = item(key, &v)?,
            "ci_half_width" => o.ci_half_width = number(key, &v)?,
            "max_replications" => {
                o.max_replications = v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad(key, "a whole number of at least 2", &v))?
            }
            "prefill_counts" => o.prefill_counts = list(key, v)?,
            "decode_counts" => o.decode_counts = list(key, v)?,
            "prefill_devices" => o.prefill_devices = list(key, v)?,
            "decode_devices" => o.decode_devices = list(key, v)?,
            "compressions" => o.compressions = list(key, v)?,
            "links" => o.links = Some(list(key, v)?),
            "layouts" => o.layouts = Some(list(key, v)?),
            "prefill_layouts" => o.prefill_layouts = Some(list(key, v)?),
            "decode_layouts" => o.decode_layouts = Some(list(key, v)?),
            "formats" => o.formats = Some(list(key, v)?),
            "price" => {
                o.price = match v {
                    Value::Array(a) => a
                        .iter()
                        .map(|x| item(key, x))
                        .collect::<PyResult<Vec<_>>>()?,
                    other => vec![item(key, &other)?],
                }
            }
            _ => unreachable!("every key of disagg_api::plan::KEYS is handled"),
        }
    }
    Ok(o)
}

/// An unknown option of `plan` lists the plan's own keys among the valid ones.
fn with_plan_keys(py: Python<'_>, e: PyErr) -> PyErr {
    let v = e.value(py);
    let (Ok(field), Ok(valid)) = (
        v.getattr("field").and_then(|f| f.extract::<String>()),
        v.getattr("valid").and_then(|l| l.extract::<Vec<String>>()),
    ) else {
        return e;
    };
    let mut all: Vec<String> = disagg_api::plan::KEYS
        .iter()
        .map(|k| k.to_string())
        .collect();
    all.extend(valid);
    errors_make(py, "unknown_option", (field, all)).unwrap_or_else(|err| err)
}

/// The named scenarios: name, group, about, scenario (its keys as `disagg presets --json`).
#[pyfunction]
pub(crate) fn presets(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let v: Vec<Value> = disagg_sim::presets::all()
        .iter()
        .map(|p| {
            serde_json::json!({"name": p.name, "group": p.group, "about": p.about,
                               "scenario": p.scenario.echo_value()})
        })
        .collect();
    to_py(py, &Value::Array(v))
}

/// Every scenario option: key, flag, kind, optional, help, heading, default (as help shows it),
/// and the value of `Scenario::default()`.
#[pyfunction]
pub(crate) fn options(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let defaults = serde_json::to_value(Scenario::default()).expect("json");
    let v: Vec<Value> = disagg_sim::options::OPTIONS
        .iter()
        .map(|o| {
            serde_json::json!({
                "key": o.key, "flag": o.flag, "optional": o.optional, "help": o.help,
                "heading": o.heading, "shown_default": o.shown_default,
                "default": defaults.get(o.key).cloned().unwrap_or(Value::Null),
            })
        })
        .collect();
    to_py(py, &Value::Array(v))
}
