"""`joulebench check`: can this machine's energy numbers be trusted? One run before a study.

Each check is a row with a status (pass / warn / fail / skip), a value, its target and a
sentence saying what it means. The worst status of all rows is the verdict. The report goes
to results/check/<device>.json (layout: REPORT_SCHEMA, docs/measurement.md), and profile rows
record the id and verdict of the latest report of their device; its measured sensor refresh
period sizes the protocol's windows (joulebench.measure.protocol).

GPU (NVML), in order:
- environment: driver and NVML versions, persistence mode, power limit (current vs default),
  application clocks, ECC, MIG, other processes on the GPU, temperature, energy counter and
  power-field support;
- idle: mean power over `idle_s` and its stability (spread of 1 s means);
- sensor: a square-wave load (busy/idle stretches of known length) read as fast as NVML
  answers, fitted as SC24 does (joulebench.measure.sensor_fit): refresh period and averaging window,
  beside the published values for the GPU's generation;
- counter vs trace on a steady load (target <= 3 %); repeat CV of the protocol on a standard
  load (target <= 1 %); energy per matmul on zeros vs random inputs; optionally Zeus's
  ZeusMonitor on the same steady window (if the `zeus` package is installed).
CPU: which meter (RAPL or the labelled estimate, and why), RAPL's update interval and
wraparound range, idle power, repeat CV, zeros vs random where RAPL reads.

The GPU is driven through a *target* (joulebench.measure.check_targets.TorchGpuTarget on a real GPU,
joulebench.measure.sim.rig.SimCheckTarget in the simulator); the same code runs on both. The report
and its layout are joulebench.measure.check_report.
"""

from __future__ import annotations

import math
import random
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from joulebench.measure.check_report import (
    FAIL,
    PASS,
    SKIP,
    WARN,
    CheckReport,
    Row,
    new_check_id,
)
from joulebench.measure.check_targets import CpuTarget
from joulebench.measure.meters.nvidia_sensors import DEFAULT_REFRESH_S, SensorSpec
from joulebench.measure.meters.sampler import Sampler
from joulebench.measure.protocol import ProtocolSettings, measure, measure_idle
from joulebench.measure.provenance import utc_now
from joulebench.measure.sensor_fit import SensorFit, fit_sensor
from joulebench.tables import INPUT_KINDS

COUNTER_TRACE_TARGET = 0.03
REPEAT_CV_TARGET = 0.01
SENSOR_TOLERANCE = 0.10  # measured refresh/window vs the published value
IDLE_STABILITY_TARGET = 0.05  # (max - min) / mean of 1 s idle means
ZEUS_TARGET = 0.05


@dataclass
class CheckSettings:
    """How long each part runs. `quick()` is for a first look (and tests), not for a study."""

    idle_s: float = 10.0
    square_s: float = 10.0  # total length of the square-wave load
    square_half_s: tuple[float, float] = (0.3, 0.45)  # busy/idle stretches drawn from this
    fast_interval_s: float = 0.001  # power reads during the square wave ("as fast as NVML")
    steady_s: float = 5.0  # counter vs trace, Zeus
    protocol: ProtocolSettings = field(default_factory=ProtocolSettings)  # the repeat CV run
    input_protocol: ProtocolSettings = field(
        default_factory=lambda: ProtocolSettings(repeats=2, warmup_min_s=1.0)
    )
    seed: int = 0

    @classmethod
    def quick(cls) -> CheckSettings:
        fast = {"warmup_min_s": 0.3, "warmup_chunk_s": 0.1, "min_repeat_s": 1.0}
        return cls(
            idle_s=2.0,
            square_s=4.0,
            steady_s=2.0,
            protocol=ProtocolSettings(repeats=3, pause_s=(0.05, 0.2), **fast),
            input_protocol=ProtocolSettings(repeats=2, pause_s=(0.05, 0.2), **fast),
        )


# ------------------------------------------------------------------ rows helpers


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b) if b else math.nan


def _grade(value: float, good: float, bad: float) -> str:
    """pass up to `good`, warn up to `bad`, fail beyond (NaN: warn, nothing to judge)."""
    if not math.isfinite(value):
        return WARN
    return PASS if value <= good else WARN if value <= bad else FAIL


