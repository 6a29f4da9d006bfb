"""The reference's ``metrics`` module: the summary dict and its text report."""

from __future__ import annotations

import math
from typing import Any, Dict

from .sim import SimResult


_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _floats(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _floats(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_floats(x) for x in v]
    if isinstance(v, str) and v in _NON_FINITE:
        return _NON_FINITE[v]
    return v


def summarise(res: SimResult) -> Dict[str, Any]:
    """The reference's ``metrics.summarise`` dict of a run."""
    if not isinstance(res, SimResult) or res._handle is None:
        raise TypeError("summarise: expected the SimResult of disagg.reference.simulate")
    return _floats(res._handle.reference_summary())


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def format_report(m: Dict[str, Any]) -> str:
    """The reference's text report of a ``summarise`` dict (simulator.md §7.1's layout)."""
    def ms(x: float) -> str:
        return f"{1e3 * x:8.1f}"

    rq = m["requests"]
    out = [f"── {m['mode']} ── {rq['completed']} done, {rq['rejected']} rejected, "
           f"sim {m['sim_time_s']:.1f}s"]
    if "pools" in m:
        out.append(f"pools        prefill {m['pools']['prefill']}   decode {m['pools']['decode']}")
    out.append("latency (ms)       mean      p50      p90      p99")
    for name in ("ttft", "tpot", "itl", "e2e"):
        d = m["latency_s"][name]
        out.append(f"  {name:<10} " + " ".join(ms(d[k]) for k in ("mean", "p50", "p90", "p99")))
    t = m["throughput"]
    out.append(f"throughput   {t['output_tok_per_s']:9.0f} tok/s   {t['req_per_s']:.2f} req/s   "
               f"goodput {t['goodput_req_per_s']:.2f} req/s   "
               f"SLO met {100 * t['slo_attainment']:.1f}%")
    out.append("utilisation  " + "  ".join(f"{k} {_pct(v)}" for k, v in m["utilisation"].items()))
    out.append("efficiency   " + "  ".join(
        f"{k} MFU {_pct(v['mfu'])} MBU {_pct(v['mbu'])} batch {v['mean_batch']:.1f}"
        for k, v in m["efficiency"].items()))
    out.append("where time goes  " + "  ".join(
        f"{k} {_pct(v)}" for k, v in m["stage_share"].items() if v >= 0.005))
    e = m["energy"]
    shares = "  ".join(f"{k} {_pct(v)}" for k, v in e["breakdown"].items())
    out.append(f"power        avg {e['avg_power_W']:,.0f} W   {e['J_per_output_token']:.2f} J/token   "
               f"{e['output_tokens_per_J']:.2f} tok/J   energy: {shares}")
    if "optical" in m:
        out.append("optical      " + "  ".join(
            f"{k} optical-bound {_pct(v['optical_bound_frac'])} of busy time, conversions "
            f"{v['conversion_J']:,.0f} J, lasers+tuning {v['static_J']:,.0f} J"
            for k, v in m["optical"].items() if v["static_J"]))
    kl = m["kv_link"]
    if "transit" in kl:
        t = kl["transit"]
        out.append(f"kv hand-off  {t['preset']} at {t['where']} (ratio {t['ratio']:.2f}): "
                   f"{t['handoff_GB']:.1f} GB -> {kl['bytes_GB']:.1f} GB on the link, "
                   f"transit-bound {_pct(t['transit_bound_frac'])} of transfers, "
                   f"stage {t['transit_J']:,.1f} J")
    if "scheduler" in m:
        s = m["scheduler"]
        line = f"scheduler    {s['batch_policy']} (budget {s['token_budget']:,} tokens), KV {s['kv_policy']}"
        if s["kv_policy"] == "paged":
            line += f" ({s['kv_unit_tokens']}-token blocks, {s['preemption']})"
        line += (f": {s['mean_running']:.1f} running, {_pct(s['kv_token_frac'])} of allocated KV "
                 "holds tokens")
        if "preemptions" in s:
            line += f", {s['preemptions']} preemptions"
        if "swap" in s:
            line += f" ({s['swap']['out_GB']:.1f} GB swapped out, {s['swap']['seconds']:.2f} s)"
        out.append(line)
        if "speculative" in s:
            c = s["speculative"]
            out.append(f"speculative  {c['draft']} draft, gamma {c['gamma']}, alpha {c['alpha']}: "
                       f"{c['tokens_per_verify']:.2f} tokens per verify (closed form "
                       f"{c['closed_form']:.2f}), draft {_pct(c['draft_time_frac'])} of busy time")
        if "prefix_cache" in s:
            c = s["prefix_cache"]
            out.append(f"prefix cache hit rate {100 * c['hit_rate']:.1f}% of {c['prompt_tokens']:,} "
                       f"prompt tokens, {c['evicted_tokens']:,} tokens evicted")
    if "parallel" in m:
        out.append("parallel     " + "  ".join(
            f"{k} tp {v['tp']} pp {v['pp']} ep {v['ep']} on {v['link']}: "
            f"{_pct(v['comm_frac'])} of busy time on the link" for k, v in m["parallel"].items()))
    if "formats" in m:
        f = m["formats"]
        out.append(f"formats      weights {f['weights']}, KV {f['kv']}, compute {f['compute']} "
                   "(accuracy not simulated)")
    capped = [(k, v["power_bound_frac"]) for k, v in e["per_instance"].items()
              if v["power_bound_frac"] > 0]
    if capped:
        out.append("power-capped " + "  ".join(f"{k} {_pct(x)} of busy time" for k, x in capped))
    h = m["hotspots"]
    hot = (f"hot-spot     stage={h['stage']} -> {h['resource']} (busy {_pct(h['resource_util'])})")
    if h["busy_over_90pct"]:
        hot += "   busy>90%: " + ", ".join(h["busy_over_90pct"])
    out.append(hot)
    return "\n".join(out)
