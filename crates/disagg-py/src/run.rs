//! Runs: `run`, `simulate_rows` and `time_runs`, and the `RunHandle` class of a finished run
//! (its document, report, per-request columns, time series and trace).

use std::sync::atomic::Ordering;

use disagg_sim::budget;
use disagg_sim::{
    simulate_workload, ChromeTrace, GenRequest, RunResult, Scenario, SimConfig, Summary,
    TimeSeries, Workload,
};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyDict};

use crate::budget::check_budget;
use crate::convert::{options_map, to_py};
use crate::error::{cli_error, config_error, guard};
use crate::files::output_path;
use crate::interrupt::{interruptible_owned, with_signals};
use crate::scenario::{build, scenario_of, take_catalogue};

/// One finished simulation: its scenario, configuration, per-request records and summary.
#[pyclass(module = "disagg._core", frozen)]
pub(crate) struct RunHandle {
    scenario: Scenario,
    pub(crate) cfg: SimConfig,
    workload: Workload,
    pub(crate) run: RunResult,
    summary: Summary,
}

/// Runs `cfg` (on `workload`, else its own requests) after checking its memory against the
/// budget; Ctrl-C stops it ([`with_signals`], [`interruptible_owned`] for a large workload).
pub(crate) fn simulate_handle(
    py: Python<'_>,
    scenario: Scenario,
    cfg: SimConfig,
    workload: Option<Workload>,
) -> PyResult<RunHandle> {
    let field = if workload.is_some() {
        "workload"
    } else {
        "requests"
    };
    let (generate, requests) = (workload.is_none(), cfg.workload.requests);
    let what = format!("a run of {} requests would", cfg.workload.requests);
    check_budget(py, budget::config_bytes(&cfg, false), field, &what)?;
    let simulate = move |obs: &mut dyn FnMut() -> bool| -> Result<RunHandle, disagg_model::Error> {
        let workload = workload.unwrap_or_else(|| cfg.requests());
        let run = simulate_workload(&cfg, &workload, &mut StopWhen(obs))?;
        let summary = run.summary();
        Ok(RunHandle {
            scenario,
            cfg,
            workload,
            run,
            summary,
        })
    };
    let generated = if generate { requests } else { 0 };
    let done = if generated > OWNED_FROM_REQUESTS {
        // Generating the workload takes long and cannot be stopped: on a thread of its own.
        interruptible_owned(py, move |cancel| {
            simulate(&mut || cancel.load(Ordering::Relaxed))
        })?
    } else {
        with_signals(py, move |poll| {
            simulate(&mut || disagg_sim::Observer::cancelled(poll))
        })?
    };
    done.map_err(|e| cli_error(py, &e.to_string()))
}

/// Runs generating more requests than this go to an engine thread ([`interruptible_owned`]):
/// generating them takes over 25 ms, which no observer can interrupt.
const OWNED_FROM_REQUESTS: u64 = 100_000;

/// An observer that stops the run when its function says so.
struct StopWhen<'a>(&'a mut dyn FnMut() -> bool);

impl disagg_sim::Observer for StopWhen<'_> {
    fn cancelled(&mut self) -> bool {
        (self.0)()
    }
}

/// A column of f64 (None as NaN) as a NumPy array.
fn f64_array<'py>(
    np: &Bound<'py, PyModule>,
    xs: impl Iterator<Item = f64>,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes: Vec<u8> = xs.flat_map(f64::to_le_bytes).collect();
    np_array(np, &bytes, "<f8")
}

fn i64_array<'py>(
    np: &Bound<'py, PyModule>,
    xs: impl Iterator<Item = i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes: Vec<u8> = xs.flat_map(i64::to_le_bytes).collect();
    np_array(np, &bytes, "<i8")
}

/// A NumPy array of dtype `dtype` over a writable copy of `bytes`.
fn np_array<'py>(
    np: &Bound<'py, PyModule>,
    bytes: &[u8],
    dtype: &str,
) -> PyResult<Bound<'py, PyAny>> {
    np.call_method1("frombuffer", (PyByteArray::new(np.py(), bytes), dtype))
}

