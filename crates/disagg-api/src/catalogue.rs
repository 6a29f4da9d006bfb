//! The catalogue as JSON: `disagg list --json`, the server's `/api/catalogue` and Python's
//! `disagg.catalogue()` build models, devices and the compression stages here, once.

use disagg_model::Catalogue;
use serde_json::{json, Value};

/// One section of the catalogue (`disagg list NAME`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Section {
    Models,
    Devices,
    Links,
    Compression,
    /// Weight, KV and compute formats (the quantisation lever).
    Formats,
}

/// Every model, with its source and (for a model described by layer kinds) its active
/// parameters.
pub fn models_json(cat: &Catalogue) -> Value {
    Value::Array(
        cat.models
            .iter()
            .map(|m| {
                let mut v = disagg_sim::model_json::model_json(m);
                let o = v.as_object_mut().expect("object");
                if let Some(src) = disagg_model::model_source(&m.key) {
                    o.insert("source".into(), json!(src));
                }
                if m.arch.is_some() {
                    o.insert("active_params".into(), json!(m.matmul_params() as f64));
                }
                v
            })
            .collect(),
    )
}

/// Every device, with its ridge point (FLOP per byte).
pub fn devices_json(cat: &Catalogue) -> Value {
    Value::Array(
        cat.devices
            .iter()
            .map(|d| {
                let mut v = serde_json::to_value(d).expect("json");
                v.as_object_mut()
                    .expect("object")
                    .insert("ridge_flop_per_byte".into(), json!(d.ridge_point()));
                v
            })
            .collect(),
    )
}

/// Where the KV cache is compressed: the two stages, with their aliases.
pub fn compress_at_json() -> Value {
    json!([
        {"key": "transit", "alias": "link", "description": "a stage in the link compresses at line rate (1.6 ops per line byte, 1 pJ per input bit, 1 µs)"},
        {"key": "endpoint", "alias": "gpu", "description": "the prefill GPU compresses before sending; the pass lengthens the prefill step"}
    ])
}

/// `disagg list [SECTION] --json`: every section as one object, or one section's value.
pub fn list_json(cat: &Catalogue, section: Option<Section>) -> Value {
    let all = section.is_none();
    let want = |w: Section| all || section == Some(w);
    let mut o = serde_json::Map::new();
    if want(Section::Models) {
        o.insert("models".into(), models_json(cat));
    }
    if want(Section::Devices) {
        o.insert("devices".into(), devices_json(cat));
    }
    if want(Section::Links) {
        o.insert(
            "links".into(),
            serde_json::to_value(&cat.links).expect("json"),
        );
    }
    if want(Section::Formats) {
        let v: Vec<Value> = disagg_model::QuantFormat::NAMES
            .iter()
            .map(|q| {
                let f = disagg_model::QuantFormat::parse(q).expect("a format");
                json!({"key": q, "bytes_per_value": f.bytes()})
            })
            .collect();
        o.insert("formats".into(), Value::Array(v));
    }
    if want(Section::Compression) {
        o.insert(
            "compression".into(),
            serde_json::to_value(&cat.compression).expect("json"),
        );
        o.insert("compress_at".into(), compress_at_json());
    }
    if all {
        Value::Object(o)
    } else {
        o.into_iter().next().map(|(_, v)| v).unwrap_or(Value::Null)
    }
}
