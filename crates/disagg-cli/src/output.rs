//! Output files and standard output.
//!
//! Where an output path points decides how it is written:
//! - `-`: standard output;
//! - a regular file (or a path that does not exist yet): written whole or not at all, to a
//!   temporary file next to the target that is renamed into place when complete; the target's
//!   permission bits are kept;
//! - a symbolic link: followed; its final target is written as above and the link stays;
//! - a FIFO or a character device: opened for writing and written through, never replaced;
//! - a directory (or a block device or socket): refused.
//!
//! Standard output goes through [`out!`] and [`outln!`], which return from the command with an
//! error instead of panicking when the write fails; a closed pipe ends the process quietly.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::UsageError;

/// Set when standard output turned out to be a closed pipe: the process ends quietly (status 0).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a write to standard output met a closed pipe.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// The error of a failed write to standard output (and notes a closed pipe).
pub fn stdout_error(e: std::io::Error) -> UsageError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        return UsageError("standard output is closed".into());
    }
    UsageError(format!("cannot write to standard output: {e}"))
}

thread_local! {
    /// Where standard output goes on this thread while [`capturing`]: a buffer, not the process's.
    static CAPTURE: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with what it writes through [`out!`] and [`outln!`] on this thread kept in a string
/// (for in-process callers: the Python package); returns `f`'s result and the text.
pub fn capturing<T>(f: impl FnOnce() -> T) -> (T, String) {
    let outer = CAPTURE.with(|c| c.replace(Some(String::new())));
    let result = f();
    let text = CAPTURE.with(|c| c.replace(outer)).unwrap_or_default();
    (result, text)
}

/// Writes formatted text to standard output (or to the buffer of [`capturing`]).
pub fn write_stdout(args: std::fmt::Arguments) -> Result<(), UsageError> {
    let captured = CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some(buf) => {
            std::fmt::Write::write_fmt(buf, args).expect("a String takes any text");
            true
        }
        None => false,
    });
    if captured {
        return Ok(());
    }
    std::io::stdout()
        .lock()
        .write_fmt(args)
        .map_err(stdout_error)
}

/// Flushes standard output.
pub fn flush_stdout() -> Result<(), UsageError> {
    if CAPTURE.with(|c| c.borrow().is_some()) {
        return Ok(());
    }
    std::io::stdout().lock().flush().map_err(stdout_error)
}

/// Like `print!`, but a failed write returns from the enclosing function with a [`UsageError`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))?
    };
}

