//! Beyond the reference: the prefix-aware hand-off (`--prefix-handoff`), the prefix router of
//! hand-offs (`--decode-router prefix`) and prefix chains from a trace's block hashes
//! (`--prefix-from-trace`): closed forms on an idle system, conservation of bytes, a property
//! test over random session workloads, the options' refusals, and the defaults left alone.

use std::collections::BTreeMap;
use std::sync::Arc;

use disagg_model::Catalogue;
use disagg_sim::levers::{PrefixChain, PrefixChains};
use disagg_sim::{
    simulate_workload, GenRequest, Observer, RunResult, Scenario, SimConfig, TransferEvent,
    Workload,
};
use proptest::prelude::*;

/// llama3-8b's KV bytes per token: 2 (K and V) x 32 layers x 8 KV heads x 128 (head dim) x 2
/// bytes (bf16) = 131,072.
const KV_TOK: f64 = 131_072.0;

fn build(flags: &[&str]) -> Result<SimConfig, disagg_model::Error> {
    Scenario::from_flags(flags)
        .unwrap()
        .build(&Catalogue::builtin())
}

/// One A100 per instance, llama3-8b, the given pools and extra flags.
fn cfg(prefill: u32, decode: u32, extra: &[&str]) -> SimConfig {
    let (p, d) = (prefill.to_string(), decode.to_string());
    let mut f = vec![
        "--model",
        "llama3-8b",
        "--device",
        "a100",
        "--devices-per-instance",
        "1",
        "--prefill",
        &p,
        "--decode",
        &d,
        "--prefix-caching",
    ];
    f.extend_from_slice(extra);
    let c = build(&f).unwrap_or_else(|e| panic!("{f:?}: {e}"));
    assert_eq!(c.model.kv_bytes_per_token(), KV_TOK);
    c
}

/// Records every transfer by request.
#[derive(Default)]
struct Xfers(BTreeMap<usize, TransferEvent>);

impl Observer for Xfers {
    fn transfer(&mut self, ev: &TransferEvent) {
        assert!(self.0.insert(ev.rid, *ev).is_none(), "two transfers");
    }
}

fn run(c: &SimConfig, w: &Workload) -> (RunResult, Xfers) {
    let mut x = Xfers::default();
    let r = simulate_workload(c, w, &mut x).unwrap();
    (r, x)
}

fn req(arrival_s: f64, prompt: u32, output: u32) -> GenRequest {
    GenRequest {
        rid: 0,
        arrival_s,
        prompt_len: prompt,
        output_len: output,
    }
}

fn chain(segments: &[(u32, u64)], emit: Option<u32>) -> PrefixChain {
    PrefixChain {
        segments: segments.into(),
        emit,
    }
}

/// A session's two turns, far apart on an idle system: turn 1 (1000-token prompt, 10-token
/// reply) emits segment 0 of 1000 + 10 = 1010 tokens; turn 2's prompt is those 1010 tokens plus
/// 600 new ones (1610), its chain is segment 0.
fn two_turns() -> Workload {
    Workload {
        requests: vec![req(0.0, 1000, 10), req(100.0, 1610, 10)],
        closed: None,
        chains: Some(Arc::new(PrefixChains {
            chains: vec![chain(&[], Some(0)), chain(&[(0, 1010)], Some(1))],
            names: vec!["s0t0".into(), "s0t1".into()],
        })),
        clipped_prompts: 0,
    }
}

