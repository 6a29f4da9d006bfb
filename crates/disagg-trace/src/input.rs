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

    #[test]
    fn caps_and_sizes() {
        // 2^30, 2^24 and 2^40 written out.
        assert_eq!(DATA_CAP_BYTES, 1_073_741_824);
        assert_eq!(CONFIG_CAP_BYTES, 16_777_216);
        assert_eq!(MAX_BYTE_SIZE, 1_099_511_627_776);
        assert_eq!(parse_byte_size("7b"), Ok(7));
        assert_eq!(parse_byte_size("3k"), Ok(3 * 1024));
        assert_eq!(parse_byte_size("2m"), Ok(2 * 1_048_576));
        assert_eq!(parse_byte_size("1t"), Ok(1_099_511_627_776));
        assert_eq!(parse_byte_size("1"), Ok(1));
        // The largest accepted: 1024 GiB = 1 TiB; one byte more is refused.
        assert_eq!(parse_byte_size("1024GiB"), Ok(1 << 40));
        assert!(parse_byte_size("1099511627777").is_err());
        assert!(parse_byte_size("5x").is_err());
        assert_eq!(show_bytes(0), "0 bytes");
        assert_eq!(show_bytes(1), "1 byte");
        assert_eq!(show_bytes(2), "2 bytes");
        assert_eq!(show_bytes(3 << 10), "3 KiB");
        assert_eq!(show_bytes(1 << 40), "1 TiB");
        // 2^40 + 2^10: a whole number of KiB, not of TiB.
        assert_eq!(show_bytes((1 << 40) + (1 << 10)), "1073741825 KiB");
    }

    #[test]
    fn problems_and_messages() {
        assert_eq!(InputProblem::Binary(3).line(), Some(3));
        assert_eq!(InputProblem::NotUtf8(2).line(), Some(2));
        assert_eq!(InputProblem::Missing.line(), None);
        assert_eq!(InputProblem::Empty.line(), None);
        let too = |size_bytes, cap_bytes| {
            InputProblem::TooLarge {
                size_bytes,
                cap_bytes,
            }
            .message()
        };
        assert_eq!(
            too(20, 16 << 20),
            "file grew while being read, more than the limit of 16 MiB for this input; raise \
             the limit with --max-input-bytes"
        );
        assert_eq!(
            too(11, 10),
            "file is 11 bytes, more than the limit of 10 bytes for this input; raise the limit \
             with --max-input-bytes"
        );
        // Equal sizes are not "larger" (only a file that grew gets here with size <= cap).
        assert!(too(10, 10).starts_with("file grew while being read, "));
        let e = InputError {
            path: "p.txt".into(),
            problem: InputProblem::NotUtf8(4),
        };
        assert_eq!(e.line(), Some(4));
        assert_eq!(
            e.message(),
            "expected UTF-8 text, got invalid UTF-8 bytes on line 4"
        );
        assert_eq!(
            e.to_string(),
            "p.txt: expected UTF-8 text, got invalid UTF-8 bytes on line 4"
        );
        for (p, m) in [
            (InputProblem::Missing, "file does not exist"),
            (
                InputProblem::NotRegular("a FIFO"),
                "not a regular file (a FIFO); give the path of a file",
            ),
            (InputProblem::Empty, "file is empty"),
            (
                InputProblem::Binary(2),
                "expected text, got binary data (a NUL byte on line 2)",
            ),
            (
                InputProblem::Io("denied".into()),
                "cannot read the file: denied",
            ),
        ] {
            assert_eq!(p.message(), m);
        }
    }

    #[test]
    fn text_checks() {
        assert_eq!(text_from_bytes(b"a\nb".to_vec()), Ok("a\nb".to_owned()));
        assert_eq!(text_from_bytes(b" \n\t".to_vec()), Err(InputProblem::Empty));
        // The NUL and the bad byte are on line 3 (two line breaks before them).
        assert_eq!(
            text_from_bytes(b"a\nb\n\0".to_vec()),
            Err(InputProblem::Binary(3))
        );
        assert_eq!(
            text_from_bytes(b"a\nb\nc\xff".to_vec()),
            Err(InputProblem::NotUtf8(3))
        );
        assert_eq!(
            text_from_bytes(b"\xff".to_vec()),
            Err(InputProblem::NotUtf8(1))
        );
    }

    /// The only test in this binary that sets the global cap (the parse and stats unit tests
    /// read no files).
    #[test]
    fn files_kinds_and_caps() {
        let dir = std::env::temp_dir().join(format!("disagg-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ten = dir.join("ten.txt");
        std::fs::write(&ten, b"0123456789").unwrap();
        let eleven = dir.join("eleven.txt");
        std::fs::write(&eleven, b"0123456789a").unwrap();

        assert_eq!(max_input_bytes(InputKind::Data), DATA_CAP_BYTES);
        assert_eq!(max_input_bytes(InputKind::Config), CONFIG_CAP_BYTES);
        set_max_input_bytes(Some(10));
        assert_eq!(max_input_bytes(InputKind::Data), 10);
        assert_eq!(max_input_bytes(InputKind::Config), 10);
        // Exactly the cap is allowed, one byte more is not.
        let got = read_input(&ten, InputKind::Data);
        let over = read_input(&eleven, InputKind::Config);
        set_max_input_bytes(None);
        assert_eq!(max_input_bytes(InputKind::Data), DATA_CAP_BYTES);
        assert_eq!(got.unwrap(), "0123456789");
        assert_eq!(
            over.unwrap_err().problem,
            InputProblem::TooLarge {
                size_bytes: 11,
                cap_bytes: 10
            }
        );

        let e = read_input(&dir.join("none.txt"), InputKind::Data).unwrap_err();
        assert_eq!(e.problem, InputProblem::Missing);
        let e = read_input(&dir, InputKind::Data).unwrap_err();
        assert_eq!(e.problem, InputProblem::NotRegular("a directory"));
        #[cfg(unix)]
        {
            let e = read_input(Path::new("/dev/null"), InputKind::Data).unwrap_err();
            assert_eq!(e.problem, InputProblem::NotRegular("a character device"));
            let fifo = dir.join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            if made.map(|s| s.success()).unwrap_or(false) {
                let e = read_input(&fifo, InputKind::Data).unwrap_err();
                assert_eq!(e.problem, InputProblem::NotRegular("a FIFO"));
            }
        }
        // Not found is "missing", other errors are the system's words.
        let e = read_input(&ten.join("below"), InputKind::Data).unwrap_err();
        assert!(matches!(e.problem, InputProblem::Io(_)), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
