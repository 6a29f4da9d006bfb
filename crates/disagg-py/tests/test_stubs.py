"""The type stubs (`disagg/_core.pyi`) match the built module, and a typed use of the package
type-checks. Skipped when mypy is absent, except in CI (CI set), where that fails."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import disagg


def _need_mypy():
    try:
        import mypy  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("mypy is not installed (scripts/python-env.sh installs it)")
        pytest.skip("mypy is not installed")


def _run(args, cwd):
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=600,
    )


def test_stub_file_is_installed_with_the_package():
    pkg = Path(disagg.__file__).parent
    assert (pkg / "_core.pyi").is_file()
    assert (pkg / "py.typed").is_file()


def test_stubtest(tmp_path):
    _need_mypy()
    p = _run(["mypy.stubtest", "disagg._core"], tmp_path)
    assert p.returncode == 0, p.stdout


def test_reference_stubtest(tmp_path):
    """`disagg.reference`'s stubs (one per module of the subpackage) match it."""
    _need_mypy()
    p = _run(["mypy.stubtest", "disagg.reference"], tmp_path)
    assert p.returncode == 0, p.stdout


def test_stub_names_every_runtime_name():
    stub = (Path(disagg.__file__).parent / "_core.pyi").read_text()
    from disagg import _core

    for name in dir(_core):
        if name.startswith("__") and name not in ("__version__",):
            continue
        assert (f"def {name}(" in stub or f"class {name}" in stub or f"{name}:" in stub), name
    for name in dir(_core.RunHandle):
        if not name.startswith("_") or name == "__len__":
            assert f"def {name}(" in stub, name


USAGE = '''
from typing import Any, Dict, List
import numpy as np
import disagg

r: disagg.Run = disagg.run("eth25g-14rps", requests=10)
s: Dict[str, Any] = r.summary
n: int = len(r)
text: str = r.report()
rows: List[Dict[str, Any]] = disagg.sweep({"requests": 10}, vary={"rate": [1.0, 2.0]}, threads=1)
lines: str = disagg.jsonl(rows)
h: Dict[str, Any] = disagg.handoff(model="llama3-8b")
ps: List[Dict[str, Any]] = disagg.presets()
out: str = disagg.cli("presets")
try:
    disagg.run(rate=-1.0)
except disagg.ConfigError as e:
    field = e.field
from disagg import _core
handle: _core.RunHandle = _core.run(None, {"requests": 5})
doc: Dict[str, Any] = handle.document()
t: float = _core.time_runs(None, 1)
'''

BAD_USAGE = '''
from disagg import _core
x: int = _core.plan(None, {"max_rate": True})
'''


def test_mypy_on_a_typed_usage_example(tmp_path):
    _need_mypy()
    (tmp_path / "usage.py").write_text(textwrap.dedent(USAGE))
    p = _run(["mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "c"),
              "--allow-untyped-calls", "--ignore-missing-imports", "usage.py"], tmp_path)
    assert p.returncode == 0, p.stdout
    # ... and the stubs do catch a wrong type (the check is not vacuous).
    (tmp_path / "bad.py").write_text(textwrap.dedent(BAD_USAGE))
    p = _run(["mypy", "--no-incremental", "--cache-dir", str(tmp_path / "c"), "bad.py"], tmp_path)
    assert p.returncode != 0 and "bad.py:3" in p.stdout, p.stdout
