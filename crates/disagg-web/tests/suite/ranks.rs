//! `/api/handoff` with the rank-aware options (issue 13 §3): the same `ranks` object as
//! `disagg handoff --handoff-ranks --json`, none without them, field-named errors.
//!
//! Llama-3-70B, 2,048 tokens: S = 671,088,640 B; one KV head's share 83,886,080 B. 100 GbE:
//! 12.5e9 B/s, 20 µs.

use disagg_web::handle;
use serde_json::{json, Value};

fn post(body: Value) -> (u16, Value) {
    let r = handle("POST", "/api/handoff", body.to_string().as_bytes());
    let v = serde_json::from_slice(&r.body).expect("JSON");
    (r.status, v)
}

fn ok(body: Value) -> Value {
    let (status, v) = post(body.clone());
    assert_eq!(status, 200, "{body}: {v}");
    v
}

fn base() -> Value {
    json!({"model": "llama3-70b", "prompt_tokens": 2048, "link": "eth-100g", "devices_per_instance": 8})
}

fn with(extra: Value) -> Value {
    let mut b = base();
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

#[test]
fn ranks_are_added_only_when_asked() {
    let plain = ok(base());
    assert!(plain.get("ranks").is_none());
    let mut ranked = ok(with(json!({"handoff_ranks": true, "decode_tp": 4})));
    let r = ranked
        .as_object_mut()
        .unwrap()
        .remove("ranks")
        .expect("ranks");
    assert_eq!(ranked, plain);
    assert_eq!(r["layouts"]["prefill"]["label"], "TP8");
    assert_eq!(r["layouts"]["decode"]["label"], "TP4");
    assert_eq!(r["flows"].as_array().unwrap().len(), 8);
    assert_eq!(r["flows"][3]["to"], 1);
    assert_eq!(r["flows"][3]["bytes"].as_f64(), Some(83_886_080.0));
    // Two heads per decode NIC: 167,772,160 / 12.5e9 = 0.0134217728 s.
    assert_eq!(r["finish_s"].as_f64(), Some(20e-6 + 0.0134217728));
    assert_eq!(r["single_transfer_s"].as_f64(), Some(20e-6 + 0.0536870912));
    assert_eq!(r["nics"].as_array().unwrap().len(), 12);
    // Explicitly off: as without.
    assert_eq!(ok(with(json!({"handoff_ranks": false}))), plain);
}

#[test]
fn a_batch_shares_the_rank_options() {
    let v = ok(with(json!({
        "handoff_ranks": true,
        "batch": [{"prompt_tokens": 1024}, {"prompt_tokens": 2048}, {"devices_per_instance": 3}]
    })));
    let b = v["batch"].as_array().unwrap();
    // TP8 -> TP8: each NIC one head; 1,024 tokens are half of 2,048's.
    assert_eq!(
        b[0]["ranks"]["finish_s"].as_f64(),
        Some(20e-6 + 0.0067108864 / 2.0)
    );
    assert_eq!(
        b[1]["ranks"]["finish_s"].as_f64(),
        Some(20e-6 + 0.0067108864)
    );
    assert_eq!(b[2]["status"], 422);
    assert_eq!(b[2]["field"], "prefill_tp");
}

#[test]
fn bad_rank_options_name_their_field() {
    for (extra, field, needle) in [
        (
            json!({"decode_tp": 4}),
            "decode_tp",
            "decode_tp: applies only with handoff_ranks",
        ),
        (
            json!({"handoff_ranks": true, "decode_tp": 3}),
            "decode_tp",
            "valid: 1, 2, 4, 8, or a multiple of 8",
        ),
        (
            json!({"handoff_ranks": true, "decode_pp": 0}),
            "decode_pp",
            "must be at least 1, got 0",
        ),
        (
            json!({"handoff_ranks": true, "kv_relayout_cost": "gpu"}),
            "kv_relayout_cost",
            "valid: off, hbm",
        ),
        (
            json!({"handoff_ranks": true, "compression": "fp8"}),
            "compression",
            "uncompressed",
        ),
        (
            json!({"handoff_ranks": true, "decode_device": "nope"}),
            "decode_device",
            "unknown device 'nope'",
        ),
    ] {
        let (status, v) = post(with(extra.clone()));
        assert_eq!(status, 422, "{extra}: {v}");
        assert_eq!(v["field"], field, "{extra}: {v}");
        assert!(
            v["error"].as_str().unwrap().contains(needle),
            "{extra}: {v}"
        );
    }
    // Wrong types are the body's errors, named too.
    let (status, v) = post(with(json!({"handoff_ranks": "yes"})));
    assert_eq!(status, 400, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("handoff_ranks"),
        "{v}"
    );
}

#[test]
fn formats_and_drafts_change_the_bytes_and_are_field_named() {
    // Llama-3-8B, 2,048 tokens over ib-ndr (50 GB/s, 10 µs): FP8 KV 134,217,728 B in
    // 1e-5 + 134217728 / 5e10 = 0.00269435456 s; MTP's KV too: 276,824,064 B
    // (`docs/cost-model.md#quantisation` item 4, `docs/levers.md#speculative`).
    let v = ok(json!({"link": "ib-ndr", "kv_format": "fp8"}));
    assert_eq!(v["wire_bytes"].as_f64(), Some(134_217_728.0));
    assert_eq!(v["transfer_s"].as_f64(), Some(0.00269435456));
    assert_eq!(v["kv_format"], "fp8");
    assert!(v.get("speculative").is_none() && v.get("weight_format").is_none());
    let v = ok(json!({"link": "ib-ndr", "speculative": "mtp"}));
    assert_eq!(v["wire_bytes"].as_f64(), Some(276_824_064.0));
    assert_eq!(v["transfer_s"].as_f64(), Some(0.0055464812799999996));
    assert_eq!(v["speculative"], "mtp");
    // The rank-aware plan in FP8: half of BF16's bytes (S = 335,544,320 B).
    let r = ok(with(json!({"handoff_ranks": true, "kv_format": "fp8"})));
    assert_eq!(r["ranks"]["link_bytes"].as_f64(), Some(335_544_320.0));
    for (body, field, needle) in [
        (
            json!({"kv_format": "fp8", "compression": "fp8"}),
            "kv_format",
            "KV hand-off compression assumes a BF16 KV cache",
        ),
        (
            json!({"weight_format": "fp8", "compute_format": "int8"}),
            "compute_format",
            "compute_format is 'bf16'",
        ),
        (
            json!({"kv_format": "fp9"}),
            "kv_format",
            "unknown format 'fp9'",
        ),
        (
            json!({"speculative": "nope"}),
            "speculative",
            "unknown draft model 'nope'",
        ),
    ] {
        let (status, v) = post(body.clone());
        assert_eq!(status, 422, "{body}: {v}");
        assert_eq!(v["field"], field, "{body}: {v}");
        assert!(v["error"].as_str().unwrap().contains(needle), "{body}: {v}");
    }
    // The device's units: one line naming the pool, as `disagg run` says it.
    let (status, v) =
        post(json!({"prefill_device": "a100", "weight_format": "fp8", "compute_format": "fp8"}));
    assert_eq!(status, 422);
    assert_eq!(
        v["error"],
        "prefill pool: A100-SXM has no fp8 units (use compute_format='bf16' for weight-only fp8)"
    );
}

#[test]
fn a_run_takes_the_rank_aware_hand_off() {
    // /api/run with `handoff_ranks`: Llama-3-70B TP8 -> TP8 over ib-ndr (50 GB/s, 10 µs), every
    // request a 2,048-token prompt: each hand-off is 10 µs + 83,886,080 / 5e10 s on an idle link,
    // an eighth of the single transfer's stream; bytes unchanged.
    let run = |extra: Value| {
        let mut b = json!({"model": "llama3-70b", "devices_per_instance": 8, "requests": 20,
            "rate": 1.0, "prompt": 2048, "prompt_cv": 0.0, "output": 16, "output_cv": 0.0});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        let r = handle("POST", "/api/run", b.to_string().as_bytes());
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        serde_json::from_slice::<Value>(&r.body).unwrap()
    };
    let on = run(json!({"handoff_ranks": true}));
    let off = run(json!({}));
    assert_eq!(on["scenario"]["handoff_ranks"], true);
    assert!(off["scenario"].get("handoff_ranks").is_none());
    assert_eq!(
        on["summary"]["link"]["bytes"],
        off["summary"]["link"]["bytes"]
    );
    assert_eq!(
        on["summary"]["link"]["bytes"].as_f64(),
        Some(20.0 * 671_088_640.0)
    );
    // One request in flight at a time at 1 req/s: every hand-off on an idle link.
    let busy = on["summary"]["link"]["busy_s"].as_f64().unwrap();
    let one = 1e-5 + 83_886_080.0 / 5e10;
    assert!(
        (busy - 20.0 * one).abs() < 1e-12,
        "{busy} vs {}",
        20.0 * one
    );
    let (status, v) = {
        let r = handle(
            "POST",
            "/api/run",
            json!({"nics_per_instance": 2}).to_string().as_bytes(),
        );
        (r.status, serde_json::from_slice::<Value>(&r.body).unwrap())
    };
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["field"], "nics_per_instance", "{v}");
}
