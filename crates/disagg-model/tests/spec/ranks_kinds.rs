//! The rank-aware hand-off of models described by layer kinds (issue 16) against hand arithmetic.
//! 100 GbE: 12.5 GB/s, 20 µs; NVLink 4 the decode scale-up link; P = 2,048 tokens, BF16 KV.
//!
//! * DeepSeek-V3: 61 MLA layers of one 512 + 64 = 576-value latent: 61 * 576 * 2 = 70,272 B a
//!   token, 2048 * 70,272 = 143,917,056 B logical.
//! * DeepSeek-V2-Lite: 27 MLA layers of 576 values: 1,152 B a layer a token; 9 layers (a third)
//!   of a 2,048-token prompt are 9 * 1152 * 2048 = 21,233,664 B, all 27 are 63,700,992 B.
//! * gpt-oss-120b: 18 pairs of (sliding W = 128, full) layers, 8 KV heads of 64: one head of one
//!   layer is 2 * 64 = 128 values a token.
//! * Qwen3-Next-80B-A3B: 12 cycles of (3 linear, 1 full). A linear layer's state is
//!   (4 - 1) * (2 * 16 * 128 + 32 * 128) = 24,576 conv values + 32 * 128 * 128 = 524,288
//!   recurrent values = 548,864 values (1,097,728 B), split over 32 value heads; a full layer has
//!   2 KV heads of 256: 2 * 2 * 256 = 1,024 values a token.

use disagg_model::ranks::{Side, RULE, RULE_KINDS};
use disagg_model::*;

const P: u64 = 2048;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn model(key: &str) -> ModelSpec {
    cat().model(key).unwrap().clone()
}

fn eth100() -> Link {
    cat().link("eth-100g").unwrap().clone()
}

fn nvlink4() -> Link {
    cat().link("nvlink4").unwrap().clone()
}

fn h100() -> Device {
    cat().device("h100").unwrap().clone()
}

fn tp(tp: u32) -> RankLayout {
    RankLayout::new(tp, 1)
}

fn plan(key: &str, pl: RankLayout, dl: RankLayout) -> RankPlan {
    rank_plan(
        &model(key),
        &eth100(),
        Some(&nvlink4()),
        &h100(),
        P,
        &RankOptions::new(pl, dl),
    )
    .unwrap()
}

fn edges(p: &RankPlan) -> Vec<(u32, u32, f64)> {
    p.flows.iter().map(|f| (f.from, f.to, f.bytes)).collect()
}

fn nic_bytes(p: &RankPlan, side: Side) -> Vec<f64> {
    p.nics
        .iter()
        .filter(|n| n.side == side)
        .map(|n| n.bytes)
        .collect()
}

