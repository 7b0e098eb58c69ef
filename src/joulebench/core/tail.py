"""The power tail in the protocol's phase shifts: what a board draws after work stops.

A board stays above idle power for a while after its kernels end. The phase shifts sleep
inside each window right after a sync, so they draw idle power plus that excess; taking only
the idle power out would leave the excess in the images' energy. The excess after this work
is estimated from the tail `joulebench check` measured after its standard load, as the
middle of the models (`constant` watts, or a `dynamic` share of the work's power above
idle: its mean, and the most its readings saw), the CI widened by half their spread and by
the check's uncertainty (at least CHECK_REL_UNCERTAINTY, more where the check's fit says
so: issue 40 item 11). Without a
measured tail nothing is taken out and the CI's low end reaches down by ASSUMED_MAX_SHARE
(`tail_source`). The simulator's physics (sim.tail) is written apart from this model, so a
wrong model here shows as an error against the simulated truth. docs/protocol.md#the-power-tail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CHECK = "check"  # tail_source: corrected with the check's measured tail
ASSUMED = "assumed"  # tail_source: not known; the CI's low end covers the largest assumed
ASSUMED_MAX_SHARE = 0.6  # the largest tail assumed where none was measured: of the work's
# own dynamic power (a constant excess of 40 % of a heavy load's, after work drawing 2/3 of it)
CHECK_REL_UNCERTAINTY = 0.15  # the least a check's tail may be off (its p95 on the boards it
# was written for); a check that reports a wider interval (rel_uncertainty) widens it


@dataclass(frozen=True)
class TailShape:
    """The excess after a stop, as a share of its first value: 1 up to `hold_s`, then
    exp(-(t - hold_s) / tau_s); with a `fast_share` of it decaying from the stop with
    `fast_tau_s` instead (a fall that is not a step: a fast and a slow part)."""

    hold_s: float
    tau_s: float
    fast_share: float = 0.0
    fast_tau_s: float = 0.02

    def __post_init__(self):
        if not (self.hold_s >= 0 and self.tau_s > 0):
            raise ValueError(f"need hold_s >= 0 and tau_s > 0, got {self}")
        if not (0 <= self.fast_share <= 1 and self.fast_tau_s > 0):
            raise ValueError(f"need 0 <= fast_share <= 1 and fast_tau_s > 0, got {self}")

    def at(self, elapsed_s):
        """The shape `elapsed_s` after the stop (0 before it); numbers or numpy arrays."""
        elapsed = np.asarray(elapsed_s)
        decayed = np.exp(-np.maximum(elapsed - self.hold_s, 0.0) / self.tau_s)
        if self.fast_share:
            fast = np.exp(-np.maximum(elapsed, 0.0) / self.fast_tau_s)
            decayed = (1 - self.fast_share) * decayed + self.fast_share * fast
        return np.where(elapsed < 0, 0.0, decayed)

    def integral_s(self, start_s, end_s):
        """Seconds at the full excess between `start_s` and `end_s` after the stop (0 where
        end <= start); numbers or numpy arrays."""
        start_s, end_s = np.maximum(start_s, 0.0), np.maximum(end_s, 0.0)
        flat = np.clip(np.minimum(end_s, self.hold_s) - start_s, 0.0, None)
        a, b = np.maximum(start_s, self.hold_s), np.maximum(end_s, self.hold_s)
        slow = TailShape(self.hold_s, self.tau_s) if self.fast_share else self
        area = flat + self.tau_s * (slow.at(a) - slow.at(b))
        if self.fast_share:
            fast = self.fast_tau_s * (
                np.exp(-start_s / self.fast_tau_s) - np.exp(-end_s / self.fast_tau_s)
            )
            area = (1 - self.fast_share) * area + self.fast_share * fast
        return np.where(end_s > start_s, area, 0.0)


@dataclass(frozen=True)
class TailCalibration:
    """A board's tail as its check measured it after a load of `load_dynamic_w` above idle."""

    excess_w: float  # right after the load stopped
    load_dynamic_w: float  # the check's load above idle: excess_w / this is the share
    hold_s: float
    tau_s: float
    source: str = "given"
    rel_uncertainty: float = CHECK_REL_UNCERTAINTY  # how far off the measured excess may be
    fast_share: float = 0.0  # of the excess decaying from the stop with fast_tau_s
    fast_tau_s: float = 0.02

    def __post_init__(self):
        if not (self.excess_w >= 0 and self.load_dynamic_w > 0 and self.rel_uncertainty >= 0):
            raise ValueError(f"need excess_w >= 0, load_dynamic_w > 0: {self}")
        TailShape(self.hold_s, self.tau_s, self.fast_share, self.fast_tau_s)  # range-checked

    @property
    def share(self) -> float:
        return self.excess_w / self.load_dynamic_w

    @property
    def shape(self) -> TailShape:
        return TailShape(self.hold_s, self.tau_s, self.fast_share, self.fast_tau_s)

    def excess_after(
        self, dynamic_w: float, peak_dynamic_w: float | None = None
    ) -> tuple[float, float]:
        """(estimate, half-width) of the excess in watts after work `dynamic_w` above idle
        (its mean): the middle of what the candidate models say, +- half their spread and
        the check's uncertainty. The models: `constant` (the check's excess, whatever the
        work) and `dynamic` (the check's share of the work's power above idle); where the
        window's readings saw the work draw more than its mean (`peak_dynamic_w`: its compute
        phases, between host gaps), the share of that too: an excess that follows the
        compute phase's own power (issue 40 item 11) is neither of the first two."""
        candidates = [self.excess_w, self.share * max(dynamic_w, 0.0)]
        if peak_dynamic_w is not None and math.isfinite(peak_dynamic_w):
            candidates.append(self.share * max(peak_dynamic_w, dynamic_w, 0.0))
        low, high = min(candidates), max(candidates)
        estimate = 0.5 * (low + high)
        return estimate, 0.5 * (high - low) + self.rel_uncertainty * estimate


