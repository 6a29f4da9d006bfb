"""What every module of the drop-in shares: its error."""

from __future__ import annotations

from .._core import ConfigError


def _error(field_name: str, message: str) -> ConfigError:
    e = ConfigError(f"{field_name}: {message}")
    e.field = field_name
    return e
