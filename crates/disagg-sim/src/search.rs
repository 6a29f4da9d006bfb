//! Capacity questions (`docs/serving-model.md#capacity`): closed-form upper bounds per resource, and the highest
//! Poisson rate that still meets the SLO target, by bisection on full simulations.

use disagg_model::handoff::transfer_bytes;
use disagg_model::{CostModel, Error, KvTransit};
use serde::Serialize;

use crate::pymath::py_floordiv;
use crate::scenario::{Mode, SimConfig};
use crate::serving::simulate;
use crate::workload::Source;

/// Analytic capacity bounds, requests/s (`search.analytic_capacity`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analytic {
    /// Prefill pool bound (disagg).
    pub prefill_rps: Option<f64>,
    /// Decode pool bound (disagg).
    pub decode_rps: Option<f64>,
    /// KV link bound (disagg), the reference's: uncompressed bytes, whatever `--kv-compress` says
    /// ([`kv_link_reference_rps`]). This is the figure `bottleneck` and `ceiling_rps` use.
    pub kv_link_rps: Option<f64>,
    /// KV link bound (disagg) on the bytes actually sent: compressed wire bytes and any in-link
    /// stage's time ([`kv_link_wire_rps`]; `plan` prunes with it). Equal to `kv_link_rps` without
    /// compression.
    pub kv_link_wire_rps: Option<f64>,
    /// Colocated pool bound (colocated).
    pub colocated_rps: Option<f64>,
    /// Which bound is lowest: `prefill`, `decode`, `kv-link` or `colocated` (first on ties).
    pub bottleneck: String,
    /// The lowest bound.
    pub ceiling_rps: f64,
}

impl Analytic {
    /// No bounds yet (filled in by [`analytic_capacity`] and `capacity::per_pool`).
    pub fn blank() -> Analytic {
        Analytic {
            prefill_rps: None,
            decode_rps: None,
            kv_link_rps: None,
            kv_link_wire_rps: None,
            colocated_rps: None,
            bottleneck: String::new(),
            ceiling_rps: f64::NAN,
        }
    }
}

/// The KV-link bound, the one formula behind both figures of [`Analytic`]: hand-offs per second
/// all of `cfg`'s links carry when each hand-off of `kv_bytes` uncompressed bytes (a
/// `prompt_tokens`-token prompt) holds a channel for its idle-link transfer time through `transit`
/// ([`disagg_model::transfer`]): `channels / transfer_s * links`.
pub fn kv_link_bound_rps(
    cfg: &SimConfig,
    transit: Option<&KvTransit>,
    prompt_tokens: u64,
    kv_bytes: f64,
) -> f64 {
    let x = transfer_bytes(
        cfg.model.kv_bytes,
        &cfg.link,
        transit,
        prompt_tokens,
        kv_bytes,
    );
    // One link per prefill instance or pair multiplies the bound (x1 for the shared link).
    cfg.link.channels as f64 / x.time_s * cfg.link_count().max(1) as f64
}

/// The reference's KV-link bound at a mean prompt of `mean_prompt` tokens: `mean_prompt *
/// kv_bytes_per_token` uncompressed bytes, no compression stage.
pub fn kv_link_reference_rps(cfg: &SimConfig, mean_prompt: f64) -> f64 {
    // A model with windowed layers or a linear state hands off what it keeps, not tokens x
    // bytes per token (issue 16): its `int(mean_prompt)`-token hand-off.
    let nbytes = if cfg.model.kv_is_bounded() {
        cfg.model.handoff_bytes(mean_prompt as u64)
    } else {
        mean_prompt * cfg.model.kv_bytes_per_token()
    };
    kv_link_bound_rps(cfg, None, mean_prompt as u64, nbytes)
}

/// The KV-link bound on the bytes sent: a prompt of `int(mean_prompt)` tokens through `cfg`'s
/// KV compression (wire bytes, in-link stage time and latency included).
pub fn kv_link_wire_rps(cfg: &SimConfig, mean_prompt: f64) -> f64 {
    let tokens = mean_prompt as u64;
    let nbytes = cfg.model.handoff_bytes(tokens);
    kv_link_bound_rps(cfg, cfg.kv_transit.as_ref(), tokens, nbytes)
}

