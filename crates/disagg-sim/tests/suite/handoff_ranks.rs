//! Beyond the reference (issue 13 §3): `--handoff-ranks` in a run. Each hand-off's stream time is
//! the busiest NIC of the rank-aware plan between the pools' layouts; the link's queueing still
//! applies to whole hand-offs, and bytes and link energy are unchanged.
//!
//! Llama-3-70B: L = 80, Hkv = 8, hd = 128, BF16: 2 * 80 * 8 * 128 * 2 = 327,680 B a token, so a
//! 2,048-token prompt is S = 671,088,640 B and one KV head's share S / 8 = 83,886,080 B.
//! InfiniBand NDR (the default link): 50 GB/s, 10 µs.

use disagg_model::Catalogue;
use disagg_sim::{simulate_observed, GenRequest, Observer, Scenario, SimConfig, TransferEvent};

const S: f64 = 671_088_640.0; // 2048 * 327,680
const HEAD: f64 = 83_886_080.0; // S / 8
const BW: f64 = 5e10;
const LAT: f64 = 1e-5;

fn cfg(extra: &[&str]) -> Result<SimConfig, String> {
    let mut f = vec!["--model", "llama3-70b", "--devices-per-instance", "8"];
    f.extend_from_slice(extra);
    Scenario::from_flags(&f)
        .map_err(|e| e.to_string())?
        .build(&Catalogue::builtin())
        .map_err(|e| e.to_string())
}

#[derive(Default)]
struct Xfers(Vec<TransferEvent>);

impl Observer for Xfers {
    fn transfer(&mut self, ev: &TransferEvent) {
        self.0.push(*ev);
    }
}

/// The transfers of `n` 2,048-token requests arriving together (64 output tokens each).
fn xfers(c: &SimConfig, n: usize) -> (Vec<TransferEvent>, disagg_sim::RunResult) {
    let w: Vec<GenRequest> = (0..n)
        .map(|rid| GenRequest {
            rid,
            arrival_s: 0.0,
            prompt_len: 2048,
            output_len: 64,
        })
        .collect();
    let mut o = Xfers::default();
    let r = simulate_observed(c, &w, &mut o).unwrap();
    (o.0, r)
}

fn one(extra: &[&str]) -> TransferEvent {
    let (x, _) = xfers(&cfg(extra).unwrap(), 1);
    assert_eq!(x.len(), 1);
    x[0]
}

/// The plain engine and the scheduled one (a token budget switches the levers on).
const ENGINES: [&[&str]; 2] = [&[], &["--max-num-batched-tokens", "8192"]];

#[test]
fn tp8_to_tp8_takes_latency_plus_an_eighth_on_an_idle_link() {
    for engine in ENGINES {
        let mut f = vec!["--handoff-ranks"];
        f.extend_from_slice(engine);
        let x = one(&f);
        // Eight equal shards, one per NIC on each side: latency + S / (8 * bandwidth).
        assert_eq!(x.dur, LAT + HEAD / BW, "{engine:?}");
        assert_eq!(x.dur, LAT + S / (8.0 * BW), "{engine:?}");
        // Bytes unchanged.
        assert_eq!((x.wire_bytes, x.kv_bytes), (S, S), "{engine:?}");
        // Without the option: the single transfer.
        let plain = one(engine);
        assert_eq!(plain.dur, LAT + S / BW, "{engine:?}");
        assert_eq!(plain.wire_bytes, S);
    }
}

#[test]
fn fan_in_and_one_nic_follow_the_busiest_port() {
    // TP8 -> TP4 (four decode GPUs, no layout: TP = devices): each decode NIC takes two heads.
    let x = one(&["--handoff-ranks", "--decode-devices-per-instance", "4"]);
    assert_eq!(x.dur, LAT + (HEAD + HEAD) / BW);
    // One NIC per instance: every flow through it, the single transfer's time (S / 8 * 8 = S
    // exactly).
    let x = one(&["--handoff-ranks", "--nics-per-instance", "1"]);
    assert_eq!(x.dur, LAT + S / BW);
    // Two NICs: four heads each.
    let x = one(&["--handoff-ranks", "--nics-per-instance", "2"]);
    assert_eq!(x.dur, LAT + (((HEAD + HEAD) + HEAD) + HEAD) / BW);
    // The pools' layouts: a TP4 PP2 prefill instance to TP8 decode: each prefill rank holds two
    // heads of 40 layers (S / 8), each decode rank receives one head of all 80 layers from two
    // prefill ranks (S / 16 each): every port carries S / 8.
    let x = one(&["--handoff-ranks", "--prefill-tp", "4", "--prefill-pp", "2"]);
    assert_eq!(x.dur, LAT + (HEAD / 2.0 + HEAD / 2.0) / BW);
}

#[test]
fn a_kv_format_scales_the_shards_and_conserves_the_bytes() {
    // FP8: one byte a value, S / 2 in all, S / 16 per NIC.
    let x = one(&["--handoff-ranks", "--kv-format", "fp8"]);
    assert_eq!(x.wire_bytes, S / 2.0);
    assert_eq!(x.dur, LAT + (HEAD / 2.0) / BW);
}

