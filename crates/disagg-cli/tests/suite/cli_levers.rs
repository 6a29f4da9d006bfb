//! What the scheduling levers measure, in the CLI's outputs (issue 12): the `--requests-out`
//! columns, the report block, and the plain outputs left byte-identical without the levers.

use crate::common;
#[allow(unused_imports)]
use common::*;

use std::path::PathBuf;

use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("disagg-cli-levers-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

const PLAIN_HEADER: &str = "rid,arrival_s,prompt_len,output_len,prefill_start_s,first_token_s,\
                            kv_start_s,kv_ready_s,decode_start_s,finish_s";

/// Paged KV on two devices (preemptions), prefix caching over chat sessions (hits, evictions)
/// and speculative decoding (zero ITLs): every lever column has something to count.
const BUSY: [&str; 13] = [
    "--requests",
    "120",
    "--mode",
    "colocated",
    "--devices-per-instance",
    "2",
    "--kv-policy",
    "paged",
    "--prefix-caching",
    "--workload",
    "chat",
    "--speculative",
    "mtp",
];

fn cell(row: &[&str], i: usize) -> Option<f64> {
    (!row[i].is_empty()).then(|| row[i].parse::<f64>().unwrap())
}

#[test]
fn requests_out_gains_the_lever_columns() {
    let p = tmp("busy.csv");
    let mut args = vec!["run", "--json", "--requests-out", p.to_str().unwrap()];
    args.extend(BUSY);
    let v: Value = ok_json(&args);
    let b = &v["summary"]["scheduler"];
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "{PLAIN_HEADER},sched_delay_s,preemptions,prefix_hit_tokens,n_itl,itl_max_s,n_itl_zero"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 120);
    let (mut preempt, mut hits, mut zeros) = (0u64, 0u64, 0u64);
    for r in &rows {
        assert_eq!(r.len(), 16, "{r:?}");
        let arrival = cell(r, 1).unwrap();
        let output: u64 = r[3].parse().unwrap();
        let start = cell(r, 4).unwrap();
        // The scheduling delay is the row's own prefill_start_s - arrival_s.
        assert_eq!(cell(r, 10).unwrap().to_bits(), (start - arrival).to_bits());
        assert!(start >= arrival);
        preempt += r[11].parse::<u64>().unwrap();
        hits += r[12].parse::<u64>().unwrap();
        // Every request finished: output_len - 1 inter-token latencies, the largest of them at
        // most the decode span finish - first token.
        let n_itl: u64 = r[13].parse().unwrap();
        assert_eq!(n_itl, output - 1, "{r:?}");
        let span = cell(r, 9).unwrap() - cell(r, 5).unwrap();
        match cell(r, 14) {
            Some(m) => assert!(n_itl > 0 && m >= 0.0 && m <= span, "{r:?}"),
            None => assert_eq!(n_itl, 0),
        }
        let z: u64 = r[15].parse().unwrap();
        assert!(z <= n_itl);
        zeros += z;
    }
    // The per-request counts add up to the run's totals.
    assert_eq!(preempt, b["preemptions"].as_u64().unwrap());
    assert!(preempt > 0, "the run preempts");
    assert_eq!(hits, b["prefix_cache"]["hit_tokens"].as_u64().unwrap());
    assert!(hits > 0, "the run hits");
    // Speculative decoding emits several tokens in one verify pass: zero ITLs.
    assert!(zeros > 0);
}

#[test]
fn the_report_closes_with_the_scheduling_block() {
    let mut args = vec!["run"];
    args.extend(BUSY);
    let t = ok_text(&args);
    let block = t
        .split_once("── scheduling and KV memory ──\n")
        .unwrap_or_else(|| panic!("{t}"))
        .1;
    let labels: Vec<&str> = block.lines().map(|l| &l[..13]).collect();
    assert_eq!(
        labels,
        [
            "scheduling   ",
            "             ",
            "             ",
            "preemption   ",
            "prefix cache ",
            "speculative  "
        ]
    );
    assert!(
        block.starts_with("scheduling   batch prefill-priority (budget "),
        "{block}"
    );
    assert!(block.contains("KV paged: "), "{block}");
    assert!(block.contains("preemption   recompute: "), "{block}");
    assert!(
        block.contains("speculative  draft mtp gamma 3 alpha 0.7: "),
        "{block}"
    );
    assert!(block.contains("(closed form 2.533)"), "{block}");
}