/// One prefill instance of cost model `cm` flat out at mean prompt `p`: batches of
/// `max(1, max_prefill_tokens // p)` prompts of `int(p)` tokens, requests/s.
pub fn prefill_instance_rps(cfg: &SimConfig, cm: &CostModel, p: f64) -> f64 {
    let per_batch = py_floordiv(cfg.max_prefill_tokens as f64, p).max(1.0) as u64;
    let pi = p as u64; // int(p)
    per_batch as f64 / cm.prefill((0..per_batch).map(|_| pi)).time_s
}

/// One decode instance of cost model `cm` holding `kv_capacity_tokens` flat out at mean lengths
/// `p`, `o`: `b = min(max_decode_batch, cap // (p + o))` (at least 1) sequences at context
/// `int(p + o/2)`, each needing `max(1, o - 1)` steps, requests/s.
pub fn decode_instance_rps(
    cfg: &SimConfig,
    cm: &CostModel,
    kv_capacity_tokens: u64,
    p: f64,
    o: f64,
) -> f64 {
    // A model with windowed layers or a linear state reserves `kv_units(int(p + o))` units.
    let need = if cfg.model.kv_is_bounded() {
        cfg.model.kv_units((p + o) as u64) as f64
    } else {
        p + o
    };
    let fit = py_floordiv(kv_capacity_tokens as f64, need) as u64;
    let b = (cfg.max_decode_batch as u64).min(fit).max(1);
    let ctx_each = (p + o / 2.0) as u64; // int(p + o/2)
    let step = cm.decode_sum(ctx_each * b, b).time_s;
    let o1 = o - 1.0;
    b as f64 / step / if o1 > 1.0 { o1 } else { 1.0 }
}

/// The closed-form bounds for `cfg` at its workload's mean lengths: every pool flat out at its
/// best batch, no queueing. Uses the cost model of `device` x `devices_per_instance` with the
/// global power cap and no DVFS (the reference ignores per-pool settings here). `None` if the model
/// does not fit there, or the mean lengths are below one token.
pub fn analytic_capacity(cfg: &SimConfig) -> Option<Analytic> {
    let cm = cfg.base_cost.as_ref()?;
    let p = cfg.workload.prompt.mean;
    let o = cfg.workload.output.mean;
    if !(p >= 1.0 && o >= 1.0) {
        return None;
    }
    let prefill_rate = prefill_instance_rps(cfg, cm, p);
    let decode_rate = decode_instance_rps(cfg, cm, cm.kv_capacity_tokens().ok()?, p, o);
    let mut bounds: Vec<(&str, f64)> = Vec::new();
    let mut a = Analytic::blank();
    match cfg.mode {
        Mode::Disagg => {
            let np = cfg.prefill_pool().map_or(0, |x| x.instances) as f64;
            let nd = cfg.decode_pool().map_or(0, |x| x.instances) as f64;
            let pr = np * prefill_rate;
            let dr = nd * decode_rate;
            let kr = kv_link_reference_rps(cfg, p);
            a.prefill_rps = Some(pr);
            a.decode_rps = Some(dr);
            a.kv_link_rps = Some(kr);
            a.kv_link_wire_rps = Some(kv_link_wire_rps(cfg, p));
            bounds.extend([("prefill", pr), ("decode", dr), ("kv-link", kr)]);
        }
        Mode::Colocated => {
            let nc = cfg.colocated_pool().map_or(0, |x| x.instances) as f64;
            let per_inst = 1.0 / (1.0 / prefill_rate + 1.0 / decode_rate);
            let cr = nc * per_inst;
            a.colocated_rps = Some(cr);
            bounds.push(("colocated", cr));
        }
    }
    let mut best = 0;
    for (k, b) in bounds.iter().enumerate() {
        if b.1 < bounds[best].1 {
            best = k;
        }
    }
    a.bottleneck = bounds[best].0.to_string();
    a.ceiling_rps = bounds[best].1;
    Some(a)
}

/// Result of [`max_sustainable_rate`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SustainableRate {
    /// Highest rate found whose SLO attainment is at least the target.
    pub rate: f64,
    /// Final bracket `(lo, hi)`.
    pub bracket: (f64, f64),
    /// Simulations run (counted as the reference counts them).
    pub simulations: u32,
}