#[test]
fn prefix_handoff_sends_only_a_turns_new_tokens() {
    let c = cfg(1, 1, &["--prefix-handoff"]);
    let (r, x) = run(&c, &two_turns());
    // Turn 1: nothing cached on decode, the whole 1000-token prompt is sent.
    assert_eq!(x.0[&0].kv_bytes, 1000.0 * KV_TOK);
    // Turn 2: the decode instance holds segment 0 (1010 tokens, <= 1610 - 1): 600 are sent.
    let sent = 600.0 * KV_TOK;
    assert_eq!(x.0[&1].kv_bytes, sent);
    assert_eq!(x.0[&1].wire_bytes, sent);
    // Idle link, FIFO, no compression: latency + bytes / bandwidth, exactly.
    let want = c.link.latency_s + sent / c.link.bandwidth_bps;
    assert_eq!(x.0[&1].dur, want);
    let t = r.request(1);
    assert_eq!(t.kv_ready_s.unwrap(), t.kv_start_s.unwrap() + want);
    // The link's totals: sent (1000 + 600 tokens) and saved (1010 tokens).
    assert_eq!(r.link().bytes, 1600.0 * KV_TOK);
    assert_eq!(r.link().handoff_bytes_saved, Some(1010.0 * KV_TOK));
    // Conservation: sent + saved = the KV of every hand-off's prompt (1000 + 1610 tokens).
    assert_eq!(
        r.link().bytes + r.link().handoff_bytes_saved.unwrap(),
        2610.0 * KV_TOK
    );
    // The decode side's figures: 2 hand-offs, 1 with a hit of 1010 of 2610 prompt tokens; at
    // the end the decode cache holds segment 0 (1010) and turn 2's own segment
    // (1610 - 1010 + 10 = 610).
    let h = r.scheduler().unwrap().prefix_handoff.as_ref().unwrap();
    assert_eq!((h.handoffs, h.handoffs_hit), (2, 1));
    assert_eq!((h.hit_tokens, h.prompt_tokens), (1010, 2610));
    assert_eq!(h.hit_rate, 1010.0 / 2610.0);
    assert_eq!(h.cached_tokens_end, 1010 + 610);
    assert_eq!(h.evicted_tokens, 0);
    assert_eq!(h.decode_router, "least-loaded");
    // Per request (the `--requests-out` column): turn 1 found nothing held, turn 2 the 1010
    // tokens of segment 0; the prefill side's own hit of each is 0 (below).
    let rec = |i| r.lever_record(i).unwrap();
    assert_eq!(rec(0).handoff_hit_tokens, Some(0));
    assert_eq!(rec(1).handoff_hit_tokens, Some(1010));
    assert_eq!((rec(0).prefix_hit_tokens, rec(1).prefix_hit_tokens), (0, 0));
    // The prefill side's block counts only prefill instances: its cache never holds a reply
    // (`docs/levers.md#quirks` item 6), so turn 2 hit nothing there.
    let p = r.scheduler().unwrap().prefix_cache.as_ref().unwrap();
    assert_eq!((p.hit_tokens, p.prompt_tokens), (0, 2610));
    // ... and holds turn 2's chain segment (1010 tokens, computed by its prefill), not the
    // decode caches' segments.
    assert_eq!((p.cached_tokens_end, p.evicted_tokens), (1010, 0));
    // Summary JSON carries the saved bytes.
    let s = r.summary();
    assert_eq!(s.link.handoff_bytes_saved, Some(1010.0 * KV_TOK));
}

#[test]
fn without_prefix_handoff_every_hand_off_sends_its_whole_prompt() {
    let c = cfg(1, 1, &[]);
    let (r, x) = run(&c, &two_turns());
    assert_eq!(x.0[&0].kv_bytes, 1000.0 * KV_TOK);
    assert_eq!(x.0[&1].kv_bytes, 1610.0 * KV_TOK);
    assert_eq!(r.link().handoff_bytes_saved, None);
    assert!(r.scheduler().unwrap().prefix_handoff.is_none());
    let v = serde_json::to_value(r.summary()).unwrap();
    assert!(v["link"].get("handoff_bytes_saved").is_none());
    assert!(v["scheduler"].get("prefix_handoff").is_none());
    // No per-request hand-off figure either (no `handoff_hit_tokens` column).
    for i in 0..2 {
        assert_eq!(r.lever_record(i).unwrap().handoff_hit_tokens, None);
    }
}

