"""disagg.reference: a drop-in for the reference simulator's Python API.

``import disagg.reference as ds`` gives the top-level names of the reference package
``disagg_sim`` (Disaggregated_Inference_Sim), backed by the exact Rust engine, so a reference
script runs unchanged and prints the same numbers, bit for bit::

    import disagg.reference as ds
    cfg = ds.SimConfig(model=ds.MODELS["llama3-8b"], devices_per_instance=1,
                       link=ds.LINKS["eth-25g"], fast_forward=True)
    wl = ds.poisson_workload(14.0, 800, ds.LengthDist(2048, 0.5), ds.LengthDist(256, 0.5), seed=1)
    res = ds.simulate(cfg, wl)
    m = ds.summarise(res)           # the reference's dict: same keys, order and floats
    print(ds.format_report(m))      # the reference's text report

A ``SimConfig`` is translated into scenario keys (the command line's options) and run by the
engine. A value the engine cannot express raises ``disagg.ConfigError`` naming the field: the
drop-in never runs something other than what was asked for.

Coverage of the reference's names (``disagg_sim.__all__``):

================  =========  ==============================================================
name              covered    notes
================  =========  ==============================================================
MODELS            yes        every reference model key; ``ModelSpec`` objects with its fields
ACCELERATORS      yes        every reference device key; ``Accelerator`` objects
LINKS             yes        every reference link key; ``Link`` objects (``transfer_time`` too)
ModelSpec         partly     shape fields (n_layers, d_model, n_heads, n_kv_heads, d_ff,
                             vocab, weight_bytes, kv_bytes), prefill_lm_head and the CED fields
                             may differ from a catalogue model; a changed mixer / Hyena / MoE
                             field raises ConfigError (no scenario key carries it)
Accelerator       partly     peak_flops, mem_bw, mem_capacity, tdp_w, idle_w, fft_efficiency
                             and the transform engine's enob, samples_per_s, mask_rate_hz,
                             detection, overlap may differ (one custom device per run: the
                             engine's device overrides apply to every pool); flops_eff, bw_eff,
                             pj_per_flop, pj_per_byte, native_formats, scale_up raise
Link              yes        bandwidth, latency, channels, pj_per_bit map to link_* keys (a
                             value that does not survive the GB/s or µs conversion exactly
                             raises); a custom ``host_link`` raises (catalogue links only)
CostModel         partly     model, device, n_devices, power_cap_w, dvfs, prefill_only;
                             prefill, decode, decode_sum, kv_capacity_tokens, flops_rate,
                             byte_rate, idle_w, joules_per_flop (the engine's own pool cost
                             model). Not: step_time_raw, step_mixed, step_spec, ced_step and a
                             non-default step_overhead, mem_util, enforce_tdp, s_min,
                             compute_speedup, parallel, draft (ConfigError)
SimConfig         yes        every field; step_overhead != 5e-4 and kv_watermark != 0.01 raise
                             (not options of the engine), max_prefill_tokens only without the
                             scheduling levers
SimResult         partly     cfg, requests (every stamp, itls), rejected, horizon, link
                             (LinkStats), instances (name, role, busy, steps, compute_j,
                             memory_j, peak_power, kv_cap), trace (with SimConfig.trace).
                             Not: samples (empty list) and in_system_area (None): the engine
                             keeps them to itself (``disagg.run(...).series`` has the samples)
Simulation        yes        ``Simulation(cfg, workload).run()``
simulate          yes        mutates the workload's requests in place, as the reference does;
                             workloads with prefix chains or sessions (``Request.prefix``,
                             ``emit_key``, ``after``) raise: rows only (use ``disagg.run`` with
                             ``turns=`` / ``prefix_caching=`` for sessions)
summarise         yes        the reference's dict (``RunHandle.reference_summary``); with
                             ``--ppa``-style runs the ``ppa`` block the reference CLI appends
format_report     yes        the reference's text layout (simulator.md §7.1)
write_trace       yes        ``write_trace(res.trace, path)``
LengthDist        yes        ``sample(rng)`` with a ``random.Random``
Request           yes        every stamp field; ``tokens_out`` and ``last_token`` are derived
                             after a run (1 + number of ITLs; the finish time)
poisson_workload  yes        bit for bit (Python's Mersenne Twister, in Rust)
dump_workload     yes        simulator.md §7.2 rows
load_workload     yes        simulator.md §7.2 rows
================  =========  ==============================================================

The package mirrors the reference's modules: ``hardware`` (models, devices, links, the cost
model), ``sim`` (the configuration, the result, the simulation), ``metrics`` (the summary and
its report), ``workload`` (requests, length distributions, workloads), ``speculative``,
``trace``, ``cli``, ``ppa`` and ``search``; each holds the names of its reference module that
exist here (``from disagg.reference.hardware import MODELS``), and this package re-exports them
all, as the reference's top level does.
"""

from __future__ import annotations

from .. import _core  # noqa: F401
from .._core import ConfigError  # noqa: F401
from ._common import _error
from .hardware import (
    ACCELERATORS, Accelerator, CostModel, GB, KVCompression, KVTransit, KV_PRESETS, LINKS, Link,
    MODELS, ModelSpec, Parallel, QUANT_FORMATS, StepCost, TB, TransformEngine, _COMPRESSION,
    _DEVICES, _DEVICE_KEYS, _ENGINE_KEYS, _LINKS, _MODELS, _catalogue_link, _device_keys, _fields,
    _latency_us, _link_keys, _load_catalogue, _model_keys, _scaled,
)
from .speculative import Speculative
from .workload import (
    LengthDist, Request, dump_workload, load_workload, poisson_workload, workload_rows, _LazyItls,
)
from .trace import write_trace
from .sim import (
    InstanceStats, LinkStats, SimConfig, SimResult, Simulation, simulate, _device_of, _scenario,
)
from .metrics import format_report, summarise, _NON_FINITE, _floats, _pct
from . import cli, metrics, ppa, search, sim, speculative, trace, workload  # noqa: F401

__all__ = [
    "ACCELERATORS",
    "LINKS",
    "MODELS",
    "Accelerator",
    "CostModel",
    "Link",
    "ModelSpec",
    "SimConfig",
    "SimResult",
    "Simulation",
    "simulate",
    "summarise",
    "format_report",
    "write_trace",
    "LengthDist",
    "Request",
    "poisson_workload",
    "dump_workload",
    "load_workload",
    "KVCompression",
    "KVTransit",
    "Parallel",
    "Speculative",
    "TransformEngine",
    "StepCost",
    "LinkStats",
    "workload_rows",
]
