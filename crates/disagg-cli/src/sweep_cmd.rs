//! `disagg sweep`: the cartesian product of run options, run in parallel, written as one row per
//! run (CSV and/or JSON Lines) with identical bytes whatever the thread count; `--shard I/N` runs a
//! deterministic slice and `disagg sweep merge` joins the slices back into the one-machine output.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use disagg_api::output::{
    check_writable, out, outln, partial_path, resolve, Files, Pending, Target, Temp,
};
use disagg_api::report::Warnings;
use disagg_api::sweep::{
    build_run, check_axis, copy_to_new, csv_from_jsonl, execute, items, point_label,
    point_label_without, resumable_rows, rows_to_csv, scenario_value, shard_runs, spec_from_table,
    thread_pool, typed, Execution, RowSink, RunRow, Sweep, MAX_RUNS_WITHOUT_YES,
};
use disagg_api::{metrics, CmdResult, UsageError};
use disagg_model::Catalogue;
use disagg_sim::{Scenario, SimConfig, Summary};
use serde_json::Value;

use crate::progress::Progress;
use crate::scenario_flags::ScenarioFlags;
use crate::{plots, run_cmd};

/// The rows of this command: with the latencies of the run when CDFs are drawn.
type Row = RunRow<plots::Latencies>;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    cmd: Option<SweepSub>,
    #[command(flatten)]
    sc: ScenarioFlags,
    /// An axis: a run option and its values, e.g. `--vary rate=2,4,8 --vary link=ib-ndr,eth-25g`
    /// (names are the scenario keys: the flags with '_' for '-').
    #[arg(long = "vary", value_name = "NAME=V1,V2,...", help_heading = "Sweep")]
    vary: Vec<String>,
    /// A sweep spec file: a `[base]` table (scenario keys, may name a `preset`) and a `[vary]`
    /// table of arrays, in axis order.
    #[arg(long, value_name = "FILE.toml", help_heading = "Sweep")]
    spec: Option<PathBuf>,
    /// Write one CSV row per run (`-`: standard output). The columns are known only when every
    /// run is done, so the CSV is written at the end; while the sweep runs, its finished rows are
    /// kept as JSON Lines in FILE.csv.partial (unless --jsonl names a file).
    #[arg(long, value_name = "FILE.csv", help_heading = "Sweep")]
    csv: Option<PathBuf>,
    /// Write one JSON object per line per run (`-`: standard output). Rows are written as they
    /// finish, in run order, to FILE.jsonl.partial, which is renamed to FILE.jsonl when the sweep
    /// completes: an interrupted sweep leaves FILE.jsonl untouched and every finished row in
    /// FILE.jsonl.partial (see --resume).
    #[arg(long, value_name = "FILE.jsonl", help_heading = "Sweep")]
    jsonl: Option<PathBuf>,
    /// Continue an interrupted sweep: keep the rows of FILE.partial (or, without one, of FILE)
    /// and run only the others. The rows must come from the same sweep (same spec fingerprint,
    /// run count and shard), else the sweep is refused; an incomplete last line is dropped.
    #[arg(long, help_heading = "Sweep", conflicts_with = "plot")]
    resume: bool,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N", help_heading = "Sweep")]
    threads: Option<usize>,
    /// Run only slice I of N (runs whose index modulo N is I), for a cluster array job.
    #[arg(long, value_name = "I/N", help_heading = "Sweep")]
    shard: Option<String>,
    /// No progress bar (it is drawn on standard error only when that is a terminal).
    #[arg(long, help_heading = "Sweep")]
    quiet: bool,
    /// Allow more than 100,000 runs.
    #[arg(long, help_heading = "Sweep")]
    yes: bool,
    /// Write SVG charts here: percentiles and SLO attainment against rate (when rate is an axis,
    /// one line per combination of the other axes), the stage breakdown (up to 40 runs) and latency
    /// CDFs (up to 12 runs).
    #[arg(long, value_name = "DIR", help_heading = "Sweep")]
    plot: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum SweepSub {
    /// Join shard outputs (JSON Lines) into the output of a one-machine run.
    Merge(MergeArgs),
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// The shards' JSON Lines files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Where to write the merged JSON Lines.
    #[arg(long, value_name = "FILE.jsonl")]
    jsonl: PathBuf,
    /// Also write the merged CSV.
    #[arg(long, value_name = "FILE.csv")]
    csv: Option<PathBuf>,
}

