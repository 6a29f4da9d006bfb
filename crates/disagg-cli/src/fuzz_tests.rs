//! Fuzz targets on the stable toolchain (proptest) for the CLI's TOML inputs: the scenario file
//! (`--config`), the catalogue file (`--catalogue`) and the sweep spec (`sweep --spec`), fed
//! arbitrary bytes and mutations of the seed corpus in `fuzz/corpus/<target>/` (also replayed as
//! is), through the same functions the commands use after reading the file. The property: Ok or a
//! clean one-line error, never a panic. A scenario that parses is also built (validated) with its
//! request count bounded and without reading files. Case counts are bounded so the set runs in
//! seconds in a debug build; set `PROPTEST_CASES` to run more.

#[path = "../../../fuzz/mutate.rs"]
mod mutate;

use std::path::Path;

use disagg_model::custom::CatalogueFile;
use disagg_model::Catalogue;
use disagg_sim::scenario::Scenario;
use mutate::{bytes, mutated, seeds};
use proptest::prelude::*;

use crate::custom::parse_toml;
use crate::scenario_flags::overlay_table;
use crate::UsageError;

/// The text checks every input file gets (`disagg_trace::input::read_input` after reading).
fn text(input: &[u8]) -> Option<String> {
    disagg_trace::input::text_from_bytes(input.to_vec()).ok()
}

fn one_line(e: &str) {
    assert!(!e.trim_end().ends_with(':'), "no message: {e:?}");
    assert!(!e.contains('\n') && !e.contains('\r'), "{e:?}");
}

/// A configuration error from the model or simulator: it may quote a value holding a line break
/// (`main` escapes those when it prints), so it only has to say something.
fn clean(e: &str) {
    assert!(!e.trim().is_empty(), "{e:?}");
}

/// Validates a scenario the way a run does, bounded: at most 200 requests, no trace file.
fn build(mut sc: Scenario) {
    sc.trace_file = None;
    sc.requests = sc.requests.min(200);
    if let Err(e) = sc.build(&Catalogue::builtin()) {
        clean(&e.to_string());
    }
}

/// `--config`: the scenario keys (and `preset`) on top of the defaults, then built.
fn scenario(input: &[u8]) {
    let Some(text) = text(input) else { return };
    match parse_toml::<toml::Table>("--config", "fuzz.toml", &text) {
        Err(UsageError(e)) => one_line(&e),
        Ok(t) => match overlay_table(Scenario::default(), t, "fuzz.toml", false) {
            Err(UsageError(e)) => one_line(&e),
            Ok(sc) => build(sc),
        },
    }
}

/// `--catalogue`: the entries added to the built-in catalogue.
fn catalogue(input: &[u8]) {
    let Some(text) = text(input) else { return };
    match parse_toml::<CatalogueFile>("--catalogue", "fuzz.toml", &text) {
        Err(UsageError(e)) => one_line(&e),
        Ok(f) => {
            let mut cat = Catalogue::builtin();
            if let Err(e) = f.apply(&mut cat) {
                clean(&e.to_string());
            }
        }
    }
}

/// `sweep --spec`: the sweep, its run count, and the first runs' scenarios, built.
fn spec(input: &[u8]) {
    let Some(text) = text(input) else { return };
    let t = match parse_toml::<toml::Table>("--spec", "fuzz.toml", &text) {
        Err(UsageError(e)) => return one_line(&e),
        Ok(t) => t,
    };
    match disagg_api::sweep::spec_from_table(t, Path::new("fuzz.toml"), Default::default(), false) {
        Err(UsageError(e)) => one_line(&e),
        Ok(sweep) => {
            let runs = sweep.runs();
            assert!(runs >= 1);
            let _ = sweep.fingerprint();
            for i in 0..runs.min(3) {
                match sweep.scenario(i) {
                    Err(UsageError(e)) => one_line(&e),
                    Ok(sc) => build(sc),
                }
            }
        }
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

#[test]
fn corpus_replays() {
    for (target, f) in [
        ("scenario", scenario as fn(&[u8])),
        ("catalogue", catalogue),
        ("spec", spec),
    ] {
        for (_, seed) in seeds(target) {
            f(&seed);
        }
    }
    // The seeds are valid inputs (but the regressions, named no_*).
    let valid = |(name, _): &(String, Vec<u8>)| !name.starts_with("no_");
    for (_, seed) in seeds("catalogue").into_iter().filter(valid) {
        let f: CatalogueFile = toml::from_str(&text(&seed).unwrap()).unwrap();
        f.apply(&mut Catalogue::builtin()).unwrap();
    }
    for (name, seed) in seeds("spec").into_iter().filter(valid) {
        let t = toml::from_str(&text(&seed).unwrap()).unwrap();
        let s = disagg_api::sweep::spec_from_table(t, Path::new(&name), Default::default(), false);
        assert!(s.is_ok(), "{name}: {:?}", s.err());
    }
}

proptest! {
    #![proptest_config(config(150))]

    #[test]
    fn scenario_any_bytes(input in bytes()) {
        scenario(&input);
    }

    #[test]
    fn scenario_mutated_seeds(input in mutated("scenario")) {
        scenario(&input);
    }

    #[test]
    fn catalogue_any_bytes(input in bytes()) {
        catalogue(&input);
    }

    #[test]
    fn catalogue_mutated_seeds(input in mutated("catalogue")) {
        catalogue(&input);
    }

    #[test]
    fn spec_any_bytes(input in bytes()) {
        spec(&input);
    }

    #[test]
    fn spec_mutated_seeds(input in mutated("spec")) {
        spec(&input);
    }
}
