#!/usr/bin/env bash
# The byte-identity check of issue 25: a refactor must not change one byte of any output.
#
#   bash scripts/identity.sh             run every pinned command and compare with the recording
#   bash scripts/identity.sh --record    (re)write tests/identity/expected/ from this build
#   bash scripts/identity.sh --only RE   only the cases whose name matches the regex RE
#
# The cases (tests/identity/):
#   commands.txt  one command a line: a case name, then the arguments after `disagg` (shell quoting);
#                 the case records the exit code, stdout, stderr and every file the command writes
#   api.txt       requests to `disagg serve`: a case name, METHOD, PATH and an optional JSON body;
#                 the case records the status and the body
#   python.py     the Python package (`disagg` and `disagg.reference`), printing its results
#   fixtures/     small inputs the commands read (as `fixtures/NAME`)
#   expected/     the recording, one file per case (`NAME.out`, or `NAME.out.gz` when large), made by
#                 the build from before the refactor (commit 5bb5eaf)
#
# Every case runs in a fresh directory with a copy of fixtures/, so the paths in commands and outputs
# are the same relative names whatever the temporary directory is.
# Environment: DISAGG_BIN (default target/debug/disagg), DISAGG_PYTHON (default
# target/py-venv/bin/python; the Python case is skipped with a warning when it has no `disagg`
# package, unless CI is set).
# Exit status: 0 all identical, 1 a difference (the first one is shown with a short diff), 2 misuse.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/tests/identity

record=0
only=
while [ $# -gt 0 ]; do
  case $1 in
    --record) record=1 ;;
    --only)
      [ $# -ge 2 ] || { echo "error: --only needs a regex" >&2; exit 2; }
      only=$2
      shift
      ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "error: unknown argument '$1' (valid: --record, --only REGEX)" >&2
      exit 2
      ;;
  esac
  shift
done

abs() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$root" "$1" ;; esac; }
target=${CARGO_TARGET_DIR:-target}
bin=$(abs "${DISAGG_BIN:-$target/debug/disagg}")
py=$(abs "${DISAGG_PYTHON:-$target/py-venv/bin/python}")
[ -x "$bin" ] || { echo "error: DISAGG_BIN '$bin' is not an executable (build it: cargo build -p disagg)" >&2; exit 2; }

# What the outputs may depend on, pinned: a memory budget of 2 GiB (the server's is 1 GiB; by
# default both follow the machine's free memory, and /api/catalogue shows the server's), no FIFO
# timeout from the caller's environment, the C locale, no terminal (stdin from /dev/null, outputs
# to files).
unset DISAGG_FIFO_TIMEOUT DISAGG_WEB_CHILD DISAGG_HEADER
export DISAGG_MEMORY_BUDGET_BYTES=2147483648 LC_ALL=C TZ=UTC

tmp=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

mkdir -p "$tmp/actual"
[ "$record" = 1 ] && mkdir -p "$dir/expected"
declare -a names=()
seen=" "

want() { [ -z "$only" ] || [[ $1 =~ $only ]]; }

add_name() {
  case $seen in *" $1 "*) echo "error: case name '$1' is used twice" >&2; exit 2 ;; esac
  [[ $1 =~ ^[A-Za-z0-9._-]+$ ]] || { echo "error: case name '$1': use letters, digits, '.', '_', '-'" >&2; exit 2; }
  seen="$seen$1 "
  names+=("$1")
}

# A fresh working directory holding fixtures/.
fresh() {
  rm -rf "$tmp/w"
  mkdir -p "$tmp/w"
  cp -R "$dir/fixtures" "$tmp/w/fixtures"
}

# The record of a finished case in $tmp/w: exit code, stdout, stderr, then every file it wrote.
write_record() { # rc
  printf '== exit %s\n== stdout\n' "$1"
  cat "$tmp/out"
  printf '\n== stderr\n'
  cat "$tmp/err"
  (cd "$tmp/w" && find . -path ./fixtures -prune -o -type f -print | LC_ALL=C sort) | while read -r f; do
    printf '\n== file %s\n' "${f#./}"
    cat "$tmp/w/$f"
  done
}

# ── the command line ─────────────────────────────────────────────────────────────────────────
while IFS= read -r line || [ -n "$line" ]; do
  case $line in '' | '#'*) continue ;; esac
  name=${line%%[[:space:]]*}
  rest=${line#"$name"}
  add_name "$name"
  want "$name" || continue
  eval "args=($rest)"
  fresh
  rc=0
  (cd "$tmp/w" && "$bin" "${args[@]}") </dev/null >"$tmp/out" 2>"$tmp/err" || rc=$?
  write_record "$rc" >"$tmp/actual/$name.out"
done <"$dir/commands.txt"

# ── the page's JSON API ──────────────────────────────────────────────────────────────────────
api_cases=()
while IFS= read -r line || [ -n "$line" ]; do
  case $line in '' | '#'*) continue ;; esac
  name=${line%%[[:space:]]*}
  add_name "$name"
  want "$name" && api_cases+=("$line")