impl SweepArgs {
    /// The files this command line reads and writes, for [`crate::output::check_distinct`].
    pub fn files(&self) -> Files {
        let mut f = Files::default();
        match &self.cmd {
            Some(SweepSub::Merge(m)) => {
                for p in &m.files {
                    f.input("sweep merge", Some(p));
                }
                f.output("--jsonl", Some(&m.jsonl))
                    .output("--csv", m.csv.as_deref());
            }
            None => {
                run_cmd::scenario_inputs(&self.sc, &mut f);
                f.input("--spec", self.spec.as_deref())
                    .output("--jsonl", self.jsonl.as_deref())
                    .output("--csv", self.csv.as_deref());
            }
        }
        f
    }
}

fn read_spec(path: &Path, flags: &ScenarioFlags) -> Result<Sweep, UsageError> {
    let t: toml::Table = disagg_api::custom::read_toml("--spec", path)?;
    spec_from_table(t, path, flags.scenario()?, flags.preset.is_some())
}

/// The run of a sweep that needs the most memory, found while every run is validated.
#[derive(Default)]
struct Largest(Option<(u64, u64, SimConfig)>);

impl Largest {
    fn see(&mut self, i: u64, cfg: &SimConfig) {
        let b = disagg_sim::budget::config_bytes(cfg, false);
        if !matches!(&self.0, Some(x) if b <= x.1) {
            self.0 = Some((i, b, cfg.clone()));
        }
    }

    /// The one memory budget: the largest run, times the runs in memory at once (the workers,
    /// at most the runs), checked before any run starts.
    fn check(
        &self,
        sweep: &Sweep,
        threads: Option<usize>,
        runs: u64,
        yes: Option<bool>,
    ) -> Result<(), UsageError> {
        let Some((i, _, cfg)) = &self.0 else {
            return Ok(());
        };
        let point: Vec<String> = sweep
            .point(*i)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let runs = crate::memory::Runs {
            parallel: (crate::memory::threads(threads) as u64).min(runs.max(1)) as usize,
            yes,
            threads_flag: true,
        };
        let flag = format!("run {i} ({})", point.join(" "));
        crate::memory::check(&flag, cfg, false, runs)
    }
}

/// The sweep described by flags and/or a spec file.
fn sweep_from(a: &SweepArgs) -> Result<Sweep, UsageError> {
    let mut sweep = match &a.spec {
        Some(p) => read_spec(p, &a.sc)?,
        None => Sweep {
            base: scenario_value(&a.sc.scenario()?),
            axes: vec![],
        },
    };
    for v in &a.vary {
        let (name, vals) = v
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--vary: expected NAME=V1,V2,..., got '{v}'")))?;
        let name = name.trim().replace('-', "_");
        if let Some(r) = disagg_sim::ranges::for_key(&name) {
            for raw in items("--vary", vals)? {
                if !matches!(raw.trim(), "none" | "null") {
                    r.parse(raw)
                        .map_err(|e| UsageError(format!("--vary {name}={raw}: {e}")))?;
                }
            }
        }
        let raws = items("--vary", vals)?;
        if sweep.base.get(&name).is_none() {
            // Unknown: the error lists the valid axes.
            check_axis(&sweep.base, &name, &[], &sweep.axes)?;
        }
        let values = raws
            .into_iter()
            .map(|s| typed(&sweep.base, &name, s))
            .collect::<Result<Vec<Value>, UsageError>>()
            .map_err(|e| UsageError(format!("--vary {}", e.0)))?;
        check_axis(&sweep.base, &name, &values, &sweep.axes)?;
        sweep.axes.push((name, values));
    }
    Ok(sweep)
}

