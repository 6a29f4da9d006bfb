//! The one error type of this crate: [`TraceError`].

use std::fmt;

/// What kind of problem a [`TraceError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TraceErrorKind {
    /// The file does not exist, cannot be read, or is not UTF-8 text.
    Io,
    /// The input holds no requests: an empty file, a header with no rows after it, an empty JSON
    /// array, or only rows that were skipped (bad lines, BurstGPT failed requests).
    NoRequests,
    /// A line (or, for the reference JSON format, a row) does not have the expected shape: wrong
    /// number of fields, a field that does not parse, a missing header, invalid JSON.
    Malformed,
    /// A token count is negative.
    NegativeTokens,
    /// A row's timestamp is earlier than one before it and sorting was not requested
    /// ([`crate::Unsorted::Reject`]).
    OutOfOrder,
    /// An unknown format name, or a file whose format cannot be detected from its content.
    UnknownFormat,
    /// The time window or `max_requests` of [`crate::ReadOptions`] selects no rows.
    NothingSelected,
    /// A [`crate::ReadOptions`] value is out of range (e.g. `time_scale <= 0`).
    InvalidOption,
}

/// An error while reading a trace.
///
/// Its `Display` is a single line: `FILE:LINE: MESSAGE` when the problem is on one line of a
/// file, `FILE: MESSAGE` when it concerns the whole file, and `MESSAGE` alone when no file is
/// involved (e.g. [`crate::TraceFormat::parse`]). Messages about a line quote the offending text
/// (escaped like a Rust string literal and cut to about 80 characters) and say what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    kind: TraceErrorKind,
    file: Option<String>,
    line: Option<usize>,
    message: String,
}

impl TraceError {
    /// A new error. Line breaks in `message` are replaced by spaces so `Display` stays one line.
    pub fn new(
        kind: TraceErrorKind,
        file: Option<&str>,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        let mut message: String = message.into();
        if message.contains(['\n', '\r']) {
            message = message.replace(['\n', '\r'], " ");
        }
        TraceError {
            kind,
            file: file.map(str::to_owned),
            line,
            message,
        }
    }

    /// The kind of problem.
    pub fn kind(&self) -> TraceErrorKind {
        self.kind
    }

    /// The file name (as given to [`crate::read_str`], or the path's display form for
    /// [`crate::read_path`]), if a file is involved.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The 1-based line number of the offending text, if the problem is on one line.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The message without the `FILE:LINE: ` prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: {}", self.message),
            (Some(file), None) => write!(f, "{file}: {}", self.message),
            (None, Some(line)) => write!(f, "line {line}: {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TraceError {}

/// The longest quoted excerpt of offending text, in characters.
pub(crate) const QUOTE_CHARS: usize = 80;

/// `text` quoted like a Rust string literal (its quotes and backslashes escaped, the rest by
/// [`disagg_model::escape`]), cut to [`QUOTE_CHARS`] characters (then followed by `...`).
pub(crate) fn quote(text: &str) -> String {
    let (cut, more) = match text.char_indices().nth(QUOTE_CHARS) {
        None => (text, ""),
        Some((cut, _)) => (&text[..cut], "..."),
    };
    let literal = cut.replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{}\"{more}", disagg_model::escape(&literal))
}
