"""Boards of a pool against each other, before and after the board factors (issue 41).

A simulated pool of `--boards` boards of one product, each with its own sensor gain and
offset and its own silicon drawn (sim.boards), reads the reference levels as a profile job
does, then measures the same workloads under the protocol, in simulated time. For every pair
of boards and workload: how far apart the two energies are as read, after the factors, and
the factors alone (each board's noise-free reading through them). Swept over the draws'
spread (the SC'24 figures, and twice them) and heat (none, the generation's).

    PYTHONPATH=src python bench/bench_boards.py --seeds 10 [--preset default|strict|fast]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from joulebench.analysis.boards import apply_board_factors
from joulebench.core.protocol import ProtocolSettings
from joulebench.jobs.board_reference import reference_s
from joulebench.sim.board_experiment import PoolCase, disagreement, pool_table
from joulebench.sim.boards import Spread

SPREADS = {"SC'24": Spread(), "twice": Spread(0.10, 0.04, 0.10, 0.16)}


def _pct(values: pd.Series) -> str:
    q = values.quantile([0.5, 0.95, 1.0]).to_numpy() * 100
    return " / ".join(f"{v:.2f}" for v in q)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--boards", type=int, default=8)
    parser.add_argument("--preset", default="default")
    args = parser.parse_args()
    settings = ProtocolSettings.from_dict({"preset": args.preset})
    print(f"reference readings: {reference_s():.0f} s a board on a GPU (a one-off, kept)")
    print("| spread | heat | pairs | as read (median / p95 / worst %) | after the factors "
          "| the factors alone | widened CIs hold each other |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, spread in SPREADS.items():
        for heat in (False, True):
            started = time.time()
            frames = [
                disagreement(
                    pool_table(
                        PoolCase(args.boards, spread, heat=heat, seed=s),
                        apply_board_factors,
                        settings,
                    )
                )
                for s in range(args.seeds)
            ]
            d = pd.concat(frames, ignore_index=True)
            holds = np.mean(d["ci_holds"]) * 100
            took = time.time() - started
            cells = [name, "on" if heat else "off", str(len(d)), _pct(d["before"])]
            cells += [_pct(d["after"]), _pct(d["exact_after"]), f"{holds:.1f} %"]
            print("| " + " | ".join(cells) + f" | ({took:.0f} s)")


if __name__ == "__main__":
    main()
