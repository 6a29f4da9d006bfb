"""Every public function of `disagg`: what it takes, what it returns, and the shapes and values
that can be checked without the command line (the CLI identity tests are in test_cli_identity.py)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

import disagg

# A small, quick scenario (llama3-8b on one device, 60 requests).
SMALL = dict(model="llama3-8b", devices_per_instance=1, requests=60, rate=8.0)


def test_public_names():
    assert sorted(disagg.__all__) == sorted(
        [
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
    )
    for name in disagg.__all__:
        assert hasattr(disagg, name), name
    assert issubclass(disagg.ConfigError, ValueError)
    assert isinstance(disagg.SCHEMA_VERSION, int) and disagg.SCHEMA_VERSION >= 1
    # The package version is the crate's (Cargo.toml of the workspace).
    cargo = (Path(__file__).resolve().parents[3] / "Cargo.toml").read_text()
    assert f'version = "{disagg.__version__}"' in cargo


# ---- run -----------------------------------------------------------------------------------------


def test_run_defaults_are_the_scenario_defaults():
    r = disagg.run(requests=40)
    sc = r.scenario
    defaults = {o["key"]: o["default"] for o in disagg.options()}
    for key, value in sc.items():
        if key in defaults and key != "requests" and defaults[key] is not None:
            assert value == defaults[key], key
    # Unset options are resolved when run: the SLOs echo the defaults help shows.
    shown = {o["key"]: o["shown_default"] for o in disagg.options()}
    assert sc["ttft_slo"] == float(shown["ttft_slo"]) == 1.0
    assert sc["tpot_slo"] == float(shown["tpot_slo"]) == 0.025
    assert sc["requests"] == 40
    assert len(r) == 40
    assert r.summary["requests"]["completed"] == 40


def test_run_preset_by_name_by_keyword_and_in_a_dict():
    a = disagg.run("eth25g-14rps", requests=50)
    b = disagg.run(preset="eth25g-14rps", requests=50)
    c = disagg.run({"preset": "eth25g-14rps", "requests": 50})
    assert a.summary == b.summary == c.summary
    p = {x["name"]: x for x in disagg.presets()}["eth25g-14rps"]
    # The preset's own keys are what the run used.
    # The preset's own keys are what the run used (None: resolved when run, e.g. the SLOs).
    for k, v in p["scenario"].items():
        if k != "requests" and v is not None:
            assert a.scenario[k] == v, k
    assert a.scenario["link"] == "eth-25g" and a.scenario["rate"] == 14.0
    # A keyword preset replaces the dict's preset.
    d = disagg.run({"preset": "no-such-preset"}, preset="eth25g-14rps", requests=50)
    assert d.summary == a.summary


def test_run_options_override_the_dict():
    r = disagg.run({"rate": 2.0, "requests": 30}, rate=3.0)
    assert r.scenario["rate"] == 3.0
    assert r.scenario["requests"] == 30


def test_run_scenario_round_trip():
    a = disagg.run(**SMALL, link="eth-25g", link_channels=2)
    b = disagg.run(a.scenario)
    assert b.scenario == a.scenario
    assert b.summary == a.summary
    assert b.document == a.document


def test_run_differs_when_options_differ():
    a = disagg.run(**SMALL)
    b = disagg.run(**{**SMALL, "rate": 16.0})
    assert a.summary["horizon_s"] != b.summary["horizon_s"]
    assert b.scenario["rate"] == 16.0


def test_run_trace_file(trace):
    r = disagg.run(model="llama3-8b", devices_per_instance=1, trace_file=str(trace))
    r2 = disagg.run(model="llama3-8b", devices_per_instance=1, trace_file=trace)  # a PathLike
    assert r.summary == r2.summary
    stats = disagg.trace_stats(trace)
    # Every row of the trace is a request of the run.
    assert len(r) == stats["rows"] == 6
    req = r.requests
    assert len(req["arrival_s"]) == len(r)
    # Arrivals are replayed from the first one at time 0 and in order.
    assert req["arrival_s"][0] == 0.0
    assert np.all(np.diff(req["arrival_s"]) >= 0)


def test_run_catalogue(catalogue_file):
    r = disagg.run(
        model="tiny", device="gpu-x", link="slow", devices_per_instance=1, requests=20,
        catalogue=str(catalogue_file),
    )
    assert r.scenario["model"] == "tiny"
    assert r.scenario["link"] == "slow"
    assert r.summary["requests"]["completed"] == 20
    with pytest.raises(disagg.ConfigError):
        disagg.run(model="tiny", requests=5)  # not in the built-in catalogue


def test_run_document_shape():
    r = disagg.run(**SMALL)
    doc = r.document
    assert list(doc)[:5] == ["schema_version", "tool", "version", "scenario", "summary"]
    assert doc["schema_version"] == disagg.SCHEMA_VERSION
    assert doc["tool"] == "disagg"
    assert doc["version"] == disagg.__version__
    assert doc["summary"] is r.summary or doc["summary"] == r.summary
    # JSON-able as it is (NaN is None).
    json.dumps(doc, allow_nan=False)


def test_requests_columns():
    r = disagg.run(**SMALL)
    q = r.requests
    base = [
        "rid", "arrival_s", "prompt_len", "output_len", "prefill_start_s", "first_token_s",
        "kv_start_s", "kv_ready_s", "decode_start_s", "finish_s",
    ]
    assert list(q) == base
    n = len(r)
    for k in base:
        assert isinstance(q[k], np.ndarray) and q[k].shape == (n,), k
    assert q["rid"].dtype == np.int64 and q["prompt_len"].dtype == np.int64
    assert q["finish_s"].dtype == np.float64
    assert list(q["rid"]) == list(range(n))
    # Stamps are in causal order for every finished request.
    for a, b in [
        ("arrival_s", "prefill_start_s"), ("prefill_start_s", "first_token_s"),
        ("first_token_s", "kv_start_s"), ("kv_start_s", "kv_ready_s"),
        ("kv_ready_s", "decode_start_s"), ("decode_start_s", "finish_s"),
    ]:
        assert np.all(q[a] <= q[b]), (a, b)
    # The same arrays each time (cached), and the summary's count of completed requests.
    assert r.requests is q
    assert int(np.sum(~np.isnan(q["finish_s"]))) == r.summary["requests"]["completed"]


def test_requests_colocated_has_no_kv_stamps():
    r = disagg.run(**SMALL, mode="colocated")
    q = r.requests
    assert np.all(np.isnan(q["kv_start_s"])) and np.all(np.isnan(q["kv_ready_s"]))
    assert not np.any(np.isnan(q["finish_s"]))


def test_requests_lever_columns():
    r = disagg.run(**SMALL, kv_policy="paged", prefix_caching=True, batch_policy="chunked")
    q = r.requests
    for k in ["sched_delay_s", "preemptions", "prefix_hit_tokens", "n_itl", "itl_max_s", "n_itl_zero"]:
        assert k in q and q[k].shape == (len(r),), k
    assert np.all(q["sched_delay_s"] >= 0)
    # n_itl: one gap per output token after the first.
    assert np.all(q["n_itl"] == q["output_len"] - 1)



def test_requests_handoff_hit_column():
    # --prefix-handoff adds the hand-off hit column, as in `disagg run --requests-out`.
    r = disagg.run(model="llama3-8b", devices_per_instance=1, requests=6, rate=0.5,
                   system_prompts=1, system_len=1024, prefix_share=1.0, decode=1,
                   prefix_caching=True, prefix_handoff=True, decode_router="prefix")
    q = r.requests
    assert q["handoff_hit_tokens"].shape == (len(r),)
    assert q["handoff_hit_tokens"][0] == 0 and q["handoff_hit_tokens"][1] == 1024
    assert "handoff_hit_tokens" not in disagg.run(**SMALL).requests


def test_sweep_none_unsets_an_optional_option():
    # None in the base is "no compression" (not the preset's FP8); None among an axis's values too.
    base = {"preset": "eth25g-14rps-fp8", "requests": 20}
    [row] = disagg.sweep({**base, "kv_compress": None}, vary={"rate": [14.0]})
    assert row["scenario"].get("kv_compress") is None
    assert row["summary"] == disagg.sweep("eth25g-14rps", vary={"requests": [20]})[0]["summary"]
    rows = disagg.sweep(base, vary={"kv_compress": [None, "fp8"]})
    assert [r["axes"]["kv_compress"] for r in rows] == [None, "fp8"]
    assert rows[1]["summary"] == disagg.sweep(base, vary={"rate": [14.0]})[0]["summary"]

def test_to_pandas_and_to_arrow():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    r = disagg.run(**SMALL)
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == len(r)
    q = r.requests
    assert np.array_equal(df["ttft_s"].to_numpy(), q["first_token_s"] - q["arrival_s"])
    assert np.array_equal(df["e2e_s"].to_numpy(), q["finish_s"] - q["arrival_s"])
    out = q["output_len"]
    tpot = (q["finish_s"] - q["first_token_s"]) / (out - 1)
    mask = out >= 2
    assert np.array_equal(df["tpot_s"].to_numpy()[mask], tpot[mask])
    assert df["tpot_s"][~mask].isna().all()
    t = r.to_arrow()
    assert isinstance(t, pa.Table)
    assert t.column_names == list(q)
    assert t.num_rows == len(r)
    assert np.array_equal(t.column("finish_s").to_numpy(), q["finish_s"], equal_nan=True)


def test_series():
    r = disagg.run(**SMALL)
    s = r.series
    for k in ["t_s", "in_system", "link_queue", "link_busy", "link_bytes_in_flight", "decode_mem_wait"]:
        assert k in s, k
    n = len(s["t_s"])
    assert n > 1
    assert all(len(v) == n for v in s.values())
    # Samples every sample_dt seconds.
    assert np.all(np.diff(s["t_s"]) > 0)
    inst = [k[: -len(".queue")] for k in s if k.endswith(".queue")]
    assert len(inst) == 2  # one prefill and one decode instance
    for name in inst:
        used = s[f"{name}.kv_used"]
        frac = s[f"{name}.kv"]
        assert np.all((frac >= 0) & (frac <= 1))
        assert np.all((used == 0) == (frac == 0))
    assert np.max(s["in_system"]) <= len(r)
    assert r.series is s


def test_write_trace(tmp_path):
    r = disagg.run(**SMALL)
    p = tmp_path / "t.json"
    r.write_trace(p)
    doc = json.loads(p.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    assert len(events) > len(r)
    # Written again: the same bytes (the run is repeated deterministically).
    p2 = tmp_path / "t2.json"
    r.write_trace(str(p2))
    assert p.read_bytes() == p2.read_bytes()
    # A directory that does not exist: ConfigError, and nothing left behind.
    with pytest.raises(disagg.ConfigError):
        r.write_trace(tmp_path / "no" / "such" / "dir" / "t.json")
    assert not (tmp_path / "no").exists()


def test_report_len_repr_str():
    r = disagg.run(**SMALL)
    text = r.report()
    assert isinstance(text, str) and text.strip()
    assert str(r) == text
    assert len(r) == 60
    s = r.summary
    expected = (
        f"<disagg.Run {s['requests']['completed']} done, SLO met "
        f"{100 * s['slo_attainment']:.1f}%, ttft p99 {1e3 * s['ttft_s']['p99']:.1f} ms>"
    )
    assert repr(r) == expected
    # 60 requests, some SLO met: e.g. "<disagg.Run 60 done, SLO met 93.3%, ttft p99 123.4 ms>".
    assert repr(r).startswith("<disagg.Run 60 done, SLO met ") and repr(r).endswith(" ms>")


def test_repr_when_nothing_finishes():
    # A 500,000-token prompt does not fit llama3-8b's KV cache on one H100: every request is
    # rejected, so there are no percentiles (None). The repr used to raise TypeError.
    r = disagg.run(model="llama3-8b", devices_per_instance=1, requests=3, prompt=500000.0,
                   prompt_cv=0.0, prompt_max=1000000)
    assert r.summary["requests"] == {"completed": 0, "rejected": 3, "measured": 0}
    assert r.summary["ttft_s"]["p99"] is None
    slo = r.summary["slo_attainment"]
    slo_text = "n/a" if slo is None else f"{100 * slo:.1f}%"
    assert repr(r) == f"<disagg.Run 0 done, SLO met {slo_text}, ttft p99 n/a>"
    assert len(r) == 3
    assert r.report()  # the text report copes too
    q = r.requests
    assert np.all(np.isnan(q["finish_s"]))


# ---- sweep and jsonl -----------------------------------------------------------------------------


def test_sweep_rows_and_order():
    rows = disagg.sweep(SMALL, vary={"rate": [2.0, 4.0], "link": ["ib-ndr", "eth-25g", "eth-100g"]})
    assert len(rows) == 6
    assert [r["run"] for r in rows] == list(range(6))
    assert all(r["runs_total"] == 6 for r in rows)
    assert len({r["spec"] for r in rows}) == 1
    # The last axis varies fastest.
    combos = [(r["scenario"]["rate"], r["scenario"]["link"]) for r in rows]
    assert combos == [(a, b) for a in (2.0, 4.0) for b in ("ib-ndr", "eth-25g", "eth-100g")]
    for r in rows:
        assert list(r)[:6] == ["run", "runs_total", "spec", "axes", "scenario", "summary"]
        assert r["axes"] == {"rate": r["scenario"]["rate"], "link": r["scenario"]["link"]}
        # Each row is the run of its scenario.
        assert r["summary"] == disagg.run(r["scenario"]).summary


def test_sweep_threads_do_not_change_rows():
    vary = {"rate": [2.0, 4.0, 8.0]}
    one = disagg.sweep(SMALL, vary=vary, threads=1)
    two = disagg.sweep(SMALL, vary=vary, threads=2)
    assert disagg.jsonl(one) == disagg.jsonl(two)


def test_sweep_shards_partition_the_runs():
    vary = {"rate": [2.0, 4.0, 8.0], "link_channels": [1, 2]}
    whole = disagg.sweep(SMALL, vary=vary)
    parts = [disagg.sweep(SMALL, vary=vary, shard=(i, 3)) for i in range(3)]
    for i, part in enumerate(parts):
        assert [r["run"] for r in part] == [k for k in range(6) if k % 3 == i]
    merged = sorted((r for p in parts for r in p), key=lambda r: r["run"])
    assert disagg.jsonl(merged) == disagg.jsonl(whole)
    # A list works as a shard too.
    assert disagg.sweep(SMALL, vary=vary, shard=[1, 3]) == parts[1]


def test_sweep_preset_base_and_catalogue(catalogue_file):
    rows = disagg.sweep("eth25g-14rps", vary={"requests": [30]})
    assert rows[0]["summary"] == disagg.run("eth25g-14rps", requests=30).summary
    rows = disagg.sweep(
        {"model": "tiny", "devices_per_instance": 1, "requests": 10},
        vary={"link": ["slow", "ib-ndr"]},
        catalogue=str(catalogue_file),
    )
    assert [r["scenario"]["link"] for r in rows] == ["slow", "ib-ndr"]
    # A PathLike catalogue too (fixed: sweep raised TypeError for a pathlib.Path).
    again = disagg.sweep(
        {"model": "tiny", "devices_per_instance": 1, "requests": 10},
        vary={"link": ["slow", "ib-ndr"]},
        catalogue=catalogue_file,
    )
    assert disagg.jsonl(again) == disagg.jsonl(rows)
    assert disagg.catalogue(catalogue_file) == disagg.catalogue(str(catalogue_file))


def test_sweep_without_axes_is_one_run():
    rows = disagg.sweep(SMALL)
    assert len(rows) == 1 and rows[0]["axes"] == {}
    assert rows[0]["summary"] == disagg.run(SMALL).summary


def test_jsonl():
    rows = disagg.sweep(SMALL, vary={"rate": [2.0, 4.0]})
    text = disagg.jsonl(rows)
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 3
    assert [json.loads(x) for x in lines[:-1]] == rows
    # Compact JSON (no blanks between tokens), keys in the rows' order; any iterable of rows.
    assert lines[0].startswith('{"run":0,"runs_total":2,"spec":')
    assert '", "' not in lines[0] and '": ' not in lines[0]
    assert list(json.loads(lines[1])) == list(rows[1])
    assert disagg.jsonl(iter(rows)) == text
    assert disagg.jsonl([]) == ""


def test_core_time_runs_and_workload_rows():
    from disagg import _core

    t = _core.time_runs(None, 2, {"requests": 20, "model": "llama3-8b", "devices_per_instance": 1})
    assert isinstance(t, float) and t > 0
    rows = _core.poisson_workload(4.0, 5, (100.0, 0.0, 1, 1000), (10.0, 0.0, 1, 100), 1)
    assert len(rows) == 5
    # CV 0: every length is the mean.
    assert [r[1] for r in rows] == [100] * 5 and [r[2] for r in rows] == [10] * 5
    h = _core.simulate_rows(None, rows, {"model": "llama3-8b", "devices_per_instance": 1})
    assert len(h) == 5
    assert list(h.requests()["arrival_s"]) == [r[0] for r in rows]


# ---- the other commands --------------------------------------------------------------------------


def test_handoff():
    h = disagg.handoff(model="llama3-8b", prompt_tokens=2048, link="eth-25g")
    assert isinstance(h, dict)
    # llama3-8b: 32 layers, 8 KV heads of 128, BF16: 2 (K and V) * 32 * 8 * 128 * 2 bytes
    # = 131072 bytes per token; 2048 tokens = 268435456 bytes.
    flat = json.dumps(h)
    assert "268435456" in flat
    h2 = disagg.handoff(model="llama3-8b", prompt_tokens=4096, link="eth-25g")
    assert "536870912" in json.dumps(h2)  # twice the tokens, twice the bytes


def test_handoff_catalogue(catalogue_file):
    h = disagg.handoff(model="tiny", prompt_tokens=100, link="slow", catalogue=str(catalogue_file))
    # tiny: 2 layers, 2 KV heads of 256/4 = 64, BF16: 2 * 2 * 2 * 64 * 2 = 1024 bytes per token;
    # 100 tokens = 102400 bytes.
    assert "102400" in json.dumps(h)


def test_catalogue_and_presets():
    c = disagg.catalogue()
    assert isinstance(c, dict)
    flat = json.dumps(c)
    for name in ["llama3-8b", "llama3-70b", "h100", "ib-ndr", "eth-25g"]:
        assert name in flat
    ps = disagg.presets()
    assert "eth25g-14rps" in [p["name"] for p in ps]
    for p in ps:
        assert set(p) == {"name", "group", "about", "scenario"}
        # Every preset runs (a few requests).
        r = disagg.run(p["name"], requests=3)
        assert len(r) == 3, p["name"]


def test_catalogue_file(catalogue_file):
    c = disagg.catalogue(str(catalogue_file))
    flat = json.dumps(c)
    assert "tiny" in flat and "gpu-x" in flat and "slow" in flat
    assert "tiny" not in json.dumps(disagg.catalogue())


def test_options():
    opts = disagg.options()
    keys = [o["key"] for o in opts]
    assert len(keys) == len(set(keys))
    for k in ["model", "rate", "requests", "link", "mode", "seed", "trace_file"]:
        assert k in keys, k
    for o in opts:
        assert {"key", "flag", "optional", "help", "heading", "shown_default", "default"} <= set(o)
        assert o["flag"].startswith("--")
    flags = [o["flag"] for o in opts]
    assert len(flags) == len(set(flags))
    by = {o["key"]: o for o in opts}
    assert by["rate"]["default"] == 4.0 and by["requests"]["default"] == 800
    assert by["model"]["default"] == "llama3-70b"
    assert by["link_channels"]["flag"] == "--link-channels"
    assert by["trace_start"]["flag"] == "--start"  # the CLI's short name of the window start


def test_trace_stats(trace):
    s = disagg.trace_stats(trace)
    assert isinstance(s, dict)
    # The fixture: a header and 6 rows.
    assert s["rows"] == 6 and s["format"] == "azure"
    # Output tokens 40, 100, 50, 20, 20, 80: mean 310 / 6.
    assert s["output_tokens"]["mean"] == 310 / 6
    assert s["output_tokens"]["min"] == 20 and s["output_tokens"]["max"] == 100
    assert disagg.trace_stats(str(trace)) == s


def test_compare_and_plan():
    c = disagg.compare(**SMALL)
    assert isinstance(c, dict)
    c2 = disagg.compare("eth25g-14rps", requests=40)
    assert isinstance(c2, dict)
    p = disagg.plan(**{**SMALL, "requests": 40}, max_rate=True)
    assert isinstance(p, dict)


def test_cli():
    out = disagg.cli("handoff", "--model", "llama3-8b", "--prompt-tokens", 2048, "--json")
    assert json.loads(out) == disagg.handoff(model="llama3-8b", prompt_tokens=2048)
    # --help and --version are output, not errors (fixed: they raised ConfigError).
    assert disagg.cli("--version") == f"disagg {disagg.__version__}\n"
    assert "Usage: disagg" in disagg.cli("--help")
    assert "--rate" in disagg.cli("run", "--help")
    assert "Usage: disagg run" in disagg.cli("run", "-h")
    with pytest.raises(disagg.ConfigError):
        disagg.cli("run", "--rate", "-1")


def test_help_lists_every_option():
    doc = disagg.run.__doc__ or ""
    for o in disagg.options():
        assert f"  {o['key']}: " in doc, o["key"]
    import io
    import contextlib

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        help(disagg.run)
    text = buf.getvalue()
    for o in disagg.options():
        assert o["key"] in text, o["key"]
    for f in [disagg.compare, disagg.plan, disagg.handoff, disagg.trace_stats]:
        assert "--help" in (f.__doc__ or "")
