//! Beyond the reference (issue 12): the KV hand-off options of issue 4 in the scheduled
//! disaggregated pools (README, "Beyond the reference: reservation at transfer and chunk-wise
//! streaming in the scheduled pools").
//!
//! `--reserve-kv-on transfer`: a hand-off reserves its decode memory on the least-loaded decode
//! instance that can hold it now (FIFO, head-of-line blocking), instead of being routed to the
//! least-loaded instance first and waiting in that instance's inbox (`docs/levers.md#quirks`
//! item 7, "routing at hand-off").
//!
//! `--send layerwise`: a prompt's KV streams chunk by chunk, from its first prefill step's first
//! layer; the decode side allocates it before its transfer starts.

use disagg_model::Catalogue;
use disagg_sim::{
    simulate, simulate_observed, GenRequest, Observer, Scenario, SimConfig, StepEvent,
};

fn cfg(extra: &[&str]) -> SimConfig {
    let mut f = vec!["--model", "llama3-8b", "--devices-per-instance", "1"];
    f.extend_from_slice(extra);
    Scenario::from_flags(&f)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap()
}

fn req(rid: usize, arrival_s: f64, prompt_len: u32, output_len: u32) -> GenRequest {
    GenRequest {
        rid,
        arrival_s,
        prompt_len,
        output_len,
    }
}

/// Every instance's KV memory at the end holds only cached prefix segments: every reservation
/// and allocation was returned; nothing is left waiting or swapped out.
fn all_returned(r: &disagg_sim::RunResult, what: &str) {
    let end = r.kv_at_end().expect("a scheduled run");
    assert!(!end.is_empty());
    for (k, e) in end.iter().enumerate() {
        assert_eq!(e.used_units, e.cached_units, "{what}: instance {k}");
        assert_eq!((e.queued, e.swapped), (0, 0), "{what}: instance {k}");
    }
}

/// The most hand-offs any sample saw waiting for decode memory.
#[derive(Default)]
struct MemWaits(usize);

impl Observer for MemWaits {
    fn wants_samples(&self) -> bool {
        true
    }
    fn sample(&mut self, s: &disagg_sim::Sample<'_>) {
        self.0 = self.0.max(s.decode_mem_wait);
    }
}

/// Step end times per instance (prefill first, then decode, in instance order).
#[derive(Default)]
struct Steps(Vec<Vec<f64>>);

impl Observer for Steps {
    fn step(&mut self, ev: &StepEvent) {
        if self.0.len() <= ev.instance {
            self.0.resize(ev.instance + 1, Vec::new());
        }
        self.0[ev.instance].push(ev.start + ev.dur);
    }
}

/// 1 prefill and 2 decode instances, paged KV in blocks of 16, each decode instance holding
/// 1,600 tokens: `U` = 1600 / 16 = 100 blocks, `WM` = trunc(0.01 * 100) = 1.
fn one_p_two_d(reserve: &str) -> SimConfig {
    let mut c = cfg(&[
        "--prefill",
        "1",
        "--decode",
        "2",
        "--kv-policy",
        "paged",
        "--kv-block-size",
        "16",
        "--reserve-kv-on",
        reserve,
    ]);
    for p in &mut c.pools {
        if p.role == disagg_sim::Role::Decode {
            p.kv_capacity_tokens = 1600;
        }
    }
    c
}

/// The decode instance (0 or 1) whose steps include `t`, with the prefill instance at index 0.
fn decode_of(steps: &Steps, t: f64) -> usize {
    let on: Vec<usize> = (1..3).filter(|&i| steps.0[i].contains(&t)).collect();
    assert_eq!(on.len(), 1, "{t} on {on:?}");
    on[0] - 1
}

