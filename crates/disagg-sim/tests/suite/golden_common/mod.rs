//! The golden-run checks shared by `golden.rs` (the core) and `levers.rs` (the scheduling
//! levers): every stamp and every summary number with f64 `==`.
#![allow(dead_code)]

use disagg_model::Catalogue;
use disagg_sim::{RunResult, Scenario, SimConfig, Summary};
use serde_json::Value;

pub fn load(name: &str) -> Value {
    load_from("golden", name)
}

/// Reads fixture `name` from `tests/fixtures/<dir>/`.
pub fn load_from(dir: &str, name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{dir}/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

pub fn f(v: &Value) -> f64 {
    match v {
        Value::Null => f64::NAN,
        Value::String(x) if x == "NaN" => f64::NAN,
        Value::String(x) if x == "Infinity" => f64::INFINITY,
        _ => v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")),
    }
}

#[track_caller]
pub fn eq(got: f64, want: &Value, what: &str) {
    let w = f(want);
    if w.is_nan() {
        assert!(got.is_nan(), "{what}: got {got:?}, want null/NaN");
    } else {
        assert_eq!(got, w, "{what}: got {got:?}, want {w:?}");
    }
}

pub fn scenario(g: &Value) -> Scenario {
    let flags: Vec<String> = g["cli_flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    Scenario::from_flags(&flags).unwrap()
}

pub fn config(g: &Value, fast: Option<bool>) -> SimConfig {
    let mut sc = scenario(g);
    if let Some(fast) = fast {
        sc.fast = fast;
    }
    sc.build(&Catalogue::builtin()).unwrap()
}

pub fn check_workload(g: &Value, cfg: &SimConfig) -> Vec<disagg_sim::GenRequest> {
    let wl = cfg.generate_workload();
    let rows = g["workload"].as_array().unwrap();
    assert_eq!(wl.len(), rows.len());
    for (i, (w, row)) in wl.iter().zip(rows).enumerate() {
        eq(w.arrival_s, &row[0], &format!("workload[{i}].arrival"));
        assert_eq!(
            w.prompt_len as u64,
            row[1].as_u64().unwrap(),
            "workload[{i}].prompt"
        );
        assert_eq!(
            w.output_len as u64,
            row[2].as_u64().unwrap(),
            "workload[{i}].output"
        );
    }
    wl
}

/// Compares every stamp; returns the number of requests with a mismatch (and asserts if `strict`).
pub fn check_requests(g: &Value, run: &RunResult, strict: bool) -> usize {
    let rows = g["requests"].as_array().unwrap();
    assert_eq!(run.len(), rows.len());
    let mut bad = 0;
    for row in rows {
        let rid = row[0].as_u64().unwrap() as usize;
        let r = run.request(rid);
        let got = [
            Some(r.arrival_s),
            r.prefill_start_s,
            r.first_token_s,
            r.kv_start_s,
            r.kv_ready_s,
            r.decode_start_s,
            r.finish_s,
        ];
        let names = [
            "arrival",
            "prefill_start",
            "first_token",
            "kv_start",
            "kv_ready",
            "decode_start",
            "finish",
        ];
        let mut ok = true;
        for k in 0..7 {
            let want = &row[k + 1];
            let same = match (got[k], want) {
                (None, Value::Null) => true,
                (Some(x), w) if !w.is_null() => x == f(w),
                _ => false,
            };
            if !same {
                ok = false;
                if strict {
                    panic!("rid {rid} {}: got {:?}, want {want}", names[k], got[k]);
                }
            }
        }
        assert_eq!(r.prompt_len as u64, row[8].as_u64().unwrap());
        assert_eq!(r.output_len as u64, row[9].as_u64().unwrap());
        if !ok {
            bad += 1;
        }
    }
    bad
}

pub fn check_dist(got: &disagg_sim::Dist, want: &Value, what: &str) {
    eq(got.mean, &want["mean"], &format!("{what}.mean"));
    eq(got.p50, &want["p50"], &format!("{what}.p50"));
    eq(got.p90, &want["p90"], &format!("{what}.p90"));
    eq(got.p99, &want["p99"], &format!("{what}.p99"));
    eq(got.max, &want["max"], &format!("{what}.max"));
}

pub fn check_summary(g: &Value, s: &Summary) {
    let sm = &g["summary"];
    check_dist(&s.ttft_s, &sm["ttft"], "ttft");
    check_dist(&s.tpot_s, &sm["tpot"], "tpot");
    check_dist(&s.itl_s, &sm["itl"], "itl");
    check_dist(&s.e2e_s, &sm["e2e"], "e2e");
    eq(s.slo_attainment, &sm["slo_attainment"], "slo_attainment");
    eq(s.goodput_rps, &sm["goodput_req_per_s"], "goodput");
    eq(s.throughput_tok_s, &sm["output_tok_per_s"], "tok/s");
    eq(s.throughput_rps, &sm["req_per_s"], "req/s");
    assert_eq!(s.requests.completed, sm["completed"].as_u64().unwrap());
    assert_eq!(s.requests.rejected, sm["rejected"].as_u64().unwrap());
    assert_eq!(s.requests.measured, sm["measured"].as_u64().unwrap());
    eq(s.horizon_s, &sm["sim_time_s"], "horizon");
    eq(s.link_busy, &sm["link_busy_frac"], "link busy");
    eq(s.handoff_s.p99, &sm["handoff_p99_s"], "handoff p99");
    eq(s.handoff_s.p50, &sm["handoff_p50_s"], "handoff p50");
    eq(s.j_per_token, &sm["J_per_output_token"], "J/token");
    eq(s.avg_power_w, &sm["avg_power_W"], "avg W");
    eq(s.energy.total_j, &sm["total_J"], "total J");
    let util = sm["utilisation"].as_object().unwrap();
    assert_eq!(util.len(), s.instances.len() + 1);
    for i in &s.instances {
        eq(i.utilisation, &util[&i.name], &format!("util {}", i.name));
    }
    eq(s.link_busy, &util["kv-link"], "util kv-link");
    let hs = format!(
        "{} -> {}",
        s.hotspot.stage.as_deref().unwrap_or("None"),
        s.hotspot.resource
    );
    assert_eq!(hs, sm["hotspot"].as_str().unwrap());
    check_full(&g["summary_full"], s);
}

/// Every number of the reference's full `--json` summary that the core simulator has (the
/// levers' own blocks are checked by their tests).
pub fn check_full(full: &Value, s: &Summary) {
    assert_eq!(full["mode"].as_str().unwrap(), s.mode.as_str());
    let lat = &full["latency_s"];
    check_dist(&s.ttft_s, &lat["ttft"], "full.ttft");
    check_dist(&s.tpot_s, &lat["tpot"], "full.tpot");
    check_dist(&s.itl_s, &lat["itl"], "full.itl");
    check_dist(&s.e2e_s, &lat["e2e"], "full.e2e");
    if let Some(p) = full.get("pools") {
        let pools = s.pools.as_ref().expect("pools");
        assert_eq!(pools.prefill, p["prefill"].as_str().unwrap());
        assert_eq!(pools.decode, p["decode"].as_str().unwrap());
    } else {
        assert!(s.pools.is_none());
    }
    let kl = &full["kv_link"];
    eq(s.link.bytes / 1e9, &kl["bytes_GB"], "bytes_GB");
    assert_eq!(s.link.transfers, kl["transfers"].as_u64().unwrap());
    eq(
        1e3 * s.link.wait_s / s.link.transfers.max(1) as f64,
        &kl["mean_wait_ms"],
        "mean_wait_ms",
    );
    eq(
        s.link.achieved_bps / 1e9,
        &kl["achieved_GBps"],
        "achieved_GBps",
    );
    if let Some(t) = kl.get("transit") {
        assert_eq!(s.link.compression.as_deref(), t["preset"].as_str());
        assert_eq!(s.link.compress_at.as_deref(), t["where"].as_str());
        eq(s.link.compression_ratio.unwrap(), &t["ratio"], "ratio");
        eq(s.link.handoff_bytes / 1e9, &t["handoff_GB"], "handoff_GB");
        eq(
            s.link.transit_bound_frac,
            &t["transit_bound_frac"],
            "transit_bound_frac",
        );
        eq(s.link.transit_j, &t["transit_J"], "transit_J");
    } else {
        assert!(s.link.compression.is_none());
    }
    for i in &s.instances {
        let e = &full["efficiency"][&i.name];
        eq(i.mfu, &e["mfu"], &format!("{} mfu", i.name));
        eq(i.mbu, &e["mbu"], &format!("{} mbu", i.name));
        eq(
            i.mean_batch,
            &e["mean_batch"],
            &format!("{} mean_batch", i.name),
        );
        assert_eq!(i.steps, e["steps"].as_u64().unwrap(), "{} steps", i.name);
        eq(
            i.compute_bound_frac,
            &full["compute_bound_fraction"][&i.name],
            &format!("{} compute-bound", i.name),
        );
        let pi = &full["energy"]["per_instance"][&i.name];
        eq(i.avg_w, &pi["avg_w"], &format!("{} avg_w", i.name));
        eq(
            i.peak_step_w,
            &pi["peak_step_w"],
            &format!("{} peak", i.name),
        );
        eq(
            i.power_bound_frac,
            &pi["power_bound_frac"],
            &format!("{} power-bound", i.name),
        );
    }
    for (k, name) in disagg_sim::metrics::STAGES.iter().enumerate() {
        eq(
            s.stage_breakdown_s.as_array()[k],
            &full["stage_breakdown_s"][name],
            &format!("stage {name}"),
        );
        eq(
            s.stage_share.as_array()[k],
            &full["stage_share"][name],
            &format!("share {name}"),
        );
    }
    let hs = &full["hotspots"];
    assert_eq!(s.hotspot.stage.as_deref(), hs["stage"].as_str());
    assert_eq!(s.hotspot.resource, hs["resource"].as_str().unwrap());
    eq(
        s.hotspot.resource_util,
        &hs["resource_util"],
        "resource_util",
    );
    let busy: Vec<&str> = hs["busy_over_90pct"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(s.hotspot.busy_over_90pct, busy);
    eq(
        s.littles_law.l_measured,
        &full["littles_law"]["L_measured"],
        "L",
    );
    eq(
        s.littles_law.lambda_w,
        &full["littles_law"]["lambda_W"],
        "lambda W",
    );
    let en = &full["energy"];
    eq(s.energy.total_j, &en["total_J"], "total_J");
    eq(s.avg_power_w, &en["avg_power_W"], "avg_power_W");
    eq(s.j_per_token, &en["J_per_output_token"], "J/token");
    eq(s.tokens_per_j, &en["output_tokens_per_J"], "tok/J");
    eq(
        s.j_per_slo_met_request,
        &en["J_per_slo_met_request"],
        "J/SLO-met",
    );
    let b = &en["breakdown"];
    eq(s.energy.static_frac, &b["static"], "static frac");
    eq(s.energy.compute_frac, &b["compute"], "compute frac");
    eq(s.energy.memory_frac, &b["memory"], "memory frac");
    eq(s.energy.link_frac, &b["link"], "link frac");
    match (s.energy.optical_static_frac, b.get("optical_static")) {
        (Some(x), Some(w)) => eq(x, w, "optical_static frac"),
        (None, None) => {}
        other => panic!("optical_static fraction presence differs: {other:?}"),
    }
    match (
        s.energy.optical_conversions_frac,
        b.get("optical_conversions"),
    ) {
        (Some(x), Some(w)) => eq(x, w, "optical_conversions frac"),
        (None, None) => {}
        other => panic!("optical_conversions fraction presence differs: {other:?}"),
    }
    match (s.energy.transit_frac, b.get("transit")) {
        (Some(x), Some(w)) => eq(x, w, "transit frac"),
        (None, None) => {}
        other => panic!("transit fraction presence differs: {other:?}"),
    }
    match (s.energy.swap_frac, b.get("swap")) {
        (Some(x), Some(w)) => eq(x, w, "swap frac"),
        (None, None) => {}
        other => panic!("swap fraction presence differs: {other:?}"),
    }
    match (s.energy.scale_up_frac, b.get("scale_up")) {
        (Some(x), Some(w)) => eq(x, w, "scale_up frac"),
        (None, None) => {}
        other => panic!("scale_up fraction presence differs: {other:?}"),
    }
    let keys: Vec<&str> = b.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    let mut want = vec!["static", "compute", "memory", "link"];
    want.extend(s.energy.optical_static_frac.map(|_| "optical_static"));
    want.extend(
        s.energy
            .optical_conversions_frac
            .map(|_| "optical_conversions"),
    );
    want.extend(s.energy.transit_frac.map(|_| "transit"));
    want.extend(s.energy.swap_frac.map(|_| "swap"));
    want.extend(s.energy.scale_up_frac.map(|_| "scale_up"));
    assert_eq!(keys, want, "breakdown keys");
    eq(s.horizon_s, &full["sim_time_s"], "sim_time_s");
    let rq = &full["requests"];
    assert_eq!(s.requests.completed, rq["completed"].as_u64().unwrap());
    assert_eq!(s.requests.rejected, rq["rejected"].as_u64().unwrap());
    assert_eq!(s.requests.measured, rq["measured"].as_u64().unwrap());
}

/// The `optical` block: every instance, in instance order, keys in the reference's order.
pub fn check_optical(full: &Value, s: &Summary) {
    let Some(want) = full.get("optical") else {
        assert!(s.optical.is_none(), "no optical block expected");
        return;
    };
    let want = want.as_object().unwrap();
    let got = s.optical.as_ref().expect("optical block");
    assert_eq!(got.len(), want.len());
    for (g, (name, w)) in got.iter().zip(want) {
        assert_eq!(&g.name, name);
        let keys: Vec<&str> = w.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "optical_bound_frac",
                "optical_flops",
                "conversion_J",
                "static_J"
            ]
        );
        eq(
            g.optical_bound_frac,
            &w["optical_bound_frac"],
            &format!("{name} optical_bound_frac"),
        );
        eq(
            g.optical_flops,
            &w["optical_flops"],
            &format!("{name} optical_flops"),
        );
        eq(
            g.conversion_j,
            &w["conversion_J"],
            &format!("{name} conversion_J"),
        );
        eq(g.static_j, &w["static_J"], &format!("{name} static_J"));
    }
}

/// The `ppa` block: compared as JSON (keys, order, nulls), numbers with f64 `==`.
pub fn check_ppa(full: &Value, s: &Summary) {
    let Some(want) = full.get("ppa") else {
        assert!(s.ppa.is_none(), "no ppa block expected");
        return;
    };
    let got = serde_json::to_value(s.ppa.as_ref().expect("ppa block")).unwrap();
    same_json(&got, want, "ppa");
}

/// `got` and `want` have the same keys in the same order, the same strings, nulls and integers,
/// and numbers equal as f64.
pub fn same_json(got: &Value, want: &Value, what: &str) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            let gk: Vec<&String> = g.keys().collect();
            let wk: Vec<&String> = w.keys().collect();
            assert_eq!(gk, wk, "{what} keys");
            for (k, wv) in w {
                same_json(&g[k], wv, &format!("{what}.{k}"));
            }
        }
        (Value::Number(_), Value::Number(_)) => eq(f(got), want, what),
        _ => assert_eq!(got, want, "{what}"),
    }
}