fn parse_shard(s: &str) -> Result<(u64, u64), UsageError> {
    let bad = || UsageError(format!("--shard: expected I/N with 0 <= I < N, got '{s}'"));
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: u64 = i.trim().parse().map_err(|_| bad())?;
    let n: u64 = n.trim().parse().map_err(|_| bad())?;
    if n == 0 || i >= n {
        return Err(UsageError(format!(
            "--shard: index {i} is not below the shard count {n}"
        )));
    }
    Ok((i, n))
}

fn sweep_plots(dir: &Path, sweep: &Sweep, rows: &[Row], base: &Value) -> CmdResult {
    let mut written = Vec::new();
    // The SLOs the base scenario is judged by (given, else its named workload's, else defaults).
    let slo = serde_json::from_value::<Scenario>(base.clone())
        .map(|s| s.slos())
        .unwrap_or((
            disagg_sim::scenario::DEFAULT_TTFT_SLO_S,
            disagg_sim::scenario::DEFAULT_TPOT_SLO_S,
        ));
    let has_rate = sweep.axes.iter().any(|(n, v)| n == "rate" && v.len() > 1);
    if has_rate {
        let mut lines: Vec<(String, Vec<(f64, Summary)>)> = Vec::new();
        for r in rows {
            let i = r.row["run"].as_u64().unwrap_or(0);
            let key = point_label_without(sweep, i, Some("rate"));
            let rate = r.row["scenario"]["rate"].as_f64().unwrap_or(f64::NAN);
            match lines.iter_mut().find(|(k, _)| *k == key) {
                Some(l) => l.1.push((rate, r.summary.clone())),
                None => lines.push((key, vec![(rate, r.summary.clone())])),
            }
        }
        for l in &mut lines {
            l.1.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        plots::versus_rate(dir, &lines, slo, 0.9, &mut written)?;
    }
    if rows.len() <= 40 {
        let named: Vec<(String, &Summary)> = rows
            .iter()
            .map(|r| {
                (
                    point_label(sweep, r.row["run"].as_u64().unwrap_or(0)),
                    &r.summary,
                )
            })
            .collect();
        plots::stages(dir, &named, &mut written)?;
    }
    let lats: Vec<plots::Latencies> = rows
        .iter()
        .filter_map(|r| r.extra.as_ref())
        .map(|l| l.clone_named())
        .collect();
    if !lats.is_empty() {
        plots::cdfs(dir, &lats, slo, &mut written)?;
    }
    plots::report(&written);
    Ok(())
}

pub fn run(a: SweepArgs, cat: &Catalogue, warnings: &mut Warnings) -> CmdResult {
    if let Some(SweepSub::Merge(m)) = a.cmd {
        return merge(m);
    }
    let sweep = sweep_from(&a)?;
    let total = sweep.runs();
    if total > MAX_RUNS_WITHOUT_YES && !a.yes {
        return Err(UsageError(format!(
            "the sweep has {total} runs, more than {MAX_RUNS_WITHOUT_YES}: add --yes to run it"
        )));
    }
    let (shard_i, shard_n) = match &a.shard {
        Some(s) => parse_shard(s)?,
        None => (0, 1),
    };
    let jsonl_target = a
        .jsonl
        .as_deref()
        .map(|p| resolve("--jsonl", p))
        .transpose()?;
    let csv_target = a.csv.as_deref().map(|p| resolve("--csv", p)).transpose()?;
    let fp = sweep.fingerprint();
    let runs = shard_runs(total, shard_i, shard_n);
    // The finished rows are kept (and resumed from) next to the JSON Lines file, else the CSV.
    let kept: Option<(&str, PathBuf)> = match (&jsonl_target, &csv_target) {
        (Some(Target::Replace(p)), _) => Some(("--jsonl", p.clone())),
        (_, Some(Target::Replace(p))) => Some(("--csv", p.clone())),
        _ => None,
    };
    let mut start = 0;
    let mut keep_bytes = None;
    match (&kept, a.resume) {
        (None, true) => {
            return Err(UsageError(
                "--resume: needs --jsonl or --csv naming a file (where the finished rows are kept)"
                    .into(),
            ))
        }
        (Some((flag, real)), resume) => {
            let partial = partial_path(real);
            if disagg_api::output::own_file_exists(flag, &partial)? {
                if !resume {
                    return Err(UsageError(format!(
                        "{flag}: '{}' holds the rows of an interrupted sweep: add --resume to continue it, or remove it",
                        partial.display()
                    )));
                }
                let (k, bytes) = resumable_rows(&partial, &fp, total, (shard_i, shard_n), runs)?;
                start = k;
                keep_bytes = Some(bytes);
            } else if resume && *flag == "--jsonl" && real.is_file() {
                // A finished (or earlier) output: keep its rows of this sweep.
                let (k, bytes) = resumable_rows(real, &fp, total, (shard_i, shard_n), runs)?;
                copy_to_new(real, &partial)?;
                start = k;
                keep_bytes = Some(bytes);
            }
        }
        (None, false) => {}
    }
    if let Some(d) = &a.plot {
        plots::prepare_dir(d)?;
    }
    // Validate every run of this shard before running any.
    let mut levers = false;
    let mut largest = Largest::default();
    for k in 0..runs {
        let i = shard_i + k * shard_n;
        let (sc, cfg) = build_run(&sweep, i, cat)?;
        levers |= sc.levers_on();
        largest.see(i, &cfg);
    }
    largest.check(&sweep, a.threads, runs, Some(a.yes))?;
    let pool = thread_pool(a.threads).map_err(|e| UsageError(format!("--threads: {e}")))?;
    // Where the rows go as they finish.
    let resume_at = |flag: &str| keep_bytes.filter(|_| kept.as_ref().is_some_and(|k| k.0 == flag));
    let jsonl_is_file = matches!(jsonl_target, Some(Target::Replace(_)));
    let mut jsonl_out = match (&a.jsonl, &jsonl_target) {
        (Some(shown), Some(t)) => Some(Pending::open(
            "--jsonl",
            shown,
            t.clone(),
            Temp::Partial(resume_at("--jsonl")),
        )?),
        _ => None,
    };
    // The CSV is written at the end from the rows kept in a file: the JSON Lines one, else a
    // spool (the CSV's partial file, or a temporary file when the CSV goes to a stream).
    let mut spool = match (&a.csv, &csv_target) {
        (Some(shown), Some(Target::Replace(real))) if !jsonl_is_file => Some(Pending::open(
            "--csv",
            shown,
            Target::Replace(real.clone()),
            Temp::Partial(resume_at("--csv")),
        )?),
        // A new file of an unpredictable name, removed when the sweep ends.
        (Some(shown), Some(_)) if !jsonl_is_file => Some(Pending::open(
            "--csv",
            shown,
            Target::Replace(std::env::temp_dir().join("disagg-sweep.jsonl")),
            Temp::Random,
        )?),
        _ => None,
    };
    // A resumed file holds the work of earlier runs: it is not removed if this run fails.
    for (p, flag) in [(&mut jsonl_out, "--jsonl"), (&mut spool, "--csv")] {
        if let (Some(p), Some(_)) = (p, resume_at(flag)) {
            p.keep_on_failure();
        }
    }
    let table = a.csv.is_none() && a.jsonl.is_none();
    let names: Vec<&str> = sweep.axes.iter().map(|(n, _)| n.as_str()).collect();
    if table {
        outln!("{}", table_head(&names, levers));
    }
    let keep_runs = a.plot.is_some();
    let mut sinks = Sinks {
        jsonl: jsonl_out,
        spool,
        table: table.then_some((names, levers)),
        runs: keep_runs.then(Vec::new),
        progress: Progress::start("runs", runs - start, a.quiet),
        warnings: Default::default(),
        calibrated: Vec::new(),
    };
    let keep_latencies = keep_runs && runs <= 12;
    let latencies = move |sweep: &Sweep, i: u64, run: &disagg_sim::RunResult| {
        keep_latencies.then(|| plots::Latencies::of(&point_label(sweep, i), run))
    };
    let plan = Execution {
        sweep: &sweep,
        cat,
        shard: (shard_i, shard_n),
        start,
        cancel: None,
        fingerprint: &fp,
    };
    let outcome = execute(&plan, &pool, &latencies, &mut sinks);
    let Sinks {
        jsonl: mut jsonl_out,
        mut spool,
        runs: kept_runs,
        progress,
        warnings: run_warnings,
        calibrated,
        ..
    } = sinks;
    drop(progress);
    outcome?;
    run_warnings.finish(warnings);
    out!("{}", disagg_api::report::calibration_lines(&calibrated));
    if let (Some(dir), Some(kept_runs)) = (&a.plot, kept_runs) {
        sweep_plots(dir, &sweep, &kept_runs, &sweep.base)?;
    }
    if let (Some(shown), Some(t)) = (&a.csv, csv_target) {
        let rows = match (&mut jsonl_out, &mut spool) {
            (Some(j), _) if jsonl_is_file => j,
            (_, Some(s)) => s,
            _ => unreachable!("a CSV always has its rows in a file"),
        };
        rows.flush()?;
        let rows_path = rows.tmp_path().expect("rows kept in a file").to_path_buf();
        let mut c = Pending::open("--csv", shown, t, Temp::Random)?;
        csv_from_jsonl(&rows_path, &mut c)?;
        c.commit()?;
    }
    if let Some(j) = jsonl_out {
        j.commit()?;
    }
    Ok(())
}

/// Where a sweep's rows go, in run order, as they finish.
struct Sinks<'a> {
    jsonl: Option<Pending>,
    /// The rows the CSV is made from at the end (when the JSON Lines output is not a file).
    spool: Option<Pending>,
    /// The axis names of the table printed when there is no output file.
    /// The stdout table's axis names, and whether it shows the scheduler columns.
    table: Option<(Vec<&'a str>, bool)>,
    /// Every row, for `--plot`.
    runs: Option<Vec<Row>>,
    progress: Progress,
    /// The runs' warnings, told once at the end.
    warnings: disagg_api::report::RunWarnings,
    /// The `calibrated` lines under the stdout table (fitted devices of any run).
    calibrated: Vec<disagg_sim::CalibrationSummary>,
}

impl RowSink<plots::Latencies> for Sinks<'_> {
    fn emit(&mut self, r: Row) -> CmdResult {
        self.warnings.add(&r.row["summary"]);
        let line = format!("{}\n", r.row);
        for p in [&mut self.jsonl, &mut self.spool].into_iter().flatten() {
            p.write_all(line.as_bytes())?;
        }
        if let Some((names, levers)) = &self.table {
            outln!("{}", table_line(names, &r.row, &r.summary, *levers));
            disagg_api::report::add_calibration(&mut self.calibrated, &r.summary);
        }
        if let Some(runs) = &mut self.runs {
            runs.push(r);
        }
        self.progress.inc(1);
        Ok(())
    }

    fn flush(&mut self) -> CmdResult {
        for p in [&mut self.jsonl, &mut self.spool].into_iter().flatten() {
            p.flush()?;
        }
        Ok(())
    }
}

