//! What `disagg.reference` (the drop-in for the reference package's Python API,
//! the `python/disagg/reference/` package) needs beyond the rest of `_core`:
//!
//! * `reference_simulate(scenario, rows, max_prefill_tokens, warmup_frac, sample_dt)`: one
//!   simulation of workload rows, with the reference `SimConfig` fields that are not scenario
//!   keys laid over the built configuration (each checked: one the engine cannot honour is a
//!   `ConfigError` naming it, never a silent different run);
//! * `reference_requests(run)`: every request's stamps under the reference's `Request` names,
//!   with its inter-token latencies;
//! * `ReferenceCostModel` / `reference_cost_model(scenario, role)`: a pool's cost model (the
//!   reference's `CostModel`: `prefill`, `decode`, `decode_sum`, `kv_capacity_tokens`, ...), the
//!   very one the engine prices that pool's steps with.

use disagg_model::{Catalogue, CostModel, StepCost};
use disagg_sim::{GenRequest, Role, Workload};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyList, PyString, PyTuple};
use serde_json::Map;

use crate::error::{config_error, guard};
use crate::run::{simulate_handle, RunHandle};
use crate::scenario::{build, scenario_of};

/// One simulation of `rows` `(arrival_s, prompt_len, output_len)` under scenario `scenario`, with
/// the reference `SimConfig` fields that are not scenario keys given when not their defaults.
#[pyfunction]
#[pyo3(signature = (scenario, rows, max_prefill_tokens=None, warmup_frac=None, sample_dt=None))]
fn reference_simulate(
    py: Python<'_>,
    scenario: &Bound<'_, PyAny>,
    rows: Vec<(f64, i64, i64)>,
    max_prefill_tokens: Option<i64>,
    warmup_frac: Option<f64>,
    sample_dt: Option<f64>,
) -> PyResult<RunHandle> {
    guard(|| {
        let cat = Catalogue::builtin();
        let mut sc = scenario_of(py, Some(scenario), Map::new())?;
        sc.requests = rows.len().max(1) as u64;
        let mut cfg = build(py, &sc, &cat)?;
        if let Some(n) = max_prefill_tokens {
            if cfg.levers.is_some() {
                // The scheduled instances took their token budget from it when built.
                return Err(config_error(
                    py,
                    "max_prefill_tokens: only the default (8192) with the scheduling levers \
                     (set max_num_batched_tokens instead)",
                    Some("max_prefill_tokens"),
                ));
            }
            cfg.max_prefill_tokens =
                u64::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| {
                    config_error(
                        py,
                        &format!("max_prefill_tokens: must be a whole number >= 1, got {n}"),
                        Some("max_prefill_tokens"),
                    )
                })?;
        }
        if let Some(w) = warmup_frac {
            cfg.warmup_frac = w;
        }
        if let Some(dt) = sample_dt {
            cfg.sample_dt_s = dt;
        }
        cfg.check().map_err(|e| {
            let msg = e.to_string();
            let field = if msg.contains("warmup_frac") {
                Some("warmup_frac")
            } else if msg.contains("sample_dt") {
                Some("sample_dt")
            } else {
                None
            };
            config_error(py, &msg, field)
        })?;
        let mut reqs = Vec::with_capacity(rows.len());
        for (rid, (arrival_s, p, o)) in rows.into_iter().enumerate() {
            let bad = |what: &str, v: i64| {
                config_error(
                    py,
                    &format!(
                        "workload[{rid}].{what}: must be a whole number from 0 to 4294967295, \
                         got {v}"
                    ),
                    Some("workload"),
                )
            };
            if !arrival_s.is_finite() || arrival_s < 0.0 {
                return Err(config_error(
                    py,
                    &format!(
                        "workload[{rid}].arrival: must be a finite time >= 0, got {arrival_s}"
                    ),
                    Some("workload"),
                ));
            }
            reqs.push(GenRequest {
                rid,
                arrival_s,
                prompt_len: u32::try_from(p).map_err(|_| bad("prompt_len", p))?,
                output_len: u32::try_from(o).map_err(|_| bad("output_len", o))?,
            });
        }
        simulate_handle(py, sc, cfg, Some(Workload::from(reqs)))
    })
}

/// Every request of `run` in rid order, as tuples `(rid, arrival, prompt_len, output_len,
/// prefill_start, first_token, prefill_done, kv_start, kv_ready, decode_start, finish, itls)`
/// (None where the reference leaves a stamp unset). `prefill_done` is set only where the
/// reference sets it: a CED model with the replay on decode (the end of its encoder step).
#[pyfunction]
fn reference_requests<'py>(
    py: Python<'py>,
    run: &Bound<'py, RunHandle>,
) -> PyResult<Bound<'py, PyList>> {
    let h = run.get();
    let ced_on_decode = h.cfg.ced_decode_replay().is_some();
    let out = PyList::empty(py);
    for r in h.run.requests() {
        let prefill_done = if ced_on_decode {
            r.handoff_start_s
        } else {
            None
        };
        let t = (
            r.rid,
            r.arrival_s,
            r.prompt_len,
            r.output_len,
            r.prefill_start_s,
            r.first_token_s,
            prefill_done,
            r.kv_start_s,
            r.kv_ready_s,
            r.decode_start_s,
            r.finish_s,
            h.run.itls(r.rid).len(),
        );
        out.append(t.into_pyobject(py)?)?;
    }
    Ok(out)
}

