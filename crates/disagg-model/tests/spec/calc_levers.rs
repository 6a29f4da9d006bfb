//! The calculator's formats and speculative draft (`kv_format`, `weight_format`,
//! `compute_format`, `speculative`): the 14 `handoff.*` entries of the reference's
//! levers-cost-fixtures.json (copied unchanged into tests/fixtures/levers/cost.json) with `==`,
//! the `quant.*` prefill times the formats give the prefill step, `docs/levers.md#scheduled-instances`'s errors in
//! order, and the rank-aware hand-off's bytes under a KV format.

use disagg_model::calc::{evaluate, formats_of, HandoffDoc, HandoffSpec};
use disagg_model::ranks::{self, RankSpec};
use disagg_model::*;
use serde_json::Value;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn eval(spec: &HandoffSpec) -> Result<HandoffDoc, Error> {
    evaluate(&cat(), spec, None, None, None)
}

fn err(spec: &HandoffSpec) -> String {
    eval(spec).unwrap_err().to_string()
}

fn spec(f: impl Fn(&mut HandoffSpec)) -> HandoffSpec {
    let mut s = HandoffSpec::default();
    f(&mut s);
    s
}

fn some(s: &str) -> Option<String> {
    Some(s.to_string())
}

fn handoff_entries() -> Vec<Value> {
    let v: Value = serde_json::from_str(include_str!("../fixtures/levers/cost.json")).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["id"].as_str().unwrap().starts_with("handoff."))
        .cloned()
        .collect()
}

#[test]
fn every_handoff_fixture_through_the_calculator() {
    let es = handoff_entries();
    assert_eq!(es.len(), 14);
    let mut fields = 0;
    for e in &es {
        let id = e["id"].as_str().unwrap();
        let cm = &e["cost_model"];
        let s = HandoffSpec {
            model: cm["model"].as_str().unwrap().into(),
            link: cm["link"].as_str().unwrap().into(),
            prompt_tokens: e["args"]["prompt_len"].as_u64().unwrap(),
            kv_format: cm["kv_format"].as_str().map(String::from),
            speculative: cm["speculative"]["draft"].as_str().map(String::from),
            ..HandoffSpec::default()
        };
        let doc = eval(&s).unwrap_or_else(|e| panic!("{id}: {e}"));
        let h = &doc.row.as_ref().unwrap().handoff;
        let out = &e["out"];
        let f = |k: &str| out[k].as_f64().unwrap();
        assert_eq!(h.transfer_s, f("seconds"), "{id} seconds");
        assert_eq!(h.wire_bytes, f("wire_bytes"), "{id} wire_bytes");
        assert_eq!(
            h.kv_bytes,
            f("wire_bytes"),
            "{id} kv_bytes (no compression)"
        );
        assert_eq!(h.link_energy_j, f("link_j"), "{id} link_j");
        assert_eq!(h.transit_energy_j, f("transit_j"), "{id} transit_j");
        assert_eq!(h.transit_bound, out["transit_bound"].as_bool().unwrap());
        fields += 5;
        if let Some(k) = out["kv_bytes_per_token"].as_f64() {
            assert_eq!(h.kv_bytes_per_token, k, "{id} kv_bytes_per_token");
            fields += 1;
        }
        // The echo: only what was given, canonical names.
        assert_eq!(doc.kv_format, s.kv_format, "{id}");
        assert_eq!(doc.speculative, s.speculative, "{id}");
        assert_eq!(
            (&doc.weight_format, &doc.compute_format),
            (&None, &None),
            "{id}"
        );
    }
    // 14 entries x 5 fields, and kv_bytes_per_token in the 10 Llama-3-8B format entries.
    assert_eq!(fields, 14 * 5 + 10);
}

