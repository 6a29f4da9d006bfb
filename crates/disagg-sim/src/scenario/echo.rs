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
