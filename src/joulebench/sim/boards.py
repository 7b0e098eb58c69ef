"""Boards of one product that differ, as real ones do (issue 41): each reads its true power
through its own sensor gain and offset, and draws its own power for the same work.

The SC'24 characterisation of NVIDIA's sensors (Yang, Adamek, Armour, arXiv 2312.02741:
70+ GPUs, 12 generations) found each board's readings linear in the true power but with a
gain and an offset that vary between boards of one model, about +-5 % at steady state; the
silicon varies too. `drawn` draws a board's from its UUID, from ranges at least that wide
(SPREAD, or `JOULEBENCH_SIM_BOARD_SPREAD`): a pool's boards (`sim:h100:N`) each get theirs,
a lone `sim:h100` is the nominal board. Nothing in joulebench's measuring code knows these
values: the board factors (analysis.boards) must find them from readings.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import numpy as np

ENV_SPREAD = "JOULEBENCH_SIM_BOARD_SPREAD"


@dataclass(frozen=True)
class BoardVariation:
    """How one board departs from the nominal one: it reads `gain` x true power +
    `offset_w`, draws `silicon` x the nominal dynamic power for the same work, and idles at
    `idle_scale` x the nominal idle power."""

    gain: float = 1.0
    offset_w: float = 0.0
    silicon: float = 1.0
    idle_scale: float = 1.0

    def __post_init__(self):
        if not (self.gain > 0 and self.silicon > 0 and self.idle_scale > 0):
            raise ValueError(f"need gain, silicon and idle_scale > 0, got {self}")


NOMINAL = BoardVariation()


@dataclass(frozen=True)
class Spread:
    """Half-widths of the uniform ranges a board's variation is drawn from: gain and
    silicon relative, the offset as a share of the board's power limit, idle relative."""

    gain: float = 0.05
    offset_of_limit: float = 0.02
    silicon: float = 0.05
    idle: float = 0.08

    @classmethod
    def parse(cls, text: str) -> Spread:
        """`gain,offset,silicon,idle` (e.g. `0.05,0.02,0.05,0.08`); `0` is none."""
        values = [float(v) for v in text.split(",")]
        if values == [0.0]:
            return cls(0.0, 0.0, 0.0, 0.0)
        if len(values) != 4 or not all(0 <= v < 0.5 for v in values):
            raise ValueError(f"{ENV_SPREAD} must be 0 or four numbers in [0, 0.5), got {text!r}")
        return cls(*values)


def spread_from_env() -> Spread:
    text = os.environ.get(ENV_SPREAD, "").strip()
    return Spread.parse(text) if text else Spread()


def drawn(uuid: str, limit_w: float, spread: Spread | None = None) -> BoardVariation:
    """A board's variation, drawn once from its UUID (the same board, the same draw)."""
    spread = spread if spread is not None else spread_from_env()
    seed = int(hashlib.sha256(uuid.encode()).hexdigest()[:16], 16)
    u = np.random.default_rng(seed).uniform(-1.0, 1.0, size=4)
    return BoardVariation(
        gain=float(1.0 + spread.gain * u[0]),
        offset_w=float(spread.offset_of_limit * limit_w * u[1]),
        silicon=float(1.0 + spread.silicon * u[2]),
        idle_scale=float(1.0 + spread.idle * u[3]),
    )
