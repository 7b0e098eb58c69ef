"""The protocol against the power tail, one assumption at a time (issue 33).

bench_heat.py draws each board's tail from the simulator's swept ranges; here each point of
a grid over them is run on its own (every generation x batch period x pattern, `--seeds`
each, with heat as bench_heat draws it), so the worst case of each assumption shows: the
excess's share of the dynamic power, its plateau, its decay time and whether it follows
the work (`dynamic`) or not (`constant`). The tail is handed to the protocol as the check
would measure it (within --tail-error), or not at all (--tail-error -1).

    PYTHONPATH=src python bench/bench_tail_sweep.py [--seeds 1] [--tail-error 0.1]
        [--csv out.csv]
"""

from __future__ import annotations

import argparse
import itertools
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

SHARES = (0.1, 0.25, 0.4)
TAUS_S = (0.05, 0.3, 2.0)
HOLDS_S = (0.0, 0.5)
SCALES = ("dynamic", "constant")


def pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def main() -> None:
    import pandas as pd

    from joulebench.core.protocol import ProtocolSettings
    from joulebench.sim import heat_experiment as he

    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--tail-error", type=float, default=0.1)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--csv", default=None)
    args = parser.parse_args()
    tail_error = args.tail_error if args.tail_error >= 0 else None
    settings = ProtocolSettings.from_dict({"preset": args.preset})
    start = time.perf_counter()
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, python {platform.python_version()}")
    print(f"preset {args.preset}, tail known within {tail_error}, heat within 0.05")
    frames = []
    grid = itertools.product(SHARES, TAUS_S, HOLDS_S, SCALES)
    for share, tau, hold, scales in grid:
        spec = f"{share}/{hold}/{tau}/{scales}"
        rows = [
            he.run_case(case, settings, 0.05, tail_error=tail_error)
            for case in he.cases(args.seeds, tail=spec)
        ]
        frames.append(pd.DataFrame(rows).assign(tail=spec))
    rows = pd.concat(frames, ignore_index=True)
    if args.csv:
        rows.to_csv(args.csv, index=False)
    rows["abs_error"] = rows["error"].abs()
    table = rows.groupby("tail", sort=False).agg(
        cases=("abs_error", "size"),
        mean_error=("error", "mean"),
        within_5=("abs_error", lambda e: (e <= 0.05).mean()),
        within_2=("abs_error", lambda e: (e <= 0.02).mean()),
        ci=("truth_in_ci95", "mean"),
        worst=("abs_error", "max"),
    )
    print("\n| tail: share / plateau s / decay s / scales | cases | mean error | within 5 % "
          "| within 2 % | CI95 holds truth | worst |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for spec, r in table.iterrows():
        print(f"| {spec} | {r['cases']} | {r['mean_error'] * 100:+.2f} % | {pct(r['within_5'])} "
              f"| {pct(r['within_2'])} | {pct(r['ci'])} | {pct(r['worst'])} |")  # fmt: skip
    worst = table.loc[table["within_2"].idxmin()]
    print(
        f"\nall {len(rows)} cases: within 5 % {pct((rows['abs_error'] <= 0.05).mean())}, within "
        f"2 % {pct((rows['abs_error'] <= 0.02).mean())}, CI95 {pct(rows['truth_in_ci95'].mean())}, "
        f"worst {pct(rows['abs_error'].max())}; worst point for within 2 %: {worst.name} "
        f"({pct(worst['within_2'])}, CI {pct(worst['ci'])})"
    )
    print(f"bench wall time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
