//! Where the time goes: the stage breakdown of the measured requests, the hot-spot, and Little's
//! law (`docs/serving-model.md#metrics`).

use serde::Serialize;

use super::ctx::Ctx;
use crate::engine::request::Req;
use crate::pymath::Fsum;
use crate::scenario::Mode;

/// Per-stage values in stage order. Times before the first token (layer-wise transfers start
/// during the prefill step) count as prefill, so the stages still add up to E2E: with `ft` the
/// first token, `c(x) = max(x, ft)`, `m` the time decode memory was reserved (`ft` unless
/// `--reserve-kv-on transfer`) and `g` the link start, `kv_wait = c(g) - c(m)`,
/// `kv_transfer = kv_ready - c(g)`, and the wait for decode memory after the first token,
/// `c(m) - ft`, is charged to `decode_queue` (it is waiting for the decode instance, as it is in
/// `decode_queue` when the KV is reserved at admission). With the defaults these are the
/// reference's definitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stages {
    /// Arrival to prefill batch.
    pub prefill_queue: f64,
    /// Prefill step.
    pub prefill: f64,
    /// First token (or decode memory reserved) to link start.
    pub kv_wait: f64,
    /// Link start (or first token, if later) to KV ready.
    pub kv_transfer: f64,
    /// KV ready (or first token) to decode admission, plus any wait for decode memory after the
    /// first token.
    pub decode_queue: f64,
    /// Decode admission to finish.
    pub decode: f64,
}

/// Stage names in order.
pub const STAGES: [&str; 6] = [
    "prefill_queue",
    "prefill",
    "kv_wait",
    "kv_transfer",
    "decode_queue",
    "decode",
];

impl Stages {
    /// Values in [`STAGES`] order.
    pub fn as_array(&self) -> [f64; 6] {
        [
            self.prefill_queue,
            self.prefill,
            self.kv_wait,
            self.kv_transfer,
            self.decode_queue,
            self.decode,
        ]
    }
    pub(super) fn from_array(a: [f64; 6]) -> Stages {
        Stages {
            prefill_queue: a[0],
            prefill: a[1],
            kv_wait: a[2],
            kv_transfer: a[3],
            decode_queue: a[4],
            decode: a[5],
        }
    }
}

/// The stage where the mean request waits longest (decode excluded) and the busiest resource that
/// owns it (`docs/serving-model.md#metrics`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hotspot {
    /// Stage name (`None` without measured requests).
    pub stage: Option<String>,
    /// Resource name (instance or `kv-link`).
    pub resource: String,
    /// Its utilisation.
    pub resource_util: f64,
    /// Resources busier than 90%, instance order then `kv-link`.
    pub busy_over_90pct: Vec<String>,
}

/// Little's law check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LittlesLaw {
    /// Time-average population.
    pub l_measured: f64,
    /// Throughput x mean E2E (all finished requests).
    pub lambda_w: f64,
}

impl Req {
    #[inline]
    pub(super) fn stages(&self) -> [f64; 6] {
        // The end of prefill: the first token, or a CED encoder step's end (`docs/levers.md#ced`).
        let ft = self.prefill_end();
        let handoff = if self.kv_ready.is_nan() {
            ft
        } else {
            self.kv_ready
        };
        let mut s = [
            self.prefill_start - self.arrival,
            ft - self.prefill_start,
            0.0,
            0.0,
            0.0,
            0.0,
        ];
        // Decode memory reserved, clamped to the first token (`ft` without a reservation).
        let m = if self.kv_mem.is_nan() || self.kv_mem < ft {
            ft
        } else {
            self.kv_mem
        };
        if !self.kv_start.is_nan() {
            let g = if self.kv_start < ft {
                ft
            } else {
                self.kv_start
            };
            s[2] = g - m;
            s[3] = self.kv_ready - g;
        }
        if !self.decode_start.is_nan() {
            s[4] = self.decode_start - handoff;
            if m != ft {
                s[4] += m - ft;
            }
            s[5] = self.finish - self.decode_start;
        }
        s
    }
}

/// The mean seconds per stage of the measured requests (`None` if there are none).
pub(super) fn stage_means(c: &Ctx<'_>) -> Option<[f64; 6]> {
    let steady = c.steady();
    if steady.is_empty() {
        None
    } else {
        let mut acc: [Fsum; 6] = Default::default();
        for &i in steady {
            let s = c.reqs[i as usize].stages();
            for k in 0..6 {
                acc[k].add(s[k]);
            }
        }
        let n = steady.len() as f64;
        Some(std::array::from_fn(|k| acc[k].value() / n))
    }
}

/// The hot-spot: the stage with the largest mean (of the first five), its owner's busiest
/// resource, and every resource above 90 % (`util`: utilisation, instance order then the link).
pub(super) fn hotspot(
    c: &Ctx<'_>,
    stage_means: Option<[f64; 6]>,
    util: &[(String, f64)],
) -> Hotspot {
    let mut stage: Option<usize> = None;
    if let Some(m) = stage_means {
        for (k, &v) in m.iter().enumerate().take(5) {
            match stage {
                None => stage = Some(k),
                Some(b) if v > m[b] => stage = Some(k),
                _ => {}
            }
        }
    }
    let mut owner = match stage {
        Some(0) | Some(1) => "prefill",
        Some(2) | Some(3) => "kv-link",
        Some(4) => "decode",
        _ => "",
    };
    if c.cfg.mode == Mode::Colocated && owner != "kv-link" {
        owner = "colocated";
    }
    let pick = |filter: &dyn Fn(&str) -> bool| -> Option<usize> {
        let mut best: Option<usize> = None;
        for (k, (name, v)) in util.iter().enumerate() {
            if !filter(name) {
                continue;
            }
            match best {
                None => best = Some(k),
                Some(b) if *v > util[b].1 => best = Some(k),
                _ => {}
            }
        }
        best
    };
    let res_idx = pick(&|n: &str| n.starts_with(owner))
        .or_else(|| pick(&|_| true))
        .unwrap_or(0);
    Hotspot {
        stage: stage.map(|k| STAGES[k].to_string()),
        resource: util[res_idx].0.clone(),
        resource_util: util[res_idx].1,
        busy_over_90pct: util
            .iter()
            .filter(|(_, v)| *v > 0.9)
            .map(|(n, _)| n.clone())
            .collect(),
    }
}

/// Little's law: `L` measured from the population integral, and `lambda x W` over the finished
/// requests.
pub(super) fn littles_law(c: &Ctx<'_>) -> LittlesLaw {
    let done = &c.done;
    let lam = done.len() as f64 / c.h;
    let w = if done.is_empty() {
        f64::NAN
    } else {
        let mut acc = Fsum::new();
        for &i in done {
            let r = &c.reqs[i as usize];
            acc.add(r.finish - r.arrival);
        }
        acc.value() / done.len() as f64
    };
    LittlesLaw {
        l_measured: c.res.area / c.h,
        lambda_w: lam * w,
    }
}
