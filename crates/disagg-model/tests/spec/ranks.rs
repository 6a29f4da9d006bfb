//! The rank-aware hand-off (`disagg_model::ranks`, issue 13 §3) against closed forms and hand
//! arithmetic. Llama-3-70B: L = 80, Hkv = 8, hd = 8192 / 64 = 128, BF16, so one token's KV is
//! 2 * 80 * 8 * 128 * 2 = 327,680 B and a 2,048-token prompt S = 2048 * 327,680 = 671,088,640 B;
//! one head's share (S / 8) is 83,886,080 B. 100 GbE: 12.5 GB/s, 20 µs.

use disagg_model::ranks::{shard_bytes, Side, MAX_DEVICES, RULE};
use disagg_model::*;

const P: u64 = 2048;
const S: f64 = 671_088_640.0; // 2048 * 327,680
const HEAD: f64 = 83_886_080.0; // S / 8 = 2048 * 80 * 2 * 128 * 2

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn m70() -> ModelSpec {
    cat().model("llama3-70b").unwrap().clone()
}

fn eth100() -> Link {
    cat().link("eth-100g").unwrap().clone()
}

fn nvlink4() -> Link {
    cat().link("nvlink4").unwrap().clone()
}

fn h100() -> Device {
    cat().device("h100").unwrap().clone()
}

fn tp(tp: u32) -> RankLayout {
    RankLayout::new(tp, 1)
}

fn plan(opts: &RankOptions) -> RankPlan {
    rank_plan(&m70(), &eth100(), Some(&nvlink4()), &h100(), P, opts).unwrap()
}

fn plan_of(p: RankLayout, d: RankLayout) -> RankPlan {
    plan(&RankOptions::new(p, d))
}

fn err(opts: &RankOptions) -> String {
    rank_plan(&m70(), &eth100(), Some(&nvlink4()), &h100(), P, opts)
        .unwrap_err()
        .to_string()
}

/// (from, to, bytes) of every flow.
fn edges(p: &RankPlan) -> Vec<(u32, u32, f64)> {
    p.flows.iter().map(|f| (f.from, f.to, f.bytes)).collect()
}

fn nic(p: &RankPlan, side: Side, i: u32) -> &disagg_model::ranks::NicLoad {
    p.nics
        .iter()
        .find(|n| n.side == side && n.nic == i)
        .expect("nic")
}

#[test]
fn the_one_transfer_layout_is_the_single_transfer_bit_for_bit() {
    let p = plan_of(tp(1), tp(1));
    assert_eq!(p.flows.len(), 1);
    assert_eq!(p.flows[0].bytes, S);
    assert_eq!(p.flows[0].heads, [0, 8]);
    assert_eq!(p.flows[0].layers, [0, 80]);
    // latency + S / bandwidth = 20e-6 + 671,088,640 / 12.5e9 = 20e-6 + 0.0536870912
    assert_eq!(p.finish_s, 20e-6 + 0.0536870912);
    assert_eq!(p.single_transfer_s, 20e-6 + 0.0536870912);
    assert_eq!(p.total_s, p.finish_s);
    assert_eq!(p.exposed_s, p.finish_s);
    assert_eq!(p.speedup, 1.0);
    assert_eq!(p.single_transfer_bytes, S);
    assert_eq!(p.link_bytes, S);
    assert_eq!(p.replicate_bytes, 0.0);
    assert_eq!(p.replicate_s, 0.0);
    assert_eq!(p.relayout_s, 0.0);
    // Every catalogue model whose cache is its attention KV, every model described by layer kinds
    // (MLA, windows, linear state) and every link, odd prompt sizes: the same as the simulator's
    // transfer. The others (FFT-mixing state) are refused.
    let c = cat();
    let mut refused = 0;
    let mut kinds = 0;
    for m in &c.models {
        let attention = (2 * m.n_layers * m.n_kv_heads * m.hd()) as f64 * m.kv_bytes;
        kinds += m.arch.is_some() as usize;
        if m.arch.is_none() && m.handoff_bytes(1) != attention {
            let e = rank_plan(
                m,
                &eth100(),
                None,
                &h100(),
                1,
                &RankOptions::new(tp(1), tp(1)),
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.starts_with(&format!("model: {}'s hand-off is not its", m.name)),
                "{e}"
            );
            assert!(
                e.ends_with("the rank-aware hand-off shards attention KV only"),
                "{e}"
            );
            refused += 1;
            continue;
        }
        for l in &c.links {
            for tokens in [1, 7, 2047, 131_072] {
                let p = rank_plan(m, l, None, &h100(), tokens, &RankOptions::new(tp(1), tp(1)))
                    .unwrap();
                let x = transfer(m, l, None, tokens);
                assert_eq!(
                    p.finish_s.to_bits(),
                    x.time_s.to_bits(),
                    "{} {}",
                    m.key,
                    l.key
                );
                assert_eq!(p.link_bytes.to_bits(), x.kv_bytes.to_bits());
            }
        }
    }
    assert!(refused < c.models.len());
    // The fifteen served models are described by layer kinds.
    assert_eq!(kinds, 15);
}

#[test]
fn a_cache_of_other_state_is_refused() {
    // An FFT-mixing model caches convolution state besides (or instead of) attention KV heads.
    let c = cat();
    let h = c.model("llama3-8b-hyena").unwrap();
    assert_eq!(
        rank_plan(
            h,
            &eth100(),
            None,
            &h100(),
            10,
            &RankOptions::new(tp(1), tp(1))
        )
        .unwrap_err()
        .to_string(),
        format!(
            "model: {}'s hand-off is not its 32 layers of 8 KV heads (it holds other state); the \
             rank-aware hand-off shards attention KV only",
            h.name
        )
    );
}

