//! The `disagg` command line as a library: the binary (`src/main.rs`) is one call to [`main`], and
//! other front ends (the Python package) run a command in-process with [`capture`].
//!
//! A thin front end: parse flags, resolve them into validated configurations, call the library,
//! render. Bad input is one line on stderr and exit code 2.

pub mod bench_cmd;
pub mod calibrate_cmd;
pub mod calibrate_plots;

pub mod custom;
#[cfg(test)]
mod fuzz_tests;
pub mod handoff_cmd;
pub mod list_cmd;
pub mod plan_cmd;
pub mod plots;
pub mod progress;
pub mod run_cmd;
pub mod scenario_flags;
pub mod sweep_cmd;
pub mod trace_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
pub use disagg_api::{format, memory, output, report};
pub use disagg_api::{CmdResult, UsageError};

#[derive(Parser, Debug)]
#[command(
    name = "disagg",
    version,
    about = "What it costs to move the KV cache in prefill/decode-disaggregated LLM serving",
    long_about = "disagg computes the KV-cache hand-off between prefill and decode pools (size, \
transfer time, streaming, compression, link energy) with a cost model bit-exact with the \
reference simulator Disaggregated_Inference_Sim."
)]
struct Cli {
    /// Extra models, devices and links from a TOML file ([models.KEY], [devices.KEY], [links.KEY]).
    #[arg(long, global = true, value_name = "FILE")]
    catalogue: Option<std::path::PathBuf>,
    /// The largest input file read, for every input flag (bytes, or with a KiB/MiB/GiB suffix;
    /// default: 1GiB for traces, workload files and merge inputs, 16MiB for TOML files).
    #[arg(long, global = true, value_name = "SIZE", value_parser = disagg_trace::input::parse_byte_size)]
    max_input_bytes: Option<u64>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The KV hand-off of one prompt: size, wire bytes, transfer, exposed time, link saturation.
    Handoff(Box<handoff_cmd::HandoffArgs>),
    /// Simulate one configuration (the reference simulator's run, bit for bit).
    Run(Box<run_cmd::RunArgs>),
    /// Colocated against disaggregated on the same request stream (optionally over rates).
    Compare(Box<run_cmd::CompareArgs>),
    /// Run the cartesian product of options in parallel (CSV / JSON Lines, shards, merge).
    Sweep(Box<sweep_cmd::SweepArgs>),
    /// Capacity planning: the highest rate that meets the SLOs, or the cheapest cluster for a rate.
    Plan(Box<plan_cmd::PlanArgs>),
    /// The named scenarios of the chapter.
    Presets(run_cmd::PresetsArgs),
    /// List the catalogue: models, devices, links, compression formats.
    List(list_cmd::ListArgs),
    /// Statistics of a request trace: rows, duration, rates, token percentiles.
    TraceStats(trace_cmd::TraceStatsArgs),
    /// Serve the interactive page and the JSON API on this machine.
    #[cfg(feature = "web")]
    Serve(ServeArgs),
    /// Measure the simulator: events/s, requests/s, peak memory (whole process per case).
    Bench(bench_cmd::BenchArgs),
    /// Fit the roofline to measured GPU step times (a catalogue overlay), or score a fit.
    Calibrate(Box<calibrate_cmd::CalibrateArgs>),
}

impl Command {
    /// The files the command reads and writes, by flag (the global `--catalogue` aside).
    fn files(&self) -> output::Files {
        match self {
            Command::Run(a) => a.files(),
            Command::Sweep(a) => a.files(),
            Command::Calibrate(a) => a.files(),
            // Their only output is a `--plot` directory, or standard output.
            Command::Handoff(_)
            | Command::Compare(_)
            | Command::Plan(_)
            | Command::Presets(_)
            | Command::List(_)
            | Command::TraceStats(_)
            | Command::Bench(_) => output::Files::default(),
            #[cfg(feature = "web")]
            Command::Serve(_) => output::Files::default(),
        }
    }
}

/// `disagg serve` options.
#[cfg(feature = "web")]
#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Address to listen on (127.0.0.1: this machine only; any other address prints a warning:
    /// the API has no authentication).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port (0 picks a free one and prints it).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Simulations that run at once (0: one per core); others wait in a bounded queue.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// An origin (scheme://host[:port]) besides the server's own whose pages may call the API;
    /// repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// Memory, MiB, that the simulations running at once may hold together (each is estimated
    /// before it starts: one over the budget gets 413, one that finds it taken 503). 0: half of
    /// the memory available at start.
    #[arg(long = "memory-budget", value_name = "MIB", default_value_t = 0)]
    memory_budget: u64,
}

/// The `disagg` binary: parses the process's arguments, runs the command, returns its exit code.
pub fn main() -> ExitCode {
    output::clean_up_on_signals();
    main_from(std::env::args_os())
}

/// The one-line message of a clap error (its first line, with the possible values or a tip).
fn clap_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("error: bad arguments");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    for extra in lines {
        if extra.starts_with("[possible values") || extra.starts_with("tip:") {
            line.push_str("; ");
            line.push_str(extra.trim_start_matches('[').trim_end_matches(']'));
        }
    }
    one_line(&line)
}

fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    custom::with_ranges(<Cli as clap::CommandFactory>::command())
        .try_get_matches_from(args)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m))
}

