"""The reference's ``hardware`` module: models, devices, links and the other hardware
records (read from the engine's catalogue), the cost model of one instance (the engine's own),
and how these records become scenario keys."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from .. import _core
from .. import catalogue as _catalogue
from ._common import _error


GB = 1e9
TB = 1e12


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
