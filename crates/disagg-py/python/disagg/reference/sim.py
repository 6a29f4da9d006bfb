"""The reference's ``sim`` module: the configuration, the result, and the simulation (a
``SimConfig`` translated into scenario keys and run by the engine)."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .. import _core
from ._common import _error
from .hardware import (
    ACCELERATORS, Accelerator, CostModel, KVCompression, KVTransit, LINKS, Link, MODELS, ModelSpec,
    Parallel, QUANT_FORMATS, StepCost, _COMPRESSION, _ENGINE_KEYS, _catalogue_link, _device_keys,
    _link_keys, _model_keys,
)
from .speculative import Speculative
from .workload import Request


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
