//! Per-pool analytic capacity (`docs/serving-model.md#per-pool-capacity`): the closed-form bounds of
//! [`crate::search::analytic_capacity`], each pool with its own cost model (its device, devices per
//! instance, parallel layout, formats, power cap, DVFS and any draft's share of the KV memory),
//! and the ceiling on the bytes actually sent that `plan` prunes with and `summary.overload`
//! compares the offered rate with.
//!
//! [`crate::search::analytic_capacity`] stays the reference's (the global device x
//! `devices_per_instance`, `docs/levers.md#quirks` item 5): `max_sustainable_rate` starts its
//! bracket from it, bit for bit with the reference's bisection.

use crate::scenario::{Mode, SimConfig};
use crate::search::{
    decode_instance_rps, kv_link_reference_rps, kv_link_wire_rps, prefill_instance_rps, Analytic,
};

/// The per-pool bounds of `cfg` at its workload's mean lengths: every pool flat out at its best
/// batch, no queueing, each pool with its own cost model and KV capacity. The same keys as
/// [`crate::search::analytic_capacity`] (the ceiling and the bottleneck use the reference's
/// uncompressed KV-link bound); equal to it, bit for bit, when every pool runs the global
/// device x `devices_per_instance` with the global power cap, no layout, no format, no DVFS and
/// no draft. `None` if the mean lengths are below one token.
pub fn per_pool(cfg: &SimConfig) -> Option<Analytic> {
    let p = cfg.workload.prompt.mean;
    let o = cfg.workload.output.mean;
    if !(p >= 1.0 && o >= 1.0) {
        return None;
    }
    let mut a = Analytic::blank();
    let bounds: Vec<(&str, f64)> = match cfg.mode {
        Mode::Disagg => {
            let (pp, dp) = (cfg.prefill_pool()?, cfg.decode_pool()?);
            let pr = pp.instances as f64 * prefill_instance_rps(cfg, &pp.cost, p);
            let dr = dp.instances as f64
                * decode_instance_rps(cfg, &dp.cost, dp.kv_capacity_tokens, p, o);
            let kr = kv_link_reference_rps(cfg, p);
            a.prefill_rps = Some(pr);
            a.decode_rps = Some(dr);
            a.kv_link_rps = Some(kr);
            a.kv_link_wire_rps = Some(kv_link_wire_rps(cfg, p));
            vec![("prefill", pr), ("decode", dr), ("kv-link", kr)]
        }
        Mode::Colocated => {
            let cp = cfg.colocated_pool()?;
            let prefill_rate = prefill_instance_rps(cfg, &cp.cost, p);
            let decode_rate = decode_instance_rps(cfg, &cp.cost, cp.kv_capacity_tokens, p, o);
            let per_inst = 1.0 / (1.0 / prefill_rate + 1.0 / decode_rate);
            let cr = cp.instances as f64 * per_inst;
            a.colocated_rps = Some(cr);
            vec![("colocated", cr)]
        }
    };
    let (name, rate) = lowest(&bounds);
    a.bottleneck = name.to_string();
    a.ceiling_rps = rate;
    Some(a)
}

/// The lowest of `bounds` (the first on ties).
fn lowest<'a>(bounds: &[(&'a str, f64)]) -> (&'a str, f64) {
    let mut best = 0;
    for (k, b) in bounds.iter().enumerate() {
        if b.1 < bounds[best].1 {
            best = k;
        }
    }
    bounds[best]
}

/// The ceiling of a configuration and the stage that sets it, on what is actually simulated:
/// [`per_pool`]'s pool bounds and the KV link on the bytes sent (`kv_link_wire_rps`: compressed
/// wire bytes and any in-link stage), not the reference's uncompressed figure. `plan` prunes
/// with it and `summary.overload` compares the offered rate with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Ceiling {
    /// The lowest bound, requests/s.
    pub rps: f64,
    /// Its stage: `prefill`, `decode`, `kv-link` or `colocated` (the first on ties, in that order).
    pub bottleneck: &'static str,
}

