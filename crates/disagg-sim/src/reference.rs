//! The reference simulator's `summarise` dictionary (`docs/serving-model.md#metrics`; the `--json` summary of
//! `disagg-sim`, golden `summary_full`) laid out from our [`Summary`]: the same keys, the same
//! nesting, the same key order, every number the same f64.
//!
//! What each reference key is, from our summary:
//!
//! | reference | ours |
//! |---|---|
//! | `pools` (heterogeneous runs only) | [`Summary::pools`] |
//! | `kv_link.bytes_GB` | `link.bytes / 1e9` |
//! | `kv_link.mean_wait_ms` | `1e3 * link.wait_s / max(1, link.transfers)` |
//! | `kv_link.achieved_GBps` | `link.achieved_bps / 1e9` |
//! | `kv_link.transit` (in-transit / endpoint compression only) | `link.compression`, ... |
//! | `energy.breakdown` | static, compute, memory, link, then the optional terms in the reference's order |
//! | `optical`, `scheduler`, `parallel`, `formats` | the lever blocks, after `sim_time_s`, in that order |
//! | `ppa` (`--ppa` only; the reference's CLI appends it after `summarise`) | [`Summary::ppa`] |
//!
//! Non-finite numbers (an empty distribution's NaN, `J_per_slo_met_request` when no request met
//! its SLO) cannot be JSON numbers: they are the strings `"NaN"`, `"Infinity"` and `"-Infinity"`,
//! the convention of the reference's fixture files (the Python drop-in turns them back into
//! floats). `scheduler.prefix_handoff` (beyond the reference) is kept when that option is on.

use serde_json::{json, Map, Value};

use crate::metrics::{InstanceSummary, STAGES};
use crate::stats::Dist;
use crate::Summary;

