//! The trace formats: their names and the detection from a file's first line.

use std::fmt;

use serde::Serialize;

use crate::error::{self, TraceError, TraceErrorKind};

/// A trace file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// Azure LLM inference trace CSV (2023 and 2024): header
    /// `TIMESTAMP,ContextTokens,GeneratedTokens`, absolute wall-clock timestamps such as
    /// `2023-11-16 18:17:03.9799600` (0 to 9 fractional digits; an optional `Z` or `+HH:MM`
    /// offset is honoured), CRLF or LF line endings.
    Azure,
    /// Mooncake (Kimi) JSON Lines: one
    /// `{"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]}` per line,
    /// `timestamp` in milliseconds.
    Mooncake,
    /// BurstGPT CSV: a header with at least `Timestamp`, `Request tokens` and `Response tokens`
    /// (e.g. `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`), timestamps
    /// in seconds. Rows with 0 response tokens are failed requests and are skipped.
    BurstGpt,
    /// The reference simulator's workload JSON: an array of `[arrival_seconds, prompt_len,
    /// output_len]` rows, each optionally with a 4th element (an object, ignored).
    Reference,
}

impl TraceFormat {
    /// All formats, in the order of their names in messages.
    pub const ALL: [TraceFormat; 4] = [
        TraceFormat::Azure,
        TraceFormat::Mooncake,
        TraceFormat::BurstGpt,
        TraceFormat::Reference,
    ];

    /// The valid names, comma-separated, for messages: `azure, mooncake, burstgpt, reference`.
    pub const VALID_NAMES: &'static str = "azure, mooncake, burstgpt, reference";

    /// The format named `name` (`azure`, `mooncake`, `burstgpt` or `reference`, ASCII
    /// case-insensitive, surrounding whitespace ignored). An unknown name is an error of kind
    /// [`TraceErrorKind::UnknownFormat`] that lists the valid names.
    pub fn parse(name: &str) -> Result<TraceFormat, TraceError> {
        let wanted = name.trim();
        TraceFormat::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| {
                TraceError::new(
                    TraceErrorKind::UnknownFormat,
                    None,
                    None,
                    format!(
                        "unknown trace format {}: valid formats are {}",
                        error::quote(name),
                        TraceFormat::VALID_NAMES
                    ),
                )
            })
    }

    /// The format's name as accepted by [`TraceFormat::parse`].
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::Azure => "azure",
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::BurstGpt => "burstgpt",
            TraceFormat::Reference => "reference",
        }
    }

    /// Detects the format from the first non-blank line of `text` (a leading UTF-8 BOM is
    /// ignored): starting with `[` is reference, `{` is mooncake, a CSV header containing
    /// `ContextTokens` is azure and one containing `Request tokens` is burstgpt. Otherwise an
    /// error of kind [`TraceErrorKind::UnknownFormat`] naming the valid formats, or of kind
    /// [`TraceErrorKind::NoRequests`] if `text` has no non-blank line. `name` is used in
    /// messages.
    pub fn detect(text: &str, name: &str) -> Result<TraceFormat, TraceError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let Some((line_no, line)) = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .find(|(_, l)| !l.is_empty())
        else {
            return Err(TraceError::new(
                TraceErrorKind::NoRequests,
                Some(name),
                None,
                "empty file: no requests",
            ));
        };
        if line.starts_with('[') {
            Ok(TraceFormat::Reference)
        } else if line.starts_with('{') {
            Ok(TraceFormat::Mooncake)
        } else if line.contains("ContextTokens") {
            Ok(TraceFormat::Azure)
        } else if line.contains("Request tokens") {
            Ok(TraceFormat::BurstGpt)
        } else {
            Err(TraceError::new(
                TraceErrorKind::UnknownFormat,
                Some(name),
                Some(line_no),
                format!(
                    "cannot detect the trace format: expected a JSON array (reference), a JSON \
                     object per line (mooncake), or a CSV header with ContextTokens (azure) or \
                     Request tokens (burstgpt); name the format with --trace-format ({}), got {}",
                    TraceFormat::VALID_NAMES,
                    error::quote(line)
                ),
            ))
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for TraceFormat {
    type Err = TraceError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TraceFormat::parse(s)
    }
}