#[test]
fn a_thirds_byte_cache_keeps_the_single_transfer_operation_order() {
    // kv_bytes = 1/3: (P * per-token) differs from (P * elements) * kv_bytes in the last bit for
    // some P; the one flow must be handoff_bytes exactly.
    let mut m = m70();
    m.kv_bytes = 1.0 / 3.0;
    for tokens in 1..200 {
        let p = rank_plan(
            &m,
            &eth100(),
            None,
            &h100(),
            tokens,
            &RankOptions::new(tp(1), tp(1)),
        )
        .unwrap();
        assert_eq!(
            p.link_bytes.to_bits(),
            (tokens as f64 * (327_680.0 / 2.0 * (1.0 / 3.0))).to_bits()
        );
        assert_eq!(p.finish_s, eth100().transfer_time(m.handoff_bytes(tokens)));
    }
}

#[test]
fn tp8_to_tp8_equal_shards_finish_together() {
    let p = plan_of(tp(8), tp(8));
    // Closed form latency + S / (ranks x bandwidth): S / (8 * 12.5e9) = 671,088,640 / 1e11
    // = 0.0067108864 s.
    assert_eq!(p.finish_s, 20e-6 + 0.0067108864);
    assert_eq!(p.total_s, 20e-6 + 0.0067108864);
    let want: Vec<(u32, u32, f64)> = (0..8).map(|r| (r, r, HEAD)).collect();
    assert_eq!(edges(&p), want);
    for (i, f) in p.flows.iter().enumerate() {
        assert_eq!(f.heads, [i as u64, i as u64 + 1]);
        assert_eq!(f.layers, [0, 80]);
    }
    assert_eq!(p.nics.len(), 16);
    for n in &p.nics {
        assert_eq!(n.bytes, HEAD);
        // 83,886,080 / 12.5e9
        assert_eq!(n.busy_s, 0.0067108864);
        assert_eq!(n.ranks, vec![n.nic]);
    }
    assert!(p.prefill_ranks.iter().all(|r| r.fan_out == 1));
    assert!(p.decode_ranks.iter().all(|r| r.fan_in == 1));
    assert_eq!(p.speedup, (20e-6 + 0.0536870912) / (20e-6 + 0.0067108864));
    assert_eq!(p.layouts.prefill.nics, 8);
    assert_eq!(p.layouts.decode.devices, 8);
    assert_eq!(p.layouts.prefill.label, "TP8");
    assert_eq!(p.rule, RULE);
}

#[test]
fn tp8_to_tp4_fans_in_two() {
    let p = plan_of(tp(8), tp(4));
    let want: Vec<(u32, u32, f64)> = (0..8).map(|r| (r, r / 2, HEAD)).collect();
    assert_eq!(edges(&p), want);
    for d in &p.decode_ranks {
        assert_eq!(d.fan_in, 2);
        assert_eq!(d.link_bytes, 2.0 * HEAD);
        assert_eq!(d.held_bytes, 2.0 * HEAD);
    }
    assert!(p.prefill_ranks.iter().all(|r| r.fan_out == 1));
    // Decode NICs carry 2 heads: 167,772,160 / 12.5e9 = 0.0134217728 s.
    assert_eq!(nic(&p, Side::Decode, 3).bytes, 167_772_160.0);
    assert_eq!(nic(&p, Side::Decode, 3).busy_s, 0.0134217728);
    assert_eq!(nic(&p, Side::Prefill, 7).busy_s, 0.0067108864);
    assert_eq!(p.finish_s, 20e-6 + 0.0134217728);
    assert_eq!(p.flows[5].heads, [5, 6]);
}

#[test]
fn tp4_to_tp8_fans_out_two() {
    let p = plan_of(tp(4), tp(8));
    let want: Vec<(u32, u32, f64)> = (0..8).map(|d| (d / 2, d, HEAD)).collect();
    assert_eq!(edges(&p), want);
    for r in &p.prefill_ranks {
        assert_eq!(r.fan_out, 2);
        assert_eq!(r.bytes, 2.0 * HEAD);
    }
    assert!(p.decode_ranks.iter().all(|d| d.fan_in == 1));
    assert_eq!(nic(&p, Side::Prefill, 0).bytes, 167_772_160.0);
    assert_eq!(p.finish_s, 20e-6 + 0.0134217728);
    assert_eq!(p.layouts.prefill.nics, 4);
    assert_eq!(p.layouts.decode.nics, 8);
}

#[test]
fn gqa_8_heads_on_tp16_sends_each_head_once() {
    let p = plan_of(tp(16), tp(16));
    // Only the even (lowest-index) replicas send, each its head, to the even decode rank.
    let want: Vec<(u32, u32, f64)> = (0..8).map(|h| (2 * h, 2 * h, HEAD)).collect();
    assert_eq!(edges(&p), want);
    assert_eq!(p.link_bytes, S);
    // The odd decode ranks get a copy over NVLink 4 (450 GB/s, 5 µs), one per primary.
    assert_eq!(p.replicate_bytes, S);
    let copy = 5e-6 + 83_886_080.0 / 450e9;
    assert_eq!(p.replicate_s, copy);
    assert_eq!(p.finish_s, 20e-6 + 0.0067108864);
    assert_eq!(p.total_s, (20e-6 + 0.0067108864) + copy);
    for d in &p.decode_ranks {
        if d.rank % 2 == 1 {
            assert_eq!(d.copy_from, Some(d.rank - 1));
            assert_eq!(d.fan_in, 0);
            assert_eq!(d.link_bytes, 0.0);
            assert_eq!(d.arrival_s, (20e-6 + 0.0067108864) + copy);
        } else {
            assert_eq!(d.copy_from, None);
            assert_eq!(d.fan_in, 1);
            assert_eq!(d.arrival_s, 20e-6 + 0.0067108864);
        }
        assert_eq!(d.held_bytes, HEAD);
    }
    for r in &p.prefill_ranks {
        assert_eq!(r.fan_out, if r.rank % 2 == 0 { 1 } else { 0 });
    }
    // Odd prefill NICs stay idle.
    assert_eq!(nic(&p, Side::Prefill, 1).bytes, 0.0);
    assert_eq!(nic(&p, Side::Decode, 15).bytes, 0.0);

    // TP8 -> TP16: head r to decode rank 2r; TP16 -> TP8: rank 2h sends head h to rank h.
    let up = plan_of(tp(8), tp(16));
    let want: Vec<(u32, u32, f64)> = (0..8).map(|h| (h, 2 * h, HEAD)).collect();
    assert_eq!(edges(&up), want);
    assert_eq!(up.replicate_bytes, S);
    let down = plan_of(tp(16), tp(8));
    let want: Vec<(u32, u32, f64)> = (0..8).map(|h| (2 * h, h, HEAD)).collect();
    assert_eq!(edges(&down), want);
    assert_eq!(down.replicate_bytes, 0.0);
    assert_eq!(down.total_s, down.finish_s);
    // TP32 on the decode side: 4 replicas, the primary copies to 3 of them in one transfer.
    let p32 = plan_of(tp(8), tp(32));
    assert_eq!(p32.replicate_bytes, 3.0 * S);
    assert_eq!(p32.replicate_s, 5e-6 + (3.0 * HEAD) / 450e9);
    assert_eq!(p32.decode_ranks[7].copy_from, Some(4));
    assert_eq!(p32.decode_ranks[8].copy_from, None);
}

