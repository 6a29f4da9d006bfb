"""disagg: what it costs to move the KV cache in prefill/decode-disaggregated LLM serving.

The exact, fast disagg engine (Rust) as Python objects. Every number equals the command line's
(`disagg run --json`) and, on everything it models, the reference simulator's
(Disaggregated_Inference_Sim), bit for bit.

    >>> import disagg
    >>> r = disagg.run("eth25g-14rps")              # a named scenario (see disagg.presets())
    >>> r.summary["slo_attainment"]
    0.4097222222222222
    >>> r = disagg.run(model="llama3-8b", devices_per_instance=1, rate=8.0, link="eth-100g")
    >>> df = r.to_pandas()                           # one row per request (needs pandas)

Units: SI inside (seconds, bytes, bytes/s, watts, joules); names carry them (`ttft_s`).
Functions: `run`, `sweep`, `compare`, `plan`, `handoff`, `catalogue`, `presets`, `trace_stats`,
`options`, `jsonl`, `cli`. Bad input raises `ConfigError` (a `ValueError`) with the command line's
one-line message; its `field` attribute names the option at fault. An unknown option name is an
`UnknownOptionError`, also a `TypeError`, listing close matches; an input file that does not exist
a `MissingFileError`, also a `FileNotFoundError`. `disagg.reference` is a
drop-in for the reference package's API (`import disagg.reference as ds`).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from . import _errors
from ._core import SCHEMA_VERSION, ConfigError, __version__
from ._errors import MissingFileError, UnknownOptionError

__all__ = [
    "ConfigError",
    "MissingFileError",
    "UnknownOptionError",
    "Run",
    "SCHEMA_VERSION",
    "__version__",
    "catalogue",
    "cli",
    "compare",
    "handoff",
    "jsonl",
    "options",
    "plan",
    "presets",
    "run",
    "sweep",
    "trace_stats",
]

Scenario = Union[None, str, Mapping[str, Any]]


class Run:
    """One finished simulation.

    Attributes (computed on first use, then kept):
      summary    the `summary` object of `disagg run --json` (dict; SI units, NaN as None)
      document   the whole `disagg run --json` document (schema_version, tool, scenario, summary)
      scenario   the scenario as run (every key; pass it back to `disagg.run` to repeat the run)
      requests   per-request columns as NumPy arrays: rid, arrival_s, prompt_len, output_len,
                 prefill_start_s, first_token_s, kv_start_s, kv_ready_s, decode_start_s,
                 finish_s (NaN where a request has no such stamp), and with the scheduling levers
                 sched_delay_s, preemptions, prefix_hit_tokens, n_itl, itl_max_s, n_itl_zero
      series     the sampler's time series every `sample_dt` seconds (t_s, in_system,
                 link_queue, link_busy, link_bytes_in_flight, decode_mem_wait, and per instance
                 NAME.queue, NAME.running, NAME.kv_used (tokens), NAME.kv (fraction of capacity));
                 computed by running the same simulation again with the sampler on
    """

    __slots__ = ("_h", "_doc", "_requests", "_series")

    def __init__(self, handle: "_core.RunHandle") -> None:
        self._h = handle
        self._doc: Optional[Dict[str, Any]] = None
        self._requests: Optional[Dict[str, Any]] = None
        self._series: Optional[Dict[str, Any]] = None

    @property
    def document(self) -> Dict[str, Any]:
        if self._doc is None:
            self._doc = self._h.document()
        return self._doc

    @property
    def summary(self) -> Dict[str, Any]:
        return self.document["summary"]

    @property
    def scenario(self) -> Dict[str, Any]:
        return self.document["scenario"]

    @property
    def requests(self) -> Dict[str, Any]:
        if self._requests is None:
            self._requests = self._h.requests()
        return self._requests

    @property
    def series(self) -> Dict[str, Any]:
        if self._series is None:
            self._series = self._h.series()
        return self._series

    def to_pandas(self):
        """The per-request columns as a pandas DataFrame (needs pandas), with ttft_s, tpot_s
        and e2e_s added."""
        import pandas as pd

        df = pd.DataFrame(self.requests)
        df["ttft_s"] = df["first_token_s"] - df["arrival_s"]
        out = df["output_len"]
        df["tpot_s"] = ((df["finish_s"] - df["first_token_s"]) / (out - 1)).where(out >= 2)
        df["e2e_s"] = df["finish_s"] - df["arrival_s"]
        return df

    def to_arrow(self):
        """The per-request columns as a pyarrow Table (needs pyarrow)."""
        import pyarrow as pa

        return pa.table(self.requests)

    def write_trace(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Write the Chrome / Perfetto trace of the run (whole or not at all)."""
        self._h.write_trace(path)

    def report(self) -> str:
        """The text report `disagg run` prints."""
        return self._h.text()

    def __len__(self) -> int:
        return len(self._h)

    def __repr__(self) -> str:
        s = self.summary
        slo, p99 = s["slo_attainment"], s["ttft_s"]["p99"]
        # None: no request finished (every one rejected), so there is no percentile.
        slo_text = "n/a" if slo is None else f"{100 * slo:.1f}%"
        p99_text = "n/a" if p99 is None else f"{1e3 * p99:.1f} ms"
        return f"<disagg.Run {s['requests']['completed']} done, SLO met {slo_text}, ttft p99 {p99_text}>"

    def __str__(self) -> str:
        return self.report()


