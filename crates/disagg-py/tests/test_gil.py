"""The GIL is released while the engine runs, and runs are deterministic across calls and
threads."""

from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import disagg

# A long run: 50,000 requests of llama3-8b on one device per instance, the macro-step path
# (about 0.15 s).
LONG = dict(model="llama3-8b", devices_per_instance=1, requests=50_000, rate=8.0, fast=True)


def _iterations_while_inside(call) -> int:
    """Pure-Python loop iterations the main thread makes while another thread is inside `call`.

    The worker sets `inside` just before the call and clears it just after (no bytecode between
    that lets the interpreter switch threads). A call that holds the GIL for its whole length
    leaves the main thread no chance to run while `inside` is set, but for one switch interval
    when it returns (CPython checks for a pending switch right after a call, before `inside` is
    cleared): with the interval at 10 us that is a few hundred iterations, or as many as the OS
    lets the main thread make before it runs the worker again (~100,000 when the machine is
    busy). A call that releases the GIL lets it run all along: the count grows with the call's
    length (millions for the long run)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        return _count(call)
    finally:
        sys.setswitchinterval(old)


def _count(call) -> int:
    started = threading.Event()
    state = {"inside": False, "done": False}

    def work():
        started.set()
        state["inside"] = True
        call()
        state["inside"] = False
        state["done"] = True

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    count = 0
    while not state["done"]:
        if state["inside"]:
            count += 1
    t.join()
    return count


def test_main_thread_runs_while_a_simulation_runs():
    result = {}

    def call():
        result["run"] = disagg.run(**LONG)

    count = _iterations_while_inside(call)
    assert len(result["run"]) == LONG["requests"]
    # About 0.15 s inside the engine: 1-3 million iterations on the 2-core dev machine.
    assert count > 100_000, count


def test_the_gil_check_sees_a_call_that_holds_the_gil():
    """The control: a C call that keeps the GIL (the builtin sum over a range, about 8x longer
    than the run) leaves the main thread only the bursts the OS scheduler allows, far fewer
    iterations than the shorter run that releases it; so the test above is not vacuous."""
    if getattr(sys, "_is_gil_enabled", lambda: True)() is False:
        pytest.skip("free-threaded Python: there is no GIL to hold")
    held = _iterations_while_inside(lambda: sum(range(3 * 10**7)))
    released = _iterations_while_inside(lambda: disagg.run(**LONG))
    assert held < released / 4, (held, released)


def test_sweep_write_trace_and_series_release_the_gil_too(tmp_path):
    opts = dict(LONG, requests=20_000)
    count = _iterations_while_inside(
        lambda: disagg.sweep(opts, vary={"rate": [4.0, 8.0]}, threads=1)
    )
    assert count > 10_000, count
    r = disagg.run(**opts)
    assert _iterations_while_inside(lambda: r.write_trace(tmp_path / "t.json")) > 10_000
    assert _iterations_while_inside(lambda: r.series) > 10_000


def _timed(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs at least 2 cores")
def test_two_threads_run_faster_than_serially():
    # About 0.3 s a run (100,000 requests on the macro-step path): long enough that thread start
    # and timer noise do not matter.
    opts = dict(LONG, requests=100_000)
    disagg.run(**opts)  # warm up (page in the library, numpy import)

    def serial():
        disagg.run(**opts)
        disagg.run(**opts)

    def parallel():
        ts = [threading.Thread(target=disagg.run, kwargs=opts) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    # Best of 3, serial and parallel interleaved so that a change in the machine's load hits
    # both; on a shared machine another process may take a core for a while, so up to 3 rounds.
    rounds = []
    for _ in range(3):
        times = [(_timed(serial), _timed(parallel)) for _ in range(3)]
        best_serial = min(t[0] for t in times)
        best_parallel = min(t[1] for t in times)
        rounds.append((best_parallel, best_serial))
        if best_parallel < 0.85 * best_serial:
            break
    else:
        msg = f"(parallel, serial) best of 3, each round: {rounds}"
        # Two threads can only be faster when a second core is free. On a shared development
        # machine that other work keeps busy, say so instead of failing; never in CI.
        load = os.getloadavg()[0]
        if not os.environ.get("CI") and load > (os.cpu_count() or 1) - 0.5:
            pytest.skip(f"no core free (load average {load:.2f}): {msg}")
        raise AssertionError(msg)


def test_same_inputs_same_summaries_across_calls_and_threads():
    opts = dict(model="llama3-8b", devices_per_instance=1, requests=300, rate=10.0)
    first = disagg.run(**opts)
    again = disagg.run(**opts)
    assert again.summary == first.summary
    assert again.document == first.document
    with ThreadPoolExecutor(max_workers=4) as ex:
        runs = list(ex.map(lambda _: disagg.run(**opts), range(8)))
    for r in runs:
        assert r.document == first.document
        for k, v in r.requests.items():
            assert (v == first.requests[k]).all() or k.endswith("_s"), k
    # Stamps, NaN included, bit for bit.
    import numpy as np

    for r in runs:
        for k, v in r.requests.items():
            assert np.array_equal(v, first.requests[k], equal_nan=True), k
    # Sweeps in threads too.
    vary = {"rate": [4.0, 8.0]}
    base = disagg.jsonl(disagg.sweep(opts, vary=vary, threads=1))
    with ThreadPoolExecutor(max_workers=2) as ex:
        outs = list(ex.map(lambda _: disagg.jsonl(disagg.sweep(opts, vary=vary)), range(3)))
    assert all(o == base for o in outs)