@dataclass(frozen=True)
class ShiftTail:
    """A window's phase shifts' tail: the excess energy taken out, the half-width of what it
    may be off, and the CI's extra reach below (where the tail is not known)."""

    excess_j: float = 0.0
    bound_j: float = 0.0
    below_j: float = 0.0
    source: str = ""


def shift_tail(
    cal: TailCalibration | None,
    waits_s: list[float],
    dynamic_w: float,
    peak_dynamic_w: float | None = None,
) -> ShiftTail:
    """The excess energy of a window's phase shifts (`waits_s`, each right after a sync),
    with work `dynamic_w` above idle before each (`peak_dynamic_w`: the most its readings
    saw, TailCalibration.excess_after): the calibration's estimate, or without one nothing
    taken out and the largest assumed tail (a plateau through every shift) as the CI's
    reach below."""
    waits = [w for w in waits_s if w > 0]
    if not waits or not math.isfinite(dynamic_w):
        return ShiftTail()
    if cal is None:
        return ShiftTail(below_j=ASSUMED_MAX_SHARE * max(dynamic_w, 0.0) * sum(waits),
                         source=ASSUMED)  # fmt: skip
    seconds = float(np.sum(cal.shape.integral_s(0.0, np.asarray(waits))))
    excess_w, half_w = cal.excess_after(dynamic_w, peak_dynamic_w)
    return ShiftTail(excess_w * seconds, half_w * seconds, 0.0, CHECK)


def from_report(report: dict | None) -> TailCalibration | None:
    """The board's tail from a `joulebench check` report's protocol.tail; None where the
    check did not measure it."""
    tail = ((report or {}).get("protocol") or {}).get("tail")
    if not tail:
        return None
    source = f"check {report.get('check_id', '')}".strip()
    reported = float(tail.get("rel_uncertainty") or math.nan)  # older reports: none
    return TailCalibration(
        float(tail["excess_w"]),
        float(tail["load_dynamic_w"]),
        float(tail["hold_s"]),
        float(tail["tau_s"]),
        source,
        max(CHECK_REL_UNCERTAINTY, reported) if math.isfinite(reported) else CHECK_REL_UNCERTAINTY,
        float(tail.get("fast_share", 0.0)),
        float(tail.get("fast_tau_s", 0.02)),
    )
