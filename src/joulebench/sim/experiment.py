"""The protocol and a naive reading, each against the true energy, on simulated sensors.

A case is a GPU generation, a workload period (10-200 ms batches: some line up with the
100 ms refresh, some do not) and a sensor phase (refreshing in phase with the workload's
start, or at a random offset). For each case:
- the protocol: the real `joulebench.core.protocol.measure` through the real NVML meter and its
  sampler, on simulated time, with the idle power measured first as the workflow does;
- naive: one window of `window_s` around a running loop, no phase shifts, no repeats: the
  counter difference (or, without a counter, the integrated trace) / images.
Errors are relative to the true steady-state energy per image of the workload.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass

import pandas as pd

from joulebench.core.meters.nvidia_sensors import GENERATIONS
from joulebench.core.protocol import BoardState, ProtocolSettings, measure, measure_idle
from joulebench.sim.rig import simulated_gpu
from joulebench.sim.workload import Workload

PERIODS_S = (0.010, 0.025, 0.050, 0.100, 0.200)
TARGET_ERROR = 0.05  # the protocol within 5 % of the truth...
TARGET_SHARE = 0.95  # ...in at least 95 % of cases
WIDE_CV = 0.02  # a repeat CV above this says "do not trust the mean to 5 %"
IDLE_S = 10.0  # the workflow's idle baseline


@dataclass(frozen=True)
class Case:
    generation: str
    period_s: float
    phase: str = "random"  # "in-phase": the sensor refreshes as the first batch starts
    seed: int = 0

    def phase_s(self) -> float:
        if self.phase == "in-phase":
            return 0.0
        refresh = GENERATIONS[self.generation].refresh_s
        return random.Random(f"{self.seed}-{self.generation}-{self.period_s}").uniform(0, refresh)

    def workload(self) -> Workload:
        return Workload(period_s=self.period_s)


def cases(random_seeds: int = 3, generations=None, periods=PERIODS_S) -> list[Case]:
    """Every generation x period, once in phase and `random_seeds` times at a random phase."""
    out = []
    for generation in generations or GENERATIONS:
        for period in periods:
            out.append(Case(generation, period, "in-phase", 0))
            out += [Case(generation, period, "random", s) for s in range(random_seeds)]
    return out


def _rig(case: Case, **kw):
    return simulated_gpu(case.generation, phase_s=case.phase_s(), seed=case.seed, **kw)


def run_protocol(case: Case, settings: ProtocolSettings | None = None, **rig_kw) -> dict:
    """The protocol on one case: error, spread, flags and what it cost in (simulated) time."""
    rig = _rig(case, **rig_kw)
    workload = case.workload()
    truth = rig.gpu.true_energy_per_batch_j(workload) / workload.images_per_batch
    with rig.meter() as meter:
        idle = measure_idle(meter, IDLE_S, sleep=rig.gpu.sleep)
        start = rig.clock()
        result = measure(
            lambda: rig.gpu.batch(workload),
            rig.gpu.sync,
            meter,
            images_per_step=workload.images_per_batch,
            settings=settings or ProtocolSettings(),
            board=BoardState(idle.power_w),
            rng=random.Random(case.seed),
            clock=rig.clock,
            sleep=rig.gpu.sleep,
        )
        elapsed = rig.clock() - start
    s = result.summary
    value = s["energy_per_image_j"]
    error = value / truth - 1.0
    low, high = s["energy_per_image_ci95_low_j"], s["energy_per_image_ci95_high_j"]
    flags = s["flags"]
    return {
        **asdict(case),
        "truth_j": truth,
        "protocol_j": value,
        "protocol_error": error,
        "protocol_cv": s["energy_per_image_cv"],
        "truth_in_ci95": bool(low <= truth <= high),
        "protocol_flags": flags,
        "repeats": s["repeats"],
        "window_s": float(result.repeats["duration_s"].mean()),
        "shift_s": float(result.repeats["phase_shift_s"].mean()),  # idle delays per window
        "measured_s": s["measured_s"],
        "protocol_s": elapsed,  # warm-up + windows + pauses, simulated seconds
        # within target, or the spread / CI / a flag says not to trust the mean that far
        "shown": bool(
            abs(error) <= TARGET_ERROR
            or low <= truth <= high
            or s["energy_per_image_cv"] > WIDE_CV
            or flags
        ),
    }


def run_naive(case: Case, window_s: float = 1.0, warm_s: float = 1.0, **rig_kw) -> dict:
    """One window of about `window_s` around a loop already running: the naive reading."""
    rig = _rig(case, **rig_kw)
    workload = case.workload()
    truth = rig.gpu.true_energy_per_batch_j(workload) / workload.images_per_batch
    with rig.meter() as meter:  # the counter (or, before Volta, the 15 ms trace integrated)
        end = rig.clock() + warm_s
        while rig.clock() < end:
            rig.gpu.batch(workload)
        meter.begin()
        start, batches = rig.clock(), 0
        while rig.clock() - start < window_s - 1e-9 or batches == 0:
            rig.gpu.batch(workload)
            batches += 1
        reading = meter.end()
    value = reading.energy_j / (batches * workload.images_per_batch)
    return {
        **asdict(case),
        "window_s": rig.clock() - start,
        "truth_j": truth,
        "naive_j": value,
        "naive_error": value / truth - 1.0,
    }


def protocol_table(results: pd.DataFrame, naive: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per generation x period: worst protocol error, share within target, naive beside it."""
    df = results.copy()
    df["abs_error"] = df["protocol_error"].abs()
    keys = ["generation", "period_s"]
    out = df.groupby(keys, sort=False).agg(
        cases=("abs_error", "size"),
        protocol_max_abs_error=("abs_error", "max"),
        protocol_within_5pct=("abs_error", lambda e: float((e <= TARGET_ERROR).mean())),
        protocol_cv_max=("protocol_cv", "max"),
        silently_wrong=("shown", lambda s: int((~s).sum())),
    )
    if naive is not None:
        n = naive.assign(abs_error=naive["naive_error"].abs())
        out["naive_max_abs_error"] = n.groupby(keys, sort=False)["abs_error"].max()
        out["naive_mean_abs_error"] = n.groupby(keys, sort=False)["abs_error"].mean()
    return out.reset_index()


