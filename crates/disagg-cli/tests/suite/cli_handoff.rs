//! `disagg handoff` and `disagg list` as a user runs them: exit codes, JSON shape, the chapter's
//! numbers, and one-line errors for bad input.

use crate::common;
#[allow(unused_imports)]
use common::*;

#[test]
fn issue_example_fp8_layerwise_json() {
    let v = ok_json(&[
        "handoff",
        "--model",
        "llama3-8b",
        "--prompt-tokens",
        "2048",
        "--link",
        "eth-25g",
        "--send",
        "layerwise",
        "--compression",
        "fp8",
        "--json",
    ]);
    for k in [
        "kv_bytes",
        "wire_bytes",
        "transfer_s",
        "prefill_s",
        "exposed_s",
        "link_saturation_rps",
        "link_energy_j",
        "model",
        "prompt_tokens",
        "link",
        "compression",
        "compress_at",
        "send",
        "prefill_device",
        "devices_per_instance",
    ] {
        assert!(v.get(k).is_some(), "missing key {k}");
    }
    let exposed = v["exposed_s"].as_f64().unwrap();
    assert_eq!(format!("{:.2}", exposed * 1e3), "1.36");
    // In the link: the stage's 1 µs on top of the chapter's figure.
    assert_eq!(exposed, 21e-6 + 0.04294967296 / 32.0);
    assert_eq!(v["model"], "llama3-8b");
    assert_eq!(v["prompt_tokens"], 2048);
    assert_eq!(v["send"], "layerwise");
    assert_eq!(v["compression"], "fp8");
    assert_eq!(v["wire_bytes"].as_f64(), Some(134217728.0));
    // On the GPU: exactly the chapter's 0.00136217728.
    let v = ok_json(&[
        "handoff",
        "--send",
        "layerwise",
        "--compression",
        "fp8",
        "--compress-at",
        "gpu",
        "--json",
    ]);
    assert_eq!(v["exposed_s"].as_f64(), Some(0.00136217728));
    assert_eq!(v["compress_at"], "endpoint");
}

#[test]
fn defaults_are_the_chapters_interactive() {
    let v = ok_json(&["handoff", "--json"]);
    assert_eq!(v["kv_bytes"].as_f64(), Some(268435456.0));
    assert_eq!(v["transfer_s"].as_f64(), Some(0.08591934592));
    assert_eq!(v["prefill_s"].as_f64(), Some(0.05903319135244048));
    assert_eq!(v["exposed_s"].as_f64(), Some(0.08591934592));
    assert_eq!(v["link_saturation_rps"].as_f64(), Some(11.641532182693481));
    assert_eq!(v["link_energy_j"].as_f64(), Some(0.03221225472));
    let t = ok_text(&["handoff"]);
    for s in ["268.4 MB", "85.9 ms", "59.0 ms", "11.6 req/s"] {
        assert!(t.contains(s), "{s} not in {t}");
    }
    let v = ok_json(&["handoff", "--send", "layerwise", "--json"]);
    assert_eq!(v["exposed_s"].as_f64(), Some(0.02873094179732328));
    let v = ok_json(&["handoff", "--model", "llama3-70b", "--json"]);
    assert_eq!(v["kv_bytes"].as_f64(), Some(671088640.0));
}

#[test]
fn all_links_prints_the_chapters_table() {
    let t = ok_text(&["handoff", "--all-links"]);
    let rows = [
        ("NVLink 4", "450 GB/s", "0.6 ms"),
        ("Co-packaged optics (illustrative)", "200 GB/s", "1.3 ms"),
        ("InfiniBand NDR 400G", "50 GB/s", "5.4 ms"),
        ("100 GbE", "12.5 GB/s", "21.5 ms"),
        ("25 GbE", "3.125 GB/s", "85.9 ms"),
    ];
    let mut last = 0;
    for (name, bw, takes) in rows {
        let (i, line) = t
            .lines()
            .enumerate()
            .find(|(_, l)| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} row missing in\n{t}"));
        assert!(line.contains(bw) && line.contains(takes), "{line}");
        assert!(i > last, "rows out of the chapter's order");
        last = i;
    }
    assert!(t.contains("268.4 MB takes"));
    let v = ok_json(&["handoff", "--all-links", "--json"]);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 9);
    let ib = rows.iter().find(|r| r["link"] == "ib-ndr").unwrap();
    assert_eq!(ib["transfer_s"].as_f64(), Some(0.005378709119999999));
}

