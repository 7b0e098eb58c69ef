"""NVIDIA's on-board power sensor, simulated per GPU generation over a true power signal.

The reading refreshes every `refresh_s` and is the mean true power over the last `window_s`
of each refresh period (a boxcar; with `delay_s`, a window that ends that long before the
refresh: a sensor reporting late, issue 40 item 11) plus noise (`noise_w`), in whole mW,
constant between refreshes; the averaged field is the mean of the last second's readings.
The energy counter (mJ from an arbitrary offset) adds each reading times `refresh_s` at its
refresh, blind where the reading is (`counter="sensor"`, an assumption), or is the exact
integral up to the last refresh (`counter="exact"`). The published behaviour and its sources:
core.meters.nvidia_sensors, docs/measurement.md#the-protocol-against-simulated-sensors.
State advances lazily: each query processes the refreshes up to the clock's now, in order
(queries never go back in time), so nothing runs while nobody reads.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from joulebench.core.meters.nvidia_sensors import SensorSpec
from joulebench.sim.clock import SimClock
from joulebench.sim.workload import PowerSignal

AVERAGE_S = 1.0  # the averaged field's span


class SimSensor:
    """One GPU's power sensor and energy counter, read at the clock's current time."""

    def __init__(
        self,
        signal: PowerSignal,
        spec: SensorSpec,
        clock: SimClock,
        *,
        phase_s: float = 0.0,
        noise_w: float = 0.3,
        counter: str = "sensor",
        energy_offset_mj: int = 987_654_321,
        seed: int = 0,
        refresh_s: float | None = None,
        window_s: float | None = None,
        delay_s: float = 0.0,
        gain: float = 1.0,
        offset_w: float = 0.0,
    ):
        if counter not in ("sensor", "exact"):
            raise ValueError(f"counter must be 'sensor' or 'exact', not {counter!r}")
        self.signal, self.spec, self.clock = signal, spec, clock
        self.refresh_s = float(refresh_s or spec.refresh_s)
        self.window_s = float(window_s or spec.window_s)
        if not 0 < self.window_s <= self.refresh_s:
            raise ValueError(
                f"need 0 < window_s <= refresh_s, got {self.window_s}, {self.refresh_s}"
            )
        if delay_s < 0:
            raise ValueError(f"need delay_s >= 0, got {delay_s}")
        self.delay_s = float(delay_s)
        self.gain, self.offset_w = float(gain), float(offset_w)  # a board's own (sim.boards)
        self.counter = counter
        self.noise_w = float(noise_w)
        self.energy_offset_mj = int(energy_offset_mj)
        self._rng = np.random.default_rng(seed)
        start = signal.start_s
        # the first refresh whose whole window lies on the signal
        self._k = math.ceil((start + self.window_s + delay_s - phase_s) / self.refresh_s - 1e-9)
        self.phase_s = float(phase_s)
        self.reading_w = signal.power_w(start)  # before the first refresh: the start power
        self.refreshes = 0
        self._recent: collections.deque[float] = collections.deque(
            maxlen=max(1, round(AVERAGE_S / self.refresh_s))
        )
        self._sensor_j = 0.0  # what the counter has added so far (counter="sensor")
        self._counted_to_s = start  # the counter covers the true energy up to here ("exact")

    def _next_refresh_s(self) -> float:
        return self.phase_s + self._k * self.refresh_s

    def _catch_up(self) -> None:
        now = self.clock()
        while (t := self._next_refresh_s()) <= now + 1e-12:
            seen = t - self.delay_s  # the window ends this long before the refresh
            true_w = self.signal.energy_j(seen - self.window_s, seen) / self.window_s
            mean_w = self.gain * true_w + self.offset_w
            noisy = mean_w + (self._rng.normal(0.0, self.noise_w) if self.noise_w else 0.0)
            self.reading_w = round(max(noisy, 0.0) * 1000.0) / 1000.0  # whole mW
            self._recent.append(self.reading_w)
            self._sensor_j += self.reading_w * self.refresh_s
            self._counted_to_s = t
            self.refreshes += 1
            self._k += 1

    # -- what NVML answers --

    def instant_mw(self) -> int:
        self._catch_up()
        return int(round(self.reading_w * 1000))

    def average_mw(self) -> int:
        self._catch_up()
        if not self._recent:
            return int(round(self.reading_w * 1000))
        return int(round(sum(self._recent) / len(self._recent) * 1000))

    def power_usage_mw(self) -> int:
        """nvmlDeviceGetPowerUsage: the instant reading, or the 1 s average (spec.power_usage)."""
        return self.average_mw() if self.spec.power_usage == "average-1s" else self.instant_mw()

    def energy_mj(self) -> int:
        self._catch_up()
        if self.counter == "exact":  # the integral, through this board's gain and offset
            start = self.signal.start_s
            joules = self.gain * self.signal.energy_j(start, self._counted_to_s)
            joules += self.offset_w * (self._counted_to_s - start)
        else:
            joules = self._sensor_j
        return self.energy_offset_mj + int(joules * 1000)
