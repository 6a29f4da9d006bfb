//! One run: its JSON document (`disagg run --json`, the server's `/api/run`).

use disagg_sim::{Scenario, Summary};
use serde_json::json;

use crate::report::Warnings;

/// The JSON document of one run, with the warnings told so far.
pub fn run_json(scenario: &Scenario, s: &Summary, warnings: &[String]) -> serde_json::Value {
    serde_json::to_value(disagg_sim::RunDocument::new(scenario, s, warnings.to_vec()))
        .expect("json")
}

/// Adds the warnings told so far as a top-level `warnings` array (none: left out).
pub fn with_warnings(doc: &mut serde_json::Value, warnings: &Warnings) {
    let w = warnings.list();
    if !w.is_empty() {
        doc["warnings"] = json!(w);
    }
}
