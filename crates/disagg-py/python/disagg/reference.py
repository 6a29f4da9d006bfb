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
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _core
from . import catalogue as _catalogue
from ._core import ConfigError

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

GB = 1e9
TB = 1e12


def _error(field_name: str, message: str) -> ConfigError:
    e = ConfigError(f"{field_name}: {message}")
    e.field = field_name
    return e


# ---- hardware and models ------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only model by its shape (the reference's ``hardware.ModelSpec`` fields)."""

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    vocab: int
    weight_bytes: float = 2.0
    kv_bytes: float = 2.0
    mixer: str = "attention"
    attn_every: int = 4
    hyena_order: int = 2
    short_taps: int = 3
    circulant_block: int = 0
    decode_style: str = "direct"
    distill_state: int = 16
    act_format: str = "bf16"
    prefill_lm_head: str = "all"
    ced_encoder_layers: int = 0
    ced_replay: int = 128
    ced_replay_on: str = "prefill"
    n_experts: int = 0
    top_k: int = 0
    n_shared_experts: int = 0
    # The catalogue key this model came from (kept by ``dataclasses.replace``); not compared.
    _key: Optional[str] = field(default=None, repr=False, compare=False)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def is_ced(self) -> bool:
        return self.ced_encoder_layers > 0

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_transformer(self) -> bool:
        return self.mixer == "attention"


@dataclass(frozen=True)
class TransformEngine:
    """A Fourier-optical transform engine (the reference's ``hardware.TransformEngine`` fields)."""

    samples_per_s: float = 1e12
    enob: int = 8
    fom_dac_fj: float = 10.0
    fom_adc_fj: float = 20.0
    laser_w: float = 10.0
    tuning_w: float = 10.0
    mask_values: int = 2_000_000
    mask_rate_hz: float = 1031.0
    detection: str = "coherent"
    overlap: bool = False

    @property
    def static_w(self) -> float:
        return self.laser_w + self.tuning_w


@dataclass(frozen=True)
class Accelerator:
    """One device (the reference's ``hardware.Accelerator`` fields)."""

    name: str
    peak_flops: float
    mem_bw: float
    mem_capacity: float
    flops_eff: float = 0.55
    bw_eff: float = 0.80
    tdp_w: float = 700.0
    idle_w: float = 100.0
    pj_per_flop: float = 1.0
    pj_per_byte: float = 60.0
    transform: Optional[TransformEngine] = None
    fft_efficiency: float = 1.0
    native_formats: tuple = ()
    scale_up: str = "nvlink4"
    _key: Optional[str] = field(default=None, repr=False, compare=False)

    def format_speedup(self, fmt: str) -> Optional[float]:
        if fmt == "bf16":
            return 1.0
        return dict(self.native_formats).get(fmt)

    @property
    def ridge_point(self) -> float:
        return (self.peak_flops * self.flops_eff) / (self.mem_bw * self.bw_eff)


@dataclass(frozen=True)
class Link:
    """The KV link (the reference's ``hardware.Link`` fields)."""

    name: str
    bandwidth: float
    latency: float = 10e-6
    channels: int = 1
    pj_per_bit: float = 10.0
    _key: Optional[str] = field(default=None, repr=False, compare=False)

    def transfer_time(self, nbytes: float) -> float:
        return self.latency + nbytes / self.bandwidth


@dataclass(frozen=True)
class KVCompression:
    name: str
    ratio: float
    ops_per_value: float
    fft: bool = False


@dataclass(frozen=True)
class KVTransit:
    compression: KVCompression
    where: str = "transit"
    ops_per_byte: float = 1.6
    pj_per_bit: float = 1.0
    latency: float = 1e-6
    native_fft: bool = True


@dataclass(frozen=True)
class Parallel:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    microbatches: Optional[int] = None
    expert_imbalance: float = 1.0
    link: Optional[str] = None

    @property
    def gpus(self) -> int:
        return self.tp * self.pp


@dataclass(frozen=True)
class Speculative:
    draft: str = "mtp"
    gamma: int = 3
    alpha: float = 0.7
    seed: int = 0


