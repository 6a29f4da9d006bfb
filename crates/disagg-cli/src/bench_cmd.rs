//! `disagg bench`: the simulator's speed, whole process, as users experience it. Each case runs in
//! a fresh child process (`disagg bench --one CASE`), so the wall time includes start-up, workload
//! generation, simulation and the summary, and the peak RSS is that run's alone.

use std::process::Command;
use std::time::Instant;

use clap::Args;
use disagg_model::Catalogue;
use disagg_sim::{simulate_config, Mode, Scenario};

use crate::output::outln;
use crate::{CmdResult, UsageError};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Runs per case; the fastest is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Only the cases whose name contains this.
    #[arg(long)]
    only: Option<String>,
    /// Internal: run one case in this process and print its counters.
    #[arg(long, hide = true)]
    one: Option<String>,
}

struct Case {
    name: &'static str,
    about: &'static str,
    scenario: Scenario,
}

fn chapter(n: u64) -> Scenario {
    Scenario {
        requests: n,
        ..disagg_sim::presets::chapter_base()
    }
}

/// The scheduling levers together: chunked prefill with a 512-token budget, paged KV with
/// preemption, prefix caching, on the named chat workload (sessions with system prompts).
fn levers(mode: Mode, n: u64) -> Scenario {
    Scenario {
        mode,
        fast: false,
        workload: Some("chat".into()),
        batch_policy: disagg_sim::levers::BatchPolicy::Chunked,
        max_num_batched_tokens: Some(512),
        kv_policy: disagg_sim::levers::KvPolicy::Paged,
        prefix_caching: true,
        ..chapter(n)
    }
}

/// A real trace replayed on Llama-3-70B, 4xH100 per instance, 2P2D. The traces are third-party
/// data, not in the repository: they are read from `$DISAGG_TRACES_DIR`, else from
/// `../shared/traces/` (run from the repository's root); a case whose trace is absent is skipped.
fn trace_case(file: &str) -> Scenario {
    let (path, _) = disagg_trace::shared::trace_path(std::path::Path::new(""), file);
    Scenario {
        prefill: 2,
        decode: 2,
        fast: true,
        trace_file: Some(path.display().to_string()),
        ..Scenario::default()
    }
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "chapter-800",
            about: "chapter config, 800 requests",
            scenario: chapter(800),
        },
        Case {
            name: "chapter-2p2d-10k",
            about: "2P2D at 16 req/s, 10,000 requests",
            scenario: Scenario {
                prefill: 2,
                decode: 2,
                rate: 16.0,
                ..chapter(10_000)
            },
        },
        Case {
            name: "chapter-100k",
            about: "chapter config, 100,000 requests",
            scenario: chapter(100_000),
        },
        Case {
            name: "layerwise-fair-100k",
            about: "chapter config, layer-wise streaming and fair link sharing, 100,000 requests",
            scenario: Scenario {
                send: disagg_model::SendMode::Layerwise,
                link_sharing: disagg_sim::LinkSharing::Fair,
                ..chapter(100_000)
            },
        },
        Case {
            name: "chapter-1m",
            about: "chapter config, 1,000,000 requests",
            scenario: chapter(1_000_000),
        },
        Case {
            name: "mooncake-70b-2p2d",
            about: "the Mooncake conversation trace (12,031 requests), Llama-3-70B, 4xH100, 2P2D",
            scenario: trace_case("mooncake_conversation_trace.jsonl"),
        },
        Case {
            name: "azure-conv-70b-2p2d",
            about: "the Azure 2023 conversation trace (19,366 requests), Llama-3-70B, 4xH100, 2P2D",
            scenario: trace_case("AzureLLMInferenceTrace_conv.csv"),
        },
        Case {
            name: "levers-800",
            about:
                "chunked (512) + paged KV + prefix caching, chat sessions, colocated, 800 requests",
            scenario: levers(Mode::Colocated, 800),
        },
        Case {
            name: "levers-100k",
            about: "chunked (512) + paged KV + prefix caching, chat sessions, colocated, 100,000 \
                    requests",
            scenario: levers(Mode::Colocated, 100_000),
        },
        Case {
            name: "levers-disagg-100k",
            about: "the same levers on the scheduled 1P1D pools, 100,000 requests",
            scenario: levers(Mode::Disagg, 100_000),
        },
        Case {
            name: "tp4-fp8-spec-800",
            about: "Llama-3-70B 1P1D on 4xH100, TP4 + FP8 W8A8 + FP8 KV + MTP speculation, 800 \
                    requests (issue 13's speed case)",
            scenario: Scenario {
                tp: Some(4),
                weight_format: disagg_model::QuantFormat::Fp8,
                kv_format: disagg_model::QuantFormat::Fp8,
                compute_format: disagg_model::QuantFormat::Fp8,
                speculative: Some("mtp".into()),
                ..Scenario::default()
            },
        },
        Case {
            name: "plain-10k",
            about: "chapter config, plain per-step decode loop, 10,000 requests",
            scenario: Scenario {
                fast: false,
                ..chapter(10_000)
            },
        },
    ]
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse().ok())
        })
        .unwrap_or(0)
}

fn one(name: &str, cat: &Catalogue) -> CmdResult {
    let case = cases()
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| UsageError(format!("--one: unknown case '{name}'")))?;
    let cfg = case.scenario.build(cat)?;
    let run = simulate_config(&cfg)?;
    let s = run.summary();
    std::hint::black_box(&s);
    outln!(
        "{} {} {}",
        run.events(),
        s.requests.completed,
        peak_rss_kib()
    );
    Ok(())
}

pub fn run(a: BenchArgs, cat: &Catalogue) -> CmdResult {
    if let Some(name) = &a.one {
        return one(name, cat);
    }
    let exe =
        std::env::current_exe().map_err(|e| UsageError(format!("cannot find myself: {e}")))?;
    if cfg!(debug_assertions) {
        eprintln!("note: this is a debug build; build with --release for meaningful figures");
    }
    outln!(
        "{:<18} {:>10} {:>12} {:>14} {:>14} {:>10}  what",
        "case",
        "requests",
        "wall ms",
        "events/s",
        "requests/s",
        "peak MiB"
    );
    for c in cases() {
        if a.only.as_deref().is_some_and(|o| !c.name.contains(o)) {
            continue;
        }
        if let Some(f) = &c.scenario.trace_file {
            if !std::path::Path::new(f).exists() {
                outln!(
                    "{:<20} skipped: {f} not found (run from the repository's root, or set DISAGG_TRACES_DIR)",
                    c.name
                );
                continue;
            }
        }
        let mut best = f64::INFINITY;
        let mut line = (0u64, 0u64, 0u64);
        for _ in 0..a.repeat {
            let t0 = Instant::now();
            let out = Command::new(&exe)
                .args(["bench", "--one", c.name])
                .output()
                .map_err(|e| UsageError(format!("cannot run a bench child: {e}")))?;
            let wall = t0.elapsed().as_secs_f64();
            if !out.status.success() {
                return Err(UsageError(format!(
                    "bench case {} failed: {}",
                    c.name,
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let v: Vec<u64> = text
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if v.len() == 3 && wall < best {
                best = wall;
                line = (v[0], v[1], v[2]);
            }
        }
        let n = line.1 as f64;
        outln!(
            "{:<18} {:>10} {:>12.1} {:>14.0} {:>14.0} {:>10.1}  {}",
            c.name,
            line.1,
            best * 1e3,
            line.0 as f64 / best,
            n / best,
            line.2 as f64 / 1024.0,
            c.about
        );
    }
    Ok(())
}