/// The scheduler cells of a row's summary (`docs/levers.md#lever-metrics`): mean running,
/// preemptions, prefix hit rate (%), scheduling delay p50 (ms); `-` where the run has none.
fn sched_cells(s: &Value) -> String {
    let b = &s["scheduler"];
    let dp1 = |v: &Value, scale: f64| {
        v.as_f64()
            .map_or("-".to_string(), |x| format!("{:.1}", scale * x))
    };
    format!(
        " {:>12} {:>12} {:>12} {:>12}",
        dp1(&b["mean_running"], 1.0),
        b["preemptions"]
            .as_u64()
            .map_or("-".to_string(), |n| n.to_string()),
        dp1(&b["prefix_cache"]["hit_rate"], 100.0),
        dp1(&b["sched_delay_p50_s"], 1e3)
    )
}

fn table_head(names: &[&str], levers: bool) -> String {
    let mut head = format!("{:>5}", "run");
    for n in names {
        head.push_str(&format!(" {n:>14}"));
    }
    for (h, w) in TABLE_HEADS.iter().zip(TABLE_WIDTHS) {
        head.push_str(&format!(" {h:>w$}"));
    }
    if levers {
        let h = disagg_api::report::SCHED_HEADS;
        head.push_str(&format!(
            " {:>12} {:>12} {:>12} {:>12}",
            h[0], h[1], h[2], h[3]
        ));
    }
    head
}

