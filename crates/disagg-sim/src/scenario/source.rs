//! Where a scenario's requests come from: the generator's parameters, the SLOs, the trace
//! reading options, and the resolved [`Source`].

use disagg_model::{Error, ModelSpec};

use crate::pyrand::{GenRequest, LengthDist};
use crate::sessions::SessionShape;
use crate::workload::{Source, TraceInfo};

use super::{Scenario, WorkloadSpec, DEFAULT_TPOT_SLO_S, DEFAULT_TTFT_SLO_S, MAX_REQUESTS};

impl Scenario {
    /// The workload parameters (validated by [`Scenario::build`]).
    pub fn workload_spec(&self) -> WorkloadSpec {
        let named = self
            .workload
            .as_deref()
            .and_then(|w| crate::sessions::find_workload(w).ok());
        WorkloadSpec {
            rate: self.rate,
            requests: self.requests,
            prompt: named.as_ref().map_or(
                LengthDist::with_bounds(
                    self.prompt,
                    self.prompt_cv,
                    self.prompt_min as i64,
                    self.prompt_max as i64,
                ),
                |w| w.prompt,
            ),
            output: named.as_ref().map_or(
                LengthDist::with_bounds(
                    self.output,
                    self.output_cv,
                    self.output_min as i64,
                    self.output_max as i64,
                ),
                |w| w.output,
            ),
            seed: self.seed,
        }
    }

    /// The SLOs the run is judged by, each on its own: the value given, else the named
    /// workload's, else the default (1.0 s TTFT, 0.025 s TPOT). An explicit value always wins,
    /// even one equal to the default (as in the reference).
    pub fn slos(&self) -> (f64, f64) {
        let named = self
            .workload
            .as_deref()
            .and_then(|w| crate::sessions::find_workload(w).ok());
        (
            self.ttft_slo
                .unwrap_or(named.as_ref().map_or(DEFAULT_TTFT_SLO_S, |w| w.ttft_slo_s)),
            self.tpot_slo
                .unwrap_or(named.as_ref().map_or(DEFAULT_TPOT_SLO_S, |w| w.tpot_slo_s)),
        )
    }

    /// The scenario as a run reports it: the same, with the SLOs it was measured against filled
    /// in ([`Scenario::slos`]: given, else the named workload's, else the reference's default).
    /// Run documents echo this, so they say which SLOs their attainment figures use; scenarios
    /// meant as input (presets, a sweep's base) keep unset SLOs unset, so that a workload chosen
    /// later still brings its own.
    pub fn with_slos_resolved(&self) -> Scenario {
        let (ttft, tpot) = self.slos();
        Scenario {
            ttft_slo: Some(ttft),
            tpot_slo: Some(tpot),
            ..self.clone()
        }
    }

    /// How the trace file is read: `trace_format`, `time_scale`, the `trace_start` /
    /// `trace_duration` window, `max_requests`, `skip_bad_lines`, `sort_trace`, with prompts
    /// clipped to `max_context` tokens if given (`disagg trace-stats` reads with these too).
    pub fn trace_read_options(&self, max_context: Option<u64>) -> disagg_trace::ReadOptions {
        disagg_trace::ReadOptions {
            format: self.trace_format,
            time_scale: self.time_scale,
            start_s: self.trace_start,
            duration_s: self.trace_duration,
            max_requests: self.max_requests,
            skip_bad_lines: self.skip_bad_lines,
            max_context,
            unsorted: if self.sort_trace {
                disagg_trace::Unsorted::Sort
            } else {
                disagg_trace::Unsorted::Reject
            },
            keep_hash_ids: false,
        }
    }

