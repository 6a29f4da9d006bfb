//! Invariants of the scheduled instances over random lever configurations (proptest), under
//! memory pressure: every request completes (or is rejected at arrival) with exactly its output
//! tokens; stamps are ordered; KV units in use never exceed the capacity (a debug assertion at
//! every step start, and every sample) and only cached segments hold units at the end; every row
//! swapped out is swapped back (bytes out = bytes in); prompt tokens computed = first prefills'
//! (prompt - hit) + re-prefills; prefix hits never exceed prompt - 1; chunked steps never exceed
//! the token budget; and a run is deterministic, also from two threads at once.

use disagg_model::Catalogue;
use disagg_sim::{
    simulate_config_observed, Observer, RunResult, Sample, Scenario, SimConfig, StepEvent, StepKind,
};
use proptest::prelude::*;

/// What the observer checks while the run goes: steps against the budget, samples against the
/// capacity.
#[derive(Default)]
struct Check {
    budget: u64,
    chunked: bool,
    worst_step: Option<String>,
    worst_sample: Option<String>,
}

impl Observer for Check {
    fn step(&mut self, ev: &StepEvent) {
        // Without decode rows (`Prefill`), `tokens` are the step's prompt tokens: within the
        // budget in a chunked step (the engine also asserts `rows x (gamma + 1) + prompt tokens
        // <= budget` for every chunked step carrying prompt tokens, in test builds).
        if self.chunked && ev.kind == StepKind::Prefill && ev.tokens > self.budget {
            self.worst_step = Some(format!("{ev:?} over the budget {}", self.budget));
        }
    }
    fn wants_samples(&self) -> bool {
        true
    }
    fn every_sample_interval(&self) -> bool {
        true
    }
    fn sample(&mut self, s: &Sample<'_>) {
        for (k, i) in s.instances.iter().enumerate() {
            if i.kv_used > i.kv_cap {
                self.worst_sample = Some(format!(
                    "t {}: instance {k} uses {} of {} KV tokens",
                    s.t, i.kv_used, i.kv_cap
                ));
            }
        }
    }
}

fn build(flags: &[String]) -> SimConfig {
    Scenario::from_flags(flags)
        .unwrap_or_else(|e| panic!("{flags:?}: {e}"))
        .build(&Catalogue::builtin())
        .unwrap_or_else(|e| panic!("{flags:?}: {e}"))
}

