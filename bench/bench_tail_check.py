"""How well `joulebench check` reads a board's power tail (issue 33), on simulated boards.

For boards of every generation with tails drawn from the simulator's swept ranges
(joulebench.sim.tail: a fifth with none; share 0-40 %, plateau 0-0.5 s, decay
0.05-2 s, dynamic or constant), the check's tail step and sensor fit run as in
`joulebench check` (check.gpu.sensor_and_tail) in simulated time. Against the board's true
tail: the excess right after the stop, plateau, decay, and what the protocol takes out of a
phase shift (the mean excess over its first 3-9 ms, against the truth's), and the sensor's
averaging window against the published one.

    PYTHONPATH=src python bench/bench_tail_check.py [--boards 20] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

SHIFT_S = (0.003, 0.009)  # a phase shift's length (the protocol's default: about 6 ms)


def one(generation: str, seed: int) -> dict:
    import numpy as np

    from joulebench.check.gpu import sensor_and_tail
    from joulebench.check.rows import CheckSettings
    from joulebench.core.meters.nvidia_sensors import GENERATIONS
    from joulebench.sim.rig import SimCheckTarget, simulated_gpu
    from joulebench.sim.tail import drawn

    rng = random.Random(f"tail-check-{generation}-{seed}")
    tail = drawn(rng)
    rig = simulated_gpu(generation, phase_s=rng.uniform(0, 0.1), tail=tail, seed=seed)
    target = SimCheckTarget(rig)
    with target.meter() as meter:
        sensor, fit = sensor_and_tail(target, CheckSettings(), meter, meter.sensor, lambda m: 0)
    true_w = tail.excess_w(300.0, 60.0) if tail else 0.0
    shifts = np.linspace(*SHIFT_S, 7)
    true_shift = np.mean([tail.integral_s(0, d) / d for d in shifts]) * true_w if tail else 0.0
    fit_shift = 0.0
    if fit is not None and fit.excess_w > 0:
        from joulebench.core.tail import TailShape

        shape = TailShape(fit.hold_s, fit.tau_s)
        fit_shift = float(np.mean([shape.integral_s(0, d) / d for d in shifts])) * fit.excess_w
    return {
        "generation": generation,
        "seed": seed,
        "share": tail.share if tail else 0.0,
        "hold_s": tail.hold_s if tail else 0.0,
        "tau_s": tail.tau_s if tail else float("nan"),
        "scales": tail.scales if tail else "",
        "true_excess_w": true_w,
        "fit_excess_w": fit.excess_w if fit else float("nan"),
        "fit_hold_s": fit.hold_s if fit else float("nan"),
        "fit_tau_s": fit.tau_s if fit else float("nan"),
        "true_shift_w": true_shift,
        "fit_shift_w": fit_shift,
        "window_rel": sensor.window_s / GENERATIONS[generation].window_s - 1 if sensor else None,
    }


def main() -> None:
    import pandas as pd

    from joulebench.core.meters.nvidia_sensors import GENERATIONS

    parser = argparse.ArgumentParser()
    parser.add_argument("--boards", type=int, default=20, help="boards per generation")
    parser.add_argument("--csv", default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, python {platform.python_version()}")
    rows = pd.DataFrame([one(g, s) for g in GENERATIONS for s in range(args.boards)])
    if args.csv:
        rows.to_csv(args.csv, index=False)
    tailed = rows[rows["true_excess_w"] > 0]
    dyn = 240.0
    shift_err = (tailed["fit_shift_w"] - tailed["true_shift_w"]) / dyn
    excess_err = tailed["fit_excess_w"] / tailed["true_excess_w"] - 1
    print(f"{len(rows)} boards ({len(tailed)} with a tail), the check's standard load 240 W "
          "above idle")  # fmt: skip
    print("| quantity | median | p95 of |error| | worst |")
    print("|---|---|---|---|")
    for name, err, unit in (
        ("excess at the stop, relative", excess_err, "%"),
        ("a phase shift's mean excess, of the load's dynamic power", shift_err, "%"),
        ("plateau, s", tailed["fit_hold_s"] - tailed["hold_s"], "s"),
        ("decay time, relative", tailed["fit_tau_s"] / tailed["tau_s"] - 1, "%"),
        ("averaging window, relative to published", rows["window_rel"], "%"),
    ):
        fmt = (lambda v: f"{v * 100:+.1f} %") if unit == "%" else (lambda v: f"{v:+.3f} s")
        worst = err.loc[err.abs().idxmax()]
        print(f"| {name} | {fmt(err.median())} | {fmt(err.abs().quantile(0.95))[1:]} "
              f"| {fmt(worst)} |")  # fmt: skip
    none = rows[rows["true_excess_w"] == 0]
    print(f"boards without a tail: read excess at most {none['fit_excess_w'].max():.2f} W")
    print(f"bench wall time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