def _load_catalogue() -> Tuple[Dict[str, ModelSpec], Dict[str, Accelerator], Dict[str, Link],
                               Dict[str, KVCompression]]:
    cat = _catalogue()
    models: Dict[str, ModelSpec] = {}
    for m in cat["models"]:
        if m.get("arch"):
            # Described by layer kinds (MLA, windows, linear attention): not the reference's
            # ModelSpec; use disagg.run(model=...) for those.
            continue
        kw: Dict[str, Any] = {}
        fft = m.get("fft")
        if fft:
            kw.update(mixer=fft["mixer"], attn_every=fft["attn_every"], hyena_order=fft["order"],
                      short_taps=fft["short_taps"], circulant_block=fft["circulant_block"],
                      decode_style=fft["decode_style"], distill_state=fft["distill_state"],
                      act_format=fft["act_format"])
        ced = m.get("ced")
        if ced:
            kw.update(ced_encoder_layers=ced["encoder_layers"], ced_replay=ced["replay"],
                      ced_replay_on=ced["replay_on"])
        moe = m.get("moe")
        if moe:
            kw.update(n_experts=moe["n_experts"], top_k=moe["top_k"],
                      n_shared_experts=moe["n_shared_experts"])
        models[m["key"]] = ModelSpec(
            m["name"], m["n_layers"], m["d_model"], m["n_heads"], m["n_kv_heads"], m["d_ff"],
            m["vocab"], weight_bytes=m["weight_bytes"], kv_bytes=m["kv_bytes"],
            prefill_lm_head=m["prefill_lm_head"], _key=m["key"], **kw)
    devices: Dict[str, Accelerator] = {}
    for d in cat["devices"]:
        eng = d.get("engine")
        devices[d["key"]] = Accelerator(
            d["name"], d["peak_flops"], d["mem_bw"], d["mem_capacity"], flops_eff=d["flops_eff"],
            bw_eff=d["bw_eff"], tdp_w=d["tdp_w"], idle_w=d["idle_w"], pj_per_flop=d["pj_per_flop"],
            pj_per_byte=d["pj_per_byte"], transform=TransformEngine(**eng) if eng else None,
            fft_efficiency=d.get("fft_efficiency", 1.0),
            native_formats=tuple((f, x) for f, x in d["native_formats"]), scale_up=d["scale_up"],
            _key=d["key"])
    links = {
        x["key"]: Link(x["name"], x["bandwidth_bps"], latency=x["latency_s"], channels=x["channels"],
                       pj_per_bit=x["pj_per_bit"], _key=x["key"])
        for x in cat["links"]
    }
    comp = {c["key"]: KVCompression(c["key"], c["ratio"], c["ops_per_value"], c["fft"])
            for c in cat["compression"]}
    return models, devices, links, comp


_MODELS, _DEVICES, _LINKS, _COMPRESSION = _load_catalogue()

# The reference's catalogue keys (the engine's catalogue has a few more, e.g. INT8 KV compression).
MODELS: Dict[str, ModelSpec] = dict(_MODELS)
ACCELERATORS: Dict[str, Accelerator] = dict(_DEVICES)
LINKS: Dict[str, Link] = dict(_LINKS)
KV_PRESETS: Dict[str, KVCompression] = {k: _COMPRESSION[k] for k in ("none", "fp8", "fp4-block", "freq-keep-k")}
QUANT_FORMATS = {"bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5 + 2 / 128, "fp4": 0.5 + 1 / 32}


def _fields(obj: Any) -> Dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.name != "_key"}


