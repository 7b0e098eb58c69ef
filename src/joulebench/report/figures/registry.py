"""The figures, registered by name: each figure module says how it is drawn from the study's
tables (`@figure(name, needs=...)`), and `render.render_all` draws every one of FIGURE_NAMES.

`needs` names the tables a figure reads; it is handed only those (the others are None), so a
figure that reads a table it did not declare fails its tests rather than quietly depending on
it. The names themselves are declared without matplotlib in `report.figure_names`, which the
Snakefile reads; registering any other name is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from joulebench.report.figure_names import FIGURE_NAMES

TABLES = ("summary", "scores", "fits", "trace", "best_configs", "predicted")


@dataclass(frozen=True)
class Inputs:
    """What every figure is drawn from: the study's tables (the summary with the scores'
    flags), and the choices render_all makes once for all of them."""

    summary: pd.DataFrame | None
    scores: pd.DataFrame | None
    fits: dict[str, pd.DataFrame] | None
    trace: pd.DataFrame | None
    best_configs: pd.DataFrame | None  # None: computed from the summary by the same rules
    group: dict  # the score group of figures (1)-(2); its device_label picks every device
    trace_config: dict  # the configuration of figure (5)
    idle_power_w: float | None  # of the configuration traced
    trace_estimated: bool  # whether that configuration's meter estimates
    trace_simulated: bool  # whether it ran on a simulated GPU
    max_energy_cv: float | None  # the spread check still to apply (None: the scores' flags)
    why: str  # why rows have no comparable energy, counted: the reason a figure is empty
    secondary_unit: str | None
    predicted: pd.DataFrame | None = None  # joulebench predict's table (None: none given)

    @property
    def device_label(self) -> str | None:
        return self.group.get("device_label")

    def only(self, needs: Sequence[str]) -> Inputs:
        """These inputs with every table not in `needs` taken away."""
        return replace(self, **{t: None for t in TABLES if t not in needs})


@dataclass(frozen=True)
class FigureSpec:
    name: str
    needs: tuple[str, ...]
    draw: Callable[[Inputs, Path], list[Path]]


REGISTRY: dict[str, FigureSpec] = {}


def figure(name: str, needs: Sequence[str]):
    """Register `draw(inputs, stem) -> [pdf, png]` as the figure `name`, which reads the
    tables in `needs` (of TABLES)."""
    if name not in FIGURE_NAMES:
        raise ValueError(f"figure {name!r} is not declared in report.figure_names")
    unknown = sorted(set(needs) - set(TABLES))
    if unknown:
        raise ValueError(f"figure {name!r} needs unknown tables {unknown} (known: {TABLES})")

    def register(draw):
        old = REGISTRY.get(name)
        where = (draw.__module__, draw.__qualname__)
        if old is not None and (old.draw.__module__, old.draw.__qualname__) != where:
            raise ValueError(f"figure {name!r} is registered twice")  # (a reload is not)
        REGISTRY[name] = FigureSpec(name, tuple(needs), draw)
        return draw

    return register