def format_table(table: pd.DataFrame) -> str:
    """The table as markdown, errors (absolute, relative to the truth) in percent."""
    cols = {
        "generation": "generation",
        "period_s": "batch period",
        "cases": "cases",
        "protocol_max_abs_error": "protocol: worst error",
        "protocol_within_5pct": "protocol: within 5 %",
        "protocol_cv_max": "protocol: worst repeat CV",
        "silently_wrong": "silently wrong",
        "naive_max_abs_error": "naive 1 s window: worst error",
        "naive_mean_abs_error": "naive: mean error",
    }
    rows = ["| " + " | ".join(cols[c] for c in table.columns if c in cols) + " |"]
    rows.append("|" + "---|" * sum(c in cols for c in table.columns))
    for _, r in table.iterrows():
        cells = []
        for c in table.columns:
            if c not in cols:
                continue
            v = r[c]
            if c == "period_s":
                cells.append(f"{v * 1000:.0f} ms")
            elif c in ("cases", "silently_wrong"):
                cells.append(str(int(v)))
            elif c == "generation":
                cells.append(f"{v} ({GENERATIONS[v].example})")
            elif isinstance(v, float) and math.isfinite(v):
                cells.append(f"{v * 100:.1f} %")
            else:
                cells.append("")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def run_all(
    settings: ProtocolSettings | None = None,
    random_seeds: int = 3,
    naive_window_s: float = 1.0,
    generations=None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(protocol results, naive results), one row per case."""
    all_cases = cases(random_seeds, generations)
    protocol = pd.DataFrame([run_protocol(c, settings) for c in all_cases])
    naive = pd.DataFrame([run_naive(c, naive_window_s) for c in all_cases])
    return protocol, naive


def window_sweep(windows_s, random_seeds: int = 8, generations=None) -> pd.DataFrame:
    """Naive single-window error vs window length, per generation (the figure's lines).

    Each window lasts its nominal length times a factor drawn from 1-1.3 per case: a loop of
    N batches rarely lasts a whole number of refresh periods, and a window that does hides
    the counter's granularity.
    """
    rows = []
    for case in cases(random_seeds, generations):
        stretch = random.Random(f"window-{case}")
        for window in windows_s:
            length = window * stretch.uniform(1.0, 1.3)
            rows.append({**run_naive(case, length), "window_target_s": window})
    return pd.DataFrame(rows)
