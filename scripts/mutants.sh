#!/usr/bin/env bash
# Mutation testing (issue 11): plant small bugs with cargo-mutants and check that the tests notice.
#
#   bash scripts/mutants.sh                 every module below, one after another (hours in debug)
#   bash scripts/mutants.sh model sim-stats  only the named modules
#   bash scripts/mutants.sh ci              a bounded sample for CI: shard (day of year mod 8) of
#                                           a small, fast file list; a few minutes
#   bash scripts/mutants.sh list            list the mutants per module, run nothing
#
# Modules (issue 11, "Mutation testing as a habit"):
#   model        crates/disagg-model (cost model, hand-off maths, catalogue, calc)
#   sim-engine   crates/disagg-sim/src/engine.rs   (event queue)
#   sim-link     crates/disagg-sim/src/link.rs     (KV link)
#   sim-stats    crates/disagg-sim/src/stats.rs    (percentiles)
#   sim-metrics  crates/disagg-sim/src/metrics.rs  (summary metrics)
#   trace        crates/disagg-trace/src/parse.rs and lib.rs (trace parsers, reading pipeline)
#
# Each mutant is tested with the tests of the package that holds it (cargo-mutants' default):
# a mutant in disagg-model must be caught by disagg-model's own tests. With MUTANTS_WIDE=1 a
# disagg-model or disagg-trace mutant is also tested with disagg-sim's tests (the exactness and
# hand-off tests live there); that is about 20x slower per mutant. cargo-mutants 27.1 runs the
# baseline with the mutated package's tests only, so wide runs skip the baseline and use a fixed
# test timeout (MUTANTS_TIMEOUT_S, default 300). Results go to
# mutants.out/<module>/mutants.out/ (gitignored): caught.txt, missed.txt, unviable.txt,
# timeout.txt, outcomes.json. The checked-in summary and the reasons for every survivor are in
# mutants/survivors.md; update it after a run. Options shared by every run (the test timeout
# multiplier) are in .cargo/mutants.toml.
#
# --in-place mutates the working tree itself (no copy of the tree; cargo-mutants restores each
# file after its mutant). Do not edit files while it runs, and run it on a clean tree.
#
# Needs cargo-mutants: `cargo install cargo-mutants --locked` (v27.1.0 took 6 min 52 s on the 2-core dev
# machine under load). Set CARGO_TARGET_DIR as usual; --in-place runs one mutant at a time.
#
# Cost of a CI step (measured on the 2-core dev machine, see mutants/survivors.md): installing
# cargo-mutants from source takes longer than the whole mutants budget, so .ci/run does not run
# this; a CI with a cached cargo-mutants binary could run `bash scripts/mutants.sh ci` (47 s warm,
# ~1-3 min from a cold target dir).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo mutants --version >/dev/null 2>&1; then
  echo "error: cargo-mutants is not installed; run: cargo install cargo-mutants --locked" >&2
  exit 2
fi


ALL=(model sim-engine sim-link sim-stats sim-metrics trace)

# The cargo-mutants arguments that select a module's mutants.
select_args() {
  case "$1" in
    model) echo "--package disagg-model" ;;
    sim-engine) echo "--package disagg-sim --file crates/disagg-sim/src/engine.rs" ;;
    sim-link) echo "--package disagg-sim --file crates/disagg-sim/src/link.rs" ;;
    sim-stats) echo "--package disagg-sim --file crates/disagg-sim/src/stats.rs" ;;
    sim-metrics) echo "--package disagg-sim --file crates/disagg-sim/src/metrics.rs" ;;
    trace) echo "--package disagg-trace --file crates/disagg-trace/src/parse.rs --file crates/disagg-trace/src/lib.rs" ;;
    ci-sample) echo "" ;; # the files are given by the ci mode below
    *)
      echo "error: unknown module '$1'; valid: ${ALL[*]} ci list" >&2
      exit 2
      ;;
  esac
}

# The tests each module's mutants are run against (extra cargo-mutants arguments; empty: the
# package's whole test suite, cargo-mutants' default). Chosen per module so a mutant costs seconds:
# the tests that pin the module's behaviour, not every simulation in the package. A test-name
# filter goes last, after `--` (it is passed to the test binaries).
test_args() {
  case "$1" in
    # disagg-model has no unit tests and no doctests: `--test=*` runs every integration test
    # (tests/exact.rs, seed.rs, spec/) and skips building the empty lib test harness and rustdoc,
    # about half the CPU of a mutant.
    model) echo "--cargo-test-arg=--test=*" ;;
    sim-engine) echo "" ;;
    sim-link) echo "" ;;
    sim-stats) echo "" ;;
    sim-metrics) echo "" ;;
    trace) echo "" ;;
    *) echo "" ;;
  esac
}

run_module() {
  local module="$1"
  shift
  local out="mutants.out/$module"
  mkdir -p "$out"
  echo "== cargo mutants: $module" >&2
  local start=$SECONDS
  # Exit status 2 means "some mutants were missed", 3 "some timed out": that is a result, not a
  # failure of the script; the summary follows.
  local rc=0
  local wide=()
  if [ "${MUTANTS_WIDE:-0}" = 1 ] && { [ "$module" = model ] || [ "$module" = trace ]; }; then
    wide=(--test-package "$(select_args "$module" | awk '{print $2}'),disagg-sim"
      --baseline skip --timeout "${MUTANTS_TIMEOUT_S:-300}")
  fi
  # shellcheck disable=SC2046
  cargo mutants --in-place --build-timeout 600 --output "$out" $(select_args "$module") \
    "${wide[@]}" "$@" $(test_args "$module") || rc=$?
  echo "== $module: exit $rc, $((SECONDS - start)) s" >&2
  summarize "$out/mutants.out"
  return $rc
}

summarize() {
  local d="$1"
  [ -d "$d" ] || return 0
  local caught missed unviable timeout
  caught=$(wc -l <"$d/caught.txt" 2>/dev/null || echo 0)
  missed=$(wc -l <"$d/missed.txt" 2>/dev/null || echo 0)
  unviable=$(wc -l <"$d/unviable.txt" 2>/dev/null || echo 0)
  timeout=$(wc -l <"$d/timeout.txt" 2>/dev/null || echo 0)
  local viable=$((caught + missed + timeout))
  local pct="n/a"
  if [ "$viable" -gt 0 ]; then
    pct=$(awk -v c="$caught" -v v="$viable" 'BEGIN { printf "%.1f%%", 100 * c / v }')
  fi
  echo "   caught $caught, missed $missed, unviable $unviable, timeouts $timeout; caught/viable $pct" >&2
}

mode="${1:-full}"
case "$mode" in
  list)
    for m in "${ALL[@]}"; do
      # shellcheck disable=SC2046
      echo "$m: $(cargo mutants --list $(select_args "$m") | wc -l) mutants"
    done
    ;;
  ci)
    # A bounded, rotating sample: the small, fast-to-test files, split into 8 shards, one shard a
    # day (day of year mod 8), so a week covers them all and each CI run takes a few minutes.
    shard=$((10#$(date -u +%j) % 8))
    run_module ci-sample --shard "$shard/8" \
      --package disagg-model --file crates/disagg-model/src/handoff.rs \
      --file crates/disagg-model/src/cost.rs --file crates/disagg-model/src/calc.rs
    ;;
  full)
    status=0
    for m in "${ALL[@]}"; do run_module "$m" || status=$?; done
    exit $status
    ;;
  *)
    status=0
    for m in "$@"; do
      select_args "$m" >/dev/null
      run_module "$m" || status=$?
    done
    exit $status
    ;;
esac
