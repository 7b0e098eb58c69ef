"""A GPU's checks, in order, on a *target* (core.targets: a torch GPU on real time,
the simulator's on simulated time; the same code runs on both):

- environment: its settings and state, as its backend reads them (check.environment);
- idle: mean power over `idle_s` and its stability (spread of 1 s means);
- sensor: a square-wave load (busy/idle stretches of known length) read as fast as the
  library answers, fitted as SC24 does (check.sensor_fit): refresh period and averaging
  window, beside the published values for the GPU's generation;
- counter vs trace on a steady load (target <= 3 %); repeat CV of the protocol on a standard
  load (target <= 1 %); energy per matmul on zeros vs random inputs; optionally Zeus's
  ZeusMonitor on the same steady window (if the `zeus` package is installed).
From the counter on, the meter uses the refresh period the sensor fit measured, as the
profile will. Further parts go in MEASURED_PARTS.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, replace

import numpy as np

from joulebench.check.environment import environment_rows
from joulebench.check.report import PASS, SKIP, WARN, CheckReport, Row, new_check_id
from joulebench.check.rows import (
    CheckSettings,
    grade,
    idle_rows,
    input_rows,
    rel,
    repeat_rows,
    run_guarded,
)
from joulebench.check.sensor_fit import SensorFit, fit_sensor
from joulebench.check.tail_fit import TailFit, fit_tail
from joulebench.check.thermal_fit import ThermalFit, fit_heat
from joulebench.core.heat import from_report as heat_from_report
from joulebench.core.meters.nvidia_sensors import DEFAULT_REFRESH_S, SensorSpec
from joulebench.core.meters.sampler import Sampler
from joulebench.core.protocol import ProtocolSettings
from joulebench.core.provenance import utc_now
from joulebench.core.tail import TailCalibration
from joulebench.core.tail import from_report as tail_from_report

COUNTER_TRACE_TARGET = 0.03
SENSOR_TOLERANCE = 0.10  # measured refresh/window vs the published value
ZEUS_TARGET = 0.05


def _fast_sampler(target, settings: CheckSettings, read_power, name: str) -> Sampler:
    """`read_power()` sampled every fast_interval_s on the target's clock and timer."""
    return Sampler(
        lambda: {"power_w": read_power()},
        settings.fast_interval_s,
        clock=target.clock,
        name=name,
        timer=target.timer,
    )


def square_wave(target, settings: CheckSettings, read_power) -> tuple[list, list, list]:
    """Busy/idle stretches of random known lengths while `read_power()` is sampled fast.

    Returns (times, watts, busy intervals), all on the target's clock.
    """
    rng = random.Random(settings.seed)
    sampler = _fast_sampler(target, settings, read_power, "joulebench-sampler-check")
    target.sleep(max(settings.square_half_s))  # start from idle
    sampler.start(0.0)
    busy = []
    end = target.clock() + settings.square_s
    try:
        while target.clock() < end:
            start = target.clock()
            target.busy(rng.uniform(*settings.square_half_s))
            busy.append((start, target.clock()))
            target.sleep(rng.uniform(*settings.square_half_s))
    finally:
        rows = sampler.stop()
    times = [r["t_s"] for r in rows if r.get("power_w") is not None]
    watts = [r["power_w"] for r in rows if r.get("power_w") is not None]
    return times, watts, busy


