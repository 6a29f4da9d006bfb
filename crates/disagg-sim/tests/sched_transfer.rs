//! Beyond the reference (issue 12): the KV hand-off options of issue 4 in the scheduled
//! disaggregated pools (README, "Beyond the reference: hand-off options in the scheduled pools").
//!
//! `--reserve-kv-on transfer`: a hand-off reserves its decode memory on the least-loaded decode
//! instance that can hold it now (FIFO, head-of-line blocking), instead of being routed to the
//! least-loaded instance first and waiting in that instance's inbox (levers-scheduling.md §16
//! item 7, "routing at hand-off").

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
/// 1,024 tokens: `U` = 1024 / 16 = 64 blocks, `WM` = trunc(0.01 * 64) = 0.
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
            p.kv_capacity_tokens = 1024;
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

/// Decode-0 holds one big request (load 1, memory nearly full), decode-1 one small request (load
/// 1, memory mostly free). A third request's hand-off:
///
/// * reference (`arrival`): loads tie at 1, the first instance wins: decode-0, whose free blocks
///   (64 - 49 = 15 at most, r0 growing) cannot hold its `units(320)` = 20 blocks, so it waits in
///   decode-0's inbox until r0 finishes and frees its blocks: `kv_start = r0.finish`;
/// * `transfer`: decode-0 cannot hold it, decode-1 can (at most units(64 + 200) = 17 used, 17 +
///   20 <= 64): it goes to decode-1 at once, the link being idle: `kv_start = first_token`.
#[test]
fn reservation_at_transfer_routes_to_the_instance_with_room() {
    // r0: units(784) = 49 blocks at landing, units(784 + 200) = 62 <= 64 at its longest.
    // r1: units(64) = 4 blocks, 17 at its longest. r2: units(320) = 20 blocks.
    let wl = [
        req(0, 0.0, 784, 200),
        req(1, 0.1, 64, 200),
        req(2, 0.2, 320, 20),
    ];
    let mut out = Vec::new();
    for reserve in ["arrival", "transfer"] {
        let c = one_p_two_d(reserve);
        assert!(c.levers.is_some());
        let mut steps = Steps::default();
        let r = simulate_observed(&c, &wl, &mut steps).unwrap();
        let q: Vec<_> = r.requests().collect();
        // Premises: r0 and r1 still decode when r2's prompt is done; every request finishes.
        let ft2 = q[2].first_token_s.unwrap();
        assert!(q[0].decode_start_s.unwrap() < ft2 && q[0].finish_s.unwrap() > ft2);
        assert!(q[1].decode_start_s.unwrap() < ft2 && q[1].finish_s.unwrap() > ft2);
        assert_eq!(decode_of(&steps, q[0].finish_s.unwrap()), 0);
        assert_eq!(decode_of(&steps, q[1].finish_s.unwrap()), 1);
        assert_eq!(r.rejected(), 0);
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
    // The option: r2 goes to decode-1 the moment its prompt is done.
    assert_eq!(q[2].kv_start_s, q[2].first_token_s);
    assert_eq!(q[2].kv_reserved_s, q[2].first_token_s);
    assert_eq!(decode_of(opt_steps, q[2].finish_s.unwrap()), 1);
    assert!(q[2].finish_s.unwrap() < q[0].finish_s.unwrap());
    // Nothing else changed for r0 and r1 up to r2's landing.
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
/// modes: every request finishes (a reservation that leaked would eventually stall the FIFO for
/// good), the stamps are ordered first token <= reserved <= KV start <= ready <= decode start, and
/// the same workload with the reference's reservation gives the same requests the same prefill
/// work (the option changes only the decode side).
#[test]
fn reservations_under_load_are_all_returned() {
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
        let r = simulate(&c, &wl).unwrap();
        let mut waited = 0;
        for q in r.requests() {
            if r.rejected() > 0 && q.finish_s.is_none() {
                continue;
            }
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
        let done = r.requests().filter(|q| q.finish_s.is_some()).count() as u64;
        assert_eq!(done + r.rejected(), wl.len() as u64);
        // The premise of the load: hand-offs did wait for decode memory.
        assert_eq!(r.rejected(), 0);
        assert!(waited > 0, "{preemption}");
    }
}
