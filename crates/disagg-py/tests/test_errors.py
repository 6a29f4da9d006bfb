"""Bad input: ConfigError (a ValueError) with a one-line message and the option at fault in
`.field`, or TypeError for a value of a type no option takes; never a panic, never anything else."""

from __future__ import annotations

import math
import random

import pytest

import disagg

SMALL = dict(model="llama3-8b", devices_per_instance=1, requests=10)


def check(exc: BaseException, field, *words):
    assert isinstance(exc, disagg.ConfigError) and isinstance(exc, ValueError)
    msg = str(exc)
    assert msg and "\n" not in msg, repr(msg)
    assert getattr(exc, "field") == field, (exc.field, msg)
    # The message names the option: its key, or the command line's flag spelling of it.
    if field is not None:
        key = field.split(".")[-1]
        assert key in msg or "--" + key.replace("_", "-") in msg, (key, msg)
    for w in words:
        assert w in msg or "--" + w.replace("_", "-") in msg, (w, msg)


def raises(f, *args, **kw) -> disagg.ConfigError:
    with pytest.raises(disagg.ConfigError) as e:
        f(*args, **kw)
    return e.value


def test_config_error_is_a_value_error():
    assert issubclass(disagg.ConfigError, ValueError)
    e = raises(disagg.run, rate=-1.0)
    assert isinstance(e, ValueError)


def test_unknown_key():
    e = raises(disagg.run, warp_factor=9)
    check(e, "warp_factor", "warp_factor")
    assert isinstance(e, TypeError) and isinstance(e, disagg.UnknownOptionError)
    assert e.matches == []
    e = raises(disagg.run, {"rat": 4.0})
    check(e, "rat", "rat", "did you mean 'rate'")
    assert isinstance(e, TypeError) and e.matches[0] == "rate"
    assert "link_channels" in e.valid and "preset" in e.valid


def test_unknown_key_everywhere():
    """Every function that takes options names an unknown one as a TypeError with matches."""
    cases = [
        (lambda: disagg.run(link_chanels=2), "link_chanels", "link_channels"),
        (lambda: disagg.handoff(promt_tokens=100), "promt_tokens", "prompt_tokens"),
        (lambda: disagg.sweep({"rat": 4.0}, {"rate": [4.0]}), "rat", "rate"),
        (lambda: disagg.sweep(SMALL, {"link_chanels": [1, 2]}), "link_chanels", "link_channels"),
        (lambda: disagg.compare("eth25g-14rps", requestz=50), "requestz", "requests"),
        (lambda: disagg.plan("eth25g-14rps", max_rat=True), "max_rat", "max_rate"),
    ]
    for f, name, match in cases:
        with pytest.raises(TypeError) as info:
            f()
        e = info.value
        assert isinstance(e, disagg.ConfigError), e
        assert name in str(e) and "\n" not in str(e)
        if match is not None:
            assert match in e.matches, (name, e.matches)


def test_wrong_type():
    check(raises(disagg.run, rate="fast"), "rate", "rate")
    check(raises(disagg.run, requests=2.5), "requests", "requests")
    check(raises(disagg.run, model=3), "model", "model")
    check(raises(disagg.run, prefix_caching="yes"), "prefix_caching", "prefix_caching")


def test_out_of_range():
    check(raises(disagg.run, rate=-1.0), "rate", "rate")
    check(raises(disagg.run, rate=0.0), "rate", "rate")
    check(raises(disagg.run, requests=-3), "requests", "requests")
    check(raises(disagg.run, link_channels=0), "link_channels", "link_channels")
    check(raises(disagg.run, prompt_cv=-0.5), "prompt_cv", "prompt_cv")


def test_non_finite_floats():
    for x in (math.nan, math.inf, -math.inf):
        check(raises(disagg.run, rate=x), "rate", "rate", "finite")
        check(raises(disagg.run, {"ttft_slo": x}), "scenario.ttft_slo", "finite")


def test_unknown_names_list_the_choices():
    e = raises(disagg.run, model="llama9-1t")
    check(e, "model", "llama9-1t", "llama3-8b", "llama3-70b")
    e = raises(disagg.run, link="carrier-pigeon")
    check(e, "link", "carrier-pigeon", "ib-ndr", "eth-25g")
    e = raises(disagg.run, device="abacus")
    check(e, "device", "abacus", "h100")
    e = raises(disagg.run, "no-such-preset")
    check(e, "preset", "no-such-preset", "eth25g-14rps")
    e = raises(disagg.run, preset="no-such-preset")
    check(e, "preset", "eth25g-14rps")
    e = raises(disagg.run, mode="both")
    check(e, "mode", "both", "colocated")


