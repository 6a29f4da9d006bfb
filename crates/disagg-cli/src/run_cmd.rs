//! `disagg run`, `disagg compare` and `disagg presets`: simulations.

use std::path::PathBuf;

use clap::Args;
use disagg_model::Catalogue;
use disagg_sim::{
    simulate_config, simulate_config_observed, ChromeTrace, Scenario, SimConfig, Summary,
};
use serde_json::json;

use crate::memory;
use crate::output::{check_writable, Files, Pending};
use crate::output::{out, outln};
use crate::progress::{self, Progress};
use crate::scenario_flags::ScenarioFlags;
use crate::{plots, report, CmdResult, UsageError};
use disagg_api::compare::{CompareOptions, Comparison};
use disagg_api::report::Warnings;

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
    /// Write SVG charts here: latency CDFs, utilisation/queues/KV over time, stage breakdown.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Run even if the estimated memory of the run exceeds what the machine has available.
    #[arg(long)]
    pub yes: bool,
    /// No progress bar (drawn on standard error only when it is a terminal).
    #[arg(long)]
    pub quiet: bool,
    /// Simulate a deployed configuration: a Dynamo DynamoGraphDeployment (nvidia.com/v1beta1 or
    /// v1alpha1) or llm-d modelservice values. Its model, pools, parallelism and engine flags
    /// become scenario flags (a scenario flag given here replaces the file's); what cannot be
    /// mapped is listed on standard error as `note: deployment: ...`.
    #[arg(long, value_name = "FILE.yaml")]
    pub deployment: Option<PathBuf>,
}

/// Adds the input files of scenario flags `sc` (`--config`, `--trace-file`) to `files`.
pub fn scenario_inputs(sc: &ScenarioFlags, files: &mut Files) {
    files.input("--config", sc.config.as_deref()).input(
        "--trace-file",
        sc.values.get("trace_file").map(std::path::Path::new),
    );
}

impl RunArgs {
    /// The files this command line reads and writes, for [`crate::output::check_distinct`].
    pub fn files(&self) -> Files {
        let mut f = Files::default();
        scenario_inputs(&self.sc, &mut f);
        f.input("--workload-file", self.workload_file.as_deref())
            .input("--deployment", self.deployment.as_deref())
            .output("--requests-out", self.requests_out.as_deref())
            .output("--trace", self.trace.as_deref());
        f
    }
}

/// The validated configuration and the requests to run.
pub struct Prepared {
    pub scenario: Scenario,
    pub cfg: SimConfig,
}

/// Builds and validates everything a run needs, before anything runs.
pub fn prepare(
    sc: &ScenarioFlags,
    cat: &Catalogue,
    workload_file: Option<&PathBuf>,
) -> Result<Prepared, UsageError> {
    let mut scenario = sc.scenario()?;
    if let Some(p) = workload_file {
        if scenario.trace_file.is_some() {
            return Err(UsageError(
                "--workload-file: give it or --trace-file, not both".into(),
            ));
        }
        sc.check_trace_ignores("--workload-file")?;
        scenario.trace_file = Some(p.display().to_string());
        scenario.trace_format = Some(disagg_trace::TraceFormat::Reference);
    }
    let cfg = scenario.build(cat).map_err(|e| {
        let e = e.to_string();
        match (workload_file, e.strip_prefix("--trace-file: ")) {
            // The workload file is read as a reference-format trace: name the flag given.
            (Some(_), Some(rest)) => UsageError(format!("--workload-file: {rest}")),
            _ => UsageError(e),
        }
    })?;
    Ok(Prepared { scenario, cfg })
}

/// A short name of a scenario for charts and tables.
pub fn label(s: &Scenario) -> String {
    if s.mode == disagg_sim::Mode::Colocated {
        return format!("colocated x{}", s.prefill + s.decode);
    }
    let pd = s.prefill_device.as_deref().unwrap_or(&s.device);
    let dd = s.decode_device.as_deref().unwrap_or(&s.device);
    let mut t = format!("{}P {pd} + {}D {dd}, {}", s.prefill, s.decode, s.link);
    if let Some(c) = &s.kv_compress {
        t.push_str(&format!(", {c}"));
    }
    t
}

