//! Where a run's requests come from: the reference's Poisson generator, its session generator
//! (closed-loop turns, named workloads), or a file (a real trace, or the reference's workload JSON).
//! [`Scenario::build`](crate::Scenario::build) resolves the source, reading any file then, so every
//! error shows before a run starts.

use std::sync::Arc;

use serde::Serialize;

use crate::pyrand::{poisson_workload, GenRequest, LengthDist};
use crate::sessions::{chat_sessions, SessionShape};

/// The workload a configuration generates (`poisson_workload`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// Arrival rate, requests/s.
    pub rate: f64,
    /// Number of requests.
    pub requests: u64,
    /// Prompt lengths.
    pub prompt: LengthDist,
    /// Output lengths.
    pub output: LengthDist,
    /// RNG seed.
    pub seed: u64,
}

impl WorkloadSpec {
    /// Generates the requests (CPython-identical).
    pub fn generate(&self) -> Vec<GenRequest> {
        poisson_workload(
            self.rate,
            self.requests as usize,
            &self.prompt,
            &self.output,
            self.seed,
        )
    }

    /// The same workload at another rate (same lengths, gaps scaled).
    pub fn at_rate(&self, rate: f64) -> WorkloadSpec {
        WorkloadSpec { rate, ..*self }
    }
}

/// Closed-loop turns: request `i` is released `think_s[i]` seconds after `after[i]` finishes
/// (`None`: an open-loop arrival at its stored time).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClosedLoop {
    /// The predecessor of each request.
    pub after: Vec<Option<u32>>,
    /// Think time before release, s.
    pub think_s: Vec<f64>,
}

/// The requests of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    /// In rid order; a closed-loop turn's `arrival_s` is a placeholder until it is released.
    pub requests: Vec<GenRequest>,
    /// Closed-loop turns, if any.
    pub closed: Option<ClosedLoop>,
    /// Cacheable prompt prefixes (session generator, or a trace's block hashes); read only with
    /// prefix caching on (`docs/levers.md#prefix-caching`).
    pub chains: Option<Arc<crate::levers::PrefixChains>>,
    /// Generated prompts (each turn's new input) drawn at or above the generator's cap
    /// ([`LengthDist::hi`](crate::pyrand::LengthDist), 32,768 tokens) and so clipped to it, as
    /// the reference does. 0 for a named workload (its caps are part of its definition) and for
    /// a replayed file (its clipping is in [`TraceInfo`]).
    pub clipped_prompts: u64,
}

impl From<Vec<GenRequest>> for Workload {
    fn from(requests: Vec<GenRequest>) -> Self {
        Workload {
            requests,
            closed: None,
            chains: None,
            clipped_prompts: 0,
        }
    }
}

/// What a trace read reported (the summary echoes it, so nothing is dropped silently).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TraceInfo {
    /// The file.
    pub file: String,
    /// Its format (`azure`, `mooncake`, `burstgpt`, `reference`).
    pub format: String,
    /// Requests replayed.
    pub requests: u64,
    /// Prompts clipped to the context length.
    pub clipped_prompts: u64,
    /// The context length prompts were clipped to.
    pub max_context: Option<u64>,
    /// Malformed lines skipped (`skip_bad_lines`).
    pub bad_lines_skipped: u64,
    /// BurstGPT failed requests (0 response tokens) skipped.
    pub failed_requests_skipped: u64,
    /// Rows out of time order that were sorted (`sort_trace`).
    pub out_of_order: u64,
    /// Replay speed: every inter-arrival gap times this.
    pub time_scale: f64,
}

/// The resolved source of a configuration's requests.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// `poisson_workload` from the scenario's rate, lengths and seed.
    Poisson,
    /// `chat_sessions` with this shape (a named workload, or the session flags).
    Sessions {
        /// The named workload, if any.
        name: Option<String>,
        /// Turns, think time, system prompts.
        shape: SessionShape,
    },
    /// Rows read from a file.
    File {
        /// The requests, shared between clones of the configuration.
        rows: Arc<Vec<GenRequest>>,
        /// What the read reported.
        info: TraceInfo,
        /// Prefix chains from the trace's block hashes (`--prefix-from-trace`).
        chains: Option<Arc<crate::levers::PrefixChains>>,
    },
}

