//! The hand-off (`disagg_model::handoff`) against `docs/cost-model.md#handoff` and the chapter's closed form
//! (`docs/cost-model.md#seed-calculator`), with round numbers so every expected value is a hand literal or the formula written out:
//! a 1 GB/s link with 1 ms latency, 10 pJ/bit and two channels; Llama-3-8B (131,072 KV bytes per
//! token) and a 1,000-token prompt, so S = 131,072,000 bytes and the wire takes 0.131072 s.

use disagg_model::*;

const S: f64 = 131_072_000.0; // 1000 * 131072

fn link(channels: u32) -> Link {
    Link {
        key: "round".into(),
        name: "Round".into(),
        bandwidth_bps: 1e9,
        latency_s: 1e-3,
        channels,
        pj_per_bit: 10.0,
    }
}

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn h100_8b() -> CostModel {
    let c = cat();
    CostModel::new(
        c.model("llama3-8b").unwrap(),
        c.device("h100").unwrap(),
        1,
        CostOptions::default(),
    )
    .unwrap()
}

fn transit(key: &str, at: CompressAt) -> KvTransit {
    KvTransit::new(cat().compression(key).unwrap().clone(), at)
}

#[test]
fn names_parse_and_print() {
    assert_eq!(SendMode::parse("whole"), Ok(SendMode::Whole));
    for s in ["layerwise", "layer-wise", "layer"] {
        assert_eq!(SendMode::parse(s), Ok(SendMode::Layerwise), "{s}");
    }
    assert_eq!(
        SendMode::parse("x").unwrap_err().to_string(),
        "unknown send mode 'x'; valid: whole, layerwise"
    );
    assert_eq!(SendMode::Whole.as_str(), "whole");
    assert_eq!(SendMode::Layerwise.as_str(), "layerwise");
    for v in [SendMode::Whole, SendMode::Layerwise] {
        assert_eq!(SendMode::parse(v.as_str()), Ok(v));
    }
    assert_eq!(SendMode::NAMES, ["whole", "layerwise"]);
    assert_eq!(SendMode::default(), SendMode::Whole);

    assert_eq!(Sharing::parse("fifo"), Ok(Sharing::Fifo));
    assert_eq!(Sharing::parse("fair"), Ok(Sharing::Fair));
    assert_eq!(
        Sharing::parse("FIFO").unwrap_err().to_string(),
        "unknown link sharing 'FIFO'; valid: fifo, fair"
    );
    assert_eq!(Sharing::Fifo.as_str(), "fifo");
    assert_eq!(Sharing::Fair.as_str(), "fair");
    assert_eq!(Sharing::default(), Sharing::Fifo);

    assert_eq!(CompressAt::parse("transit"), Ok(CompressAt::Transit));
    assert_eq!(CompressAt::parse("link"), Ok(CompressAt::Transit));
    assert_eq!(CompressAt::parse("endpoint"), Ok(CompressAt::Endpoint));
    assert_eq!(CompressAt::parse("gpu"), Ok(CompressAt::Endpoint));
    assert_eq!(
        CompressAt::parse("cpu").unwrap_err().to_string(),
        "unknown compression placement 'cpu'; valid: transit, link, endpoint, gpu"
    );
    assert_eq!(CompressAt::Transit.as_str(), "transit");
    assert_eq!(CompressAt::Endpoint.as_str(), "endpoint");

    assert_eq!(LmHead::parse("all"), Ok(LmHead::All));
    assert_eq!(LmHead::parse("last"), Ok(LmHead::Last));
    assert_eq!(
        LmHead::parse("first").unwrap_err().to_string(),
        "unknown prefill LM head 'first'; valid: all, last"
    );
    assert_eq!(LmHead::All.as_str(), "all");
    assert_eq!(LmHead::Last.as_str(), "last");
}

