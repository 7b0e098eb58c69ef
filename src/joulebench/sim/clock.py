"""A simulated clock: seconds that pass only when the simulated GPU works or idles.

The protocol, the NVML meter and its sampler all take a clock, so handing them one
`SimClock` puts the whole measurement on simulated time: a 30 s protocol run takes
milliseconds and every number is reproducible. `every()` replaces the sampler's thread:
callbacks fire at their exact simulated instants while time advances.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable


class SimClock:
    """Simulated seconds. Call it for the time; only `advance_to` moves it."""

    def __init__(self, start_s: float = 0.0):
        self.now = float(start_s)
        self._timers: list[tuple[float, int, float, Callable[[], object], list[bool]]] = []
        self._seq = itertools.count()

    def __call__(self) -> float:
        return self.now

    def every(self, interval_s: float, callback: Callable[[], object]) -> Callable[[], None]:
        """Call `callback` every `interval_s` from now on; returns a function that stops it."""
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        alive = [True]
        heapq.heappush(
            self._timers, (self.now + interval_s, next(self._seq), interval_s, callback, alive)
        )

        def cancel() -> None:
            alive[0] = False

        return cancel

    def advance_to(self, t_s: float) -> None:
        """Move to `t_s`, firing due timers in time order at their own instants."""
        if t_s < self.now:
            raise ValueError(f"time runs forward: {t_s} < {self.now}")
        while self._timers and self._timers[0][0] <= t_s:
            due, _, interval, callback, alive = heapq.heappop(self._timers)
            if not alive[0]:
                continue
            self.now = due
            heapq.heappush(
                self._timers, (due + interval, next(self._seq), interval, callback, alive)
            )
            callback()
        self.now = t_s

    def advance(self, dt_s: float) -> None:
        self.advance_to(self.now + dt_s)
