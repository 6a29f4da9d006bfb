//! Issue 16: the layer kinds one by one (arch.rs), by hand: what each keeps, costs and refuses.

use disagg_model::arch::*;
use disagg_model::*;

fn gqa(kv_heads: u64, head_dim: u64) -> Attention {
    Attention::Full { kv_heads, head_dim }
}

fn sliding(window: u64) -> Attention {
    Attention::Sliding {
        kv_heads: 2,
        head_dim: 8,
        window,
    }
}

fn chunked(chunk: u64) -> Attention {
    Attention::Chunked {
        kv_heads: 2,
        head_dim: 8,
        chunk,
    }
}

fn mla(q_lora_rank: u64) -> Attention {
    Attention::Mla {
        kv_lora_rank: 16,
        qk_rope_head_dim: 4,
        qk_nope_head_dim: 8,
        v_head_dim: 6,
        q_lora_rank,
    }
}

fn linear() -> Attention {
    Attention::Linear {
        conv_kernel: 4,
        k_heads: 2,
        k_head_dim: 8,
        v_heads: 3,
        v_head_dim: 5,
        conv_bytes: 2.0,
        state_bytes: 4.0,
    }
}

fn run(count: u64, attention: Attention, mlp: Mlp) -> LayerRun {
    LayerRun {
        count,
        attention,
        mlp,
    }
}

fn dense() -> Mlp {
    Mlp::Dense { d_ff: 10 }
}

fn moe() -> Mlp {
    Mlp::Moe {
        experts: 4,
        top_k: 2,
        shared_experts: 1,
        d_ff_expert: 3,
        d_ff_shared: Some(5),
    }
}

fn arch(cycle: Vec<LayerRun>, cycles: u64, tail: Vec<LayerRun>) -> Arch {
    Arch {
        cycle,
        cycles,
        tail,
        retention: Retention::Window,
        tied_embeddings: false,
        why_kv: String::new(),
    }
}

fn model(a: Arch) -> ModelSpec {
    let (kv_heads, head_dim, d_ff) = a.display_shape();
    ModelSpec {
        key: "m".into(),
        name: "M".into(),
        n_layers: a.n_layers(),
        d_model: 12,
        n_heads: 4,
        n_kv_heads: kv_heads,
        head_dim: Some(head_dim),
        d_ff,
        vocab: 7,
        weight_bytes: 2.0,
        kv_bytes: 2.0,
        prefill_lm_head: LmHead::All,
        context_tokens: None,
        moe: None,
        fft: None,
        ced: None,
        arch: Some(Box::new(a)),
    }
}

#[test]
fn names() {
    assert_eq!(Retention::parse("window").unwrap(), Retention::Window);
    assert_eq!(Retention::parse("strict").unwrap(), Retention::Strict);
    assert_eq!(Retention::Strict.as_str(), "strict");
    assert_eq!(Retention::Window.as_str(), "window");
    let e = Retention::parse("loose").unwrap_err().to_string();
    assert!(e.contains("loose") && e.contains("window, strict"), "{e}");
    let kinds: Vec<&str> = [gqa(1, 1), mla(0), sliding(3), chunked(3), linear()]
        .iter()
        .map(|a| a.kind())
        .collect();
    assert_eq!(kinds, ["full", "mla", "sliding", "chunked", "linear"]);
    assert_eq!((dense().kind(), moe().kind()), ("dense", "moe"));
}

/// The retention rule is written out only when it is not the default (`window`), and reads back.
#[test]
fn retention_is_serialised_only_when_not_the_default() {
    let mut a = arch(vec![run(2, sliding(4), dense())], 1, vec![]);
    let v = serde_json::to_value(&a).unwrap();
    assert!(v.get("retention").is_none(), "{v}");
    a.retention = Retention::Strict;
    let v = serde_json::to_value(&a).unwrap();
    assert_eq!(v["retention"], "strict", "{v}");
    let back: Arch = serde_json::from_value(v).unwrap();
    assert_eq!(back.retention, Retention::Strict);
}

