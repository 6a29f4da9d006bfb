//! The scheduling levers as scenario options (issue 12; `docs/levers.md#scheduled-instances`): the switch-on
//! rule (`docs/levers.md#scheduled-instances`), the resolved [`Levers`] (`docs/levers.md#scheduled-instances`'s defaults, the token budget, the host link), and
//! `docs/levers.md#scheduled-instances`'s validation with its order. Only `Scenario::build` is exercised here: running a
//! configuration with the levers on needs the scheduled engine.

use disagg_model::{Catalogue, Error};
use disagg_sim::levers::{BatchPolicy, KvPolicy, Levers, Preemption, Speculative};
use disagg_sim::{Mode, Scenario, SimConfig};

fn cat() -> Catalogue {
    Catalogue::builtin()
}

/// `flags` on top of the defaults, built.
fn build(flags: &[&str]) -> Result<SimConfig, Error> {
    Scenario::from_flags(flags).unwrap().build(&cat())
}

fn levers(flags: &[&str]) -> Option<Levers> {
    build(flags)
        .unwrap_or_else(|e| panic!("{flags:?}: {e}"))
        .levers
}

fn err(flags: &[&str]) -> String {
    build(flags)
        .err()
        .unwrap_or_else(|| panic!("{flags:?} built"))
        .to_string()
}

#[test]
fn defaults_are_the_references() {
    // `docs/levers.md#scheduled-instances`'s table, written out.
    let s = Scenario::default();
    assert_eq!(s.batch_policy, BatchPolicy::PrefillPriority);
    assert_eq!(s.max_num_batched_tokens, None);
    assert_eq!(s.kv_policy, KvPolicy::Oracle);
    assert_eq!(s.kv_block_size, 16);
    assert_eq!(s.max_seq_len, 2048);
    assert_eq!(s.preemption, Preemption::Recompute);
    assert_eq!(s.host_link, "pcie5");
    assert!(!s.prefix_caching);
    assert_eq!(s.speculative, None);
    assert_eq!(s.gamma, 3);
    assert_eq!(s.alpha, 0.7);
    assert_eq!(s.spec_seed, 0);
    assert!(!s.levers_on());
    assert_eq!(levers(&[]), None);
}

#[test]
fn each_switch_alone_turns_the_levers_on() {
    for flags in [
        &["--batch-policy", "decode-priority"][..],
        &["--batch-policy", "chunked"],
        &["--max-num-batched-tokens", "8192"],
        &["--max-num-batched-tokens", "1"],
        &["--kv-policy", "pow2"],
        &["--kv-policy", "max"],
        &["--kv-policy", "paged"],
        &["--prefix-caching"],
        &["--speculative", "mtp"],
    ] {
        let s = Scenario::from_flags(flags).unwrap();
        assert!(s.levers_on(), "{flags:?}");
        assert!(levers(flags).is_some(), "{flags:?}");
    }
}

#[test]
fn inert_settings_switch_nothing_on() {
    for flags in [
        &["--batch-policy", "prefill-priority"][..],
        &["--kv-policy", "oracle"],
        &["--kv-block-size", "32"],
        &["--max-seq-len", "1024"],
        &["--preemption", "swap"],
        &["--host-link", "pcie4"],
        &["--gamma", "5"],
        &["--alpha", "0.25"],
        &["--spec-seed", "9"],
        &[
            "--kv-block-size",
            "1",
            "--max-seq-len",
            "0",
            "--preemption",
            "swap",
            "--host-link",
            "nvlink4",
            "--gamma",
            "64",
            "--alpha",
            "1",
            "--spec-seed",
            "18446744073709551615",
        ],
    ] {
        let s = Scenario::from_flags(flags).unwrap();
        assert!(!s.levers_on(), "{flags:?}");
        assert_eq!(levers(flags), None, "{flags:?}");
    }
    // Inert, they also leave every plain setting as it was: the built configurations agree on
    // everything the plain engine reads (the run itself is compared in the CLI's tests).
    let plain = build(&[]).unwrap();
    let inert = build(&["--kv-block-size", "32", "--preemption", "swap"]).unwrap();
    assert_eq!(inert.max_prefill_tokens, plain.max_prefill_tokens);
    assert_eq!(inert.fast_forward, plain.fast_forward);
    assert_eq!(inert.handoff, plain.handoff);
}

