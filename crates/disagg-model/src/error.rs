//! The one error type of the model crate: every message is one line that names the bad value and,
//! where there is a fixed set, the valid choices.

use std::fmt;

/// A configuration or catalogue error. Front ends print it as one line and exit with code 2.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// A name that is not in the catalogue.
    UnknownName {
        /// What was looked up ("model", "device", "link", "compression", ...).
        kind: &'static str,
        /// The name given.
        name: String,
        /// The valid names, in catalogue order.
        valid: Vec<String>,
    },
    /// A value out of range: `what` names the option, `why` says what is wrong.
    Invalid {
        /// The option or field, as the user spells it.
        what: String,
        /// Why it is rejected.
        why: String,
    },
    /// A simulation stopped before it finished because its caller asked it to (a Ctrl-C in
    /// Python, a flag another thread set): no result, and nothing wrong with the input.
    Cancelled,
}

impl Error {
    /// An out-of-range value for option `what`.
    pub fn invalid(what: impl Into<String>, why: impl Into<String>) -> Self {
        Error::Invalid {
            what: what.into(),
            why: why.into(),
        }
    }

    /// An unknown name of kind `kind`, listing the valid ones.
    pub fn unknown<'a>(
        kind: &'static str,
        name: &str,
        valid: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        Error::UnknownName {
            kind,
            name: name.to_string(),
            valid: valid.into_iter().map(str::to_string).collect(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownName { kind, name, valid } => {
                write!(f, "unknown {kind} '{name}'; valid: {}", valid.join(", "))
            }
            Error::Invalid { what, why } => write!(f, "{what}: {why}"),
            Error::Cancelled => f.write_str("the run was cancelled before it finished"),
        }
    }
}

impl std::error::Error for Error {}

/// Checks that `v` is finite and strictly positive.
pub fn positive(what: &str, v: f64) -> Result<f64, Error> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(Error::invalid(
            what,
            format!("must be a positive number, got {v}"),
        ))
    }
}

/// Checks that `v` is finite and not negative.
pub fn non_negative(what: &str, v: f64) -> Result<f64, Error> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(Error::invalid(
            what,
            format!("must be a finite number >= 0, got {v}"),
        ))
    }
}
