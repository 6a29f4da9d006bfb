#!/usr/bin/env python3
"""How fast disagg is from Python (issue 14's speed targets). Build the extension with
`maturin develop --release` first; a debug build is ~10x slower and says nothing.

  (a) `disagg.run(scenario)` per call, with `Run.requests` (the per-request NumPy arrays) and
      `Run.summary` (the summary dict): best and median of N, in ms;
  (b) the same run in Rust alone (`disagg._core.time_runs(scenario, 1)`: build the workload,
      simulate, summarise; no Python objects), timed alternately with (a), and the Python
      overhead over it, in %;
  (c) `disagg.sweep` of 1,000 such runs (the 800-request scenario, seeds 1..1000) on 2 threads:
      seconds, runs/s, simulated requests/s.

Targets: (a) <= 5 ms per call for the 800-request scenario, (b) overhead <= 20%, (c) <= 1.5 s.

    python crates/disagg-py/bench/bench_python.py [--n 200] [--sweep-runs 1000] [--threads 2]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import disagg
from disagg import _core

# The chapter's saturated 25 GbE link at 14 req/s (800 requests), and the command line's defaults.
SCENARIOS: List[Tuple[str, Optional[str]]] = [("eth25g-14rps", "eth25g-14rps"), ("default", None)]


def interleaved(
    f: Callable[[], Any], rust: Callable[[], float], n: int, warmup: int = 3
) -> Tuple[List[float], List[float]]:
    """Seconds per call of `f` (timed here) and of `rust` (which times itself), alternately, `n`
    of each after `warmup` untimed ones, so that both see the same machine (GC off meanwhile)."""
    for _ in range(warmup):
        f()
        rust()
    a, b = [], []
    gc.disable()
    try:
        for _ in range(n):
            t = time.perf_counter()
            f()
            a.append(time.perf_counter() - t)
            b.append(rust())
    finally:
        gc.enable()
    return a, b


def python_call(scenario: Optional[str]) -> Callable[[], Any]:
    def call() -> Any:
        r = disagg.run(scenario)
        return r.requests, r.summary

    return call


def ms(xs: List[float]) -> Tuple[float, float]:
    return 1e3 * min(xs), 1e3 * statistics.median(xs)


def bench_runs(n: int) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for label, scenario in SCENARIOS:
        requests = len(disagg.run(scenario))
        py, rust = interleaved(python_call(scenario), lambda: _core.time_runs(scenario, 1), n)
        (pb, pm), (rb, rm) = ms(py), ms(rust)
        out[label] = dict(requests=requests, py_best=pb, py_median=pm, rust_best=rb,
                          rust_median=rm, overhead_best=100 * (pb - rb) / rb,
                          overhead_median=100 * (pm - rm) / rm)
        print(
            f"(a) disagg.run({scenario!r}) + requests + summary, {requests} requests: "
            f"best {pb:.2f} ms, median {pm:.2f} ms (n={n})"
        )
        print(
            f"(b) the same run in Rust alone (_core.time_runs): best {rb:.2f} ms, median "
            f"{rm:.2f} ms; Python overhead {out[label]['overhead_best']:+.1f}% (best), "
            f"{out[label]['overhead_median']:+.1f}% (median)"
        )
    return out


def bench_sweep(runs: int, threads: int, repeats: int) -> Dict[str, float]:
    vary = {"seed": list(range(1, runs + 1))}
    requests = len(disagg.run("eth25g-14rps"))
    times, cpus = [], []
    for _ in range(repeats):
        c = _cpu()
        t = time.perf_counter()
        rows = disagg.sweep("eth25g-14rps", vary, threads=threads)
        times.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
        assert len(rows) == runs
        del rows
    best, med = min(times), statistics.median(times)
    print(
        f"(c) disagg.sweep of {runs} runs of {requests} requests, threads={threads}: best "
        f"{best:.3f} s, median {med:.3f} s ({runs / best:.0f} runs/s, "
        f"{runs * requests / best / 1e6:.2f} M requests/s at best; {repeats} repeats)"
    )
    cpu = min(cpus)
    print(
        f"    CPU time of the process: {cpu:.3f} s (all threads), {cpu / threads:.3f} s per "
        f"thread: the wall time on {threads} otherwise idle cores"
    )
    return dict(best=best, median=med, cpu=cpu)


def _cpu() -> float:
    """User + system CPU seconds of this process, all threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=200, help="timed calls per scenario [200]")
    p.add_argument("--sweep-runs", type=int, default=1000, help="runs in the sweep [1000]")
    p.add_argument("--threads", type=int, default=2, help="sweep threads [2]")
    p.add_argument("--repeats", type=int, default=3, help="sweep repeats [3]")
    a = p.parse_args()
    print(f"disagg {disagg.__version__}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    bench_runs(a.n)
    bench_sweep(a.sweep_runs, a.threads, a.repeats)


if __name__ == "__main__":
    main()
