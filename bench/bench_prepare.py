"""Benchmark the prepare stage: images/s decoding, resizing and cropping generated JPEGs.

Run from the repository root with the project's venv on PATH:
    PATH=.venv/bin:$PATH python bench/bench_prepare.py [--images 2000] [--workers 1 2]
Generates 500x375 JPEGs (ImageNet's most common size) in 10 wnid folders, prepares them for
resnet18.a1_in1k's eval config (224 px, bicubic, crop_pct 0.95) and prints markdown rows
to paste into docs/benchmarks.md. Worker start-up (spawned processes import torch and timm)
is included in the time, as a real run pays it.
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
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from joulebench.accuracy import shards  # noqa: E402
from joulebench.accuracy.datasets import imagenet_wnids  # noqa: E402
from joulebench.core.provenance import cpu_name  # noqa: E402


def generate(root: Path, n: int, width: int = 500, height: int = 375) -> None:
    """Smooth gradients plus noise, so JPEG sizes and decode work resemble photographs."""
    rng = np.random.default_rng(0)
    wnids = imagenet_wnids()[::100]
    yy, xx = np.mgrid[0:height, 0:width] / width
    for i in range(n):
        phase = rng.uniform(0, 6, size=3)
        base = np.stack([np.sin(5 * xx + 3 * yy + p) for p in phase], axis=-1)
        pixels = np.clip(128 + 90 * base + rng.normal(0, 10, (height, width, 3)), 0, 255)
        folder = root / wnids[i % len(wnids)]
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels.astype(np.uint8)).save(folder / f"{i:06d}.JPEG", quality=90)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    data_cfg = {
        "input_size": (3, 224, 224),
        "interpolation": "bicubic",
        "crop_pct": 0.95,
        "crop_mode": "center",
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "val"
        generate(root, args.images)
        for workers in args.workers:
            out = Path(tmp) / f"prepared-{workers}"
            start = time.perf_counter()
            shards.prepare(
                {"kind": "imagenet-val", "path": str(root)},
                data_cfg,
                out,
                workers=workers,
                progress=False,
            )
            wall = time.perf_counter() - start
            rows.append((workers, wall, args.images / wall))
    print(f"{time.strftime('%Y-%m-%d')}, {platform.node()}, {os.cpu_count()} cores, {cpu_name()}")
    print("| prepare (500x375 JPEG -> 224 px uint8 shards) | workers | wall | images/s |")
    print("|---|---|---|---|")
    for workers, wall, rate in rows:
        print(f"| {args.images} generated JPEGs | {workers} | {wall:.1f} s | {rate:.0f} |")


if __name__ == "__main__":
    main()
