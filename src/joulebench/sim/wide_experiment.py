"""The check's fits and the protocol against a physics wider than the one they model.

Issue 40 item 11: boards whose sensor reports late (0-20 ms) through a part-time window
(15-35 ms of each 100 ms refresh, the H100's published 25 ms among them), whose clocks
ramp up under load and down at idle (sim.ramp), and whose tail after work has a fast and a
slow part, with or without a plateau, following the compute phase's own power or the
board's (sim.tail): each drawn per board from ranges wider than any reported (`PHYSICS`
names each assumption, so a sweep can turn one on at a time). On each board the check's
tail step and sensor fit run as `joulebench check` runs them (check.gpu.sensor_and_tail),
then the protocol with the tail the check fitted, on work of its own power. The truth is the
board's: its tail's excess, shape and window, and each workload's steady energy per image,
simulated (`steady_energy_per_batch_j`: with clocks that ramp there is no closed form).
docs/benchmarks.md#the-check-against-a-wider-physics-issue-40-item-11-2026-12-07.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from joulebench.core.protocol import BoardState, ProtocolSettings, measure, measure_idle
from joulebench.sim.ramp import ClockRamp
from joulebench.sim.ramp import drawn as drawn_ramp
from joulebench.sim.rig import SimCheckTarget, SimRig, simulated_gpu
from joulebench.sim.tail import Tail
from joulebench.sim.workload import Workload

PHYSICS = ("window", "delay", "ramp", "tail")  # the assumptions a board draws (all: wide)
GENERATION = "hopper"  # the published sensor the check compares with: 100 ms, 25 ms
WINDOW_RANGE_S = (0.015, 0.035)  # the true averaging window (published: 25 ms)
DELAY_RANGE_S = (0.0, 0.020)  # the reading's window ends this long before its refresh
SHARE_RANGE = (0.05, 0.40)  # the tail's excess, of the dynamic power it follows
PLATEAU_SHARE = 0.5  # of the tails have a plateau (0-0.3 s); the rest fall from the stop
HOLD_RANGE_S = (0.0, 0.3)
FAST_SHARE_RANGE = (0.0, 0.7)  # of the excess decaying fast...
FAST_TAU_RANGE_S = (0.005, 0.06)  # ...with this (log-uniform)
SLOW_TAU_RANGE_S = (0.05, 2.0)  # the rest with this (log-uniform)
DYNAMIC_SHARE = 0.75  # of the tails follow the compute phase's power; the rest the board's
NO_TAIL_SHARE = 0.1
CHECK_LOAD_W = 300.0  # the check's standard load (sim.rig.SimCheckTarget)
IDLE_W = 60.0
WORK_W = (120.0, 340.0)  # each workload's compute power: below and above the check's load
PERIODS_S = (0.001, 0.005, 0.010, 0.025, 0.050, 0.100, 0.200, 0.500)
PATTERNS = ("regular", "host-bound")
HOST_BOUND_DUTY = (0.15, 0.6)
IDLE_BASELINE_S = 10.0


def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def drawn_tail(rng: random.Random) -> Tail | None:
    """A tail from the wide ranges: a fast and a slow part, a plateau on half of them."""
    if rng.random() < NO_TAIL_SHARE:
        return None
    hold_s = rng.uniform(*HOLD_RANGE_S) if rng.random() < PLATEAU_SHARE else 0.0
    return Tail(
        share=rng.uniform(*SHARE_RANGE),
        hold_s=hold_s,
        tau_s=_log_uniform(rng, *SLOW_TAU_RANGE_S),
        scales="dynamic" if rng.random() < DYNAMIC_SHARE else "constant",
        reference_busy_w=CHECK_LOAD_W,
        fast_share=rng.uniform(*FAST_SHARE_RANGE),
        fast_tau_s=_log_uniform(rng, *FAST_TAU_RANGE_S),
    )


@dataclass(frozen=True)
class WideBoard:
    """One board of the wide physics: its sensor's window, delay and phase, ramp and tail."""

    seed: int
    window_s: float = 0.025
    delay_s: float = 0.0
    phase_s: float = 0.0
    ramp: ClockRamp | None = None
    tail: Tail | None = None

    @classmethod
    def drawn(cls, seed: int, physics=PHYSICS, tail: Tail | None = None) -> WideBoard:
        """Board `seed`, each assumption in `physics` drawn (the others as published: a
        25 ms window on time, clocks at once, no tail); `tail` given: that tail."""
        rng = random.Random(f"wide-board-{seed}")
        window_s, delay_s = rng.uniform(*WINDOW_RANGE_S), rng.uniform(*DELAY_RANGE_S)
        ramp, board_tail = drawn_ramp(rng), drawn_tail(rng)
        return cls(
            seed,
            window_s if "window" in physics else 0.025,
            delay_s if "delay" in physics else 0.0,
            rng.uniform(0.0, 0.1),
            ramp if "ramp" in physics else None,
            tail if tail is not None else board_tail if "tail" in physics else None,
        )

    def rig(self) -> SimRig:
        return simulated_gpu(
            GENERATION,
            phase_s=self.phase_s,
            seed=self.seed,
            idle_w=IDLE_W,
            sensor={"window_s": self.window_s, "delay_s": self.delay_s},
            tail=self.tail,
            ramp=self.ramp,
        )

    def truth(self) -> dict:
        """The tail the check should read after its load (share of the load's dynamic
        power, plateau, its length at the full excess, the mean over a phase shift) and the
        sensor's window."""
        tail, dyn = self.tail, CHECK_LOAD_W - IDLE_W
        if tail is None:
            return {"share": 0.0, "hold_s": 0.0, "length_s": 0.0, "shift_share": 0.0,
                    "window_s": self.window_s}  # fmt: skip
        excess = tail.excess_w(CHECK_LOAD_W, IDLE_W) / dyn
        return {
            "share": excess,
            "hold_s": tail.hold_s,
            "length_s": tail.integral_s(0.0, 60.0),
            "shift_share": excess * np.mean([tail.integral_s(0, d) / d for d in SHIFTS_S]),
            "window_s": self.window_s,
        }