/// The heads of the table's metric columns ([`metrics::SWEEP_TABLE`]), and their widths.
const TABLE_HEADS: [&str; 6] = [
    "TTFT p99 ms",
    "TPOT p99 ms",
    "hand-off p99",
    "SLO %",
    "goodput",
    "J/token",
];
const TABLE_WIDTHS: [usize; 6] = [12, 12, 14, 8, 10, 8];

/// The table line of row `r` (its run index and axes) with summary `s` (the metric cells, from
/// the registry; `-` where a metric is undefined).
fn table_line(names: &[&str], r: &Value, s: &Summary, levers: bool) -> String {
    let mut line = format!("{:>5}", r["run"].as_u64().unwrap_or(0));
    for n in names {
        let v = &r["axes"][*n];
        let t = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        line.push_str(&format!(" {t:>14}"));
    }
    let cols = metrics::pick(metrics::SWEEP_TABLE);
    for (m, w) in cols.iter().zip(TABLE_WIDTHS) {
        line.push_str(&format!(" {:>w$}", m.cell(s)));
    }
    if levers {
        line.push_str(&sched_cells(&r["summary"]));
    }
    line
}

fn merge(m: MergeArgs) -> CmdResult {
    check_writable("--jsonl", &m.jsonl)?;
    if let Some(c) = &m.csv {
        check_writable("--csv", c)?;
    }
    let mut spec: Option<(String, u64)> = None;
    // By run index; not a vector of runs_total slots, which a hostile row could make huge.
    let mut lines: std::collections::BTreeMap<u64, (String, Value)> = Default::default();
    for f in &m.files {
        let text = disagg_trace::input::read_input(f, disagg_trace::input::InputKind::Data)
            .map_err(|e| UsageError(format!("sweep merge: {e}")))?;
        for (ln, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let at = format!("{}:{}", f.display(), ln + 1);
            let v: Value = serde_json::from_str(line)
                .map_err(|e| UsageError(format!("{at}: not a sweep row: {e}")))?;
            let (Some(fp), Some(total), Some(run)) = (
                v["spec"].as_str(),
                v["runs_total"].as_u64(),
                v["run"].as_u64(),
            ) else {
                return Err(UsageError(format!(
                    "{at}: not a sweep row (needs spec, runs_total, run)"
                )));
            };
            match &spec {
                None => {
                    spec = Some((fp.to_string(), total));
                }
                Some((s, t)) if s != fp || *t != total => {
                    return Err(UsageError(format!(
                        "{at}: from a different sweep (spec {fp}, {total} runs; expected spec {s}, {t} runs)"
                    )));
                }
                _ => {}
            }
            if run >= total {
                return Err(UsageError(format!("{at}: run {run} out of range")));
            }
            if lines.contains_key(&run) {
                return Err(UsageError(format!("{at}: run {run} appears twice")));
            }
            lines.insert(run, (line.to_string(), v));
        }
    }
    let Some((_, total)) = spec else {
        return Err(UsageError("no sweep rows in the given files".into()));
    };
    let n = total - lines.len() as u64;
    if n > 0 {
        let missing: Vec<String> = (0..total)
            .filter(|i| !lines.contains_key(i))
            .map(|i| i.to_string())
            .take(10)
            .collect();
        return Err(UsageError(format!(
            "{n} runs missing (first: {})",
            missing.join(", ")
        )));
    }
    let rows: Vec<(String, Value)> = lines.into_values().collect();
    let mut f = Pending::create("--jsonl", &m.jsonl)?;
    for (text, _) in &rows {
        f.write_all(format!("{text}\n").as_bytes())?;
    }
    f.flush()?;
    // Both land only when both are written.
    let csv = match &m.csv {
        Some(c) => {
            let vals: Vec<Value> = rows.into_iter().map(|(_, v)| v).collect();
            let mut c = Pending::create("--csv", c)?;
            c.write_all(rows_to_csv(&vals).as_bytes())?;
            c.flush()?;
            Some(c)
        }
        None => None,
    };
    f.commit()?;
    csv.map_or(Ok(()), Pending::commit)
}

