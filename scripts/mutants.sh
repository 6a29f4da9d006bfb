#!/usr/bin/env bash
# Mutation testing (issue 11): plant small bugs with cargo-mutants and check that the tests notice.
#
#   bash scripts/mutants.sh                 every module below, one after another (hours in debug)
#   bash scripts/mutants.sh model sim-stats  only the named modules
#   bash scripts/mutants.sh sim-link --iterate   ... with options for cargo-mutants after them
#   bash scripts/mutants.sh ci              a bounded sample for CI: one round-robin shard of every
#                                           module (day of year mod 48); fails on a new survivor
#   bash scripts/mutants.sh list            list the mutants per module, run nothing
#
# Modules (issue 11, "Mutation testing as a habit"):
#   model        crates/disagg-model (cost model, hand-off maths, catalogue, calc), but parallel.rs
#                and link/
#   model-parallel crates/disagg-model/src/parallel.rs (issue 13 groundwork, the Parallel lever; by
#                name, not in the CI sample yet: see mutants/results/model-parallel.md)
#   sim-engine   crates/disagg-sim/src/engine/    (event queue, run loop, books, ITL reconstruction)
#   sim-link     crates/disagg-model/src/link/     (KV link and its disciplines: event-driven parts
#                and the calculator's closed forms; the simulator reaches it as disagg_sim::link)
#   sim-stats    crates/disagg-sim/src/stats.rs    (percentiles)
#   sim-metrics  crates/disagg-sim/src/metrics/    (summary metrics, one file per block)
#   sim-prefix   crates/disagg-sim/src/prefix_cache/ (prefix cache of the scheduling levers, eviction orders)
#   sim-kv       crates/disagg-sim/src/kv_memory.rs (KV reservation policies of the levers)
#   sim-sched    crates/disagg-sim/src/sched/ (the scheduled instances of the levers; not in the CI
#                sample yet: see mutants/results/sim-sched.md)
#   trace        crates/disagg-trace/src/parse.rs, lib.rs, format.rs, options.rs (trace parsers, reading pipeline)
#   trace-io     crates/disagg-trace/src/stats.rs and input.rs (trace statistics, capped input)
#
# Each mutant is tested with the tests chosen for its module (test_args below), all in the
# package that holds it: a mutant in disagg-model must be caught by disagg-model's own tests. With
# MUTANTS_WIDE=1 a
# disagg-model or disagg-trace mutant is also tested with disagg-sim's tests (the exactness and
# hand-off tests live there); that is about 20x slower per mutant. cargo-mutants 27.1 runs the
# baseline with the mutated package's tests only, so wide runs skip the baseline and use a fixed
# test timeout (MUTANTS_TIMEOUT_S, default 300). Results go to
# mutants.out/<module>/mutants.out/ (gitignored): caught.txt, missed.txt, unviable.txt,
# timeout.txt, outcomes.json. The checked-in summary and the reasons for every survivor are in
# mutants/results/<module>.md (python3 mutants/summarize.py) and mutants/survivors.md; update them
# after a run. Options shared by every run (the test timeout
# multiplier) are in .cargo/mutants.toml.
#
# --in-place mutates the working tree itself (no copy of the tree; cargo-mutants restores each
# file after its mutant). Do not edit files while it runs, and run it on a clean tree.
#
# Needs cargo-mutants: `cargo install cargo-mutants --locked` (v27.1.0 took 6 min 52 s on the 2-core dev
# machine under load). Set CARGO_TARGET_DIR as usual; --in-place runs one mutant at a time.
#
# CI: .ci/run installs cargo-mutants when it is missing and runs `bash scripts/mutants.sh ci`.
set -euo pipefail
set -f # no globbing: test selections contain a literal `*`
cd "$(dirname "$0")/.."

if ! cargo mutants --version >/dev/null 2>&1; then
  echo "error: cargo-mutants is not installed; run: cargo install cargo-mutants --locked" >&2
  exit 2
fi


ALL=(model sim-engine sim-link sim-stats sim-metrics sim-prefix sim-kv trace trace-io)

