//! Output files and standard output.
//!
//! Where an output path points decides how it is written:
//! - `-`: standard output;
//! - a regular file (or a path that does not exist yet): written whole or not at all, to a
//!   temporary file next to the target that is renamed into place when complete; the target's
//!   permission bits are kept;
//! - a symbolic link: followed; its final target is written as above and the link stays;
//! - a FIFO or a character device: opened for writing and written through, never replaced (a
//!   FIFO without a reader fails after [`FIFO_TIMEOUT_S`] seconds instead of blocking);
//! - a directory (or a block device or socket): refused.
//!
//! Temporary files are new files (`O_EXCL`) with unpredictable names, so a planted link is never
//! followed; the ones being written are removed on SIGINT/SIGTERM ([`clean_up_on_signals`]).
//! [`check_distinct`] refuses an output that is an input or another output before anything runs.
//!
//! Standard output goes through [`out!`] and [`outln!`], which return from the command with an
//! error instead of panicking when the write fails; a closed pipe ends the process quietly.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{CmdResult, UsageError};

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
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(::std::format_args!($($arg)*))?
    };
}

/// Like `println!`, but a failed write returns from the enclosing function with a [`UsageError`].
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::write_stdout(::std::format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(::std::format_args!("{}\n", ::std::format_args!($($arg)*)))?
    };
}

pub use crate::{out, outln};

/// The directories an output created (a `--plot` directory and its parents), deepest first, so
/// a failed command can remove them again.
static CREATED_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Notes directories created for an output, deepest first ([`remove_created_dirs`]).
pub fn note_created_dirs(dirs: impl IntoIterator<Item = PathBuf>) {
    CREATED_DIRS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(dirs);
}

/// Removes the directories noted by [`note_created_dirs`] that are still empty (after a
/// failure).
pub fn remove_created_dirs() {
    let dirs = std::mem::take(&mut *CREATED_DIRS.lock().unwrap_or_else(|e| e.into_inner()));
    for d in dirs {
        let _ = std::fs::remove_dir(d);
    }
}

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