# ------------------------------------------------------------------ GPU: environment


def _nv(nvml, fn_name: str, *args):
    """An NVML call that may not exist or not be supported: its value or None."""
    fn = getattr(nvml, fn_name, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except nvml.NVMLError:
        return None


def environment_rows(meter) -> list[Row]:
    """Settings and state of the GPU that change (or invalidate) what is measured."""
    nv, h = meter.nvml, meter.handle
    info = meter.describe()
    rows = [
        Row(
            "environment",
            "driver",
            PASS,
            info.get("driver_version"),
            detail=f"NVML {info.get('nvml_version')}; {info.get('device_name')}",
        )
    ]
    persistence = _nv(nv, "nvmlDeviceGetPersistenceMode", h)
    if persistence is None:
        rows.append(Row("environment", "persistence mode", SKIP, detail="not reported"))
    else:
        on = persistence == getattr(nv, "NVML_FEATURE_ENABLED", 1)
        rows.append(
            Row(
                "environment",
                "persistence mode",
                PASS if on else WARN,
                "on" if on else "off",
                target="on",
                detail=""
                if on
                else "off: the driver may unload between jobs; idle power and "
                "clocks at start differ (nvidia-smi -pm 1)",
            )
        )
    limit = _nv(nv, "nvmlDeviceGetPowerManagementLimit", h) or _nv(
        nv, "nvmlDeviceGetEnforcedPowerLimit", h
    )
    default = _nv(nv, "nvmlDeviceGetPowerManagementDefaultLimit", h)
    if limit is None:
        rows.append(Row("environment", "power limit", SKIP, detail="not reported"))
    else:
        lowered = default is not None and limit < 0.99 * default
        rows.append(
            Row(
                "environment",
                "power limit",
                WARN if lowered else PASS,
                limit / 1000.0,
                "W",
                f"default {default / 1000.0:g} W" if default else "",
                f"lowered from the default {default / 1000.0:g} W: the GPU throttles; energies "
                "hold for this limit only"
                if lowered
                else "",
            )
        )
    rows.append(_clock_row(nv, h))
    ecc = _nv(nv, "nvmlDeviceGetEccMode", h)
    rows.append(
        Row(
            "environment",
            "ECC",
            PASS if ecc is not None else SKIP,
            None if ecc is None else ("on" if ecc[0] else "off"),
            detail="recorded: ECC changes memory bandwidth and power" if ecc is not None else "",
        )
    )
    rows.append(_mig_row(nv, h))
    rows.append(_process_row(meter))
    temperature = _nv(nv, "nvmlDeviceGetTemperature", h, getattr(nv, "NVML_TEMPERATURE_GPU", 0))
    rows.append(
        Row(
            "environment",
            "temperature",
            SKIP if temperature is None else PASS if temperature < 80 else WARN,
            temperature,
            "C",
            "< 80 C at rest",
            "" if temperature is None or temperature < 80 else "hot at rest: check cooling",
        )
    )
    rows.append(
        Row(
            "environment",
            "energy counter",
            PASS if meter.has_energy_counter else WARN,
            bool(meter.has_energy_counter),
            target="supported",
            detail="nvmlDeviceGetTotalEnergyConsumption"
            if meter.has_energy_counter
            else "not supported (pre-Volta): energy is the integrated power trace "
            "(meter nvml:power-integration)",
        )
    )
    fields_ = sorted(meter.power_fields)
    rows.append(
        Row(
            "environment",
            "power fields",
            PASS if "power_w" in meter.power_fields else WARN,
            ",".join(fields_) or "none",
            target="power_w (instant)",
            detail=f"trace from {info.get('power_source')}",
        )
    )
    return rows


def _clock_row(nv, h) -> Row:
    sm = getattr(nv, "NVML_CLOCK_SM", 1)
    target = _nv(nv, "nvmlDeviceGetClock", h, sm, getattr(nv, "NVML_CLOCK_ID_APP_CLOCK_TARGET", 1))
    default = _nv(
        nv, "nvmlDeviceGetClock", h, sm, getattr(nv, "NVML_CLOCK_ID_APP_CLOCK_DEFAULT", 2)
    )
    if target is None or default is None:
        return Row("environment", "application clocks", SKIP, detail="not reported")
    changed = target != default
    return Row(
        "environment",
        "application clocks",
        WARN if changed else PASS,
        target,
        "MHz",
        f"default {default} MHz",
        "set away from the default: energies hold for these clocks only" if changed else "",
    )


def _mig_row(nv, h) -> Row:
    mode = _nv(nv, "nvmlDeviceGetMigMode", h)
    if mode is None:
        return Row("environment", "MIG", PASS, "not capable")
    on = mode[0] == getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1)
    return Row(
        "environment",
        "MIG",
        FAIL if on else PASS,
        "on" if on else "off",
        target="off",
        detail="MIG is on: NVML's power and energy are the whole GPU's, not a slice's"
        if on
        else "",
    )