/// A number of the reference's JSON as f64: `null` / `"NaN"` NaN, `"Infinity"` infinity.
pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Null => Some(f64::NAN),
        Value::String(s) if s == "NaN" => Some(f64::NAN),
        Value::String(s) if s == "Infinity" => Some(f64::INFINITY),
        Value::String(s) if s == "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// Asserts `got == want` as the reference's JSON: objects with the same keys in the same order,
/// arrays of the same length, integers equal as integers, other numbers equal as f64 (NaN equal
/// to NaN, in any of its spellings), strings and booleans equal. Returns the numbers compared.
pub fn same(got: &Value, want: &Value, path: &str) -> usize {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            let gk: Vec<&String> = g.keys().collect();
            let wk: Vec<&String> = w.keys().collect();
            assert_eq!(gk, wk, "{path}: keys");
            w.iter()
                .map(|(k, wv)| same(&g[k], wv, &format!("{path}.{k}")))
                .sum()
        }
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{path}: length");
            g.iter()
                .zip(w)
                .enumerate()
                .map(|(i, (a, b))| same(a, b, &format!("{path}[{i}]")))
                .sum()
        }
        (g, Value::Number(w)) if w.is_u64() => {
            assert_eq!(g.as_u64(), w.as_u64(), "{path}: an integer");
            1
        }
        (g, w) if as_f64(w).is_some() => {
            let (a, b) = (as_f64(g), as_f64(w).unwrap());
            let a = a.unwrap_or_else(|| panic!("{path}: got {g}, want the number {w}"));
            if b.is_nan() {
                assert!(a.is_nan(), "{path}: got {a:?}, want NaN");
            } else {
                assert_eq!(a.to_bits(), b.to_bits(), "{path}: got {a:?}, want {b:?}");
            }
            1
        }
        (g, w) => {
            assert_eq!(g, w, "{path}");
            0
        }
    }
}

/// A fixture's flags as strings.
pub fn flags(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}
