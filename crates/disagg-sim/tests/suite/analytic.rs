//! The KV-link analytic bound (`summary.analytic`) against the spec's formula written out with
//! literal numbers, not with the code's own transfer-time function: hand-offs per second
//! = links x channels / (link latency + bytes / bandwidth), with
//! bytes = tokens x 2 x layers x kv_heads x head_dim x kv_bytes.

use disagg_model::Catalogue;
use disagg_sim::{simulate, Analytic, Scenario, SimConfig};

fn cfg(extra: &[&str]) -> SimConfig {
    let mut f = vec![
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--link",
        "eth-25g",
        "--prompt",
        "1000",
        "--rate",
        "4",
        "--requests",
        "20",
    ];
    f.extend_from_slice(extra);
    Scenario::from_flags(&f)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap()
}

/// The analytic bounds as a run's summary reports them (what `run --json` prints).
fn analytic(c: &SimConfig) -> Analytic {
    let r = simulate(c, &c.generate_workload()).unwrap();
    r.summary()
        .analytic
        .expect("a disaggregated run has analytic bounds")
}

// Llama-3-8B: 32 layers, 8 KV heads, head_dim 4096 / 32 = 128, BF16 (2 bytes).
// 25 GbE: 3.125 GB/s per channel, 20 us latency.
const LATENCY_S: f64 = 20e-6;
const BANDWIDTH_BYTES_PER_S: f64 = 3.125e9;
const PROMPT_TOKENS: f64 = 1000.0;
const KV_BYTES: f64 = PROMPT_TOKENS * 2.0 * 32.0 * 8.0 * 128.0 * 2.0; // 131,072,000 bytes

fn close(got: f64, want: f64) -> bool {
    ((got - want) / want).abs() < 1e-12
}

#[test]
fn kv_link_bound_is_latency_plus_bytes_over_bandwidth() {
    let a = analytic(&cfg(&[]));
    // 1 / (20e-6 + 131072000 / 3.125e9) = 1 / 0.04196304 s = 23.8305... hand-offs/s.
    let want = 1.0 / (LATENCY_S + KV_BYTES / BANDWIDTH_BYTES_PER_S);
    assert!((want - 23.8305).abs() < 1e-3, "{want}"); // the hand arithmetic above
    let got = a.kv_link_rps.unwrap();
    assert!(close(got, want), "kv_link_rps {got}, spec formula {want}");
    // Without compression the wire bound is the same figure.
    assert!(close(a.kv_link_wire_rps.unwrap(), want));
    // Dropping the latency or reading bytes as bits would be far off.
    assert!(!close(got, 1.0 / (KV_BYTES / BANDWIDTH_BYTES_PER_S)));
    assert!(!close(
        got,
        1.0 / (LATENCY_S + KV_BYTES * 8.0 / BANDWIDTH_BYTES_PER_S)
    ));
    // The link is the lowest bound here, so it is the ceiling.
    assert_eq!(a.bottleneck, "kv-link");
    assert!(close(a.ceiling_rps, want));
}

#[test]
fn kv_link_bound_scales_with_channels_and_links() {
    // Two prefill instances with a link each, two channels per link: 4 transfers at once.
    let a = analytic(&cfg(&[
        "--prefill",
        "2",
        "--link-topology",
        "per-prefill",
        "--link-channels",
        "2",
    ]));
    let want = 4.0 / (LATENCY_S + KV_BYTES / BANDWIDTH_BYTES_PER_S);
    let got = a.kv_link_rps.unwrap();
    assert!(close(got, want), "kv_link_rps {got}, spec formula {want}");
}

#[test]
fn reference_bound_ignores_compression_and_wire_bound_counts_it() {
    // FP8 at the endpoint: 1 byte per value, half the bytes on the wire.
    let a = analytic(&cfg(&[
        "--kv-compress",
        "fp8",
        "--kv-compress-at",
        "endpoint",
    ]));
    let reference = 1.0 / (LATENCY_S + KV_BYTES / BANDWIDTH_BYTES_PER_S);
    let wire = 1.0 / (LATENCY_S + (KV_BYTES / 2.0) / BANDWIDTH_BYTES_PER_S);
    let (got_ref, got_wire) = (a.kv_link_rps.unwrap(), a.kv_link_wire_rps.unwrap());
    assert!(
        close(got_ref, reference),
        "kv_link_rps {got_ref}, want {reference}"
    );
    assert!(
        close(got_wire, wire),
        "kv_link_wire_rps {got_wire}, want {wire}"
    );
    // The ceiling stays the reference's.
    let pools = a.prefill_rps.unwrap().min(a.decode_rps.unwrap());
    assert!(close(a.ceiling_rps, reference.min(pools)));
}
