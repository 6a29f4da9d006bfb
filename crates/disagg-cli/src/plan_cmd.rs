//! `disagg plan`: capacity planning. `--max-rate` finds the highest request rate that meets an
//! SLO-attainment target; `--target-rate R` finds the cheapest configurations that meet the
//! SLOs at R (the search is [`disagg_api::plan`]). This file parses the flags into
//! [`PlanOptions`] and prints the plan (JSON, text, SVG charts).

use std::path::PathBuf;

use clap::Args;
use disagg_api::plan::{describe, short_label, Objective, Plan, PlanOptions, Targets};
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
    /// GPU budget: the most GPUs a candidate may use (instances x devices per instance, over
    /// the pools); candidates over it are not simulated (status over-budget).
    #[arg(
        long,
        value_name = "N",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    gpus: Option<u64>,
    /// GPUs per node: an instance has at most this many devices or a whole multiple of it
    /// (whole nodes); other candidates are invalid.
    #[arg(long, default_value_t = 8, value_name = "G", help_heading = "Plan")]
    gpus_per_node: u32,
    /// Colocated candidates: no, yes (beside the disaggregated ones, on every device of the
    /// lists and every total P + D of the counts; the report gives the winner's margin over the
    /// best of them) or only (also --mode colocated).
    #[arg(
        long,
        default_value = "yes",
        value_name = "no|yes|only",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    colocated: String,
    /// What to rank by: cost ($/hour), goodput-per-gpu, tokens-per-gpu@R (output tokens/s per
    /// GPU among candidates with at least R tokens/s per user = 1 / mean TPOT), min-gpus, or
    /// pareto (the frontier of tokens/s per GPU against tokens/s per user).
    #[arg(
        long,
        default_value = "cost",
        value_name = "NAME",
        help_heading = "Plan",
        conflicts_with = "max_rate"
    )]
    objective: String,
    /// Write the winning plan as deployable files: dynamo (dynamo.yaml, a Dynamo
    /// DynamoGraphDeployment), llm-d (llm-d-values.yaml), vllm (vllm.sh), sglang (sglang.sh).
    /// Repeatable or comma-separated; needs --emit-dir.
    #[arg(long, value_name = "FORMAT", help_heading = "Deploy")]
    emit: Vec<String>,
    /// Directory of the --emit files (created if missing; files there are replaced).
    #[arg(long, value_name = "DIR", help_heading = "Deploy")]
    emit_dir: Option<PathBuf>,
    /// Write the K best --target-rate plans, in DIR/1/ ... DIR/K/.
    #[arg(long, value_name = "K", help_heading = "Deploy")]
    emit_top: Option<usize>,
    /// Engine of the Dynamo workers: vllm or sglang (llm-d and vllm.sh run vLLM, sglang.sh SGLang).
    #[arg(
        long,
        default_value = "vllm",
        value_name = "ENGINE",
        help_heading = "Deploy"
    )]
    engine: String,
    /// Container image of the Dynamo and llm-d pods [a placeholder to replace].
    #[arg(long, value_name = "IMAGE", help_heading = "Deploy")]
    image: Option<String>,
    /// Kubernetes namespace of the DynamoGraphDeployment.
    #[arg(
        long,
        default_value = "default",
        value_name = "NS",
        help_heading = "Deploy"
    )]
    namespace: String,
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
    /// The `--emit` options of these flags.
    fn emit_options(&self) -> disagg_api::deploy::EmitOptions {
        disagg_api::deploy::EmitOptions {
            formats: self.emit.clone(),
            dir: self.emit_dir.clone(),
            top: self.emit_top,
            engine: self.engine.clone(),
            image: self.image.clone(),
            namespace: self.namespace.clone(),
            gpus_per_node: self.gpus_per_node,
        }
    }

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
            gpus: self.gpus,
            gpus_per_node: self.gpus_per_node,
            colocated: self.colocated.clone(),
            objective: self.objective.clone(),
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
    let emit = a.emit_options().check()?;
    if let Some(e) = &emit {
        disagg_api::deploy::prepare_dir(&e.dir)?;
    }
    let base = a.sc.scenario()?;
    let search = match disagg_api::plan::prepare(base.clone(), cat, &o, warnings)? {
        Plan::MaxRate(m) => {
            let plan = match &emit {
                Some(e) => Some((
                    e,
                    disagg_api::deploy::max_rate_plan(e, &base, &m.json(), cat)?,
                )),
                None => None,
            };
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&m.json()).expect("json"));
            } else {
                out!("{}", m.text());
            }
            if let Some((e, p)) = plan {
                emit_report(&disagg_api::deploy::write_files(e, &[p])?);
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
        plots::pareto(dir, &pareto_chart(&t, &a.latency), &mut written)?;
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
    let plans = match &emit {
        Some(e) => Some((e, disagg_api::deploy::target_plans(e, &search, &t, cat)?)),
        None => None,
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&t.json()).expect("json"));
    } else {
        out!("{}", t.text());
    }
    if let Some((e, plans)) = plans {
        if plans.len() < e.top {
            eprintln!(
                "note: --emit-top {}: only {} plan(s) meet the SLOs; writing those",
                e.top,
                plans.len()
            );
        }
        emit_report(&disagg_api::deploy::write_files(e, &plans)?);
    }
    Ok(())
}