/// A float as the reference's JSON holds it: a number, or `"NaN"` / `"Infinity"` /
/// `"-Infinity"` when not finite.
pub fn num(x: f64) -> Value {
    if x.is_nan() {
        Value::String("NaN".into())
    } else if x.is_infinite() {
        Value::String(if x > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        json!(x)
    }
}

fn dist(d: &Dist) -> Value {
    json!({"mean": num(d.mean), "p50": num(d.p50), "p90": num(d.p90), "p99": num(d.p99),
           "max": num(d.max)})
}

fn per_instance(s: &Summary, f: impl Fn(&InstanceSummary) -> Value) -> Value {
    Value::Object(s.instances.iter().map(|i| (i.name.clone(), f(i))).collect())
}

fn stages(s: &Summary, a: [f64; 6]) -> Value {
    // No measured request: the reference's stage means are an empty dict.
    if s.requests.measured == 0 {
        return Value::Object(Map::new());
    }
    Value::Object(
        STAGES
            .iter()
            .zip(a)
            .map(|(k, v)| (k.to_string(), num(v)))
            .collect(),
    )
}

fn kv_link(s: &Summary) -> Value {
    let l = &s.link;
    let mut m = Map::new();
    m.insert("bytes_GB".into(), num(l.bytes / 1e9));
    m.insert("transfers".into(), json!(l.transfers));
    m.insert(
        "mean_wait_ms".into(),
        num(1e3 * l.wait_s / l.transfers.max(1) as f64),
    );
    m.insert("achieved_GBps".into(), num(l.achieved_bps / 1e9));
    if let Some(preset) = &l.compression {
        m.insert(
            "transit".into(),
            json!({
                "preset": preset,
                "where": l.compress_at,
                "ratio": num(l.compression_ratio.unwrap_or(f64::NAN)),
                "handoff_GB": num(l.handoff_bytes / 1e9),
                "transit_bound_frac": num(l.transit_bound_frac),
                "transit_J": num(l.transit_j),
            }),
        );
    }
    Value::Object(m)
}

fn energy(s: &Summary) -> Value {
    let e = &s.energy;
    let mut b = Map::new();
    b.insert("static".into(), num(e.static_frac));
    b.insert("compute".into(), num(e.compute_frac));
    b.insert("memory".into(), num(e.memory_frac));
    b.insert("link".into(), num(e.link_frac));
    let optional = [
        ("optical_static", e.optical_static_frac),
        ("optical_conversions", e.optical_conversions_frac),
        ("transit", e.transit_frac),
        ("swap", e.swap_frac),
        ("scale_up", e.scale_up_frac),
    ];
    for (k, v) in optional {
        if let Some(x) = v {
            b.insert(k.into(), num(x));
        }
    }
    json!({
        "total_J": num(e.total_j),
        "avg_power_W": num(s.avg_power_w),
        "J_per_output_token": num(s.j_per_token),
        "output_tokens_per_J": num(s.tokens_per_j),
        "J_per_slo_met_request": num(s.j_per_slo_met_request),
        "breakdown": b,
        "per_instance": per_instance(s, |i| json!({
            "avg_w": num(i.avg_w),
            "peak_step_w": num(i.peak_step_w),
            "power_bound_frac": num(i.power_bound_frac),
        })),
    })
}

fn scheduler(sc: &crate::sched::SchedulerSummary) -> Value {
    let mut m = Map::new();
    m.insert("batch_policy".into(), json!(sc.batch_policy));
    m.insert("token_budget".into(), json!(sc.token_budget));
    m.insert("kv_policy".into(), json!(sc.kv_policy));
    m.insert("kv_capacity_units".into(), json!(sc.kv_capacity_units));
    m.insert("kv_unit_tokens".into(), json!(sc.kv_unit_tokens));
    m.insert("mean_running".into(), num(sc.mean_running));
    m.insert("kv_token_frac".into(), num(sc.kv_token_frac));
    m.insert(
        "computed_prefill_tokens".into(),
        json!(sc.computed_prefill_tokens),
    );
    if let Some(u) = sc.prefill_kv_capacity_units {
        m.insert("prefill_kv_capacity_units".into(), json!(u));
    }
    if let Some(p) = &sc.preemption {
        m.insert("preemption".into(), json!(p));
    }
    if let Some(n) = sc.preemptions {
        m.insert("preemptions".into(), json!(n));
    }
    if let Some(n) = sc.recompute_tokens {
        m.insert("recompute_tokens".into(), json!(n));
    }
    if let Some(w) = &sc.swap {
        m.insert(
            "swap".into(),
            json!({"out_GB": num(w.out_gb), "in_GB": num(w.in_gb), "seconds": num(w.seconds),
                   "J": num(w.j)}),
        );
    }
    if let Some(p) = &sc.prefix_cache {
        m.insert(
            "prefix_cache".into(),
            json!({"hit_rate": num(p.hit_rate), "hit_tokens": p.hit_tokens,
                   "prompt_tokens": p.prompt_tokens, "evicted_tokens": p.evicted_tokens,
                   "cached_tokens_end": p.cached_tokens_end}),
        );
    }
    if let Some(h) = &sc.prefix_handoff {
        m.insert(
            "prefix_handoff".into(),
            json!({"handoffs": h.handoffs, "handoffs_hit": h.handoffs_hit,
                   "prompt_tokens": h.prompt_tokens, "hit_tokens": h.hit_tokens,
                   "hit_rate": num(h.hit_rate), "evicted_tokens": h.evicted_tokens,
                   "cached_tokens_end": h.cached_tokens_end, "decode_router": h.decode_router}),
        );
    }
    if let Some(p) = &sc.speculative {
        m.insert(
            "speculative".into(),
            json!({"draft": p.draft, "gamma": p.gamma, "alpha": num(p.alpha),
                   "verify_rows": p.verify_rows, "tokens_per_verify": num(p.tokens_per_verify),
                   "closed_form": num(p.closed_form), "draft_time_frac": num(p.draft_time_frac)}),
        );
    }
    Value::Object(m)
}

/// The reference's `summarise(res)` dictionary of run summary `s` (see the module docs).
pub fn summarise(s: &Summary) -> Value {
    let mut out = Map::new();
    out.insert("mode".into(), json!(s.mode.as_str()));
    if let Some(p) = &s.pools {
        out.insert(
            "pools".into(),
            json!({"prefill": p.prefill, "decode": p.decode}),
        );
    }
    out.insert(
        "requests".into(),
        json!({"completed": s.requests.completed, "rejected": s.requests.rejected,
               "measured": s.requests.measured}),
    );
    out.insert(
        "latency_s".into(),
        json!({"ttft": dist(&s.ttft_s), "tpot": dist(&s.tpot_s), "itl": dist(&s.itl_s),
               "e2e": dist(&s.e2e_s)}),
    );
    out.insert(
        "throughput".into(),
        json!({"output_tok_per_s": num(s.throughput_tok_s), "req_per_s": num(s.throughput_rps),
               "goodput_req_per_s": num(s.goodput_rps), "slo_attainment": num(s.slo_attainment)}),
    );
    let mut util: Map<String, Value> = s
        .instances
        .iter()
        .map(|i| (i.name.clone(), num(i.utilisation)))
        .collect();
    util.insert("kv-link".into(), num(s.link_busy));
    out.insert("utilisation".into(), Value::Object(util));
    out.insert("kv_link".into(), kv_link(s));
    out.insert(
        "efficiency".into(),
        per_instance(s, |i| {
            json!({"mfu": num(i.mfu), "mbu": num(i.mbu), "mean_batch": num(i.mean_batch),
                   "steps": i.steps})
        }),
    );
    out.insert(
        "compute_bound_fraction".into(),
        per_instance(s, |i| num(i.compute_bound_frac)),
    );
    out.insert(
        "stage_breakdown_s".into(),
        stages(s, s.stage_breakdown_s.as_array()),
    );
    out.insert("stage_share".into(), stages(s, s.stage_share.as_array()));
    let h = &s.hotspot;
    out.insert(
        "hotspots".into(),
        json!({"stage": h.stage, "resource": h.resource, "resource_util": num(h.resource_util),
               "busy_over_90pct": h.busy_over_90pct}),
    );
    out.insert(
        "littles_law".into(),
        json!({"L_measured": num(s.littles_law.l_measured),
               "lambda_W": num(s.littles_law.lambda_w)}),
    );
    out.insert("energy".into(), energy(s));
    out.insert("sim_time_s".into(), num(s.horizon_s));
    if let Some(o) = &s.optical {
        let m: Map<String, Value> = o
            .iter()
            .map(|x| {
                (
                    x.name.clone(),
                    json!({"optical_bound_frac": num(x.optical_bound_frac),
                           "optical_flops": num(x.optical_flops),
                           "conversion_J": num(x.conversion_j), "static_J": num(x.static_j)}),
                )
            })
            .collect();
        out.insert("optical".into(), Value::Object(m));
    }
    if let Some(sc) = &s.scheduler {
        out.insert("scheduler".into(), scheduler(sc));
    }
    if let Some(p) = &s.parallel {
        let m: Map<String, Value> = p
            .iter()
            .map(|x| {
                (
                    x.role.as_str().to_string(),
                    json!({"tp": x.tp, "pp": x.pp, "ep": x.ep, "microbatches": x.microbatches,
                           "expert_imbalance": num(x.expert_imbalance), "link": x.link,
                           "busy_s": num(x.busy_s), "comm_s": num(x.comm_s),
                           "comm_J": num(x.comm_j), "comm_frac": num(x.comm_frac)}),
                )
            })
            .collect();
        out.insert("parallel".into(), Value::Object(m));
    }
    if let Some(f) = &s.formats {
        out.insert(
            "formats".into(),
            json!({"weights": f.weights.as_str(), "kv": f.kv.as_str(),
                   "compute": f.compute.as_str(), "weight_bytes": num(f.weight_bytes),
                   "kv_bytes": num(f.kv_bytes)}),
        );
    }
    if let Some(p) = &s.ppa {
        out.insert(
            "ppa".into(),
            serde_json::to_value(p).expect("the ppa block is plain data"),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_spells_non_finite_values_as_the_fixtures_do() {
        assert_eq!(num(1.5), json!(1.5));
        assert_eq!(num(0.0), json!(0.0));
        assert_eq!(num(-2.25), json!(-2.25));
        assert_eq!(num(f64::NAN), json!("NaN"));
        assert_eq!(num(f64::INFINITY), json!("Infinity"));
        assert_eq!(num(f64::NEG_INFINITY), json!("-Infinity"));
        // The largest finite value stays a number.
        assert_eq!(num(f64::MAX).as_f64(), Some(f64::MAX));
    }
}