def _process_row(meter) -> Row:
    flags = meter.current_flags()
    if "process-check-failed" in flags:
        return Row(
            "environment",
            "other processes",
            WARN,
            None,
            detail="the process list could not be read: another process would go unnoticed",
        )
    others = meter.other_pids
    return Row(
        "environment",
        "other processes",
        FAIL if others else PASS,
        len(others),
        target="0",
        detail=f"pids {others} also use this GPU: their work is in every number; measure "
        "when the GPU is yours alone"
        if others
        else "",
    )


# ------------------------------------------------------------------ GPU: measurements


def idle_rows(meter, seconds: float, sleep) -> tuple[list[Row], float]:
    """Idle power and its stability; returns (rows, idle power in W)."""
    idle = measure_idle(meter, seconds, sleep=sleep)
    rows = [
        Row(
            "idle",
            "idle power",
            PASS if not idle.is_estimate else WARN,
            idle.power_w,
            "W",
            detail=f"{seconds:g} s, {idle.meter}"
            + (" (ESTIMATED: modelled, not measured)" if idle.is_estimate else ""),
        )
    ]
    spread = _idle_spread(idle.trace)
    rows.append(
        Row(
            "idle",
            "idle stability",
            SKIP if not math.isfinite(spread) else _grade(spread, IDLE_STABILITY_TARGET, 0.15),
            spread,
            "",
            f"<= {IDLE_STABILITY_TARGET:.0%} between 1 s means",
            "no power trace" if not math.isfinite(spread) else "",
        )
    )
    return rows, idle.power_w


def _idle_spread(trace) -> float:
    """(max - min) / mean of the 1 s means of a trace's power; NaN without a trace."""
    if trace is None or len(trace) < 4 or trace["power_w"].isna().all():
        return math.nan
    seconds = np.floor(trace["t_s"].to_numpy(dtype=float))
    power = trace["power_w"].to_numpy(dtype=float)
    means = [np.nanmean(power[seconds == s]) for s in np.unique(seconds)]
    means = [m for m in means if math.isfinite(m)]
    if len(means) < 2:
        return math.nan
    return float((max(means) - min(means)) / np.mean(means))


def square_wave(target, settings: CheckSettings, read_power) -> tuple[list, list, list]:
    """Busy/idle stretches of random known lengths while `read_power()` is sampled fast.

    Returns (times, watts, busy intervals), all on the target's clock.
    """
    rng = random.Random(settings.seed)
    sampler = Sampler(
        lambda: {"power_w": read_power()},
        settings.fast_interval_s,
        clock=target.clock,
        name="joulebench-sampler-check",
        timer=target.timer,
    )
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


def instant_power_reader(meter):
    """A function reading the GPU's current power reading (W), as directly as NVML allows."""
    nv, h = meter.nvml, meter.handle
    field_id = getattr(nv, "NVML_FI_DEV_POWER_INSTANT", None)
    if "power_w" in meter.power_fields and field_id is not None:

        def read() -> float:
            value = nv.nvmlDeviceGetFieldValues(h, [field_id])[0]
            return value.value.uiVal / 1000.0 if value.nvmlReturn == nv.NVML_SUCCESS else math.nan

        return read
    return lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0


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
        off = _rel(measured, want) if want else math.nan
        status = PASS if want is None or off <= SENSOR_TOLERANCE else WARN
        detail = published
        if want and off > SENSOR_TOLERANCE:
            detail += "; this GPU differs: the protocol uses the measured refresh period"
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