#[pymethods]
impl RunHandle {
    /// The CLI's `run --json` document: schema_version, tool, scenario, summary (and warnings).
    fn document<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let doc = disagg_sim::RunDocument::new(
            &self.scenario,
            &self.summary,
            self.summary.warnings.clone(),
        );
        to_py(py, &serde_json::to_value(doc).expect("json"))
    }

    /// The reference's `summarise` dict of the run (`disagg.reference.summarise`).
    fn reference_summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &disagg_sim::reference::summarise(&self.summary))
    }

    /// The report `disagg run` prints.
    fn text(&self) -> String {
        disagg_api::report::text(&self.summary)
    }

    /// Per-request columns as NumPy arrays (`disagg run --requests-out` columns; stamps in
    /// seconds, NaN where a request has none).
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        use disagg_api::requests::{columns, rows, Cell};
        let np = py.import("numpy")?;
        let rows: Vec<Vec<Cell>> = rows(&self.run).collect();
        let d = PyDict::new(py);
        // A column every request has a cell in (a scheduled run's lever columns need every
        // request's lever record).
        for (j, name) in columns(&self.run).into_iter().enumerate() {
            if !rows.iter().all(|r| r.len() > j) {
                continue;
            }
            // Times (`..._s`) are reals, NaN where a request has none; the others are counts.
            if name.ends_with("_s") {
                let xs = rows.iter().map(|r| match r[j] {
                    Cell::Real(x) => x.unwrap_or(f64::NAN),
                    Cell::Int(n) => n as f64,
                });
                d.set_item(name, f64_array(&np, xs)?)?;
            } else {
                let ns = rows.iter().map(|r| match r[j] {
                    Cell::Int(n) => n as i64,
                    Cell::Real(x) => x.unwrap_or(f64::NAN) as i64,
                });
                d.set_item(name, i64_array(&np, ns)?)?;
            }
        }
        Ok(d)
    }

    /// The sampler's time series (every `sample_dt`): the queues, running batches, KV occupancy
    /// and link state that `disagg run --plot` draws, as NumPy arrays. Computed by running the
    /// same simulation again with the sampler on (runs are deterministic).
    fn series<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| self.series_dict(py))
    }

    /// Writes the Chrome / Perfetto trace of the run to `path` (whole or not at all), by running
    /// the same simulation again with the trace writer on.
    fn write_trace(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| self.trace_to(py, path))
    }

    /// Requests in the run.
    fn __len__(&self) -> usize {
        self.run.len()
    }
}

impl RunHandle {
    fn series_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (cfg, workload) = (&self.cfg, &self.workload);
        let what = format!("its time series ({} requests) would", cfg.workload.requests);
        check_budget(py, budget::config_bytes(cfg, true), "requests", &what)?;
        let ts = with_signals(py, |poll| {
            let mut both = (TimeSeries::default(), poll);
            simulate_workload(cfg, workload, &mut both).map(|_| both.0)
        })?
        .map_err(|e| cli_error(py, &e.to_string()))?;
        let np = py.import("numpy")?;
        let d = PyDict::new(py);
        let rows = &ts.rows;
        d.set_item("t_s", f64_array(&np, rows.iter().map(|r| r.t))?)?;
        d.set_item(
            "in_system",
            i64_array(&np, rows.iter().map(|r| r.in_system))?,
        )?;
        d.set_item(
            "link_queue",
            i64_array(&np, rows.iter().map(|r| r.link_queue as i64))?,
        )?;
        d.set_item(
            "link_busy",
            i64_array(&np, rows.iter().map(|r| r.link_busy as i64))?,
        )?;
        d.set_item(
            "link_bytes_in_flight",
            f64_array(&np, rows.iter().map(|r| r.link_bytes_in_flight))?,
        )?;
        d.set_item(
            "decode_mem_wait",
            i64_array(&np, rows.iter().map(|r| r.decode_mem_wait as i64))?,
        )?;
        for (k, inst) in ts.instances.iter().enumerate() {
            let name = &inst.name;
            d.set_item(
                format!("{name}.queue"),
                i64_array(&np, rows.iter().map(|r| r.instances[k].queue as i64))?,
            )?;
            d.set_item(
                format!("{name}.running"),
                i64_array(&np, rows.iter().map(|r| r.instances[k].running as i64))?,
            )?;
            d.set_item(
                format!("{name}.kv_used"),
                i64_array(&np, rows.iter().map(|r| r.instances[k].kv_used as i64))?,
            )?;
            d.set_item(
                format!("{name}.kv"),
                f64_array(
                    &np,
                    rows.iter().map(|r| {
                        let i = &r.instances[k];
                        i.kv_used as f64 / i.kv_cap as f64
                    }),
                )?,
            )?;
        }
        Ok(d)
    }

    fn trace_to(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<()> {
        let path = output_path(py, path, "path")?;
        let (cfg, workload) = (&self.cfg, &self.workload);
        with_signals(py, |poll| -> Result<(), String> {
            let mut pending =
                disagg_api::output::Pending::create("path", &path).map_err(|e| e.0)?;
            let mut tr = (ChromeTrace::new(pending.writer()), poll);
            simulate_workload(cfg, workload, &mut tr).map_err(|e| e.to_string())?;
            let finished = tr.0.finish().map(drop);
            finished.map_err(|e| pending.error(e).0)?;
            pending.commit().map_err(|e| e.0)
        })?
        .map_err(|msg| cli_error(py, &msg))
    }
}

