//! The KV link blocks: totals, each link's load, decode-memory waits (`docs/serving-model.md#metrics`).

use serde::Serialize;

use super::ctx::Ctx;
use crate::pymath::Fsum;
use crate::stats::{dist, Dist};

/// KV link totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkSummary {
    /// Bytes on the wire.
    pub bytes: f64,
    /// Transfers.
    pub transfers: u64,
    /// Sum of channel waits, s.
    pub wait_s: f64,
    /// `wait_s / max(1, transfers)`.
    pub mean_wait_s: f64,
    /// `bytes / horizon`, bytes/s.
    pub achieved_bps: f64,
    /// Sum of transfer times, s.
    pub busy_s: f64,
    /// Link energy, J.
    pub energy_j: f64,
    /// Uncompressed hand-off bytes (with a compression stage; else 0).
    pub handoff_bytes: f64,
    /// In-link compression stage energy, J.
    pub transit_j: f64,
    /// Transfers the in-link stage's compute slowed.
    pub transit_bound: u64,
    /// `transit_bound / transfers` (0 without transfers).
    pub transit_bound_frac: f64,
    /// Compression preset, if any.
    pub compression: Option<String>,
    /// Where it runs (`transit` or `endpoint`), if any.
    pub compress_at: Option<String>,
    /// Its ratio, if any.
    pub compression_ratio: Option<f64>,
    /// `--prefix-handoff` (beyond the reference): uncompressed KV bytes of the hand-offs' prompts
    /// not sent because the decode instance's prefix cache held them (left out without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_bytes_saved: Option<f64>,
}

/// One KV link's load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkLoad {
    /// `kv-link`, `kv-link-p<i>` or `kv-link-p<i>-d<j>`.
    pub name: String,
    /// `busy / (channels x horizon)`.
    pub utilisation: f64,
    /// Channel-seconds used, s.
    pub busy_s: f64,
    /// Bytes on the wire.
    pub bytes: f64,
    /// Transfers.
    pub transfers: u64,
}

/// Time hand-offs waited for decode memory (`--reserve-kv-on transfer`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MemWaitSummary {
    /// Hand-offs that reserved decode memory.
    pub handoffs: u64,
    /// Total wait, s.
    pub total_s: f64,
    /// Per hand-off (all of them, warm-up included, like `handoff_s`), s.
    pub per_handoff: Dist,
}

/// `link busy / (channels x links x horizon)` (every link).
pub(super) fn link_util(c: &Ctx<'_>) -> f64 {
    let n_links = c.res.links.len().max(1) as u64;
    c.res.link.busy_s / ((c.cfg.link.channels as u64 * n_links) as f64 * c.h)
}

/// The link totals.
pub(super) fn link(c: &Ctx<'_>) -> LinkSummary {
    let h = c.h;
    let tr = c.cfg.kv_transit.as_ref();
    let lk = &c.res.link;
    LinkSummary {
        bytes: lk.bytes,
        transfers: lk.transfers,
        wait_s: lk.wait_s,
        mean_wait_s: lk.wait_s / lk.transfers.max(1) as f64,
        achieved_bps: lk.bytes / h,
        busy_s: lk.busy_s,
        energy_j: lk.energy_j,
        handoff_bytes: lk.handoff_bytes,
        transit_j: lk.transit_j,
        transit_bound: lk.transit_bound,
        transit_bound_frac: if lk.transfers > 0 {
            lk.transit_bound as f64 / lk.transfers as f64
        } else {
            0.0
        },
        compression: tr.map(|t| t.compression.key.clone()),
        compress_at: tr.map(|t| t.at.as_str().to_string()),
        compression_ratio: tr.map(|t| t.compression.ratio),
        handoff_bytes_saved: lk.handoff_bytes_saved,
    }
}

/// `(link J + transit J) / max(1, transfers)`.
pub(super) fn link_j_per_request(c: &Ctx<'_>) -> f64 {
    let lk = &c.res.link;
    (lk.energy_j + lk.transit_j) / lk.transfers.max(1) as f64
}

/// Each link's load.
pub(super) fn links(c: &Ctx<'_>) -> Vec<LinkLoad> {
    c.res
        .links
        .iter()
        .map(|l| LinkLoad {
            name: l.name.clone(),
            utilisation: l.busy_s / (c.cfg.link.channels as f64 * c.h),
            busy_s: l.busy_s,
            bytes: l.bytes,
            transfers: l.transfers,
        })
        .collect()
}

/// The waits for decode memory (`--reserve-kv-on transfer` only).
pub(super) fn decode_mem_wait(c: &Ctx<'_>) -> Option<MemWaitSummary> {
    (c.cfg.handoff.reserve_kv_on == crate::scenario::ReserveKvOn::Transfer).then(|| {
        let waits: Vec<f64> = c
            .reqs
            .iter()
            .filter(|r| !r.kv_mem.is_nan())
            .map(|r| r.kv_mem - r.kv_req)
            .collect();
        let mut acc = Fsum::new();
        for &w in &waits {
            acc.add(w);
        }
        MemWaitSummary {
            handoffs: waits.len() as u64,
            total_s: acc.value(),
            per_handoff: dist(&waits),
        }
    })
}