/// r0 alone first (tie at load 0: decode-0). r1 and r2 arrive during r0's prefill and are
/// prefilled together; their hand-offs come in that order at the same time: r1 to decode-1 (loads
/// 1, 0), then r2 with the loads tied at 1.
///
/// Memory (blocks of 16, `U` = 100, `WM` = 1): r0 holds units(1409) = 89 blocks on decode-0 for its
/// whole life (units(1409 + 15) = 89: it never grows), so decode-0 has 11 free; r2 needs
/// units(176) = 11 plus the watermark, 12: it fits only if the watermark is left out. Decode-1 holds
/// r1's units(64) = 4 (at most units(64 + 200) = 17) and has room.
///
/// * reference (`arrival`): r2 is routed to decode-0 (first on the tie) and waits in its inbox
///   until r0 finishes: `kv_start = r0.finish`;
/// * `transfer`: decode-0 cannot allocate it, decode-1 can: it is reserved there at its first
///   token, and its transfer starts when r1's has left the (one-channel) link:
///   `kv_reserved = first_token`, `kv_start = r1.kv_ready`.
#[test]
fn scheduled_reservation_routes_to_the_instance_with_room() {
    let wl = [
        req(0, 0.0, 1409, 15),
        req(1, 0.001, 64, 200),
        req(2, 0.002, 176, 20),
    ];
    let mut out = Vec::new();
    for reserve in ["arrival", "transfer"] {
        let c = one_p_two_d(reserve);
        assert!(c.levers.is_some());
        let mut steps = Steps::default();
        let r = simulate_observed(&c, &wl, &mut steps).unwrap();
        let q: Vec<_> = r.requests().collect();
        // Premises: r1 and r2 share a prefill step that ends while r0 decodes; r0 and r1 run on
        // decode-0 and decode-1; nothing is rejected.
        let ft2 = q[2].first_token_s.unwrap();
        assert_eq!(q[1].first_token_s, Some(ft2));
        assert!(q[0].decode_start_s.unwrap() < ft2 && q[0].finish_s.unwrap() > ft2);
        assert!(q[1].finish_s.unwrap() > q[0].finish_s.unwrap());
        assert_eq!(decode_of(&steps, q[0].finish_s.unwrap()), 0);
        assert_eq!(decode_of(&steps, q[1].finish_s.unwrap()), 1);
        assert_eq!(r.rejected(), 0);
        all_returned(&r, reserve);
        out.push((r, steps));
    }
    let (refr, ref_steps) = &out[0];
    let q: Vec<_> = refr.requests().collect();
    // Reference: r2 waits in decode-0's inbox until r0's last step ends.
    assert_eq!(q[2].kv_start_s, q[0].finish_s);
    assert_eq!(decode_of(ref_steps, q[2].finish_s.unwrap()), 0);
    assert_eq!(q[2].kv_reserved_s, None);
    let (opt, opt_steps) = &out[1];
    let q: Vec<_> = opt.requests().collect();
    // The option: r2 is reserved on decode-1 the moment its prompt is done.
    assert_eq!(q[2].kv_reserved_s, q[2].first_token_s);
    assert_eq!(q[1].kv_reserved_s, q[1].first_token_s);
    assert_eq!(q[2].kv_start_s, q[1].kv_ready_s);
    assert_eq!(decode_of(opt_steps, q[2].finish_s.unwrap()), 1);
    assert!(q[2].kv_start_s.unwrap() < q[0].finish_s.unwrap());
    // Nothing else changed for r0 and r1.
    let qr: Vec<_> = refr.requests().collect();
    for k in 0..2 {
        assert_eq!(q[k].kv_start_s, qr[k].kv_start_s, "request {k}");
        assert_eq!(q[k].decode_start_s, qr[k].decode_start_s, "request {k}");
    }
}

