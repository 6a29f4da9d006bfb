"""The reference's ``search`` module: of its names, those that exist here (the ones it
re-exports from the other modules). For searches over rates and configurations use
``disagg.sweep`` and ``disagg.plan``."""

from __future__ import annotations

from .hardware import CostModel
from .metrics import summarise
from .sim import SimConfig, simulate
from .workload import LengthDist, poisson_workload
