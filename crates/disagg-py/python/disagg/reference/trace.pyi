import os
from typing import Union

def write_trace(trace: dict, path: Union[str, os.PathLike[str]]) -> None: ...
