"""How long one configuration takes: the protocol's minimum and the overheads around it.

A configuration's *minimum measuring time* follows from the protocol alone: `repeats` windows
of at least `min_repeat_s` each. Its *estimated wall time* adds what every configuration also
costs, measured on the development machine by bench/bench_plan.py (docs/benchmarks.md):
building the model, warming up and the pauses between windows. The plan of a study
(joulebench.plan) adds the per-job and per-study costs; a profile job's ETA lines (`Eta`)
start from this estimate. Assumptions: docs/plan.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict

from joulebench.measure.protocol import ProtocolSettings

# Overheads measured by bench/bench_plan.py on the development machine (2-core VM, CPU, no GPU,
# busy with other work: load average 5), docs/benchmarks.md "Plan", 2026-12-03. Medians.
BUILD_S = 0.2  # building a model and its batch, per configuration (default models)
WARMUP_EXTRA_S = 11.3  # warm-up beyond warmup_min_s until throughput is steady (busy CPU)
CONFIG_EXTRA_S = 0.3  # a fresh meter and the row's bookkeeping, per configuration
# Not measured here (no GPU): torch.compile's first call, per configuration, an assumption.
COMPILE_S = 40.0
WINDOW_MARGIN = 1.05  # windows are sized a little past min_repeat_s (protocol.py)
MIN_REPEATS_FOR_CI = 3


def protocol_settings(protocol: dict | None) -> dict:
    """The protocol section with the settings it leaves out at their defaults (the schema's)."""
    return asdict(ProtocolSettings.from_dict(protocol))


def repeats_counted(protocol: dict) -> int:
    """Windows per configuration the estimate counts (the fewest that can run)."""
    protocol = protocol_settings(protocol)
    if protocol["ci_target"] is not None:
        return MIN_REPEATS_FOR_CI
    return int(protocol["repeats"])


def config_min_s(protocol: dict) -> float:
    """The protocol's minimum measuring time of one configuration."""
    return repeats_counted(protocol) * float(protocol_settings(protocol)["min_repeat_s"])


def config_estimate_s(protocol: dict, compile_: bool = False) -> float:
    """Estimated wall time of one configuration: build, warm-up, windows, pauses."""
    repeats = repeats_counted(protocol)
    protocol = protocol_settings(protocol)
    pause_lo, pause_hi = protocol["pause_s"]
    windows = repeats * float(protocol["min_repeat_s"]) * WINDOW_MARGIN
    warmup = float(protocol["warmup_min_s"]) + WARMUP_EXTRA_S
    pauses = (repeats - 1) * (float(pause_lo) + float(pause_hi)) / 2
    return BUILD_S + CONFIG_EXTRA_S + warmup + windows + pauses + (COMPILE_S if compile_ else 0)


def format_duration(seconds: float) -> str:
    """42 s, 11 min, 2 h 05 min, 8 d 11 h: as precise as a plan can be."""
    if not math.isfinite(seconds):
        return "?"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s" if s < 600 else f"{round(s / 60)} min"
    if s < 86400:
        return f"{s // 3600} h {(s % 3600) // 60:02d} min"
    return f"{s // 86400} d {(s % 86400) // 3600} h"


class Eta:
    """elapsed and ETA of a job measuring `total` configurations one after another.

    Before the first finishes, the ETA is the plan's estimate; then the average so far.
    """

    def __init__(self, total: int, estimate_s: float, clock):
        self.total, self.estimate_s, self.clock = total, estimate_s, clock
        self.start = clock()

    def elapsed(self) -> str:
        return format_duration(self.clock() - self.start)

    def line(self, done: int) -> str:
        """'elapsed 1 min 02 s, ETA 3 min 10 s' with `done` configurations finished."""
        elapsed = self.clock() - self.start
        per_config = elapsed / done if done else self.estimate_s
        eta = per_config * (self.total - done)
        return f"elapsed {format_duration(elapsed)}, ETA {format_duration(eta)}"
