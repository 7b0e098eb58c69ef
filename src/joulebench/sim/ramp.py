"""Clocks that ramp: a board's power rising slowly when work starts (an assumption).

A real board at idle clocks does not draw its busy power the moment kernels start: its
clocks (and voltage) climb over tens to hundreds of ms, and fall again when it idles. No
vendor publishes the rates, so they are assumptions of this simulator, off by default
(issue 40 item 11): a clock state c in [0, 1] rises towards 1 under load with `up_s` and
falls towards 0 at idle with `down_s`, and work draws idle + c x its dynamic power (the work
takes as long; only its power ramps). A board starts idle (c = 0). The tail after the work
(sim.tail) takes its share of the power the work had reached. `drawn` draws both from ranges
wider than the 20-200 ms rise reported. docs/protocol.md#the-power-tail.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

UP_RANGE_S = (0.01, 0.3)  # the rise's time constant, drawn log-uniform
DOWN_RANGE_S = (0.05, 3.0)  # the fall's at idle, drawn log-uniform


@dataclass(frozen=True)
class ClockRamp:
    """A board's clock ramp: time constants of the rise under load and the fall at idle."""

    up_s: float = 0.1
    down_s: float = 0.5

    def __post_init__(self):
        if not (self.up_s > 0 and self.down_s > 0):
            raise ValueError(f"need up_s > 0 and down_s > 0: {self}")

    def after_work(self, state: float, seconds: float) -> float:
        """The clock state after `seconds` of work from `state`."""
        return 1.0 - (1.0 - state) * math.exp(-seconds / self.up_s)

    def after_idle(self, state: float, seconds: float) -> float:
        """The clock state after `seconds` at idle from `state`."""
        return state * math.exp(-seconds / self.down_s)

    def rise(self, state: float, dynamic_w: float) -> tuple[tuple[float, float], ...]:
        """The work's power short of its level, as a decaying term (negative) for
        PowerSignal.hold: (-(1 - state) x dynamic_w, up_s)."""
        if state >= 1.0 or not dynamic_w:
            return ()
        return ((-(1.0 - state) * dynamic_w, self.up_s),)


def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def drawn(rng: random.Random) -> ClockRamp:
    """A board's ramp drawn from the swept ranges (UP_RANGE_S, DOWN_RANGE_S)."""
    return ClockRamp(up_s=_log_uniform(rng, *UP_RANGE_S), down_s=_log_uniform(rng, *DOWN_RANGE_S))