/// The Pareto chart of a plan: cost against p99 latency (the ranked candidates, numbered in rank
/// order, and the cost/latency frontier), or for `--objective pareto` output tokens/s per GPU
/// against tokens/s per user (every load-curve point of every feasible candidate by tokens/s per
/// GPU, and the frontier over them). Points are labelled `2P+3D h100` (`@R req/s`) in the key.
fn pareto_chart(t: &Targets, latency: &str) -> plots::ParetoChart {
    let label = |c: &disagg_api::plan::Candidate| short_label(c);
    if t.objective == Objective::Pareto {
        // Every point of every feasible candidate's load curve (`docs/objectives.md#ladder`),
        // by tokens/s per GPU, labelled with its candidate and rate; the frontier drawn.
        let mut pts = disagg_api::plan::objective::curve_points(&t.cands);
        pts.sort_by(|x, y| {
            y.tokens_per_s_per_gpu
                .total_cmp(&x.tokens_per_s_per_gpu)
                .then(x.candidate.cmp(&y.candidate))
        });
        let pt = |p: &disagg_api::plan::objective::CurvePoint| {
            let c = &t.cands[p.candidate];
            (
                p.tokens_per_s_per_user,
                p.tokens_per_s_per_gpu,
                match p.rate_rps {
                    Some(r) => format!("{} @{} req/s", label(c), disagg_api::format::fixed(r, 2)),
                    None => label(c),
                },
            )
        };
        let front = match &t.front {
            Some(f) => f.iter().map(pt).collect(),
            None => Vec::new(),
        };
        return plots::ParetoChart {
            title: "Throughput per GPU against interactivity of the configurations that meet \
                    the SLOs, along their load"
                .into(),
            x_title: "Tokens/s per user (1 / mean TPOT)".into(),
            y_title: "Output tokens/s per GPU".into(),
            points: pts.iter().map(pt).collect(),
            front,
        };
    }
    let pt = |c: &disagg_api::plan::Candidate| {
        (
            c.usd_per_hour.unwrap_or(f64::NAN),
            1e3 * c.latency_p99_s.unwrap_or(f64::NAN),
            label(c),
        )
    };
    let mut front: Vec<(f64, f64, String)> = t.cands.iter().filter(|c| c.pareto).map(pt).collect();
    front.sort_by(|x, y| x.0.total_cmp(&y.0));
    plots::ParetoChart {
        title: "Cost against latency of the configurations that meet the SLOs".into(),
        x_title: "Cost (US$ per hour)".into(),
        y_title: format!("{latency} p99 (ms)"),
        points: t.ranked().iter().map(|c| pt(c)).collect(),
        front,
    }
}

/// Names the files `--emit` wrote, on standard error.
fn emit_report(files: &[PathBuf]) {
    for f in files {
        eprintln!("wrote {}", f.display());
    }
}