/// "Released on failure": in this engine a reservation's transfer cannot fail (the link has no
/// failures and a reservation is not a running row, so no preemption can take it back); every
/// reservation becomes the landed request's allocation and is freed when it finishes. Under load
/// on tight decode memory (hand-offs queueing for memory, preemptions), with both preemption
/// modes: every request finishes, the stamps are ordered first token <= reserved <= KV start <=
/// ready <= decode start, and at the end every instance's memory is free (only cached segments
/// may stay): every reservation was returned.
#[test]
fn scheduled_reservations_under_load_are_all_returned() {
    for preemption in ["recompute", "swap"] {
        let mut c = cfg(&[
            "--prefill",
            "2",
            "--decode",
            "3",
            "--kv-policy",
            "paged",
            "--preemption",
            preemption,
            "--reserve-kv-on",
            "transfer",
            "--rate",
            "40",
            "--requests",
            "150",
        ]);
        for p in &mut c.pools {
            if p.role == disagg_sim::Role::Decode {
                p.kv_capacity_tokens = 8192;
            }
        }
        let wl = c.generate_workload();
        let mut mw = MemWaits::default();
        let r = simulate_observed(&c, &wl, &mut mw).unwrap();
        // The samples count the hand-offs waiting for decode memory.
        assert!(mw.0 > 0, "{preemption}");
        let mut waited = 0;
        for q in r.requests() {
            let fin = q.finish_s.expect("finished");
            if q.output_len <= 1 {
                continue;
            }
            let ft = q.first_token_s.unwrap();
            let res = q.kv_reserved_s.expect("reserved");
            let ks = q.kv_start_s.unwrap();
            let kr = q.kv_ready_s.unwrap();
            let ds = q.decode_start_s.unwrap();
            assert!(
                ft <= res && res <= ks && ks < kr && kr <= ds && ds < fin,
                "{q:?}"
            );
            waited += (res > ft) as u32;
        }
        assert_eq!(r.rejected(), 0);
        // The premise of the load: hand-offs did wait for decode memory.
        assert!(waited > 0, "{preemption}");
        all_returned(&r, preemption);
    }
}

/// The prefill instance's steps `(start, duration)` and the request's stamps, for one prompt of
/// `p` tokens (output 50) alone on an idle 1P1D system, chunked by `chunk` tokens, on `link`.
fn one_long_prompt(
    send: &str,
    link: &str,
    policy: &str,
    p: u32,
    chunk: &str,
) -> (SimConfig, Vec<(f64, f64)>, disagg_sim::RequestRecord) {
    let c = cfg(&[
        "--prefill",
        "1",
        "--decode",
        "1",
        "--batch-policy",
        policy,
        "--max-num-batched-tokens",
        chunk,
        "--link",
        link,
        "--send",
        send,
    ]);
    assert!(c.levers.is_some());
    let mut steps = StepTimes::default();
    let r = simulate_observed(&c, &[req(0, 0.0, p, 50)], &mut steps).unwrap();
    let q = r.request(0);
    (c, steps.0, q)
}

/// Prefill instance (0) steps as `(start, duration)`.
#[derive(Default)]
struct StepTimes(Vec<(f64, f64)>);

impl Observer for StepTimes {
    fn step(&mut self, ev: &StepEvent) {
        if ev.instance == 0 {
            self.0.push((ev.start, ev.dur));
        }
    }
}

