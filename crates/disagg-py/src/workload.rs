//! The reference's Poisson workload generator.

use disagg_sim::budget;
use disagg_sim::LengthDist;
use pyo3::prelude::*;

use crate::budget::check_budget;
use crate::convert::{shown, whole_in};
use crate::error::{config_error, guard};

/// The reference's `poisson_workload(rate, n, prompt, output, seed)`: rows
/// `(arrival_s, prompt_len, output_len)`, bit for bit (Python's Mersenne Twister). `n` is at most
/// the simulator's limit of requests ([`disagg_sim::scenario::MAX_REQUESTS`]) and must fit in the
/// memory budget; the lengths' `(mean, cv, lo, hi)` must be finite, the mean positive and the
/// bounds from 0 to 4294967295.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (rate, n, prompt, output, seed))]
pub(crate) fn poisson_workload(
    py: Python<'_>,
    rate: f64,
    n: &Bound<'_, PyAny>,
    prompt: (f64, f64, i64, i64),
    output: (f64, f64, i64, i64),
    seed: u64,
) -> PyResult<Vec<(f64, u32, u32)>> {
    guard(|| {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(config_error(
                py,
                &format!("rate: must be a positive number of requests per second, got {rate}"),
                Some("rate"),
            ));
        }
        let max = disagg_sim::scenario::MAX_REQUESTS;
        let n = whole_in(n, 0, max as i64).map_err(|()| {
            config_error(
                py,
                &format!(
                    "n: expected a whole number of requests from 0 to {max}, got {}",
                    shown(n)
                ),
                Some("n"),
            )
        })? as u64;
        let what = format!("{n} requests would");
        check_budget(py, budget::requests_bytes(n, false), "n", &what)?;
        let dist = |name: &str, (mean, cv, lo, hi): (f64, f64, i64, i64)| {
            let bad = |field: &str, why: String| {
                let field = format!("{name}.{field}");
                config_error(py, &format!("{field}: {why}"), Some(&field))
            };
            if !(mean.is_finite() && mean > 0.0) {
                return Err(bad(
                    "mean",
                    format!("must be a finite number > 0, got {mean}"),
                ));
            }
            if !cv.is_finite() {
                return Err(bad("cv", format!("must be a finite number, got {cv}")));
            }
            for (field, v) in [("lo", lo), ("hi", hi)] {
                if u32::try_from(v).is_err() {
                    return Err(bad(
                        field,
                        format!("must be a whole number from 0 to 4294967295, got {v}"),
                    ));
                }
            }
            Ok(LengthDist { mean, cv, lo, hi })
        };
        let (prompt, output) = (dist("prompt", prompt)?, dist("output", output)?);
        let w =
            py.detach(|| disagg_sim::poisson_workload(rate, n as usize, &prompt, &output, seed));
        Ok(w.into_iter()
            .map(|r| (r.arrival_s, r.prompt_len, r.output_len))
            .collect())
    })
}
