"""The measurement protocol: when windows open and close, and what a measurement reports.

It knows nothing of torch, NVML or RAPL: the caller hands it `step()` (one batch, may return
before the device finishes), `sync()` (wait for queued work) and a Meter (meters.base). It
warms up until throughput is steady, then measures repeated windows that open and close
right after a sync (so the energy read covers exactly the work counted), sized to the
meter's refresh, with random pauses between them; on a slowly refreshing sensor it shifts
the work's phase inside each window, leads in before it and counts the counter's edges.
It reports per-repeat rows, a summary (mean, CV, Student-t 95 % CI) and the power trace.
Each rule and why: docs/protocol.md. Settings come in named presets (PRESETS: `default`,
`strict`, `fast`, `smoke`); a study's config picks one and turns the few settings a user
turns (the schema's protocol section), the rest are the presets' (ProtocolSettings.from_dict
sets any of them from Python).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace

import numpy as np
import pandas as pd

from joulebench.config_schema import maximum
from joulebench.core.heat import (
    AS_RUN,
    DRIFT_C,
    SUSTAINED,
    HeatCalibration,
    IdleState,
    window_heat,
)
from joulebench.core.meters.base import TRACE_COLUMNS, Meter, Reading
from joulebench.core.meters.node import COMPONENTS as NODE_PARTS
from joulebench.core.tail import ShiftTail, TailCalibration, shift_tail
from joulebench.flags import (
    FLAG_CI_TARGET_NOT_MET,
    FLAG_SPREAD_ABOVE_SENSOR,
    FLAG_THERMAL_DRIFT,
    FLAG_WARMUP_NOT_STEADY,
    join_flags,
    split_flags,
)
from joulebench.stats import spread
from joulebench.tables import WINDOW

#: Columns of `ProtocolResult.repeats`, one row per repeat (declared in tables.WINDOW).
REPEAT_COLUMNS = [c.name for c in WINDOW]

#: Columns of `ProtocolResult.trace`: the meter's trace of every repeat, stacked.
PROTOCOL_TRACE_COLUMNS = ["repeat", *TRACE_COLUMNS]


_MIN_REPEATS_FOR_CI = 3  # fewer repeats give a CI too wide and too unstable to stop on
_WINDOW_MARGIN = 1.05  # size windows a little long so the top-up loop is rarely needed
_MAX_CHUNK_STEPS = 1_000_000
SENSOR_SWING = 0.1  # see expected_cv
SPREAD_FACTOR = 3.0  # see spread_flags
EDGE_STEP_SHARE = 0.6  # see _counted_to_window
PEAK_PERCENTILE = 95  # a window's readings' peak: what its compute phases drew (core.tail)


class SettingsError(ValueError):
    """Settings a stage refuses; `problems` holds one message per setting, each starting
    with the setting's name (prerun.check_settings prints one line each)."""

    def __init__(self, what: str, problems: list[str]):
        super().__init__(f"{what}: " + "; ".join(problems))
        self.problems = problems


# What a protocol setting may be, by its field's type: a JSON value or a Python one alike
# (`min_repeat_s="3"` failed as a TypeError after seconds of measuring; NaN in every check).
_FIELD_KINDS = {
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "int": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "float": ("a finite number", lambda v: _finite(v)),
    "tuple[float, float]": (
        "two finite numbers",
        lambda v: isinstance(v, tuple | list) and len(v) == 2 and all(_finite(x) for x in v),
    ),
}
# The schema's caps on what a study may set (a window of hours, a million windows).
_SCHEMA_MAXIMA = ("repeats", "max_repeats", "min_repeat_s", "ci_target")


