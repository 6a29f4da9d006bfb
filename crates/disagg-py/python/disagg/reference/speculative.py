"""The reference's ``speculative`` module: the speculative-decoding record."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Speculative:
    draft: str = "mtp"
    gamma: int = 3
    alpha: float = 0.7
    seed: int = 0