#[test]
fn paged_decode_allocates_and_sends_only_the_missing_blocks() {
    // Paged, 16-token blocks: the hit is the same whole segment; bytes are per token.
    let c = cfg(1, 1, &["--prefix-handoff", "--kv-policy", "paged"]);
    let (r, x) = run(&c, &two_turns());
    assert_eq!(x.0[&1].kv_bytes, 600.0 * KV_TOK);
    assert_eq!(r.link().handoff_bytes_saved, Some(1010.0 * KV_TOK));
    // Segment 0 (1010 tokens) takes ceil(1010 / 16) = 64 blocks, turn 2's own segment
    // (610 tokens) ceil(610 / 16) = 39: the cache holds 1620 tokens at the end.
    let h = r.scheduler().unwrap().prefix_handoff.as_ref().unwrap();
    assert_eq!(h.cached_tokens_end, 1620);
}

#[test]
fn prefix_handoff_shares_a_segment_another_request_cached_meanwhile() {
    // Two requests with the same 300-token system prompt (segment 0), both pulled by the one
    // decode instance before either finishes, so neither hits. rid 0 finishes first and caches
    // segment 0 and its own segment (500 - 300 + 50 = 250 tokens); rid 1 then finds segment 0
    // cached under the same (no) parent, shares it and caches its own (600 - 300 + 50 = 350).
    let w = Workload {
        requests: vec![req(0.0, 500, 50), req(0.001, 600, 50)],
        closed: None,
        chains: Some(Arc::new(PrefixChains {
            chains: vec![chain(&[(0, 300)], Some(1)), chain(&[(0, 300)], Some(2))],
            names: vec!["sys0".into(), "s0t0".into(), "s1t0".into()],
        })),
        clipped_prompts: 0,
    };
    let c = cfg(1, 1, &["--prefix-handoff"]);
    let (r, x) = run(&c, &w);
    assert!(x.0[&1].start < r.request(0).finish_s.unwrap());
    assert_eq!(r.link().handoff_bytes_saved, Some(0.0));
    let h = r.scheduler().unwrap().prefix_handoff.as_ref().unwrap();
    assert_eq!((h.handoffs, h.handoffs_hit, h.hit_tokens), (2, 0, 0));
    assert_eq!(h.cached_tokens_end, 300 + 250 + 350);
}

#[test]
fn prefix_handoff_without_hand_offs_reports_a_zero_hit_rate() {
    // One-token replies finish on prefill: no hand-off, a hit rate of 0 (not 0 / 0).
    let w = Workload {
        requests: vec![req(0.0, 500, 1), req(1.0, 600, 1)],
        closed: None,
        chains: Some(Arc::new(PrefixChains {
            chains: vec![chain(&[], None), chain(&[], None)],
            names: vec![],
        })),
        clipped_prompts: 0,
    };
    let c = cfg(1, 1, &["--prefix-handoff"]);
    let (r, x) = run(&c, &w);
    assert!(x.0.is_empty());
    let h = r.scheduler().unwrap().prefix_handoff.as_ref().unwrap();
    assert_eq!((h.handoffs, h.prompt_tokens), (0, 0));
    assert_eq!(h.hit_rate, 0.0);
    assert_eq!(r.link().handoff_bytes_saved, Some(0.0));
}

/// Two sessions' first turns and a long unrelated request: session A's turn 1 (rid 0) finishes
/// on decode-0; rid 1 (a 4000-token reply) keeps decode-0 busy; session A's turn 2 (rid 2) is
/// handed off while decode-0 has load 1 and decode-1 load 0.
fn busy_workload() -> Workload {
    Workload {
        requests: vec![
            req(0.0, 1000, 10),
            req(50.0, 100, 4000),
            req(60.0, 1610, 10),
        ],
        closed: None,
        chains: Some(Arc::new(PrefixChains {
            chains: vec![
                chain(&[], Some(0)),
                chain(&[], None),
                chain(&[(0, 1010)], Some(1)),
            ],
            names: vec!["s0t0".into(), "s0t1".into()],
        })),
        clipped_prompts: 0,
    }
}