#[cfg(test)]
mod option_tests {
    use super::*;

    #[test]
    fn the_table_shows_the_scheduler_figures_with_the_levers() {
        let row = serde_json::json!({
            "run": 3,
            "axes": {"batch_policy": "chunked"},
            "summary": {
                "ttft_s": {"p99": 0.5}, "tpot_s": {"p99": 0.02}, "handoff_s": {"p99": null},
                "slo_attainment": 0.5, "goodput_rps": 2.0, "j_per_token": 1.5,
                "scheduler": {
                    "mean_running": 12.34, "preemptions": 7,
                    "prefix_cache": {"hit_rate": 0.25}, "sched_delay_p50_s": 0.0123
                }
            }
        });
        let mut s = disagg_sim::simulate_config(
            &Scenario {
                requests: 4,
                ..Scenario::default()
            }
            .build(&Catalogue::builtin())
            .unwrap(),
        )
        .unwrap()
        .summary();
        (s.ttft_s.p99, s.tpot_s.p99, s.handoff_s.p99) = (0.5, 0.02, f64::NAN);
        (s.slo_attainment, s.goodput_rps, s.j_per_token) = (0.5, 2.0, 1.5);
        let s = &s;
        let plain = table_line(&["batch_policy"], &row, s, false);
        // 0.5 s -> 500.0 ms; 0.02 s -> 20.0 ms; 0.5 -> 50.0 %.
        assert_eq!(
            plain,
            format!(
                "{:>5} {:>14} {:>12} {:>12} {:>14} {:>8} {:>10} {:>8}",
                3, "chunked", "500.0", "20.0", "-", "50.0", "2.00", "1.500"
            )
        );
        // 12.34 -> 12.3; 7; 0.25 -> 25.0 %; 0.0123 s -> 12.3 ms.
        assert_eq!(
            table_line(&["batch_policy"], &row, s, true),
            format!(
                "{plain} {:>12} {:>12} {:>12} {:>12}",
                "12.3", "7", "25.0", "12.3"
            )
        );
        let mut none = row.clone();
        none["summary"]["scheduler"] = serde_json::json!({"mean_running": 1.0});
        assert!(
            table_line(&["batch_policy"], &none, s, true).ends_with(&format!(
                " {:>12} {:>12} {:>12} {:>12}",
                "1.0", "-", "-", "-"
            ))
        );
        let head = table_head(&["batch_policy"], false);
        assert!(head.ends_with("J/token"), "{head}");
        assert_eq!(
            table_head(&["batch_policy"], true),
            format!(
                "{head} {:>12} {:>12} {:>12} {:>12}",
                "mean running", "preemptions", "hit rate %", "delay p50 ms"
            )
        );
    }
}
