//! `plan --max-rate`: the highest rate that meets the SLO-attainment target.

use std::fmt::Write as _;

use disagg_model::Catalogue;
use disagg_sim::{max_sustainable_rate, Scenario};
use serde_json::{json, Value};

use super::{requests_flag, PlanOptions};
use crate::format::fixed;
use crate::memory::Runs;
use crate::UsageError;

/// The highest rate that meets the SLO-attainment target, found by simulation.
pub struct MaxRate {
    base: Scenario,
    slo_target: f64,
    rate: disagg_sim::SustainableRate,
    analytic: Option<disagg_sim::Analytic>,
    calibration: Option<Vec<disagg_sim::CalibrationSummary>>,
}

pub(super) fn max_rate(
    o: &PlanOptions,
    base: Scenario,
    cat: &Catalogue,
) -> Result<MaxRate, UsageError> {
    let cfg = base.build(cat)?;
    crate::memory::check(requests_flag(&base), &cfg, false, Runs::one(Some(o.yes)))?;
    let rate = max_sustainable_rate(&cfg, o.slo_target, 0.02, 0.0, None)?;
    let analytic = disagg_sim::analytic_capacity(&cfg);
    let calibration = disagg_sim::metrics::calibration_of(&cfg);
    Ok(MaxRate {
        base,
        slo_target: o.slo_target,
        rate,
        analytic,
        calibration,
    })
}

impl MaxRate {
    /// The document of `disagg plan --max-rate --json`.
    pub fn json(&self) -> Value {
        let r = &self.rate;
        let mut doc = json!({
            "schema_version": 1,
            "scenario": self.base.with_slos_resolved(),
            "slo_target": self.slo_target,
            "max_rate_rps": r.rate,
            "bracket_rps": [r.bracket.0, r.bracket.1],
            "simulations": r.simulations,
            "analytic": self.analytic,
        });
        if let Some(c) = &self.calibration {
            doc["calibration"] = json!(c);
        }
        doc
    }

    /// The text report of `disagg plan --max-rate`.
    pub fn text(&self) -> String {
        let r = &self.rate;
        let mut s = String::new();
        if let Some(an) = &self.analytic {
            let _ = writeln!(
                s,
                "analytic ceiling {} req/s ({} bound)",
                fixed(an.ceiling_rps, 2),
                an.bottleneck
            );
        }
        let _ = writeln!(
            s,
            "highest rate meeting {}% SLO attainment: {} req/s (bracket {} to {}, {} simulations)",
            fixed(100.0 * self.slo_target, 1),
            fixed(r.rate, 2),
            fixed(r.bracket.0, 2),
            fixed(r.bracket.1, 2),
            r.simulations
        );
        if let Some(c) = &self.calibration {
            s.push_str(&crate::report::calibration_lines(c));
        }
        s
    }
}
