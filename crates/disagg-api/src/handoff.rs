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
