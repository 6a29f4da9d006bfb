//! Comparisons: colocated against disaggregated on the same request stream (at the scenario's
//! rate or at each of several), or a scenario against variants of it. `disagg compare` and
//! Python's `disagg.compare` prepare the same columns here and print the same document.

use disagg_model::Catalogue;
use disagg_sim::{Mode, Scenario, SimConfig, Summary};
use serde_json::json;

use crate::error::UsageError;
use crate::memory;
use crate::report::Warnings;
use crate::run::with_warnings;

/// What to compare the scenario with.
#[derive(Clone, Debug, Default)]
pub struct CompareOptions {
    /// `NAME=VALUE,...` variants of the scenario, one column each (none: the two modes).
    pub variants: Vec<String>,
    /// The rates to run both modes at (none: the scenario's rate).
    pub sweep_rate: Option<Vec<f64>>,
    /// The `--mode` given, which a comparison of the two modes ignores (with a warning).
    pub mode_given: Option<String>,
    /// Allow many runs and runs over the memory budget (`--yes`).
    pub yes: bool,
    /// The runs record time series (`--plot`), for the memory estimate.
    pub series: bool,
    /// No note of the run count on standard error (`--quiet`).
    pub quiet: bool,
}

/// One column of a comparison, validated.
#[derive(Clone, Debug)]
pub struct Column {
    /// Its rate (a variant's: the scenario's own).
    pub rate: f64,
    /// The mode (`colocated`, `disagg`), or the variant as given (`reference` for the scenario).
    pub name: String,
    pub scenario: Scenario,
    pub cfg: SimConfig,
}

/// The validated columns of a comparison, in run order.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// Variants (else the two modes at each rate).
    pub variants: bool,
    /// How many rates (1 without `sweep_rate`).
    pub rates: usize,
    pub columns: Vec<Column>,
}

fn with_mode(s: &Scenario, mode: Mode) -> Scenario {
    Scenario { mode, ..s.clone() }
}

/// The columns comparing `base` as `o` asks, every configuration validated (and its memory
/// checked) before any runs.
pub fn prepare(
    base: &Scenario,
    cat: &Catalogue,
    o: &CompareOptions,
    warnings: &mut Warnings,
) -> Result<Comparison, UsageError> {
    if o.variants.is_empty() {
        if let Some(m) = &o.mode_given {
            warnings.warn(&format!(
                "--mode {m} is ignored: compare runs both colocated and disagg (use --variant to compare within one mode)"
            ));
        }
        if o.sweep_rate.is_some() && base.trace_file.is_some() {
            return Err(UsageError(
                "--sweep-rate: a replayed trace (--trace-file) brings its own arrivals, so every rate would give the same run; drop one of them".into(),
            ));
        }
    }
    if !o.variants.is_empty() {
        return variants(base, cat, o);
    }
    let rates: Vec<f64> = match &o.sweep_rate {
        Some(r) => {
            if r.is_empty() {
                return Err(UsageError("--sweep-rate: give at least one rate".into()));
            }
            r.clone()
        }
        None => vec![base.rate],
    };
    // Counted before any configuration is built: each rate runs both modes.
    let count = (rates.len() as u64).saturating_mul(2);
    memory::check_count("comparison", count, "runs", "--sweep-rate", o.yes)?;
    if count > memory::MAX_CANDIDATES_WITHOUT_YES && !o.quiet {
        eprintln!("compare: {count} runs ({} rates x 2 modes)", rates.len());
    }
    let mut columns = Vec::new();
    for &rate in &rates {
        for mode in [Mode::Colocated, Mode::Disagg] {
            let sc = Scenario {
                rate,
                ..with_mode(base, mode)
            };
            let cfg = sc.build(cat).map_err(|e| {
                UsageError(if o.sweep_rate.is_some() {
                    format!("--sweep-rate {rate}: {e}")
                } else {
                    e.to_string()
                })
            })?;
            memory::check("--requests", &cfg, o.series, memory::Runs::one(Some(o.yes)))?;
            columns.push(Column {
                rate,
                name: mode.as_str().to_string(),
                scenario: sc,
                cfg,
            });
        }
    }
    Ok(Comparison {
        variants: false,
        rates: rates.len(),
        columns,
    })
}

fn variants(
    base: &Scenario,
    cat: &Catalogue,
    o: &CompareOptions,
) -> Result<Comparison, UsageError> {
    let mut cols: Vec<(String, Scenario)> = vec![("reference".to_string(), base.clone())];
    for v in &o.variants {
        cols.push((v.clone(), crate::sweep::apply_variant(base, v)?));
    }
    let mut columns = Vec::new();
    for (name, sc) in cols {
        let cfg = sc
            .build(cat)
            .map_err(|e| UsageError(format!("--variant {name}: {e}")))?;
        let flag = format!("--variant {name}");
        memory::check(&flag, &cfg, o.series, memory::Runs::one(Some(o.yes)))?;
        columns.push(Column {
            rate: sc.rate,
            name,
            scenario: sc,
            cfg,
        });
    }
    Ok(Comparison {
        variants: true,
        rates: 1,
        columns,
    })
}

impl Comparison {
    /// `disagg compare --json`: every column's scenario and summary (`sums`, column order), and
    /// the warnings told.
    pub fn json(&self, sums: &[Summary], warnings: &Warnings) -> serde_json::Value {
        let runs: Vec<serde_json::Value> = self
            .columns
            .iter()
            .zip(sums)
            .map(|(c, s)| {
                if self.variants {
                    json!({"variant": c.name, "scenario": c.scenario.with_slos_resolved(), "summary": s})
                } else {
                    json!({"rate": c.rate, "mode": c.name, "scenario": c.scenario.with_slos_resolved(), "summary": s})
                }
            })
            .collect();
        let mut doc =
            json!({"schema_version": disagg_sim::SCHEMA_VERSION, "tool": "disagg", "runs": runs});
        with_warnings(&mut doc, warnings);
        doc
    }

    /// Runs every column in order, telling each run's warnings; `each` sees every run as it
    /// ends. The summaries, in column order.
    pub fn run(
        &self,
        warnings: &mut Warnings,
        mut each: impl FnMut(&Column, &disagg_sim::RunResult),
    ) -> Result<Vec<Summary>, UsageError> {
        let mut sums = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            let run = disagg_sim::simulate_config(&c.cfg)?;
            each(c, &run);
            let sum = run.summary();
            warnings.summary(&sum);
            sums.push(sum);
        }
        Ok(sums)
    }
}
