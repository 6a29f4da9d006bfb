//! Sweeps: the cartesian product of run options, one row per run (the `disagg sweep --jsonl`
//! row, also the CSV's source) with identical bytes whatever the thread count. [`execute`] is the
//! one executor: runs of a slice (`--shard I/N`) in order, from any run on (`--resume`), on a
//! thread pool, each row handed to a [`RowSink`] in run order as it finishes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

use disagg_model::Catalogue;
use disagg_sim::{simulate_config, RunResult, Scenario, SimConfig, Summary};
use serde_json::{json, Map, Value};

use crate::error::{CmdResult, UsageError};
use crate::output::Pending;

/// The comma-separated items of `s`, trimmed. An empty item (`2,,4`, a trailing comma) is an
/// error rather than silently dropped; an empty or blank `s` gives no items.
pub fn items<'a>(flag: &str, s: &'a str) -> Result<Vec<&'a str>, UsageError> {
    if s.trim().is_empty() {
        return Ok(vec![]);
    }
    let v: Vec<&str> = s.split(',').map(str::trim).collect();
    if v.iter().any(|x| x.is_empty()) {
        return Err(UsageError(format!(
            "{flag}: empty item between commas in '{s}'; give each value once, e.g. 2,4"
        )));
    }
    Ok(v)
}

