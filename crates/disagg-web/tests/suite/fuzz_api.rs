//! Fuzzing the API's request bodies (proptest, stable toolchain): arbitrary bytes, arbitrary JSON
//! values, and objects with the real field names and arbitrary values, as bodies of every POST
//! endpoint through `Api::handle`, give a 2xx or 4xx with a JSON body, never a 5xx or a panic.
//! The seed corpus (`tests/corpus/api/`) runs first, as is and as the base of mutations. Case
//! counts and the API's time limit are small so that the whole file runs in seconds.

use std::time::Duration;

use disagg_model::Catalogue;
use disagg_web::{Api, Limits};
use proptest::prelude::*;
use serde_json::{Map, Value};

const ENDPOINTS: [&str; 3] = ["/api/handoff", "/api/run", "/api/sweep"];

fn api() -> &'static Api {
    static API: std::sync::OnceLock<Api> = std::sync::OnceLock::new();
    API.get_or_init(|| {
        Api::new(
            Catalogue::builtin(),
            Limits {
                // Bounded cases: a big valid run ends as a 413 quickly.
                time_limit: Duration::from_millis(200),
                max_requests: 5_000,
                max_sweep_requests: 20_000,
                ..Limits::default()
            },
        )
    })
}

fn check(path: &str, body: &[u8]) -> Result<(), TestCaseError> {
    let r = api().handle("POST", path, body);
    prop_assert!(
        (200..500).contains(&r.status),
        "{path} {:?}: {} {}",
        String::from_utf8_lossy(body),
        r.status,
        r.text()
    );
    prop_assert_eq!(r.content_type, "application/json");
    let v: Value = serde_json::from_slice(&r.body)
        .map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {}", r.text())))?;
    if r.status >= 400 {
        let msg = v["error"].as_str().unwrap_or("");
        prop_assert!(!msg.is_empty() && !msg.contains('\n'), "{}", r.text());
    }
    Ok(())
}

fn corpus() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/api");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the corpus directory")
        .map(|e| e.expect("an entry").path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read(p).expect("read"))
        .collect()
}

/// The field names the endpoints know (from the defaults the API publishes), and the extras.
fn field_names() -> Vec<String> {
    let r = api().handle("GET", "/api/catalogue", b"");
    let v: Value = serde_json::from_slice(&r.body).expect("catalogue JSON");
    let mut names: Vec<String> = ["scenario_defaults", "handoff_defaults"]
        .iter()
        .flat_map(|k| v[*k].as_object().expect("object").keys().cloned())
        .collect();
    for extra in [
        "preset",
        "rates",
        "compact",
        "latency_samples",
        "series",
        "batch",
        "trace_file",
    ] {
        names.push(extra.into());
    }
    names.sort();
    names.dedup();
    names
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
        prop_oneof![
            Just(0.0),
            Just(-1.0),
            Just(1e-300),
            Just(1e308),
            Just(0.5),
            Just(4.0),
            Just(18446744073709551616.0)
        ]
        .prop_map(Value::from),
        "[a-z0-9_./-]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("llama3-8b"),
            Just("eth-25g"),
            Just("layerwise"),
            Just("eth25g-14rps"),
            Just("chat"),
            Just("per-pair"),
            Just("fair"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Objects whose keys are real field names, with arbitrary values; requests kept small.
fn known_object() -> impl Strategy<Value = Vec<u8>> {
    let names = field_names();
    prop::collection::vec((prop::sample::select(names), json_value()), 0..6).prop_map(|kvs| {
        let mut m = Map::new();
        for (k, v) in kvs {
            m.insert(k, v);
        }
        if !m.contains_key("requests") {
            m.insert("requests".into(), Value::from(20));
        }
        serde_json::to_vec(&Value::Object(m)).expect("serialises")
    })
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

#[test]
fn the_corpus_gets_clean_answers() {
    for body in corpus() {
        for path in ENDPOINTS {
            check(path, &body).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes(body in prop::collection::vec(any::<u8>(), 0..256), which in 0..3usize) {
        check(ENDPOINTS[which], &body)?;
    }

    #[test]
    fn mutated_corpus(seed in 0..64usize, at in any::<prop::sample::Index>(),
                      bytes in prop::collection::vec(any::<u8>(), 0..8), which in 0..3usize) {
        let corpus = corpus();
        let mut body = corpus[seed % corpus.len()].clone();
        let i = at.index(body.len() + 1);
        body.splice(i..(i + bytes.len() / 2).min(body.len()), bytes);
        check(ENDPOINTS[which], &body)?;
    }

    #[test]
    fn arbitrary_json(v in json_value(), which in 0..3usize) {
        check(ENDPOINTS[which], &serde_json::to_vec(&v).unwrap())?;
    }

    #[test]
    fn known_fields_arbitrary_values(body in known_object(), which in 0..3usize) {
        check(ENDPOINTS[which], &body)?;
    }
}

#[test]
fn deeply_nested_json_is_a_4xx_not_a_stack_overflow() {
    for depth in [200, 10_000, 100_000] {
        let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        for value in [&nested, &objects] {
            for field in ["rates", "batch", "model", "workload", "unknown"] {
                for path in ENDPOINTS {
                    let body = format!(r#"{{"requests": 10, "{field}": {value}}}"#);
                    let r = api().handle("POST", path, body.as_bytes());
                    assert!(
                        (400..500).contains(&r.status),
                        "{path} {field} depth {depth}: {} {}",
                        r.status,
                        r.text()
                    );
                    check(path, body.as_bytes()).unwrap();
                }
            }
            // The body itself nested.
            for path in ENDPOINTS {
                let r = api().handle("POST", path, value.as_bytes());
                assert!((400..500).contains(&r.status), "{path}: {}", r.status);
            }
        }
    }
}
