#!/usr/bin/env bash
# The page in a real browser: installs the npm dependencies (playwright-core, no browser download),
# builds the server, runs the tests in headless Chromium (Debian's /usr/bin/chromium).
#
# Skips (exit 0) only when Chromium is missing and $CI is not set; in CI a missing Chromium fails.
# $DISAGG_SERVE: the server command to test instead of target/release/disagg serve.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
chromium="${CHROMIUM:-/usr/bin/chromium}"

if [ ! -x "$chromium" ]; then
  if [ -n "${CI:-}" ]; then
    echo "error: no Chromium at $chromium (apt-get install -y chromium); the browser tests cannot run in CI" >&2
    exit 1
  fi
  echo "skipping the browser tests: no Chromium at $chromium (install it with: apt-get install -y chromium)"
  exit 0
fi
for tool in node npm cargo; do
  command -v "$tool" >/dev/null || { echo "error: $tool is needed for the browser tests" >&2; exit 1; }
done

(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
# `disagg serve`, and the CLI for the test that compares /api/handoff with `disagg handoff --json`.
(cd "$repo" && cargo build --release --quiet -p disagg --bin disagg)

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
export CHROMIUM="$chromium"
cd "$here"
node --test --test-reporter=spec test.mjs