def _finite(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_types(settings) -> None:
    """SettingsError naming each field of a settings dataclass whose value is not of its
    type (None where the type allows it), or above the schema's maximum."""
    problems = []
    for f in fields(settings):
        value, kind = getattr(settings, f.name), str(f.type)
        optional = kind.endswith(" | None")
        words, ok = _FIELD_KINDS[kind.removesuffix(" | None")]
        if value is None and optional:
            continue
        if not ok(value):
            problems.append(
                f"{f.name} must be {words}{' or None' if optional else ''}, got {value!r}"
            )
        elif f.name in _SCHEMA_MAXIMA and value > maximum(f"protocol.{f.name}"):
            problems.append(f"{f.name} must be <= {maximum(f'protocol.{f.name}')}, got {value!r}")
    if problems:
        raise SettingsError("protocol", problems)


@dataclass
class ProtocolSettings:
    """How long to warm up and how to repeat windows. These defaults are the `default`
    preset's, decided here only: the schema's protocol section gives none (docs/protocol.md)."""

    warmup_min_iters: int = 10
    warmup_min_s: float = 2.0
    warmup_max_s: float = 60.0
    warmup_chunk_s: float = 0.5  # target length of one warm-up chunk (synced at its edges)
    steady_tolerance: float = 0.03  # relative throughput change between chunks counted as steady
    repeats: int = 3  # windows per measurement; with ci_target the fewest (never below 3)
    min_repeat_s: float = 2.0
    min_repeat_batches: int = 32
    pause_s: tuple[float, float] = (0.1, 0.3)  # random pause between repeats, (min, max)
    ci_target: float | None = 0.015  # stop once the 95% CI half-width / mean is below this
    max_repeats: int = 12  # cap on repeats when ci_target is set
    per_step_timing: bool = False  # time every step: valid only where steps are synchronous
    # Only where the meter's reading refreshes slowly (meter.refresh_s, NVML):
    phase_shifts: int = 32  # idle delays inside a window that shift the workload's phase
    lead_in: bool = True  # run one refresh period of steps right before each window opens
    # scale a counter that moves once a refresh to the window's own time (counter_edges)
    count_edges: bool = True
    min_window_refreshes: int = 20  # a window spans at least this many sensor refreshes
    spread_repeats: int = 8  # without ci_target: repeat up to this while spread-above-sensor
    # refresh periods a window's phase shifts sweep: a whole number keeps a workload locked
    # to the refresh exact; more than one dilutes a host pause's jump in phase (issue 23)
    sweep_periods: float = 2.0
    # once spread-above-sensor shows, later windows' phase shifts sweep a random number of
    # refresh periods from this range ((2, 2): always sweep_periods' two)
    spread_sweep_periods: tuple[float, float] = (2.0, 4.0)
    # the min_repeat_batches minimum stretches a window to at most this long (None: no cap):
    # a slow batch (a CPU at 20 s, a GPU at 0.5 s) needs no 32 of them in a window
    min_batches_max_s: float | None = 3.0

    def __post_init__(self):
        check_types(self)
        self.pause_s = tuple(float(v) for v in self.pause_s)
        self.spread_sweep_periods = tuple(float(v) for v in self.spread_sweep_periods)
        problems = []
        if len(self.pause_s) != 2 or not 0 <= self.pause_s[0] <= self.pause_s[1]:
            problems.append(f"pause_s must be (min, max) with 0 <= min <= max, got {self.pause_s}")
        if not 0 < float(self.sweep_periods) <= 10:
            problems.append(f"sweep_periods must be in (0, 10], got {self.sweep_periods}")
        sweep = self.spread_sweep_periods
        if len(sweep) != 2 or not 0 < sweep[0] <= sweep[1] <= 10:
            problems.append(
                f"spread_sweep_periods must be (min, max) with 0 < min <= max <= 10, got {sweep}"
            )
        for name in ("warmup_min_iters", "repeats", "min_repeat_batches", "max_repeats"):
            if int(getattr(self, name)) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("phase_shifts", "min_window_refreshes", "spread_repeats"):
            if int(getattr(self, name)) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("warmup_min_s", "warmup_max_s", "min_repeat_s", "steady_tolerance"):
            if not float(getattr(self, name)) >= 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.min_batches_max_s is not None and not float(self.min_batches_max_s) >= 0:
            problems.append(f"min_batches_max_s must be >= 0 or None, got {self.min_batches_max_s}")
        if not self.warmup_chunk_s > 0:
            problems.append(f"warmup_chunk_s must be > 0, got {self.warmup_chunk_s}")
        if self.warmup_max_s < self.warmup_min_s:
            problems.append(
                f"warmup_max_s must be >= warmup_min_s, got {self.warmup_max_s} < "
                f"{self.warmup_min_s}"
            )
        if self.repeats > self.max_repeats:
            problems.append(
                f"repeats must be <= max_repeats (the cap on repeats), got {self.repeats} > "
                f"{self.max_repeats}: raise max_repeats too"
            )
        if self.ci_target is not None:
            if not self.ci_target > 0:
                problems.append(f"ci_target must be > 0 or None, got {self.ci_target}")
            if self.max_repeats < _MIN_REPEATS_FOR_CI:
                problems.append(f"max_repeats must be >= {_MIN_REPEATS_FOR_CI} with ci_target")
        if problems:
            raise SettingsError("invalid protocol settings", problems)

    @classmethod
    def from_dict(cls, config: Mapping | None, meter: str | None = None) -> ProtocolSettings:
        """Build from a config mapping: its `preset` (PRESETS; `default` when left out), with
        every other key it sets over the preset's value. Unknown keys and presets are errors,
        not silently ignored. `meter`: the kind of meter it will run on (METER_KINDS), whose
        sizing (METER_SIZED) takes the place of the defaults the preset and the config leave."""
        config = dict(config or {})
        name = config.pop("preset", None) or DEFAULT_PRESET
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(
                f"unknown protocol setting(s) {unknown}; known settings: "
                f"{sorted([*known, 'preset'])}"
            )
        values = {**preset_values(name, meter), **config}
        if "max_repeats" not in {*config, *PRESETS[name]}:
            # a meter's smaller cap (METER_SIZED) never refuses the repeats a study asks
            unsized = preset_values(name)["max_repeats"]
            values["max_repeats"] = max(values["max_repeats"], min(values["repeats"], unsized))
        return cls(**values)

    @property
    def min_repeats(self) -> int:
        if self.ci_target is None:
            return self.repeats
        return max(_MIN_REPEATS_FOR_CI, self.repeats)

    @property
    def cap_repeats(self) -> int:
        return self.max_repeats if self.ci_target is not None else self.repeats


#: Named protocols, each the settings it sets differently from ProtocolSettings' defaults
#: (which are the `default` preset's); the config's `protocol: {preset: NAME}`. Measured
#: accuracy and cost of each against the simulator: docs/protocol.md#presets.
DEFAULT_PRESET = "default"
PRESETS: dict[str, dict] = {
    # adaptive: windows as long as the meter needs, repeats until the 95 % CI is within 1.5 %
    "default": {},
    # the fixed protocol before issue 24: 4 windows of >= 5 s and 32 batches (published numbers)
    "strict": {
        "warmup_min_s": 2.0,  # every value its own: no meter sizes it (METER_SIZED)
        "repeats": 4,
        "min_repeat_s": 5.0,
        "ci_target": None,
        "max_repeats": 20,
        "min_window_refreshes": 50,
        "min_batches_max_s": None,
        "pause_s": (0.2, 1.0),
        "sweep_periods": 1.0,
        "spread_sweep_periods": (1.0, 1.0),
        "count_edges": False,
    },
    # first looks and huge sweeps: within 5 % of the truth in >= 95 % of cases, cheapest
    "fast": {
        "repeats": 3,
        "min_repeat_s": 1.0,
        "ci_target": 0.04,
        "max_repeats": 6,
        "min_window_refreshes": 10,
        "pause_s": (0.1, 0.5),
    },
    # seconds per configuration: whether a study runs end to end (its DAG, its jobs, the
    # tests' and a CI's runs), its numbers not for citing; two short windows (5 refreshes of a
    # slow sensor), no CI target, none added while they disagree
    "smoke": {
        "warmup_min_iters": 2,
        "warmup_min_s": 0.05,
        "warmup_chunk_s": 0.05,
        "steady_tolerance": 0.5,
        "repeats": 2,
        "ci_target": None,
        "min_repeat_s": 0.1,
        "min_repeat_batches": 2,
        "pause_s": (0.0, 0.01),
        "min_window_refreshes": 5,
        "spread_repeats": 0,
    },
}


#: What a meter can carry, set over ProtocolSettings' defaults where a preset sets nothing
#: itself (`default`: everything; `strict` and `fast` set these, and keep their own). An
#: estimate (`estimate:tdp-linear`: a power model times the step's time) needs its steps
#: timed well, no more: its error is the power model's, which no window removes, so its CI
#: says it covers timing only (ci_covers); windows of 1 s, a 5 % CI, at most 5 of them. A
#: counter that moves every millisecond (RAPL) needs no 2 s windows either: 1 s is 1,000 of
#: its updates. A GPU's sensor (a refresh period) keeps the defaults.
METER_KINDS = ("sensor", "counter", "estimate")
METER_SIZED: dict[str, dict] = {
    "sensor": {},
    "counter": {"min_repeat_s": 1.0, "warmup_min_s": 1.0},
    "estimate": {
        "min_repeat_s": 1.0,
        "warmup_min_s": 1.0,
        "ci_target": 0.05,
        "max_repeats": 5,
        "min_batches_max_s": 1.0,
    },
}
CI_COVERS = {"sensor": "measurement", "counter": "measurement", "estimate": "timing"}


def meter_kind(meter) -> str:
    """A meter's kind (METER_KINDS): a sensor that refreshes slowly (NVML: `refresh_s`), an
    estimate (`is_estimate`), else a counter read at will (RAPL, AMD SMI's energy)."""
    if getattr(meter, "refresh_s", None):
        return "sensor"
    return "estimate" if getattr(meter, "is_estimate", False) else "counter"


def preset_values(name: str, meter: str | None = None) -> dict:
    """Every ProtocolSettings value of a named preset, on a kind of `meter` (METER_SIZED;
    None: the defaults as they are); an unknown name is an error that lists the choices."""
    if name not in PRESETS:
        raise ValueError(f"unknown protocol preset {name!r}; choose one of {sorted(PRESETS)}")
    if meter is not None and meter not in METER_SIZED:
        raise ValueError(f"unknown meter kind {meter!r}; one of {METER_KINDS}")
    defaults = {f.name: f.default for f in fields(ProtocolSettings)}
    return {**defaults, **METER_SIZED.get(meter, {}), **PRESETS[name]}


@dataclass
class WarmupResult:
    """How warm-up went; `step_s` (synced time per step) sizes the first window."""

    iters: int
    duration_s: float
    steady: bool
    step_s: float
    chunk_throughputs_steps_s: list[float] = field(default_factory=list)


@dataclass
class IdleResult:
    """Idle power of a device over a window in which nothing runs."""

    power_w: float
    duration_s: float
    energy_j: float
    meter: str
    is_estimate: bool
    flags: list[str]
    trace: pd.DataFrame | None
    temperature_c: float = math.nan  # the die's when the idle window closed (NVML; else NaN)


@dataclass
class ProtocolResult:
    """A finished measurement: per-repeat rows, a summary and the stacked power trace."""

    repeats: pd.DataFrame  # REPEAT_COLUMNS
    summary: dict
    trace: pd.DataFrame  # PROTOCOL_TRACE_COLUMNS
    warmup: WarmupResult


def _run_steps(step: Callable[[], object], n: int) -> None:
    for _ in range(n):
        step()


def warm_up(
    step: Callable[[], object],
    sync: Callable[[], object],
    settings: ProtocolSettings,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> WarmupResult:
    """Run synced chunks of steps until throughput is steady (or warmup_max_s passes).

    The first chunk is a single step (it may include compilation or autotuning that takes
    far longer than a normal step); later chunks are sized to last about warmup_chunk_s.
    Steady means two consecutive chunks' throughputs within steady_tolerance of each other.
    """
    sync()
    start = clock()
    iters = 0
    throughputs: list[float] = []
    steady = False
    chunk = 1
    step_s = math.nan
    while True:
        t0 = clock()
        _run_steps(step, chunk)
        sync()
        t1 = clock()
        iters += chunk
        step_s = max(t1 - t0, 1e-12) / chunk
        throughputs.append(1.0 / step_s)
        if len(throughputs) >= 2:
            previous, last = throughputs[-2], throughputs[-1]
            steady = abs(last - previous) / previous <= settings.steady_tolerance
        elapsed = t1 - start
        if steady and iters >= settings.warmup_min_iters and elapsed >= settings.warmup_min_s:
            break
        if elapsed >= settings.warmup_max_s:
            break
        chunk = int(min(max(1, round(settings.warmup_chunk_s / step_s)), _MAX_CHUNK_STEPS))
    return WarmupResult(iters, clock() - start, steady, step_s, throughputs)


@dataclass
class WindowPlan:
    """One window, decided before it opens: batches, minimum work time, phase shifts."""

    batches: int
    min_s: float  # seconds of work (phase shifts not counted)
    shifts: dict[int, float]  # after this many batches: sync, then idle this long


def _window_batches(
    step_s: float, min_s: float, min_batches: int, min_batches_max_s: float | None = None
) -> int:
    """Batches for one window: long enough in time and in count. With `min_batches_max_s`
    the count minimum adds batches only up to that many seconds: a CPU at 20 s a batch would
    otherwise get 32 x 20 s windows, a GPU at 0.5 s 16 s ones, where the simulator shows
    the time- and refresh-based length is as accurate (docs/benchmarks.md, issue 24)."""
    by_time = math.ceil(min_s * _WINDOW_MARGIN / max(step_s, 1e-12))
    if min_batches_max_s is not None:
        min_batches = min(min_batches, max(1, math.ceil(min_batches_max_s / max(step_s, 1e-12))))
    return int(min(max(min_batches, by_time), _MAX_CHUNK_STEPS))


def plan_window(
    step_s: float, settings: ProtocolSettings, refresh_s: float | None, rng, sweep: float = 1.0
) -> WindowPlan:
    """Size a window; with a slowly refreshing meter, span enough refreshes and shift phase.

    The delays are evenly spaced by batch count and last refresh_s / (phase_shifts + 1) on
    average, times `sweep` (each drawn from 0.5-1.5 times that), so the workload is seen at
    phases spread over `sweep` whole refresh periods, whatever its own period.
    """
    min_s = settings.min_repeat_s
    if refresh_s:
        min_s = max(min_s, settings.min_window_refreshes * refresh_s)
    n = _window_batches(step_s, min_s, settings.min_repeat_batches, settings.min_batches_max_s)
    shifts: dict[int, float] = {}
    k = settings.phase_shifts if refresh_s else 0
    for j in range(1, k + 1):
        at = round(j * n / (k + 1))
        if 0 < at < n:
            delay = sweep * refresh_s / (k + 1) * float(rng.uniform(0.5, 1.5))
            shifts[at] = shifts.get(at, 0.0) + delay
    return WindowPlan(n, min_s, shifts)


def _window(step, sync, meter: Meter, plan: WindowPlan, settings, clock, sleep):
    """One measurement window. Returns (reading, batches, duration_s, waits, step_ms): the
    phase shifts' delays as waited, in order.

    Between meter.begin() and meter.end() only steps, syncs, clock reads and the planned
    phase-shift delays happen. With per_step_timing, stamps go into lists allocated before
    the window opens; step_ms (else None) leaves the delays out.
    """
    per_step = settings.per_step_timing
    n_batches = plan.batches
    stamps = [0.0] * (2 * n_batches + 2) if per_step else None
    delayed = [0.0] * (2 * n_batches + 2) if per_step else None  # delay before step i
    cuts = [*sorted(plan.shifts), n_batches]
    waits = [0.0] * len(plan.shifts)  # allocated before the window opens
    shift_s = 0.0
    done = 0
    sync()
    meter.begin()
    t0 = clock()
    if per_step:
        stamps[0] = t0
    for k, cut in enumerate(cuts):
        if per_step:
            for i in range(done + 1, cut + 1):
                step()
                stamps[i] = clock()
        else:
            _run_steps(step, cut - done)
        done = cut
        if cut in plan.shifts:
            sync()
            ta = clock()
            sleep(plan.shifts[cut])
            waited = clock() - ta
            waits[k] = waited
            shift_s += waited
            if per_step:
                delayed[cut + 1] += waited
    sync()
    t1 = clock()
    batches = n_batches
    while t1 - t0 - shift_s < plan.min_s:  # the estimate was short: top up, synced per chunk
        step_s = max(t1 - t0 - shift_s, 1e-12) / batches
        extra = min(
            max(1, math.ceil((plan.min_s - (t1 - t0 - shift_s)) * _WINDOW_MARGIN / step_s)),
            _MAX_CHUNK_STEPS,
        )
        if per_step:
            for _ in range(extra):
                step()
                batches += 1
                if batches < len(stamps):
                    stamps[batches] = clock()
                else:
                    stamps.append(clock())
                    delayed.append(0.0)
        else:
            _run_steps(step, extra)
            batches += extra
        sync()
        t1 = clock()
    reading = meter.end()
    step_ms = None
    if per_step:
        diffs = np.diff(np.asarray(stamps[: batches + 1], dtype=float))
        step_ms = (diffs - np.asarray(delayed[1 : batches + 1], dtype=float)) * 1e3
    return reading, batches, t1 - t0, waits, step_ms


def _state(reading: Reading, which: str, key: str) -> float:
    state = reading.start_state if which == "start" else reading.end_state
    value = (state or {}).get(key)
    return float(value) if value is not None else math.nan


def _trace_power(trace: pd.DataFrame | None) -> np.ndarray:
    """Finite power samples of a trace: instantaneous power, else the averaged field."""
    if trace is None or len(trace) == 0:
        return np.array([])
    for column in ("power_w", "power_avg_w"):
        if column in trace:
            values = pd.to_numeric(trace[column], errors="coerce").to_numpy(dtype=float)
            values = values[np.isfinite(values)]
            if values.size:
                return values
    return np.array([])


def _unique(items) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def _counted_to_window(
    reading: Reading, settings: ProtocolSettings, step_s: float, refresh_s: float | None
) -> Reading:
    """The reading with its energy from the refreshes inside the window, scaled to the
    window's own time (meters.counter_edges), where a batch takes at most EDGE_STEP_SHARE of
    a refresh: there each reading averages whole batches and the two edges are most of a
    window's error. Slower batches keep the counter as read, where the simulator showed
    the scaled value spread more (docs/benchmarks.md, "Window edges")."""
    edges_j = reading.energy_edges_j
    if not math.isfinite(edges_j) or not edges_counted(settings, step_s, refresh_s):
        return reading
    return replace(reading, energy_j=edges_j)


@dataclass(frozen=True)
class BoardState:
    """What the protocol knows of the board before it measures, travelling as one through
    measure -> repeat_row -> _summary: the idle baseline (its power, and the die temperature
    it was read at), and from the board's check its heat (core.heat) and power tail
    (core.tail); None where not measured. Every window is stated against it."""

    idle_power_w: float = math.nan
    idle_temperature_c: float = math.nan
    heat: HeatCalibration | None = None
    tail: TailCalibration | None = None

    def __post_init__(self):
        object.__setattr__(self, "idle_power_w", float(self.idle_power_w))
        object.__setattr__(self, "idle_temperature_c", float(self.idle_temperature_c))

    @property
    def idle(self) -> IdleState:
        return IdleState(self.idle_power_w, self.idle_temperature_c)


def repeat_row(
    index,
    reading: Reading,
    batches,
    duration_s,
    step_ms,
    images_per_step,
    pause_s,
    waits=(),
    board: BoardState = BoardState(),
) -> dict:
    """One window's row, stated against the `board`'s idle, heat and tail. `waits`: its
    phase shifts' delays, whose idle energy and board's tail (core.tail) are not the
    images'."""
    images = batches * images_per_step
    meter_s = reading.duration_s
    energy_s = meter_s if math.isfinite(meter_s) and meter_s > 0 else duration_s
    shift_s = float(sum(waits))
    work_s = duration_s - shift_s
    energy_j = float(reading.energy_j)
    state = _window_state(reading, board, energy_s, shift_s)
    # the phase-shift delays ran no work: their (idle) energy is not the images'
    idle_known = math.isfinite(board.idle_power_w)
    shift_j = state.idle_power_w * shift_s if shift_s and idle_known else 0.0
    power = _trace_power(reading.trace)
    peak_w = float(np.percentile(power, PEAK_PERCENTILE)) if power.size else math.nan
    shifted = _shifts_tail(
        board.tail, waits, energy_j - shift_j, energy_s - shift_s, state.idle_power_w, peak_w
    )
    if shifted.excess_j and state.state != AS_RUN:  # the work's own power sets its heat
        state = _window_state(reading, board, energy_s, shift_s, shifted.excess_j)
        shift_j = state.idle_power_w * shift_s
    work_j = (energy_j - shift_j - shifted.excess_j) * state.factor  # at the stated state
    idle_j = state.idle_sustained_w * (energy_s - shift_s)
    trace_j = float(reading.energy_trace_j)
    if step_ms is not None:
        p50, p95 = (float(v) for v in np.percentile(step_ms, [50, 95]))
    else:
        p50 = p95 = math.nan
    return {
        "repeat": index,
        "batches": batches,
        "images": images,
        "duration_s": duration_s,
        "meter_duration_s": float(meter_s),
        "energy_j": energy_j,
        "energy_trace_j": trace_j,
        "energy_counter_j": float(reading.energy_counter_j),
        "idle_power_w": float(state.idle_power_w),
        "energy_per_image_j": work_j / images,
        "dynamic_energy_per_image_j": (work_j - idle_j) / images,
        "throughput_img_s": images / work_s,
        "latency_ms_mean": work_s / batches * 1e3,
        "latency_ms_p50": p50,
        "latency_ms_p95": p95,
        "power_mean_w": float(power.mean()) if power.size else energy_j / energy_s,
        "power_max_w": float(power.max()) if power.size else math.nan,
        "trace_disagreement": abs(energy_j - trace_j) / energy_j if energy_j else math.nan,
        "start_temperature_c": _state(reading, "start", "temperature_c"),
        "end_temperature_c": _state(reading, "end", "temperature_c"),
        "start_sm_clock_mhz": _state(reading, "start", "sm_clock_mhz"),
        "end_sm_clock_mhz": _state(reading, "end", "sm_clock_mhz"),
        "pause_before_s": pause_s,
        "phase_shift_s": shift_s,
        "thermal_state": state.state,
        "sustained_temperature_c": state.sustained_c,
        "thermal_correction": state.factor - 1.0,
        "tail_excess_j": shifted.excess_j,
        "tail_bound_j": shifted.bound_j * state.factor,
        "tail_below_j": shifted.below_j * state.factor,
        "tail_source": shifted.source,
        "flags": join_flags([*reading.flags, *_drift_flags(reading)]),
        **node_per_image(reading, images, work_j, duration_s, work_s),
        "host_cpu_share": _state(reading, "end", "host_cpu_share"),
        "concurrent_measurements": _state(reading, "end", "concurrent_measurements"),
    }


def _shifts_tail(
    tail, waits, work_j: float, work_s: float, idle_w: float, peak_w: float = math.nan
) -> ShiftTail:
    """The phase shifts' tail (core.tail) after work drawing (work_j / work_s) - idle_w
    above idle, its readings peak_w at most (PEAK_PERCENTILE): estimated from the window
    with its shifts' idle energy out, then once more with the first estimate's excess out
    too. Nothing without an idle power."""
    if not (math.isfinite(idle_w) and work_s > 0 and any(w > 0 for w in waits)):
        return ShiftTail()
    peak = peak_w - idle_w if math.isfinite(peak_w) else None
    first = shift_tail(tail, waits, work_j / work_s - idle_w, peak)
    return shift_tail(tail, waits, (work_j - first.excess_j) / work_s - idle_w, peak)


def _window_state(reading: Reading, board: BoardState, energy_s, shift_s, tail_j=0.0):
    """The window's thermal state (joulebench.core.heat): its energy brought to the
    configuration's sustained temperature where the board's heat is known, else as run.
    `tail_j`: the board's excess in the phase shifts (core.tail), not the work's power."""
    heat, idle = board.heat, board.idle
    start_c = _state(reading, "start", "temperature_c")
    end_c = _state(reading, "end", "temperature_c")
    energy_j = float(reading.energy_j)
    mean_c = _trace_mean(reading.trace, "temperature_c")
    first = window_heat(heat, idle, start_c, end_c, energy_j / energy_s, mean_c)
    if first.state == AS_RUN or not shift_s:
        return first
    # the window's own work drew this, the phase shifts' idle time left out
    work_w = (energy_j - first.idle_power_w * shift_s - tail_j) / max(energy_s - shift_s, 1e-9)
    return window_heat(heat, idle, start_c, end_c, work_w, mean_c)


def _trace_mean(trace: pd.DataFrame | None, column: str) -> float:
    """Mean of a trace column's finite samples; NaN without any."""
    if trace is None or column not in trace:
        return math.nan
    values = pd.to_numeric(trace[column], errors="coerce")
    return float(values.mean()) if values.notna().any() else math.nan


def _drift_flags(reading: Reading) -> list[str]:
    """thermal-drift where the die's temperature moved more than DRIFT_C in the window."""
    moved = abs(_state(reading, "end", "temperature_c") - _state(reading, "start", "temperature_c"))
    return [FLAG_THERMAL_DRIFT] if moved > DRIFT_C else []


def node_per_image(reading: Reading, images, device_j, duration_s, work_s) -> dict:
    """Per-image energy of each part of the node (meters.node) and their sum.

    The device's own part is exactly the row's energy (`device_j`, phase shifts taken out);
    the host's parts lose the phase shifts' share of the window (work_s / duration_s).
    NaN where a part was not read; the node is the sum of the parts that were.
    """
    node = reading.node_j or {}
    keep = work_s / duration_s if duration_s > 0 else 1.0
    per_image = {}
    for part in NODE_PARTS:
        joules = float(node.get(part, math.nan))
        if part == reading.device_component:
            joules = device_j
        elif math.isfinite(joules):
            joules *= keep
        per_image[part] = joules / images
    read = [v for v in per_image.values() if math.isfinite(v)]
    return {
        "energy_gpu_per_image_j": per_image["gpu"],
        "energy_cpu_per_image_j": per_image["cpu"],
        "energy_dram_per_image_j": per_image["dram"],
        "energy_node_per_image_j": float(sum(read)) if read else math.nan,
    }


def _nanmax(values) -> float:
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(x.max()) if x.size else math.nan


def summarize(repeats: pd.DataFrame, step_ms, warmup, meter, images_per_step, idle_power_w, flags):
    summary = {
        "meter": meter.name,
        "is_estimate": bool(meter.is_estimate),
        "ci_covers": CI_COVERS[meter_kind(meter)],
        "images_per_step": images_per_step,
        "repeats": len(repeats),
        "batches": int(repeats["batches"].sum()),
        "images": int(repeats["images"].sum()),
        "measured_s": float(repeats["duration_s"].sum()),
        "warmup_iters": warmup.iters,
        "warmup_s": warmup.duration_s,
        "warmup_steady": warmup.steady,
        "idle_power_w": float(idle_power_w),
    }
    total = spread(repeats["energy_per_image_j"])
    summary.update(
        energy_per_image_j=total.mean,
        energy_per_image_std_j=total.std,
        energy_per_image_cv=total.cv,
        energy_per_image_ci95_low_j=total.ci95_low,
        energy_per_image_ci95_high_j=total.ci95_high,
        energy_per_image_ci95_rel=total.ci95_rel,
    )
    dynamic = spread(repeats["dynamic_energy_per_image_j"])
    summary.update(
        dynamic_energy_per_image_j=dynamic.mean,
        dynamic_energy_per_image_std_j=dynamic.std,
        dynamic_energy_per_image_cv=dynamic.cv,
        dynamic_energy_per_image_ci95_low_j=dynamic.ci95_low,
        dynamic_energy_per_image_ci95_high_j=dynamic.ci95_high,
        dynamic_energy_per_image_ci95_rel=dynamic.ci95_rel,
    )
    summary["throughput_img_s"] = float(repeats["throughput_img_s"].mean())
    summary["throughput_img_s_cv"] = spread(repeats["throughput_img_s"]).cv
    summary["latency_ms_mean"] = float(repeats["latency_ms_mean"].mean())
    if step_ms:
        p50, p95 = np.percentile(np.concatenate(step_ms), [50, 95])
        summary["latency_ms_p50"], summary["latency_ms_p95"] = float(p50), float(p95)
    else:
        summary["latency_ms_p50"] = summary["latency_ms_p95"] = math.nan
    summary["power_mean_w"] = float(repeats["power_mean_w"].mean())
    summary["power_max_w"] = _nanmax(repeats["power_max_w"])
    summary["trace_disagreement_max"] = _nanmax(repeats["trace_disagreement"])
    summary.update(thermal_summary(repeats))
    summary["flags"] = join_flags(flags)
    for column in (
        "energy_gpu_per_image_j",
        "energy_cpu_per_image_j",
        "energy_dram_per_image_j",
        "energy_node_per_image_j",
    ):
        summary[column] = float(repeats[column].mean())
    summary["host_cpu_share"] = float(repeats["host_cpu_share"].mean())
    running = repeats["concurrent_measurements"].max()
    summary["concurrent_measurements"] = int(running) if math.isfinite(running) else 1
    summary.update(node_reasons(meter, summary))
    return summary


def thermal_summary(repeats: pd.DataFrame) -> dict:
    """The state the measurement is stated at: sustained only if every window was."""
    states = set(repeats["thermal_state"])
    sustained = pd.to_numeric(repeats["sustained_temperature_c"], errors="coerce")
    return {
        "thermal_state": states.pop() if len(states) == 1 else AS_RUN,
        "sustained_temperature_c": float(sustained.mean()) if sustained.notna().any() else math.nan,
        "thermal_correction": float(repeats["thermal_correction"].mean()),
    }


# (mean, CI low, CI high, CI half-width / mean) of the total and the dynamic energy
_CI_KEYS = tuple(
    (f"{e}_per_image_j", f"{e}_per_image_ci95_low_j", f"{e}_per_image_ci95_high_j",
     f"{e}_per_image_ci95_rel")
    for e in ("energy", "dynamic_energy")
)  # fmt: skip


def widen_ci(summary: dict, bound_rel: float) -> dict:
    """The 95 % CIs of a summary widened by a systematic bound (relative, e.g. the thermal
    correction's, joulebench.core.heat): half-widths add in quadrature."""
    out = {}
    bound_j = bound_rel * abs(summary["energy_per_image_j"])
    for mean_key, low_key, high_key, rel_key in _CI_KEYS:
        mean, low, high = summary[mean_key], summary[low_key], summary[high_key]
        if not (math.isfinite(mean) and math.isfinite(low) and mean):
            continue
        half = math.hypot(0.5 * (high - low), bound_j)
        out[low_key], out[high_key], out[rel_key] = mean - half, mean + half, half / abs(mean)
    return out


def reach_below(summary: dict, below_rel: float) -> dict:
    """The 95 % CIs' low ends lowered by a one-sided bound (relative): a bias that can only
    have raised the number (an unmeasured tail, core.tail), added in full."""
    out = {}
    below_j = below_rel * abs(summary["energy_per_image_j"])
    for mean_key, low_key, high_key, rel_key in _CI_KEYS:
        mean, low, high = summary[mean_key], summary[low_key], summary[high_key]
        if not (math.isfinite(mean) and math.isfinite(low) and mean):
            continue
        out[low_key] = low - below_j
        out[rel_key] = 0.5 * (high - out[low_key]) / abs(mean)
    return out


def expected_cv(refresh_s: float | None, window_s: float, edges: bool = False) -> float:
    """The repeats' CV the sensor's sampling alone explains: a window sees about
    window_s / refresh_s readings, each off by up to SENSOR_SWING of the mean power at one
    sigma (a duty-cycled load seen through a 20-25 ms window of each 100 ms; the worst the
    simulator's generations and loads reached). Part of it is the counter's two edges, each
    up to a refresh off the window's (refresh_s / sqrt(6) / window_s); `edges`: those are
    counted to the window's instants (_counted_to_window), and that part is gone."""
    if not refresh_s or not window_s > 0:
        return math.nan
    cv = SENSOR_SWING / math.sqrt(max(window_s / refresh_s, 1.0))
    if not edges:
        return cv
    edge_cv = refresh_s / math.sqrt(6.0) / window_s
    return math.sqrt(max(cv**2 - edge_cv**2, 0.0))


def edges_counted(
    settings: ProtocolSettings, step_s: float | None, refresh_s: float | None
) -> bool:
    """Whether a window's counter is scaled to its own time (_counted_to_window): the
    settings count edges and a batch takes at most EDGE_STEP_SHARE of a refresh; an unknown
    step is taken as short (a GPU's)."""
    short = step_s is None or step_s <= EDGE_STEP_SHARE * (refresh_s or 0.0)
    return settings.count_edges and bool(refresh_s) and short


def spread_flags(cv: float, refresh_s: float | None, window_s: float) -> list[str]:
    """spread-above-sensor where the repeats' CV is SPREAD_FACTOR times what the sensor
    explains: the 95 % CI then says more about an unsteady load than about the meter."""
    expected = expected_cv(refresh_s, window_s)
    if math.isfinite(cv) and math.isfinite(expected) and cv > SPREAD_FACTOR * expected:
        return [FLAG_SPREAD_ABOVE_SENSOR]
    return []


def node_reasons(meter, summary: dict) -> dict:
    """Why a part of the node has no energy (NaN), and the host meter: row fields."""
    reasons = dict(getattr(meter, "component_reasons", {}))
    values = {
        "gpu": summary["energy_gpu_per_image_j"],
        "cpu": summary["energy_cpu_per_image_j"],
        "dram": summary["energy_dram_per_image_j"],
    }
    for part, value in values.items():
        if not math.isfinite(value) and not reasons.get(part):
            reasons[part] = "not read (no node meter)"
    missing = [part for part, value in values.items() if not math.isfinite(value)]
    return {
        "gpu_reason": reasons.get("gpu", ""),
        "cpu_reason": reasons.get("cpu", ""),
        "dram_reason": reasons.get("dram", ""),
        "node_reason": f"without {', '.join(missing)}" if missing else "",
        "host_meter": getattr(meter, "host_meter_name", ""),
        "host_is_estimate": bool(getattr(meter, "host_is_estimate", False)),
    }


def stack_traces(traces: list[tuple[int, pd.DataFrame | None]]) -> pd.DataFrame:
    frames = []
    for index, trace in traces:
        if trace is None or len(trace) == 0:
            continue
        frame = trace.reindex(columns=TRACE_COLUMNS).astype(float)
        frame.insert(0, "repeat", index)
        frames.append(frame)
    if not frames:
        empty = {c: pd.Series(dtype=float) for c in TRACE_COLUMNS}
        return pd.DataFrame({"repeat": pd.Series(dtype="int64"), **empty})
    return pd.concat(frames, ignore_index=True)


def measure(
    step: Callable[[], object],
    sync: Callable[[], object],
    meter: Meter,
    *,
    images_per_step: int,
    settings: ProtocolSettings | None = None,
    rng: random.Random | None = None,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], object] = time.sleep,
    progress: Callable[[str, dict], object] | None = None,
    board: BoardState = BoardState(),
) -> ProtocolResult:
    """Warm up, then measure energy and time over repeated windows (see the module doc).

    `progress(phase, info)` is called after warm-up ("warmup") and after each repeat
    ("repeat", with that repeat's row), never inside a window. `rng` draws the pauses
    (anything with .uniform(a, b)); `clock` and `sleep` are injectable for tests.
    `board` (BoardState): the idle baseline dynamic energy is above; with its `heat`
    (from `joulebench check`) and the idle's temperature every window is stated at the
    configuration's sustained temperature (joulebench.core.heat), without them the rows
    say `as-run`; its `tail` (from the same check) takes the board's excess after work
    out of the phase shifts (joulebench.core.tail), without it the CI's low end covers
    the largest assumed.
    """
    settings = settings or ProtocolSettings()
    rng = rng or random.Random()
    if images_per_step < 1:
        raise ValueError(f"images_per_step must be >= 1, got {images_per_step}")

    warmup = warm_up(step, sync, settings, clock=clock)
    flags = [] if warmup.steady else [FLAG_WARMUP_NOT_STEADY]
    if progress:
        progress("warmup", {"iters": warmup.iters, "s": warmup.duration_s, "steady": warmup.steady})

    step_s = warmup.step_s
    refresh_s = getattr(meter, "refresh_s", None)
    rows, traces, step_ms = [], [], []
    ci_met = False
    for index in range(max(settings.cap_repeats, settings.spread_repeats)):
        if _enough_before(index, rows, settings, refresh_s):
            break
        pause = 0.0
        if index > 0:
            pause = float(rng.uniform(*settings.pause_s))
            sleep(pause)
        plan = plan_window(step_s, settings, refresh_s, rng, _sweep(rows, settings, refresh_s, rng))
        if refresh_s and settings.lead_in:
            # work through one refresh period first, so the sensor's last reading before
            # the window opens (which the counter extends up to it) is of the same work
            _run_steps(step, max(1, math.ceil(refresh_s / max(step_s, 1e-12))))
        reading, batches, duration_s, waits, window_ms = _window(
            step, sync, meter, plan, settings, clock, sleep
        )
        shift_s = sum(waits)
        # the latest window is the best estimate of the step time for the next
        step_s = max(duration_s - shift_s, 1e-12) / batches
        reading = _counted_to_window(reading, settings, step_s, refresh_s)
        window = (reading, batches, duration_s, window_ms, images_per_step)
        row = repeat_row(index, *window, pause, waits, board)
        rows.append(row)
        flags.extend(split_flags(row["flags"]))
        traces.append((index, reading.trace))
        if window_ms is not None:
            step_ms.append(window_ms)
        if progress:
            progress("repeat", dict(row))
        ci_met = _ci_met(rows, settings)
        if ci_met:
            break
    if settings.ci_target is not None and not ci_met:
        flags.append(FLAG_CI_TARGET_NOT_MET)

    repeats = pd.DataFrame(rows, columns=REPEAT_COLUMNS)
    summary = _summary(repeats, step_ms, warmup, meter, images_per_step, flags, board)
    summary.update(tail_summary(repeats, summary))
    return ProtocolResult(repeats, summary, stack_traces(traces), warmup)