pub use disagg_api::run::{run_json, with_warnings};

/// `run --deployment FILE`: reads the file and lays its scenario flags under the command line's
/// (`sc`). Returns the lines for standard error (`note: deployment: ...`, printed once the
/// scenario is valid) and the JSON `deployment` object of the run.
fn deployment(
    path: &std::path::Path,
    sc: &mut ScenarioFlags,
    cat: &Catalogue,
) -> Result<(Vec<String>, serde_json::Value), UsageError> {
    use disagg_api::deploy::import;
    let opts = import::ReadOptions {
        cat,
        model: sc.values.get("model"),
    };
    let imported = import::read_with(path, &opts)?;
    let dep = &imported.deployment;
    let (args, notes) = dep.to_args_noted(cat)?;
    let replaced = sc.values.lay_under(&args)?;
    let mut lines = dep.not_mapped.clone();
    lines.extend(notes);
    lines.extend(replaced.iter().map(|(flag, file, given)| {
        format!("{flag} {given} from the command line replaces the file's {flag} {file}")
    }));
    let mut said = vec![format!(
        "{} ({}) read as: {}",
        path.display(),
        imported.format,
        args.join(" ")
    )];
    said.extend(lines.iter().cloned());
    let doc = json!({
        "file": path.display().to_string(),
        "format": imported.format,
        "args": args,
        "not_mapped": lines,
    });
    Ok((said, doc))
}

pub fn run(mut a: RunArgs, cat: &Catalogue, warnings: &mut Warnings) -> CmdResult {
    let (said, deployed) = match a.deployment.clone() {
        Some(p) => {
            let (said, doc) = deployment(&p, &mut a.sc, cat)?;
            (said, Some(doc))
        }
        None => (Vec::new(), None),
    };
    let prep = prepare(&a.sc, cat, a.workload_file.as_ref())?;
    for l in &said {
        eprintln!("note: deployment: {l}");
    }
    let requests_flag = match (&a.workload_file, &prep.scenario.trace_file) {
        (Some(_), _) => "--workload-file",
        (None, Some(_)) => "--trace-file",
        (None, None) => "--requests",
    };
    let requests = prep.cfg.workload.requests;
    memory::check(
        requests_flag,
        &prep.cfg,
        a.plot.is_some(),
        memory::Runs::one(Some(a.yes)),
    )?;
    if let Some(p) = &a.requests_out {
        check_writable("--requests-out", p)?;
    }
    if let Some(d) = &a.plot {
        plots::prepare_dir(d)?;
    }
    let mut timeline = plots::Timeline::default();
    let progress = Progress::start("requests", requests, a.quiet);
    let mut counted = progress::Requests(&progress);
    // Every output lands only when the command has succeeded (its report printed).
    let mut landing = Vec::new();
    let run = match (&a.trace, a.plot.is_some()) {
        (Some(path), with_plot) => {
            let mut pending = Pending::create("--trace", path)?;
            let mut tr = ChromeTrace::new(pending.writer());
            let run = if with_plot {
                simulate_config_observed(&prep.cfg, &mut (&mut counted, (&mut tr, &mut timeline)))?
            } else {
                simulate_config_observed(&prep.cfg, &mut (&mut counted, &mut tr))?
            };
            let finished = tr.finish().map(drop);
            finished.map_err(|e| pending.error(e))?;
            landing.push(pending);
            run
        }
        (None, true) => simulate_config_observed(&prep.cfg, &mut (&mut counted, &mut timeline))?,
        (None, false) if progress.is_shown() => simulate_config_observed(&prep.cfg, &mut counted)?,
        (None, false) => simulate_config(&prep.cfg)?,
    };
    drop(progress);
    if let Some(path) = &a.requests_out {
        let mut pending = Pending::create("--requests-out", path)?;
        let written = disagg_api::requests::write_csv(&run, pending.writer());
        written.map_err(|e| pending.error(e))?;
        pending.flush()?;
        landing.push(pending);
    }
    let s = run.summary();
    warnings.summary(&s);
    let reported = (|| -> CmdResult {
        if let Some(dir) = &a.plot {
            let mut written = Vec::new();
            let slo = (prep.cfg.ttft_slo_s, prep.cfg.tpot_slo_s);
            let name = label(&prep.scenario);
            plots::cdfs(dir, &[plots::Latencies::of(&name, &run)], slo, &mut written)?;
            timeline.plot(dir, prep.cfg.link.channels, &mut written)?;
            plots::stages(dir, &[(name, &s)], &mut written)?;
            plots::report(&written);
        }
        if a.json {
            let mut doc = run_json(&prep.scenario, &s, warnings.list());
            if let Some(d) = &deployed {
                doc["deployment"] = d.clone();
            }
            outln!("{}", serde_json::to_string_pretty(&doc).expect("json"));
        } else {
            out!("{}", report::text(&s));
        }
        crate::output::flush_stdout()?;
        Ok(())
    })();
    crate::output::land(landing, reported)
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub sc: ScenarioFlags,
    /// Instead of colocated against disaggregated, compare the scenario with variants of it, one
    /// column each: `--variant send=layerwise --variant link_sharing=fair,link_channels=2`.
    #[arg(long, value_name = "NAME=VALUE,...", conflicts_with = "sweep_rate")]
    pub variant: Vec<String>,
    /// One row per rate (each mode at each rate, same lengths).
    #[arg(long, value_name = "R", num_args = 1.., allow_negative_numbers = true)]
    pub sweep_rate: Option<Vec<f64>>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Write SVG charts here: latency CDFs, stage breakdown, and with --sweep-rate the
    /// percentiles and SLO attainment against rate.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Allow more than 10,000 runs with --sweep-rate (the count is stated on standard error
    /// first), and runs over the memory budget.
    #[arg(long)]
    pub yes: bool,
    /// No progress bar (drawn on standard error only when it is a terminal).
    #[arg(long)]
    pub quiet: bool,
}

