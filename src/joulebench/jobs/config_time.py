"""How long one configuration takes: the protocol's minimum and the overheads around it.

A configuration's *minimum measuring time* follows from the protocol alone: `repeats` windows
of at least `min_repeat_s` each. Its *estimated wall time* (`config_cost`) follows the
protocol's own rules where the step time is known (`joulebench plan --calibrate`, or a
batch already measured): windows sized by protocol.plan_window (time, batch count, sensor
refreshes, phase shifts), the repeats a CI target needs at the sensor's expected CV, lead-ins,
pauses, and a full or short warm-up (a method's following batch sizes, measured back to back,
warm up briefly: profile.JobSession.warmup_for). Without a step time, windows are bounded by
time. Around them: building the model and a fresh meter, measured on the development machine
by bench/bench_plan.py (docs/benchmarks.md). The plan of a study (joulebench.plan) adds the
per-job and per-study costs; a profile job's ETA lines (`Eta`) sum the same per-configuration
estimates. Assumptions: docs/plan.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from joulebench.core.protocol import (
    ProtocolSettings,
    edges_counted,
    expected_cv,
    plan_window,
)
from joulebench.stats import t_quantile

# Overheads measured by bench/bench_plan.py on the development machine (2-core VM, CPU, no GPU),
# docs/benchmarks.md "Plan" (2026-12-03) and "The first hour of a new user" (2026-12-06, idle
# host: a busy one is the plan's HostLoad). Medians.
BUILD_S = 0.2  # building a model and its batch, per configuration (default models)
WARMUP_EXTRA_S = 1.4  # warm-up beyond warmup_min_s until throughput is steady (idle CPU)
CONFIG_EXTRA_S = 0.3  # a fresh meter and the row's bookkeeping, per configuration
# Not measured here (no GPU): torch.compile's first call, per configuration, an assumption.
COMPILE_S = 40.0
WINDOW_MARGIN = 1.05  # windows are sized a little past min_repeat_s (protocol.py)
MIN_REPEATS_FOR_CI = 3
# The short warm-up (no warmup_min_s floor) steadies within a few 0.5 s chunks: one step, then
# two chunks to compare, and on a busy CPU a few more (bench/bench_profile.py --overhead).
SHORT_WARMUP_CHUNKS = 3
# Where a meter's spread is not known (RAPL, the estimate): the repeats' CV assumed for a CI
# target (the default study's 30 rows on this VM, idle: median 2.2 %, quartiles 1.2-4.3 %).
TYPICAL_CV = 0.022
WARMUP_FULL, WARMUP_SHORT = "full", "short"


def protocol_settings(protocol: dict | None) -> dict:
    """The protocol section with the settings it leaves out at their defaults (the schema's)."""
    return asdict(ProtocolSettings.from_dict(protocol))


def repeats_counted(protocol: dict | ProtocolSettings) -> int:
    """Windows per configuration the estimate counts where nothing is known of the step or
    the meter (the fewest that can run)."""
    return _settings(protocol).min_repeats


def config_min_s(protocol: dict | ProtocolSettings) -> float:
    """The protocol's minimum measuring time of one configuration."""
    settings = _settings(protocol)
    return settings.min_repeats * float(settings.min_repeat_s)


def _settings(protocol: dict | ProtocolSettings | None) -> ProtocolSettings:
    if isinstance(protocol, ProtocolSettings):
        return protocol
    return ProtocolSettings.from_dict(protocol)


class _Middle:
    """An rng for protocol.plan_window that draws the middle of each range: its mean."""

    @staticmethod
    def uniform(low: float, high: float) -> float:
        return (low + high) / 2


def window_s(settings: ProtocolSettings, step_s: float | None, refresh_s: float | None) -> float:
    """One window's seconds as the protocol sizes it (protocol.plan_window: min_repeat_s,
    min_repeat_batches, min_window_refreshes, phase shifts). Without a step time the window
    is bounded by time. A slow step makes min_repeat_batches the bound: 32 batches of 1 s
    are a 32 s window, not a 5 s one (issue 24: the 640 s bf16 windows on a CPU)."""
    if step_s is None:
        min_s = settings.min_repeat_s
        if refresh_s:
            min_s = max(min_s, settings.min_window_refreshes * refresh_s)
        shifts_s = (
            settings.sweep_periods * refresh_s * settings.phase_shifts / (settings.phase_shifts + 1)
            if refresh_s
            else 0
        )
        return min_s * WINDOW_MARGIN + shifts_s
    plan = plan_window(step_s, settings, refresh_s, _Middle(), settings.sweep_periods)
    return max(plan.batches * step_s, plan.min_s) + sum(plan.shifts.values())


def repeats_needed(
    settings: ProtocolSettings, refresh_s: float | None, window: float, step_s: float | None = None
) -> int:
    """Windows the protocol runs: `repeats`, or with ci_target the fewest whose Student-t
    95 % CI at the expected CV (protocol.expected_cv: the sensor's sampling, without the
    counter's edges where the protocol counts them to the window (a batch of `step_s` or an
    unknown one); TYPICAL_CV for a meter without a refresh period) is below the target,
    within [3, max_repeats]."""
    if settings.ci_target is None:
        return settings.repeats
    cv = expected_cv(refresh_s, window, edges=edges_counted(settings, step_s, refresh_s))
    cv = cv if math.isfinite(cv) else TYPICAL_CV
    for n in range(settings.min_repeats, settings.max_repeats + 1):
        if t_quantile(0.975, n - 1) * cv / math.sqrt(n) < settings.ci_target:
            return n
    return settings.max_repeats


def warmup_s(settings: ProtocolSettings, step_s: float | None, kind: str = WARMUP_FULL) -> float:
    """Warm-up seconds: the full one runs past warmup_min_s until steady (WARMUP_EXTRA_S
    beyond it, measured on a busy CPU); the short one (a following batch size of a method)
    warmup_min_iters steps or SHORT_WARMUP_CHUNKS chunks, whichever is longer."""
    step = step_s or 0.0
    chunk_s = max(settings.warmup_chunk_s, step)
    if kind == WARMUP_SHORT:
        return max(settings.warmup_min_iters * step, step + SHORT_WARMUP_CHUNKS * chunk_s)
    at_least = max(settings.warmup_min_s, settings.warmup_min_iters * step, step + 2 * chunk_s)
    return min(at_least + WARMUP_EXTRA_S, max(settings.warmup_max_s, at_least))


def warmup_kinds(keys: list) -> list[str]:
    """The warm-up of each configuration in measuring order, keyed by (phase, method): short
    where it follows one of the same key (a method's batch sizes back to back), else full."""
    kinds, last = [], object()
    for key in keys:
        kinds.append(WARMUP_SHORT if key == last else WARMUP_FULL)
        last = key
    return kinds


@dataclass
class ConfigCost:
    """One configuration's estimated seconds, by part (bench/bench_profile.py --overhead
    measures the same parts)."""

    build_s: float
    warmup_s: float
    windows_s: float
    lead_in_s: float
    pauses_s: float
    repeats: int

    @property
    def total_s(self) -> float:
        return self.build_s + self.warmup_s + self.windows_s + self.lead_in_s + self.pauses_s


def config_cost(
    protocol: dict | ProtocolSettings | None,
    *,
    step_s: float | None = None,
    refresh_s: float | None = None,
    warmup: str = WARMUP_FULL,
    build_s: float | None = None,
    compile_: bool = False,
) -> ConfigCost:
    """One configuration's estimate from the protocol's rules (see the module doc): `step_s`
    one batch's seconds (None: unknown, windows bounded by time), `refresh_s` the meter's
    refresh period (NVML; None for RAPL and the estimate), `build_s` as measured (default
    BUILD_S), plus CONFIG_EXTRA_S, and COMPILE_S for torch.compile."""
    settings = _settings(protocol)
    window = window_s(settings, step_s, refresh_s)
    repeats = repeats_needed(settings, refresh_s, window, step_s)
    lead_in = 0.0
    if refresh_s and settings.lead_in:
        lead_in = repeats * (
            max(1, math.ceil(refresh_s / step_s)) * step_s if step_s else refresh_s
        )
    low, high = settings.pause_s
    built = (BUILD_S if build_s is None else build_s) + CONFIG_EXTRA_S
    return ConfigCost(
        build_s=built + (COMPILE_S if compile_ else 0.0),
        warmup_s=warmup_s(settings, step_s, warmup),
        windows_s=repeats * window,
        lead_in_s=lead_in,
        pauses_s=(repeats - 1) * (low + high) / 2,
        repeats=repeats,
    )


def config_estimate_s(protocol: dict, compile_: bool = False) -> float:
    """Estimated wall time of one configuration that nothing is known of (a full warm-up,
    windows bounded by time, a meter without a refresh period)."""
    return config_cost(protocol, compile_=compile_).total_s


def method_config_s(
    protocol: dict,
    batch_sizes: int,
    compile_: bool = False,
    refresh_s: float | None = None,
    meter: str | None = None,
) -> float:
    """A method's mean configuration where nothing is known of its steps: its batch sizes
    back to back, the first with the full warm-up, the others with the short one (as the
    plan counts them; `joulebench status` plans each row with it); `refresh_s`: the meter's
    (a GPU's), None for RAPL and the estimate; `meter`: its kind, which sizes the protocol
    (protocol.METER_SIZED)."""
    settings = ProtocolSettings.from_dict(protocol, meter)
    full = config_cost(settings, compile_=compile_, refresh_s=refresh_s).total_s
    short = config_cost(
        settings, compile_=compile_, refresh_s=refresh_s, warmup=WARMUP_SHORT
    ).total_s
    n = max(int(batch_sizes), 1)
    return (full + (n - 1) * short) / n


def format_duration(seconds: float) -> str:
    """0.2 s, 42 s, 11 min, 2 h 05 min, 8 d 11 h: as precise as a plan can be (under a
    second, one digit: a fast protocol's window never reads 0 s)."""
    if not math.isfinite(seconds):
        return "?"
    if 0.05 <= seconds < 0.95:
        return f"{seconds:.1f} s"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s" if s < 600 else f"{round(s / 60)} min"
    if s < 86400:
        return f"{s // 3600} h {(s % 3600) // 60:02d} min"
    return f"{s // 86400} d {(s % 86400) // 3600} h"


class Eta:
    """elapsed and ETA of a job measuring its configurations one after another.

    `estimates_s`: each configuration's estimate, in the order measured (config_cost, as the
    plan counts them). Before the first finishes, the ETA is the sum of those left; then
    that sum scaled by how the finished ones compared with their estimates (measured /
    estimated so far), so a machine slower than the estimate shows at once.
    """

    def __init__(self, estimates_s: list[float], clock):
        self.estimates_s = [float(s) for s in estimates_s]
        self.total, self.clock = len(self.estimates_s), clock
        self.start = clock()

    def elapsed(self) -> str:
        return format_duration(self.clock() - self.start)

    def left_s(self, done: int) -> float:
        """Seconds left with `done` configurations finished."""
        left = sum(self.estimates_s[done:])
        planned = sum(self.estimates_s[:done])
        return left * (self.clock() - self.start) / planned if planned > 0 else left

    def line(self, done: int) -> str:
        """'elapsed 1 min 02 s, ETA 3 min 10 s' with `done` configurations finished."""
        elapsed = self.clock() - self.start
        return f"elapsed {format_duration(elapsed)}, ETA {format_duration(self.left_s(done))}"
