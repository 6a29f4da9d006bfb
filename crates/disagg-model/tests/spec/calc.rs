//! The calculator over named options (`disagg_model::calc`): bounds of every count, the errors
//! naming the option, the compression stage chosen, and the document it returns.

use disagg_model::calc::{evaluate, transit_for, HandoffSpec};
use disagg_model::*;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn eval(spec: &HandoffSpec) -> Result<disagg_model::calc::HandoffDoc, Error> {
    evaluate(&cat(), spec, None, None, None)
}

fn err(spec: &HandoffSpec) -> String {
    eval(spec).unwrap_err().to_string()
}

#[test]
fn counts_accept_one_and_max_and_reject_zero_and_max_plus_one() {
    let d = HandoffSpec::default();
    type Set = fn(&mut HandoffSpec, u64);
    let cases: [(&str, u64, Set); 4] = [
        ("prompt_tokens", u32::MAX as u64, |s, v| s.prompt_tokens = v),
        ("devices_per_instance", 1024, |s, v| {
            s.devices_per_instance = v
        }),
        ("concurrent", 65_536, |s, v| s.concurrent = v),
        ("link_channels", 4096, |s, v| s.link_channels = Some(v)),
    ];
    for (what, max, set) in cases {
        for ok in [1, max] {
            let mut s = d.clone();
            set(&mut s, ok);
            assert!(eval(&s).is_ok(), "{what} = {ok}");
        }
        let mut s = d.clone();
        set(&mut s, 0);
        assert_eq!(err(&s), format!("{what}: must be at least 1, got 0"));
        let mut s = d.clone();
        set(&mut s, max + 1);
        assert_eq!(
            err(&s),
            format!("{what}: {} is absurdly large (limit {max})", max + 1)
        );
    }
}

#[test]
fn unknown_names_are_named_by_option() {
    let d = HandoffSpec::default();
    let m = HandoffSpec {
        model: "gpt-9".into(),
        ..d.clone()
    };
    assert_eq!(
        err(&m),
        "model: unknown model 'gpt-9'; valid: llama3-8b, llama3-70b, mistral-7b, yi-34b, \
         opt-13b, llama3.2-1b, mixtral-8x7b, llama3-8b-hyena, \
         llama3-8b-hyena-dist, llama3-8b-hybrid, llama3-8b-hyena-circ, llama3-8b-ced, llama3-70b-ced, llama2-7b, llama2-70b, bloom-176b, deepseek-v3, deepseek-r1, kimi-k2, qwen3-235b-a22b, qwen3-30b-a3b, qwen3-32b, gpt-oss-120b, gpt-oss-20b, gemma3-27b, llama3.1-405b, llama4-scout, llama4-maverick, qwen3-next-80b-a3b, mixtral-8x22b, deepseek-v2-lite"
    );
    assert_eq!(
        eval(&m).unwrap_err(),
        Error::Invalid {
            what: "model".into(),
            why: "unknown model 'gpt-9'; valid: llama3-8b, llama3-70b, mistral-7b, yi-34b, \
                  opt-13b, llama3.2-1b, mixtral-8x7b, llama3-8b-hyena, \
         llama3-8b-hyena-dist, llama3-8b-hybrid, llama3-8b-hyena-circ, llama3-8b-ced, llama3-70b-ced, llama2-7b, llama2-70b, bloom-176b, deepseek-v3, deepseek-r1, kimi-k2, qwen3-235b-a22b, qwen3-30b-a3b, qwen3-32b, gpt-oss-120b, gpt-oss-20b, gemma3-27b, llama3.1-405b, llama4-scout, llama4-maverick, qwen3-next-80b-a3b, mixtral-8x22b, deepseek-v2-lite"
                .into()
        }
    );
    let s = HandoffSpec {
        prefill_device: "tpu".into(),
        ..d.clone()
    };
    assert!(err(&s).starts_with("prefill_device: unknown device 'tpu'; valid: h100, a100,"));
    let s = HandoffSpec {
        link: "wifi".into(),
        ..d.clone()
    };
    assert!(err(&s).starts_with("link: unknown link 'wifi'; valid: nvlink4, ib-ndr,"));
    let s = HandoffSpec {
        send: "bulk".into(),
        ..d.clone()
    };
    assert_eq!(
        err(&s),
        "send: unknown send mode 'bulk'; valid: whole, layerwise"
    );
    let s = HandoffSpec {
        link_sharing: "lifo".into(),
        ..d.clone()
    };
    assert_eq!(
        err(&s),
        "link_sharing: unknown link sharing 'lifo'; valid: fifo, fair"
    );
    let s = HandoffSpec {
        compress_at: "nic".into(),
        ..d.clone()
    };
    assert_eq!(
        err(&s),
        "compress_at: unknown compression placement 'nic'; valid: transit, link, endpoint, gpu"
    );
    let s = HandoffSpec {
        compression: "zip".into(),
        ..d.clone()
    };
    assert!(err(&s).starts_with("compression: unknown compression 'zip'; valid: none, fp8,"));
    // A device error that is not an unknown name passes through unchanged.
    let mut dev = cat().device("h100").unwrap().clone();
    dev.idle_w = 800.0;
    let e = evaluate(&cat(), &d, None, Some(dev), None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "device 'h100' idle_w: 800 W is not below the TDP of 700 W"
    );
}

