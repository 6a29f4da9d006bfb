"""Input that used to crash or hang the interpreter (issue 24): self-referencing and deeply nested
option values, a workload too large for memory, devices and FIFOs named as files, and out-of-range
sweep and workload arguments. Each is a `ConfigError` naming the problem.

The calls that crashed (a segmentation fault, an aborted allocation) or hung (a FIFO) run in a
subprocess with a timeout, so a regression fails the test instead of killing or stalling pytest."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import pytest

import disagg
import disagg.reference as ds

# A small run (a few milliseconds).
SMALL = dict(model="llama3-8b", devices_per_instance=1, requests=20, rate=4.0)


def in_subprocess(code: str, timeout: float = 60) -> str:
    """Runs `code` (after `import disagg`) in a fresh interpreter; returns its standard output.
    Fails if it dies (a signal), exits non-zero or outlives `timeout` seconds."""
    prog = "import disagg, disagg.reference as ds, math, os, sys\n" + textwrap.dedent(code)
    try:
        p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for more than {timeout} s:\n{code}")
    assert p.returncode == 0, (
        f"exit {p.returncode} (a negative code is the signal that killed it):\n{code}\n"
        f"stderr: {p.stderr[-2000:]}")
    return p.stdout


def error_of(code: str, timeout: float = 60) -> str:
    """The `ConfigError` that `code`'s last line (an expression) raises in a subprocess, as
    `FIELD|MESSAGE`; fails if it raises nothing or something else."""
    lines = textwrap.dedent(code).strip().splitlines()
    body = "\n".join(lines[:-1])
    last = lines[-1]
    out = in_subprocess(
        body + "\n"
        + "try:\n"
        + f"    {last}\n"
        + "    print('NO ERROR')\n"
        + "except disagg.ConfigError as e:\n"
        + "    print(f'{e.field}|{e}')\n",
        timeout,
    )
    assert "NO ERROR" not in out, f"no ConfigError from: {last}"
    return out.strip()


# ---- item 4: self-referencing and deeply nested values ----------------------------------------

CYCLES = {
    "run(scenario)": "d = {}; d['x'] = d\ndisagg.run(d)",
    "run(option)": "l = []; l.append(l)\ndisagg.run(rate=l)",
    "run(tuple in list)": "l = []; l.append((1, l))\ndisagg.run(slo_ttft_ms=l)",
    "sweep(base)": "d = {'requests': 10}; d['self'] = d\ndisagg.sweep(d, {'rate': [1.0]})",
    "sweep(vary)": "l = [1.0]; l.append(l)\ndisagg.sweep(None, {'rate': l})",
    "jsonl": "d = {}; d['x'] = [d]\ndisagg.jsonl([d])",
    "handoff": "d = {}; d['x'] = d\ndisagg.handoff(prompt_tokens=d)",
    "os.PathLike returning itself": (
        "class P:\n    def __fspath__(self): return self\n"
        "disagg.run(trace_file=P())"),
}


@pytest.mark.parametrize("code", CYCLES.values(), ids=CYCLES.keys())
def test_a_value_that_contains_itself_is_a_config_error(code):
    msg = error_of(code)
    assert "contains itself" in msg, msg


DEEP = {
    "run(scenario) dicts": "d = {}\nfor _ in range(10_000): d = {'x': d}\ndisagg.run(d)",
    "run(option) lists": "l = []\nfor _ in range(10_000): l = [l]\ndisagg.run(rate=l)",
    "sweep(vary) tuples": "t = ()\nfor _ in range(10_000): t = (t,)\ndisagg.sweep(None, {'rate': [t]})",
    "jsonl": "d = {}\nfor _ in range(10_000): d = {'x': d}\ndisagg.jsonl([d])",
    "handoff": "l = []\nfor _ in range(10_000): l = [l]\ndisagg.handoff(prompt_tokens=l)",
    "os.PathLike returning another": (
        "class P:\n    def __fspath__(self): return P()\n"
        "disagg.run(trace_file=P())"),
}


@pytest.mark.parametrize("code", DEEP.values(), ids=DEEP.keys())
def test_a_value_nested_too_deep_is_a_config_error(code):
    msg = error_of(code)
    assert "nested more than 64 levels" in msg, msg


def test_values_nested_within_the_limit_still_convert():
    # 60 levels of lists in a sweep row: converted and written as they are.
    v: list = []
    for _ in range(60):
        v = [v]
    assert disagg.jsonl([{"x": v}]) == '{"x":' + "[" * 61 + "]" * 61 + "}\n"
    # The same object twice side by side is no cycle.
    shared = [1, 2]
    assert disagg.jsonl([{"a": shared, "b": shared}]) == '{"a":[1,2],"b":[1,2]}\n'


# ---- item 5: memory, input and output files ------------------------------------------------------


def test_a_workload_larger_than_the_simulator_takes_is_a_config_error():
    field, msg = error_of(
        "ds.poisson_workload(1.0, 10**12, ds.LengthDist(100), ds.LengthDist(100))").split("|")
    assert field == "n"
    assert "50000000" in msg and "1000000000000" in msg, msg


@pytest.mark.parametrize("n", [-1, 2**70, 1.5, "10"])
def test_a_workload_size_that_is_not_a_count_is_a_config_error(n):
    with pytest.raises(disagg.ConfigError) as e:
        ds.poisson_workload(1.0, n, ds.LengthDist(100), ds.LengthDist(100))
    assert e.value.field == "n"


def test_runs_over_the_memory_budget_are_refused_before_they_start():
    """The budget (`disagg_sim::budget`) every entry point checks: lowered to 40 MiB (its fixed
    part is 32 MiB), 100,000 requests (about 49 MiB) do not fit, 1,000 do."""
    disagg._core._set_memory_budget(40 << 20)
    try:
        rows = [(0.1 * i, 100, 10) for i in range(100_000)]
        calls = {
            "run": lambda: disagg.run(**{**SMALL, "requests": 100_000}),
            "sweep": lambda: disagg.sweep({**SMALL, "requests": 100_000}, {"rate": [1.0, 2.0]}),
            "poisson_workload": lambda: ds.poisson_workload(
                1.0, 100_000, ds.LengthDist(100), ds.LengthDist(100)),
            "reference.simulate": lambda: ds.simulate(
                ds.SimConfig(model=ds.MODELS["llama3-8b"], devices_per_instance=1),
                [ds.Request(i, a, p, o) for i, (a, p, o) in enumerate(rows)]),
        }
        for name, call in calls.items():
            with pytest.raises(disagg.ConfigError) as e:
                call()
            msg = str(e.value)
            assert "of memory, more than the 40 MiB budget" in msg, (name, msg)
            assert e.value.field in ("requests", "n", "workload"), (name, e.value.field)
        # Within the budget: runs as before.
        assert len(disagg.run(**{**SMALL, "requests": 1000})) == 1000
        assert len(disagg.sweep({**SMALL, "requests": 1000}, {"rate": [1.0]})) == 1
    finally:
        disagg._core._set_memory_budget(None)


def test_load_workload_refuses_a_device_without_reading_it():
    # /dev/zero was read up to 4 GiB (and then failed to parse).
    field, msg = error_of("ds.load_workload('/dev/zero')", timeout=20).split("|")
    assert field == "path"
    assert "/dev/zero: not a regular file (a character device" in msg, msg


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)
    return p


FIFO_CALLS = {
    "load_workload": "ds.load_workload(FIFO)",
    "Run.write_trace": "disagg.run(model='llama3-8b', devices_per_instance=1, requests=5)"
                       ".write_trace(FIFO)",
    "reference.write_trace": "ds.write_trace({'traceEvents': []}, FIFO)",
    "dump_workload": "ds.dump_workload([ds.Request(0, 0.0, 10, 10)], FIFO)",
    "run(trace_file=)": "disagg.run(trace_file=FIFO)",
    "run(catalogue=)": "disagg.run(catalogue=FIFO)",
    "sweep(catalogue=)": "disagg.sweep(None, {'rate': [1.0]}, catalogue=FIFO)",
}


@pytest.mark.parametrize("call", FIFO_CALLS.values(), ids=FIFO_CALLS.keys())
def test_a_fifo_is_refused_not_waited_on(fifo, call):
    # Opening a FIFO blocks until the other end opens it: these calls hung.
    msg = error_of(f"FIFO = {str(fifo)!r}\n{call}", timeout=20)
    assert "FIFO" in msg or "fifo" in msg, msg


def test_outputs_still_land_whole(tmp_path):
    p = tmp_path / "wl.json"
    ds.dump_workload([ds.Request(0, 0.5, 10, 20)], p)
    assert p.read_text() == "[[0.5, 10, 20]]"
    assert [(r.arrival, r.prompt_len, r.output_len) for r in ds.load_workload(p)] == [(0.5, 10, 20)]
    # No temporary file is left next to it.
    assert sorted(x.name for x in tmp_path.iterdir()) == ["wl.json"]
    # A missing input is a MissingFileError (a FileNotFoundError), as for other inputs.
    with pytest.raises(FileNotFoundError):
        ds.load_workload(tmp_path / "nope.json")
    # An output in a directory that does not exist: a ConfigError naming it.
    with pytest.raises(disagg.ConfigError, match="does not exist"):
        ds.write_trace({}, tmp_path / "no" / "t.json")


# ---- item 6: sweep and workload arguments -------------------------------------------------------


def test_too_many_threads_is_a_config_error():
    # A pool of a million threads: refused before any is started (it ran out of memory).
    field, msg = error_of(
        "disagg.sweep({'requests': 10}, {'rate': [1.0]}, threads=10**6)", timeout=30).split("|")
    assert field == "threads"
    assert "1024" in msg and "1000000" in msg, msg


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2", 2**70])
def test_threads_must_be_a_count(threads):
    with pytest.raises(disagg.ConfigError) as e:
        disagg.sweep({"requests": 10}, {"rate": [1.0]}, threads=threads)
    assert e.value.field == "threads"


@pytest.mark.parametrize(
    "shard", [(1.5, 2), (0, 1, 2), (0,), (2, 2), (-1, 2), (0, 0), ("0", "1"), (True, 2), 3, "01"])
def test_shard_must_be_a_pair_of_whole_numbers_i_below_n(shard):
    with pytest.raises(disagg.ConfigError) as e:
        disagg.sweep({"requests": 10}, {"rate": [1.0, 2.0]}, shard=shard)
    assert e.value.field == "shard"
    assert "shard" in str(e.value)


def test_a_valid_shard_and_thread_count_still_run():
    rows = disagg.sweep({**SMALL}, {"rate": [1.0, 2.0, 3.0]}, threads=2, shard=[1, 2])
    assert [r["run"] for r in rows] == [1]


@pytest.mark.parametrize(
    "dist, field",
    [((math.nan, math.nan), "mean"), ((100, math.nan), "cv"), ((math.inf, 0.5), "mean"),
     ((0, 0.5), "mean"), ((-5, 0.0), "mean"), ((100, math.inf), "cv"),
     ((100, 0.5, -1, 10), "lo"), ((100, 0.5, 1, 2**40), "hi")])
def test_length_dists_must_be_finite_and_positive(dist, field):
    with pytest.raises(disagg.ConfigError) as e:
        ds.poisson_workload(1.0, 10, ds.LengthDist(*dist), ds.LengthDist(100))
    assert e.value.field == f"LengthDist.{field}", str(e.value)
    assert field in str(e.value)


def test_the_rust_side_checks_length_dists_too():
    # `_core` called directly (not through LengthDist): a ConfigError, not a panic.
    with pytest.raises(disagg.ConfigError) as e:
        disagg._core.poisson_workload(1.0, 10, (math.nan, 0.0, 1, 10), (100.0, 0.0, 1, 10), 0)
    assert e.value.field == "prompt.mean"
    with pytest.raises(disagg.ConfigError) as e:
        disagg._core.poisson_workload(1.0, 10, (100.0, 0.0, 1, 10), (100.0, 0.0, 1, 2**33), 0)
    assert e.value.field == "output.hi"