def _sweep(rows: list[dict], settings: ProtocolSettings, refresh_s, rng) -> float:
    """Refresh periods the next window's phase shifts sweep: sweep_periods (two), until the
    windows so far disagree beyond the sensor's sampling (spread-above-sensor); then a random
    number from spread_sweep_periods, so a host pattern whose drift cancels a whole-period
    sweep (a cycle a few % off the refresh) cannot stay in step with every window. Two
    periods rather than one halve the share of a window's phases a host pause skips or
    visits twice (issue 23)."""
    base = float(settings.sweep_periods)
    if not refresh_s or len(rows) < _MIN_REPEATS_FOR_CI:
        return base
    low, high = settings.spread_sweep_periods
    if low == high == base or not _spread_above_sensor(rows, refresh_s):
        return base
    return float(rng.uniform(low, high)) if low < high else low


def _enough_before(index: int, rows: list[dict], settings: ProtocolSettings, refresh_s) -> bool:
    """Whether the windows so far suffice before window `index` runs: with a CI target, at
    its cap; without one, after `repeats` windows whose spread is the sensor's (more, up to
    spread_repeats, while it is not)."""
    if settings.ci_target is not None:
        return index >= settings.max_repeats
    if index < settings.repeats:
        return False
    return not _spread_above_sensor(rows, refresh_s)


