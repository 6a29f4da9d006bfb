//! Issue 16 as a user meets it: the served models in `handoff`, `list`, `run` (DeepSeek-V3 on a
//! 2P2D cluster of 8xH100 instances), the README's table, custom layer-kind models in TOML, and
//! what is refused. Byte counts are those of ../shared/models/models.json (cited in
//! crates/disagg-model/tests/fixtures/served_models.json) or hand arithmetic.

use crate::common;
use common::*;

#[test]
fn deepseek_v3_link_table() {
    let v = ok_json(&["handoff", "--model", "deepseek-v3", "--all-links", "--json"]);
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.len() >= 9);
    for r in rows {
        // 61 layers x (512 + 64) values x 2 B x 2,048 tokens.
        assert_eq!(r["kv_bytes"].as_f64(), Some(143_917_056.0));
        assert_eq!(r["kv_bytes_per_token"].as_f64(), Some(70_272.0));
    }
    let eth = rows.iter().find(|r| r["link"] == "eth-100g").unwrap();
    let (lat, bw) = (
        eth["link_latency_s"].as_f64().unwrap(),
        eth["link_bandwidth_bps"].as_f64().unwrap(),
    );
    assert_eq!(eth["transfer_s"].as_f64(), Some(lat + 143_917_056.0 / bw));
    let t = ok_text(&["handoff", "--model", "deepseek-v3", "--all-links"]);
    assert!(t.starts_with("DeepSeek-V3, 2,048 prompt tokens"), "{t}");
    assert!(t.contains("143.9 MB takes"), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("100 GbE") && l.contains("11.5 ms")),
        "{t}"
    );
}

#[test]
fn the_readme_table_lists_every_served_model() {
    let t = ok_text(&["handoff", "--models-table"]);
    for (key, b2048, b32768) in [
        ("deepseek-v3", 143_917_056u64, 2_302_672_896u64),
        ("kimi-k2", 143_917_056, 2_302_672_896),
        ("qwen3-235b-a22b", 394_264_576, 6_308_233_216),
        ("gpt-oss-120b", 80_216_064, 1_212_678_144),
        ("gemma3-27b", 603_979_776, 3_120_562_176),
        ("llama3.1-405b", 1_056_964_608, 16_911_433_728),
        ("llama4-maverick", 402_653_184, 2_818_572_288),
        ("qwen3-next-80b-a3b", 89_849_856, 844_824_576),
        ("deepseek-v2-lite", 63_700_992, 1_019_215_872),
    ] {
        let row = t
            .lines()
            .find(|l| l.starts_with(&format!("| {key} |")))
            .unwrap_or_else(|| panic!("{key} row"));
        let th = |n: u64| {
            let s = n.to_string();
            let mut o = String::new();
            for (i, c) in s.chars().enumerate() {
                if i > 0 && (s.len() - i).is_multiple_of(3) {
                    o.push(',');
                }
                o.push(c);
            }
            o
        };
        assert!(row.contains(&th(b2048)), "{row}");
        assert!(row.contains(&th(b32768)), "{row}");
    }
    // 16 rows (the chapter's model and the 15) after the header and the rule.
    assert_eq!(t.lines().count(), 18);
}

#[test]
fn list_models_json_has_layer_kinds_and_sources() {
    let v = ok_json(&["list", "models", "--json"]);
    let m = v
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "gpt-oss-120b")
        .unwrap()
        .clone();
    assert_eq!(
        m["kv_kinds"],
        serde_json::json!({"sliding": 18, "full": 18})
    );
    assert_eq!(m["windowed_kv_bytes_per_token"].as_f64(), Some(36_864.0));
    assert_eq!(m["arch"]["cycles"], 18);
    assert_eq!(m["arch"]["cycle"][0]["attention"]["kind"], "sliding");
    assert_eq!(m["arch"]["cycle"][0]["attention"]["window"], 128);
    assert_eq!(m["arch"]["cycle"][0]["mlp"]["experts"], 128);
    assert!(m["source"]
        .as_str()
        .unwrap()
        .contains("openai--gpt-oss-120b_config.json @ "));
    let q = v
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "qwen3-next-80b-a3b")
        .unwrap()
        .clone();
    assert_eq!(q["state_bytes_per_request"].as_f64(), Some(39_518_208.0));
    // A reference model keeps its JSON: no layer-kind keys.
    let l = v
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "llama3-70b")
        .unwrap();
    assert!(l.get("arch").is_none() && l.get("kv_kinds").is_none());
}

