//! The document of one run, as `disagg run --json` prints it and the web API's `/api/run` answers:
//! one definition for every face, so they cannot drift.

use serde::Serialize;

use crate::{Scenario, Summary, SCHEMA_VERSION};

/// One run's JSON document: what was run (the scenario with the SLOs it was judged by filled in)
/// and what it measured. Field order is the serialised order.
#[derive(Clone, Debug, Serialize)]
pub struct RunDocument<'a> {
    /// [`SCHEMA_VERSION`] of the summary's layout.
    pub schema_version: u32,
    /// Always `"disagg"`.
    pub tool: &'static str,
    /// The disagg release that produced it.
    pub version: &'static str,
    /// The scenario, with [`Scenario::with_slos_resolved`] applied, as
    /// [`Scenario::echo_value`] writes it.
    #[serde(serialize_with = "echo")]
    pub scenario: Scenario,
    /// The run's summary.
    pub summary: &'a Summary,
    /// Warnings printed while preparing the run (left out when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

fn echo<S: serde::Serializer>(s: &Scenario, ser: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&s.echo_value(), ser)
}

impl<'a> RunDocument<'a> {
    /// The document of a run of `scenario` that measured `summary`.
    pub fn new(scenario: &Scenario, summary: &'a Summary, warnings: Vec<String>) -> Self {
        RunDocument {
            schema_version: SCHEMA_VERSION,
            tool: "disagg",
            version: env!("CARGO_PKG_VERSION"),
            scenario: scenario.with_slos_resolved(),
            summary,
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_order_slos_resolved_and_no_empty_warnings() {
        let sc =
            Scenario::from_flags(["--model", "llama3-8b", "--devices-per-instance", "1"]).unwrap();
        let cfg = sc.build(&disagg_model::Catalogue::builtin()).unwrap();
        let mut wl = cfg.generate_workload();
        wl.truncate(5);
        let run = crate::simulate(&cfg, &wl).unwrap();
        let s = run.summary();
        let v = serde_json::to_value(RunDocument::new(&sc, &s, vec![])).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            ["schema_version", "tool", "version", "scenario", "summary"]
        );
        assert_eq!(v["tool"], "disagg");
        // The reference's default SLOs (`docs/serving-model.md#outputs`) are filled in when none was given.
        assert_eq!(v["scenario"]["ttft_slo"], 1.0);
        assert_eq!(v["scenario"]["tpot_slo"], 0.025);
        let w = serde_json::to_value(RunDocument::new(&sc, &s, vec!["careful".into()])).unwrap();
        assert_eq!(w["warnings"], serde_json::json!(["careful"]));
    }
}
