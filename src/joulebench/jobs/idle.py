"""The idle stage: a device's idle power baseline, which dynamic energy subtracts.

One row per device (tables.IDLE), read on the same meter, with the device in the same state
(CUDA context made, no model loaded, nothing else running) as the profile's windows
(docs/profiling.md).
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import pandas as pd

from joulebench.core.protocol import IdleResult, measure_idle
from joulebench.core.provenance import utc_now
from joulebench.flags import join_flags
from joulebench.study import IDLE_DURATION_S
from joulebench.table_io import write_table
from joulebench.tables import IDLE_COLUMNS

if TYPE_CHECKING:
    from joulebench.core.backends import BoundDevice


def idle_row(
    device: BoundDevice,
    idle: IdleResult,
    reasons: list[str],
    started: str,
    gpu_uuid: str | None = None,
) -> dict:
    """The idle table's row (tables.IDLE) for one idle measurement; `gpu_uuid`: the GPU its
    meter read (a pool's idle job reads the GPU it leased)."""
    return {
        "device_label": device.label,
        "torch_device": device.device,
        "device_name": device.name(),
        "gpu_uuid": str(gpu_uuid or ""),
        "meter": idle.meter,
        "is_estimate": idle.is_estimate,
        "meter_reasons": "; ".join(reasons),
        "idle_power_w": idle.power_w,
        "duration_s": idle.duration_s,
        "energy_j": idle.energy_j,
        "flags": join_flags(idle.flags),
        "host": socket.gethostname(),
        "start_time_utc": started,
    }


def run_idle(
    device_label: str,
    device: str,
    output,
    *,
    duration_s: float = IDLE_DURATION_S,
    meter: str | None = None,
    tdp_w: float | None = None,
) -> dict:
    """`joulebench idle`: measure the baseline and write it; returns the row."""
    from joulebench.core.backends import bound_device
    from joulebench.jobs.concurrency import NodeMeasurements
    from joulebench.schedule.devices import require_measurable

    if not duration_s > 0:
        raise ValueError(f"idle: duration_s must be > 0, got {duration_s}")
    require_measurable(device_label, device)
    bound = bound_device(device, device_label, prefer=meter)
    bound.open_context()  # as during profiling (CUDA context)
    started = utc_now()
    options = {"tdp_w": tdp_w} if tdp_w else {}
    chosen, reasons = bound.meter(prefer=meter, **options)
    with NodeMeasurements(device_label), chosen:  # counted by overlapping measurements
        idle = measure_idle(chosen, duration_s)
        uuid = chosen.describe().get("uuid")
    row = idle_row(bound, idle, reasons, started, uuid)
    write_table(pd.DataFrame([row]), output, IDLE_COLUMNS)
    return row


def idle_line(row: dict) -> str:
    """What `joulebench idle` prints: the baseline, labelled when it is an estimate."""
    label = "estimated " if row["is_estimate"] else ""
    return f"{row['device_label']}: {label}idle power {row['idle_power_w']:.2f} W ({row['meter']})"
