//! `disagg handoff --handoff-ranks` for models described by layer kinds (issue 16): the JSON's
//! `ranks` and the text report against hand arithmetic. 100 GbE: 12.5e9 B/s, 20 µs; P = 2,048.
//!
//! DeepSeek-V3: 61 MLA layers of one 576-value latent, BF16: 61 * 576 * 2 = 70,272 B a token,
//! 2048 * 70,272 = 143,917,056 B logical. Qwen3-Next-80B-A3B on TP2 -> TP4: a quarter of the 36
//! linear layers' state is 36 * (6,144 + 131,072) * 2 = 9,879,552 B, one of the 12 full layers'
//! 2 KV heads (256 wide) 12 * 512 * 2048 * 2 = 25,165,824 B.

use crate::common;
#[allow(unused_imports)]
use common::*;

use serde_json::Value;

const DSV3: f64 = 143_917_056.0;

fn args<'a>(model: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "handoff",
        "--model",
        model,
        "--prompt-tokens",
        "2048",
        "--link",
        "eth-100g",
        "--handoff-ranks",
    ];
    v.extend_from_slice(extra);
    v
}

fn ranks(model: &str, extra: &[&str]) -> Value {
    let mut a = args(model, extra);
    a.push("--json");
    ok_json(&a)["ranks"].clone()
}

#[test]
fn deepseek_v3_sends_the_latent_once_per_decode_rank() {
    let r = ranks("deepseek-v3", &["--devices-per-instance", "8"]);
    // 8 x 143,917,056 = 1,151,336,448 B on the link.
    assert_eq!(r["link_bytes"].as_f64(), Some(1_151_336_448.0));
    assert_eq!(r["logical_bytes"].as_f64(), Some(DSV3));
    assert_eq!(r["mla_logical_bytes"].as_f64(), Some(DSV3));
    assert_eq!(r["mla_copies"].as_u64(), Some(8));
    assert_eq!(r["flows"].as_array().unwrap().len(), 8);
    assert_eq!(r["flows"][5]["from"].as_u64(), Some(5));
    assert_eq!(r["flows"][5]["to"].as_u64(), Some(5));
    assert_eq!(r["flows"][5]["parts"][0]["kind"], "mla");
    assert_eq!(r["flows"][5]["parts"][0]["heads"], Value::Null);
    // 20e-6 + 143,917,056 / 12.5e9.
    assert_eq!(r["finish_s"].as_f64(), Some(20e-6 + 0.01151336448));
    assert!(r["rule"]
        .as_str()
        .unwrap()
        .contains("MLA layers are not sharded"));
    let mut a = args("deepseek-v3", &["--devices-per-instance", "8"]);
    a.extend_from_slice(&["--decode-tp", "4"]);
    let t = ok_text(&a);
    for needle in [
        "  MLA latent: replicated on every TP rank, sent once per decode rank: 4 x 143.9 MB",
        "  bytes over link        575.7 MB     the logical hand-off 143.9 MB",
        "  p3 -> d3       mla latent",
    ] {
        assert!(t.contains(needle), "'{needle}' not in:\n{t}");
    }
}

#[test]
fn qwen3_next_shards_its_state_and_copies_its_replicated_kv_head() {
    let r = ranks(
        "qwen3-next-80b-a3b",
        &["--devices-per-instance", "2", "--decode-tp", "4"],
    );
    let lin = 9_879_552.0;
    let head = 25_165_824.0;
    let flows: Vec<(u64, u64, f64)> = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["from"].as_u64().unwrap(),
                f["to"].as_u64().unwrap(),
                f["bytes"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        flows,
        vec![
            (0, 0, lin + head),
            (0, 1, lin),
            (1, 2, lin + head),
            (1, 3, lin)
        ]
    );
    // 36 * 1,097,728 + 12 * 1024 * 2048 * 2 = 39,518,208 + 50,331,648 = 89,849,856 B.
    assert_eq!(r["link_bytes"].as_f64(), Some(89_849_856.0));
    assert_eq!(r["logical_bytes"].as_f64(), Some(89_849_856.0));
    assert_eq!(r["mla_copies"], Value::Null);
    assert_eq!(r["replicate_bytes"].as_f64(), Some(2.0 * head));
    let a = args(
        "qwen3-next-80b-a3b",
        &["--devices-per-instance", "2", "--decode-tp", "4"],
    );
    let t = ok_text(&a);
    assert!(
        t.contains("  p0 -> d0       linear 0..8, full 0..1      0..48      35.0 MB"),
        "{t}"
    );
    assert!(!t.contains("MLA latent"), "{t}");
}

#[test]
fn models_without_layer_kinds_keep_their_json_keys() {
    let r = ranks("llama3-70b", &["--devices-per-instance", "8"]);
    for k in ["logical_bytes", "mla_copies", "mla_logical_bytes"] {
        assert!(r.get(k).is_none(), "{k}");
    }
    assert!(r["flows"][0].get("parts").is_none());
    let t = ok_text(&args("llama3-70b", &["--devices-per-instance", "8"]));
    assert!(!t.contains("bytes over link"), "{t}");
}

#[test]
fn a_layout_the_value_heads_do_not_divide_is_one_line() {
    let mut a = args(
        "qwen3-next-80b-a3b",
        &["--devices-per-instance", "2", "--decode-tp", "3"],
    );
    a.push("--json");
    bad(
        &a,
        &[
            "--decode-tp: 3 neither divides the 32 value heads of Qwen3-Next-80B-A3B's linear \
           layers nor is a multiple of them; valid: 1, 2, 4, 8, 16, 32, or a multiple of 32",
        ],
    );
}