/// A random lever configuration under memory pressure: OPT-13B on one A100-40GB (11,969 KV
/// tokens) with long outputs, or Llama-3-8B on an H100 with speculative decoding.
fn config() -> impl Strategy<Value = Vec<String>> {
    (
        (any::<bool>(), 1u32..=2, 1u32..=2, 0usize..3, 6u64..=13),
        (
            0usize..4,
            0usize..4,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
        (40u64..=120, 2u64..=8, any::<u32>(), 0usize..3),
    )
        .prop_map(
            |(
                (disagg, np, nd, policy, budget_log2),
                (kv, blk, swap, prefix, sessions),
                (n, rate, seed, spec),
            )| {
                let mut f: Vec<String> = Vec::new();
                let mut push = |a: &str, b: String| {
                    f.push(a.into());
                    f.push(b);
                };
                let speculative = spec == 0;
                if speculative {
                    push("--model", "llama3-8b".into());
                    push("--speculative", "mtp".into());
                    push("--gamma", "3".into());
                } else {
                    push("--model", "opt-13b".into());
                    push("--device", "a100-40g".into());
                }
                push("--devices-per-instance", "1".into());
                if disagg {
                    push("--prefill", np.to_string());
                    push("--decode", nd.to_string());
                } else {
                    push("--mode", "colocated".into());
                    push("--prefill", np.to_string());
                    push("--decode", "0".into());
                }
                let bp = ["prefill-priority", "decode-priority", "chunked"][policy];
                push("--batch-policy", bp.into());
                push(
                    "--max-num-batched-tokens",
                    (1u64 << budget_log2).to_string(),
                );
                let kvp = ["oracle", "pow2", "max", "paged"][kv];
                push("--kv-policy", kvp.into());
                push("--kv-block-size", [1, 4, 16, 32][blk].to_string());
                push("--max-seq-len", "1024".into());
                // Prefix caching is refused with swap.
                let swap = swap && !prefix;
                if swap {
                    push("--preemption", "swap".into());
                    push("--host-link", "pcie4".into());
                }
                if sessions {
                    push("--turns", "3".into());
                    push("--think", "0.5".into());
                    push("--system-prompts", "2".into());
                    push("--system-len", "256".into());
                    push("--prefix-share", "0.7".into());
                }
                push("--prompt", "300".into());
                push("--prompt-cv", "1.0".into());
                push("--output", "500".into());
                push("--output-cv", "1.0".into());
                push("--rate", rate.to_string());
                push("--requests", n.to_string());
                push("--seed", (seed % 1000).to_string());
                if prefix {
                    f.push("--prefix-caching".into());
                }
                f
            },
        )
}

fn check_run(flags: &[String], run: &RunResult, obs: &Check) {
    let cfg = run.config();
    let lv = cfg.levers.as_ref().expect("levers on");
    let s = run.summary();
    let n = run.len() as u64;
    assert_eq!(
        s.requests.completed + s.requests.rejected,
        n,
        "{flags:?}: every request completes or is rejected"
    );
    assert!(obs.worst_step.is_none(), "{flags:?}: {:?}", obs.worst_step);
    assert!(
        obs.worst_sample.is_none(),
        "{flags:?}: {:?}",
        obs.worst_sample
    );
    let mut started_prompts = 0u64;
    let mut hits = 0u64;
    for r in run.requests() {
        let Some(fin) = r.finish_s else {
            assert!(
                r.prefill_start_s.is_none(),
                "{flags:?}: rejected rid {}",
                r.rid
            );
            continue;
        };
        let lr = run.lever_record(r.rid).expect("a lever record");
        // Exactly its output: one first token, then O - 1 inter-token gaps.
        assert_eq!(
            lr.n_itl,
            r.output_len as u64 - 1,
            "{flags:?}: rid {}",
            r.rid
        );
        assert_eq!(run.itls(r.rid).len() as u64, lr.n_itl);
        // Hits never cover the whole prompt.
        assert!(lr.prefix_hit_tokens < r.prompt_len as u64, "{flags:?}");
        started_prompts += r.prompt_len as u64;
        hits += lr.prefix_hit_tokens;
        // Ordered stamps.
        let ps = r.prefill_start_s.unwrap();
        let ft = r.first_token_s.unwrap();
        assert!(
            r.arrival_s <= ps && ps <= ft && ft <= fin,
            "{flags:?}: {r:?}"
        );
        if let (Some(ks), Some(kr)) = (r.kv_start_s, r.kv_ready_s) {
            let ds = r.decode_start_s.unwrap();
            assert!(
                ft <= ks && ks <= kr && kr <= ds && ds <= fin,
                "{flags:?}: {r:?}"
            );
        }
        if !lv.prefix_caching {
            assert_eq!(lr.prefix_hit_tokens, 0);
        }
    }
    let b = s.scheduler.as_ref().expect("scheduler block");
    let recompute = b.recompute_tokens.unwrap_or(0);
    // First prefills compute prompt - hit; re-prefills of preempted rows are the recompute tokens;
    // chunks of a prompt preempted before its first token are computed again but are neither
    // (the reference counts recompute tokens only for rows that had emitted a token), so without
    // preemptions the count is exact and with them a lower bound.
    let floor = started_prompts - hits + recompute;
    if b.preemptions.unwrap_or(0) == 0 {
        assert_eq!(
            b.computed_prefill_tokens, floor,
            "{flags:?}: prompt tokens computed"
        );
    } else {
        assert!(
            b.computed_prefill_tokens >= floor,
            "{flags:?}: prompt tokens computed"
        );
    }
    if let Some(sw) = &b.swap {
        assert_eq!(
            sw.out_gb, sw.in_gb,
            "{flags:?}: every swapped row came back"
        );
    }
    if b.preemptions == Some(0) {
        assert_eq!(recompute, 0);
    }
    assert!(b.mean_running >= 0.0);
    assert!(b.kv_token_frac.is_nan() || (0.0..=1.0).contains(&b.kv_token_frac));
    for (k, e) in run.kv_at_end().unwrap().iter().enumerate() {
        assert_eq!(
            e.used_units, e.cached_units,
            "{flags:?}: instance {k} holds units beyond its cache at the end: {e:?}"
        );
        assert!(e.used_units <= e.capacity_units);
        assert_eq!((e.swapped, e.queued), (0, 0), "{flags:?}: instance {k}");
    }
}

fn run_checked(flags: &[String]) -> (RunResult, Check) {
    let cfg = build(flags);
    let lv = cfg.levers.as_ref().expect("levers on");
    let mut obs = Check {
        budget: lv.token_budget,
        chunked: lv.batch_policy == disagg_sim::levers::BatchPolicy::Chunked,
        ..Check::default()
    };
    let run = simulate_config_observed(&cfg, &mut obs).expect("run");
    (run, obs)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn scheduled_runs_keep_their_invariants(flags in config()) {
        let (run, obs) = run_checked(&flags);
        check_run(&flags, &run, &obs);
    }
}

/// A memory-bound paged run with preemptions of both kinds: the invariants hold there too (the
/// random configurations above may not all preempt).
#[test]
fn paged_runs_under_pressure_preempt_and_keep_their_invariants() {
    for preemption in ["recompute", "swap"] {
        let flags: Vec<String> = [
            "--mode",
            "colocated",
            "--model",
            "opt-13b",
            "--device",
            "a100-40g",
            "--devices-per-instance",
            "1",
            "--prefill",
            "1",
            "--decode",
            "0",
            "--kv-policy",
            "paged",
            "--preemption",
            preemption,
            "--host-link",
            "pcie4",
            "--prompt",
            "161",
            "--prompt-cv",
            "1.0",
            "--output",
            "338",
            "--output-cv",
            "1.0",
            "--rate",
            "6",
            "--requests",
            "200",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (run, obs) = run_checked(&flags);
        check_run(&flags, &run, &obs);
        let b = run.scheduler().unwrap();
        assert!(
            b.preemptions.unwrap() > 10,
            "{preemption}: {:?}",
            b.preemptions
        );
    }
}

/// The same configuration gives the same stamps and summary, run alone or from two threads.
#[test]
fn scheduled_runs_are_deterministic_across_threads() {
    let flags: Vec<String> = [
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--batch-policy",
        "chunked",
        "--max-num-batched-tokens",
        "512",
        "--kv-policy",
        "paged",
        "--prefix-caching",
        "--workload",
        "chat",
        "--requests",
        "300",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cfg = build(&flags);
    let one = disagg_sim::simulate_config(&cfg).unwrap();
    let want = serde_json::to_string(&one.summary()).unwrap();
    let got: Vec<String> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                sc.spawn(|| {
                    let r = disagg_sim::simulate_config(&cfg).unwrap();
                    let mut csv = Vec::new();
                    r.write_csv(&mut csv).unwrap();
                    (serde_json::to_string(&r.summary()).unwrap(), csv)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                let (s, csv) = h.join().unwrap();
                let mut want_csv = Vec::new();
                one.write_csv(&mut want_csv).unwrap();
                assert_eq!(csv, want_csv);
                s
            })
            .collect()
    });
    assert_eq!(got, vec![want.clone(), want]);
}