#[test]
fn what_each_kind_keeps() {
    // Per token per layer: (G)QA 2 x Hkv x hd; MLA kv_lora + rope; linear nothing.
    assert_eq!(gqa(3, 5).values_per_token(), 30);
    assert_eq!(sliding(4).values_per_token(), 32);
    assert_eq!(mla(0).values_per_token(), 20);
    assert_eq!(linear().values_per_token(), 0);
    assert!(gqa(1, 1).unbounded() && mla(0).unbounded());
    assert!(!sliding(4).unbounded() && !chunked(4).unbounded() && !linear().unbounded());
    // Kept and peak tokens of a 10-token sequence.
    let w = Retention::Window;
    assert_eq!(gqa(1, 1).kept_tokens(10, w), 10);
    assert_eq!(mla(0).kept_tokens(10, Retention::Strict), 10);
    assert_eq!(sliding(4).kept_tokens(10, w), 4);
    assert_eq!(sliding(4).kept_tokens(3, Retention::Strict), 3);
    assert_eq!(chunked(4).kept_tokens(10, w), 2);
    assert_eq!(chunked(4).kept_tokens(8, w), 4);
    assert_eq!(chunked(4).kept_tokens(8, Retention::Strict), 0);
    assert_eq!(linear().kept_tokens(10, w), 0);
    assert_eq!(sliding(4).peak_tokens(10), 4);
    assert_eq!(chunked(4).peak_tokens(3), 3);
    assert_eq!(gqa(1, 1).peak_tokens(10), 10);
    assert_eq!(linear().peak_tokens(10), 0);
    // Keys a query at position n attends to.
    assert_eq!(
        [
            gqa(1, 1).keys_at(9),
            sliding(4).keys_at(9),
            chunked(4).keys_at(9),
            chunked(4).keys_at(0)
        ],
        [9, 4, 1, 0]
    );
    assert_eq!(linear().keys_at(9), 0);
    // The linear state: conv (4 - 1) x (2 x 2 x 8 + 3 x 5) = 141 values, recurrent 3 x 5 x 8 =
    // 120; 141 x 2 B + 120 x 4 B = 762 B.
    assert_eq!(linear().state_values(), (141, 120));
    assert_eq!(linear().state_bytes(), 762.0);
    assert_eq!(gqa(1, 1).state_values(), (0, 0));
    assert_eq!(mla(0).state_bytes(), 0.0);
    assert_eq!(sliding(4).shard_heads(), Some(2));
    assert_eq!(linear().shard_heads(), Some(3));
    assert_eq!(mla(0).shard_heads(), None);
}