#[test]
fn resolved_levers_carry_the_options() {
    // The budget defaults to max_prefill_tokens (8192) and is marked as not given.
    let l = levers(&["--kv-policy", "paged"]).unwrap();
    assert_eq!(
        l,
        Levers {
            batch_policy: BatchPolicy::PrefillPriority,
            token_budget: 8192,
            budget_given: false,
            kv_policy: KvPolicy::Paged,
            kv_block_size: 16,
            max_seq_len: 2048,
            kv_watermark: 0.01,
            preemption: Preemption::Recompute,
            host_link: cat().link("pcie5").unwrap().clone(),
            swap_in: disagg_sim::levers::SwapIn::OwnBlocks,
            prefix_caching: false,
            speculative: None,
            prefix_handoff: false,
            decode_router: disagg_sim::levers::DecodeRouter::LeastLoaded,
        }
    );
    // pcie5 per `docs/cost-model.md#catalogue`: 64 GB/s, 5 µs, 6 pJ/bit.
    assert_eq!(l.host_link.bandwidth_bps, 64e9);
    assert_eq!(l.host_link.latency_s, 5e-6);
    assert_eq!(l.host_link.pj_per_bit, 6.0);
    let l = levers(&[
        "--mode",
        "colocated",
        "--batch-policy",
        "chunked",
        "--max-num-batched-tokens",
        "512",
        "--kv-policy",
        "max",
        "--kv-block-size",
        "32",
        "--max-seq-len",
        "1024",
        "--preemption",
        "swap",
        "--host-link",
        "pcie4",
        "--speculative",
        "llama3.2-1b",
        "--gamma",
        "4",
        "--alpha",
        "0.5",
        "--spec-seed",
        "7",
    ])
    .unwrap();
    assert_eq!(l.batch_policy, BatchPolicy::Chunked);
    assert_eq!(l.token_budget, 512);
    assert!(l.budget_given);
    assert_eq!(l.kv_policy, KvPolicy::Max);
    assert_eq!(l.kv_block_size, 32);
    assert_eq!(l.max_seq_len, 1024);
    assert_eq!(l.kv_watermark, 0.01);
    assert_eq!(l.preemption, Preemption::Swap);
    // pcie4 per `docs/cost-model.md#catalogue`: 32 GB/s, 5 µs, 6 pJ/bit.
    assert_eq!(l.host_link.key, "pcie4");
    assert_eq!(l.host_link.bandwidth_bps, 32e9);
    assert_eq!(l.host_link.latency_s, 5e-6);
    assert_eq!(l.host_link.pj_per_bit, 6.0);
    assert!(!l.prefix_caching);
    // The draft stays a name: the cost side resolves it when the engine is built.
    assert_eq!(
        l.speculative,
        Some(Speculative {
            draft: "llama3.2-1b".into(),
            gamma: 4,
            alpha: 0.5,
            seed: 7,
        })
    );
    // A budget of 8192 given is on and given; prefix caching is carried.
    let l = levers(&["--max-num-batched-tokens", "8192", "--prefix-caching"]).unwrap();
    assert_eq!((l.token_budget, l.budget_given), (8192, true));
    assert!(l.prefix_caching);
    assert_eq!(l.speculative, None);
}

#[test]
fn the_fast_path_is_refused_in_disaggregated_mode_only() {
    for on in [
        &["--batch-policy", "chunked"][..],
        &["--max-num-batched-tokens", "8192"],
        &["--kv-policy", "paged"],
        &["--prefix-caching"],
        &["--speculative", "mtp"],
    ] {
        let mut flags = on.to_vec();
        flags.push("--fast");
        // Speculative decoding is also a cost lever, whose checks (`docs/levers.md#scheduled-instances`) run
        // before the scheduling levers' (`docs/cost-model.md#parallelism` step 1 before step 4), with their own message.
        let want = if on[0] == "--speculative" {
            "--fast: fast_forward is the plain decode instance's fast path: not with \
             parallelism, quantisation, speculative decoding or mixture-of-experts models"
        } else {
            "--fast: the plain decode instance's fast path: not with the scheduling levers"
        };
        assert_eq!(err(&flags), want, "{flags:?}");
        // Colocated: accepted (there is no colocated fast path), the levers resolved.
        flags.extend(["--mode", "colocated"]);
        let c = build(&flags).unwrap_or_else(|e| panic!("{flags:?}: {e}"));
        assert_eq!(c.mode, Mode::Colocated);
        assert!(c.levers.is_some(), "{flags:?}");
        c.check().unwrap();
    }
    // Without the levers --fast is the plain fast path, as before.
    assert!(
        build(&["--fast", "--kv-block-size", "32"])
            .unwrap()
            .fast_forward
    );
}

