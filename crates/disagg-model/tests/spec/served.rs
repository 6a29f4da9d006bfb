//! Issue 16: the served models' KV by layer kind, against the byte counts of
//! `../shared/models/models.json` (copied into `tests/fixtures/served_models.json`, with its
//! note), `==` on every f64; the chunked and linear rules and the parameter counts by hand.

use disagg_model::calc::transit_for;
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

// ---- Cost by layer kind (hand arithmetic; formulas in the README's "Models served today") -----

fn cm(key: &str, n: u32) -> CostModel {
    let c = cat();
    CostModel::new(
        c.model(key).unwrap(),
        c.device("h200").unwrap(),
        n,
        CostOptions::default(),
    )
    .unwrap()
}

#[test]
fn deepseek_v3_steps_by_hand() {
    let c = cm("deepseek-v3", 8);
    let m = &c.model;
    let active = m.matmul_params();
    // Prefill of one 2,048-token prompt: 2 x active x P, plus per MLA layer the causal pairs
    // P(P+1)/2 at 2 x 128 x (128 + 64 + 128) = 81,920 FLOPs each (keys and values decompressed).
    let p: i128 = 2048;
    let f = 2 * active * p + 61 * 81_920 * (p * (p + 1) / 2);
    assert_eq!(c.prefill_flops([2048]), (f, 2048));
    // Bytes: weights read for 2,048 tokens plus the latent written, 2,048 x 70,272.
    let (_, by) = c.prefill_work([2048]);
    assert_eq!(by, m.weight_bytes_read(2048) + 2048.0 * 70_272.0);
    // Decode: 3 rows, 6,000 cached positions in all; each row's query attends to its cached
    // tokens and itself (6,003 keys) at 2 x 128 x 576 + 2 x 128 x 512 = 278,528 FLOPs per layer
    // (attention in the latent space); it reads 6,003 x 70,272 B of latent.
    let (f, by) = c.decode_work(6_000, 3);
    assert_eq!(f, 2 * active * 3 + 61 * 278_528 * 6_003);
    assert_eq!(by, m.weight_bytes_read(3) + 6_003.0 * 70_272.0);
    // Weights: every non-expert parameter plus, per MoE layer, the experts one token touches:
    // 256 x (1 - (1 - 8/256)) = 8 (exact in binary), FP8 weights (1 byte), one embedding row.
    let mla: i128 =
        7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168;
    let expert: i128 = 3 * 7168 * 2048;
    let fixed = 61 * mla + 3 * 3 * 7168 * 18432 + 58 * (7168 * 256 + expert) + 129280 * 7168;
    assert_eq!(
        m.weight_bytes_read(1),
        (fixed + 58 * 8 * expert) as f64 + 7168.0
    );
}

#[test]
fn windowed_decode_is_costed_row_by_row() {
    let c = cm("gpt-oss-120b", 2);
    let m = &c.model;
    let active = m.matmul_params();
    // Rows with 100 and 5,000 cached tokens: queries at positions 101 and 5,001. The 18 full
    // layers attend to 101 + 5,001 keys, the 18 sliding ones to min(101, 128) + min(5,001, 128)
    // = 229; (G)QA pairs cost 4 x 64 heads x 64 = 16,384 FLOPs; a key holds 2 x 8 x 64 = 1,024
    // values per layer, 2 bytes each.
    let rows = [100u64, 5_000];
    let step = c.decode_rows(5_100, &mut rows.iter().copied());
    let f = 2 * active * 2 + 18 * 16_384 * (101 + 5_001) + 18 * 16_384 * 229;
    let by = m.weight_bytes_read(2) + (18.0 * 1024.0 * 5_102.0 + 18.0 * 1024.0 * 229.0) * 2.0;
    let want = c.step(f, by);
    assert_eq!(step.flops, want.flops);
    assert_eq!(step.bytes, want.bytes);
    assert_eq!(step.time_s, want.time_s);
    // Without rows the calculators take equal rows: 5,100 / 2 = 2,550 each (both windows full).
    let (f2, _) = c.decode_work(5_100, 2);
    assert_eq!(f2, 2 * active * 2 + 18 * 16_384 * 5_102 + 18 * 16_384 * 256);
    // A model without windows ignores the rows: decode_sum exactly.
    let d = cm("qwen3-32b", 2);
    assert_eq!(
        d.decode_rows(300, &mut [100u64, 200].into_iter()),
        d.decode_sum(300, 2)
    );
    assert!(c.needs_rows() && !d.needs_rows());
}

