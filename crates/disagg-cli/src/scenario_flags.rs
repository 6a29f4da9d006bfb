//! The options of one simulation, shared by `run`, `compare`, `sweep` and `plan`: the reference
//! CLI's flags, a scenario file and named presets, layered as
//! defaults < `--preset` < `--config` file < flags.
//!
//! The flags are not declared here: they are generated, one clap argument per row of
//! [`disagg_sim::options::OPTIONS`] (flag, help text, heading, value name), and read back with
//! [`Scenario::set`], so the CLI, `Scenario::from_flags`, `sweep --vary` and scenario files cannot
//! drift apart. [`OptionValues`] does this for any subset of the rows: `trace-stats` takes the
//! trace-reading rows, `handoff` the custom-hardware rows.

use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, ArgMatches, Command};
use disagg_model::Catalogue;
use disagg_sim::options::{Kind, Opt, OPTIONS};
use disagg_sim::scenario::{Mode, Scenario};

use crate::UsageError;

/// The clap argument of one option row (its id is the scenario key). Numbers are parsed as their
/// type so that `custom::with_ranges` checks them against their range.
pub fn arg(o: &'static Opt) -> Arg {
    let a = Arg::new(o.key)
        .long(&o.flag[2..])
        .help(o.help_text())
        .help_heading(o.heading)
        .required(false);
    let value = |a: Arg| a.value_name(o.value_name).action(ArgAction::Set);
    match o.kind {
        Kind::Switch => a.action(ArgAction::SetTrue),
        Kind::U32 => value(a)
            .value_parser(clap::value_parser!(u32))
            .allow_negative_numbers(true),
        Kind::U64 => value(a)
            .value_parser(clap::value_parser!(u64))
            .allow_negative_numbers(true),
        Kind::F64 => value(a)
            .value_parser(clap::value_parser!(f64))
            .allow_negative_numbers(true),
        Kind::Name | Kind::Choice(_) => value(a).value_parser(clap::value_parser!(String)),
    }
}

/// The option values given on the command line for some rows of the table, as typed (numbers
/// were already checked against their ranges by clap).
#[derive(Debug, Clone, Default)]
pub struct OptionValues {
    given: Vec<(&'static Opt, String)>,
}

impl OptionValues {
    /// `cmd` with one argument per row.
    pub fn augment(cmd: Command, rows: impl Iterator<Item = &'static Opt>) -> Command {
        rows.fold(cmd, |cmd, o| cmd.arg(arg(o)))
    }

    /// The values of `rows` found in `m`.
    pub fn read(m: &ArgMatches, rows: impl Iterator<Item = &'static Opt>) -> Self {
        let given = rows
            .filter_map(|o| {
                let v = match o.kind {
                    Kind::Switch => m.get_flag(o.key).then(|| "true".to_string()),
                    _ => m
                        .get_raw(o.key)
                        .and_then(|mut v| v.next())
                        .map(|v| v.to_string_lossy().into_owned()),
                };
                v.map(|v| (o, v))
            })
            .collect();
        OptionValues { given }
    }

    /// Sets `key` as if its flag were given `raw` (for tests).
    #[cfg(test)]
    pub fn push(&mut self, key: &str, raw: &str) {
        let o = disagg_sim::options::for_key(key).expect("a scenario key");
        self.given.retain(|(g, _)| g.key != key);
        self.given.push((o, raw.to_string()));
    }

