//! `summary.simulated` (`docs/serving-model.md#simulated`): what was simulated, said once — the
//! model, the pools, the link, the arrivals, the SLOs and the number of requests — for the
//! report's header, `--json` and the page.

use serde::Serialize;

use super::ctx::Ctx;
use crate::scenario::{LinkTopology, Role};
use crate::workload::Source;

/// What was simulated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Simulated {
    /// The model's catalogue key (as given).
    pub model: String,
    /// `weights/kv/compute` number formats, when one is not `bf16`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub formats: Option<String>,
    /// The pools, instance order (`prefill`, `decode`; or `colocated`).
    pub pools: Vec<PoolFacts>,
    /// The KV link (a colocated run has none: `null`).
    pub link: Option<LinkFacts>,
    /// Where the requests come from.
    pub arrivals: ArrivalFacts,
    /// Requests in the workload.
    pub requests: u64,
    /// The SLOs the run was judged by.
    pub slo: SloFacts,
}

/// One pool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolFacts {
    /// `prefill`, `decode` or `colocated`.
    pub role: String,
    pub instances: u64,
    pub devices_per_instance: u32,
    /// The device's catalogue key (as given).
    pub device: String,
    /// The parallel layout `TPxPP`, when the pool has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
}

/// The KV link.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkFacts {
    /// The link's catalogue key (as given).
    pub name: String,
    pub channels: u32,
    /// `shared` (the default), `per-prefill` or `per-pair`.
    pub topology: String,
}

/// The arrivals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArrivalFacts {
    /// `poisson`, `sessions` or `trace`.
    pub source: String,
    /// The generator's rate, requests/s (sessions: of their first turns); `null` for a trace.
    pub rate_rps: Option<f64>,
    /// The named workload, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// The trace file (a trace only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_file: Option<String>,
    /// `--time-scale`: every inter-arrival gap times this (a trace only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_scale: Option<f64>,
}

/// The SLOs and where each came from: `given` (a value other than the run's own), `workload` (the
/// named workload's) or `default` (the reference's 1 s and 25 ms).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SloFacts {
    pub ttft_s: f64,
    pub ttft_from: &'static str,
    pub tpot_s: f64,
    pub tpot_from: &'static str,
}

pub(super) fn simulated(c: &Ctx<'_>) -> Simulated {
    let cfg = c.cfg;
    let sc = &cfg.scenario;
    let f = sc.formats();
    let formats = f.is_quantised().then(|| {
        format!(
            "{}/{}/{}",
            f.weight.as_str(),
            f.kv.as_str(),
            f.compute.as_str()
        )
    });
    let pools = cfg
        .pools
        .iter()
        .map(|p| {
            let device = match p.role {
                Role::Prefill => sc.prefill_device.as_ref(),
                Role::Decode => sc.decode_device.as_ref(),
                Role::Colocated => None,
            }
            .unwrap_or(&sc.device)
            .clone();
            PoolFacts {
                role: p.role.as_str().to_string(),
                instances: p.instances as u64,
                devices_per_instance: p.devices,
                device,
                layout: sc.layout_for(p.role).map(|l| format!("{}x{}", l.tp, l.pp)),
            }
        })
        .collect();
    let link = (cfg.mode == crate::scenario::Mode::Disagg).then(|| LinkFacts {
        name: sc.link.clone(),
        channels: cfg.link.channels,
        topology: cfg.handoff.link_topology.as_str().to_string(),
    });
    let arrivals = match &cfg.source {
        Source::Poisson => ArrivalFacts {
            source: "poisson".into(),
            rate_rps: Some(cfg.workload.rate),
            workload: None,
            trace_file: None,
            time_scale: None,
        },
        Source::Sessions { name, .. } => ArrivalFacts {
            source: "sessions".into(),
            rate_rps: Some(cfg.workload.rate),
            workload: name.clone(),
            trace_file: None,
            time_scale: None,
        },
        Source::File { info, .. } => ArrivalFacts {
            source: "trace".into(),
            rate_rps: None,
            workload: None,
            trace_file: Some(info.file.clone()),
            time_scale: Some(info.time_scale),
        },
    };
    // A value equal to the one the run would have without it counts as that one (a run
    // document's scenario echoes the SLOs it was judged by, so a replayed document gives them).
    let (ttft_own, tpot_own) = crate::Scenario {
        ttft_slo: None,
        tpot_slo: None,
        ..sc.clone()
    }
    .slos();
    let unset = if sc.workload.is_some() {
        "workload"
    } else {
        "default"
    };
    let from = |v: f64, own: f64| if v == own { unset } else { "given" };
    Simulated {
        model: sc.model.clone(),
        formats,
        pools,
        link,
        arrivals,
        requests: c.res.reqs.len() as u64,
        slo: SloFacts {
            ttft_s: cfg.ttft_slo_s,
            ttft_from: from(cfg.ttft_slo_s, ttft_own),
            tpot_s: cfg.tpot_slo_s,
            tpot_from: from(cfg.tpot_slo_s, tpot_own),
        },
    }
}

/// Whether `t` is the default link topology (the report leaves it out).
pub fn is_default_topology(t: &str) -> bool {
    t == LinkTopology::Shared.as_str()
}