#[test]
fn the_worked_examples_by_hand() {
    // `docs/cost-model.md#quantisation` item 4: Llama-3-8B (L = 32, Hkv = 8, hd = 128) in FP8: 2*32*8*128*1 =
    // 65,536 B a token, P = 2048: 134,217,728 B; ib-ndr 50 GB/s and 10 µs (0.00001 +
    // 134217728 / 5e10 = 0.00269435456 s); 15 pJ/bit: ((134217728 * 8) * 15) * 1e-12 J.
    let d = eval(&spec(|s| {
        s.link = "ib-ndr".into();
        s.kv_format = some("fp8");
    }))
    .unwrap();
    let h = d.row.unwrap().handoff;
    assert_eq!(h.kv_bytes_per_token, 65536.0);
    assert_eq!(h.wire_bytes, 134_217_728.0);
    assert_eq!(h.transfer_s, 0.00269435456);
    assert_eq!(h.link_energy_j, ((134_217_728.0 * 8.0) * 15.0) * 1e-12);
    // `docs/levers.md#speculative`: MTP's draft is one layer of the target: 2*1*8*128*2 = 4,096 B a token, so S =
    // 2048 * 131,072 + 2048 * 4,096 = 276,824,064 B and 1e-5 + S / 5e10 s.
    let d = eval(&spec(|s| {
        s.link = "ib-ndr".into();
        s.speculative = some("mtp");
    }))
    .unwrap();
    let h = d.row.unwrap().handoff;
    assert_eq!(h.kv_bytes_per_token, 131_072.0 + 4096.0);
    assert_eq!(h.wire_bytes, 276_824_064.0);
    assert_eq!(h.transfer_s, 0.0055464812799999996);
    assert_eq!(h.transfer_s, 0.00001 + 276_824_064.0 / 5e10);
    // A draft with an FP8 KV: both caches in FP8 (the draft takes the target's kv_bytes):
    // 2048 * (65,536 + 2,048) = 138,412,032 B.
    let d = eval(&spec(|s| {
        s.speculative = some("mtp");
        s.kv_format = some("fp8");
    }))
    .unwrap();
    assert_eq!(d.row.unwrap().handoff.wire_bytes, 138_412_032.0);
}

#[test]
fn the_formats_set_the_prefill_step() {
    // The quant.* CostModel.prefill entries of the reference (`docs/cost-model.md#quantisation` items 1-2), the
    // calculator's prefill step for the same model, device, devices and prompt.
    let es: Vec<Value> =
        serde_json::from_str(include_str!("../fixtures/levers/cost.json")).unwrap();
    let mut n = 0;
    for e in &es {
        let id = e["id"].as_str().unwrap();
        let cm = &e["cost_model"];
        if !id.starts_with("quant.") || e["function"] != "CostModel.prefill" {
            continue;
        }
        if cm.get("parallel").is_some() {
            continue; // the calculator has no layout
        }
        let lens = e["args"]["prompt_lens"].as_array().unwrap();
        if lens.len() != 1 {
            continue;
        }
        let fm = |k: &str| cm["formats"][k].as_str().map(String::from);
        let s = HandoffSpec {
            model: cm["model"].as_str().unwrap().into(),
            prefill_device: cm["device"].as_str().unwrap().into(),
            devices_per_instance: cm["n_devices"].as_u64().unwrap(),
            prompt_tokens: lens[0].as_u64().unwrap(),
            weight_format: fm("weight"),
            kv_format: fm("kv"),
            compute_format: fm("compute"),
            ..HandoffSpec::default()
        };
        let h = eval(&s).unwrap().row.unwrap().handoff;
        assert_eq!(h.prefill_s, e["out"]["time"].as_f64().unwrap(), "{id}");
        n += 1;
    }
    assert_eq!(n, 14);
    // Layer-wise sending uses that prefill: exposed = fixed + max(stream / L, stream -
    // prefill * (L - 1) / L), written out for Llama-3-8B on B200 in FP4 W4A4 with an INT4 KV
    // over 25 GbE (33,792 B a token: 2*32*8*128*0.515625).
    let s = spec(|s| {
        s.prefill_device = "b200".into();
        s.weight_format = some("fp4");
        s.compute_format = some("fp4");
        s.kv_format = some("int4");
        s.send = "layerwise".into();
    });
    let h = eval(&s).unwrap().row.unwrap().handoff;
    assert_eq!(h.prefill_s, 0.006932147360840404);
    let stream: f64 = (2048.0 * 33_792.0) / 3.125e9;
    let want = 20e-6 + (stream / 32.0).max(stream - (h.prefill_s * 31.0) / 32.0);
    assert_eq!(h.exposed_s, want);
    assert_eq!(h.transfer_s, 20e-6 + stream);
}

