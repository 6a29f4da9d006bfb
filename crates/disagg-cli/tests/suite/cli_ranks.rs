//! `disagg handoff --handoff-ranks` and `--rank-table` (issue 13 §3) as a user runs them: the
//! option leaves the calculator's output as it was and adds to it, the JSON's `ranks` against
//! closed forms, one-line errors, and the README's table.
//!
//! Llama-3-70B: 327,680 KV bytes per token; a 2,048-token prompt S = 671,088,640 B, one KV head's
//! share S / 8 = 83,886,080 B. 100 GbE: 12.5e9 B/s, 20 µs.

use crate::common;
#[allow(unused_imports)]
use common::*;

use serde_json::Value;

const S: f64 = 671_088_640.0;
const HEAD: f64 = 83_886_080.0;

fn base(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "handoff",
        "--model",
        "llama3-70b",
        "--prompt-tokens",
        "2048",
        "--link",
        "eth-100g",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn json(extra: &[&str]) -> Value {
    let mut a = base(extra);
    a.push("--json".into());
    ok_json(&a.iter().map(String::as_str).collect::<Vec<_>>())
}

fn text(extra: &[&str]) -> String {
    let a = base(extra);
    ok_text(&a.iter().map(String::as_str).collect::<Vec<_>>())
}

fn f(v: &Value) -> f64 {
    v.as_f64().expect("a number")
}

#[test]
fn the_option_only_adds_to_the_calculators_output() {
    for extra in [
        &["--devices-per-instance", "8"][..],
        &[][..],
        &["--devices-per-instance", "16", "--prefill-device", "a100"][..],
    ] {
        let plain = text(extra);
        let mut with = extra.to_vec();
        with.push("--handoff-ranks");
        let ranked = text(&with);
        assert!(ranked.starts_with(&plain), "{extra:?}");
        assert!(
            ranked[plain.len()..].starts_with("\nRank by rank: "),
            "{extra:?}"
        );

        let plain = json(extra);
        let mut ranked = json(&with);
        assert!(ranked.get("ranks").is_some());
        ranked.as_object_mut().unwrap().remove("ranks");
        assert_eq!(ranked, plain, "{extra:?}");
        assert!(plain.get("ranks").is_none());
    }
}

#[test]
fn tp8_to_tp4_in_json() {
    let v = json(&[
        "--devices-per-instance",
        "8",
        "--handoff-ranks",
        "--decode-tp",
        "4",
    ]);
    let r = &v["ranks"];
    assert_eq!(r["layouts"]["prefill"]["tp"], 8);
    assert_eq!(r["layouts"]["prefill"]["pp"], 1);
    assert_eq!(r["layouts"]["prefill"]["nics"], 8);
    assert_eq!(r["layouts"]["decode"]["tp"], 4);
    assert_eq!(r["layouts"]["decode"]["nics"], 4);
    assert!(r["rule"]
        .as_str()
        .unwrap()
        .contains("crosses the KV link once"));
    let flows = r["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 8);
    for (i, fl) in flows.iter().enumerate() {
        assert_eq!(fl["from"], i as u64);
        assert_eq!(fl["to"], i as u64 / 2);
        assert_eq!(f(&fl["bytes"]), HEAD);
        assert_eq!(fl["heads"], serde_json::json!([i, i + 1]));
        assert_eq!(fl["layers"], serde_json::json!([0, 80]));
    }
    let nics = r["nics"].as_array().unwrap();
    assert_eq!(nics.len(), 12);
    let dec: Vec<&Value> = nics.iter().filter(|n| n["side"] == "decode").collect();
    assert_eq!(dec.len(), 4);
    for n in dec {
        // Two heads: 167,772,160 B / 12.5e9 = 0.0134217728 s.
        assert_eq!(f(&n["bytes"]), 167_772_160.0);
        assert_eq!(f(&n["busy_s"]), 0.0134217728);
    }
    assert!(r["decode_ranks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["fan_in"] == 2));
    assert_eq!(f(&r["finish_s"]), 20e-6 + 0.0134217728);
    assert_eq!(f(&r["total_s"]), 20e-6 + 0.0134217728);
    assert_eq!(f(&r["single_transfer_s"]), 20e-6 + 0.0536870912);
    // The top-level transfer is the same single-transfer figure.
    assert_eq!(f(&v["transfer_s"]), 20e-6 + 0.0536870912);
    assert_eq!(
        f(&r["speedup"]),
        (20e-6 + 0.0536870912) / (20e-6 + 0.0134217728)
    );
    assert_eq!(f(&r["replicate_bytes"]), 0.0);
    assert_eq!(f(&r["relayout_s"]), 0.0);
    assert_eq!(r["relayout"], "off");
    assert_eq!(f(&r["link_bytes"]), S);
    // One stage: it starts when the prefill ends, and nothing is exposed beyond the transfer.
    assert_eq!(f(&r["stages"][0]["start_s"]), f(&v["prefill_s"]));
    assert_eq!(f(&r["exposed_s"]), f(&r["total_s"]));
}

#[test]
fn defaults_follow_devices_per_instance() {
    // No layout flags: TP = --devices-per-instance on both sides.
    let r = &json(&["--devices-per-instance", "8", "--handoff-ranks"])["ranks"];
    assert_eq!(r["layouts"]["decode"]["tp"], 8);
    assert_eq!(f(&r["finish_s"]), 20e-6 + 0.0067108864);
    // One device: the single transfer, bit for bit.
    let v = json(&["--handoff-ranks"]);
    assert_eq!(v["ranks"]["flows"].as_array().unwrap().len(), 1);
    assert_eq!(f(&v["ranks"]["finish_s"]), f(&v["transfer_s"]));
    assert_eq!(f(&v["ranks"]["speedup"]), 1.0);
    // A pipeline: --prefill-pp 2 on 8 devices is TP4 PP2, stage 0 sending from 2/3 of the prefill.
    let v = json(&[
        "--devices-per-instance",
        "8",
        "--handoff-ranks",
        "--prefill-pp",
        "2",
    ]);
    let r = &v["ranks"];
    assert_eq!(r["layouts"]["prefill"]["tp"], 4);
    assert_eq!(r["layouts"]["prefill"]["pp"], 2);
    assert_eq!(r["microbatches"], 2);
    let prefill = f(&v["prefill_s"]);
    assert_eq!(f(&r["stages"][0]["start_s"]), prefill * (2.0 / 3.0));
    assert_eq!(f(&r["stages"][1]["start_s"]), prefill * (3.0 / 3.0));
    assert_eq!(r["stages"][1]["layers"], serde_json::json!([40, 80]));
    // Decode TP8 receives each head's two halves: fan-in 2, one head per NIC.
    assert_eq!(f(&r["finish_s"]), 20e-6 + 0.0067108864);
    assert!(f(&r["exposed_s"]) <= f(&r["finish_s"]));
    let v = json(&[
        "--devices-per-instance",
        "8",
        "--handoff-ranks",
        "--prefill-pp",
        "2",
        "--prefill-microbatches",
        "6",
    ]);
    // mb = 6: stage 0 ends at 6/7 of the prefill.
    assert_eq!(
        f(&v["ranks"]["stages"][0]["start_s"]),
        f(&v["prefill_s"]) * (6.0 / 7.0)
    );
}

#[test]
fn gqa_heads_on_tp16_cross_once_and_copy_over_nvlink() {
    let v = json(&["--devices-per-instance", "16", "--handoff-ranks"]);
    let r = &v["ranks"];
    assert_eq!(r["flows"].as_array().unwrap().len(), 8);
    assert_eq!(f(&r["link_bytes"]), S);
    assert_eq!(f(&r["replicate_bytes"]), S);
    // NVLink 4 (the H100's scale-up link): 5 µs + 83,886,080 / 450e9 per primary.
    let copy = 5e-6 + 83_886_080.0 / 450e9;
    assert_eq!(f(&r["replicate_s"]), copy);
    assert_eq!(f(&r["total_s"]), (20e-6 + 0.0067108864) + copy);
    // The B200's NVLink 5: 900 GB/s.
    let v = json(&[
        "--devices-per-instance",
        "16",
        "--handoff-ranks",
        "--decode-device",
        "b200",
    ]);
    assert_eq!(f(&v["ranks"]["replicate_s"]), 5e-6 + 83_886_080.0 / 900e9);
}

#[test]
fn the_gather_pass_uses_the_decode_devices_hbm() {
    let r = &json(&[
        "--devices-per-instance",
        "8",
        "--handoff-ranks",
        "--decode-tp",
        "4",
        "--kv-relayout-cost",
        "hbm",
        "--decode-device",
        "a100",
    ])["ranks"];
    // Two heads per decode rank, read and written once at 2.039 TB/s x 0.80.
    let gather = 2.0 * 167_772_160.0 / ((2.039 * 1e12) * 0.80);
    assert_eq!(f(&r["relayout_s"]), gather);
    assert_eq!(r["relayout"], "hbm");
    assert_eq!(f(&r["total_s"]), (20e-6 + 0.0134217728) + gather);
}

#[test]
fn nics_are_shared_round_robin() {
    let r = &json(&[
        "--devices-per-instance",
        "8",
        "--handoff-ranks",
        "--nics-per-instance",
        "2",
    ])["ranks"];
    assert_eq!(r["nics"][0]["ranks"], serde_json::json!([0, 2, 4, 6]));
    // Four heads per NIC: 335,544,320 / 12.5e9 = 0.0268435456 s.
    assert_eq!(f(&r["finish_s"]), 20e-6 + 0.0268435456);
}

#[test]
fn the_text_report_has_the_per_rank_tables() {
    let t = text(&[
        "--devices-per-instance",
        "8",
        "--handoff-ranks",
        "--decode-tp",
        "4",
    ]);
    for needle in [
        "Rank by rank: prefill TP8 (8 NICs) -> decode TP4 (4 NICs, H100-SXM), 100 GbE per NIC",
        "  p7 -> d3             7..8      0..80      83.9 MB",
        "  decode 3     d3                           167.8 MB    13.4 ms",
        "  p0                  1      83.9 MB",
        "  d0                  2     167.8 MB          -     167.8 MB    13.4 ms          -",
        "  last byte over link    13.4 ms ",
        "  hand-off               13.4 ms      vs 53.7 ms as one transfer: 4.00x",
    ] {
        assert!(t.contains(needle), "'{needle}' not in:\n{t}");
    }
    assert!(!t.contains("scale-up copies"));
    assert!(!t.contains("gather pass"));
    let t = text(&[
        "--devices-per-instance",
        "8",
        "--handoff-ranks",
        "--decode-tp",
        "16",
        "--prefill-pp",
        "2",
        "--kv-relayout-cost",
        "hbm",
    ]);
    for needle in [
        "prefill TP4 PP2 (8 NICs) -> decode TP16 (16 NICs",
        "  d1                  0          0 B         d0",
        "  scale-up copies ",
        "  gather pass ",
        "  stage 0                layers 0..40 ",
        "(at its end)",
        "  prefill micro-batches  2",
    ] {
        assert!(t.contains(needle), "'{needle}' not in:\n{t}");
    }
}

#[test]
fn bad_rank_options_are_one_line() {
    let run = |extra: &[&str], needles: &[&str]| {
        let a = base(extra);
        bad(&a.iter().map(String::as_str).collect::<Vec<_>>(), needles);
    };
    run(
        &["--handoff-ranks", "--prefill-tp", "0"],
        &["--prefill-tp", "'0'", "1 to 1024"],
    );
    run(
        &["--handoff-ranks", "--decode-tp", "-2"],
        &["--decode-tp", "'-2'"],
    );
    run(
        &["--devices-per-instance", "3", "--handoff-ranks"],
        &[
            "--prefill-tp: 3 neither divides the 8 KV heads",
            "valid: 1, 2, 4, 8, or a multiple of 8",
        ],
    );
    run(
        &["--handoff-ranks", "--decode-tp", "12"],
        &["--decode-tp: 12", "valid: 1, 2, 4, 8"],
    );
    run(
        &["--handoff-ranks", "--decode-pp", "3"],
        &[
            "--decode-pp: 3 does not divide the 80 layers",
            "1, 2, 4, 5, 8, 10, 16, 20, 40, 80",
        ],
    );
    run(
        &["--handoff-ranks", "--kv-relayout-cost", "gpu"],
        &["--kv-relayout-cost", "'gpu'", "valid: off, hbm"],
    );
    run(
        &["--handoff-ranks", "--prefill-tp", "8"],
        &["--prefill-tp: TP8 is 8 GPUs, not the prefill instance's 1 (devices per instance)"],
    );
    run(
        &[
            "--devices-per-instance",
            "8",
            "--handoff-ranks",
            "--prefill-pp",
            "3",
        ],
        &["--prefill-pp: 3 does not divide"],
    );
    run(
        &["--decode-tp", "4"],
        &["--decode-tp: applies only with --handoff-ranks"],
    );
    run(
        &["--nics-per-instance", "4"],
        &["--nics-per-instance: applies only with --handoff-ranks or --rank-table"],
    );
    run(&["--kv-relayout-cost", "hbm"], &["--kv-relayout-cost"]);
    run(&["--decode-device", "a100"], &["--decode-device"]);
    run(
        &["--prefill-microbatches", "2"],
        &["--prefill-microbatches"],
    );
    run(
        &["--rank-table", "--decode-tp", "4"],
        &["--decode-tp", "--rank-table"],
    );
    run(&["--rank-table", "--json"], &["--rank-table", "--json"]);
    bad(
        &["handoff", "--model", "llama3-8b-hyena", "--handoff-ranks"],
        &["--model: ", "shards attention KV only"],
    );
    run(
        &["--rank-table", "--compression", "fp8"],
        &["--compression", "'fp8'"],
    );
    run(
        &["--rank-table", "--send", "layerwise"],
        &["--send", "'layerwise'"],
    );
    run(
        &["--rank-table", "--concurrent", "3"],
        &["--concurrent", "3"],
    );
    run(
        &["--rank-table", "--link-channels", "2"],
        &["--link-channels", "2"],
    );
    run(
        &["--rank-table", "--kv-relayout-cost", "x"],
        &["--kv-relayout-cost", "'x'", "valid: off, hbm"],
    );
    run(
        &["--rank-table", "--devices-per-instance", "4"],
        &["--devices-per-instance", "--rank-table"],
    );
    bad(
        &["handoff", "--handoff-ranks", "--all-links"],
        &["--handoff-ranks", "--all-links"],
    );
    run(
        &["--handoff-ranks", "--compression", "fp8"],
        &["--compression", "'fp8'"],
    );
    run(
        &["--handoff-ranks", "--send", "layerwise"],
        &["--send", "'layerwise'"],
    );
    run(
        &["--handoff-ranks", "--concurrent", "2"],
        &["--concurrent", "2"],
    );
    run(
        &["--handoff-ranks", "--link-channels", "2"],
        &["--link-channels", "2"],
    );
    run(
        &["--handoff-ranks", "--decode-device", "nope"],
        &["--decode-device", "'nope'"],
    );
    run(
        &["--handoff-ranks", "--nics-per-instance", "0"],
        &["--nics-per-instance", "'0'"],
    );
}

#[test]
fn the_rank_table_is_computed() {
    let t = text(&["--rank-table"]);
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with(
        "Llama-3-70B, 2,048 prompt tokens (671.1 MB of KV), H100-SXM, 100 GbE per GPU"
    ));
    // 53.7 ms alone; TP8 -> TP8 at 20 µs + 6.71 ms = 6.73 ms, 7.98x; the others 13.4 ms, 4.00x.
    let row = |label: &str| -> Vec<String> {
        lines
            .iter()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("{label} in {t}"))[label.len()..]
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        row("one transfer"),
        ["1", "->", "1", "1", "1", "1", "671.1", "MB", "53.7", "ms", "1.00x"]
    );
    assert_eq!(
        row("TP8 -> TP8"),
        ["8", "->", "8", "8", "1", "1", "83.9", "MB", "6.73", "ms", "7.98x"]
    );
    assert_eq!(
        row("TP8 -> TP4"),
        ["8", "->", "4", "8", "2", "1", "167.8", "MB", "13.4", "ms", "4.00x"]
    );
    assert_eq!(
        row("TP4 -> TP8"),
        ["4", "->", "8", "8", "1", "2", "167.8", "MB", "13.4", "ms", "4.00x"]
    );
    // Two NICs per instance: TP8 -> TP8 puts four heads through each, 26.9 ms.
    let t2 = text(&["--rank-table", "--nics-per-instance", "2"]);
    assert!(t2.contains("100 GbE x 2 per instance"), "{t2}");
    assert!(t2.contains("335.5 MB    26.9 ms     2.00x"), "{t2}");
    // The gather pass adds to every layout but the single transfer.
    let t3 = text(&["--rank-table", "--kv-relayout-cost", "hbm"]);
    assert!(t3.contains("HBM gather pass on each decode rank"), "{t3}");
    assert!(t3.contains("    53.7 ms     1.00x"), "{t3}");
}

/// The README's block between `<!-- NAME:begin -->` and `<!-- NAME:end -->`, unfenced.
fn readme_block(name: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let begin = format!("<!-- {name}:begin -->");
    let end = format!("<!-- {name}:end -->");
    let a = readme.find(&begin).expect("begin marker") + begin.len();
    let b = readme.find(&end).expect("end marker");
    readme[a..b]
        .trim()
        .strip_prefix("```text")
        .expect("fenced")
        .trim_start_matches('\n')
        .strip_suffix("```")
        .expect("fenced")
        .trim_end()
        .to_string()
}

#[test]
fn readme_rank_table_is_current() {
    let got = ok_text(&[
        "handoff",
        "--model",
        "llama3-70b",
        "--prompt-tokens",
        "2048",
        "--link",
        "eth-100g",
        "--rank-table",
    ]);
    assert_eq!(readme_block("rank-table"), got.trim_end());
}