    /// The text given to option `key`'s flag, if it was given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.given
            .iter()
            .find(|(o, _)| o.key == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value given to option `key`'s flag as messages show it: numbers in their shortest form
    /// (`--rate 4.0` shows `4`), anything else as typed.
    pub fn shown(&self, key: &str) -> Option<String> {
        let (o, raw) = self.given.iter().find(|(o, _)| o.key == key)?;
        let t = raw.trim();
        Some(match o.kind {
            Kind::F64 => t.parse::<f64>().map_or(raw.clone(), |x| x.to_string()),
            Kind::U32 | Kind::U64 => t.parse::<u64>().map_or(raw.clone(), |x| x.to_string()),
            _ => raw.clone(),
        })
    }

    /// Lays flags `args` (`--model x --prefix-caching ...`, as `Deployment::to_args` gives them)
    /// under the values given: a flag also given on the command line keeps the command line's
    /// value. Returns (flag, the laid value, the command line's) of each flag replaced.
    pub fn lay_under(
        &mut self,
        args: &[String],
    ) -> Result<Vec<(&'static str, String, String)>, UsageError> {
        let (mut under, mut replaced) = (Vec::new(), Vec::new());
        let mut words = args.iter();
        while let Some(f) = words.next() {
            let o = disagg_sim::options::for_flag(f)
                .ok_or_else(|| UsageError(format!("{f}: unknown option")))?;
            let v = match o.kind {
                Kind::Switch => "true".to_string(),
                _ => words
                    .next()
                    .cloned()
                    .ok_or_else(|| UsageError(format!("{f}: expects a value")))?,
            };
            match self.get(o.key) {
                Some(given) if given != v => replaced.push((o.flag, v, given.to_string())),
                Some(_) => {}
                None => under.push((o, v)),
            }
        }
        under.append(&mut self.given);
        self.given = under;
        Ok(replaced)
    }

    /// `s` with every given value set (errors name the flag).
    pub fn apply(&self, s: &mut Scenario) -> Result<(), UsageError> {
        for (o, raw) in &self.given {
            s.set(o.key, raw)?;
        }
        Ok(())
    }
}

/// Options of one simulation: `--preset`, `--config`, and one flag per scenario option. Every flag
/// left out keeps the preset's, the file's, or the reference's default (shown in brackets).
#[derive(Debug, Clone, Default)]
pub struct ScenarioFlags {
    /// `--preset`: start from a named scenario.
    pub preset: Option<String>,
    /// `--config`: a TOML scenario file.
    pub config: Option<PathBuf>,
    /// The scenario options given.
    pub values: OptionValues,
}

impl clap::Args for ScenarioFlags {
    fn augment_args(cmd: Command) -> Command {
        let cmd = cmd
            .arg(
                Arg::new("preset")
                    .long("preset")
                    .value_name("NAME")
                    .help("Start from a named scenario (`disagg presets` lists them)")
                    .help_heading("Scenario")
                    .action(ArgAction::Set)
                    .value_parser(clap::value_parser!(String)),
            )
            .arg(
                Arg::new("config")
                    .long("config")
                    .value_name("FILE.toml")
                    .help(
                        "Read options from a TOML scenario file (keys: the flags' names with '_' \
                         for '-')",
                    )
                    .help_heading("Scenario")
                    .action(ArgAction::Set)
                    .value_parser(clap::value_parser!(PathBuf)),
            );
        // The arguments a command declares after these (`--json`, `--requests-out`, ...) are its
        // own: listed under the plain "Options" heading, not under the last scenario heading.
        OptionValues::augment(cmd, OPTIONS.iter()).next_help_heading(None::<&str>)
    }
    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for ScenarioFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(ScenarioFlags {
            preset: m.get_one::<String>("preset").cloned(),
            config: m.get_one::<PathBuf>("config").cloned(),
            values: OptionValues::read(m, OPTIONS.iter()),
        })
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// The trace-reading flags alone (`disagg trace-stats`): the same rows as in [`ScenarioFlags`].
#[derive(Debug, Clone, Default)]
pub struct TraceReadFlags {
    values: OptionValues,
}

impl clap::Args for TraceReadFlags {
    fn augment_args(cmd: Command) -> Command {
        OptionValues::augment(cmd, disagg_sim::options::trace_reading())
    }
    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for TraceReadFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(TraceReadFlags {
            values: OptionValues::read(m, disagg_sim::options::trace_reading()),
        })
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl TraceReadFlags {
    /// The reader options (as a run reads its `--trace-file`, keeping Mooncake's prefix hashes),
    /// with prompts clipped to `max_context` tokens if given.
    pub fn options(
        &self,
        max_context: Option<u64>,
    ) -> Result<disagg_trace::ReadOptions, UsageError> {
        let mut s = Scenario::default();
        self.values.apply(&mut s)?;
        Ok(disagg_trace::ReadOptions {
            keep_hash_ids: true,
            ..s.trace_read_options(max_context)
        })
    }
}

/// The custom-hardware flags alone (`disagg handoff`): `--layers` ... `--device-idle-w`, the same
/// rows as in [`ScenarioFlags`], laid over presets by the one overlay `Scenario::build` uses.
#[derive(Debug, Clone, Default)]
pub struct HardwareFlags {
    values: OptionValues,
}

impl clap::Args for HardwareFlags {
    fn augment_args(cmd: Command) -> Command {
        OptionValues::augment(cmd, disagg_sim::options::hardware()).next_help_heading(None::<&str>)
    }
    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for HardwareFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(HardwareFlags {
            values: OptionValues::read(m, disagg_sim::options::hardware()),
        })
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// A lookup or overlay error of the preset given to `flag`: an unknown name is prefixed with the
/// flag; an invalid custom value names itself.
fn overlay_error(flag: &str, e: disagg_model::Error) -> UsageError {
    match e {
        e @ disagg_model::Error::UnknownName { .. } => UsageError(format!("{flag}: {e}")),
        other => UsageError(other.to_string()),
    }
}

impl HardwareFlags {
    /// The flags as scenario keys over the defaults.
    fn scenario(&self) -> Result<Scenario, UsageError> {
        let mut s = Scenario::default();
        self.values.apply(&mut s)?;
        Ok(s)
    }

