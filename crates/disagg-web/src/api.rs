//! The HTTP API without sockets: routing, the five endpoints, limits and errors.
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/` | | the page |
//! | GET | `/api/catalogue` | | `disagg list --json` (a served model of issue 16 also has `why_kv`, `kv_kinds`, `windowed_kv_bytes_per_token`, `kv_windows`, `state_bytes_per_request`, `moe`, `source`), plus `scenario_defaults`, `option_help`, `handoff_defaults`, `limits` |
//! | GET | `/api/presets` | | `disagg presets --json` |
//! | POST | `/api/handoff` | `disagg handoff` options (+ `batch`; the rank-aware `handoff_ranks`, `prefill_tp`, ... apply to every item) | `disagg handoff --json` (or `{"batch": [...]}`) |
//! | POST | `/api/run` | a `Scenario` (+ `preset`, `latency_samples`, `series`) | `disagg run --json` (+ extras) |
//! | POST | `/api/sweep` | a `Scenario` (+ `preset`, `rates`, `compact`) | one summary per rate |

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use disagg_model::calc::HandoffSpec;
use disagg_model::ranks::RankSpec;
use disagg_model::{Catalogue, ModelSpec, SendMode};
use disagg_sim::budget;
use disagg_sim::{
    simulate_config_observed, simulate_workload, RunResult, Scenario, SimConfig, Summary,
};
use serde_json::{json, Map, Value};

use crate::input::{api_spelling, object, overlay, take, ApiError};
use crate::observe::{latency_samples, Deadline, Series};
use crate::{page, Limits, Response};

/// The API over one catalogue with one set of limits. Cheap to share between threads; clones
/// share one memory budget ([`Limits::memory_budget_bytes`]).
#[derive(Clone, Debug)]
pub struct Api {
    catalogue: Catalogue,
    limits: Limits,
    memory: Arc<MemoryPool>,
}

/// The memory budget the simulations running at once share: bytes reserved by running ones.
#[derive(Debug)]
struct MemoryPool {
    budget: u64,
    reserved: Mutex<u64>,
}

/// Bytes reserved in a [`MemoryPool`], released on drop (also when a run ends on its deadline or
/// unwinds on a bug).
struct Reservation<'a> {
    pool: &'a MemoryPool,
    bytes: u64,
}

impl MemoryPool {
    fn reserved(&self) -> std::sync::MutexGuard<'_, u64> {
        // Nothing panics while the lock is held; a poisoned lock still holds a valid count.
        self.reserved.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves `bytes` if they fit beside what is reserved now.
    fn try_reserve(&self, bytes: u64) -> Option<Reservation<'_>> {
        let mut r = self.reserved();
        if r.saturating_add(bytes) > self.budget {
            return None;
        }
        *r += bytes;
        Some(Reservation { pool: self, bytes })
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut r = self.pool.reserved();
        *r = r.saturating_sub(self.bytes);
    }
}

type Answer = Result<(Value, Vec<(&'static str, String)>), ApiError>;

impl Api {
    /// An API over `catalogue` with `limits`.
    pub fn new(catalogue: Catalogue, limits: Limits) -> Self {
        let memory = Arc::new(MemoryPool {
            budget: limits.memory_budget_bytes,
            reserved: Mutex::new(0),
        });
        Api {
            catalogue,
            limits,
            memory,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Answers one request. `path` may carry a query string (ignored). Never panics: a panic
    /// inside is a 500 with a JSON error.
    pub fn handle(&self, method: &str, path: &str, body: &[u8]) -> Response {
        let path = path.split(['?', '#']).next().unwrap_or("");
        match catch_unwind(AssertUnwindSafe(|| self.route(method, path, body))) {
            Ok(r) => r,
            Err(p) => {
                let what = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                error_response(&ApiError {
                    status: 500,
                    ..ApiError::bad(None, format!("internal error: {what}"))
                })
            }
        }
    }

    fn route(&self, method: &str, path: &str, body: &[u8]) -> Response {
        let get = method == "GET" || method == "HEAD";
        let post = method == "POST";
        let api_get = |f: &dyn Fn() -> Value| -> Response {
            if get {
                json_response(200, &f(), Vec::new())
            } else {
                method_not_allowed("GET, HEAD")
            }
        };
        let api_post = |f: &dyn Fn(&[u8]) -> Answer| -> Response {
            if !post {
                return method_not_allowed("POST");
            }
            if body.len() > self.limits.max_body_bytes {
                return error_response(&self.body_too_large());
            }
            match f(body) {
                Ok((v, headers)) => json_response(200, &v, headers),
                Err(e) => error_response(&e),
            }
        };
        match path {
            "/api/catalogue" => api_get(&|| self.catalogue_json()),
            "/api/presets" => api_get(&presets_json),
            "/api/handoff" => api_post(&|b| self.handoff(b)),
            "/api/run" => api_post(&|b| self.run(b)),
            "/api/sweep" => api_post(&|b| self.sweep(b)),
            _ => match page::asset(path) {
                Some((content_type, text)) if get => Response {
                    status: 200,
                    content_type,
                    body: text.as_bytes().to_vec(),
                    headers: page::headers(content_type),
                },
                Some(_) => method_not_allowed("GET, HEAD"),
                None => error_response(&ApiError {
                    status: 404,
                    ..ApiError::bad(
                        None,
                        format!(
                            "no such path: {path} (the API: /api/catalogue, /api/presets, \
                             /api/handoff, /api/run, /api/sweep)"
                        ),
                    )
                }),
            },
        }
    }

    /// 413 for a body over `max_body_bytes` (the server also checks before reading it all).
    pub(crate) fn body_too_large(&self) -> ApiError {
        let max = self.limits.max_body_bytes;
        ApiError::limit(
            "max_body_bytes",
            max as f64,
            None,
            format!("the request body is over the limit of {max} bytes (max_body_bytes)"),
        )
    }

    fn time_up(&self) -> ApiError {
        time_up(self.limits.time_limit)
    }

    /// An engine error: the time limit (the run was cancelled by its [`Deadline`]), or a value
    /// the engine rejects.
    fn engine_error(&self, e: disagg_model::Error) -> ApiError {
        engine_error(e, self.limits.time_limit)
    }

    // ---- GET endpoints -------------------------------------------------------------------------

    fn catalogue_json(&self) -> Value {
        let cat = &self.catalogue;
        let models: Vec<Value> = cat.models.iter().map(model_json).collect();
        let l = &self.limits;
        json!({
            "models": models,
            "devices": disagg_api::catalogue::devices_json(cat),
            "links": cat.links,
            "compression": cat.compression,
            "compress_at": disagg_api::catalogue::compress_at_json(),
            "send": SendMode::NAMES,
            "formats": disagg_model::QuantFormat::NAMES,
            "scenario_defaults": Scenario::default(),
            "option_help": option_help(),
            "options": disagg_sim::options::describe_all(),
            "page_groups": disagg_sim::options::PAGE_GROUPS,
            "handoff_defaults": HandoffSpec::default(),
            "limits": {
                "max_requests": l.max_requests,
                "max_sweep_points": l.max_sweep_points,
                "max_sweep_requests": l.max_sweep_requests,
                "max_latency_samples": l.max_latency_samples,
                "max_handoff_batch": l.max_handoff_batch,
                "max_body_bytes": l.max_body_bytes,
                "time_limit_s": l.time_limit.as_secs_f64(),
                "memory_budget_bytes": l.memory_budget_bytes,
            },
        })
    }

    // ---- /api/handoff --------------------------------------------------------------------------

    /// One hand-off, or with `"batch": [{...}, ...]` one answer per item: each item's keys laid
    /// over the body's other keys, answered as `{"batch": [doc or {"error", "status", ...}]}`.
    fn handoff(&self, body: &[u8]) -> Answer {
        let mut obj = object(body)?;
        let batch = take::<Vec<Map<String, Value>>>(&mut obj, "batch", "an array of objects")?;
        // The rank-aware options (`handoff_ranks`, `prefill_tp`, ...) apply to every item.
        let mut rank_keys = Map::new();
        for k in RankSpec::KEYS {
            if let Some(v) = obj.remove(k) {
                rank_keys.insert(k.to_string(), v);
            }
        }
        let ranks: RankSpec = overlay(&RankSpec::default(), &rank_keys)?;
        let req: HandoffSpec = overlay(&HandoffSpec::default(), &obj)?;
        let Some(items) = batch else {
            return Ok((handoff_json(&self.catalogue, &req, &ranks)?, Vec::new()));
        };
        let max = self.limits.max_handoff_batch;
        if items.len() > max {
            return Err(ApiError::limit(
                "max_handoff_batch",
                max as f64,
                Some("batch"),
                format!(
                    "batch: {} items is over the limit of {max} per call (max_handoff_batch)",
                    items.len()
                ),
            ));
        }
        let answers: Vec<Value> = items
            .iter()
            .map(|item| {
                match overlay(&req, item)
                    .and_then(|one| handoff_json(&self.catalogue, &one, &ranks))
                {
                    Ok(v) => v,
                    Err(e) => {
                        let mut v = e.to_json();
                        v["status"] = json!(e.status);
                        v
                    }
                }
            })
            .collect();
        Ok((json!({ "batch": answers }), Vec::new()))
    }

    // ---- /api/run and /api/sweep ---------------------------------------------------------------

    /// The scenario of a body: `preset` (or the CLI's defaults) with the body's keys laid over it.
    fn scenario(&self, obj: &mut Map<String, Value>) -> Result<Scenario, ApiError> {
        let base = match take::<String>(obj, "preset", "a preset name")? {
            Some(name) => {
                disagg_sim::presets::find(&name)
                    .map_err(|e| ApiError::invalid(Some("preset"), format!("preset: {e}")))?
                    .scenario
            }
            None => Scenario::default(),
        };
        overlay(&base, obj)
    }

    fn check_requests(&self, sc: &Scenario) -> Result<(), ApiError> {
        let max = self.limits.max_requests;
        if sc.requests > max {
            return Err(ApiError::limit(
                "max_requests",
                max as f64,
                Some("requests"),
                format!(
                    "requests: {} is over the limit of {max} per run (max_requests)",
                    sc.requests
                ),
            ));
        }
        Ok(())
    }

    /// Reserves `need` bytes of the memory budget for one call: 413 if it alone is over the
    /// budget, 503 if the simulations running now leave too little.
    fn reserve(&self, need: u64, what: &str) -> Result<Reservation<'_>, ApiError> {
        let pool = &*self.memory;
        if let Err(over) = budget::check(need, pool.budget) {
            return Err(ApiError::limit(
                "memory_budget_bytes",
                pool.budget as f64,
                Some("requests"),
                format!(
                    "requests: {what} would {over} of this server (memory_budget_bytes); ask \
                     for fewer requests"
                ),
            ));
        }
        pool.try_reserve(need).ok_or_else(|| ApiError {
            status: 503,
            ..ApiError::bad(
                None,
                format!(
                    "the server's memory budget ({}) is taken by other simulations; try again \
                     shortly",
                    budget::human_bytes(pool.budget)
                ),
            )
        })
    }

    fn build(&self, sc: &Scenario) -> Result<SimConfig, ApiError> {
        sc.build(&self.catalogue).map_err(|e| {
            let (msg, field) = api_spelling(&e.to_string());
            ApiError::invalid(field.as_deref(), msg)
        })
    }

    fn run(&self, body: &[u8]) -> Answer {
        // The time limit covers the whole call: building the workload, simulating, summarising.
        let deadline_at = Instant::now() + self.limits.time_limit;
        let mut obj = object(body)?;
        let points = take::<usize>(&mut obj, "latency_samples", "a whole number of points")?;
        let series = take::<bool>(&mut obj, "series", "a boolean")?.unwrap_or(false);
        let sc = self.scenario(&mut obj)?;
        let points = points.unwrap_or(0);
        let maxp = self.limits.max_latency_samples;
        if points > maxp {
            return Err(ApiError::limit(
                "max_latency_samples",
                maxp as f64,
                Some("latency_samples"),
                format!(
                    "latency_samples: {points} is over the limit of {maxp} points per metric \
                     (max_latency_samples)"
                ),
            ));
        }
        self.check_requests(&sc)?;
        no_files(&sc)?;
        let cfg = self.build(&sc)?;
        let what = if series {
            format!("{} with series", sc.requests)
        } else {
            sc.requests.to_string()
        };
        let _memory = self.reserve(budget::config_bytes(&cfg, series), &what)?;
        let t_sim = Instant::now();
        let deadline = Deadline::new(deadline_at);
        let workload = cfg.requests();
        let (run, series) = if series {
            let last = workload.requests.last().map_or(0.0, |w| w.arrival_s);
            let mut obs = (
                deadline,
                Series::new(last, cfg.link.channels, cfg.sample_dt_s),
            );
            let run =
                simulate_workload(&cfg, &workload, &mut obs).map_err(|e| self.engine_error(e))?;
            (run, Some(obs.1))
        } else {
            let mut obs = deadline;
            (
                simulate_workload(&cfg, &workload, &mut obs).map_err(|e| self.engine_error(e))?,
                None,
            )
        };
        let sim_ms = t_sim.elapsed().as_secs_f64() * 1e3;
        let summary = run.summary();
        let mut doc = run_json(&sc, &summary);
        // Read through serde so that engines with and without these options both work: the
        // first-token convention, and the number of links (one unless a link topology says more).
        let links = doc["summary"]["links"].as_array().map_or(1, Vec::len);
        let o = doc.as_object_mut().expect("object");
        if points > 0 {
            let samples = latency_samples(&run, points);
            o.insert(
                "latency_samples".into(),
                serde_json::to_value(samples).expect("json"),
            );
        }
        if let Some(s) = series {
            let s = s.finish(run.horizon(), links);
            o.insert("series".into(), serde_json::to_value(s).expect("json"));
        }
        if Instant::now() > deadline_at {
            return Err(self.time_up());
        }
        let total_ms = t_sim.elapsed().as_secs_f64() * 1e3;
        Ok((
            doc,
            vec![(
                "Server-Timing",
                format!("sim;dur={sim_ms:.3}, total;dur={total_ms:.3}"),
            )],
        ))
    }

    fn sweep(&self, body: &[u8]) -> Answer {
        let deadline_at = Instant::now() + self.limits.time_limit;
        let mut obj = object(body)?;
        let rates =
            take::<Vec<f64>>(&mut obj, "rates", "an array of numbers")?.ok_or_else(|| {
                ApiError::invalid(
                    Some("rates"),
                    "rates: give the rates to run, e.g. \"rates\": [2, 4, 8]",
                )
            })?;
        let compact = take::<bool>(&mut obj, "compact", "a boolean")?.unwrap_or(false);
        let base = self.scenario(&mut obj)?;
        let maxp = self.limits.max_sweep_points;
        if rates.is_empty() {
            return Err(ApiError::invalid(
                Some("rates"),
                "rates: give at least one rate",
            ));
        }
        if rates.len() > maxp {
            return Err(ApiError::limit(
                "max_sweep_points",
                maxp as f64,
                Some("rates"),
                format!(
                    "rates: {} rates is over the limit of {maxp} per sweep (max_sweep_points)",
                    rates.len()
                ),
            ));
        }
        self.check_requests(&base)?;
        no_files(&base)?;
        let total = base.requests.saturating_mul(rates.len() as u64);
        let maxr = self.limits.max_sweep_requests;
        if total > maxr {
            return Err(ApiError::limit(
                "max_sweep_requests",
                maxr as f64,
                Some("requests"),
                format!(
                    "requests x rates: {total} simulated requests is over the limit of {maxr} per \
                     sweep (max_sweep_requests)"
                ),
            ));
        }
        // Validate every point before running any.
        let mut cfgs = Vec::with_capacity(rates.len());
        for (i, &rate) in rates.iter().enumerate() {
            let sc = Scenario {
                rate,
                ..base.clone()
            };
            let cfg = self.build(&sc).map_err(|e| ApiError {
                message: format!("rates[{i}] = {rate}: {}", e.message),
                field: Some("rates".into()),
                ..e
            })?;
            cfgs.push(cfg);
        }
        // The points that run at once hold memory together: as many threads as the budget has
        // room for (the largest points first), at least one.
        let needs: Vec<u64> = cfgs
            .iter()
            .map(|c| budget::config_bytes(c, false))
            .collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (threads, need) = budget::runs_at_once(&needs, cores, self.memory.budget);
        let _memory = self.reserve(need, &base.requests.to_string())?;
        let t_sim = Instant::now();
        let summaries = run_parallel(&cfgs, threads, deadline_at, self.limits.time_limit)?;
        let sim_ms = t_sim.elapsed().as_secs_f64() * 1e3;
        let runs: Vec<Value> = rates
            .iter()
            .zip(&summaries)
            .map(|(&rate, s)| {
                if compact {
                    compact_json(rate, s)
                } else {
                    json!({"rate": rate, "summary": s})
                }
            })
            .collect();
        let doc = json!({
            "schema_version": disagg_sim::SCHEMA_VERSION,
            "tool": "disagg",
            "version": env!("CARGO_PKG_VERSION"),
            "scenario": base.with_slos_resolved(),
            "rates": rates,
            "runs": runs,
        });
        if Instant::now() > deadline_at {
            return Err(self.time_up());
        }
        Ok((doc, vec![("Server-Timing", format!("sim;dur={sim_ms:.3}"))]))
    }
}

/// One model of `/api/catalogue` ([`disagg_sim::model_json::model_json`]; a model without layer
/// kinds answers exactly as before issue 16).
/// `disagg handoff --json` for `a` over catalogue `cat` ([`disagg_api::handoff::handoff`]), with
/// `ranks` when any rank option is set. Invalid values are 422s naming the field.
fn handoff_json(cat: &Catalogue, a: &HandoffSpec, r: &RankSpec) -> Result<Value, ApiError> {
    disagg_api::handoff::handoff(cat, a, r).map_err(|e| match e {
        disagg_model::Error::Invalid { what, why } => {
            let field = what.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            ApiError::invalid(field.then_some(what.as_str()), format!("{what}: {why}"))
        }
        other => ApiError::invalid(None, other.to_string()),
    })
}

fn model_json(m: &ModelSpec) -> Value {
    disagg_sim::model_json::model_json(m)
}

/// Each scenario option's help line, as `disagg run --help` prints it (text, then the default in
/// brackets), by serde key: the page's field descriptions.
fn option_help() -> Map<String, Value> {
    disagg_sim::options::OPTIONS
        .iter()
        .map(|o| (o.key.to_string(), Value::String(o.help_text())))
        .collect()
}

/// Runs every configuration, on up to `threads` threads, before `deadline`.
fn run_parallel(
    cfgs: &[SimConfig],
    threads: usize,
    deadline: Instant,
    time_limit: Duration,
) -> Result<Vec<Summary>, ApiError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = threads.min(cfgs.len()).max(1);
    let next = AtomicUsize::new(0);
    let one = |cfg: &SimConfig| -> Result<Summary, ApiError> {
        let mut obs = Deadline::new(deadline);
        let run: RunResult =
            simulate_config_observed(cfg, &mut obs).map_err(|e| engine_error(e, time_limit))?;
        Ok(run.summary())
    };
    let work = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= cfgs.len() {
                break out;
            }
            out.push((i, one(&cfgs[i])));
        }
    };
    let mut results: Vec<Option<Result<Summary, ApiError>>> = vec![None; cfgs.len()];
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mine = work();
        let mut all = vec![Ok(mine)];
        all.extend(handles.into_iter().map(|h| h.join()));
        for r in all {
            match r {
                Ok(v) => {
                    for (i, x) in v {
                        results[i] = Some(x);
                    }
                }
                // A worker thread unwound (a bug): re-raise it on this thread, where the
                // request's catch_unwind turns it into a 500.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
    });
    results
        .into_iter()
        .map(|r| r.expect("every index ran"))
        .collect()
}

/// The answer to a call over its time limit.
fn time_up(limit: Duration) -> ApiError {
    let s = limit.as_secs_f64();
    ApiError::limit(
        "time_limit_s",
        s,
        None,
        format!(
            "the simulation took longer than the limit of {s} s per call (time_limit_s); \
             ask for fewer requests or rates"
        ),
    )
}

/// An engine error: over the time limit when the run was cancelled (by its [`Deadline`]), else
/// a value the engine rejects (422).
fn engine_error(e: disagg_model::Error, time_limit: Duration) -> ApiError {
    if matches!(e, disagg_model::Error::Cancelled) {
        return time_up(time_limit);
    }
    let (msg, field) = api_spelling(&e.to_string());
    ApiError::invalid(field.as_deref(), msg)
}

/// A sweep point: its rate, completed requests, and the registry's compact metrics
/// ([`disagg_api::metrics::COMPACT`]: the page's metric names).
fn compact_json(rate: f64, s: &Summary) -> Value {
    let mut o = Map::new();
    o.insert("rate".into(), json!(rate));
    o.insert("completed".into(), json!(s.requests.completed));
    for m in disagg_api::metrics::pick(disagg_api::metrics::COMPACT) {
        o.insert(m.key.into(), json!((m.get)(s)));
    }
    Value::Object(o)
}

/// The JSON document of one run, as `disagg run --json` prints it.
fn run_json(scenario: &Scenario, s: &Summary) -> Value {
    serde_json::to_value(disagg_sim::RunDocument::new(scenario, s, Vec::new())).expect("json")
}

fn presets_json() -> Value {
    Value::Array(
        disagg_sim::presets::all()
            .iter()
            .map(|p| json!({"name": p.name, "group": p.group, "about": p.about, "scenario": p.scenario}))
            .collect(),
    )
}

/// The API does not read files on the server's disk.
fn no_files(sc: &Scenario) -> Result<(), ApiError> {
    if sc.trace_file.is_some() {
        return Err(ApiError::invalid(
            Some("trace_file"),
            "trace_file: the API does not read files; replay traces with `disagg run --trace-file`",
        ));
    }
    Ok(())
}

fn json_response(status: u16, v: &Value, mut headers: Vec<(&'static str, String)>) -> Response {
    headers.push(("Cache-Control", "no-store".into()));
    headers.push(("X-Content-Type-Options", "nosniff".into()));
    let mut body = serde_json::to_vec(v).expect("json");
    body.push(b'\n');
    Response {
        status,
        content_type: "application/json",
        body,
        headers,
    }
}

fn error_response(e: &ApiError) -> Response {
    let mut headers = Vec::new();
    if e.status == 503 {
        headers.push(("Retry-After", "1".into()));
    }
    json_response(e.status, &e.to_json(), headers)
}

fn method_not_allowed(allow: &'static str) -> Response {
    let mut r = error_response(&ApiError {
        status: 405,
        ..ApiError::bad(None, format!("method not allowed here; use {allow}"))
    });
    r.headers.push(("Allow", allow.into()));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn api(budget: u64, time_limit: Duration) -> Api {
        Api::new(
            Catalogue::builtin(),
            Limits {
                memory_budget_bytes: budget,
                time_limit,
                ..Limits::default()
            },
        )
    }

    fn run_body(requests: u64) -> Vec<u8> {
        format!(r#"{{"model": "llama3-8b", "devices_per_instance": 1, "requests": {requests}}}"#)
            .into_bytes()
    }

    fn json(r: &Response) -> Value {
        serde_json::from_slice(&r.body).expect("JSON")
    }

    #[test]
    fn a_run_over_the_memory_budget_is_413_and_one_that_finds_it_taken_503() {
        let budget = budget::requests_bytes(2_000, false);
        let api = api(budget, Duration::from_secs(10));
        // Alone over the budget: 413 naming `requests` and the budget.
        for (path, body) in [
            ("/api/run", run_body(5_000)),
            (
                "/api/run",
                br#"{"requests": 1000, "series": true}"#.to_vec(),
            ),
            (
                "/api/sweep",
                br#"{"requests": 5000, "rates": [1, 2]}"#.to_vec(),
            ),
        ] {
            let r = api.handle("POST", path, &body);
            assert_eq!(r.status, 413, "{path}: {}", r.text());
            let v = json(&r);
            assert_eq!(v["limit"], "memory_budget_bytes");
            assert_eq!(v["max"], budget);
            assert_eq!(v["field"], "requests");
            let msg = v["error"].as_str().unwrap();
            assert!(
                msg.starts_with("requests: ") && msg.contains("budget"),
                "{msg}"
            );
        }
        assert_eq!(api.handle("POST", "/api/run", &run_body(100)).status, 200);
        // Taken by other simulations: 503 with Retry-After, then 200 once they end.
        let others = api.memory.try_reserve(budget - 1_000).expect("fits");
        for (path, body) in [
            ("/api/run", run_body(100)),
            (
                "/api/sweep",
                br#"{"requests": 100, "rates": [1, 2]}"#.to_vec(),
            ),
        ] {
            let r = api.handle("POST", path, &body);
            assert_eq!(r.status, 503, "{path}: {}", r.text());
            assert_eq!(r.header("retry-after"), Some("1"));
            assert!(json(&r)["error"].as_str().unwrap().contains("memory"));
        }
        drop(others);
        assert_eq!(api.handle("POST", "/api/run", &run_body(100)).status, 200);
        assert_eq!(*api.memory.reserved(), 0);
        // A sweep whose points fit one at a time but not all at once still runs.
        let sweep = br#"{"requests": 1500, "rates": [1, 2, 3]}"#;
        let r = api.handle("POST", "/api/sweep", sweep);
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(*api.memory.reserved(), 0);
    }

    #[test]
    fn a_run_that_runs_out_of_time_gives_its_memory_back() {
        let api = api(1 << 40, Duration::from_millis(1));
        for (path, body) in [
            ("/api/run", run_body(200_000)),
            (
                "/api/sweep",
                br#"{"requests": 100000, "rates": [1, 2]}"#.to_vec(),
            ),
        ] {
            let r = api.handle("POST", path, &body);
            assert_eq!(r.status, 413, "{}", r.text());
            assert_eq!(json(&r)["limit"], "time_limit_s");
            assert_eq!(*api.memory.reserved(), 0, "{path}");
        }
        // Clones share one budget.
        let twin = api.clone();
        let held = api.memory.try_reserve(1 << 40).expect("fits");
        assert!(twin.memory.try_reserve(1).is_none());
        drop(held);
        assert!(twin.memory.try_reserve(1).is_some());
    }
}
