"""What joulebench.measure and joulebench.profile return: a profile row as a typed record."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

import pandas as pd

from joulebench.flags import split_flags
from joulebench.table_io import conform
from joulebench.tables import PROFILE_COLUMNS


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _text(value: Any) -> str:
    return "" if _missing(value) else str(value)


def _float(value: Any) -> float:
    return math.nan if _missing(value) else float(value)


def _int(value: Any) -> int | None:
    return None if _missing(value) else int(value)


def _bool(value: Any) -> bool | None:
    return None if _missing(value) else bool(value)


# a field's annotation -> how a row's value becomes it
_TYPED = {
    "str": _text,
    "float": _float,
    "int | None": _int,
    "bool | None": _bool,
    "tuple[str, ...]": lambda v: tuple(split_flags(v)),
}


@dataclass(frozen=True)
class Measurement:
    """One configuration measured under the protocol. Every field is the profile column of
    the same name (tables.PROFILE, docs/columns.md); `row` holds all of the row's columns,
    provenance included (software, meter_detail, times), for `to_dict` and `to_frame`."""

    model: str  # the model's (or the measured callable's) name
    device_label: str
    torch_device: str
    device_name: str
    method: str  # empty for a callable (joulebench.measure)
    batch_size: int | None  # images per step
    status: str  # ok: joulebench.profile raises for any other
    energy_per_image_j: float
    energy_per_image_std_j: float
    energy_per_image_cv: float
    energy_per_image_ci95_low_j: float
    energy_per_image_ci95_high_j: float
    dynamic_energy_per_image_j: float  # above the idle power read before measuring
    dynamic_energy_per_image_cv: float
    dynamic_energy_per_image_ci95_low_j: float
    dynamic_energy_per_image_ci95_high_j: float
    ci_covers: str  # measurement, or timing (an estimate: its power model's error is not in it)
    throughput_img_s: float
    latency_ms_mean: float
    power_mean_w: float
    idle_power_w: float
    meter: str
    is_estimate: bool | None
    is_simulated: bool | None
    flags: tuple[str, ...]
    repeats: int | None
    measured_s: float
    row: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_row(cls, row: dict) -> Measurement:
        """The record of a profile row (a dict of its columns; missing ones stay empty)."""
        typed = {f.name: _TYPED[f.type](row.get(f.name)) for f in fields(cls) if f.name != "row"}
        return cls(**typed, row={c: row.get(c) for c in PROFILE_COLUMNS})

    def to_dict(self) -> dict:
        """Every profile column, in the table's order (flags as the row's `;`-joined text)."""
        return dict(self.row)

    def to_frame(self) -> pd.DataFrame:
        """A one-row frame with the profile table's columns and dtypes (concatenates with
        results/profile.parquet)."""
        return conform(pd.DataFrame([self.to_dict()]), PROFILE_COLUMNS)
