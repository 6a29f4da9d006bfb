"""The reference's ``workload`` module: requests, length distributions, the Poisson workload
(bit for bit, in Rust) and workload files."""

from __future__ import annotations

import json
import math
import numbers
import os
import random
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from .. import _core
from ._common import _error


@dataclass
class Request:
    """One request and every stamp the simulator puts on it (the reference's ``Request``)."""

    rid: int
    arrival: float
    prompt_len: int
    output_len: int
    prefill_start: Optional[float] = None
    first_token: Optional[float] = None
    prefill_done: Optional[float] = None
    kv_start: Optional[float] = None
    kv_ready: Optional[float] = None
    decode_start: Optional[float] = None
    finish: Optional[float] = None
    tokens_out: int = 0
    last_token: Optional[float] = None
    itls: List[float] = field(default_factory=list, repr=False)
    prefix: tuple = field(default=(), repr=False)
    emit_key: Optional[str] = field(default=None, repr=False)
    after: Optional[int] = field(default=None, repr=False)
    think: float = field(default=0.0, repr=False)

    @property
    def ttft(self) -> float:
        return self.first_token - self.arrival  # type: ignore[operator, return-value]  # stamps are set after a run

    @property
    def tpot(self) -> Optional[float]:
        if self.output_len < 2:
            return None
        return (self.finish - self.first_token) / (self.output_len - 1)  # type: ignore[operator, return-value]  # stamps are set after a run

    @property
    def e2e(self) -> float:
        return self.finish - self.arrival  # type: ignore[operator, return-value]  # stamps are set after a run

    @property
    def handoff_start(self) -> float:
        return self.prefill_done if self.prefill_done is not None else self.first_token  # type: ignore[operator, return-value]  # stamps are set after a run

    def stages(self) -> Dict[str, float]:
        """Where this request's time went (sums to e2e), simulator.md §1.4."""
        end_of_handoff = self.kv_ready if self.kv_ready is not None else self.first_token
        s = dict.fromkeys(("prefill_queue", "prefill", "kv_wait", "kv_transfer", "decode_queue",
                           "decode"), 0.0)
        s["prefill_queue"] = self.prefill_start - self.arrival  # type: ignore[operator, return-value]  # stamps are set after a run
        s["prefill"] = self.handoff_start - self.prefill_start  # type: ignore[operator, return-value]  # stamps are set after a run
        if self.kv_start is not None:
            s["kv_wait"] = self.kv_start - self.handoff_start
            s["kv_transfer"] = self.kv_ready - self.kv_start  # type: ignore[operator, return-value]  # stamps are set after a run
        if self.decode_start is not None:
            s["decode_queue"] = self.decode_start - end_of_handoff  # type: ignore[operator, return-value]  # stamps are set after a run
            s["decode"] = self.finish - self.decode_start  # type: ignore[operator, return-value]  # stamps are set after a run
        return s


class _LazyItls:
    """``Request.itls``, read from its run the first time a script asks for it (a plain list
    then on, as the reference's): a run of 10,000 requests has 2.5 million of them, and building
    them all up front took longer than the simulation."""

    def __get__(self, obj: Optional[Request], cls: Any = None) -> Any:
        if obj is None:
            return []  # the dataclass field's class-level default
        d = obj.__dict__
        if d.get("_itls") is None:
            src = d.pop("_itls_src", None)
            d["_itls"] = [] if src is None else _core.reference_itls(*src)
        return d["_itls"]

    def __set__(self, obj: Request, value: List[float]) -> None:
        obj.__dict__["_itls"] = value
        obj.__dict__.pop("_itls_src", None)


Request.itls = _LazyItls()  # type: ignore[assignment]


@dataclass(frozen=True)
class LengthDist:
    """Lognormal lengths with mean `mean` and coefficient of variation `cv`, rounded (half to
    even) and clipped to [lo, hi]; `cv <= 0` is the fixed length `mean` (simulator.md §4.1)."""

    mean: float
    cv: float = 0.0
    lo: int = 1
    hi: int = 32768

    def __post_init__(self) -> None:
        # A NaN or infinite mean or cv made lengths of nonsense; a bound outside 0..4294967295,
        # lengths the engine cannot hold.
        for name, positive in (("mean", True), ("cv", False)):
            v = getattr(self, name)
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
            if not (ok and (v > 0 or not positive)):
                want = "a finite number > 0" if positive else "a finite number"
                raise _error(f"LengthDist.{name}", f"must be {want}, got {v!r}")
        for name in ("lo", "hi"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= v < 2**32:
                raise _error(f"LengthDist.{name}",
                             f"must be a whole number from 0 to 4294967295, got {v!r}")

    def sample(self, rng: random.Random) -> int:
        if self.cv <= 0:
            x = self.mean
        else:
            s2 = math.log(1 + self.cv ** 2)
            x = rng.lognormvariate(math.log(self.mean) - s2 / 2, math.sqrt(s2))
        return int(min(self.hi, max(self.lo, round(x))))

    def _tuple(self) -> Tuple[float, float, int, int]:
        return (float(self.mean), float(self.cv), int(self.lo), int(self.hi))


def poisson_workload(rate: float, n: int, prompt: LengthDist, output: LengthDist,
                     seed: int = 0) -> List[Request]:
    """`n` requests with exponential gaps at `rate` per second (bit for bit the reference's)."""
    rows = _core.poisson_workload(float(rate), n, prompt._tuple(), output._tuple(), int(seed))
    return [Request(i, a, p, o) for i, (a, p, o) in enumerate(rows)]


def workload_rows(reqs: List[Request]) -> List[list]:
    """The JSON rows of simulator.md §7.2 (a fourth element only when some request has a
    prefix chain, an emitted key or a predecessor)."""
    if not any(r.prefix or r.emit_key or r.after is not None for r in reqs):
        return [[r.arrival, r.prompt_len, r.output_len] for r in reqs]
    return [[r.arrival, r.prompt_len, r.output_len,
             {"chain": [list(c) for c in r.prefix], "emit": r.emit_key, "after": r.after,
              "think": r.think}] for r in reqs]


def dump_workload(reqs: List[Request], path: Union[str, "os.PathLike[str]"]) -> None:
    """Write the workload's JSON rows to `path` (whole or not at all; a regular file, never a FIFO
    or a device)."""
    _core.write_text(path, json.dumps(workload_rows(reqs)), "path")


def load_workload(path: Union[str, "os.PathLike[str]"]) -> List[Request]:
    """The workload of a JSON rows file, read as the command line reads its inputs: a regular
    file (never a FIFO or a device) of at most 1 GiB."""
    out = []
    for i, row in enumerate(json.loads(_core.read_text(path, "path"))):
        r = Request(i, float(row[0]), int(row[1]), int(row[2]))
        if len(row) > 3:
            x = row[3]
            r.prefix = tuple((k, int(v)) for k, v in x["chain"])
            r.emit_key, r.after, r.think = x["emit"], x["after"], float(x["think"])
        out.append(r)
    return out
