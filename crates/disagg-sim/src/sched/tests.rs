//! Unit tests of the scheduled instances' bookkeeping on hand-set states: `load()` of each kind
//! of instance (`docs/serving-model.md#routing`), the router's first-minimum rule, and the arrival check.

use super::*;
use crate::scenario::Scenario;

fn cfg(flags: &[&str]) -> SimConfig {
    Scenario::from_flags(flags.iter().copied())
        .unwrap()
        .build(&disagg_model::Catalogue::builtin())
        .unwrap()
}

fn reqs(n: usize, prompt: u32) -> Vec<GenRequest> {
    (0..n)
        .map(|rid| GenRequest {
            rid,
            arrival_s: rid as f64,
            prompt_len: prompt,
            output_len: 10,
        })
        .collect()
}

/// A decoding row (`dp >= tgt`) or a prefilling one.
fn row(sim: &mut SchedSim<'_, ()>, rid: u32, decoding: bool) {
    let s = &mut sim.rs[rid as usize];
    s.tgt = 100;
    s.dp = if decoding { 100 } else { 40 };
}

#[test]
fn decode_load_counts_every_waiting_place_and_only_decoding_rows() {
    let c = cfg(&["--kv-policy", "paged", "--prefill", "1", "--decode", "2"]);
    let w = reqs(40, 100);
    let mut obs = ();
    let mut sim = SchedSim::new(&c, c.levers.as_ref().unwrap(), &w, None, &mut obs);
    let d = sim.n_prefill;
    assert_eq!((d, sim.insts.len()), (1, 3));
    assert_eq!(sim.load(d), 0);
    // inbox 1, in flight 2, landed 3, queue 4, swapped 5, running 6 of which 4 decoding.
    sim.insts[d].inbox.push_back(0);
    sim.insts[d].inflight = 2;
    sim.insts[d].landed.extend([1, 2, 3]);
    sim.insts[d].queue.extend([4, 5, 6, 7]);
    sim.insts[d].swapped.extend([8, 9, 10, 11, 12]);
    for (k, rid) in (13..19).enumerate() {
        row(&mut sim, rid, k < 4);
        sim.insts[d].running.push(rid);
    }
    assert_eq!(sim.load(d), 1 + 2 + 3 + 4 + 5 + 4);
    // Each term alone.
    sim.insts[d].inbox.clear();
    assert_eq!(sim.load(d), 2 + 3 + 4 + 5 + 4);
    sim.insts[d].inflight = 0;
    assert_eq!(sim.load(d), 3 + 4 + 5 + 4);
    sim.insts[d].landed.clear();
    assert_eq!(sim.load(d), 4 + 5 + 4);
    sim.insts[d].queue.clear();
    assert_eq!(sim.load(d), 5 + 4);
    sim.insts[d].swapped.clear();
    assert_eq!(sim.load(d), 4);
    // The router: the first decode instance with the least load.
    assert_eq!(sim.least_loaded(1..3), 2);
    sim.insts[2].inflight = 3;
    assert_eq!(sim.least_loaded(1..3), 2);
    sim.insts[2].inflight = 4;
    assert_eq!(sim.least_loaded(1..3), 1, "ties go to the first");
    sim.insts[2].inflight = 5;
    assert_eq!(sim.least_loaded(1..3), 1);
}

#[test]
fn colocated_and_prefill_loads() {
    let c = cfg(&[
        "--mode",
        "colocated",
        "--batch-policy",
        "chunked",
        "--prefill",
        "1",
        "--decode",
        "1",
    ]);
    let w = reqs(20, 100);
    let mut obs = ();
    let mut sim = SchedSim::new(&c, c.levers.as_ref().unwrap(), &w, None, &mut obs);
    assert_eq!(sim.insts.len(), 2);
    // queue 2 + swapped 3 + decoding rows 1 (a prompt being prefilled is not counted).
    sim.insts[0].queue.extend([0, 1]);
    sim.insts[0].swapped.extend([2, 3, 4]);
    row(&mut sim, 5, true);
    row(&mut sim, 6, false);
    sim.insts[0].running.extend([5, 6]);
    assert_eq!(sim.load(0), 2 + 3 + 1);
    sim.insts[0].swapped.clear();
    assert_eq!(sim.load(0), 2 + 1);
    sim.insts[0].queue.clear();
    assert_eq!(sim.load(0), 1);
    assert_eq!(sim.least_loaded(0..2), 1);

    // A prefill instance's load is its queued prompt tokens.
    let c = cfg(&[
        "--batch-policy",
        "chunked",
        "--prefill",
        "2",
        "--decode",
        "1",
    ]);
    let w = vec![
        GenRequest {
            rid: 0,
            arrival_s: 0.0,
            prompt_len: 300,
            output_len: 5,
        },
        GenRequest {
            rid: 1,
            arrival_s: 0.0,
            prompt_len: 200,
            output_len: 5,
        },
    ];
    let mut obs = ();
    let mut sim = SchedSim::new(&c, c.levers.as_ref().unwrap(), &w, None, &mut obs);
    sim.submit(0, 0);
    assert_eq!(sim.load(0), 300);
    sim.submit(1, 1);
    assert_eq!(sim.load(1), 200);
    assert_eq!(sim.least_loaded(0..2), 1);
    // Admission takes the prompt off the queue's tokens.
    assert!(sim.try_admit(0));
    assert_eq!(sim.load(0), 0);
}

#[test]
fn arrival_rejects_by_the_decode_and_the_prefill_capacity() {
    // OPT-13B on one A100-40GB: 11,969 KV tokens; paged blocks of 16: 748 units, watermark 7.
    let c = cfg(&[
        "--model",
        "opt-13b",
        "--device",
        "a100-40g",
        "--devices-per-instance",
        "1",
        "--kv-policy",
        "paged",
    ]);
    let fits = |p: u32, o: u32| {
        let w = vec![GenRequest {
            rid: 0,
            arrival_s: 0.0,
            prompt_len: p,
            output_len: o,
        }];
        let run = crate::simulate(&c, &w).unwrap();
        run.rejected() == 0
    };
    // Decode: units(P + O) + 7 <= 748, i.e. P + O <= 741 * 16 = 11,856 tokens.
    assert!(fits(11_000, 856));
    assert!(!fits(11_000, 857));
    // Prefill: units(P) <= 748 alone would allow 11,968; the decode check binds first.
    assert!(!fits(11_900, 1));
}
