//! Capacity questions (simulator.md §5.9): closed-form upper bounds per resource, and the highest
//! Poisson rate that still meets the SLO target, by bisection on full simulations.

use disagg_model::Error;
use serde::Serialize;

use crate::pymath::py_floordiv;
use crate::scenario::{Mode, SimConfig};
use crate::serving::simulate;

/// Analytic capacity bounds, requests/s (`search.analytic_capacity`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analytic {
    /// Prefill pool bound (disagg).
    pub prefill_rps: Option<f64>,
    /// Decode pool bound (disagg).
    pub decode_rps: Option<f64>,
    /// KV link bound (disagg).
    pub kv_link_rps: Option<f64>,
    /// Colocated pool bound (colocated).
    pub colocated_rps: Option<f64>,
    /// Which bound is lowest: `prefill`, `decode`, `kv-link` or `colocated` (first on ties).
    pub bottleneck: String,
    /// The lowest bound.
    pub ceiling_rps: f64,
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
    let per_batch = py_floordiv(cfg.max_prefill_tokens as f64, p).max(1.0) as u64;
    let pi = p as u64; // int(p)
    let prefill_rate = per_batch as f64 / cm.prefill((0..per_batch).map(|_| pi)).time_s;
    let cap = cm.kv_capacity_tokens().ok()? as f64;
    let fit = py_floordiv(cap, p + o) as u64;
    let b = (cfg.max_decode_batch as u64).min(fit).max(1);
    let ctx_each = (p + o / 2.0) as u64; // int(p + o/2)
    let step = cm.decode_sum(ctx_each * b, b).time_s;
    let o1 = o - 1.0;
    let decode_rate = b as f64 / step / if o1 > 1.0 { o1 } else { 1.0 };
    let mut bounds: Vec<(&str, f64)> = Vec::new();
    let mut a = Analytic {
        prefill_rps: None,
        decode_rps: None,
        kv_link_rps: None,
        colocated_rps: None,
        bottleneck: String::new(),
        ceiling_rps: f64::NAN,
    };
    match cfg.mode {
        Mode::Disagg => {
            let np = cfg.prefill_pool().map_or(0, |x| x.instances) as f64;
            let nd = cfg.decode_pool().map_or(0, |x| x.instances) as f64;
            let nbytes = p * cfg.model.kv_bytes_per_token();
            let pr = np * prefill_rate;
            let dr = nd * decode_rate;
            // One link per prefill instance or pair multiplies the bound (x1 for the shared link).
            let kr = cfg.link.channels as f64 / cfg.link.transfer_time(nbytes)
                * cfg.link_count().max(1) as f64;
            a.prefill_rps = Some(pr);
            a.decode_rps = Some(dr);
            a.kv_link_rps = Some(kr);
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

/// SLO attainment of `cfg`'s workload regenerated at `rate`.
pub fn attainment_at(cfg: &SimConfig, rate: f64) -> Result<f64, Error> {
    let wl = cfg.workload.at_rate(rate).generate();
    Ok(simulate(cfg, &wl)?.slo_attainment())
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
