//! The `energy` block (`docs/cost-model.md#energy`; the optical engines: `docs/levers.md#fft-mixing`) and the
//! figures per token, per request and per watt.

use serde::Serialize;

use super::ctx::Ctx;
use super::instances::OpticalSummary;

/// Energy totals (`docs/cost-model.md#energy`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Energy {
    /// Total, J.
    pub total_j: f64,
    /// Static (idle power x horizon, every instance), J.
    pub static_j: f64,
    /// Dynamic compute, J.
    pub compute_j: f64,
    /// Dynamic memory, J.
    pub memory_j: f64,
    /// Link, J.
    pub link_j: f64,
    /// In-link compression stage, J (0 without one).
    pub transit_j: f64,
    /// `static / total`.
    pub static_frac: f64,
    /// `compute / total`.
    pub compute_frac: f64,
    /// `memory / total`.
    pub memory_frac: f64,
    /// `link / total`.
    pub link_frac: f64,
    /// `transit / total` (only with a compression stage).
    pub transit_frac: Option<f64>,
    /// Host-link swap energy, J (paged KV with swap preemption only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_j: Option<f64>,
    /// `swap / total` (with `swap_j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_frac: Option<f64>,
    /// Scale-up link energy of the parallel layouts, J (only when a pool has a layout;
    /// `docs/cost-model.md#parallelism`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_up_j: Option<f64>,
    /// `scale_up / total` (with `scale_up_j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_up_frac: Option<f64>,
    /// Static energy of the optical transform engines, `Σ optical_static_w x H`, J (only when a
    /// device has an engine; `docs/levers.md#fft-mixing`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optical_static_j: Option<f64>,
    /// `optical_static / total` (with `optical_static_j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optical_static_frac: Option<f64>,
    /// The engines' conversion energy, J (with `optical_static_j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optical_conversions_j: Option<f64>,
    /// `optical_conversions / total` (with `optical_conversions_j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optical_conversions_frac: Option<f64>,
}

/// The energy block, from the instances' books, the links, and (when present) the optical
/// engines, swapping and scale-up communication; its `total_j` is the run's total.
pub(super) fn energy(c: &Ctx<'_>, optical: &[OpticalSummary]) -> Energy {
    let (cfg, res, h) = (c.cfg, c.res, c.h);
    let mut static_j = 0.0;
    let mut compute_j = 0.0;
    let mut memory_j = 0.0;
    for i in &res.instances {
        let pool = &cfg.pools[i.pool];
        let idle = pool.cost.idle_w();
        let s_j = idle * h;
        let st = &i.stats;
        static_j += s_j;
        compute_j += st.compute_j;
        memory_j += st.memory_j;
    }
    let link_j = res.link.energy_j;
    let mut total = static_j + compute_j + memory_j + link_j;
    let optical_j = c.engines().then(|| {
        let (mut o_static, mut o_conv) = (0.0, 0.0);
        for o in optical {
            o_static += o.static_j;
            o_conv += o.conversion_j;
        }
        (o_static, o_conv)
    });
    if let Some((o_static, o_conv)) = optical_j {
        total = (total + o_static) + o_conv;
    }
    let transit = cfg.kv_transit.is_some();
    if transit {
        total += res.link.transit_j;
    }
    let swap_j = res.sched.as_ref().and_then(|s| s.swap_j);
    if let Some(sj) = swap_j {
        total += sj;
    }
    let scale_up_j = cfg.scenario.any_layout().then(|| {
        let mut c = 0.0;
        for i in &res.instances {
            c += i.stats.comm_j;
        }
        c
    });
    if let Some(c) = scale_up_j {
        total += c;
    }
    Energy {
        total_j: total,
        static_j,
        compute_j,
        memory_j,
        link_j,
        transit_j: res.link.transit_j,
        static_frac: static_j / total,
        compute_frac: compute_j / total,
        memory_frac: memory_j / total,
        link_frac: link_j / total,
        transit_frac: transit.then(|| res.link.transit_j / total),
        swap_j,
        swap_frac: swap_j.map(|sj| sj / total),
        scale_up_j,
        scale_up_frac: scale_up_j.map(|c| c / total),
        optical_static_j: optical_j.map(|o| o.0),
        optical_static_frac: optical_j.map(|o| o.0 / total),
        optical_conversions_j: optical_j.map(|o| o.1),
        optical_conversions_frac: optical_j.map(|o| o.1 / total),
    }
}