#[test]
fn deepseek_v3_on_2p2d_8xh100() {
    // The README's cluster without its INT4 weights: the FP8 checkpoint, 671 GB, does not fit
    // in 8 x 80 GB x 0.9.
    let int4 = DEEPSEEK_2P2D_8XH100;
    let fp8: Vec<&str> = int4
        .iter()
        .copied()
        .filter(|a| *a != "--weight-format" && *a != "int4")
        .collect();
    let mut base = fp8.clone();
    base.extend(["--requests", "300"]);
    bad(&base, &["DeepSeek-V3 does not fit on 8x H100-SXM"]);
    // With 4-bit weights it does.
    let mut a = base.clone();
    a.extend(["--weight-format", "int4"]);
    let t = ok_text(&a);
    assert!(t.contains("300 done, 0 rejected"), "{t}");
    assert!(t.contains("layers       61 MLA: KV 70,272 B/token"), "{t}");
    assert!(
        t.contains("mla          61 layers cache a 576-value latent per token"),
        "{t}"
    );
    assert!(
        t.contains("moe          58 layers, 256 experts top-8 + 1 shared"),
        "{t}"
    );
    a.push("--json");
    let v = ok_json(&a);
    let s = &v["summary"];
    // Every hand-off is 143,917,056 B on the wire; 300 of them.
    assert_eq!(s["link"]["bytes"].as_f64(), Some(300.0 * 143_917_056.0));
    let l = &s["layers"];
    assert_eq!(l["mla"]["decode_flops_per_key"], 278_528);
    assert_eq!(l["moe"]["experts_touched_b1"].as_f64(), Some(8.0));
    assert_eq!(l["kv_bytes_per_token"].as_f64(), Some(70_272.0));
    // A reference model's summary has no layers block.
    let v = ok_json(&["run", "--requests", "50", "--json"]);
    assert!(v["summary"].get("layers").is_none());
}

#[test]
fn retention_rule_changes_what_crosses() {
    let run = |extra: &[&str]| {
        let mut a = vec![
            "run",
            "--model",
            "gpt-oss-20b",
            "--devices-per-instance",
            "2",
            "--prompt",
            "2048",
            "--prompt-cv",
            "0",
            "--requests",
            "20",
            "--json",
        ];
        a.extend(extra);
        ok_json(&a)["summary"]["link"]["bytes"].as_f64().unwrap()
    };
    // models.json: 53,477,376 B (window) and 53,452,800 B (vLLM strict) per 2,048-token prompt.
    assert_eq!(run(&[]), 20.0 * 53_477_376.0);
    assert_eq!(run(&["--kv-retention", "strict"]), 20.0 * 53_452_800.0);
    bad(
        &["run", "--model", "deepseek-v3", "--kv-retention", "strict"],
        &[
            "--kv-retention",
            "deepseek-v3 has no sliding-window or chunked layers",
            "gemma3-27b",
        ],
    );
    bad(
        &["run", "--kv-retention", "loose"],
        &["--kv-retention", "loose", "window", "strict"],
    );
}

#[test]
fn what_layer_kind_models_refuse() {
    let m = [
        "run",
        "--model",
        "deepseek-v3",
        "--devices-per-instance",
        "16",
    ];
    fn with<'a>(m: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        let mut a = m.to_vec();
        a.extend(extra);
        a
    }
    bad(&with(&m, &["--tp", "16"]), &["--tp/--pp", "deepseek-v3"]);
    bad(
        &with(&m, &["--speculative", "mtp"]),
        &["--speculative", "deepseek-v3"],
    );
    bad(
        &["run", "--model", "gemma3-27b", "--prefix-caching"],
        &["--prefix-caching", "gemma3-27b"],
    );
    bad(
        &["run", "--model", "gpt-oss-20b", "--send", "layerwise"],
        &["--send", "gpt-oss-20b", "disagg handoff --send layerwise"],
    );
    // DeepSeek-V3's 61 MLA layers are equal slices: layer-wise sending runs.
    ok(&with(&m, &["--send", "layerwise", "--requests", "20"]));
    // The calculator prices unequal slices.
    let v = ok_json(&[
        "handoff",
        "--model",
        "gpt-oss-120b",
        "--send",
        "layerwise",
        "--json",
    ]);
    assert!(v["exposed_s"].as_f64().unwrap() < v["transfer_s"].as_f64().unwrap());
    bad(
        &["handoff", "--model", "gpt-oss-120b", "--speculative", "mtp"],
        &["--speculative", "gpt-oss-120b"],
    );
}