def _spread_above_sensor(rows: list[dict], refresh_s) -> bool:
    """Whether the windows so far disagree beyond what the sensor's sampling explains
    (spread_flags; never where the meter has no refresh period)."""
    cv = spread([r["energy_per_image_j"] for r in rows]).cv
    window_s = float(np.mean([r["duration_s"] for r in rows]))
    return bool(spread_flags(cv, refresh_s, window_s))


def _ci_met(rows: list[dict], settings: ProtocolSettings) -> bool:
    """Whether the windows so far meet the CI target (never before min_repeats)."""
    if settings.ci_target is None or len(rows) < settings.min_repeats:
        return False
    return spread([r["energy_per_image_j"] for r in rows]).ci95_rel < settings.ci_target


def _summary(repeats, step_ms, warmup, meter, images_per_step, flags, board: BoardState):
    """The summary, with the spread flag and, when stated sustained, the correction's bound
    in the CIs."""
    heat, idle_power_w = board.heat, board.idle_power_w
    cv = spread(repeats["energy_per_image_j"]).cv
    refresh_s = getattr(meter, "refresh_s", None)
    flags = [*flags, *spread_flags(cv, refresh_s, float(repeats["duration_s"].mean()))]
    summary = summarize(
        repeats, step_ms, warmup, meter, images_per_step, idle_power_w, _unique(flags)
    )
    bound = _per_image(repeats, "tail_bound_j") / summary["energy_per_image_j"]
    if heat is not None and summary["thermal_state"] == SUSTAINED:
        heat_bound = heat.correction_bound(float(repeats["thermal_correction"].abs().mean()))
        bound = math.hypot(bound, heat_bound)
    if bound > 0:
        summary.update(widen_ci(summary, bound))
    below = _per_image(repeats, "tail_below_j") / summary["energy_per_image_j"]
    if below > 0:
        summary.update(reach_below(summary, below))
    return summary