    /// Validates the workload options and resolves where the requests come from (reading any
    /// trace file now).
    pub(super) fn source(&self, model: &ModelSpec) -> Result<(Source, WorkloadSpec), Error> {
        for (lo_flag, lo, hi_flag, hi) in [
            (
                "--prompt-min",
                self.prompt_min,
                "--prompt-max",
                self.prompt_max,
            ),
            (
                "--output-min",
                self.output_min,
                "--output-max",
                self.output_max,
            ),
        ] {
            if lo > hi {
                return Err(Error::invalid(
                    lo_flag,
                    format!("{lo} is above {hi_flag} {hi}: no length fits"),
                ));
            }
        }
        let mut spec = self.workload_spec();
        let trace_only: [(&str, bool); 9] = [
            ("--prefix-from-trace", self.prefix_from_trace),
            ("--max-context", self.max_context.is_some()),
            ("--trace-format", self.trace_format.is_some()),
            ("--time-scale", self.time_scale != 1.0),
            ("--start", self.trace_start.is_some()),
            ("--duration", self.trace_duration.is_some()),
            ("--max-requests", self.max_requests.is_some()),
            ("--skip-bad-lines", self.skip_bad_lines),
            ("--sort", self.sort_trace),
        ];
        let Some(file) = &self.trace_file else {
            if let Some((flag, _)) = trace_only.iter().find(|(_, set)| *set) {
                return Err(Error::invalid(
                    *flag,
                    "applies to a replayed trace: give --trace-file",
                ));
            }
            let named = match &self.workload {
                Some(w) => Some(crate::sessions::find_workload(w)?),
                None => None,
            };
            let shape = match &named {
                Some(w) => w.shape,
                None => SessionShape {
                    turns: self.turns,
                    think_s: self.think,
                    system_prompts: self.system_prompts,
                    system_len: self.system_len,
                    share: self.prefix_share,
                },
            };
            if self.fast && shape.turns > 1 {
                return Err(Error::invalid(
                    "--fast",
                    "closed-loop session turns need the plain decode loop (as in the reference): drop --fast",
                ));
            }
            let source = if shape.is_plain() && named.is_none() {
                Source::Poisson
            } else {
                Source::Sessions {
                    name: self.workload.clone(),
                    shape,
                }
            };
            return Ok((source, spec));
        };
        if self.workload.is_some() {
            return Err(Error::invalid(
                "--workload",
                "a trace brings its own requests: give --workload or --trace-file, not both",
            ));
        }
        let max_context = self.max_context.or(model.context_tokens);
        let mut opts = self.trace_read_options(max_context);
        opts.keep_hash_ids = self.prefix_from_trace;
        let t = disagg_trace::read_path(std::path::Path::new(file), &opts)
            .map_err(|e| Error::invalid("--trace-file", e.to_string()))?;
        if t.rows.len() as u64 > MAX_REQUESTS {
            return Err(Error::invalid(
                "--trace-file",
                format!("{} requests is more than {MAX_REQUESTS}", t.rows.len()),
            ));
        }
        let mut rows = Vec::with_capacity(t.rows.len());
        for (i, r) in t.rows.iter().enumerate() {
            if r.prompt_len == 0
                || r.output_len == 0
                || r.prompt_len > u32::MAX as u64
                || r.output_len > u32::MAX as u64
            {
                return Err(Error::invalid(
                    "--trace-file",
                    format!(
                        "{file}:{}: request {i}: prompt and output must be between 1 and {} tokens, got {} and {}",
                        r.line,
                        u32::MAX,
                        r.prompt_len,
                        r.output_len
                    ),
                ));
            }
            rows.push(GenRequest {
                rid: i,
                arrival_s: r.arrival_s,
                prompt_len: r.prompt_len as u32,
                output_len: r.output_len as u32,
            });
        }
        let n = rows.len() as f64;
        let mean =
            |f: &dyn Fn(&GenRequest) -> u32| rows.iter().map(|r| f(r) as f64).sum::<f64>() / n;
        let span =
            rows.last().map_or(0.0, |r| r.arrival_s) - rows.first().map_or(0.0, |r| r.arrival_s);
        spec = WorkloadSpec {
            rate: if span > 0.0 { n / span } else { f64::NAN },
            requests: rows.len() as u64,
            prompt: LengthDist::new(mean(&|r| r.prompt_len), 0.0),
            output: LengthDist::new(mean(&|r| r.output_len), 0.0),
            seed: self.seed,
        };
        let info = TraceInfo {
            file: file.clone(),
            format: t.format.as_str().into(),
            requests: rows.len() as u64,
            clipped_prompts: t.report.clipped_prompts,
            max_context,
            bad_lines_skipped: t.report.bad_lines_skipped,
            failed_requests_skipped: t.report.failed_requests_skipped,
            out_of_order: t.report.out_of_order,
            time_scale: self.time_scale,
        };
        let chains = if self.prefix_from_trace {
            let c = crate::levers::trace_chains(&t.rows).ok_or_else(|| {
                Error::invalid(
                    "--prefix-from-trace",
                    format!("{file} has no hash_ids (Mooncake block hashes) to build chains from"),
                )
            })?;
            Some(std::sync::Arc::new(c))
        } else {
            None
        };
        Ok((
            Source::File {
                rows: std::sync::Arc::new(rows),
                info,
                chains,
            },
            spec,
        ))
    }
}