#[test]
fn custom_layer_kind_model_in_toml() {
    let dir = std::env::temp_dir().join(format!("disagg-served-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("cat.toml");
    // Two sliding layers (window 4, 2 KV heads of 8) then one full layer, twice, plus a linear
    // layer; MoE on the full layers.
    std::fs::write(
        &f,
        r#"
[models.toy]
d_model = 64
heads = 4
vocab = 100
cycles = 2
why_kv = "a toy"

[[models.toy.cycle]]
count = 2
attention = { kind = "sliding", kv_heads = 2, head_dim = 8, window = 4 }
mlp = { kind = "dense", d_ff = 128 }

[[models.toy.cycle]]
count = 1
attention = { kind = "full", kv_heads = 2, head_dim = 8 }
mlp = { kind = "moe", experts = 4, top_k = 2, d_ff_expert = 32 }

[[models.toy.tail]]
count = 1
attention = { kind = "linear", conv_kernel = 4, k_heads = 2, k_head_dim = 8, v_heads = 2, v_head_dim = 8 }
mlp = { kind = "dense", d_ff = 128 }
"#,
    )
    .unwrap();
    let c = f.to_str().unwrap();
    let v = ok_json(&[
        "--catalogue",
        c,
        "handoff",
        "--model",
        "toy",
        "--prompt-tokens",
        "10",
        "--json",
    ]);
    // Per token per layer 2 x 2 x 8 = 32 values. 2 full layers keep 10 tokens, 4 sliding keep
    // 4: (2 x 10 + 4 x 4) x 32 x 2 B = 2,304 B. The linear state: (4 - 1) x (2 x 2 x 8 + 2 x 8)
    // = 144 conv values + 2 x 8 x 8 = 128 recurrent, x 2 B = 544 B.
    assert_eq!(v["kv_bytes"].as_f64(), Some(2_304.0 + 544.0));
    assert_eq!(v["kv_bytes_per_token"].as_f64(), Some(2.0 * 32.0 * 2.0));
    let l = ok_json(&["--catalogue", c, "list", "models", "--json"]);
    let t = l
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "toy")
        .unwrap();
    assert_eq!(t["n_layers"], 7);
    assert_eq!(
        t["kv_kinds"],
        serde_json::json!({"sliding": 4, "full": 2, "linear": 1})
    );
    // Bad layer kinds: one line naming the field.
    std::fs::write(
        &f,
        "[models.bad]\nd_model = 64\nheads = 4\nvocab = 100\n[[models.bad.cycle]]\ncount = 1\n\
         attention = { kind = \"sliding\", kv_heads = 2, head_dim = 8, window = 0 }\n\
         mlp = { kind = \"dense\", d_ff = 128 }\n",
    )
    .unwrap();
    bad(
        &["--catalogue", c, "list", "models"],
        &["window", "at least 1"],
    );
    std::fs::write(
        &f,
        "[models.bad]\nd_model = 64\nheads = 4\nvocab = 100\n[[models.bad.cycle]]\ncount = 1\n\
         attention = { kind = \"ring\" }\nmlp = { kind = \"dense\", d_ff = 128 }\n",
    )
    .unwrap();
    bad(&["--catalogue", c, "list", "models"], &["ring"]);
    std::fs::write(
        &f,
        "[models.bad]\nd_model = 64\nheads = 4\nvocab = 100\ncycles = 2\n",
    )
    .unwrap();
    bad(
        &["--catalogue", c, "list", "models"],
        &["cycles", "needs 'cycle'"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn analytic_bounds_use_the_hand_off_and_the_reservation() {
    let v = ok_json(&[
        "run",
        "--model",
        "gemma3-27b",
        "--devices-per-instance",
        "2",
        "--prompt-cv",
        "0",
        "--requests",
        "50",
        "--json",
    ]);
    let links = ok_json(&["list", "links", "--json"]);
    let l = links
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["key"] == "ib-ndr")
        .unwrap()
        .clone();
    let (lat, bw) = (
        l["latency_s"].as_f64().unwrap(),
        l["bandwidth_bps"].as_f64().unwrap(),
    );
    // A 2,048-token Gemma 3 hand-off is 603,979,776 B (models.json), not 2,048 x 81,920.
    let a = &v["summary"]["analytic"];
    assert_eq!(
        a["kv_link_rps"].as_f64(),
        Some(1.0 / (lat + 603_979_776.0 / bw))
    );
    assert_eq!(a["kv_link_rps"], a["kv_link_wire_rps"]);
}
