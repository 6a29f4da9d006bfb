//! `disagg plan`: capacity planning. `--max-rate` finds the highest request rate that meets an
//! SLO-attainment target; `--target-rate R` finds the cheapest configurations that meet the
//! SLOs at R (the search is [`disagg_api::plan`]). This file parses the flags into
//! [`PlanOptions`] and prints the plan (JSON, text, SVG charts).

use std::path::PathBuf;

use clap::Args;
use disagg_api::plan::{describe, Plan, PlanOptions};
use disagg_sim::Summary;

use crate::output::{out, outln};
use crate::progress::Progress;
use crate::scenario_flags::ScenarioFlags;
use crate::{plots, CmdResult};

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    sc: ScenarioFlags,
    /// Find the highest rate that meets the SLO-attainment target for the scenario as given.
    #[arg(long, help_heading = "Plan", conflicts_with = "target_rate")]
    max_rate: bool,
    /// Find the cheapest configurations that meet the SLOs at this rate (req/s).
    #[arg(
        long,
        value_name = "R",
        allow_negative_numbers = true,
        help_heading = "Plan"
    )]
    target_rate: Option<f64>,
    /// Fraction of measured requests that must meet both SLOs.
    #[arg(
        long,
        default_value_t = 0.9,
        value_name = "F",
        allow_negative_numbers = true,
        help_heading = "Plan"
    )]
    slo_target: f64,
    /// Prefill instance counts to try (list or range, e.g. 1-4 or 1,2,4).
    #[arg(
        long,
        default_value = "1-4",
        value_name = "LIST",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    prefill_counts: String,
    /// Decode instance counts to try.
    #[arg(
        long,
        default_value = "1-4",
        value_name = "LIST",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    decode_counts: String,
    /// Devices to try for the prefill pool.
    #[arg(
        long,
        default_value = "h100,a100",
        value_name = "LIST",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    prefill_devices: String,
    /// Devices to try for the decode pool.
    #[arg(
        long,
        default_value = "h100,a100",
        value_name = "LIST",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    decode_devices: String,
    /// Links to try (default: the scenario's).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    links: Option<String>,
    /// KV compression to try (`none` = no compression stage), e.g. none,fp8.
    #[arg(
        long,
        default_value = "none",
        value_name = "LIST",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    compressions: String,
    /// Parallel layouts to try in both pools, TPxPP (e.g. 4x1,2x2,8x1): each sets the pool's
    /// tensor- and pipeline-parallel degrees and its devices per instance to tp x pp (default:
    /// the scenario's own; --prefill-layouts and --decode-layouts override it per pool).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    layouts: Option<String>,
    /// Parallel layouts to try in the prefill pool, TPxPP (default: --layouts, else the
    /// scenario's own).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    prefill_layouts: Option<String>,
    /// Parallel layouts to try in the decode pool, TPxPP (default: --layouts, else the
    /// scenario's own).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    decode_layouts: Option<String>,
    /// Weight/KV-cache/compute formats to try, W/KV/C (e.g. bf16,fp8/fp8/fp8,int4/fp8/bf16):
    /// one name is that format for all three (`bf16`: no quantisation). Default: the
    /// scenario's.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    formats: Option<String>,
    /// Price override, US$ per hour: a device (per GPU) or a link (per instance's port), e.g.
    /// --price h100=2.9 --price ib-ndr=0.4 (repeatable).
    #[arg(
        long,
        value_name = "KEY=USD",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    price: Vec<String>,
    /// Energy price, US$ per kWh.
    #[arg(
        long,
        default_value_t = 0.10,
        value_name = "USD",
        allow_negative_numbers = true,
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    energy_price: f64,
    /// Latency for the Pareto frontier: ttft, tpot or e2e (its p99).
    #[arg(
        long,
        default_value = "e2e",
        value_name = "METRIC",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    latency: String,
    /// Rows of the ranked table.
    #[arg(
        long,
        default_value_t = 10,
        value_name = "N",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    top: usize,
    /// Print JSON (every candidate).
    #[arg(long)]
    json: bool,
    /// Write SVG charts here: the Pareto frontier of cost against p99 latency, and the stage
    /// breakdown of the ranked configurations.
    #[arg(
        long,
        value_name = "DIR",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    plot: Option<PathBuf>,
    /// Allow more than 10,000 candidates (the count is stated on standard error first).
    #[arg(long, help_heading = "Plan")]
    yes: bool,
    /// No candidate count and no progress bar on standard error.
    #[arg(long, help_heading = "Plan")]
    quiet: bool,
    /// --max-rate's search: ci (confidence intervals: trace replayed time-scaled, warm-up
    /// detected, replications) or bisect (the reference's bisection).
    #[arg(
        long,
        value_name = "ci|bisect",
        default_value = "ci",
        help_heading = "Plan"
    )]
    search: String,
    /// --max-rate (ci): replicate until the 95% interval of the SLO attainment is at most this
    /// on each side (0.01 = 1 percentage point).
    #[arg(long, value_name = "F", default_value_t = 0.01, help_heading = "Plan")]
    ci_half_width: f64,
    /// --max-rate (ci): at most this many replications per rate.
    #[arg(long, value_name = "N", default_value_t = 20, help_heading = "Plan")]
    max_replications: u32,
}

