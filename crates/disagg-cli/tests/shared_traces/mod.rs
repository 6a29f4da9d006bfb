//! Where the CLI tests find the real traces: `../shared/traces/` next to the repository, or
//! `$DISAGG_TRACES_DIR`. They are third-party data, never committed to this repository; a test
//! that needs one passes with a `skipped: ... not found` message when it is absent.
#![allow(dead_code)]

use std::path::PathBuf;

/// The path of the real trace `name`, or `None` (after printing why the test is skipped).
pub fn shared_trace(name: &str) -> Option<String> {
    let (path, shown) = match std::env::var_os("DISAGG_TRACES_DIR") {
        Some(dir) => {
            let p = PathBuf::from(dir).join(name);
            let shown = p.display().to_string();
            (p, shown)
        }
        None => (
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/traces")
                .join(name),
            format!("../shared/traces/{name}"),
        ),
    };
    if path.is_file() {
        Some(path.display().to_string())
    } else {
        println!("skipped: {shown} not found (set DISAGG_TRACES_DIR to read it elsewhere)");
        None
    }
}
