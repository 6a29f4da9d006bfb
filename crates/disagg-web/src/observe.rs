//! What the page draws besides the summary: a wall-clock deadline for a run, utilisation and queue
//! time series in a bounded number of buckets, and decimated latency samples for CDFs.

use std::time::Instant;

use disagg_sim::{InstanceInfo, Observer, RunResult, Sample, StepEvent, TransferEvent};
use serde::Serialize;

/// An observer that stops a run once `at` has passed: the engine asks it every 1,024 events
/// ([`Observer::cancelled`]) and ends the run with `Error::Cancelled`, which the API answers as
/// over its time limit. No unwinding.
pub struct Deadline {
    at: Instant,
}

impl Deadline {
    /// Stops at `at`.
    pub fn new(at: Instant) -> Self {
        Deadline { at }
    }
}

impl Observer for Deadline {
    fn cancelled(&mut self) -> bool {
        Instant::now() > self.at
    }
}

/// Busy time and sampled state per time bucket, for the utilisation and queue charts. Buckets
/// double in width (pairs merge) whenever the run outgrows them, so memory stays bounded.
pub struct Series {
    width: f64,
    cap: usize,
    channels: f64,
    sampling: bool,
    names: Vec<InstanceInfo>,
    link_busy: Vec<f64>,
    inst_busy: Vec<Vec<f64>>,
    n_samples: Vec<u32>,
    link_queue: Vec<f64>,
    in_system: Vec<f64>,
    inst_queue: Vec<Vec<f64>>,
    inst_kv: Vec<Vec<f64>>,
}

/// The time series of one run, as `/api/run` returns it (`"series": true`).
#[derive(Clone, Debug, Serialize)]
pub struct SeriesOut {
    /// Bucket width, s.
    pub dt_s: f64,
    /// Bucket start times, s.
    pub t_s: Vec<f64>,
    /// Share of the link's channel time in use per bucket.
    pub link_busy: Vec<f64>,
    /// Mean transfers waiting for a channel (sampled every 50 ms; empty if not sampled).
    pub link_queue: Vec<f64>,
    /// Mean requests in the system (sampled; empty if not sampled).
    pub in_system: Vec<f64>,
    /// Per instance, instance order.
    pub instances: Vec<InstanceSeries>,
}

/// One instance's series.
#[derive(Clone, Debug, Serialize)]
pub struct InstanceSeries {
    /// `prefill-0`, ...
    pub name: String,
    /// `prefill`, `decode` or `colocated`.
    pub role: &'static str,
    /// Share of the bucket spent in steps.
    pub busy: Vec<f64>,
    /// Mean requests queued (sampled; empty if not sampled).
    pub queue: Vec<f64>,
    /// Mean share of the KV capacity reserved (sampled; empty if not sampled).
    pub kv_used: Vec<f64>,
}

impl Series {
    /// Buckets for a run whose last arrival is at `last_arrival_s` on a link of `channels`
    /// channels: about 200 at first, never more than 400. Samples the queues only when the run is
    /// short enough for the 50 ms sampler to be cheap.
    pub fn new(last_arrival_s: f64, channels: u32, sample_dt_s: f64) -> Self {
        let est = (last_arrival_s * 1.25).max(1.0);
        Series {
            width: est / 200.0,
            cap: 400,
            channels: channels.max(1) as f64,
            sampling: est / sample_dt_s <= 2e6,
            names: Vec::new(),
            link_busy: Vec::new(),
            inst_busy: Vec::new(),
            n_samples: Vec::new(),
            link_queue: Vec::new(),
            in_system: Vec::new(),
            inst_queue: Vec::new(),
            inst_kv: Vec::new(),
        }
    }

    fn halve(&mut self) {
        fn merge(v: &mut Vec<f64>) {
            let m: Vec<f64> = v.chunks(2).map(|c| c.iter().sum()).collect();
            *v = m;
        }
        merge(&mut self.link_busy);
        merge(&mut self.link_queue);
        merge(&mut self.in_system);
        for v in self
            .inst_busy
            .iter_mut()
            .chain(self.inst_queue.iter_mut())
            .chain(self.inst_kv.iter_mut())
        {
            merge(v);
        }
        let n: Vec<u32> = self.n_samples.chunks(2).map(|c| c.iter().sum()).collect();
        self.n_samples = n;
        self.width *= 2.0;
    }

    /// Makes bucket of time `t` exist and returns its index.
    fn bucket(&mut self, t: f64) -> usize {
        let t = t.max(0.0);
        while (t / self.width) as usize >= self.cap {
            self.halve();
        }
        let i = (t / self.width) as usize;
        if i >= self.link_busy.len() {
            let n = i + 1;
            self.link_busy.resize(n, 0.0);
            self.n_samples.resize(n, 0);
            self.link_queue.resize(n, 0.0);
            self.in_system.resize(n, 0.0);
            for v in self
                .inst_busy
                .iter_mut()
                .chain(self.inst_queue.iter_mut())
                .chain(self.inst_kv.iter_mut())
            {
                v.resize(n, 0.0);
            }
        }
        i
    }

