"""disagg.reference, the drop-in for the reference package's API, against the reference's own
runs: the four core goldens (crates/disagg-sim/tests/fixtures/golden, copies of the reference's
recorded runs) rebuilt the way a reference script builds them, every workload row, request stamp
and summary number compared exactly (f64 ==, None for null, dict key order too)."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path

import pytest

import disagg
import disagg.reference as ds

GOLDEN = Path(__file__).resolve().parents[2] / "disagg-sim" / "tests" / "fixtures" / "golden"
NAMES = [
    "g2_8b_hetero_h100_prefill_a100_decode.json",
    "g4_8b_eth25g_saturated_14rps.json",
    "g5_8b_eth25g_fp8_transit_14rps.json",
    "g7_70b_colocated_x2.json",
]


def load(name):
    return json.loads((GOLDEN / name).read_text())


def num(v):
    """A fixture number as a float (null / "NaN" NaN, "Infinity" inf)."""
    if v is None or v == "NaN":
        return math.nan
    if v == "Infinity":
        return math.inf
    return float(v)


def same(got, want, path="summary"):
    """Exact JSON equality as the reference's: same keys in the same order, ints equal, floats
    equal as f64 (NaN equal to NaN). Returns the count of numbers compared."""
    if isinstance(want, dict):
        assert isinstance(got, dict), path
        assert list(got) == list(want), f"{path}: keys {list(got)} != {list(want)}"
        return sum(same(got[k], w, f"{path}.{k}") for k, w in want.items())
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        return sum(same(g, w, f"{path}[{i}]") for i, (g, w) in enumerate(zip(got, want)))
    if isinstance(want, bool) or isinstance(want, str) and want not in ("NaN", "Infinity"):
        assert got == want, f"{path}: {got!r} != {want!r}"
        return 0
    if isinstance(want, int):
        assert type(got) is int and got == want, f"{path}: {got!r} != {want!r}"
        return 1
    if want is None and got is None:
        return 0
    g, w = float(got), num(want)
    if math.isnan(w):
        assert math.isnan(g), f"{path}: {g!r}, want NaN"
    else:
        assert g == w, f"{path}: {g!r} != {w!r}"
    return 1


def config_from_flags(flags):
    """What a reference script writes for these `disagg-sim` flags (cli.py's mapping,
    simulator.md §7.1), with the drop-in's names."""
    it = iter(flags)
    kw, rate = {}, 4.0
    model = "llama3-70b"
    for f in it:
        if f == "--model":
            model = next(it)
        elif f == "--devices-per-instance":
            kw["devices_per_instance"] = int(next(it))
        elif f == "--rate":
            rate = float(next(it))
        elif f == "--link":
            kw["link"] = ds.LINKS[next(it)]
        elif f == "--prefill-device":
            kw["prefill_device"] = ds.ACCELERATORS[next(it)]
        elif f == "--decode-device":
            kw["decode_device"] = ds.ACCELERATORS[next(it)]
        elif f == "--kv-compress":
            kw["kv_transit"] = ds.KVTransit(ds.KV_PRESETS[next(it)])
        elif f == "--kv-compress-at":
            kw["kv_transit"] = dataclasses.replace(kw["kv_transit"], where=next(it))
        elif f == "--fast":
            kw["fast_forward"] = True
        elif f == "--mode":
            kw["mode"] = next(it)
        else:
            raise AssertionError(f"flag {f} not handled by this test")
    return ds.SimConfig(model=ds.MODELS[model], **kw), rate


def workload_of(g):
    w = g["workload_gen"]
    return ds.poisson_workload(w["rate"], w["requests"], ds.LengthDist(w["prompt_mean"], w["prompt_cv"]),
                               ds.LengthDist(w["output_mean"], w["output_cv"]), seed=w["seed"])


def device_dict(d):
    return {"name": d.name, "peak_flops": d.peak_flops, "mem_bw": d.mem_bw,
            "mem_capacity": d.mem_capacity, "flops_eff": d.flops_eff, "bw_eff": d.bw_eff,
            "tdp_w": d.tdp_w, "idle_w": d.idle_w, "pj_per_flop": d.pj_per_flop,
            "pj_per_byte": d.pj_per_byte}