#[test]
fn the_prefix_router_follows_the_cached_history() {
    // Least-loaded: decode-1 (load 0), which holds nothing: the whole prompt is sent.
    let c = cfg(1, 2, &["--prefix-handoff"]);
    let (r, x) = run(&c, &busy_workload());
    assert_eq!(x.0[&2].kv_bytes, 1610.0 * KV_TOK);
    assert_eq!(r.link().handoff_bytes_saved, Some(0.0));
    // Prefix: decode-0 holds 1010 tokens of it, so it goes there despite its load.
    let c = cfg(1, 2, &["--prefix-handoff", "--decode-router", "prefix"]);
    let (r, x) = run(&c, &busy_workload());
    assert_eq!(x.0[&2].kv_bytes, 600.0 * KV_TOK);
    assert_eq!(r.link().handoff_bytes_saved, Some(1010.0 * KV_TOK));
    let h = r.scheduler().unwrap().prefix_handoff.as_ref().unwrap();
    assert_eq!(h.decode_router, "prefix");
    // rid 1 has no cached prefix anywhere: ties at 0 go least-loaded (decode-0 is idle after
    // rid 0 finished, decode-1 too: the first, decode-0), as the reference router does.
    assert_eq!(x.0[&1].kv_bytes, 100.0 * KV_TOK);
}

#[test]
fn the_prefix_router_breaks_ties_by_load() {
    // rid 0 goes to decode-0 (idle tie: the first), then rid 1 (idle again: the first) keeps
    // decode-0 busy with a 4000-token reply. rid 2 has no cached prefix anywhere: a tie at 0
    // tokens, broken by load: decode-1 (load 0, decode-0 has 1). rid 3, rid 2's next turn,
    // comes when both are idle and finds its history on decode-1.
    let w = Workload {
        requests: vec![
            req(0.0, 500, 10),
            req(20.0, 100, 4000),
            req(30.0, 700, 10),
            req(200.0, 1410, 10),
        ],
        closed: None,
        chains: Some(Arc::new(PrefixChains {
            chains: vec![
                chain(&[], Some(0)),
                chain(&[], None),
                chain(&[], Some(1)),
                chain(&[(1, 710)], Some(2)),
            ],
            names: vec!["a0".into(), "b0".into(), "b1".into()],
        })),
        clipped_prompts: 0,
    };
    let c = cfg(1, 2, &["--prefix-handoff", "--decode-router", "prefix"]);
    let (r, x) = run(&c, &w);
    // rid 3's history (710 tokens) is on decode-1: 1410 - 710 = 700 tokens sent.
    assert_eq!(x.0[&3].kv_bytes, 700.0 * KV_TOK);
    assert_eq!(r.link().handoff_bytes_saved, Some(710.0 * KV_TOK));
    // decode-1 (instance 2, after prefill-0 and decode-0) ran rid 2's and rid 3's replies
    // alone: 9 decode steps each (10 tokens, the first from prefill).
    assert_eq!(r.instances()[2].name, "decode-1");
    assert_eq!(r.instances()[2].stats.steps, 9 + 9);
}

#[test]
fn prefix_options_need_what_they_build_on() {
    let e = |f: &[&str]| build(f).expect_err("refused").to_string();
    let want = "--prefix-handoff: needs --prefix-caching and --mode disagg";
    assert!(e(&["--prefix-handoff"]).starts_with(want));
    assert!(e(&[
        "--prefix-handoff",
        "--prefix-caching",
        "--mode",
        "colocated"
    ])
    .starts_with(want));
    assert_eq!(
        e(&["--decode-router", "prefix", "--prefix-caching"]),
        "--decode-router: 'prefix' needs --prefix-handoff"
    );
    assert_eq!(
        e(&["--prefix-eviction", "lfu"]),
        "--prefix-eviction: 'lfu' needs --prefix-caching (it orders the prefix cache's evictions)"
    );
    assert!(build(&["--prefix-eviction", "lfu", "--prefix-caching"]).is_ok());
    assert!(e(&["--prefix-from-trace"]).starts_with("--prefix-from-trace: needs --prefix-caching"));
    assert!(e(&["--prefix-from-trace", "--prefix-caching"])
        .starts_with("--prefix-from-trace: applies to a replayed trace"));
    assert!(
        build(&["--prefix-handoff", "--prefix-caching"])
            .unwrap()
            .levers
            .unwrap()
            .prefix_handoff
    );
}