def _per_image(repeats: pd.DataFrame, column: str) -> float:
    """A window column in joules, per image, mean over the windows (0 where all empty)."""
    per_image = pd.to_numeric(repeats[column], errors="coerce") / repeats["images"]
    return float(per_image.mean()) if per_image.notna().any() else 0.0


def tail_summary(repeats: pd.DataFrame, summary: dict) -> dict:
    """Row fields of the phase shifts' tail: where it came from (core.tail) and the share
    of the energy taken out (negative; 0 where nothing was)."""
    sources = {s for s in repeats["tail_source"] if s}
    energy = summary["energy_per_image_j"]
    taken = _per_image(repeats, "tail_excess_j")
    return {
        "tail_source": ", ".join(sorted(sources)),  # one: a job's windows share it
        "tail_correction": -taken / (energy + taken) if taken and energy + taken else 0.0,
    }


def measure_idle(
    meter: Meter, duration_s: float, sleep: Callable[[float], object] = time.sleep
) -> IdleResult:
    """Idle power: open a window, run nothing for duration_s, divide energy by time.

    It is subtracted to give dynamic energy, so it should be read on the same meter, with
    the device in the same state (model unloaded, nothing else running) as the windows.
    """
    meter.begin()
    sleep(duration_s)
    reading = meter.end()
    seconds = reading.duration_s
    if not (math.isfinite(seconds) and seconds > 0):
        seconds = duration_s
    return IdleResult(
        power_w=float(reading.energy_j) / seconds,
        duration_s=float(seconds),
        energy_j=float(reading.energy_j),
        meter=meter.name,
        is_estimate=bool(meter.is_estimate),
        flags=_unique(reading.flags),
        trace=reading.trace,
        temperature_c=_state(reading, "end", "temperature_c"),
    )
