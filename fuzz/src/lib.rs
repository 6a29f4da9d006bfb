//! What the libFuzzer targets check: the same properties as the proptest targets. Each function
//! takes the fuzzer's bytes and panics only if a parser misbehaves (a panic inside a parser, an
//! error message over several lines, or accepted rows with bad times).

use disagg_model::custom::CatalogueFile;
use disagg_model::Catalogue;
use disagg_sim::scenario::Scenario;
use disagg_trace::{read_bytes, ReadOptions, TraceFormat};

/// Trace errors are one line by construction.
fn one_line(e: &str) {
    assert!(!e.contains('\n') && !e.contains('\r'), "{e:?}");
}

/// Configuration errors may quote a value holding a line break (the CLI escapes it when it
/// prints the message): they only have to say something.
fn clean(e: &str) {
    assert!(!e.trim().is_empty(), "{e:?}");
}

/// A trace in `format` (or detected), with the default options and with sorting and skipping.
pub fn trace(data: &[u8], format: Option<TraceFormat>) {
    let plain = ReadOptions {
        format,
        ..ReadOptions::default()
    };
    let lenient = ReadOptions {
        skip_bad_lines: true,
        unsorted: disagg_trace::Unsorted::Sort,
        max_context: Some(1000),
        ..plain.clone()
    };
    for opts in [plain, lenient] {
        match read_bytes(data, "fuzz", &opts) {
            Err(e) => one_line(&e.to_string()),
            Ok(t) => {
                let mut last = 0.0f64;
                for r in &t.rows {
                    assert!(r.arrival_s.is_finite() && r.arrival_s >= last);
                    last = r.arrival_s;
                    if let Some(c) = opts.max_context {
                        assert!(r.prompt_len <= c);
                    }
                }
                let _ = t.stats();
            }
        }
    }
}

/// A workload file (`--workload-file`): reference rows as the CLI reads them.
pub fn workload(data: &[u8]) {
    let opts = ReadOptions {
        format: Some(TraceFormat::Reference),
        max_context: Some(131_072),
        keep_hash_ids: false,
        ..ReadOptions::default()
    };
    match read_bytes(data, "fuzz", &opts) {
        Err(e) => one_line(&e.to_string()),
        Ok(t) => assert!(t.rows.iter().all(|r| r.arrival_s.is_finite() && r.arrival_s >= 0.0)),
    }
}

fn text(data: &[u8]) -> Option<String> {
    disagg_trace::input::text_from_bytes(data.to_vec()).ok()
}

/// A scenario file: parsed, then validated with at most 200 requests and no trace file.
pub fn scenario(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let Ok(mut sc) = toml::from_str::<Scenario>(&text) else {
        return;
    };
    sc.trace_file = None;
    sc.requests = sc.requests.min(200);
    if let Err(e) = sc.build(&Catalogue::builtin()) {
        clean(&e.to_string());
    }
}

/// A catalogue file: parsed, then added to the built-in catalogue.
pub fn catalogue(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let Ok(f) = toml::from_str::<CatalogueFile>(&text) else {
        return;
    };
    if let Err(e) = f.apply(&mut Catalogue::builtin()) {
        clean(&e.to_string());
    }
}

/// The server's request bodies: `data` as the body of each POST route through
/// [`disagg_web::Api::handle`] (no socket), with small limits (200 ms, 2,000 requests, 64 MiB of
/// memory) so that no input runs long. Every answer is JSON with a 2xx, 4xx or 503 status and a
/// one-line error; a 500 (a panic caught inside the API) fails the target.
pub fn api_body(data: &[u8]) {
    use disagg_web::{Api, Limits};
    static API: std::sync::OnceLock<Api> = std::sync::OnceLock::new();
    let api = API.get_or_init(|| {
        Api::new(
            Catalogue::builtin(),
            Limits {
                time_limit: std::time::Duration::from_millis(200),
                max_requests: 2_000,
                max_sweep_requests: 10_000,
                memory_budget_bytes: 64 << 20,
                ..Limits::default()
            },
        )
    });
    for path in ["/api/handoff", "/api/run", "/api/sweep"] {
        let r = api.handle("POST", path, data);
        assert!(
            (200..500).contains(&r.status) || r.status == 503,
            "{path}: {} {}",
            r.status,
            r.text()
        );
        assert_eq!(r.content_type, "application/json");
        let v: serde_json::Value = serde_json::from_slice(&r.body).expect("a JSON answer");
        if r.status >= 400 {
            let e = v["error"].as_str().expect("an error message");
            assert!(!e.is_empty(), "{path}: empty error");
            one_line(e);
        }
    }
}
