//! The hand-off options of issue 4: layer-wise streaming, link sharing and topology, decode-side
//! reservation and the TTFT convention. The defaults are the reference (golden.rs, published.rs);
//! here: the chapter's closed form on an idle link, conservation over every option combination,
//! determinism, byte-identity of the defaults, validation, and each option's semantics.

use disagg_model::{handoff, transfer, Catalogue, CompressAt, SendMode};
use disagg_sim::{
    simulate, simulate_observed, FirstToken, GenRequest, LinkSharing, LinkTopology, Mode,
    ReserveKvOn, RunResult, Scenario, SimConfig, Summary, TimeSeries,
};

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn build(sc: &Scenario) -> SimConfig {
    sc.build(&cat()).unwrap()
}

fn run(c: &SimConfig) -> RunResult {
    simulate(c, &c.generate_workload()).unwrap()
}

fn json(s: &Summary) -> String {
    serde_json::to_string(s).unwrap()
}

fn chapter() -> Scenario {
    Scenario {
        model: "llama3-8b".into(),
        devices_per_instance: 1,
        rate: 8.0,
        fast: true,
        ..Scenario::default()
    }
}

const SENDS: [&str; 2] = ["whole", "layerwise"];
const SHARINGS: [&str; 2] = ["fifo", "fair"];
const TOPOLOGIES: [&str; 3] = ["shared", "per-prefill", "per-pair"];
const RESERVES: [&str; 2] = ["arrival", "transfer"];
const FIRST_TOKENS: [&str; 2] = ["prefill", "decode"];

/// Every combination of the five options.
fn combos() -> Vec<[&'static str; 5]> {
    let mut v = Vec::new();
    for a in SENDS {
        for b in SHARINGS {
            for c in TOPOLOGIES {
                for d in RESERVES {
                    for e in FIRST_TOKENS {
                        v.push([a, b, c, d, e]);
                    }
                }
            }
        }
    }
    v
}

fn with(sc: &Scenario, o: [&str; 5]) -> Scenario {
    Scenario {
        send: SendMode::parse(o[0]).unwrap(),
        link_sharing: LinkSharing::parse(o[1]).unwrap(),
        link_topology: LinkTopology::parse(o[2]).unwrap(),
        reserve_kv_on: ReserveKvOn::parse(o[3]).unwrap(),
        first_token: FirstToken::parse(o[4]).unwrap(),
        ..sc.clone()
    }
}

