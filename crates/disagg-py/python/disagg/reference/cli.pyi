from .hardware import (
    ACCELERATORS as ACCELERATORS, KV_PRESETS as KV_PRESETS, LINKS as LINKS, MODELS as MODELS,
    QUANT_FORMATS as QUANT_FORMATS, KVTransit as KVTransit, Parallel as Parallel,
)
from .metrics import format_report as format_report, summarise as summarise
from .sim import SimConfig as SimConfig, simulate as simulate
from .speculative import Speculative as Speculative
from .trace import write_trace as write_trace
from .workload import LengthDist as LengthDist, poisson_workload as poisson_workload
