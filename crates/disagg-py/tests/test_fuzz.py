"""The argument-conversion fuzz test (`fuzz_convert.py`, hypothesis) in a subprocess: a crash of
the interpreter is a failure with its signal, not the end of the test session. About 200
generated objects, a few seconds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

SCRIPT = Path(__file__).with_name("fuzz_convert.py")


def test_arbitrary_objects_never_crash_the_conversion():
    p = subprocess.run([sys.executable, str(SCRIPT), "200", "0"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, (
        f"exit {p.returncode} (negative: killed by that signal)\n{p.stdout[-3000:]}\n"
        f"{p.stderr[-3000:]}")
    assert "ok: 200 examples" in p.stdout
