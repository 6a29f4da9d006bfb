"""The GIL is released while the engine runs, and runs are deterministic across calls and
threads."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import disagg

# A long run: 20,000 requests of llama3-8b on one device per instance, the macro-step path.
LONG = dict(model="llama3-8b", devices_per_instance=1, requests=20000, rate=8.0, fast=True)


def test_main_thread_runs_while_a_simulation_runs():
    started = threading.Event()
    result = {}

    def work():
        started.set()
        result["run"] = disagg.run(**LONG)

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    # Count pure-Python iterations while the other thread is inside the engine. With the GIL held
    # for the whole run this loop would not get to run until the run is over (a handful of
    # iterations at most, between the event and the call); released, it runs all along.
    count = 0
    while t.is_alive():
        count += 1
    t.join()
    assert len(result["run"]) == 20000
    assert count > 10_000, count


def test_sweep_and_trace_release_the_gil_too(tmp_path):
    done = threading.Event()
    counts = []

    def work():
        disagg.sweep(dict(LONG, requests=5000), vary={"rate": [4.0, 8.0]}, threads=1)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    count = 0
    while not done.is_set():
        count += 1
    t.join()
    counts.append(count)
    assert counts[0] > 10_000, counts


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

    best_serial = min(_timed(serial) for _ in range(3))
    best_parallel = min(_timed(parallel) for _ in range(3))
    assert best_parallel < 0.85 * best_serial, (best_parallel, best_serial)


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
