#!/usr/bin/env bash
# The whole test suite: every Rust test of the workspace, then the page in headless Chromium.
# The browser tests skip (with a message) when Chromium is absent, unless CI is set.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
bash crates/disagg-web/browser-tests/run.sh
