"""Draw every figure of a study-scale summary and time it, to look at them: the 300,000-row
summary of bench_decisions.py (1,875 models x 5 methods x 4 batch sizes on 8 GPUs), plus an
estimated CPU with as many rows as a GPU (so it ties with them on rows) and a power-limit
sweep (fp16-amp at 1.0, 0.8 and 0.6 of a 700 W limit) of 6 models on the first GPU. Made-up
energies, nothing measured.

    PYTHONPATH=src .venv/bin/python bench/bench_figures.py [--rows 300000] [--out DIR]

Prints the time of each stage (score, fits, every figure) and where the figures are; open
the PNGs to look at them (docs/benchmarks.md, issue 35 D7).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "bench")]

from bench_decisions import SHAPES, study_summary  # noqa: E402

from joulebench.analysis.fits import all_fits  # noqa: E402
from joulebench.analysis.score import score_summary  # noqa: E402
from joulebench.report.figures import render_all  # noqa: E402

SWEEP_FRACTIONS = (0.8, 0.6)  # the 1.0 point is the method's own row
SWEEP_MODELS = 6
DEFAULT_LIMIT_W = 700.0


def with_cpu_and_sweep(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary with the first GPU's rows again on an estimated CPU (25x the energy) and
    a power-limit sweep of its first models' fp16-amp rows at batch 32."""
    first = summary[summary["device_label"] == "h200-0"]
    cpu = first.assign(
        device_label="cpu",
        torch_device="cpu",
        meter="estimate:tdp-linear",
        energy_is_estimate=True,
        energy_per_image_j=first["energy_per_image_j"] * 25,
    )
    base = first[(first["method"] == "fp16-amp") & (first["batch_size_requested"] == 32)]
    base = base[base["status"] == "ok"].head(SWEEP_MODELS)
    sweep = [base.assign(power_limit_requested_fraction=1.0, power_limit_readback_w=700.0)]
    for fraction in SWEEP_FRACTIONS:
        slower = 1 + (1 - fraction) ** 2 * 2
        sweep.append(
            base.assign(
                method=f"fp16-amp@{fraction}",
                power_limit_requested_fraction=fraction,
                power_limit_readback_w=fraction * DEFAULT_LIMIT_W,
                energy_per_image_j=base["energy_per_image_j"] * (fraction * slower),
                throughput_img_s=base["throughput_img_s"] / slower,
            )
        )
    rest = summary.drop(index=base.index)
    return pd.concat([rest, cpu, *sweep], ignore_index=True)


def timed(what: str, fn):
    start = time.perf_counter()
    out = fn()
    print(f"| {what} | {time.perf_counter() - start:.1f} s |", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=300_000, choices=sorted(SHAPES))
    ap.add_argument("--out", help="folder of the figures (default: a new temp folder)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="figures-"))
    print(f"{platform.node()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}\n")
    print("| stage | wall |\n|---|---|")
    summary = timed("summary", lambda: with_cpu_and_sweep(study_summary(*SHAPES[args.rows])))
    scores = timed("score", lambda: score_summary(summary))
    fits = timed("fits", lambda: all_fits(summary, baseline_method="fp32"))
    paths = timed("figures", lambda: render_all(summary, scores, fits, None, out))
    print(f"\n{len(summary):,} rows; {len(paths)} figures in {out}")


if __name__ == "__main__":
    main()
