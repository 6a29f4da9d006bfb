//! `disagg run`, `disagg compare` and `disagg presets`: simulations.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use disagg_model::Catalogue;
use disagg_sim::{
    simulate, simulate_observed, ChromeTrace, GenRequest, RunResult, Scenario, SimConfig, Summary,
};
use serde_json::json;

use crate::output::{check_writable, csv_f64, Pending};
use crate::scenario_flags::ScenarioFlags;
use crate::{report, CmdResult, UsageError};

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub sc: ScenarioFlags,
    /// Print the run as JSON (versioned schema: scenario echoed, summary).
    #[arg(long)]
    pub json: bool,
    /// Write one CSV row per request (stamps in seconds, shortest round-trip form).
    #[arg(long, value_name = "FILE.csv")]
    pub requests_out: Option<PathBuf>,
    /// Write a Chrome / Perfetto trace of every step and transfer.
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    /// Replay a workload file (the reference's JSON rows: [arrival_s, prompt, output]) instead of
    /// generating one.
    #[arg(long, value_name = "FILE.json")]
    pub workload_file: Option<PathBuf>,
}

/// The validated configuration and the requests to run.
pub struct Prepared {
    pub scenario: Scenario,
    pub cfg: SimConfig,
    pub workload: Vec<GenRequest>,
}

/// Builds and validates everything a run needs, before anything runs.
pub fn prepare(
    sc: &ScenarioFlags,
    cat: &Catalogue,
    workload_file: Option<&PathBuf>,
) -> Result<Prepared, UsageError> {
    let scenario = sc.scenario()?;
    let cfg = scenario.build(cat)?;
    let workload = match workload_file {
        Some(p) => crate::workload_file::read(p)?,
        None => cfg.generate_workload(),
    };
    Ok(Prepared {
        scenario,
        cfg,
        workload,
    })
}

/// The JSON document of one run.
pub fn run_json(scenario: &Scenario, s: &Summary) -> serde_json::Value {
    json!({
        "schema_version": disagg_sim::SCHEMA_VERSION,
        "tool": "disagg",
        "version": env!("CARGO_PKG_VERSION"),
        "scenario": scenario,
        "summary": s,
    })
}

fn requests_csv(run: &RunResult, p: &mut Pending) -> std::io::Result<()> {
    let w = p.writer();
    writeln!(
        w,
        "rid,arrival_s,prompt_len,output_len,prefill_start_s,first_token_s,kv_start_s,kv_ready_s,decode_start_s,finish_s"
    )?;
    for r in run.requests() {
        writeln!(
            w,
            "{},{},{},{},{},{},{},{},{},{}",
            r.rid,
            csv_f64(Some(r.arrival_s)),
            r.prompt_len,
            r.output_len,
            csv_f64(r.prefill_start_s),
            csv_f64(r.first_token_s),
            csv_f64(r.kv_start_s),
            csv_f64(r.kv_ready_s),
            csv_f64(r.decode_start_s),
            csv_f64(r.finish_s)
        )?;
    }
    Ok(())
}

