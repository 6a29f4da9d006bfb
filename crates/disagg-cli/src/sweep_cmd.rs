//! `disagg sweep`: the cartesian product of run options, run in parallel, written as one row per
//! run (CSV and/or JSON Lines) with identical bytes whatever the thread count; `--shard I/N` runs a
//! deterministic slice and `disagg sweep merge` joins the slices back into the one-machine output.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use clap::{Args, Subcommand};
use disagg_model::Catalogue;
use disagg_sim::{simulate_config, Scenario, SimConfig, Summary};
use rayon::prelude::*;
use serde_json::{json, Map, Value};

use crate::output::{check_writable, Pending};
use crate::scenario_flags::ScenarioFlags;
use crate::{plots, CmdResult, UsageError};

/// Most runs a sweep may have without `--yes`.
pub const MAX_RUNS_WITHOUT_YES: u64 = 100_000;

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
    /// Write one CSV row per run.
    #[arg(long, value_name = "FILE.csv", help_heading = "Sweep")]
    csv: Option<PathBuf>,
    /// Write one JSON object per line per run.
    #[arg(long, value_name = "FILE.jsonl", help_heading = "Sweep")]
    jsonl: Option<PathBuf>,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N", help_heading = "Sweep")]
    threads: Option<usize>,
    /// Run only slice I of N (runs whose index modulo N is I), for a cluster array job.
    #[arg(long, value_name = "I/N", help_heading = "Sweep")]
    shard: Option<String>,
    /// No progress bar.
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

/// A sweep: a base scenario and axes (name, values), the last axis varying fastest.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub base: Value,
    pub axes: Vec<(String, Vec<Value>)>,
}

impl Sweep {
    /// Number of runs.
    pub fn runs(&self) -> u64 {
        self.axes
            .iter()
            .fold(1u64, |n, (_, v)| n.saturating_mul(v.len() as u64))
    }

    /// The axis values of run `i`.
    pub fn point(&self, mut i: u64) -> Vec<(String, Value)> {
        let mut out = vec![(String::new(), Value::Null); self.axes.len()];
        for (k, (name, vals)) in self.axes.iter().enumerate().rev() {
            let n = vals.len() as u64;
            out[k] = (name.clone(), vals[(i % n) as usize].clone());
            i /= n;
        }
        out
    }

    /// The scenario of run `i`.
    pub fn scenario(&self, i: u64) -> Result<Scenario, UsageError> {
        let mut v = self.base.clone();
        let obj = v.as_object_mut().expect("scenario object");
        for (name, val) in self.point(i) {
            obj.insert(name, val);
        }
        serde_json::from_value(v).map_err(|e| UsageError(format!("run {i}: {e}")))
    }

    /// A stable fingerprint of the spec (FNV-1a over its canonical JSON), so shards of different
    /// sweeps cannot be merged.
    pub fn fingerprint(&self) -> String {
        let canon = json!({"base": self.base, "axes": self.axes});
        let mut h: u64 = 0xcbf29ce484222325;
        for b in canon.to_string().bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        format!("{h:016x}")
    }
}

fn valid_axes(base: &Value) -> Vec<String> {
    base.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// `base` with `NAME=VALUE[,NAME=VALUE...]` applied (names are scenario keys, values typed like
/// the field), for `--variant`.
pub fn apply_variant(base: &Scenario, spec: &str) -> Result<Scenario, UsageError> {
    let mut v = serde_json::to_value(base).expect("scenario");
    for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, val) = pair
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--variant: expected NAME=VALUE, got '{pair}'")))?;
        let name = name.trim().replace('-', "_");
        if v.get(&name).is_none() {
            return Err(UsageError(format!(
                "--variant: unknown option '{name}'; valid: {}",
                valid_axes(&v).join(", ")
            )));
        }
        let typed_val = typed(&v, &name, val);
        v.as_object_mut().expect("object").insert(name, typed_val);
    }
    serde_json::from_value(v).map_err(|e| UsageError(format!("--variant {spec}: {e}")))
}