    /// Adds the interval `[start, start + dur)` to the buckets of `which` (None = the link).
    fn add(&mut self, which: Option<usize>, start: f64, dur: f64) {
        if !(dur > 0.0 && start.is_finite()) {
            return;
        }
        let end = start + dur;
        self.bucket(end);
        let w = self.width;
        let mut i = self.bucket(start);
        let mut t = start;
        while t < end {
            let b_end = (i + 1) as f64 * w;
            let piece = b_end.min(end) - t;
            let v = match which {
                None => &mut self.link_busy,
                Some(k) => &mut self.inst_busy[k],
            };
            if i >= v.len() {
                break;
            }
            v[i] += piece;
            t = b_end;
            i += 1;
        }
    }

    /// The series, trimmed to the horizon; the link's busy share is over `links` links of
    /// `channels` channels each.
    pub fn finish(mut self, horizon: f64, links: usize) -> SeriesOut {
        self.channels *= links.max(1) as f64;
        let last = self.bucket(horizon.max(0.0));
        let n = (last + 1).min(self.link_busy.len());
        let w = self.width;
        let span = |i: usize| -> f64 {
            let s = i as f64 * w;
            (horizon - s).clamp(0.0, w).max(w * 1e-9)
        };
        let mean = |v: &[f64], counts: &[u32]| -> Vec<f64> {
            v.iter()
                .zip(counts)
                .take(n)
                .map(|(s, &c)| if c > 0 { s / c as f64 } else { 0.0 })
                .collect()
        };
        let sampled = self.sampling && self.n_samples.iter().any(|&c| c > 0);
        let instances = self
            .names
            .iter()
            .enumerate()
            .map(|(k, info)| InstanceSeries {
                name: info.name.clone(),
                role: info.role.as_str(),
                busy: (0..n)
                    .map(|i| (self.inst_busy[k][i] / span(i)).min(1.0))
                    .collect(),
                queue: if sampled {
                    mean(&self.inst_queue[k], &self.n_samples)
                } else {
                    Vec::new()
                },
                kv_used: if sampled {
                    mean(&self.inst_kv[k], &self.n_samples)
                } else {
                    Vec::new()
                },
            })
            .collect();
        SeriesOut {
            dt_s: w,
            t_s: (0..n).map(|i| i as f64 * w).collect(),
            link_busy: (0..n)
                .map(|i| (self.link_busy[i] / (self.channels * span(i))).min(1.0))
                .collect(),
            link_queue: if sampled {
                mean(&self.link_queue, &self.n_samples)
            } else {
                Vec::new()
            },
            in_system: if sampled {
                mean(&self.in_system, &self.n_samples)
            } else {
                Vec::new()
            },
            instances,
        }
    }
}

impl Observer for Series {
    fn begin(&mut self, instances: &[InstanceInfo]) {
        self.names = instances.to_vec();
        let n = self.link_busy.len();
        self.inst_busy = vec![vec![0.0; n]; instances.len()];
        self.inst_queue = vec![vec![0.0; n]; instances.len()];
        self.inst_kv = vec![vec![0.0; n]; instances.len()];
    }
    fn step(&mut self, ev: &StepEvent) {
        if ev.instance < self.inst_busy.len() {
            self.add(Some(ev.instance), ev.start, ev.dur);
        }
    }
    fn transfer(&mut self, ev: &TransferEvent) {
        self.add(None, ev.start, ev.dur);
    }
    fn wants_samples(&self) -> bool {
        self.sampling
    }
    fn sample(&mut self, s: &Sample<'_>) {
        let i = self.bucket(s.t);
        self.n_samples[i] += 1;
        self.link_queue[i] += s.link_queue as f64;
        self.in_system[i] += s.in_system as f64;
        for (k, x) in s.instances.iter().enumerate().take(self.inst_queue.len()) {
            self.inst_queue[k][i] += x.queue as f64;
            if x.kv_cap > 0 {
                self.inst_kv[k][i] += x.kv_used as f64 / x.kv_cap as f64;
            }
        }
    }
}