/// `run(scenario, options)`: one simulation.
#[pyfunction]
#[pyo3(signature = (scenario=None, options=None))]
pub(crate) fn run(
    py: Python<'_>,
    scenario: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<RunHandle> {
    guard(|| {
        let mut m = options_map(options)?;
        let cat = take_catalogue(py, &mut m)?;
        let sc = scenario_of(py, scenario, m)?;
        let cfg = build(py, &sc, &cat)?;
        simulate_handle(py, sc, cfg, None)
    })
}

/// `simulate_rows(scenario, rows, options)`: one simulation of the given workload rows
/// `(arrival_s, prompt_len, output_len)` in rid order (the reference's replay).
#[pyfunction]
#[pyo3(signature = (scenario, rows, options=None))]
pub(crate) fn simulate_rows(
    py: Python<'_>,
    scenario: Option<&Bound<'_, PyAny>>,
    rows: Vec<(f64, i64, i64)>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<RunHandle> {
    guard(|| {
        let mut m = options_map(options)?;
        let cat = take_catalogue(py, &mut m)?;
        let mut sc = scenario_of(py, scenario, m)?;
        sc.requests = rows.len().max(1) as u64;
        let cfg = build(py, &sc, &cat)?;
        let mut reqs = Vec::with_capacity(rows.len());
        for (rid, (arrival_s, p, o)) in rows.into_iter().enumerate() {
            let bad = |what: &str, v: i64| {
                config_error(
                    py,
                    &format!("workload row {rid}: {what} must be a whole number from 0 to 4294967295, got {v}"),
                    Some("workload"),
                )
            };
            if !arrival_s.is_finite() || arrival_s < 0.0 {
                return Err(config_error(
                    py,
                    &format!(
                        "workload row {rid}: arrival must be a finite time >= 0, got {arrival_s}"
                    ),
                    Some("workload"),
                ));
            }
            let prompt_len = u32::try_from(p).map_err(|_| bad("prompt_len", p))?;
            let output_len = u32::try_from(o).map_err(|_| bad("output_len", o))?;
            reqs.push(GenRequest {
                rid,
                arrival_s,
                prompt_len,
                output_len,
            });
        }
        simulate_handle(py, sc, cfg, Some(Workload::from(reqs)))
    })
}

/// `time_runs(scenario, n, options)`: seconds per run of `n` runs of the scenario in Rust alone
/// (build once, simulate and summarise `n` times, no Python objects): the pure-Rust baseline of
/// the Python benchmark (`bench/bench_python.py`).
#[pyfunction]
#[pyo3(signature = (scenario=None, n=10, options=None))]
pub(crate) fn time_runs(
    py: Python<'_>,
    scenario: Option<&Bound<'_, PyAny>>,
    n: usize,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<f64> {
    guard(|| {
        let mut m = options_map(options)?;
        let cat = take_catalogue(py, &mut m)?;
        let sc = scenario_of(py, scenario, m)?;
        let cfg = build(py, &sc, &cat)?;
        let n = n.max(1);
        let what = format!("a run of {} requests would", cfg.workload.requests);
        check_budget(py, budget::config_bytes(&cfg, false), "requests", &what)?;
        with_signals(py, |poll| {
            let t = std::time::Instant::now();
            for _ in 0..n {
                // Between runs (the timed runs themselves have no observer).
                if disagg_sim::Observer::cancelled(poll) {
                    break;
                }
                let w = cfg.requests();
                let run = simulate_workload(&cfg, &w, &mut ()).map_err(|e| e.to_string())?;
                std::hint::black_box(run.summary());
            }
            Ok(t.elapsed().as_secs_f64() / n as f64)
        })?
        .map_err(|e: String| cli_error(py, &e))
    })
}