/// Converts a CLI string to the JSON type of the scenario field it sets.
fn typed(base: &Value, name: &str, raw: &str) -> Value {
    let raw = raw.trim();
    match base.get(name) {
        Some(Value::Bool(_)) => match raw {
            "true" | "yes" | "on" => Value::Bool(true),
            "false" | "no" | "off" => Value::Bool(false),
            _ => Value::String(raw.into()),
        },
        Some(Value::String(_)) => Value::String(raw.into()),
        _ => {
            if raw == "none" || raw == "null" {
                return Value::Null;
            }
            if let Ok(u) = raw.parse::<u64>() {
                if base.get(name).is_some_and(|b| b.is_f64()) {
                    return json!(u as f64);
                }
                return json!(u);
            }
            match raw.parse::<f64>() {
                Ok(f) if f.is_finite() => json!(f),
                _ => Value::String(raw.into()),
            }
        }
    }
}

fn check_axis(
    base: &Value,
    name: &str,
    values: &[Value],
    seen: &[(String, Vec<Value>)],
) -> Result<(), UsageError> {
    if base.get(name).is_none() {
        return Err(UsageError(format!(
            "--vary: unknown axis '{name}'; valid: {}",
            valid_axes(base).join(", ")
        )));
    }
    if values.is_empty() {
        return Err(UsageError(format!(
            "--vary {name}: give at least one value"
        )));
    }
    if seen.iter().any(|(n, _)| n == name) {
        return Err(UsageError(format!("--vary {name}: axis given twice")));
    }
    Ok(())
}

fn read_spec(path: &Path, flags: &ScenarioFlags) -> Result<Sweep, UsageError> {
    let t: toml::Table = crate::custom::read_toml("--spec", path)?;
    spec_from_table(t, path, flags)
}

/// The sweep of a spec file's table (`path` names it in messages).
pub(crate) fn spec_from_table(
    mut t: toml::Table,
    path: &Path,
    flags: &ScenarioFlags,
) -> Result<Sweep, UsageError> {
    for k in t.keys() {
        if k != "base" && k != "vary" {
            return Err(UsageError(format!(
                "{}: unknown key '{k}'; valid: base, vary",
                path.display()
            )));
        }
    }
    let mut base = flags.scenario()?;
    if let Some(b) = t.remove("base") {
        let bt = b
            .as_table()
            .cloned()
            .ok_or_else(|| UsageError(format!("{}: base: expected a table", path.display())))?;
        let at = format!("{}: base", path.display());
        base = crate::scenario_flags::overlay_table(base, bt, &at, flags.preset.is_some())?;
    }
    let base = serde_json::to_value(&base).expect("scenario");
    let mut axes = Vec::new();
    if let Some(v) = t.remove("vary") {
        let vt = v
            .as_table()
            .cloned()
            .ok_or_else(|| UsageError(format!("{}: vary: expected a table", path.display())))?;
        for (name, vals) in vt {
            let arr = vals.as_array().ok_or_else(|| {
                UsageError(format!(
                    "{}: vary.{name}: expected an array of values",
                    path.display()
                ))
            })?;
            let values: Vec<Value> = arr
                .iter()
                .map(|x| match x {
                    toml::Value::Integer(i) if base.get(&name).is_some_and(|b| b.is_f64()) => {
                        json!(*i as f64)
                    }
                    other => serde_json::to_value(other).unwrap_or(Value::Null),
                })
                .collect();
            check_axis(&base, &name, &values, &axes)
                .map_err(|e| UsageError(format!("{}: {}", path.display(), e.0)))?;
            axes.push((name, values));
        }
    }
    Ok(Sweep { base, axes })
}

/// The sweep described by flags and/or a spec file.
fn sweep_from(a: &SweepArgs) -> Result<Sweep, UsageError> {
    let mut sweep = match &a.spec {
        Some(p) => read_spec(p, &a.sc)?,
        None => Sweep {
            base: serde_json::to_value(a.sc.scenario()?).expect("scenario"),
            axes: vec![],
        },
    };
    for v in &a.vary {
        let (name, vals) = v
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--vary: expected NAME=V1,V2,..., got '{v}'")))?;
        let name = name.trim().replace('-', "_");
        let values: Vec<Value> = vals
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| typed(&sweep.base, &name, s))
            .collect();
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

/// Flattens nested objects into dotted keys (arrays are left out of CSV).
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        Value::Array(_) => {}
        other => out.push((prefix.to_string(), other.clone())),
    }
}

