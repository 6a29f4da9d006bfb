//! The KV hand-off of one prompt as a document: `disagg handoff --json`, the server's
//! `/api/handoff` and Python's `disagg.handoff` are this one value.

use disagg_model::calc::{HandoffDoc, HandoffSpec};
use disagg_model::ranks::{RankPlan, RankSpec};
use disagg_model::{Catalogue, Device};
use serde_json::{json, Value};

/// The hand-off document: the evaluation `doc`, the rank-aware plan as `ranks` when there is
/// one, and the fitted prefill device's provenance as `calibration` when `device` is calibrated
/// (`disagg calibrate`); neither key otherwise.
pub fn document(doc: &HandoffDoc, ranks: Option<&RankPlan>, device: &Device) -> Value {
    let mut v = serde_json::to_value(doc).expect("json");
    if let Some(plan) = ranks {
        v["ranks"] = serde_json::to_value(plan).expect("json");
    }
    if let Some(c) = &device.calibration {
        let mut cv = json!({"pool": "prefill", "device": device.key});
        if let (Some(o), Value::Object(f)) =
            (cv.as_object_mut(), serde_json::to_value(c).expect("json"))
        {
            o.extend(f);
        }
        v["calibration"] = cv;
    }
    v
}

/// The hand-off document of `spec` over catalogue `cat` (every name looked up in it), with the
/// rank-aware plan when `ranks` asks for one ([`RankSpec::default`]: none).
pub fn handoff(
    cat: &Catalogue,
    spec: &HandoffSpec,
    ranks: &RankSpec,
) -> Result<Value, disagg_model::Error> {
    let doc = disagg_model::calc::evaluate(cat, spec, None, None, None)?;
    let plan = if *ranks != RankSpec::default() {
        let model = cat.model(&doc.model)?;
        disagg_model::ranks::evaluate(cat, spec, &doc, ranks, model, None)?
    } else {
        None
    };
    let device = cat.device(&spec.prefill_device)?;
    Ok(document(&doc, plan.as_ref(), device))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calibration_block_comes_with_a_fitted_prefill_device_only() {
        let cat = Catalogue::builtin();
        let spec = HandoffSpec::default();
        let v = handoff(&cat, &spec, &RankSpec::default()).unwrap();
        assert!(v.get("calibration").is_none() && v.get("ranks").is_none());
        let doc = disagg_model::calc::evaluate(&cat, &spec, None, None, None).unwrap();
        assert_eq!(v, serde_json::to_value(&doc).unwrap());
        // A fitted device (the command line's test fixture).
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../disagg-cli/tests/fixtures/calibrated.toml"
        );
        let mut w = crate::report::Warnings::default();
        let cat = crate::custom::load_catalogue(Some(std::path::Path::new(path)), &mut w).unwrap();
        let spec = HandoffSpec {
            prefill_device: "h100-fit".into(),
            model: "llama2-7b".into(),
            ..HandoffSpec::default()
        };
        let v = handoff(&cat, &spec, &RankSpec::default()).unwrap();
        assert_eq!(v["calibration"]["pool"], "prefill");
        assert_eq!(v["calibration"]["device"], "h100-fit");
    }
}