@pytest.mark.parametrize("name", NAMES)
def test_config_is_the_references_resolved_one(name):
    g = load(name)
    cfg, rate = config_from_flags(g["cli_flags"])
    r = g["resolved"]
    assert rate == g["workload_gen"]["rate"]
    assert cfg.mode == r["mode"] and cfg.model.name == r["model"]
    assert (cfg.n_prefill, cfg.n_decode, cfg.n_colocated) == (r["n_prefill"], r["n_decode"], r["n_colocated"])
    link = {"name": cfg.link.name, "bandwidth": cfg.link.bandwidth, "latency": cfg.link.latency,
            "channels": cfg.link.channels, "pj_per_bit": cfg.link.pj_per_bit}
    assert link == r["link"]
    for f in ("max_prefill_tokens", "max_decode_batch", "ttft_slo", "tpot_slo", "warmup_frac",
              "fast_forward", "power_cap_w", "prefill_power_cap_w", "decode_power_cap_w", "dvfs"):
        assert getattr(cfg, f) == r[f], f
    assert cfg.step_overhead == r["step_overhead"]
    for role, pool in r["pools"].items():
        dev, n = cfg.pool(role)
        assert device_dict(dev) == pool["device"], role
        assert n == pool["devices_per_instance"], role
    if r["kv_transit"] is None:
        assert cfg.kv_transit is None
    else:
        t, w = cfg.kv_transit, r["kv_transit"]
        assert (t.compression.name, t.compression.ratio, t.compression.ops_per_value, t.compression.fft) == (
            w["preset"], w["ratio"], w["ops_per_value"], w["fft"])
        assert (t.where, t.ops_per_byte, t.pj_per_bit, t.latency) == (
            w["where"], w["ops_per_byte"], w["pj_per_bit"], w["latency"])


@pytest.mark.parametrize("name", NAMES)
def test_golden_run_is_the_reference_bit_for_bit(name):
    g = load(name)
    cfg, _ = config_from_flags(g["cli_flags"])
    wl = workload_of(g)
    # The workload rows.
    assert len(wl) == len(g["workload"])
    for r, (a, p, o) in zip(wl, g["workload"]):
        assert (r.arrival, r.prompt_len, r.output_len) == (a, p, o), r.rid
        assert type(r.prompt_len) is int and type(r.output_len) is int
    res = ds.simulate(cfg, wl)
    assert res.requests is wl   # stamped in place, as the reference does
    # Every stamp (None where the reference's is null).
    cols = g["request_columns"]
    names = {"arrival_s": "arrival", "prefill_start_s": "prefill_start",
             "first_token_s": "first_token", "kv_start_s": "kv_start", "kv_ready_s": "kv_ready",
             "decode_start_s": "decode_start", "finish_s": "finish"}
    stamps = 0
    for row in g["requests"]:
        r = wl[row[0]]
        assert r.rid == row[0]
        for c, v in zip(cols[1:], row[1:]):
            got = getattr(r, names.get(c, c))
            if v is None:
                assert got is None, (r.rid, c)
            else:
                assert got == v and type(got) is type(v), (r.rid, c, got, v)
                stamps += 1
    assert stamps > 6 * 800
    # Every summary number, key order too.
    m = ds.summarise(res)
    n = same(m, g["summary_full"])
    assert n >= 75
    # The derived values agree with the reference's definitions on the stamps.
    r0 = wl[0]
    assert r0.ttft == r0.first_token - r0.arrival
    assert r0.e2e == r0.finish - r0.arrival
    assert sum(r0.stages().values()) == pytest.approx(r0.e2e, rel=1e-12)
    assert res.horizon == g["summary_full"]["sim_time_s"]
    assert res.link.transfers == g["summary_full"]["kv_link"]["transfers"]
    assert res.rejected == []


