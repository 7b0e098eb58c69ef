"""Benchmark the profile stage's overheads (issue 4 targets).

1. Throughput inside a measurement window vs a bare timed loop with no meter, same model
   and batch (target >= 99%): interleaved, several rounds, median ratio.
2. Share of a profile job's wall time spent inside measurement windows at the default
   settings (target >= 70%): one `joulebench profile-job` process, as the workflow runs it.

    PATH=.venv/bin:$PATH python bench/bench_profile.py [--model resnet18.a1_in1k]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def window_vs_bare(model_name: str, batch_size: int, seconds: float, rounds: int) -> list[float]:
    import timm
    import torch

    from joulebench.measure.backends import select_meter
    from joulebench.measure.protocol import ProtocolSettings, measure

    model = timm.create_model(model_name).eval()
    x = torch.randn(batch_size, 3, 224, 224)
    settings = ProtocolSettings(repeats=1, min_repeat_s=seconds, pause_s=(0, 0))
    ratios = []
    with torch.inference_mode():
        for _ in range(5):
            model(x)  # warm
        for _ in range(rounds):
            n, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                model(x)
                n += 1
            bare = n * batch_size / (time.perf_counter() - start)
            meter, _ = select_meter("cpu")
            with meter:
                result = measure(
                    lambda: model(x), lambda: None, meter, images_per_step=batch_size,
                    settings=settings,
                )  # fmt: skip
            ratios.append(result.summary["throughput_img_s"] / bare)
    return ratios


def job_share(model_name: str) -> tuple[float, float, float]:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    spec = {
        "torch_device": "cpu",
        "methods": config["methods"],
        "batch_sizes": config["batch_sizes"],
        "protocol": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        out = {k: str(Path(tmp) / f"{k}.parquet") for k in ("rows", "repeats", "trace")}
        cmd = [sys.executable, "-m", "joulebench", "profile-job", model_name]
        cmd += ["--device-label", "cpu", "--spec", json.dumps(spec), "--threads", "2"]
        cmd += ["--output", out["rows"], "--repeats-output", out["repeats"]]
        cmd += ["--trace-output", out["trace"]]
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
        start = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, capture_output=True)
        wall = time.perf_counter() - start
        import pandas as pd

        measured = float(pd.read_parquet(out["rows"])["measured_s"].sum())
    return measured / wall, measured, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet18.a1_in1k")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ratios = window_vs_bare(args.model, args.batch_size, args.seconds, args.rounds)
    share, measured, wall = job_share(args.model)
    print(f"{time.strftime('%Y-%m-%d')}, {platform.node()}, {os.cpu_count()} cores")
    print("| measure | result |\n|---|---|")
    print(
        f"| window vs bare-loop throughput, {args.model} bs{args.batch_size} "
        f"(median of {args.rounds}; min-max) | {statistics.median(ratios):.1%} "
        f"({min(ratios):.1%}-{max(ratios):.1%}) |"
    )
    print(
        f"| share of profile-job wall time inside windows, {args.model}, default config "
        f"| {share:.0%} ({measured:.0f} s of {wall:.0f} s) |"
    )


if __name__ == "__main__":
    main()
