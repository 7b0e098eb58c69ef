"""Boards of one pool against each other (issue 41): the same workloads measured on every
board of a simulated pool whose boards differ (sim.boards), before and after the board
factors (analysis.boards), in simulated time.

Each board reads its reference levels as a profile job does (jobs.board_reference on the
board's check target), then the protocol measures each workload on it. A workload measured
on two boards should read the same; the bench reports how far apart they are, as read and
as the pool's reference board reads them, and how often the widened CIs of the two hold each
other's value.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from joulebench.core.protocol import BoardState, ProtocolSettings, measure, measure_idle
from joulebench.jobs.board_reference import read_levels
from joulebench.sim.boards import BoardVariation, Spread, drawn
from joulebench.sim.rig import SimCheckTarget, simulated_gpu
from joulebench.sim.thermal import THERMAL
from joulebench.sim.wall import IDLE_W, sim_uuid
from joulebench.sim.workload import Workload

# Workloads between the board's idle and its standard load's power: (busy W, batch period s,
# share of the period busy): a heavy model, lighter ones, one that waits on its host.
WORKLOADS = (
    (300.0, 0.05, 1.0),
    (260.0, 0.02, 1.0),
    (200.0, 0.08, 1.0),
    (150.0, 0.03, 1.0),
    (280.0, 0.01, 0.5),
    (120.0, 0.15, 0.8),
)


@dataclass(frozen=True)
class PoolCase:
    boards: int = 8
    spread: Spread = Spread()
    generation: str = "hopper"
    heat: bool = True
    seed: int = 0

    def variation(self, i: int) -> tuple[str, BoardVariation]:
        uuid = sim_uuid(f"pool-{self.seed}-{i}")
        return uuid, drawn(uuid, 700.0, self.spread)


def _rig(case: PoolCase, variation: BoardVariation, i: int):
    return simulated_gpu(
        case.generation,
        phase_s=random.Random(f"{case.seed}-{i}").uniform(0, 0.1),
        seed=case.seed * 100 + i,
        idle_w=IDLE_W * variation.idle_scale,
        sensor={"gain": variation.gain, "offset_w": variation.offset_w},
        silicon=variation.silicon,
        nominal_idle_w=IDLE_W,
        thermal=THERMAL[case.generation] if case.heat else None,
    )


def board_rows(case: PoolCase, i: int, settings: ProtocolSettings) -> tuple[dict, list[dict]]:
    """(board i's reference record, its rows: one per workload, as a summary holds them)."""
    uuid, variation = case.variation(i)
    rig = _rig(case, variation, i)
    levels, _ = read_levels(SimCheckTarget(rig))
    record = {"uuid": uuid, "levels": levels}
    rows = []
    for w, (busy_w, period_s, duty) in enumerate(WORKLOADS):
        workload = Workload(period_s=period_s, duty=duty, busy_w=busy_w)
        with rig.meter() as meter:
            idle = measure_idle(meter, 5.0, sleep=rig.gpu.sleep)
            result = measure(
                lambda workload=workload: rig.gpu.batch(workload), rig.gpu.sync, meter,
                images_per_step=workload.images_per_batch, settings=settings,
                board=BoardState(idle.power_w), rng=random.Random(f"{case.seed}-{i}-{w}"),
                clock=rig.clock, sleep=rig.gpu.sleep,
            )  # fmt: skip
        true_j = rig.gpu.true_energy_per_batch_j(workload)  # the board's own truth
        read_j = variation.gain * true_j + variation.offset_w * period_s  # as its sensor reads it
        rows.append({
            **result.summary, "workload": w, "gpu_uuid": uuid, "gpu_index": i,
            "true_read_j": read_j / workload.images_per_batch,
            "throughput_img_s_true": workload.images_per_batch / period_s,
        })  # fmt: skip
    return record, rows


def pool_table(
    case: PoolCase, restate: Callable, settings: ProtocolSettings | None = None
) -> pd.DataFrame:
    """Every workload on every board of the case, as read and restated by the factors
    (`restate`: analysis.boards.apply_board_factors, above the simulator)."""
    settings = settings or ProtocolSettings()
    records, rows = {}, []
    for i in range(case.boards):
        record, board = board_rows(case, i, settings)
        records[record["uuid"]] = record
        rows += board
    df = pd.DataFrame(rows).assign(status="ok", device_pool="pool")
    for col in ("energy_gpu_per_image_j", "energy_node_per_image_j"):
        df[col] = df.get(col, np.nan)
    measured = restate(df, records)
    # the factors alone: each board's noise-free reading of the workload through them
    exact = df.assign(
        energy_per_image_j=df["true_read_j"], throughput_img_s=df["throughput_img_s_true"]
    )
    measured["true_restated_j"] = restate(exact, records)["energy_per_image_j"]
    return measured


def disagreement(table: pd.DataFrame) -> pd.DataFrame:
    """Per pair of boards and workload: |E_a - E_b| / mean, as read and after the factors,
    and whether each restated energy's widened CI holds the other board's."""
    out = []
    for w, rows in table.groupby("workload"):
        for a, b in itertools.combinations(rows.to_dict("records"), 2):
            read = (a["energy_per_image_as_read_j"], b["energy_per_image_as_read_j"])
            after = (a["energy_per_image_j"], b["energy_per_image_j"])
            exact = (a["true_read_j"], b["true_read_j"])
            factors = (a["true_restated_j"], b["true_restated_j"])
            out.append({
                "workload": w,
                "before": abs(read[0] - read[1]) / np.mean(read),
                "after": abs(after[0] - after[1]) / np.mean(after),
                "exact_before": abs(exact[0] - exact[1]) / np.mean(exact),
                "exact_after": abs(factors[0] - factors[1]) / np.mean(factors),
                "ci_holds": bool(abs(after[0] - after[1]) <= np.hypot(_half(a), _half(b))),
            })  # fmt: skip
    return pd.DataFrame(out)


def _half(row: dict) -> float:
    return (row["energy_per_image_ci95_high_j"] - row["energy_per_image_ci95_low_j"]) / 2