#[test]
fn pipeline_stages_split_layers_and_conserve_bytes() {
    // TP4 PP2 -> TP8: rank s*4 + r holds layers 40s..40s+40 and heads 2r, 2r+1; every decode
    // rank receives its head's two halves (2048 * 40 * 2 * 128 * 2 = 41,943,040 B each).
    let p = plan_of(RankLayout::new(4, 2), tp(8));
    assert_eq!(p.flows.len(), 16);
    for f in &p.flows {
        let (s, r) = (f.from / 4, f.from % 4);
        assert_eq!(f.layers, [40 * s as u64, 40 * s as u64 + 40]);
        assert_eq!(f.to / 2, r);
        assert_eq!(f.bytes, 41_943_040.0);
    }
    assert!(p.decode_ranks.iter().all(|d| d.fan_in == 2));
    assert!(p.prefill_ranks.iter().all(|r| r.fan_out == 2));
    assert_eq!(p.link_bytes, S);
    assert_eq!(p.finish_s, 20e-6 + 0.0067108864);
    assert_eq!(p.layouts.prefill.label, "TP4 PP2");
    assert_eq!(p.stages.len(), 2);
    assert_eq!(p.stages[1].layers, [40, 80]);
    // Without a prefill time every stage starts at 0.
    assert!(p.stages.iter().all(|s| s.start_s == 0.0 && s.lead_s == 0.0));
    assert_eq!(p.microbatches, 2);
}

/// A round link and Llama-3-8B (L = 32, 131,072 B per token): 1,000 tokens = 131,072,000 B, a
/// stage's half 65,536,000 B = 0.065536 s at 1 GB/s.
fn round() -> Link {
    Link {
        key: "round".into(),
        name: "Round".into(),
        bandwidth_bps: 1e9,
        latency_s: 1e-3,
        channels: 1,
        pj_per_bit: 10.0,
    }
}

#[test]
fn stage_starts_follow_the_pipeline_and_shorten_the_exposed_time() {
    let m8 = cat().model("llama3-8b").unwrap().clone();
    let mut o = RankOptions::new(RankLayout::new(1, 2), tp(1));
    o.microbatches = Some(3);
    o.prefill_s = Some(0.2);
    let p = rank_plan(&m8, &round(), None, &h100(), 1000, &o).unwrap();
    // mb = 3, pp = 2: 4 slots; stage 0 ends at 3/4 of 0.2 s, stage 1 at 4/4.
    assert_eq!(p.stages[0].start_s, 0.2 * 0.75);
    assert_eq!(p.stages[0].lead_s, 0.05);
    assert_eq!(p.stages[1].start_s, 0.2);
    assert_eq!(p.stages[1].lead_s, 0.0);
    assert_eq!(p.stages[0].layers, [0, 16]);
    // One decode NIC takes both halves: finish = 1 ms + 0.131072 s from a common start.
    assert_eq!(p.finish_s, 1e-3 + 0.131072);
    // After the prefill: stage 0's half left 0.05 s early, so the decode port's bound is
    // (1 ms + 0.131072) - 0.05, more than stage 1's half alone (1 ms + 0.065536).
    assert_eq!(p.exposed_s, (1e-3 + 0.131072) - 0.05);
    assert_eq!(p.total_s, 1e-3 + 0.131072);

    // Decode PP2 too: each decode NIC takes one stage's half; the late stage bounds it.
    let mut o2 = o;
    o2.decode = RankLayout::new(1, 2);
    let p2 = rank_plan(&m8, &round(), None, &h100(), 1000, &o2).unwrap();
    assert_eq!(p2.finish_s, 1e-3 + 0.065536);
    assert_eq!(p2.exposed_s, 1e-3 + 0.065536);
    assert_eq!(edges(&p2), vec![(0, 0, 65_536_000.0), (1, 1, 65_536_000.0)]);

    // TP2 PP2 -> TP1 PP2: prefill rank s*2 + r (stage s) holds 16 layers of 4 heads,
    // 32,768,000 B; decode stage d receives stage d's two ranks, 65,536,000 B on its NIC. Stage
    // 1's decode NIC, starting at the prefill's end, bounds it: 1 ms + 0.065536 s (stage 0's
    // is (1 ms + 0.065536) - 0.05).
    let mut o6 = o;
    o6.prefill = RankLayout::new(2, 2);
    o6.decode = RankLayout::new(1, 2);
    let p6 = rank_plan(&m8, &round(), None, &h100(), 1000, &o6).unwrap();
    assert_eq!(
        edges(&p6),
        vec![
            (0, 0, 32_768_000.0),
            (1, 0, 32_768_000.0),
            (2, 1, 32_768_000.0),
            (3, 1, 32_768_000.0)
        ]
    );
    assert_eq!(p6.stages[1].lead_s, 0.0);
    assert_eq!(p6.finish_s, 1e-3 + 0.065536);
    assert_eq!(p6.exposed_s, (1e-3 + 0.065536) - 0.0);
    // ... and with one decode NIC, the early stage's half left 0.05 s before the end.
    o6.decode = RankLayout::new(1, 1);
    let p7 = rank_plan(&m8, &round(), None, &h100(), 1000, &o6).unwrap();
    assert_eq!(p7.exposed_s, (1e-3 + 0.131072) - 0.05);

    // Default micro-batches = pp = 2: 3 slots; stage 0 ends at 2/3 of 0.15 s.
    let mut o3 = o;
    o3.microbatches = None;
    o3.prefill_s = Some(0.15);
    let p3 = rank_plan(&m8, &round(), None, &h100(), 1000, &o3).unwrap();
    assert_eq!(p3.microbatches, 2);
    assert_eq!(p3.stages[0].start_s, 0.15 * (2.0 / 3.0));
    assert_eq!(p3.stages[0].lead_s, 0.15 * (1.0 / 3.0));
    assert_eq!(p3.stages[1].start_s, 0.15 * (3.0 / 3.0));
    // (1 ms + 0.131072) - 0.05 = 0.082072 > 1 ms + 0.065536 = 0.066536.
    assert_eq!(p3.exposed_s, (1e-3 + 0.131072) - 0.15 * (1.0 / 3.0));

    // A huge lead: the early stage's bound is below the late one alone.
    let mut o4 = o;
    o4.prefill_s = Some(100.0);
    let p4 = rank_plan(&m8, &round(), None, &h100(), 1000, &o4).unwrap();
    assert_eq!(p4.stages[0].lead_s, 25.0);
    assert_eq!(p4.exposed_s, (1e-3 + 0.065536) - 0.0);

    // One stage: the prefill time changes nothing.
    let mut o5 = RankOptions::new(tp(8), tp(4));
    o5.prefill_s = Some(0.5);
    let p5 = rank_plan(&m8, &round(), None, &h100(), 1000, &o5).unwrap();
    assert_eq!(p5.stages[0].start_s, 0.5);
    assert_eq!(p5.stages[0].lead_s, 0.0);
    assert_eq!(p5.exposed_s, p5.finish_s);
    // 8 heads over TP4: 2 per decode NIC, 32,768,000 B: 1 ms + 0.032768 s.
    assert_eq!(p5.finish_s, 1e-3 + 0.032768);
}