    /// The model `key` from `cat`, with any custom-shape flags applied.
    pub fn model(&self, key: &str, cat: &Catalogue) -> Result<disagg_model::ModelSpec, UsageError> {
        use disagg_model::custom::Overlay;
        let s = Scenario {
            model: key.to_string(),
            ..self.scenario()?
        };
        s.custom_model()
            .overlay(cat)
            .map_err(|e| overlay_error("--model", e))
    }

    /// The link `key` from `cat`, with any custom-link flags applied.
    pub fn link(&self, key: &str, cat: &Catalogue) -> Result<disagg_model::Link, UsageError> {
        use disagg_model::custom::Overlay;
        let s = Scenario {
            link: key.to_string(),
            ..self.scenario()?
        };
        s.custom_link()
            .overlay(cat)
            .map_err(|e| overlay_error("--link", e))
    }

    /// The device `key` (given to `flag`) from `cat`, with any custom-device flags applied.
    pub fn device(
        &self,
        key: &str,
        flag: &str,
        cat: &Catalogue,
    ) -> Result<disagg_model::Device, UsageError> {
        use disagg_model::custom::Overlay;
        self.scenario()?
            .custom_device(key)
            .overlay(cat)
            .map_err(|e| overlay_error(flag, e))
    }
}

/// Reads a scenario file (`--config`) on top of `base`: keys are `Scenario`'s fields, plus
/// `preset`.
pub fn overlay_file(base: Scenario, path: &Path, cli_preset: bool) -> Result<Scenario, UsageError> {
    let table: toml::Table = crate::custom::read_toml("--config", path)?;
    overlay_table(base, table, &path.display().to_string(), cli_preset)
}

pub use disagg_api::sweep::overlay_table;

impl ScenarioFlags {
    /// The layered scenario (not yet validated: `Scenario::build` does that).
    pub fn scenario(&self) -> Result<Scenario, UsageError> {
        let mut s = match &self.preset {
            Some(name) => {
                disagg_sim::presets::find(name)
                    .map_err(|e| UsageError(format!("--preset: {e}")))?
                    .scenario
            }
            None => Scenario::default(),
        };
        if let Some(path) = &self.config {
            s = overlay_file(s, path, self.preset.is_some())?;
        }
        self.values.apply(&mut s)?;
        if s.trace_file.is_some() {
            self.check_trace_ignores("--trace-file")?;
        }
        self.check_ignored(&s)?;
        Ok(s)
    }

    /// Flags a replayed trace (`--trace-file`, or `run --workload-file`) would silently ignore are
    /// an error: the trace brings its own arrivals, count and lengths.
    pub fn check_trace_ignores(&self, source: &str) -> Result<(), UsageError> {
        let mut given = self.workload_flags();
        given.push(("--seed", self.values.shown("seed")));
        if let Some((flag, v)) = given.iter().find(|(_, v)| v.is_some()) {
            return Err(UsageError(format!(
                "{flag} {}: a replayed trace ({source}) brings its own arrivals, count and \
                 lengths (no random draws), so {flag} would be ignored; drop one of them",
                v.as_deref().unwrap_or_default()
            )));
        }
        Ok(())
    }

