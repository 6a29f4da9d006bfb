#!/usr/bin/env bash
# The Python environment of the tests (issue 14): a venv at target/py-venv with the test
# dependencies and the disagg package built from this checkout (`pip install ./crates/disagg-py`:
# maturin is the PEP 517 backend; a release build of crates/disagg-py into $CARGO_TARGET_DIR or
# target/).
#
#   bash scripts/python-env.sh      create or update target/py-venv (quick when nothing changed)
#
# The dependencies are installed again when the list below changes, the package when the Rust or
# Python sources it is built from change (a hash of them is kept in the venv). matplotlib is pinned
# to one exact version: the README's Python chart is rendered with it and checked byte for byte.
# Then: target/py-venv/bin/python -m pytest crates/disagg-py/tests -q (scripts/test.sh does).
# Set PYTHON to choose the interpreter the venv is made from (default: python3, >= 3.9).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/py-venv
PY=${PYTHON:-python3}
DEPS=(
  "maturin>=1.7,<2"
  "pytest>=7"
  "numpy>=1.21"
  "pandas>=1.5"
  "pyarrow>=10"
  "matplotlib==3.11.2"
  "mypy>=1.8"
  "hypothesis>=6.0"
  "ray[default]>=2.9"
)

if [ ! -x "$VENV/bin/python" ]; then
  echo "== python-env: creating $VENV" >&2
  "$PY" -m venv "$VENV"
fi
pip=("$VENV/bin/python" -m pip --disable-pip-version-check)

deps_hash=$(printf '%s\n' "${DEPS[@]}" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$VENV/.deps-hash" 2>/dev/null || true)" != "$deps_hash" ]; then
  echo "== python-env: installing ${DEPS[*]}" >&2
  "${pip[@]}" install -q "${DEPS[@]}"
  echo "$deps_hash" >"$VENV/.deps-hash"
fi

# What the wheel is built from: the workspace manifests and every crate's sources (not its tests,
# benches or fixtures), and the Python package. Untracked files count too (a new module); a file
# deleted but still in the index is left out.
src_hash=$(
  {
    git ls-files -z --cached --others --exclude-standard -- Cargo.toml Cargo.lock crates \
      ':(exclude,glob)crates/*/tests/**' ':(exclude,glob)crates/*/benches/**' \
      ':(exclude,glob)crates/*/bench/**' ':(exclude,glob)crates/*/browser-tests/**' |
      sort -z | xargs -0 sha256sum 2>/dev/null || true
  } | sha256sum | cut -d' ' -f1
)
if [ "$(cat "$VENV/.disagg-hash" 2>/dev/null || true)" != "$src_hash" ] ||
  ! "$VENV/bin/python" -c 'import disagg' 2>/dev/null; then
  echo "== python-env: building and installing ./crates/disagg-py (release build, a few minutes)" >&2
  start=$SECONDS
  "${pip[@]}" install -q --force-reinstall --no-deps ./crates/disagg-py
  echo "== python-env: disagg installed in $((SECONDS - start)) s" >&2
  echo "$src_hash" >"$VENV/.disagg-hash"
fi
"$VENV/bin/python" -c 'import disagg, sys; print(f"== python-env: disagg {disagg.__version__} in {sys.prefix}")' >&2