#[test]
fn fewer_nics_than_ranks_share_round_robin() {
    let mut o = RankOptions::new(tp(8), tp(8));
    o.nics_per_instance = Some(2);
    let p = plan(&o);
    assert_eq!(p.nics.len(), 4);
    let n0 = nic(&p, Side::Prefill, 0);
    assert_eq!(n0.ranks, vec![0, 2, 4, 6]);
    // 4 heads: 335,544,320 B / 12.5e9 = 0.0268435456 s.
    assert_eq!(n0.bytes, 335_544_320.0);
    assert_eq!(n0.busy_s, 0.0268435456);
    assert_eq!(nic(&p, Side::Decode, 1).ranks, vec![1, 3, 5, 7]);
    assert_eq!(p.finish_s, 20e-6 + 0.0268435456);
    assert_eq!(p.layouts.decode.nics, 2);

    // 3 NICs over 8 ranks: NIC 0 carries ranks 0, 3, 6: 251,658,240 B = 0.0201326592 s.
    o.nics_per_instance = Some(3);
    let p = plan(&o);
    assert_eq!(nic(&p, Side::Prefill, 0).ranks, vec![0, 3, 6]);
    assert_eq!(nic(&p, Side::Prefill, 2).ranks, vec![2, 5]);
    assert_eq!(nic(&p, Side::Prefill, 2).bytes, 2.0 * HEAD);
    assert_eq!(p.finish_s, 20e-6 + 0.0201326592);

    // More NICs than ranks: the spare ones idle.
    o.nics_per_instance = Some(16);
    let p = plan(&o);
    assert_eq!(p.nics.len(), 32);
    assert_eq!(nic(&p, Side::Decode, 12).bytes, 0.0);
    assert!(nic(&p, Side::Decode, 12).ranks.is_empty());
    assert_eq!(p.finish_s, 20e-6 + 0.0067108864);

    // One NIC per side for TP8 -> TP8: everything through one port, the single transfer's time.
    o.nics_per_instance = Some(1);
    let p = plan(&o);
    assert_eq!(p.finish_s, 20e-6 + 0.0536870912);
}

#[test]
fn the_gather_pass_reads_and_writes_each_decode_rank_once() {
    let dev = Device {
        mem_bw: 1e12,
        bw_eff: 0.5,
        ..h100()
    };
    let mut o = RankOptions::new(tp(8), tp(4));
    o.relayout = Relayout::Hbm;
    let p = rank_plan(&m70(), &eth100(), None, &dev, P, &o).unwrap();
    // Each decode rank holds 2 heads, 167,772,160 B: 2 * 167,772,160 / 5e11 = 0.00067108864 s.
    assert_eq!(p.relayout_s, 0.00067108864);
    assert!(p.decode_ranks.iter().all(|d| d.relayout_s == 0.00067108864));
    assert_eq!(p.total_s, (20e-6 + 0.0134217728) + 0.00067108864);
    assert_eq!(p.exposed_s, p.total_s);
    assert_eq!(p.relayout, Relayout::Hbm);
    // The H100: 3.35 TB/s at 80 %.
    let p = plan(&o);
    assert_eq!(p.relayout_s, 2.0 * 167_772_160.0 / ((3.35 * 1e12) * 0.80));
    // With copies: a replica gathers after its copy lands.
    let mut o = RankOptions::new(tp(8), tp(16));
    o.relayout = Relayout::Hbm;
    let p = rank_plan(&m70(), &eth100(), Some(&nvlink4()), &dev, P, &o).unwrap();
    // One head each: 2 * 83,886,080 / 5e11 = 0.00033554432 s.
    assert_eq!(p.relayout_s, 0.00033554432);
    let copy = 5e-6 + 83_886_080.0 / 450e9;
    assert_eq!(p.total_s, (20e-6 + 0.0067108864) + (copy + 0.00033554432));
    assert_eq!(Relayout::parse("hbm").unwrap(), Relayout::Hbm);
    assert_eq!(Relayout::parse("off").unwrap(), Relayout::Off);
    assert_eq!(Relayout::Hbm.as_str(), "hbm");
    assert_eq!(Relayout::Off.as_str(), "off");
    assert_eq!(Relayout::default(), Relayout::Off);
    assert_eq!(
        Relayout::parse("gpu").unwrap_err().to_string(),
        "unknown KV relayout cost 'gpu'; valid: off, hbm"
    );
}