/// A flow part as (kind, layers, heads, of heads, bytes).
type Part = (&'static str, u64, Option<[u64; 2]>, Option<u64>, f64);

const DSV3: f64 = 143_917_056.0; // 2048 * 61 * 576 * 2

#[test]
fn deepseek_v3_tp8_to_tp8_sends_the_latent_once_per_decode_rank() {
    let p = plan("deepseek-v3", tp(8), tp(8));
    // Decode TP rank r takes the whole latent from prefill TP rank r % 8 = r.
    let want: Vec<(u32, u32, f64)> = (0..8).map(|r| (r, r, DSV3)).collect();
    assert_eq!(edges(&p), want);
    // 8 x 143,917,056 = 1,151,336,448 B on the link, against 143,917,056 B logical.
    assert_eq!(p.link_bytes, 1_151_336_448.0);
    assert_eq!(p.logical_bytes, Some(DSV3));
    assert_eq!(p.single_transfer_bytes, DSV3);
    assert_eq!(p.mla_copies, Some(8));
    assert_eq!(p.mla_logical_bytes, Some(DSV3));
    assert_eq!(p.rule, RULE_KINDS);
    // No scale-up copies: every decode rank got its own.
    assert_eq!(p.replicate_bytes, 0.0);
    assert!(p.decode_ranks.iter().all(|r| r.copy_from.is_none()));
    // Every rank holds the whole latent.
    assert!(p.decode_ranks.iter().all(|r| r.held_bytes == DSV3));
    // Each NIC carries one full copy: no faster than one transfer.
    assert_eq!(nic_bytes(&p, Side::Prefill), vec![DSV3; 8]);
    assert_eq!(nic_bytes(&p, Side::Decode), vec![DSV3; 8]);
    // 20e-6 + 143,917,056 / 12.5e9 = 20e-6 + 0.01151336448 s.
    assert_eq!(p.finish_s, 20e-6 + 0.01151336448);
    assert_eq!(p.speedup, 1.0);
    // The flow's one part: 61 MLA layers, no heads.
    let f = &p.flows[3];
    assert_eq!(f.heads, [0, 0]);
    assert_eq!(f.layers, [0, 61]);
    assert_eq!(f.parts.len(), 2); // the dense and the MoE layer groups
    assert_eq!(f.parts[0].kind, "mla");
    assert_eq!((f.parts[0].layers, f.parts[1].layers), (3, 58));
    assert_eq!(f.parts[0].heads, None);
    assert_eq!(f.parts[0].of_heads, None);
    // 3 * 576 * 2 * 2048 = 7,077,888 and 58 * 576 * 2 * 2048 = 136,839,168.
    assert_eq!(
        (f.parts[0].bytes, f.parts[1].bytes),
        (7_077_888.0, 136_839_168.0)
    );
}

#[test]
fn deepseek_v3_tp8_to_tp4_takes_from_the_first_four_prefill_ranks() {
    let p = plan("deepseek-v3", tp(8), tp(4));
    let want: Vec<(u32, u32, f64)> = (0..4).map(|r| (r, r, DSV3)).collect();
    assert_eq!(edges(&p), want);
    assert_eq!(p.link_bytes, 4.0 * DSV3);
    assert_eq!(p.mla_copies, Some(4));
    let sends: Vec<f64> = p.prefill_ranks.iter().map(|r| r.bytes).collect();
    assert_eq!(sends, [DSV3, DSV3, DSV3, DSV3, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn deepseek_v3_tp4_to_tp8_spreads_over_the_prefill_ranks() {
    // Decode rank r takes from prefill rank r % 4: each prefill rank sends two copies.
    let p = plan("deepseek-v3", tp(4), tp(8));
    let want: Vec<(u32, u32, f64)> = vec![
        (0, 0, DSV3),
        (0, 4, DSV3),
        (1, 1, DSV3),
        (1, 5, DSV3),
        (2, 2, DSV3),
        (2, 6, DSV3),
        (3, 3, DSV3),
        (3, 7, DSV3),
    ];
    assert_eq!(edges(&p), want);
    // The busiest port sends 2 x 143,917,056 = 287,834,112 B: 20e-6 + 0.02302672896 s.
    assert_eq!(nic_bytes(&p, Side::Prefill), vec![287_834_112.0; 4]);
    assert_eq!(p.finish_s, 20e-6 + 0.02302672896);
}

const THIRD: f64 = 21_233_664.0; // 9 * 1152 * 2048
const V2L: f64 = 63_700_992.0; // 27 * 1152 * 2048

#[test]
fn deepseek_v2_lite_pipelines_split_the_latent_by_stage() {
    // TP8 -> TP4 PP3: decode rank 4s + r takes stage s's 9 layers from prefill rank r % 8 = r.
    let p = plan("deepseek-v2-lite", tp(8), RankLayout::new(4, 3));
    let mut want = Vec::new();
    for r in 0..4u32 {
        for s in 0..3u32 {
            want.push((r, 4 * s + r, THIRD));
        }
    }
    assert_eq!(edges(&p), want);
    assert_eq!(p.flows[1].layers, [9, 18]);
    // 12 x 21,233,664 = 254,803,968 = 4 copies of 63,700,992.
    assert_eq!(p.link_bytes, 254_803_968.0);
    assert_eq!(p.logical_bytes, Some(V2L));
    assert_eq!(p.mla_copies, Some(4));
    assert_eq!(
        nic_bytes(&p, Side::Prefill),
        [V2L, V2L, V2L, V2L, 0.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(nic_bytes(&p, Side::Decode), vec![THIRD; 12]);
    assert!(p.decode_ranks.iter().all(|r| r.held_bytes == THIRD));
    // 20e-6 + 63,700,992 / 12.5e9 = 20e-6 + 0.00509607936 s.
    assert_eq!(p.finish_s, 20e-6 + 0.00509607936);

    // TP2 PP3 -> TP4: decode rank d takes each stage s's layers from prefill rank 2s + d % 2.
    let p = plan("deepseek-v2-lite", RankLayout::new(2, 3), tp(4));
    let mut want = Vec::new();
    for s in 0..3u32 {
        for r in 0..2u32 {
            want.push((2 * s + r, r, THIRD));
            want.push((2 * s + r, r + 2, THIRD));
        }
    }
    assert_eq!(edges(&p), want);
    assert_eq!(nic_bytes(&p, Side::Prefill), vec![2.0 * THIRD; 6]);
    assert_eq!(nic_bytes(&p, Side::Decode), vec![V2L; 4]);
    assert_eq!(p.link_bytes, 4.0 * V2L);
    // 61 is prime: DeepSeek-V3 splits over 1 or 61 stages only.
    let e = rank_plan(
        &model("deepseek-v3"),
        &eth100(),
        None,
        &h100(),
        P,
        &RankOptions::new(tp(8), RankLayout::new(4, 2)),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "decode_pp: 2 does not divide the 61 layers of DeepSeek-V3; valid: 1, 61"
    );
}

#[test]
fn gpt_oss_sliding_layers_send_their_window_and_full_layers_the_prompt() {
    let p = plan("gpt-oss-120b", tp(8), tp(8));
    // Rank i holds KV head i of every layer: 18 sliding layers keep min(2048, 128) = 128 tokens,
    // 18 full layers 2,048: 18 * 128 * 128 * 2 = 589,824 B and 18 * 128 * 2048 * 2 =
    // 9,437,184 B, 10,027,008 B a rank; the model's 80,216,064 B over 8.
    let rank = 10_027_008.0;
    let want: Vec<(u32, u32, f64)> = (0..8).map(|r| (r, r, rank)).collect();
    assert_eq!(edges(&p), want);
    assert_eq!(p.link_bytes, 80_216_064.0);
    assert_eq!(p.logical_bytes, Some(80_216_064.0));
    assert_eq!(p.mla_copies, None);
    let f = &p.flows[5];
    let kinds: Vec<Part> = f
        .parts
        .iter()
        .map(|x| (x.kind, x.layers, x.heads, x.of_heads, x.bytes))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("sliding", 18, Some([5, 6]), Some(8), 589_824.0),
            ("full", 18, Some([5, 6]), Some(8), 9_437_184.0),
        ]
    );
    assert!(p.decode_ranks.iter().all(|r| r.held_bytes == rank));
    // 20e-6 + 10,027,008 / 12.5e9 = 20e-6 + 0.00080216064 s.
    assert_eq!(p.finish_s, 20e-6 + 0.00080216064);
    // A 100-token prompt: both kinds keep 100 tokens, 36 * 128 * 100 * 2 = 921,600 B a rank.
    let short = rank_plan(
        &model("gpt-oss-120b"),
        &eth100(),
        None,
        &h100(),
        100,
        &RankOptions::new(tp(8), tp(8)),
    )
    .unwrap();
    assert!(short.flows.iter().all(|f| f.bytes == 921_600.0));
}

#[test]
fn qwen3_next_shards_the_linear_state_by_value_heads() {
    let p = plan("qwen3-next-80b-a3b", tp(2), tp(4));
    // A quarter of the 32 value heads: 24,576 / 4 = 6,144 conv + 524,288 / 4 = 131,072
    // recurrent values = 137,216 values = 274,432 B a layer, 36 layers: 9,879,552 B.
    // One of the 2 KV heads of the 12 full layers: 12 * 512 * 2048 * 2 = 25,165,824 B.
    let lin = 9_879_552.0;
    let head = 25_165_824.0;
    // Decode TP4 replicates the 2 KV heads on 2 ranks each: ranks 0 and 2 receive them over the
    // link and copy them to 1 and 3.
    let want = vec![
        (0, 0, lin + head),
        (0, 1, lin),
        (1, 2, lin + head),
        (1, 3, lin),
    ];
    assert_eq!(edges(&p), want);
    assert_eq!((lin + head, lin), (35_045_376.0, 9_879_552.0));
    // The logical hand-off: 36 * 1,097,728 = 39,518,208 B of state + 12 * 1024 * 2048 * 2 =
    // 50,331,648 B of KV = 89,849,856 B, all of it crossing once.
    assert_eq!(p.link_bytes, 89_849_856.0);
    assert_eq!(p.logical_bytes, Some(89_849_856.0));
    let f = &p.flows[0];
    assert_eq!(f.parts[0].kind, "linear");
    assert_eq!(f.parts[0].heads, Some([0, 8]));
    assert_eq!(f.parts[0].of_heads, Some(32));
    assert_eq!(f.parts[0].layers, 36);
    assert_eq!(f.parts[1].kind, "full");
    assert_eq!(f.parts[1].heads, Some([0, 1]));
    assert_eq!(f.parts[1].of_heads, Some(2));
    assert_eq!(f.parts[1].layers, 12);
    assert_eq!(p.flows[1].parts.len(), 1);
    assert_eq!(p.flows[1].parts[0].heads, Some([8, 16]));
    // Prefill NICs send 35,045,376 + 9,879,552 = 44,924,928 B each.
    assert_eq!(nic_bytes(&p, Side::Prefill), vec![44_924_928.0; 2]);
    assert_eq!(
        nic_bytes(&p, Side::Decode),
        vec![lin + head, lin, lin + head, lin]
    );
    // Every decode rank holds its 8 value heads and one KV head; 1 and 3 copy the KV head.
    assert!(p.decode_ranks.iter().all(|r| r.held_bytes == lin + head));
    let copies: Vec<Option<u32>> = p.decode_ranks.iter().map(|r| r.copy_from).collect();
    assert_eq!(copies, vec![None, Some(0), None, Some(2)]);
    assert_eq!(p.replicate_bytes, 2.0 * head);
    assert_eq!(p.replicate_s, nvlink4().transfer_time(head));
    assert_eq!(p.total_s, p.finish_s + nvlink4().transfer_time(head));
    // The linear state does not grow with the prompt: at P = 1 a quarter of the state plus one
    // token of one KV head (12 * 512 * 2 = 12,288 B).
    let one = rank_plan(
        &model("qwen3-next-80b-a3b"),
        &eth100(),
        Some(&nvlink4()),
        &h100(),
        1,
        &RankOptions::new(tp(2), tp(4)),
    )
    .unwrap();
    assert_eq!(
        edges(&one),
        vec![
            (0, 0, lin + 12_288.0),
            (0, 1, lin),
            (1, 2, lin + 12_288.0),
            (1, 3, lin)
        ]
    );
}

#[test]
fn layer_kinds_check_their_own_heads() {
    let e = |key: &str, pl: RankLayout, dl: RankLayout, su: Option<&Link>| {
        rank_plan(
            &model(key),
            &eth100(),
            su,
            &h100(),
            P,
            &RankOptions::new(pl, dl),
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        e("qwen3-next-80b-a3b", tp(3), tp(4), None),
        "prefill_tp: 3 neither divides the 32 value heads of Qwen3-Next-80B-A3B's linear layers \
         nor is a multiple of them; valid: 1, 2, 4, 8, 16, 32, or a multiple of 32"
    );
    assert_eq!(
        e("gpt-oss-120b", tp(8), tp(6), None),
        "decode_tp: 6 neither divides the 8 KV heads of gpt-oss-120b's sliding layers nor is a \
         multiple of them; valid: 1, 2, 4, 8, or a multiple of 8"
    );
    // TP64 replicates the full layers' 2 KV heads 32 times and the 32 value heads twice.
    assert_eq!(
        e("qwen3-next-80b-a3b", tp(2), tp(64), Some(&nvlink4())),
        "decode_tp: TP64 replicates Qwen3-Next-80B-A3B's layer kinds' heads by different factors \
         (2 and 32), which is not modelled"
    );
    // Replicated heads need the scale-up link.
    assert_eq!(
        e("qwen3-next-80b-a3b", tp(2), tp(4), None),
        "decode_tp: TP4 replicates heads of Qwen3-Next-80B-A3B, which needs the decode device's \
         scale-up link"
    );
    // MLA has no heads to divide: any TP (DeepSeek-V3 on TP3 and TP5).
    let p = plan("deepseek-v3", tp(3), tp(5));
    // Decode rank r from prefill rank r % 3: 0, 1, 2, 0, 1.
    let from: Vec<u32> = p.flows.iter().map(|f| f.from).collect();
    let to: Vec<u32> = p.flows.iter().map(|f| f.to).collect();
    assert_eq!((from, to), (vec![0, 0, 1, 1, 2], vec![0, 3, 1, 4, 2]));
    assert_eq!(p.link_bytes, 5.0 * DSV3);
    // The models without layer kinds keep the old rule text.
    assert_eq!(plan_rule("llama3-70b"), RULE);
}

fn plan_rule(key: &str) -> &'static str {
    plan(key, tp(8), tp(8)).rule
}

#[test]
fn port_loads_are_the_plans_ports_for_layer_kinds() {
    let layouts = [
        ("deepseek-v3", tp(8), tp(8)),
        ("deepseek-v3", tp(4), tp(8)),
        (
            "deepseek-v2-lite",
            RankLayout::new(2, 3),
            RankLayout::new(4, 3),
        ),
        ("gpt-oss-120b", tp(8), tp(4)),
        ("gpt-oss-120b", RankLayout::new(4, 2), tp(16)),
        ("llama4-scout", tp(8), RankLayout::new(4, 2)),
        ("gemma3-27b", tp(8), tp(8)),
        ("qwen3-next-80b-a3b", tp(2), tp(4)),
        ("qwen3-next-80b-a3b", tp(8), RankLayout::new(4, 2)),
    ];
    for (key, pl, dl) in layouts {
        let m = model(key);
        for nics in [None, Some(1), Some(3)] {
            let mut o = RankOptions::new(pl, dl);
            o.nics_per_instance = nics;
            let ports = PortLoads::new(&m, &eth100(), Some(&nvlink4()), &h100(), &o).unwrap();
            for p in [1u64, 7, 127, 128, 129, 2048, 8193, 10_000, 131_072] {
                let plan = rank_plan(&m, &eth100(), Some(&nvlink4()), &h100(), p, &o).unwrap();
                let want: Vec<f64> = plan.nics.iter().map(|n| n.bytes).collect();
                let ctx = format!("{key} {} -> {} nics {nics:?} P {p}", pl.label(), dl.label());
                assert_eq!(ports.port_bytes(p), want, "{ctx}");
                let busiest = plan.nics.iter().map(|n| n.busy_s).fold(0.0, f64::max);
                assert_eq!(ports.stream_s(&eth100(), p), busiest, "{ctx}");
            }
        }
    }
    let s = |key: &str, pl, dl, p| {
        PortLoads::new(
            &model(key),
            &eth100(),
            Some(&nvlink4()),
            &h100(),
            &RankOptions::new(pl, dl),
        )
        .unwrap()
        .stream_s(&eth100(), p)
    };
    // DeepSeek-V3 TP4 -> TP8: a prefill port sends two copies, 287,834,112 B.
    assert_eq!(s("deepseek-v3", tp(4), tp(8), P), 287_834_112.0 / 12.5e9);
    // gpt-oss TP8 -> TP8 at 100 tokens: 921,600 B a port; at 2,048: 10,027,008 B.
    assert_eq!(s("gpt-oss-120b", tp(8), tp(8), 100), 921_600.0 / 12.5e9);
    assert_eq!(s("gpt-oss-120b", tp(8), tp(8), P), 10_027_008.0 / 12.5e9);
    // Qwen3-Next TP2 -> TP4: a prefill port sends half the state (19,759,104 B) at any P, plus
    // one KV head: 12 * 512 * 2 = 12,288 B a token.
    assert_eq!(
        s("qwen3-next-80b-a3b", tp(2), tp(4), 1),
        (19_759_104.0 + 12_288.0) / 12.5e9
    );
    assert_eq!(
        s("qwen3-next-80b-a3b", tp(2), tp(4), P),
        44_924_928.0 / 12.5e9
    );
}

#[test]
fn a_linear_state_that_does_not_split_evenly_is_refused() {
    // A custom Qwen3-Next whose linear layers have kernel 2, 1 key head of 1, 4 value heads of 1:
    // (2 - 1) * (2 * 1 * 1 + 4 * 1) = 6 conv values, which 4 ranks of one value head each cannot
    // split (6 * 1 / 4); the recurrent 4 * 1 * 1 = 4 values could.
    let mut m = model("qwen3-next-80b-a3b");
    let a = m.arch.as_mut().unwrap();
    a.cycle[0].attention = Attention::Linear {
        conv_kernel: 2,
        k_heads: 1,
        k_head_dim: 1,
        v_heads: 4,
        v_head_dim: 1,
        conv_bytes: 2.0,
        state_bytes: 2.0,
    };
    let plan = |dl| {
        rank_plan(
            &m,
            &eth100(),
            Some(&nvlink4()),
            &h100(),
            P,
            &RankOptions::new(tp(2), dl),
        )
    };
    assert_eq!(
        plan(tp(4)).unwrap_err().to_string(),
        "model: Qwen3-Next-80B-A3B's linear-attention state of 6 values does not split evenly \
         over its 4 value heads (1 of them on one rank)"
    );
    // On TP2 each rank takes 2 of 4 heads: 3 conv and 2 recurrent values a layer, 36 layers:
    // 36 * 5 * 2 = 360 B, plus one KV head of the 12 full layers (25,165,824 B).
    let p = plan(tp(2)).unwrap();
    assert_eq!(
        edges(&p),
        vec![(0, 0, 360.0 + 25_165_824.0), (1, 1, 360.0 + 25_165_824.0)]
    );
}

#[test]
fn pipeline_stages_take_each_layer_of_its_kind_in_layer_order() {
    // Gemma-3-27B: 10 cycles of (5 sliding W = 1,024, 1 full) then 2 sliding, 16 KV heads of 128:
    // 4,096 values a token a layer. PP2: stage 0 holds layers 0..31 (full at 5, 11, 17, 23, 29:
    // 26 sliding, 5 full), stage 1 layers 31..62 (full at 35, 41, 47, 53, 59: 24 sliding of the
    // cycle, 5 full, then the 2 tail layers). A sliding layer keeps 1,024 tokens:
    // 1024 * 4096 * 2 = 8,388,608 B; a full one 2,048: 16,777,216 B.
    let p = plan("gemma3-27b", RankLayout::new(1, 2), tp(1));
    let parts = |i: usize| -> Vec<(&str, u64, f64)> {
        p.flows[i]
            .parts
            .iter()
            .map(|x| (x.kind, x.layers, x.bytes))
            .collect()
    };
    assert_eq!(p.flows[0].layers, [0, 31]);
    assert_eq!(
        parts(0),
        vec![("sliding", 26, 218_103_808.0), ("full", 5, 83_886_080.0)]
    );
    assert_eq!(p.flows[1].layers, [31, 62]);
    assert_eq!(
        parts(1),
        vec![
            ("sliding", 24, 201_326_592.0),
            ("full", 5, 83_886_080.0),
            ("sliding", 2, 16_777_216.0)
        ]
    );
    // 26 * 8,388,608 + 5 * 16,777,216 = 301,989,888 B a stage.
    assert_eq!(
        edges(&p),
        vec![(0, 0, 301_989_888.0), (1, 0, 301_989_888.0)]
    );
    assert_eq!(p.link_bytes, 603_979_776.0);
}

#[test]
fn a_layer_count_that_is_not_the_layer_kinds_is_refused() {
    let mut m = model("deepseek-v2-lite");
    m.n_layers = 9;
    let e = rank_plan(
        &m,
        &eth100(),
        None,
        &h100(),
        P,
        &RankOptions::new(tp(1), tp(1)),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "model: DeepSeek-V2-Lite has 9 layers but its layer kinds list 27"
    );
}
