//! Output files: checked before a run starts, written whole or not at all (a temporary file next to
//! the target, renamed into place when complete).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::UsageError;

/// Fails early if `path`'s directory does not exist or `path` is a directory.
pub fn check_writable(flag: &str, path: &Path) -> Result<(), UsageError> {
    if path.is_dir() {
        return Err(UsageError(format!(
            "{flag}: '{}' is a directory",
            path.display()
        )));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(UsageError(format!(
            "{flag}: directory '{}' does not exist",
            dir.display()
        )));
    }
    Ok(())
}

/// A file being written: lands at its path only on [`Pending::commit`]; dropped, it is removed.
pub struct Pending {
    tmp: PathBuf,
    path: PathBuf,
    pub out: Option<BufWriter<File>>,
}

impl Pending {
    /// Creates the temporary file next to `path`.
    pub fn create(flag: &str, path: &Path) -> Result<Pending, UsageError> {
        check_writable(flag, path)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let f = File::create(&tmp)
            .map_err(|e| UsageError(format!("{flag}: cannot write '{}': {e}", path.display())))?;
        Ok(Pending {
            tmp,
            path: path.to_path_buf(),
            out: Some(BufWriter::new(f)),
        })
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.out.as_mut().expect("open until commit")
    }

    /// Flushes and renames into place.
    pub fn commit(mut self) -> Result<(), UsageError> {
        let mut w = self.out.take().expect("open until commit");
        w.flush()
            .map_err(|e| UsageError(format!("cannot write '{}': {e}", self.path.display())))?;
        drop(w);
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| UsageError(format!("cannot write '{}': {e}", self.path.display())))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.out.is_some() {
            self.out.take();
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `path` whole or not at all.
pub fn write_file_atomic(flag: &str, path: &Path, bytes: &[u8]) -> Result<(), UsageError> {
    let mut p = Pending::create(flag, path)?;
    p.writer()
        .write_all(bytes)
        .map_err(|e| UsageError(format!("{flag}: cannot write '{}': {e}", path.display())))?;
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