#[test]
fn parameters_and_flops_of_each_kind() {
    // d = 12, H = 4. (G)QA with 2 KV heads of 8: q and o 2 x 12 x 32, k and v 2 x 12 x 16.
    assert_eq!(gqa(2, 8).params(12, 4), 2 * 12 * 32 + 2 * 12 * 16);
    assert_eq!(chunked(9).params(12, 4), gqa(2, 8).params(12, 4));
    // MLA without a query rank: q 12 x 4 x (8 + 4), kv_a 12 x (16 + 4), kv_b 16 x 4 x (8 + 6),
    // o 4 x 6 x 12; with rank 5 the query is 12 x 5 + 5 x 4 x 12.
    let base = 12 * (16 + 4) + 16 * 4 * (8 + 6) + 4 * 6 * 12;
    assert_eq!(mla(0).params(12, 4), 12 * 4 * 12 + base);
    assert_eq!(mla(5).params(12, 4), 12 * 5 + 5 * 4 * 12 + base);
    // Gated DeltaNet: qkvz 12 x (2 x 16 + 2 x 15), ba 12 x 2 x 3, conv (2 x 16 + 15) x 4,
    // out 15 x 12.
    assert_eq!(linear().params(12, 4), 12 * 62 + 12 * 6 + 47 * 4 + 15 * 12);
    // Pair FLOPs: 4 H hd for (G)QA in both phases; MLA 2 H (nope + rope + v) in prefill and
    // 2 H (kv_lora + rope) + 2 H kv_lora in decode.
    assert_eq!(gqa(2, 8).prefill_pair_flops(4), 128);
    assert_eq!(sliding(4).decode_pair_flops(4), 128);
    assert_eq!(mla(0).prefill_pair_flops(4), 2 * 4 * 18);
    assert_eq!(mla(0).decode_pair_flops(4), 2 * 4 * 20 + 2 * 4 * 16);
    assert_eq!(linear().prefill_pair_flops(4), 0);
    // Per token: the conv 2 x 4 x 47 and the delta rule 6 x 3 x 8 x 5.
    assert_eq!(linear().token_flops(), 2 * 4 * 47 + 6 * 3 * 8 * 5);
    assert_eq!(gqa(1, 1).token_flops(), 0);
    // Chunk pairs: tokens 3..=6 (p0 = 2, c = 4): full 3+4+5+6 = 18; window 4: 3+4+4+4 = 15;
    // chunk 4: 3+4+1+2 = 10; linear none.
    assert_eq!(gqa(1, 1).chunk_pairs(2, 4), 18);
    assert_eq!(sliding(4).chunk_pairs(2, 4), 15);
    assert_eq!(chunked(4).chunk_pairs(2, 4), 10);
    assert_eq!(linear().chunk_pairs(2, 4), 0);
    assert_eq!(window_pairs(6, 4), 1 + 2 + 3 + 4 + 4 + 4);
    assert_eq!(chunk_pairs(6, 4), 1 + 2 + 3 + 4 + 1 + 2);
    // MLPs: dense 3 x 12 x 10; MoE router 12 x 4 + shared 3 x 12 x 5, experts 3 x 12 x 3.
    let d = dense().params(12);
    assert_eq!(
        (d.fixed, d.expert, d.active(), d.resident()),
        (360, 0, 360, 360)
    );
    let m = moe().params(12);
    assert_eq!(
        (m.fixed, m.expert, m.experts, m.top_k),
        (48 + 180, 108, 4, 2)
    );
    assert_eq!((m.active(), m.resident()), (228 + 216, 228 + 432));
}

#[test]
fn an_arch_sums_its_runs() {
    let a = arch(
        vec![run(2, sliding(4), dense()), run(1, gqa(2, 8), moe())],
        3,
        vec![run(1, linear(), dense()), run(1, mla(0), dense())],
    );
    assert_eq!(a.n_layers(), 11);
    assert_eq!(a.runs().count(), 8);
    assert_eq!(
        a.kind_counts(),
        vec![("sliding", 6), ("full", 3), ("linear", 1), ("mla", 1)]
    );
    assert!(a.is_moe() && a.has_windows());
    assert!(!arch(vec![run(1, gqa(1, 1), dense())], 1, vec![]).is_moe());
    assert!(!arch(vec![run(1, linear(), dense())], 1, vec![]).has_windows());
    // Growing: 3 full x 32 + 1 MLA x 20 = 116; windowed 6 x 32 = 192.
    assert_eq!(a.unbounded_values_per_token(), 116);
    assert_eq!(a.windowed_values_per_token(), 192);
    // 10 tokens: 116 x 10 + 192 x 4 kept; peak the same; state 762 B.
    assert_eq!(a.kept_values(10), 1160 + 768);
    assert_eq!(a.peak_values(3), 116 * 3 + 192 * 3);
    assert_eq!(a.state_bytes(), 762.0);
    let h = a.handoff_parts(10, 2.0);
    assert_eq!((h.kv_bytes, h.state_bytes), (1928.0 * 2.0, 762.0));
    // Parameters: 3 x (2 sliding + full) + linear + MLA attention, MLPs active and resident.
    let att = 6 * sliding(4).params(12, 4)
        + 3 * gqa(2, 8).params(12, 4)
        + linear().params(12, 4)
        + mla(0).params(12, 4);
    assert_eq!(
        a.layer_params(12, 4),
        (att + 8 * 360 + 3 * 444, att + 8 * 360 + 3 * 660)
    );
    // A chunk's KV: every attention layer writes c = 3 tokens and reads what p0 = 5 keeps.
    assert_eq!(a.chunk_kv_values(5, 3), 116 * (5 + 3) + 192 * (4 + 3));
    // Decode terms: per key 3 x 128 (full) + 1 x (2 x 4 x 20 + 2 x 4 x 16) (MLA); per row the
    // linear layer's token FLOPs; 116 values per key.
    assert_eq!(
        a.decode_linear(4),
        (3 * 128 + 288, linear().token_flops(), 116)
    );
    // A row at position 9: 6 sliding layers x 4 keys x 128 FLOPs, x 32 values.
    assert_eq!(a.windowed_decode(4, 9), (6 * 4 * 128, 6 * 4 * 32));
    // Slices in layer order: sliding, sliding, full, ... then linear, MLA.
    let s = a.layer_slices(10, 2.0);
    assert_eq!(s.len(), 11);
    // 4 kept x 32 values x 2 B = 256; 10 x 32 x 2 = 640; 10 x 20 x 2 = 400.
    assert_eq!(&s[..3], &[256.0, 256.0, 640.0]);
    assert_eq!(&s[9..], &[762.0, 400.0]);
    assert_eq!(a.display_shape(), (2, 8, 10));
    // MLA only: one latent of 20; linear only: its value heads.
    assert_eq!(
        arch(vec![run(1, mla(0), moe())], 1, vec![]).display_shape(),
        (1, 20, 3)
    );
    assert_eq!(
        arch(vec![run(1, linear(), dense())], 1, vec![]).display_shape(),
        (3, 5, 10)
    );
}

