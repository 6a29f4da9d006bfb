//! Reading an input file the user named, safely: the one function every input flag of disagg uses
//! (`--trace-file`, `--workload-file`, `--config`, `--catalogue`, `sweep --spec`, `sweep merge`
//! inputs, `trace-stats`).
//!
//! [`read_input`] refuses, before opening the file for reading, a path that is not a regular file
//! after following symlinks (a directory, a FIFO, a device such as `/dev/zero`, a socket), so a
//! FIFO never blocks and a device is never read. It caps the size: checked from the metadata
//! first, then enforced while reading (at most `cap + 1` bytes are read, so a file that grows
//! while it is read cannot exhaust memory). An empty (or whitespace-only) file, a file holding a
//! NUL byte (binary data) and one that is not UTF-8 are errors too. Every error is one line.
//!
//! The caps are [`InputKind::Data`]'s 1 GiB (traces, workload files, sweep rows) and
//! [`InputKind::Config`]'s 16 MiB (scenario, catalogue and sweep-spec TOML);
//! [`set_max_input_bytes`] replaces both (the CLI's global `--max-input-bytes`).

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// What an input file holds, which decides its default size cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// Request traces, workload files, sweep rows: at most [`DATA_CAP_BYTES`] by default.
    Data,
    /// Configuration files (scenario, catalogue, sweep spec): at most [`CONFIG_CAP_BYTES`].
    Config,
}

/// The default cap of [`InputKind::Data`] files: 1 GiB.
pub const DATA_CAP_BYTES: u64 = 1 << 30;
/// The default cap of [`InputKind::Config`] files: 16 MiB.
pub const CONFIG_CAP_BYTES: u64 = 16 << 20;

/// 0: no override (the per-kind defaults apply).
static CAP_OVERRIDE_BYTES: AtomicU64 = AtomicU64::new(0);

/// Sets the cap of every input file to `bytes` (for all kinds), or back to the per-kind defaults
/// with `None`. The CLI calls this once, from `--max-input-bytes`, before reading anything.
pub fn set_max_input_bytes(bytes: Option<u64>) {
    CAP_OVERRIDE_BYTES.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

/// The cap that applies to files of `kind` now.
pub fn max_input_bytes(kind: InputKind) -> u64 {
    match CAP_OVERRIDE_BYTES.load(Ordering::Relaxed) {
        0 => match kind {
            InputKind::Data => DATA_CAP_BYTES,
            InputKind::Config => CONFIG_CAP_BYTES,
        },
        n => n,
    }
}

/// The largest value [`parse_byte_size`] accepts: 1 TiB.
pub const MAX_BYTE_SIZE: u64 = 1 << 40;

/// Parses a size such as `1048576`, `512KiB`, `16MiB`, `4GiB` or `1TiB` (binary units; the `iB`
/// may be left out: `4G`; case-insensitive; surrounding spaces ignored) into bytes, between 1 and
/// [`MAX_BYTE_SIZE`]. The error says what was expected.
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let unit = unit.trim();
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => u32::MAX,
    };
    let bytes = match (digits.parse::<u64>(), shift) {
        (Ok(n), s) if s != u32::MAX && n > 0 => n.checked_mul(1u64 << s),
        _ => None,
    };
    match bytes {
        Some(b) if b <= MAX_BYTE_SIZE => Ok(b),
        _ => Err(format!(
            "expected a size in bytes, optionally with a KiB, MiB, GiB or TiB suffix (e.g. \
             4GiB), from 1 byte to 1TiB, got '{text}'"
        )),
    }
}

/// `n` bytes for messages: `16 MiB` for exact binary multiples, else `N bytes`.
fn show_bytes(n: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n >= 1 << shift && n.trailing_zeros() >= shift {
            return format!("{} {unit}", n >> shift);
        }
    }
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{n} bytes")
    }
}

/// Why an input file was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputProblem {
    /// The path does not exist (or a symlink on it is dangling).
    Missing,
    /// The path exists but is a directory, FIFO, device or socket (what it is, in words).
    NotRegular(&'static str),
    /// The file is larger than the cap (its size or the bytes read, and the cap).
    TooLarge {
        /// The size seen (from the metadata, or more than the cap while reading).
        size_bytes: u64,
        /// The cap that applied.
        cap_bytes: u64,
    },
    /// The file is empty or holds only whitespace.
    Empty,
    /// A NUL byte on this 1-based line: binary data, not text.
    Binary(usize),
    /// Invalid UTF-8 on this 1-based line.
    NotUtf8(usize),
    /// Any other I/O error (permission denied, ...), as the system says it.
    Io(String),
}