/// Chunk-wise streaming on an idle system: an 8,192-token prompt in chunks of 2,048 (4 prefill
/// steps of durations T_k starting at s_k, ending at e_k = s_k + T_k), L = 32 layers. The hand-off
/// starts when the first chunk's first layer is ready, `g = s_1 + T_1 / L`, and is granted at
/// once (idle link, decode memory free): `kv_start = g`. Chunk k's KV (work `W_k = stream * c_k /
/// P`) leaves in L slices of `W_k / L`, slice l ready at `s_k + l T_k / L`; the sender is through
/// with chunk k at `f_k = max(max(f_{k-1}, s_k + T_k / L) + W_k, e_k + W_k / L)` (`f_0 = g`), and
/// `kv_ready = f_K + fixed`.
///
/// * NVLink 4 (fast: each chunk's bytes take far less than its step): the sender idles between
///   chunks, so only the last chunk's last slice is exposed: `kv_ready = (e_4 + W_4 / L) + fixed`,
///   exactly, against `e_4 + (fixed + stream)` for the whole cache.
/// * 25 GbE (slow: the bytes take longer than the prefill): the sender never idles after `g`:
///   `kv_ready = g + stream + fixed` (the W_k summed: equal to rounding).
#[test]
fn scheduled_chunkwise_streaming_on_an_idle_system_is_the_closed_form() {
    let layers = 32.0; // llama3-8b
    let p = 8192u32;
    for link in ["nvlink4", "eth-25g"] {
        let (c, steps, q) = one_long_prompt("layerwise", link, "chunked", p, "2048");
        assert_eq!(c.model.n_layers, 32);
        let x = disagg_model::transfer(&c.model, &c.link, None, p as u64);
        // Premises: 4 chunk steps back to back, the last one's end is the first token.
        assert_eq!(steps.len(), 4, "{link}");
        for k in 1..4 {
            assert_eq!(steps[k].0, steps[k - 1].0 + steps[k - 1].1, "{link}");
        }
        let (s1, t1) = steps[0];
        let (s4, t4) = steps[3];
        let e4 = s4 + t4;
        assert_eq!(q.first_token_s, Some(e4));
        let g = s1 + t1 / layers;
        assert_eq!(q.kv_start_s, Some(g), "{link}");
        let w = x.stream_s * 2048.0 / p as f64;
        let kv_ready = q.kv_ready_s.unwrap();
        match link {
            "nvlink4" => {
                // Fast: W_k < T_k / L... the sender is idle when each chunk starts.
                for &(_, t) in &steps {
                    assert!(w < t / layers, "{w} {t}");
                }
                assert_eq!(kv_ready, (e4 + w / layers) + x.fixed_s);
            }
            _ => {
                // Slow: one chunk's bytes outlast every step (the sender never catches up).
                for &(_, t) in &steps {
                    assert!(w > t, "{w} {t}");
                }
                let want = g + x.stream_s + x.fixed_s;
                assert!((kv_ready - want).abs() < 1e-12, "{kv_ready} vs {want}");
            }
        }
        // The whole cache leaves after the last chunk (the reference): exposed fixed + stream.
        let (_, steps_w, qw) = one_long_prompt("whole", link, "chunked", p, "2048");
        assert_eq!(steps_w, steps, "the prefill does not depend on --send");
        assert_eq!(qw.kv_start_s, Some(e4));
        assert_eq!(qw.kv_ready_s, Some(e4 + x.time_s));
        assert!(kv_ready < e4 + x.time_s, "{link}");
        // Decode starts when the KV is ready (idle decode instance) and the first token is the
        // same in both.
        assert_eq!(q.decode_start_s, Some(kv_ready));
        assert_eq!(qw.first_token_s, q.first_token_s);
    }
}

/// Layer-wise without chunking (the whole prompt in one prefill step, prefill-priority): the
/// plain engine's closed form, `max(g + stream, e + stream / L) + fixed` with `g = s + T / L` the
/// first slice (the link's formula `e + (fixed + max(stream / L, stream - T (L - 1) / L))` up to
/// rounding).
#[test]
fn scheduled_layerwise_single_step_matches_the_plain_closed_form() {
    let layers = 32.0;
    let p = 4096u32;
    for link in ["nvlink4", "eth-25g", "pcie5"] {
        let (c, steps, q) = one_long_prompt("layerwise", link, "prefill-priority", p, "8192");
        let x = disagg_model::transfer(&c.model, &c.link, None, p as u64);
        assert_eq!(steps.len(), 1);
        let (s, t) = steps[0];
        let e = s + t;
        let g = s + t / layers;
        assert_eq!(q.kv_start_s, Some(g));
        let a = g + x.stream_s;
        let b = e + x.stream_s / layers;
        assert_eq!(q.kv_ready_s, Some(a.max(b) + x.fixed_s), "{link}");
        let exposed = disagg_model::layerwise_exposed(x.fixed_s, x.stream_s, t, 32);
        assert!(
            (q.kv_ready_s.unwrap() - (e + exposed)).abs() < 1e-12,
            "{link}"
        );
    }
}