#[test]
fn rejections_are_explained_once() {
    // A max_seq_len above the whole capacity: every request's need max(max_seq_len, P + O)
    // exceeds it (`docs/levers.md#kv-reservation`, `docs/serving-model.md#routing`), so all 20 are rejected.
    let p = tmp("rejected.csv");
    let t = ok_text(&[
        "run",
        "--requests-out",
        p.to_str().unwrap(),
        "--requests",
        "20",
        "--mode",
        "colocated",
        "--kv-policy",
        "max",
        "--max-seq-len",
        "10000000",
    ]);
    assert!(t.starts_with("── colocated ── 0 done, 20 rejected"), "{t}");
    let lines: Vec<&str> = t.lines().filter(|l| l.starts_with("rejected ")).collect();
    assert_eq!(lines.len(), 1, "{t}");
    assert!(
        lines[0].starts_with(
            "rejected     20 requests can never fit: their KV need (max(max_seq_len, prompt + \
             output) tokens) exceeds colocated-0's capacity of "
        ),
        "{t}"
    );
    // A rejected request never started nor decoded: empty delay and largest-ITL cells.
    let csv = std::fs::read_to_string(&p).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 20);
    for r in rows {
        assert!(r.ends_with(",,,,,,,,0,0,0,,0"), "{r}");
    }
}

#[test]
fn without_levers_the_outputs_are_the_plain_ones() {
    for mode in ["disagg", "colocated"] {
        let p = tmp(&format!("plain-{mode}.csv"));
        let t = ok_text(&[
            "run",
            "--requests",
            "30",
            "--mode",
            mode,
            "--requests-out",
            p.to_str().unwrap(),
        ]);
        assert!(!t.contains("scheduling"), "{t}");
        assert!(t.lines().last().unwrap().starts_with("hot-spot"), "{t}");
        let csv = std::fs::read_to_string(&p).unwrap();
        assert_eq!(csv.lines().next().unwrap(), PLAIN_HEADER);
        assert!(csv.lines().all(|l| l.split(',').count() == 10));
        let v = ok_json(&["run", "--json", "--requests", "30", "--mode", mode]);
        assert!(v["summary"].get("scheduler").is_none());
    }
}

