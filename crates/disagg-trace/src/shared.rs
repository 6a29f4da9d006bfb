//! Where the public traces are looked for. They are third-party data (Azure, Mooncake) and are
//! never part of this repository: users download them (see the README) into `../shared/traces/`
//! next to the repository, or anywhere they name with `$DISAGG_TRACES_DIR`. The benchmarks and
//! the tests that check the traces' statistics read them from there.

use std::path::{Path, PathBuf};

/// The environment variable naming the directory of the real traces.
pub const TRACES_DIR_ENV: &str = "DISAGG_TRACES_DIR";

/// The path of the real trace `name` and how to show it: in `$DISAGG_TRACES_DIR`, else in
/// `../shared/traces/` beside `repo_root` (the repository's root directory).
pub fn trace_path(repo_root: &Path, name: &str) -> (PathBuf, String) {
    match std::env::var_os(TRACES_DIR_ENV) {
        Some(dir) => {
            let p = PathBuf::from(dir).join(name);
            let shown = p.display().to_string();
            (p, shown)
        }
        None => (
            repo_root.join("../shared/traces").join(name),
            format!("../shared/traces/{name}"),
        ),
    }
}

/// For tests: the path of the real trace `name` if it is there; else `None`, after printing
/// `skipped: ../shared/traces/NAME not found` so that the skip is visible in the test output.
pub fn trace_or_skip(repo_root: &Path, name: &str) -> Option<PathBuf> {
    let (path, shown) = trace_path(repo_root, name);
    if path.is_file() {
        Some(path)
    } else {
        println!("skipped: {shown} not found (set {TRACES_DIR_ENV} to read it elsewhere)");
        None
    }
}
