#!/usr/bin/env bash
# Regenerates the plots shown in the README (docs/plots/) with the disagg binary.
# Usage: scripts/readme-plots.sh [path/to/disagg]   (default: cargo run --release)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ge 1 ]; then D=("$1"); else cargo build --release -q -p disagg; D=(target/release/disagg); fi
out=docs/plots
rm -rf "$out" && mkdir -p "$out"
# The chapter's saturated 25 GbE link at 14 req/s: utilisation, queues and KV over time.
"${D[@]}" run --preset eth25g-14rps --plot "$out/eth25g-14rps" > /dev/null
# Load sweep over 25 GbE, uncompressed against FP8 in the link (results.md §15).
"${D[@]}" sweep --preset link-eth-25g --vary rate=8,10,12,14 --vary kv_compress=none,fp8 \
  --quiet --plot "$out/eth25g-sweep" > /dev/null
# The cheapest clusters for 16 req/s of the chapter's workload, and the Pareto frontier.
"${D[@]}" plan --preset link-ib-ndr --target-rate 16 --links ib-ndr,eth-25g \
  --compressions none,fp8 --plot "$out/plan-16rps" > /dev/null
# Keep only the charts the README shows.
find "$out" -name '*.svg' ! -name timeline.svg ! -name attainment-vs-rate.svg \
  ! -name tpot-vs-rate.svg ! -name pareto.svg -delete