/// Every combination of the two options with the batch policies and preemption modes, under load
/// on tight decode memory: every request finishes, the stamps are ordered (hand-off requested <=
/// KV start < KV ready <= decode start < finish; first token < KV ready; with the whole cache the
/// transfer starts after the first token, streamed it may start before), and the run is
/// deterministic.
#[test]
fn scheduled_streaming_and_reservation_under_load() {
    for send in ["whole", "layerwise"] {
        for reserve in ["arrival", "transfer"] {
            for policy in ["chunked", "prefill-priority", "decode-priority"] {
                for preemption in ["recompute", "swap"] {
                    let flags = [
                        "--prefill",
                        "2",
                        "--decode",
                        "2",
                        "--kv-policy",
                        "paged",
                        "--preemption",
                        preemption,
                        "--batch-policy",
                        policy,
                        "--max-num-batched-tokens",
                        "512",
                        "--send",
                        send,
                        "--reserve-kv-on",
                        reserve,
                        "--rate",
                        "12",
                        "--requests",
                        "120",
                        "--link",
                        "eth-100g",
                    ];
                    let mut c = cfg(&flags);
                    for p in &mut c.pools {
                        if p.role == disagg_sim::Role::Decode {
                            p.kv_capacity_tokens = 16384;
                        }
                    }
                    let wl = c.generate_workload();
                    let r = simulate(&c, &wl).unwrap();
                    assert_eq!(r.rejected(), 0, "{flags:?}");
                    let mut early = 0;
                    for q in r.requests() {
                        let fin = q.finish_s.expect("finished");
                        if q.output_len <= 1 {
                            continue;
                        }
                        let ft = q.first_token_s.unwrap();
                        let hs = q.handoff_start_s.unwrap();
                        let ks = q.kv_start_s.unwrap();
                        let kr = q.kv_ready_s.unwrap();
                        let ds = q.decode_start_s.unwrap();
                        assert!(
                            hs <= ks && ks < kr && kr <= ds && ds < fin,
                            "{flags:?} {q:?}"
                        );
                        assert!(ft < kr, "{flags:?} {q:?}");
                        if send == "whole" {
                            assert!(ft <= ks, "{flags:?} {q:?}");
                        }
                        early += (ks < ft) as u32;
                        if reserve == "transfer" {
                            let res = q.kv_reserved_s.unwrap();
                            assert!(hs <= res && res <= ks, "{flags:?} {q:?}");
                        }
                    }
                    // Premises: some hand-offs waited for decode memory past their first token
                    // (with streaming: pulled after the prompt was done), and streamed ones also
                    // started before it (pulled while prefilling).
                    let late = r
                        .requests()
                        .filter(|q| q.kv_start_s > q.first_token_s)
                        .count();
                    assert!(late > 0, "{flags:?}");
                    assert_eq!(early > 0, send == "layerwise", "{flags:?}");
                    all_returned(&r, &format!("{flags:?}"));
                    let again = simulate(&c, &wl).unwrap();
                    let a: Vec<_> = r.requests().map(|q| format!("{q:?}")).collect();
                    let b: Vec<_> = again.requests().map(|q| format!("{q:?}")).collect();
                    assert_eq!(a, b, "{flags:?}");
                }
            }
        }
    }
}