/// An input file that could not be read. `Display`: `PATH: what is wrong`, one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// The path as given.
    pub path: String,
    /// What is wrong.
    pub problem: InputProblem,
}

impl InputProblem {
    /// The 1-based line of the problem, for the problems that have one.
    pub fn line(&self) -> Option<usize> {
        match *self {
            InputProblem::Binary(l) | InputProblem::NotUtf8(l) => Some(l),
            _ => None,
        }
    }

    /// The message without the path.
    pub fn message(&self) -> String {
        match self {
            InputProblem::Missing => "file does not exist".into(),
            InputProblem::NotRegular(what) => {
                format!("not a regular file ({what}); give the path of a file")
            }
            InputProblem::TooLarge {
                size_bytes,
                cap_bytes,
            } => {
                let what = if size_bytes > cap_bytes {
                    format!("file is {size_bytes} bytes")
                } else {
                    "file grew while being read".into()
                };
                format!(
                    "{what}, more than the limit of {} for this input; raise the limit with \
                     --max-input-bytes",
                    show_bytes(*cap_bytes)
                )
            }
            InputProblem::Empty => "file is empty".into(),
            InputProblem::Binary(line) => {
                format!("expected text, got binary data (a NUL byte on line {line})")
            }
            InputProblem::NotUtf8(line) => {
                format!("expected UTF-8 text, got invalid UTF-8 bytes on line {line}")
            }
            InputProblem::Io(e) => format!("cannot read the file: {e}"),
        }
    }
}

impl InputError {
    /// The 1-based line of the problem, for the problems that have one.
    pub fn line(&self) -> Option<usize> {
        self.problem.line()
    }

    /// The message without the path.
    pub fn message(&self) -> String {
        self.problem.message()
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message())
    }
}

impl std::error::Error for InputError {}

/// What a non-regular file is, in words.
fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}

/// 1-based line of byte offset `at` in `bytes`.
fn line_of(bytes: &[u8], at: usize) -> usize {
    1 + bytes[..at].iter().filter(|&&b| b == b'\n').count()
}

/// Reads the text file at `path` (symlinks followed), refusing anything but a regular file of at
/// most [`max_input_bytes`]`(kind)` bytes holding non-empty UTF-8 text without NUL bytes. See the
/// module docs.
pub fn read_input(path: &Path, kind: InputKind) -> Result<String, InputError> {
    let err = |problem| InputError {
        path: path.display().to_string(),
        problem,
    };
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound {
            err(InputProblem::Missing)
        } else {
            err(InputProblem::Io(e.to_string()))
        }
    };
    let cap = max_input_bytes(kind);
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(err(InputProblem::NotRegular(kind_of(meta.file_type()))));
    }
    let too_large = |size_bytes| {
        err(InputProblem::TooLarge {
            size_bytes,
            cap_bytes: cap,
        })
    };
    if meta.len() > cap {
        return Err(too_large(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(io)?;
    // The path may have been replaced between the two looks: check what was opened.
    let opened = file.metadata().map_err(io)?;
    if !opened.is_file() {
        return Err(err(InputProblem::NotRegular(kind_of(opened.file_type()))));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len().min(cap)).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(0));
    }
    text_from_bytes(bytes).map_err(err)
}

/// The text in `bytes`, or why it is not text: empty (or whitespace only), a NUL byte (binary
/// data), or invalid UTF-8. The checks [`read_input`] makes after reading.
pub fn text_from_bytes(bytes: Vec<u8>) -> Result<String, InputProblem> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(InputProblem::Empty);
    }
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(InputProblem::Binary(line_of(&bytes, at)));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        InputProblem::NotUtf8(line_of(e.as_bytes(), at))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_byte_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_byte_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_byte_size(" 16 MiB "), Ok(16 << 20));
        assert_eq!(parse_byte_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_byte_size("4g"), Ok(4 << 30));
        assert_eq!(parse_byte_size("1TiB"), Ok(1 << 40));
        for bad in [
            "",
            "0",
            "-1",
            "1.5GiB",
            "4GB?",
            "GiB",
            "2TiB",
            "99999999999999999999",
        ] {
            let e = parse_byte_size(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
        assert_eq!(show_bytes(16 << 20), "16 MiB");
        assert_eq!(show_bytes(1000), "1000 bytes");
    }
}