pub fn run(a: RunArgs, cat: &Catalogue) -> CmdResult {
    let prep = prepare(&a.sc, cat, a.workload_file.as_ref())?;
    if let Some(p) = &a.requests_out {
        check_writable("--requests-out", p)?;
    }
    let run = match &a.trace {
        Some(path) => {
            let mut pending = Pending::create("--trace", path)?;
            let mut tr = ChromeTrace::new(pending.writer());
            let run = simulate_observed(&prep.cfg, &prep.workload, &mut tr)?;
            tr.finish()
                .map_err(|e| UsageError(format!("--trace: cannot write: {e}")))?;
            pending.commit()?;
            run
        }
        None => simulate(&prep.cfg, &prep.workload)?,
    };
    if let Some(path) = &a.requests_out {
        let mut pending = Pending::create("--requests-out", path)?;
        requests_csv(&run, &mut pending)
            .map_err(|e| UsageError(format!("--requests-out: cannot write: {e}")))?;
        pending.commit()?;
    }
    let s = run.summary();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&run_json(&prep.scenario, &s)).expect("json")
        );
    } else {
        print!("{}", report::text(&s));
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub sc: ScenarioFlags,
    /// One row per rate (each mode at each rate, same lengths).
    #[arg(long, value_name = "R", num_args = 1.., allow_negative_numbers = true)]
    pub sweep_rate: Option<Vec<f64>>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn with_mode(s: &Scenario, mode: &str) -> Scenario {
    Scenario {
        mode: mode.into(),
        ..s.clone()
    }
}

pub fn compare(a: CompareArgs, cat: &Catalogue) -> CmdResult {
    let base = a.sc.scenario()?;
    let rates: Vec<f64> = match &a.sweep_rate {
        Some(r) => {
            if r.is_empty() {
                return Err(UsageError("--sweep-rate: give at least one rate".into()));
            }
            r.clone()
        }
        None => vec![base.rate],
    };
    // Validate every configuration before running any.
    let mut cfgs = Vec::new();
    for &rate in &rates {
        for mode in ["colocated", "disagg"] {
            let sc = Scenario {
                rate,
                ..with_mode(&base, mode)
            };
            let cfg = sc.build(cat).map_err(|e| {
                UsageError(if a.sweep_rate.is_some() {
                    format!("--sweep-rate {rate}: {e}")
                } else {
                    e.to_string()
                })
            })?;
            cfgs.push((rate, mode, sc, cfg));
        }
    }
    let mut rows = Vec::new();
    for (rate, mode, sc, cfg) in &cfgs {
        let run = simulate(cfg, &cfg.generate_workload())?;
        rows.push((*rate, *mode, sc.clone(), run.summary()));
    }
    if a.json {
        let runs: Vec<serde_json::Value> = rows
            .iter()
            .map(|(rate, mode, sc, s)| json!({"rate": rate, "mode": mode, "scenario": sc, "summary": s}))
            .collect();
        let doc =
            json!({"schema_version": disagg_sim::SCHEMA_VERSION, "tool": "disagg", "runs": runs});
        println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
        return Ok(());
    }
    if a.sweep_rate.is_none() {
        let cols: Vec<&Summary> = rows.iter().map(|r| &r.3).collect();
        print!("{}", report::side_by_side(&["colocated", "disagg"], &cols));
        return Ok(());
    }
    println!(
        "{:>8} {:<10} {:>12} {:>12} {:>14} {:>8}  hot-spot",
        "rate", "mode", "TTFT p99 ms", "TPOT p99 ms", "goodput req/s", "SLO %"
    );
    for (rate, mode, _, s) in &rows {
        println!(
            "{:>8} {:<10} {:>12.1} {:>12.1} {:>14.2} {:>8.1}  {} -> {}",
            rate,
            mode,
            1e3 * s.ttft_s.p99,
            1e3 * s.tpot_s.p99,
            s.goodput_rps,
            100.0 * s.slo_attainment,
            s.hotspot.stage.as_deref().unwrap_or("-"),
            s.hotspot.resource
        );
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct PresetsArgs {
    /// Print JSON (each preset's full scenario).
    #[arg(long)]
    json: bool,
}

pub fn presets(a: PresetsArgs) -> CmdResult {
    let all = disagg_sim::presets::all();
    if a.json {
        let v: Vec<serde_json::Value> = all
            .iter()
            .map(|p| json!({"name": p.name, "group": p.group, "about": p.about, "scenario": p.scenario}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return Ok(());
    }
    let mut group = "";
    for p in &all {
        if p.group != group {
            if !group.is_empty() {
                println!();
            }
            group = p.group;
            println!("{group}");
        }
        println!("  {:<22} {}", p.name, p.about);
    }
    println!("\nrun one with: disagg run --preset NAME");
    Ok(())
}