SHIFTS_S = tuple(np.linspace(0.003, 0.009, 7))  # a phase shift's length: about 6 ms


def fitted(fit, sensor) -> dict:
    """What the check read, in the truth's terms (NaN where it read nothing)."""
    from joulebench.core.tail import TailShape

    out = {"window_s": sensor.window_s if sensor else math.nan}
    for name in ("window_low_s", "window_high_s"):
        out[name] = getattr(sensor, name, math.nan) if sensor else math.nan
    out.update({k: math.nan for k in ("share", "hold_s", "length_s", "shift_share", "rel_unc")})
    if fit is None:
        return out
    shape = fit.shape if hasattr(fit, "shape") else TailShape(fit.hold_s, fit.tau_s)
    share = fit.share
    out.update(
        share=share,
        hold_s=fit.hold_s,
        length_s=float(shape.integral_s(0.0, 60.0)) if share > 0 else 0.0,
        shift_share=share * float(np.mean([shape.integral_s(0, d) / d for d in SHIFTS_S])),
        rel_unc=getattr(fit, "rel_uncertainty", math.nan),
    )
    return out


def true_calibration(board: WideBoard):
    """The board's tail as a perfect check would hand it to the protocol (its excess after
    the check's load, its shape), with the uncertainty the protocol always granted: the
    protocol's own error on this physics, the fits' apart."""
    from joulebench.core.tail import TailCalibration

    tail, dynamic = board.tail, CHECK_LOAD_W - IDLE_W
    if tail is None:
        return TailCalibration(0.0, dynamic, 0.0, 0.01, "truth")
    excess_w = tail.excess_w(CHECK_LOAD_W, IDLE_W)
    fast = {"fast_share": tail.fast_share, "fast_tau_s": tail.fast_tau_s}
    return TailCalibration(excess_w, dynamic, tail.hold_s, tail.tau_s, "truth", **fast)


def check_board(board: WideBoard, settings=None):
    """(sensor fit, tail fit) of the check's tail step and square wave on `board`."""
    from joulebench.check.gpu import sensor_and_tail
    from joulebench.check.rows import CheckSettings

    target = SimCheckTarget(board.rig(), busy_w=CHECK_LOAD_W)
    with target.meter() as meter:
        return sensor_and_tail(
            target, settings or CheckSettings(), meter, meter.sensor, lambda line: None
        )


@dataclass(frozen=True)
class WideWork:
    """A workload on a wide board: its period, pattern and compute power, drawn by seed."""

    period_s: float
    pattern: str = "regular"
    seed: int = 0
    busy_w: float = field(default=math.nan)

    def workload(self) -> Workload:
        rng = random.Random(f"wide-work-{self.seed}-{self.period_s}-{self.pattern}")
        busy_w = self.busy_w if math.isfinite(self.busy_w) else rng.uniform(*WORK_W)
        if self.pattern == "host-bound":
            duty, jitter = rng.uniform(*HOST_BOUND_DUTY), rng.uniform(0.02, 0.10)
            return Workload(self.period_s, duty=duty, busy_w=busy_w, host_jitter=jitter)
        return Workload(self.period_s, busy_w=busy_w)


def steady_energy_per_batch_j(board: WideBoard, workload: Workload, seconds: float = 20.0):
    """The workload's energy per batch run for ever, simulated on a twin of `board` (its
    clocks settled first): the exact integral of its power over `seconds` (at least 400
    batches) of batches, after as long to settle."""
    gpu = board.rig().gpu
    batches = max(400, math.ceil(seconds / workload.period_s))
    for _ in range(batches):
        gpu.batch(workload)
    start_j = gpu.signal.cumulative_j(gpu.clock())
    for _ in range(batches):
        gpu.batch(workload)
    return (gpu.signal.cumulative_j(gpu.clock()) - start_j) / batches


def run_protocol(board: WideBoard, work: WideWork, tail_cal, settings=None) -> dict:
    """The protocol with the check's tail (`tail_cal`, a TailCalibration or None) on one
    workload, after a cold idle baseline: its error and whether its CI holds the truth."""
    rig = board.rig()
    workload = work.workload()
    with rig.meter() as meter:
        idle = measure_idle(meter, IDLE_BASELINE_S, sleep=rig.gpu.sleep)
        result = measure(
            lambda: rig.gpu.batch(workload),
            rig.gpu.sync,
            meter,
            images_per_step=workload.images_per_batch,
            settings=settings or ProtocolSettings(),
            rng=random.Random(work.seed),
            clock=rig.clock,
            sleep=rig.gpu.sleep,
            board=BoardState(idle.power_w, tail=tail_cal),
        )
    truth = steady_energy_per_batch_j(board, workload) / workload.images_per_batch
    s = result.summary
    low, high = s["energy_per_image_ci95_low_j"], s["energy_per_image_ci95_high_j"]
    return {
        "period_s": work.period_s,
        "pattern": work.pattern,
        "busy_w": workload.busy_w,
        "error": s["energy_per_image_j"] / truth - 1.0,
        "truth_in_ci95": bool(low <= truth <= high),
        "ci95_rel": s["energy_per_image_ci95_rel"],
        "tail_correction": s["tail_correction"],
    }