#[test]
fn transfer_by_hand() {
    let c = cat();
    let m = c.model("llama3-8b").unwrap();
    let l = link(1);
    // (a) no compression: t = 1e-3 + 0.131072, link J = S * 8 * 10 pJ = 0.01048576 J.
    let t = transfer(m, &l, None, 1000);
    assert_eq!(t.kv_bytes, S);
    assert_eq!(t.wire_bytes, S);
    assert_eq!(t.fixed_s, 1e-3);
    assert_eq!(t.stream_s, 0.131072);
    assert_eq!(t.time_s, 1e-3 + 0.131072);
    assert_eq!(t.link_j, ((S * 8.0) * 10.0) * 1e-12);
    assert_eq!(t.transit_j, 0.0);
    assert!(!t.transit_bound);
    // (b) fp8 at the endpoint: wire = S / 2 = 65,536,000 B, 0.065536 s.
    let t = transfer(m, &l, Some(&transit("fp8", CompressAt::Endpoint)), 1000);
    assert_eq!(t.wire_bytes, 65_536_000.0);
    assert_eq!(t.stream_s, 0.065536);
    assert_eq!(t.time_s, 1e-3 + 0.065536);
    assert_eq!(t.link_j, ((65_536_000.0 * 8.0) * 10.0) * 1e-12);
    assert_eq!(t.transit_j, 0.0);
    assert!(!t.transit_bound);
    // (c) fp4-block in the link: 2 ops per value over S / 2 = 65,536,000 values = 131,072,000 ops
    // at 1.6 ops per line byte * 1e9 B/s: t_ops = 0.08192 s; wire S * 17 / 64 = 34,816,000 B,
    // 0.034816 s; the stage is slower: transit-bound. Stage energy on the input bits: S * 8 * 1 pJ.
    let t = transfer(
        m,
        &l,
        Some(&transit("fp4-block", CompressAt::Transit)),
        1000,
    );
    assert_eq!(t.wire_bytes, 34_816_000.0);
    assert_eq!(t.fixed_s, 1e-3 + 1e-6);
    assert_eq!(t.stream_s, 131_072_000.0 / (1.6 * 1e9));
    assert_eq!(t.time_s, (1e-3 + 1e-6) + 131_072_000.0 / (1.6 * 1e9));
    assert_eq!(t.link_j, ((34_816_000.0 * 8.0) * 10.0) * 1e-12);
    assert_eq!(t.transit_j, ((S * 8.0) * 1.0) * 1e-12);
    assert_eq!(t.transit_j, 0.001048576);
    assert!(t.transit_bound);
    // The same with a 10 ops/byte stage and 2 pJ/bit: t_ops = 0.0131072 s < t_wire: wire-bound.
    let mut tr = transit("fp4-block", CompressAt::Transit);
    tr.ops_per_byte = 10.0;
    tr.pj_per_bit = 2.0;
    tr.latency_s = 5e-6;
    let t = transfer(m, &l, Some(&tr), 1000);
    assert_eq!(t.fixed_s, 1e-3 + 5e-6);
    assert_eq!(t.stream_s, 0.034816);
    assert_eq!(t.time_s, (1e-3 + 5e-6) + 0.034816);
    assert_eq!(t.transit_j, ((S * 8.0) * 2.0) * 1e-12);
    assert!(!t.transit_bound);
    // An exact tie: fp8 has 1 op per value, i.e. S / 2 ops, and S / 2 wire bytes; at 1 op per
    // line byte t_ops = t_wire exactly, and the spec's strict `t_ops > t_wire` says not bound.
    let mut tr = transit("fp8", CompressAt::Transit);
    tr.ops_per_byte = 1.0;
    let t = transfer(m, &l, Some(&tr), 1000);
    assert_eq!(t.stream_s, 0.065536);
    assert!(!t.transit_bound);
}

#[test]
fn layerwise_closed_forms() {
    // 1 + max(8 / 4, (8 + 2) - (4 * 3) / 4) = 1 + max(2, 7) = 8
    assert_eq!(layerwise_exposed_after(1.0, 8.0, 4.0, 4, 2.0), 8.0);
    // wait 0 is the chapter's form: 1 + max(2, 8 - 3) = 6
    assert_eq!(layerwise_exposed_after(1.0, 8.0, 4.0, 4, 0.0), 6.0);
    assert_eq!(layerwise_exposed(1.0, 8.0, 4.0, 4), 6.0);
    // A long prefill hides everything but the last slice: 1 + max(8/4, 8 - 40*3/4 = -22) = 3
    assert_eq!(layerwise_exposed(1.0, 8.0, 40.0, 4), 3.0);
    // ... unless the transfer waited: 1 + max(2, (8 + 30) - 30) = 9 ; wait 20: 1 + max(2, -2) = 3
    assert_eq!(layerwise_exposed_after(1.0, 8.0, 40.0, 4, 30.0), 9.0);
    assert_eq!(layerwise_exposed_after(1.0, 8.0, 40.0, 4, 20.0), 3.0);
    // tail without the fixed part: max(8 / 4, (8 + 2) - 3) = 7 ; max(8/2, 8 - 4/2) = 6
    assert_eq!(layerwise_tail(8.0, 4.0, 4, 2.0), 7.0);
    assert_eq!(layerwise_tail(8.0, 4.0, 2, 0.0), 6.0);
    assert_eq!(layerwise_tail(8.0, 40.0, 2, 0.0), 4.0);
    // bit for bit at wait 0 on awkward numbers
    for (f, x, p, l) in [
        (20e-6, 0.08591934592, 0.059, 32u64),
        (1e-3, 0.131072, 0.03, 80),
        (0.0, 0.3, 0.1, 3),
    ] {
        assert_eq!(
            layerwise_exposed_after(f, x, p, l, 0.0).to_bits(),
            layerwise_exposed(f, x, p, l).to_bits()
        );
        assert_eq!(
            layerwise_exposed(f, x, p, l),
            f + (x / l as f64).max(x - (p * (l - 1) as f64) / l as f64)
        );
    }
}

