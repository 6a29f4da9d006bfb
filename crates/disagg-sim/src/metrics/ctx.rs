//! What every summary block reads ([`Ctx`]).

use crate::engine::request::Req;
use crate::engine::RunResult;
use crate::scenario::{FirstToken, SimConfig};

/// What every block reads: the run, its configuration and horizon, the finished requests in
/// arrival order and the index of the first measured one.
pub(crate) struct Ctx<'r> {
    pub res: &'r RunResult,
    pub cfg: &'r SimConfig,
    pub reqs: &'r [Req],
    /// Simulated time at the end, s.
    pub h: f64,
    /// The first-token convention.
    pub conv: FirstToken,
    /// Finished requests sorted by arrival (stable).
    pub done: Vec<u32>,
    /// `done[cut..]` are the measured requests.
    pub cut: usize,
}

impl<'r> Ctx<'r> {
    pub(super) fn new(res: &'r RunResult) -> Self {
        let cfg = &res.cfg;
        let (done, cut) = done_order(&res.reqs, cfg.warmup_frac);
        Ctx {
            res,
            cfg,
            reqs: &res.reqs,
            h: res.horizon,
            conv: cfg.handoff.first_token,
            done,
            cut,
        }
    }

    /// The measured requests (finished, after the warm-up cut), in arrival order.
    #[inline]
    pub(crate) fn steady(&self) -> &[u32] {
        &self.done[self.cut..]
    }

    /// Some device has an optical engine.
    pub(crate) fn engines(&self) -> bool {
        self.cfg.pools.iter().any(|p| p.device.engine.is_some())
    }
}

/// Finished requests sorted by arrival (stable), and the index of the first measured one.
pub(crate) fn done_order(reqs: &[Req], warmup_frac: f64) -> (Vec<u32>, usize) {
    let mut done: Vec<u32> = (0..reqs.len() as u32)
        .filter(|&i| !reqs[i as usize].finish.is_nan())
        .collect();
    let sorted = done
        .windows(2)
        .all(|w| reqs[w[0] as usize].arrival <= reqs[w[1] as usize].arrival);
    if !sorted {
        done.sort_by(|&a, &b| {
            reqs[a as usize]
                .arrival
                .total_cmp(&reqs[b as usize].arrival)
        });
    }
    let cut = (done.len() as f64 * warmup_frac) as usize;
    let cut = cut.min(done.len());
    (done, cut)
}
