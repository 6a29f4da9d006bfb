from .hardware import (
    ACCELERATORS as ACCELERATORS, Accelerator as Accelerator, CostModel as CostModel, GB as GB,
    KVCompression as KVCompression, KVTransit as KVTransit, KV_PRESETS as KV_PRESETS,
    LINKS as LINKS, Link as Link, MODELS as MODELS, ModelSpec as ModelSpec, Parallel as Parallel,
    QUANT_FORMATS as QUANT_FORMATS, StepCost as StepCost, TB as TB,
    TransformEngine as TransformEngine,
)
from .speculative import Speculative as Speculative
from .workload import (
    LengthDist as LengthDist, Request as Request, dump_workload as dump_workload,
    load_workload as load_workload, poisson_workload as poisson_workload,
    workload_rows as workload_rows,
)
from .trace import write_trace as write_trace
from .sim import (
    InstanceStats as InstanceStats, LinkStats as LinkStats, SimConfig as SimConfig,
    SimResult as SimResult, Simulation as Simulation, simulate as simulate,
)
from .metrics import format_report as format_report, summarise as summarise
from . import cli as cli, metrics as metrics, ppa as ppa, search as search
from . import sim as sim, speculative as speculative, trace as trace
from . import workload as workload

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
