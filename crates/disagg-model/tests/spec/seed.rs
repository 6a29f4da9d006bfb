//! Every number of the seed chapter (`docs/cost-model.md#seed-calculator`), through the hand-off
//! calculator, with the exact doubles of `docs/cost-model.md#seed-calculator` asserted with `==` and the chapter's
//! rounding checked as printed.

use disagg_model::*;

fn h100_8b() -> CostModel {
    let c = Catalogue::builtin();
    CostModel::new(
        c.model("llama3-8b").unwrap(),
        c.device("h100").unwrap(),
        1,
        CostOptions::default(),
    )
    .unwrap()
}

fn calc(link: &str, comp: Option<(&str, CompressAt)>, send: SendMode, p: u64) -> Handoff {
    let c = Catalogue::builtin();
    let tr = comp.map(|(k, at)| KvTransit::new(c.compression(k).unwrap().clone(), at));
    handoff(&h100_8b(), c.link(link).unwrap(), tr.as_ref(), send, p)
}

#[test]
fn sizes() {
    let c = Catalogue::builtin();
    assert_eq!(c.model("llama3-8b").unwrap().kv_bytes_per_token(), 131072.0);
    assert_eq!(
        c.model("llama3-8b").unwrap().handoff_bytes(2048),
        268435456.0
    );
    assert_eq!(
        c.model("llama3-70b").unwrap().handoff_bytes(2048),
        671088640.0
    );
    assert_eq!(format!("{:.1}", 268435456.0 / 1e6), "268.4");
    assert_eq!(format!("{:.1}", 671088640.0 / 1e6), "671.1");
    assert_eq!(
        c.model("llama3-70b").unwrap().kv_bytes_per_token() / 1024.0,
        320.0
    );
}

#[test]
fn link_table() {
    let rows = [
        ("nvlink4", 0.0006015232355555556, "0.6"),
        ("cpo-optical", 0.00134717728, "1.3"),
        ("ib-ndr", 0.005378709119999999, "5.4"),
        ("eth-100g", 0.021494836479999998, "21.5"),
        ("eth-25g", 0.08591934592, "85.9"),
    ];
    for (l, t, ms) in rows {
        let h = calc(l, None, SendMode::Whole, 2048);
        assert_eq!(h.transfer_s, t, "{l}");
        assert_eq!(h.exposed_s, t, "{l}");
        assert_eq!(format!("{:.1}", h.transfer_s * 1e3), ms, "{l}");
    }
}

#[test]
fn seventy_b_on_four_h100_over_ib() {
    let c = Catalogue::builtin();
    let cm = CostModel::new(
        c.model("llama3-70b").unwrap(),
        c.device("h100").unwrap(),
        4,
        CostOptions::default(),
    )
    .unwrap();
    let h = handoff(&cm, c.link("ib-ndr").unwrap(), None, SendMode::Whole, 2048);
    assert_eq!(h.transfer_s, 0.0134317728);
    // `docs/serving-model.md#metrics`'s analytic KV-link ceiling: 50e9 / 671088640 = 74.5 req/s.
    assert_eq!(format!("{:.1}", h.link_saturation_rps), "74.5");
}

#[test]
fn prefill_saturation_energy() {
    let h = calc("eth-25g", None, SendMode::Whole, 2048);
    assert_eq!(h.prefill_s, 0.05903319135244048);
    assert_eq!(format!("{:.1}", h.prefill_s * 1e3), "59.0");
    assert_eq!(h.link_saturation_rps, 11.641532182693481);
    assert_eq!(format!("{:.1}", h.link_saturation_rps), "11.6");
    assert_eq!(h.link_energy_j, 0.03221225472);
    assert_eq!(
        calc("ib-ndr", None, SendMode::Whole, 2048).link_energy_j,
        0.03221225472
    );
    assert_eq!(
        calc("cpo-optical", None, SendMode::Whole, 2048).link_energy_j,
        0.006442450944
    );
}

