//! Session workloads: the reference's chat-session generator (`chat_sessions`, `docs/serving-model.md#arrivals`) and
//! its five named workloads (`WORKLOADS`: chat, coding-agent, offline-batch, long-rag, voice) with
//! their SLOs.
//!
//! Sessions start as a Poisson process at `rate` per second. Each has `turns` turns; turn k's
//! prompt is the system prompt (if any), every earlier turn's input and output, then its own new
//! input. Turns after the first are closed-loop: released `think x Exp(1)` seconds after the
//! previous turn finishes. Prefix caching is not modelled: a shared prefix is sent and computed
//! like any other prompt tokens.

use crate::pyrand::{poisson_workload, GenRequest, LengthDist, PyRandom};

/// One generated request of a session workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SessionRequest {
    /// The request (`arrival_s` is a placeholder 0.0 for closed-loop turns until released).
    pub req: GenRequest,
    /// The turn before it in its session: this request is released `think_s` seconds after that
    /// one finishes. `None` for a session's first turn (an open-loop arrival).
    pub after: Option<u32>,
    /// Think time before release, seconds.
    pub think_s: f64,
    /// Prompt tokens shared with earlier requests (system prompt plus earlier turns).
    pub shared_prefix_tokens: u64,
    /// The session's system prompt (`sys<k>`), if it has one.
    pub system: Option<u32>,
    /// The session (`s<sid>`) and the turn in it (`t<j>`).
    pub session: u32,
    /// The turn in its session (0 first).
    pub turn: u32,
}

/// The shape of a session workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SessionShape {
    /// Turns per session (the last session is cut at `n` requests).
    pub turns: u32,
    /// Mean think time between a reply and the next turn, seconds.
    pub think_s: f64,
    /// Distinct system prompts.
    pub system_prompts: u64,
    /// System prompt length, tokens.
    pub system_len: u64,
    /// Fraction of sessions that open with a system prompt.
    pub share: f64,
}

impl Default for SessionShape {
    fn default() -> Self {
        SessionShape {
            turns: 1,
            think_s: 0.0,
            system_prompts: 0,
            system_len: 0,
            share: 1.0,
        }
    }
}

impl SessionShape {
    /// True when the generator is plain `poisson_workload` (one turn, no system prompt).
    pub fn is_plain(&self) -> bool {
        self.turns <= 1 && self.system_prompts == 0
    }
}

/// `n` requests in sessions, drawing from CPython's generator in the reference's order: per session
/// `expovariate(rate)`; then, if system prompts are configured and (`share >= 1` or
/// `random() < share`), `randrange(system_prompts)`; then per turn `prompt.sample`,
/// `output.sample`, and for turns after the first with `think > 0` a gap `think * expovariate(1)`.
/// With one turn and no system prompt it draws the same requests as `poisson_workload`.
pub fn chat_sessions(
    rate: f64,
    n: usize,
    prompt: &LengthDist,
    output: &LengthDist,
    seed: u64,
    shape: &SessionShape,
) -> Vec<SessionRequest> {
    let mut rng = PyRandom::new(seed);
    let mut out: Vec<SessionRequest> = Vec::with_capacity(n);
    let mut t = 0.0f64;
    let turns = shape.turns.max(1);
    let mut sid: u32 = 0;
    while out.len() < n {
        t += rng.expovariate(rate);
        let mut hist: u64 = 0;
        let mut system = None;
        if shape.system_prompts > 0
            && shape.system_len > 0
            && (shape.share >= 1.0 || rng.random() < shape.share)
        {
            system = Some(rng.randrange(shape.system_prompts) as u32);
            hist = shape.system_len;
        }
        let mut prev: Option<u32> = None;
        for k in 0..turns {
            if out.len() >= n {
                break;
            }
            let new = prompt.sample(&mut rng) as u64;
            let o = output.sample(&mut rng) as u64;
            let gap = if k > 0 && shape.think_s > 0.0 {
                shape.think_s * rng.expovariate(1.0)
            } else {
                0.0
            };
            let rid = out.len();
            out.push(SessionRequest {
                req: GenRequest {
                    rid,
                    arrival_s: if k == 0 { t } else { 0.0 },
                    prompt_len: u32::try_from(hist + new).unwrap_or(u32::MAX),
                    output_len: o as u32,
                },
                after: prev,
                think_s: gap,
                shared_prefix_tokens: hist,
                system,
                session: sid,
                turn: k,
            });
            hist += new + o;
            prev = Some(rid as u32);
        }
        sid += 1;
    }
    out
}

