//! Tie-breaks pinned by small runs whose outcome depends on them: the decode router's "first
//! minimum" and the event queue's FIFO order among events at the same time.

use disagg_model::Catalogue;
use disagg_sim::{simulate, GenRequest, RunResult, Scenario, SimConfig};

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

/// The decode instance each request finished on: the one whose decode steps include its finish
/// time (exactly one, asserted).
fn decode_instances(r: &RunResult, decode: usize) -> Vec<usize> {
    r.requests()
        .map(|q| {
            let fin = q.finish_s.expect("finished");
            let on: Vec<usize> = (0..decode)
                .filter(|&i| r.decode_step_ends(i).contains(&fin))
                .collect();
            assert_eq!(on.len(), 1, "request {} finish {fin} on {on:?}", q.rid);
            on[0]
        })
        .collect()
}

#[test]
fn decode_router_picks_the_first_least_loaded_instance() {
    // Three decode instances. r0 lands on an idle system: all three have load 0, the first is
    // decode-0. r1 arrives while r0 is still decoding (load 1, 0, 0): decode-1. r2 arrives while
    // both decode: decode-2, the only idle one. r3 and r4 arrive long after everyone finished: all
    // idle again, decode-0 each time (r3 is done before r4 arrives).
    for fast in [&[][..], &["--fast"][..]] {
        let mut flags = vec!["--prefill", "1", "--decode", "3"];
        flags.extend_from_slice(fast);
        router_case(&cfg(&flags));
    }
}

fn router_case(c: &SimConfig) {
    let wl = [
        req(0, 0.0, 512, 400),
        req(1, 0.5, 512, 400),
        req(2, 1.0, 512, 400),
        req(3, 100.0, 512, 10),
        req(4, 200.0, 512, 10),
    ];
    let r = simulate(c, &wl).unwrap();
    // Premises of the hand derivation: r0 and r1 still decode when r1 and r2 land; r3 finishes
    // before r4 arrives, and everyone before r3 arrives.
    let rec: Vec<_> = r.requests().collect();
    assert!(rec[0].finish_s.unwrap() > rec[2].kv_ready_s.unwrap());
    assert!(rec[1].finish_s.unwrap() > rec[2].kv_ready_s.unwrap());
    assert!(rec[0].decode_start_s.unwrap() < rec[1].kv_ready_s.unwrap());
    assert!(rec[2].finish_s.unwrap() < 100.0 && rec[3].finish_s.unwrap() < 200.0);
    assert_eq!(decode_instances(&r, 3), [0, 1, 2, 0, 0]);
    // Each request alone on an idle instance is admitted the moment its KV lands.
    for q in &rec {
        assert_eq!(q.decode_start_s, q.kv_ready_s, "request {}", q.rid);
    }
    // decode-0 ran r0's 399 steps and r3's and r4's 9 each; decode-1 and decode-2 399 each.
    let steps: Vec<usize> = (0..3).map(|i| r.decode_step_ends(i).len()).collect();
    assert_eq!(steps, [399 + 9 + 9, 399, 399]);
}

#[test]
fn events_at_the_same_time_run_in_insertion_order() {
    // Two requests arrive at the same instant at one idle prefill instance; together they would
    // fit in one batch (1000 + 800 tokens, limit 8192). Arrivals are scheduled one at a time: r0's
    // arrival handler first schedules the instance's wake-up (now) and then r1's arrival (also
    // now). First in, first out, the wake-up runs first and forms a batch of r0 alone; r1 arrives
    // to a busy instance and starts when r0's step ends. Last in, first out, r1 would arrive
    // first and both would share one batch starting at 1.0.
    for fast in [&[][..], &["--fast"][..]] {
        let mut flags = vec!["--prefill", "1", "--decode", "1"];
        flags.extend_from_slice(fast);
        same_time_case(&cfg(&flags));
    }
}

fn same_time_case(c: &SimConfig) {
    assert_eq!(c.max_prefill_tokens, 8192);
    let wl = [req(0, 1.0, 1000, 4), req(1, 1.0, 800, 4)];
    let r = simulate(c, &wl).unwrap();
    let rec: Vec<_> = r.requests().collect();
    assert_eq!(rec[0].prefill_start_s, Some(1.0));
    let ft0 = rec[0].first_token_s.unwrap();
    assert!(ft0 > 1.0);
    assert_eq!(rec[1].prefill_start_s, Some(ft0));
    assert!(rec[1].first_token_s.unwrap() > ft0);
    // r0's KV leaves first, so it also reaches decode first.
    assert!(rec[0].kv_ready_s.unwrap() < rec[1].kv_ready_s.unwrap());
}