#[test]
fn a_draft_adds_its_prefill_pass_and_its_kv() {
    let c = cat();
    let base = eval(&HandoffSpec::default()).unwrap().row.unwrap().handoff;
    let with = eval(&spec(|s| s.speculative = some("mtp")))
        .unwrap()
        .row
        .unwrap()
        .handoff;
    // MTP: the target with one layer, run with no per-pass overhead (`docs/levers.md#speculative`).
    let target = c.model("llama3-8b").unwrap();
    let mtp = ModelSpec {
        n_layers: 1,
        ..target.clone()
    };
    let opts = CostOptions {
        step_overhead_s: 0.0,
        ..CostOptions::default()
    };
    let draft = CostModel::new(&mtp, c.device("h100").unwrap(), 1, opts).unwrap();
    assert_eq!(
        with.prefill_s,
        base.prefill_s + draft.prefill([2048]).time_s
    );
    assert!(with.prefill_s > base.prefill_s);
    // Over 25 GbE (3.125 GB/s, 20 µs): S = 2048 * (131,072 + 4,096).
    let s: f64 = 2048.0 * 135_168.0;
    assert_eq!(with.kv_bytes, s);
    assert_eq!(with.transfer_s, 20e-6 + s / 3.125e9);
    // Layer-wise: the closed form over the longer prefill and the larger stream (L = 32).
    let lw = eval(&spec(|s| {
        s.speculative = some("mtp");
        s.send = "layerwise".into();
    }))
    .unwrap()
    .row
    .unwrap()
    .handoff;
    let stream = s / 3.125e9;
    assert_eq!(
        lw.exposed_s,
        20e-6 + (stream / 32.0).max(stream - (with.prefill_s * 31.0) / 32.0)
    );
    // Eight at once over FIFO channels (one for 25 GbE): eight rounds of the whole transfer.
    let c8 = eval(&spec(|s| {
        s.speculative = some("mtp");
        s.concurrent = 8;
    }))
    .unwrap()
    .row
    .unwrap()
    .handoff;
    assert_eq!(c8.transfer_s, 8.0 * (20e-6 + s / 3.125e9));
    assert_eq!(c8.link_capacity_rps, 1.0 / (20e-6 + s / 3.125e9));
    // Fair sharing of 8 over one channel: the stream eight times as long.
    let f8 = eval(&spec(|s| {
        s.speculative = some("mtp");
        s.concurrent = 8;
        s.link_sharing = "fair".into();
    }))
    .unwrap()
    .row
    .unwrap()
    .handoff;
    assert_eq!(f8.transfer_s, 20e-6 + (s / 3.125e9) * 8.0);
    // A named draft: Llama-3.2-1B (16 layers, 8 KV heads, hd 64): 2*16*8*64*2 = 32,768 B a token.
    let one_b = eval(&spec(|s| s.speculative = some("llama3.2-1b")))
        .unwrap()
        .row
        .unwrap()
        .handoff;
    assert_eq!(one_b.kv_bytes_per_token, 131_072.0 + 32_768.0);
    assert_eq!(one_b.wire_bytes, 2048.0 * 163_840.0);
}

