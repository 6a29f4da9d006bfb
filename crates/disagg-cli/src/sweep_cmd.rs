//! `disagg sweep`: the cartesian product of run options, run in parallel, written as one row per
//! run (CSV and/or JSON Lines) with identical bytes whatever the thread count; `--shard I/N` runs a
//! deterministic slice and `disagg sweep merge` joins the slices back into the one-machine output.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

use clap::{Args, Subcommand};
use disagg_model::Catalogue;
use disagg_sim::{simulate_config, Scenario, SimConfig, Summary};
use serde_json::{json, Map, Value};

use crate::output::{
    check_writable, out, outln, partial_path, resolve, Files, Pending, Target, Temp,
};
use crate::progress::Progress;
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
                crate::run_cmd::scenario_inputs(&self.sc, &mut f);
                f.input("--spec", self.spec.as_deref())
                    .output("--jsonl", self.jsonl.as_deref())
                    .output("--csv", self.csv.as_deref());
            }
        }
        f
    }
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
        let mut base = self.base.clone();
        disagg_sim::scenario::quiet_defaults(&mut base);
        let canon = json!({"base": base, "axes": self.axes});
        let mut h: u64 = 0xcbf29ce484222325;
        for b in canon.to_string().bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        format!("{h:016x}")
    }
}

/// A scenario as JSON with every option of the table present (unset custom-hardware keys, which
/// serde leaves out, as `null`), so that `--vary` and `--variant` accept them.
fn scenario_value(s: &Scenario) -> Value {
    let mut v = serde_json::to_value(s).expect("scenario");
    if let Some(o) = v.as_object_mut() {
        for opt in disagg_sim::options::OPTIONS {
            o.entry(opt.key).or_insert(Value::Null);
        }
    }
    v
}

