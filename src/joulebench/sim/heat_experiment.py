"""The protocol against heat and irregular work, on simulated boards.

A case is a GPU generation, a batch period (`PERIODS_S`), a workload pattern (`PATTERNS`,
sim.workload) and a seed; the seed draws the sensor's phase, the board's heat
(thermal.drawn), the pattern's pauses and jitter, with `tail` its power tail (sim.tail), and
the die temperature the configuration starts at (`START_RISE`: a configuration in a job
starts after colder or hotter ones). The real `measure()` runs through the real NVML meter
on simulated time, after the cold idle baseline the workflow takes. The truth is the
**sustained** energy per image (`SimGpu.sustained_temperature_c`); beside it, labelled, the
truth **as run** (at the batches' mean die temperature; their difference is the thermal state).
docs/protocol.md#heat-irregular-work-and-the-sensor-proven-in-simulation.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass

import pandas as pd

from joulebench.core.heat import HeatCalibration
from joulebench.core.meters.nvidia_sensors import GENERATIONS
from joulebench.core.protocol import BoardState, ProtocolSettings, measure, measure_idle
from joulebench.sim.rig import SimRig, simulated_gpu
from joulebench.sim.tail import Tail
from joulebench.sim.tail import drawn as drawn_tail
from joulebench.sim.thermal import Thermal, drawn
from joulebench.sim.workload import Workload

PERIODS_S = (0.001, 0.005, 0.010, 0.025, 0.050, 0.100, 0.200, 0.500)
PATTERNS = ("regular", "jitter", "pauses", "jittered-pauses", "host-bound")
HOST_BOUND_DUTY = (0.15, 0.6)  # the GPU's busy fraction of a host-bound loop
HOST_JITTER = (0.02, 0.10)  # the host's time per batch, relative std
IDLE_S = 10.0  # the workflow's idle baseline, taken cold
START_RISE = (0.0, 1.3)  # start temperature: this share of the way from idle to sustained
TARGET_ERROR, TARGET_SHARE = 0.05, 0.95  # within 5 % in >= 95 % of cases...
TIGHT_ERROR, TIGHT_SHARE = 0.02, 0.90  # ...within 2 % in >= 90 % overall
COVERAGE_TARGET = 0.90  # the 95 % CI holds the truth in >= 90 %
# with a tail, each case's work draws this much while busy (the check's load, a large
# matmul, 300 W), so a tail that follows the work and one that does not differ (sim.tail's
# `scales`); at most the check's load, so the boards' heat stays below their temperature
# limit (sim.thermal) from every start temperature the sweep draws
TAIL_WORK_W = (150.0, 300.0)


@dataclass(frozen=True)
class HeatCase:
    generation: str
    period_s: float
    pattern: str = "regular"
    heat: bool = True
    seed: int = 0
    duty: float = 0.75
    tail: str = "none"  # the board's power tail: none, drawn (sim.tail's ranges), or a spec

    def tail_spec(self) -> Tail | None:
        """The board's tail: none; `drawn` from sim.tail's swept ranges by the seed; or
        `share/hold_s/tau_s/scales` (0.3/0.1/0.5/dynamic) for one point of a sweep."""
        if self.tail == "none":
            return None
        if self.tail == "drawn":
            return drawn_tail(self.rng("tail"))
        share, hold_s, tau_s, scales = self.tail.split("/")
        return Tail(float(share), float(hold_s), float(tau_s), scales)

    def rng(self, what: str) -> random.Random:
        return random.Random(f"{what}-{self.seed}-{self.generation}-{self.period_s}-{self.pattern}")

    def phase_s(self) -> float:
        return self.rng("phase").uniform(0.0, GENERATIONS[self.generation].refresh_s)

    def thermal(self) -> Thermal | None:
        return drawn(self.generation, self.rng("heat")) if self.heat else None

    def workload(self) -> Workload:
        draw = self.rng("work")
        kw = {}
        if self.pattern in ("jitter", "jittered-pauses"):
            kw["period_jitter"] = draw.uniform(0.005, 0.02)
        if self.pattern in ("pauses", "jittered-pauses"):
            kw["pause_s"] = draw.uniform(0.001, 0.050)
            kw["pause_every"] = draw.randint(4, 40)
            kw["pause_jitter"] = self.pattern == "jittered-pauses"
        duty = self.duty
        if self.pattern == "host-bound":
            duty = draw.uniform(*HOST_BOUND_DUTY)
            kw["host_jitter"] = draw.uniform(*HOST_JITTER)
        if self.tail != "none":  # the work's power unlike the check's load, whose tail is read
            kw["busy_w"] = self.rng("busy").uniform(*TAIL_WORK_W)
        return Workload(period_s=self.period_s, duty=duty, **kw)

    def start_rise(self) -> float:
        return self.rng("start").uniform(*START_RISE)


def cases(
    seeds: int, generations=None, periods=PERIODS_S, patterns=PATTERNS, tail: str = "none"
) -> list[HeatCase]:
    """Every generation x period x pattern, `seeds` times, all with heat (and `tail`)."""
    return [
        HeatCase(g, p, pattern, True, s, tail=tail)
        for g in generations or GENERATIONS
        for p in periods
        for pattern in patterns
        for s in range(seeds)
    ]


def calibration(rig: SimRig, error: float | None, rng: random.Random) -> HeatCalibration | None:
    """The board's heat as `joulebench check` would hand it to the protocol: its true C/W
    and leakage slope, each off by a factor drawn from 1 +- `error`; None: not known."""
    thermal = rig.gpu.thermal
    if error is None or thermal is None:
        return None
    return HeatCalibration(
        thermal.c_per_w * rng.uniform(1 - error, 1 + error),
        thermal.leakage_per_c * rng.uniform(1 - error, 1 + error),
        source="simulated check",
        rel_uncertainty=error,
    )


CHECK_LOAD_W = 300.0  # the check's standard load (sim.rig.SimCheckTarget), whose tail it reads


def tail_calibration(rig: SimRig, error: float | None, rng: random.Random):
    """The board's tail as `joulebench check` would hand it to the protocol (its excess after
    the check's load, plateau and decay), each off by a factor drawn from 1 +- `error`;
    None: not known. A board without a tail is handed a zero excess."""
    if error is None:
        return None
    from joulebench.core.tail import TailCalibration  # here: a bench of older code runs too

    tail, idle_w = rig.gpu.tail, rig.gpu.idle_w
    if tail is None:
        return TailCalibration(0.0, CHECK_LOAD_W - idle_w, 0.0, 0.01, "simulated check")
    return TailCalibration(
        tail.excess_w(CHECK_LOAD_W, idle_w) * rng.uniform(1 - error, 1 + error),
        CHECK_LOAD_W - idle_w,
        tail.hold_s * rng.uniform(1 - error, 1 + error),
        tail.tau_s * rng.uniform(1 - error, 1 + error),
        "simulated check",
    )


def rig_for(case: HeatCase) -> SimRig:
    return simulated_gpu(
        case.generation,
        phase_s=case.phase_s(),
        seed=case.seed,
        thermal=case.thermal(),
        tail=case.tail_spec(),
    )


def set_temperature(rig: SimRig, workload: Workload, rise: float) -> None:
    """Put the die `rise` of the way from its idle to its sustained temperature."""
    gpu = rig.gpu
    if gpu.thermal is not None:
        idle_c = gpu.thermal.ref_c
        gpu.temp_c = idle_c + rise * (gpu.sustained_temperature_c(workload) - idle_c)


def measure_case(
    rig: SimRig, workload: Workload, settings, idle, seed: int, meter, heat=None, tail=None
):
    """The real protocol on `workload`; returns (result, mean die temperature of its batches
    after warm-up, simulated seconds it took). `tail`: the board's tail as the check hands it
    (a TailCalibration), or None: not known (not passed, so the bench runs an older protocol
    too)."""
    temps: list[float] = []
    counting = [False]

    def step():
        rig.gpu.batch(workload)
        if counting[0]:
            temps.append(rig.gpu.temperature_c())

    def progress(phase, info):
        counting[0] = True

    start = rig.clock()
    result = measure(
        step,
        rig.gpu.sync,
        meter,
        images_per_step=workload.images_per_batch,
        settings=settings or ProtocolSettings(),
        rng=random.Random(seed),
        clock=rig.clock,
        sleep=rig.gpu.sleep,
        progress=progress,
        board=BoardState(idle.power_w, idle.temperature_c, heat, tail),
    )
    mean_c = sum(temps) / len(temps) if temps else float("nan")
    return result, mean_c, rig.clock() - start


def outcome(result, truth_j: float, truth_as_run_j: float) -> dict:
    """Error, CI and spread of one measurement against both truths."""
    s = result.summary
    value = s["energy_per_image_j"]
    low, high = s["energy_per_image_ci95_low_j"], s["energy_per_image_ci95_high_j"]
    correction = 1.0 + s["thermal_correction"]
    return {
        "truth_j": truth_j,
        "truth_as_run_j": truth_as_run_j,
        "measured_j": value,
        "error": value / truth_j - 1.0,
        "error_as_run": value / truth_as_run_j - 1.0,
        # the parts: the sensor's (the reading before the correction, against the truth as
        # run) and the thermal state's (the correction against the one that was needed)
        "sensor_error": value / correction / truth_as_run_j - 1.0,
        "thermal_error": correction * truth_as_run_j / truth_j - 1.0,
        "truth_in_ci95": bool(low <= truth_j <= high),
        "ci95_rel": s["energy_per_image_ci95_rel"],
        "cv": s["energy_per_image_cv"],
        "flags": s["flags"],
        "repeats": s["repeats"],
        "measured_s": s["measured_s"],
    }


def run_case(
    case: HeatCase,
    settings: ProtocolSettings | None = None,
    heat_error: float | None = None,
    refresh_error: float = 0.0,
    tail_error: float | None = None,
) -> dict:
    """One case: cold idle baseline, the die set to its start temperature, the protocol
    (given the board's heat within `heat_error`, or not at all: None; told a refresh period
    `refresh_error` off the sensor's own, as a check or a published value may be; given the
    board's tail within `tail_error`, or not: None)."""
    rig = rig_for(case)
    workload = case.workload()
    per_image = workload.images_per_batch
    heat = calibration(rig, heat_error, case.rng("check"))
    tail = tail_calibration(rig, tail_error, case.rng("check-tail"))
    with rig.meter() as meter:
        meter.refresh_s *= 1.0 + refresh_error
        idle = measure_idle(meter, IDLE_S, sleep=rig.gpu.sleep)
        idle_c = rig.gpu.temperature_c()
        set_temperature(rig, workload, case.start_rise())
        start_c = rig.gpu.temperature_c()
        result, mean_c, took_s = measure_case(
            rig, workload, settings, idle, case.seed, meter=meter, heat=heat, tail=tail
        )
    truth = rig.gpu.true_energy_per_batch_j(workload) / per_image
    as_run = rig.gpu.true_energy_per_batch_j(workload, mean_c) / per_image
    sustained_c = rig.gpu.sustained_temperature_c(workload) if rig.gpu.thermal else idle_c
    return {
        **asdict(case),
        **tail_fields(rig.gpu.tail),
        **outcome(result, truth, as_run),
        "idle_c": idle_c,
        "start_c": start_c,
        "mean_c": mean_c,
        "sustained_c": sustained_c,
        "protocol_s": took_s,
    }


def tail_fields(tail: Tail | None) -> dict:
    """A case's tail, as columns (share 0 where the board has none)."""
    if tail is None:
        return {"tail_share": 0.0, "tail_hold_s": 0.0, "tail_tau_s": math.nan, "tail_scales": ""}
    return {
        "tail_share": tail.share,
        "tail_hold_s": tail.hold_s,
        "tail_tau_s": tail.tau_s,
        "tail_scales": tail.scales,
    }


def summary_table(rows: pd.DataFrame, keys=("generation", "period_s")) -> pd.DataFrame:
    """Per group: cases, share within 5 % and 2 %, CI coverage, worst and median error."""
    df = rows.assign(abs_error=rows["error"].abs())
    out = df.groupby(list(keys), sort=False).agg(
        cases=("abs_error", "size"),
        within_5pct=("abs_error", lambda e: float((e <= TARGET_ERROR).mean())),
        within_2pct=("abs_error", lambda e: float((e <= TIGHT_ERROR).mean())),
        ci95_coverage=("truth_in_ci95", "mean"),
        worst_error=("abs_error", "max"),
        median_error=("abs_error", "median"),
    )
    return out.reset_index()


def overall(rows: pd.DataFrame) -> dict:
    """The Must-show numbers over every case."""
    e = rows["error"].abs()
    per_group = summary_table(rows)
    return {
        "cases": len(rows),
        "within_5pct": float((e <= TARGET_ERROR).mean()),
        "within_2pct": float((e <= TIGHT_ERROR).mean()),
        "ci95_coverage": float(rows["truth_in_ci95"].mean()),
        "worst_error": float(e.max()),
        "worst_group_within_5pct": float(per_group["within_5pct"].min()),
        "median_as_run_error": float(rows["error_as_run"].abs().median()),
    }


def _job(case: HeatCase, settings, before: Workload | None, heat_error) -> dict:
    """One job on a cold board: the idle baseline, optionally `before` measured, then the
    case's configuration; returns the configuration's outcome."""
    rig = rig_for(case)
    workload = case.workload()
    heat = calibration(rig, heat_error, case.rng("check"))
    with rig.meter() as meter:
        idle = measure_idle(meter, IDLE_S, sleep=rig.gpu.sleep)
        if before is not None:
            measure_case(rig, before, settings, idle, case.seed + 1, meter=meter, heat=heat)
            rig.gpu.sleep(random.Random(case.seed).uniform(0.2, 1.0))  # the job's gap
        result, mean_c, _ = measure_case(
            rig, workload, settings, idle, case.seed, meter=meter, heat=heat
        )
    per_image = workload.images_per_batch
    truth = rig.gpu.true_energy_per_batch_j(workload) / per_image
    as_run = rig.gpu.true_energy_per_batch_j(workload, mean_c) / per_image
    return {**outcome(result, truth, as_run), "mean_c": mean_c}


def order_bias(case: HeatCase, settings=None, light_duty=0.3, heat_error=None) -> dict:
    """The same light (batch-1-like: `light_duty` of each period busy) configuration measured
    first in a job, and after a hotter one (the same period, always busy): second minus first,
    relative to first."""
    light = HeatCase(**{**asdict(case), "duty": light_duty})
    hot = Workload(period_s=case.period_s, duty=1.0)
    first = _job(light, settings, None, heat_error)
    second = _job(light, settings, hot, heat_error)
    return {
        **asdict(light),
        "first_j": first["measured_j"],
        "second_j": second["measured_j"],
        "second_minus_first": second["measured_j"] / first["measured_j"] - 1.0,
        "first_error": first["error"],
        "second_error": second["error"],
        "thermal_part": second["thermal_error"] - first["thermal_error"],
        "first_c": first["mean_c"],
        "second_c": second["mean_c"],
    }