/// The input and output files of a command line, by flag, for [`check_distinct`].
#[derive(Clone, Debug, Default)]
pub struct Files {
    /// Files read (`--config`, `--trace-file`, `--catalogue`, ...).
    pub inputs: Vec<(&'static str, PathBuf)>,
    /// Files written (`--requests-out`, `--csv`, `--out`, ...); `-` (standard output) is skipped.
    pub outputs: Vec<(&'static str, PathBuf)>,
}

impl Files {
    /// Adds input `path` of `flag`, if given.
    pub fn input(&mut self, flag: &'static str, path: Option<&Path>) -> &mut Self {
        self.inputs.extend(path.map(|p| (flag, p.to_path_buf())));
        self
    }

    /// Adds output `path` of `flag`, if given.
    pub fn output(&mut self, flag: &'static str, path: Option<&Path>) -> &mut Self {
        self.outputs.extend(path.map(|p| (flag, p.to_path_buf())));
        self
    }

    /// [`check_distinct`] of these files.
    pub fn check(&self) -> CmdResult {
        fn refs<'a>(v: &'a [(&'static str, PathBuf)]) -> Vec<(&'static str, &'a Path)> {
            v.iter().map(|(f, p)| (*f, p.as_path())).collect()
        }
        check_distinct(&refs(&self.inputs), &refs(&self.outputs))
    }
}

/// What a path names, to tell whether two paths are one file: its device and inode when it
/// exists (a hard link or a symbolic link to the same file has the same), and its canonical path
/// (for a new file, the canonical directory its links end in, joined to the final name).
#[derive(Debug, PartialEq, Eq)]
struct Identity {
    node: Option<(u64, u64)>,
    path: Option<PathBuf>,
    regular: bool,
}

fn identity(path: &Path) -> Identity {
    let meta = std::fs::metadata(path).ok();
    #[cfg(unix)]
    let node = {
        use std::os::unix::fs::MetadataExt;
        meta.as_ref().map(|m| (m.dev(), m.ino()))
    };
    #[cfg(not(unix))]
    let node = None;
    let path = std::fs::canonicalize(path).ok().or_else(|| {
        let real = follow_links("", path).ok()?;
        let name = real.file_name()?;
        let dir = match real.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some(std::fs::canonicalize(dir).ok()?.join(name))
    });
    Identity {
        node,
        path,
        regular: !matches!(&meta, Some(m) if !m.is_file()),
    }
}

impl Identity {
    fn same(&self, other: &Identity) -> bool {
        (self.node.is_some() && self.node == other.node)
            || (self.path.is_some() && self.path == other.path)
    }
}

/// Refuses, before anything runs, an output that is one of the inputs (writing it would replace
/// the input) and two outputs that are one file (one would replace the other), whatever the
/// paths look like: they are compared by device and inode and by canonical path, so symbolic and
/// hard links are caught. Standard output (`-`) is not a file; two outputs may share a FIFO or a
/// character device (`/dev/null`). The error names both flags.
pub fn check_distinct(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> CmdResult {
    let ins: Vec<Identity> = inputs.iter().map(|(_, p)| identity(p)).collect();
    let mut seen: Vec<(&str, &Path, Identity)> = Vec::new();
    for &(flag, path) in outputs {
        if path.as_os_str() == "-" {
            continue;
        }
        let id = identity(path);
        for ((in_flag, in_path), in_id) in inputs.iter().zip(&ins) {
            // A FIFO or device is never an input file (the reader refuses it, saying so).
            if id.regular && id.same(in_id) {
                return Err(UsageError(format!(
                    "{flag}: '{}' is the {in_flag} input '{}': writing it would replace the \
                     input; give another path",
                    path.display(),
                    in_path.display()
                )));
            }
        }
        for (other_flag, other_path, other) in &seen {
            if id.regular && other.regular && id.same(other) {
                return Err(UsageError(format!(
                    "{flag}: '{}' is also the {other_flag} output '{}': one would replace the \
                     other; give two paths",
                    path.display(),
                    other_path.display()
                )));
            }
        }
        seen.push((flag, path, id));
    }
    Ok(())
}

/// The temporary files being written now: removed by the signal handler
/// ([`clean_up_on_signals`]) before the process ends.
static TEMP_FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn temp_files() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMP_FILES.lock().unwrap_or_else(|e| e.into_inner())
}

/// The temporary files registered now (for tests).
pub fn live_temp_files() -> Vec<PathBuf> {
    temp_files().clone()
}

/// 16 hex digits no other user can predict: a counter and the time hashed with the process's
/// randomly keyed SipHash.
fn unpredictable() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    h.write_u128(now.as_nanos());
    format!("{:016x}", h.finish())
}

/// Creates a new temporary file `.NAME.XXXXXXXXXXXXXXXX.tmp` next to `target` (never an existing
/// path: `O_EXCL`, so a planted symbolic link is not followed) and registers it for removal on a
/// signal.
fn create_temp(target: &Path) -> std::io::Result<(PathBuf, File)> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut last = None;
    for _ in 0..64 {
        let tmp = target.with_file_name(format!(".{name}.{}.tmp", unpredictable()));
        // Created and registered under the lock: the signal handler sees every temporary file.
        let mut live = temp_files();
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => {
                live.push(tmp.clone());
                return Ok((tmp, f));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// Forgets (and with `remove`, removes) temporary file `tmp`.
fn release_temp(tmp: &Path, remove: bool) {
    let mut live = temp_files();
    if remove {
        let _ = std::fs::remove_file(tmp);
    }
    live.retain(|p| p != tmp);
}

/// Removes every registered temporary file (a signal ends the process).
fn remove_temp_files() {
    for p in temp_files().drain(..) {
        let _ = std::fs::remove_file(p);
    }
}

/// Installs handlers of SIGINT and SIGTERM (unless they are ignored) that remove the temporary
/// files being written and the empty `--plot` directories the command created, then end the
/// process with status 128 + the signal's number (130 for Ctrl-C). A sweep's `FILE.partial` is
/// kept (`--resume` continues from it). The handler only writes the signal's number to a pipe;
/// a thread reads it and cleans up. For the binary only (not for in-process callers).
#[cfg(unix)]
pub fn clean_up_on_signals() {
    use std::io::Read;
    use std::os::unix::io::FromRawFd;
    use std::sync::atomic::AtomicI32;
    static PIPE: AtomicI32 = AtomicI32::new(-1);
    extern "C" fn on_signal(sig: libc::c_int) {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; a failed write is ignored.
        unsafe {
            libc::write(PIPE.load(Ordering::Relaxed), (&b as *const u8).cast(), 1);
        }
    }
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return;
    }
    for fd in fds {
        // SAFETY: a descriptor just opened; close-on-exec keeps it out of `bench`'s children.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    PIPE.store(fds[1], Ordering::Relaxed);
    // SAFETY: `fds[0]` is open and owned by nothing else.
    let mut read = unsafe { File::from_raw_fd(fds[0]) };
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut b = [0u8; 1];
            if read.read_exact(&mut b).is_ok() {
                remove_temp_files();
                remove_created_dirs();
                // Holding the lock: no temporary file is created between the removal and the end.
                let _live = temp_files();
                std::process::exit(128 + i32::from(b[0]));
            }
        });
    if spawned.is_err() {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: plain sigaction(2) calls on zero-initialised structs; the handler only calls
        // write(2).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// No signal handling off Unix.
#[cfg(not(unix))]
pub fn clean_up_on_signals() {}

/// How long opening a FIFO waits for a reader: `DISAGG_FIFO_TIMEOUT` seconds (0 to 86,400), else
/// [`FIFO_TIMEOUT_S`]; any other value is an error naming the variable.
fn fifo_timeout() -> Result<Duration, UsageError> {
    fifo_timeout_of(std::env::var("DISAGG_FIFO_TIMEOUT").ok().as_deref())
}

fn fifo_timeout_of(value: Option<&str>) -> Result<Duration, UsageError> {
    let Some(v) = value else {
        return Ok(Duration::from_secs(FIFO_TIMEOUT_S));
    };
    match v.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(UsageError(format!(
            "DISAGG_FIFO_TIMEOUT: expected seconds from 0 to 86400, got '{v}'"
        ))),
    }
}

/// How long an output FIFO may go without a reader before the command fails: 10 s.
pub const FIFO_TIMEOUT_S: u64 = 10;

/// Opens a FIFO or character device `p` for writing without blocking on a FIFO that has no reader:
/// opened non-blocking, retried until a reader appears or [`fifo_timeout`] passes, then switched
/// back to blocking writes.
#[cfg(unix)]
fn open_through(flag: &str, shown: &Path, p: &Path) -> Result<File, UsageError> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let timeout = fifo_timeout()?;
    let deadline = Instant::now() + timeout;
    loop {
        let opened = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(p);
        match opened {
            Ok(f) => {
                let fd = f.as_raw_fd();
                // SAFETY: fcntl(2) on a descriptor `f` owns.
                let cleared = unsafe {
                    let flags = libc::fcntl(fd, libc::F_GETFL);
                    flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
                };
                if !cleared {
                    let e = std::io::Error::last_os_error();
                    return Err(UsageError(format!(
                        "{flag}: cannot write '{}': {e}",
                        shown.display()
                    )));
                }
                return Ok(f);
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if Instant::now() >= deadline {
                    return Err(UsageError(format!(
                        "{flag}: no process opened the FIFO '{}' for reading within {} s",
                        shown.display(),
                        timeout.as_secs_f64()
                    )));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                return Err(UsageError(format!(
                    "{flag}: cannot write '{}': {e}",
                    shown.display()
                )))
            }
        }
    }
}

#[cfg(not(unix))]
fn open_through(flag: &str, shown: &Path, p: &Path) -> Result<File, UsageError> {
    OpenOptions::new()
        .write(true)
        .open(p)
        .map_err(|e| UsageError(format!("{flag}: cannot write '{}': {e}", shown.display())))
}

/// Opens `path` without following a symbolic link at its end, and only if it is a regular file
/// owned by this user (a sweep's `FILE.partial`, which another user could have planted): for
/// appending with `write`, else for reading. Anything else is one line naming `flag`.
pub fn open_own_file(flag: &str, path: &Path, write: bool) -> Result<File, UsageError> {
    let refused = || {
        UsageError(format!(
            "{flag}: '{}' is not a regular file owned by you (a symbolic link, a FIFO or another \
             user's file?): remove it or give another path",
            path.display()
        ))
    };
    let cannot =
        |e: std::io::Error| UsageError(format!("{flag}: cannot open '{}': {e}", path.display()));
    let mut o = OpenOptions::new();
    o.read(!write).write(write);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let f = match o.open(path) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(refused()),
        Err(e) => return Err(cannot(e)),
    };
    let meta = f.metadata().map_err(cannot)?;
    if !meta.is_file() || !owned_by_me(&meta) {
        return Err(refused());
    }
    Ok(f)
}

/// Whether the file at `path` (not following a symbolic link at its end) exists; an error if it
/// exists but is not a regular file owned by this user (see [`open_own_file`]).
pub fn own_file_exists(flag: &str, path: &Path) -> Result<bool, UsageError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() && owned_by_me(&m) => Ok(true),
        Ok(_) => Err(UsageError(format!(
            "{flag}: '{}' is not a regular file owned by you (a symbolic link, a FIFO or another \
             user's file?): remove it or give another path",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(UsageError(format!(
            "{flag}: cannot open '{}': {e}",
            path.display()
        ))),
    }
}

#[cfg(unix)]
fn owned_by_me(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid(2) cannot fail.
    m.uid() == unsafe { libc::geteuid() }
}

#[cfg(not(unix))]
fn owned_by_me(_: &std::fs::Metadata) -> bool {
    true
}

/// The partial file of the output at `real` (a regular file's path, links resolved): `FILE.partial`
/// next to it, where a sweep keeps its finished rows while it runs.
pub fn partial_path(real: &Path) -> PathBuf {
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    real.with_file_name(format!("{name}.partial"))
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

/// The file a regular target is written to before it lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Temp {
    /// A new file with an unpredictable name next to the target, removed on failure or a signal.
    Random,
    /// The sweep's `FILE.partial` next to the target (kept on a signal, for `--resume`): created
    /// new, or with `Some(bytes)` an existing one of this user's kept up to `bytes` and written
    /// on from there.
    Partial(Option<u64>),
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
        registered: bool,
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
    /// Opens `path` (the value of `flag`) for writing: a new temporary file next to a regular
    /// target, standard output for `-`, the node itself for a FIFO or device.
    pub fn create(flag: &str, path: &Path) -> Result<Pending, UsageError> {
        let target = resolve(flag, path)?;
        Pending::open(flag, path, target, Temp::Random)
    }

    /// Like [`Pending::create`] for a resolved `target`, with the temporary file of a regular
    /// target chosen by `temp`.
    pub fn open(
        flag: &str,
        shown: &Path,
        target: Target,
        temp: Temp,
    ) -> Result<Pending, UsageError> {
        let cannot = |e: std::io::Error| {
            UsageError(format!("{flag}: cannot write '{}': {e}", shown.display()))
        };
        let (sink, landing, stdout) = match target {
            Target::Stdout => (Sink::Stdout(std::io::stdout()), Landing::Direct, true),
            Target::Through(p) => (
                Sink::File(open_through(flag, shown, &p)?),
                Landing::Direct,
                false,
            ),
            Target::Replace(p) => {
                let perms = std::fs::metadata(&p).ok().map(|m| m.permissions());
                let (tmp, f, registered) = match temp {
                    Temp::Random => {
                        let (tmp, f) = create_temp(&p).map_err(cannot)?;
                        (tmp, f, true)
                    }
                    Temp::Partial(resume_at) => {
                        let tmp = partial_path(&p);
                        let f = match resume_at {
                            None => OpenOptions::new()
                                .write(true)
                                .create_new(true)
                                .open(&tmp)
                                .map_err(cannot)?,
                            Some(bytes) => {
                                let mut f = open_own_file(flag, &tmp, true)?;
                                f.set_len(bytes).map_err(cannot)?;
                                f.seek(SeekFrom::End(0)).map_err(cannot)?;
                                f
                            }
                        };
                        (tmp, f, false)
                    }
                };
                (
                    Sink::File(f),
                    Landing::Rename {
                        tmp,
                        target: p,
                        perms,
                        registered,
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
        if let Landing::Rename {
            tmp,
            target,
            perms,
            registered,
        } = &self.landing
        {
            if let Some(p) = perms {
                std::fs::set_permissions(tmp, p.clone()).map_err(|e| self.error(e))?;
            }
            std::fs::rename(tmp, target).map_err(|e| self.error(e))?;
            if *registered {
                release_temp(tmp, false);
            }
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.out.take();
        if self.committed {
            return;
        }
        if let Landing::Rename {
            tmp, registered, ..
        } = &self.landing
        {
            if *registered {
                release_temp(tmp, !self.keep_on_failure);
            } else if !self.keep_on_failure {
                let _ = std::fs::remove_file(tmp);
            }
        }
    }
}

/// Lands `outputs` (commits them in order) if the command's report `reported` went out, or met a
/// closed standard output (the command still succeeds: `disagg run --requests-out F | head`);
/// else drops them, removing their temporary files. Returns the first error.
pub fn land(outputs: Vec<Pending>, reported: CmdResult) -> CmdResult {
    if reported.is_err() && !stdout_closed() {
        return reported;
    }
    outputs.into_iter().try_for_each(Pending::commit)?;
    reported
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("disagg-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_fifo_timeout_is_seconds_or_an_error() {
        assert_eq!(fifo_timeout_of(None).unwrap(), Duration::from_secs(10));
        assert_eq!(
            fifo_timeout_of(Some("0.5")).unwrap(),
            Duration::from_millis(500)
        );
        for bad in ["soon", "-1", "nan", "1e9"] {
            let e = fifo_timeout_of(Some(bad)).unwrap_err().0;
            assert_eq!(
                e,
                format!("DISAGG_FIFO_TIMEOUT: expected seconds from 0 to 86400, got '{bad}'")
            );
        }
    }

    #[test]
    fn temporary_files_are_new_unpredictable_and_registered() {
        let d = scratch("temps");
        let target = d.join("out.csv");
        let a = Pending::create("--a", &target).unwrap();
        let b = Pending::create("--b", &target).unwrap();
        let (ta, tb) = (a.tmp_path().unwrap(), b.tmp_path().unwrap());
        assert_ne!(ta, tb, "two outputs to one target share a temporary file");
        let name = ta.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(".out.csv.") && name.ends_with(".tmp"),
            "{name}"
        );
        assert!(
            !name.contains(&std::process::id().to_string()),
            "predictable: {name}"
        );
        let live = live_temp_files();
        assert!(live.iter().any(|p| p == ta) && live.iter().any(|p| p == tb));
        let (ta, tb) = (ta.to_path_buf(), tb.to_path_buf());
        drop(a);
        assert!(!ta.exists() && !live_temp_files().contains(&ta));
        b.commit().unwrap();
        assert!(!live_temp_files().contains(&tb));
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn distinct_files_by_inode_and_canonical_path() {
        let d = scratch("distinct");
        let f = d.join("f");
        std::fs::write(&f, "x").unwrap();
        let hard = d.join("hard");
        std::fs::hard_link(&f, &hard).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("f", d.join("sym")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("new", d.join("dangling")).unwrap();
        let new = d.join("new");
        let dotted = d.join(".").join("new");
        let out = |p: &Path| check_distinct(&[("--in", &f)], &[("--out", p)]);
        let e = out(&f).unwrap_err().0;
        assert!(
            e.starts_with("--out: ") && e.contains("the --in input"),
            "{e}"
        );
        assert!(out(&hard).is_err());
        #[cfg(unix)]
        assert!(out(&d.join("sym")).is_err());
        assert!(out(&new).is_ok());
        assert!(out(Path::new("-")).is_ok());
        // Two new outputs, one through a link that does not resolve yet.
        let two = |a: &Path, b: &Path| check_distinct(&[], &[("--a", a), ("--b", b)]);
        let e = two(&new, &dotted).unwrap_err().0;
        assert!(
            e.starts_with("--b: ") && e.contains("the --a output"),
            "{e}"
        );
        #[cfg(unix)]
        assert!(two(&new, &d.join("dangling")).is_err());
        assert!(two(&new, &f).is_ok());
        assert!(two(Path::new("-"), Path::new("-")).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