#[test]
fn speculative_decoding_is_refused_with_hand_off_compression() {
    let e = "--speculative: speculative decoding with KV hand-off compression (--kv-compress) is \
             not modelled";
    for c in ["fp8", "none"] {
        assert_eq!(err(&["--speculative", "mtp", "--kv-compress", c]), e);
        assert_eq!(
            err(&[
                "--speculative",
                "mtp",
                "--kv-compress",
                c,
                "--kv-compress-at",
                "endpoint"
            ]),
            e
        );
    }
    // Compression with the other levers is not refused here.
    assert!(levers(&["--kv-policy", "paged", "--kv-compress", "fp8"]).is_some());
    // In colocated mode compression itself is refused first (it needs the hand-off).
    let e = err(&[
        "--mode",
        "colocated",
        "--speculative",
        "mtp",
        "--kv-compress",
        "fp8",
    ]);
    assert!(e.starts_with("--kv-compress: "), "{e}");
}

#[test]
fn prefix_caching_is_refused_with_paged_swap() {
    let e = "--prefix-caching: prefix caching with swap preemption is not modelled: use \
             --preemption recompute";
    let flags = [
        "--prefix-caching",
        "--kv-policy",
        "paged",
        "--preemption",
        "swap",
    ];
    assert_eq!(err(&flags), e);
    let mut coloc = flags.to_vec();
    coloc.extend(["--mode", "colocated"]);
    assert_eq!(err(&coloc), e);
    // Any two of the three are fine: swap without paging is inert, paged swap without the
    // cache and the paged cache with recompute are modelled.
    for ok in [
        &["--prefix-caching", "--preemption", "swap"][..],
        &["--kv-policy", "paged", "--preemption", "swap"],
        &["--prefix-caching", "--kv-policy", "paged"],
        &[
            "--prefix-caching",
            "--kv-policy",
            "pow2",
            "--preemption",
            "swap",
        ],
    ] {
        assert!(levers(ok).is_some(), "{ok:?}");
    }
}

#[test]
fn the_hand_off_options_beyond_the_reference_are_refused_with_the_levers() {
    for (flag, value, default) in [
        ("--link-sharing", "fair", "fifo"),
        ("--link-topology", "per-prefill", "shared"),
        ("--link-topology", "per-pair", "shared"),
    ] {
        assert_eq!(
            err(&["--kv-policy", "paged", flag, value]),
            format!(
                "{flag}: '{value}' is not modelled with the scheduling levers yet (use {flag} \
                 {default}, or leave the levers at their defaults)"
            )
        );
        // Without the levers they run as before.
        assert_eq!(levers(&[flag, value, "--kv-block-size", "32"]), None);
    }
    // Reservation at transfer start is modelled for the scheduled pools (README, "Beyond the
    // reference"), with every KV policy (a budget switches the levers on under `oracle`).
    for policy in ["paged", "oracle", "max", "pow2"] {
        let c = build(&[
            "--kv-policy",
            policy,
            "--max-num-batched-tokens",
            "8192",
            "--reserve-kv-on",
            "transfer",
        ])
        .unwrap();
        assert!(c.levers.is_some(), "{policy}");
        assert_eq!(c.handoff.reserve_kv_on, disagg_sim::ReserveKvOn::Transfer);
    }
    // So is layer-wise (chunk-wise) streaming.
    let c = build(&["--kv-policy", "paged", "--send", "layerwise"]).unwrap();
    assert!(c.levers.is_some());
    assert_eq!(c.handoff.send, disagg_model::SendMode::Layerwise);
    // The TTFT convention is metrics only: fine with the levers.
    let c = build(&["--kv-policy", "paged", "--first-token", "decode"]).unwrap();
    assert!(c.levers.is_some());
    assert_eq!(c.handoff.first_token, disagg_sim::FirstToken::Decode);
}