/// [`Ceiling`] of `cfg` (`None` as [`per_pool`]).
pub fn ceiling(cfg: &SimConfig) -> Option<Ceiling> {
    let a = per_pool(cfg)?;
    let bounds: Vec<(&'static str, f64)> = match cfg.mode {
        Mode::Disagg => vec![
            ("prefill", a.prefill_rps?),
            ("decode", a.decode_rps?),
            ("kv-link", a.kv_link_wire_rps?),
        ],
        Mode::Colocated => vec![("colocated", a.colocated_rps?)],
    };
    let (bottleneck, _) = lowest(&bounds);
    // `min` in this order (NaN-tolerant as f64::min), as `plan` has always computed it.
    let rps = bounds[1..].iter().fold(bounds[0].1, |m, b| m.min(b.1));
    Some(Ceiling { rps, bottleneck })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::analytic_capacity;
    use disagg_model::{Catalogue, CostModel, CostOptions};

    fn cfg(flags: &[&str]) -> SimConfig {
        crate::Scenario::from_flags(flags)
            .unwrap()
            .build(&Catalogue::builtin())
            .unwrap()
    }

    /// A 4 x TP2 prefill pool has the same bounds whatever the global devices per instance says
    /// (the pools are what is simulated); the reference's figure moves with it.
    #[test]
    fn a_tp2_prefill_pool_does_not_follow_the_global_device_count() {
        let at = |dpi: &str| {
            cfg(&[
                "--model",
                "llama3-70b",
                "--prefill",
                "4",
                "--decode",
                "2",
                "--devices-per-instance",
                dpi,
                "--prefill-devices-per-instance",
                "2",
                "--decode-devices-per-instance",
                "4",
            ])
        };
        let (c8, c2) = (at("8"), at("2"));
        let (a8, a2) = (per_pool(&c8).unwrap(), per_pool(&c2).unwrap());
        assert_eq!(a8, a2);
        let r8 = analytic_capacity(&c8).unwrap();
        let r2 = analytic_capacity(&c2);
        assert_ne!(Some(r8.prefill_rps), r2.map(|r| r.prefill_rps));
        // The prefill bound is four instances of 2 x H100 at the mean prompt.
        let cm = CostModel::new(&c8.model, &c8.pools[0].device, 2, CostOptions::default()).unwrap();
        let want = 4.0 * prefill_instance_rps(&c8, &cm, c8.workload.prompt.mean);
        assert_eq!(a8.prefill_rps, Some(want));
    }

    /// Pools equal to the global device and count: the reference's figures, bit for bit.
    #[test]
    fn homogeneous_pools_give_the_reference_bounds() {
        for flags in [
            &["--model", "llama3-8b", "--devices-per-instance", "1"][..],
            &["--model", "llama3-70b", "--prefill", "2", "--decode", "3"][..],
            &[
                "--model",
                "llama3-8b",
                "--mode",
                "colocated",
                "--decode",
                "3",
            ][..],
            &[
                "--model",
                "llama3-8b",
                "--kv-compress",
                "fp8",
                "--link",
                "eth-25g",
            ][..],
        ] {
            let c = cfg(flags);
            assert_eq!(per_pool(&c), analytic_capacity(&c), "{flags:?}");
        }
    }

    /// The bounds written out with the formulas of `docs/serving-model.md#capacity` for
    /// Llama-3-8B on 1 x H100 at prompt 1000, output 200: prefill batches of 8 prompts, decode
    /// batches of `min(256, cap // 1200)` at context 1100 for 199 steps.
    #[test]
    fn bounds_follow_the_formulas() {
        let c = cfg(&[
            "--model",
            "llama3-8b",
            "--devices-per-instance",
            "1",
            "--prefill",
            "2",
            "--decode",
            "3",
            "--prompt",
            "1000",
            "--output",
            "200",
            "--link",
            "eth-25g",
        ]);
        let a = per_pool(&c).unwrap();
        let cm = &c.pools[0].cost;
        let prefill = 2.0 * 8.0 / cm.prefill([1000u64; 8]).time_s;
        assert_eq!(a.prefill_rps, Some(prefill));
        let dm = &c.pools[1].cost;
        let b = (dm.kv_capacity_tokens().unwrap() / 1200).min(256);
        let step = dm.decode_sum(1100 * b, b).time_s;
        let decode = 3.0 * (b as f64 / step / 199.0);
        assert_eq!(a.decode_rps, Some(decode));
        // Llama-3-8B's 1000-token KV (131,072,000 bytes) over 25 GbE (3.125 GB/s, 20 us).
        let link = 1.0 / (20e-6 + 131_072_000.0 / 3.125e9);
        assert!((a.kv_link_rps.unwrap() / link - 1.0).abs() < 1e-12);
        let low = prefill.min(decode).min(a.kv_link_rps.unwrap());
        assert_eq!(a.ceiling_rps, low);
        let ceil = ceiling(&c).unwrap();
        assert_eq!(ceil.rps, low);
        assert_eq!(ceil.bottleneck, a.bottleneck.as_str());
    }

    /// The colocated bound: each instance alternates a prefill and a decode at its own rates.
    #[test]
    fn colocated_bound_is_the_harmonic_combination() {
        let c = cfg(&[
            "--model",
            "llama3-8b",
            "--mode",
            "colocated",
            "--prefill",
            "1",
            "--decode",
            "1",
            "--devices-per-instance",
            "2",
        ]);
        let a = per_pool(&c).unwrap();
        let cp = c.colocated_pool().unwrap();
        let (p, o) = (c.workload.prompt.mean, c.workload.output.mean);
        let pr = prefill_instance_rps(&c, &cp.cost, p);
        let dr = decode_instance_rps(&c, &cp.cost, cp.kv_capacity_tokens, p, o);
        assert_eq!(a.colocated_rps, Some(2.0 * (1.0 / (1.0 / pr + 1.0 / dr))));
        assert_eq!(ceiling(&c).unwrap().bottleneck, "colocated");
    }
}
