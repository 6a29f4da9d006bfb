//! `disagg handoff --kv-format/--weight-format/--compute-format/--speculative`: the 14 `handoff.*`
//! entries of the reference's levers-cost-fixtures.json (disagg-model's copy,
//! tests/fixtures/levers/cost.json) through the CLI's JSON with `==`, the text lines, the
//! one-line errors of `disagg run`, and the rank-aware hand-off under a KV format.

use crate::common;
#[allow(unused_imports)]
use common::*;
use serde_json::Value;

#[test]
fn the_fourteen_handoff_fixtures_through_the_json() {
    let v: Value = serde_json::from_str(include_str!(
        "../../../disagg-model/tests/fixtures/levers/cost.json"
    ))
    .unwrap();
    let mut n = 0;
    for e in v.as_array().unwrap() {
        let id = e["id"].as_str().unwrap();
        if !id.starts_with("handoff.") {
            continue;
        }
        let cm = &e["cost_model"];
        let p = e["args"]["prompt_len"].as_u64().unwrap().to_string();
        let mut args = vec![
            "handoff",
            "--model",
            cm["model"].as_str().unwrap(),
            "--link",
            cm["link"].as_str().unwrap(),
            "--prompt-tokens",
            &p,
            "--json",
        ];
        if let Some(k) = cm["kv_format"].as_str() {
            args.extend(["--kv-format", k]);
        }
        if let Some(d) = cm["speculative"]["draft"].as_str() {
            args.extend(["--speculative", d]);
        }
        let j = ok_json(&args);
        let out = &e["out"];
        let f = |v: &Value| v.as_f64().unwrap();
        assert_eq!(f(&j["transfer_s"]), f(&out["seconds"]), "{id}");
        assert_eq!(f(&j["wire_bytes"]), f(&out["wire_bytes"]), "{id}");
        assert_eq!(f(&j["link_energy_j"]), f(&out["link_j"]), "{id}");
        assert_eq!(f(&j["transit_energy_j"]), f(&out["transit_j"]), "{id}");
        assert_eq!(j["transit_bound"], out["transit_bound"], "{id}");
        assert_eq!(j["kv_format"], cm["kv_format"], "{id}");
        assert_eq!(j["speculative"], cm["speculative"]["draft"], "{id}");
        n += 1;
    }
    assert_eq!(n, 14);
}

#[test]
fn the_default_document_has_no_new_keys() {
    let j = ok_json(&["handoff", "--json"]);
    for k in [
        "kv_format",
        "weight_format",
        "compute_format",
        "speculative",
    ] {
        assert!(j.get(k).is_none(), "{k}");
    }
    // Given: echoed with the JSON's other inputs.
    let j = ok_json(&[
        "handoff",
        "--weight-format",
        "fp8",
        "--compute-format",
        "fp8",
        "--kv-format",
        "int4",
        "--json",
    ]);
    assert_eq!(
        (&j["weight_format"], &j["compute_format"], &j["kv_format"]),
        (&"fp8".into(), &"fp8".into(), &"int4".into())
    );
    // INT4 KV: 2*32*8*128*0.515625 = 33,792 B a token.
    assert_eq!(j["kv_bytes_per_token"], 33_792.0);
    assert_eq!(j["wire_bytes"], 2048.0 * 33_792.0);
}

#[test]
fn the_text_names_the_formats_and_the_draft() {
    let t = ok_text(&["handoff", "--kv-format", "fp8", "--speculative", "mtp"]);
    assert!(
        t.contains(
            "  formats                weights bf16, KV fp8, compute bf16 (accuracy not simulated)"
        ),
        "{t}"
    );
    assert!(
        t.contains("  draft                  mtp (its KV of the prompt crosses too)"),
        "{t}"
    );
    // FP8 target (65,536 B) + FP8 MTP layer (2,048 B) a token.
    assert!(t.contains("67,584 B per token"), "{t}");
    let plain = ok_text(&["handoff"]);
    assert!(
        !plain.contains("formats") && !plain.contains("draft"),
        "{plain}"
    );
}

#[test]
fn errors_are_the_runs_one_lines() {
    bad(
        &[
            "handoff",
            "--prefill-device",
            "a100",
            "--weight-format",
            "fp8",
            "--compute-format",
            "fp8",
        ],
        &["error: prefill pool: A100-SXM has no fp8 units (use compute_format='bf16' for weight-only fp8)"],
    );
    bad(
        &[
            "handoff",
            "--weight-format",
            "fp8",
            "--compute-format",
            "int8",
        ],
        &["error: --compute-format: compute_format is 'bf16' (weight-only"],
    );
    bad(
        &["handoff", "--kv-format", "fp8", "--compression", "fp8"],
        &["error: --kv-format: KV hand-off compression assumes a BF16 KV cache: not with kv_format != 'bf16'"],
    );
    bad(
        &["handoff", "--kv-format", "fp9"],
        &["error: --kv-format: unknown format 'fp9'; valid: bf16, fp8, int8, int4, fp4"],
    );
    bad(
        &[
            "handoff",
            "--model",
            "llama3-8b-hyena",
            "--kv-format",
            "fp8",
        ],
        &["error: --weight-format: weight and KV formats are modelled for attention models"],
    );
    bad(
        &["handoff", "--speculative", "mtp", "--compression", "int8"],
        &["error: --speculative: speculative decoding with KV hand-off compression is not modelled"],
    );
    bad(
        &["handoff", "--speculative", "nope"],
        &["error: --speculative: unknown draft model 'nope'; valid: mtp, "],
    );
    bad(
        &["handoff", "--speculative", "mtp", "--handoff-ranks"],
        &["error: --speculative: 'mtp': the rank-aware hand-off models the target's KV heads only"],
    );
}

#[test]
fn ranks_with_a_kv_format_halve_every_flow() {
    // Llama-3-70B TP8 -> TP8 over 100 GbE in FP8: S = 2048 * 2*80*8*128*1 = 335,544,320 B, eight
    // shards of S / 8 = 41,943,040 B, each over its own NIC: 20 µs + 41,943,040 / 12.5e9 s.
    let base = [
        "handoff",
        "--model",
        "llama3-70b",
        "--link",
        "eth-100g",
        "--devices-per-instance",
        "8",
        "--handoff-ranks",
        "--json",
    ];
    let mut a = base.to_vec();
    a.extend(["--kv-format", "fp8"]);
    let j = ok_json(&a);
    let r = &j["ranks"];
    assert_eq!(r["link_bytes"], 335_544_320.0);
    assert_eq!(r["single_transfer_bytes"], 335_544_320.0);
    assert_eq!(j["wire_bytes"], 335_544_320.0);
    let sum: f64 = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["bytes"].as_f64().unwrap())
        .sum();
    assert_eq!(sum, 335_544_320.0);
    assert_eq!(r["total_s"], 20e-6 + 41_943_040.0 / 12.5e9);
    let bf = ok_json(&base);
    assert_eq!(bf["ranks"]["link_bytes"], 2.0 * 335_544_320.0);
}
