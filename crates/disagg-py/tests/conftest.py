"""Shared fixtures of the disagg Python tests: the repository, the command-line binary the
numbers are checked against, a trace fixture that is in the repository, and a small catalogue."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, List

import pytest

REPO = Path(__file__).resolve().parents[3]
# A small Azure-format trace that is part of the repository (never ../shared/traces).
TRACE = REPO / "crates" / "disagg-trace" / "tests" / "fixtures" / "azure_sample.csv"

# A catalogue TOML with one of each kind of entry: a small model, a device based on the H100 with
# more memory, and a slow link.
CATALOGUE_TOML = """\
[models.tiny]
layers = 2
d_model = 256
heads = 4
kv_heads = 2
d_ff = 512
vocab = 1000

[devices.gpu-x]
base = "h100"
mem_gb = 96

[links.slow]
bandwidth_gb_s = 1
latency_us = 100
pj_per_bit = 20
"""


def find_cli() -> Path | None:
    """$DISAGG_BIN, else target/debug/disagg (cargo test builds it), else target/release/disagg."""
    env = os.environ.get("DISAGG_BIN")
    if env:
        return Path(env) if Path(env).is_file() else None
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    if not target.is_absolute():
        target = REPO / target
    for candidate in (
        REPO / "target" / "debug" / "disagg",
        target / "debug" / "disagg",
        REPO / "target" / "release" / "disagg",
        target / "release" / "disagg",
    ):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


class Cli:
    """The `disagg` command line, run as a subprocess."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def out(self, *args: Any, cwd: Path | None = None) -> bytes:
        p = subprocess.run(
            [str(self.path), *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            timeout=600,
        )
        if p.returncode != 0:
            raise AssertionError(
                f"disagg {' '.join(map(str, args))} failed ({p.returncode}): "
                + p.stderr.decode(errors="replace")
            )
        return p.stdout

    def json(self, *args: Any) -> Any:
        return json.loads(self.out(*args))

    def fails(self, *args: Any) -> str:
        p = subprocess.run(
            [str(self.path), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert p.returncode != 0, f"disagg {args} succeeded"
        return p.stderr.decode()


@pytest.fixture(scope="session")
def cli() -> Cli:
    path = find_cli()
    if path is None:
        msg = (
            "no disagg binary: set DISAGG_BIN (now: "
            f"{os.environ.get('DISAGG_BIN', 'unset')}) or build one (cargo build -p disagg); "
            "looked in target/debug and target/release"
        )
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return Cli(path)


@pytest.fixture(scope="session")
def trace() -> Path:
    assert TRACE.is_file(), TRACE
    return TRACE


@pytest.fixture(scope="session")
def catalogue_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("cat") / "extra.toml"
    p.write_text(CATALOGUE_TOML)
    return p


def same(a: Any, b: Any, where: str = "") -> None:
    """Deep equality: every key, in order; floats with `==` (bit for bit but for -0.0), NaN equal
    to NaN and to None (JSON has no NaN); an int is not a float (the JSON says 1 or 1.0)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert list(a.keys()) == list(b.keys()), f"{where}: keys {list(a)} != {list(b)}"
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: lengths {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    elif a is None or b is None:
        other = b if a is None else a
        assert other is None or (isinstance(other, float) and other != other), f"{where}: {a!r} != {b!r}"
    elif isinstance(a, float) and isinstance(b, float):
        if a != a or b != b:
            assert a != a and b != b, f"{where}: {a!r} != {b!r}"
        else:
            assert a == b, f"{where}: {a!r} != {b!r}"
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"


def flags(options: dict) -> List[str]:
    """Scenario keys as the command line's flags (`link_channels=2` is `--link-channels 2`)."""
    out: List[str] = []
    for k, v in options.items():
        f = "--" + k.replace("_", "-")
        if v is True:
            out.append(f)
        elif v is False or v is None:
            continue
        else:
            out += [f, repr(v) if isinstance(v, float) else str(v)]
    return out
