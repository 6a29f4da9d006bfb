# Type stubs of the extension module `disagg._core` (src/lib.rs). Checked against the built module
# by `python -m mypy.stubtest disagg._core` (tests/test_stubs.py).

from os import PathLike
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union, final

__all__ = [
    "ConfigError",
    "__version__",
    "SCHEMA_VERSION",
    "RunHandle",
    "run",
    "simulate_rows",
    "poisson_workload",
    "handoff",
    "sweep",
    "jsonl",
    "compare",
    "catalogue",
    "trace_stats",
    "plan",
    "presets",
    "options",
    "time_runs",
    "read_text",
    "write_text",
    "_set_memory_budget",
    "ReferenceCostModel",
    "reference_simulate",
    "reference_itls",
    "reference_requests",
    "reference_cost_model",
]

__version__: str
SCHEMA_VERSION: int

class ConfigError(ValueError):
    """Bad input; `field` names the option at fault (None when no single option is)."""

    field: Optional[str]

_Scenario = Union[None, str, Mapping[str, Any]]
_Dist = Tuple[float, float, int, int]

@final
class RunHandle:
    """One finished simulation (wrapped by `disagg.Run`)."""

    def document(self) -> Dict[str, Any]: ...
    def text(self) -> str: ...
    def requests(self) -> Dict[str, Any]: ...
    def series(self) -> Dict[str, Any]: ...
    def write_trace(self, path: Union[str, PathLike[str]]) -> None: ...
    def reference_summary(self) -> Dict[str, Any]: ...
    def __len__(self) -> int: ...

def run(scenario: _Scenario = None, options: Optional[Dict[str, Any]] = None) -> RunHandle: ...
def simulate_rows(
    scenario: _Scenario,
    rows: Sequence[Tuple[float, int, int]],
    options: Optional[Dict[str, Any]] = None,
) -> RunHandle: ...
def poisson_workload(
    rate: float, n: int, prompt: _Dist, output: _Dist, seed: int
) -> List[Tuple[float, int, int]]: ...
def handoff(options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]: ...
def sweep(
    base: _Scenario,
    vary: Optional[Dict[str, Sequence[Any]]],
    threads: Optional[int] = None,
    shard: Optional[Tuple[int, int]] = None,
    catalogue: Optional[str] = None,
) -> List[Dict[str, Any]]: ...
def jsonl(rows: Any) -> str: ...
def compare(
    scenario: _Scenario = None, options: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]: ...
def catalogue(path: Optional[str] = None) -> Dict[str, Any]: ...
def trace_stats(path: str, options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]: ...
def plan(
    scenario: _Scenario = None, options: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]: ...
def presets() -> List[Dict[str, Any]]: ...
def options() -> List[Dict[str, Any]]: ...
def time_runs(
    scenario: _Scenario = None, n: int = 10, options: Optional[Dict[str, Any]] = None
) -> float: ...
def read_text(path: Union[str, PathLike[str]], field: str) -> str: ...
def write_text(path: Union[str, PathLike[str]], text: str, field: str) -> None: ...
def _set_memory_budget(bytes: Optional[int]) -> None: ...

# ---- the engine side of `disagg.reference` (src/reference.rs) ------------------------------------

# A step's cost: (flops, bytes, time_s, bound, energy_j, compute_j, memory_j).
_Step = Tuple[Union[int, float], float, float, str, float, float, float]

@final
class ReferenceCostModel:
    """One pool's cost model: the reference's `CostModel`."""

    def prefill(self, prompt_lens: Sequence[int]) -> _Step: ...
    def decode(self, context_lens: Sequence[int]) -> _Step: ...
    def decode_sum(self, ctx: int, batch: int) -> _Step: ...
    @property
    def kv_capacity_tokens(self) -> int: ...
    @property
    def flops_rate(self) -> float: ...
    @property
    def byte_rate(self) -> float: ...
    @property
    def idle_w(self) -> float: ...
    @property
    def joules_per_flop(self) -> float: ...

def reference_simulate(
    scenario: _Scenario,
    rows: Sequence[Tuple[float, int, int]],
    max_prefill_tokens: Optional[int] = None,
    warmup_frac: Optional[float] = None,
    sample_dt: Optional[float] = None,
) -> RunHandle: ...

# (rid, arrival, prompt_len, output_len, prefill_start, first_token, prefill_done, kv_start,
#  kv_ready, decode_start, finish, itls); None where the reference leaves a stamp unset.
_RefRequest = Tuple[
    int,
    float,
    int,
    int,
    Optional[float],
    Optional[float],
    Optional[float],
    Optional[float],
    Optional[float],
    Optional[float],
    Optional[float],
    int,
]

def reference_requests(run: RunHandle) -> List[_RefRequest]: ...
def reference_itls(run: RunHandle, rid: int) -> List[float]: ...
def reference_cost_model(scenario: _Scenario, role: str) -> ReferenceCostModel: ...