#[test]
fn fp4_block_ratio() {
    let v = ok_json(&[
        "handoff",
        "--compression",
        "fp4-block",
        "--compress-at",
        "gpu",
        "--json",
    ]);
    assert_eq!(v["compression_ratio"].as_f64(), Some(64.0 / 17.0));
    assert_eq!(v["wire_bytes"].as_f64(), Some(71303168.0));
    assert_eq!(v["link_saturation_rps"].as_f64(), Some(43.826944687787226));
    // In the link the default 1.6 ops/byte budget makes fp4-block compute-bound.
    let v = ok_json(&["handoff", "--compression", "fp4-block", "--json"]);
    assert_eq!(v["transit_bound"], true);
    assert_eq!(v["transfer_s"].as_f64(), Some(0.0537080912));
}

#[test]
fn custom_shapes_links_and_devices() {
    // A custom link with the flags: 25 GbE's numbers, named.
    let v = ok_json(&[
        "handoff",
        "--link",
        "ib-ndr",
        "--link-bandwidth-gb-s",
        "3.125",
        "--link-latency-us",
        "20",
        "--link-pj-per-bit",
        "15",
        "--json",
    ]);
    assert_eq!(v["transfer_s"].as_f64(), Some(0.08591934592));
    assert_eq!(v["link"], "custom");
    // A custom model shape: half the KV heads, half the bytes.
    let v = ok_json(&["handoff", "--kv-heads", "4", "--json"]);
    assert_eq!(v["kv_bytes_per_token"].as_f64(), Some(65536.0));
    let v = ok_json(&[
        "handoff",
        "--layers",
        "16",
        "--head-dim",
        "64",
        "--kv-bytes",
        "1",
        "--json",
    ]);
    assert_eq!(
        v["kv_bytes_per_token"].as_f64(),
        Some((2 * 16 * 8 * 64) as f64)
    );
    // A custom device: twice an H100's FLOPs and power budget is two H100s (`docs/exactness.md#verification`).
    let v = ok_json(&[
        "handoff",
        "--device-peak-tflops",
        "1978",
        "--device-tdp-w",
        "1300",
        "--json",
    ]);
    assert_eq!(v["prefill_s"].as_f64(), Some(0.02976659567622024));
    // Without the extra power the power roof stretches the step.
    let v = ok_json(&["handoff", "--device-peak-tflops", "1978", "--json"]);
    assert!(v["prefill_s"].as_f64().unwrap() > 0.02976659567622024);
}

