//! The four format parsers. Each turns the text into [`Raw`] rows in file order, counting skipped
//! lines in the report and checking time order as it goes.

use std::cmp::Ordering;
use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeOwned, Deserializer, IgnoredAny, SeqAccess, Visitor,
};

use crate::error::quote;
use crate::error::{TraceError, TraceErrorKind};
use crate::format::TraceFormat;
use crate::options::{ReadOptions, ReadReport, Unsorted};

/// A timestamp as read: integer nanoseconds (Azure, Mooncake) or float seconds (BurstGPT,
/// reference). All rows of one file use the same variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Stamp {
    Nanos(i128),
    Secs(f64),
}

impl Stamp {
    /// Seconds from `origin` to `self`: `(a_ns - b_ns) as f64 / 1e9` (exact integer difference,
    /// one rounding) or `a_s - b_s`.
    pub(crate) fn since(self, origin: Stamp) -> f64 {
        match (self, origin) {
            (Stamp::Nanos(a), Stamp::Nanos(b)) => (a - b) as f64 / 1e9,
            (Stamp::Secs(a), Stamp::Secs(b)) => a - b,
            (a, b) => a.as_secs() - b.as_secs(),
        }
    }

    /// The timestamp itself in seconds.
    pub(crate) fn as_secs(self) -> f64 {
        match self {
            Stamp::Nanos(ns) => ns as f64 / 1e9,
            Stamp::Secs(s) => s,
        }
    }

    /// Time order (all values are finite).
    pub(crate) fn cmp_total(self, other: Stamp) -> Ordering {
        match (self, other) {
            (Stamp::Nanos(a), Stamp::Nanos(b)) => a.cmp(&b),
            (a, b) => a
                .as_secs()
                .partial_cmp(&b.as_secs())
                .unwrap_or(Ordering::Equal),
        }
    }
}

/// One parsed row before windowing, re-basing and clipping.
pub(crate) struct Raw {
    pub t: Stamp,
    pub prompt: u64,
    pub output: u64,
    pub line: usize,
    pub hash_ids: Option<Vec<u64>>,
}

/// How many skipped lines get their own warning.
const MAX_BAD_WARNINGS: u64 = 10;

struct Ctx<'a> {
    name: &'a str,
    opts: &'a ReadOptions,
    report: &'a mut ReadReport,
    rows: Vec<Raw>,
    /// The latest timestamp so far and its line.
    latest: Option<(Stamp, usize)>,
}

impl Ctx<'_> {
    fn err(&self, kind: TraceErrorKind, line: usize, message: String) -> TraceError {
        TraceError::new(kind, Some(self.name), Some(line), message)
    }

    /// A bad line: an error, or (with `skip_bad_lines`) counted and noted.
    fn bad(&mut self, e: TraceError) -> Result<(), TraceError> {
        if !self.opts.skip_bad_lines {
            return Err(e);
        }
        self.report.bad_lines_skipped += 1;
        if self.report.bad_lines_skipped <= MAX_BAD_WARNINGS {
            self.report.warnings.push(format!("skipped {e}"));
        }
        Ok(())
    }

    /// Keeps a row, checking time order. `text` is the row's source text.
    fn push(&mut self, raw: Raw, text: &str) -> Result<(), TraceError> {
        match self.latest {
            Some((latest, latest_line)) if raw.t.cmp_total(latest) == Ordering::Less => {
                if self.opts.unsorted == Unsorted::Reject {
                    return Err(self.err(
                        TraceErrorKind::OutOfOrder,
                        raw.line,
                        format!(
                            "expected timestamps in non-decreasing order, but this row is earlier \
                             than line {latest_line} (sorting was not requested), got {}",
                            quote(text)
                        ),
                    ));
                }
                self.report.out_of_order += 1;
            }
            _ => self.latest = Some((raw.t, raw.line)),
        }
        self.rows.push(raw);
        Ok(())
    }
}

/// Parses `text` as `format`.
pub(crate) fn parse(
    format: TraceFormat,
    text: &str,
    name: &str,
    opts: &ReadOptions,
    report: &mut ReadReport,
) -> Result<Vec<Raw>, TraceError> {
    let mut ctx = Ctx {
        name,
        opts,
        report,
        rows: Vec::new(),
        latest: None,
    };
    match format {
        TraceFormat::Azure => parse_azure(text, &mut ctx)?,
        TraceFormat::BurstGpt => parse_burstgpt(text, &mut ctx)?,
        TraceFormat::Mooncake => {
            if opts.keep_hash_ids {
                parse_mooncake::<MoonFull>(text, &mut ctx)?
            } else {
                parse_mooncake::<MoonLite>(text, &mut ctx)?
            }
        }
        TraceFormat::Reference => parse_reference(text, &mut ctx)?,
    }
    let extra = ctx
        .report
        .bad_lines_skipped
        .saturating_sub(MAX_BAD_WARNINGS);
    if extra > 0 {
        ctx.report
            .warnings
            .push(format!("... and {extra} more bad lines skipped"));
    }
    Ok(ctx.rows)
}

