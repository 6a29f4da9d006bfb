//! The worked traces of `docs/exactness.md#verification` (reference runs, exact values): paged KV with
//! preemption by recompute and by swap on three requests (`docs/exactness.md#verification`), and the prefix cache's hits,
//! emitted segments, LRU eviction and hit cap (`docs/exactness.md#verification`). Plus the `--swap-in next-step` option on the
//! `docs/exactness.md#verification` swap trace (no thrash).

use disagg_model::Catalogue;
use disagg_sim::levers::{PrefixChain, PrefixChains};
use disagg_sim::{
    simulate, simulate_workload, ClosedLoop, GenRequest, RunResult, Scenario, Workload,
};
use std::sync::Arc;

fn cfg(extra: &[&str]) -> disagg_sim::SimConfig {
    let mut flags = vec![
        "--mode",
        "colocated",
        "--model",
        "opt-13b",
        "--device",
        "a100-40g",
        "--devices-per-instance",
        "1",
        "--prefill",
        "1",
        "--decode",
        "0",
        "--max-num-batched-tokens",
        "8192",
    ];
    flags.extend_from_slice(extra);
    Scenario::from_flags(flags)
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

/// `docs/exactness.md#verification`'s workload: `[0.1, 3000, 2100]`, `[0.2, 2500, 2600]`, `[0.3, 2000, 3000]`.
fn three() -> Vec<GenRequest> {
    vec![
        req(0, 0.1, 3000, 2100),
        req(1, 0.2, 2500, 2600),
        req(2, 0.3, 2000, 3000),
    ]
}

fn paged_1024(preemption: &str, swap_in: &str) -> RunResult {
    let c = cfg(&[
        "--kv-policy",
        "paged",
        "--kv-block-size",
        "1024",
        "--preemption",
        preemption,
        "--host-link",
        "pcie4",
        "--swap-in",
        swap_in,
    ]);
    simulate(&c, &three()).unwrap()
}

fn max_itl(run: &RunResult, rid: usize) -> f64 {
    run.itls(rid).into_iter().fold(f64::NAN, f64::max)
}

#[test]
fn paged_preemption_by_recompute_13_1() {
    let run = paged_1024("recompute", "own-blocks");
    let r: Vec<_> = run.requests().collect();
    assert_eq!(r[0].prefill_start_s, Some(0.1));
    assert_eq!(r[0].first_token_s, Some(0.5709442181818182));
    assert_eq!(r[0].decode_start_s, Some(0.5709442181818182));
    assert_eq!(r[0].finish_s, Some(57.94813433201207));
    assert_eq!(max_itl(&run, 0), 0.7244948814186883);
    assert_eq!(r[1].prefill_start_s, Some(0.5709442181818182));
    assert_eq!(r[1].first_token_s, Some(1.2693529696969696));
    assert_eq!(r[1].finish_s, Some(71.69439756463606));
    assert_eq!(max_itl(&run, 1), 0.5091252256786944);
    assert_eq!(r[2].prefill_start_s, Some(0.5709442181818182));
    assert_eq!(r[2].first_token_s, Some(1.2693529696969696));
    assert_eq!(r[2].finish_s, Some(105.87086031859107));
    // The re-prefill's token carries the whole gap since the preemption.
    assert_eq!(max_itl(&run, 2), 28.063293639312132);
    let b = run.scheduler().unwrap();
    assert_eq!(b.preemptions, Some(1));
    assert_eq!(b.recompute_tokens, Some(3073));
    assert_eq!(b.computed_prefill_tokens, 3000 + 2500 + 2000 + 3073);
    let s = run.summary();
    let sb = s.scheduler.as_ref().unwrap();
    assert_eq!(sb.mean_running, 1.9541406458493893);
    assert_eq!(sb.kv_token_frac, 0.8760646818701325);
    assert_eq!(run.instances()[0].stats.steps, 4028);
    assert_eq!(run.horizon(), 105.87086031859107);
}

#[test]
fn paged_preemption_by_swap_thrashes_as_the_reference_13_1() {
    let run = paged_1024("swap", "own-blocks");
    let r: Vec<_> = run.requests().collect();
    assert_eq!(r[0].finish_s, Some(61.80238613201207));
    assert_eq!(r[1].finish_s, Some(75.14405114873232));
    assert_eq!(r[2].finish_s, Some(109.34401071194777));
    assert_eq!(max_itl(&run, 2), 31.539473895562697);
    let b = run.scheduler().unwrap();
    assert_eq!(b.preemptions, Some(25));
    assert_eq!(b.recompute_tokens, Some(0));
    let sw = b.swap.as_ref().unwrap();
    // 25 swap-outs and 25 swap-ins of 3 blocks: (3 * 1024) * 819200 B = 2.5165824 GB each way.
    assert_eq!(sw.out_gb, 62.91456);
    assert_eq!(sw.in_gb, 62.91456);
    assert_eq!(sw.seconds, 3.93291);
    assert_eq!(sw.j, 6.039797760000006);
}

#[test]
fn swap_in_next_step_does_not_thrash() {
    // The same trace with `--swap-in next-step`: r2 is swapped out once at 30.367... and comes
    // back only when its 4th block fits too (after r0 finishes): one transfer each way.
    let thrash = paged_1024("swap", "own-blocks");
    let run = paged_1024("swap", "next-step");
    let b = run.scheduler().unwrap();
    assert_eq!(b.preemptions, Some(1));
    let sw = b.swap.as_ref().unwrap();
    let one_way = (3.0 * 1024.0 * 819200.0) / 1e9;
    assert_eq!(sw.out_gb, one_way);
    assert_eq!(sw.in_gb, one_way);
    // One swap-out and one swap-in of 3 blocks over PCIe Gen4 (32 GB/s, 5 us per block):
    // 2 * (3 * 5e-6 + 2516582400 / 3.2e10) = 2 * 0.0786582 s.
    let t = 3.0 * 5e-6 + 2516582400.0 / 3.2e10;
    assert_eq!(sw.seconds, t + t);
    // Every request still gets all its tokens, and r2 finishes no later than with the thrash.
    let r2 = run.request(2);
    assert_eq!(run.itls(2).len(), 2999);
    assert!(r2.finish_s.unwrap() <= thrash.request(2).finish_s.unwrap());
    // The runs are identical until the first swap-out.
    assert_eq!(
        run.request(0).first_token_s,
        thrash.request(0).first_token_s
    );
}

#[test]
fn own_blocks_is_the_default_swap_in() {
    let c = cfg(&["--kv-policy", "paged"]);
    assert_eq!(
        c.levers.as_ref().unwrap().swap_in,
        disagg_sim::levers::SwapIn::OwnBlocks
    );
}

#[test]
fn prefix_cache_trace_13_2() {
    // rid: arrival, P, O, chain, emit, closed loop (`docs/exactness.md#verification`).
    let c = cfg(&["--prefix-caching"]);
    let rows = vec![
        req(0, 0.0, 4500, 200),
        req(1, 0.0, 5000, 100),
        req(2, 0.5, 5400, 300),
        req(3, 30.0, 6000, 50),
        req(4, 31.0, 4001, 20),
        req(5, 40.0, 4000, 20),
    ];
    // Keys: sys0 0, s0t0 1, s0t1 2, sys1 3, s1t0 4, sys2 5, s2t0 6.
    let names = ["sys0", "s0t0", "s0t1", "sys1", "s1t0", "sys2", "s2t0"];
    let chain = |segments: Vec<(u32, u64)>, emit: Option<u32>| PrefixChain {
        segments: segments.into(),
        emit,
    };
    let chains = PrefixChains {
        chains: vec![
            chain(vec![(0, 4000)], Some(1)),
            chain(vec![(0, 4000), (1, 700)], Some(2)),
            chain(vec![(3, 5000)], Some(4)),
            chain(vec![(5, 3000)], Some(6)),
            chain(vec![(0, 4000)], None),
            chain(vec![(0, 4000)], None),
        ],
        names: names.iter().map(|s| s.to_string()).collect(),
    };
    let w = Workload {
        requests: rows,
        closed: Some(ClosedLoop {
            after: vec![None, Some(0), None, None, None, None],
            think_s: vec![0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        }),
        chains: Some(Arc::new(chains)),
        clipped_prompts: 0,
    };
    let run = simulate_workload(&c, &w, &mut ()).unwrap();
    let r = |i: usize| run.request(i);
    assert_eq!(r(0).first_token_s, Some(0.7222782153846153));
    assert_eq!(r(2).first_token_s, Some(1.6005126332867132));
    assert_eq!(r(0).finish_s, Some(7.131845377209543));
    assert_eq!(r(1).arrival_s, 8.131845377209544);
    assert_eq!(r(1).prefill_start_s, Some(8.150482240489286));
    assert_eq!(r(1).first_token_s, Some(8.202824424545229));
    assert_eq!(r(1).finish_s, Some(10.845633778114362));
    assert_eq!(r(2).finish_s, Some(9.86607893824298));
    assert_eq!(r(3).first_token_s, Some(30.98435347132867));
    assert_eq!(r(3).finish_s, Some(32.288792979495874));
    assert_eq!(r(4).prefill_start_s, Some(31.009449169335102));
    assert_eq!(r(4).first_token_s, Some(31.03322716701999));
    assert_eq!(r(4).finish_s, Some(31.56036843570166));
    assert_eq!(r(5).prefill_start_s, Some(40.0));
    assert_eq!(r(5).first_token_s, Some(40.637306743123546));
    assert_eq!(r(5).finish_s, Some(41.08921381810747));
    // Hits: r1 4700 (sys0 + s0t0), r4 4000 (sys0); r5's sys0 is capped away (4000 > 3999).
    let hits: Vec<u64> = (0..6)
        .map(|i| run.lever_record(i).unwrap().prefix_hit_tokens)
        .collect();
    assert_eq!(hits, [0, 4700, 0, 0, 4000, 0]);
    let pc = run.scheduler().unwrap().prefix_cache.clone().unwrap();
    assert_eq!(pc.hit_tokens, 8700);
    assert_eq!(pc.prompt_tokens, 28901);
    assert_eq!(pc.hit_rate, 0.301027646102211);
    assert_eq!(pc.evicted_tokens, 10800);
    // End state: {sys2, s2t0, sys0} = 3000 + 3050 + 4000 tokens.
    assert_eq!(pc.cached_tokens_end, 10050);
    let end = run.kv_at_end().unwrap()[0];
    assert_eq!((end.used_units, end.cached_units), (10050, 10050));
}