/// On an otherwise idle link, the time a layer-wise hand-off adds after the prefill is the
/// chapter's closed form `fixed + max(stream / L, stream - (L - 1) / L * T)` with T the prefill
/// step (overhead and any GPU compression pass included), for every link and compression format
/// at both placements, both link models and two models (32 and 80 layers).
///
/// The stamps are absolute times, so the check is the strongest one they allow:
/// `kv_ready == first_token + layerwise_exposed(...)` bit for bit (the engine computes the landing
/// time as the step's end plus the closed form). Being exact, it needs no tolerance check after it.
#[test]
fn layerwise_on_an_idle_link_is_the_closed_form() {
    let cat = cat();
    let prompts = [1u32, 100, 2048, 8000];
    let mut checked = 0;
    let mut want = 0;
    for (model, dpi) in [("llama3-8b", 1u32), ("llama3-70b", 4)] {
        let mut placements: Vec<(Option<String>, &str)> = vec![(None, "transit")];
        for c in &cat.compression {
            for at in ["transit", "endpoint"] {
                placements.push((Some(c.key.clone()), at));
            }
        }
        want += cat.links.len() * placements.len() * SHARINGS.len() * prompts.len();
        for link in &cat.links {
            for (comp, at) in &placements {
                for sharing in SHARINGS {
                    let sc = Scenario {
                        model: model.into(),
                        devices_per_instance: dpi,
                        link: link.key.clone(),
                        kv_compress: comp.clone(),
                        kv_compress_at: CompressAt::parse(at).unwrap(),
                        send: SendMode::Layerwise,
                        link_sharing: LinkSharing::parse(sharing).unwrap(),
                        fast: true,
                        ..Scenario::default()
                    };
                    let cfg = sc.build(&cat).unwrap();
                    // One request every 1,000 s: each meets an idle prefill instance and link.
                    let wl: Vec<GenRequest> = prompts
                        .iter()
                        .enumerate()
                        .map(|(i, &p)| GenRequest {
                            rid: i,
                            arrival_s: 1000.0 * i as f64,
                            prompt_len: p,
                            output_len: 2,
                        })
                        .collect();
                    let r = simulate(&cfg, &wl).unwrap();
                    let pcm = &cfg.prefill_pool().unwrap().cost;
                    for (i, &p) in prompts.iter().enumerate() {
                        let h = handoff(
                            pcm,
                            &cfg.link,
                            cfg.kv_transit.as_ref(),
                            SendMode::Layerwise,
                            p as u64,
                        );
                        let x = transfer(&cfg.model, &cfg.link, cfg.kv_transit.as_ref(), p as u64);
                        assert_eq!(
                            h.exposed_s,
                            disagg_model::layerwise_exposed(
                                x.fixed_s,
                                x.stream_s,
                                h.prefill_s,
                                cfg.model.n_layers
                            )
                        );
                        let rec = r.request(i);
                        let ps = rec.prefill_start_s.unwrap();
                        let ft = rec.first_token_s.unwrap();
                        let ready = rec.kv_ready_s.unwrap();
                        let what =
                            format!("{model} {} {comp:?} {at} {sharing} prompt {p}", link.key);
                        assert_eq!(ps, rec.arrival_s, "{what}: prefill was idle");
                        assert_eq!(ft, ps + h.prefill_s, "{what}: prefill step");
                        assert_eq!(ready, ft + h.exposed_s, "{what}");
                        // The transfer started when the first layer's slices were ready.
                        let l = cfg.model.n_layers as f64;
                        assert_eq!(rec.kv_start_s, Some(ps + h.prefill_s / l), "{what}");
                        assert_eq!(rec.handoff_start_s, rec.kv_start_s, "{what}");
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, want);
    assert!(checked >= 2000, "{checked}");
}

/// The chapter's headline numbers come out of the simulator: 28.7 ms exposed over 25 GbE instead
/// of 85.9 ms, 1.36 ms with FP8.
#[test]
fn chapter_figures_from_the_simulator() {
    let one = |extra: &dyn Fn(&mut Scenario)| {
        let mut sc = Scenario {
            link: "eth-25g".into(),
            send: SendMode::Layerwise,
            ..chapter()
        };
        extra(&mut sc);
        let cfg = build(&sc);
        let wl = [GenRequest {
            rid: 0,
            arrival_s: 0.0,
            prompt_len: 2048,
            output_len: 2,
        }];
        let r = simulate(&cfg, &wl).unwrap().request(0);
        r.kv_ready_s.unwrap() - r.first_token_s.unwrap()
    };
    let lw = one(&|_| {});
    assert!((lw - 0.02873094179732328).abs() < 1e-15, "{lw}");
    let whole = one(&|s| s.send = SendMode::Whole);
    assert!((whole - 0.08591934592).abs() < 1e-15, "{whole}");
    // FP8 compressed on the GPU: 20 us + 42.9 ms / 32 (`docs/cost-model.md`); in the link, its stage
    // adds 1 us of latency.
    let fp8 = one(&|s| {
        s.kv_compress = Some("fp8".into());
        s.kv_compress_at = CompressAt::Endpoint;
    });
    assert!((fp8 - 0.00136217728).abs() < 1e-15, "{fp8}");
    let fp8 = one(&|s| s.kv_compress = Some("fp8".into()));
    assert!((fp8 - 0.00136317728).abs() < 1e-15, "{fp8}");
}

/// Every option at its default is the reference: the summary with the options spelled out equals
/// the one without, byte for byte (the golden and published tests pin the values themselves).
#[test]
fn defaults_spelled_out_are_byte_identical() {
    let spelled = ["whole", "fifo", "shared", "arrival", "prefill"];
    for base in [
        chapter(),
        Scenario {
            link: "eth-25g".into(),
            rate: 14.0,
            ..chapter()
        },
        Scenario {
            link: "eth-25g".into(),
            rate: 14.0,
            kv_compress: Some("fp8".into()),
            kv_compress_at: CompressAt::Endpoint,
            fast: false,
            ..chapter()
        },
        Scenario {
            prefill: 2,
            decode: 2,
            link_channels: 2,
            rate: 16.0,
            ..chapter()
        },
        Scenario {
            requests: 200,
            ..Scenario::default()
        },
    ] {
        let a = run(&build(&base));
        let b = run(&build(&with(&base, spelled)));
        assert_eq!(json(&a.summary()), json(&b.summary()));
        assert!(a.requests().zip(b.requests()).all(|(x, y)| x == y));
        // And through the flags.
        let flags = [
            "--send",
            "whole",
            "--link-sharing",
            "fifo",
            "--link-topology",
            "shared",
            "--reserve-kv-on",
            "arrival",
            "--first-token",
            "prefill",
        ];
        assert_eq!(
            Scenario::from_flags(flags).unwrap(),
            Scenario::default(),
            "flags at their defaults"
        );
    }
    // The summary says which convention and options it used.
    let s = run(&build(&chapter())).summary();
    let v: serde_json::Value = serde_json::from_str(&json(&s)).unwrap();
    assert_eq!(v["first_token"], "prefill");
    assert_eq!(
        v["options"],
        serde_json::json!({"send": "whole", "link_sharing": "fifo", "link_topology": "shared",
                           "reserve_kv_on": "arrival", "first_token": "prefill"})
    );
    assert!(v["decode_mem_wait_s"].is_null());
    assert_eq!(v["links"].as_array().unwrap().len(), 1);
    assert_eq!(v["links"][0]["name"], "kv-link");
    assert_eq!(v["links"][0]["utilisation"], v["link_busy"]);
    assert_eq!(v["links"][0]["bytes"], v["link"]["bytes"]);
}

/// Small congested runs over every option combination (2 prefill x 2 decode instances, 25 GbE,
/// one and two channels, a decode pool whose KV fills up): conservation and invariants.
#[test]
fn conservation_over_every_option_combination() {
    let cat = cat();
    for channels in [1u32, 2] {
        for o in combos() {
            let sc = with(
                &Scenario {
                    model: "llama3-70b".into(),
                    devices_per_instance: 2,
                    prompt: 1500.0,
                    output: 200.0,
                    prefill: 2,
                    decode: 2,
                    link: "eth-25g".into(),
                    link_channels: channels,
                    rate: 3.0,
                    requests: 150,
                    ..Scenario::default()
                },
                o,
            );
            let cfg = sc.build(&cat).unwrap();
            let wl = cfg.generate_workload();
            let mut ts = TimeSeries::default();
            let r = simulate_observed(&cfg, &wl, &mut ts).unwrap();
            let s = r.summary();
            let what = format!("{o:?} channels {channels}");
            let h = r.horizon();
            // Every request finishes or was rejected at arrival.
            assert_eq!(s.requests.completed + s.requests.rejected, 150, "{what}");
            assert!(s.requests.completed > 100, "{what}");
            let mut wire = 0.0;
            let mut handed = 0u64;
            for rec in r.requests() {
                let Some(fin) = rec.finish_s else {
                    assert!(rec.prefill_start_s.is_none(), "{what}");
                    continue;
                };
                let ft = rec.first_token_s.unwrap();
                assert!(rec.arrival_s <= rec.prefill_start_s.unwrap(), "{what}");
                assert!(rec.prefill_start_s.unwrap() < ft, "{what}");
                if rec.output_len <= 1 {
                    assert!(rec.kv_start_s.is_none(), "{what}");
                    continue;
                }
                handed += 1;
                let hs = rec.handoff_start_s.unwrap();
                let ks = rec.kv_start_s.unwrap();
                let kr = rec.kv_ready_s.unwrap();
                let ds = rec.decode_start_s.unwrap();
                if o[0] == "whole" {
                    assert_eq!(hs, ft, "{what}");
                } else {
                    assert!(hs < ft, "{what}");
                }
                match rec.kv_reserved_s {
                    Some(m) => {
                        assert_eq!(o[3], "transfer", "{what}");
                        assert!(hs <= m && m <= ks, "{what}");
                    }
                    None => assert_eq!(o[3], "arrival", "{what}"),
                }
                assert!(hs <= ks && ft < kr && ks < kr, "{what}");
                assert!(kr <= ds && ds < fin, "{what}");
                wire += transfer(
                    &cfg.model,
                    &cfg.link,
                    cfg.kv_transit.as_ref(),
                    rec.prompt_len as u64,
                )
                .wire_bytes;
            }
            // Bytes sent = bytes received, per link and in all.
            assert_eq!(s.link.transfers, handed, "{what}");
            assert!((s.link.bytes - wire).abs() <= 1e-12 * wire, "{what}");
            let n_links = match o[2] {
                "shared" => 1,
                "per-prefill" => 2,
                _ => 4,
            };
            assert_eq!(s.links.len(), n_links, "{what}");
            assert_eq!(r.links().len(), n_links, "{what}");
            let sum_b: f64 = s.links.iter().map(|l| l.bytes).sum();
            let sum_t: u64 = s.links.iter().map(|l| l.transfers).sum();
            let sum_busy: f64 = s.links.iter().map(|l| l.busy_s).sum();
            assert!((sum_b - s.link.bytes).abs() <= 1e-12 * wire, "{what}");
            assert_eq!(sum_t, s.link.transfers, "{what}");
            assert!(
                (sum_busy - s.link.busy_s).abs() <= 1e-9 * sum_busy,
                "{what}"
            );
            let bw = cfg.link.bandwidth_bps;
            let c = channels as f64;
            for l in &s.links {
                // No link carries more than its bandwidth: bytes within capacity x horizon, and
                // at least bandwidth x the stream time it was busy.
                assert!(l.bytes <= bw * c * h, "{what} {}", l.name);
                assert!(l.busy_s <= c * h * (1.0 + 1e-12), "{what} {}", l.name);
                assert!(
                    l.bytes <= bw * l.busy_s * (1.0 + 1e-12),
                    "{what} {}",
                    l.name
                );
                assert!(l.utilisation <= 1.0 + 1e-12, "{what} {}", l.name);
            }
            assert!(
                (s.link_busy - sum_busy / (c * n_links as f64 * h)).abs() <= 1e-12,
                "{what}"
            );
            // Decode memory never overbooked; the link never runs above its channel count.
            for row in &ts.rows {
                for inst in &row.instances[2..] {
                    assert!(inst.kv_used <= inst.kv_cap, "{what}");
                }
                if o[1] == "fifo" {
                    assert!(
                        row.link_busy as usize <= n_links * channels as usize,
                        "{what}"
                    );
                }
                assert!(row.link_bytes_in_flight >= 0.0, "{what}");
            }
            // Stages add up to E2E.
            let st: f64 = s.stage_breakdown_s.as_array().iter().sum();
            assert!((st - s.e2e_s.mean).abs() <= 1e-9 * s.e2e_s.mean, "{what}");
            assert!(
                s.stage_breakdown_s.as_array().iter().all(|&x| x >= 0.0),
                "{what}"
            );
            // Decode memory waits are reported exactly when reserving at transfer.
            match (&s.decode_mem_wait_s, o[3]) {
                (Some(m), "transfer") => {
                    assert_eq!(m.handoffs, handed, "{what}");
                    let sum: f64 = r
                        .requests()
                        .filter_map(|q| Some(q.kv_reserved_s? - q.handoff_start_s?))
                        .sum();
                    assert!((m.total_s - sum).abs() <= 1e-9 * (1.0 + sum), "{what}");
                }
                (None, "arrival") => {}
                other => panic!("{what}: {other:?}"),
            }
            // Names of the options echoed.
            assert_eq!(s.options.send.as_str(), o[0]);
            assert_eq!(s.options.link_sharing.as_str(), o[1]);
            assert_eq!(s.options.link_topology.as_str(), o[2]);
            assert_eq!(s.options.reserve_kv_on.as_str(), o[3]);
            assert_eq!(s.first_token.as_str(), o[4]);
        }
    }
}

/// Identical summaries across two runs, and the fast decode path equals the plain loop, for every
/// option combination.
#[test]
fn deterministic_and_fast_equals_plain_for_every_combination() {
    let base = Scenario {
        prefill: 2,
        decode: 2,
        link: "eth-25g".into(),
        rate: 14.0,
        requests: 200,
        ..chapter()
    };
    for o in combos() {
        let sc = with(&base, o);
        let c = build(&sc);
        let a = run(&c);
        let b = run(&c);
        assert_eq!(json(&a.summary()), json(&b.summary()), "{o:?}");
        let plain = run(&build(&Scenario { fast: false, ..sc }));
        assert_eq!(json(&a.summary()), json(&plain.summary()), "{o:?}");
        assert!(
            a.requests().zip(plain.requests()).all(|(x, y)| x == y),
            "{o:?}"
        );
    }
}

#[track_caller]
fn err(flags: &[&str]) -> String {
    let sc = match Scenario::from_flags(flags) {
        Ok(s) => s,
        Err(e) => return e.to_string(),
    };
    match sc.build(&cat()) {
        Ok(_) => panic!("{flags:?} should be rejected"),
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "one line: {s}");
            s
        }
    }
}

#[test]
fn validation_names_the_flag_and_the_valid_values() {
    for (flag, valid) in [
        ("--send", &["whole", "layerwise"][..]),
        ("--link-sharing", &["fifo", "fair"][..]),
        (
            "--link-topology",
            &["shared", "per-prefill", "per-pair"][..],
        ),
        ("--reserve-kv-on", &["arrival", "transfer"][..]),
        ("--first-token", &["prefill", "decode"][..]),
    ] {
        let e = err(&[flag, "bogus"]);
        assert!(e.contains(flag) && e.contains("'bogus'"), "{e}");
        for v in valid {
            assert!(e.contains(v), "{e}");
        }
        assert!(err(&[flag]).contains(flag));
    }
    // Colocated mode has no link: the link options are refused, naming the flag.
    for (flag, v) in [
        ("--send", "layerwise"),
        ("--link-sharing", "fair"),
        ("--link-topology", "per-prefill"),
        ("--reserve-kv-on", "transfer"),
    ] {
        let e = err(&["--mode", "colocated", flag, v]);
        assert!(e.starts_with(flag) && e.contains("disaggregated"), "{e}");
    }
    // The TTFT convention is a no-op there (the first token comes from the decoding instance).
    let sc = Scenario {
        mode: Mode::Colocated,
        requests: 100,
        ..chapter()
    };
    let a = run(&build(&sc));
    let b = run(&build(&Scenario {
        first_token: FirstToken::Decode,
        ..sc
    }));
    let (sa, sb) = (a.summary(), b.summary());
    assert_eq!(sa.ttft_s, sb.ttft_s);
    assert_eq!(sa.tpot_s, sb.tpot_s);
    assert_eq!(sa.itl_s, sb.itl_s);
    // Too many per-pair links.
    let e = err(&[
        "--prefill",
        "300",
        "--decode",
        "300",
        "--link-topology",
        "per-pair",
    ]);
    assert!(e.starts_with("--link-topology"), "{e}");
    // Old scenario files (without the new keys) still parse, and the new keys round-trip.
    let old: Scenario = serde_json::from_str("{\"rate\": 6.0, \"link\": \"eth-25g\"}").unwrap();
    assert_eq!(old.send.as_str(), "whole");
    assert_eq!(old.first_token.as_str(), "prefill");
    let sc = Scenario::from_flags([
        "--send=layerwise",
        "--link-sharing",
        "fair",
        "--link-topology",
        "per-pair",
        "--reserve-kv-on",
        "transfer",
        "--first-token",
        "decode",
    ])
    .unwrap();
    assert_eq!(
        (
            sc.send.as_str(),
            sc.link_sharing.as_str(),
            sc.link_topology.as_str(),
            sc.reserve_kv_on.as_str(),
            sc.first_token.as_str()
        ),
        ("layerwise", "fair", "per-pair", "transfer", "decode")
    );
    let back: Scenario = serde_json::from_str(&serde_json::to_string(&sc).unwrap()).unwrap();
    assert_eq!(back, sc);
}

/// `--first-token decode`: TTFT runs to decode admission after the KV landed, TPOT from there.
#[test]
fn decode_first_token_moves_the_handoff_into_ttft() {
    let sc = Scenario {
        link: "eth-25g".into(),
        rate: 10.0,
        requests: 300,
        ..chapter()
    };
    let a = run(&build(&sc));
    let b = run(&build(&Scenario {
        first_token: FirstToken::Decode,
        ..sc
    }));
    // Same run, other measures.
    assert!(a.requests().zip(b.requests()).all(|(x, y)| x == y));
    let (sa, sb) = (a.summary(), b.summary());
    assert_eq!(sa.handoff_s, sb.handoff_s);
    assert_eq!(sa.e2e_s, sb.e2e_s);
    assert_eq!(sa.stage_breakdown_s, sb.stage_breakdown_s);
    assert!(sb.ttft_s.mean > sa.ttft_s.mean + 0.05);
    assert!(sb.tpot_s.mean < sa.tpot_s.mean);
    // Recompute both from the stamps (the measured requests: finished, sorted by arrival, after
    // the 10% warm-up).
    let recs: Vec<_> = b.requests().collect();
    let cut = recs.len() / 10;
    let mut ttft = disagg_sim::pymath::Fsum::new();
    let mut tpot = disagg_sim::pymath::Fsum::new();
    let mut n_tpot = 0;
    for r in &recs[cut..] {
        let emit = r.decode_start_s.unwrap();
        ttft.add(emit - r.arrival_s);
        if r.output_len >= 2 {
            tpot.add((r.finish_s.unwrap() - emit) / (r.output_len - 1) as f64);
            n_tpot += 1;
        }
    }
    let n = (recs.len() - cut) as f64;
    assert_eq!(sb.ttft_s.mean, ttft.value() / n);
    assert_eq!(sb.tpot_s.mean, tpot.value() / n_tpot as f64);
    // The first ITL is measured from the emitted first token.
    let r0 = b.request(cut);
    let itl = b.itls(cut);
    let first_step = r0.decode_start_s.unwrap() + itl[0];
    let itl_a = a.itls(cut);
    assert_eq!(first_step, r0.first_token_s.unwrap() + itl_a[0]);
    assert_eq!(sb.first_token.as_str(), "decode");
}

/// `--reserve-kv-on transfer`: decode memory throttles hand-offs; the waits are reported; the
/// decode queue then only waits for a batch slot.
#[test]
fn reservation_at_transfer_throttles_handoffs() {
    // Llama-3-70B on 2xH100 decode instances holds 8,835 tokens: about four 2,048-token
    // sequences, so decode memory is the bottleneck at 3 req/s.
    let sc = Scenario {
        devices_per_instance: 2,
        rate: 3.0,
        requests: 200,
        fast: true,
        ..Scenario::default()
    };
    let a = run(&build(&sc));
    let b = run(&build(&Scenario {
        reserve_kv_on: ReserveKvOn::Transfer,
        ..sc
    }));
    let (sa, sb) = (a.summary(), b.summary());
    let m = sb.decode_mem_wait_s.unwrap();
    assert!(m.total_s > 1.0, "{m:?}");
    assert!(m.per_handoff.p99 > 0.0 && m.per_handoff.mean > 0.0);
    assert_eq!(m.per_handoff.mean * m.handoffs as f64, m.total_s);
    // With arrival reservation the same pressure shows up after the transfer, in decode_queue.
    assert!(sa.stage_breakdown_s.decode_queue > 1.0, "{sa:?}");
    // With transfer reservation the wait is before the transfer; once the KV lands admission
    // needs only a slot, so the time from KV landed to admission is short.
    let dq: f64 = b
        .requests()
        .filter_map(|r| Some(r.decode_start_s? - r.kv_ready_s?))
        .fold(0.0, f64::max);
    assert!(dq < 0.5, "{dq}");
    // It is charged to decode_queue, not to the link.
    assert!(sb.stage_breakdown_s.decode_queue > sb.stage_breakdown_s.kv_wait);
    assert_eq!(sb.hotspot.stage.as_deref(), Some("decode_queue"));
    // Hand-off latency (first token to KV landed) now includes the memory wait.
    assert!(sb.handoff_s.p99 > sa.handoff_s.p99);
    for r in b.requests() {
        if let (Some(m), Some(h)) = (r.kv_reserved_s, r.handoff_start_s) {
            assert!(m >= h);
            assert!(r.kv_start_s.unwrap() >= m);
        }
    }
}

/// Topologies: one link per prefill instance or per pair spreads the load; per-pair binds the
/// decode instance when the transfer starts.
#[test]
fn topologies_spread_the_link_load() {
    let base = Scenario {
        prefill: 2,
        decode: 2,
        link: "eth-25g".into(),
        rate: 14.0,
        requests: 400,
        ..chapter()
    };
    let shared = run(&build(&base)).summary();
    let per_p = run(&build(&Scenario {
        link_topology: LinkTopology::PerPrefill,
        ..base.clone()
    }))
    .summary();
    let per_pair = run(&build(&Scenario {
        link_topology: LinkTopology::PerPair,
        ..base.clone()
    }))
    .summary();
    assert!(shared.handoff_s.p99 > per_p.handoff_s.p99);
    assert!(per_p.handoff_s.p99 > per_pair.handoff_s.p99);
    let names: Vec<&str> = per_pair.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "kv-link-p0-d0",
            "kv-link-p0-d1",
            "kv-link-p1-d0",
            "kv-link-p1-d1"
        ]
    );
    assert!(per_pair.links.iter().all(|l| l.transfers > 0));
    let names: Vec<&str> = per_p.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["kv-link-p0", "kv-link-p1"]);
    // Same bytes in all three.
    assert_eq!(shared.link.transfers, per_pair.link.transfers);
    assert!((shared.link.bytes - per_pair.link.bytes).abs() < 1.0);
}