#[test]
fn handoff_by_hand() {
    let cm = h100_8b();
    let l = link(2);
    let pre = cm.prefill([1000]).time_s;
    let t = 1e-3 + 0.131072;
    let h = handoff(&cm, &l, None, SendMode::Whole, 1000);
    assert_eq!(h.kv_bytes_per_token, 131072.0);
    assert_eq!(h.kv_bytes, S);
    assert_eq!(h.wire_bytes, S);
    assert_eq!(h.compression_ratio, 1.0);
    assert_eq!(h.transfer_s, t);
    assert_eq!(h.prefill_s, pre);
    assert_eq!(h.exposed_s, t);
    // bandwidth / wire bytes = 1e9 / 131072000 = 7.62939453125 (exact: 1e9 / 2^17 / 1000)
    assert_eq!(h.link_saturation_rps, 7.62939453125);
    assert_eq!(h.link_capacity_rps, 2.0 / t);
    assert_eq!(h.link_energy_j, 0.01048576);
    assert_eq!(h.transit_energy_j, 0.0);
    assert!(!h.transit_bound);
    // Layer-wise over the slow link: 1e-3 + max(0.131072 / 32, 0.131072 - pre * 31 / 32).
    let h = handoff(&cm, &l, None, SendMode::Layerwise, 1000);
    assert_eq!(
        h.exposed_s,
        1e-3 + (0.131072f64 / 32.0).max(0.131072 - (pre * 31.0) / 32.0)
    );
    assert!(h.exposed_s < h.transfer_s);
    // fp8 compressed on the GPU: the pass adds max(tc, tm) to the prefill (`docs/cost-model.md#compression`),
    // with ops = S / 2 and nb = S + S / 2 on 1xH100 (R_f = 543950000000000.06, R_b = 2.68e12).
    let tr = transit("fp8", CompressAt::Endpoint);
    let h = handoff(&cm, &l, Some(&tr), SendMode::Whole, 1000);
    let pass = (65_536_000.0 / 543950000000000.06f64).max((S + S / 2.0) / 2.68e12);
    assert_eq!(h.prefill_s, pre + pass);
    assert_eq!(h.compression_ratio, 2.0);
    assert_eq!(h.wire_bytes, 65_536_000.0);
    // 1e9 / 65536000 = 15.2587890625
    assert_eq!(h.link_saturation_rps, 15.2587890625);
    assert_eq!(h.transfer_s, 1e-3 + 0.065536);
    let h = handoff(&cm, &l, Some(&tr), SendMode::Layerwise, 1000);
    assert_eq!(
        h.exposed_s,
        1e-3 + (0.065536f64 / 32.0).max(0.065536 - ((pre + pass) * 31.0) / 32.0)
    );
    // The same format in the link leaves the prefill alone and is charged for the stage.
    let tr = transit("fp4-block", CompressAt::Transit);
    let h = handoff(&cm, &l, Some(&tr), SendMode::Whole, 1000);
    assert_eq!(h.prefill_s, pre);
    assert!(h.transit_bound);
    assert_eq!(h.transit_energy_j, 0.001048576);
    assert_eq!(h.compression_ratio, 64.0 / 17.0);
}