pub fn compare(a: CompareArgs, cat: &Catalogue, warnings: &mut Warnings) -> CmdResult {
    let base = a.sc.scenario()?;
    let opts = CompareOptions {
        variants: a.variant.clone(),
        sweep_rate: a.sweep_rate.clone(),
        mode_given: a.sc.values.get("mode").map(|m| m.to_string()),
        yes: a.yes,
        series: a.plot.is_some(),
        quiet: a.quiet,
    };
    let cmp = disagg_api::compare::prepare(&base, cat, &opts, warnings)?;
    if cmp.variants {
        return compare_variants(&a, &base, &cmp, warnings);
    }
    let rates = cmp.rates;
    if let Some(d) = &a.plot {
        plots::prepare_dir(d)?;
    }
    let mut lats = Vec::new();
    let progress = Progress::start("runs", cmp.columns.len() as u64, a.quiet);
    let sums = cmp.run(warnings, |c, run| {
        progress.inc(1);
        if a.plot.is_some() && cmp.columns.len() <= 12 {
            let name = if rates > 1 {
                format!("{} @ {} req/s", c.name, c.rate)
            } else {
                c.name.clone()
            };
            lats.push(plots::Latencies::of(&name, run));
        }
    })?;
    drop(progress);
    let rows: Vec<(f64, &str, &Summary)> = cmp
        .columns
        .iter()
        .zip(&sums)
        .map(|(c, s)| (c.rate, c.name.as_str(), s))
        .collect();
    if let Some(dir) = &a.plot {
        let mut written = Vec::new();
        let slo = base.slos();
        if !lats.is_empty() {
            plots::cdfs(dir, &lats, slo, &mut written)?;
        }
        let named: Vec<(String, &Summary)> = rows
            .iter()
            .map(|(r, m, s)| {
                (
                    if rates > 1 {
                        format!("{m} @ {r}")
                    } else {
                        m.to_string()
                    },
                    *s,
                )
            })
            .collect();
        plots::stages(dir, &named, &mut written)?;
        if rates > 1 {
            let lines: Vec<(String, Vec<(f64, Summary)>)> = ["colocated", "disagg"]
                .iter()
                .map(|m| {
                    let pts = rows
                        .iter()
                        .filter(|r| r.1 == *m)
                        .map(|r| (r.0, r.2.clone()))
                        .collect();
                    (m.to_string(), pts)
                })
                .collect();
            plots::versus_rate(dir, &lines, slo, 0.9, &mut written)?;
        }
        plots::report(&written);
    }
    if a.json {
        let doc = cmp.json(&sums, warnings);
        outln!("{}", serde_json::to_string_pretty(&doc).expect("json"));
        return Ok(());
    }
    let sums: Vec<&Summary> = sums.iter().collect();
    if a.sweep_rate.is_none() {
        out!("{}", report::runs_header(&["colocated", "disagg"], &sums));
        out!("{}", report::side_by_side(&["colocated", "disagg"], &sums));
        out!("{}", report::calibration_of_runs(sums.iter().copied()));
        return Ok(());
    }
    let levers = report::any_levers(&sums);
    let sched = |c: [String; 4]| {
        if levers {
            format!(" {:>12} {:>12} {:>12} {:>12}", c[0], c[1], c[2], c[3])
        } else {
            String::new()
        }
    };
    outln!(
        "{:>8} {:<10} {:>12} {:>12} {:>14} {:>8}{}  hot-spot",
        "rate",
        "mode",
        "TTFT p99 ms",
        "TPOT p99 ms",
        "goodput req/s",
        "SLO %",
        sched(report::SCHED_HEADS.map(str::to_string))
    );
    let [ttft, tpot, goodput, slo] = disagg_api::metrics::pick(disagg_api::metrics::COMPARE_TABLE);
    for (rate, mode, s) in &rows {
        outln!(
            "{:>8} {:<10} {:>12} {:>12} {:>14} {:>8}{}  {} -> {}",
            rate,
            mode,
            ttft.cell_or_na(s),
            tpot.cell_or_na(s),
            goodput.cell_or_na(s),
            slo.cell_or_na(s),
            sched(report::sched_cells(s)),
            s.hotspot.stage.as_deref().unwrap_or("-"),
            s.hotspot.resource
        );
    }
    // One `warning:` line per overloaded run (docs/serving-model.md#overload).
    let names: Vec<String> = rows
        .iter()
        .map(|(r, m, _)| format!("{m} @ {r} req/s"))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    out!("{}", report::overload_warnings(&names, &sums));
    out!("{}", report::calibration_of_runs(sums.iter().copied()));
    Ok(())
}