def test_missing_trace_file(tmp_path):
    missing = tmp_path / "nope.csv"
    e = raises(disagg.run, trace_file=str(missing))
    check(e, "trace_file", "nope.csv")
    assert isinstance(e, FileNotFoundError) and e.filename == str(missing)
    e = raises(disagg.trace_stats, missing)
    assert "nope.csv" in str(e) and "\n" not in str(e)
    assert isinstance(e, FileNotFoundError)
    for f in (lambda: disagg.sweep({"trace_file": str(missing)}, {}),
              lambda: disagg.compare(trace_file=str(missing)),
              lambda: disagg.plan(max_rate=True, trace_file=str(missing))):
        with pytest.raises(FileNotFoundError) as info:
            f()
        assert info.value.field == "trace_file" and info.value.filename == str(missing)


def test_bad_catalogue(tmp_path):
    e = raises(disagg.run, catalogue=str(tmp_path / "none.toml"))
    check(e, "catalogue", "none.toml")
    assert isinstance(e, FileNotFoundError)
    bad = tmp_path / "bad.toml"
    bad.write_text("[models.x]\nlayers = 'many'\n")
    e = raises(disagg.run, catalogue=str(bad))
    check(e, "catalogue")
    check(raises(disagg.run, catalogue=3), "catalogue", "catalogue")
    for f in (lambda: disagg.catalogue(str(tmp_path / "none.toml")),
              lambda: disagg.sweep(SMALL, catalogue=str(tmp_path / "none.toml")),
              lambda: disagg.handoff(catalogue=str(tmp_path / "none.toml"))):
        e = raises(f)
        assert "none.toml" in str(e) and "\n" not in str(e)


def test_scenario_of_the_wrong_kind():
    check(raises(disagg.run, 42), "scenario", "scenario")
    check(raises(disagg.run, [1, 2]), "scenario", "scenario")
    check(raises(disagg.sweep, 42), "base", "base")


def test_sweep_errors():
    check(raises(disagg.sweep, SMALL, vary={"rate": [1.0]}, threads=0), "threads", "threads")
    e = raises(disagg.sweep, SMALL, vary={"rate": [1.0, 2.0]}, shard=(3, 3))
    assert "shard" in str(e) and "\n" not in str(e)
    e = raises(disagg.sweep, SMALL, vary={"rate": [1.0, 2.0]}, shard=(0, 0))
    assert "shard" in str(e)
    e = raises(disagg.sweep, SMALL, vary={"rate": []})
    assert "rate" in str(e)
    e = raises(disagg.sweep, SMALL, vary={"warp": [1]})
    assert "warp" in str(e)
    e = raises(disagg.sweep, SMALL, vary={"rate": [None]})
    check(e, "rate", "None")  # fixed: was TOML's "unsupported unit type", no field
    e = raises(disagg.sweep, SMALL, vary={"rate": 4.0})
    check(e, "rate", "array")  # fixed: field was None
    # A value of the wrong type for its key: the run's message names the axis values and the
    # field is the key (fixed: "run 0: invalid type: ..." with no field).
    e = raises(disagg.sweep, SMALL, vary={"rate": ["x", "y"]})
    check(e, "rate", 'run 0 (rate="x"): invalid type: string "x", expected f64')
    e = raises(disagg.sweep, SMALL, vary={"link": ["eth-25g"], "requests": [10, [1]]})
    check(e, "requests", 'run 1 (link="eth-25g" requests=[1]): invalid type: sequence')
    e = raises(disagg.sweep, SMALL, vary={"rate": [-1.0]})
    assert "rate" in str(e)
    with pytest.raises((TypeError, OverflowError, disagg.ConfigError)):
        disagg.sweep(SMALL, vary={"rate": [1.0]}, threads=-1)
    with pytest.raises((TypeError, OverflowError, disagg.ConfigError)):
        disagg.sweep(SMALL, vary={"rate": [1.0]}, shard=(-1, 2))


def test_handoff_errors():
    check(raises(disagg.handoff, model="nope"), "model", "nope", "llama3-8b")
    check(raises(disagg.handoff, prompt_tokens=-5), "prompt_tokens", "prompt_tokens")
    check(raises(disagg.handoff, frobnicate=1), "frobnicate", "frobnicate")


