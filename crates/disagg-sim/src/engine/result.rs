//! The result of a run: every stamp and counter the metrics need, the same for the plain and the
//! scheduled instances (a scheduled run adds its token records and scheduler block).

use super::books::{InstanceStats, LinkStats};
use super::itl::{Runs, TokenRuns};
use super::request::{Req, NO_INST};
use crate::scenario::{LinkTopology, Role, SimConfig};
use crate::sched::report::SchedulerSummary;
use crate::sched::result::{KvEnd, LeverRecord, SchedResult};

/// One KV link's totals.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkResult {
    /// `kv-link` (shared), `kv-link-p<i>` (per prefill instance), `kv-link-p<i>-d<j>` (per pair).
    pub name: String,
    /// Channel-seconds used, s.
    pub busy_s: f64,
    /// Bytes on the wire.
    pub bytes: f64,
    /// Transfers landed.
    pub transfers: u64,
}

/// A finished run: every stamp and counter the metrics need.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub(crate) cfg: SimConfig,
    pub(crate) reqs: Vec<Req>,
    /// Per decode-side instance, the end time of each decode step.
    pub(crate) step_ends: Vec<Vec<f64>>,
    pub(crate) instances: Vec<InstanceResult>,
    pub(crate) link: LinkStats,
    pub(crate) links: Vec<LinkResult>,
    pub(crate) horizon: f64,
    pub(crate) area: f64,
    pub(crate) rejected: u64,
    pub(crate) events: u64,
    /// Closed-loop session turns in the workload.
    pub(crate) closed_turns: u64,
    /// Generated prompts clipped to the length cap ([`Workload::clipped_prompts`]).
    pub(crate) clipped_prompts: u64,
    /// A scheduled run's token records and scheduler block (`None` for the plain instances).
    pub(crate) sched: Option<Box<SchedResult>>,
}

/// One instance's totals.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceResult {
    /// `prefill-0`, ...
    pub name: String,
    /// Role.
    pub role: Role,
    /// Index of its pool in [`SimConfig::pools`].
    pub pool: usize,
    /// Step accounting.
    pub stats: InstanceStats,
}

/// A request's stamps (seconds; `None` = never reached).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestRecord {
    /// Request id (workload row).
    pub rid: usize,
    /// Arrival time (the stored value).
    pub arrival_s: f64,
    /// Prompt tokens.
    pub prompt_len: u32,
    /// Output tokens.
    pub output_len: u32,
    /// Prefill batch formed.
    pub prefill_start_s: Option<f64>,
    /// First token emitted (end of its prefill step; a CED model replaying on decode: end of
    /// its replay step on the decode instance).
    pub first_token_s: Option<f64>,
    /// Link channel granted.
    pub kv_start_s: Option<f64>,
    /// KV landed on the decode side.
    pub kv_ready_s: Option<f64>,
    /// Admitted into a decode batch (colocated: first token).
    pub decode_start_s: Option<f64>,
    /// Finished.
    pub finish_s: Option<f64>,
    /// The hand-off started: first token, or (layer-wise) its first slice ready.
    pub handoff_start_s: Option<f64>,
    /// Decode memory reserved for it (`--reserve-kv-on transfer`).
    pub kv_reserved_s: Option<f64>,
}

#[inline]
fn opt(x: f64) -> Option<f64> {
    if x.is_nan() {
        None
    } else {
        Some(x)
    }
}