fn csv_cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.clone()
            }
        }
        other => other.to_string(),
    }
}

/// CSV text of JSONL rows: one column per scalar of `run`, `scenario.*` and `summary.*`.
fn rows_to_csv(rows: &[Value]) -> String {
    let flat: Vec<Vec<(String, Value)>> = rows
        .iter()
        .map(|r| {
            let mut f = Vec::new();
            flatten("", r, &mut f);
            f
        })
        .collect();
    let mut header: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for f in &flat {
        for (k, _) in f {
            if seen.insert(k.clone()) {
                header.push(k.clone());
            }
        }
    }
    let mut out = header.join(",");
    out.push('\n');
    for f in &flat {
        let m: std::collections::HashMap<&str, &Value> =
            f.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let cells: Vec<String> = header
            .iter()
            .map(|h| m.get(h.as_str()).map_or(String::new(), |v| csv_cell(v)))
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

fn run_one(
    cfg: &SimConfig,
    i: u64,
    sweep: &Sweep,
    total: u64,
    fp: &str,
    sc: &Scenario,
    keep_latencies: bool,
) -> Result<RunRow, String> {
    let run = simulate_config(cfg).map_err(|e| format!("run {i}: {e}"))?;
    let s = run.summary();
    let axes: Map<String, Value> = sweep.point(i).into_iter().collect();
    let lat = keep_latencies.then(|| plots::Latencies::of(&point_label(sweep, i), &run));
    let row = json!({
        "run": i,
        "runs_total": total,
        "spec": fp,
        "axes": axes,
        "scenario": sc,
        "summary": s,
    });
    Ok(RunRow {
        row,
        summary: s,
        lat,
    })
}

/// One run's output row, its summary, and its latencies when CDFs are drawn.
struct RunRow {
    row: Value,
    summary: Summary,
    lat: Option<plots::Latencies>,
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// `name=value ...` of run `i`'s axes (all of them, or all but `skip`).
fn point_label_without(sweep: &Sweep, i: u64, skip: Option<&str>) -> String {
    let parts: Vec<String> = sweep
        .point(i)
        .iter()
        .filter(|(k, _)| Some(k.as_str()) != skip)
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect();
    if parts.is_empty() {
        "base".into()
    } else {
        parts.join(" ")
    }
}

fn point_label(sweep: &Sweep, i: u64) -> String {
    point_label_without(sweep, i, None)
}

fn sweep_plots(dir: &Path, sweep: &Sweep, rows: &[RunRow], base: &Value) -> CmdResult {
    let mut written = Vec::new();
    let slo = (
        base["ttft_slo"].as_f64().unwrap_or(1.0),
        base["tpot_slo"].as_f64().unwrap_or(0.025),
    );
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
        .filter_map(|r| r.lat.as_ref())
        .map(|l| l.clone_named())
        .collect();
    if !lats.is_empty() {
        plots::cdfs(dir, &lats, slo, &mut written)?;
    }
    plots::report(&written);
    Ok(())
}

pub fn run(a: SweepArgs, cat: &Catalogue) -> CmdResult {
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
    for (flag, p) in [("--csv", &a.csv), ("--jsonl", &a.jsonl)] {
        if let Some(p) = p {
            check_writable(flag, p)?;
        }
    }
    if let Some(t) = a.threads {
        if t == 0 || t > 1024 {
            return Err(UsageError(format!(
                "--threads: must be between 1 and 1024, got {t}"
            )));
        }
    }
    let fp = sweep.fingerprint();
    if let Some(d) = &a.plot {
        plots::prepare_dir(d)?;
    }
    // Validate every run of this shard before running any.
    let mine: Vec<u64> = (0..total).filter(|i| i % shard_n == shard_i).collect();
    let mut cfgs = Vec::with_capacity(mine.len());
    for &i in &mine {
        let sc = sweep.scenario(i)?;
        let cfg = sc.build(cat).map_err(|e| {
            let point: Vec<String> = sweep
                .point(i)
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            UsageError(format!("run {i} ({}): {e}", point.join(" ")))
        })?;
        cfgs.push((i, sc, cfg));
    }
    let pool = {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(t) = a.threads {
            b = b.num_threads(t);
        }
        b.build()
            .map_err(|e| UsageError(format!("--threads: {e}")))?
    };
    let keep_lat = a.plot.is_some() && cfgs.len() <= 12;
    let done = AtomicUsize::new(0);
    let finished = AtomicBool::new(false);
    let show = !a.quiet && std::io::stderr().is_terminal();
    let n = cfgs.len();
    let rows: Vec<Result<RunRow, String>> = std::thread::scope(|scope| {
        if show {
            scope.spawn(|| {
                while !finished.load(Ordering::Relaxed) {
                    let d = done.load(Ordering::Relaxed);
                    let w = 30 * d / n.max(1);
                    eprint!("\r[{}{}] {d}/{n} runs", "#".repeat(w), " ".repeat(30 - w));
                    std::thread::sleep(Duration::from_millis(100));
                }
                eprintln!("\r[{}] {n}/{n} runs", "#".repeat(30));
            });
        }
        let r = pool.install(|| {
            cfgs.par_iter()
                .map(|(i, sc, cfg)| {
                    let r = run_one(cfg, *i, &sweep, total, &fp, sc, keep_lat);
                    done.fetch_add(1, Ordering::Relaxed);
                    r
                })
                .collect()
        });
        finished.store(true, Ordering::Relaxed);
        r
    });
    let runs: Vec<RunRow> = rows
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(UsageError)?;
    if let Some(dir) = &a.plot {
        sweep_plots(dir, &sweep, &runs, &sweep.base)?;
    }
    let rows: Vec<Value> = runs.into_iter().map(|r| r.row).collect();
    if let Some(p) = &a.jsonl {
        let mut f = Pending::create("--jsonl", p)?;
        for r in &rows {
            writeln!(f.writer(), "{r}").map_err(|e| UsageError(format!("--jsonl: {e}")))?;
        }
        f.commit()?;
    }
    if let Some(p) = &a.csv {
        let mut f = Pending::create("--csv", p)?;
        f.writer()
            .write_all(rows_to_csv(&rows).as_bytes())
            .map_err(|e| UsageError(format!("--csv: {e}")))?;
        f.commit()?;
    }
    if a.csv.is_none() && a.jsonl.is_none() {
        print_table(&sweep, &rows);
    }
    Ok(())
}

fn print_table(sweep: &Sweep, rows: &[Value]) {
    let names: Vec<&str> = sweep.axes.iter().map(|(n, _)| n.as_str()).collect();
    let mut head = format!("{:>5}", "run");
    for n in &names {
        head.push_str(&format!(" {n:>14}"));
    }
    head.push_str(&format!(
        " {:>12} {:>12} {:>14} {:>8} {:>10} {:>8}",
        "TTFT p99 ms", "TPOT p99 ms", "hand-off p99", "SLO %", "goodput", "J/token"
    ));
    println!("{head}");
    let ms = |v: &Value| {
        v.as_f64()
            .map_or("-".to_string(), |x| format!("{:.1}", 1e3 * x))
    };
    for r in rows {
        let mut line = format!("{:>5}", r["run"].as_u64().unwrap_or(0));
        for n in &names {
            let v = &r["axes"][*n];
            let t = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            line.push_str(&format!(" {t:>14}"));
        }
        let s = &r["summary"];
        line.push_str(&format!(
            " {:>12} {:>12} {:>14} {:>8} {:>10} {:>8}",
            ms(&s["ttft_s"]["p99"]),
            ms(&s["tpot_s"]["p99"]),
            ms(&s["handoff_s"]["p99"]),
            s["slo_attainment"]
                .as_f64()
                .map_or("-".into(), |x| format!("{:.1}", 100.0 * x)),
            s["goodput_rps"]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.2}")),
            s["j_per_token"]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.3}")),
        ));
        println!("{line}");
    }
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
        writeln!(f.writer(), "{text}").map_err(|e| UsageError(format!("--jsonl: {e}")))?;
    }
    f.commit()?;
    if let Some(c) = &m.csv {
        let vals: Vec<Value> = rows.into_iter().map(|(_, v)| v).collect();
        let mut f = Pending::create("--csv", c)?;
        f.writer()
            .write_all(rows_to_csv(&vals).as_bytes())
            .map_err(|e| UsageError(format!("--csv: {e}")))?;
        f.commit()?;
    }
    Ok(())
}