#[test]
fn catalogue_file() {
    let dir = std::env::temp_dir().join(format!("disagg-cat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("cat.toml");
    std::fs::write(
        &good,
        "[models.tiny]\nlayers = 2\nd_model = 256\nheads = 4\nkv_heads = 2\nd_ff = 512\nvocab = 1000\n\n\
         [devices.gpu-x]\nbase = \"h100\"\nmem_gb = 96\n\n\
         [links.slow]\nbandwidth_gb_s = 1\nlatency_us = 100\npj_per_bit = 20\n",
    )
    .unwrap();
    let g = good.to_str().unwrap();
    let v = ok_json(&[
        "--catalogue",
        g,
        "handoff",
        "--model",
        "tiny",
        "--link",
        "slow",
        "--prefill-device",
        "gpu-x",
        "--prompt-tokens",
        "1000",
        "--json",
    ]);
    // 2 * 2 layers * 2 heads * 64 dims * 2 bytes = 1024 B per token.
    assert_eq!(v["kv_bytes"].as_f64(), Some(1024.0 * 1000.0));
    assert_eq!(
        v["transfer_s"].as_f64(),
        Some(100.0 * 1e-6 + 1024000.0 / 1e9)
    );
    let l = ok_json(&["list", "links", "--json", "--catalogue", g]);
    assert!(l.as_array().unwrap().iter().any(|x| x["key"] == "slow"));

    let bad_key = dir.join("bad.toml");
    std::fs::write(&bad_key, "[links.x]\nbandwidth_gb_s = 1\nspeed = 3\n").unwrap();
    bad(
        &["--catalogue", bad_key.to_str().unwrap(), "handoff"],
        &["bad.toml", "speed"],
    );
    let zero = dir.join("zero.toml");
    std::fs::write(&zero, "[models.z]\nbase = \"llama3-8b\"\nlayers = 0\n").unwrap();
    bad(
        &["--catalogue", zero.to_str().unwrap(), "list"],
        &["zero.toml", "layers"],
    );
    let missing = dir.join("missing.toml");
    std::fs::write(&missing, "[links.m]\nlatency_us = 3\n").unwrap();
    bad(
        &["--catalogue", missing.to_str().unwrap(), "list"],
        &["bandwidth_gb_s"],
    );
    bad(
        &["--catalogue", "/definitely/not/here.toml", "list"],
        &["/definitely/not/here.toml"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    bad(
        &["handoff", "--model", "llama9"],
        &["llama9", "llama3-8b", "llama3-70b"],
    );
    bad(
        &["handoff", "--link", "carrier-pigeon"],
        &["carrier-pigeon", "eth-25g", "nvlink4"],
    );
    bad(
        &["handoff", "--prefill-device", "tpu"],
        &["tpu", "h100", "b200"],
    );
    bad(
        &["handoff", "--compression", "zip"],
        &["zip", "fp8", "fp4-block"],
    );
    bad(
        &["handoff", "--compress-at", "moon"],
        &["moon", "link", "gpu"],
    );
    bad(
        &["handoff", "--send", "sideways"],
        &["sideways", "layerwise"],
    );
    bad(&["handoff", "--prompt-tokens", "0"], &["--prompt-tokens"]);
    bad(&["handoff", "--prompt-tokens", "-3"], &["--prompt-tokens"]);
    bad(
        &["handoff", "--prompt-tokens", "many"],
        &["--prompt-tokens"],
    );
    bad(
        &["handoff", "--link-bandwidth-gb-s", "0"],
        &["--link-bandwidth-gb-s"],
    );
    bad(
        &["handoff", "--link-latency-us", "-1"],
        &["--link-latency-us"],
    );
    bad(&["handoff", "--layers", "0"], &["--layers"]);
    bad(
        &["handoff", "--devices-per-instance", "0"],
        &["--devices-per-instance"],
    );
    bad(
        &["handoff", "--kv-keep", "0.5", "--compression", "fp8"],
        &["--kv-keep"],
    );
    bad(
        &["handoff", "--kv-bytes", "1", "--compression", "fp8"],
        &["--compression"],
    );
    bad(&["handoff", "--bogus"], &["--bogus"]);
    bad(&["list", "gizmos"], &["gizmos", "models"]);
}

#[test]
fn list_text_and_json() {
    let t = ok_text(&["list"]);
    for s in [
        "llama3-70b",
        "H100-SXM",
        "InfiniBand NDR 400G",
        "fp4-block",
        "3.125 GB/s",
    ] {
        assert!(t.contains(s), "{s}");
    }
    let v = ok_json(&["list", "--json"]);
    // 13 of the reference, 3 measured (issue 15), 15 served (issue 16).
    assert_eq!(v["models"].as_array().unwrap().len(), 31);
    assert_eq!(v["devices"].as_array().unwrap().len(), 8);
    assert_eq!(v["links"].as_array().unwrap().len(), 9);
    assert_eq!(v["compression"].as_array().unwrap().len(), 7);
    let m = ok_json(&["list", "models", "--json"]);
    let l8 = m
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["key"] == "llama3-8b")
        .unwrap()
        .clone();
    assert_eq!(l8["kv_bytes_per_token"].as_f64(), Some(131072.0));
    let d = ok_json(&["list", "devices", "--json"]);
    let a100 = d
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["key"] == "a100")
        .unwrap()
        .clone();
    assert_eq!(a100["mem_bw"].as_f64(), Some(2039000000000.0002));
    let l = ok_json(&["list", "links", "--json"]);
    let e = l
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["key"] == "eth-25g")
        .unwrap()
        .clone();
    assert_eq!(e["bandwidth_bps"].as_f64(), Some(3125000000.0));
    assert_eq!(e["latency_s"].as_f64(), Some(2e-5));
}

#[test]
fn more_compression_formats() {
    // int8 with an FP16 scale per token-layer vector: W + 2 bytes per 2W, W = 8 x 128.
    let v = ok_json(&[
        "handoff",
        "--compression",
        "int8",
        "--compress-at",
        "gpu",
        "--json",
    ]);
    let exact = 2048.0 * 32.0 * 2.0 * (1024.0 + 2.0);
    let wire = v["wire_bytes"].as_f64().unwrap();
    assert!(((wire - exact) / exact).abs() <= 1e-15, "{wire} vs {exact}");
    assert_eq!(v["compression_ratio"].as_f64(), Some(2048.0 / 1026.0));
    // 4-bit with an FP16 scale per 16 values: 5 bits per value.
    let v = ok_json(&[
        "handoff",
        "--compression",
        "fp4-g16",
        "--compress-at",
        "gpu",
        "--json",
    ]);
    assert_eq!(v["wire_bytes"].as_f64(), Some(268435456.0 * 5.0 / 16.0));
    // KIVI-style 2-bit with scale and zero per 32: 3 bits per value.
    let v = ok_json(&[
        "handoff",
        "--compression",
        "kivi2",
        "--compress-at",
        "gpu",
        "--json",
    ]);
    assert_eq!(v["wire_bytes"].as_f64(), Some(268435456.0 * 3.0 / 16.0));
    // 4 ops per value in the link: 2 ops per input byte > 1.6, so the stage sets the time.
    let v = ok_json(&["handoff", "--compression", "kivi2", "--json"]);
    assert_eq!(v["transit_bound"], true);
    // int8's scale depends on the shape: Llama-3-70B has the same W, OPT-13B a wider one.
    let v = ok_json(&[
        "handoff",
        "--model",
        "opt-13b",
        "--compression",
        "int8",
        "--json",
    ]);
    assert_eq!(v["compression_ratio"].as_f64(), Some(10240.0 / 5122.0));
}

#[test]
fn concurrent_hand_offs_share_the_link() {
    // Two hand-offs at once on one 25 GbE channel: fair sharing lands both at twice the wire
    // time (+ latency); FIFO lands the second after two whole transfers.
    let v = ok_json(&[
        "handoff",
        "--concurrent",
        "2",
        "--link-sharing",
        "fair",
        "--json",
    ]);
    assert_eq!(
        v["transfer_s"].as_f64(),
        Some(20e-6 + 2.0 * (268435456.0 / 3.125e9))
    );
    assert_eq!(v["link_sharing"], "fair");
    let v = ok_json(&["handoff", "--concurrent", "2", "--json"]);
    assert_eq!(v["transfer_s"].as_f64(), Some(2.0 * 0.08591934592));
    // Two channels: the pair goes side by side either way.
    let v = ok_json(&[
        "handoff",
        "--concurrent",
        "2",
        "--link-channels",
        "2",
        "--link-sharing",
        "fair",
        "--json",
    ]);
    assert_eq!(v["transfer_s"].as_f64(), Some(0.08591934592));
    // Layer-wise, FIFO: the second waits for the first to land, then sends all of its KV.
    let one = ok_json(&["handoff", "--send", "layerwise", "--json"]);
    let two = ok_json(&[
        "handoff",
        "--send",
        "layerwise",
        "--concurrent",
        "2",
        "--json",
    ]);
    let e1 = one["exposed_s"].as_f64().unwrap();
    // (stream + wait) - (L-1)/L * T, with wait = e1 + (L-1)/L * T: equal up to rounding.
    let want = 20e-6 + (268435456.0 / 3.125e9 + e1);
    let got = two["exposed_s"].as_f64().unwrap();
    assert!(((got - want) / want).abs() < 1e-15, "{got} vs {want}");
    // --concurrent 1 is the plain calculator.
    let plain = ok_json(&["handoff", "--json"]);
    let c1 = ok_json(&[
        "handoff",
        "--concurrent",
        "1",
        "--link-sharing",
        "fair",
        "--json",
    ]);
    assert_eq!(plain["exposed_s"], c1["exposed_s"]);
    bad(
        &["handoff", "--link-sharing", "polite"],
        &["polite", "fair"],
    );
    bad(&["handoff", "--concurrent", "0"], &["--concurrent"]);
}