#[test]
fn layouts_and_their_helpers() {
    let l = RankLayout::new(4, 2);
    assert_eq!(l.devices(), 8);
    assert_eq!(RankLayout::new(3, 5).devices(), 15);
    assert_eq!(l.label(), "TP4 PP2");
    assert_eq!(tp(16).label(), "TP16");
    assert_eq!(RankLayout::new(1, 4).stage_layers(3, 80), [60, 80]);
    assert_eq!(RankLayout::new(1, 4).stage_layers(1, 80), [20, 40]);
    assert_eq!(tp(4).rank_heads(3, 8), [6, 8]);
    assert_eq!(tp(4).rank_heads(1, 8), [2, 4]);
    assert_eq!(tp(16).rank_heads(5, 8), [2, 3]);
    assert_eq!(tp(32).rank_heads(5, 8), [1, 2]);
    assert_eq!(tp(16).replicas(8), 2);
    assert_eq!(tp(32).replicas(8), 4);
    assert_eq!(tp(4).replicas(8), 1);
    assert_eq!(tp(8).replicas(8), 1);
    assert_eq!(tp(16).link_heads(5, 8), [2, 2]);
    assert_eq!(tp(16).link_heads(4, 8), [2, 3]);
    assert_eq!(tp(4).link_heads(3, 8), [6, 8]);
    assert_eq!(shard_bytes(&m70(), P, 80, 1), HEAD);
    assert_eq!(
        shard_bytes(&m70(), 3, 5, 2),
        3.0 * (2.0 * 5.0 * 2.0 * 128.0 * 2.0)
    );
}

#[test]
fn bad_layouts_are_one_line_naming_the_value() {
    let o = |p: RankLayout, d: RankLayout| RankOptions::new(p, d);
    assert_eq!(
        err(&o(RankLayout::new(0, 1), tp(1))),
        "prefill_tp: must be at least 1, got 0"
    );
    assert_eq!(
        err(&o(tp(1), RankLayout::new(1, 0))),
        "decode_pp: must be at least 1, got 0"
    );
    assert_eq!(
        err(&o(tp(3), tp(1))),
        "prefill_tp: 3 neither divides the 8 KV heads of Llama-3-70B nor is a multiple of them; \
         valid: 1, 2, 4, 8, or a multiple of 8"
    );
    assert_eq!(
        err(&o(tp(1), tp(12))),
        "decode_tp: 12 neither divides the 8 KV heads of Llama-3-70B nor is a multiple of them; \
         valid: 1, 2, 4, 8, or a multiple of 8"
    );
    assert_eq!(
        err(&o(tp(1), RankLayout::new(1, 3))),
        "decode_pp: 3 does not divide the 80 layers of Llama-3-70B; valid: 1, 2, 4, 5, 8, 10, 16, \
         20, 40, 80"
    );
    assert_eq!(
        err(&o(RankLayout::new(16, 80), tp(1))),
        "prefill_tp: TP16 x PP80 is 1280 GPUs, absurdly many (limit 1024)"
    );
    // The limit itself is fine.
    assert_eq!(MAX_DEVICES, 1024);
    let big = plan_of(RankLayout::new(1024, 1), tp(8));
    assert_eq!(big.link_bytes, S);
    let mut n = o(tp(8), tp(8));
    n.nics_per_instance = Some(0);
    assert_eq!(err(&n), "nics_per_instance: must be at least 1, got 0");
    n.nics_per_instance = Some(1025);
    assert_eq!(
        err(&n),
        "nics_per_instance: 1025 is absurdly large (limit 1024)"
    );
    n.nics_per_instance = Some(1024);
    assert_eq!(plan(&n).nics.len(), 2048);
    let mut mb = o(tp(8), tp(8));
    mb.microbatches = Some(0);
    assert_eq!(err(&mb), "prefill_microbatches: must be at least 1, got 0");
    mb.microbatches = Some(65_537);
    assert_eq!(
        err(&mb),
        "prefill_microbatches: 65537 is absurdly large (limit 65536)"
    );
    let mut t = o(tp(8), tp(8));
    t.prefill_s = Some(-1.0);
    assert!(err(&t).starts_with("prefill_s: "), "{}", err(&t));
    // Replicas on the decode side need the scale-up link.
    let e = rank_plan(&m70(), &eth100(), None, &h100(), P, &o(tp(8), tp(16)))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "decode_tp: TP16 replicates the 8 KV heads, which needs the decode device's scale-up link"
    );
    // ... but not on the prefill side.
    let p = rank_plan(&m70(), &eth100(), None, &h100(), P, &o(tp(16), tp(8))).unwrap();
    assert_eq!(p.link_bytes, S);
}

