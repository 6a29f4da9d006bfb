//! The catalogue and the scenario a call names: a preset or scenario keys, with the keyword
//! options laid over them, and the configuration built from it.

use disagg_model::Catalogue;
use disagg_sim::input::overlay;
use disagg_sim::{Scenario, SimConfig};
use pyo3::prelude::*;
use serde_json::{Map, Value};

use crate::convert::from_py;
use crate::error::{api_error, check_files, cli_error, config_error, missing_file};

/// The catalogue: the built-in one, with a `--catalogue` TOML file laid over it if given.
pub(crate) fn catalogue_of(py: Python<'_>, path: Option<&str>) -> PyResult<Catalogue> {
    if let Some(p) = path.filter(|p| !std::path::Path::new(p).exists()) {
        return Err(missing_file(py, "catalogue", p));
    }
    disagg_api::custom::load_catalogue(
        path.map(std::path::Path::new),
        &mut disagg_api::report::Warnings::default(),
    )
    .map_err(|e| cli_error(py, &e.0))
}

pub(crate) fn take_catalogue(py: Python<'_>, m: &mut Map<String, Value>) -> PyResult<Catalogue> {
    let path = match m.remove("catalogue") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err(config_error(
                py,
                &format!("catalogue: expected a path to a TOML file, got {other}"),
                Some("catalogue"),
            ))
        }
    };
    catalogue_of(py, path.as_deref())
}

/// The scenario of `base` (None: the CLI's defaults; a str: a preset's name; a dict: keys, which
/// may name a `preset`) with `options` laid over it.
pub(crate) fn scenario_of(
    py: Python<'_>,
    base: Option<&Bound<'_, PyAny>>,
    mut options: Map<String, Value>,
) -> PyResult<Scenario> {
    let mut keys = Map::new();
    match base {
        None => {}
        Some(b) if b.is_none() => {}
        Some(b) => match from_py(b, "scenario")? {
            Value::String(name) => {
                keys.insert("preset".into(), Value::String(name));
            }
            Value::Object(m) => keys = m,
            other => {
                return Err(config_error(
                    py,
                    &format!(
                        "scenario: expected a preset name or a dict of scenario keys, got {}",
                        disagg_sim::input::kind(&other)
                    ),
                    Some("scenario"),
                ))
            }
        },
    }
    // The keyword options override the scenario's keys; a preset among them starts over.
    if options.contains_key("preset") {
        keys.remove("preset");
    }
    for (k, v) in std::mem::take(&mut options) {
        keys.insert(k, v);
    }
    let start = match keys.remove("preset") {
        None | Some(Value::Null) => Scenario::default(),
        Some(Value::String(name)) => {
            disagg_sim::presets::find(&name)
                .map_err(|e| config_error(py, &format!("preset: {e}"), Some("preset")))?
                .scenario
        }
        Some(other) => {
            return Err(config_error(
                py,
                &format!("preset: expected a preset name, got {other}"),
                Some("preset"),
            ))
        }
    };
    let sc = overlay(&start, &keys).map_err(|e| api_error(py, &e))?;
    check_files(py, &sc)?;
    Ok(sc)
}

pub(crate) fn build(py: Python<'_>, sc: &Scenario, cat: &Catalogue) -> PyResult<SimConfig> {
    sc.build(cat).map_err(|e| cli_error(py, &e.to_string()))
}