def run(scenario: Scenario = None, /, **options: Any) -> Run:
    """Simulate one configuration; returns a `Run`.

    `scenario`: None (the command line's defaults), a preset's name (see `presets()`), or a dict
    of scenario keys (which may name a `preset`; `Run.scenario` is such a dict). Keyword options
    are laid over it; their names are the scenario keys, the same as in a TOML scenario file and
    `/api/run` (the CLI's flags with '_' for '-'). `preset=` starts from a named scenario,
    `trace_file=` replays a trace (with `trace_format=`, `time_scale=`, `trace_start=`, ...), and
    `catalogue=` adds models, devices and links from a TOML file. The GIL is released while the
    simulation runs.

    Raises ConfigError (a ValueError) naming the bad option.
    """
    return Run(_core.run(scenario, options))


def sweep(
    base: Scenario = None,
    vary: Optional[Mapping[str, Sequence[Any]]] = None,
    threads: Optional[int] = None,
    shard: Optional[Tuple[int, int]] = None,
    catalogue: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> List[Dict[str, Any]]:
    """The cartesian product of `vary`'s axes over `base`, run in parallel in Rust.

    Returns the rows `disagg sweep --jsonl` writes, in the same order (the last axis varies
    fastest): dicts with run, runs_total, spec (a fingerprint of base and axes), axes, scenario
    and summary. `base` is a preset's name or a dict of scenario keys (may name a `preset`);
    `vary` maps scenario keys to lists of values, in axis order. `threads`: worker threads
    (default: all cores; at most 1024). `shard=(i, n)`: only the runs whose index modulo n is i
    (two whole numbers, 0 <= i < n), for spreading a sweep over machines (`jsonl(rows)` of all
    shards' rows sorted by `run` is byte for byte the one-machine output). Ctrl-C stops every run
    (KeyboardInterrupt), as it stops `run`.
    """
    cat = None if catalogue is None else os.fspath(catalogue)
    return _core.sweep(base, dict(vary or {}), threads, shard, cat)


def jsonl(rows: Iterable[Mapping[str, Any]]) -> str:
    """Sweep rows as the JSON Lines text `disagg sweep --jsonl` writes (one row per line)."""
    return _core.jsonl(list(rows))


# Options of the in-process commands that name an input file.
_INPUT_FILES = ("trace_file", "workload_file", "catalogue", "spec", "config")


def _check_inputs(options: Mapping[str, Any]) -> None:
    """A FileNotFoundError (`MissingFileError`) for an input file option naming no file."""
    for key in _INPUT_FILES:
        value = options.get(key)
        if value is not None and not os.path.exists(os.fspath(value)):
            raise _errors.missing_file(key, os.fspath(value))


def compare(scenario: Optional[str] = None, /, **options: Any) -> Dict[str, Any]:
    """Colocated against disaggregated on the same request stream (or the scenario against
    `variant=[...]` variants, or at each rate of `sweep_rate=[...]`): the document
    `disagg compare --json` prints. `scenario` is a preset's name."""
    if scenario is not None:
        options = {"preset": scenario, **options}
    _check_inputs(options)
    return _core.compare(None, {"quiet": True, **options})


def plan(scenario: Optional[str] = None, /, **options: Any) -> Dict[str, Any]:
    """Capacity planning: `max_rate=True` for the highest rate that meets the SLO-attainment
    target, or `target_rate=R` for the cheapest cluster that serves R req/s: the document
    `disagg plan --json` prints. `scenario` is a preset's name. A list option (`prefill_counts`,
    `links`, `formats`, ...) is its text (`"1-4"`, `"h100,a100"`) or a list of items; `price` is
    one `KEY=USD` or a list of them."""
    if scenario is not None:
        options = {"preset": scenario, **options}
    _check_inputs(options)
    return _core.plan(None, dict(options))


def trace_stats(path: Union[str, "os.PathLike[str]"], **options: Any) -> Dict[str, Any]:
    """What a request trace holds (rows, duration, rates, token percentiles): the document
    `disagg trace-stats --json` prints. Options: `trace_format`, `time_scale`, `trace_start`,
    `trace_duration`, `max_requests`, `skip_bad_lines`, `sort_trace`, ... (the scenario keys of
    `run`, or the flags' names with '_' for '-')."""
    if not os.path.exists(os.fspath(path)):
        raise _errors.missing_file("path", os.fspath(path))
    return _core.trace_stats(os.fspath(path), dict(options))


def handoff(**options: Any) -> Dict[str, Any]:
    """The KV hand-off of one prompt: the object `disagg handoff --json` prints (bytes, wire
    bytes, transfer and exposed time in seconds, link saturation in req/s, energy in joules).
    Options are the calculator's keys: model, prompt_tokens, link, link_channels, compression,
    compress_at, send, prefill_device, devices_per_instance, ... (see `disagg handoff --help`),
    the rank-aware ones (handoff_ranks, prefill_tp, decode_tp, ...), and `catalogue=`."""
    return _core.handoff(options)


def catalogue(catalogue: Optional[Union[str, "os.PathLike[str]"]] = None) -> Dict[str, Any]:
    """Models, devices, links and compression formats: `disagg list --json` (with the entries of
    a `catalogue` TOML file when given)."""
    if catalogue is None:
        return _core.catalogue(None)
    _check_inputs({"catalogue": catalogue})
    return _core.catalogue(os.fspath(catalogue))


def presets() -> List[Dict[str, Any]]:
    """The named scenarios: name, group, about and scenario keys (`disagg presets --json`)."""
    return _core.presets()


def options() -> List[Dict[str, Any]]:
    """Every scenario option `run` and `sweep` take: key, flag, help, heading, default."""
    return _core.options()


def _binary() -> str:
    """The `disagg` executable: `DISAGG_BIN` if set, else `disagg` on the PATH."""
    import shutil

    given = os.environ.get("DISAGG_BIN")
    if given:
        if not os.path.exists(given):
            raise FileNotFoundError(f"DISAGG_BIN: no such file '{given}' (set it to the disagg executable)")
        return given
    found = shutil.which("disagg")
    if found is None:
        raise FileNotFoundError(
            "disagg.cli needs the `disagg` executable: install it (`cargo install --path crates/disagg-cli`) "
            "and put it on the PATH, or set DISAGG_BIN to its path"
        )
    return found


def cli(*args: str) -> str:
    """Run the `disagg` executable (`DISAGG_BIN`, else `disagg` on the PATH) with ARGS and return
    what it prints on standard output. Exit code 2 (bad input) raises ConfigError with its
    message; another failure a RuntimeError with its standard error."""
    import subprocess

    argv = [_binary()] + [_text(a) for a in args]
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    if done.returncode == 0:
        return out
    if done.returncode == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        line = next((x for x in lines if x.startswith("error: ")), lines[-1] if lines else "bad input")
        raise ConfigError(line[len("error: ") :] if line.startswith("error: ") else line)
    raise RuntimeError(f"disagg exited with code {done.returncode}: {err.strip()}")


def _text(v: Any) -> str:
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _option_lines() -> str:
    lines = []
    for o in _core.options():
        default = o["shown_default"]
        tail = f" [{default}]" if default else ""
        lines.append(f"  {o['key']}: {o['help']}{tail}")
    return "\n".join(lines)


def _see_help(command: str, keys: str = "") -> str:
    text = (
        f"\n    Options are `disagg {command}`'s flags with '_' for '-' "
        f"(see `disagg {command} --help`).\n"
    )
    if keys:
        text += "\n    Scenario keys:\n" + keys + "\n"
    return text


run.__doc__ = (run.__doc__ or "") + "\nOptions (scenario keys):\n" + _option_lines() + "\n"
sweep.__doc__ = (sweep.__doc__ or "") + "\nAxes and base keys: the options of `run`.\n"
compare.__doc__ = (compare.__doc__ or "") + _see_help("compare", _option_lines())
plan.__doc__ = (plan.__doc__ or "") + _see_help("plan", _option_lines())
handoff.__doc__ = (handoff.__doc__ or "") + _see_help("handoff")
trace_stats.__doc__ = (trace_stats.__doc__ or "") + _see_help("trace-stats")
