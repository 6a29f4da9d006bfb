//! The API in process: every endpoint, the chapter's numbers, every error class.

use std::time::Duration;

use disagg_model::Catalogue;
use disagg_web::{handle, Api, Limits, Response};
use serde_json::{json, Value};

fn call(method: &str, path: &str, body: Value) -> Response {
    handle(method, path, body.to_string().as_bytes())
}

fn ok(method: &str, path: &str, body: Value) -> Value {
    let r = call(method, path, body.clone());
    assert_eq!(r.status, 200, "{method} {path} {body}: {}", r.text());
    assert_eq!(r.content_type, "application/json");
    serde_json::from_slice(&r.body).expect("JSON")
}

/// Expects `status` and a one-line JSON error containing every needle; returns the error object.
fn err(method: &str, path: &str, body: &[u8], status: u16, needles: &[&str]) -> Value {
    let r = handle(method, path, body);
    let text = r.text();
    assert_eq!(r.status, status, "{method} {path}: {text}");
    assert_eq!(r.content_type, "application/json");
    assert_eq!(text.trim_end().lines().count(), 1, "not one line: {text}");
    let v: Value = serde_json::from_str(&text).expect("JSON error");
    let msg = v["error"].as_str().expect("error string");
    assert!(!msg.contains('\n'));
    for n in needles {
        assert!(msg.contains(n), "'{n}' not in: {msg}");
    }
    v
}

fn ms(v: &Value) -> String {
    format!("{:.1}", v.as_f64().expect("number") * 1e3)
}

#[test]
fn page_and_assets() {
    let r = handle("GET", "/", b"");
    assert_eq!(r.status, 200);
    assert!(r.content_type.starts_with("text/html"));
    assert!(r.text().contains("<html"));
    assert!(r
        .header("Content-Security-Policy")
        .unwrap()
        .contains("default-src 'self'"));
    assert_eq!(handle("GET", "/?calc.tokens=4096", b"").status, 200);
    assert_eq!(handle("HEAD", "/", b"").status, 200);
    for p in ["/assets/app.js", "/assets/style.css"] {
        let r = handle("GET", p, b"");
        assert_eq!(r.status, 200, "{p}");
        assert!(!r.body.is_empty());
    }
    let html = handle("GET", "/", b"").text();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no remote assets"
    );
}

#[test]
fn catalogue_and_presets() {
    let c = ok("GET", "/api/catalogue", Value::Null);
    assert_eq!(c["models"][0]["key"], "llama3-8b");
    assert_eq!(c["models"][0]["kv_bytes_per_token"], 131072.0);
    assert!(c["devices"].as_array().unwrap().len() >= 6);
    assert_eq!(c["links"].as_array().unwrap().len(), 9);
    assert!(c["compression"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["key"] == "fp8"));
    assert_eq!(c["scenario_defaults"]["model"], "llama3-70b");
    assert_eq!(c["handoff_defaults"]["link"], "eth-25g");
    assert_eq!(c["limits"]["max_requests"], 200000);
    let p = ok("GET", "/api/presets", Value::Null);
    let names: Vec<&str> = p
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    for n in [
        "pools-h100-a100",
        "link-eth-25g",
        "eth25g-14rps",
        "eth25g-14rps-fp8",
    ] {
        assert!(names.contains(&n), "{n}");
    }
    let e = p
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "eth25g-14rps")
        .unwrap();
    assert_eq!(e["scenario"]["rate"], 14.0);
    assert_eq!(e["scenario"]["link"], "eth-25g");
}

#[test]
fn handoff_matches_the_chapter() {
    // 2,048 tokens of Llama-3-8B over 25 GbE: 85.9 ms; layer by layer 28.7 ms; with FP8 in the
    // link 1.36 ms (1.4 ms at one decimal).
    let v = ok(
        "POST",
        "/api/handoff",
        json!({"prompt_tokens": 2048, "link": "eth-25g"}),
    );
    assert_eq!(ms(&v["exposed_s"]), "85.9");
    assert_eq!(ms(&v["transfer_s"]), "85.9");
    assert_eq!(ms(&v["prefill_s"]), "59.0");
    assert_eq!(v["kv_bytes"], 268435456.0);
    assert_eq!(
        format!("{:.1}", v["link_saturation_rps"].as_f64().unwrap()),
        "11.6"
    );
    let v = ok(
        "POST",
        "/api/handoff",
        json!({"model": "llama3-8b", "prompt_tokens": 2048, "link": "eth-25g", "send": "layerwise"}),
    );
    assert_eq!(ms(&v["exposed_s"]), "28.7");
    let v = ok(
        "POST",
        "/api/handoff",
        json!({"send": "layerwise", "compression": "fp8"}),
    );
    // In the link: the stage's 1 µs on top of the chapter's 1.36 ms (the CLI's test's expression).
    assert_eq!(v["exposed_s"].as_f64(), Some(21e-6 + 0.04294967296 / 32.0));
    assert_eq!(ms(&v["exposed_s"]), "1.4");
    assert_eq!(v["compress_at"], "transit");
    // The echoed inputs and the row, with disagg handoff --json's keys in its order.
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "schema_version",
            "model",
            "model_name",
            "prompt_tokens",
            "compression",
            "compress_at",
            "send",
            "link_sharing",
            "concurrent",
            "prefill_device",
            "devices_per_instance",
            "link",
            "link_name",
            "link_bandwidth_bps",
            "link_latency_s",
            "link_pj_per_bit",
            "link_channels",
            "kv_bytes_per_token",
            "kv_bytes",
            "wire_bytes",
            "compression_ratio",
            "transfer_s",
            "prefill_s",
            "exposed_s",
            "link_saturation_rps",
            "link_capacity_rps",
            "link_energy_j",
            "transit_energy_j",
            "transit_bound"
        ]
    );
    // An empty body is every default.
    let r = handle("POST", "/api/handoff", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    // Every link, fastest first.
    let v = ok("POST", "/api/handoff", json!({"all_links": true}));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 9);
    assert_eq!(rows[0]["link"], "nvlink5");
    assert_eq!(ms(&rows[8]["exposed_s"]), "85.9");
    // The 70B on four H100s over InfiniBand, GPU compression, more channels.
    let v = ok(
        "POST",
        "/api/handoff",
        json!({"model": "llama3-70b", "prefill_device": "h100", "devices_per_instance": 4,
               "link": "ib-ndr", "compression": "fp4-block", "compress_at": "gpu", "link_channels": 2}),
    );
    assert_eq!(v["kv_bytes"], 671088640.0);
    assert_eq!(v["compress_at"], "endpoint");
    assert_eq!(v["link_channels"], 2);
}