/// The non-blank lines of `text` with their 1-based numbers, `\r` removed.
fn nonblank_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
        .filter(|(_, l)| !l.trim().is_empty())
}

fn no_requests(name: &str, line: Option<usize>, what: String) -> TraceError {
    TraceError::new(TraceErrorKind::NoRequests, Some(name), line, what)
}

// ---------------------------------------------------------------------------------------------
// Token counts

enum Tokens {
    Count(u64),
    Negative,
    Bad,
}

fn parse_tokens(field: &str) -> Tokens {
    if let Ok(n) = field.parse::<u64>() {
        return Tokens::Count(n);
    }
    match field.strip_prefix('-') {
        Some(d) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) => {
            if d.bytes().all(|b| b == b'0') {
                Tokens::Count(0)
            } else {
                Tokens::Negative
            }
        }
        _ => Tokens::Bad,
    }
}

// ---------------------------------------------------------------------------------------------
// CSV (Azure, BurstGPT)

fn unquote(f: &str) -> &str {
    let f = f.trim();
    if f.len() >= 2 && f.starts_with('"') && f.ends_with('"') {
        &f[1..f.len() - 1]
    } else {
        f
    }
}

fn split_fields<'t>(line: &'t str, out: &mut Vec<&'t str>) {
    out.clear();
    out.extend(line.split(',').map(unquote));
}

/// A CSV header: its line, its trimmed column names joined by commas, the number of columns and
/// the indices of the `required` columns.
struct CsvHeader {
    line: usize,
    columns: String,
    n_fields: usize,
    index: Vec<usize>,
}

fn csv_header<'t>(
    lines: &mut impl Iterator<Item = (usize, &'t str)>,
    ctx: &Ctx<'_>,
    label: &str,
    expected: &str,
    required: &[&str],
) -> Result<CsvHeader, TraceError> {
    let Some((line, text)) = lines.next() else {
        return Err(no_requests(
            ctx.name,
            None,
            "empty file: no requests".into(),
        ));
    };
    let mut fields = Vec::new();
    split_fields(text, &mut fields);
    let index: Option<Vec<usize>> = required
        .iter()
        .map(|want| fields.iter().position(|f| f.eq_ignore_ascii_case(want)))
        .collect();
    let Some(index) = index else {
        return Err(ctx.err(
            TraceErrorKind::Malformed,
            line,
            format!(
                "expected the {label} CSV header {expected}, got {}",
                quote(text)
            ),
        ));
    };
    Ok(CsvHeader {
        line,
        columns: fields.join(","),
        n_fields: fields.len(),
        index,
    })
}

/// Reads the token count in column `col` of `fields` (named `column`), or reports the line.
fn csv_tokens(
    ctx: &Ctx<'_>,
    line: usize,
    text: &str,
    field: &str,
    column: &str,
) -> Result<u64, TraceError> {
    match parse_tokens(field) {
        Tokens::Count(n) => Ok(n),
        Tokens::Negative => Err(ctx.err(
            TraceErrorKind::NegativeTokens,
            line,
            format!(
                "expected a non-negative token count for {column}, got {} in {}",
                quote(field),
                quote(text)
            ),
        )),
        Tokens::Bad => Err(ctx.err(
            TraceErrorKind::Malformed,
            line,
            format!(
                "expected {column} to be a non-negative integer, got {} in {}",
                quote(field),
                quote(text)
            ),
        )),
    }
}

const AZURE_COLUMNS: [&str; 3] = ["TIMESTAMP", "ContextTokens", "GeneratedTokens"];

fn parse_azure(text: &str, ctx: &mut Ctx<'_>) -> Result<(), TraceError> {
    let stamp = |ts: &str| {
        parse_timestamp_ns(ts)
            .map(Stamp::Nanos)
            .ok_or("TIMESTAMP as YYYY-MM-DD HH:MM:SS[.fraction] (e.g. 2023-11-16 18:17:03.9799600)")
    };
    parse_csv(
        text,
        ctx,
        "Azure",
        "TIMESTAMP,ContextTokens,GeneratedTokens",
        &AZURE_COLUMNS,
        &stamp,
        false,
    )
}

const BURST_COLUMNS: [&str; 3] = ["Timestamp", "Request tokens", "Response tokens"];