def _scaled(field_name: str, value: float, unit: float, inverse: bool = False) -> float:
    """`value` in the engine's unit (x / unit), checked to come back exactly (x * unit)."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _error(field_name, f"expected a finite number, got {value!r}")
    for x in (value / unit, value * (1 / unit)):
        if x * unit == value:
            return x
    raise _error(field_name, f"{value!r} is not exactly representable in the engine's unit "
                 f"(x * {unit!r}): no silent rounding")


def _latency_us(field_name: str, value: float) -> float:
    """Seconds as microseconds `u` with `u * 1e-6 == value` (the engine's conversion)."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _error(field_name, f"expected a finite number, got {value!r}")
    for u in (value * 1e6, value / 1e-6, round(value * 1e6, 9)):
        if u * 1e-6 == value:
            return u
    raise _error(field_name, f"{value!r} s is not exactly u * 1e-6 for any microsecond value u")


def _model_keys(m: ModelSpec, where: str = "model") -> Dict[str, Any]:
    if not isinstance(m, ModelSpec):
        raise _error(where, f"expected a ModelSpec, got {type(m).__name__}")
    key = m._key if m._key in _MODELS else None
    if key is None:
        plain = m.mixer == "attention" and not m.ced_encoder_layers and not m.n_experts
        if not plain:
            raise _error(where, "a model built from scratch must be a plain attention model "
                         "(use dataclasses.replace on a MODELS entry for the other kinds)")
        key = "llama3-8b"
    base = _MODELS[key]
    out: Dict[str, Any] = {"model": key}
    have, want = _fields(base), _fields(m)
    simple = {"n_layers": "layers", "d_model": "d_model", "n_heads": "heads",
              "n_kv_heads": "kv_heads", "d_ff": "d_ff", "vocab": "vocab",
              "weight_bytes": "weight_bytes", "kv_bytes": "kv_bytes",
              "prefill_lm_head": "prefill_lm_head", "ced_encoder_layers": "ced_encoder_layers",
              "ced_replay": "ced_replay", "ced_replay_on": "ced_replay_on"}
    for f, v in want.items():
        if f == "name" or v == have[f]:
            continue
        if f not in simple:
            raise _error(f"{where}.{f}", f"{v!r} differs from {key}'s {have[f]!r}; no engine "
                         "option sets it")
        out[simple[f]] = v
    if "d_model" in out or "heads" in out:
        out["head_dim"] = m.d_model // m.n_heads   # the reference derives it
    return out


_DEVICE_KEYS = {"peak_flops": ("device_peak_tflops", TB), "mem_bw": ("device_mem_bw_tb_s", TB),
                "mem_capacity": ("device_mem_gb", GB), "tdp_w": ("device_tdp_w", None),
                "idle_w": ("device_idle_w", None), "fft_efficiency": ("fft_efficiency", None)}
_ENGINE_KEYS = {"enob": "ft_enob", "samples_per_s": "ft_samples_per_s",
                "mask_rate_hz": "ft_mask_rate", "detection": "ft_detection", "overlap": "ft_overlap"}


def _device_keys(d: Accelerator, where: str) -> Tuple[str, Dict[str, Any]]:
    if not isinstance(d, Accelerator):
        raise _error(where, f"expected an Accelerator, got {type(d).__name__}")
    if d._key not in _DEVICES:
        raise _error(where, "start from an ACCELERATORS entry (dataclasses.replace) so the "
                     "engine knows the part")
    key = d._key
    base = _DEVICES[key]
    have, want = _fields(base), _fields(d)
    out: Dict[str, Any] = {}
    for f, v in want.items():
        if f == "name" or v == have[f]:
            continue
        if f == "transform":
            if have[f] is None or v is None:
                raise _error(f"{where}.transform", "adding or removing a transform engine is not "
                             "an engine option")
            hb, wb = _fields(have[f]), _fields(v)
            for g, x in wb.items():
                if x == hb[g]:
                    continue
                if g in ("laser_w", "tuning_w") and wb["laser_w"] == wb["tuning_w"]:
                    out["ft_static_w"] = wb["laser_w"] + wb["tuning_w"]
                    continue
                if g not in _ENGINE_KEYS:
                    raise _error(f"{where}.transform.{g}", "no engine option sets it")
                out[_ENGINE_KEYS[g]] = x
            continue
        if f not in _DEVICE_KEYS:
            raise _error(f"{where}.{f}", f"{v!r} differs from {key}'s {have[f]!r}; no engine "
                         "option sets it")
        k, unit = _DEVICE_KEYS[f]
        out[k] = _scaled(f"{where}.{f}", v, unit) if unit else v
    if "ft_static_w" in out:
        half = out["ft_static_w"] / 2
        if d.transform is None or half + half != out["ft_static_w"] or half != d.transform.laser_w:
            raise _error(f"{where}.transform.laser_w", "the engine splits ft_static_w in two halves")
    return key, out


def _link_keys(link: Link, where: str = "link") -> Dict[str, Any]:
    if not isinstance(link, Link):
        raise _error(where, f"expected a Link, got {type(link).__name__}")
    key = link._key if link._key in _LINKS else "ib-ndr"
    base = _LINKS[key]
    out: Dict[str, Any] = {"link": key}
    if link.bandwidth != base.bandwidth:
        out["link_bandwidth_gb_s"] = _scaled(f"{where}.bandwidth", link.bandwidth, GB)
    if link.latency != base.latency:
        out["link_latency_us"] = _latency_us(f"{where}.latency", link.latency)
    if link.pj_per_bit != base.pj_per_bit:
        out["link_pj_per_bit"] = link.pj_per_bit
    if link.channels != base.channels:
        out["link_channels"] = link.channels
    return out


def _catalogue_link(link: Link, where: str) -> str:
    if not isinstance(link, Link) or link._key not in _LINKS or link != _LINKS[link._key]:
        raise _error(where, "only an unchanged LINKS entry can be used here")
    return link._key


# ---- configuration ------------------------------------------------------------------------------


@dataclass
class SimConfig:
    """The reference's ``sim.SimConfig``: every field and default."""

    model: ModelSpec = field(default_factory=lambda: MODELS["llama3-70b"])
    device: Accelerator = field(default_factory=lambda: ACCELERATORS["h100"])
    devices_per_instance: int = 4
    mode: str = "disagg"
    n_prefill: int = 1
    n_decode: int = 1
    n_colocated: int = 2
    link: Link = field(default_factory=lambda: LINKS["ib-ndr"])
    max_prefill_tokens: int = 8192
    max_decode_batch: int = 256
    step_overhead: float = 0.5e-3
    ttft_slo: float = 1.0
    tpot_slo: float = 0.025
    warmup_frac: float = 0.1
    sample_dt: float = 0.05
    trace: bool = False
    fast_forward: bool = False
    power_cap_w: Optional[float] = None
    prefill_power_cap_w: Optional[float] = None
    decode_power_cap_w: Optional[float] = None
    dvfs: bool = False
    prefill_device: Optional[Accelerator] = None
    decode_device: Optional[Accelerator] = None
    prefill_devices_per_instance: Optional[int] = None
    decode_devices_per_instance: Optional[int] = None
    kv_transit: Optional[KVTransit] = None
    batch_policy: str = "prefill-priority"
    max_num_batched_tokens: Optional[int] = None
    kv_policy: str = "oracle"
    kv_block_size: int = 16
    max_seq_len: int = 2048
    kv_watermark: float = 0.01
    preemption: str = "recompute"
    host_link: Link = field(default_factory=lambda: LINKS["pcie5"])
    prefix_caching: bool = False
    parallel: Optional[Parallel] = None
    prefill_parallel: Optional[Parallel] = None
    decode_parallel: Optional[Parallel] = None
    weight_format: str = "bf16"
    kv_format: str = "bf16"
    compute_format: str = "bf16"
    speculative: Optional[Speculative] = None

    @property
    def scheduled(self) -> bool:
        return (self.batch_policy != "prefill-priority" or self.max_num_batched_tokens is not None
                or self.kv_policy != "oracle" or self.prefix_caching or self.speculative is not None)

    @property
    def quantised(self) -> bool:
        return (self.weight_format, self.kv_format, self.compute_format) != ("bf16", "bf16", "bf16")

    @property
    def heterogeneous(self) -> bool:
        return any(x is not None for x in (self.prefill_device, self.decode_device,
                                           self.prefill_devices_per_instance,
                                           self.decode_devices_per_instance))

    def parallel_for(self, role: str) -> Optional[Parallel]:
        own = {"prefill": self.prefill_parallel, "decode": self.decode_parallel}.get(role)
        return own if own is not None else self.parallel

    def pool(self, role: str) -> Tuple[Accelerator, int]:
        dev = {"prefill": self.prefill_device, "decode": self.decode_device}.get(role)
        n = {"prefill": self.prefill_devices_per_instance,
             "decode": self.decode_devices_per_instance}.get(role)
        return (dev if dev is not None else self.device,
                n if n is not None else self.devices_per_instance)


def _device_of(cfg: SimConfig, where: str) -> Accelerator:
    d = getattr(cfg, where)
    return d if d is not None else cfg.device


def _scenario(cfg: SimConfig) -> Dict[str, Any]:
    """The scenario keys of `cfg` (ConfigError for what no key expresses)."""
    if not isinstance(cfg, SimConfig):
        raise _error("cfg", f"expected a SimConfig, got {type(cfg).__name__}")
    if cfg.step_overhead != 0.5e-3:
        raise _error("step_overhead", "only the default 0.5e-3 s (not an engine option)")
    if cfg.kv_watermark != 0.01:
        raise _error("kv_watermark", "only the default 0.01 (not an engine option)")
    sc: Dict[str, Any] = {}
    sc.update(_model_keys(cfg.model))
    # Devices: each pool's device is a catalogue key; custom values are engine options that
    # apply to every pool's device, so the pools in use must carry the same ones.
    dkey, dcustom = _device_keys(cfg.device, "device")
    sc["device"] = dkey
    used = [("device", dcustom)] if cfg.mode == "colocated" else []
    for role in ("prefill", "decode"):
        d = getattr(cfg, f"{role}_device")
        if d is not None:
            k, c = _device_keys(d, f"{role}_device")
            sc[f"{role}_device"] = k
            if cfg.mode != "colocated":
                used.append((f"{role}_device", c))
        elif cfg.mode != "colocated":
            used.append(("device", dcustom))
    # The transform-engine options (ft_*) touch only devices that have an engine.
    engine_keys = set(_ENGINE_KEYS.values()) | {"ft_static_w"}
    plain = [(w, {k: v for k, v in c.items() if k not in engine_keys}) for w, c in used]
    optical = [(w, {k: v for k, v in c.items() if k in engine_keys}) for w, c in used
               if _device_of(cfg, w).transform is not None]
    for group in (plain, optical):
        for where, c in group:
            if c != group[0][1]:
                raise _error(where, "custom device values must be the same on every pool's "
                             "device (the engine's device options apply to all of them)")
        if group:
            sc.update(group[0][1])
    for role in ("prefill", "decode"):
        n = getattr(cfg, f"{role}_devices_per_instance")
        if n is not None:
            sc[f"{role}_devices_per_instance"] = n
    sc["devices_per_instance"] = cfg.devices_per_instance
    sc["mode"] = cfg.mode
    if cfg.mode == "colocated":
        sc["prefill"], sc["decode"] = cfg.n_colocated, 0
    else:
        sc["prefill"], sc["decode"] = cfg.n_prefill, cfg.n_decode
    sc.update(_link_keys(cfg.link))
    sc["max_decode_batch"] = cfg.max_decode_batch
    sc["ttft_slo"], sc["tpot_slo"] = cfg.ttft_slo, cfg.tpot_slo
    sc["fast"] = cfg.fast_forward
    sc["power_cap"] = cfg.power_cap_w
    sc["prefill_power_cap"] = cfg.prefill_power_cap_w
    sc["decode_power_cap"] = cfg.decode_power_cap_w
    sc["dvfs"] = cfg.dvfs
    tr = cfg.kv_transit
    if tr is not None:
        if not isinstance(tr, KVTransit):
            raise _error("kv_transit", f"expected a KVTransit, got {type(tr).__name__}")
        comp = tr.compression
        if not isinstance(comp, KVCompression) or _COMPRESSION.get(comp.name) != comp:
            raise _error("kv_transit.compression", "only the KV_PRESETS entries")
        for f in ("ops_per_byte", "pj_per_bit", "latency", "native_fft"):
            if getattr(tr, f) != getattr(KVTransit(comp), f):
                raise _error(f"kv_transit.{f}", "only the default (not an engine option)")
        sc["kv_compress"], sc["kv_compress_at"] = comp.name, tr.where
    sc["batch_policy"] = cfg.batch_policy
    sc["max_num_batched_tokens"] = cfg.max_num_batched_tokens
    sc["kv_policy"] = cfg.kv_policy
    sc["kv_block_size"] = cfg.kv_block_size
    sc["max_seq_len"] = cfg.max_seq_len
    sc["preemption"] = cfg.preemption
    sc["host_link"] = _catalogue_link(cfg.host_link, "host_link")
    sc["prefix_caching"] = cfg.prefix_caching
    p = cfg.parallel
    if p is not None:
        sc.update(tp=p.tp, pp=p.pp, ep=p.ep, microbatches=p.microbatches,
                  expert_imbalance=p.expert_imbalance, scale_up_link=p.link)
    for role in ("prefill", "decode"):
        q = getattr(cfg, f"{role}_parallel")
        if q is None:
            continue
        for f in ("ep", "microbatches", "expert_imbalance", "link"):
            if getattr(q, f) != getattr(Parallel(), f):
                raise _error(f"{role}_parallel.{f}", "a pool's own layout sets tp and pp only")
        sc[f"{role}_tp"], sc[f"{role}_pp"] = q.tp, q.pp
    sc["weight_format"] = cfg.weight_format
    sc["kv_format"] = cfg.kv_format
    sc["compute_format"] = cfg.compute_format
    s = cfg.speculative
    if s is not None:
        sc.update(speculative=s.draft, gamma=s.gamma, alpha=s.alpha, spec_seed=s.seed)
    return sc


# ---- workloads -----------------------------------------------------------------------------------


@dataclass
class Request:
    """One request and every stamp the simulator puts on it (the reference's ``Request``)."""

    rid: int
    arrival: float
    prompt_len: int
    output_len: int
    prefill_start: Optional[float] = None
    first_token: Optional[float] = None
    prefill_done: Optional[float] = None
    kv_start: Optional[float] = None
    kv_ready: Optional[float] = None
    decode_start: Optional[float] = None
    finish: Optional[float] = None
    tokens_out: int = 0
    last_token: Optional[float] = None
    itls: List[float] = field(default_factory=list, repr=False)
    prefix: tuple = field(default=(), repr=False)
    emit_key: Optional[str] = field(default=None, repr=False)
    after: Optional[int] = field(default=None, repr=False)
    think: float = field(default=0.0, repr=False)

    @property
    def ttft(self) -> float:
        return self.first_token - self.arrival  # type: ignore[operator, return-value]  # stamps are set after a run

    @property
    def tpot(self) -> Optional[float]:
        if self.output_len < 2:
            return None
        return (self.finish - self.first_token) / (self.output_len - 1)  # type: ignore[operator, return-value]  # stamps are set after a run

    @property
    def e2e(self) -> float:
        return self.finish - self.arrival  # type: ignore[operator, return-value]  # stamps are set after a run

    @property
    def handoff_start(self) -> float:
        return self.prefill_done if self.prefill_done is not None else self.first_token  # type: ignore[operator, return-value]  # stamps are set after a run

    def stages(self) -> Dict[str, float]:
        """Where this request's time went (sums to e2e), simulator.md §1.4."""
        end_of_handoff = self.kv_ready if self.kv_ready is not None else self.first_token
        s = dict.fromkeys(("prefill_queue", "prefill", "kv_wait", "kv_transfer", "decode_queue",
                           "decode"), 0.0)
        s["prefill_queue"] = self.prefill_start - self.arrival  # type: ignore[operator, return-value]  # stamps are set after a run
        s["prefill"] = self.handoff_start - self.prefill_start  # type: ignore[operator, return-value]  # stamps are set after a run
        if self.kv_start is not None:
            s["kv_wait"] = self.kv_start - self.handoff_start
            s["kv_transfer"] = self.kv_ready - self.kv_start  # type: ignore[operator, return-value]  # stamps are set after a run
        if self.decode_start is not None:
            s["decode_queue"] = self.decode_start - end_of_handoff  # type: ignore[operator, return-value]  # stamps are set after a run
            s["decode"] = self.finish - self.decode_start  # type: ignore[operator, return-value]  # stamps are set after a run
        return s


class _LazyItls:
    """``Request.itls``, read from its run the first time a script asks for it (a plain list
    then on, as the reference's): a run of 10,000 requests has 2.5 million of them, and building
    them all up front took longer than the simulation."""

    def __get__(self, obj: Optional[Request], cls: Any = None) -> Any:
        if obj is None:
            return []  # the dataclass field's class-level default
        d = obj.__dict__
        if d.get("_itls") is None:
            src = d.pop("_itls_src", None)
            d["_itls"] = [] if src is None else _core.reference_itls(*src)
        return d["_itls"]

    def __set__(self, obj: Request, value: List[float]) -> None:
        obj.__dict__["_itls"] = value
        obj.__dict__.pop("_itls_src", None)


Request.itls = _LazyItls()  # type: ignore[assignment]


@dataclass(frozen=True)
class LengthDist:
    """Lognormal lengths with mean `mean` and coefficient of variation `cv`, rounded (half to
    even) and clipped to [lo, hi]; `cv <= 0` is the fixed length `mean` (simulator.md §4.1)."""

    mean: float
    cv: float = 0.0
    lo: int = 1
    hi: int = 32768

    def __post_init__(self) -> None:
        # A NaN or infinite mean or cv made lengths of nonsense; a bound outside 0..4294967295,
        # lengths the engine cannot hold.
        for name, positive in (("mean", True), ("cv", False)):
            v = getattr(self, name)
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
            if not (ok and (v > 0 or not positive)):
                want = "a finite number > 0" if positive else "a finite number"
                raise _error(f"LengthDist.{name}", f"must be {want}, got {v!r}")
        for name in ("lo", "hi"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= v < 2**32:
                raise _error(f"LengthDist.{name}",
                             f"must be a whole number from 0 to 4294967295, got {v!r}")

    def sample(self, rng: random.Random) -> int:
        if self.cv <= 0:
            x = self.mean
        else:
            s2 = math.log(1 + self.cv ** 2)
            x = rng.lognormvariate(math.log(self.mean) - s2 / 2, math.sqrt(s2))
        return int(min(self.hi, max(self.lo, round(x))))

    def _tuple(self) -> Tuple[float, float, int, int]:
        return (float(self.mean), float(self.cv), int(self.lo), int(self.hi))


def poisson_workload(rate: float, n: int, prompt: LengthDist, output: LengthDist,
                     seed: int = 0) -> List[Request]:
    """`n` requests with exponential gaps at `rate` per second (bit for bit the reference's)."""
    rows = _core.poisson_workload(float(rate), n, prompt._tuple(), output._tuple(), int(seed))
    return [Request(i, a, p, o) for i, (a, p, o) in enumerate(rows)]


def workload_rows(reqs: List[Request]) -> List[list]:
    """The JSON rows of simulator.md §7.2 (a fourth element only when some request has a
    prefix chain, an emitted key or a predecessor)."""
    if not any(r.prefix or r.emit_key or r.after is not None for r in reqs):
        return [[r.arrival, r.prompt_len, r.output_len] for r in reqs]
    return [[r.arrival, r.prompt_len, r.output_len,
             {"chain": [list(c) for c in r.prefix], "emit": r.emit_key, "after": r.after,
              "think": r.think}] for r in reqs]


def dump_workload(reqs: List[Request], path: Union[str, "os.PathLike[str]"]) -> None:
    """Write the workload's JSON rows to `path` (whole or not at all; a regular file, never a FIFO
    or a device)."""
    _core.write_text(path, json.dumps(workload_rows(reqs)), "path")


def load_workload(path: Union[str, "os.PathLike[str]"]) -> List[Request]:
    """The workload of a JSON rows file, read as the command line reads its inputs: a regular
    file (never a FIFO or a device) of at most 1 GiB."""
    out = []
    for i, row in enumerate(json.loads(_core.read_text(path, "path"))):
        r = Request(i, float(row[0]), int(row[1]), int(row[2]))
        if len(row) > 3:
            x = row[3]
            r.prefix = tuple((k, int(v)) for k, v in x["chain"])
            r.emit_key, r.after, r.think = x["emit"], x["after"], float(x["think"])
        out.append(r)
    return out


# ---- running -------------------------------------------------------------------------------------


@dataclass
class LinkStats:
    busy: float = 0.0
    bytes: float = 0.0
    transfers: int = 0
    wait: float = 0.0
    energy: float = 0.0
    handoff_bytes: float = 0.0
    transit_j: float = 0.0
    transit_bound: int = 0


@dataclass
class InstanceStats:
    """What the run reports of one instance (a subset of the reference's ``Instance``)."""

    name: str
    role: str
    busy: float
    steps: int
    compute_j: float
    memory_j: float
    peak_power: float
    kv_cap: int


@dataclass
class SimResult:
    cfg: SimConfig
    requests: List[Request]
    instances: List[InstanceStats]
    link: LinkStats
    horizon: float
    in_system_area: Optional[float] = None
    samples: List[dict] = field(repr=False, default_factory=list)
    trace: Optional[dict] = field(repr=False, default=None)
    rejected: List[Request] = field(default_factory=list)
    _handle: Any = field(default=None, repr=False, compare=False)


class Simulation:
    """``Simulation(cfg, workload).run()``, as the reference's."""

    def __init__(self, cfg: SimConfig, workload: List[Request]):
        self.cfg = cfg
        self.requests = workload
        self._scenario = _scenario(cfg)
        for i, r in enumerate(workload):
            if r.rid != i:
                raise _error("workload", f"request {i} has rid {r.rid}: rids must be 0..n-1 in order")
            if r.prefix or r.emit_key or r.after is not None:
                raise _error("workload", "prefix chains and sessions (Request.prefix, emit_key, "
                             "after) are not supported by the drop-in: use disagg.run with "
                             "turns= / prefix_caching=")

    def run(self) -> SimResult:
        cfg = self.cfg
        rows = [(float(r.arrival), int(r.prompt_len), int(r.output_len)) for r in self.requests]
        h = _core.reference_simulate(
            self._scenario, rows,
            max_prefill_tokens=None if cfg.max_prefill_tokens == 8192 else cfg.max_prefill_tokens,
            warmup_frac=None if cfg.warmup_frac == 0.1 else cfg.warmup_frac,
            sample_dt=None if cfg.sample_dt == 0.05 else cfg.sample_dt)
        for (rid, _a, _p, _o, ps, ft, pd, ks, kr, ds, fin, n_itl), r in zip(
                _core.reference_requests(h), self.requests):
            r.prefill_start, r.first_token, r.prefill_done = ps, ft, pd
            r.kv_start, r.kv_ready, r.decode_start, r.finish = ks, kr, ds, fin
            # Read from the run on first use (see _LazyItls).
            r.__dict__["_itls"] = None
            r.__dict__["_itls_src"] = (h, rid)
            r.tokens_out = 0 if ft is None else 1 + n_itl
            r.last_token = fin if fin is not None else None
        s = h.document()["summary"]
        lk = s["link"]
        link = LinkStats(busy=lk["busy_s"], bytes=lk["bytes"], transfers=lk["transfers"],
                         wait=lk["wait_s"], energy=lk["energy_j"],
                         handoff_bytes=lk["handoff_bytes"], transit_j=lk["transit_j"],
                         transit_bound=lk["transit_bound"])
        insts = [InstanceStats(i["name"], i["role"], i["busy_s"], i["steps"], i["compute_j"],
                               i["memory_j"], i["peak_step_w"], i["kv_capacity_tokens"])
                 for i in s["instances"]]
        trace = None
        if cfg.trace:
            with tempfile.TemporaryDirectory() as d:
                p = os.path.join(d, "trace.json")
                h.write_trace(p)
                trace = json.loads(Path(p).read_text())
        rejected = [r for r in self.requests if r.finish is None]
        return SimResult(cfg, self.requests, insts, link, s["horizon_s"], None, [], trace,
                         rejected, _handle=h)


def simulate(cfg: SimConfig, workload: List[Request]) -> SimResult:
    """Build, run, return (``workload``'s requests get their stamps in place)."""
    return Simulation(cfg, workload).run()


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


def write_trace(trace: dict, path: Union[str, "os.PathLike[str]"]) -> None:
    """Write a run's trace dict (``SimResult.trace``, with ``SimConfig(trace=True)``) as JSON
    (whole or not at all; a regular file, never a FIFO or a device)."""
    _core.write_text(path, json.dumps(trace), "path")


# ---- the cost model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepCost:
    flops: Union[int, float]
    bytes: float
    time: float
    bound: str
    energy: float = 0.0
    compute_j: float = 0.0
    memory_j: float = 0.0


@dataclass(frozen=True)
class CostModel:
    """Roofline timing of one instance (the reference's ``hardware.CostModel``), computed by the
    engine's own cost model of that pool."""

    model: ModelSpec
    device: Accelerator
    n_devices: int = 1
    step_overhead: float = 0.5e-3
    mem_util: float = 0.9
    power_cap_w: Optional[float] = None
    enforce_tdp: bool = True
    dvfs: bool = False
    s_min: float = 0.4
    prefill_only: bool = False
    compute_speedup: float = 1.0
    parallel: Optional[Parallel] = None
    draft: Optional[ModelSpec] = None
    draft_resident_bytes: float = 0.0

    def _engine(self) -> Any:
        cm = self.__dict__.get("_cm")
        if cm is not None:
            return cm
        defaults = {"step_overhead": 0.5e-3, "mem_util": 0.9, "enforce_tdp": True, "s_min": 0.4,
                    "compute_speedup": 1.0, "parallel": None, "draft": None,
                    "draft_resident_bytes": 0.0}
        for f, v in defaults.items():
            if getattr(self, f) != v:
                raise _error(f, f"only the default {v!r} (not an engine option here)")
        sc: Dict[str, Any] = _model_keys(self.model)
        key, custom = _device_keys(self.device, "device")
        sc.update(custom)
        sc.update(device=key, devices_per_instance=self.n_devices, power_cap=self.power_cap_w,
                  dvfs=self.dvfs)
        ced_decode = self.model.is_ced and self.model.ced_replay_on == "decode"
        if self.prefill_only:
            sc["mode"], role = "disagg", "prefill"
        elif ced_decode:
            sc["mode"], role = "disagg", "decode"
        else:
            sc["mode"], role = "colocated", "colocated"
        cm = _core.reference_cost_model(sc, role)
        object.__setattr__(self, "_cm", cm)
        return cm

    @staticmethod
    def _step(t: tuple) -> StepCost:
        return StepCost(*t)

    def prefill(self, prompt_lens: List[int]) -> StepCost:
        return self._step(self._engine().prefill([int(x) for x in prompt_lens]))

    def decode(self, context_lens: List[int]) -> StepCost:
        return self._step(self._engine().decode([int(x) for x in context_lens]))

    def decode_sum(self, ctx: int, batch: int) -> StepCost:
        return self._step(self._engine().decode_sum(int(ctx), int(batch)))

    @property
    def kv_capacity_tokens(self) -> int:
        return self._engine().kv_capacity_tokens

    @property
    def flops_rate(self) -> float:
        return self._engine().flops_rate

    @property
    def byte_rate(self) -> float:
        return self._engine().byte_rate

    @property
    def idle_w(self) -> float:
        return self._engine().idle_w

    @property
    def joules_per_flop(self) -> float:
        return self._engine().joules_per_flop