impl PlanArgs {
    /// The library's options of these flags.
    fn options(&self) -> PlanOptions {
        PlanOptions {
            max_rate: self.max_rate,
            target_rate: self.target_rate,
            slo_target: self.slo_target,
            prefill_counts: self.prefill_counts.clone(),
            decode_counts: self.decode_counts.clone(),
            prefill_devices: self.prefill_devices.clone(),
            decode_devices: self.decode_devices.clone(),
            links: self.links.clone(),
            compressions: self.compressions.clone(),
            layouts: self.layouts.clone(),
            prefill_layouts: self.prefill_layouts.clone(),
            decode_layouts: self.decode_layouts.clone(),
            formats: self.formats.clone(),
            price: self.price.clone(),
            energy_price: self.energy_price,
            latency: self.latency.clone(),
            top: self.top,
            yes: self.yes,
            quiet: self.quiet,
            search: self.search.clone(),
            ci_half_width: self.ci_half_width,
            max_replications: self.max_replications,
        }
    }
}

pub fn run(
    a: PlanArgs,
    cat: &disagg_model::Catalogue,
    warnings: &mut disagg_api::report::Warnings,
) -> CmdResult {
    let o = a.options();
    let search = match disagg_api::plan::prepare(a.sc.scenario()?, cat, &o, warnings)? {
        Plan::MaxRate(m) => {
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&m.json()).expect("json"));
            } else {
                out!("{}", m.text());
            }
            return Ok(());
        }
        Plan::Search(s) => s,
    };
    if let Some(d) = &a.plot {
        plots::prepare_dir(d)?;
    }
    if !a.quiet {
        eprintln!("{}", search.note());
    }
    let progress = Progress::start("candidates", search.count, a.quiet);
    let t = search.run(&|| progress.inc(1))?;
    drop(progress);
    let ranked = t.ranked();
    if let Some(dir) = &a.plot {
        let mut written = Vec::new();
        let name = describe;
        let pts: Vec<(f64, f64, String)> = ranked
            .iter()
            .map(|c| {
                (
                    c.usd_per_hour.unwrap_or(f64::NAN),
                    1e3 * c.latency_p99_s.unwrap_or(f64::NAN),
                    name(c),
                )
            })
            .collect();
        let mut front: Vec<(f64, f64, String)> = t
            .cands
            .iter()
            .filter(|c| c.pareto)
            .map(|c| {
                (
                    c.usd_per_hour.unwrap_or(f64::NAN),
                    1e3 * c.latency_p99_s.unwrap_or(f64::NAN),
                    name(c),
                )
            })
            .collect();
        front.sort_by(|x, y| x.0.total_cmp(&y.0));
        plots::pareto(dir, &pts, &front, &a.latency, &mut written)?;
        let top: Vec<(String, &Summary)> = ranked
            .iter()
            .take(a.top.clamp(1, 40))
            .filter_map(|c| c.summary.as_ref().map(|s| (name(c), s)))
            .collect();
        if !top.is_empty() {
            plots::stages(dir, &top, &mut written)?;
        }
        plots::report(&written);
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&t.json()).expect("json"));
    } else {
        out!("{}", t.text());
    }
    Ok(())
}
