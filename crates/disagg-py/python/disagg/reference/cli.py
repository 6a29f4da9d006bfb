"""The reference's ``cli`` module: of its names, those that exist here (the ones it re-exports
from the other modules). The command line itself is ``disagg.cli`` / the ``disagg`` binary."""

from __future__ import annotations

from .hardware import ACCELERATORS, KV_PRESETS, LINKS, MODELS, QUANT_FORMATS, KVTransit, Parallel
from .metrics import format_report, summarise
from .sim import SimConfig, simulate
from .speculative import Speculative
from .trace import write_trace
from .workload import LengthDist, poisson_workload