#[test]
fn prefix_from_trace_needs_hash_ids() {
    let dir = std::env::temp_dir().join(format!("disagg-pho-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let azure = dir.join("azure.csv");
    std::fs::write(
        &azure,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,100,10\n",
    )
    .unwrap();
    let moon = dir.join("moon.jsonl");
    std::fs::write(
        &moon,
        "{\"timestamp\": 0, \"input_length\": 1200, \"output_length\": 5, \"hash_ids\": [7, 8, 9]}\n\
         {\"timestamp\": 1000, \"input_length\": 700, \"output_length\": 5, \"hash_ids\": [7, 11]}\n",
    )
    .unwrap();
    let flags = |f: &std::path::Path| {
        vec![
            "--prefix-caching".to_string(),
            "--prefix-from-trace".into(),
            "--trace-file".into(),
            f.display().to_string(),
        ]
    };
    let e = Scenario::from_flags(flags(&azure))
        .unwrap()
        .build(&Catalogue::builtin())
        .expect_err("refused")
        .to_string();
    assert!(
        e.starts_with("--prefix-from-trace: ") && e.contains("no hash_ids"),
        "{e}"
    );
    // A Mooncake trace: block j of each row is a segment of min(512, P - 512 j) tokens keyed by
    // its hash: row 0 = [7: 512, 8: 512, 9: 1200 - 1024 = 176]; row 1 = [7: 512, 11: 188].
    let c = Scenario::from_flags(flags(&moon))
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap();
    let w = c.requests();
    let ch = w.chains.as_ref().expect("chains");
    assert_eq!(ch.names, ["7", "8", "9", "11"]);
    assert_eq!(ch.chains[0], chain(&[(0, 512), (1, 512), (2, 176)], None));
    assert_eq!(ch.chains[1], chain(&[(0, 512), (3, 188)], None));
    // Without the switch, no chains.
    let mut f = flags(&moon);
    f.remove(1);
    let c = Scenario::from_flags(f)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap();
    assert!(c.requests().chains.is_none());
    std::fs::remove_dir_all(&dir).ok();
}

/// The prefix sums of a chain's segment tokens (0 first).
fn prefix_sums(c: &PrefixChain) -> Vec<u64> {
    let mut v = vec![0];
    let mut t = 0;
    for &(_, n) in c.segments.iter() {
        t += n;
        v.push(t);
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Small random session workloads: every prefix-aware hand-off sends at most a plain one's
    /// bytes, exactly the KV of its prompt minus a whole-segment prefix of its chain (at most
    /// P - 1 tokens), and the link's sent + saved bytes are the whole prompts' KV.
    #[test]
    fn prefix_aware_hand_offs_send_only_missing_segments(
        seed in 0u64..1000,
        turns in 2u32..5,
        decode in 1u32..4,
        sys in 0u64..3,
        paged in any::<bool>(),
        router in any::<bool>(),
    ) {
        let (seed, turns, decode, sys) =
            (seed.to_string(), turns.to_string(), decode.to_string(), sys.to_string());
        let mut f = vec![
            "--model", "llama3-8b", "--device", "a100", "--devices-per-instance", "1",
            "--prefill", "2", "--decode", &decode, "--prefix-caching", "--prefix-handoff",
            "--requests", "40", "--rate", "4", "--seed", &seed, "--turns", &turns,
            "--think", "0.5", "--system-prompts", &sys, "--system-len", "300",
            "--prompt", "400", "--output", "40",
        ];
        if paged {
            f.extend(["--kv-policy", "paged"]);
        }
        if router {
            f.extend(["--decode-router", "prefix"]);
        }
        let c = build(&f).unwrap();
        let w = c.requests();
        let chains = w.chains.clone().expect("session chains");
        let (r, x) = run(&c, &w);
        let mut total = 0.0;
        let mut hit = 0u64;
        for (&rid, ev) in &x.0 {
            let p = w.requests[rid].prompt_len as u64;
            let sent_tokens = ev.kv_bytes / KV_TOK;
            prop_assert_eq!(sent_tokens.fract(), 0.0);
            let sent_tokens = sent_tokens as u64;
            prop_assert!(ev.kv_bytes <= p as f64 * KV_TOK);
            prop_assert!(sent_tokens >= 1);
            let h = p - sent_tokens;
            prop_assert!(prefix_sums(&chains.chains[rid]).contains(&h), "rid {} h {}", rid, h);
            total += p as f64 * KV_TOK;
            hit += h;
        }
        if decode == "1" {
            // One decode instance serves every turn: later turns find their history there.
            prop_assert!(hit > 0);
        }
        let l = r.link();
        prop_assert_eq!(l.bytes + l.handoff_bytes_saved.unwrap(), total);
        prop_assert_eq!(l.handoff_bytes_saved.unwrap(), hit as f64 * KV_TOK);
        let s = r.scheduler().unwrap().prefix_handoff.clone().unwrap();
        prop_assert_eq!(s.hit_tokens, hit);
        prop_assert_eq!(s.handoffs, x.0.len() as u64);
        // At the end every instance, decode ones included, holds only cached segments, within
        // its capacity, and nothing waits.
        for k in r.kv_at_end().unwrap() {
            prop_assert_eq!(k.used_units, k.cached_units);
            prop_assert!(k.used_units <= k.capacity_units);
            prop_assert_eq!((k.swapped, k.queued), (0, 0));
        }
    }
}

/// The real Mooncake conversation trace (`../shared/traces/`, skipped when absent): its first
/// 1000 requests on 2 prefill + 2 decode llama3-8b instances (4 H100 each), chains from its
/// block hashes. The prefix-aware hand-off saves bytes, and sent + saved is every hand-off's
/// whole-prompt KV, exactly (integer byte counts).
#[test]
fn prefix_handoff_saves_bytes_on_the_mooncake_trace() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let Some(path) = disagg_trace::shared::trace_or_skip(root, "mooncake_conversation_trace.jsonl")
    else {
        return;
    };
    let path = path.display().to_string();
    for router in ["least-loaded", "prefix"] {
        let f = [
            "--model",
            "llama3-8b",
            "--device",
            "h100",
            "--devices-per-instance",
            "4",
            "--prefill",
            "2",
            "--decode",
            "2",
            "--prefix-caching",
            "--prefix-from-trace",
            "--prefix-handoff",
            "--decode-router",
            router,
            "--trace-file",
            &path,
            "--max-requests",
            "1000",
        ];
        let c = build(&f).unwrap();
        let w = c.requests();
        assert_eq!(w.requests.len(), 1000);
        let (r, x) = run(&c, &w);
        let mut full = 0.0;
        for &rid in x.0.keys() {
            full += w.requests[rid].prompt_len as f64 * KV_TOK;
        }
        let l = r.link();
        let saved = l.handoff_bytes_saved.unwrap();
        assert!(saved > 0.0, "{router}: nothing saved");
        assert_eq!(l.bytes + saved, full, "{router}");
        let h = r.scheduler().unwrap().prefix_handoff.clone().unwrap();
        assert_eq!(saved, h.hit_tokens as f64 * KV_TOK, "{router}");
        println!(
            "{router}: {} hand-offs, {:.2} GB sent, {:.2} GB saved",
            x.0.len(),
            l.bytes / 1e9,
            saved / 1e9
        );
    }
}