#[test]
fn reservations_by_bound() {
    let a = arch(
        vec![
            run(1, sliding(4), dense()),
            run(1, chunked(6), dense()),
            run(1, sliding(4), dense()),
        ],
        1,
        vec![run(1, gqa(1, 1), dense())],
    );
    // Two windows of 4 (merged: 64 values) and a chunk of 6 (32), a growing 2; unit 8 B.
    let r = a.reserve(2.0, 8.0).unwrap();
    // 10 tokens: (2 x 10 + 64 x 4 + 32 x 6) x 2 B = 936 B -> 117 units.
    assert_eq!(r.units(10), 117);
    // 1 token: (2 + 64 + 32) x 2 = 196 B -> 24.5 -> 25 units.
    assert_eq!(r.units(1), 25);
    assert_eq!(r.units(0), 0);
    let m = model(a);
    assert_eq!(m.kv_units(10), ((2 * 10 + 64 * 4 + 32 * 6) * 2) as u64 / 4);
    assert_eq!(m.reserved_kv_bytes(10), 936.0);
    assert!(m.kv_is_bounded());
    // Seven distinct windows are more than a reservation holds.
    let many: Vec<LayerRun> = (1..=7).map(|w| run(1, sliding(w + 1), dense())).collect();
    let e = model(arch(many, 1, vec![]))
        .validate()
        .unwrap_err()
        .to_string();
    assert!(e.contains("at most 6 distinct windows"), "{e}");
    // Without a growing layer the unit is a windowed token, then a state.
    let w = model(arch(vec![run(2, sliding(4), dense())], 1, vec![]));
    assert_eq!(w.cache_unit_bytes(), 2.0 * 32.0 * 2.0);
    assert_eq!(w.kv_units(100), 4);
    let l = model(arch(vec![run(2, linear(), dense())], 1, vec![]));
    assert_eq!(l.cache_unit_bytes(), 1524.0);
    assert_eq!(l.kv_units(100), 1);
    // A plain GQA arch reserves tokens.
    let g = model(arch(vec![run(2, gqa(2, 8), dense())], 1, vec![]));
    assert!(!g.kv_is_bounded());
    assert_eq!(g.kv_units(100), 100);
    assert!(g.layer_fractions(100).is_none());
    assert_eq!(l.layer_fractions(100), None);
    let f = w.layer_fractions(2);
    assert!(f.is_none());
}