fn parse_burstgpt(text: &str, ctx: &mut Ctx<'_>) -> Result<(), TraceError> {
    let stamp = |ts: &str| match ts.parse::<f64>() {
        Ok(s) if s.is_finite() => Ok(Stamp::Secs(s)),
        _ => Err("Timestamp as a finite number of seconds"),
    };
    parse_csv(
        text,
        ctx,
        "BurstGPT",
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type (at least \
         Timestamp, Request tokens and Response tokens)",
        &BURST_COLUMNS,
        &stamp,
        true,
    )
}

/// The CSV formats: a header naming `columns` (time, prompt tokens, output tokens), then one
/// request per line. `stamp` parses the time column (or says what it expected); with
/// `zero_output_failed`, rows with 0 output tokens are failed requests, skipped and counted.
fn parse_csv(
    text: &str,
    ctx: &mut Ctx<'_>,
    format: &str,
    header: &str,
    columns: &[&str; 3],
    stamp: &dyn Fn(&str) -> Result<Stamp, &'static str>,
    zero_output_failed: bool,
) -> Result<(), TraceError> {
    let mut lines = nonblank_lines(text);
    let h = csv_header(&mut lines, ctx, format, header, columns)?;
    let mut fields: Vec<&str> = Vec::with_capacity(h.n_fields);
    let mut data_lines = 0u64;
    for (line, text) in lines {
        data_lines += 1;
        split_fields(text, &mut fields);
        let row = (|| {
            if fields.len() != h.n_fields {
                return Err(ctx.err(
                    TraceErrorKind::Malformed,
                    line,
                    format!(
                        "expected {} comma-separated fields ({}), got {}",
                        h.n_fields,
                        h.columns,
                        quote(text)
                    ),
                ));
            }
            let ts = fields[h.index[0]];
            let t = stamp(ts).map_err(|expected| {
                ctx.err(
                    TraceErrorKind::Malformed,
                    line,
                    format!("expected {expected}, got {} in {}", quote(ts), quote(text)),
                )
            })?;
            let prompt = csv_tokens(ctx, line, text, fields[h.index[1]], columns[1])?;
            let output = csv_tokens(ctx, line, text, fields[h.index[2]], columns[2])?;
            Ok(Raw {
                t,
                prompt,
                output,
                line,
                hash_ids: None,
            })
        })();
        match row {
            Ok(raw) if zero_output_failed && raw.output == 0 => {
                ctx.report.failed_requests_skipped += 1
            }
            Ok(raw) => ctx.push(raw, text)?,
            Err(e) => ctx.bad(e)?,
        }
    }
    if data_lines == 0 {
        return Err(no_requests(
            ctx.name,
            Some(h.line),
            format!("no requests: only the header {}", quote(&h.columns)),
        ));
    }
    Ok(())
}

/// Parses `YYYY-MM-DD HH:MM:SS[.f{0,9}][Z|±HH:MM|±HHMM]` (a `T` may replace the space) into
/// nanoseconds since 1970-01-01 00:00:00 UTC. A time without an offset is taken as UTC.
pub(crate) fn parse_timestamp_ns(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let mut v = 0i64;
        for &c in &b[r] {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Some(v)
    };
    if b[4] != b'-' || b[7] != b'-' || !(b[10] == b' ' || b[10] == b'T') || b[13] != b':' {
        return None;
    }
    if b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut i = 19;
    let mut frac_ns = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = i - start;
        if digits > 9 {
            return None;
        }
        if digits > 0 {
            frac_ns = num(start..i)? * 10i64.pow((9 - digits) as u32);
        }
    }
    let mut offset_s = 0i64;
    match b.get(i) {
        None => {}
        Some(b'Z') if i + 1 == b.len() => i += 1,
        Some(&sign @ (b'+' | b'-')) => {
            let rest = &s[i + 1..];
            if !rest.is_ascii() {
                return None;
            }
            let (hh, mm) = match rest.len() {
                5 if rest.as_bytes()[2] == b':' => (&rest[0..2], &rest[3..5]),
                4 => (&rest[0..2], &rest[2..4]),
                2 => (&rest[0..2], "00"),
                _ => return None,
            };
            let (hh, mm) = (parse_2(hh)?, parse_2(mm)?);
            if hh > 23 || mm > 59 {
                return None;
            }
            offset_s = (hh * 3600 + mm * 60) * if sign == b'-' { -1 } else { 1 };
            i = b.len();
        }
        Some(_) => return None,
    }
    if i != b.len() {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_s;
    Some(i128::from(secs) * 1_000_000_000 + i128::from(frac_ns))
}

