//! The `requests` block and the measured requests' latencies and SLOs (`docs/serving-model.md#metrics`-`docs/serving-model.md#metrics`).

use serde::Serialize;

use super::ctx::Ctx;
use crate::engine::request::Req;
use crate::scenario::{FirstToken, SimConfig};
use crate::stats::{dist, p50_p99, Dist, P50P99};

/// Request counts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RequestCounts {
    /// Requests that finished.
    pub completed: u64,
    /// Requests rejected at arrival.
    pub rejected: u64,
    /// Finished requests after the warm-up cut (the latency sample).
    pub measured: u64,
}

/// Latencies of the measured requests, in seconds (see [`RunResult::measured_latencies`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeasuredLatencies {
    /// The measured requests' ids, in arrival order.
    pub rids: Vec<u32>,
    /// Time to first token, one per measured request.
    pub ttft_s: Vec<f64>,
    /// Time per output token after the first, one per measured request with output >= 2.
    pub tpot_s: Vec<f64>,
    /// End to end, one per measured request.
    pub e2e_s: Vec<f64>,
}

pub(super) fn measured_latencies(
    reqs: &[Req],
    steady: &[u32],
    conv: FirstToken,
) -> MeasuredLatencies {
    MeasuredLatencies {
        rids: steady.to_vec(),
        ttft_s: steady
            .iter()
            .map(|&i| {
                let r = &reqs[i as usize];
                r.emitted(conv) - r.arrival
            })
            .collect(),
        tpot_s: steady
            .iter()
            .filter_map(|&i| tpot(&reqs[i as usize], conv))
            .collect(),
        e2e_s: steady
            .iter()
            .map(|&i| {
                let r = &reqs[i as usize];
                r.finish - r.arrival
            })
            .collect(),
    }
}

#[inline]
pub(super) fn tpot(r: &Req, conv: FirstToken) -> Option<f64> {
    if r.output < 2 {
        None
    } else {
        Some((r.finish - r.emitted(conv)) / (r.output - 1) as f64)
    }
}

#[inline]
pub(super) fn meets_slo(r: &Req, cfg: &SimConfig) -> bool {
    let conv = cfg.handoff.first_token;
    r.emitted(conv) - r.arrival <= cfg.ttft_slo_s
        && match tpot(r, conv) {
            None => true,
            Some(t) => t <= cfg.tpot_slo_s,
        }
}

/// The latency blocks: TTFT, TPOT, ITL and E2E of the measured requests, and the hand-off.
pub(super) struct Latencies {
    pub ttft_s: Dist,
    pub tpot_s: Dist,
    pub itl_s: Dist,
    pub e2e_s: Dist,
    pub handoff_s: P50P99,
}

/// The latency blocks.
pub(super) fn latencies(c: &Ctx<'_>) -> Latencies {
    let reqs = c.reqs;
    let MeasuredLatencies {
        ttft_s: ttft,
        tpot_s: tpots,
        e2e_s: e2e,
        ..
    } = measured_latencies(reqs, c.steady(), c.conv);
    let itl = super::latency::itl_dist(c.res, c.steady());
    let handoffs: Vec<f64> = reqs
        .iter()
        .filter(|r| !r.kv_ready.is_nan())
        .map(|r| r.kv_ready - r.prefill_end())
        .collect();
    Latencies {
        ttft_s: dist(&ttft),
        tpot_s: dist(&tpots),
        itl_s: itl,
        e2e_s: dist(&e2e),
        handoff_s: p50_p99(&handoffs),
    }
}

/// The request counts.
pub(super) fn counts(c: &Ctx<'_>) -> RequestCounts {
    RequestCounts {
        completed: c.done.len() as u64,
        rejected: c.res.rejected,
        measured: c.steady().len() as u64,
    }
}

/// The SLO figures: requests meeting both SLOs and the attainments and goodput.
pub(super) struct Slo {
    pub met: u64,
    pub attainment: f64,
    pub attainment_offered: f64,
    pub goodput_rps: f64,
}

/// The SLO figures.
pub(super) fn slo(c: &Ctx<'_>) -> Slo {
    let reqs = c.reqs;
    let steady = c.steady();
    let met = steady
        .iter()
        .filter(|&&i| meets_slo(&reqs[i as usize], c.cfg))
        .count() as u64;
    let window = if steady.len() > 1 {
        reqs[steady[steady.len() - 1] as usize].arrival - reqs[steady[0] as usize].arrival
    } else {
        f64::NAN
    };
    Slo {
        met,
        attainment: if steady.is_empty() {
            f64::NAN
        } else {
            met as f64 / steady.len() as f64
        },
        attainment_offered: if steady.is_empty() && c.res.rejected == 0 {
            f64::NAN
        } else {
            met as f64 / (steady.len() as u64 + c.res.rejected) as f64
        },
        goodput_rps: if window > 0.0 {
            met as f64 / window
        } else {
            f64::NAN
        },
    }
}
