#!/usr/bin/env python3
"""A disagg sweep fanned out over a Ray cluster, merged into the bytes one machine writes.

    python examples/python/ray_sweep.py --preset link-eth-25g \\
        --vary rate=8,10,12,14 --vary kv_compress=none,fp8 --shards 4 --out runs.jsonl

writes exactly the bytes of

    disagg sweep --preset link-eth-25g --vary rate=8,10,12,14 --vary kv_compress=none,fp8 \\
        --jsonl runs.jsonl

Each Ray task runs one shard, `disagg.sweep(base, vary, shard=(i, n), threads=1)`: the runs whose
index modulo n is i. The driver checks that every run came back once and that all shards ran the
same sweep (the rows' `spec` fingerprint and `runs_total`), sorts the rows by `run` and writes
`disagg.jsonl(rows)` (to a temporary file renamed over --out, so --out is whole or untouched).

--address: an existing cluster (`auto`, `ray://HOST:10001`, ...); every node needs the `disagg`
package installed (`pip install ./crates/disagg-py`) and, with --catalogue, the file at the same
path. Without --address a local cluster is started with --num-cpus CPUs (default 2).

Base and axes are spelled as on the command line: --preset NAME, --set KEY=VALUE for base keys
(repeatable), --vary KEY=V1,V2,... (repeatable, the last axis varies fastest), or --spec FILE.toml
with `[base]` and `[vary]` tables (as `disagg sweep --spec`). Keys are the scenario keys
(`disagg.options()`; '-' may stand for '_').

Exit status: 0 on success, 2 on bad input or a failed run (one line on stderr), 3 when Ray is not
installed.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import math
import os
import sys
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import disagg


class SweepError(Exception):
    """Bad input or an inconsistent set of shard rows: one line for the user."""


# ---- base and axes as the command line spells them ------------------------------------------


def _defaults() -> Dict[str, Any]:
    return {o["key"]: o["default"] for o in disagg.options()}


def typed(key: str, raw: str, defaults: Mapping[str, Any]) -> Any:
    """The Python value of `KEY=RAW` as `disagg sweep` reads it: the raw text for an option that
    holds a name (model, link, kv_compress, ...), true/false for a switch, else a whole number if
    it is one, a real if it is one, and the text otherwise (the engine then names what is wrong)."""
    raw = raw.strip()
    default = defaults.get(key)
    if isinstance(default, str):
        return raw
    if raw.lower() in ("none", "null"):
        return None
    if isinstance(default, bool) or raw.lower() in ("true", "false"):
        if raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        return raw
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        x = float(raw)
    except ValueError:
        return raw
    if not math.isfinite(x):
        raise SweepError(f"{key}={raw}: expected a finite number")
    return x


def _key(name: str, flag: str, defaults: Mapping[str, Any]) -> str:
    key = name.strip().replace("-", "_")
    if key not in defaults:
        close = difflib.get_close_matches(key, list(defaults), n=4)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SweepError(f"{flag}: unknown option '{key}'{hint} (disagg.options() lists them)")
    return key


def parse_set(items: Sequence[str], defaults: Mapping[str, Any]) -> Dict[str, Any]:
    """--set KEY=VALUE items as base keys."""
    base: Dict[str, Any] = {}
    for item in items:
        name, eq, raw = item.partition("=")
        if not eq:
            raise SweepError(f"--set: expected KEY=VALUE, got '{item}'")
        key = _key(name, "--set", defaults)
        if key in base:
            raise SweepError(f"--set {key}: given twice")
        value = typed(key, raw, defaults)
        if value is not None:
            base[key] = value
    return base


def parse_vary(items: Sequence[str], defaults: Mapping[str, Any]) -> Dict[str, List[Any]]:
    """--vary KEY=V1,V2,... items as axes, in the order given."""
    vary: Dict[str, List[Any]] = {}
    for item in items:
        name, eq, raws = item.partition("=")
        if not eq:
            raise SweepError(f"--vary: expected NAME=V1,V2,..., got '{item}'")
        key = _key(name, "--vary", defaults)
        if key in vary:
            raise SweepError(f"--vary {key}: axis given twice")
        parts = [p.strip() for p in raws.split(",")]
        if not raws.strip() or any(not p for p in parts):
            raise SweepError(f"--vary {key}: give each value once, e.g. {key}=2,4 (got '{raws}')")
        values = [typed(key, p, defaults) for p in parts]
        if any(v is None for v in values):
            raise SweepError(f"--vary {key}: 'none' (unset) is not a value an axis can take here")
        vary[key] = values
    return vary


def read_spec(path: str) -> Tuple[Dict[str, Any], Dict[str, List[Any]]]:
    """A `disagg sweep --spec` file: its [base] and [vary] tables."""
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover - older Pythons
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            raise SweepError("--spec needs Python 3.11 or the tomli package") from None
    try:
        with open(path, "rb") as f:
            t = tomllib.load(f)
    except FileNotFoundError:
        raise SweepError(f"--spec: no such file: {path}") from None
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SweepError(f"--spec {path}: {e}") from None
    unknown = [k for k in t if k not in ("base", "vary")]
    if unknown:
        raise SweepError(f"--spec {path}: unknown key '{unknown[0]}'; valid: base, vary")
    base, vary = t.get("base", {}), t.get("vary", {})
    if not isinstance(base, dict) or not isinstance(vary, dict):
        raise SweepError(f"--spec {path}: base and vary must be tables")
    return dict(base), dict(vary)


def runs_of(vary: Mapping[str, Sequence[Any]]) -> int:
    n = 1
    for values in vary.values():
        n *= len(values)
    return n


# ---- the fan-out and the merge ----------------------------------------------------------------


def shard_rows(
    base: Mapping[str, Any],
    vary: Mapping[str, Sequence[Any]],
    i: int,
    n: int,
    catalogue: Optional[str],
) -> List[Dict[str, Any]]:
    """One shard's rows: the body of a Ray task (also callable without Ray)."""
    import disagg as d

    return d.sweep(dict(base), dict(vary), threads=1, shard=(i, n), catalogue=catalogue)