#[test]
fn the_host_link_is_a_catalogue_link_even_when_unused() {
    let links = "nvlink4, ib-ndr, pcie5, pcie4, eth-100g, eth-25g, cpo-optical, nvlink3, nvlink5";
    assert_eq!(
        err(&["--host-link", "pcie6"]),
        format!("unknown --host-link 'pcie6'; valid: {links}")
    );
    assert_eq!(
        err(&["--host-link", "pcie6", "--kv-policy", "paged"]),
        format!("unknown --host-link 'pcie6'; valid: {links}")
    );
}

#[test]
fn validation_follows_the_specs_order() {
    // `docs/levers.md#scheduled-instances`: 8 (--fast in disagg) before 9 (speculative with compression) before 11 (prefix
    // caching with swap); the project's hand-off refusals come last.
    let all = [
        "--fast",
        "--speculative",
        "mtp",
        "--kv-compress",
        "fp8",
        "--prefix-caching",
        "--kv-policy",
        "paged",
        "--preemption",
        "swap",
        "--link-sharing",
        "fair",
    ];
    assert!(err(&all).starts_with("--fast: fast_forward is"));
    assert!(err(&all[1..]).starts_with("--speculative: "));
    assert!(err(&all[5..]).starts_with("--prefix-caching: "));
    assert!(err(&all[6..]).starts_with("--link-sharing: "));
    // Ranges come first of all (build's step 0), then an unknown host link (the reference's
    // CLI choices refuse it before any validation).
    let mut s = Scenario::from_flags(all).unwrap();
    s.host_link = "x".into();
    s.gamma = 0;
    let e = s.build(&cat()).unwrap_err().to_string();
    assert_eq!(
        e,
        "--gamma: must be a whole number from 1 to 64 tokens, got 0"
    );
    s.gamma = 3;
    let e = s.build(&cat()).unwrap_err().to_string();
    assert!(e.starts_with("unknown --host-link 'x'"), "{e}");
}

