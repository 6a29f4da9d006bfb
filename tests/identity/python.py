"""The Python package's part of the byte-identity check (scripts/identity.sh runs it in a fresh
directory holding fixtures/ and records what it prints and writes).

Every result is printed as JSON with sorted keys off (dicts keep their order: it is part of the
output) and floats in repr, so any change of a value, a key or its order shows.
"""

import json
import math

import disagg
import disagg.reference as ds


def show(title, value):
    print(f"== {title}")
    print(json.dumps(value, indent=1, allow_nan=True, default=repr))


def columns(cols):
    """NumPy columns as lists (NaN kept as the string 'nan' so the text is stable)."""
    out = {}
    for k, v in cols.items():
        xs = v.tolist() if hasattr(v, "tolist") else list(v)
        out[k] = [("nan" if isinstance(x, float) and math.isnan(x) else x) for x in xs]
    return out


r = disagg.run("eth25g-14rps")
show("run eth25g-14rps document", r.document)
print("== run eth25g-14rps report")
print(r.report())

r = disagg.run(model="llama3-8b", devices_per_instance=1, rate=8.0, link="eth-100g", requests=40)
show("run llama3-8b summary", r.summary)
show("run llama3-8b scenario", r.scenario)
show("run llama3-8b requests", columns(r.requests))

r = disagg.run("kv-paged-swap", requests=60)
show("run kv-paged-swap summary", r.summary)
show("run kv-paged-swap requests", columns(r.requests))

r = disagg.run("prefix-multiturn-short-on", requests=60)
show("run prefix summary", r.summary)

r = disagg.run("link-eth-25g", requests=50)
series = columns(r.series)
show("run series (every 10th sample)", {k: v[::10] for k, v in series.items()})
r.write_trace("trace.json")

show("compare", disagg.compare("link-eth-25g", requests=150))
rows = disagg.sweep({"preset": "link-eth-25g", "requests": 100}, vary={"rate": [6, 12], "kv_compress": ["none", "fp8"]}, threads=2)
show("sweep rows", rows)
print("== sweep jsonl")
print(disagg.jsonl(rows), end="")
show("plan", disagg.plan(model="llama3-8b", devices_per_instance=1, link="eth-100g", requests=100, max_rate=True))
show("handoff", disagg.handoff(model="llama3-8b", prompt_tokens=2048, link="eth-25g", send="layerwise"))
show("handoff deepseek-v3", disagg.handoff(model="deepseek-v3", prompt_tokens=16384))
show("catalogue", disagg.catalogue())
show("presets", disagg.presets())
show("options", disagg.options())
show("trace_stats", disagg.trace_stats("fixtures/azure_sample.csv"))
print("== cli list links")
print(disagg.cli("list", "links"), end="")

for bad in ({"rate": -1}, {"model": "llama9"}, {"link_chanels": 2}):
    try:
        disagg.run(**bad)
        print("== error", bad, "none")
    except Exception as e:  # noqa: BLE001 - the class and the message are the output
        print("== error", bad, type(e).__name__, getattr(e, "field", None), "|", e)

# disagg.reference: the reference package's API
cfg = ds.SimConfig(model=ds.MODELS["llama3-8b"], devices_per_instance=1, link=ds.LINKS["eth-25g"], fast_forward=True)
wl = ds.poisson_workload(14.0, 200, ds.LengthDist(2048, 0.5), ds.LengthDist(256, 0.5), seed=1)
show("reference workload head", [[w.arrival, w.prompt_len, w.output_len] for w in wl[:10]])
res = ds.simulate(cfg, wl)
show("reference summarise", ds.summarise(res))
print("== reference format_report")
print(ds.format_report(ds.summarise(res)))
show("reference requests head", [[q.rid, q.arrival, q.first_token, q.kv_ready, q.finish] for q in res.requests[:10]])
