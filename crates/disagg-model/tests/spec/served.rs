//! Issue 16: the served models' KV by layer kind, against the byte counts of
//! `../shared/models/models.json` (copied into `tests/fixtures/served_models.json`, with its
//! note), `==` on every f64; the chunked and linear rules and the parameter counts by hand.

use disagg_model::*;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn fixture() -> serde_json::Value {
    serde_json::from_str(include_str!("../fixtures/served_models.json")).unwrap()
}

fn num(v: &serde_json::Value) -> f64 {
    v.as_u64().unwrap() as f64
}

fn with_kv(m: &ModelSpec, kv_bytes: f64) -> ModelSpec {
    ModelSpec {
        kv_bytes,
        ..m.clone()
    }
}

fn strict(m: &ModelSpec) -> ModelSpec {
    let mut m = m.clone();
    m.arch.as_mut().unwrap().retention = Retention::Strict;
    m
}

#[test]
fn every_served_model_matches_the_source_bytes() {
    let c = cat();
    let f = fixture();
    let rows = f["models"].as_array().unwrap();
    assert_eq!(rows.len(), 15);
    for r in rows {
        let key = r["key"].as_str().unwrap();
        let m = c.model(key).unwrap();
        assert!(m.arch.is_some(), "{key}");
        assert!(model_source(key).unwrap().contains('@'), "{key}");
        assert_eq!(
            m.kv_bytes_per_token(),
            num(&r["kv_bytes_per_token_bf16"]),
            "{key}"
        );
        let fp8 = with_kv(m, 1.0);
        assert_eq!(
            fp8.kv_bytes_per_token(),
            num(&r["kv_bytes_per_token_fp8"]),
            "{key}"
        );
        let a = m.arch.as_ref().unwrap();
        assert_eq!(
            a.windowed_values_per_token() as f64 * 2.0,
            num(&r["windowed_kv_bytes_per_token_bf16"]),
            "{key}"
        );
        assert_eq!(
            a.state_bytes(),
            num(&r["fixed_state_bytes_per_request_bf16"]),
            "{key}"
        );
        for p in ["2048", "32768"] {
            let n: u64 = p.parse().unwrap();
            assert_eq!(
                m.handoff_bytes(n),
                num(&r["handoff_bytes_bf16"][p]),
                "{key} {p}"
            );
            assert_eq!(
                fp8.handoff_bytes(n),
                num(&r["handoff_bytes_fp8"][p]),
                "{key} {p}"
            );
            let s = &r["handoff_bytes_bf16_vllm_strict"];
            let want = if s.is_null() {
                num(&r["handoff_bytes_bf16"][p])
            } else {
                num(&s[p])
            };
            assert_eq!(strict(m).handoff_bytes(n), want, "{key} {p} strict");
        }
    }
}

