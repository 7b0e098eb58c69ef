"""The true power of a simulated GPU: what an external meter on the board would see.

A `PowerSignal` is board power over simulated time, built segment by segment: in each
segment the power approaches a target level as a first-order system (`tau_s`). Its integral
is exact, so the energy the sensor misses can be computed, not guessed. A `SimGpu` runs work
on it and moves the shared `SimClock`: `batch(workload)` (kernels at busy power, then a host
gap at idle power), `busy` / `idle` (the square wave of `joulebench check`), `sleep` (idle,
so the protocol's pauses are idle time). Optional, each an assumption of this simulator:
clock throttling under a power limit, inputs of zeros (`zeros_dynamic`), heat (`thermal=`,
sim.thermal), the power tail after work (`tail=`, sim.tail), clocks that ramp (`ramp=`,
sim.ramp) and irregular work (a `Workload`'s jitter, host-bound duty and host pauses).
What each models: docs/measurement.md#the-protocol-against-simulated-sensors.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass

from joulebench.sim.clock import SimClock
from joulebench.sim.ramp import ClockRamp
from joulebench.sim.tail import Tail
from joulebench.sim.thermal import STEP_S, Thermal
from joulebench.tables import INPUT_KINDS

# a jittered host pause is 0.5-1.5 x its mean (Workload.pause_jitter), uniformly: midpoints
_PAUSE_SPREAD = tuple(0.5 + (i + 0.5) / 40 for i in range(40))


class PowerSignal:
    """Board power as a chain of first-order segments; exact energy over any interval.

    In each segment the power approaches a target with the board's time constant `tau_s`;
    the target is a level plus a part that decays exponentially (`decay_w`, `decay_tau_s`:
    the board's power tail after work stops, sim.tail), so a tail is exact, not stepped.
    """

    def __init__(self, start_s: float, power_w: float, tau_s: float = 0.003):
        if tau_s < 0:
            raise ValueError(f"tau_s must be >= 0, got {tau_s}")
        self.tau_s = float(tau_s)
        self._t = [float(start_s)]  # segment starts
        self._target: list[float] = []
        self._decay: list[tuple[tuple[float, float], ...]] = []  # each segment's (w, tau)s
        self._p0 = [float(power_w)]  # power at each segment start
        self._e = [0.0]  # energy from start_s to each segment start
        self.end_s = float(start_s)

    @property
    def start_s(self) -> float:
        return self._t[0]

    def _terms(self, i: int) -> tuple[float, list[tuple[float, float]], float]:
        """(level, [(decaying amplitude K, its time constant)], fast amplitude C) of segment
        i: power(x) = level + sum K e^(-x/tau_d) + C e^(-x/tau), the first-order response
        to a target level + sum A e^(-x/tau_d) that starts at the segment's first power."""
        level, c, terms = self._target[i], self._p0[i] - self._target[i], []
        for decay_w, tau_d in self._decay[i]:
            k = decay_w * tau_d / (tau_d - self.tau_s) if tau_d != self.tau_s else decay_w
            terms.append((k, tau_d))
            c -= k
        return level, terms, c

    def _seg_energy(self, i: int, x: float) -> float:
        level, terms, c = self._terms(i)
        energy = level * x
        for k, tau_d in terms:
            energy += k * tau_d * -math.expm1(-x / tau_d)
        if self.tau_s:
            energy += c * self.tau_s * -math.expm1(-x / self.tau_s)
        return energy

    def _seg_power(self, i: int, x: float) -> float:
        level, terms, c = self._terms(i)
        power = level
        for k, tau_d in terms:
            power += k * math.exp(-x / tau_d)
        if self.tau_s:
            power += c * math.exp(-x / self.tau_s)
        return power

    def hold(
        self,
        duration_s: float,
        target_w: float,
        decay_w: float = 0.0,
        decay_tau_s: float = 1.0,
        *,
        decays: tuple[tuple[float, float], ...] = (),
    ) -> None:
        """Append `duration_s` in which the power approaches `target_w` plus `decay_w` that
        decays with `decay_tau_s` from the segment's start (and each (w, tau) of `decays`,
        negative for a rise: sim.ramp's clocks)."""
        if duration_s <= 0:
            return
        pairs = (((float(decay_w), float(decay_tau_s)),) if decay_w else ()) + tuple(
            (float(w), float(tau)) for w, tau in decays if w
        )
        if any(not tau > 0 for _, tau in pairs):
            raise ValueError(f"a decay's time constant must be > 0, got {pairs}")
        i = len(self._target)
        self._target.append(float(target_w))
        self._decay.append(pairs)
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
    period_jitter: float = 0.0  # relative std of each batch's whole period
    # a host-bound loop (duty < 1: the GPU waits on the host's kernel launches): relative std
    # of the host's time per batch, which is the period; the kernels' time stays, the gap
    # takes the host's jitter (a GPU-bound loop's queue would absorb it)
    host_jitter: float = 0.0
    pause_s: float = 0.0  # a host pause at idle power...
    pause_every: int = 0  # ...every this many batches (0: never)
    pause_jitter: bool = False  # interval N/2-3N/2 batches, pause 0.5-1.5 x pause_s

    def __post_init__(self):
        if not self.period_s > 0 or not 0 < self.duty <= 1:
            raise ValueError(f"need period_s > 0 and 0 < duty <= 1, got {self}")
        if min(self.pause_s, self.pause_every, self.period_jitter, self.host_jitter) < 0:
            raise ValueError(
                f"need pause_s, pause_every, period_jitter, host_jitter >= 0, got {self}"
            )
        if self.input_kind not in INPUT_KINDS:
            raise ValueError(f"input_kind must be random or zeros, not {self.input_kind!r}")

    @property
    def kernel_s(self) -> float:
        return self.period_s * self.duty

    @property
    def gap_s(self) -> float:
        return self.period_s - self.kernel_s

    @property
    def pause_per_batch_s(self) -> float:
        """Mean host pause per batch (jittered or not, the means are the same)."""
        return self.pause_s / self.pause_every if self.pause_every and self.pause_s else 0.0

    def next_pause_in(self, rng) -> int:
        """Batches until the next host pause."""
        if not self.pause_jitter:
            return self.pause_every
        half = self.pause_every // 2
        return rng.randint(self.pause_every - half, self.pause_every + half)


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
        thermal: Thermal | None = None,
        tail: Tail | None = None,
        ramp: ClockRamp | None = None,
        seed: int = 0,
        silicon: float = 1.0,
        nominal_idle_w: float | None = None,
    ):
        self.clock = clock
        self.silicon = float(silicon)  # this board's dynamic power for the same work (sim.boards)
        # a workload's busy power is the nominal board's: its dynamic part is above this idle
        self.nominal_idle_w = float(idle_w if nominal_idle_w is None else nominal_idle_w)
        self.tail = tail
        self.ramp = ramp
        self.clock_state = 0.0  # how far the clocks have risen (sim.ramp; 0: idle clocks)
        self._work_w: float | None = None  # the level of the last work (the tail's source)
        self._stopped_s: float | None = None  # when it stopped (None: working, or no work)
        self.thermal = thermal.with_ref(idle_w) if thermal else None
        self.temp_c = self.thermal.ref_c if self.thermal else math.nan  # heat only
        self._to_pause: int | None = None  # batches until the workload's next host pause
        self.idle_w = float(idle_w)
        self.power_limit_w = power_limit_w
        self.max_sm_clock_mhz = float(max_sm_clock_mhz)
        self.locked_sm_clock_mhz: float | None = None  # NVML's locked clocks (min = max)
        self.zeros_dynamic = float(zeros_dynamic)
        self.signal = PowerSignal(clock(), idle_w, tau_s)
        self.sm_clock_mhz = self.max_sm_clock_mhz * 0.3  # idle clocks
        self.batches = 0
        self._rng = random.Random(seed)

    # -- physics --

    def _throttled(
        self, busy_w: float, seconds: float, temp_c: float | None = None
    ) -> tuple[float, float, float]:
        """(power, duration, clock factor) of work wanting `busy_w` for `seconds` at full clock,
        under the power limit, a locked clock and (with heat) the temperature limit at
        `temp_c` (now): the lowest clock any of them allows."""
        f = 1.0
        limit = self.power_limit_w
        if limit is not None and busy_w > limit and busy_w > self.idle_w:
            f = ((max(limit, self.idle_w) - self.idle_w) / (busy_w - self.idle_w)) ** (1 / 3)
        if self.thermal is not None and busy_w > self.idle_w:
            f = min(f, self.thermal.clock_factor(self.temp_c if temp_c is None else temp_c))
        if self.locked_sm_clock_mhz and busy_w > self.idle_w:
            f = min(f, self.locked_sm_clock_mhz / self.max_sm_clock_mhz)
        if f >= 1.0:
            return busy_w, seconds, 1.0
        f = max(f, 0.05)
        return self.idle_w + (busy_w - self.idle_w) * f**3, seconds / f, f

    def _run(self, seconds: float, power_w: float, clock_factor: float) -> None:
        self.hold_level(seconds, power_w, advance=True)
        self.sm_clock_mhz = self.max_sm_clock_mhz * clock_factor
        self.clock.advance_to(self.signal.end_s)

    def hold_level(self, seconds: float, power_w: float, advance: bool = False) -> None:
        """Draw `power_w` (at ref_c) for `seconds`: with heat, leakage scales it by the
        temperature of each piece and the temperature moves with the power drawn. `advance`
        moves the clock piece by piece, so timers (a meter's sampler) read the temperature
        as it was; a board whose clock moves by itself (sim.wall) leaves it. A level at or
        below idle after work draws the board's tail on top (sim.tail); with clocks that
        ramp (sim.ramp), work draws its dynamic power as far as the clocks have risen."""
        for piece_s, level_w, decays in self._tail_pieces(seconds, power_w):
            self._hold_piece(piece_s, level_w, decays, advance)

    def _tail_pieces(self, seconds: float, power_w: float) -> list[tuple[float, float, tuple]]:
        """[(seconds, level, ((decaying part at its start, its time constant), ...))] of a
        hold: the level (short of it while the clocks rise) while working or without a
        tail; else the tail's plateau and decay on top of it."""
        if power_w > self.idle_w + 1e-9:
            return [(seconds, power_w, self._work_rise(seconds, power_w))]
        if self.ramp is not None:
            self.clock_state = self.ramp.after_idle(self.clock_state, seconds)
        if self.tail is None or self._work_w is None:
            return [(seconds, power_w, ())]
        if self._stopped_s is None:
            self._stopped_s = self.signal.end_s
        excess_w = self.tail.excess_w(self._work_w, self.idle_w)
        elapsed_s = self.signal.end_s - self._stopped_s
        return [
            (piece_s, power_w + excess_w * flat, tuple((excess_w * w, tau) for w, tau in decays))
            for piece_s, flat, decays in self.tail.pieces(elapsed_s, seconds)
        ]

    def _work_rise(self, seconds: float, power_w: float) -> tuple:
        """Work of `seconds` at `power_w`: the power short of it while the clocks rise (a
        decaying term; none without a ramp), and the level it reached (the tail's source)."""
        self._stopped_s = None
        if self.ramp is None:
            self._work_w = power_w
            return ()
        dynamic_w = power_w - self.idle_w
        rise = self.ramp.rise(self.clock_state, dynamic_w)
        self.clock_state = self.ramp.after_work(self.clock_state, seconds)
        self._work_w = self.idle_w + dynamic_w * self.clock_state
        return rise

    def _hold_piece(self, seconds: float, level_w: float, decays: tuple, advance: bool) -> None:
        """One piece of constant level plus decaying parts ((watts at its start, tau), ...)."""
        if self.thermal is None:
            self.signal.hold(seconds, level_w, decays=decays)
            return
        left, done = seconds, 0.0
        while left > 1e-12:
            piece = min(left, STEP_S)
            factor = self.thermal.leakage_factor(self.temp_c)
            now = tuple((w * math.exp(-done / tau), tau) for w, tau in decays)
            self.signal.hold(piece, level_w * factor, decays=tuple((w * factor, t) for w, t in now))
            mean_w = level_w + sum(w * tau * -math.expm1(-piece / tau) / piece for w, tau in now)
            self.temp_c = self.thermal.after_c(self.temp_c, mean_w * factor, piece)
            left -= piece
            done += piece
            if advance and left > 1e-12:
                self.clock.advance_to(self.signal.end_s)

    def busy_power_w(self, workload_busy_w: float, input_kind: str = "random") -> float:
        dynamic = (workload_busy_w - self.nominal_idle_w) * self.silicon
        if input_kind == "zeros":
            dynamic *= self.zeros_dynamic
        return self.idle_w + dynamic

    # -- work --

    def batch(self, workload: Workload) -> None:
        """One batch: kernels (throttled if the limit says so), then the host gap."""
        kernel_s, gap_s = workload.kernel_s, workload.gap_s
        if workload.jitter:
            kernel_s *= max(0.1, 1.0 + self._rng.gauss(0.0, workload.jitter))
        if workload.host_jitter:
            host_s = workload.period_s * max(0.1, 1.0 + self._rng.gauss(0.0, workload.host_jitter))
            gap_s = max(0.0, host_s - kernel_s)
        if workload.period_jitter:
            stretch = max(0.1, 1.0 + self._rng.gauss(0.0, workload.period_jitter))
            kernel_s, gap_s = kernel_s * stretch, gap_s * stretch
        busy = self.busy_power_w(workload.busy_w, workload.input_kind)
        power, seconds, f = self._throttled(busy, kernel_s)
        self._run(seconds, power, f)
        if gap_s > 0:
            self._run(gap_s, self.idle_w, f)
        self.batches += 1
        if workload.pause_every and workload.pause_s:
            self._host_pause(workload, f)

    def _host_pause(self, workload: Workload, clock_factor: float) -> None:
        """Count down to the workload's next host pause; at zero, pause at idle power."""
        if self._to_pause is None:
            self._to_pause = workload.next_pause_in(self._rng)
        self._to_pause -= 1
        if self._to_pause > 0:
            return
        pause_s = workload.pause_s
        if workload.pause_jitter:
            pause_s *= self._rng.uniform(0.5, 1.5)
        self._run(pause_s, self.idle_w, clock_factor)
        self._to_pause = workload.next_pause_in(self._rng)

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

    def true_energy_per_batch_j(self, workload: Workload, temp_c: float | None = None) -> float:
        """Steady-state energy of one batch (host pauses' idle share included): with
        first-order smoothing (DC gain 1) the mean power over a period is the schedule's own,
        so this is exact without simulating. With heat: at die temperature `temp_c`, by
        default the sustained one (`sustained_temperature_c`: this load run for ever). Not
        with clocks that ramp (their state over a batch is not the schedule's): simulate
        it (sim.wide_experiment.steady_energy_per_batch_j)."""
        if self.ramp is not None:
            raise ValueError("no analytic truth with clocks that ramp: simulate the workload")
        energy_j, _ = self._batch_at(workload, temp_c)
        return energy_j

    def _batch_at(self, workload: Workload, temp_c: float | None) -> tuple[float, float]:
        """(mean energy, mean duration) of one batch with its pause share, at `temp_c`."""
        if self.thermal is not None and temp_c is None:
            temp_c = self.sustained_temperature_c(workload)
        busy = self.busy_power_w(workload.busy_w, workload.input_kind)
        power, seconds, _ = self._throttled(busy, workload.kernel_s, temp_c)
        idle_s = workload.gap_s + workload.pause_per_batch_s
        energy_j = power * seconds + self.idle_w * idle_s + self._tail_per_batch_j(workload, power)
        if self.thermal is not None:
            energy_j *= self.thermal.leakage_factor(temp_c)
        return energy_j, seconds + idle_s

    def _tail_per_batch_j(self, workload: Workload, work_w: float) -> float:
        """The tail's mean energy per batch in steady state: after each batch's kernels, over
        its host gap, and over the host pause that follows every pause_every-th gap (its
        length's spread averaged, where jittered)."""
        if self.tail is None:
            return 0.0
        excess_w = self.tail.excess_w(work_w, self.idle_w)
        gap_s = workload.gap_s
        tail_s = self.tail.integral_s(0.0, gap_s)
        if workload.pause_every and workload.pause_s:
            spread = _PAUSE_SPREAD if workload.pause_jitter else (1.0,)
            pauses = [self.tail.integral_s(gap_s, workload.pause_s * f) for f in spread]
            tail_s += sum(pauses) / len(pauses) / workload.pause_every
        return excess_w * tail_s

    def sustained_temperature_c(self, workload: Workload) -> float:
        """The die temperature this workload settles at when run for ever (a fixed point:
        the temperature sets leakage and clocks, which set the power, which sets it), found
        by bisection: the excess below decreases with temperature unless leakage runs away."""

        def excess_c(temp_c: float) -> float:
            energy_j, duration_s = self._batch_at(workload, temp_c)
            return self.thermal.steady_c(energy_j / duration_s) - temp_c

        low, high = self.thermal.ambient_c, self.thermal.ambient_c + 100.0
        while excess_c(high) > 0:
            if high > 1000.0:
                raise ValueError("thermal runaway: leakage_per_c x c_per_w x power >= 1")
            high += 100.0
        for _ in range(60):
            mid = 0.5 * (low + high)
            low, high = (mid, high) if excess_c(mid) > 0 else (low, mid)
        return 0.5 * (low + high)

    def temperature_c(self) -> float:
        """With heat, the die's; else a crude model: 30 C plus 0.12 C per watt of the last
        5 s mean power."""
        if self.thermal is not None:
            return self.temp_c
        t = self.clock()
        start = max(self.signal.start_s, t - 5.0)
        if t - start <= 0:
            return 30.0 + 0.12 * self.idle_w
        return 30.0 + 0.12 * self.signal.energy_j(start, t) / (t - start)
