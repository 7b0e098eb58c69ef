"""The CPU's checks: which meter reads (RAPL or the labelled estimate, and why), RAPL's
update interval and wraparound range, idle power, repeat CV, zeros vs random where RAPL reads."""

from __future__ import annotations

import math
import time

import numpy as np

from joulebench.check.report import FAIL, PASS, SKIP, WARN, CheckReport, Row, new_check_id
from joulebench.check.rows import (
    CheckSettings,
    grade,
    idle_rows,
    input_rows,
    repeat_rows,
    run_guarded,
)
from joulebench.core.protocol import ProtocolSettings
from joulebench.core.provenance import utc_now
from joulebench.core.targets import CpuTarget


def check_cpu(settings: CheckSettings | None = None, progress=None, **meter_kw) -> CheckReport:
    """Which CPU meter reads (RAPL or the labelled estimate), how it updates, idle, repeat CV."""
    from joulebench.core.backends import select_meter
    from joulebench.core.meters.contention import ContentionGuard

    settings = settings or CheckSettings()
    progress = progress or (lambda message: None)
    started, t0 = utc_now(), time.monotonic()
    meter, reasons = select_meter("cpu", **meter_kw)
    rows = [_cpu_meter_row(meter, reasons)]
    if meter.name == "rapl":
        rows += rapl_rows(meter)
    with ContentionGuard(meter) as guarded:
        progress(f"idle power ({settings.idle_s:g} s)")
        idle_part, idle_w = idle_rows(guarded, settings.idle_s, time.sleep)
        rows += idle_part
        target = CpuTarget()
        progress("repeat CV of the protocol (standard load)")
        rows += run_guarded("repeat", "repeat CV", repeat_rows, target, guarded, settings, idle_w)
        if meter.is_estimate:
            rows.append(
                Row(
                    "input",
                    "zeros vs random",
                    SKIP,
                    detail="the estimate models power from CPU time; it cannot see the data",
                )
            )
        else:
            progress("zeros vs random inputs")
            rows += run_guarded(
                "input", "zeros vs random", input_rows, target, guarded, settings, idle_w
            )
        info = guarded.describe()
    info["meter_reasons"] = reasons
    return CheckReport(
        device="cpu",
        rows=rows,
        meter=info,
        sensor=None,
        protocol={"sensor_refresh_s": None, "min_window_s": ProtocolSettings().min_repeat_s},
        check_id=new_check_id("cpu"),
        start_time_utc=started,
        duration_s=time.monotonic() - t0,
    )


def _cpu_meter_row(meter, reasons: list[str]) -> Row:
    if meter.is_estimate:
        why = "; ".join(reasons) or "forced"
        return Row(
            "environment",
            "energy source",
            WARN,
            meter.name,
            target="rapl",
            detail=f"ESTIMATE: nothing is measured, every row is labelled an estimate. {why}",
        )
    return Row("environment", "energy source", PASS, meter.name, detail=meter.describe()["zones"])


def rapl_rows(meter, probe_s: float = 0.3) -> list[Row]:
    """How often the package counter moves, and how long until it wraps at this power."""
    from joulebench.core.meters.rapl import wrapped_delta_uj

    zone = next(z for z in meter.zones if z.kind == "package")
    path = zone.path / "energy_uj"
    start = time.monotonic()
    values, stamps = [], []
    while time.monotonic() - start < probe_s:
        values.append(int(meter.read(path)))
        stamps.append(time.monotonic())
    changes = [stamps[i] for i in range(1, len(values)) if values[i] != values[i - 1]]
    update_s = float(np.median(np.diff(changes))) if len(changes) > 2 else math.nan
    moved_uj = sum(
        wrapped_delta_uj(a, b, zone.max_energy_range_uj)
        for a, b in zip(values[:-1], values[1:], strict=True)
    )
    power_w = moved_uj / 1e6 / max(stamps[-1] - stamps[0], 1e-9)
    wrap_s = zone.max_energy_range_uj / 1e6 / power_w if power_w > 0 else math.inf
    interval = meter.sampler.interval_s or math.inf
    return [
        Row(
            "rapl",
            "update interval",
            grade(update_s, 0.01, 0.1),
            update_s * 1e3 if math.isfinite(update_s) else None,
            "ms",
            "<= 10 ms",
            f"{len(changes)} updates of {zone.key} in {probe_s:g} s",
        ),
        Row(
            "rapl",
            "wraparound",
            PASS if wrap_s > 10 * interval else FAIL,
            wrap_s if math.isfinite(wrap_s) else None,
            "s",
            f"> 10 x the {interval:g} s poll",
            f"max_energy_range {zone.max_energy_range_uj / 1e6:.0f} J at {power_w:.1f} W",
        ),
    ]