done <"$dir/api.txt"
if [ ${#api_cases[@]} -gt 0 ]; then
  fresh
  (cd "$tmp/w" && exec "$bin" serve --port 0 --memory-budget 1024) </dev/null >"$tmp/serve.out" 2>"$tmp/serve.err" &
  server_pid=$!
  url=
  for _ in $(seq 1 200); do
    url=$(grep -o 'http://[0-9.]*:[0-9]*/' "$tmp/serve.err" 2>/dev/null | head -n1 || true)
    [ -n "$url" ] && break
    sleep 0.05
  done
  [ -n "$url" ] || { echo "error: disagg serve printed no URL:" >&2; cat "$tmp/serve.err" >&2; exit 1; }
  for line in "${api_cases[@]}"; do
    eval "a=($line)"
    name=${a[0]} method=${a[1]} path=${a[2]} body=${a[3]:-}
    curl_args=(-s -S -o "$tmp/body" -w '%{http_code}' -X "$method" "${url%/}$path")
    [ -n "$body" ] && curl_args+=(-H 'Content-Type: application/json' --data-binary "$body")
    status=$(curl "${curl_args[@]}")
    { printf '== status %s\n== body\n' "$status"; cat "$tmp/body"; } >"$tmp/actual/$name.out"
  done
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
fi

# ── Python ───────────────────────────────────────────────────────────────────────────────────
add_name python
if want python; then
  if [ -x "$py" ] && "$py" -c 'import disagg' 2>/dev/null; then
    fresh
    rc=0
    cp "$dir/python.py" "$tmp/w/fixtures/python.py"
    (cd "$tmp/w" && DISAGG_BIN="$bin" "$py" fixtures/python.py) </dev/null >"$tmp/out" 2>"$tmp/err" || rc=$?
    write_record "$rc" >"$tmp/actual/python.out"
  elif [ -n "${CI:-}" ]; then
    echo "error: DISAGG_PYTHON '$py' cannot import disagg (bash scripts/python-env.sh makes the venv)" >&2
    exit 1
  else
    echo "warning: skipping the Python case (its recording is kept): '$py' cannot import disagg" >&2
    unset 'names[-1]' 
  fi
fi

# ── record or compare ────────────────────────────────────────────────────────────────────────
expected_of() { # name -> the expected text on stdout; status 1 when none is recorded
  if [ -f "$dir/expected/$1.out.gz" ]; then
    gzip -dc "$dir/expected/$1.out.gz"
  elif [ -f "$dir/expected/$1.out" ]; then
    cat "$dir/expected/$1.out"
  else
    return 1
  fi
}

if [ "$record" = 1 ]; then
  n=0
  for name in "${names[@]}"; do
    [ -f "$tmp/actual/$name.out" ] || continue
    rm -f "$dir/expected/$name.out" "$dir/expected/$name.out.gz"
    if [ "$(wc -c <"$tmp/actual/$name.out")" -gt 200000 ]; then
      gzip -9 -n -c "$tmp/actual/$name.out" >"$dir/expected/$name.out.gz"
    else
      cp "$tmp/actual/$name.out" "$dir/expected/$name.out"
    fi
    n=$((n + 1))
  done
  if [ -z "$only" ]; then # drop recordings of cases no longer listed
    for f in "$dir"/expected/*; do
      b=$(basename "$f")
      b=${b%.gz}
      b=${b%.out}
      case $seen in *" $b "*) ;; *) rm -f "$f" && echo "removed stale $f" >&2 ;; esac
    done
  fi
  echo "identity: recorded $n cases with $bin" >&2
  exit 0
fi

failed=()
for name in "${names[@]}"; do
  [ -n "$name" ] && [ -f "$tmp/actual/$name.out" ] || continue
  if ! expected_of "$name" >"$tmp/expected" 2>/dev/null; then
    failed+=("$name (no recording: bash scripts/identity.sh --record --only '^$name\$')")
  elif ! cmp -s "$tmp/expected" "$tmp/actual/$name.out"; then
    if [ ${#failed[@]} -eq 0 ]; then
      echo "identity: '$name' differs from tests/identity/expected (- recorded, + now):" >&2
      (cd "$dir" && grep -m1 -E "^$name([[:space:]]|\$)" commands.txt api.txt 2>/dev/null) | sed 's/^/  case: /' >&2 || true
      # The first differing byte with some context (outputs are often one long JSON line), then
      # the first lines of a line diff, each cut to 240 characters.
      at=$(cmp "$tmp/expected" "$tmp/actual/$name.out" 2>/dev/null | sed -n 's/.* \(byte\|char\) \([0-9]*\),.*/\2/p' || true)
      if [ -n "$at" ]; then
        from=$((at > 120 ? at - 120 : 1))
        echo "  first difference at byte $at; from byte $from:" >&2
        printf '  expected: %s\n' "$(tail -c +"$from" "$tmp/expected" | head -c 240 | tr '\n' '~')" >&2
        printf '  actual:   %s\n' "$(tail -c +"$from" "$tmp/actual/$name.out" | head -c 240 | tr '\n' '~')" >&2
      fi
      diff -u --label expected --label actual "$tmp/expected" "$tmp/actual/$name.out" | head -n 30 | cut -c1-240 >&2 || true
    fi
    failed+=("$name")
  fi
done
if [ -z "$only" ]; then # a recording whose case is gone
  for f in "$dir"/expected/*; do
    b=$(basename "$f")
    b=${b%.gz}
    b=${b%.out}
    case $seen in *" $b "*) ;; *) failed+=("$b (recorded, but no longer a case: bash scripts/identity.sh --record drops it)") ;; esac
  done
fi
count=0
for name in "${names[@]}"; do [ -n "$name" ] && [ -f "$tmp/actual/$name.out" ] && count=$((count + 1)); done
if [ ${#failed[@]} -gt 0 ]; then
  echo "identity: ${#failed[@]} of $count cases differ:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "identity: $count cases byte-identical ($bin)" >&2