/// The prefix chains of a session workload (`docs/levers.md#sessions`): turn `j` of session `s`
/// starts with its system prompt `sys<k>` (if any) and the segments `s<s>t0 .. s<s>t<j-1>` (each
/// an earlier turn's new input and reply); with more than one turn it emits `s<s>t<j>` when it
/// finishes. Keys are interned in first-use order. The turns of a session share one segment
/// buffer (each chain is a prefix of the next), so memory is linear in the requests.
pub fn session_chains(reqs: &[SessionRequest], turns: u32) -> crate::levers::PrefixChains {
    use crate::levers::{PrefixChain, Segments};
    use std::collections::HashMap;
    use std::sync::Arc;
    let mut names: Vec<String> = Vec::new();
    // Only system prompts recur; a session's own keys are new by construction.
    let mut system_ids: HashMap<u32, u32> = HashMap::new();
    let mut chains = Vec::with_capacity(reqs.len());
    let mut start = 0;
    while start < reqs.len() {
        let first = &reqs[start];
        let end = reqs[start + 1..]
            .iter()
            .position(|r| r.turn == 0)
            .map_or(reqs.len(), |p| start + 1 + p);
        let mut buf: Vec<(u32, u64)> = Vec::with_capacity(end - start + 1);
        if let Some(k) = first.system {
            let next = names.len() as u32;
            let id = *system_ids.entry(k).or_insert_with(|| {
                names.push(format!("sys{k}"));
                next
            });
            buf.push((id, first.shared_prefix_tokens));
        }
        let base = buf.len();
        let mut own_keys = Vec::with_capacity(end - start);
        for r in &reqs[start..end] {
            let own = names.len() as u32;
            names.push(format!("s{}t{}", r.session, r.turn));
            own_keys.push(own);
            let grown = r.req.prompt_len as u64 - r.shared_prefix_tokens + r.req.output_len as u64;
            buf.push((own, grown));
        }
        let buf: Arc<[(u32, u64)]> = buf.into();
        for (j, own) in own_keys.into_iter().enumerate() {
            chains.push(PrefixChain {
                segments: Segments::prefix(&buf, base + j),
                emit: (turns > 1).then_some(own),
            });
        }
        start = end;
    }
    crate::levers::PrefixChains { chains, names }
}

/// A named workload: length distributions, session shape and the SLOs it is judged by.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadPreset {
    /// The name users type.
    pub key: &'static str,
    /// Display name.
    pub label: &'static str,
    /// Each turn's new input.
    pub prompt: LengthDist,
    /// Each turn's output.
    pub output: LengthDist,
    /// TTFT SLO, s.
    pub ttft_slo_s: f64,
    /// TPOT SLO, s per token.
    pub tpot_slo_s: f64,
    /// Sessions.
    pub shape: SessionShape,
    /// Where the numbers come from.
    pub rationale: &'static str,
}

impl WorkloadPreset {
    /// `n` requests; `rate` is the arrival rate of sessions (of requests when there is one turn).
    pub fn generate(&self, rate: f64, n: usize, seed: u64) -> Vec<SessionRequest> {
        if self.shape.is_plain() {
            poisson_workload(rate, n, &self.prompt, &self.output, seed)
                .into_iter()
                .map(|req| SessionRequest {
                    req,
                    after: None,
                    think_s: 0.0,
                    shared_prefix_tokens: 0,
                    system: None,
                    session: req.rid as u32,
                    turn: 0,
                })
                .collect()
        } else {
            chat_sessions(rate, n, &self.prompt, &self.output, seed, &self.shape)
        }
    }
}