#[test]
fn layerwise() {
    let h = calc("eth-25g", None, SendMode::Layerwise, 2048);
    assert_eq!(h.exposed_s, 0.02873094179732328);
    assert_eq!(format!("{:.1}", h.exposed_s * 1e3), "28.7");
    // FP8 compressed on the GPU: the chapter's (handoff.ts) figure exactly.
    let h = calc(
        "eth-25g",
        Some(("fp8", CompressAt::Endpoint)),
        SendMode::Layerwise,
        2048,
    );
    assert_eq!(h.exposed_s, 0.00136217728);
    assert_eq!(h.exposed_s, 20e-6 + 0.04294967296 / 32.0);
    assert_eq!(format!("{:.2}", h.exposed_s * 1e3), "1.36");
    // FP8 in the link adds the stage's 1 us: still 1.36 ms.
    let h = calc(
        "eth-25g",
        Some(("fp8", CompressAt::Transit)),
        SendMode::Layerwise,
        2048,
    );
    assert_eq!(h.exposed_s, 21e-6 + 0.04294967296 / 32.0);
    assert_eq!(format!("{:.2}", h.exposed_s * 1e3), "1.36");
    // A link that keeps up leaves only the last slice.
    let h = calc("ib-ndr", None, SendMode::Layerwise, 2048);
    assert_eq!(h.exposed_s, 0.00017777216);
}

#[test]
fn compression_ratios_and_saturation() {
    let h = calc(
        "eth-25g",
        Some(("fp8", CompressAt::Endpoint)),
        SendMode::Whole,
        2048,
    );
    assert_eq!(h.transfer_s, 0.04296967296);
    assert_eq!(h.link_saturation_rps, 23.283064365386963);
    let h = calc(
        "eth-25g",
        Some(("fp4-block", CompressAt::Endpoint)),
        SendMode::Whole,
        2048,
    );
    assert_eq!(h.wire_bytes, 71303168.0);
    assert_eq!(h.transfer_s, 0.02283701376);
    assert_eq!(h.link_saturation_rps, 43.826944687787226);
    assert_eq!(h.compression_ratio, 64.0 / 17.0);
    assert_eq!(format!("{:.2}", h.compression_ratio), "3.76");
    assert_eq!(h.kv_bytes / h.wire_bytes, 64.0 / 17.0);
}

#[test]
fn closed_form_edge_cases() {
    // One layer: nothing overlaps, the whole transfer is exposed.
    assert_eq!(layerwise_exposed(20e-6, 0.08, 0.059, 1), 20e-6 + 0.08);
    // A link far faster than the prefill: only the last layer's slice is left.
    assert_eq!(
        layerwise_exposed(5e-6, 0.0006, 0.059, 32),
        5e-6 + 0.0006 / 32.0
    );
    // Zero latency: exactly the larger of the two terms.
    assert_eq!(layerwise_exposed(0.0, 0.08, 0.05, 2), 0.08 - 0.05 / 2.0);
    assert_eq!(layerwise_exposed(0.0, 0.01, 0.05, 2), 0.01 / 2.0);
    // A link much slower than prefill: everything but the prefill's first (L-1)/L overlaps.
    let (x, p, l) = (10.0, 0.059, 32u64);
    assert_eq!(layerwise_exposed(0.0, x, p, l), x - (p * 31.0) / 32.0);
    // Layer-wise never exposes more than the whole transfer, nor less than one slice.
    for &lat in &[0.0, 5e-6, 1e-3] {
        for &x in &[1e-6, 1e-3, 0.05, 0.2, 3.0] {
            for &p in &[1e-4, 0.059, 1.0] {
                for &l in &[1u64, 2, 32, 80] {
                    let e = layerwise_exposed(lat, x, p, l);
                    assert!(e <= lat + x && e >= lat + x / l as f64, "{lat} {x} {p} {l}");
                }
            }
        }
    }
}
