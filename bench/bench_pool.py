"""GPU pools (issue 24 item 1): the same study measured by a pool of 2 simulated GPUs and by
one simulated GPU, each configuration measured once in both.

    PYTHONPATH=src .venv/bin/python bench/bench_pool.py [--models 3] [--methods 2]
        [--min-repeat-s 2] [--rounds 2] [--split auto] [--fixed] [--waiting]

With two methods (fp32, fp32 channels-last) and `profile: {split: auto}` the pool's jobs
are one per model and method (3 models on 2 GPUs: fewer than 4 a GPU), the single GPU's
one per model (schedule.job_parts); `--split model` keeps whole models in the pool too.
`--waiting` measures workloads whose steps wait as a host waits on a GPU
(bench/pool_workloads.py) instead of timm models computed on the host's cores.

Both runs use the same workflow with `--cores 2` and one torch thread per measuring job
(`--set-threads`: what the pool's jobs get; the single GPU's would otherwise take both
cores, which on a busy host changes its speed, not the pool's effect); the wall time of
each is Snakemake's, from start to the profile table. Rounds alternate which run goes first
(the host's other load changes). Each run has its own GPU lock folder and measurement
markers, so other runs on the host neither hold its (simulated) GPUs nor count as its
neighbours. Prints markdown for docs/benchmarks.md, with which GPU measured each model in
the last pool run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
MODELS = [
    "resnet18.a1_in1k",
    "mobilenetv3_small_100.lamb_in1k",
    "efficientnet_b0.ra_in1k",
    "resnet34.a1_in1k",
]
# --waiting: steps that wait as a host waits on a GPU (bench/pool_workloads.py)
WAITING = [
    f"wait-{ms}ms={REPO / 'bench' / 'pool_workloads.py'}:wait_{ms}ms" for ms in (10, 20, 5, 40)
]
METHODS = {
    "fp32": {"precision": "fp32"},
    "fp32-cl": {"precision": "fp32", "channels_last": True},
}
DEFAULT_CI = 0.015  # the default preset's ci_target (ProtocolSettings)
POOL = {"h100": {"pool": ["sim:h100:0", "sim:h100:1"]}}
ONE = {"h100": "sim:h100"}


def study(
    devices: dict,
    n_models: int,
    n_methods: int,
    min_repeat_s: float,
    split: str,
    fixed: bool,
    waiting: bool = False,
) -> dict:
    # --fixed: 3 windows each, no CI target, so every job is as long as its model makes it
    # and the ratio shows the pool's split rather than which job drew 12 windows
    # (else the default preset's CI target; the smoke preset's short warm-up and 2-batch
    # minimum either way: a study's config sets neither)
    fixed_windows = {"repeats": 3, "ci_target": None} if fixed else {"ci_target": DEFAULT_CI}
    return {
        "models": (WAITING if waiting else MODELS)[:n_models],
        "catalog": {"models_per_job": n_models},
        "devices": devices,
        "methods": dict(list(METHODS.items())[:n_methods]),
        "batch_sizes": [1],
        # windows bounded by time, as on a GPU (32 batches of a model on a shared CPU core
        # take longer than the window: the CPU's speed, not the pool's, would be measured)
        "protocol": {
            "preset": "smoke",
            "repeats": 2,
            "min_repeat_s": min_repeat_s,
            **fixed_windows,
        },
        "profile": {"idle_pre_s": 0.5, "split": split},
        "idle": {"duration_s": 2.0},
    }


def run(config: dict) -> tuple[float, pd.DataFrame]:
    """(wall time in s, the profile rows) of the study in a fresh folder."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "c.yaml").write_text(yaml.safe_dump(config))
        cmd = [sys.executable, "-m", "snakemake", "results/profile.parquet"]
        cmd += ["-s", str(REPO / "Snakefile"), "--directory", str(workdir), "--cores", "2"]
        cmd += ["--configfile", str(workdir / "c.yaml")]
        cmd += ["--set-threads", "idle=1", "profile=1"]  # one torch thread per job in both
        env = {**os.environ, "JOULEBENCH_LOCK_DIR": str(workdir / "locks")}
        env["JOULEBENCH_RUNNING_DIR"] = str(workdir / "running")
        t0 = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall = time.monotonic() - t0
        if done.returncode:
            sys.exit(done.stderr[-3000:])
        return wall, pd.read_parquet(workdir / "results" / "profile.parquet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=3, choices=range(1, len(MODELS) + 1))
    parser.add_argument("--methods", type=int, default=2, choices=(1, 2))
    parser.add_argument("--min-repeat-s", type=float, default=2.0)
    parser.add_argument("--split", default="auto", choices=("auto", "model", "method"))
    parser.add_argument("--rounds", type=int, default=2, help="pairs of runs, order alternated")
    parser.add_argument(
        "--fixed", action="store_true", help="3 windows a configuration, no CI target"
    )
    parser.add_argument(
        "--waiting",
        action="store_true",
        help="models whose steps wait, as on a GPU, instead of computing on the host's cores",
    )
    args = parser.parse_args()
    pool_study, one_study = (
        study(d, args.models, args.methods, args.min_repeat_s, args.split, args.fixed, args.waiting)
        for d in (POOL, ONE)
    )
    configs = args.models * args.methods
    loads, lines, ratios = [os.getloadavg()[0]], [], []
    for i in range(args.rounds):
        # alternate which runs first, so a change in the host's other load favours neither
        if i % 2 == 0:
            (pool_s, rows), (one_s, one_rows) = run(pool_study), run(one_study)
        else:
            (one_s, one_rows), (pool_s, rows) = run(one_study), run(pool_study)
        assert len(rows) == len(one_rows) == configs  # each configuration measured once
        loads.append(os.getloadavg()[0])
        ratios.append(pool_s / one_s)
        first = "pool" if i % 2 == 0 else "one"
        lines.append(
            f"| {i + 1} ({first} first) | {pool_s:.0f} s | {one_s:.0f} s | {pool_s / one_s:.2f} |"
        )
    print(
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {min(loads):.1f}-{max(loads):.1f}"
    )
    methods = ", ".join(list(METHODS)[: args.methods])
    print(
        f"{args.models} models x {methods}, batch 1, windows of >= {args.min_repeat_s:g} s "
        f"(and the default preset's sensor refreshes), "
        f"{'3 each' if args.fixed else '3-12 each until the CI target'}, split {args.split}\n"
    )
    print("| round | pool of 2 simulated GPUs | one simulated GPU | ratio |")
    print("|---|---|---|---|")
    print("\n".join(lines))
    print(f"| median | | | {statistics.median(ratios):.2f} |\n")
    print("Last pool run, which GPU measured each configuration:\n")
    print("| model | method | gpu_index | gpu_uuid | status |\n|---|---|---|---|---|")
    for r in rows.sort_values("start_time_utc").itertuples():
        print(f"| {r.model} | {r.method} | {r.gpu_index} | {r.gpu_uuid} | {r.status} |")


if __name__ == "__main__":
    main()
