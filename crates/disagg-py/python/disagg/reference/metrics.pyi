from typing import Any, Dict

from .sim import SimResult as SimResult

def summarise(res: SimResult) -> Dict[str, Any]: ...

def format_report(m: Dict[str, Any]) -> str: ...
