"""Every GPU at once (issue 16): the same study on 2 simulated GPUs, measured at once and one
at a time, and the plan's extrapolation of the hidden-joules study to an 8-GPU node.

    .venv/bin/python bench/bench_node.py [--models 3] [--min-repeat-s 2]

Both runs use the same workflow and jobs with one torch thread each: `--cores 2` lets the two
devices' measuring slots run at once; `--cores 1` runs one job at a time (what the single
global `measuring` slot did). The wall time of each is Snakemake's, from start to the
profile table. Prints markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
MODELS = ["resnet18.a1_in1k", "mobilenetv3_small_100.lamb_in1k", "efficientnet_b0.ra_in1k"]


def study(n_models: int, min_repeat_s: float) -> dict:
    return {
        "models": MODELS[:n_models],
        "catalog": {"models_per_job": n_models},
        "devices": {"g0": "sim:h100", "g1": "sim:h100"},
        "methods": {"fp32": {"precision": "fp32"}},
        "batch_sizes": [1],
        # the smoke preset's short warm-up and pauses (a study's config sets no warm-up)
        "protocol": {"preset": "smoke", "repeats": 2, "min_repeat_s": min_repeat_s},
        "profile": {"idle_pre_s": 0.5},
        "idle": {"duration_s": 2.0},
    }


def run(config: dict, cores: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "c.yaml").write_text(yaml.safe_dump(config))
        cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]
        cmd += ["--directory", str(workdir), "--cores", str(cores)]
        cmd += ["results/profile.parquet", "--configfile", str(workdir / "c.yaml")]
        t0 = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if done.returncode:
            sys.exit(done.stderr[-3000:])
        return wall


def plan_8_gpus() -> str:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "joulebench",
            "plan",
            "--configfile",
            "studies/hidden-joules.yaml",
            "--gpus",
            "8",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    ).stdout
    return next(line for line in out.splitlines() if line.startswith(("total", "(one host")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--min-repeat-s", type=float, default=2.0)
    args = parser.parse_args()
    config = study(args.models, args.min_repeat_s)
    at_once = run(config, cores=2)
    one_by_one = run(config, cores=1)
    load = os.getloadavg()[0]
    print(f"{dt.date.today()}, {platform.machine()}, {os.cpu_count()} CPUs, load {load:.1f}")
    print(f"| run | wall time |\n|---|---|\n| 2 simulated GPUs at once | {at_once:.0f} s |")
    print(f"| one at a time | {one_by_one:.0f} s |\n| ratio | {at_once / one_by_one:.2f} |")
    print(plan_8_gpus())


if __name__ == "__main__":
    main()