/// Sorted latency samples, decimated to at most `points` quantiles (first and last kept), for
/// CDFs: point `i` of `k` is at cumulative share `i / (k - 1)`.
#[derive(Clone, Debug, Serialize)]
pub struct LatencySamples {
    /// Points per metric asked for.
    pub points: usize,
    /// How many values each metric had before decimation.
    pub counts: SampleCounts,
    /// TTFT of the measured requests, s.
    pub ttft_s: Vec<f64>,
    /// TPOT of the measured requests with at least two output tokens, s.
    pub tpot_s: Vec<f64>,
    /// Hand-off latency (`kv_ready - first_token`) of every request with a hand-off, s.
    pub handoff_s: Vec<f64>,
    /// End to end latency of the measured requests, s.
    pub e2e_s: Vec<f64>,
}

/// Sample sizes.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SampleCounts {
    /// TTFT values.
    pub ttft_s: usize,
    /// TPOT values.
    pub tpot_s: usize,
    /// Hand-off values.
    pub handoff_s: usize,
    /// E2E values.
    pub e2e_s: usize,
}

fn decimate(mut v: Vec<f64>, points: usize) -> (Vec<f64>, usize) {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n <= points || points < 2 {
        if points < 2 && n > points {
            v.truncate(points);
        }
        return (v, n);
    }
    let out = (0..points)
        .map(|i| {
            let idx = ((i as f64) * (n - 1) as f64 / (points - 1) as f64).round() as usize;
            v[idx.min(n - 1)]
        })
        .collect();
    (out, n)
}

/// The latency samples of a run, with the metrics' own selection: measured requests are the
/// finished ones in arrival order after the warm-up cut (`warmup_frac`); hand-offs are every
/// request's.
///
/// TTFT, TPOT and E2E are those of the summary's measured requests, with its first-token
/// convention ([`RunResult::measured_latencies`]).
pub fn latency_samples(run: &RunResult, points: usize) -> LatencySamples {
    // The summary's own measured set and first-token convention.
    let m = run.measured_latencies();
    let (ttft, tpot, e2e) = (m.ttft_s, m.tpot_s, m.e2e_s);
    let handoff: Vec<f64> = run
        .requests()
        .filter_map(|r| Some(r.kv_ready_s? - r.first_token_s?))
        .collect();
    let (ttft_s, n_ttft) = decimate(ttft, points);
    let (tpot_s, n_tpot) = decimate(tpot, points);
    let (handoff_s, n_handoff) = decimate(handoff, points);
    let (e2e_s, n_e2e) = decimate(e2e, points);
    LatencySamples {
        points,
        counts: SampleCounts {
            ttft_s: n_ttft,
            tpot_s: n_tpot,
            handoff_s: n_handoff,
            e2e_s: n_e2e,
        },
        ttft_s,
        tpot_s,
        handoff_s,
        e2e_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A passed deadline ends the run with `Cancelled`, returned, not unwound; one in the future
    /// changes nothing.
    #[test]
    fn a_deadline_cancels_the_run_without_unwinding() {
        let sc = disagg_sim::Scenario {
            model: "llama3-8b".into(),
            devices_per_instance: 1,
            requests: 200,
            ..disagg_sim::Scenario::default()
        };
        let cfg = sc.build(&disagg_model::Catalogue::builtin()).unwrap();
        let past = Instant::now();
        let r = std::panic::catch_unwind(|| {
            disagg_sim::simulate_config_observed(&cfg, &mut Deadline::new(past))
        });
        assert!(matches!(r, Ok(Err(disagg_model::Error::Cancelled))));
        let later = Instant::now() + std::time::Duration::from_secs(3600);
        let run = disagg_sim::simulate_config_observed(&cfg, &mut Deadline::new(later)).unwrap();
        let plain = disagg_sim::simulate_config(&cfg).unwrap();
        assert_eq!(run.summary(), plain.summary());
    }

    #[test]
    fn decimation_keeps_ends() {
        let v: Vec<f64> = (0..1000).rev().map(f64::from).collect();
        let (d, n) = decimate(v, 11);
        assert_eq!(n, 1000);
        assert_eq!(d.len(), 11);
        assert_eq!(d[0], 0.0);
        assert_eq!(d[10], 999.0);
        let (d, _) = decimate(vec![3.0, f64::NAN, 1.0], 500);
        assert_eq!(d, vec![1.0, 3.0]);
    }

    #[test]
    fn buckets_merge_and_conserve_time() {
        let mut s = Series::new(10.0, 1, 0.05);
        s.begin(&[]);
        // (Through `add`, not `transfer`: the event structs may grow fields.)
        s.add(None, 1.0, 2.0);
        s.add(None, 100.0, 1.0);
        let total: f64 = s.link_busy.iter().sum();
        assert!((total - 3.0).abs() < 1e-9, "{total}");
        assert!(s.link_busy.len() <= 400);
        let out = s.finish(101.0, 1);
        assert_eq!(out.t_s.len(), out.link_busy.len());
        assert!(out.link_busy.iter().all(|&x| (0.0..=1.0).contains(&x)));
    }
}