def tail_step(target, settings: CheckSettings, read_power) -> tuple[list, list, list, float]:
    """The standard load for tail_busy_s, stopped (synced), then idle for tail_idle_s while
    `read_power()` is sampled fast, tail_cycles times. Cycle k starts a whole number of
    seconds after the first plus (k + a random share) / tail_cycles of 0.2 s, so the stops
    fall at instants spread evenly over a refresh period or two (100 ms, 20 ms sensors)
    and each reading after a stop sees another stretch of the tail. Returns (times, watts,
    the stops, the load's power: the median reading over each load's second half)."""
    rng = random.Random(settings.seed + 1)
    cycles = settings.tail_cycles
    cycle_s = math.ceil(settings.tail_busy_s + settings.tail_idle_s + 0.2)
    sampler = _fast_sampler(target, settings, read_power, "joulebench-sampler-tail")
    stops, loads = [], []
    sampler.start(0.0)
    first = target.clock()
    try:
        for k in range(cycles):
            due = first + k * cycle_s + 0.2 * (k + rng.random()) / cycles
            target.sleep(max(due - target.clock(), 0.0))
            start = target.clock()
            target.busy(settings.tail_busy_s)
            target.sync()
            stops.append(target.clock())
            loads.append((start + settings.tail_busy_s / 2, stops[-1]))
            target.sleep(settings.tail_idle_s)
    finally:
        rows = sampler.stop()
    times = [r["t_s"] for r in rows if r.get("power_w") is not None]
    watts = [r["power_w"] for r in rows if r.get("power_w") is not None]
    t, w = np.asarray(times, dtype=float), np.asarray(watts, dtype=float)
    busy = [w[(t >= a) & (t <= b)] for a, b in loads]
    busy_w = float(np.median(np.concatenate(busy))) if busy and sum(map(len, busy)) else math.nan
    return times, watts, stops, busy_w


TAIL_ROWS = ("tail excess", "tail plateau", "tail decay")


def tail_rows(fit: TailFit | None, settings: CheckSettings) -> list[Row]:
    """The board's tail after the standard load: what the protocol takes out of its phase
    shifts (core.tail)."""
    if not settings.tail_cycles:
        return [Row("tail", name, SKIP, detail="not measured") for name in TAIL_ROWS]
    if fit is None:
        detail = "too few readings after the load stopped to fit"
        return [Row("tail", name, WARN, detail=detail) for name in TAIL_ROWS]
    wider = (
        ""
        if fit.preferred == fit.model
        else (f"; a {fit.preferred} shape fits better: its fast part is in the interval")
    )
    interval = (
        f" (95 %: {fit.share_low:.1%}-{fit.share_high:.1%}; a phase shift's excess "
        f"+-{fit.rel_uncertainty:.0%}{wider})"
        if math.isfinite(fit.share_low)
        else ""
    )
    return [
        Row("tail", TAIL_ROWS[0], PASS, fit.excess_w, "W",
            detail=f"{fit.share:.1%} of the load's {fit.load_dynamic_w:.0f} W above idle, "
            f"right after it stopped{interval}: the protocol takes it out of its phase shifts"),
        Row("tail", TAIL_ROWS[1], PASS, fit.hold_s, "s", detail="before the excess decays"),
        Row("tail", TAIL_ROWS[2], PASS, fit.tau_s, "s",
            detail=f"time constant of the decay (fit rms {fit.rms_w:.2f} W over "
            f"{fit.readings} readings)"),
    ]  # fmt: skip


def tail_from(fit: TailFit | None) -> dict | None:
    """The report's `protocol.tail` (what the profile's protocol reads, core.tail)."""
    return fit.as_dict() if fit is not None else None


