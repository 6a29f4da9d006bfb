from .hardware import CostModel as CostModel
from .metrics import summarise as summarise
from .sim import SimConfig as SimConfig, simulate as simulate
from .workload import LengthDist as LengthDist, poisson_workload as poisson_workload