#[test]
fn the_echo_is_only_what_was_given() {
    let v = |s: &HandoffSpec| serde_json::to_value(eval(s).unwrap()).unwrap();
    let d = v(&HandoffSpec::default());
    for k in [
        "kv_format",
        "weight_format",
        "compute_format",
        "speculative",
    ] {
        assert!(d.get(k).is_none(), "{k} in the default document");
    }
    // The spec's own defaults (`/api/catalogue`'s `handoff_defaults`) leave them out too.
    let sd = serde_json::to_value(HandoffSpec::default()).unwrap();
    assert!(sd.get("kv_format").is_none() && sd.get("speculative").is_none());
    // Given, even as BF16: echoed.
    let g = v(&spec(|s| {
        s.kv_format = some("bf16");
        s.weight_format = some("int4");
        s.compute_format = some("bf16");
        s.speculative = some("llama3.2-1b");
    }));
    assert_eq!(g["kv_format"], "bf16");
    assert_eq!(g["weight_format"], "int4");
    assert_eq!(g["compute_format"], "bf16");
    assert_eq!(g["speculative"], "llama3.2-1b");
    // BF16 given is the default bit for bit.
    let a = eval(&spec(|s| s.kv_format = some("bf16"))).unwrap();
    assert_eq!(a.row, eval(&HandoffSpec::default()).unwrap().row);
    // With every link: one row each, each with the formats' bytes.
    let all = eval(&spec(|s| {
        s.all_links = true;
        s.kv_format = some("fp8");
    }))
    .unwrap();
    for r in all.rows.unwrap() {
        assert_eq!(r.handoff.wire_bytes, 134_217_728.0, "{}", r.link);
    }
    // A weight format alone leaves the hand-off's bytes as they are (BF16 KV).
    let w = eval(&spec(|s| s.weight_format = some("fp8")))
        .unwrap()
        .row
        .unwrap()
        .handoff;
    assert_eq!(w.wire_bytes, 268_435_456.0);
    assert_eq!(
        formats_of(&spec(|s| s.weight_format = some("int4"))).unwrap(),
        Formats {
            weight: QuantFormat::Int4,
            ..Formats::default()
        }
    );
}

#[test]
fn the_lever_checks_in_order() {
    // Unknown names, by option.
    assert_eq!(
        err(&spec(|s| s.kv_format = some("fp9"))),
        "kv_format: unknown format 'fp9'; valid: bf16, fp8, int8, int4, fp4"
    );
    assert_eq!(
        err(&spec(|s| s.weight_format = some("fp16"))),
        "weight_format: unknown format 'fp16'; valid: bf16, fp8, int8, int4, fp4"
    );
    assert_eq!(
        err(&spec(|s| s.compute_format = some("x"))),
        "compute_format: unknown format 'x'; valid: bf16, fp8, int8, int4, fp4"
    );
    // `docs/levers.md#scheduled-instances` item 2.
    let item2 = "compute_format: compute_format is 'bf16' (weight-only: dequantised before the \
                 multiply) or the weight format itself (W8A8, W4A4)";
    assert_eq!(
        err(&spec(|s| {
            s.weight_format = some("fp8");
            s.compute_format = some("int8");
        })),
        item2
    );
    assert_eq!(err(&spec(|s| s.compute_format = some("fp8"))), item2);
    // Item 3, for a format and for a draft with an FFT-mixing or CED model.
    let item3 = "weight_format: weight and KV formats are modelled for attention models without \
                 CED only";
    for m in ["llama3-8b-hyena", "llama3-8b-ced"] {
        assert_eq!(
            err(&spec(|s| {
                s.model = m.into();
                s.kv_format = some("fp8");
            })),
            item3,
            "{m}"
        );
        assert_eq!(
            err(&spec(|s| {
                s.model = m.into();
                s.speculative = some("mtp");
            })),
            "speculative: the draft's hand-off is modelled for attention models without CED only",
            "{m}"
        );
        // Given as BF16 with no draft: nothing is checked, the model is the calculator's as ever.
        assert!(eval(&spec(|s| {
            s.model = m.into();
            s.kv_format = some("bf16");
        }))
        .is_ok());
    }
    // Item 4: a non-BF16 KV with compression; BF16 KV with compression is fine.
    assert_eq!(
        err(&spec(|s| {
            s.kv_format = some("int4");
            s.compression = "fp8".into();
        })),
        "kv_format: KV hand-off compression assumes a BF16 KV cache: not with kv_format != 'bf16'"
    );
    assert!(eval(&spec(|s| {
        s.kv_format = some("bf16");
        s.weight_format = some("fp8");
        s.compression = "fp8".into();
    }))
    .is_ok());
    // A draft with compression.
    assert_eq!(
        err(&spec(|s| {
            s.speculative = some("mtp");
            s.compression = "int8".into();
        })),
        "speculative: speculative decoding with KV hand-off compression is not modelled"
    );
    // Compute units of the prefill device (`docs/cost-model.md#parallelism` item 1, the run's one line).
    assert_eq!(
        err(&spec(|s| {
            s.prefill_device = "a100".into();
            s.weight_format = some("fp8");
            s.compute_format = some("fp8");
        })),
        "prefill pool: A100-SXM has no fp8 units (use compute_format='bf16' for weight-only fp8)"
    );
    assert!(eval(&spec(|s| {
        s.prefill_device = "a100".into();
        s.weight_format = some("int8");
        s.compute_format = some("int8");
    }))
    .is_ok());
    // The draft: unknown, and another vocabulary (Mistral-7B: 32,000 tokens; Llama-3: 128,256).
    assert!(err(&spec(|s| s.speculative = some("gpt-9")))
        .starts_with("speculative: unknown draft model 'gpt-9'; valid: mtp, llama3-8b, "));
    assert_eq!(
        err(&spec(|s| s.speculative = some("mistral-7b"))),
        "speculative: draft mistral-7b has a 32000-token vocabulary, the target 128256: \
         speculative decoding needs the same one"
    );
}