    /// The generator's flags that were given: (flag, value as given).
    fn workload_flags(&self) -> Vec<(&'static str, Option<String>)> {
        [
            "rate",
            "requests",
            "prompt",
            "prompt_cv",
            "output",
            "output_cv",
            "prompt_min",
            "prompt_max",
            "output_min",
            "output_max",
            "turns",
            "think",
            "system_prompts",
            "system_len",
            "prefix_share",
        ]
        .into_iter()
        .map(|k| (flag_of(k), self.values.shown(k)))
        .collect()
    }

    /// Flags the layered scenario would silently ignore are an error: lengths and sessions
    /// beside a named workload, KV-link flags in colocated mode. (A sweep that varies `mode`
    /// keeps its link flags: only the scenario's own mode is checked here.)
    fn check_ignored(&self, s: &Scenario) -> Result<(), UsageError> {
        if let Some(w) = &s.workload {
            // --rate and --requests apply to a named workload; its lengths and sessions replace
            // the rest.
            if let Some((flag, v)) = self.workload_flags()[2..].iter().find(|(_, v)| v.is_some()) {
                return Err(UsageError(format!(
                    "{flag} {}: the named workload '{w}' sets the lengths and sessions, so {flag} \
                     would be ignored; drop one of them",
                    v.as_deref().unwrap_or_default()
                )));
            }
        }
        if s.mode == Mode::Colocated {
            let given = [
                "link",
                "link_channels",
                "link_bandwidth_gb_s",
                "link_latency_us",
                "link_pj_per_bit",
                "kv_compress_at",
            ]
            .map(|k| (flag_of(k), self.values.shown(k)));
            if let Some((flag, v)) = given.iter().find(|(_, v)| v.is_some()) {
                return Err(UsageError(format!(
                    "{flag} {}: colocated mode has no KV link, so {flag} would be ignored; \
                     drop it or use --mode disagg",
                    v.as_deref().unwrap_or_default()
                )));
            }
        }
        Ok(())
    }
}

/// The flag of scenario key `key`.
fn flag_of(key: &str) -> &'static str {
    disagg_sim::options::for_key(key)
        .expect("a scenario key")
        .flag
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches};
    use disagg_sim::ranges::Num;

    /// `disagg run ARGS` parsed as `main` parses it: the scenario flags.
    fn run_flags(args: &[&str]) -> Result<ScenarioFlags, String> {
        let argv = ["disagg", "run"].iter().chain(args).copied();
        let m = crate::custom::with_ranges(crate::Cli::command())
            .try_get_matches_from(argv)
            .map_err(|e| e.to_string())?;
        let cli = crate::Cli::from_arg_matches(&m).map_err(|e| e.to_string())?;
        match cli.command {
            crate::Command::Run(a) => Ok(a.sc),
            other => panic!("{other:?}"),
        }
    }

    /// A valid value of `o` that is not its default (a number inside its range).
    fn sample(o: &Opt) -> Option<String> {
        let in_range = |x: f64| o.range().is_none_or(|r| r.contains(Num::Float(x)));
        match o.kind {
            Kind::Switch => None,
            Kind::Name => Some("x-name".into()),
            Kind::U32 | Kind::U64 => Some("7".into()),
            Kind::F64 if in_range(1.5) => Some("1.5".into()),
            Kind::F64 => Some("0.5".into()),
            Kind::Choice(names) => Some(names.last().expect("names").to_string()),
        }
    }