def sensor_rows(fit: SensorFit | None, expected: SensorSpec | None) -> list[Row]:
    """Measured refresh and window beside the published values of the generation."""
    published = (
        f"published for {expected.generation} ({expected.example}): "
        f"{expected.refresh_s * 1e3:g} ms / {expected.window_s * 1e3:g} ms"
        if expected
        else "generation not in the published table"
    )
    if fit is None:
        return [
            Row(
                "sensor",
                "refresh period",
                WARN,
                None,
                "ms",
                detail="the reading changed too rarely to fit; the protocol assumes "
                f"{(expected.refresh_s if expected else DEFAULT_REFRESH_S) * 1e3:g} ms. "
                + published,
            )
        ]
    rows = []
    for name, measured, want in (
        ("refresh period", fit.refresh_s, expected.refresh_s if expected else None),
        ("averaging window", fit.window_s, expected.window_s if expected else None),
    ):
        off = rel(measured, want) if want else math.nan
        status = PASS if want is None or off <= SENSOR_TOLERANCE else WARN
        detail = published
        if want and off > SENSOR_TOLERANCE:
            detail += "; this GPU differs: the protocol uses the measured refresh period"
        if name == "averaging window" and math.isfinite(fit.window_low_s):
            stands = "; the published stands" if fit.window_source == "published" else ""
            detail += (f"; the square wave allows {fit.window_low_s * 1e3:.1f}-"
                       f"{fit.window_high_s * 1e3:.1f} ms (95 %){stands}")  # fmt: skip
        rows.append(
            Row(
                "sensor",
                name,
                status,
                measured * 1e3,
                "ms",
                f"published +-{SENSOR_TOLERANCE:.0%}" if want else "",
                detail,
            )
        )
    coverage = min(1.0, fit.window_s / fit.refresh_s)
    rows.append(
        Row(
            "sensor",
            "time seen",
            PASS,  # a property of the GPU, not a fault: the protocol is built for it
            coverage,
            "",
            "",
            f"the reading sees {coverage:.0%} of the time (rise time {fit.rise_s * 1e3:.1f} ms, "
            f"fit rms {fit.rms_w:.2f} W over {fit.refreshes} refreshes); "
            + (
                "short windows and periodic loads are misread: the protocol shifts phase "
                "inside long windows"
                if coverage < 0.99
                else "nothing is missed"
            ),
        )  # fmt: skip
    )
    return rows


def counter_rows(target, meter, settings: CheckSettings, idle_w: float) -> list[Row]:
    """Energy counter vs the integrated power trace over a steady load."""
    seconds = settings.steady_s
    if not meter.has_energy_counter:
        return [
            Row(
                "counter",
                "counter vs trace",
                SKIP,
                detail="no energy counter: the energy is the integrated trace",
            )
        ]
    target.sync()
    meter.begin()
    target.busy(seconds)
    reading = meter.end()
    off = rel(reading.energy_trace_j, reading.energy_j)
    return [
        Row(
            "counter",
            "counter vs trace",
            grade(off, COUNTER_TRACE_TARGET, 0.10),
            off,
            "",
            f"<= {COUNTER_TRACE_TARGET:.0%}",
            f"{seconds:g} s steady load: counter {reading.energy_j:.1f} J, trace "
            f"{reading.energy_trace_j:.1f} J",
        )
    ]


HEAT_ROWS = ("thermal time constant", "degrees per watt", "leakage slope", "idle temperature")


def heat_rows(target, meter, settings: CheckSettings, idle_w: float) -> list[Row]:
    """The board's heat (check.thermal_fit): idle for heat_idle_s (the idle temperature),
    then the standard load for heat_s while power and temperature are sampled."""
    if not settings.heat_s > 0:
        return [Row("heat", name, SKIP, detail="not measured (--quick)") for name in HEAT_ROWS]
    meter.begin()
    target.sleep(settings.heat_idle_s)
    idle = meter.end()
    idle_c = float((idle.end_state or {}).get("temperature_c", math.nan))
    idle_power_w = idle.energy_j / idle.duration_s if idle.duration_s > 0 else idle_w
    target.sync()
    meter.begin()
    target.busy(settings.heat_s)
    trace = meter.end().trace
    fit = None
    if trace is not None and "temperature_c" in trace:
        fit = fit_heat(trace["t_s"], trace["power_w"], trace["temperature_c"], idle_power_w, idle_c)
    return heat_fit_rows(fit, settings.heat_s)


