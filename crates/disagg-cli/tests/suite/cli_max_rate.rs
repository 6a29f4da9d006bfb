//! `disagg plan --max-rate`'s `ci` search (`docs/planning.md`): its JSON keys, its bad values,
//! the ceiling bound over random candidates, and `--search bisect` as before.

use crate::common;
#[allow(unused_imports)]
use common::*;
use proptest::prelude::*;

const BASE: [&str; 8] = [
    "plan",
    "--model",
    "llama3-8b",
    "--devices-per-instance",
    "1",
    "--requests",
    "100",
    "--max-rate",
];

#[test]
fn json_keys_of_the_ci_search() {
    let mut a = BASE.to_vec();
    a.extend(["--max-replications", "3", "--json", "--quiet"]);
    let doc = ok_json(&a);
    for k in [
        "max_rate_rps",
        "ceiling_rps",
        "slo_target",
        "replications",
        "requests_measured",
        "warmup_cut",
        "ci_half_width",
        "capped",
        "scenario",
        "analytic",
        "points",
    ] {
        assert!(doc.get(k).is_some(), "{k} missing: {doc}");
    }
    let ci = doc["max_rate_ci_rps"].as_array().unwrap();
    let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
    let (answer, ceiling) = (
        doc["max_rate_rps"].as_f64().unwrap(),
        doc["ceiling_rps"].as_f64().unwrap(),
    );
    assert!(lo == answer && answer <= hi && hi <= ceiling, "{doc}");
    assert_eq!(doc["slo_target"], 0.9);
    assert!(doc.get("time_scale").is_none());
    assert!(doc["replications"].as_u64().unwrap() <= 3);
}

#[test]
fn bad_search_values() {
    let with = |extra: &[&'static str]| {
        let mut a = BASE.to_vec();
        a.extend(extra);
        a
    };
    bad(
        &with(&["--search", "grid"]),
        &["--search", "'grid'", "valid: ci, bisect"],
    );
    bad(
        &with(&["--ci-half-width", "0.9"]),
        &["--ci-half-width", "'0.9'", "[0.0001, 0.5]"],
    );
    bad(
        &with(&["--ci-half-width", "-1"]),
        &["--ci-half-width", "'-1'"],
    );
    bad(
        &with(&["--max-replications", "1"]),
        &["--max-replications", "'1'", "2 to 10000"],
    );
}

/// `--search bisect` is the reference's bisection: the same document as before issue 26 (its
/// byte identity is the identity cases `plan-max-rate-bisect*`).
#[test]
fn bisect_keeps_the_reference_document() {
    let mut a = BASE.to_vec();
    a.extend(["--search", "bisect", "--json", "--quiet"]);
    let doc = ok_json(&a);
    assert!(doc.get("bracket_rps").is_some() && doc.get("max_rate_ci_rps").is_none());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Whatever the candidate, the answer and every rate simulated stay at or below the
    /// per-pool analytic ceiling (issue 26: an answer above it is impossible).
    #[test]
    fn the_answer_never_exceeds_the_ceiling(
        model in prop::sample::select(vec!["llama3-8b", "mistral-7b", "llama3.2-1b", "llama3-70b"]),
        device in prop::sample::select(vec!["h100", "a100"]),
        dpi in prop::sample::select(vec!["1", "2", "4", "8"]),
        prefill in 1u32..4,
        decode in 1u32..4,
        target in prop::sample::select(vec![0.5, 0.9, 0.99]),
    ) {
        let cat = disagg_model::Catalogue::builtin();
        let (p, d) = (prefill.to_string(), decode.to_string());
        let base = disagg_sim::Scenario::from_flags([
            "--model", model, "--device", device, "--devices-per-instance", dpi,
            "--prefill", &p, "--decode", &d, "--requests", "60",
        ]).unwrap();
        let Ok(cfg) = base.build(&cat) else { return Ok(()) };
        let Some(ceiling) = disagg_api::plan::ceiling_rps(&cfg) else { return Ok(()) };
        let o = disagg_api::plan::PlanOptions {
            max_rate: true,
            slo_target: target,
            max_replications: 3,
            quiet: true,
            ..Default::default()
        };
        let mut w = disagg_api::report::Warnings::default();
        let Ok(disagg_api::plan::Plan::MaxRate(m)) = disagg_api::plan::prepare(base, &cat, &o, &mut w) else {
            return Ok(());
        };
        let c = m.ci().unwrap();
        prop_assert_eq!(c.ceiling_rps, ceiling);
        prop_assert!(c.rate_rps <= ceiling && c.interval.1 <= ceiling);
        prop_assert!(c.points.iter().all(|x| x.rate_rps <= ceiling));
    }
}