#[test]
fn transit_for_stages() {
    let c = cat();
    let m = c.model("llama3-8b").unwrap();
    // `none` is no stage at all.
    assert_eq!(
        transit_for(&c, m, "none", CompressAt::Transit, None),
        Ok(None)
    );
    // A format gives the reference's stage at the placement.
    let t = transit_for(&c, m, "fp8", CompressAt::Endpoint, None)
        .unwrap()
        .unwrap();
    assert_eq!(t.compression.key, "fp8");
    assert_eq!(t.compression.ratio, 2.0);
    assert_eq!(t.at, CompressAt::Endpoint);
    assert_eq!(t.ops_per_byte, 1.6);
    // int8 folds its per-vector scale into the ratio for this model: W = 8 * 128 = 1024 values,
    // ratio 2W / (2W / 2 + 2) = 2048 / 1026.
    let t = transit_for(&c, m, "int8", CompressAt::Transit, None)
        .unwrap()
        .unwrap();
    assert_eq!(t.compression.ratio, 2048.0 / 1026.0);
    assert_eq!(t.compression.scale_bytes_per_vector, 0.0);
    // --kv-keep: 0.5 gives ratio 2, 0.25 gives 4, 1 gives 1 (still a stage: it does the work).
    for (k, r) in [(0.5, 2.0), (0.25, 4.0), (1.0, 1.0)] {
        let t = transit_for(&c, m, "freq-keep-k", CompressAt::Transit, Some(k))
            .unwrap()
            .unwrap();
        assert_eq!(t.compression.ratio, r, "{k}");
    }
    for bad in [0.0, -0.5, 1.0000001, 2.0, f64::NAN, f64::INFINITY] {
        assert_eq!(
            transit_for(&c, m, "freq-keep-k", CompressAt::Transit, Some(bad))
                .unwrap_err()
                .to_string(),
            format!("kv_keep: must be in (0, 1], got {bad}"),
        );
    }
    for other in ["fp8", "none"] {
        assert_eq!(
            transit_for(&c, m, other, CompressAt::Transit, Some(0.5))
                .unwrap_err()
                .to_string(),
            format!("kv_keep: only applies to compression freq-keep-k, not '{other}'")
        );
    }
    // A cache that is not BF16 cannot be compressed, but `none` is fine.
    let mut q = m.clone();
    q.kv_bytes = 1.0;
    assert_eq!(
        transit_for(&c, &q, "fp8", CompressAt::Transit, None)
            .unwrap_err()
            .to_string(),
        "compression: KV compression starts from a BF16 cache (2 bytes per value); this model \
         stores 1 bytes per value"
    );
    assert_eq!(
        transit_for(&c, &q, "none", CompressAt::Transit, None),
        Ok(None)
    );
}