    #[test]
    fn every_option_reads_the_same_from_the_cli_and_from_flags() {
        for o in OPTIONS {
            let mut args = vec![o.flag.to_string()];
            args.extend(sample(o));
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let cli = run_flags(&argv)
                .and_then(|f| f.scenario().map_err(|e| e.0))
                .unwrap_or_else(|e| panic!("{args:?}: {e}"));
            let lib = Scenario::from_flags(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(cli, lib, "{args:?}");
            assert_ne!(cli, Scenario::default(), "{args:?} changed nothing");
        }
    }

    #[test]
    fn the_run_command_has_one_flag_per_option() {
        let cmd = crate::Cli::command();
        let run = cmd.find_subcommand("run").expect("run");
        for o in OPTIONS {
            let a = run
                .get_arguments()
                .find(|a| a.get_id() == o.key)
                .unwrap_or_else(|| panic!("run has no argument {}", o.key));
            assert_eq!(
                a.get_long().map(|l| format!("--{l}")).as_deref(),
                Some(o.flag)
            );
            assert_eq!(a.get_help_heading(), Some(o.heading), "{}", o.flag);
            assert_eq!(
                a.get_help().map(|h| h.to_string()),
                Some(o.help_text()),
                "{}",
                o.flag
            );
        }
    }

    #[test]
    fn values_show_numbers_in_their_shortest_form() {
        let f = run_flags(&["--rate", "2.50", "--seed", "007", "--model", "m"]).unwrap();
        assert_eq!(f.values.get("rate"), Some("2.50"));
        assert_eq!(f.values.shown("rate").as_deref(), Some("2.5"));
        assert_eq!(f.values.shown("seed").as_deref(), Some("7"));
        assert_eq!(f.values.shown("model").as_deref(), Some("m"));
        assert_eq!(f.values.shown("prompt"), None);
        let mut v = f.values.clone();
        v.push("rate", "3");
        assert_eq!(v.get("rate"), Some("3"));
    }

    #[test]
    fn a_scenario_file_names_the_flag_of_a_bad_name() {
        let table: toml::Table = toml::from_str("send = \"sideways\"").unwrap();
        let e = overlay_table(Scenario::default(), table, "s.toml", false).unwrap_err();
        assert_eq!(
            e.0,
            "s.toml: unknown --send 'sideways'; valid: whole, layerwise"
        );
        let table: toml::Table = toml::from_str("send = \"layer-wise\"").unwrap();
        let s = overlay_table(Scenario::default(), table, "s.toml", false).unwrap();
        assert_eq!(s.send, disagg_model::SendMode::Layerwise);
    }

    #[test]
    fn a_device_error_names_the_flag_that_chose_the_device() {
        let cat = Catalogue::builtin();
        let hw = HardwareFlags::default();
        for flag in ["--device", "--prefill-device", "--decode-device"] {
            let e = hw.device("nosuch", flag, &cat).unwrap_err().0;
            assert!(
                e.starts_with(&format!("{flag}: unknown device 'nosuch'")),
                "{e}"
            );
        }
        let e = hw.model("nosuch", &cat).unwrap_err().0;
        assert!(e.starts_with("--model: unknown model 'nosuch'"), "{e}");
        let e = hw.link("nosuch", &cat).unwrap_err().0;
        assert!(e.starts_with("--link: unknown link 'nosuch'"), "{e}");
    }

    #[test]
    fn hardware_flags_overlay_the_preset_as_a_scenario_does() {
        let cat = Catalogue::builtin();
        let m = crate::custom::with_ranges(crate::Cli::command())
            .try_get_matches_from([
                "disagg",
                "handoff",
                "--layers",
                "40",
                "--device-tdp-w",
                "500",
                "--link-latency-us",
                "3",
            ])
            .unwrap();
        let cli = crate::Cli::from_arg_matches(&m).unwrap();
        let crate::Command::Handoff(a) = cli.command else {
            panic!("handoff")
        };
        let hw = &a.hardware;
        let model = hw.model("llama3-8b", &cat).unwrap();
        assert_eq!(model.n_layers, 40);
        assert_eq!(model.name, "Llama-3-8B (custom shape)");
        let dev = hw.device("a100", "--prefill-device", &cat).unwrap();
        assert_eq!(dev.tdp_w, 500.0);
        let link = hw.link("eth-25g", &cat).unwrap();
        // µs to s: the catalogue's conversion, latency_us * 1e-6.
        assert_eq!(link.latency_s, 3.0 * 1e-6);
        // The scenario path gives the same entries.
        let s = Scenario::from_flags([
            "--model",
            "llama3-8b",
            "--layers",
            "40",
            "--device-tdp-w",
            "500",
            "--link",
            "eth-25g",
            "--link-latency-us",
            "3",
        ])
        .unwrap();
        use disagg_model::custom::Overlay;
        assert_eq!(s.custom_model().overlay(&cat).unwrap(), model);
        assert_eq!(s.custom_device("a100").overlay(&cat).unwrap(), dev);
        assert_eq!(s.custom_link().overlay(&cat).unwrap(), link);
    }
}