def test_the_example_script_verbatim():
    import disagg.reference as ds
    cfg = ds.SimConfig(model=ds.MODELS["llama3-8b"], devices_per_instance=1,
                       link=ds.LINKS["eth-25g"], fast_forward=True)
    wl = ds.poisson_workload(14.0, 800, ds.LengthDist(2048, 0.5), ds.LengthDist(256, 0.5), seed=1)
    res = ds.simulate(cfg, wl)
    m = ds.summarise(res)
    # It is golden g4's run (the same flags): its summary, to the last bit.
    same(m, load("g4_8b_eth25g_saturated_14rps.json")["summary_full"])


def test_dump_and_load_round_trip(tmp_path):
    wl = ds.poisson_workload(8.0, 50, ds.LengthDist(2048, 0.5), ds.LengthDist(256, 0.5), seed=3)
    p = tmp_path / "wl.json"
    ds.dump_workload(wl, p)
    rows = json.loads(p.read_text())
    assert rows == [[r.arrival, r.prompt_len, r.output_len] for r in wl]
    back = ds.load_workload(p)
    assert [(r.rid, r.arrival, r.prompt_len, r.output_len) for r in back] == [
        (i, r.arrival, r.prompt_len, r.output_len) for i, r in enumerate(wl)]
    # With a session extra, every row has the fourth element, and it survives the round trip.
    wl[1].after, wl[1].think, wl[1].prefix = 0, 2.5, (("sys0", 512),)
    ds.dump_workload(wl, p)
    rows = json.loads(p.read_text())
    assert all(len(r) == 4 for r in rows)
    assert rows[1][3] == {"chain": [["sys0", 512]], "emit": None, "after": 0, "think": 2.5}
    back = ds.load_workload(p)
    assert (back[1].after, back[1].think, back[1].prefix) == (0, 2.5, (("sys0", 512),))
    # ... which the drop-in cannot run (sessions need the scenario's session workloads).
    with pytest.raises(disagg.ConfigError) as e:
        ds.simulate(ds.SimConfig(model=ds.MODELS["llama3-8b"], devices_per_instance=1), back)
    assert e.value.field == "workload"


def test_poisson_workload_is_pythons_random():
    # simulator.md §4.1 written out with Python's own random.Random: the same rows.
    rng = random.Random(7)
    t, want = 0.0, []
    pd, od = ds.LengthDist(512, 0.8, hi=4096), ds.LengthDist(64, 0.0)
    for i in range(200):
        t += rng.expovariate(3.0)
        want.append((t, pd.sample(rng), od.sample(rng)))
    got = ds.poisson_workload(3.0, 200, pd, od, seed=7)
    assert [(r.arrival, r.prompt_len, r.output_len) for r in got] == want
    assert all(r.output_len == 64 for r in got)   # cv 0: the mean itself


def small_cfg(**kw):
    return ds.SimConfig(model=ds.MODELS["llama3-8b"], devices_per_instance=1, fast_forward=True, **kw)


def small_wl(n=60):
    return ds.poisson_workload(6.0, n, ds.LengthDist(1024, 0.5), ds.LengthDist(64, 0.5), seed=2)


@pytest.mark.parametrize("kw, field", [
    ({"mode": "bogus"}, "mode"),
    ({"devices_per_instance": 0}, "devices_per_instance"),
    ({"step_overhead": 1e-3}, "step_overhead"),
    ({"kv_watermark": 0.02}, "kv_watermark"),
    ({"batch_policy": "fifo"}, "batch_policy"),
    ({"device": dataclasses.replace(ds.ACCELERATORS["h100"], flops_eff=0.5)}, "device.flops_eff"),
    ({"model": dataclasses.replace(ds.MODELS["llama3-8b"], mixer="hyena")}, "model.mixer"),
    ({"host_link": dataclasses.replace(ds.LINKS["pcie5"], bandwidth=1e9)}, "host_link"),
    ({"kv_transit": ds.KVTransit(ds.KV_PRESETS["fp8"], ops_per_byte=3.0)}, "kv_transit.ops_per_byte"),
    ({"prefill_parallel": ds.Parallel(tp=1, ep=2)}, "prefill_parallel.ep"),
])
def test_bad_or_inexpressible_config_raises_config_error(kw, field):
    cfg = ds.SimConfig(model=ds.MODELS["llama3-8b"], devices_per_instance=1)
    cfg = dataclasses.replace(cfg, **kw)
    with pytest.raises(disagg.ConfigError) as e:
        ds.simulate(cfg, small_wl(5))
    assert e.value.field == field
    assert isinstance(e.value, ValueError)


