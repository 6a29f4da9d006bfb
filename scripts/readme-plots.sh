#!/usr/bin/env bash
# Regenerates the plots shown in the README (docs/plots/) with the disagg binary.
# Usage: scripts/readme-plots.sh [path/to/disagg]   (default: cargo run --release)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ge 1 ]; then D=("$1"); else cargo build --release -q -p disagg; D=(target/release/disagg); fi
out=docs/plots
# Kept: docs/plots/calibration/ (derived from third-party data that may be absent; redrawn below)
# and docs/plots/python/ (drawn by crates/disagg-py/tests/test_readme.py --update).
find "$out" -mindepth 1 -maxdepth 1 ! -name calibration ! -name python -exec rm -rf {} + 2>/dev/null || true
mkdir -p "$out"
# The chapter's saturated 25 GbE link at 14 req/s: utilisation, queues and KV over time.
"${D[@]}" run --preset eth25g-14rps --plot "$out/eth25g-14rps" > /dev/null
# Load sweep over 25 GbE, uncompressed against FP8 in the link (results.md §15).
"${D[@]}" sweep --preset link-eth-25g --vary rate=8,10,12,14 --vary kv_compress=none,fp8 \
  --quiet --plot "$out/eth25g-sweep" > /dev/null
# The cheapest clusters for 16 req/s of the chapter's workload, and the Pareto frontier.
"${D[@]}" plan --preset link-ib-ndr --target-rate 16 --links ib-ndr,eth-25g \
  --compressions none,fp8 --plot "$out/plan-16rps" > /dev/null
# Keep only the charts the README shows.
find "$out" \( -path "$out/calibration" -o -path "$out/python" \) -prune -o -name '*.svg' ! -name timeline.svg \
  ! -name attainment-vs-rate.svg ! -name tpot-vs-rate.svg ! -name pareto.svg -print | xargs -r rm -f
# "Calibrated to measured GPUs": the fit's charts (needs ../shared/calibration/, the SplitwiseSim
# and Vidur measurements, which are not in this repository; skipped without them).
if [ -f ../shared/calibration/splitwise/perf_model.csv ]; then
  DISAGG_BLESS_PLOTS=1 cargo test -q -p disagg --test suite readme::readme_calibration_plots_are_current
else
  echo "skipped docs/plots/calibration: ../shared/calibration is absent" >&2
fi