def counter_rows(target, meter, seconds: float) -> list[Row]:
    """Energy counter vs the integrated power trace over a steady load."""
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
    off = _rel(reading.energy_trace_j, reading.energy_j)
    return [
        Row(
            "counter",
            "counter vs trace",
            _grade(off, COUNTER_TRACE_TARGET, 0.10),
            off,
            "",
            f"<= {COUNTER_TRACE_TARGET:.0%}",
            f"{seconds:g} s steady load: counter {reading.energy_j:.1f} J, trace "
            f"{reading.energy_trace_j:.1f} J",
        )
    ]


def _protocol_run(target, meter, settings: ProtocolSettings, idle_w: float, input_kind: str):
    return measure(
        target.step(input_kind),
        target.sync,
        meter,
        images_per_step=1,
        settings=settings,
        idle_power_w=idle_w,
        rng=random.Random(0),
        clock=target.clock,
        sleep=target.sleep,
    )


def repeat_rows(target, meter, settings: CheckSettings, idle_w: float) -> list[Row]:
    """The protocol's repeat CV on a standard load (a matmul per step)."""
    result = _protocol_run(target, meter, settings.protocol, idle_w, "random")
    s = result.summary
    cv = s["energy_per_image_cv"]
    window = float(result.repeats["duration_s"].mean())
    busy = "other-load" in s["flags"].split(";") or "other-process" in s["flags"].split(";")
    hint = "; other processes loaded the device: rerun when it is quiet" if busy else ""
    return [
        Row(
            "repeat",
            "repeat CV",
            _grade(cv, REPEAT_CV_TARGET, 0.03),
            cv,
            "",
            f"<= {REPEAT_CV_TARGET:.0%}",
            f"{s['repeats']} windows of {window:.1f} s, {s['energy_per_image_j'] * 1e3:.4g} mJ "
            f"per step, flags: {s['flags'] or 'none'}{hint}",
        )
    ]


def input_rows(target, meter, settings: CheckSettings, idle_w: float) -> list[Row]:
    """Energy per matmul on all-zero vs random inputs (GPUs spend less on zeros)."""
    per = {}
    for kind in INPUT_KINDS:
        result = _protocol_run(target, meter, settings.input_protocol, idle_w, kind)
        per[kind] = result.summary["energy_per_image_j"]
    ratio = per["zeros"] / per["random"] if per["random"] else math.nan
    return [
        Row(
            "input",
            "zeros vs random",
            PASS if math.isfinite(ratio) else WARN,
            ratio,
            "",
            "",
            f"zeros cost {abs(1 - ratio):.1%} {'less' if ratio < 1 else 'more'} energy per step "
            "than random data; profile rows use random inputs (column input_kind)",
        )
    ]


def zeus_rows(target, meter, seconds: float) -> list[Row]:
    """The same steady window through Zeus's ZeusMonitor, if zeus is installed."""
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
    off = _rel(zeus_j, reading.energy_j)
    return [
        Row(
            "cross-check",
            "Zeus",
            _grade(off, ZEUS_TARGET, ZEUS_TARGET),
            off,
            "",
            f"<= {ZEUS_TARGET:.0%}",
            f"ZeusMonitor {zeus_j:.1f} J vs joulebench {reading.energy_j:.1f} J",
        )
    ]