/// Most runs a sweep may have without `--yes`.
pub const MAX_RUNS_WITHOUT_YES: u64 = 100_000;

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
pub fn scenario_value(s: &Scenario) -> Value {
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
    for pair in items("--variant", spec)? {
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
pub fn typed(base: &Value, name: &str, raw: &str) -> Result<Value, UsageError> {
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

pub fn check_axis(
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

/// `base` with a TOML table of scenario keys laid over it (`at` names the table in messages). The
/// table may name a `preset`, which replaces `base` first unless the command line named one
/// (`cli_preset`: the command line wins).
pub fn overlay_table(
    base: Scenario,
    mut table: toml::Table,
    at: &str,
    cli_preset: bool,
) -> Result<Scenario, UsageError> {
    let mut base = base;
    if let Some(p) = table.remove("preset") {
        let name = p
            .as_str()
            .ok_or_else(|| UsageError(format!("{at}: preset: expected a string")))?;
        if !cli_preset {
            base = disagg_sim::presets::find(name)
                .map_err(|e| UsageError(format!("{at}: {e}")))?
                .scenario;
        }
    }
    let mut merged = toml::Table::try_from(&base).map_err(|e| UsageError(e.to_string()))?;
    for (k, v) in table {
        merged.insert(k, v);
    }
    let text = toml::to_string(&merged).map_err(|e| UsageError(e.to_string()))?;
    toml::from_str::<Scenario>(&text)
        .map_err(|e| UsageError(format!("{at}: {}", e.message().replace('\n', " "))))
}

/// The sweep of a spec file's table (`path` names it in messages) over the scenario `base` (the
/// command line's flags; `cli_preset`: they named a preset, which the file's `preset` does not
/// replace).
pub fn spec_from_table(
    mut t: toml::Table,
    path: &Path,
    base: Scenario,
    cli_preset: bool,
) -> Result<Sweep, UsageError> {
    for k in t.keys() {
        if k != "base" && k != "vary" {
            return Err(UsageError(format!(
                "{}: unknown key '{k}'; valid: base, vary",
                path.display()
            )));
        }
    }
    let mut base = base;
    if let Some(b) = t.remove("base") {
        let bt = b
            .as_table()
            .cloned()
            .ok_or_else(|| UsageError(format!("{}: base: expected a table", path.display())))?;
        let at = format!("{}: base", path.display());
        base = overlay_table(base, bt, &at, cli_preset)?;
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
    spec_from_table(t, Path::new(shown), Scenario::default(), false)
}

/// The sweep of a base (scenario keys; may name a `preset`) and axes (axis name to an array of
/// values, in axis order) given as JSON, for in-process callers (the Python package): a base key
/// set to `null` unsets its option (`kv_compress: null` is no compression, whatever the preset
/// says), and `null` among an axis's values is the option unset. Otherwise exactly the sweep of a
/// `--spec` file with these tables ([`from_tables`]); `shown` names the source in messages.
pub fn from_json(
    base: Map<String, Value>,
    vary: Map<String, Value>,
    shown: &str,
) -> Result<Sweep, UsageError> {
    let mut table = toml::Table::new();
    let mut unset = Vec::new();
    for (k, v) in base {
        if v.is_null() {
            unset.push(k);
            continue;
        }
        let tv = toml::Value::try_from(&v).map_err(|e| UsageError(format!("base.{k}: {e}")))?;
        table.insert(k, tv);
    }
    let at = format!("{shown}: base");
    let mut sc = overlay_table(Scenario::default(), table, &at, false)?;
    if !unset.is_empty() {
        let mut v = scenario_value(&sc);
        for k in unset {
            if v.get(&k).is_none() {
                return Err(UsageError(format!(
                    "{at}: unknown option '{k}'; valid: {}",
                    valid_axes(&v).join(", ")
                )));
            }
            v[k.as_str()] = Value::Null;
        }
        sc = serde_json::from_value(v).map_err(|e| UsageError(format!("{at}: {e}")))?;
    }
    let base = scenario_value(&sc);
    let mut axes = Vec::new();
    for (name, vals) in vary {
        let arr = vals.as_array().ok_or_else(|| {
            UsageError(format!("{shown}: vary.{name}: expected an array of values"))
        })?;
        let values: Vec<Value> = arr
            .iter()
            .map(|x| match x {
                // A whole number for a real option, as a spec file's integer is read.
                Value::Number(n) if !n.is_f64() && base.get(&name).is_some_and(Value::is_f64) => {
                    json!(n.as_f64().unwrap_or(f64::NAN))
                }
                other => other.clone(),
            })
            .collect();
        check_axis(&base, &name, &values, &axes)
            .map_err(|e| UsageError(format!("{shown}: {}", e.0)))?;
        axes.push((name, values));
    }
    Ok(Sweep { base, axes })
}

/// The scenario and the validated configuration of run `i` (an invalid one names the run and its
/// axis values).
pub fn build_run(
    sweep: &Sweep,
    i: u64,
    cat: &Catalogue,
) -> Result<(Scenario, SimConfig), UsageError> {
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
    let mut needs = Vec::with_capacity(runs as usize);
    for k in 0..runs {
        let i = shard_i + k * shard_n;
        let (_, cfg) = build_run(sweep, i, cat)?;
        needs.push(disagg_sim::budget::config_bytes(&cfg, false));
    }
    let pool = thread_pool(threads).map_err(|e| UsageError(format!("threads: {e}")))?;
    let at_once = needs.len().min(pool.current_num_threads().max(1));
    let together = disagg_sim::budget::largest_together(&needs, at_once);
    disagg_sim::budget::check(together, memory_limit_bytes).map_err(|e| {
        UsageError(format!(
            "requests: {at_once} runs at once (one per thread) would {e}"
        ))
    })?;
    let mut out = Vec::with_capacity(runs as usize);
    let fp = sweep.fingerprint();
    let plan = Execution {
        sweep,
        cat,
        shard,
        start: 0,
        cancel: Some(cancel),
        fingerprint: &fp,
    };
    execute(&plan, &pool, &NO_EXTRA, &mut |r: RunRow<()>| {
        out.push(r.row);
        Ok(())
    })?;
    Ok(out)
}

/// A thread pool of `threads` workers (default: one per core).
pub fn thread_pool(
    threads: Option<usize>,
) -> Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        b = b.num_threads(t);
    }
    b.build()
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
pub fn rows_to_csv(rows: &[Value]) -> String {
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
pub fn csv_from_jsonl(rows: &Path, out: &mut Pending) -> CmdResult {
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
fn run_one<T>(
    cfg: &SimConfig,
    i: u64,
    sweep: &Sweep,
    total: u64,
    fp: &str,
    sc: &Scenario,
    extra: &Extra<T>,
    cancel: Option<&AtomicBool>,
) -> Result<RunRow<T>, String> {
    let run = match cancel {
        Some(flag) => {
            disagg_sim::simulate_config_observed(cfg, &mut disagg_sim::observer::Cancel(flag))
        }
        None => simulate_config(cfg),
    }
    .map_err(|e| format!("run {i}: {e}"))?;
    let s = run.summary();
    let axes: Map<String, Value> = sweep.point(i).into_iter().collect();
    let extra = extra(sweep, i, &run);
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
        extra,
    })
}

/// One run's output row, its summary, and what the caller keeps of the run itself (its
/// latencies when CDFs are drawn; see [`Extra`]).
pub struct RunRow<T> {
    pub row: Value,
    pub summary: Summary,
    pub extra: Option<T>,
}

/// What a caller keeps of run `i`'s result beyond its row (`None`: nothing), computed on the
/// worker while the result is at hand.
pub type Extra<T> = dyn Fn(&Sweep, u64, &RunResult) -> Option<T> + Sync;

/// Keeps nothing of the runs.
pub static NO_EXTRA: fn(&Sweep, u64, &RunResult) -> Option<()> = |_, _, _| None;

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
pub fn point_label_without(sweep: &Sweep, i: u64, skip: Option<&str>) -> String {
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

pub fn point_label(sweep: &Sweep, i: u64) -> String {
    point_label_without(sweep, i, None)
}

/// Copies the finished output `from` into a new partial file `to` (never an existing path, so a
/// planted symbolic link is not followed).
pub fn copy_to_new(from: &Path, to: &Path) -> CmdResult {
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
pub fn shard_runs(total: u64, i: u64, n: u64) -> u64 {
    if total > i {
        (total - i - 1) / n + 1
    } else {
        0
    }
}

/// Checks that the rows of `path` are the first rows of this sweep's slice, in order, and
/// returns how many there are and the bytes they take (an incomplete last line is not counted).
pub fn resumable_rows(
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

/// What a sweep runs: the runs of slice `shard` (`(i, n)`: the runs whose index modulo `n` is
/// `i`) of `sweep` from position `start` in the slice on (the earlier ones are done: a resumed
/// sweep). Setting `cancel` stops every run (within 1,024 events) and the sweep then fails with
/// [`disagg_model::Error::Cancelled`]'s message.
pub struct Execution<'a> {
    pub sweep: &'a Sweep,
    pub cat: &'a Catalogue,
    pub shard: (u64, u64),
    pub start: u64,
    pub cancel: Option<&'a AtomicBool>,
    /// The sweep's [`Sweep::fingerprint`] (computed once by the caller, which needs it too).
    pub fingerprint: &'a str,
}

/// Where the rows of [`execute`] go, in run order, as they finish.
pub trait RowSink<T> {
    /// Takes the next row; an error stops the sweep.
    fn emit(&mut self, row: RunRow<T>) -> CmdResult;
    /// Called after the rows that finished together were emitted (every finished row reaches a
    /// file: an interrupted sweep keeps them all).
    fn flush(&mut self) -> CmdResult {
        Ok(())
    }
}

impl<T, F: FnMut(RunRow<T>) -> CmdResult> RowSink<T> for F {
    fn emit(&mut self, row: RunRow<T>) -> CmdResult {
        self(row)
    }
}

/// The one sweep executor: runs `plan` on `pool` and hands each row to `sink` in run order. The
/// workers take runs in order and never run more than a window of runs ahead of the sink, so
/// memory stays bounded whatever the number of runs; the bytes of the rows do not depend on the
/// number of threads. The runs are expected to be validated ([`build_run`]) before.
pub fn execute<T: Send>(
    plan: &Execution,
    pool: &rayon::ThreadPool,
    extra: &Extra<T>,
    sink: &mut dyn RowSink<T>,
) -> CmdResult {
    let (shard_i, shard_n) = plan.shard;
    let total = plan.sweep.runs();
    let work = Work {
        plan,
        extra,
        fp: plan.fingerprint,
        runs: shard_runs(total, shard_i, shard_n),
        next: AtomicU64::new(plan.start),
        written: Mutex::new(plan.start),
        advanced: Condvar::new(),
        window: 32 * pool.current_num_threads().max(2) as u64,
        stop: AtomicBool::new(false),
    };
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let work = &work;
        scope.spawn(move || pool.broadcast(|_| work.worker(&tx)));
        let mut ahead: BTreeMap<u64, Result<RunRow<T>, String>> = BTreeMap::new();
        let mut done = plan.start;
        let mut failure = None;
        for (k, row) in rx {
            if failure.is_some() {
                continue;
            }
            ahead.insert(k, row);
            while let Some(row) = ahead.remove(&done) {
                if let Err(e) = row.map_err(UsageError).and_then(|r| sink.emit(r)) {
                    failure = Some(e);
                    break;
                }
                done += 1;
            }
            // Every finished row reaches the file (an interrupted sweep keeps them all).
            if failure.is_none() {
                failure = sink.flush().err();
            }
            if failure.is_some() {
                work.stop.store(true, Ordering::Relaxed);
                ahead.clear();
            }
            work.advance(done);
        }
        failure.map_or(Ok(()), Err)
    })
}

/// What the workers of a sweep share: the runs, the next one to take, and the reorder window.
struct Work<'a, T> {
    plan: &'a Execution<'a>,
    extra: &'a Extra<T>,
    fp: &'a str,
    runs: u64,
    /// The next run (position in the slice) a worker takes.
    next: AtomicU64,
    /// Rows written so far; a worker waits while its run is `window` or more ahead of it.
    written: Mutex<u64>,
    advanced: Condvar,
    window: u64,
    stop: AtomicBool,
}

impl<T> Work<'_, T> {
    /// One worker: takes runs in order and sends their rows, never more than `window` ahead of
    /// the writer, so memory stays bounded whatever the number of runs.
    fn worker(&self, tx: &mpsc::Sender<(u64, Result<RunRow<T>, String>)>) {
        let sweep = self.plan.sweep;
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
            let i = self.plan.shard.0 + k * self.plan.shard.1;
            let total = sweep.runs();
            let row = sweep.scenario(i).map_err(|e| e.0).and_then(|sc| {
                let cfg = sc
                    .build(self.plan.cat)
                    .map_err(|e| format!("run {i}: {e}"))?;
                run_one(
                    &cfg,
                    i,
                    sweep,
                    total,
                    self.fp,
                    &sc,
                    self.extra,
                    self.plan.cancel,
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_json_sweep_is_the_spec_sweep_and_null_unsets() {
        let obj = |v: Value| v.as_object().unwrap().clone();
        let table = |v: Value| toml::Table::try_from(v).unwrap();
        let base = json!({"preset": "eth25g-14rps-fp8", "requests": 50});
        let vary = json!({"rate": [2, 4.5], "link": ["eth-25g", "ib-ndr"]});
        let a = from_json(obj(base.clone()), obj(vary.clone()), "sweep").unwrap();
        let b = from_tables(table(base), table(vary), "sweep").unwrap();
        assert_eq!((a.base.clone(), a.axes.clone()), (b.base, b.axes));
        assert_eq!(a.axes[0].1, [json!(2.0), json!(4.5)]);
        assert_eq!(a.base["kv_compress"], json!("fp8"));
        // `null` in the base unsets the preset's compression; in an axis, it is a value.
        let base = json!({"preset": "eth25g-14rps-fp8", "kv_compress": null});
        let vary = json!({"kv_compress": [null, "fp8"]});
        let c = from_json(obj(base), obj(vary), "sweep").unwrap();
        assert_eq!(c.base["kv_compress"], Value::Null);
        assert_eq!(c.scenario(0).unwrap().kv_compress, None);
        assert_eq!(c.scenario(1).unwrap().kv_compress.as_deref(), Some("fp8"));
        let e = from_json(obj(json!({"warp": null})), Map::new(), "sweep").unwrap_err();
        assert!(
            e.0.starts_with("sweep: base: unknown option 'warp'"),
            "{}",
            e.0
        );
    }
}