/// The workload section of a run's summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadSummary {
    /// `poisson`, `sessions` or `trace`.
    pub source: String,
    /// The named workload (`chat`, ...), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Requests in the workload.
    pub requests: u64,
    /// Closed-loop session turns (released after their predecessor finishes).
    pub closed_loop_turns: u64,
    /// The trace read, for `trace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceInfo>,
    /// Generated prompts clipped to the generator's length cap (left out when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub clipped_prompts: u64,
    /// The generator's prompt length cap, tokens (with `clipped_prompts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cap_tokens: Option<u64>,
}

/// The one-line notice of a run whose generator clipped `clipped` of `total` prompts to `cap`.
pub fn clipping_warning(clipped: u64, total: u64, cap: u64) -> String {
    format!(
        "{clipped} of {total} generated prompts reached the {cap}-token cap of the length \
         generator (longer draws are clipped to it, as in the reference)"
    )
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Source {
    /// The requests this source gives for `spec`'s rate, lengths, count and seed.
    pub fn workload(&self, spec: &WorkloadSpec) -> Workload {
        match self {
            Source::Poisson => plain(spec),
            Source::Sessions { shape, name } if shape.is_plain() => {
                let mut w = plain(spec);
                if name.is_some() {
                    w.clipped_prompts = 0;
                }
                w
            }
            Source::Sessions { shape, name } => {
                let s = chat_sessions(
                    spec.rate,
                    spec.requests as usize,
                    &spec.prompt,
                    &spec.output,
                    spec.seed,
                    shape,
                );
                let closed = s.iter().any(|r| r.after.is_some()).then(|| ClosedLoop {
                    after: s.iter().map(|r| r.after).collect(),
                    think_s: s.iter().map(|r| r.think_s).collect(),
                });
                // A named workload's length caps are part of its definition: only the
                // generator's cap on the user's own lengths is reported.
                let hi = if name.is_some() {
                    i64::MAX
                } else {
                    spec.prompt.hi
                };
                Workload {
                    requests: s.iter().map(|r| r.req).collect(),
                    closed,
                    chains: Some(Arc::new(crate::sessions::session_chains(&s, shape.turns))),
                    clipped_prompts: s
                        .iter()
                        .filter(|r| r.req.prompt_len as i64 - r.shared_prefix_tokens as i64 >= hi)
                        .count() as u64,
                }
            }
            Source::File { rows, chains, .. } => Workload {
                clipped_prompts: 0,
                requests: rows.as_ref().clone(),
                closed: None,
                chains: chains.clone(),
            },
        }
    }

    /// The summary's description of this source for `w`.
    pub fn summary(&self, w_requests: u64, closed_turns: u64) -> WorkloadSummary {
        match self {
            Source::Poisson => WorkloadSummary {
                source: "poisson".into(),
                name: None,
                requests: w_requests,
                closed_loop_turns: 0,
                trace: None,
                clipped_prompts: 0,
                prompt_cap_tokens: None,
            },
            Source::Sessions { name, .. } => WorkloadSummary {
                source: "sessions".into(),
                name: name.clone(),
                requests: w_requests,
                closed_loop_turns: closed_turns,
                trace: None,
                clipped_prompts: 0,
                prompt_cap_tokens: None,
            },
            Source::File { info, .. } => WorkloadSummary {
                source: "trace".into(),
                name: None,
                requests: w_requests,
                closed_loop_turns: 0,
                trace: Some(info.clone()),
                clipped_prompts: 0,
                prompt_cap_tokens: None,
            },
        }
    }
}

/// `poisson_workload`'s requests, counting the prompts at the length cap.
fn plain(spec: &WorkloadSpec) -> Workload {
    let requests = spec.generate();
    let hi = spec.prompt.hi;
    let clipped_prompts = requests
        .iter()
        .filter(|r| r.prompt_len as i64 >= hi)
        .count() as u64;
    Workload {
        requests,
        closed: None,
        chains: None,
        clipped_prompts,
    }
}