# The cargo-mutants arguments that select a module's mutants.
select_args() {
  case "$1" in
    model) echo "--package disagg-model --exclude crates/disagg-model/src/parallel.rs --exclude crates/disagg-model/src/parallel/** --exclude crates/disagg-model/src/link/**" ;;
    model-parallel) echo "--package disagg-model --file crates/disagg-model/src/parallel.rs --file crates/disagg-model/src/parallel/**" ;;
    sim-engine) echo "--package disagg-sim --file crates/disagg-sim/src/engine/**" ;;
    sim-link) echo "--package disagg-model --file crates/disagg-model/src/link/** --exclude crates/disagg-model/src/link/testing.rs" ;;
    sim-stats) echo "--package disagg-sim --file crates/disagg-sim/src/stats.rs" ;;
    sim-metrics) echo "--package disagg-sim --file crates/disagg-sim/src/metrics/**" ;;
    sim-prefix) echo "--package disagg-sim --file crates/disagg-sim/src/prefix_cache/**" ;;
    sim-kv) echo "--package disagg-sim --file crates/disagg-sim/src/kv_memory.rs" ;;
    sim-sched) echo "--package disagg-sim --file crates/disagg-sim/src/sched/**" ;;
    trace) echo "--package disagg-trace --file crates/disagg-trace/src/parse.rs --file crates/disagg-trace/src/lib.rs --file crates/disagg-trace/src/format.rs --file crates/disagg-trace/src/options.rs" ;;
    trace-io) echo "--package disagg-trace --file crates/disagg-trace/src/stats.rs --file crates/disagg-trace/src/input.rs" ;;
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
    # (tests/spec/, one binary) and skips building the empty lib test harness and rustdoc,
    # about half the CPU of a mutant. (The script runs with globbing off: the `*` is literal.)
    model | model-parallel) echo "--cargo-test-arg=--test=*" ;;
    # --cargo-arg (not --cargo-test-arg) so the per-mutant build is the lib test binary only.
    sim-engine) echo "--cargo-arg=--lib -- engine:: metrics::" ;;
    # The link unit tests (disagg-model's lib, link::tests) without the three slow statistical ones
    # (M/G/1-PS, M/D/1, brute-force fluid: 7 s together; they live in disagg-sim, which draws their
    # random numbers, so the skips are a guard); 8 test threads so deadline failures do not queue
    # behind each other.
    sim-link) echo "--cargo-arg=--lib -- link:: -- --test-threads=8 --skip fair_link_is_m_g_1_ps --skip fifo_link_is_m_d_1 --skip fair_link_matches_a_brute_force_fluid_simulation" ;;
    # The stats unit tests minus weighted_equals_expanded (~17 s, an expanded 9M-value sample;
    # the hand and bucket-path tests cover the same code) take ~1 s.
    sim-stats) echo "--cargo-arg=--lib -- -- stats:: --skip weighted_equals_expanded" ;;
    sim-metrics) echo "--cargo-arg=--lib -- -- metrics::" ;;
    sim-prefix) echo "--cargo-arg=--lib -- prefix_cache::" ;;
    sim-kv) echo "--cargo-arg=--lib -- kv_memory::" ;;
    # The sched unit tests, the golden runs, the worked traces, the property tests and the hand-off
    # options of the scheduled pools (sched_transfer; ~5 s), by module of the suite binary and
    # name (a filter applies to every test binary).
    sim-sched) echo "--cargo-arg=--lib --cargo-arg=--test=suite -- sched:: lv paged swap prefix scheduled own_blocks levers:: levers_traces:: levers_properties:: sched_transfer::" ;;
    # trace, trace-io: the crate's unit tests (`tests::`) and the suite's read.rs (`read::`, about
    # 1 s); not fuzz.rs (proptests, ~4 s a mutant) nor real_traces.rs (needs the real traces, not
    # in the repo).
    trace | trace-io) echo "--cargo-arg=--lib --cargo-arg=--test=suite -- read:: tests::" ;;
    *) echo "" ;;
  esac
}

run_module() {
  local module="$1"
  shift
  local out="mutants.out/${MUTANTS_OUT_PREFIX:-}$module"
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
    # A bounded, rotating sample for CI: every module contributes one round-robin shard of its
    # mutants (1 in MUTANTS_CI_SHARDS, default 48: ~45 mutants in all), a different shard each day
    # (day of year), so a few weeks cover everything. The tree was just built and tested by CI, so
    # the baseline is skipped (fixed test timeout). Fails when a mutant is missed that
    # mutants/reasons/ does not list as equivalent.
    n=${MUTANTS_CI_SHARDS:-48}
    shard=$((10#$(date -u +%j) % n))
    dirs=()
    for m in "${ALL[@]}"; do
      MUTANTS_OUT_PREFIX=ci- run_module "$m" --shard "$shard/$n" --sharding round-robin \
        --baseline skip --timeout "${MUTANTS_TIMEOUT_S:-120}" || true
      dirs+=("mutants.out/ci-$m/mutants.out")
    done
    python3 mutants/summarize.py --check "${dirs[@]}"
    ;;
  full)
    status=0
    for m in "${ALL[@]}"; do run_module "$m" || status=$?; done
    exit $status
    ;;
  *)
    # MODULE... [CARGO-MUTANTS OPTIONS...]: the first argument starting with '-' and everything
    # after it go to every module's cargo-mutants run (e.g. `sim-link --iterate`).
    modules=()
    while [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; do
      select_args "$1" >/dev/null
      modules+=("$1")
      shift
    done
    status=0
    for m in "${modules[@]}"; do
      run_module "$m" "$@" || status=$?
    done
    exit $status
    ;;
esac