/// Fair sharing on a shared link: two hand-offs of one batch finish together, at twice the solo
/// wire time plus the latency; under FIFO the second waits for the first.
#[test]
fn fair_sharing_in_the_serving_model() {
    // rid 0 (a short prompt) occupies the prefill instance while rids 1 and 2 arrive, so those two
    // form the next batch and hand off at the same time; rid 0's transfer is long done by then.
    let wl = [
        GenRequest {
            rid: 0,
            arrival_s: 0.0,
            prompt_len: 16,
            output_len: 4,
        },
        GenRequest {
            rid: 1,
            arrival_s: 0.001,
            prompt_len: 2048,
            output_len: 4,
        },
        GenRequest {
            rid: 2,
            arrival_s: 0.001,
            prompt_len: 2048,
            output_len: 4,
        },
    ];
    let base = Scenario {
        link: "eth-25g".into(),
        ..chapter()
    };
    let x = {
        let c = build(&base);
        transfer(&c.model, &c.link, None, 2048)
    };
    let fifo = simulate(&build(&base), &wl).unwrap();
    let fair = simulate(
        &build(&Scenario {
            link_sharing: LinkSharing::Fair,
            ..base
        }),
        &wl,
    )
    .unwrap();
    let ft = fifo.request(1).first_token_s.unwrap();
    assert_eq!(fifo.request(2).first_token_s, Some(ft));
    assert!(fifo.request(0).kv_ready_s.unwrap() < ft);
    // FIFO: back to back.
    assert_eq!(fifo.request(1).kv_ready_s, Some(ft + x.time_s));
    assert_eq!(fifo.request(2).kv_start_s, fifo.request(1).kv_ready_s);
    // Fair: together, both at ft + 2 x stream + latency.
    let (a, b) = (fair.request(1), fair.request(2));
    assert_eq!(fair.request(1).first_token_s, Some(ft));
    assert_eq!(a.kv_start_s, Some(ft));
    assert_eq!(b.kv_start_s, Some(ft));
    assert_eq!(a.kv_ready_s, b.kv_ready_s);
    let want = ft + 2.0 * x.stream_s + x.fixed_s;
    assert!((a.kv_ready_s.unwrap() - want).abs() < 1e-12);
    let s = fair.summary();
    assert_eq!(s.link.wait_s, 0.0);
    let x0 = transfer(&fair.config().model, &fair.config().link, None, 16);
    assert!((s.link.busy_s - (2.0 * x.stream_s + x0.stream_s)).abs() < 1e-15);
}

/// Layer-wise streaming hides most of the hand-off when the link keeps up with the prefill.
#[test]
fn layerwise_shortens_the_handoff_under_load() {
    for sharing in SHARINGS {
        let sc = Scenario {
            link: "eth-100g".into(),
            rate: 8.0,
            requests: 400,
            link_sharing: LinkSharing::parse(sharing).unwrap(),
            ..chapter()
        };
        let whole = run(&build(&sc)).summary();
        let lw = run(&build(&Scenario {
            send: SendMode::Layerwise,
            ..sc
        }))
        .summary();
        assert!(lw.handoff_s.p50 < 0.5 * whole.handoff_s.p50, "{sharing}");
        assert!(lw.tpot_s.p99 <= whole.tpot_s.p99, "{sharing}");
        assert_eq!(lw.ttft_s, whole.ttft_s, "{sharing}");
    }
}