/// The golden run lv6's configuration (speculative MTP draft whose KV crosses the link, chunked
/// prefill, prefix caching on the prefill pool, pow2 reservation, single-token requests), 1P2D,
/// streamed: every request finishes with ordered stamps; prefix-cached prompts (whose first chunk
/// starts past their hit) stream too; the link carries the same transfers and bytes as with the
/// whole cache.
#[test]
fn scheduled_streaming_with_prefix_hits_and_a_draft() {
    let base = [
        "--prefill",
        "1",
        "--decode",
        "2",
        "--speculative",
        "mtp",
        "--gamma",
        "3",
        "--alpha",
        "0.7",
        "--batch-policy",
        "chunked",
        "--max-num-batched-tokens",
        "2048",
        "--prefix-caching",
        "--system-prompts",
        "4",
        "--system-len",
        "1024",
        "--prefix-share",
        "0.5",
        "--kv-policy",
        "pow2",
        "--rate",
        "4",
        "--requests",
        "150",
        "--output",
        "32",
        "--output-cv",
        "1.5",
    ];
    let mut runs = Vec::new();
    for (send, reserve) in [
        ("whole", "arrival"),
        ("layerwise", "arrival"),
        ("layerwise", "transfer"),
    ] {
        let mut f = base.to_vec();
        f.extend_from_slice(&["--send", send, "--reserve-kv-on", reserve]);
        let c = cfg(&f);
        let r = disagg_sim::simulate_config(&c).unwrap();
        assert_eq!(r.rejected(), 0);
        let mut hit_streamed = 0;
        for q in r.requests() {
            let fin = q.finish_s.expect("finished");
            let ft = q.first_token_s.unwrap();
            if q.output_len <= 1 {
                assert_eq!(q.kv_start_s, None);
                assert_eq!(fin, ft);
                continue;
            }
            let ks = q.kv_start_s.unwrap();
            let kr = q.kv_ready_s.unwrap();
            assert!(q.handoff_start_s.unwrap() <= ks && ks < kr, "{f:?} {q:?}");
            assert!(ft < kr && kr <= q.decode_start_s.unwrap(), "{f:?} {q:?}");
            let rec = r.lever_record(q.rid).unwrap();
            if send == "layerwise" && rec.prefix_hit_tokens > 0 && ks < ft {
                hit_streamed += 1;
            }
        }
        if send == "layerwise" {
            assert!(hit_streamed > 0, "{f:?}");
        }
        all_returned(&r, &format!("{f:?}"));
        runs.push(r);
    }
    let whole = runs[0].link();
    for r in &runs[1..] {
        assert_eq!(r.link().transfers, whole.transfers);
        assert_eq!(r.link().bytes, whole.bytes);
    }
}

/// Samples' KV use never above capacity (the engine also asserts it at every step in test builds).
#[derive(Default)]
struct KvWithin(Option<String>);

impl Observer for KvWithin {
    fn wants_samples(&self) -> bool {
        true
    }
    fn every_sample_interval(&self) -> bool {
        true
    }
    fn sample(&mut self, s: &disagg_sim::Sample<'_>) {
        for (k, i) in s.instances.iter().enumerate() {
            if i.kv_used > i.kv_cap {
                self.0 = Some(format!(
                    "t {}: instance {k} {} > {}",
                    s.t, i.kv_used, i.kv_cap
                ));
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, .. Default::default() })]

