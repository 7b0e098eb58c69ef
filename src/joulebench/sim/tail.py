"""The power tail: what a simulated board draws after its work stops (assumptions).

A real board does not fall to idle power the moment its kernels end. No vendor publishes the
shape per board, so it is an assumption of this simulator, with the ranges the proofs sweep
(`drawn`; `DEVICE_TAIL` for the simulated devices): right after work stops the board keeps
an excess of `share` of a dynamic power, that of the work that just stopped
(`scales="dynamic"`) or the board's reference busy power above idle (`scales="constant"`);
it holds for `hold_s`, then decays exponentially with `tau_s`; new work ends it. So the
workload's own gaps draw the excess (part of its truth), and so do the protocol's phase
shifts (which are not: core.tail takes them out). docs/protocol.md#the-power-tail.

Wider (issue 40 item 11, off by default): a `fast_share` of the excess decays from the stop
with `fast_tau_s` instead (a fall that is not a step: a fast and a slow part, with or without
a plateau); `drawn_wide` draws them from ranges wider than any board reported.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

SCALES = ("dynamic", "constant")
SHARE_RANGE = (0.0, 0.40)
HOLD_RANGE_S = (0.0, 0.5)
TAU_RANGE_S = (0.05, 2.0)  # drawn log-uniform
NO_TAIL_SHARE = 0.2  # of the drawn boards have no tail at all


@dataclass(frozen=True)
class Tail:
    """One board's tail: excess share, plateau, decay time constant, what the share is of."""

    share: float = 0.2
    hold_s: float = 0.1
    tau_s: float = 0.3
    scales: str = "dynamic"
    reference_busy_w: float = 300.0  # the busy power `constant` takes its share of
    fast_share: float = 0.0  # of the excess decaying from the stop with fast_tau_s
    fast_tau_s: float = 0.02

    def __post_init__(self):
        if not (0 <= self.share <= 1 and self.hold_s >= 0 and self.tau_s > 0):
            raise ValueError(f"need 0 <= share <= 1, hold_s >= 0, tau_s > 0: {self}")
        if not (0 <= self.fast_share <= 1 and self.fast_tau_s > 0):
            raise ValueError(f"need 0 <= fast_share <= 1 and fast_tau_s > 0: {self}")
        if self.scales not in SCALES:
            raise ValueError(f"scales must be one of {SCALES}, not {self.scales!r}")

    def excess_w(self, work_w: float, idle_w: float) -> float:
        """The excess over idle right after work drawing `work_w` stops."""
        busy_w = work_w if self.scales == "dynamic" else self.reference_busy_w
        return self.share * max(busy_w - idle_w, 0.0)

    def shape(self, elapsed_s: float) -> float:
        """The excess `elapsed_s` after work stopped, as a share of its first value."""
        slow = self._slow_at(elapsed_s)
        if not self.fast_share:
            return slow
        fast = math.exp(-max(elapsed_s, 0.0) / self.fast_tau_s)
        return (1 - self.fast_share) * slow + self.fast_share * fast

    def _slow_at(self, elapsed_s: float) -> float:
        """The plateau-then-decay part (1 at the stop)."""
        return math.exp(-max(elapsed_s - self.hold_s, 0.0) / self.tau_s)

    def _slow_integral_s(self, start_s: float, end_s: float) -> float:
        """The plateau-then-decay part's integral over [start, end] after the stop."""
        flat = max(0.0, min(end_s, self.hold_s) - start_s)
        a, b = max(start_s, self.hold_s), max(end_s, self.hold_s)
        return flat + (self.tau_s * (self._slow_at(a) - self._slow_at(b)) if b > a else 0.0)

    def integral_s(self, start_s: float, duration_s: float) -> float:
        """The integral of `shape` from `start_s` to `start_s + duration_s` after the stop
        (seconds at the full excess)."""
        if duration_s <= 0:
            return 0.0
        end_s = start_s + duration_s
        slow = self._slow_integral_s(start_s, end_s)
        if not self.fast_share:
            return slow
        f = self.fast_tau_s
        fast = f * (math.exp(-start_s / f) - math.exp(-end_s / f))
        return (1 - self.fast_share) * slow + self.fast_share * fast

    def pieces(self, start_s: float, duration_s: float) -> list[tuple[float, float, tuple]]:
        """An idle stretch from `start_s` after the stop, as signal segments: [(seconds,
        steady excess (share of the first), ((decaying excess at the segment's start, its
        time constant), ...))]: the plateau, then the decay; the fast part over both."""
        out, slow = [], 1.0 - self.fast_share
        if start_s < self.hold_s:
            flat = min(self.hold_s - start_s, duration_s)
            out.append((flat, slow, self._fast_at(start_s)))
            start_s, duration_s = start_s + flat, duration_s - flat
        if duration_s > 0:
            amplitude = self._slow_at(start_s)
            first = ((amplitude if not self.fast_share else slow * amplitude, self.tau_s),)
            out.append((duration_s, 0.0, first + self._fast_at(start_s)))
        return out

    def _fast_at(self, start_s: float) -> tuple:
        """The fast part's (amplitude, time constant) `start_s` after the stop (none: ())."""
        if not self.fast_share:
            return ()
        return ((self.fast_share * math.exp(-start_s / self.fast_tau_s), self.fast_tau_s),)


#: The simulated devices' boards (`sim:h100`, ...; their check target the same): an excess of
#: 15 % of the reference load's dynamic power for 0.2 s, decaying over 0.5 s after it: a board
#: idling at raised clocks (an assumption inside the swept ranges, not a published figure).
DEVICE_TAIL = Tail(share=0.15, hold_s=0.2, tau_s=0.5, scales="constant")


def drawn(rng: random.Random, reference_busy_w: float = 300.0) -> Tail | None:
    """A board's tail drawn from the swept ranges (None: no tail, NO_TAIL_SHARE of boards)."""
    if rng.random() < NO_TAIL_SHARE:
        return None
    low, high = TAU_RANGE_S
    return Tail(
        share=rng.uniform(*SHARE_RANGE),
        hold_s=rng.uniform(*HOLD_RANGE_S),
        tau_s=math.exp(rng.uniform(math.log(low), math.log(high))),
        scales=rng.choice(SCALES),
        reference_busy_w=reference_busy_w,
    )