#[test]
fn the_document() {
    let c = cat();
    let d = eval(&HandoffSpec::default()).unwrap();
    assert_eq!(d.schema_version, 1);
    assert_eq!(d.model, "llama3-8b");
    assert_eq!(d.model_name, "Llama-3-8B");
    assert_eq!(d.prompt_tokens, 2048);
    assert_eq!(d.compression, "none");
    assert_eq!(d.compress_at, "transit");
    assert_eq!(d.send, "whole");
    assert_eq!(d.link_sharing, "fifo");
    assert_eq!(d.concurrent, 1);
    assert_eq!(d.prefill_device, "h100");
    assert_eq!(d.devices_per_instance, 1);
    assert!(d.rows.is_none());
    let row = d.row.unwrap();
    assert_eq!(row.link, "eth-25g");
    assert_eq!(row.link_name, "25 GbE");
    assert_eq!(row.link_bandwidth_bps, 3.125e9);
    assert_eq!(row.link_latency_s, 20e-6);
    assert_eq!(row.link_pj_per_bit, 15.0);
    assert_eq!(row.link_channels, 1);
    // `docs/cost-model.md#compression`: 0.08591934592 s and 0.03221225472 J over 25 GbE.
    assert_eq!(row.handoff.transfer_s, 0.08591934592);
    assert_eq!(row.handoff.link_energy_j, 0.03221225472);

    // Every link, fastest first, with the channels overridden.
    let spec = HandoffSpec {
        all_links: true,
        link_channels: Some(3),
        compression: "fp8".into(),
        compress_at: "gpu".into(),
        send: "layer".into(),
        link_sharing: "fair".into(),
        concurrent: 5,
        devices_per_instance: 2,
        prefill_device: "a100".into(),
        model: "mistral-7b".into(),
        prompt_tokens: 1000,
        ..HandoffSpec::default()
    };
    let d = eval(&spec).unwrap();
    assert!(d.row.is_none());
    assert_eq!(d.compression, "fp8");
    assert_eq!(d.compress_at, "endpoint");
    assert_eq!(d.send, "layerwise");
    assert_eq!(d.link_sharing, "fair");
    assert_eq!(d.concurrent, 5);
    assert_eq!(d.devices_per_instance, 2);
    assert_eq!(d.prefill_device, "a100");
    assert_eq!(d.model, "mistral-7b");
    let rows = d.rows.unwrap();
    let keys: Vec<&str> = rows.iter().map(|r| r.link.as_str()).collect();
    assert_eq!(
        keys,
        [
            "nvlink5",
            "nvlink4",
            "nvlink3",
            "cpo-optical",
            "pcie5",
            "ib-ndr",
            "pcie4",
            "eth-100g",
            "eth-25g"
        ]
    );
    let cm = CostModel::new(
        c.model("mistral-7b").unwrap(),
        c.device("a100").unwrap(),
        2,
        CostOptions::default(),
    )
    .unwrap();
    let tr = KvTransit::new(c.compression("fp8").unwrap().clone(), CompressAt::Endpoint);
    for r in &rows {
        assert_eq!(r.link_channels, 3);
        let mut l = c.link(&r.link).unwrap().clone();
        l.channels = 3;
        assert_eq!(
            r.handoff,
            handoff_shared(
                &cm,
                &l,
                Some(&tr),
                SendMode::Layerwise,
                1000,
                Sharing::Fair,
                5
            ),
            "{}",
            r.link
        );
        // 5 over 3 channels, fair: stream * 5/3 (cost of the link's stream at full speed).
        assert_eq!(
            r.handoff.transfer_s,
            l.latency_s + (500.0 * 131072.0 / l.bandwidth_bps) * (5.0 / 3.0)
        );
    }

    // Custom model, device and link replace the named ones.
    let mut m = c.model("llama3-8b").unwrap().clone();
    m.key = "mine".into();
    m.name = "Mine".into();
    m.n_layers = 16;
    let mut dev = c.device("h100").unwrap().clone();
    dev.key = "dev".into();
    let l = Link {
        key: "wire".into(),
        name: "Wire".into(),
        bandwidth_bps: 1e9,
        latency_s: 1e-3,
        channels: 2,
        pj_per_bit: 10.0,
    };
    let d = evaluate(
        &c,
        &HandoffSpec {
            prompt_tokens: 1000,
            ..HandoffSpec::default()
        },
        Some(m),
        Some(dev),
        Some(l),
    )
    .unwrap();
    assert_eq!(d.model, "mine");
    assert_eq!(d.model_name, "Mine");
    assert_eq!(d.prefill_device, "dev");
    let row = d.row.unwrap();
    assert_eq!(row.link, "wire");
    assert_eq!(row.link_channels, 2);
    // 16 layers: half of Llama-3-8B's 131072 B per token; 1000 tokens over 1 GB/s + 1 ms.
    assert_eq!(row.handoff.kv_bytes, 65_536_000.0);
    assert_eq!(row.handoff.transfer_s, 1e-3 + 0.065536);
}
