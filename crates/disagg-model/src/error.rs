//! The one error type of the model crate: every message is one line that names the bad value and,
//! where there is a fixed set, the valid choices.

use std::borrow::Cow;
use std::fmt;

/// `text` safe to echo on a terminal: every character that would not print as itself (control
/// characters such as ESC, BEL, CR and LF, DEL, the C1 controls, invisible format characters) is
/// written as Rust writes it in a string literal (`\n`, `\u{1b}`); everything else, quotes and
/// backslashes included, is kept. The one escaping of user text (names, file names, trace
/// excerpts) in messages and reports. Idempotent: its output has nothing left to escape.
pub fn escape(text: &str) -> Cow<'_, str> {
    fn plain(c: char) -> bool {
        if matches!(c, '"' | '\'' | '\\') {
            return true;
        }
        let mut e = c.escape_debug();
        e.next() == Some(c) && e.next().is_none()
    }
    if text.chars().all(plain) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if plain(c) {
            out.push(c);
        } else {
            out.extend(c.escape_debug());
        }
    }
    Cow::Owned(out)
}

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
            Error::UnknownName { kind, name, valid } => write!(
                f,
                "unknown {kind} '{}'; valid: {}",
                escape(name),
                escape(&valid.join(", "))
            ),
            Error::Invalid { what, why } => write!(f, "{}: {}", escape(what), escape(why)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_writes_what_would_not_print_and_keeps_the_rest() {
        assert!(matches!(
            escape("h100 'x' \"y\" a\\b µs ×"),
            Cow::Borrowed(_)
        ));
        assert_eq!(escape("\u{1b}[31mRED"), "\\u{1b}[31mRED");
        assert_eq!(escape("\u{1b}]0;pwned\u{7}"), "\\u{1b}]0;pwned\\u{7}");
        assert_eq!(
            escape("a\nb\rc\td\u{7f}e\u{9b}f"),
            "a\\nb\\rc\\td\\u{7f}e\\u{9b}f"
        );
        // Right-to-left override: invisible, reorders what follows.
        assert_eq!(escape("x\u{202e}y"), "x\\u{202e}y");
        let once = escape("\u{1b}\n\\").into_owned();
        assert_eq!(escape(&once), once, "idempotent");
        // An unknown name reaches the terminal escaped.
        let e = Error::unknown("model", "\u{1b}[2J", ["a\u{7}"]);
        assert_eq!(e.to_string(), "unknown model '\\u{1b}[2J'; valid: a\\u{7}");
        let e = Error::invalid("--x", "got '\u{1b}'");
        assert_eq!(e.to_string(), "--x: got '\\u{1b}'");
    }
}
