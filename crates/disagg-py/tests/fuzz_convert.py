"""Property test of the conversion of Python arguments (issue 24): arbitrary nested objects given
to `run`, `sweep`, `handoff` and `jsonl` raise `ConfigError`, `TypeError` or `ValueError`, or
succeed; they never crash the interpreter.

Not collected by pytest on its own (the file name has no `test_` prefix): `test_fuzz.py` runs
it in a subprocess, so a crash fails that test instead of killing pytest.

    python crates/disagg-py/tests/fuzz_convert.py [MAX_EXAMPLES] [SEED]
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import disagg

# Every run this test makes is small: the keyword options override the generated keys.
SMALL = dict(model="llama3-8b", devices_per_instance=1, requests=5, rate=4.0)
# Real option names, so some generated dicts get past the names to the values.
KEYS = ["rate", "requests", "model", "link", "seed", "prompt_mean", "output_cv", "preset",
        "trace_file", "catalogue", "slo_ttft_ms", "mode", "link_channels", "prompt_tokens",
        "compression", "turns", "x"]


class Custom:
    """An object that is no option value."""


class Path:
    """os.PathLike: `__fspath__` returns `inner` (itself when None)."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner

    def __fspath__(self) -> Any:
        return self if self.inner is None else self.inner


class Index:
    """An integer by `__index__` (as NumPy's are)."""

    def __init__(self, v: int) -> None:
        self.v = v

    def __index__(self) -> int:
        return self.v


class Floaty:
    """A number by `__float__`."""

    def __init__(self, v: float) -> None:
        self.v = v

    def __float__(self) -> float:
        return self.v


def _cyclic(v: Any) -> Any:
    """`v` inside a container that then holds itself."""
    d: Dict[str, Any] = {"v": v}
    d["self"] = d
    lst: list = [v]
    lst.append(lst)
    return [d, lst][hash(repr(type(v))) % 2]


def _deep(v: Any, n: int) -> Any:
    for _ in range(n):
        v = [v]
    return v


scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.integers(min_value=-(2**200), max_value=2**200),
    st.sampled_from([2**63 - 1, 2**63, 2**64, -(2**63) - 1, 0, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.sampled_from(KEYS), st.binary(max_size=8),
    st.builds(Custom), st.builds(Path), st.builds(Path, st.text(max_size=8)),
    st.builds(Index, st.integers()), st.builds(Floaty, st.floats()),
    st.just(bytearray(b"ab")), st.just(object()), st.just(1j), st.just({1, 2}),
)
keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=6), st.integers(), st.none(),
                 st.tuples(st.integers()))


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(keys, children, max_size=4),
        children.map(_cyclic),
        st.tuples(children, st.integers(min_value=60, max_value=200)).map(lambda t: _deep(*t)),
        children.map(Path),
    )


values = st.recursive(scalars, _extend, max_leaves=12)
dicts = st.dictionaries(st.sampled_from(KEYS), values, max_size=4)

CALLS: Dict[str, Callable[[Any, Any], Any]] = {
    "run(scenario)": lambda v, d: disagg.run(v, **SMALL),
    "run(dict scenario)": lambda v, d: disagg.run(d, **SMALL),
    "run(option)": lambda v, d: disagg._core.run(None, {**SMALL, "rate": v}),
    "sweep(base)": lambda v, d: disagg.sweep(v, {"requests": [5]}),
    "sweep(dict base)": lambda v, d: disagg.sweep({**d, **SMALL}, {"requests": [5]}),
    "sweep(vary)": lambda v, d: disagg.sweep(SMALL, {"rate": v}),
    "sweep(threads, shard)": lambda v, d: disagg.sweep(SMALL, {"rate": [1.0]}, threads=v,
                                                       shard=d.get("x")),
    "handoff": lambda v, d: disagg.handoff(prompt_tokens=v),
    "handoff(dict)": lambda v, d: disagg._core.handoff(d),
    "jsonl": lambda v, d: disagg.jsonl([{"x": v}, d]),
}
EXPECTED = (disagg.ConfigError, TypeError, ValueError)


def check(v: Any, d: Dict[str, Any]) -> None:
    for name, call in CALLS.items():
        try:
            call(v, d)
        except EXPECTED:
            pass
        except Exception as e:  # noqa: BLE001 - the point of the test
            raise AssertionError(f"{name}: {type(e).__name__}: {e}") from e


def main(max_examples: int, seed_value: int) -> None:
    test = seed(seed_value)(settings(
        max_examples=max_examples, deadline=None, database=None,
        suppress_health_check=list(HealthCheck),
    )(given(values, dicts)(check)))
    test()
    print(f"ok: {max_examples} examples, seed {seed_value}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200,
         int(sys.argv[2]) if len(sys.argv) > 2 else 0)