fn parse_2(s: &str) -> Option<i64> {
    if s.len() == 2 && s.bytes().all(|c| c.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of the proleptic Gregorian date `y-m-d` (H. Hinnant's
/// `days_from_civil`).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

// ---------------------------------------------------------------------------------------------
// Mooncake JSON Lines

/// A Mooncake `timestamp` in milliseconds (integer, or a float rounded to the nanosecond), as
/// integer nanoseconds.
struct Millis(i128);

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Millis;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of milliseconds")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Millis, E> {
                Ok(Millis(i128::from(v) * 1_000_000))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Millis, E> {
                Ok(Millis(i128::from(v) * 1_000_000))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Millis, E> {
                let ns = (v * 1e6).round();
                if ns.is_finite() && ns.abs() < 1e30 {
                    Ok(Millis(ns as i128))
                } else {
                    Err(E::custom(format_args!("timestamp {v} out of range")))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A Mooncake line, keeping `hash_ids`.
#[derive(serde::Deserialize)]
struct MoonFull {
    timestamp: Millis,
    input_length: i64,
    output_length: i64,
    hash_ids: Option<Vec<u64>>,
}

/// A Mooncake line, skipping `hash_ids`.
#[derive(serde::Deserialize)]
struct MoonLite {
    timestamp: Millis,
    input_length: i64,
    output_length: i64,
    #[allow(dead_code)]
    hash_ids: Option<IgnoredAny>,
}

trait MoonLine {
    fn parts(self) -> (i128, i64, i64, Option<Vec<u64>>);
}

impl MoonLine for MoonFull {
    fn parts(self) -> (i128, i64, i64, Option<Vec<u64>>) {
        (
            self.timestamp.0,
            self.input_length,
            self.output_length,
            self.hash_ids,
        )
    }
}

impl MoonLine for MoonLite {
    fn parts(self) -> (i128, i64, i64, Option<Vec<u64>>) {
        (
            self.timestamp.0,
            self.input_length,
            self.output_length,
            None,
        )
    }
}

/// serde_json's message without its ` at line L column C` suffix.
fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

fn parse_mooncake<T: DeserializeOwned + MoonLine>(
    text: &str,
    ctx: &mut Ctx<'_>,
) -> Result<(), TraceError> {
    let mut any = false;
    for (line, text) in nonblank_lines(text) {
        any = true;
        let row = match serde_json::from_str::<T>(text) {
            Err(e) => Err(ctx.err(
                TraceErrorKind::Malformed,
                line,
                format!(
                    "expected a JSON object {{\"timestamp\": ms, \"input_length\": int, \
                     \"output_length\": int, \"hash_ids\": [int, ...]}} ({} at column {}), got {}",
                    json_message(&e),
                    e.column(),
                    quote(text)
                ),
            )),
            Ok(v) => {
                let (ns, input, output, hash_ids) = v.parts();
                if input < 0 || output < 0 {
                    let (field, v) = if input < 0 {
                        ("input_length", input)
                    } else {
                        ("output_length", output)
                    };
                    Err(ctx.err(
                        TraceErrorKind::NegativeTokens,
                        line,
                        format!(
                            "expected a non-negative token count for {field}, got {v} in {}",
                            quote(text)
                        ),
                    ))
                } else {
                    Ok(Raw {
                        t: Stamp::Nanos(ns),
                        prompt: input as u64,
                        output: output as u64,
                        line,
                        hash_ids,
                    })
                }
            }
        };
        match row {
            Ok(raw) => ctx.push(raw, text)?,
            Err(e) => ctx.bad(e)?,
        }
    }
    if !any {
        return Err(no_requests(
            ctx.name,
            None,
            "empty file: no requests".into(),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reference workload JSON

/// One reference row: `[arrival_seconds, prompt_len, output_len]` or with a 4th element.
struct RefRow {
    arrival: f64,
    prompt: i64,
    output: i64,
}

const REF_ROW: &str =
    "a row [arrival_seconds, prompt_len, output_len] with an optional 4th (object) element";

impl<'de> Deserialize<'de> for RefRow {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RefRow;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of 3 or 4 elements")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RefRow, A::Error> {
                let arrival: f64 = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let prompt: i64 = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                let output: i64 = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(2, &self))?;
                let _extra: Option<IgnoredAny> = seq.next_element()?;
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(5, &self));
                }
                Ok(RefRow {
                    arrival,
                    prompt,
                    output,
                })
            }
        }
        d.deserialize_seq(V)
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Line numbers of byte positions, for positions visited in increasing order.
struct LineCounter {
    pos: usize,
    line: usize,
}

impl LineCounter {
    fn at(&mut self, b: &[u8], pos: usize) -> usize {
        self.line += b[self.pos..pos].iter().filter(|&&c| c == b'\n').count();
        self.pos = pos;
        self.line
    }
}

/// The text of 1-based line `line` of `text` (empty if there is none).
fn line_text(text: &str, line: usize) -> &str {
    text.lines().nth(line.saturating_sub(1)).unwrap_or("")
}

fn parse_reference(text: &str, ctx: &mut Ctx<'_>) -> Result<(), TraceError> {
    let b = text.as_bytes();
    let name = ctx.name;
    let mut lc = LineCounter { pos: 0, line: 1 };
    let mut pos = skip_ws(b, 0);
    if pos == b.len() {
        return Err(no_requests(
            ctx.name,
            None,
            "empty file: no requests".into(),
        ));
    }
    if b[pos] != b'[' {
        let line = lc.at(b, pos);
        return Err(ctx.err(
            TraceErrorKind::Malformed,
            line,
            format!(
                "expected a JSON array of [arrival_seconds, prompt_len, output_len] rows, got {}",
                quote(line_text(text, line).trim())
            ),
        ));
    }
    let open_line = lc.at(b, pos);
    pos = skip_ws(b, pos + 1);
    if b.get(pos) == Some(&b']') {
        return Err(no_requests(
            ctx.name,
            Some(open_line),
            "no requests: the JSON array is empty".into(),
        ));
    }
    let mut row = 0usize;
    loop {
        let line = lc.at(b, pos);
        let rest = &text[pos..];
        let mut rows = serde_json::Deserializer::from_str(rest).into_iter::<RefRow>();
        let syntax = |e: serde_json::Error| {
            let at = line + e.line().max(1) - 1;
            // serde_json counts columns from `pos` on its first line.
            let column = if e.line() <= 1 {
                let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
                pos - line_start + e.column()
            } else {
                e.column()
            };
            TraceError::new(
                TraceErrorKind::Malformed,
                Some(name),
                Some(at),
                format!(
                    "expected a JSON array of [arrival_seconds, prompt_len, output_len] rows ({} \
                     at column {column}), got {}",
                    json_message(&e),
                    quote(line_text(text, at).trim())
                ),
            )
        };
        let end = match rows.next() {
            Some(Ok(r)) => {
                let end = pos + rows.byte_offset();
                let row_text = text[pos..end].trim();
                let raw = if !(r.arrival.is_finite() && r.arrival >= 0.0) {
                    Err(ctx.err(
                        TraceErrorKind::Malformed,
                        line,
                        format!(
                            "row {row}: expected arrival_seconds >= 0, got {}",
                            quote(row_text)
                        ),
                    ))
                } else if r.prompt < 0 || r.output < 0 {
                    Err(ctx.err(
                        TraceErrorKind::NegativeTokens,
                        line,
                        format!(
                            "row {row}: expected non-negative prompt_len and output_len, got {}",
                            quote(row_text)
                        ),
                    ))
                } else {
                    Ok(Raw {
                        t: Stamp::Secs(r.arrival),
                        prompt: r.prompt as u64,
                        output: r.output as u64,
                        line,
                        hash_ids: None,
                    })
                };
                match raw {
                    Ok(raw) => ctx.push(raw, row_text)?,
                    Err(e) => ctx.bad(e)?,
                }
                end
            }
            Some(Err(e)) if e.is_data() => {
                // Valid JSON that is not a row: find where the value ends, then report it.
                let mut any = serde_json::Deserializer::from_str(rest).into_iter::<IgnoredAny>();
                match any.next() {
                    Some(Ok(_)) => {
                        let end = pos + any.byte_offset();
                        let bad = ctx.err(
                            TraceErrorKind::Malformed,
                            line,
                            format!(
                                "row {row}: expected {REF_ROW} ({}), got {}",
                                json_message(&e),
                                quote(text[pos..end].trim())
                            ),
                        );
                        ctx.bad(bad)?;
                        end
                    }
                    Some(Err(e2)) => return Err(syntax(e2)),
                    None => return Err(syntax(e)),
                }
            }
            Some(Err(e)) => return Err(syntax(e)),
            None => {
                let last = text.lines().count().max(1);
                return Err(ctx.err(
                    TraceErrorKind::Malformed,
                    last,
                    format!(
                        "expected a row or ] to close the array opened on line {open_line}, got \
                         the end of the file"
                    ),
                ));
            }
        };
        pos = skip_ws(b, end);
        row += 1;
        match b.get(pos) {
            Some(b',') => pos = skip_ws(b, pos + 1),
            Some(b']') => {
                pos = skip_ws(b, pos + 1);
                if pos != b.len() {
                    let line = lc.at(b, pos);
                    return Err(ctx.err(
                        TraceErrorKind::Malformed,
                        line,
                        format!(
                            "expected nothing after the closing ] of the array, got {}",
                            quote(line_text(text, line).trim())
                        ),
                    ));
                }
                return Ok(());
            }
            _ => {
                let line = lc.at(b, pos.min(b.len()));
                return Err(ctx.err(
                    TraceErrorKind::Malformed,
                    line,
                    format!(
                        "expected , or ] after a row, got {}",
                        quote(line_text(text, line).trim())
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2023, 11, 16), 19_677);
    }

    #[test]
    fn timestamps() {
        let base = parse_timestamp_ns("2023-11-16 18:17:03").unwrap();
        assert_eq!(
            base,
            (19_677i128 * 86_400 + 18 * 3600 + 17 * 60 + 3) * 1_000_000_000
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-16 18:17:03.9799600").unwrap() - base,
            979_960_000
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-16T18:17:03.5").unwrap() - base,
            500_000_000
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-16 18:17:03.123456789").unwrap() - base,
            123_456_789
        );
        assert_eq!(parse_timestamp_ns("2023-11-16 18:17:03.").unwrap(), base);
        assert_eq!(parse_timestamp_ns("2023-11-16 18:17:03Z").unwrap(), base);
        assert_eq!(
            parse_timestamp_ns("2023-11-16 19:17:03+01:00").unwrap(),
            base
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-16 17:17:03.000-0100").unwrap(),
            base
        );
        for bad in [
            "2023-11-16 18:17:03.1234567890",
            "2023-02-29 00:00:00",
            "2023-11-16 24:00:00",
            "2023-11-16 18:17",
            "2023/11/16 18:17:03",
            "2023-11-16 18:17:03 ",
            "2023-11-16 18:17:03.12x",
            "2023-11-16 18:17:03+0\u{e9}0",
            "2023-11-16 18:17:03+\u{e9}:00",
            "abc",
        ] {
            assert_eq!(parse_timestamp_ns(bad), None, "{bad}");
        }
        assert!(parse_timestamp_ns("2024-02-29 00:00:00").is_some());
    }

    /// The Gregorian century rule: 1900 and 2100 are not leap years, 2000 is. Epoch seconds by
    /// hand: 1970-01-01 back to 1900-01-01 is 70 * 365 + 17 leap days (1904..1968) = 25,567
    /// days, so 1900-03-01 is day -25,567 + 31 + 28 = -25,508; 2000-03-01 is 30 * 365 + 7 leap
    /// days (1972..1996) + 31 + 29 = day 11,017; 2100-03-01 adds 100 * 365 + 24 leap days
    /// (2004..2096) = 36,524, day 47,541.
    #[test]
    fn century_leap_years() {
        let s = |t: &str| parse_timestamp_ns(t).map(|ns| ns / 1_000_000_000);
        assert_eq!(s("1900-03-01 00:00:00"), Some(-25_508 * 86_400));
        assert_eq!(s("1900-03-01 00:00:00"), Some(-2_203_891_200));
        assert_eq!(s("2000-03-01 00:00:00"), Some(951_868_800));
        assert_eq!(s("2100-03-01 00:00:00"), Some(4_107_542_400));
        // Feb 28 -> Mar 1: one day in 1900 and 2100, two in 2000.
        for (year, days) in [
            (1900, 1),
            (2000, 2),
            (2100, 1),
            (2400, 2),
            (2024, 2),
            (2023, 1),
        ] {
            let gap = s(&format!("{year}-03-01 00:00:00")).unwrap()
                - s(&format!("{year}-02-28 00:00:00")).unwrap();
            assert_eq!(gap, days * 86_400, "{year}");
        }
        assert_eq!(s("1900-02-29 00:00:00"), None);
        assert_eq!(s("2100-02-29 12:00:00"), None);
        assert_eq!(s("2000-02-29 00:00:00"), Some(951_782_400));
        assert!(s("2400-02-29 00:00:00").is_some());
    }

    #[test]
    fn tokens() {
        assert!(matches!(parse_tokens("12"), Tokens::Count(12)));
        assert!(matches!(parse_tokens("-0"), Tokens::Count(0)));
        assert!(matches!(parse_tokens("-3"), Tokens::Negative));
        assert!(matches!(parse_tokens("1.5"), Tokens::Bad));
        assert!(matches!(parse_tokens(""), Tokens::Bad));
        // A lone minus sign and a minus before a non-number are not counts (nor negative ones).
        assert!(matches!(parse_tokens("-"), Tokens::Bad));
        assert!(matches!(parse_tokens("-1x"), Tokens::Bad));
        assert!(matches!(parse_tokens("-x"), Tokens::Bad));
        // Any number of zeros after the minus is zero; a non-zero digit makes it negative.
        assert!(matches!(parse_tokens("-00"), Tokens::Count(0)));
        assert!(matches!(parse_tokens("-01"), Tokens::Negative));
    }

    /// `since` is the exact integer difference over 1e9 for nanoseconds, the float difference
    /// for seconds, and the difference of `as_secs` for a mixed pair (not produced by the
    /// parsers, which give one variant per file, but part of the function's contract).
    #[test]
    fn stamp_arithmetic() {
        // (5_500_000_000 - 1_000_000_000) / 1e9 = 4.5
        assert_eq!(
            Stamp::Nanos(5_500_000_000).since(Stamp::Nanos(1_000_000_000)),
            4.5
        );
        // 7.25 - 1.0 = 6.25
        assert_eq!(Stamp::Secs(7.25).since(Stamp::Secs(1.0)), 6.25);
        // 3e9 ns = 3.0 s; 3.0 - 0.5 = 2.5
        assert_eq!(Stamp::Nanos(3_000_000_000).since(Stamp::Secs(0.5)), 2.5);
        // 4.0 - 1.5e9 ns / 1e9 = 4.0 - 1.5 = 2.5
        assert_eq!(Stamp::Secs(4.0).since(Stamp::Nanos(1_500_000_000)), 2.5);
        assert_eq!(Stamp::Nanos(2_500_000_000).as_secs(), 2.5);
        assert_eq!(Stamp::Secs(1.75).as_secs(), 1.75);

        assert_eq!(Stamp::Nanos(1).cmp_total(Stamp::Nanos(2)), Ordering::Less);
        assert_eq!(Stamp::Nanos(2).cmp_total(Stamp::Nanos(2)), Ordering::Equal);
        // 2.0 s against 1.5 s, across variants.
        assert_eq!(
            Stamp::Nanos(2_000_000_000).cmp_total(Stamp::Secs(1.5)),
            Ordering::Greater
        );
        assert_eq!(Stamp::Secs(1.0).cmp_total(Stamp::Secs(1.5)), Ordering::Less);
    }

    #[test]
    fn csv_fields() {
        assert_eq!(unquote("\"10\""), "10");
        assert_eq!(unquote("  7 "), "7");
        assert_eq!(unquote(" \"a b\" "), "a b");
        assert_eq!(unquote("\"\""), "");
        // A lone quote, or a quote at one end only, is kept as is.
        assert_eq!(unquote("\""), "\"");
        assert_eq!(unquote("\"55"), "\"55");
        assert_eq!(unquote("55\""), "55\"");
        let mut out = Vec::new();
        split_fields("a, \"b\" ,c", &mut out);
        assert_eq!(out, ["a", "b", "c"]);
    }

    #[test]
    fn two_digit_fields() {
        assert_eq!(parse_2("07"), Some(7));
        assert_eq!(parse_2("59"), Some(59));
        assert_eq!(parse_2("+1"), None);
        assert_eq!(parse_2("1"), None);
        assert_eq!(parse_2("123"), None);
        assert_eq!(parse_2("1a"), None);
    }

    /// Month lengths, including the Gregorian century rule.
    #[test]
    fn month_lengths() {
        let lengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        for (m, len) in (1..=12).zip(lengths) {
            assert_eq!(days_in_month(2023, m), len, "2023-{m}");
            let leap = if m == 2 { 29 } else { len };
            assert_eq!(days_in_month(2024, m), leap, "2024-{m}");
        }
        for (year, feb) in [(1900, 28), (2000, 29), (2100, 28), (2400, 29), (2023, 28)] {
            assert_eq!(days_in_month(year, 2), feb, "{year}");
        }
    }

    /// Day numbers from Python's proleptic Gregorian calendar:
    /// `(datetime.datetime(y, m, d) - datetime.datetime(1970, 1, 1)).days`.
    /// Year 0 is outside Python's range: 0000-01-01 is 366 days (year 0 is a leap year, 0 % 400
    /// == 0) before 0001-01-01 = -719,162, so -719,528.
    #[test]
    fn civil_days_every_month_and_era() {
        let first_2023 = [
            19_358, 19_389, 19_417, 19_448, 19_478, 19_509, 19_539, 19_570, 19_601, 19_631, 19_662,
            19_692,
        ];
        let day28_2024 = [
            19_750, 19_781, 19_810, 19_841, 19_871, 19_902, 19_932, 19_963, 19_994, 20_024, 20_055,
            20_085,
        ];
        for m in 1..=12 {
            let i = (m - 1) as usize;
            assert_eq!(days_from_civil(2023, m, 1), first_2023[i], "2023-{m}-01");
            assert_eq!(days_from_civil(2024, m, 28), day28_2024[i], "2024-{m}-28");
        }
        for (y, jan1, mar1) in [
            (1, -719_162, -719_103),
            (100, -683_003, -682_944),
            (400, -573_431, -573_371),
            (1600, -135_140, -135_080),
            (1900, -25_567, -25_508),
            (2100, 47_482, 47_541),
            (2400, 157_054, 157_114),
            (9999, 2_932_532, 2_932_591),
        ] {
            assert_eq!(days_from_civil(y, 1, 1), jan1, "{y}-01-01");
            assert_eq!(days_from_civil(y, 3, 1), mar1, "{y}-03-01");
        }
        assert_eq!(days_from_civil(0, 1, 1), -719_528);
        // 0000-02-29 exists (leap year 0): 31 + 28 days after 0000-01-01.
        assert_eq!(days_from_civil(0, 2, 29), -719_528 + 59);
        assert_eq!(
            parse_timestamp_ns("0000-01-01 00:00:00"),
            Some(-719_528i128 * 86_400 * 1_000_000_000)
        );
    }

    /// Each field and separator checked on its own: one wrong part, the rest valid.
    #[test]
    fn timestamp_fields_one_at_a_time() {
        // 2023-11-16 18:17:03 = day 19,677 (test above) = 1,700,158,623 s.
        let base = parse_timestamp_ns("2023-11-16 18:17:03").unwrap();
        assert_eq!(base, 1_700_158_623 * 1_000_000_000);
        for bad in [
            "2023x11-16 18:17:03",
            "2023-11x16 18:17:03",
            "2023-11-16x18:17:03",
            "2023-11-16 18x17:03",
            "2023-11-16 18:17x03",
            "2023-13-16 18:17:03",
            "2023-00-16 18:17:03",
            "2023-11-00 18:17:03",
            "2023-11-31 18:17:03",
            "2023-04-31 18:17:03",
            "2023-11-16 24:17:03",
            "2023-11-16 18:60:03",
            "2023-11-16 18:17:60",
            "2023-11-16 18:17:0",
            "2023-11-16 18:17:03Zx",
            "2023-11-16 18:17:03ZZ",
            "2023-11-16 18:17:03+01x00",
            "2023-11-16 18:17:03++1:00",
            "2023-11-16 18:17:03+24:00",
            "2023-11-16 18:17:03+00:60",
            "2023-11-16 18:17:03+1",
            "2023-11-16 18:17:03+011",
            "2023-11-16 18:17:03x",
        ] {
            assert_eq!(parse_timestamp_ns(bad), None, "{bad}");
        }
        // The last valid value of each field. 2023-11-30 23:59:59 = 1,701,388,799 s
        // (Python: datetime(2023, 11, 30, 23, 59, 59) - datetime(1970, 1, 1)).
        assert_eq!(
            parse_timestamp_ns("2023-11-30 23:59:59"),
            Some(1_701_388_799 * 1_000_000_000)
        );
        // 2023-11-01 00:00:00 = day 19,662 (first_2023 above).
        assert_eq!(
            parse_timestamp_ns("2023-11-01 00:00:00"),
            Some(19_662 * 86_400 * 1_000_000_000)
        );
        assert_eq!(
            parse_timestamp_ns("2023-12-31 00:00:00"),
            Some((19_692 + 30) * 86_400 * 1_000_000_000)
        );
        // Offsets: +05:30 is 19,800 s ahead of UTC, +0530 too, +01 is 3,600 s, -23:59 is
        // 86,340 s behind.
        let ns = |s: i128| s * 1_000_000_000;
        // 23:47:03 at +05:30 is 18:17:03 UTC.
        assert_eq!(parse_timestamp_ns("2023-11-16 23:47:03+05:30"), Some(base));
        assert_eq!(
            parse_timestamp_ns("2023-11-16 18:17:03+05:30"),
            Some(base - ns(19_800))
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-16 18:17:03+0530"),
            Some(base - ns(19_800))
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-16 18:17:03+01"),
            Some(base - ns(3_600))
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-16 18:17:03-01"),
            Some(base + ns(3_600))
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-16 18:17:03-23:59"),
            Some(base + ns(86_340))
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-16 18:17:03+23:59"),
            Some(base - ns(86_340))
        );
        // A 9-digit fraction with an offset; 1 digit is tenths.
        assert_eq!(
            parse_timestamp_ns("2023-11-16 18:17:03.000000001+00:30"),
            Some(base + 1 - ns(1_800))
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-16 18:17:03.7Z"),
            Some(base + 700_000_000)
        );
    }
}
