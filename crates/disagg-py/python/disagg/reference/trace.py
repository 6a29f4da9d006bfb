"""The reference's ``trace`` module: writing a run's Chrome trace."""

from __future__ import annotations

import json
import os
from typing import Union

from .. import _core


def write_trace(trace: dict, path: Union[str, "os.PathLike[str]"]) -> None:
    """Write a run's trace dict (``SimResult.trace``, with ``SimConfig(trace=True)``) as JSON
    (whole or not at all; a regular file, never a FIFO or a device)."""
    _core.write_text(path, json.dumps(trace), "path")