impl RunResult {
    /// The configuration that was run.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }
    /// Simulated time at the end (the last finish).
    pub fn horizon(&self) -> f64 {
        self.horizon
    }
    /// `∫ N(t) dt` of the in-system population over the run (Little's law).
    pub fn population_integral(&self) -> f64 {
        self.area
    }
    /// Requests rejected at arrival.
    pub fn rejected(&self) -> u64 {
        self.rejected
    }
    /// Events processed by the engine.
    pub fn events(&self) -> u64 {
        self.events
    }
    /// KV link totals (every link).
    pub fn link(&self) -> &LinkStats {
        &self.link
    }
    /// Each KV link's totals (link order: one shared link, one per prefill instance, or one per
    /// prefill-decode pair with the decode index running fastest).
    pub fn links(&self) -> &[LinkResult] {
        &self.links
    }
    /// Per-instance totals, instance list order.
    pub fn instances(&self) -> &[InstanceResult] {
        &self.instances
    }
    /// Number of requests.
    pub fn len(&self) -> usize {
        self.reqs.len()
    }
    /// True if the workload was empty.
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }
    /// The stamps of request `rid`.
    pub fn request(&self, rid: usize) -> RequestRecord {
        let r = &self.reqs[rid];
        RequestRecord {
            rid,
            arrival_s: r.arrival,
            prompt_len: r.prompt,
            output_len: r.output,
            prefill_start_s: opt(r.prefill_start),
            first_token_s: opt(r.first_token),
            kv_start_s: opt(r.kv_start),
            kv_ready_s: opt(r.kv_ready),
            decode_start_s: opt(r.decode_start),
            finish_s: opt(r.finish),
            handoff_start_s: opt(r.kv_req),
            kv_reserved_s: opt(r.kv_mem),
        }
    }
    /// Every request's stamps, rid order.
    pub fn requests(&self) -> impl ExactSizeIterator<Item = RequestRecord> + '_ {
        (0..self.reqs.len()).map(|i| self.request(i))
    }
    /// Writes every request's stamps as CSV (header row, then one row per rid; times in seconds in
    /// shortest round-trip form; empty cells for stamps never reached).
    pub fn write_csv<W: std::io::Write>(&self, mut w: W) -> std::io::Result<()> {
        writeln!(
            w,
            "rid,arrival_s,prompt_len,output_len,prefill_start_s,first_token_s,kv_start_s,\
             kv_ready_s,decode_start_s,finish_s"
        )?;
        for r in self.requests() {
            write!(
                w,
                "{},{:?},{},{}",
                r.rid, r.arrival_s, r.prompt_len, r.output_len
            )?;
            for x in [
                r.prefill_start_s,
                r.first_token_s,
                r.kv_start_s,
                r.kv_ready_s,
                r.decode_start_s,
                r.finish_s,
            ] {
                match x {
                    Some(v) => write!(w, ",{v:?}")?,
                    None => w.write_all(b",")?,
                }
            }
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The decode-step end times of decode-side instance `i` (decode pool or colocated index).
    pub fn decode_step_ends(&self, i: usize) -> &[f64] {
        &self.step_ends[i]
    }
    /// What the scheduling levers measured of request `rid` (`None` unless the levers were on).
    pub fn lever_record(&self, rid: usize) -> Option<LeverRecord> {
        let s = self.sched.as_ref()?;
        let r = &self.reqs[rid];
        let mut n_itl = 0u64;
        let mut itl_max = f64::NAN;
        let mut zeros = 0u64;
        if let Some(t) = self.token_runs(rid) {
            t.each_itl(|x, c| {
                n_itl += c;
                if x == 0.0 {
                    zeros += c;
                }
                if itl_max.is_nan() || x > itl_max {
                    itl_max = x;
                }
            });
        }
        let (preemptions, hit_tokens, ho_hit) = s.per_request[rid];
        Some(LeverRecord {
            sched_delay_s: r.prefill_start - r.arrival,
            preemptions,
            prefix_hit_tokens: hit_tokens,
            n_itl,
            itl_max_s: (n_itl > 0).then_some(itl_max),
            n_itl_zero: zeros,
            handoff_hit_tokens: s.report.prefix_handoff.is_some().then_some(ho_hit),
        })
    }
    /// Each scheduled instance's KV memory at the end of the run (`None` unless the levers were
    /// on): once every request has finished, only cached prefix segments hold units.
    pub fn kv_at_end(&self) -> Option<&[KvEnd]> {
        self.sched.as_ref().map(|s| s.kv_end.as_slice())
    }
    /// The scheduling levers' summary block (`None` unless the levers were on); the summary's
    /// `scheduler` adds the measured requests' scheduling delay and normalised latency.
    pub fn scheduler(&self) -> Option<&SchedulerSummary> {
        self.sched.as_ref().map(|s| &s.report)
    }
    /// Request `rid`'s inter-token latencies (empty if it never decoded), reconstructed from the
    /// step ends exactly as the reference records them (in emission order, except that the zero
    /// gaps of speculative verify passes come last).
    pub fn itls(&self, rid: usize) -> Vec<f64> {
        let mut v = Vec::new();
        if let Some(t) = self.token_runs(rid) {
            t.each_itl(|x, c| {
                for _ in 0..c {
                    v.push(x)
                }
            });
        }
        v
    }

    /// The step-end arrays the token runs index: per decode-side instance (plain instances), or
    /// per instance (scheduled instances).
    pub(crate) fn token_step_ends(&self) -> &[Vec<f64>] {
        match &self.sched {
            Some(s) => &s.step_ends,
            None => &self.step_ends,
        }
    }

    /// Request `rid`'s tokens after the first (`None` if it has none): a plain instance's one run
    /// from its admission step to its finish step, or a scheduled run's token record.
    pub(crate) fn token_runs(&self, rid: usize) -> Option<TokenRuns<'_>> {
        let r = &self.reqs[rid];
        let first_s = r.emitted(self.cfg.handoff.first_token);
        if let Some(s) = &self.sched {
            let runs = &s.runs[rid];
            if runs.is_empty() {
                return None;
            }
            let inst = s.tok_inst[rid] as usize;
            return Some(TokenRuns {
                inst,
                steps: &s.step_ends[inst],
                first_s,
                runs: Runs::Many(runs.iter()),
                zeros: s.zeros[rid] as u64,
            });
        }
        // (A request with a decode-side instance has its admission stamped.)
        if r.dinst == NO_INST || r.decode_start.is_nan() || r.finish.is_nan() || r.output < 2 {
            return None;
        }
        let inst = r.dinst as usize;
        let a = r.adm as usize;
        Some(TokenRuns {
            inst,
            steps: &self.step_ends[inst],
            first_s,
            runs: Runs::One(Some((a, a + r.output as usize - 2))),
            zeros: 0,
        })
    }
}

/// The name of link `i` of `cfg`'s topology.
pub(crate) fn link_name(cfg: &SimConfig, i: usize) -> String {
    match cfg.handoff.link_topology {
        LinkTopology::Shared => "kv-link".to_string(),
        LinkTopology::PerPrefill => format!("kv-link-p{i}"),
        LinkTopology::PerPair => {
            let d = cfg.decode_pool().map_or(1, |p| p.instances.max(1));
            format!("kv-link-p{}-d{}", i / d, i % d)
        }
    }
}

/// The name of instance `i` of its role's pool: `prefill-0`, `decode-1`, `colocated-2`, ...
pub(crate) fn instance_name(role: Role, i: usize) -> String {
    format!("{}-{i}", role.as_str())
}