def test_custom_devices_must_agree_across_pools():
    fast = dataclasses.replace(ds.ACCELERATORS["h100"], idle_w=50.0)
    cfg = small_cfg(prefill_device=fast, decode_device=ds.ACCELERATORS["a100"])
    with pytest.raises(disagg.ConfigError) as e:
        ds.simulate(cfg, small_wl(5))
    assert e.value.field == "decode_device"


def test_a_custom_link_with_another_links_numbers_is_that_link():
    # ib-ndr with 25 GbE's bandwidth and latency (both 15 pJ/bit) is 25 GbE: golden g4, exactly.
    g = load("g4_8b_eth25g_saturated_14rps.json")
    link = dataclasses.replace(ds.LINKS["ib-ndr"], name="my link", bandwidth=3.125e9, latency=20e-6)
    cfg = ds.SimConfig(model=ds.MODELS["llama3-8b"], devices_per_instance=1, link=link, fast_forward=True)
    same(ds.summarise(ds.simulate(cfg, workload_of(g))), g["summary_full"])


def test_a_link_value_off_the_engines_unit_grid_raises():
    # A bandwidth for which neither (x / 1e9) * 1e9 nor (x * 1e-9) * 1e9 is x in f64 (found by
    # trying random values; checked here), so the engine's GB/s option cannot carry it exactly.
    x = 8098510160.219619
    assert (x / 1e9) * 1e9 != x and (x * (1 / 1e9)) * 1e9 != x
    cfg = small_cfg(link=dataclasses.replace(ds.LINKS["eth-25g"], bandwidth=x))
    with pytest.raises(disagg.ConfigError) as e:
        ds.simulate(cfg, small_wl(5))
    assert e.value.field == "link.bandwidth"


def test_warmup_frac_zero_measures_every_request():
    wl = small_wl(40)
    m = ds.summarise(ds.simulate(small_cfg(warmup_frac=0.0), wl))
    assert m["requests"]["measured"] == m["requests"]["completed"] == 40
    # The mean TTFT of all 40 requests, statistics.fmean (the reference's mean) of the stamps.
    import statistics
    assert m["latency_s"]["ttft"]["mean"] == statistics.fmean(r.first_token - r.arrival for r in wl)
    assert m["latency_s"]["ttft"]["max"] == max(r.first_token - r.arrival for r in wl)


def test_nothing_measured_gives_the_references_nan_and_inf():
    # One request that can never fit (its KV is larger than the decode instance's memory).
    wl = [ds.Request(0, 0.5, 1 << 31, 4)]
    res = ds.simulate(small_cfg(), wl)
    assert res.rejected == wl and wl[0].finish is None and wl[0].first_token is None
    m = ds.summarise(res)
    assert math.isnan(m["latency_s"]["ttft"]["mean"])
    assert m["energy"]["J_per_slo_met_request"] == math.inf
    assert m["stage_breakdown_s"] == {} and m["stage_share"] == {}


def test_trace_is_the_chrome_trace(tmp_path):
    wl = small_wl(10)
    res = ds.simulate(small_cfg(trace=True), wl)
    tr = res.trace
    assert tr["displayTimeUnit"] == "ms"
    ev = tr["traceEvents"]
    # simulator.md §7.3: one kv slice per transfer, named by rid and MB; a metadata event per track.
    kv = [e for e in ev if e.get("cat") == "kv"]
    assert len(kv) == sum(1 for r in wl if r.kv_start is not None)
    r0 = wl[0]
    first = next(e for e in kv if e["name"].startswith("kv r0 "))
    assert first["ts"] == r0.kv_start * 1e6
    assert [e["args"]["name"] for e in ev if e["ph"] == "M"][0] == "counters"
    p = tmp_path / "t.json"
    ds.write_trace(tr, p)
    assert json.loads(p.read_text()) == tr