/// The reference's five named workloads (its `WORKLOADS`), with the same parameters.
pub fn workloads() -> Vec<WorkloadPreset> {
    let d = LengthDist::with_bounds;
    vec![
        WorkloadPreset {
            key: "chat",
            label: "Chat",
            prompt: d(161.31, 1.0, 1, 1024),
            output: d(337.99, 1.0, 1, 1024),
            ttft_slo_s: 1.0,
            tpot_slo_s: 0.05,
            shape: SessionShape { turns: 3, think_s: 10.0, system_prompts: 8, system_len: 512, share: 1.0 },
            rationale: "ShareGPT turn lengths (means 161 in, 338 out, as in vLLM's evaluation); three \
                        turns 10 s apart behind one of eight 512-token system prompts; SLOs 1 s to the \
                        first token, 50 ms a token",
        },
        WorkloadPreset {
            key: "coding-agent",
            label: "Coding agent",
            prompt: d(512.0, 0.8, 1, 4096),
            output: d(160.0, 0.6, 1, 1024),
            ttft_slo_s: 1.5,
            tpot_slo_s: 0.04,
            shape: SessionShape { turns: 8, think_s: 2.0, system_prompts: 2, system_len: 6144, share: 1.0 },
            rationale: "an agent loop: a 6,144-token shared prefix, eight turns of tool output (mean \
                        512) and short actions (mean 160), 2 s of tool time between turns",
        },
        WorkloadPreset {
            key: "offline-batch",
            label: "Offline batch",
            prompt: d(2048.0, 0.5, 1, 8192),
            output: d(256.0, 0.5, 1, 2048),
            ttft_slo_s: 60.0,
            tpot_slo_s: 0.5,
            shape: SessionShape::default(),
            rationale: "bulk summarisation or labelling: nobody waits, loose SLOs (60 s, 0.5 s a token)",
        },
        WorkloadPreset {
            key: "long-rag",
            label: "Long-context RAG",
            prompt: d(7904.0, 0.50, 1, 15360),
            output: d(230.0, 0.48, 1, 1024),
            ttft_slo_s: 5.0,
            tpot_slo_s: 0.05,
            shape: SessionShape { turns: 1, think_s: 0.0, system_prompts: 4, system_len: 1024, share: 1.0 },
            rationale: "retrieved documents make prompts long (arxiv_summarization lengths as in \
                        Sarathi-Serve), behind one of four 1,024-token instruction prefixes; SLOs 5 s, 50 ms",
        },
        WorkloadPreset {
            key: "voice",
            label: "Real-time voice",
            prompt: d(64.0, 0.5, 1, 512),
            output: d(48.0, 0.5, 1, 256),
            ttft_slo_s: 0.3,
            tpot_slo_s: 0.025,
            shape: SessionShape { turns: 6, think_s: 3.0, system_prompts: 4, system_len: 1024, share: 1.0 },
            rationale: "a spoken conversation: short utterances, six turns 3 s apart, a 1,024-token \
                        persona prompt; 300 ms to the first token, 25 ms a token",
        },
    ]
}

/// The workload called `key`.
pub fn find_workload(key: &str) -> Result<WorkloadPreset, disagg_model::Error> {
    let all = workloads();
    match all.iter().position(|w| w.key == key) {
        Some(i) => Ok(all[i].clone()),
        None => Err(disagg_model::Error::unknown(
            "--workload",
            key,
            all.iter().map(|w| w.key),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Closed-loop turns used to copy every earlier turn's segments into each chain: two sessions
    /// of 10,000 turns held 10^8 segments (1.6 GB). Each session's turns now share one buffer.
    #[test]
    fn session_chains_are_linear_in_the_turns() {
        let shape = SessionShape {
            turns: 10_000,
            system_prompts: 2,
            system_len: 64,
            share: 1.0,
            ..SessionShape::default()
        };
        let d = LengthDist::new(8.0, 0.5);
        let reqs = chat_sessions(1.0, 20_000, &d, &d, 7, &shape);
        let ch = session_chains(&reqs, shape.turns);
        assert_eq!(ch.chains.len(), 20_000);
        // Two buffers of (system prompt + 10,000 turns) segments.
        assert_eq!(ch.stored_segments(), 2 * 10_001);
        // Turn j reads the system prompt and turns 0..j of its own session, with the keys the
        // names give them.
        let c = &ch.chains[10_000 + 7];
        assert_eq!(c.segments.len(), 8);
        assert_eq!(ch.names[c.segments[0].0 as usize], "sys1");
        assert_eq!(ch.names[c.segments[7].0 as usize], "s1t6");
        assert_eq!(ch.names[c.emit.unwrap() as usize], "s1t7");
        assert_eq!(c.segments[0].1, 64);
        let r = &reqs[10_000 + 3];
        assert_eq!(
            c.segments[4].1,
            r.req.prompt_len as u64 - r.shared_prefix_tokens + r.req.output_len as u64
        );
    }
}