#[test]
fn the_rank_aware_hand_off_scales_with_the_kv_format() {
    // Llama-3-70B, 8 GPUs TP8 -> TP8 over 100 GbE: every flow, NIC and the total in FP8 are half
    // of BF16's (1 byte a value instead of 2), and still add up to the single transfer's bytes
    // (2048 * 2*80*8*128*1 = 335,544,320 B).
    let c = cat();
    let m = c.model("llama3-70b").unwrap();
    let plan = |kv: Option<String>| {
        let s = HandoffSpec {
            model: "llama3-70b".into(),
            link: "eth-100g".into(),
            devices_per_instance: 8,
            kv_format: kv,
            ..HandoffSpec::default()
        };
        let doc = eval(&s).unwrap();
        let rs = RankSpec {
            handoff_ranks: true,
            ..RankSpec::default()
        };
        let p = ranks::evaluate(&c, &s, &doc, &rs, m, None)
            .unwrap()
            .unwrap();
        (doc, p)
    };
    let (_, bf) = plan(None);
    let (doc, fp) = plan(some("fp8"));
    let s = 335_544_320.0;
    assert_eq!(doc.row.as_ref().unwrap().handoff.wire_bytes, s);
    assert_eq!(fp.single_transfer_bytes, s);
    assert_eq!(fp.link_bytes, s);
    assert_eq!(bf.link_bytes, 2.0 * s);
    assert_eq!(fp.flows.len(), bf.flows.len());
    let mut sum = 0.0;
    for (a, b) in fp.flows.iter().zip(&bf.flows) {
        assert_eq!(a.bytes * 2.0, b.bytes);
        sum += a.bytes;
    }
    assert_eq!(sum, s);
    // Eight equal shards, one per NIC: S / 8 at 12.5 GB/s after 20 µs.
    assert_eq!(fp.total_s, 20e-6 + (s / 8.0) / 12.5e9);
    // A draft is not rank-aware.
    let s2 = HandoffSpec {
        speculative: some("mtp"),
        ..HandoffSpec::default()
    };
    let doc = eval(&s2).unwrap();
    let rs = RankSpec {
        handoff_ranks: true,
        ..RankSpec::default()
    };
    assert_eq!(
        ranks::evaluate(&c, &s2, &doc, &rs, c.model("llama3-8b").unwrap(), None)
            .unwrap_err()
            .to_string(),
        "speculative: 'mtp': the rank-aware hand-off models the target's KV heads only"
    );
}