#[test]
fn shared_link_by_hand() {
    let cm = h100_8b();
    let pre = cm.prefill([1000]).time_s;
    let (fixed, stream) = (1e-3, 0.131072);
    let t = fixed + stream;
    let l2 = link(2);
    let lw = |f: f64, x: f64, p: f64| f + (x / 32.0).max(x - (p * 31.0) / 32.0);
    let lw_after = |f: f64, x: f64, p: f64, w: f64| f + (x / 32.0).max((x + w) - (p * 31.0) / 32.0);

    // One, or none, is `handoff` itself.
    for send in [SendMode::Whole, SendMode::Layerwise] {
        for sharing in [Sharing::Fifo, Sharing::Fair] {
            for n in [0u32, 1] {
                assert_eq!(
                    handoff_shared(&cm, &l2, None, send, 1000, sharing, n),
                    handoff(&cm, &l2, None, send, 1000)
                );
            }
        }
    }
    // FIFO, whole, 3 over 2 channels: two rounds of T.
    let h = handoff_shared(&cm, &l2, None, SendMode::Whole, 1000, Sharing::Fifo, 3);
    assert_eq!(h.transfer_s, 2.0 * t);
    assert_eq!(h.exposed_s, 2.0 * t);
    assert_eq!(h.link_capacity_rps, 2.0 / t);
    assert_eq!(h.prefill_s, pre);
    // FIFO, whole, 2 over 2 channels: one round.
    let h = handoff_shared(&cm, &l2, None, SendMode::Whole, 1000, Sharing::Fifo, 2);
    assert_eq!(h.transfer_s, t);
    // FIFO, whole, 3 over 1 channel: three rounds; capacity 1 / T.
    let h = handoff_shared(&cm, &link(1), None, SendMode::Whole, 1000, Sharing::Fifo, 3);
    assert_eq!(h.transfer_s, 3.0 * t);
    assert_eq!(h.exposed_s, 3.0 * t);
    assert_eq!(h.link_capacity_rps, 1.0 / t);
    // Fair, whole, 3 over 2 channels: each at 2/3 of a channel: fixed + stream * 1.5.
    let h = handoff_shared(&cm, &l2, None, SendMode::Whole, 1000, Sharing::Fair, 3);
    assert_eq!(h.transfer_s, fixed + stream * 1.5);
    assert_eq!(h.exposed_s, fixed + stream * 1.5);
    assert_eq!(h.link_capacity_rps, 2.0 / t);
    // Fair with no more prompts than channels: full speed each.
    let h = handoff_shared(&cm, &l2, None, SendMode::Whole, 1000, Sharing::Fair, 2);
    assert_eq!(h.transfer_s, t);
    // Fair, layer-wise: the closed form on the stretched stream.
    let h = handoff_shared(&cm, &l2, None, SendMode::Layerwise, 1000, Sharing::Fair, 3);
    assert_eq!(h.transfer_s, fixed + stream * 1.5);
    assert_eq!(h.exposed_s, lw(fixed, stream * 1.5, pre));
    // FIFO, layer-wise, 3 over 2 channels: the second round is granted when the first lands,
    // i.e. wait = landed_1 - first_ready with first_ready = -(pre * 31) / 32 relative to the end
    // of prefill.
    let h = handoff_shared(&cm, &l2, None, SendMode::Layerwise, 1000, Sharing::Fifo, 3);
    let first_ready = -(pre * 31.0) / 32.0;
    let landed1 = lw(fixed, stream, pre);
    let landed2 = lw_after(fixed, stream, pre, landed1 - first_ready);
    assert_eq!(h.exposed_s, landed2);
    assert_eq!(h.transfer_s, 2.0 * t);
    // The second round waits for the first: it lands about one transfer later.
    assert!(landed2 > landed1 + 0.9 * stream, "{landed1} {landed2}");
    // Three rounds over one channel.
    let h = handoff_shared(
        &cm,
        &link(1),
        None,
        SendMode::Layerwise,
        1000,
        Sharing::Fifo,
        3,
    );
    let landed3 = lw_after(fixed, stream, pre, landed2 - first_ready);
    assert_eq!(h.exposed_s, landed3);
    assert_eq!(h.transfer_s, 3.0 * t);
    // With an in-link stage the fixed part includes its 1 us.
    let tr = transit("fp8", CompressAt::Transit);
    let h = handoff_shared(&cm, &l2, Some(&tr), SendMode::Whole, 1000, Sharing::Fair, 4);
    assert_eq!(h.transfer_s, (1e-3 + 1e-6) + 0.065536 * 2.0);
}