def heat_fit_rows(fit: ThermalFit | None, heat_s: float) -> list[Row]:
    """The fit's rows: what the protocol needs to state energy at the sustained state."""
    if fit is None:
        detail = f"the die's temperature barely moved in {heat_s:g} s, or was not read"
        return [Row("heat", name, SKIP, detail=detail) for name in HEAT_ROWS]
    short = bool(fit.tau_s * 3 > heat_s)
    note = f"; step of {heat_s:g} s < 3 time constants: a longer heat_s fits better"
    note = note if short else ""
    return [
        Row("heat", HEAT_ROWS[0], WARN if short else PASS, fit.tau_s, "s",
            detail=f"die {fit.idle_c:.0f} C idle -> {fit.sustained_c:.1f} C sustained{note}"),
        Row("heat", HEAT_ROWS[1], PASS, fit.c_per_w, "C/W", detail="die above ambient"),
        Row("heat", HEAT_ROWS[2], PASS, fit.leakage_per_c * 100, "%/C",
            detail="power against die temperature at a fixed load"),
        Row("heat", HEAT_ROWS[3], PASS, fit.idle_c, "C",
            detail="the die at idle: with the idle power, the ambient the profile assumes"),
    ]  # fmt: skip


def heat_from(rows: list[Row]) -> dict | None:
    """The report's `protocol.heat` (what the profile's protocol reads), from the rows."""
    values = {r.name: r.value for r in rows if r.group == "heat" and r.status != SKIP}
    if not all(isinstance(values.get(name), float) for name in HEAT_ROWS):
        return None
    return {
        "tau_s": values[HEAT_ROWS[0]],
        "c_per_w": values[HEAT_ROWS[1]],
        "leakage_per_c": values[HEAT_ROWS[2]] / 100.0,
        "idle_temperature_c": values[HEAT_ROWS[3]],
    }


def zeus_rows(target, meter, settings: CheckSettings, idle_w: float) -> list[Row]:
    """The same steady window through Zeus's ZeusMonitor, if zeus is installed."""
    seconds = settings.steady_s
    try:
        from zeus.monitor import ZeusMonitor
    except ImportError:
        return [Row("cross-check", "Zeus", SKIP, detail="zeus is not installed (pip install zeus)")]
    index = getattr(target, "cuda_index", None)
    if index is None:
        return [Row("cross-check", "Zeus", SKIP, detail="not a CUDA device (simulated)")]
    monitor = ZeusMonitor(gpu_indices=[index])
    target.sync()
    meter.begin()
    monitor.begin_window("joulebench-check")
    target.busy(seconds)
    measurement = monitor.end_window("joulebench-check")
    reading = meter.end()
    zeus_j = float(measurement.gpu_energy[index])
    off = rel(zeus_j, reading.energy_j)
    return [
        Row(
            "cross-check",
            "Zeus",
            grade(off, ZEUS_TARGET, ZEUS_TARGET),
            off,
            "",
            f"<= {ZEUS_TARGET:.0%}",
            f"ZeusMonitor {zeus_j:.1f} J vs joulebench {reading.energy_j:.1f} J",
        )
    ]


# What runs once the sensor is fitted, in order: (group, row name, progress line, the part).
# A part takes (target, meter, settings, idle power in W) and returns its rows.
MEASURED_PARTS = (
    ("heat", "thermal time constant", "heat: idle, then a load step", heat_rows),
    ("counter", "counter vs trace", "counter vs trace ({steady_s:g} s)", counter_rows),
    ("repeat", "repeat CV", "repeat CV of the protocol (standard load)", repeat_rows),
    ("input", "zeros vs random", "zeros vs random inputs", input_rows),
    ("cross-check", "Zeus", "", zeus_rows),
)


def protocol_from(meter, fitted: bool) -> dict:
    """What a profile with the default protocol will use on this device (the report's)."""
    default = ProtocolSettings()
    refresh_s = meter.refresh_s
    min_window_s = default.min_repeat_s
    if refresh_s:
        min_window_s = max(min_window_s, default.min_window_refreshes * refresh_s)
    return {
        "sensor_refresh_s": refresh_s,
        "refresh_source": "check" if fitted else meter.describe().get("sensor_refresh_source"),
        "min_window_s": min_window_s,
        "phase_shifts": default.phase_shifts,
    }