/// Every (head, layer) cell: sent by exactly one prefill rank that holds it, received by exactly
/// its lowest-index decode owner; bytes conserve; fan-in and fan-out match the layouts.
#[test]
fn a_grid_of_layouts_conserves_every_cell() {
    let c = cat();
    let tps = [1u32, 2, 4, 8, 16, 32];
    let pps = [1u32, 2, 4, 5, 8, 16];
    for key in ["llama3.2-1b", "llama3-70b", "opt-13b"] {
        let m = c.model(key).unwrap();
        let (l, hkv) = (m.n_layers, m.n_kv_heads);
        let s = m.handoff_bytes(100);
        let valid = |x: &RankLayout| {
            let t = x.tp as u64;
            (if t <= hkv {
                hkv.is_multiple_of(t)
            } else {
                t.is_multiple_of(hkv)
            }) && l.is_multiple_of(x.pp as u64)
        };
        let layouts: Vec<RankLayout> = tps
            .iter()
            .flat_map(|&t| pps.iter().map(move |&p| RankLayout::new(t, p)))
            .filter(|x| x.devices() <= 64)
            .collect();
        for &pl in &layouts {
            for &dl in &layouts {
                let o = RankOptions::new(pl, dl);
                let r = rank_plan(m, &eth100(), Some(&nvlink4()), &h100(), 100, &o);
                if !(valid(&pl) && valid(&dl)) {
                    assert!(r.is_err(), "{key} {pl:?} {dl:?}");
                    continue;
                }
                let p = r.unwrap();
                let ctx = format!("{key} {} -> {}", pl.label(), dl.label());
                // Cell (h, l) owners, written independently of the library's ranges.
                let rep = |x: &RankLayout| (x.tp as u64 / hkv).max(1);
                let per = |x: &RankLayout| (hkv / x.tp as u64).max(1);
                let owner = |x: &RankLayout, h: u64, layer: u64| -> u32 {
                    let stage = layer / (l / x.pp as u64);
                    let r = h / per(x) * rep(x);
                    (stage * x.tp as u64 + r) as u32
                };
                let mut seen = vec![0u32; (hkv * l) as usize];
                for f in &p.flows {
                    for h in f.heads[0]..f.heads[1] {
                        for layer in f.layers[0]..f.layers[1] {
                            assert_eq!(f.from, owner(&pl, h, layer), "{ctx}");
                            assert_eq!(f.to, owner(&dl, h, layer), "{ctx}");
                            seen[(h * l + layer) as usize] += 1;
                        }
                    }
                    let cells = (f.heads[1] - f.heads[0]) * (f.layers[1] - f.layers[0]);
                    assert_eq!(f.bytes, 100.0 * (cells * 2 * m.hd()) as f64 * 2.0, "{ctx}");
                }
                assert!(seen.iter().all(|&n| n == 1), "{ctx}");
                // Conservation: the flows are the single transfer's bytes, exactly.
                assert_eq!(p.link_bytes, s, "{ctx}");
                let sent: f64 = p.prefill_ranks.iter().map(|r| r.bytes).sum();
                assert_eq!(sent, s, "{ctx}");
                let got: f64 = p.decode_ranks.iter().map(|r| r.link_bytes).sum();
                assert_eq!(got, s, "{ctx}");
                let nic_p: f64 = p
                    .nics
                    .iter()
                    .filter(|n| n.side == Side::Prefill)
                    .map(|n| n.bytes)
                    .sum();
                assert_eq!(nic_p, s, "{ctx}");
                let held: f64 = p.decode_ranks.iter().map(|r| r.held_bytes).sum();
                assert_eq!(held, rep(&dl) as f64 * s, "{ctx}");
                assert_eq!(p.replicate_bytes, (rep(&dl) - 1) as f64 * s, "{ctx}");
                // Fan-in of a receiving decode rank: the sending TP ranks over its heads times the
                // prefill stages over its layers.
                let senders_tp = (per(&dl) / per(&pl)).max(1);
                for d in &p.decode_ranks {
                    let (ds, dr) = (d.rank / dl.tp, d.rank % dl.tp);
                    if !(dr as u64).is_multiple_of(rep(&dl)) {
                        assert_eq!(d.fan_in, 0, "{ctx}");
                        continue;
                    }
                    let (lo, hi) = (
                        ds as u64 * l / dl.pp as u64,
                        (ds as u64 + 1) * l / dl.pp as u64,
                    );
                    let stages = (hi - 1) / (l / pl.pp as u64) - lo / (l / pl.pp as u64) + 1;
                    assert_eq!(d.fan_in as u64, senders_tp * stages, "{ctx} d{}", d.rank);
                }
                let receivers_tp = (per(&pl) / per(&dl)).max(1);
                for r in &p.prefill_ranks {
                    let (ps, pr) = (r.rank / pl.tp, r.rank % pl.tp);
                    if !(pr as u64).is_multiple_of(rep(&pl)) {
                        assert_eq!(r.fan_out, 0, "{ctx}");
                        continue;
                    }
                    let (lo, hi) = (
                        ps as u64 * l / pl.pp as u64,
                        (ps as u64 + 1) * l / pl.pp as u64,
                    );
                    let stages = (hi - 1) / (l / dl.pp as u64) - lo / (l / dl.pp as u64) + 1;
                    assert_eq!(r.fan_out as u64, receivers_tp * stages, "{ctx} p{}", r.rank);
                }
                // Time: the busiest port, and the total never beats it.
                let busiest = p.nics.iter().map(|n| n.bytes).fold(0.0, f64::max);
                assert_eq!(p.finish_s, eth100().transfer_time(busiest), "{ctx}");
                assert!(p.total_s >= p.finish_s, "{ctx}");
                assert_eq!(p.speedup, p.single_transfer_s / p.total_s, "{ctx}");
            }
        }
    }
}

/// The calculator's answer for Llama-3-70B, 2,048 tokens over 100 GbE, with `f` applied to the
/// spec first.
fn calc_doc(f: impl Fn(&mut calc::HandoffSpec)) -> (calc::HandoffSpec, calc::HandoffDoc) {
    let mut spec = calc::HandoffSpec {
        model: "llama3-70b".into(),
        prompt_tokens: P,
        link: "eth-100g".into(),
        ..Default::default()
    };
    f(&mut spec);
    let doc = calc::evaluate(&cat(), &spec, None, None, None).unwrap();
    (spec, doc)
}