    /// Random disaggregated lever configurations with both options: every request completes, the
    /// stamps are ordered, KV use stays within capacity, every reservation is returned, and the
    /// link carries every hand-off.
    #[test]
    fn scheduled_options_keep_their_invariants(
        (np, nd, policy, kv, blk) in (1u32..=2, 1u32..=3, 0usize..3, 0usize..4, 0usize..3),
        (swap, prefix, sessions, spec, layerwise, reserve) in (
            proptest::prelude::any::<bool>(), proptest::prelude::any::<bool>(),
            proptest::prelude::any::<bool>(), proptest::prelude::any::<bool>(),
            proptest::prelude::any::<bool>(), proptest::prelude::any::<bool>(),
        ),
        (n, rate, seed, budget_log2, link) in (30u64..=90, 2u64..=10, 0u32..1000, 7u64..=12, 0usize..3),
    ) {
        let mut f: Vec<String> = Vec::new();
        let mut push = |a: &str, b: String| {
            f.push(a.into());
            f.push(b);
        };
        if spec {
            push("--model", "llama3-8b".into());
            push("--speculative", "mtp".into());
        } else {
            push("--model", "opt-13b".into());
            push("--device", "a100-40g".into());
        }
        push("--devices-per-instance", "1".into());
        push("--prefill", np.to_string());
        push("--decode", nd.to_string());
        push("--batch-policy", ["prefill-priority", "decode-priority", "chunked"][policy].into());
        push("--max-num-batched-tokens", (1u64 << budget_log2).to_string());
        push("--kv-policy", ["oracle", "pow2", "max", "paged"][kv].into());
        push("--kv-block-size", [1, 16, 32][blk].to_string());
        push("--max-seq-len", "1024".into());
        if swap && !prefix {
            push("--preemption", "swap".into());
        }
        if sessions {
            push("--turns", "3".into());
            push("--think", "0.5".into());
            push("--system-prompts", "2".into());
            push("--system-len", "256".into());
            push("--prefix-share", "0.7".into());
        }
        push("--prompt", "300".into());
        push("--prompt-cv", "1.0".into());
        push("--output", "400".into());
        push("--output-cv", "1.0".into());
        push("--rate", rate.to_string());
        push("--requests", n.to_string());
        push("--seed", seed.to_string());
        push("--link", ["eth-25g", "ib-ndr", "nvlink4"][link].into());
        push("--send", if layerwise { "layerwise" } else { "whole" }.into());
        push("--reserve-kv-on", if reserve { "transfer" } else { "arrival" }.into());
        if prefix {
            f.push("--prefix-caching".into());
        }
        let c = Scenario::from_flags(&f).unwrap().build(&Catalogue::builtin()).unwrap();
        let mut obs = KvWithin::default();
        let r = disagg_sim::simulate_config_observed(&c, &mut obs).unwrap();
        proptest::prop_assert!(obs.0.is_none(), "{f:?}: {:?}", obs.0);
        let mut handed = 0u64;
        for q in r.requests() {
            let Some(fin) = q.finish_s else {
                proptest::prop_assert!(q.prefill_start_s.is_none(), "{f:?}");
                continue;
            };
            let ft = q.first_token_s.unwrap();
            proptest::prop_assert!(q.prefill_start_s.unwrap() <= ft && ft <= fin, "{f:?} {q:?}");
            let Some(ks) = q.kv_start_s else {
                proptest::prop_assert!(q.output_len <= 1, "{f:?} {q:?}");
                continue;
            };
            handed += 1;
            let hs = q.handoff_start_s.unwrap();
            let kr = q.kv_ready_s.unwrap();
            let ds = q.decode_start_s.unwrap();
            proptest::prop_assert!(hs <= ks && ks < kr && kr <= ds && ds < fin, "{f:?} {q:?}");
            proptest::prop_assert!(ft < kr, "{f:?} {q:?}");
            if !layerwise {
                proptest::prop_assert!(ft <= hs, "{f:?} {q:?}");
            }
            proptest::prop_assert_eq!(q.kv_reserved_s.is_some(), reserve, "{:?} {:?}", f, q);
        }
        proptest::prop_assert_eq!(r.link().transfers, handed, "{:?}", f);
        for (k, e) in r.kv_at_end().unwrap().iter().enumerate() {
            proptest::prop_assert_eq!(e.used_units, e.cached_units, "{:?}: instance {}", f, k);
            proptest::prop_assert_eq!((e.queued, e.swapped), (0, 0), "{:?}: instance {}", f, k);
        }
    }
}

/// The prefix-aware hand-off is not modelled with either option (its decode-side hit would have to
/// be taken at the reservation and split over the streamed chunks): refused with one line; each
/// option alone, and the prefix-aware hand-off alone, are accepted.
#[test]
fn scheduled_options_are_refused_with_the_prefix_aware_hand_off() {
    let base = ["--prefix-caching", "--prefix-handoff"];
    for extra in [
        &["--send", "layerwise"][..],
        &["--reserve-kv-on", "transfer"][..],
        &["--send", "layerwise", "--reserve-kv-on", "transfer"][..],
    ] {
        let mut f = base.to_vec();
        f.extend_from_slice(extra);
        let e = Scenario::from_flags(&f)
            .unwrap()
            .build(&Catalogue::builtin())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--prefix-handoff: not modelled with --send layerwise or --reserve-kv-on transfer \
             (use --send whole --reserve-kv-on arrival)",
            "{f:?}"
        );
        assert!(
            cfg(extra).levers.is_none(),
            "{extra:?}: the options alone need no levers"
        );
        let mut with_levers = extra.to_vec();
        with_levers.push("--prefix-caching");
        assert!(cfg(&with_levers).levers.is_some());
    }
    assert!(cfg(&base).levers.is_some());
}