fn valid_axes(base: &Value) -> Vec<String> {
    base.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// `base` with `NAME=VALUE[,NAME=VALUE...]` applied (names are scenario keys, values typed like
/// the field), for `--variant`.
pub fn apply_variant(base: &Scenario, spec: &str) -> Result<Scenario, UsageError> {
    let mut v = scenario_value(base);
    for pair in crate::plan_cmd::items("--variant", spec)? {
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
        let typed_val =
            typed(&v, &name, val).map_err(|e| UsageError(format!("--variant {}", e.0)))?;
        v.as_object_mut().expect("object").insert(name, typed_val);
    }
    serde_json::from_value(v).map_err(|e| UsageError(format!("--variant {spec}: {e}")))
}

/// The JSON value option `name` takes when its flag is given `raw` on top of `base` (a scenario
/// as JSON), read by the option table's setter ([`Scenario::set`]). `none` or `null` leaves an
/// optional option unset (unless it already holds a name, where `none` is a name: a
/// `kv_compress` preset).
fn typed(base: &Value, name: &str, raw: &str) -> Result<Value, UsageError> {
    let raw = raw.trim();
    let unknown = || {
        UsageError(format!(
            "unknown option '{name}'; valid: {}",
            valid_axes(base).join(", ")
        ))
    };
    let opt = disagg_sim::options::for_key(name).ok_or_else(unknown)?;
    let holds_name = base.get(name).is_some_and(Value::is_string);
    if opt.optional && matches!(raw, "none" | "null") && !holds_name {
        return Ok(Value::Null);
    }
    let mut s: Scenario = serde_json::from_value(base.clone())
        .map_err(|e| UsageError(format!("{name}={raw}: {e}")))?;
    s.set(name, raw)
        .map_err(|e| UsageError(format!("{name}={raw}: {e}")))?;
    // A whole number given to a real option not yet holding a real is echoed as written (`500`,
    // not `500.0`), as sweeps always have: axis values, the CSV and the spec fingerprint keep
    // their bytes. It reads back as the same value.
    if opt.kind == disagg_sim::options::Kind::F64 && !base.get(name).is_some_and(Value::is_f64) {
        if let Ok(u) = raw.parse::<u64>() {
            return Ok(json!(u));
        }
    }
    let v = serde_json::to_value(&s).expect("scenario");
    Ok(v.get(name).cloned().unwrap_or(Value::Null))
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
    let base = scenario_value(&base);
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

/// The sweep of a `[base]` table (scenario keys; may name a `preset`) and a `[vary]` table (axis
/// name to an array of values, in axis order), exactly as a `--spec` file with these tables gives
/// it; `shown` names the source in messages. For in-process callers (the Python package).
pub fn from_tables(base: toml::Table, vary: toml::Table, shown: &str) -> Result<Sweep, UsageError> {
    let mut t = toml::Table::new();
    t.insert("base".into(), toml::Value::Table(base));
    t.insert("vary".into(), toml::Value::Table(vary));
    spec_from_table(t, Path::new(shown), &ScenarioFlags::default())
}

/// The scenario and the validated configuration of run `i` (an invalid one names the run and its
/// axis values).
fn build_run(sweep: &Sweep, i: u64, cat: &Catalogue) -> Result<(Scenario, SimConfig), UsageError> {
    let sc = sweep.scenario(i)?;
    let cfg = sc.build(cat).map_err(|e| {
        let point: Vec<String> = sweep
            .point(i)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        UsageError(format!("run {i} ({}): {e}", point.join(" ")))
    })?;
    Ok((sc, cfg))
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

/// The rows `disagg sweep --jsonl` writes for slice `shard` (`(i, n)`: the runs whose index modulo
/// `n` is `i`) of `sweep`, in run order, computed on `threads` workers (default: all cores). Every
/// run is validated before any runs, as the command does, and the runs that run at once (one per
/// worker, the largest first) must fit in `memory_limit_bytes` together
/// ([`disagg_sim::budget`]). Setting `cancel` stops every run (within 1,024 events) and the
/// sweep then fails with [`disagg_model::Error::Cancelled`]'s message. For in-process callers.
pub fn rows(
    sweep: &Sweep,
    cat: &Catalogue,
    shard: (u64, u64),
    threads: Option<usize>,
    cancel: &AtomicBool,
    memory_limit_bytes: u64,
) -> Result<Vec<Value>, UsageError> {
    use rayon::prelude::*;
    let (shard_i, shard_n) = shard;
    if shard_n == 0 || shard_i >= shard_n {
        return Err(UsageError(format!(
            "shard: expected (i, n) with 0 <= i < n, got ({shard_i}, {shard_n})"
        )));
    }
    let total = sweep.runs();
    if total > MAX_RUNS_WITHOUT_YES {
        return Err(UsageError(format!(
            "the sweep has {total} runs, more than {MAX_RUNS_WITHOUT_YES}: split it into shards"
        )));
    }
    let runs = shard_runs(total, shard_i, shard_n);
    let mut work = Vec::with_capacity(runs as usize);
    for k in 0..runs {
        let i = shard_i + k * shard_n;
        let (sc, cfg) = build_run(sweep, i, cat)?;
        work.push((i, sc, cfg));
    }
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        b = b.num_threads(t);
    }
    let pool = b.build().map_err(|e| UsageError(format!("threads: {e}")))?;
    let needs: Vec<u64> = work
        .iter()
        .map(|(_, _, cfg)| disagg_sim::budget::config_bytes(cfg, false))
        .collect();
    let at_once = needs.len().min(pool.current_num_threads().max(1));
    let together = disagg_sim::budget::largest_together(&needs, at_once);
    disagg_sim::budget::check(together, memory_limit_bytes).map_err(|e| {
        UsageError(format!(
            "requests: {at_once} runs at once (one per thread) would {e}"
        ))
    })?;
    let fp = sweep.fingerprint();
    pool.install(|| {
        work.par_iter()
            .map(|(i, sc, cfg)| {
                run_one(cfg, *i, sweep, total, &fp, sc, false, Some(cancel))
                    .map(|r| r.row)
                    .map_err(UsageError)
            })
            .collect()
    })
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
            for raw in crate::plan_cmd::items("--vary", vals)? {
                if !matches!(raw.trim(), "none" | "null") {
                    r.parse(raw)
                        .map_err(|e| UsageError(format!("--vary {name}={raw}: {e}")))?;
                }
            }
        }
        let raws = crate::plan_cmd::items("--vary", vals)?;
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

/// The scalars of a row under dotted keys: its CSV cells by column name.
fn flat_row(r: &Value) -> Vec<(String, Value)> {
    let mut f = Vec::new();
    flatten("", r, &mut f);
    f
}

/// Adds the keys of `f` not seen yet to the CSV header, in order.
fn extend_header(header: &mut Vec<String>, seen: &mut HashSet<String>, f: &[(String, Value)]) {
    for (k, _) in f {
        if seen.insert(k.clone()) {
            header.push(k.clone());
        }
    }
}

/// One CSV line (with its newline) of a flattened row under `header`.
fn csv_line(header: &[String], f: &[(String, Value)]) -> String {
    let m: HashMap<&str, &Value> = f.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let cells: Vec<String> = header
        .iter()
        .map(|h| m.get(h.as_str()).map_or(String::new(), |v| csv_cell(v)))
        .collect();
    let mut line = cells.join(",");
    line.push('\n');
    line
}

/// CSV text of JSONL rows: one column per scalar of `run`, `scenario.*` and `summary.*`.
fn rows_to_csv(rows: &[Value]) -> String {
    let flat: Vec<Vec<(String, Value)>> = rows.iter().map(flat_row).collect();
    let mut header: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for f in &flat {
        extend_header(&mut header, &mut seen, f);
    }
    let mut out = header.join(",");
    out.push('\n');
    for f in &flat {
        out.push_str(&csv_line(&header, f));
    }
    out
}

/// The rows of a JSON Lines file, one at a time.
fn jsonl_rows(path: &Path) -> Result<impl Iterator<Item = Result<Value, UsageError>>, UsageError> {
    let shown = path.display().to_string();
    let f =
        std::fs::File::open(path).map_err(|e| UsageError(format!("cannot read '{shown}': {e}")))?;
    Ok(BufReader::new(f).lines().map(move |l| {
        let l = l.map_err(|e| UsageError(format!("cannot read '{shown}': {e}")))?;
        serde_json::from_str(&l).map_err(|e| UsageError(format!("{shown}: not a sweep row: {e}")))
    }))
}

/// Writes the CSV of the rows in the JSON Lines file `rows` to `out`, reading the file twice
/// (columns, then cells) so that memory does not grow with the number of rows. The bytes are
/// those of [`rows_to_csv`].
fn csv_from_jsonl(rows: &Path, out: &mut Pending) -> CmdResult {
    let mut header: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for r in jsonl_rows(rows)? {
        extend_header(&mut header, &mut seen, &flat_row(&r?));
    }
    out.write_all(format!("{}\n", header.join(",")).as_bytes())?;
    for r in jsonl_rows(rows)? {
        out.write_all(csv_line(&header, &flat_row(&r?)).as_bytes())?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    cfg: &SimConfig,
    i: u64,
    sweep: &Sweep,
    total: u64,
    fp: &str,
    sc: &Scenario,
    keep_latencies: bool,
    cancel: Option<&AtomicBool>,
) -> Result<RunRow, String> {
    let run = match cancel {
        Some(flag) => {
            disagg_sim::simulate_config_observed(cfg, &mut disagg_sim::observer::Cancel(flag))
        }
        None => simulate_config(cfg),
    }
    .map_err(|e| format!("run {i}: {e}"))?;
    let s = run.summary();
    let axes: Map<String, Value> = sweep.point(i).into_iter().collect();
    let lat = keep_latencies.then(|| plots::Latencies::of(&point_label(sweep, i), &run));
    let row = json!({
        "run": i,
        "runs_total": total,
        "spec": fp,
        "axes": axes,
        "scenario": sc.with_slos_resolved().echo_value(),
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
        .filter_map(|r| r.lat.as_ref())
        .map(|l| l.clone_named())
        .collect();
    if !lats.is_empty() {
        plots::cdfs(dir, &lats, slo, &mut written)?;
    }
    plots::report(&written);
    Ok(())
}

/// Copies the finished output `from` into a new partial file `to` (never an existing path, so a
/// planted symbolic link is not followed).
fn copy_to_new(from: &Path, to: &Path) -> CmdResult {
    let cannot =
        |e: std::io::Error| UsageError(format!("--jsonl: cannot write '{}': {e}", to.display()));
    let mut src = std::fs::File::open(from)
        .map_err(|e| UsageError(format!("--resume: cannot read '{}': {e}", from.display())))?;
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .map_err(cannot)?;
    if let Err(e) = std::io::copy(&mut src, &mut dst) {
        drop(dst);
        let _ = std::fs::remove_file(to);
        return Err(cannot(e));
    }
    Ok(())
}

/// How many runs slice `i` of `n` has.
fn shard_runs(total: u64, i: u64, n: u64) -> u64 {
    if total > i {
        (total - i - 1) / n + 1
    } else {
        0
    }
}

/// Checks that the rows of `path` are the first rows of this sweep's slice, in order, and
/// returns how many there are and the bytes they take (an incomplete last line is not counted).
fn resumable_rows(
    path: &Path,
    fp: &str,
    total: u64,
    (shard_i, shard_n): (u64, u64),
    runs: u64,
) -> Result<(u64, u64), UsageError> {
    let shown = path.display();
    let cannot = |e: std::io::Error| UsageError(format!("--resume: cannot read '{shown}': {e}"));
    let mut r = BufReader::new(crate::output::open_own_file("--resume", path, false)?);
    let mut line = Vec::new();
    let (mut k, mut bytes) = (0u64, 0u64);
    loop {
        line.clear();
        let got = r.read_until(b'\n', &mut line).map_err(cannot)?;
        if got == 0 || line.last() != Some(&b'\n') {
            break;
        }
        let at = format!("{shown}:{}", k + 1);
        let v: Value = serde_json::from_slice(&line)
            .map_err(|e| UsageError(format!("--resume: {at}: not a sweep row: {e}")))?;
        let (row_fp, row_total) = (v["spec"].as_str(), v["runs_total"].as_u64());
        if row_fp != Some(fp) || row_total != Some(total) {
            return Err(UsageError(format!(
                "--resume: '{shown}' holds rows of another sweep (spec {}, {} runs; this sweep is spec {fp}, {total} runs): remove it or drop --resume",
                row_fp.unwrap_or("?"),
                row_total.map_or("?".to_string(), |t| t.to_string())
            )));
        }
        let want = shard_i + k * shard_n;
        if k >= runs || v["run"].as_u64() != Some(want) {
            return Err(UsageError(format!(
                "--resume: {at}: run {} where run {want} was expected (rows of another shard, or a damaged file): remove it or drop --resume",
                v["run"]
            )));
        }
        k += 1;
        bytes += got as u64;
    }
    Ok((k, bytes))
}

/// What the workers of a sweep share: the runs, the next one to take, and the reorder window.
struct Work<'a> {
    sweep: &'a Sweep,
    cat: &'a Catalogue,
    fp: &'a str,
    shard: (u64, u64),
    runs: u64,
    keep_latencies: bool,
    /// The next run (position in the slice) a worker takes.
    next: AtomicU64,
    /// Rows written so far; a worker waits while its run is `window` or more ahead of it.
    written: Mutex<u64>,
    advanced: Condvar,
    window: u64,
    stop: AtomicBool,
}

impl Work<'_> {
    /// One worker: takes runs in order and sends their rows, never more than `window` ahead of
    /// the writer, so memory stays bounded whatever the number of runs.
    fn worker(&self, tx: &mpsc::Sender<(u64, Result<RunRow, String>)>) {
        loop {
            let k = self.next.fetch_add(1, Ordering::Relaxed);
            if k >= self.runs || self.stop.load(Ordering::Relaxed) {
                return;
            }
            {
                let mut w = self.written.lock().unwrap_or_else(|e| e.into_inner());
                while k >= *w + self.window && !self.stop.load(Ordering::Relaxed) {
                    w = self.advanced.wait(w).unwrap_or_else(|e| e.into_inner());
                }
            }
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            let i = self.shard.0 + k * self.shard.1;
            let total = self.sweep.runs();
            let row = self.sweep.scenario(i).map_err(|e| e.0).and_then(|sc| {
                let cfg = sc.build(self.cat).map_err(|e| format!("run {i}: {e}"))?;
                run_one(
                    &cfg,
                    i,
                    self.sweep,
                    total,
                    self.fp,
                    &sc,
                    self.keep_latencies,
                    None,
                )
            });
            if tx.send((k, row)).is_err() {
                return;
            }
        }
    }

    /// Lets the workers run up to `window` past row `done`.
    fn advance(&self, done: u64) {
        *self.written.lock().unwrap_or_else(|e| e.into_inner()) = done;
        self.advanced.notify_all();
    }
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
            if crate::output::own_file_exists(flag, &partial)? {
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
    let pool = {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(t) = a.threads {
            b = b.num_threads(t);
        }
        b.build()
            .map_err(|e| UsageError(format!("--threads: {e}")))?
    };
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
    let work = Work {
        sweep: &sweep,
        cat,
        fp: &fp,
        shard: (shard_i, shard_n),
        runs,
        keep_latencies: keep_runs && runs <= 12,
        next: AtomicU64::new(start),
        written: Mutex::new(start),
        advanced: Condvar::new(),
        window: 32 * pool.current_num_threads().max(2) as u64,
        stop: AtomicBool::new(false),
    };
    let mut sinks = Sinks {
        jsonl: jsonl_out,
        spool,
        table: table.then_some((names, levers)),
        runs: keep_runs.then(Vec::new),
        progress: Progress::start("runs", runs - start, a.quiet),
        warnings: Default::default(),
        calibrated: Vec::new(),
    };
    let outcome: CmdResult = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let (work, pool) = (&work, &pool);
        scope.spawn(move || pool.broadcast(|_| work.worker(&tx)));
        let mut ahead: BTreeMap<u64, Result<RunRow, String>> = BTreeMap::new();
        let mut done = start;
        let mut failure = None;
        for (k, row) in rx {
            if failure.is_some() {
                continue;
            }
            ahead.insert(k, row);
            while let Some(row) = ahead.remove(&done) {
                if let Err(e) = row.map_err(UsageError).and_then(|r| sinks.emit(r)) {
                    failure = Some(e);
                    break;
                }
                done += 1;
            }
            // Every finished row reaches the file (an interrupted sweep keeps them all).
            if failure.is_none() {
                failure = sinks.flush().err();
            }
            if failure.is_some() {
                work.stop.store(true, Ordering::Relaxed);
                ahead.clear();
            }
            work.advance(done);
        }
        failure.map_or(Ok(()), Err)
    });
    let Sinks {
        jsonl: mut jsonl_out,
        mut spool,
        runs: kept_runs,
        progress,
        warnings,
        calibrated,
        ..
    } = sinks;
    drop(progress);
    outcome?;
    warnings.finish();
    out!("{}", crate::report::calibration_lines(&calibrated));
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
    runs: Option<Vec<RunRow>>,
    progress: Progress,
    /// The runs' warnings, told once at the end.
    warnings: crate::report::RunWarnings,
    /// The `calibrated` lines under the stdout table (fitted devices of any run).
    calibrated: Vec<disagg_sim::CalibrationSummary>,
}

impl Sinks<'_> {
    fn emit(&mut self, r: RunRow) -> CmdResult {
        self.warnings.add(&r.row["summary"]);
        let line = format!("{}\n", r.row);
        for p in [&mut self.jsonl, &mut self.spool].into_iter().flatten() {
            p.write_all(line.as_bytes())?;
        }
        if let Some((names, levers)) = &self.table {
            outln!("{}", table_line(names, &r.row, *levers));
            crate::report::add_calibration(&mut self.calibrated, &r.summary);
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

/// The scheduler cells of a row's summary (levers-scheduling.md §11.1): mean running,
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
    head.push_str(&format!(
        " {:>12} {:>12} {:>14} {:>8} {:>10} {:>8}",
        "TTFT p99 ms", "TPOT p99 ms", "hand-off p99", "SLO %", "goodput", "J/token"
    ));
    if levers {
        let h = crate::report::SCHED_HEADS;
        head.push_str(&format!(
            " {:>12} {:>12} {:>12} {:>12}",
            h[0], h[1], h[2], h[3]
        ));
    }
    head
}

fn table_line(names: &[&str], r: &Value, levers: bool) -> String {
    let ms = |v: &Value| {
        v.as_f64()
            .map_or("-".to_string(), |x| format!("{:.1}", 1e3 * x))
    };
    let mut line = format!("{:>5}", r["run"].as_u64().unwrap_or(0));
    for n in names {
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
    if levers {
        line.push_str(&sched_cells(s));
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
        let plain = table_line(&["batch_policy"], &row, false);
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
            table_line(&["batch_policy"], &row, true),
            format!(
                "{plain} {:>12} {:>12} {:>12} {:>12}",
                "12.3", "7", "25.0", "12.3"
            )
        );
        let mut none = row.clone();
        none["summary"]["scheduler"] = serde_json::json!({"mean_running": 1.0});
        assert!(
            table_line(&["batch_policy"], &none, true).ends_with(&format!(
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

    #[test]
    fn vary_values_are_read_by_the_option_table() {
        let base = scenario_value(&Scenario::default());
        let t = |name: &str, raw: &str| typed(&base, name, raw);
        assert_eq!(t("send", "layer-wise").unwrap(), json!("layerwise"));
        assert_eq!(t("kv_compress_at", " gpu ").unwrap(), json!("endpoint"));
        assert_eq!(t("trace_format", "Azure").unwrap(), json!("azure"));
        assert_eq!(t("rate", "2").unwrap(), json!(2.0));
        assert_eq!(t("prefill", "3").unwrap(), json!(3));
        assert_eq!(t("dvfs", "on").unwrap(), json!(true));
        assert_eq!(t("fast", "no").unwrap(), json!(false));
        assert_eq!(t("layers", "40").unwrap(), json!(40));
        assert_eq!(t("power_cap", "none").unwrap(), Value::Null);
        // Whole numbers for an unset real option are echoed as written.
        assert_eq!(t("power_cap", "500").unwrap(), json!(500));
        assert_eq!(t("power_cap", "500.5").unwrap(), json!(500.5));
        assert_eq!(t("device_tdp_w", "1e3").unwrap(), json!(1000.0));
        assert!(t("power_cap", "lots").is_err());
        // `none` unsets kv_compress when unset, and is the identity preset's name when set.
        assert_eq!(t("kv_compress", "none").unwrap(), Value::Null);
        let fp8 = scenario_value(&Scenario {
            kv_compress: Some("fp8".into()),
            ..Scenario::default()
        });
        assert_eq!(typed(&fp8, "kv_compress", "none").unwrap(), json!("none"));
        let e = t("mode", "both").unwrap_err().0;
        assert_eq!(
            e,
            "mode=both: unknown --mode 'both'; valid: disagg, colocated"
        );
        let e = t("prefill", "2.5").unwrap_err().0;
        assert_eq!(
            e,
            "prefill=2.5: --prefill: expected a whole number, got '2.5'"
        );
        assert!(t("warp", "1")
            .unwrap_err()
            .0
            .starts_with("unknown option 'warp'"));
    }

    #[test]
    fn variants_are_read_by_the_option_table() {
        let s = apply_variant(&Scenario::default(), "send=layer-wise,prefill=2").unwrap();
        assert_eq!(s.send, disagg_model::SendMode::Layerwise);
        assert_eq!(s.prefill, 2);
        let e = apply_variant(&Scenario::default(), "first_token=last").unwrap_err();
        assert_eq!(
            e.0,
            "--variant first_token=last: unknown --first-token 'last'; valid: prefill, decode"
        );
    }

    #[test]
    fn the_scheduling_levers_vary_and_vary_nothing_else() {
        use disagg_sim::levers::{BatchPolicy, KvPolicy, Preemption};
        let base = scenario_value(&Scenario::default());
        let t = |name: &str, raw: &str| typed(&base, name, raw).unwrap();
        let axes = vec![
            (
                "batch_policy".to_string(),
                vec![
                    t("batch_policy", "chunked"),
                    t("batch_policy", "prefill-priority"),
                ],
            ),
            (
                "max_num_batched_tokens".to_string(),
                vec![
                    t("max_num_batched_tokens", "none"),
                    t("max_num_batched_tokens", "512"),
                ],
            ),
        ];
        assert_eq!(axes[0].1, [json!("chunked"), json!("prefill-priority")]);
        assert_eq!(axes[1].1, [Value::Null, json!(512)]);
        let sweep = Sweep { base, axes };
        assert_eq!(sweep.runs(), 4);
        // The last axis varies fastest.
        let want = [
            (BatchPolicy::Chunked, None),
            (BatchPolicy::Chunked, Some(512)),
            (BatchPolicy::PrefillPriority, None),
            (BatchPolicy::PrefillPriority, Some(512)),
        ];
        for (i, (policy, budget)) in want.into_iter().enumerate() {
            let s = sweep.scenario(i as u64).unwrap();
            assert_eq!(
                s,
                Scenario {
                    batch_policy: policy,
                    max_num_batched_tokens: budget,
                    ..Scenario::default()
                },
                "run {i}"
            );
            // Switched on unless both are at their defaults.
            assert_eq!(s.levers_on(), i != 2, "run {i}");
        }
        let base = scenario_value(&Scenario::default());
        assert_eq!(typed(&base, "kv_policy", "pow2").unwrap(), json!("pow2"));
        assert_eq!(typed(&base, "preemption", "swap").unwrap(), json!("swap"));
        assert_eq!(typed(&base, "prefix_caching", "on").unwrap(), json!(true));
        assert_eq!(typed(&base, "speculative", "mtp").unwrap(), json!("mtp"));
        assert_eq!(typed(&base, "alpha", "0.5").unwrap(), json!(0.5));
        assert_eq!(
            typed(&base, "kv_policy", "lru").unwrap_err().0,
            "kv_policy=lru: unknown --kv-policy 'lru'; valid: oracle, pow2, max, paged"
        );
        let s = apply_variant(&Scenario::default(), "kv_policy=paged,preemption=swap").unwrap();
        assert_eq!(
            (s.kv_policy, s.preemption),
            (KvPolicy::Paged, Preemption::Swap)
        );
    }
}