fn eval_with(
    f: impl Fn(&mut calc::HandoffSpec),
    rs: &ranks::RankSpec,
) -> Result<Option<RankPlan>, String> {
    let (spec, doc) = calc_doc(f);
    ranks::evaluate(&cat(), &spec, &doc, rs, &m70(), None).map_err(|e| e.to_string())
}

fn on() -> ranks::RankSpec {
    ranks::RankSpec {
        handoff_ranks: true,
        ..Default::default()
    }
}

#[test]
fn the_calculators_rank_options_default_to_the_instance() {
    // Off: nothing, and no option may be given.
    assert_eq!(eval_with(|_| {}, &ranks::RankSpec::default()), Ok(None));
    let d = ranks::RankSpec::default();
    let cases: Vec<(&str, ranks::RankSpec)> = vec![
        (
            "prefill_tp",
            ranks::RankSpec {
                prefill_tp: Some(8),
                ..d.clone()
            },
        ),
        (
            "prefill_pp",
            ranks::RankSpec {
                prefill_pp: Some(2),
                ..d.clone()
            },
        ),
        (
            "decode_tp",
            ranks::RankSpec {
                decode_tp: Some(8),
                ..d.clone()
            },
        ),
        (
            "decode_pp",
            ranks::RankSpec {
                decode_pp: Some(2),
                ..d.clone()
            },
        ),
        (
            "prefill_microbatches",
            ranks::RankSpec {
                prefill_microbatches: Some(2),
                ..d.clone()
            },
        ),
        (
            "nics_per_instance",
            ranks::RankSpec {
                nics_per_instance: Some(2),
                ..d.clone()
            },
        ),
        (
            "kv_relayout_cost",
            ranks::RankSpec {
                kv_relayout_cost: "hbm".into(),
                ..d.clone()
            },
        ),
        (
            "decode_device",
            ranks::RankSpec {
                decode_device: Some("a100".into()),
                ..d.clone()
            },
        ),
    ];
    for (key, rs) in &cases {
        assert_eq!(
            eval_with(|_| {}, rs),
            Err(format!("{key}: applies only with handoff_ranks"))
        );
    }
    assert_eq!(ranks::RankSpec::KEYS.len(), 9);
    assert_eq!(ranks::RankSpec::KEYS[8], "decode_device");

    // One device: TP1 -> TP1, the calculator's transfer bit for bit, stages at its prefill's end.
    let (spec, doc) = calc_doc(|_| {});
    let p = ranks::evaluate(&cat(), &spec, &doc, &on(), &m70(), None)
        .unwrap()
        .unwrap();
    let row = doc.row.as_ref().unwrap();
    assert_eq!(p.finish_s, row.handoff.transfer_s);
    assert_eq!(p.finish_s, 20e-6 + 0.0536870912);
    assert_eq!(p.stages[0].start_s, row.handoff.prefill_s);
    assert_eq!(p.single_transfer_bytes, S);
    // 8 devices: TP8 on both sides.
    let p = eval_with(|s| s.devices_per_instance = 8, &on())
        .unwrap()
        .unwrap();
    assert_eq!(p.layouts.prefill.label, "TP8");
    assert_eq!(p.layouts.decode.label, "TP8");
    assert_eq!(p.finish_s, 20e-6 + 0.0067108864);
    // PP2 on 8 devices: TP4 PP2; the prefill's stage 0 sends from 2/3 of its step.
    let rs = ranks::RankSpec {
        prefill_pp: Some(2),
        decode_pp: Some(2),
        prefill_microbatches: Some(4),
        ..on()
    };
    let (spec, doc) = calc_doc(|s| s.devices_per_instance = 8);
    let p = ranks::evaluate(&cat(), &spec, &doc, &rs, &m70(), None)
        .unwrap()
        .unwrap();
    assert_eq!(p.layouts.prefill.label, "TP4 PP2");
    assert_eq!(p.layouts.decode.label, "TP4 PP2");
    assert_eq!(p.microbatches, 4);
    let prefill = doc.row.as_ref().unwrap().handoff.prefill_s;
    assert_eq!(p.stages[0].start_s, prefill * (4.0 / 5.0));
    // Explicit layouts, NICs, the gather pass on an A100 (2.039 TB/s at 80 %).
    let rs = ranks::RankSpec {
        prefill_tp: Some(8),
        decode_tp: Some(4),
        nics_per_instance: Some(2),
        kv_relayout_cost: "hbm".into(),
        decode_device: Some("a100".into()),
        ..on()
    };
    let p = eval_with(|s| s.devices_per_instance = 8, &rs)
        .unwrap()
        .unwrap();
    assert_eq!(p.layouts.decode.label, "TP4");
    assert_eq!(p.layouts.prefill.nics, 2);
    // Two NICs a side: four heads each, 335,544,320 B = 0.0268435456 s.
    assert_eq!(p.finish_s, 20e-6 + 0.0268435456);
    let gather = 2.0 * 167_772_160.0 / ((2.039 * 1e12) * 0.80);
    assert_eq!(p.relayout_s, gather);
    // A custom decode device replaces the catalogue's.
    let dev = Device {
        mem_bw: 1e12,
        bw_eff: 0.5,
        ..h100()
    };
    let (spec, doc) = calc_doc(|s| s.devices_per_instance = 8);
    let p = ranks::evaluate(&cat(), &spec, &doc, &rs, &m70(), Some(dev))
        .unwrap()
        .unwrap();
    assert_eq!(p.relayout_s, 0.00067108864);
    // GQA on 16: the H100's NVLink 4 copies.
    let p = eval_with(|s| s.devices_per_instance = 16, &on())
        .unwrap()
        .unwrap();
    assert_eq!(p.replicate_s, 5e-6 + 83_886_080.0 / 450e9);
}