/// Like `println!`, but a failed write returns from the enclosing function with a [`UsageError`].
macro_rules! outln {
    () => {
        $crate::output::write_stdout(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

pub(crate) use {out, outln};

/// Where an output flag's value points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `-`.
    Stdout,
    /// A FIFO or character device: written through.
    Through(PathBuf),
    /// A regular file, existing or not (symbolic links resolved): replaced atomically.
    Replace(PathBuf),
}

/// The path a chain of symbolic links ends at (the path itself if it is not a link).
fn follow_links(flag: &str, path: &Path) -> Result<PathBuf, UsageError> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| {
                    UsageError(format!("{flag}: cannot read link '{}': {e}", p.display()))
                })?;
                p = if to.is_absolute() {
                    to
                } else {
                    p.parent().unwrap_or(Path::new("")).join(to)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(UsageError(format!(
        "{flag}: '{}': too many levels of symbolic links",
        path.display()
    )))
}

/// Decides how `path` (the value of `flag`) is written, failing early on what cannot be.
pub fn resolve(flag: &str, path: &Path) -> Result<Target, UsageError> {
    if path.as_os_str() == "-" {
        return Ok(Target::Stdout);
    }
    // The kernel follows the links (also /proc's, such as /dev/stdout).
    match std::fs::metadata(path) {
        Ok(m) => {
            let t = m.file_type();
            if t.is_dir() {
                return Err(UsageError(format!(
                    "{flag}: '{}' is a directory",
                    path.display()
                )));
            }
            if t.is_file() {
                let real = std::fs::canonicalize(path).map_err(|e| {
                    UsageError(format!("{flag}: cannot write '{}': {e}", path.display()))
                })?;
                return Ok(Target::Replace(real));
            }
            if is_fifo_or_char_device(&t) {
                return Ok(Target::Through(path.to_path_buf()));
            }
            Err(UsageError(format!(
                "{flag}: '{}' is not a regular file, FIFO or character device",
                path.display()
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A new file, or a link to one that does not exist yet: created where the links end.
            let real = follow_links(flag, path)?;
            let dir = match real.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if !dir.is_dir() {
                return Err(UsageError(format!(
                    "{flag}: directory '{}' does not exist",
                    dir.display()
                )));
            }
            Ok(Target::Replace(real))
        }
        Err(e) => Err(UsageError(format!(
            "{flag}: cannot write '{}': {e}",
            path.display()
        ))),
    }
}

#[cfg(unix)]
fn is_fifo_or_char_device(t: &std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    t.is_fifo() || t.is_char_device()
}

#[cfg(not(unix))]
fn is_fifo_or_char_device(_: &std::fs::FileType) -> bool {
    false
}

/// Fails early if `path` cannot be written (see the module's rules).
pub fn check_writable(flag: &str, path: &Path) -> Result<(), UsageError> {
    resolve(flag, path).map(|_| ())
}

/// Where a [`Pending`] writes.
pub enum Sink {
    Stdout(std::io::Stdout),
    File(File),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Stdout(s) => s.write(buf),
            Sink::File(f) => f.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(s) => s.flush(),
            Sink::File(f) => f.flush(),
        }
    }
}

/// How a [`Pending`] lands.
enum Landing {
    /// Nothing to do (standard output, a FIFO or a device).
    Direct,
    /// Rename `tmp` over `target`, giving it `perms` (the replaced file's) first.
    Rename {
        tmp: PathBuf,
        target: PathBuf,
        perms: Option<Permissions>,
    },
}

/// An output being written: a regular file lands at its path only on [`Pending::commit`];
/// dropped before, its temporary file is removed.
pub struct Pending {
    flag: String,
    shown: PathBuf,
    landing: Landing,
    stdout: bool,
    committed: bool,
    keep_on_failure: bool,
    pub out: Option<BufWriter<Sink>>,
}

impl Pending {
    /// Opens `path` (the value of `flag`) for writing: a temporary file next to a regular
    /// target, standard output for `-`, the node itself for a FIFO or device.
    pub fn create(flag: &str, path: &Path) -> Result<Pending, UsageError> {
        let target = resolve(flag, path)?;
        Pending::open(
            flag,
            path,
            target,
            |name| format!(".{name}.{}.tmp", std::process::id()),
            None,
        )
    }

    /// Like [`Pending::create`] for a resolved `target`, with the temporary file of a regular
    /// target named by `tmp_name` (given the target's file name). With `resume_at`, an existing
    /// temporary file is kept up to that many bytes and written on from there.
    pub fn open(
        flag: &str,
        shown: &Path,
        target: Target,
        tmp_name: impl Fn(&str) -> String,
        resume_at: Option<u64>,
    ) -> Result<Pending, UsageError> {
        let cannot = |e: std::io::Error| {
            UsageError(format!("{flag}: cannot write '{}': {e}", shown.display()))
        };
        let (sink, landing, stdout) = match target {
            Target::Stdout => (Sink::Stdout(std::io::stdout()), Landing::Direct, true),
            Target::Through(p) => (
                Sink::File(OpenOptions::new().write(true).open(&p).map_err(cannot)?),
                Landing::Direct,
                false,
            ),
            Target::Replace(p) => {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let tmp = p.with_file_name(tmp_name(&name));
                let perms = std::fs::metadata(&p).ok().map(|m| m.permissions());
                let f = match resume_at {
                    None => File::create(&tmp).map_err(cannot)?,
                    Some(bytes) => {
                        let mut f = OpenOptions::new().write(true).open(&tmp).map_err(cannot)?;
                        f.set_len(bytes).map_err(cannot)?;
                        f.seek(SeekFrom::End(0)).map_err(cannot)?;
                        f
                    }
                };
                (
                    Sink::File(f),
                    Landing::Rename {
                        tmp,
                        target: p,
                        perms,
                    },
                    false,
                )
            }
        };
        Ok(Pending {
            flag: flag.to_string(),
            shown: shown.to_path_buf(),
            landing,
            stdout,
            committed: false,
            keep_on_failure: false,
            out: Some(BufWriter::new(sink)),
        })
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut BufWriter<Sink> {
        self.out.as_mut().expect("open until commit")
    }

    /// Keeps the temporary file if this output is dropped before [`Pending::commit`] (it holds
    /// work to resume from).
    pub fn keep_on_failure(&mut self) {
        self.keep_on_failure = true;
    }

    /// The temporary file a regular target is written to before it lands.
    pub fn tmp_path(&self) -> Option<&Path> {
        match &self.landing {
            Landing::Rename { tmp, .. } => Some(tmp),
            Landing::Direct => None,
        }
    }

    /// The error of a failed write to this output.
    pub fn error(&self, e: std::io::Error) -> UsageError {
        if self.stdout {
            return stdout_error(e);
        }
        UsageError(format!(
            "{}: cannot write '{}': {e}",
            self.flag,
            self.shown.display()
        ))
    }

    /// Writes `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), UsageError> {
        let r = self.writer().write_all(bytes);
        r.map_err(|e| self.error(e))
    }

    /// Flushes what was written so far to the file (or stream).
    pub fn flush(&mut self) -> Result<(), UsageError> {
        let r = self.writer().flush();
        r.map_err(|e| self.error(e))
    }

    /// Flushes and, for a regular file, renames into place with the replaced file's permissions.
    pub fn commit(mut self) -> Result<(), UsageError> {
        self.flush()?;
        self.out.take();
        if let Landing::Rename { tmp, target, perms } = &self.landing {
            if let Some(p) = perms {
                std::fs::set_permissions(tmp, p.clone()).map_err(|e| self.error(e))?;
            }
            std::fs::rename(tmp, target).map_err(|e| self.error(e))?;
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.out.take();
        if self.committed || self.keep_on_failure {
            return;
        }
        if let Landing::Rename { tmp, .. } = &self.landing {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Writes `bytes` to `path` whole or not at all.
pub fn write_file_atomic(flag: &str, path: &Path, bytes: &[u8]) -> Result<(), UsageError> {
    let mut p = Pending::create(flag, path)?;
    p.write_all(bytes)?;
    p.commit()
}

/// A float in shortest round-trip form, empty for `None`.
pub fn csv_f64(x: Option<f64>) -> String {
    match x {
        Some(v) => {
            let mut b = ryu_like(v);
            if b == "-0" {
                b = "-0.0".into();
            }
            b
        }
        None => String::new(),
    }
}

fn ryu_like(v: f64) -> String {
    // serde_json prints f64 in shortest round-trip form (ryu); reuse it for CSV.
    serde_json::to_string(&v).unwrap_or_default()
}