/// SLO attainment of `cfg`'s workload regenerated at `rate`: the Poisson generator (the
/// reference's search), or for a session workload its sessions at that rate (with their
/// closed-loop turns and prefix chains).
pub fn attainment_at(cfg: &SimConfig, rate: f64) -> Result<f64, Error> {
    let spec = cfg.workload.at_rate(rate);
    match &cfg.source {
        Source::Sessions { .. } => {
            let w = cfg.source.workload(&spec);
            Ok(crate::serving::simulate_workload(cfg, &w, &mut ())?.slo_attainment())
        }
        _ => Ok(simulate(cfg, &spec.generate())?.slo_attainment()),
    }
}

/// The highest Poisson rate whose SLO attainment is `>= target` (`search.max_sustainable_rate`):
/// `hi` defaults to the analytic ceiling; while `hi` still meets the target the bracket moves up by
/// 1.5x (at most 64 times); then bisection while `hi - lo > rel_tol * hi`.
pub fn max_sustainable_rate(
    cfg: &SimConfig,
    target: f64,
    rel_tol: f64,
    lo: f64,
    hi: Option<f64>,
) -> Result<SustainableRate, Error> {
    if !(target.is_finite() && rel_tol.is_finite() && rel_tol > 0.0 && lo.is_finite() && lo >= 0.0)
    {
        return Err(Error::invalid(
            "max_sustainable_rate",
            "target, rel_tol and lo must be finite (rel_tol > 0, lo >= 0)",
        ));
    }
    let mut hi = match hi {
        Some(h) => h,
        None => {
            analytic_capacity(cfg)
                .ok_or_else(|| {
                    Error::invalid(
                        "max_sustainable_rate",
                        "no analytic ceiling for this configuration; give an upper rate",
                    )
                })?
                .ceiling_rps
        }
    };
    if !(hi.is_finite() && hi > lo) {
        return Err(Error::invalid(
            "max_sustainable_rate",
            format!("upper rate {hi} must be finite and above {lo}"),
        ));
    }
    let mut lo = lo;
    let mut runs = 0u32;
    let mut grow = 0;
    while attainment_at(cfg, hi)? >= target {
        runs += 1;
        lo = hi;
        hi *= 1.5;
        grow += 1;
        if grow >= 64 {
            return Err(Error::invalid(
                "max_sustainable_rate",
                format!("SLO attainment still meets {target} at {hi} req/s"),
            ));
        }
    }
    runs += 1;
    while hi - lo > rel_tol * hi {
        let mid = (lo + hi) / 2.0;
        runs += 1;
        if attainment_at(cfg, mid)? >= target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(SustainableRate {
        rate: lo,
        bracket: (lo, hi),
        simulations: runs,
    })
}

#[cfg(test)]
mod session_search_tests {
    use super::*;

    /// A session workload is searched as sessions: the attainment at a rate is the run of the
    /// same scenario at that rate (closed-loop turns, prefix chains), not a Poisson stand-in.
    #[test]
    fn a_session_workload_is_searched_with_its_sessions() {
        let cat = disagg_model::Catalogue::builtin();
        let at = |rate: &str| {
            crate::Scenario::from_flags([
                "--workload",
                "chat",
                "--requests",
                "120",
                "--rate",
                rate,
                "--prefix-caching",
                "--ttft-slo",
                "0.04",
                "--tpot-slo",
                "0.0142",
            ])
            .unwrap()
            .build(&cat)
            .unwrap()
        };
        let base = at("1");
        for rate in ["0.5", "40"] {
            let direct = crate::simulate_config(&at(rate)).unwrap().slo_attainment();
            let searched = attainment_at(&base, rate.parse().unwrap()).unwrap();
            assert_eq!(searched.to_bits(), direct.to_bits(), "rate {rate}");
        }
        let poisson = simulate(&base, &base.workload.at_rate(40.0).generate())
            .unwrap()
            .slo_attainment();
        let sessions = attainment_at(&base, 40.0).unwrap();
        assert_ne!(
            poisson.to_bits(),
            sessions.to_bits(),
            "sessions differ from Poisson"
        );
    }
}
