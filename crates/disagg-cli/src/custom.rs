//! The numeric range checks every command's flags get ([`with_ranges`]); the catalogue with a
//! `--catalogue FILE.toml` and TOML reading are `disagg_api::custom`'s.

pub use disagg_api::custom::{parse_toml, read_toml};

/// `cmd` with every numeric flag parsed and checked against its range in
/// [`disagg_sim::ranges::RANGES`] (so errors quote the value as typed and name the valid range),
/// and accepting values that start with `-` (`--think -1` is a bad value, not an unknown flag).
pub fn with_ranges(cmd: clap::Command) -> clap::Command {
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    subs.into_iter().fold(cmd, |cmd, name| {
        let top = name.clone();
        cmd.mut_subcommand(&name, |sub| ranged_args(sub, &top))
    })
}

fn ranged_args(mut cmd: clap::Command, top: &str) -> clap::Command {
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for s in subs {
        cmd = cmd.mut_subcommand(&s, |c| ranged_args(c, top));
    }
    // One pass over the arguments in place (`mut_arg` per argument removes and re-inserts it:
    // quadratic in the number of flags, most of a short run's start-up).
    cmd.mut_args(|a| {
        let Some(flag) = a.get_long().map(|l| format!("--{l}")) else {
            return a;
        };
        let Some(r) = disagg_sim::ranges::for_command(top, &flag) else {
            return a;
        };
        let Some(p) = range_parser(r, a.get_value_parser()) else {
            // A list of numbers (`--prefill-counts`, `--price KEY=USD`): checked by its
            // command, against the same table.
            return a.allow_hyphen_values(true);
        };
        let multi = a.get_num_args().is_some_and(|n| n.max_values() > 1);
        let a = a.value_parser(p);
        if multi {
            a.allow_negative_numbers(true)
        } else {
            a.allow_hyphen_values(true)
        }
    })
}

fn range_parser(
    r: &'static disagg_sim::ranges::NumRange,
    p: &clap::builder::ValueParser,
) -> Option<clap::builder::ValueParser> {
    use clap::builder::ValueParser;
    use disagg_sim::ranges::Num;
    use std::any::TypeId;
    let int = move |s: &str| -> Result<u64, String> {
        match r.parse(s)? {
            Num::Int(i) => Ok(i),
            Num::Float(_) => Err(format!("must be {}", r.expected())),
        }
    };
    let too_big = move |_| format!("must be {}", r.expected());
    let t = p.type_id();
    Some(if t == TypeId::of::<f64>() {
        ValueParser::new(move |s: &str| -> Result<f64, String> {
            Ok(match r.parse(s)? {
                Num::Float(x) => x,
                Num::Int(i) => i as f64,
            })
        })
    } else if t == TypeId::of::<u64>() {
        ValueParser::new(int)
    } else if t == TypeId::of::<u32>() {
        ValueParser::new(move |s: &str| u32::try_from(int(s)?).map_err(too_big))
    } else if t == TypeId::of::<u16>() {
        ValueParser::new(move |s: &str| u16::try_from(int(s)?).map_err(too_big))
    } else if t == TypeId::of::<usize>() {
        ValueParser::new(move |s: &str| usize::try_from(int(s)?).map_err(too_big))
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use disagg_sim::ranges::{for_command, RANGES};

    /// Whether a clap value type is one of the numbers [`with_ranges`] checks.
    fn is_numeric(p: &clap::builder::ValueParser) -> bool {
        use std::any::TypeId;
        let t = p.type_id();
        [
            TypeId::of::<f64>(),
            TypeId::of::<u64>(),
            TypeId::of::<u32>(),
            TypeId::of::<u16>(),
            TypeId::of::<usize>(),
        ]
        .iter()
        .any(|id| t == *id)
    }

    /// (top-level command, flag, whether clap parses it as a number) for every argument of every
    /// command.
    fn all_args() -> Vec<(String, String, bool)> {
        fn walk(cmd: &clap::Command, top: &str, out: &mut Vec<(String, String, bool)>) {
            for a in cmd.get_arguments() {
                if let Some(l) = a.get_long() {
                    out.push((
                        top.to_string(),
                        format!("--{l}"),
                        is_numeric(a.get_value_parser()),
                    ));
                }
            }
            for s in cmd.get_subcommands() {
                walk(s, top, out);
            }
        }
        let cli = crate::Cli::command();
        let mut out = Vec::new();
        for s in cli.get_subcommands() {
            walk(s, s.get_name(), &mut out);
        }
        out
    }

    #[test]
    fn every_numeric_flag_has_a_range() {
        let args = all_args();
        assert!(args.iter().filter(|a| a.2).count() > 50, "walked: {args:?}");
        for (cmd, flag, numeric) in &args {
            if *numeric {
                assert!(
                    for_command(cmd, flag).is_some(),
                    "{cmd} {flag} is numeric but has no entry in disagg_sim::ranges::RANGES"
                );
            }
        }
        // And every entry names a flag its commands take.
        for r in RANGES {
            for c in r.commands {
                assert!(
                    args.iter().any(|(cmd, flag, _)| cmd == c && flag == r.flag),
                    "RANGES: {c} has no flag {}",
                    r.flag
                );
            }
        }
    }

    #[test]
    fn ranged_flags_quote_the_value_and_the_range() {
        let cmd = with_ranges(crate::Cli::command());
        let e = cmd
            .clone()
            .try_get_matches_from(["disagg", "run", "--think", "1e308"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'1e308'") && e.contains("--think") && e.contains("[0, 1e7] s"),
            "{e}"
        );
        let e = cmd
            .clone()
            .try_get_matches_from(["disagg", "run", "--seed", "-1"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'-1'") && e.contains("--seed"), "{e}");
        let m = cmd
            .try_get_matches_from(["disagg", "run", "--rate", "2.5", "--requests", "9"])
            .unwrap();
        let run = m.subcommand_matches("run").unwrap();
        assert_eq!(run.get_one::<f64>("rate"), Some(&2.5));
        assert_eq!(run.get_one::<u64>("requests"), Some(&9));
    }

    #[test]
    fn every_default_value_is_in_range() {
        // clap runs the ranged parsers over the defaults, so these fail if one is out of range.
        let cmd = with_ranges(crate::Cli::command());
        for args in [
            &["disagg", "handoff"][..],
            &["disagg", "plan", "--max-rate"],
            &["disagg", "bench"],
            &["disagg", "run"],
            &["disagg", "sweep"],
            #[cfg(feature = "web")]
            &["disagg", "serve"],
        ] {
            if let Err(e) = cmd.clone().try_get_matches_from(args) {
                panic!("{args:?}: {e}");
            }
        }
    }
}