/// Runs a parsed command line.
fn execute(cli: Cli) -> CmdResult {
    disagg_trace::input::set_max_input_bytes(cli.max_input_bytes);
    let result = (|| -> CmdResult {
        // No output may replace an input or another output: refused before anything runs.
        let mut files = cli.command.files();
        files.input("--catalogue", cli.catalogue.as_deref());
        files.check()?;
        let mut warnings = report::Warnings::default();
        let cat = disagg_api::custom::load_catalogue(cli.catalogue.as_deref(), &mut warnings)?;
        match cli.command {
            Command::Calibrate(a) => calibrate_cmd::run(*a, &cat),
            Command::Handoff(a) => handoff_cmd::run(*a, cat),
            Command::List(a) => list_cmd::run(a, &cat),
            Command::Run(a) => run_cmd::run(*a, &cat, &mut warnings),
            Command::Compare(a) => run_cmd::compare(*a, &cat, &mut warnings),
            Command::Presets(a) => run_cmd::presets(a),
            Command::Sweep(a) => sweep_cmd::run(*a, &cat, &mut warnings),
            Command::Plan(a) => plan_cmd::run(*a, &cat, &mut warnings),
            Command::Bench(a) => bench_cmd::run(a, &cat),
            Command::TraceStats(a) => trace_cmd::run(a),
            #[cfg(feature = "web")]
            Command::Serve(a) => disagg_web::serve(disagg_web::ServeOptions {
                host: a.host,
                port: a.port,
                threads: a.threads,
                allow_origins: a.allow_origin,
                catalogue: cat,
                limits: disagg_web::Limits {
                    memory_budget_bytes: match a.memory_budget {
                        0 => disagg_web::default_memory_budget(),
                        mib => mib.saturating_mul(1 << 20),
                    },
                    ..Default::default()
                },
                ..Default::default()
            })
            .map_err(UsageError),
        }
    })();
    // Buffered output is flushed here so that a failed write is reported like any other.
    result.and_then(|()| output::flush_stdout())
}

/// Runs `disagg ARGS...` (the first item is the program name) and returns its exit code.
pub fn main_from<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    if args.len() <= 1 {
        // `disagg` alone asks what there is: the overview, on stdout, and success.
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out
            .write_all(overview().as_bytes())
            .and_then(|()| out.flush());
        return ExitCode::SUCCESS;
    }
    let cli = match parse(args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
                || matches!(
                    e.kind(),
                    ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                )
            {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
            // One line: clap's first line names the flag and the value.
            eprintln!("error: {}", clap_line(&e));
            return ExitCode::from(2);
        }
    };
    match execute(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`disagg list | head -1`): the reader has what it wanted.
        Err(_) if output::stdout_closed() => {
            plots::remove_created_dirs();
            ExitCode::SUCCESS
        }
        Err(UsageError(msg)) => {
            plots::remove_created_dirs();
            eprintln!("error: {}", one_line(&msg));
            ExitCode::from(2)
        }
    }
}

/// What `disagg` with no arguments prints: one line about it, the usage, every command with its
/// one-line summary, and where the options are (the global options are in `disagg --help`).
pub fn overview() -> String {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    cmd.build();
    let subs: Vec<(String, String)> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| {
            let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
            (c.get_name().to_string(), about)
        })
        .collect();
    let width = subs.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut s = String::new();
    if let Some(about) = cmd.get_about() {
        s.push_str(&format!("{about}\n\n"));
    }
    s.push_str(&format!("{}\n\nCommands:\n", cmd.render_usage()));
    for (name, about) in &subs {
        s.push_str(&format!("  {name:<width$}  {about}\n"));
    }
    s.push_str("\nRun `disagg COMMAND --help` for a command's options, `disagg --help` for all.\n");
    s
}

/// One line, whatever the message quotes (a value may hold line breaks or terminal control
/// sequences): [`disagg_model::escape`].
fn one_line(msg: &str) -> String {
    disagg_model::escape(msg).into_owned()
}

/// The long help of subcommand `name` (`run`, `plan`, ...), as `disagg NAME --help` prints it.
pub fn help(name: &str) -> Option<String> {
    let mut cmd = custom::with_ranges(<Cli as clap::CommandFactory>::command());
    cmd.build();
    let sub = cmd.find_subcommand_mut(name)?;
    Some(sub.render_long_help().to_string())
}

/// Runs `disagg ARGS...` in this process (`args` without the program name) with its standard
/// output captured: `Ok(stdout)`, or `Err(message)` with the one line the binary would print
/// after `error: ` (and exit 2). Help and version requests are errors here. Commands that write
/// to standard output through a flag's `-` write to the process's real standard output.
pub fn capture<S: AsRef<str>>(args: &[S]) -> Result<String, String> {
    let argv = std::iter::once("disagg").chain(args.iter().map(AsRef::as_ref));
    let cli = match parse(argv) {
        Ok(cli) => cli,
        // `--help` and `--version` are what was asked for, not an error (the binary prints
        // them and exits 0).
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            return Ok(e.render().to_string())
        }
        Err(e) => return Err(clap_line(&e)),
    };
    let (result, text) = output::capturing(|| execute(cli));
    match result {
        Ok(()) => Ok(text),
        Err(UsageError(msg)) => {
            plots::remove_created_dirs();
            Err(one_line(&msg))
        }
    }
}