#[test]
fn qwen3_next_fp32_ssm_state() {
    let c = cat();
    let f = fixture();
    let r = f["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "qwen3-next-80b-a3b")
        .unwrap()
        .clone();
    let mut m = c.model("qwen3-next-80b-a3b").unwrap().clone();
    for run in &mut m.arch.as_mut().unwrap().cycle {
        if let Attention::Linear { state_bytes, .. } = &mut run.attention {
            *state_bytes = 4.0;
        }
    }
    assert_eq!(
        m.arch.as_ref().unwrap().state_bytes(),
        num(&r["fixed_state_bytes_per_request_fp32_ssm"])
    );
    for p in ["2048", "32768"] {
        assert_eq!(
            m.handoff_bytes(p.parse().unwrap()),
            num(&r["handoff_bytes_bf16_with_fp32_ssm_state"][p])
        );
    }
}

#[test]
fn chunked_and_linear_rules_by_hand() {
    let c = cat();
    let scout = c.model("llama4-scout").unwrap();
    // 12 full layers x 2 x 8 x 128 values x 2 B = 49,152 B/token; 36 chunked layers 147,456 B
    // per kept token. 10,000 tokens: the current chunk holds 10,000 - 8,192 = 1,808.
    assert_eq!(
        scout.handoff_bytes(10_000),
        10_000.0 * 49_152.0 + 1_808.0 * 147_456.0
    );
    assert_eq!(
        strict(scout).handoff_bytes(10_000),
        10_000.0 * 49_152.0 + 1_808.0 * 147_456.0
    );
    // At a chunk boundary the strict rule keeps nothing of the chunked layers.
    assert_eq!(strict(scout).handoff_bytes(16_384), 16_384.0 * 49_152.0);
    assert_eq!(
        scout.handoff_bytes(16_384),
        16_384.0 * 49_152.0 + 8_192.0 * 147_456.0
    );
    assert_eq!(scout.handoff_bytes(1), 49_152.0 + 147_456.0);
    assert_eq!(scout.handoff_bytes(0), 0.0);
    // A decode instance reserves the peak: the chunked layers up to a whole chunk.
    assert_eq!(
        scout.reserved_kv_bytes(10_000),
        10_000.0 * 49_152.0 + 8_192.0 * 147_456.0
    );
    assert_eq!(scout.reserved_kv_bytes(100), 100.0 * (49_152.0 + 147_456.0));
    // Qwen3-Next: 36 Gated DeltaNet layers, each conv (4 - 1) x (2*16*128 + 32*128) = 24,576
    // values and recurrent 32 x 128 x 128 = 524,288 values, BF16; 12 full layers 2 x 2 x 256.
    let q = c.model("qwen3-next-80b-a3b").unwrap();
    let state = 36.0 * (24_576.0 + 524_288.0) * 2.0;
    assert_eq!(q.arch.as_ref().unwrap().state_bytes(), state);
    assert_eq!(q.handoff_bytes(1), 12.0 * 1024.0 * 2.0 + state);
    assert_eq!(q.handoff_bytes(0), state);
    assert_eq!(q.reserved_kv_bytes(7), 7.0 * 24_576.0 + state);
    let p = q.handoff_parts(100);
    assert_eq!((p.kv_bytes, p.state_bytes), (100.0 * 24_576.0, state));
    // The state stays BF16 when the KV is FP8.
    assert_eq!(with_kv(q, 1.0).handoff_bytes(100), 100.0 * 12_288.0 + state);
    // Gemma 3: a sequence shorter than the window keeps every token in every layer.
    let g = c.model("gemma3-27b").unwrap();
    assert_eq!(g.handoff_bytes(1000), 1000.0 * (81_920.0 + 425_984.0));
    assert_eq!(
        g.handoff_bytes(5000),
        5000.0 * 81_920.0 + 1024.0 * 425_984.0
    );
}

#[test]
fn layer_slices_follow_the_layer_pattern() {
    let c = cat();
    let g = c.model("gpt-oss-120b").unwrap();
    let s = g.arch.as_ref().unwrap().layer_slices(2048, g.kv_bytes);
    assert_eq!(s.len(), 36);
    // Even layers slide (128 tokens kept), odd layers are full.
    assert_eq!(s[0], 128.0 * 2048.0);
    assert_eq!(s[1], 2048.0 * 2048.0);
    assert_eq!(s.iter().sum::<f64>(), g.handoff_bytes(2048));
    let gem = c.model("gemma3-27b").unwrap();
    let s = gem.arch.as_ref().unwrap().layer_slices(4096, 2.0);
    let full: Vec<usize> = (0..62)
        .filter(|&i| s[i] == 4096.0 * 16.0 * 128.0 * 4.0)
        .collect();
    assert_eq!(full, (0..10).map(|k| 6 * k + 5).collect::<Vec<_>>());
    let q = c.model("qwen3-next-80b-a3b").unwrap();
    let s = q.arch.as_ref().unwrap().layer_slices(10, 2.0);
    assert_eq!(s[3], 10.0 * 2.0 * 2.0 * 256.0 * 2.0);
    assert_eq!(s[0], (24_576.0 + 524_288.0) * 2.0);
}

#[test]
fn parameter_counts_by_hand() {
    let c = cat();
    // DeepSeek-V3: MLA per layer q_a 7168x1536 + q_b 1536x128x192 + kv_a 7168x576
    // + kv_b 512x128x256 + o 128x128x7168; 3 dense MLPs 3x7168x18432; 58 MoE layers of router
    // 7168x256, 256 routed + 1 shared experts of 3x7168x2048; embedding and head 2x129280x7168.
    let mla: i128 =
        7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168;
    let expert: i128 = 3 * 7168 * 2048;
    let total =
        61 * mla + 3 * 3 * 7168 * 18432 + 58 * (7168 * 256 + 257 * expert) + 2 * 129280 * 7168;
    let active = 61 * mla + 3 * 3 * 7168 * 18432 + 58 * (7168 * 256 + 9 * expert) + 129280 * 7168;
    let v3 = c.model("deepseek-v3").unwrap();
    assert_eq!(v3.params(), total);
    assert_eq!(v3.matmul_params(), active);
    // Published: 671B total, 37B activated (README.md; 36.7B in README_WEIGHTS.md).
    eprintln!("deepseek-v3 active {active}");
    assert_eq!(total / 1_000_000_000, 671);
    assert_eq!(active / 1_000_000_000, 36);
    // The others against their published totals (billions, rounded as published).
    for (key, billions) in [
        ("kimi-k2", 1000.0),
        ("qwen3-235b-a22b", 235.0),
        ("qwen3-30b-a3b", 30.5),
        ("qwen3-32b", 32.8),
        ("gpt-oss-120b", 117.0),
        ("gpt-oss-20b", 21.0),
        ("gemma3-27b", 27.0),
        ("llama3.1-405b", 405.0),
        ("llama4-scout", 109.0),
        ("llama4-maverick", 400.0),
        ("qwen3-next-80b-a3b", 80.0),
        ("mixtral-8x22b", 141.0),
        ("deepseek-v2-lite", 15.7),
    ] {
        let p = c.model(key).unwrap().params() as f64 / 1e9;
        eprintln!("{key}: {p:.2} B");
        assert!(
            (p / billions - 1.0).abs() < 0.05,
            "{key}: {p} B vs {billions} B published"
        );
    }
}
