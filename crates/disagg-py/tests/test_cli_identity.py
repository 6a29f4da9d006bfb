"""Numerical identity with the command line: every number `disagg` returns is the one
`disagg ... --json` prints (f64 `==`, NaN/None), and the files it writes are the CLI's bytes."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

import disagg

from conftest import flags, same

# (name, preset or None, scenario keys): the default, a preset, a colocated run, the scheduling
# levers, the cost levers; the trace replay is its own test (it needs the fixture's path).
SCENARIOS = [
    ("default", None, {}),
    ("preset", "eth25g-14rps", {}),
    ("colocated", None, {"mode": "colocated", "model": "llama3-8b", "devices_per_instance": 1,
                         "rate": 10.0, "requests": 200}),
    ("sched-levers", None, {"model": "llama3-8b", "devices_per_instance": 1, "requests": 200,
                            "rate": 12.0, "kv_policy": "paged", "batch_policy": "chunked",
                            "prefix_caching": True, "workload": "chat"}),
    ("cost-levers", None, {"weight_format": "fp8", "kv_format": "fp8", "tp": 4,
                           "power_cap": 500.0, "requests": 200, "link": "eth-100g",
                           "link_channels": 2}),
    ("layerwise-fair", None, {"send": "layerwise", "link_sharing": "fair", "link": "eth-25g",
                              "requests": 200, "fast": True}),
]


def _args(preset, keys):
    return (["--preset", preset] if preset else []) + flags(keys)


@pytest.mark.parametrize("name,preset,keys", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_run_equals_cli_json(cli, name, preset, keys):
    doc = cli.json("run", "--json", "--quiet", *_args(preset, keys))
    r = disagg.run(preset, **keys)
    same(r.summary, doc["summary"], "summary")
    same(r.document, doc, "document")
    # Key for key, in the CLI's order.
    assert list(r.summary) == list(doc["summary"])


def test_run_trace_replay_equals_cli(cli, trace):
    keys = {"model": "llama3-8b", "devices_per_instance": 1, "time_scale": 0.5}
    doc = cli.json("run", "--json", "--quiet", "--trace-file", trace, *flags(keys))
    r = disagg.run(trace_file=str(trace), **keys)
    same(r.document, doc, "document")


def test_run_catalogue_equals_cli(cli, catalogue_file):
    keys = {"model": "tiny", "device": "gpu-x", "link": "slow", "devices_per_instance": 1,
            "requests": 50}
    doc = cli.json("--catalogue", catalogue_file, "run", "--json", "--quiet", *flags(keys))
    r = disagg.run(catalogue=str(catalogue_file), **keys)
    same(r.document, doc, "document")


def _cell(x: str) -> float:
    return float("nan") if x == "" else float(x)


@pytest.mark.parametrize(
    "keys",
    [
        {"model": "llama3-8b", "devices_per_instance": 1, "requests": 150, "rate": 9.0},
        {"mode": "colocated", "model": "llama3-8b", "devices_per_instance": 1, "requests": 100},
        {"model": "llama3-8b", "devices_per_instance": 1, "requests": 150, "kv_policy": "paged",
         "prefix_caching": True, "workload": "chat"},
    ],
    ids=["disagg", "colocated", "levers"],
)
def test_requests_equal_requests_out_csv(cli, tmp_path, keys):
    path = tmp_path / "req.csv"
    cli.out("run", "--quiet", "--requests-out", path, *flags(keys))
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    q = disagg.run(**keys).requests
    assert len(rows) == len(q["rid"])
    columns = list(rows[0])
    # Every column of the CSV is an array, cell for cell (the CSV's shortest round-trip decimals
    # parse back to the same f64).
    for col in columns:
        assert col in q, f"{col} is in --requests-out but not in Run.requests"
        got = q[col]
        want = np.array([_cell(r[col]) for r in rows])
        assert np.array_equal(got.astype(np.float64), want, equal_nan=True), col
    # ... and every array is a column of the CSV.
    assert set(q) == set(columns)


def test_write_trace_equals_cli_trace(cli, tmp_path):
    keys = {"model": "llama3-8b", "devices_per_instance": 1, "requests": 80, "rate": 8.0}
    a, b = tmp_path / "cli.json", tmp_path / "py.json"
    cli.out("run", "--quiet", "--trace", a, *flags(keys))
    disagg.run(**keys).write_trace(b)
    assert a.read_bytes() == b.read_bytes()


BASE = {"model": "llama3-8b", "devices_per_instance": 1, "requests": 60}
VARY = {"rate": [2.0, 8.0], "link": ["eth-25g", "ib-ndr"], "mode": ["disagg", "colocated"]}


def _vary_flags(vary):
    out = []
    for k, vs in vary.items():
        out += ["--vary", k + "=" + ",".join(repr(v) if isinstance(v, float) else str(v) for v in vs)]
    return out


def test_sweep_jsonl_equals_cli_bytes(cli, tmp_path):
    path = tmp_path / "s.jsonl"
    cli.out("sweep", "--quiet", *flags(BASE), *_vary_flags(VARY), "--jsonl", path)
    rows = disagg.sweep(BASE, vary=VARY)
    assert disagg.jsonl(rows).encode() == path.read_bytes()


def test_sweep_preset_jsonl_equals_cli_bytes(cli, tmp_path):
    path = tmp_path / "s.jsonl"
    vary = {"link_channels": [1, 2]}
    cli.out("sweep", "--quiet", "--preset", "eth25g-14rps", "--requests", 100, *_vary_flags(vary),
            "--jsonl", path)
    rows = disagg.sweep({"preset": "eth25g-14rps", "requests": 100}, vary=vary)
    assert disagg.jsonl(rows).encode() == path.read_bytes()


def test_sweep_shards_equal_cli_shards_and_merge(cli, tmp_path):
    whole = tmp_path / "whole.jsonl"
    cli.out("sweep", "--quiet", *flags(BASE), *_vary_flags(VARY), "--jsonl", whole)
    merged = []
    for i in range(3):
        p = tmp_path / f"shard{i}.jsonl"
        cli.out("sweep", "--quiet", *flags(BASE), *_vary_flags(VARY), "--shard", f"{i}/3",
                "--jsonl", p)
        part = disagg.sweep(BASE, vary=VARY, shard=(i, 3), threads=1)
        assert disagg.jsonl(part).encode() == p.read_bytes(), i
        merged += part
    merged.sort(key=lambda r: r["run"])
    assert disagg.jsonl(merged).encode() == whole.read_bytes()


def test_compare_equals_cli(cli):
    keys = {"model": "llama3-8b", "devices_per_instance": 1, "requests": 80}
    same(disagg.compare(**keys), cli.json("compare", "--json", "--quiet", *flags(keys)))
    same(
        disagg.compare("eth25g-14rps", requests=80, sweep_rate=[4.0, 8.0]),
        cli.json("compare", "--json", "--quiet", "--preset", "eth25g-14rps", "--requests", 80,
                 "--sweep-rate", "4.0", "--sweep-rate", "8.0"),
    )


def test_compare_variants_equal_cli(cli):
    keys = {"model": "llama3-8b", "devices_per_instance": 1, "requests": 60}
    same(
        disagg.compare(**keys, variant=["link=eth-25g", "link_channels=2"]),
        cli.json("compare", "--json", "--quiet", *flags(keys), "--variant", "link=eth-25g",
                 "--variant", "link_channels=2"),
    )


def test_plan_equals_cli(cli):
    keys = {"model": "llama3-8b", "devices_per_instance": 1, "requests": 60}
    same(disagg.plan(**keys, max_rate=True), cli.json("plan", "--json", "--max-rate", *flags(keys)))
    same(disagg.plan(**keys, target_rate=6.0),
         cli.json("plan", "--json", "--target-rate", "6.0", *flags(keys)))
    same(disagg.plan("eth25g-14rps", requests=60, max_rate=True),
         cli.json("plan", "--json", "--max-rate", "--preset", "eth25g-14rps", "--requests", 60))


@pytest.mark.parametrize(
    "keys",
    [
        {"model": "llama3-8b", "prompt_tokens": 2048},
        {"model": "llama3-70b", "prompt_tokens": 8192, "link": "eth-25g", "link_channels": 2,
         "compression": "fp8", "send": "layerwise"},
    ],
)
def test_handoff_equals_cli(cli, keys):
    same(disagg.handoff(**keys), cli.json("handoff", "--json", *flags(keys)))


def test_trace_stats_equals_cli(cli, trace):
    same(disagg.trace_stats(trace), cli.json("trace-stats", trace, "--json"))
    same(disagg.trace_stats(trace, time_scale=2.0),
         cli.json("trace-stats", trace, "--json", "--time-scale", "2.0"))
    # The scenario keys whose flags are not the key's spelling: trace_start is --start,
    # trace_duration --duration, sort_trace --sort (fixed: they were passed as --trace-start, ...).
    window = cli.json("trace-stats", trace, "--json", "--start", "1.0", "--duration", "4.0", "--sort")
    same(disagg.trace_stats(trace, trace_start=1.0, trace_duration=4.0, sort_trace=True), window)
    same(disagg.trace_stats(trace, start=1.0, duration=4.0, sort=True), window)
    assert window["rows"] < 6  # the window does cut the trace


def test_catalogue_and_presets_equal_cli(cli, catalogue_file):
    same(disagg.catalogue(), cli.json("list", "--json"))
    same(disagg.catalogue(str(catalogue_file)),
         cli.json("--catalogue", catalogue_file, "list", "--json"))
    same(disagg.presets(), cli.json("presets", "--json"))


def test_the_comparison_is_not_vacuous():
    """`same` (conftest.py) fails on any difference: a float one ulp off, a missing key, a key
    out of order, an int for a float; and takes NaN for None (JSON has no NaN)."""
    same({"a": 0.1, "b": None}, {"a": 0.1, "b": float("nan")})
    for a, b in [
        ({"a": 0.1}, {"a": math.nextafter(0.1, 1.0)}),
        ({"a": 1, "b": 2}, {"a": 1}),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
        ({"a": 1.0}, {"a": 1}),
        ([1.0, 2.0], [1.0, 2.0, 3.0]),
        ({"a": float("nan")}, {"a": 0.0}),
    ]:
        with pytest.raises(AssertionError):
            same(a, b)
    a = disagg.run(model="llama3-8b", devices_per_instance=1, requests=30).summary
    b = disagg.run(model="llama3-8b", devices_per_instance=1, requests=30, seed=2).summary
    with pytest.raises(AssertionError):
        same(a, b)