fn compare_variants(
    a: &CompareArgs,
    base: &Scenario,
    cmp: &Comparison,
    warnings: &mut Warnings,
) -> CmdResult {
    if let Some(d) = &a.plot {
        plots::prepare_dir(d)?;
    }
    let mut lats = Vec::new();
    let progress = Progress::start("runs", cmp.columns.len() as u64, a.quiet);
    let sums = cmp.run(warnings, |c, run| {
        progress.inc(1);
        if a.plot.is_some() && cmp.columns.len() <= 12 {
            lats.push(plots::Latencies::of(&c.name, run));
        }
    })?;
    drop(progress);
    if a.json {
        let doc = cmp.json(&sums, warnings);
        outln!("{}", serde_json::to_string_pretty(&doc).expect("json"));
    } else {
        let names: Vec<&str> = cmp.columns.iter().map(|c| c.name.as_str()).collect();
        let refs: Vec<&Summary> = sums.iter().collect();
        out!("{}", report::runs_header(&names, &refs));
        out!("{}", report::variants_table(&names, &refs));
        out!("{}", report::calibration_of_runs(refs.iter().copied()));
    }
    if let Some(dir) = &a.plot {
        let mut written = Vec::new();
        plots::cdfs(dir, &lats, base.slos(), &mut written)?;
        let named: Vec<(String, &Summary)> = cmp
            .columns
            .iter()
            .map(|c| c.name.clone())
            .zip(&sums)
            .collect();
        plots::stages(dir, &named, &mut written)?;
        plots::report(&written);
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
            .map(|p| json!({"name": p.name, "group": p.group, "about": p.about, "scenario": p.scenario.echo_value()}))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return Ok(());
    }
    let mut group = "";
    for p in &all {
        if p.group != group {
            if !group.is_empty() {
                outln!();
            }
            group = p.group;
            outln!("{group}");
        }
        outln!("  {:<26} {}", p.name, p.about);
    }
    outln!("\nrun one with: disagg run --preset NAME");
    Ok(())
}
