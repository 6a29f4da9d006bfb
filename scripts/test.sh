#!/usr/bin/env bash
# The whole test suite: every Rust test of the workspace, the Python package's tests (pytest, in
# the venv target/py-venv that scripts/python-env.sh makes and keeps up to date), then the page in
# headless Chromium. The browser tests skip (with a message) when Chromium is absent, unless CI is
# set; with CI set the venv must already exist (.ci/run makes it first).
set -euo pipefail
cd "$(dirname "$0")/.."
# No module of any crate imports a module that imports it back (issue 25).
python3 scripts/module-cycles.py --quiet
cargo test --workspace

# The Python tests check every number against the CLI binary cargo test has just built.
target=${CARGO_TARGET_DIR:-target}
export DISAGG_BIN=${DISAGG_BIN:-$target/debug/disagg}
if [ -n "${CI:-}" ] && [ ! -x target/py-venv/bin/python ]; then
  echo "error: target/py-venv is missing: run bash scripts/python-env.sh first (.ci/run does)" >&2
  exit 1
fi
if bash scripts/python-env.sh; then
  target/py-venv/bin/python -m pytest crates/disagg-py/tests -q
elif [ -n "${CI:-}" ]; then
  echo "error: scripts/python-env.sh failed" >&2
  exit 1
else
  echo "warning: skipping the Python tests: scripts/python-env.sh could not make target/py-venv" >&2
  echo "         (it needs python3 with venv and pip, and the network or a pip cache); run it by hand" >&2
fi

# Byte identity (issue 25): every pinned command, API request and the Python script against the
# outputs recorded before the refactor (tests/identity/expected; the Python case needs the venv).
bash scripts/identity.sh

bash crates/disagg-web/browser-tests/run.sh
