//! Where the CLI tests find the real traces: `../shared/traces/` next to the repository, or
//! `$DISAGG_TRACES_DIR` (see `disagg_trace::shared`). They are third-party data, never committed to
//! this repository; a test that needs one passes with a `skipped: ... not found` message when it
//! is absent.
#![allow(dead_code)]

use std::path::Path;

/// The path of the real trace `name`, or `None` (after printing why the test is skipped).
pub fn shared_trace(name: &str) -> Option<String> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    disagg_trace::shared::trace_or_skip(root, name).map(|p| p.display().to_string())
}
