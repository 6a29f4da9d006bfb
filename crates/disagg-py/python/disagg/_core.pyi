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
    "cli",
    "help",
    "presets",
    "options",
    "time_runs",
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
def cli(args: Sequence[str]) -> str: ...
def help(command: str) -> str: ...
def presets() -> List[Dict[str, Any]]: ...
def options() -> List[Dict[str, Any]]: ...
def time_runs(
    scenario: _Scenario = None, n: int = 10, options: Optional[Dict[str, Any]] = None
) -> float: ...
