"""What the GPU and CPU checks share: how long each part runs, grading, and the idle,
repeat-CV and zeros-vs-random rows (the protocol on the device's standard load)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from joulebench.check.report import FAIL, PASS, SKIP, WARN, Row
from joulebench.core.heat import HeatCalibration
from joulebench.core.protocol import BoardState, ProtocolSettings, measure, measure_idle
from joulebench.core.tail import TailCalibration
from joulebench.flags import FLAG_OTHER_LOAD, FLAG_OTHER_PROCESS, has_flag
from joulebench.stats import spread
from joulebench.tables import INPUT_KINDS

REPEAT_CV_TARGET = 0.01
IDLE_STABILITY_TARGET = 0.05  # (max - min) / mean of 1 s idle means


@dataclass
class CheckSettings:
    """How long each part runs. `quick()` is for a first look (and tests), not for a study."""

    idle_s: float = 10.0
    square_s: float = 10.0  # total length of the square-wave load
    square_half_s: tuple[float, float] = (0.3, 0.45)  # busy/idle stretches drawn from this
    fast_interval_s: float = 0.001  # power reads during the square wave ("as fast as NVML")
    steady_s: float = 5.0  # counter vs trace, Zeus
    heat_idle_s: float = 30.0  # idle before the heat step: the die's idle temperature
    heat_s: float = 300.0  # the heat step: several thermal time constants (0: not measured)
    tail_cycles: int = 8  # the tail step: load, stop, idle, this many times (0: not measured)
    tail_busy_s: float = 1.5  # the load before each stop
    tail_idle_s: float = 3.5  # the idle read after it: longer than plateau + a few decays
    protocol: ProtocolSettings = field(default_factory=ProtocolSettings)  # the repeat CV run
    input_protocol: ProtocolSettings = field(
        default_factory=lambda: ProtocolSettings(repeats=2, warmup_min_s=1.0, ci_target=None)
    )
    seed: int = 0
    # the board's heat once the check measured it: the protocol runs after it use it, as the
    # profile will (rows stated at the sustained temperature)
    heat: HeatCalibration | None = None
    idle_temperature_c: float = math.nan
    tail: TailCalibration | None = None  # its power tail, once measured (the same way)

    @classmethod
    def quick(cls) -> CheckSettings:
        # fixed windows (no ci_target): a first look takes a known time
        fast = {"warmup_min_s": 0.3, "warmup_chunk_s": 0.1, "min_repeat_s": 1.0, "ci_target": None}
        return cls(
            idle_s=2.0,
            square_s=8.0,
            steady_s=2.0,
            heat_idle_s=0.0,
            heat_s=0.0,  # a first look does not measure the heat: minutes of load
            tail_cycles=2,
            tail_busy_s=1.0,
            tail_idle_s=2.5,
            protocol=ProtocolSettings(repeats=3, pause_s=(0.05, 0.2), **fast),
            input_protocol=ProtocolSettings(repeats=2, pause_s=(0.05, 0.2), **fast),
        )


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b) if b else math.nan


def grade(value: float, good: float, bad: float) -> str:
    """pass up to `good`, warn up to `bad`, fail beyond (NaN: warn, nothing to judge)."""
    if not math.isfinite(value):
        return WARN
    return PASS if value <= good else WARN if value <= bad else FAIL


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
            SKIP if not math.isfinite(spread) else grade(spread, IDLE_STABILITY_TARGET, 0.15),
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


def _protocol_run(target, meter, check: CheckSettings, idle_w: float, input_kind: str, settings):
    return measure(
        target.step(input_kind),
        target.sync,
        meter,
        images_per_step=1,
        settings=settings,
        rng=random.Random(0),
        clock=target.clock,
        sleep=target.sleep,
        board=BoardState(idle_w, check.idle_temperature_c, check.heat, check.tail),
    )


def repeat_rows(target, meter, settings: CheckSettings, idle_w: float) -> list[Row]:
    """The protocol's repeat CV on a standard load (a matmul per step)."""
    result = _protocol_run(target, meter, settings, idle_w, "random", settings.protocol)
    s = result.summary
    cv = s["energy_per_image_cv"]
    window = float(result.repeats["duration_s"].mean())
    busy = has_flag(s["flags"], FLAG_OTHER_LOAD) or has_flag(s["flags"], FLAG_OTHER_PROCESS)
    hint = "; other processes loaded the device: rerun when it is quiet" if busy else ""
    return [
        Row(
            "repeat",
            "repeat CV",
            grade(cv, REPEAT_CV_TARGET, 0.03),
            cv,
            "",
            f"<= {REPEAT_CV_TARGET:.0%}",
            f"{s['repeats']} windows of {window:.1f} s, {s['energy_per_image_j'] * 1e3:.4g} mJ "
            f"per step, flags: {s['flags'] or 'none'}{_as_read(result.repeats)}{hint}",
        )
    ]


def _as_read(repeats) -> str:
    """The repeat CV the counter gave as read, where the window's edges were counted
    (protocol count_edges): what counting them bought on this board."""
    per = repeats["energy_per_image_j"] * repeats["energy_counter_j"] / repeats["energy_j"]
    if not per.notna().all() or (repeats["energy_counter_j"] == repeats["energy_j"]).all():
        return ""
    return f"; the counter as read: CV {spread(per).cv:.2%}"


def input_rows(target, meter, settings: CheckSettings, idle_w: float) -> list[Row]:
    """Energy per matmul on all-zero vs random inputs (GPUs spend less on zeros)."""
    per = {}
    for kind in INPUT_KINDS:
        result = _protocol_run(target, meter, settings, idle_w, kind, settings.input_protocol)
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


def run_guarded(group: str, name: str, fn, *args) -> list[Row]:
    """Run one check; an exception becomes a failed row with the reason."""
    try:
        return fn(*args)
    except Exception as exc:  # a check that cannot run is a finding, not a crash
        return [Row(group, name, FAIL, None, detail=f"{type(exc).__name__}: {exc}"[:300])]