#[test]
fn refusals_name_the_field() {
    let bad = |a: Arch| a.validate("model 'm'").unwrap_err().to_string();
    let e = bad(arch(vec![], 1, vec![]));
    assert!(
        e.contains("model 'm' layers") && e.contains("at least one layer run"),
        "{e}"
    );
    let e = bad(arch(vec![run(1, gqa(1, 1), dense())], 0, vec![]));
    assert!(
        e.contains("cycles") && e.contains("between 1 and 65536"),
        "{e}"
    );
    let e = bad(arch(vec![run(1, gqa(1, 1), dense())], 70_000, vec![]));
    assert!(e.contains("cycles"), "{e}");
    let e = bad(arch(vec![run(0, gqa(1, 1), dense())], 1, vec![]));
    assert!(e.contains("count") && e.contains("at least 1"), "{e}");
    let e = bad(arch(vec![run(1, sliding(0), dense())], 1, vec![]));
    assert!(e.contains("window") && e.contains("at least 1"), "{e}");
    let e = bad(arch(
        vec![run(1, chunked((1 << 24) + 1), dense())],
        1,
        vec![],
    ));
    assert!(e.contains("chunk") && e.contains("absurdly large"), "{e}");
    let e = bad(arch(
        vec![run(
            1,
            gqa(1, 1),
            Mlp::Moe {
                experts: 2,
                top_k: 3,
                shared_experts: 0,
                d_ff_expert: 1,
                d_ff_shared: None,
            },
        )],
        1,
        vec![],
    ));
    assert!(
        e.contains("top_k") && e.contains("more than the 2 experts"),
        "{e}"
    );
    let mut lin = linear();
    if let Attention::Linear { state_bytes, .. } = &mut lin {
        *state_bytes = 0.0;
    }
    let e = bad(arch(vec![run(1, lin, dense())], 1, vec![]));
    assert!(e.contains("state_bytes"), "{e}");
    let e = bad(arch(
        vec![run(1, mla(0), Mlp::Dense { d_ff: 0 })],
        1,
        vec![],
    ));
    assert!(e.contains("d_ff"), "{e}");
    // The layer count must match; an arch model takes no levers' MoE.
    let mut m = model(arch(vec![run(2, gqa(1, 1), dense())], 1, vec![]));
    m.n_layers = 3;
    let e = m.validate().unwrap_err().to_string();
    assert!(e.contains("3 does not match the 2 layers"), "{e}");
    let mut m = model(arch(vec![run(2, gqa(1, 1), dense())], 1, vec![]));
    m.moe = Some(Moe::mixtral());
    let e = m.validate().unwrap_err().to_string();
    assert!(e.contains("takes its MoE from its layers"), "{e}");
    assert!(model(arch(vec![run(2, gqa(1, 1), dense())], 1, vec![]))
        .validate()
        .is_ok());
}