def merge(shards: Sequence[Sequence[Mapping[str, Any]]]) -> List[Mapping[str, Any]]:
    """All shards' rows in run order, after checking that they are one whole sweep: the same spec
    fingerprint and run count everywhere, and every run exactly once."""
    rows = [r for s in shards for r in s]
    if not rows:
        raise SweepError("no rows came back")
    specs = {r["spec"] for r in rows}
    totals = {r["runs_total"] for r in rows}
    if len(specs) != 1 or len(totals) != 1:
        raise SweepError(f"the shards ran different sweeps (specs {sorted(specs)})")
    total = totals.pop()
    rows.sort(key=lambda r: r["run"])
    runs = [r["run"] for r in rows]
    if runs != list(range(total)):
        dup = next((k for j, k in enumerate(runs) if j and runs[j - 1] == k), None)
        missing = sorted(set(range(total)) - set(runs))[:5]
        why = [f"duplicate run {dup}"] if dup is not None else []
        why += [f"missing runs {missing}"] if missing else []
        raise SweepError(f"{len(rows)} rows for {total} runs ({', '.join(why)})")
    return rows


def write_atomic(path: str, text: str) -> None:
    """`text` to `path` whole or not at all ('-': standard output)."""
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ray-sweep-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _task_error(e: BaseException) -> str:
    cause = getattr(e, "cause", None)
    if isinstance(cause, disagg.ConfigError):
        return str(cause)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    return str(e).strip().splitlines()[-1]


def run_on_ray(
    ray: Any,
    base: Mapping[str, Any],
    vary: Mapping[str, Sequence[Any]],
    shards: int,
    catalogue: Optional[str],
) -> List[Mapping[str, Any]]:
    """Fans the sweep out as one Ray task per shard and merges the rows (Ray already initialised)."""
    task = ray.remote(num_cpus=1)(shard_rows)
    refs = [task.remote(base, vary, i, shards, catalogue) for i in range(shards)]
    parts, failed = [], []
    for i, ref in enumerate(refs):  # every result collected, so Ray reports no stray errors
        try:
            parts.append(ray.get(ref))
        except ray.exceptions.RayTaskError as e:
            failed.append(f"shard {i} of {shards} failed: {_task_error(e)}")
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        raise SweepError(failed[0] + more)
    return merge(parts)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="ray_sweep.py",
        description="Run a disagg sweep as Ray tasks, one per shard, and write the JSON Lines "
        "that `disagg sweep --jsonl` writes on one machine.",
    )
    p.add_argument("--address", help="a running Ray cluster (default: start a local one)")
    p.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local cluster [2]")
    p.add_argument("--shards", type=int, help="Ray tasks (default: the cluster's CPUs)")
    p.add_argument("--out", required=True, help="the JSON Lines file to write ('-': stdout)")
    p.add_argument("--preset", help="start from a named scenario (disagg.presets())")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a base scenario key (repeatable)")
    p.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="an axis (repeatable; the last varies fastest)")
    p.add_argument("--spec", help="a sweep spec TOML file ([base], [vary]), as disagg sweep --spec")
    p.add_argument("--catalogue", help="extra models, devices and links (a TOML file)")
    a = p.parse_args(argv)

    try:
        defaults = _defaults()
        base: Dict[str, Any] = {}
        vary: Dict[str, List[Any]] = {}
        if a.spec:
            base, vary = read_spec(a.spec)
        if a.preset:
            base = {"preset": a.preset, **{k: v for k, v in base.items() if k != "preset"}}
        base.update(parse_set(a.set, defaults))
        for key, values in parse_vary(a.vary, defaults).items():
            if key in vary:
                raise SweepError(f"--vary {key}: axis given twice")
            vary[key] = values
        if a.shards is not None and a.shards < 1:
            raise SweepError(f"--shards: must be at least 1, got {a.shards}")
        if a.num_cpus < 1:
            raise SweepError(f"--num-cpus: must be at least 1, got {a.num_cpus}")
        total = runs_of(vary)
        # Checks the base, the axes and the catalogue here, before any cluster starts: a shard
        # index past the last run runs nothing.
        disagg.sweep(base, vary, threads=1, shard=(total, total + 1), catalogue=a.catalogue)
    except (SweepError, disagg.ConfigError, TypeError) as e:
        print(f"ray_sweep.py: error: {e}", file=sys.stderr)
        return 2

    try:
        import ray
    except ImportError:
        print("ray_sweep.py: error: Ray is not installed (pip install 'ray[default]')",
              file=sys.stderr)
        return 3

    if a.address:
        ray.init(address=a.address, logging_level=logging.WARNING)
    else:
        ray.init(num_cpus=a.num_cpus, include_dashboard=False, logging_level=logging.WARNING)
    try:
        shards = a.shards or max(1, int(ray.cluster_resources().get("CPU", 1)))
        shards = min(shards, total)
        rows = run_on_ray(ray, base, vary, shards, a.catalogue)
        write_atomic(a.out, disagg.jsonl(rows))
    except SweepError as e:
        print(f"ray_sweep.py: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"ray_sweep.py: error: --out {a.out}: {e.strerror or e}", file=sys.stderr)
        return 2
    finally:
        ray.shutdown()
    if a.out != "-":
        print(f"{len(rows)} runs in {shards} shards -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
