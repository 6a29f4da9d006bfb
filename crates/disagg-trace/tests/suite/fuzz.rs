//! Fuzz targets on the stable toolchain (proptest): every trace parser (Azure CSV, Mooncake
//! JSONL, BurstGPT CSV, the reference's JSON rows, the workload file) and format detection, fed
//! arbitrary bytes and mutations of the seed corpus in `fuzz/corpus/<target>/` (which is also
//! replayed as is). The property: Ok or a clean one-line error, never a panic; and the rows of an
//! accepted trace have finite, non-negative, non-decreasing arrival times and token counts within
//! the options' limits. Case counts are bounded so the set runs in seconds in a debug build; set
//! `PROPTEST_CASES` to run more.

#[path = "../../../../fuzz/mutate.rs"]
mod mutate;

use disagg_trace::{read_bytes, ReadOptions, TraceError, TraceFormat, Unsorted};
use mutate::{bytes, mutated, seeds};
use proptest::prelude::*;

/// The checks on one read.
fn check(input: &[u8], opts: &ReadOptions) {
    match read_bytes(input, "fuzz", opts) {
        Err(e) => check_error(&e),
        Ok(t) => {
            if let Some(f) = opts.format {
                assert_eq!(t.format, f);
            }
            assert!(!t.rows.is_empty());
            assert_eq!(t.report.rows_kept, t.rows.len() as u64);
            if let Some(m) = opts.max_requests {
                assert!(t.rows.len() as u64 <= m);
            }
            let mut last = 0.0f64;
            for r in &t.rows {
                assert!(
                    r.arrival_s.is_finite() && r.arrival_s >= 0.0,
                    "arrival {} on line {}",
                    r.arrival_s,
                    r.line
                );
                assert!(r.arrival_s >= last, "{} after {last}", r.arrival_s);
                last = r.arrival_s;
                assert!(r.line >= 1);
                if let Some(c) = opts.max_context {
                    assert!(r.prompt_len <= c);
                }
                if r.hash_ids.is_some() {
                    assert_eq!(t.format, TraceFormat::Mooncake);
                    assert!(opts.keep_hash_ids);
                }
            }
            let s = t.stats();
            assert_eq!(s.rows, t.rows.len() as u64);
            assert!(s.duration_s.is_finite() && s.duration_s >= 0.0);
        }
    }
}

fn check_error(e: &TraceError) {
    let shown = e.to_string();
    assert!(!shown.is_empty());
    assert!(!shown.contains('\n') && !shown.contains('\r'), "{shown:?}");
}

/// Read options: the default, and odd ones (windows, limits, scales, clipping).
fn options(format: Option<TraceFormat>) -> impl Strategy<Value = ReadOptions> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(vec![1.0, 0.5, 3.0, 1e-300, 1e300, f64::MAX]),
        prop::sample::select(vec![None, Some(0.0), Some(1.5), Some(4.5), Some(1e300)]),
        prop::sample::select(vec![None, Some(1.0), Some(0.001), Some(1e300)]),
        prop::sample::select(vec![None, Some(1u64), Some(3), Some(u64::MAX)]),
        prop::sample::select(vec![None, Some(1u64), Some(512), Some(1000)]),
    )
        .prop_map(
            move |(
                skip,
                sort,
                keep,
                time_scale,
                start_s,
                duration_s,
                max_requests,
                max_context,
            )| {
                ReadOptions {
                    format,
                    time_scale,
                    start_s,
                    duration_s,
                    max_requests,
                    skip_bad_lines: skip,
                    max_context,
                    unsorted: if sort {
                        Unsorted::Sort
                    } else {
                        Unsorted::Reject
                    },
                    keep_hash_ids: keep,
                }
            },
        )
}

/// The options `disagg run --workload-file` reads with (a reference-format trace, the model's
/// context, no hash ids).
fn workload_options() -> ReadOptions {
    ReadOptions {
        format: Some(TraceFormat::Reference),
        max_context: Some(131_072),
        keep_hash_ids: false,
        ..ReadOptions::default()
    }
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(cases),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Every seed, as is, with the default options, its target's format forced, and sorting.
#[test]
fn corpus_replays() {
    for (target, format) in [
        ("azure", Some(TraceFormat::Azure)),
        ("mooncake", Some(TraceFormat::Mooncake)),
        ("burstgpt", Some(TraceFormat::BurstGpt)),
        ("reference", Some(TraceFormat::Reference)),
        ("detect", None),
        ("workload", Some(TraceFormat::Reference)),
    ] {
        for (name, seed) in seeds(target) {
            let _ = name;
            check(&seed, &ReadOptions::default());
            let forced = ReadOptions {
                format,
                ..ReadOptions::default()
            };
            check(&seed, &forced);
            check(
                &seed,
                &ReadOptions {
                    unsorted: Unsorted::Sort,
                    skip_bad_lines: true,
                    ..forced
                },
            );
            check(&seed, &workload_options());
        }
    }
    // The valid seeds are read.
    for (target, name) in [
        ("azure", "sample_crlf.csv"),
        ("azure", "zones_lf.csv"),
        ("mooncake", "sample.jsonl"),
        ("burstgpt", "sample.csv"),
        ("reference", "rows.json"),
        ("workload", "meta.json"),
    ] {
        let seed = seeds(target)
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap()
            .1;
        let t = read_bytes(&seed, name, &ReadOptions::default());
        assert!(t.is_ok(), "{target}/{name}: {:?}", t.err());
    }
}

macro_rules! trace_target {
    ($name:ident, $target:literal, $format:expr) => {
        mod $name {
            use super::*;
            proptest! {
                #![proptest_config(config(200))]
                #[test]
                fn any_bytes(input in bytes(), opts in options($format)) {
                    check(&input, &opts);
                }
                #[test]
                fn mutated_seeds(input in mutated($target), opts in options($format)) {
                    check(&input, &opts);
                }
            }
        }
    };
}

trace_target!(azure, "azure", Some(TraceFormat::Azure));
trace_target!(mooncake, "mooncake", Some(TraceFormat::Mooncake));
trace_target!(burstgpt, "burstgpt", Some(TraceFormat::BurstGpt));
trace_target!(reference, "reference", Some(TraceFormat::Reference));
trace_target!(detect, "detect", None);

proptest! {
    #![proptest_config(config(200))]
    /// The workload file (`--workload-file`): reference rows as the CLI reads them.
    #[test]
    fn workload_mutated_seeds(input in mutated("workload")) {
        check(&input, &workload_options());
    }

    /// Format detection alone: a format or a clean error, and a detected format agrees with the
    /// first non-blank line.
    #[test]
    fn detect_any_text(input in mutated("detect")) {
        let text = String::from_utf8_lossy(&input);
        match TraceFormat::detect(&text, "fuzz") {
            Ok(f) => {
                let first = text
                    .trim_start_matches('\u{feff}')
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap();
                let ok = match f {
                    TraceFormat::Reference => first.starts_with('['),
                    TraceFormat::Mooncake => first.starts_with('{'),
                    TraceFormat::Azure => first.contains("ContextTokens"),
                    TraceFormat::BurstGpt => first.contains("Request tokens"),
                };
                prop_assert!(ok, "{f} from {first:?}");
            }
            Err(e) => check_error(&e),
        }
    }
}