#[test]
fn the_calculators_rank_options_refuse_what_they_do_not_model() {
    let why = "the rank-aware hand-off models one uncompressed prompt sent after the prefill, one \
               port per NIC";
    assert_eq!(
        eval_with(|s| s.compression = "fp8".into(), &on()),
        Err(format!("compression: 'fp8': {why}"))
    );
    assert_eq!(
        eval_with(|s| s.send = "layerwise".into(), &on()),
        Err(format!("send: 'layerwise': {why}"))
    );
    assert_eq!(
        eval_with(|s| s.concurrent = 2, &on()),
        Err(format!("concurrent: 2: {why}"))
    );
    assert_eq!(
        eval_with(|s| s.link_channels = Some(3), &on()),
        Err(format!("link_channels: 3: {why}"))
    );
    assert_eq!(
        eval_with(|s| s.all_links = true, &on()),
        Err("handoff_ranks: needs one link, not all_links".into())
    );
    let bad =
        |rs: ranks::RankSpec, devices: u64| eval_with(|s| s.devices_per_instance = devices, &rs);
    assert_eq!(
        bad(
            ranks::RankSpec {
                prefill_tp: Some(0),
                ..on()
            },
            1
        ),
        Err("prefill_tp: must be at least 1, got 0".into())
    );
    assert_eq!(
        bad(
            ranks::RankSpec {
                decode_tp: Some(1025),
                ..on()
            },
            1
        ),
        Err("decode_tp: 1025 is absurdly large (limit 1024)".into())
    );
    assert_eq!(
        bad(
            ranks::RankSpec {
                decode_tp: Some(1024),
                ..on()
            },
            1
        )
        .map(|p| p.is_some()),
        Ok(true)
    );
    assert_eq!(
        bad(
            ranks::RankSpec {
                decode_pp: Some(0),
                ..on()
            },
            1
        ),
        Err("decode_pp: must be at least 1, got 0".into())
    );
    assert_eq!(
        bad(
            ranks::RankSpec {
                prefill_tp: Some(8),
                ..on()
            },
            1
        ),
        Err(
            "prefill_tp: TP8 is 8 GPUs, not the prefill instance's 1 (devices per instance)".into()
        )
    );
    assert_eq!(
        bad(
            ranks::RankSpec {
                prefill_pp: Some(2),
                ..on()
            },
            1
        ),
        Err(
            "prefill_pp: TP1 PP2 is 2 GPUs, not the prefill instance's 1 (devices per instance)"
                .into()
        )
    );
    assert_eq!(
        bad(ranks::RankSpec { prefill_tp: Some(3), ..on() }, 3),
        Err("prefill_tp: 3 neither divides the 8 KV heads of Llama-3-70B nor is a multiple of them; \
             valid: 1, 2, 4, 8, or a multiple of 8"
            .into())
    );
    assert_eq!(
        bad(
            ranks::RankSpec {
                decode_pp: Some(3),
                ..on()
            },
            1
        ),
        Err(
            "decode_pp: 3 does not divide the 80 layers of Llama-3-70B; valid: 1, 2, 4, 5, 8, 10, \
             16, 20, 40, 80"
                .into()
        )
    );
    assert_eq!(
        bad(
            ranks::RankSpec {
                kv_relayout_cost: "gpu".into(),
                ..on()
            },
            1
        ),
        Err("kv_relayout_cost: unknown KV relayout cost 'gpu'; valid: off, hbm".into())
    );
    let e = bad(
        ranks::RankSpec {
            decode_device: Some("nope".into()),
            ..on()
        },
        1,
    )
    .unwrap_err();
    assert!(
        e.starts_with("decode_device: unknown device 'nope'; valid: h100, a100"),
        "{e}"
    );
}

/// `PortLoads` (the simulator's `--handoff-ranks`): each NIC's bytes are the plan's for any
/// prompt length, bit for bit, and the stream time is the busiest port's wire time, with closed
/// forms for the README's three layouts.
#[test]
fn port_loads_are_the_plans_ports_for_every_prompt_length() {
    let m = m70();
    let layouts = [
        (tp(8), tp(8)),
        (tp(8), tp(4)),
        (tp(4), tp(8)),
        (RankLayout::new(4, 2), tp(8)),
        (tp(2), RankLayout::new(2, 4)),
        (tp(8), tp(16)),
    ];
    for (pl, dl) in layouts {
        for nics in [None, Some(1), Some(3), Some(8)] {
            let mut o = RankOptions::new(pl, dl);
            o.nics_per_instance = nics;
            let ports = PortLoads::new(&m, &eth100(), Some(&nvlink4()), &h100(), &o).unwrap();
            for p in [1u64, 7, 2048, 3001, 131_072] {
                let plan = rank_plan(&m, &eth100(), Some(&nvlink4()), &h100(), p, &o).unwrap();
                let want: Vec<f64> = plan.nics.iter().map(|n| n.bytes).collect();
                let ctx = format!("{} -> {} nics {nics:?} P {p}", pl.label(), dl.label());
                assert_eq!(ports.port_bytes(p), want, "{ctx}");
                let busiest = plan.nics.iter().map(|n| n.busy_s).fold(0.0, f64::max);
                assert_eq!(ports.stream_s(&eth100(), p), busiest, "{ctx}");
            }
        }
    }
    let s = |pl, dl| {
        PortLoads::new(&m, &eth100(), None, &h100(), &RankOptions::new(pl, dl))
            .unwrap()
            .stream_s(&eth100(), P)
    };
    // TP8 -> TP8: one head per port, S / 8 at 12.5 GB/s.
    assert_eq!(s(tp(8), tp(8)), HEAD / 12.5e9);
    // TP8 -> TP4 and TP4 -> TP8: the side with four ports carries two heads each.
    assert_eq!(s(tp(8), tp(4)), (HEAD + HEAD) / 12.5e9);
    assert_eq!(s(tp(4), tp(8)), (HEAD + HEAD) / 12.5e9);
    // One GPU each side: the single transfer's wire time.
    assert_eq!(s(tp(1), tp(1)), S / 12.5e9);
    // A replicating decode layout needs the scale-up link, as the plan does.
    assert!(PortLoads::new(
        &m,
        &eth100(),
        None,
        &h100(),
        &RankOptions::new(tp(8), tp(16))
    )
    .is_err());
}