#[test]
fn chunked_prefill_pairs_by_hand() {
    let c = cm("llama4-scout", 4);
    let active = c.model.matmul_params();
    // A 10,000-token prompt: 12 full layers see 10,000 x 10,001 / 2 pairs; 36 chunked layers
    // 8,192 x 8,193 / 2 in the first chunk and 1,808 x 1,809 / 2 in the second. 4 x 40 heads x
    // 128 = 20,480 FLOPs per pair.
    let full: i128 = 10_000 * 10_001 / 2;
    let chunked: i128 = 8_192 * 8_193 / 2 + 1_808 * 1_809 / 2;
    let f = 2 * active * 10_000 + 20_480 * (12 * full + 36 * chunked);
    assert_eq!(c.prefill_flops([10_000]).0, f);
    // Chunked prefill: a chunk of 2,000 tokens after 7,000 pays the pairs of positions
    // 7,001..9,000: full c(2 p0 + c + 1)/2; chunked: 7,001..8,192 then 1..808.
    let ch = [Chunk {
        p0: 7_000,
        c: 2_000,
        last: false,
    }];
    let (f, _) = c.step_mixed_work(0, 0, &ch);
    let fullc: i128 = 2_000 * (2 * 7_000 + 2_000 + 1) / 2;
    let chunkc: i128 = (8_192 * 8_193 / 2 - 7_000 * 7_001 / 2) + 808 * 809 / 2;
    assert_eq!(f, 2 * active * 2_000 + 20_480 * (12 * fullc + 36 * chunkc));
}

#[test]
fn linear_attention_state_by_hand() {
    let c = cm("qwen3-next-80b-a3b", 2);
    let m = &c.model;
    let active = m.matmul_params();
    let state = 39_518_208.0;
    // Decode of 3 rows, 300 cached in all: the 12 full layers (2 KV heads x 256) attend to 303
    // keys at 4 x 16 x 256 = 16,384 FLOPs and read 2 x 2 x 256 = 1,024 values per key; each of
    // the 36 Gated DeltaNet layers runs its conv, 2 x 4 x (2 x 16 x 128 + 32 x 128) = 65,536,
    // and its recurrence, 6 x 32 x 128 x 128 = 3,145,728, per row, and reads and writes its
    // state once per row.
    let (f, by) = c.decode_work(300, 3);
    assert_eq!(
        f,
        2 * active * 3 + 12 * 16_384 * 303 + 3 * 36 * (65_536 + 3_145_728)
    );
    assert_eq!(
        by,
        m.weight_bytes_read(3) + (12.0 * 1024.0 * 303.0) * 2.0 + 3.0 * (2.0 * state)
    );
    // Prefill of two prompts writes every full layer's KV and each state once per prompt.
    let (f, by) = c.prefill_work([100, 50]);
    let pairs: i128 = 100 * 101 / 2 + 50 * 51 / 2;
    assert_eq!(
        f,
        2 * active * 150 + 12 * 16_384 * pairs + 150 * 36 * (65_536 + 3_145_728)
    );
    assert_eq!(
        by,
        m.weight_bytes_read(150) + (12.0 * 1024.0 * 150.0) * 2.0 + 2.0 * state
    );
}

#[test]
fn reservations_are_cache_units() {
    let c = cat();
    // Gemma 3: the unit is a token of the 10 full layers (81,920 B); a sequence of 5,000 tokens
    // reserves them plus its 52 sliding layers' full window, 1,024 x 425,984 B:
    // 5,000 + 1,024 x 425,984 / 81,920 = 5,000 + 5,324.8 -> 10,325 units.
    let g = c.model("gemma3-27b").unwrap();
    assert_eq!(g.cache_unit_bytes(), 81_920.0);
    assert_eq!(g.kv_units(5_000), 10_325);
    assert_eq!(g.kv_units(10), 10 + 52); // 10 x 425,984 / 81,920 = 52 exactly
                                         // Qwen3-Next: 7 tokens + 39,518,208 / 24,576 = 1,608 units of state.
    let q = c.model("qwen3-next-80b-a3b").unwrap();
    assert_eq!(q.kv_units(7), 7 + 1_608);
    // A model whose cache is tokens x bytes per token reserves its tokens.
    assert_eq!(c.model("deepseek-v3").unwrap().kv_units(5_000), 5_000);
    assert_eq!(c.model("llama3-70b").unwrap().kv_units(5_000), 5_000);
    // Capacity counts the same units: (141e9 x 8 x 0.9 - weights) // 81,920 for Gemma on 8 H200.
    let cm = CostModel::new(g, c.device("h200").unwrap(), 8, CostOptions::default()).unwrap();
    let free = (141e9 * 8.0) * CostOptions::default().mem_util - g.weight_bytes_total();
    assert_eq!(
        cm.kv_capacity_tokens().unwrap(),
        (free / 81_920.0).floor() as u64
    );
}

