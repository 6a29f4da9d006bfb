#!/usr/bin/env bash
# Runs every libFuzzer target in fuzz/ (cargo fuzz, nightly toolchain) for SECONDS each (default 60),
# starting from the seed corpus in fuzz/corpus/<target>/. New inputs go to a temporary directory;
# a crash is saved under fuzz/artifacts/<target>/ and stops the script (exit 1). After fixing it,
# add the input to fuzz/corpus/<target>/ so `cargo test` replays it.
#
# Needs: rustup toolchain install nightly && cargo install cargo-fuzz
# The stable-toolchain fuzz targets (proptest) run in `cargo test` without any of this.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
if ! [[ "$secs" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: SECONDS must be a positive whole number, got '$secs'" >&2
  exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "error: needs cargo-fuzz on the nightly toolchain: rustup toolchain install nightly && cargo install cargo-fuzz" >&2
  exit 2
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd fuzz
targets="$(cargo +nightly fuzz list)"
cargo +nightly fuzz build
for t in $targets; do
  mkdir -p "$work/$t"
  if ! cargo +nightly fuzz run "$t" "$work/$t" "corpus/$t" -- \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$work/$t.log" 2>&1; then
    tail -40 "$work/$t.log" >&2
    echo "error: fuzz target $t found a failing input (saved under fuzz/artifacts/$t/)" >&2
    exit 1
  fi
  runs="$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$work/$t.log" | grep -Eo '[0-9]+$' || echo '?')"
  echo "$t: ${secs}s, $runs inputs, no failure"
done
echo "all fuzz targets ran ${secs}s without a failure"