def sensor_and_tail(target, settings: CheckSettings, meter, expected, progress):
    """(sensor fit, tail fit). The tail first, read with the published averaging window: a
    board above idle after each stretch of the square wave misleads a two-level fit (a 25 ms
    window read as 6 ms); then the square wave fitted with the tail's shape beside the
    levels; then the tail again with the window the fit measured."""
    tail_data = None
    if settings.tail_cycles:
        progress(f"tail: load, stop and idle, {settings.tail_cycles} times")
        tail_data = tail_step(target, settings, meter.read_power_w)
    window_s = expected.window_s if expected else DEFAULT_REFRESH_S / 4
    tail = _fit_tail(tail_data, settings, window_s, 0.0, None)
    progress(f"sensor: square-wave load ({settings.square_s:g} s)")
    times, watts, busy = square_wave(target, settings, meter.read_power_w)
    fit = fit_sensor(times, watts, busy, calibration(tail), expected and expected.window_s)
    if fit is not None:
        tail = _fit_tail(tail_data, settings, fit.window_s, fit.lag_s, fit.rise_s, fit) or tail
    return fit, tail


def calibration(fit: TailFit | None) -> TailCalibration | None:
    """The fitted tail as the protocol takes it (None without one, or with none)."""
    return (
        tail_from_report({"protocol": {"tail": tail_from(fit)}}) if fit and fit.excess_w else None
    )


def _fit_tail(data, settings: CheckSettings, window_s, lag_s, rise_s, sensor=None):
    """The tail step's fit; with the sensor fit (`sensor`), over its intervals too."""
    if data is None:
        return None
    times, watts, stops, busy_w = data
    ranges = {}
    if sensor is not None:
        ranges = {
            "window_range_s": (sensor.window_low_s, sensor.window_high_s),
            "rise_range_s": (sensor.rise_low_s, sensor.rise_high_s),
        }
    return fit_tail(
        times,
        watts,
        stops,
        busy_w,
        window_s=window_s,
        lag_s=lag_s,
        span_s=settings.tail_idle_s,
        rise_s=rise_s,
        **{k: v for k, v in ranges.items() if all(map(math.isfinite, v))},
    )


def check_gpu(
    target, settings: CheckSettings | None = None, progress=None, *, state
) -> CheckReport:
    """Every GPU check on `target`; a failing part becomes a row, never a crash. `state(meter)`
    is the device's settings and state (its backend's DeviceState)."""
    settings = settings or CheckSettings()
    progress = progress or (lambda message: None)
    started, t0 = utc_now(), time.monotonic()
    rows: list[Row] = []
    with target.meter() as meter:
        expected = getattr(meter, "sensor", None)  # the published sensor of its generation
        rows += environment_rows(meter, state(meter))
        progress(f"idle power ({settings.idle_s:g} s)")
        idle_part, idle_w = idle_rows(meter, settings.idle_s, target.sleep)
        rows += idle_part
        fit, tail = sensor_and_tail(target, settings, meter, expected, progress)
        rows += sensor_rows(fit, expected) + tail_rows(tail, settings)
        settings = replace(settings, tail=calibration(tail))
    # from here on the protocol uses what was measured, as the profile will
    with target.meter(refresh_s=fit.refresh_s if fit is not None else None) as meter:
        for group, name, line, part in MEASURED_PARTS:
            if line:
                progress(line.format(steady_s=settings.steady_s))
            rows += run_guarded(group, name, part, target, meter, settings, idle_w)
            if group == "heat":  # from here on the protocol states rows as the profile will
                heat, idle_c = heat_from_report({"protocol": {"heat": heat_from(rows)}})
                settings = replace(settings, heat=heat, idle_temperature_c=idle_c)
        info = meter.describe()
        protocol = protocol_from(meter, fit is not None)
        protocol["heat"] = heat_from(rows)
        protocol["tail"] = tail_from(tail)
    sensor = {
        "fit": fit.as_dict() if fit else None,
        "expected": asdict(expected) if expected else None,
    }
    return CheckReport(
        device=target.device,
        rows=rows,
        meter=info,
        sensor=sensor,
        protocol=protocol,
        check_id=new_check_id(target.device),
        start_time_utc=started,
        duration_s=time.monotonic() - t0,
    )