/// `reference_itls(run, rid)`: request `rid`'s inter-token latencies (the reference's
/// `Request.itls`), read when a script first asks for them: building every request's list up
/// front cost more than the simulation itself (10,000 requests: 2.5 million floats).
#[pyfunction]
fn reference_itls(run: &Bound<'_, RunHandle>, rid: usize) -> PyResult<Vec<f64>> {
    let h = run.get();
    if rid >= h.run.len() {
        return Err(pyo3::exceptions::PyIndexError::new_err(format!(
            "rid {rid}: the run has {} requests",
            h.run.len()
        )));
    }
    Ok(h.run.itls(rid))
}

/// One pool's cost model: the reference's `CostModel` for that pool (its device, devices per
/// instance, power cap, DVFS and levers as the scenario builds them).
#[pyclass(module = "disagg._core", frozen)]
struct ReferenceCostModel {
    cost: CostModel,
    kv_capacity: Result<u64, String>,
}

/// A step's cost as the reference's `StepCost` fields: `(flops, bytes, time, bound, energy,
/// compute_j, memory_j)`; `flops` is an int where the reference's is (integer FLOP counts).
fn step_tuple<'py>(py: Python<'py>, s: &StepCost) -> PyResult<Bound<'py, PyTuple>> {
    let flops = match s.flops {
        disagg_model::cost::PyNum::Int(i) => i.into_pyobject(py)?.into_any(),
        disagg_model::cost::PyNum::Float(x) => PyFloat::new(py, x).into_any(),
    };
    PyTuple::new(
        py,
        [
            flops,
            PyFloat::new(py, s.bytes).into_any(),
            PyFloat::new(py, s.time_s).into_any(),
            PyString::new(py, s.bound.as_str()).into_any(),
            PyFloat::new(py, s.energy_j).into_any(),
            PyFloat::new(py, s.compute_j).into_any(),
            PyFloat::new(py, s.memory_j).into_any(),
        ],
    )
}

fn lens(py: Python<'_>, xs: Vec<i64>, what: &str) -> PyResult<Vec<u64>> {
    xs.into_iter()
        .map(|x| {
            u64::try_from(x).map_err(|_| {
                config_error(
                    py,
                    &format!("{what}: lengths must be whole numbers >= 0, got {x}"),
                    Some(what),
                )
            })
        })
        .collect()
}

#[pymethods]
impl ReferenceCostModel {
    /// One prefill step over whole prompts of these lengths.
    fn prefill<'py>(
        &self,
        py: Python<'py>,
        prompt_lens: Vec<i64>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let l = lens(py, prompt_lens, "prompt_lens")?;
        step_tuple(py, &self.cost.prefill(l))
    }

    /// One decode step of sequences with these context lengths (`decode_sum` of their sum).
    fn decode<'py>(
        &self,
        py: Python<'py>,
        context_lens: Vec<i64>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let l = lens(py, context_lens, "context_lens")?;
        let b = l.len() as u64;
        step_tuple(py, &self.cost.decode_sum(l.iter().sum(), b))
    }

    /// One decode step of `batch` sequences over `ctx` cached positions in total.
    fn decode_sum<'py>(
        &self,
        py: Python<'py>,
        ctx: u64,
        batch: u64,
    ) -> PyResult<Bound<'py, PyTuple>> {
        step_tuple(py, &self.cost.decode_sum(ctx, batch))
    }

    /// KV tokens (or distilled states) that fit beside the weights; ValueError if the model does
    /// not fit, as the reference raises.
    #[getter]
    fn kv_capacity_tokens(&self) -> PyResult<u64> {
        self.kv_capacity.clone().map_err(PyValueError::new_err)
    }

    /// Achievable FLOP/s of the instance.
    #[getter]
    fn flops_rate(&self) -> f64 {
        self.cost.flops_rate()
    }

    /// Achievable HBM bytes/s of the instance.
    #[getter]
    fn byte_rate(&self) -> f64 {
        self.cost.byte_rate()
    }

    /// Static power of the instance, W.
    #[getter]
    fn idle_w(&self) -> f64 {
        self.cost.idle_w()
    }

    /// Dynamic energy per FLOP, J.
    #[getter]
    fn joules_per_flop(&self) -> f64 {
        self.cost.joules_per_flop()
    }
}

/// The cost model of pool `role` (`prefill`, `decode` or `colocated`) of scenario `scenario`.
#[pyfunction]
fn reference_cost_model(
    py: Python<'_>,
    scenario: &Bound<'_, PyAny>,
    role: &str,
) -> PyResult<ReferenceCostModel> {
    guard(|| {
        let want = match role {
            "prefill" => Role::Prefill,
            "decode" => Role::Decode,
            "colocated" => Role::Colocated,
            other => {
                return Err(config_error(
                    py,
                    &format!("role: expected prefill, decode or colocated, got {other:?}"),
                    Some("role"),
                ))
            }
        };
        let sc = scenario_of(py, Some(scenario), Map::new())?;
        let cfg = build(py, &sc, &Catalogue::builtin())?;
        let pool = cfg.pools.iter().find(|p| p.role == want).ok_or_else(|| {
            config_error(
                py,
                &format!("role: no {role} pool in this mode"),
                Some("role"),
            )
        })?;
        Ok(ReferenceCostModel {
            cost: pool.cost.clone(),
            kv_capacity: pool.cost.kv_capacity_tokens().map_err(|e| e.to_string()),
        })
    })
}

/// Adds the drop-in's functions and classes to `_core`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ReferenceCostModel>()?;
    m.add_function(wrap_pyfunction!(reference_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(reference_requests, m)?)?;
    m.add_function(wrap_pyfunction!(reference_itls, m)?)?;
    m.add_function(wrap_pyfunction!(reference_cost_model, m)?)?;
    Ok(())
}
