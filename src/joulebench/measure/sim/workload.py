"""The true power of a simulated GPU: what an external meter on the board would see.

A `PowerSignal` is board power over simulated time, built segment by segment: in each
segment the power approaches a target level as a first-order system with time constant
`tau_s` (the rise and fall of real boards take milliseconds). Its integral is exact, so the
energy the sensor misses can be computed, not guessed.

A `SimGpu` runs work on that signal and moves the shared `SimClock`:
- `batch(workload)`: one batch of a `Workload`, `kernel_s` at busy power then a host gap
  (`gap_s`) at idle power, the shape of an inference loop;
- `busy(seconds)` / `idle(seconds)`: the square-wave load of `joulebench check`;
- `sleep` is `idle`, so the protocol's pauses are idle time on the GPU.

Clock throttling (optional): with a power limit below the busy power, the GPU lowers its
clock until it fits, as power capping does. Dynamic power scales with f^3 (voltage scales with
frequency) and kernel time with 1/f, so a lower limit means longer kernels at lower power.
Inputs of all zeros draw `zeros_dynamic` of the dynamic power of random inputs (fewer bit
flips); the default 0.85 is an assumption of this simulator, not a published figure.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass

from joulebench.measure.sim.clock import SimClock
from joulebench.tables import INPUT_KINDS


class PowerSignal:
    """Board power as a chain of first-order segments; exact energy over any interval."""

    def __init__(self, start_s: float, power_w: float, tau_s: float = 0.003):
        if tau_s < 0:
            raise ValueError(f"tau_s must be >= 0, got {tau_s}")
        self.tau_s = float(tau_s)
        self._t = [float(start_s)]  # segment starts
        self._target: list[float] = []
        self._p0 = [float(power_w)]  # power at each segment start
        self._e = [0.0]  # energy from start_s to each segment start
        self.end_s = float(start_s)

    @property
    def start_s(self) -> float:
        return self._t[0]

    def _seg_energy(self, i: int, x: float) -> float:
        target, p0 = self._target[i], self._p0[i]
        if self.tau_s == 0:
            return target * x
        return target * x + (p0 - target) * self.tau_s * (1.0 - math.exp(-x / self.tau_s))

    def _seg_power(self, i: int, x: float) -> float:
        target, p0 = self._target[i], self._p0[i]
        if self.tau_s == 0:
            return target
        return target + (p0 - target) * math.exp(-x / self.tau_s)

    def hold(self, duration_s: float, target_w: float) -> None:
        """Append `duration_s` in which the power approaches `target_w`."""
        if duration_s <= 0:
            return
        i = len(self._target)
        self._target.append(float(target_w))
        p_end = self._seg_power(i, duration_s)
        e_end = self._e[i] + self._seg_energy(i, duration_s)
        self.end_s = self._t[i] + duration_s
        self._t.append(self.end_s)
        self._p0.append(p_end)
        self._e.append(e_end)

    def _locate(self, t: float) -> tuple[int, float]:
        if t < self._t[0] - 1e-12 or t > self.end_s + 1e-9:
            raise ValueError(f"t={t} outside the signal [{self._t[0]}, {self.end_s}]")
        i = min(max(bisect.bisect_right(self._t, t) - 1, 0), len(self._target) - 1)
        return i, max(0.0, t - self._t[i])

    def cumulative_j(self, t: float) -> float:
        """Energy from the start of the signal to `t`."""
        if not self._target:
            return 0.0
        i, x = self._locate(t)
        return self._e[i] + self._seg_energy(i, x)

    def energy_j(self, a: float, b: float) -> float:
        """Exact energy over [a, b] (before the signal's start, at its first power)."""
        start = self._t[0]
        before = max(0.0, min(b, start) - a) * self._p0[0]
        a, b = max(a, start), max(b, start)
        return before + self.cumulative_j(b) - self.cumulative_j(a)

    def power_w(self, t: float) -> float:
        if not self._target or t <= self._t[0]:
            return self._p0[0]
        i, x = self._locate(t)
        return self._seg_power(i, x)


@dataclass
class Workload:
    """A periodic batch loop: `duty` of each period in kernels at busy power, then a host gap."""

    period_s: float
    duty: float = 0.75
    busy_w: float = 300.0  # board power while kernels run (random inputs)
    images_per_batch: int = 64
    jitter: float = 0.0  # relative std of kernel time per batch (0: perfectly periodic)
    input_kind: str = "random"  # or "zeros"

    def __post_init__(self):
        if not self.period_s > 0 or not 0 < self.duty <= 1:
            raise ValueError(f"need period_s > 0 and 0 < duty <= 1, got {self}")
        if self.input_kind not in INPUT_KINDS:
            raise ValueError(f"input_kind must be random or zeros, not {self.input_kind!r}")

    @property
    def kernel_s(self) -> float:
        return self.period_s * self.duty

    @property
    def gap_s(self) -> float:
        return self.period_s - self.kernel_s


class SimGpu:
    """A GPU on simulated time: runs batches, busy/idle stretches, and sleeps."""

    def __init__(
        self,
        clock: SimClock,
        *,
        idle_w: float = 60.0,
        tau_s: float = 0.003,
        power_limit_w: float | None = None,
        max_sm_clock_mhz: float = 1980.0,
        zeros_dynamic: float = 0.85,
        seed: int = 0,
    ):
        self.clock = clock
        self.idle_w = float(idle_w)
        self.power_limit_w = power_limit_w
        self.max_sm_clock_mhz = float(max_sm_clock_mhz)
        self.zeros_dynamic = float(zeros_dynamic)
        self.signal = PowerSignal(clock(), idle_w, tau_s)
        self.sm_clock_mhz = self.max_sm_clock_mhz * 0.3  # idle clocks
        self.batches = 0
        self._rng = random.Random(seed)

    # -- physics --

    def _throttled(self, busy_w: float, seconds: float) -> tuple[float, float, float]:
        """(power, duration, clock factor) of work wanting `busy_w` for `seconds` at full clock."""
        limit = self.power_limit_w
        if limit is None or busy_w <= limit or busy_w <= self.idle_w:
            return busy_w, seconds, 1.0
        f = ((max(limit, self.idle_w) - self.idle_w) / (busy_w - self.idle_w)) ** (1 / 3)
        f = max(f, 0.05)
        return self.idle_w + (busy_w - self.idle_w) * f**3, seconds / f, f

    def _run(self, seconds: float, power_w: float, clock_factor: float) -> None:
        self.signal.hold(seconds, power_w)
        self.sm_clock_mhz = self.max_sm_clock_mhz * clock_factor
        self.clock.advance_to(self.signal.end_s)

    def busy_power_w(self, workload_busy_w: float, input_kind: str = "random") -> float:
        dynamic = workload_busy_w - self.idle_w
        if input_kind == "zeros":
            dynamic *= self.zeros_dynamic
        return self.idle_w + dynamic

    # -- work --

    def batch(self, workload: Workload) -> None:
        """One batch: kernels (throttled if the limit says so), then the host gap."""
        kernel_s = workload.kernel_s
        if workload.jitter:
            kernel_s *= max(0.1, 1.0 + self._rng.gauss(0.0, workload.jitter))
        busy = self.busy_power_w(workload.busy_w, workload.input_kind)
        power, seconds, f = self._throttled(busy, kernel_s)
        self._run(seconds, power, f)
        if workload.gap_s > 0:
            self._run(workload.gap_s, self.idle_w, f)
        self.batches += 1

    def busy(self, seconds: float, busy_w: float, input_kind: str = "random") -> None:
        """Busy for `seconds` of wall time (a matmul loop), at most the power limit."""
        power, _, f = self._throttled(self.busy_power_w(busy_w, input_kind), seconds)
        self._run(seconds, power, f)

    def idle(self, seconds: float) -> None:
        if seconds > 0:
            self._run(seconds, self.idle_w, 0.3)

    sleep = idle

    def sync(self) -> None:
        """Work is simulated synchronously: nothing is queued, so nothing to wait for."""

    def true_energy_per_batch_j(self, workload: Workload) -> float:
        """Steady-state energy of one batch: with first-order smoothing (DC gain 1) the mean
        power over a period is the schedule's own, so this is exact without simulating."""
        busy = self.busy_power_w(workload.busy_w, workload.input_kind)
        power, seconds, _ = self._throttled(busy, workload.kernel_s)
        return power * seconds + self.idle_w * workload.gap_s

    def temperature_c(self) -> float:
        """A crude thermal model: 30 C plus 0.12 C per watt of the last 5 s mean power."""
        t = self.clock()
        start = max(self.signal.start_s, t - 5.0)
        if t - start <= 0:
            return 30.0 + 0.12 * self.idle_w
        return 30.0 + 0.12 * self.signal.energy_j(start, t) / (t - start)