#[test]
fn run_reproduces_section_15() {
    let v = ok(
        "POST",
        "/api/run",
        json!({"preset": "eth25g-14rps", "latency_samples": 500, "series": true}),
    );
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["tool"], "disagg");
    assert_eq!(v["scenario"]["rate"], 14.0);
    let s = &v["summary"];
    assert_eq!(s["handoff_s"]["p99"], 9.657760737543722);
    assert_eq!(
        format!("{:.1}", s["slo_attainment"].as_f64().unwrap() * 100.0),
        "41.0"
    );
    assert_eq!(
        format!("{:.1}", s["link_busy"].as_f64().unwrap() * 100.0),
        "94.0"
    );
    assert_eq!(ms(&s["tpot_s"]["p99"]), "77.2");
    // CDF samples: sorted, at most 500, ends kept.
    let ls = &v["latency_samples"];
    for k in ["ttft_s", "tpot_s", "handoff_s", "e2e_s"] {
        let a: Vec<f64> = ls[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert!(!a.is_empty() && a.len() <= 500, "{k}: {}", a.len());
        assert!(a.windows(2).all(|w| w[0] <= w[1]), "{k} sorted");
    }
    samples_agree_with_summary(&v);
    // Time series: link busy share in [0, 1], mean near the summary's.
    let se = &v["series"];
    let lb: Vec<f64> = se["link_busy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(lb.len() >= 50 && lb.len() <= 400, "{}", lb.len());
    assert!(lb.iter().all(|&x| (0.0..=1.0).contains(&x)));
    let dt = se["dt_s"].as_f64().unwrap();
    let busy: f64 = lb.iter().sum::<f64>() * dt;
    let horizon = s["horizon_s"].as_f64().unwrap();
    let frac = busy / horizon;
    assert!(
        (frac - s["link_busy"].as_f64().unwrap()).abs() < 0.02,
        "{frac}"
    );
    assert_eq!(se["instances"].as_array().unwrap().len(), 2);
    assert_eq!(se["instances"][0]["name"], "prefill-0");
    assert!(!se["link_queue"].as_array().unwrap().is_empty());
}

#[test]
fn run_defaults_and_overrides() {
    // Nothing given: the CLI's defaults (the reference's: Llama-3-70B on 4x H100, 800 requests).
    let v = ok("POST", "/api/run", json!({"requests": 50, "fast": true}));
    assert_eq!(v["scenario"]["model"], "llama3-70b");
    assert_eq!(v["summary"]["requests"]["completed"], 50);
    assert!(v.get("latency_samples").is_none() && v.get("series").is_none());
    // A preset with a field changed.
    let v = ok(
        "POST",
        "/api/run",
        json!({"preset": "eth25g-14rps-fp8", "requests": 200, "rate": 10}),
    );
    assert_eq!(v["scenario"]["kv_compress"], "fp8");
    assert_eq!(v["scenario"]["rate"], 10.0);
    assert_eq!(v["summary"]["link"]["compression"], "fp8");
    // Server-Timing tells how long the simulation took.
    let r = call("POST", "/api/run", json!({"preset": "link-ib-ndr"}));
    assert!(r.header("Server-Timing").unwrap().starts_with("sim;dur="));
}

#[test]
fn sweep_runs_every_rate() {
    let v = ok(
        "POST",
        "/api/sweep",
        json!({"preset": "link-eth-25g", "rates": [4, 8, 14], "requests": 400}),
    );
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[2]["rate"], 14.0);
    assert_eq!(runs[0]["summary"]["requests"]["completed"], 400);
    // The same as one /api/run at that rate.
    let one = ok(
        "POST",
        "/api/run",
        json!({"preset": "link-eth-25g", "rate": 8, "requests": 400}),
    );
    assert_eq!(runs[1]["summary"], one["summary"]);
    let v = ok(
        "POST",
        "/api/sweep",
        json!({"preset": "eth25g-14rps", "rates": [14], "compact": true}),
    );
    assert_eq!(v["runs"][0]["handoff_p99_s"], 9.657760737543722);
    assert!(v["runs"][0].get("summary").is_none());
}

#[test]
fn malformed_json_is_400() {
    for body in [&b"{"[..], b"{\"rate\": }", b"nonsense", b"{\"a\":1}x"] {
        err("POST", "/api/run", body, 400, &["malformed JSON"]);
    }
    err(
        "POST",
        "/api/handoff",
        b"[1, 2]",
        400,
        &["must be a JSON object", "an array"],
    );
    err("POST", "/api/sweep", b"\"rates\"", 400, &["JSON object"]);
}

#[test]
fn unknown_fields_are_400_naming_the_field() {
    let e = err(
        "POST",
        "/api/run",
        br#"{"rate": 4, "warp_drive": true}"#,
        400,
        &["unknown field", "warp_drive"],
    );
    assert_eq!(e["field"], "warp_drive");
    let e = err(
        "POST",
        "/api/handoff",
        br#"{"tokens": 4}"#,
        400,
        &["unknown field", "tokens"],
    );
    assert_eq!(e["field"], "tokens");
    err(
        "POST",
        "/api/sweep",
        br#"{"rates": [1], "nope": 1}"#,
        400,
        &["nope"],
    );
}

