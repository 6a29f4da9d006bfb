//! The `scheduler` block (`docs/levers.md#lever-metrics`): the scheduled run's block plus the measured
//! requests' scheduling delay and normalised latency.

use super::ctx::Ctx;
use crate::engine::request::Req;
use crate::sched::SchedulerSummary;

/// `statistics.median` of `prefill_start - arrival` over the measured requests (NaN if none).
fn sched_delay_p50(reqs: &[Req], steady: &[u32]) -> f64 {
    let mut v: Vec<f64> = steady
        .iter()
        .map(|&i| {
            let r = &reqs[i as usize];
            r.prefill_start - r.arrival
        })
        .collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        (v[k - 1] + v[k]) / 2.0
    }
}

/// The scheduler block (`None` unless the levers were on).
pub(super) fn scheduler(c: &Ctx<'_>) -> Option<SchedulerSummary> {
    let (reqs, steady) = (c.reqs, c.steady());
    c.res.sched.as_ref().map(|s| {
        let mut b = s.report.clone();
        b.sched_delay_p50_s = Some(sched_delay_p50(reqs, steady));
        b.norm_latency_s_per_token = Some(
            crate::pymath::neumaier_sum(steady.iter().map(|&i| {
                let r = &reqs[i as usize];
                (r.finish - r.arrival) / r.output as f64
            })) / steady.len() as f64,
        );
        b
    })
}
