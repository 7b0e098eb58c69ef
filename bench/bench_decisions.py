"""Benchmark the analysis of a summary at study scale: best_configs, score, fits and recommend
on synthetic summaries of 2,000, 36,520 (the paper study: 1,826 weights x 5 methods x 4 batch
sizes on one GPU) and 300,000 rows (1,875 weights x 5 x 4 on 8 GPUs). Made-up energies,
nothing measured; the generator below is vectorised so that a 300,000-row summary takes
seconds to make.

Each stage runs --runs times on the same summary; the table gives the min wall time (the
machine is shared, so the min is the least disturbed run), the max, and the min CPU time of
this process (steadier than wall time while other work shares the cores).

    PYTHONPATH=src python bench/bench_decisions.py [--rows 2000 36520 300000] [--runs 2]
        [--stages best_configs score fits recommend] [--figures] [--write-summary DIR]
Prints a markdown table to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src")]

from joulebench.analysis.best_configs import best_configs  # noqa: E402
from joulebench.analysis.fits import all_fits  # noqa: E402
from joulebench.analysis.recommend import recommend  # noqa: E402
from joulebench.analysis.score import score_summary  # noqa: E402
from joulebench.analysis.summary import build_summary, write_summary  # noqa: E402
from joulebench.tables import PROFILE_COLUMNS  # noqa: E402

FAMILIES = ("resnet", "efficientnet", "vit", "convnext", "mobilenetv3", "regnet", "deit")
METHODS = ("fp32", "bf16", "fp16-amp", "channels_last", "compile")
METHOD_FACTOR = (1.0, 0.62, 0.6, 0.93, 0.85)
BATCH_SIZES = (1, 8, 32, 128)
# rows -> (models, devices): 20 configurations (5 methods x 4 batch sizes) per model and device
SHAPES = {2_000: (100, 1), 36_520: (1_826, 1), 300_000: (1_875, 8)}


def _catalog_and_accuracy(n_models: int, rng) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """Per model: FLOPs, params, activations, family, top-1 (5 % without one) and base energy."""
    fam = np.array(FAMILIES)[np.arange(n_models) % len(FAMILIES)]
    names = [f"{f}_{i}.in1k" for i, f in enumerate(fam)]
    flops = 10 ** rng.uniform(8.3, 11.5, n_models)
    catalog = pd.DataFrame(
        {
            "model": names,
            "architecture": [n.split(".")[0] for n in names],
            "pretrained_tag": "in1k",
            "family": fam,
            "status": "ok",
            "reason": "",
            "params": (flops / 10 ** rng.uniform(1.7, 2.7, n_models)).astype(int),
            "flops_per_image": flops,
            "macs_per_image": flops / 2,
            "activations_per_image": flops / 10 ** rng.uniform(2.5, 3.1, n_models),
            "input_height": 224,
            "input_width": 224,
            "num_classes": 1000,
        }
    )
    e_model = 1.8e-10 * flops**0.9 * 10 ** rng.normal(0, 0.12, n_models)
    top1 = 88 - 25 * (e_model / 0.01) ** -0.3 + rng.normal(0, 1.5, n_models)
    top1 = np.clip(top1, 1.0, 99.0)
    known = rng.uniform(size=n_models) > 0.05
    accuracy = pd.DataFrame(
        {
            "model": np.array(names)[known],
            "img_size": 224,
            "top1": top1[known],
            "top5": np.minimum(top1[known] + 12, 99.5),
            "accuracy_source": "reference",
        }
    )
    return catalog, accuracy, e_model


def study_summary(n_models: int, n_devices: int = 1, seed: int = 0) -> pd.DataFrame:
    """A varied summary: every model x method x batch size on each GPU (`h200-<k>`), the
    first device's last model also estimated on a CPU; ~3 % out of memory at the largest
    batch, ~2 % flagged other-load, ~2 % with a CV over 0.25, p95 latency on ~70 % of rows
    (else the mean), a few without any latency, 5 % of models without a top-1."""
    rng = np.random.default_rng(seed)
    catalog, accuracy, e_model = _catalog_and_accuracy(n_models, rng)
    m, k, b = np.meshgrid(
        np.arange(n_models), np.arange(len(METHODS)), np.arange(len(BATCH_SIZES)), indexing="ij"
    )
    m, k, b = (np.tile(a.ravel(), n_devices) for a in (m, k, b))
    device = np.repeat(np.arange(n_devices), n_models * len(METHODS) * len(BATCH_SIZES))
    n = len(m)
    batch = np.array(BATCH_SIZES)[b]
    energy = e_model[m] * np.array(METHOD_FACTOR)[k] * (0.55 + 0.45 / batch**0.5)
    energy *= 10 ** rng.normal(0, 0.03, n) * (1 + 0.02 * device)
    cv = np.where(
        rng.uniform(size=n) < 0.02, rng.uniform(0.26, 0.5, n), rng.uniform(0.005, 0.08, n)
    )
    half = energy * cv * 1.6  # Student-t 95 % half-width at 4 repeats: 3.18 / sqrt(4)
    throughput = (150 + 300 * rng.uniform(size=n)) / energy
    latency = 1e3 * batch / throughput
    oom = (b == len(BATCH_SIZES) - 1) & (rng.uniform(size=n) < 0.03)
    no_latency = rng.uniform(size=n) < 0.01
    profile = pd.DataFrame(
        {
            "device_label": np.char.add("h200-", device.astype(str)),
            "model": catalog["model"].to_numpy()[m],
            "method": np.array(METHODS)[k],
            "batch_size_requested": batch,
            "batch_size": batch,
            "status": np.where(oom, "oom", "ok"),
            "reason": np.where(oom, "out of memory", ""),
            "meter": "nvml",
            "is_estimate": False,
            "energy_per_image_j": np.where(oom, np.nan, energy),
            "energy_per_image_cv": np.where(oom, np.nan, cv),
            "energy_per_image_ci95_low_j": np.where(oom, np.nan, energy - half),
            "energy_per_image_ci95_high_j": np.where(oom, np.nan, energy + half),
            "dynamic_energy_per_image_j": np.where(oom, np.nan, 0.7 * energy),
            "dynamic_energy_per_image_cv": np.where(oom, np.nan, cv / 0.7),
            "dynamic_energy_per_image_ci95_low_j": np.where(oom, np.nan, 0.7 * energy - half),
            "dynamic_energy_per_image_ci95_high_j": np.where(oom, np.nan, 0.7 * energy + half),
            "throughput_img_s": np.where(oom, np.nan, throughput),
            "latency_ms_mean": np.where(oom | no_latency, np.nan, latency),
            "latency_ms_p95": np.where(rng.uniform(size=n) < 0.7, 1.1 * latency, np.nan),
            "idle_power_w": 60.0,
            "flags": np.where(rng.uniform(size=n) < 0.02, "other-load", ""),
            "phase": "inference",
            "runtime": "pytorch",
        }
    )
    profile.loc[oom | no_latency, "latency_ms_p95"] = np.nan
    cpu = profile.iloc[: len(METHODS) * len(BATCH_SIZES)].copy()
    cpu["device_label"], cpu["meter"], cpu["is_estimate"] = "cpu", "estimate:tdp-linear", True
    profile = pd.concat([profile, cpu], ignore_index=True).reindex(columns=list(PROFILE_COLUMNS))
    return build_summary(profile, catalog, accuracy)


def stages(summary: pd.DataFrame) -> dict:
    """The analysis calls timed, by name (the defaults of the workflow's config)."""
    return {
        "best_configs": lambda: best_configs(summary, max_latency_ms=[10, 100], max_batch_size=[1]),
        "score": lambda: score_summary(summary),
        "fits": lambda: all_fits(summary, baseline_method="fp32"),
        "recommend": lambda: recommend(summary, min_top1=75, max_latency_ms=50),
    }


def timed(fn, runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (this process's) of each run: on a shared machine the CPU time
    is the steadier of the two."""
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def figure_cases(summary: pd.DataFrame) -> dict:
    from joulebench.report import figures

    best = best_configs(summary, max_latency_ms=[10, 100], max_batch_size=[1])
    out = Path(tempfile.mkdtemp())
    return {
        "figures energy_optimal_front + method_value": lambda: (
            figures.energy_optimal_front(best, out / "front"),
            figures.method_value(summary, out / "value"),
        )
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=sorted(SHAPES), choices=sorted(SHAPES))
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--stages", nargs="+", default=["best_configs", "score", "fits", "recommend"])
    ap.add_argument("--figures", action="store_true", help="also time two decision figures")
    ap.add_argument("--write-summary", metavar="DIR", help="write DIR/summary_<rows>.parquet")
    args = ap.parse_args()
    print(
        f"{platform.node()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
        f"{args.runs} runs each\n"
    )
    print("| rows | stage | wall, min | wall, max | CPU, min |\n|---|---|---|---|---|")
    for rows in args.rows:
        t0 = time.perf_counter()
        summary = study_summary(*SHAPES[rows])
        made_s = time.perf_counter() - t0
        print(f"| {len(summary):,} | (generating the summary) | {made_s:.2f} s | | |", flush=True)
        if args.write_summary:  # for timing the commands on it (docs/benchmarks.md)
            write_summary(summary, Path(args.write_summary) / f"summary_{rows}.parquet")
        cases = {k: v for k, v in stages(summary).items() if k in args.stages}
        if args.figures:
            cases.update(figure_cases(summary))
        for name, fn in cases.items():
            wall, cpu = timed(fn, args.runs)
            print(
                f"| {len(summary):,} | {name} | {min(wall):.2f} s | {max(wall):.2f} s "
                f"| {min(cpu):.2f} s |",
                flush=True,
            )


if __name__ == "__main__":
    main()