def check_gpu(target, settings: CheckSettings | None = None, progress=None) -> CheckReport:
    """Every GPU check on `target`; a failing part becomes a row, never a crash."""
    settings = settings or CheckSettings()
    progress = progress or (lambda message: None)
    started, t0 = utc_now(), time.monotonic()
    rows: list[Row] = []
    fit = None
    with target.meter() as meter:
        expected = meter.sensor
        rows += environment_rows(meter)
        progress(f"idle power ({settings.idle_s:g} s)")
        idle_part, idle_w = idle_rows(meter, settings.idle_s, target.sleep)
        rows += idle_part
        progress(f"sensor: square-wave load ({settings.square_s:g} s)")
        times, watts, busy = square_wave(target, settings, instant_power_reader(meter))
        fit = fit_sensor(times, watts, busy)
        rows += sensor_rows(fit, expected)
    # from here on the protocol uses what was measured, as the profile will
    refresh_s = fit.refresh_s if fit is not None else None
    with target.meter(refresh_s=refresh_s) as meter:
        progress(f"counter vs trace ({settings.steady_s:g} s)")
        rows += _guarded(
            "counter", "counter vs trace", counter_rows, target, meter, settings.steady_s
        )
        progress("repeat CV of the protocol (standard load)")
        rows += _guarded("repeat", "repeat CV", repeat_rows, target, meter, settings, idle_w)
        progress("zeros vs random inputs")
        rows += _guarded("input", "zeros vs random", input_rows, target, meter, settings, idle_w)
        rows += _guarded("cross-check", "Zeus", zeus_rows, target, meter, settings.steady_s)
        info = meter.describe()
        default = ProtocolSettings()  # what a profile with the default protocol will use
        protocol = {
            "sensor_refresh_s": meter.refresh_s,
            "refresh_source": "check" if fit is not None else info["sensor_refresh_source"],
            "min_window_s": max(
                default.min_repeat_s, default.min_window_refreshes * meter.refresh_s
            ),
            "phase_shifts": default.phase_shifts,
        }
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


def _guarded(group: str, name: str, fn, *args) -> list[Row]:
    """Run one check; an exception becomes a failed row with the reason."""
    try:
        return fn(*args)
    except Exception as exc:  # a check that cannot run is a finding, not a crash
        return [Row(group, name, FAIL, None, detail=f"{type(exc).__name__}: {exc}"[:300])]


# ------------------------------------------------------------------ CPU


def check_cpu(settings: CheckSettings | None = None, progress=None, **meter_kw) -> CheckReport:
    """Which CPU meter reads (RAPL or the labelled estimate), how it updates, idle, repeat CV."""
    from joulebench.measure.meters import select_meter
    from joulebench.measure.meters.contention import ContentionGuard

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
        rows += _guarded("repeat", "repeat CV", repeat_rows, target, guarded, settings, idle_w)
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
            rows += _guarded(
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
    from joulebench.measure.meters.rapl import wrapped_delta_uj

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
            _grade(update_s, 0.01, 0.1),
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


# ------------------------------------------------------------------ the command


def run_check(
    device: str = "cpu",
    *,
    quick: bool = False,
    idle_s: float | None = None,
    meter: str | None = None,
    tdp_w: float | None = None,
    output=None,
    progress=None,
) -> tuple[dict, Path]:
    """`joulebench check`: check `device` (cpu, cuda or cuda:N), write the report (default
    results/check/<device>.json); returns the report and where it went. A device that
    cannot be measured raises MeterUnavailable; a bad option, ConfigError."""
    from joulebench.measure.check_report import report_path, write_report
    from joulebench.study import ConfigError

    device = "cuda:0" if device == "cuda" else device
    if not re.fullmatch(r"cpu|cuda:\d+", device):
        raise ConfigError(f"check: --device must be cpu, cuda or cuda:N, not {device!r}")
    settings = CheckSettings.quick() if quick else CheckSettings()
    if idle_s is not None:
        if not 0 < idle_s <= 3600:
            raise ConfigError("check: --idle-s must be in (0, 3600]")
        settings.idle_s = idle_s
    if device == "cpu":
        options = {"tdp_w": tdp_w} if tdp_w else {}
        report = check_cpu(settings, progress, prefer=meter, **options)
    else:
        import torch

        from joulebench.measure.check_targets import TorchGpuTarget
        from joulebench.measure.meters import MeterUnavailable

        if not torch.cuda.is_available():
            raise MeterUnavailable("no-device", "torch sees no CUDA device")
        report = check_gpu(TorchGpuTarget(device), settings, progress)
    data = report.as_dict()
    return data, write_report(data, output or report_path(device))