#[test]
fn queueing_still_applies_to_whole_hand_offs_and_energy_is_unchanged() {
    // Two prompts over 25 GbE (3.125 GB/s, 20 µs) with two NICs per instance: four heads per
    // NIC, latency + (S / 2) / 3.125e9 = 107 ms each, longer than a prefill step, so on the one
    // FIFO channel the second hand-off waits for the first to land.
    let f = [
        "--link",
        "eth-25g",
        "--handoff-ranks",
        "--nics-per-instance",
        "2",
    ];
    let (x, r) = xfers(&cfg(&f).unwrap(), 2);
    assert_eq!(x.len(), 2);
    let t = 2e-5 + (((HEAD + HEAD) + HEAD) + HEAD) / 3.125e9;
    assert_eq!((x[0].dur, x[1].dur), (t, t));
    assert_eq!(x[1].start, x[0].start + x[0].dur);
    let (y, plain) = xfers(&cfg(&["--link", "eth-25g"]).unwrap(), 2);
    assert_eq!(y[1].start, y[0].start + y[0].dur);
    assert_eq!(y[0].dur, 2e-5 + S / 3.125e9);
    // The same bytes and link energy as one transfer each: (2 * S * 8) * 15 pJ.
    let v = |r: &disagg_sim::RunResult| serde_json::to_value(r.summary()).unwrap();
    let (a, b) = (v(&r), v(&plain));
    assert_eq!(a["link"]["bytes"], b["link"]["bytes"]);
    assert_eq!(a["link"]["bytes"].as_f64(), Some(2.0 * S));
    assert_eq!(a["link"]["energy_j"], b["link"]["energy_j"]);
    // The link was busy for the two hand-offs' times.
    assert_eq!(a["link"]["busy_s"].as_f64(), Some(t + t));
}

#[test]
fn quiet_at_the_defaults_and_echoed_when_set() {
    let plain = cfg(&[]).unwrap();
    assert!(plain.rank_ports.is_none());
    let s = serde_json::to_value(&plain.scenario).unwrap();
    let mut q = s.clone();
    disagg_sim::scenario::quiet_defaults(&mut q);
    assert!(q.get("handoff_ranks").is_none() && q.get("nics_per_instance").is_none());
    let on = cfg(&["--handoff-ranks", "--nics-per-instance", "4"]).unwrap();
    let mut q = serde_json::to_value(&on.scenario).unwrap();
    disagg_sim::scenario::quiet_defaults(&mut q);
    assert_eq!(q["handoff_ranks"], true);
    assert_eq!(q["nics_per_instance"], 4);
}

#[test]
fn what_it_does_not_model_is_refused_in_one_line() {
    let why =
        "--handoff-ranks: the rank-aware hand-off models one uncompressed KV cache sent after \
               the prefill: not with";
    for (extra, want) in [
        (
            &["--nics-per-instance", "2"][..],
            "--nics-per-instance: applies only with --handoff-ranks".to_string(),
        ),
        (
            &["--handoff-ranks", "--mode", "colocated"][..],
            "--handoff-ranks: shapes the prefill-to-decode KV hand-off: disaggregated mode only"
                .to_string(),
        ),
        (
            &["--handoff-ranks", "--kv-compress", "fp8"][..],
            format!("{why} --kv-compress"),
        ),
        (
            &["--handoff-ranks", "--send", "layerwise"][..],
            format!("{why} --send layerwise"),
        ),
        (
            &[
                "--handoff-ranks",
                "--speculative",
                "mtp",
                "--max-num-batched-tokens",
                "8192",
            ][..],
            format!("{why} --speculative (the draft's KV)"),
        ),
    ] {
        assert_eq!(cfg(extra).unwrap_err(), want, "{extra:?}");
    }
    // No compression stage is fine.
    assert!(cfg(&["--handoff-ranks", "--kv-compress", "none"]).is_ok());
    // Three NICs for eight ranks are fine (rank i on NIC i % 3); none is out of range.
    assert!(cfg(&["--handoff-ranks", "--nics-per-instance", "3"]).is_ok());
    let e = cfg(&["--handoff-ranks", "--nics-per-instance", "0"]).unwrap_err();
    assert!(e.starts_with("--nics-per-instance:"), "{e}");
}

#[test]
fn a_null_switch_reads_as_off_and_the_echo_stays_quiet() {
    // `disagg sweep` fills an absent key with null; the switch reads it as off.
    let read =
        |v: serde_json::Value| serde_json::from_value::<Scenario>(v).map(|s| s.handoff_ranks);
    assert!(!read(serde_json::json!({"handoff_ranks": null})).unwrap());
    assert!(read(serde_json::json!({"handoff_ranks": true})).unwrap());
    assert!(!read(serde_json::json!({})).unwrap());
    assert!(read(serde_json::json!({"handoff_ranks": 3})).is_err());
    // Null keys the default leaves out are quiet; set ones are not.
    let mut v = serde_json::json!({"handoff_ranks": null, "nics_per_instance": null, "rate": 4.0});
    disagg_sim::scenario::quiet_defaults(&mut v);
    assert_eq!(v, serde_json::json!({"rate": 4.0}));
    let mut v = serde_json::json!({"handoff_ranks": true, "nics_per_instance": 2});
    disagg_sim::scenario::quiet_defaults(&mut v);
    assert_eq!(
        v,
        serde_json::json!({"handoff_ranks": true, "nics_per_instance": 2})
    );
}