#[test]
fn sweep_rows_carry_the_scheduler_figures() {
    let base = [
        "sweep",
        "--quiet",
        "--requests",
        "40",
        "--mode",
        "colocated",
        "--devices-per-instance",
        "2",
        "--vary",
        "kv_policy=oracle,paged",
    ];
    let csv_path = tmp("sweep.csv");
    let jsonl_path = tmp("sweep.jsonl");
    let mut args = base.to_vec();
    args.extend([
        "--csv",
        csv_path.to_str().unwrap(),
        "--jsonl",
        jsonl_path.to_str().unwrap(),
    ]);
    ok(&args);
    let rows: Vec<Value> = std::fs::read_to_string(&jsonl_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // kv_policy oracle alone switches nothing on (`docs/levers.md#scheduled-instances`): no block; paged: the block.
    assert!(rows[0]["summary"].get("scheduler").is_none());
    let b = &rows[1]["summary"]["scheduler"];
    assert_eq!(b["kv_policy"], "paged");
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cells: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for (col, want) in [
        ("summary.scheduler.mean_running", &b["mean_running"]),
        ("summary.scheduler.preemptions", &b["preemptions"]),
        (
            "summary.scheduler.sched_delay_p50_s",
            &b["sched_delay_p50_s"],
        ),
        ("summary.scheduler.kv_token_frac", &b["kv_token_frac"]),
    ] {
        let k = head
            .iter()
            .position(|h| *h == col)
            .unwrap_or_else(|| panic!("{col}"));
        assert_eq!(cells[0][k], "", "{col}: the plain run has none");
        assert_eq!(cells[1][k], want.to_string(), "{col}");
    }
    // The table on standard output shows them for the lever run only.
    let t = ok_text(&base);
    let lines: Vec<&str> = t.lines().collect();
    assert!(
        lines[0].ends_with("mean running  preemptions   hit rate % delay p50 ms"),
        "{t}"
    );
    assert!(lines[1].ends_with(&format!(" {:>12} {:>12} {:>12} {:>12}", "-", "-", "-", "-")));
    let mean = format!("{:.1}", b["mean_running"].as_f64().unwrap());
    let pre = b["preemptions"].as_u64().unwrap().to_string();
    let delay = format!("{:.1}", 1e3 * b["sched_delay_p50_s"].as_f64().unwrap());
    assert!(
        lines[2].ends_with(&format!(" {mean:>12} {pre:>12} {:>12} {delay:>12}", "-")),
        "{t}"
    );
    // A sweep without the levers: no scheduler column anywhere.
    let t = ok_text(&["sweep", "--quiet", "--requests", "20", "--vary", "rate=2,4"]);
    assert!(t.lines().next().unwrap().ends_with("J/token"), "{t}");
    let csv = ok_text(&[
        "sweep",
        "--quiet",
        "--requests",
        "20",
        "--vary",
        "rate=2,4",
        "--csv",
        "-",
    ]);
    assert!(!csv.contains("scheduler"));
}

#[test]
fn compare_tables_show_the_scheduler_rows_when_a_side_has_levers() {
    let v = ok_json(&[
        "compare",
        "--quiet",
        "--json",
        "--requests",
        "30",
        "--batch-policy",
        "chunked",
    ]);
    let t = ok_text(&[
        "compare",
        "--quiet",
        "--requests",
        "30",
        "--batch-policy",
        "chunked",
    ]);
    let runs = v["runs"].as_array().unwrap();
    let cell = |k: usize, f: &dyn Fn(&Value) -> String| f(&runs[k]["summary"]["scheduler"]);
    let mean = |b: &Value| format!("{:.1}", b["mean_running"].as_f64().unwrap());
    let delay = |b: &Value| format!("{:.1}", 1e3 * b["sched_delay_p50_s"].as_f64().unwrap());
    let want = [
        format!(
            "mean running         {:>26} {:>26}",
            cell(0, &mean),
            cell(1, &mean)
        ),
        format!("preemptions          {:>26} {:>26}", "-", "-"),
        format!("prefix hit rate (%)  {:>26} {:>26}", "-", "-"),
        format!(
            "sched delay p50 (ms) {:>26} {:>26}",
            cell(0, &delay),
            cell(1, &delay)
        ),
    ];
    let tail: Vec<&str> = t
        .lines()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert_eq!(tail, want, "{t}");
    let plain = ok_text(&["compare", "--quiet", "--requests", "30"]);
    assert!(!plain.contains("mean running"));
    assert!(plain.lines().last().unwrap().starts_with("hot-spot"));
}

/// The `max` policy with a 60,000-token floor: every reservation is large, so few requests run
/// at once and the run is much slower than the plain one (the levers visibly matter).
const MAX_FLOOR: [&str; 4] = ["--kv-policy", "max", "--max-seq-len", "60000"];

#[test]
fn plan_evaluates_its_candidates_with_the_levers() {
    let base = ["--requests", "100"];
    let plan = |levers: bool| {
        let mut args = vec!["plan", "--quiet", "--json", "--target-rate", "2"];
        args.extend(base);
        args.extend(["--prefill-counts", "1", "--decode-counts", "1,2"]);
        // The disaggregated candidates (the run below is built from their fields).
        args.extend(["--colocated", "no"]);
        if levers {
            args.extend(MAX_FLOOR);
        }
        ok_json(&args)
    };
    let with = plan(true);
    let without = plan(false);
    let cands = with["candidates"].as_array().unwrap();
    let (mut simulated, mut changed) = (0, 0);
    for (c, p) in cands.iter().zip(without["candidates"].as_array().unwrap()) {
        let Some(lat) = c["latency_p99_s"].as_f64() else {
            continue;
        };
        simulated += 1;
        // The candidate is the run with the same flags, levers included: its e2e p99 exactly.
        let d = c["decode"].to_string();
        let (pd, dd) = (
            c["prefill_device"].as_str().unwrap(),
            c["decode_device"].as_str().unwrap(),
        );
        assert_eq!(c["compression"], "none");
        let mut run = vec!["run", "--json", "--rate", "2", "--decode", &d];
        run.extend(["--prefill-device", pd, "--decode-device", dd]);
        run.extend(["--link", c["link"].as_str().unwrap()]);
        run.extend(base);
        run.extend(MAX_FLOOR);
        let s = ok_json(&run)["summary"].clone();
        assert_eq!(s["e2e_s"]["p99"].as_f64(), Some(lat), "{c}");
        assert!(s["scheduler"]["kv_policy"] == "max");
        if p["latency_p99_s"].as_f64() != Some(lat) {
            changed += 1;
        }
    }
    assert!(simulated > 0, "{with}");
    assert!(changed > 0, "the levers change some candidate: {with}");
}

#[test]
fn plan_max_rate_searches_with_the_levers() {
    let max_rate = |levers: bool| {
        let mut args = vec![
            "plan",
            "--quiet",
            "--json",
            "--max-rate",
            "--search",
            "bisect",
            "--requests",
            "100",
        ];
        if levers {
            args.extend(MAX_FLOOR);
        }
        ok_json(&args)
    };
    let with = max_rate(true);
    let plain = max_rate(false)["max_rate_rps"].as_f64().unwrap();
    let lo = with["bracket_rps"][0].as_f64().unwrap();
    let hi = with["bracket_rps"][1].as_f64().unwrap();
    assert_eq!(with["max_rate_rps"].as_f64(), Some(lo));
    assert!(lo < plain, "{lo} vs {plain}");
    // The bracket is the levers' own: the lever run meets 90% at lo and misses it at hi.
    let att = |r: f64| {
        let r = r.to_string();
        let mut args = vec!["run", "--json", "--requests", "100", "--rate", &r];
        args.extend(MAX_FLOOR);
        ok_json(&args)["summary"]["slo_attainment"]
            .as_f64()
            .unwrap()
    };
    assert!(att(lo) >= 0.9);
    assert!(att(hi) < 0.9);
}

/// One decode instance, one 1024-token system prompt in every prompt, requests two seconds apart
/// on average: the prefix-aware hand-off's decode cache is empty for the first request and holds
/// the system prompt for every later one.
const HANDOFF: [&str; 16] = [
    "--requests",
    "6",
    "--rate",
    "0.5",
    "--system-prompts",
    "1",
    "--system-len",
    "1024",
    "--prefix-share",
    "1.0",
    "--decode",
    "1",
    "--prefix-caching",
    "--prefix-handoff",
    "--decode-router",
    "prefix",
];

#[test]
fn prefix_handoff_adds_the_handoff_hit_column() {
    let p = tmp("handoff.csv");
    let mut args = vec!["run", "--json", "--requests-out", p.to_str().unwrap()];
    args.extend(HANDOFF);
    let v: Value = ok_json(&args);
    let h = &v["summary"]["scheduler"]["prefix_handoff"];
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "{PLAIN_HEADER},sched_delay_s,preemptions,prefix_hit_tokens,n_itl,itl_max_s,\
             n_itl_zero,handoff_hit_tokens"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 6);
    let mut sum = 0u64;
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.len(), 17, "{r:?}");
        let held: u64 = r[16].parse().unwrap();
        // The first hand-off finds the decode cache empty; every later one finds the system
        // prompt (--system-len 1024 tokens) the first left there.
        assert_eq!(held, if i == 0 { 0 } else { 1024 }, "{r:?}");
        // The prefill side's own prefix cache hits the same system prompt.
        assert_eq!(r[12], r[16], "{r:?}");
        sum += held;
    }
    // 5 hits of 1024 tokens = 5120, the summary's total; 5 hand-offs hit.
    assert_eq!(sum, 5 * 1024);
    assert_eq!(h["hit_tokens"].as_u64().unwrap(), sum);
    assert_eq!(h["handoffs_hit"].as_u64().unwrap(), 5);
    assert_eq!(h["handoffs"].as_u64().unwrap(), 6);
}

#[test]
fn without_prefix_handoff_the_lever_columns_stay_six() {
    // The same run with --prefix-caching but without --prefix-handoff (last three flags off):
    // the header and every row end at n_itl_zero, as before the column existed.
    let p = tmp("no-handoff.csv");
    let mut args = vec!["run", "--requests-out", p.to_str().unwrap()];
    args.extend(&HANDOFF[..13]);
    ok_text(&args);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(!text.contains("handoff"), "{text}");
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "{PLAIN_HEADER},sched_delay_s,preemptions,prefix_hit_tokens,n_itl,itl_max_s,n_itl_zero"
        )
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|l| l.split(',').count() == 16), "{text}");
}