#[test]
fn layerwise_slices_of_different_sizes() {
    // Two equal slices reduce to the chapter's closed form: fixed + max(S/L, S - T(L-1)/L).
    let (s, t) = (0.75, 1.0);
    assert_eq!(
        layerwise_tail_slices(s, t, &[0.5, 0.5], 0.0),
        (s / 2.0).max(s - t / 2.0)
    );
    // A small first slice and a big last one: layer 1 ready at T/2 (-0.5 from the end), layer 2
    // at the end; slice 1 takes 0.25 x 0.75 = 0.1875, slice 2 0.5625: the last byte lands at
    // max(-0.5 + 0.1875 + 0.5625, 0 + 0.5625) = 0.5625 (every number exact in binary).
    assert_eq!(layerwise_tail_slices(s, t, &[0.25, 0.75], 0.0), 0.5625);
    // Big first slice: max(-0.5 + 0.75, 0 + 0.1875) = 0.25.
    assert_eq!(layerwise_tail_slices(s, t, &[0.75, 0.25], 0.0), 0.25);
    // A grant 0.5 after the first slice was ready (at 0): max(0 + 0.75, 0 + 0.1875) = 0.75.
    assert_eq!(layerwise_tail_slices(s, t, &[0.75, 0.25], 0.5), 0.75);
    // The calculator uses it for gpt-oss (sliding and full layers differ) and not for
    // DeepSeek-V3 (61 equal MLA slices).
    let c = cat();
    assert!(c
        .model("gpt-oss-120b")
        .unwrap()
        .layer_fractions(2048)
        .is_some());
    assert!(c
        .model("deepseek-v3")
        .unwrap()
        .layer_fractions(2048)
        .is_none());
    assert!(c
        .model("llama3-70b")
        .unwrap()
        .layer_fractions(2048)
        .is_none());
}

#[test]
fn compression_leaves_the_linear_state_alone() {
    let c = cat();
    let q = c.model("qwen3-next-80b-a3b").unwrap();
    let link = c.link("eth-100g").unwrap();
    let fp8 = transit_for(&c, q, "fp8", CompressAt::Transit, None)
        .unwrap()
        .unwrap();
    let x = transfer(q, link, Some(&fp8), 2048);
    // 2,048 x 24,576 B of KV halved, 39,518,208 B of state as is.
    assert_eq!(x.kv_bytes, 2048.0 * 24_576.0 + 39_518_208.0);
    assert_eq!(
        x.wire_bytes,
        2048.0 * 24_576.0 / fp8.compression.ratio + 39_518_208.0
    );
    // A model without state: the chapter's s / ratio.
    let d = c.model("deepseek-v3").unwrap();
    let x = transfer(d, link, Some(&fp8), 2048);
    assert_eq!(x.wire_bytes, 143_917_056.0 / fp8.compression.ratio);
}

/// A windowed model's decode step over `b` alike rows is the step over the rows one by one: `ctx`
/// split as evenly as it goes (`ctx % b` rows one token longer), whatever the remainder.
#[test]
fn windowed_alike_rows_are_the_rows_one_by_one() {
    let c = cm("gemma3-27b", 8);
    for (ctx, b) in [(40_000u64, 8u64), (40_003, 8), (9_999, 7), (123_457, 13)] {
        let (q, r) = (ctx / b, ctx % b);
        let mut rows = (0..b).map(|i| if i < r { q + 1 } else { q });
        let each = c.decode_rows(ctx, &mut rows);
        let alike = c.decode_sum(ctx, b);
        assert_eq!(alike.flops, each.flops, "ctx {ctx} b {b}");
        assert_eq!(
            alike.bytes.to_bits(),
            each.bytes.to_bits(),
            "ctx {ctx} b {b}"
        );
    }
}

/// With the LM head on the last token only, a chunk that ends its prompt adds the LM head's
/// `2 x vocab x d_model` FLOPs, the same for every chunk size.
#[test]
fn a_last_chunk_adds_the_lm_head_once() {
    let mut c = cm("gemma3-27b", 8);
    c.model.prefill_lm_head = LmHead::Last;
    let m = &c.model;
    let lm = 2 * m.vocab as i128 * m.d_model as i128;
    for n in [16u64, 512] {
        let f = |last| {
            let s = c.step_mixed(
                0,
                0,
                &[Chunk {
                    p0: 100,
                    c: n,
                    last,
                }],
            );
            match s.flops {
                PyNum::Int(i) => i,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(f(true) - f(false), lm, "chunk {n}");
    }
}
