//! A scenario as text: read from flags, echoed with the options that are quiet at their defaults
//! left out, and checked against the numeric ranges.

use disagg_model::Error;

use super::Scenario;

/// Removes from `v` (a scenario as JSON) the options that are quiet at their defaults (the
/// "quiet at default" column of [`crate::options::OPTIONS`]: the scheduling levers, the decode
/// batch cap, the generator's length bounds, the CED overrides, ...) where they hold their
/// defaults: a run that does not use them echoes what it echoed before they existed.
pub fn quiet_defaults(v: &mut serde_json::Value) {
    let d = serde_json::to_value(Scenario::default()).expect("scenario");
    if let Some(o) = v.as_object_mut() {
        // A key the default leaves out (`handoff_ranks`, `nics_per_instance`) is quiet when
        // absent or null.
        let null = serde_json::Value::Null;
        for k in crate::options::quiet_default_keys() {
            if o.get(k).unwrap_or(&null) == d.get(k).unwrap_or(&null) {
                o.shift_remove(k);
            }
        }
    }
}

impl Scenario {
    /// The scenario as outputs echo it: every key, but the quiet-at-default ones
    /// ([`quiet_defaults`]) only where they differ from their defaults.
    pub fn echo_value(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("scenario");
        quiet_defaults(&mut v);
        v
    }
    /// Checks every numeric option against its range in [`crate::ranges::RANGES`].
    pub fn check_ranges(&self) -> Result<(), Error> {
        for r in crate::ranges::RANGES {
            if let Some(v) = r.key.and_then(|k| self.numeric(k)) {
                r.check(v)?;
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// Parses flags (`--flag value`, `--flag=value`, and switches such as `--dvfs`, which take no
    /// value): every option of [`crate::options::OPTIONS`], each read by [`Scenario::set`], on top
    /// of the defaults. Unknown flags are an error.
    pub fn from_flags<I, S>(args: I) -> Result<Scenario, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut s = Scenario::default();
        let mut args = args.into_iter().map(|a| a.as_ref().to_string());
        while let Some(raw) = args.next() {
            if !raw.starts_with("--") {
                return Err(Error::invalid(raw, "expected an option starting with --"));
            }
            let (name, inline) = match raw.split_once('=') {
                Some((f, v)) => (f.to_string(), Some(v.to_string())),
                None => (raw.clone(), None),
            };
            let Some(opt) = crate::options::for_flag(&name) else {
                return Err(Error::invalid(name, "unknown option"));
            };
            let value = match (opt.kind, inline) {
                (crate::options::Kind::Switch, Some(_)) => {
                    return Err(Error::invalid(name, "takes no value"))
                }
                (crate::options::Kind::Switch, None) => "true".to_string(),
                (_, Some(v)) => v,
                (_, None) => args
                    .next()
                    .ok_or_else(|| Error::invalid(&name, "expects a value"))?,
            };
            s.set(opt.key, &value)?;
        }
        Ok(s)
    }
}

impl Scenario {
    /// The shortest flag list that reads back as this scenario: one flag per option that differs
    /// from its default, in the options table's order ([`crate::options::OPTIONS`]), so that
    /// `Scenario::from_flags(sc.to_args()) == sc`. A switch is its flag alone; a number is written
    /// as serde_json writes it (the shortest text that parses back to the same value); a name
    /// as it is. What `plan --emit` writes on its `# disagg run` line.
    pub fn to_args(&self) -> Vec<String> {
        let d = serde_json::to_value(Scenario::default()).expect("scenario");
        let v = serde_json::to_value(self).expect("scenario");
        let null = serde_json::Value::Null;
        let mut out = Vec::new();
        for o in crate::options::OPTIONS {
            let (now, was) = (v.get(o.key).unwrap_or(&null), d.get(o.key).unwrap_or(&null));
            if now == was {
                continue;
            }
            match now {
                // Every switch defaults to off and every optional option to unset: a difference
                // is a switch on or an option set.
                serde_json::Value::Bool(true) => out.push(o.flag.to_string()),
                serde_json::Value::Bool(false) | serde_json::Value::Null => {}
                serde_json::Value::String(s) => {
                    out.push(o.flag.to_string());
                    out.push(s.clone());
                }
                other => {
                    out.push(o.flag.to_string());
                    out.push(other.to_string());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod to_args_tests {
    use super::*;
    use crate::options::{Kind, OPTIONS};

    fn round_trip(sc: &Scenario) {
        let args = sc.to_args();
        let back = Scenario::from_flags(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(&back, sc, "{args:?}");
        // Shortest: one flag per option that differs from its default.
        let flags = args.iter().filter(|a| a.starts_with("--")).count();
        let d = serde_json::to_value(Scenario::default()).unwrap();
        let v = serde_json::to_value(sc).unwrap();
        let differ = OPTIONS
            .iter()
            .filter(|o| v.get(o.key) != d.get(o.key))
            .count();
        assert_eq!(flags, differ, "{args:?}");
    }

    #[test]
    fn the_default_is_no_flags() {
        assert!(Scenario::default().to_args().is_empty());
    }

    #[test]
    fn every_preset_round_trips() {
        for p in crate::presets::all() {
            round_trip(&p.scenario);
        }
    }

    #[test]
    fn fixed_order_and_exact_numbers() {
        let sc = Scenario::from_flags([
            "--rate",
            "11.73",
            "--model",
            "deepseek-v3",
            "--prefix-caching",
            "--prefill",
            "3",
            "--time-scale",
            "0.1",
            "--ttft-slo",
            "0.30000000000000004",
        ])
        .unwrap();
        assert_eq!(
            sc.to_args(),
            [
                "--model",
                "deepseek-v3",
                "--prefill",
                "3",
                "--prefix-caching",
                "--time-scale",
                "0.1",
                "--rate",
                "11.73",
                "--ttft-slo",
                "0.30000000000000004"
            ]
        );
    }

    /// A small deterministic generator (xorshift64*), so the property test needs no crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A random valid text for option `o` (not checked against ranges: `from_flags` reads any
    /// value of the right kind).
    fn random_value(o: &crate::options::Opt, r: &mut Rng) -> Option<String> {
        Some(match o.kind {
            Kind::Switch => return None,
            Kind::Name => ["h200", "x-name", "a100", "mtp", "chat"][r.below(5) as usize].into(),
            Kind::Choice(names) => names[r.below(names.len() as u64) as usize].into(),
            Kind::U32 => (r.below(5000)).to_string(),
            Kind::U64 => (r.next() >> r.below(64)).to_string(),
            Kind::F64 => {
                let x = f64::from_bits(r.next());
                if x.is_finite() {
                    x.to_string()
                } else {
                    (r.below(1_000_000) as f64 / 7.0).to_string()
                }
            }
        })
    }

    #[test]
    fn random_flag_combinations_round_trip() {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let presets = crate::presets::all();
        for _ in 0..2000 {
            let mut args: Vec<String> = Vec::new();
            // Half start from a preset's flags.
            if r.below(2) == 0 {
                let p = &presets[r.below(presets.len() as u64) as usize];
                args.extend(p.scenario.to_args());
            }
            for _ in 0..r.below(12) {
                let o = &OPTIONS[r.below(OPTIONS.len() as u64) as usize];
                args.push(o.flag.to_string());
                args.extend(random_value(o, &mut r));
            }
            let sc = Scenario::from_flags(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            round_trip(&sc);
        }
    }
}
