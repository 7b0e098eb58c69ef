"""Benchmark the decision stages on a 2,000-row summary (250 models x 4 methods x 2 batch
sizes, the figures tests' generator: made-up energies, nothing measured).

Times, median of --runs: best_configs (overall + 3 constraints), recommend (top-1 floor and
latency budget), the accuracy-energy law (3 forms x 2 subsets per group, with 5-fold
cross-validation), and the two decision figures.

    PYTHONPATH=src python bench/bench_decisions.py [--runs 3]
Prints a markdown table to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from helpers.figure_study import study_tables  # noqa: E402

from joulebench.analysis.best_configs import best_configs  # noqa: E402
from joulebench.analysis.fits import accuracy_law  # noqa: E402
from joulebench.analysis.recommend import recommend  # noqa: E402
from joulebench.report import figures  # noqa: E402


def timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    summary, scores, _, _ = study_tables(
        n_models=250,
        methods=("fp32", "bf16", "fp16-amp", "channels_last-compile"),
        batch_sizes=(1, 8),
        estimated=False,
    )
    summary["latency_ms_mean"] = 1e3 * summary["batch_size"] / summary["throughput_img_s"]
    best = best_configs(summary, max_latency_ms=[10, 100], max_batch_size=[1])
    out = Path(tempfile.mkdtemp())
    cases = {
        "best_configs (overall + 3 constraints)": lambda: best_configs(
            summary, max_latency_ms=[10, 100], max_batch_size=[1]
        ),
        "recommend (top-1 >= 75, latency <= 50 ms)": lambda: recommend(
            summary, min_top1=75, max_latency_ms=50
        ),
        "accuracy_law (8 groups x 2 subsets x 3 forms, 5-fold)": lambda: accuracy_law(summary),
        "figures energy_optimal_front + method_value": lambda: (
            figures.energy_optimal_front(best, out / "front"),
            figures.method_value(summary, out / "value"),
        ),
    }
    print(
        f"{len(summary)} rows, {summary['model'].nunique()} models; {platform.node()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; median of {args.runs}\n"
    )
    print("| stage | median | min | max |\n|---|---|---|---|")
    for name, fn in cases.items():
        t = timed(fn, args.runs)
        print(f"| {name} | {statistics.median(t):.2f} s | {min(t):.2f} s | {max(t):.2f} s |")


if __name__ == "__main__":
    main()
