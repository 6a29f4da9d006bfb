"""examples/python/ray_sweep.py against a local Ray cluster (`ray.init(num_cpus=2)`): the merged
rows are byte for byte the file `disagg sweep ... --jsonl FILE` writes on one machine, and the
single-process `disagg.jsonl(disagg.sweep(...))`.

Skips when Ray is not importable, unless CI is set (then fails). Bounded: 12 runs of 200 requests
in 3 shards, one cluster start (~10-20 s here)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import disagg

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "examples" / "python" / "ray_sweep.py"

# 4 rates x 3 links = 12 runs of 200 requests each (the last axis varies fastest).
PRESET = "link-eth-25g"
BASE_FLAGS = ["--set", "requests=200"]
VARY_FLAGS = ["--vary", "rate=8,10,12,14", "--vary", "link=eth-25g,eth-100g,ib-ndr"]
BASE: Dict[str, Any] = {"preset": PRESET, "requests": 200}
VARY: Dict[str, List[Any]] = {
    "rate": [8, 10, 12, 14],
    "link": ["eth-25g", "eth-100g", "ib-ndr"],
}


def _cli() -> Optional[Path]:
    """$DISAGG_BIN, else the debug or release binary of the repository's (or CARGO_TARGET_DIR's)
    target directory."""
    env = os.environ.get("DISAGG_BIN")
    if env:
        return Path(env)
    targets = [REPO / "target"]
    if os.environ.get("CARGO_TARGET_DIR"):
        targets.append(Path(os.environ["CARGO_TARGET_DIR"]))
    for t in targets:
        for profile in ("debug", "release"):
            c = t / profile / "disagg"
            if c.is_file() and os.access(c, os.X_OK):
                return c
    return None


def _need_ray() -> None:
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("CI"):
            pytest.fail("ray is not importable and CI is set: install ray[default] in the venv")
        pytest.skip("ray is not importable (pip install 'ray[default]')")


def _script(args: List[str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT)] + args,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


@pytest.fixture(scope="module")
def ray_out(tmp_path_factory) -> bytes:
    """The bytes ray_sweep.py writes: 3 shards on a local 2-CPU cluster."""
    _need_ray()
    out = tmp_path_factory.mktemp("ray") / "runs.jsonl"
    r = _script(
        ["--num-cpus", "2", "--shards", "3", "--out", str(out), "--preset", PRESET]
        + BASE_FLAGS
        + VARY_FLAGS
    )
    assert r.returncode == 0, r.stderr
    assert "12 runs in 3 shards" in r.stderr
    return out.read_bytes()


def test_ray_rows_equal_the_single_process_sweep(ray_out: bytes) -> None:
    want = disagg.jsonl(disagg.sweep(BASE, VARY, threads=1)).encode()
    assert ray_out == want
    lines = ray_out.decode().splitlines()
    assert len(lines) == 12  # 4 rates x 3 links


def test_ray_rows_equal_the_cli_bytes(ray_out: bytes, tmp_path: Path) -> None:
    cli = _cli()
    if cli is None:
        pytest.skip("no disagg binary: set DISAGG_BIN or run cargo build")
    out = tmp_path / "cli.jsonl"
    r = subprocess.run(
        [str(cli), "sweep", "--preset", PRESET, "--requests", "200", "--quiet", "--jsonl", str(out)]
        + VARY_FLAGS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert ray_out == out.read_bytes()


def test_run_order_is_the_last_axis_fastest(ray_out: bytes) -> None:
    import json

    rows = [json.loads(line) for line in ray_out.decode().splitlines()]
    assert [r["run"] for r in rows] == list(range(12))
    # Run k is rate index k // 3 and link index k % 3.
    rates, links = VARY["rate"], VARY["link"]
    for k, row in enumerate(rows):
        assert row["scenario"]["rate"] == float(rates[k // 3])
        assert row["scenario"]["link"] == links[k % 3]
        assert row["runs_total"] == 12
        assert row["summary"]["requests"]["completed"] == 200


# ---- the pieces of the script, without a cluster -------------------------------------------------


def _module():
    spec = importlib.util.spec_from_file_location("ray_sweep", SCRIPT)
    assert spec is not None and spec.loader is not None
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_values_are_typed_as_the_command_line_reads_them() -> None:
    m = _module()
    d = m._defaults()
    assert m.typed("rate", "8", d) == 8 and type(m.typed("rate", "8", d)) is int
    assert m.typed("rate", "8.5", d) == 8.5
    assert m.typed("link", "eth-25g", d) == "eth-25g"
    # kv_compress is unset by default: `none` unsets it, as `disagg sweep --vary` reads it.
    assert m.typed("kv_compress", "none", d) is None
    assert m.typed("kv_compress", "fp8", d) == "fp8"
    assert m.typed("requests", "200", d) == 200
    assert m.typed("fast", "true", d) is True
    assert m.parse_vary(["rate=8, 10", "kv-compress=fp8,int8"], d) == {
        "rate": [8, 10],
        "kv_compress": ["fp8", "int8"],
    }
    # An unset axis value (the CLI's null) cannot travel through disagg.sweep: a clear error.
    with pytest.raises(m.SweepError, match="'none' .* not a value an axis can take"):
        m.parse_vary(["kv_compress=none,fp8"], d)
    assert m.parse_set(["requests=200", "rate=2.5"], d) == {"requests": 200, "rate": 2.5}


def test_a_sharded_sweep_merged_without_ray_is_the_whole_sweep() -> None:
    m = _module()
    base: Dict[str, Any] = {"requests": 50}
    vary: Dict[str, List[Any]] = {"rate": [2, 4, 8], "link": ["eth-25g", "ib-ndr"]}
    parts = [m.shard_rows(base, vary, i, 4, None) for i in range(4)]
    # 6 runs in 4 shards: runs 0,4 | 1,5 | 2 | 3.
    assert [[r["run"] for r in p] for p in parts] == [[0, 4], [1, 5], [2], [3]]
    merged = m.merge(list(reversed(parts)))
    assert disagg.jsonl(merged) == disagg.jsonl(disagg.sweep(base, vary, threads=1))


def test_merge_refuses_an_incomplete_or_mixed_set_of_shards() -> None:
    m = _module()
    base, vary = {"requests": 20}, {"rate": [2, 4, 8]}
    parts = [m.shard_rows(base, vary, i, 3, None) for i in range(3)]
    with pytest.raises(m.SweepError, match=r"^2 rows for 3 runs \(missing runs \[1\]\)$"):
        m.merge([parts[0], parts[2]])
    with pytest.raises(m.SweepError, match=r"^4 rows for 3 runs \(duplicate run 0\)$"):
        m.merge([parts[0], parts[0], parts[1], parts[2]][1:] + [parts[0]])
    other = m.shard_rows({"requests": 21}, vary, 1, 3, None)
    with pytest.raises(m.SweepError, match="different sweeps"):
        m.merge([parts[0], other, parts[2]])
    with pytest.raises(m.SweepError, match="no rows"):
        m.merge([])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--vary", "rat=8,10"], "--vary: unknown option 'rat'; did you mean rate"),
        (["--vary", "rate=8,,10"], "--vary rate: give each value once"),
        (["--vary", "rate=8", "--vary", "rate=9"], "--vary rate: axis given twice"),
        (["--set", "requests"], "--set: expected KEY=VALUE"),
        (["--catalogue", "/nonexistent/cat.toml"], "/nonexistent/cat.toml"),
        (["--vary", "rate=8", "--vary", "link="], "--vary link: give each value once"),
        (["--preset", "no-such-preset"], "preset"),
        (["--shards", "0"], "--shards: must be at least 1"),
        (["--spec", "/nonexistent/sweep.toml"], "--spec: no such file"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(args: List[str], message: str, tmp_path) -> None:
    # These fail before any cluster starts, so they do not need Ray.
    out = tmp_path / "x.jsonl"
    r = _script(["--out", str(out)] + args, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ray_sweep.py: error: "), r.stderr
    assert message in lines[0]
    assert not out.exists()