#[test]
fn custom_models_by_layer_kind() {
    let c = Catalogue::builtin();
    let resolve = |toml_text: &str| -> Result<ModelSpec, String> {
        let m: disagg_model::custom::CustomModel =
            toml::from_str(toml_text).map_err(|e| e.to_string())?;
        m.resolve("mine", &c).map_err(|e| e.to_string())
    };
    let text = "d_model = 12\nheads = 4\nvocab = 7\ncycles = 3\nwhy_kv = 'why'\n\
                kv_retention = 'strict'\ntied_embeddings = true\n\
                [[cycle]]\ncount = 2\n\
                attention = { kind = 'sliding', kv_heads = 2, head_dim = 8, window = 4 }\n\
                mlp = { kind = 'dense', d_ff = 10 }\n\
                [[tail]]\ncount = 1\nattention = { kind = 'full', kv_heads = 2, head_dim = 8 }\n\
                mlp = { kind = 'dense', d_ff = 10 }\n";
    let m = resolve(text).unwrap();
    let a = m.arch.as_deref().unwrap();
    // 3 cycles of 2 sliding layers, then 1 full: 7 layers; the display shape from the first.
    assert_eq!(
        (m.n_layers, m.n_kv_heads, m.head_dim, m.d_ff),
        (7, 2, Some(8), 10)
    );
    assert_eq!((a.cycles, a.tail.len(), a.why_kv.as_str()), (3, 1, "why"));
    assert_eq!(a.retention, Retention::Strict);
    assert!(a.tied_embeddings);
    // Strict: 6 sliding layers keep min(10, 3) = 3 tokens, the full one 10: (18 + 10) x 32 x 2.
    assert_eq!(m.handoff_bytes(10), 28.0 * 32.0 * 2.0);
    // One embedding matrix when tied.
    assert_eq!(m.params(), a.layer_params(12, 4).1 + 7 * 12);
    // From a base with layers: its arch, with cycles, tail, retention and the line replaced.
    let m = resolve("base = 'gpt-oss-20b'\ncycles = 2\nkv_retention = 'strict'\n").unwrap();
    assert_eq!(m.n_layers, 4);
    assert_eq!(m.arch.as_deref().unwrap().retention, Retention::Strict);
    let m =
        resolve("base = 'gemma3-27b'\ntail = []\nwhy_kv = 'x'\ntied_embeddings = false\n").unwrap();
    let a = m.arch.as_deref().unwrap();
    assert_eq!(
        (m.n_layers, a.why_kv.as_str(), a.tied_embeddings),
        (60, "x", false)
    );
    // Refusals: the layer-kind fields need a cycle; a cycle takes no levers' MoE, mixer or CED;
    // the layer count must match.
    for (text, needle) in [
        ("d_model = 12\nheads = 4\nvocab = 7\nlayers = 2\nkv_heads = 1\nd_ff = 3\ncycles = 2\n", "cycles"),
        ("d_model = 12\nheads = 4\nvocab = 7\nlayers = 2\nkv_heads = 1\nd_ff = 3\ntail = []\n", "tail"),
        ("d_model = 12\nheads = 4\nvocab = 7\nlayers = 2\nkv_heads = 1\nd_ff = 3\nkv_retention = 'strict'\n", "kv_retention"),
        ("d_model = 12\nheads = 4\nvocab = 7\nlayers = 2\nkv_heads = 1\nd_ff = 3\nwhy_kv = 'x'\n", "why_kv"),
        ("d_model = 12\nheads = 4\nvocab = 7\nlayers = 2\nkv_heads = 1\nd_ff = 3\ntied_embeddings = true\n", "tied_embeddings"),
        ("base = 'deepseek-v3'\nn_experts = 8\ntop_k = 2\n", "n_experts"),
        ("base = 'deepseek-v3'\nmixer = 'hyena'\n", "mixer"),
        ("base = 'deepseek-v3'\nced_encoder_layers = 2\n", "ced_encoder_layers"),
        ("base = 'deepseek-v3'\nlayers = 60\n", "does not match the 61 layers"),
        ("base = 'gpt-oss-20b'\nkv_retention = 'loose'\n", "loose"),
    ] {
        let e = resolve(text).unwrap_err();
        assert!(e.contains(needle), "{text}: {e}");
    }
    // A plain custom model has no arch.
    let m = resolve("base = 'llama3-8b'\n").unwrap();
    assert!(m.arch.is_none());
}

/// A linear-attention layer read without `conv_bytes` / `state_bytes` holds them in BF16 (2 bytes
/// per value), the serde default; given values are kept.
#[test]
fn linear_state_bytes_default_to_bf16() {
    let read = |extra: &str| -> Attention {
        serde_json::from_str(&format!(
            r#"{{"kind": "linear", "conv_kernel": 4, "k_heads": 16, "k_head_dim": 128,
                "v_heads": 32, "v_head_dim": 128{extra}}}"#
        ))
        .unwrap()
    };
    match read("") {
        Attention::Linear {
            conv_bytes,
            state_bytes,
            ..
        } => assert_eq!((conv_bytes, state_bytes), (2.0, 2.0)),
        other => panic!("not linear: {other:?}"),
    }
    match read(r#", "state_bytes": 4.0"#) {
        Attention::Linear {
            conv_bytes,
            state_bytes,
            ..
        } => assert_eq!((conv_bytes, state_bytes), (2.0, 4.0)),
        other => panic!("not linear: {other:?}"),
    }
}

/// `cycles` may be left out of a layer description: the period then stands once.
#[test]
fn cycles_default_to_one() {
    let a = arch(vec![run(2, sliding(4), dense())], 3, vec![]);
    let mut v = serde_json::to_value(&a).unwrap();
    assert_eq!(v["cycles"], 3, "{v}");
    v.as_object_mut().unwrap().remove("cycles");
    let back: Arch = serde_json::from_value(v).unwrap();
    assert_eq!(back.cycles, 1);
    assert_eq!(back.cycle, a.cycle);
}