#[test]
fn out_of_range_values_name_the_flag_and_the_range() {
    type Case = (fn(&mut Scenario), &'static str);
    let cases: [Case; 8] = [
        (
            |s| s.kv_block_size = 0,
            "--kv-block-size: must be a whole number from 1 to 65536 tokens, got 0",
        ),
        (
            |s| s.kv_block_size = 65_537,
            "--kv-block-size: must be a whole number from 1 to 65536 tokens, got 65537",
        ),
        (
            |s| s.max_num_batched_tokens = Some(0),
            "--max-num-batched-tokens: must be a whole number from 1 to 100000000 tokens, got 0",
        ),
        (
            |s| s.max_seq_len = 100_000_001,
            "--max-seq-len: must be a whole number from 0 to 100000000 tokens, got 100000001",
        ),
        (
            |s| s.gamma = 65,
            "--gamma: must be a whole number from 1 to 64 tokens, got 65",
        ),
        (
            |s| s.alpha = -0.5,
            "--alpha: must be a number in [0, 1], got -0.5",
        ),
        (
            |s| s.alpha = 1.0 + f64::EPSILON,
            "--alpha: must be a number in [0, 1], got 1.0000000000000002",
        ),
        (
            |s| s.alpha = f64::NAN,
            "--alpha: must be a number in [0, 1], got NaN",
        ),
    ];
    for (set, want) in cases {
        let mut s = Scenario::default();
        set(&mut s);
        assert_eq!(s.build(&cat()).unwrap_err().to_string(), want);
    }
    // The bounds themselves are valid.
    for s in [
        Scenario {
            kv_block_size: 1,
            max_seq_len: 0,
            gamma: 1,
            alpha: 0.0,
            max_num_batched_tokens: Some(1),
            ..Scenario::default()
        },
        Scenario {
            kv_block_size: 65_536,
            max_seq_len: 100_000_000,
            gamma: 64,
            alpha: 1.0,
            max_num_batched_tokens: Some(100_000_000),
            ..Scenario::default()
        },
    ] {
        s.build(&cat()).unwrap();
    }
}

#[test]
fn check_refuses_a_hand_edited_fast_path_with_the_levers() {
    let mut c = build(&["--kv-policy", "paged"]).unwrap();
    c.check().unwrap();
    c.fast_forward = true;
    assert_eq!(
        c.check().unwrap_err().to_string(),
        "--fast: the fast decode path does not exist with the scheduling levers"
    );
    // Plain instances keep their fast path; colocated scheduled instances ignore it.
    let mut plain = build(&[]).unwrap();
    plain.fast_forward = true;
    plain.check().unwrap();
    let mut coloc = build(&["--kv-policy", "paged", "--mode", "colocated"]).unwrap();
    coloc.fast_forward = true;
    coloc.check().unwrap();
}

#[test]
fn enum_names_read_and_echo_as_the_cli_names() {
    // Serde and the option table agree with the names of `docs/levers.md#scheduled-instances`.
    let names: [(&str, &[&str]); 3] = [
        (
            "batch_policy",
            &["prefill-priority", "decode-priority", "chunked"],
        ),
        ("kv_policy", &["oracle", "pow2", "max", "paged"]),
        ("preemption", &["recompute", "swap"]),
    ];
    for (key, valid) in names {
        for name in valid {
            let mut s = Scenario::default();
            s.set(key, name).unwrap();
            let v = serde_json::to_value(&s).unwrap();
            assert_eq!(v[key], *name);
            let back: Scenario = serde_json::from_value(v).unwrap();
            assert_eq!(back, s);
        }
        let flag = format!("--{}", key.replace('_', "-"));
        let want = format!("unknown {flag} 'lru'; valid: {}", valid.join(", "));
        let mut s = Scenario::default();
        assert_eq!(s.set(key, "lru").unwrap_err().to_string(), want);
        let json = serde_json::json!({ key: "lru" });
        assert_eq!(
            serde_json::from_value::<Scenario>(json)
                .unwrap_err()
                .to_string(),
            want
        );
    }
}

#[test]
fn the_lever_presets_build_with_the_levers_on_and_the_others_off() {
    let all = disagg_sim::presets::all();
    let mut names: Vec<&str> = all.iter().map(|p| p.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all.len(), "a preset name twice");
    let lever_groups = ["results.md §19", "results.md §20", "results.md §21"];
    let mut on = 0;
    for p in &all {
        let c = p
            .scenario
            .build(&cat())
            .unwrap_or_else(|e| panic!("{}: {e}", p.name));
        let is_lever = lever_groups.iter().any(|g| p.group.starts_with(g));
        // Every `docs/levers.md#batch-policies`-`docs/levers.md#prefix-caching` configuration runs the scheduled instances (the reference sets a budget
        // even where the policy is the default); the chapter's presets stay plain, and of the
        // cost levers' runs only the speculative one is scheduled.
        let scheduled = is_lever || p.name == "spec-mtp-colocated";
        assert_eq!(c.levers.is_some(), scheduled, "{}", p.name);
        if is_lever {
            on += 1;
            assert_eq!(c.mode, Mode::Colocated, "{}", p.name);
            assert_eq!(c.instance_count(), 1, "{}", p.name);
            // What is not the reference's configuration is said, in the group: only `docs/levers.md#kv-reservation`'s loads
            // (held back by the spec).
            let exact = !p.group.starts_with("results.md §20");
            assert_eq!(!exact, p.group.contains("approximate"), "{}", p.group);
        }
    }
    // 7 batching policies, 5 KV policies, 4 multi-turn, 12 hit-rate and 5 reuse-distance rows.
    assert_eq!(on, 7 + 5 + 4 + 12 + 5);
    // Spot checks against levers-results.json, written out.
    let find = |n: &str| disagg_sim::presets::find(n).unwrap().scenario;
    let s = find("batching-chunked-512");
    assert_eq!(
        (s.batch_policy, s.max_num_batched_tokens),
        (BatchPolicy::Chunked, Some(512))
    );
    assert_eq!((s.rate, s.requests, s.seed), (2.025, 500, 1));
    assert_eq!(
        (s.prompt, s.prompt_cv),
        (2665.59193126866, 1.1722110593938446)
    );
    assert_eq!(
        (s.output, s.output_cv),
        (481.3441037097893, 0.5876117235688896)
    );
    // section_19.length_fits.openchat_sharegpt4: prompt hi 7168, output hi 1024, lo 1; the
    // mechanism rows' max_decode_batch 128.
    assert_eq!(
        (s.prompt_min, s.prompt_max, s.output_min, s.output_max),
        (1, 7168, 1, 1024)
    );
    assert_eq!(s.max_decode_batch, 128);
    assert_eq!(s.build(&cat()).unwrap().max_decode_batch, 128);
    let s = find("batching-decode-priority");
    assert_eq!(
        (s.batch_policy, s.max_num_batched_tokens),
        (BatchPolicy::DecodePriority, None)
    );
    let s = find("kv-paged-swap");
    assert_eq!(
        (s.kv_policy, s.preemption, s.host_link.as_str()),
        (KvPolicy::Paged, Preemption::Swap, "pcie4")
    );
    assert_eq!(
        (s.model.as_str(), s.device.as_str()),
        ("opt-13b", "a100-40g")
    );
    assert_eq!(s.max_num_batched_tokens, Some(8192));
    let s = find("prefix-sys1024-on");
    assert_eq!(s.rate, 3.191262364481256);
    assert_eq!(
        (s.requests, s.turns, s.system_prompts, s.system_len),
        (600, 1, 4, 1024)
    );
    assert!(s.prefix_caching);
    let s = find("prefix-sys0-off");
    assert_eq!(s.rate, 8.489984501891293);
    assert_eq!((s.system_prompts, s.system_len), (0, 0));
    assert!(!s.prefix_caching);
    let s = find("prefix-think30");
    assert_eq!((s.think, s.turns, s.rate, s.requests), (30.0, 4, 0.2, 400));
    assert_eq!((s.system_prompts, s.system_len), (8, 256));
    assert_eq!(
        (s.prompt_min, s.prompt_max, s.output_min, s.output_max),
        (256, 512, 1, 32768)
    );
    let s = find("prefix-multiturn-short-on");
    assert_eq!(
        (s.prompt_min, s.prompt_max, s.output_min, s.output_max),
        (256, 512, 4, 8)
    );
    assert_eq!((s.output, s.output_cv), (6.0, 0.19));
    let s = find("prefix-multiturn-long-off");
    assert_eq!(
        (s.prompt_min, s.prompt_max, s.output_min, s.output_max),
        (256, 512, 256, 512)
    );
    assert!(!s.prefix_caching);
    let s = find("kv-pow2");
    assert_eq!((s.prompt_max, s.output_max), (1024, 1024));
}

#[test]
fn max_decode_batch_and_length_bounds_default_to_the_references() {
    // SimConfig.max_decode_batch 256; LengthDist(mean, cv, lo=1, hi=32768) (`docs/serving-model.md#arrivals`).
    let s = Scenario::default();
    assert_eq!(s.max_decode_batch, 256);
    assert_eq!(
        (s.prompt_min, s.prompt_max, s.output_min, s.output_max),
        (1, 32768, 1, 32768)
    );
    let c = build(&[]).unwrap();
    assert_eq!(c.max_decode_batch, 256);
    assert_eq!(
        c.workload.prompt,
        disagg_sim::LengthDist::with_bounds(2048.0, 0.5, 1, 32768)
    );
    assert_eq!(
        c.workload.output,
        disagg_sim::LengthDist::with_bounds(256.0, 0.5, 1, 32768)
    );
    // The default given explicitly is the same configuration.
    let same =
        Scenario::from_flags(["--max-decode-batch", "256", "--prompt-max", "32768"]).unwrap();
    assert_eq!(same, s);
}

#[test]
fn max_decode_batch_reaches_the_config_and_caps_the_running_batch() {
    let c = build(&["--max-decode-batch", "3"]).unwrap();
    assert_eq!(c.max_decode_batch, 3);
    // Plain colocated instance, 40 requests all arriving within 1 s with long outputs: at most 3
    // run at once, so the later ones wait for a slot; with the default cap they do not.
    let flags = [
        "--mode",
        "colocated",
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--rate",
        "1000",
        "--requests",
        "40",
        "--prompt",
        "64",
        "--output",
        "200",
    ];
    let run = |extra: &[&str]| {
        let mut f: Vec<&str> = flags.to_vec();
        f.extend_from_slice(extra);
        let c = build(&f).unwrap();
        disagg_sim::simulate_config(&c).unwrap().summary()
    };
    let capped = run(&["--max-decode-batch", "3"]);
    let free = run(&[]);
    assert_eq!(capped.requests.completed, 40);
    assert!(
        capped.horizon_s > 2.0 * free.horizon_s,
        "{} vs {}",
        capped.horizon_s,
        free.horizon_s
    );
    assert_eq!(
        err(&["--max-decode-batch", "0"]),
        "--max-decode-batch: must be a whole number from 1 to 1000000 sequences, got 0"
    );
}

#[test]
fn length_bounds_clip_the_generated_lengths() {
    // cv 3 spreads the draws far past both bounds, so both clips are hit.
    let c = build(&[
        "--requests",
        "300",
        "--prompt",
        "384",
        "--prompt-cv",
        "3",
        "--prompt-min",
        "256",
        "--prompt-max",
        "512",
        "--output",
        "6",
        "--output-cv",
        "3",
        "--output-min",
        "4",
        "--output-max",
        "8",
    ])
    .unwrap();
    assert_eq!(
        c.workload.prompt,
        disagg_sim::LengthDist::with_bounds(384.0, 3.0, 256, 512)
    );
    assert_eq!(
        c.workload.output,
        disagg_sim::LengthDist::with_bounds(6.0, 3.0, 4, 8)
    );
    let reqs = c.generate_workload();
    assert_eq!(reqs.len(), 300);
    let p: Vec<u32> = reqs.iter().map(|r| r.prompt_len).collect();
    let o: Vec<u32> = reqs.iter().map(|r| r.output_len).collect();
    assert!(p.iter().all(|&x| (256..=512).contains(&x)));
    assert!(o.iter().all(|&x| (4..=8).contains(&x)));
    for (v, lo, hi) in [(&p, 256, 512), (&o, 4, 8)] {
        assert!(
            v.contains(&lo) && v.contains(&hi),
            "{lo}..{hi} both reached"
        );
    }
    // Sessions clip each turn's new input (the history is added after the draw).
    let c = build(&[
        "--requests",
        "40",
        "--turns",
        "4",
        "--prompt",
        "384",
        "--prompt-cv",
        "3",
        "--prompt-min",
        "256",
        "--prompt-max",
        "512",
    ])
    .unwrap();
    assert_eq!(c.workload.prompt.lo, 256);
    assert_eq!(c.workload.prompt.hi, 512);
}

#[test]
fn length_bounds_errors_and_named_workloads() {
    assert_eq!(
        err(&["--prompt-min", "600", "--prompt-max", "512"]),
        "--prompt-min: 600 is above --prompt-max 512: no length fits"
    );
    assert_eq!(
        err(&["--output-min", "9", "--output-max", "8"]),
        "--output-min: 9 is above --output-max 8: no length fits"
    );
    // Equal bounds are one length.
    let c = build(&["--output-min", "8", "--output-max", "8", "--requests", "20"]).unwrap();
    assert!(c.generate_workload().iter().all(|r| r.output_len == 8));
    assert_eq!(
        err(&["--prompt-max", "0"]),
        "--prompt-max: must be a whole number from 1 to 10000000 tokens, got 0"
    );
    // A named workload keeps its own caps (`docs/exactness.md#verification`: chat's hi = 1024).
    let mut s = Scenario::from_flags(["--workload", "chat"]).unwrap();
    s.prompt_max = 100;
    assert_eq!(s.workload_spec().prompt.hi, 1024);
    assert_eq!(s.workload_spec().output.hi, 1024);
}