def test_commands_errors(trace):
    e = raises(disagg.compare, rate=-1.0)
    assert "rate" in str(e) and "\n" not in str(e)
    e = raises(disagg.plan, model="nope", max_rate=True)
    assert "nope" in str(e)
    e = raises(disagg.cli, "frobnicate")
    assert "frobnicate" in str(e)


def test_type_errors():
    with pytest.raises(TypeError):
        disagg.run(rate=object())
    with pytest.raises(TypeError):
        disagg.run({1: 2})
    with pytest.raises(TypeError):
        disagg.run(rate={1j})
    with pytest.raises(TypeError):
        disagg.jsonl([{"a": object()}])
    with pytest.raises(TypeError):
        disagg.run(**SMALL).write_trace(5)


def test_huge_integer():
    check(raises(disagg.run, requests=2**80), "requests", "too large")


def test_numpy_scalars_are_values():
    np = pytest.importorskip("numpy")
    a = disagg.run(rate=np.float64(8.0), requests=np.int64(10), model="llama3-8b",
                   devices_per_instance=np.int32(1))
    b = disagg.run(rate=8.0, requests=10, model="llama3-8b", devices_per_instance=1)
    assert a.summary == b.summary


# ---- a small fuzz loop: random option dicts never raise anything but ConfigError/TypeError ----

_KEYS = None


def _keys():
    global _KEYS
    if _KEYS is None:
        _KEYS = [o["key"] for o in disagg.options()]
    return _KEYS


def _value(rng: random.Random):
    return rng.choice(
        [
            rng.randint(-3, 5),
            rng.choice([0, 1, 2, 64, 2**31, 2**63 - 1, -(2**63)]),
            rng.uniform(-2.0, 20.0),
            rng.choice([0.0, -0.0, 1e-300, 1e300, math.nan, math.inf, -math.inf]),
            rng.choice(["", "x", "llama3-8b", "h100", "eth-25g", "disagg", "colocated", "fp8",
                        "paged", "chunked", "all", "last", "layerwise", "fair", "\u00e9\u0000"]),
            rng.choice([True, False, None]),
            [1, 2],
            {"a": 1},
        ]
    )


def test_fuzz_run_options():
    rng = random.Random(14)
    keys = _keys()
    outcomes = {"ok": 0, "config": 0, "type": 0}
    for _ in range(150):
        opts = {rng.choice(keys): _value(rng) for _ in range(rng.randint(1, 3))}
        # Keep successful runs quick: a small model and few requests unless fuzzed.
        opts = {"requests": 5, "model": "llama3-8b", "devices_per_instance": 1, "fast": True, **opts}
        if isinstance(opts.get("requests"), int) and opts["requests"] > 50:
            opts["requests"] = 50
        for k in ("trace_file", "workload_file", "catalogue", "config"):
            opts.pop(k, None)
        try:
            disagg.run(**opts)
            outcomes["ok"] += 1
        except disagg.ConfigError as e:
            msg = str(e)
            assert msg and "\n" not in msg, (opts, msg)
            assert e.field is None or isinstance(e.field, str)
            outcomes["config"] += 1
        except TypeError:
            outcomes["type"] += 1
        # Anything else (RuntimeError from a caught panic, or a crash) fails the test.
    assert outcomes["config"] > 0 and outcomes["ok"] > 0, outcomes


def test_fuzz_handoff_and_sweep():
    rng = random.Random(7)
    hkeys = ["model", "prompt_tokens", "link", "link_channels", "compression", "compress_at",
             "send", "prefill_device", "devices_per_instance", "kv_keep", "concurrent"]
    for _ in range(150):
        opts = {rng.choice(hkeys): _value(rng) for _ in range(rng.randint(1, 3))}
        try:
            disagg.handoff(**opts)
        except disagg.ConfigError as e:
            assert "\n" not in str(e), (opts, str(e))
        except TypeError:
            pass
    keys = _keys()
    for _ in range(30):
        k = rng.choice(keys)
        if k in ("trace_file", "workload_file", "catalogue", "config"):
            continue
        try:
            disagg.sweep({"requests": 3, "model": "llama3-8b", "devices_per_instance": 1},
                         vary={k: [_value(rng), _value(rng)]}, threads=1)
        except disagg.ConfigError as e:
            assert "\n" not in str(e), (k, str(e))
        except TypeError:
            pass