#[test]
fn wrong_types_are_400_naming_the_field() {
    let e = err(
        "POST",
        "/api/run",
        br#"{"rate": "fast"}"#,
        400,
        &["field 'rate'", "expected a number", "\"fast\""],
    );
    assert_eq!(e["field"], "rate");
    let e = err(
        "POST",
        "/api/run",
        br#"{"model": "llama3-8b", "requests": -5}"#,
        400,
        &["requests"],
    );
    assert_eq!(e["field"], "requests");
    err(
        "POST",
        "/api/run",
        br#"{"requests": 1.5}"#,
        400,
        &["requests"],
    );
    err("POST", "/api/run", br#"{"preset": 3}"#, 400, &["preset"]);
    err(
        "POST",
        "/api/run",
        br#"{"series": "yes"}"#,
        400,
        &["series"],
    );
    err(
        "POST",
        "/api/run",
        br#"{"latency_samples": -1}"#,
        400,
        &["latency_samples"],
    );
    let e = err(
        "POST",
        "/api/handoff",
        br#"{"prompt_tokens": "2048"}"#,
        400,
        &["prompt_tokens"],
    );
    assert_eq!(e["field"], "prompt_tokens");
    err(
        "POST",
        "/api/handoff",
        br#"{"all_links": 1}"#,
        400,
        &["all_links"],
    );
    err(
        "POST",
        "/api/sweep",
        br#"{"rates": "4,8"}"#,
        400,
        &["rates"],
    );
    err(
        "POST",
        "/api/sweep",
        br#"{"rates": [4, "x"]}"#,
        400,
        &["rates"],
    );
}

#[test]
fn invalid_values_are_422() {
    let e = err(
        "POST",
        "/api/run",
        br#"{"rate": -1}"#,
        422,
        &["rate", "positive"],
    );
    assert_eq!(e["field"], "rate");
    let e = err(
        "POST",
        "/api/run",
        br#"{"model": "gpt-9"}"#,
        422,
        &["gpt-9", "llama3-8b"],
    );
    assert_eq!(e["field"], "model");
    err(
        "POST",
        "/api/run",
        br#"{"link_channels": 0}"#,
        422,
        &["link_channels"],
    );
    err(
        "POST",
        "/api/run",
        br#"{"preset": "nope"}"#,
        422,
        &["preset", "eth25g-14rps"],
    );
    err(
        "POST",
        "/api/run",
        br#"{"mode": "colocated", "kv_compress": "fp8"}"#,
        422,
        &["kv_compress"],
    );
    err(
        "POST",
        "/api/handoff",
        br#"{"prompt_tokens": 0}"#,
        422,
        &["prompt_tokens", "at least 1"],
    );
    err(
        "POST",
        "/api/handoff",
        br#"{"link": "carrier-pigeon"}"#,
        422,
        &["link", "eth-25g"],
    );
    err(
        "POST",
        "/api/handoff",
        br#"{"send": "later"}"#,
        422,
        &["send", "layerwise"],
    );
    err(
        "POST",
        "/api/handoff",
        br#"{"compression": "zip"}"#,
        422,
        &["compression", "fp8"],
    );
    err(
        "POST",
        "/api/handoff",
        br#"{"compress_at": "moon"}"#,
        422,
        &["compress_at"],
    );
    err(
        "POST",
        "/api/handoff",
        br#"{"kv_keep": 0.5}"#,
        422,
        &["kv_keep", "freq-keep-k"],
    );
    err(
        "POST",
        "/api/handoff",
        br#"{"link_channels": 5000}"#,
        422,
        &["link_channels"],
    );
    err("POST", "/api/sweep", br#"{"rates": []}"#, 422, &["rates"]);
    err("POST", "/api/sweep", br#"{}"#, 422, &["rates"]);
    let e = err(
        "POST",
        "/api/sweep",
        br#"{"rates": [4, -2]}"#,
        422,
        &["rates[1]", "rate"],
    );
    assert_eq!(e["field"], "rates");
}

#[test]
fn over_a_limit_is_413_naming_it() {
    let e = err(
        "POST",
        "/api/run",
        br#"{"requests": 200001}"#,
        413,
        &["max_requests", "200000"],
    );
    assert_eq!(e["limit"], "max_requests");
    assert_eq!(e["max"], 200000);
    let rates: Vec<f64> = (1..=33).map(f64::from).collect();
    let body = json!({"rates": rates}).to_string();
    let e = err(
        "POST",
        "/api/sweep",
        body.as_bytes(),
        413,
        &["max_sweep_points", "32"],
    );
    assert_eq!(e["limit"], "max_sweep_points");
    let rates: Vec<f64> = (1..=32).map(f64::from).collect();
    let body = json!({"rates": rates, "requests": 100000}).to_string();
    err(
        "POST",
        "/api/sweep",
        body.as_bytes(),
        413,
        &["max_sweep_requests"],
    );
    err(
        "POST",
        "/api/run",
        br#"{"latency_samples": 501}"#,
        413,
        &["max_latency_samples"],
    );
    let big = format!("{{\"model\": \"{}\"}}", "x".repeat(70_000));
    err("POST", "/api/run", big.as_bytes(), 413, &["max_body_bytes"]);
}

#[test]
fn over_the_time_limit_is_413() {
    let api = Api::new(
        Catalogue::builtin(),
        Limits {
            time_limit: Duration::from_millis(1),
            ..Limits::default()
        },
    );
    let r = api.handle(
        "POST",
        "/api/run",
        br#"{"preset": "link-ib-ndr", "requests": 100000}"#,
    );
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.text().contains("time_limit_s"));
    let r = api.handle(
        "POST",
        "/api/sweep",
        br#"{"preset": "link-ib-ndr", "requests": 50000, "rates": [4, 6, 8]}"#,
    );
    assert_eq!(r.status, 413, "{}", r.text());
    // The API still answers afterwards (the limit now covers the whole call, so a quick endpoint).
    let r = api.handle("POST", "/api/handoff", br#"{"link": "ib-ndr"}"#);
    assert_eq!(r.status, 200);
}

#[test]
fn the_time_limit_covers_the_whole_call() {
    // Two requests are far fewer events than the simulation's clock check needs (one per 1,024
    // events): only a check over the whole call (workload, simulation, summary) sees time up.
    let api = Api::new(
        Catalogue::builtin(),
        Limits {
            time_limit: Duration::ZERO,
            ..Limits::default()
        },
    );
    for (path, body) in [
        (
            "/api/run",
            &br#"{"preset": "link-ib-ndr", "requests": 2}"#[..],
        ),
        (
            "/api/run",
            br#"{"preset": "link-ib-ndr", "requests": 2, "latency_samples": 10, "series": true}"#,
        ),
        (
            "/api/sweep",
            br#"{"preset": "link-ib-ndr", "requests": 2, "rates": [4]}"#,
        ),
    ] {
        let r = api.handle("POST", path, body);
        assert_eq!(r.status, 413, "{path}: {}", r.text());
        assert!(r.text().contains("time_limit_s"));
    }
    let r = handle(
        "POST",
        "/api/run",
        br#"{"preset": "link-ib-ndr", "requests": 2}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn unknown_path_is_404_and_wrong_method_405() {
    err(
        "GET",
        "/api/nothing",
        b"",
        404,
        &["no such path", "/api/run"],
    );
    err("GET", "/favicon.ico", b"", 404, &["no such path"]);
    err("POST", "/nope", b"{}", 404, &["no such path"]);
    for (m, p, allow) in [
        ("GET", "/api/run", "POST"),
        ("PUT", "/api/handoff", "POST"),
        ("DELETE", "/api/sweep", "POST"),
        ("POST", "/api/catalogue", "GET, HEAD"),
        ("POST", "/api/presets", "GET, HEAD"),
        ("POST", "/", "GET, HEAD"),
    ] {
        let r = handle(m, p, b"{}");
        assert_eq!(r.status, 405, "{m} {p}");
        assert_eq!(r.header("Allow"), Some(allow));
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert!(v["error"].as_str().unwrap().contains("method not allowed"));
    }
}

#[test]
fn hostile_input_never_kills_it() {
    for body in [
        &br#"{"rate": 1e308}"#[..],
        br#"{"prompt": 1e9, "requests": 3}"#,
        br#"{"requests": 18446744073709551615}"#,
        br#"{"devices_per_instance": 4294967295}"#,
        br#"{"prefill": 1024, "decode": 1024, "requests": 5}"#,
        br#"{"prompt_cv": 100, "output_cv": 100, "requests": 20, "fast": true}"#,
        br#"{"model": "\u0000"}"#,
        b"\xff\xfe",
        br#"{"rate": null}"#,
    ] {
        let r = handle("POST", "/api/run", body);
        assert!(
            [200, 400, 413, 422].contains(&r.status),
            "{}: {} {}",
            String::from_utf8_lossy(body),
            r.status,
            r.text()
        );
        let _: Value = serde_json::from_slice(&r.body).expect("JSON");
    }
    for body in [
        &br#"{"prompt_tokens": 4294967295, "model": "llama3-70b"}"#[..],
        br#"{"prompt_tokens": 18446744073709551615}"#,
        br#"{"devices_per_instance": 4294967295}"#,
        br#"{"kv_keep": 0, "compression": "freq-keep-k"}"#,
        br#"{"kv_keep": 1e-300, "compression": "freq-keep-k", "send": "layerwise"}"#,
    ] {
        let r = handle("POST", "/api/handoff", body);
        assert!([200, 400, 422].contains(&r.status), "{}", r.text());
    }
}

/// The CDF samples are the summary's samples: the same count, the same largest value.
fn samples_agree_with_summary(v: &Value) {
    let (ls, s) = (&v["latency_samples"], &v["summary"]);
    for k in ["ttft_s", "tpot_s", "e2e_s"] {
        let last = ls[k].as_array().unwrap().last().unwrap();
        assert_eq!(last, &s[k]["max"], "{k}");
    }
    assert_eq!(ls["counts"]["ttft_s"], s["requests"]["measured"]);
    let h = ls["handoff_s"].as_array().unwrap();
    assert!(h.last().unwrap().as_f64() >= s["handoff_s"]["p99"].as_f64());
}

#[test]
fn engine_options_flow_through_or_are_400() {
    // Options the engine gained recently (send, link sharing, first-token convention, ...) pass
    // through as Scenario fields; an engine without them answers 400 naming the field.
    let defaults = ok("GET", "/api/catalogue", Value::Null)["scenario_defaults"].clone();
    for (k, val) in [
        ("send", "layerwise"),
        ("link_sharing", "fair"),
        ("first_token", "decode"),
        ("reserve_kv_on", "transfer"),
        ("link_topology", "per-prefill"),
    ] {
        let body = json!({"preset": "eth25g-14rps", k: val, "latency_samples": 500});
        let r = call("POST", "/api/run", body);
        if defaults.get(k).is_some() {
            assert_eq!(r.status, 200, "{k}: {}", r.text());
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(v["scenario"][k], val);
            samples_agree_with_summary(&v);
        } else {
            assert_eq!(r.status, 400, "{k}: {}", r.text());
            assert!(r.text().contains("unknown field"));
        }
    }
}

#[test]
fn the_api_reads_no_files_and_runs_named_workloads() {
    err(
        "POST",
        "/api/run",
        br#"{"trace_file": "/etc/passwd"}"#,
        422,
        &["trace_file", "does not read files"],
    );
    let v = ok(
        "POST",
        "/api/run",
        json!({"model": "llama3-8b", "devices_per_instance": 1, "workload": "chat", "rate": 1, "requests": 60}),
    );
    assert_eq!(v["summary"]["workload"]["name"], "chat");
    assert!(
        v["summary"]["workload"]["closed_loop_turns"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn the_scheduling_levers_are_checked_like_the_cli() {
    // Names, ranges and combinations: 422 naming the field and what is valid (issue 12).
    for (body, field, needles) in [
        (
            &br#"{"kv_policy": "lru"}"#[..],
            "kv_policy",
            &["lru", "oracle, pow2, max, paged"][..],
        ),
        (
            br#"{"batch_policy": "fcfs"}"#,
            "batch_policy",
            &["fcfs", "prefill-priority, decode-priority, chunked"],
        ),
        (
            br#"{"preemption": "drop"}"#,
            "preemption",
            &["drop", "recompute, swap"],
        ),
        (br#"{"gamma": 0}"#, "gamma", &["1 to 64"]),
        (br#"{"alpha": 1.5}"#, "alpha", &["[0, 1]"]),
        (br#"{"kv_block_size": 0}"#, "kv_block_size", &["1 to 65536"]),
        (
            br#"{"max_num_batched_tokens": 0}"#,
            "max_num_batched_tokens",
            &["1 to 100000000"],
        ),
        (
            br#"{"host_link": "pcie6"}"#,
            "host_link",
            &["pcie6", "pcie4"],
        ),
        (
            br#"{"batch_policy": "chunked", "fast": true}"#,
            "fast",
            &["scheduling levers"],
        ),
        (
            br#"{"prefix_caching": true, "kv_policy": "paged", "preemption": "swap"}"#,
            "prefix_caching",
            &["swap", "recompute"],
        ),
    ] {
        let e = err("POST", "/api/run", body, 422, needles);
        assert_eq!(e["field"], field, "{e}");
    }
    // The page has the group and a field for each option.
    let js = handle("GET", "/assets/app.js", b"").text();
    // The page takes its groups from the catalogue's option table.
    let cat = ok("GET", "/api/catalogue", Value::Null);
    assert!(cat["page_groups"]
        .as_array()
        .unwrap()
        .contains(&json!("Scheduling and KV memory")));
    let group_of = |k: &str| {
        cat["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["key"] == k)
            .map(|o| o["group"].clone())
    };
    for k in [
        "batch_policy",
        "max_num_batched_tokens",
        "kv_policy",
        "kv_block_size",
        "max_seq_len",
        "preemption",
        "host_link",
        "prefix_caching",
        "speculative",
        "gamma",
        "alpha",
        "spec_seed",
    ] {
        assert!(js.contains(&format!("{{ k: '{k}', ")), "{k}");
        assert_eq!(group_of(k), Some(json!("Scheduling and KV memory")), "{k}");
    }
    // The defaults the page starts from are the reference's.
    let c = ok("GET", "/api/catalogue", Value::Null);
    let d = &c["scenario_defaults"];
    assert_eq!(d["batch_policy"], "prefill-priority");
    assert_eq!(d["max_num_batched_tokens"], Value::Null);
    assert_eq!(d["kv_policy"], "oracle");
    assert_eq!(d["kv_block_size"], 16);
    assert_eq!(d["host_link"], "pcie5");
    assert_eq!(d["alpha"], 0.7);
}

#[test]
fn the_later_lever_options_are_accepted_and_echoed() {
    // Each key the page gained (issue 12) with a non-default value: 200, and the run's scenario
    // echoes it (the quiet keys are echoed once they differ from their defaults).
    let base = json!({"requests": 40, "fast": false});
    for (extra, key, want) in [
        (
            json!({"kv_policy": "paged", "preemption": "swap", "swap_in": "next-step"}),
            "swap_in",
            json!("next-step"),
        ),
        (
            json!({"prefix_caching": true, "prefix_handoff": true}),
            "prefix_handoff",
            json!(true),
        ),
        (
            json!({"prefix_caching": true, "prefix_handoff": true, "decode_router": "prefix"}),
            "decode_router",
            json!("prefix"),
        ),
        (json!({"max_decode_batch": 8}), "max_decode_batch", json!(8)),
        (json!({"prompt_min": 100}), "prompt_min", json!(100)),
        (json!({"prompt_max": 3000}), "prompt_max", json!(3000)),
        (json!({"output_min": 20}), "output_min", json!(20)),
        (json!({"output_max": 300}), "output_max", json!(300)),
    ] {
        let mut body = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let v = ok("POST", "/api/run", body);
        assert_eq!(v["scenario"][key], want, "{key}");
    }
    // The generator's bounds hold: with prompts clipped to [100, 3000] and outputs to [20, 300],
    // every sampled request lies inside them.
    let v = ok(
        "POST",
        "/api/run",
        json!({"requests": 40, "prompt_min": 1500, "prompt_max": 1500, "output_min": 7,
               "output_max": 7}),
    );
    // 40 prompts of exactly 1500 tokens: llama3-70b's KV is 80 layers x 8 KV heads x 128 x 2
    // (K, V) x 2 bytes = 327680 bytes per token, so the link carried 40 x 1500 x 327680 bytes.
    let s = &v["summary"];
    assert_eq!(s["workload"]["prompt_cap_tokens"], json!(1500), "{s}");
    assert_eq!(s["link"]["bytes"], json!(40.0 * 1500.0 * 327680.0), "{s}");
    // 7-token outputs: the first comes from prefill, so each request takes 6 decode steps; the
    // requests never share a decode batch (mean batch 1), so 40 x 6 = 240 steps.
    let d = &s["instances"][1];
    assert_eq!(
        (d["role"].clone(), d["mean_batch"].clone()),
        (json!("decode"), json!(1.0))
    );
    assert_eq!(d["steps"], json!(240), "{d}");
    // The hand-off figures show in the scheduler block the page draws.
    let v = ok(
        "POST",
        "/api/run",
        json!({"requests": 40, "fast": false, "prefix_caching": true, "prefix_handoff": true,
               "workload": "chat"}),
    );
    let h = &v["summary"]["scheduler"]["prefix_handoff"];
    assert_eq!(h["handoffs"], json!(40), "{h}");
    assert_eq!(h["decode_router"], "least-loaded");
}

#[test]
fn the_later_lever_options_are_checked_like_the_cli() {
    // Refused values and combinations: 422, a one-line JSON error naming the option (field) and
    // what it needs.
    for (body, field, needles) in [
        (
            &br#"{"swap_in": "lazy"}"#[..],
            "swap_in",
            &["lazy", "own-blocks, next-step"][..],
        ),
        (
            br#"{"decode_router": "random"}"#,
            "decode_router",
            &["random", "least-loaded, prefix"],
        ),
        (
            br#"{"decode_router": "prefix", "prefix_caching": true}"#,
            "decode_router",
            &["needs prefix_handoff"],
        ),
        (
            br#"{"prefix_handoff": true}"#,
            "prefix_handoff",
            &["prefix_caching"],
        ),
        (
            br#"{"prefix_handoff": true, "prefix_caching": true, "mode": "colocated"}"#,
            "prefix_handoff",
            &["disagg"],
        ),
        (br#"{"max_decode_batch": 0}"#, "max_decode_batch", &["1 to"]),
        (br#"{"prompt_min": 0}"#, "prompt_min", &["1 to"]),
        (br#"{"output_max": 0}"#, "output_max", &["1 to"]),
        (
            br#"{"prompt_min": 4000, "prompt_max": 3000}"#,
            "prompt_min",
            &["prompt_max"],
        ),
        (
            br#"{"output_min": 400, "output_max": 300}"#,
            "output_min",
            &["output_max"],
        ),
    ] {
        let e = err("POST", "/api/run", body, 422, needles);
        assert_eq!(e["field"], field, "{e}");
    }
}

#[test]
fn the_page_has_the_later_lever_fields_and_their_help() {
    let js = handle("GET", "/assets/app.js", b"").text();
    for k in [
        "max_decode_batch",
        "swap_in",
        "prefix_handoff",
        "decode_router",
        "prompt_min",
        "prompt_max",
        "output_min",
        "output_max",
    ] {
        assert!(js.contains(&format!("{{ k: '{k}', ")), "{k}");
    }
    // prefix_from_trace needs a trace file, which the page does not offer.
    assert!(!js.contains("prefix_from_trace"));
    // The catalogue carries each option's --help line (text, then the default in brackets),
    // the fields' descriptions; written out here from the option table.
    let c = ok("GET", "/api/catalogue", Value::Null);
    let help = &c["option_help"];
    assert_eq!(
        help["swap_in"],
        "Swap preemption: a swapped-out row comes back when its own blocks fit (own-blocks, the \
         reference, which can swap it straight out again) or only when its next step's blocks \
         fit too (next-step: no swap thrash) [own-blocks]"
    );
    assert_eq!(
        help["max_decode_batch"],
        "Most sequences running on a colocated or decode instance [256]"
    );
    assert_eq!(
        help["prompt_min"],
        "Shortest generated prompt: shorter draws are raised to it, tokens [1]"
    );
    // A switch has no default in brackets.
    assert!(help["prefix_handoff"]
        .as_str()
        .unwrap()
        .ends_with("(needs --prefix-caching, disaggregated mode)"));
    // One entry per scenario key the defaults carry (the custom hardware keys are unset there).
    for k in c["scenario_defaults"].as_object().unwrap().keys() {
        assert!(help[k].is_string(), "{k}");
    }
    // The defaults the new fields start from.
    let d = &c["scenario_defaults"];
    assert_eq!(d["swap_in"], "own-blocks");
    assert_eq!(d["prefix_handoff"], false);
    assert_eq!(d["decode_router"], "least-loaded");
    assert_eq!(d["max_decode_batch"], 256);
    assert_eq!(
        (d["prompt_min"].clone(), d["prompt_max"].clone()),
        (json!(1), json!(32768))
    );
    assert_eq!(
        (d["output_min"].clone(), d["output_max"].clone()),
        (json!(1), json!(32768))
    );
}

#[test]
fn parallel_layouts_and_formats_flow_through_the_api() {
    // The scenario keys of the cost levers (`docs/cost-model.md#parallelism`, `docs/cost-model.md#quantisation`) through serde: 200, echoed,
    // and the run's parallel and formats blocks.
    let v = ok(
        "POST",
        "/api/run",
        json!({"requests": 60, "tp": 4, "weight_format": "fp8", "kv_format": "fp8"}),
    );
    let sc = &v["scenario"];
    assert_eq!(
        (sc["tp"].clone(), sc["weight_format"].clone()),
        (json!(4), json!("fp8"))
    );
    let s = &v["summary"];
    // One block per pool, each with the global layout: tp 4 x pp 1 on the default 4 GPUs.
    let par = s["parallel"].as_array().expect("parallel blocks");
    assert_eq!(par.len(), 2, "{par:?}");
    for (b, role) in par.iter().zip(["prefill", "decode"]) {
        assert_eq!(b["role"], role);
        assert_eq!((b["tp"].clone(), b["pp"].clone()), (json!(4), json!(1)));
    }
    // FP8 weights and KV cache: 1 byte a value each; compute stays BF16 (weight-only).
    let f = &s["formats"];
    assert_eq!(
        (f["weights"].clone(), f["kv"].clone(), f["compute"].clone()),
        (json!("fp8"), json!("fp8"), json!("bf16"))
    );
    assert_eq!(
        (f["weight_bytes"].as_f64(), f["kv_bytes"].as_f64()),
        (Some(1.0), Some(1.0))
    );
    // The same run built in process from the scenario (not through JSON) gives the same summary.
    let direct = disagg_sim::Scenario {
        requests: 60,
        tp: Some(4),
        weight_format: disagg_model::QuantFormat::Fp8,
        kv_format: disagg_model::QuantFormat::Fp8,
        ..disagg_sim::Scenario::default()
    };
    let cfg = direct.build(&Catalogue::builtin()).expect("valid");
    let want = serde_json::to_value(disagg_sim::simulate_config(&cfg).unwrap().summary()).unwrap();
    assert_eq!(s["e2e_s"], want["e2e_s"]);
    assert_eq!(s["j_per_token"], want["j_per_token"]);
    // Per-pool layouts with their device counts, pipeline stages and micro-batches.
    let v = ok(
        "POST",
        "/api/run",
        json!({"requests": 40, "prefill_tp": 2, "prefill_pp": 2, "decode_tp": 8,
               "decode_devices_per_instance": 8, "microbatches": 2}),
    );
    let par = &v["summary"]["parallel"];
    assert_eq!(
        (
            par[0]["tp"].clone(),
            par[0]["pp"].clone(),
            par[0]["microbatches"].clone()
        ),
        (json!(2), json!(2), json!(2))
    );
    assert_eq!(
        (par[1]["tp"].clone(), par[1]["pp"].clone()),
        (json!(8), json!(1))
    );
    // Without the levers, neither block.
    let v = ok("POST", "/api/run", json!({"requests": 20}));
    assert!(v["summary"].get("parallel").is_none() && v["summary"].get("formats").is_none());
}

#[test]
fn bad_parallel_and_format_values_name_the_key() {
    for (body, status, field, needles) in [
        (
            &br#"{"weight_format": "fp9"}"#[..],
            422,
            "weight_format",
            &["fp9", "bf16, fp8, int8, int4, fp4"][..],
        ),
        (
            br#"{"kv_format": "int3"}"#,
            422,
            "kv_format",
            &["int3", "bf16, fp8"],
        ),
        (br#"{"tp": "four"}"#, 400, "tp", &["tp"]),
        (br#"{"pp": -1}"#, 400, "pp", &["pp"]),
        (br#"{"tp": 2000}"#, 422, "tp", &["tp", "0 to 1024"]),
    ] {
        let e = err("POST", "/api/run", body, status, needles);
        assert_eq!(e["field"], field, "{e}");
    }
    // Refused combinations: 422 with the engine's message, which names the pool (the model
    // crate's message carries no flag, so there is no `field`).
    for (body, needles) in [
        // FP8 matmuls on a device without FP8 units; the message names the key to change.
        (
            &br#"{"device": "a100", "compute_format": "fp8", "weight_format": "fp8"}"#[..],
            &[
                "prefill pool: A100-SXM has no fp8 units",
                "compute_format='bf16'",
            ][..],
        ),
        // A layout that does not match the devices per instance: the devices it needs.
        (
            br#"{"tp": 2}"#,
            &["prefill pool: parallel tp=2 x pp=1 needs 2 devices per instance (got 4)"],
        ),
    ] {
        let e = err("POST", "/api/run", body, 422, needles);
        assert!(e.get("field").is_none(), "{e}");
    }
}

#[test]
fn the_page_has_the_parallel_and_format_fields() {
    let js = handle("GET", "/assets/app.js", b"").text();
    // The page takes its groups from the catalogue's option table.
    let cat = ok("GET", "/api/catalogue", Value::Null);
    assert!(cat["page_groups"]
        .as_array()
        .unwrap()
        .contains(&json!("Parallelism and formats")));
    let group_of = |k: &str| {
        cat["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["key"] == k)
            .map(|o| o["group"].clone())
    };
    for k in [
        "tp",
        "pp",
        "weight_format",
        "kv_format",
        "compute_format",
        "fast",
    ] {
        assert!(js.contains(&format!("{{ k: '{k}', ")), "{k}");
        if k != "fast" {
            assert_eq!(group_of(k), Some(json!("Parallelism and formats")), "{k}");
        }
    }
    // The results card the parallel and formats blocks are drawn in.
    let html = handle("GET", "/", b"").text();
    assert!(html.contains(r#"id="levers-card" hidden"#));
    assert!(html.contains(r#"<tbody id="levers-body"></tbody>"#));
    // The format names the selects offer, in the reference's order (`docs/cost-model.md#quantisation`).
    let c = ok("GET", "/api/catalogue", Value::Null);
    assert_eq!(c["formats"], json!(["bf16", "fp8", "int8", "int4", "fp4"]));
    let help = &c["option_help"];
    assert_eq!(
        help["tp"],
        "Tensor-parallel degree of every pool's instances (devices per instance must equal tp x \
         pp; ring all-reduces on the scale-up link) [1]"
    );
    assert_eq!(
        help["kv_format"],
        "KV cache format (also the hand-off's bytes): bf16, fp8, int8, int4 or fp4 [bf16]"
    );
    let d = &c["scenario_defaults"];
    assert_eq!(d["weight_format"], "bf16");
    assert_eq!(d["tp"], Value::Null);
}

#[test]
fn optical_and_ppa_blocks_flow_through_the_api() {
    // An FFT-mixing model on optical transform engines for prefill, --ppa (`docs/levers.md#fft-mixing`,
    // `docs/levers.md#ppa`): the scenario keys through serde, and the run's optical and ppa blocks.
    let v = ok(
        "POST",
        "/api/run",
        json!({"model": "llama3-8b-hyena-circ", "prefill_device": "optical-fft", "ppa": true,
               "devices_per_instance": 1, "requests": 50}),
    );
    let sc = &v["scenario"];
    assert_eq!(
        (sc["ppa"].clone(), sc["prefill_device"].clone()),
        (json!(true), json!("optical-fft"))
    );
    let s = &v["summary"];
    let h = s["horizon_s"].as_f64().expect("horizon");
    assert!(h > 0.0);
    // One optical entry per instance, in instance order.
    let opt = s["optical"].as_array().expect("optical block");
    let inst = s["instances"].as_array().expect("instances");
    assert_eq!(opt.len(), inst.len());
    let mut prefills = 0;
    for (o, i) in opt.iter().zip(inst) {
        assert_eq!(o["name"], i["name"]);
        let name = o["name"].as_str().unwrap();
        let (frac, flops) = (
            o["optical_bound_frac"].as_f64().unwrap(),
            o["optical_flops"].as_f64().unwrap(),
        );
        let (conv, stat) = (
            o["conversion_j"].as_f64().unwrap(),
            o["static_j"].as_f64().unwrap(),
        );
        if name.starts_with("prefill-") {
            prefills += 1;
            // The engine took transform work and spent conversion energy; its static energy is
            // the default 20 W a device x 1 device x the horizon.
            assert!(flops > 0.0 && conv > 0.0, "{o}");
            assert!((0.0..=1.0).contains(&frac), "{o}");
            assert_eq!(stat, 20.0 * 1.0 * h, "{o}");
        } else {
            // The H100 decode instances have no engine: all zero.
            assert!(name.starts_with("decode-"), "{o}");
            assert_eq!((frac, flops, conv, stat), (0.0, 0.0, 0.0, 0.0), "{o}");
        }
    }
    assert!(prefills > 0);
    // The energy breakdown's optical shares: static is the sum of the instances' static energy.
    let e = &s["energy"];
    let want_static: f64 = opt.iter().map(|o| o["static_j"].as_f64().unwrap()).sum();
    assert_eq!(e["optical_static_j"].as_f64(), Some(want_static));
    assert!(e["optical_conversions_j"].as_f64().unwrap() > 0.0);
    // The ppa block: one line per pool, totals summed in role order, the ratios of `docs/levers.md#ppa`.
    let p = &s["ppa"];
    let pools = p["pools"].as_object().expect("pools");
    assert_eq!(pools.keys().collect::<Vec<_>>(), ["prefill", "decode"]);
    let (mut mm2, mut usd) = (0.0, 0.0);
    for role in ["prefill", "decode"] {
        let l = &pools[role];
        assert_eq!(l["devices_per_instance"], json!(1));
        let n = l["instances"].as_f64().unwrap();
        mm2 += n * l["mm2_per_instance"].as_f64().unwrap();
        usd += n * l["usd_per_instance"].as_f64().unwrap();
    }
    assert_eq!(pools["prefill"]["device"], sc_device_name("optical-fft"));
    assert_eq!(p["total_mm2"].as_f64(), Some(mm2));
    assert_eq!(p["total_usd"].as_f64(), Some(usd));
    assert_eq!(p["perf_per_W"], s["tokens_per_j"]);
    let tput = s["throughput_tok_s"].as_f64().unwrap();
    assert_eq!(p["perf_per_mm2"].as_f64(), Some(tput / mm2));
    assert_eq!(p["perf_per_kusd"].as_f64(), Some((1e3 * tput) / usd));
    // The other keys of the page's group go through serde and are echoed.
    let v = ok(
        "POST",
        "/api/run",
        json!({"model": "llama3-8b-hyena-circ", "prefill_device": "optical-fft",
               "devices_per_instance": 1, "requests": 20, "ft_enob": 6, "ft_mask_rate": 500.0,
               "ft_overlap": true, "fft_efficiency": 0.5}),
    );
    let sc = &v["scenario"];
    assert_eq!(
        (
            sc["ft_enob"].clone(),
            sc["ft_mask_rate"].clone(),
            sc["ft_overlap"].clone(),
            sc["fft_efficiency"].clone()
        ),
        (json!(6), json!(500.0), json!(true), json!(0.5))
    );
    assert!(v["summary"]["optical"].is_array());
    assert!(v["summary"].get("ppa").is_none());
    // Without an engine device or --ppa, neither block: the default run stays as it was.
    let s = &ok("POST", "/api/run", json!({"requests": 20}))["summary"];
    assert!(s.get("optical").is_none() && s.get("ppa").is_none(), "{s}");
    assert!(s["energy"].get("optical_static_j").is_none());
    // The page's group has the fields and the card the blocks are drawn in.
    let js = handle("GET", "/assets/app.js", b"").text();
    for k in [
        "ppa",
        "fft_efficiency",
        "ft_enob",
        "ft_mask_rate",
        "ft_overlap",
        "ced_replay_on",
    ] {
        assert!(js.contains(&format!("{{ k: '{k}', ")), "{k}");
    }
    let html = handle("GET", "/", b"").text();
    assert!(html.contains(r#"id="engines-card" hidden"#));
    assert!(html.contains(r#"<tbody id="engines-body"></tbody>"#));
}

/// The catalogue's display name of a device key.
fn sc_device_name(key: &str) -> Value {
    let c = ok("GET", "/api/catalogue", Value::Null);
    let d = c["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["key"] == key)
        .expect("device");
    d["name"].clone()
}

// ---- issue 16: the served models' layer kinds in /api/catalogue ---------------------------------

/// The catalogue's model `key`.
fn catalogue_model(c: &Value, key: &str) -> Value {
    c["models"]
        .as_array()
        .expect("models")
        .iter()
        .find(|m| m["key"] == key)
        .unwrap_or_else(|| panic!("no model {key}"))
        .clone()
}

#[test]
fn catalogue_deepseek_v3_layer_kinds() {
    let c = ok("GET", "/api/catalogue", Value::Null);
    let m = catalogue_model(&c, "deepseek-v3");
    // 61 MLA layers, each caching kv_lora_rank 512 + qk_rope_head_dim 64 = 576 values of 2 bytes:
    // 61 * 576 * 2 = 70,272 bytes per token.
    assert_eq!(m["kv_bytes_per_token"], json!(70272.0));
    assert_eq!(m["kv_kinds"], json!({"mla": 61}));
    assert_eq!(m["windowed_kv_bytes_per_token"], json!(0.0));
    assert_eq!(m["kv_windows"], json!([]));
    assert_eq!(m["state_bytes_per_request"], json!(0.0));
    // The first 3 layers are dense: the first MoE run is 256 routed experts, 8 a token, 1 shared.
    assert_eq!(
        m["moe"],
        json!({"experts": 256, "top_k": 8, "shared_experts": 1})
    );
    let why = m["why_kv"].as_str().expect("why_kv");
    assert!(why.starts_with("MLA: "), "{why}");
    assert!(why.contains("576-value latent"), "{why}");
    assert_eq!(why, m["arch"]["why_kv"].as_str().unwrap());
    let src = m["source"].as_str().expect("source");
    assert!(src.contains("DeepSeek-V3_config.json"), "{src}");
}

#[test]
fn catalogue_windowed_and_chunked_models() {
    let c = ok("GET", "/api/catalogue", Value::Null);
    // gpt-oss-120b: 18 (sliding 128, full) pairs; every layer 8 KV heads x 64 x 2 (K, V) = 1,024
    // values of 2 bytes = 2,048 bytes a token: 18 * 2,048 = 36,864 bytes each side.
    let m = catalogue_model(&c, "gpt-oss-120b");
    assert_eq!(m["kv_kinds"], json!({"sliding": 18, "full": 18}));
    assert_eq!(m["kv_bytes_per_token"], json!(36864.0));
    assert_eq!(m["windowed_kv_bytes_per_token"], json!(36864.0));
    assert_eq!(
        m["kv_windows"],
        json!([{"kind": "sliding", "layers": 18, "tokens": 128, "kv_bytes_per_token": 36864.0}])
    );
    assert_eq!(m["state_bytes_per_request"], json!(0.0));
    assert_eq!(
        m["moe"],
        json!({"experts": 128, "top_k": 4, "shared_experts": 0})
    );
    assert!(m["why_kv"]
        .as_str()
        .unwrap()
        .contains("128-token sliding window"));
    // Gemma-3-27B: 10 x (5 sliding + 1 full) then 2 sliding = 52 sliding (the cycle's 50 and the
    // tail's 2, one group) and 10 full; 16 x 128 x 2 = 4,096 values = 8,192 bytes a layer:
    // 52 * 8,192 = 425,984 windowed, 10 * 8,192 = 81,920 unbounded. Dense: no `moe`.
    let m = catalogue_model(&c, "gemma3-27b");
    assert_eq!(m["kv_kinds"], json!({"sliding": 52, "full": 10}));
    assert_eq!(m["kv_bytes_per_token"], json!(81920.0));
    assert_eq!(m["windowed_kv_bytes_per_token"], json!(425984.0));
    assert_eq!(
        m["kv_windows"],
        json!([{"kind": "sliding", "layers": 52, "tokens": 1024, "kv_bytes_per_token": 425984.0}])
    );
    assert!(m.get("moe").is_none(), "{}", m["moe"]);
    // Llama-4-Maverick: 12 x (chunked dense, chunked MoE, chunked dense, full MoE): three chunked
    // runs a cycle, one group of 36; 8 x 128 x 2 = 2,048 values = 4,096 bytes a layer:
    // 36 * 4,096 = 147,456 chunked, 12 * 4,096 = 49,152 full. Its first run is dense: the MoE
    // summary is the second run's (128 experts, 1 a token, 1 shared).
    let m = catalogue_model(&c, "llama4-maverick");
    assert_eq!(m["kv_kinds"], json!({"chunked": 36, "full": 12}));
    assert_eq!(m["kv_bytes_per_token"], json!(49152.0));
    assert_eq!(m["windowed_kv_bytes_per_token"], json!(147456.0));
    assert_eq!(
        m["kv_windows"],
        json!([{"kind": "chunked", "layers": 36, "tokens": 8192, "kv_bytes_per_token": 147456.0}])
    );
    assert_eq!(
        m["moe"],
        json!({"experts": 128, "top_k": 1, "shared_experts": 1})
    );
}

#[test]
fn catalogue_qwen3_next_fixed_state() {
    let c = ok("GET", "/api/catalogue", Value::Null);
    let m = catalogue_model(&c, "qwen3-next-80b-a3b");
    // 12 x (3 Gated DeltaNet + 1 full): 36 linear, 12 full.
    assert_eq!(m["kv_kinds"], json!({"linear": 36, "full": 12}));
    // A linear layer's state: conv (4 - 1) * (2*16*128 + 32*128) = 3 * 8,192 = 24,576 values,
    // recurrent 32 * 128 * 128 = 524,288 values, 2 bytes each: 1,097,728 bytes; 36 layers:
    // 39,518,208 bytes.
    assert_eq!(m["state_bytes_per_request"], json!(39518208.0));
    // 12 full layers of 2 KV heads x 256 x 2 = 1,024 values = 2,048 bytes: 24,576 a token.
    assert_eq!(m["kv_bytes_per_token"], json!(24576.0));
    assert_eq!(m["windowed_kv_bytes_per_token"], json!(0.0));
    assert_eq!(m["kv_windows"], json!([]));
    assert_eq!(
        m["moe"],
        json!({"experts": 512, "top_k": 10, "shared_experts": 1})
    );
    assert!(m["why_kv"].as_str().unwrap().contains("Gated DeltaNet"));
    assert!(m["source"].as_str().unwrap().contains("Qwen3-Next"));
}

/// Every served model (issue 16) has the keys; no other model has any of them.
#[test]
fn catalogue_layer_kind_keys_only_on_served_models() {
    let c = ok("GET", "/api/catalogue", Value::Null);
    let served: Vec<&str> = vec![
        "deepseek-v3",
        "deepseek-r1",
        "kimi-k2",
        "qwen3-235b-a22b",
        "qwen3-30b-a3b",
        "qwen3-32b",
        "gpt-oss-120b",
        "gpt-oss-20b",
        "gemma3-27b",
        "llama3.1-405b",
        "llama4-scout",
        "llama4-maverick",
        "qwen3-next-80b-a3b",
        "mixtral-8x22b",
        "deepseek-v2-lite",
    ];
    let keys = [
        "why_kv",
        "kv_kinds",
        "windowed_kv_bytes_per_token",
        "kv_windows",
        "state_bytes_per_request",
        "source",
    ];
    let mut seen = 0;
    for m in c["models"].as_array().unwrap() {
        let key = m["key"].as_str().unwrap();
        if served.contains(&key) {
            seen += 1;
            for k in keys {
                assert!(m.get(k).is_some(), "{key} has no {k}");
            }
            assert!(!m["why_kv"].as_str().unwrap().is_empty(), "{key}");
            assert!(!m["source"].as_str().unwrap().is_empty(), "{key}");
            // The layer counts add up to the model's layers.
            let n: u64 = m["kv_kinds"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(json!(n), m["n_layers"], "{key}");
        } else {
            for k in keys {
                assert!(m.get(k).is_none(), "{key} has {k}");
            }
        }
    }
    assert_eq!(seen, 15);
}

/// The models without layer kinds answer byte for byte as before issue 16: each one's JSON object
/// is in the response exactly as recorded from the API at commit 8ef5690 (before this change).
#[test]
fn catalogue_other_models_unchanged() {
    let before = include_str!("../data/catalogue-models-before-16.jsonl");
    let r = call("GET", "/api/catalogue", Value::Null);
    assert_eq!(r.status, 200);
    let text = r.text();
    let mut n = 0;
    for line in before.lines() {
        assert!(text.contains(line), "changed: {line}");
        n += 1;
    }
    // The reference's 13 models and the three of issue 15.
    assert_eq!(n, 16);
    let c: Value = serde_json::from_str(&text).unwrap();
    let old = c["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("arch").is_none())
        .count();
    assert_eq!(
        old, n,
        "a model without layer kinds is missing from the record"
    );
    // And the first one, by hand: Llama-3-8B's keys in order, and nothing else.
    let m = &c["models"][0];
    let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "key",
            "name",
            "n_layers",
            "d_model",
            "n_heads",
            "n_kv_heads",
            "d_ff",
            "vocab",
            "weight_bytes",
            "kv_bytes",
            "prefill_lm_head",
            "context_tokens",
            "head_dim",
            "params",
            "kv_bytes_per_token",
            "weight_bytes_total"
        ]
    );
}

/// The hand-off of the served models is the layer-kind-aware one: DeepSeek-V3 at 2,048 tokens
/// moves 2,048 * 70,272 = 143,917,056 bytes (not 2 * L * Hkv * hd per token); an unknown model is
/// a 422 naming the valid ones.
#[test]
fn handoff_of_served_models() {
    let v = ok(
        "POST",
        "/api/handoff",
        json!({"model": "deepseek-v3", "prompt_tokens": 2048}),
    );
    assert_eq!(v["kv_bytes"], json!(143917056.0));
    assert_eq!(v["kv_bytes_per_token"], json!(70272.0));
    // gpt-oss-120b: 18 full layers keep 2,048 tokens, 18 sliding layers 128, 2,048 bytes a layer
    // token: 18 * 2,048 * 2,048 + 18 * 128 * 2,048 = 75,497,472 + 4,718,592 = 80,216,064.
    let v = ok(
        "POST",
        "/api/handoff",
        json!({"model": "gpt-oss-120b", "prompt_tokens": 2048}),
    );
    assert_eq!(v["kv_bytes"], json!(80216064.0));
    let e = err(
        "POST",
        "/api/handoff",
        br#"{"model": "deepseek-v9"}"#,
        422,
        &[
            "deepseek-v9",
            "valid:",
            "deepseek-v3",
            "gpt-oss-120b",
            "llama3-8b",
        ],
    );
    assert_eq!(e["field"], "model");
    let e = err(
        "POST",
        "/api/run",
        br#"{"model": "deepseek-v9"}"#,
        422,
        &["deepseek-v9", "qwen3-next-80b-a3b"],
    );
    assert_eq!(e["field"], "model");
}