def test_cost_model_matches_the_references_formulas():
    # Llama-3-8B on one H100 (hardware.py's roofline, cost-model.md): a decode step of one
    # sequence at context 2047 is memory-bound; its bytes are the streamed weights, one
    # embedding row and 2048 positions of KV.
    m = ds.MODELS["llama3-8b"]
    cm = ds.CostModel(m, ds.ACCELERATORS["h100"], 1)
    d, kv = m.d_model, m.n_kv_heads * m.head_dim
    layer = 2 * d * d + 2 * d * kv + 3 * d * m.d_ff
    matmul = m.n_layers * layer + m.vocab * d
    kv_per_token = 2 * m.n_layers * m.n_kv_heads * m.head_dim * m.kv_bytes
    s = cm.decode([2047])
    assert s.flops == 2 * matmul * 1 + 4 * m.n_layers * d * (2047 + 1)
    assert type(s.flops) is int
    assert s.bytes == matmul * m.weight_bytes + 1 * (d * m.weight_bytes) + 2048 * kv_per_token
    assert s.bound == "memory"
    tm = s.bytes / (3.35e12 * 0.8 * 1)
    assert s.time == tm + 0.5e-3
    assert cm.decode_sum(2047, 1) == s
    # Prefill of one 2048-token prompt: compute-bound.
    p = cm.prefill([2048])
    assert p.flops == 2 * matmul * 2048 + 2 * m.n_layers * d * 2048 * 2049
    assert p.bound == "compute"
    assert p.time == p.flops / (989e12 * 0.55 * 1) + 0.5e-3
    # KV capacity: (80 GB x 0.9 - weights) // bytes per token.
    params = m.n_layers * layer + 2 * m.vocab * d
    assert cm.kv_capacity_tokens == int((80e9 * 1 * 0.9 - params * m.weight_bytes) // kv_per_token)
    assert cm.idle_w == 100.0
    with pytest.raises(disagg.ConfigError):
        ds.CostModel(m, ds.ACCELERATORS["h100"], 1, mem_util=0.8).decode([10])


def test_link_transfer_time():
    lk = ds.LINKS["eth-25g"]
    assert lk.transfer_time(3.125e9) == 20e-6 + 1.0


def test_format_report_g4_layout():
    # The reference's text report of golden g4, each figure rounded by hand from g4's
    # summary_full (the comments give the golden value each comes from).
    m = load("g4_8b_eth25g_saturated_14rps.json")["summary_full"]
    want = "\n".join([
        "── disagg ── 800 done, 0 rejected, sim 73.3s",                 # sim_time_s 73.303...
        "latency (ms)       mean      p50      p90      p99",
        "  ttft          227.5    187.2    467.9    626.6",              # 0.22749, 0.18717, 0.46794, 0.62660 s
        "  tpot           31.9     27.8     53.1     77.2",              # 0.031928, 0.027764, 0.053090, 0.077209
        "  itl            27.6      8.9      9.5      9.9",              # 0.027557, 0.0089330, 0.0094828, 0.0099151
        "  e2e          7298.9   6932.0  10703.7  13572.0",              # 7.29894, 6.93197, 10.70372, 13.57202
        "throughput        2813 tok/s   10.91 req/s   goodput 5.52 req/s   SLO met 41.0%",
        "utilisation  prefill-0 65%  decode-0 100%  kv-link 94%",       # 0.64993, 0.99867, 0.93976
        "efficiency   prefill-0 MFU 36% MBU 3% batch 1.7  decode-0 MFU 5% MBU 75% batch 24.5",
        "where time goes  prefill_queue 1%  prefill 2%  kv_wait 64%  kv_transfer 1%  decode 31%",
        "power        avg 755 W   0.27 J/token   3.73 tok/J   energy: static 26%  compute 53%  memory 21%  link 0%",
        "power-capped prefill-0 0% of busy time",                        # power_bound_frac 0.00031 > 0
        "hot-spot     stage=kv_wait -> kv-link (busy 94%)   busy>90%: decode-0, kv-link",
    ])
    assert ds.format_report(m) == want
    # And from our own run's dict (the same numbers): the same text.
    cfg = ds.SimConfig(model=ds.MODELS["llama3-8b"], devices_per_instance=1, link=ds.LINKS["eth-25g"],
                       fast_forward=True)
    g = load("g4_8b_eth25g_saturated_14rps.json")
    assert ds.format_report(ds.summarise(ds.simulate(cfg, workload_of(g)))) == want


def test_reference_names_are_all_there():
    want = ["ACCELERATORS", "LINKS", "MODELS", "Accelerator", "CostModel", "Link", "ModelSpec",
            "SimConfig", "SimResult", "Simulation", "simulate", "summarise", "format_report",
            "write_trace", "LengthDist", "Request", "poisson_workload", "dump_workload", "load_workload"]
    for n in want:
        assert hasattr(ds, n) and n in ds.__all__, n
    assert set(ds.MODELS) >= {"llama3-8b", "llama3-70b", "llama3-8b-hyena", "llama3-8b-hyena-dist",
                              "llama3-8b-hybrid", "llama3-8b-hyena-circ", "llama3-8b-ced", "llama3-70b-ced",
                              "mistral-7b", "yi-34b", "opt-13b", "mixtral-8x7b", "llama3.2-1b"}
    assert set(ds.ACCELERATORS) == {"h100", "a100", "a100-40g", "optical", "optical-fft",
                                    "optical-fft-small", "h200", "b200"}
    assert set(ds.LINKS) == {"nvlink4", "ib-ndr", "pcie5", "pcie4", "eth-100g", "eth-25g",
                             "cpo-optical", "nvlink3", "nvlink5"}
    # hardware.py's figures (the reference's constructors: 989 * TB, 3.35 * TB, 80 * GB, ...).
    h = ds.ACCELERATORS["h100"]
    assert (h.peak_flops, h.mem_bw, h.mem_capacity) == (989 * 1e12, 3.35 * 1e12, 80 * 1e9)
    assert ds.ACCELERATORS["a100"].mem_bw == 2.039 * 1e12
    assert ds.LINKS["eth-25g"].bandwidth == 3.125 * 1e9 and ds.LINKS["eth-25g"].latency == 20e-6
    assert ds.MODELS["mixtral-8x7b"].n_experts == 8 and ds.MODELS["llama3-70b-ced"].ced_encoder_layers == 40
    assert ds.MODELS["llama3-8b-hyena-circ"].circulant_block == 256
    assert ds.ACCELERATORS["optical-fft"].transform == ds.TransformEngine()


# Which of the reference's modules each name lives in (its own or re-exported there), for the
# names that exist here: `from disagg.reference.<module> import <name>` works as it does with the
# reference package, and each is the very object `disagg.reference.<name>` is.
MODULES = {
    "hardware": ["ACCELERATORS", "Accelerator", "CostModel", "GB", "KVCompression", "KVTransit",
                 "KV_PRESETS", "LINKS", "Link", "MODELS", "ModelSpec", "Parallel", "QUANT_FORMATS",
                 "StepCost", "TB", "TransformEngine"],
    "sim": ["Accelerator", "CostModel", "KVTransit", "LINKS", "Link", "LinkStats", "MODELS",
            "ModelSpec", "Parallel", "QUANT_FORMATS", "Request", "SimConfig", "SimResult",
            "Simulation", "Speculative", "StepCost", "simulate"],
    "metrics": ["SimResult", "format_report", "summarise"],
    "workload": ["LengthDist", "Request", "dump_workload", "load_workload", "poisson_workload",
                 "workload_rows"],
    "cli": ["ACCELERATORS", "KVTransit", "KV_PRESETS", "LINKS", "LengthDist", "MODELS", "Parallel",
            "QUANT_FORMATS", "SimConfig", "Speculative", "format_report", "poisson_workload",
            "simulate", "summarise", "write_trace"],
    "search": ["CostModel", "LengthDist", "SimConfig", "poisson_workload", "simulate", "summarise"],
    "speculative": ["Speculative"],
    "trace": ["write_trace"],
    "ppa": [],
}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_reference_modules_hold_their_names(module):
    import importlib

    mod = importlib.import_module(f"disagg.reference.{module}")
    assert getattr(ds, module) is mod
    for n in MODULES[module]:
        assert getattr(mod, n) is getattr(ds, n), (module, n)


def test_every_public_reference_name_is_in_a_module():
    placed = {n for names in MODULES.values() for n in names}
    assert set(ds.__all__) - placed == set()


def test_from_reference_submodule_import():
    from disagg.reference.hardware import MODELS, CostModel
    from disagg.reference.metrics import summarise
    from disagg.reference.sim import SimConfig, simulate
    from disagg.reference.workload import LengthDist, poisson_workload

    cfg = SimConfig(model=MODELS["llama3-8b"], devices_per_instance=1, fast_forward=True)
    wl = poisson_workload(10.0, 20, LengthDist(512, 0.5), LengthDist(64, 0.5), seed=3)
    m = summarise(simulate(cfg, wl))
    again = ds.summarise(ds.simulate(cfg, ds.poisson_workload(
        10.0, 20, ds.LengthDist(512, 0.5), ds.LengthDist(64, 0.5), seed=3)))
    assert json.dumps(m) == json.dumps(again)
    assert CostModel(MODELS["llama3-8b"], ds.ACCELERATORS["h100"]).kv_capacity_tokens > 0


# ---- the levers, as reference scripts set them ------------------------------------------------

LEVERS = Path(__file__).resolve().parents[2] / "disagg-sim" / "tests" / "fixtures" / "levers"
R = dataclasses.replace


def lever_golden_cases():
    m, a = ds.MODELS, ds.ACCELERATORS
    opt = dict(model=m["opt-13b"], device=a["a100-40g"], devices_per_instance=1)
    return {
        # --mode colocated --model llama3-8b --devices-per-instance 1 --batch-policy chunked
        # --max-num-batched-tokens 256 --prefill-lm-head last
        "lv1_coloc_chunked256_lmlast_8b.json": ds.SimConfig(
            mode="colocated", model=R(m["llama3-8b"], prefill_lm_head="last"), devices_per_instance=1,
            batch_policy="chunked", max_num_batched_tokens=256),
        # --mode colocated ... --prefill 1 --decode 0 --kv-policy paged (one colocated instance)
        "lv2_coloc_paged_recompute_opt13b.json": ds.SimConfig(
            mode="colocated", n_colocated=1, kv_policy="paged", **opt),
        "lv3_disagg_paged_swap_opt13b.json": ds.SimConfig(
            kv_policy="paged", kv_block_size=32, preemption="swap", host_link=ds.LINKS["pcie4"], **opt),
        "lv5_coloc_decode_priority_max_opt13b.json": ds.SimConfig(
            mode="colocated", batch_policy="decode-priority", kv_policy="max", max_seq_len=1024, **opt),
    }


@pytest.mark.parametrize("name", sorted(lever_golden_cases()))
def test_scheduling_lever_goldens_bit_for_bit(name):
    g = json.loads((LEVERS / name).read_text())
    cfg = lever_golden_cases()[name]
    w = g["workload_gen"]
    wl = ds.poisson_workload(w["rate"], w["requests"],
                             ds.LengthDist(w["prompt_mean"], w["prompt_cv"], w["prompt_lo"], w["prompt_hi"]),
                             ds.LengthDist(w["output_mean"], w["output_cv"], w["output_lo"], w["output_hi"]),
                             seed=w["seed"])
    assert [[r.arrival, r.prompt_len, r.output_len] for r in wl] == g["workload"]
    res = ds.simulate(cfg, wl)
    cols = g["request_columns"]
    assert cols[1:8] == ["arrival_s", "prefill_start_s", "first_token_s", "kv_start_s", "kv_ready_s",
                         "decode_start_s", "finish_s"]
    for row in g["requests"]:
        r = wl[row[0]]
        for c, v in zip(cols[1:8], row[1:8]):
            got = getattr(r, c[:-2])   # arrival_s -> arrival, ...
            assert got == v, (r.rid, c, got, v)
        # The reference's per-request ITL columns: rejected, count, first, largest, zeros.
        assert cols[10:] == ["rejected", "n_itl", "itl_first_s", "itl_max_s", "n_itl_zero"]
        rejected, n, first, largest, zeros = row[10:]
        assert (r in res.rejected) == rejected
        assert len(r.itls) == n, r.rid
        assert (r.itls[0] if r.itls else None) == first
        assert (max(r.itls) if r.itls else None) == largest
        assert sum(1 for x in r.itls if x == 0.0) == zeros
    m = ds.summarise(res)
    assert same(m, g["summary_full"]) > 70
    assert "scheduler" in m


def cost_run_cases():
    m, a, P = ds.MODELS, ds.ACCELERATORS, ds.Parallel
    eng = R(ds.TransformEngine(), enob=11, mask_rate_hz=20000.0, overlap=True)
    return {
        0: ds.SimConfig(mode="colocated", parallel=P(tp=4)),
        1: ds.SimConfig(parallel=P(tp=2, pp=2, microbatches=3)),
        2: (ds.SimConfig(model=m["mixtral-8x7b"], devices_per_instance=2, mode="colocated",
                         parallel=P(tp=2, ep=2, expert_imbalance=1.3)), 8.0),
        3: ds.SimConfig(mode="colocated", weight_format="fp8", compute_format="fp8", kv_format="fp8"),
        4: (ds.SimConfig(model=m["llama3-8b"], device=a["a100"], devices_per_instance=1,
                         weight_format="int8", compute_format="int8", kv_format="int8",
                         link=ds.LINKS["eth-25g"]), 8.0),
        5: ds.SimConfig(mode="colocated", model=m["llama3-8b"], devices_per_instance=1,
                        speculative=ds.Speculative("mtp", 3, 0.7)),
        6: ds.SimConfig(model=R(m["llama3-70b-ced"], ced_replay_on="decode")),
        # --ft-enob 11 --ft-mask-rate 20000 --ft-overlap on the optical prefill device; --ppa is
        # the reference CLI's addition after summarise, left out of the comparison.
        7: (ds.SimConfig(model=R(m["llama3-8b-hyena-circ"], prefill_lm_head="last"), devices_per_instance=1,
                         fast_forward=True, prefill_device=R(a["optical-fft"], transform=eng)), 8.0),
    }


@pytest.mark.parametrize("k", range(8))
def test_cost_lever_runs_bit_for_bit(k):
    run = json.loads((LEVERS / "cost-runs.json").read_text())["runs"][k]
    case = cost_run_cases()[k]
    cfg, rate = case if isinstance(case, tuple) else (case, 4.0)
    wl = ds.poisson_workload(rate, 800, ds.LengthDist(2048, 0.5), ds.LengthDist(256, 0.5), seed=1)
    m = ds.summarise(ds.simulate(cfg, wl))
    want = {k2: v for k2, v in run["summary"].items() if k2 != "ppa"}
    assert same(m, want) > 70


def test_cost_model_prefill_only_ced_capacity():
    # levers-cost.md §8.2: with the replay on decode, an encoder-only prefill instance of
    # Llama-3-70B CED on 4xH100 holds 659,501 tokens of KV; a whole-model instance 448,288.
    ced = dataclasses.replace(ds.MODELS["llama3-70b-ced"], ced_replay_on="decode")
    h100 = ds.ACCELERATORS["h100"]
    assert ds.CostModel(ced, h100, 4, prefill_only=True).kv_capacity_tokens == 659_501
    assert ds.CostModel(ced, h100, 4).kv_capacity_tokens == 448_288
    assert ds.CostModel(ds.MODELS["llama3-70b"], h100, 4).kv_capacity_tokens == 448_288
