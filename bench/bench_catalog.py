"""Benchmark the catalog stage: `snakemake -n` over all-pretrained, the default study's
catalog, and (with --full) the catalog of every pretrained timm weight.

Run from the repository root with the project's venv on PATH:
    PATH=.venv/bin:$PATH python bench/bench_catalog.py [--full]
Prints a markdown table to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
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


def snakemake(workdir: Path, config: dict, *args: str) -> float:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]
    cmd += ["--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), *args]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true", help="also catalog all-pretrained")
    args = parser.parse_args()
    rows = []
    default = yaml.safe_load((REPO / "config.yaml").read_text())

    with tempfile.TemporaryDirectory() as tmp:
        dry = [snakemake(Path(tmp), {"models": ["all-pretrained"]}, "-n") for _ in range(3)]
        rows.append(
            ("`snakemake -n`, all-pretrained (median of 3)", f"{statistics.median(dry):.1f} s")
        )

    with tempfile.TemporaryDirectory() as tmp:
        wall = snakemake(Path(tmp), default, "--cores", "all", "results/catalog.parquet")
        rows.append((f"default study catalog ({len(default['models'])} models)", f"{wall:.1f} s"))

    if args.full:
        with tempfile.TemporaryDirectory() as tmp:
            wall = snakemake(
                Path(tmp),
                {"models": ["all-pretrained"]},
                "--cores",
                "all",
                "results/catalog.parquet",
            )
            cat = pd.read_parquet(Path(tmp) / "results" / "catalog.parquet")
            ok = cat[cat.status == "ok"]
            rows.append((f"all-pretrained catalog ({len(cat)} weights)", f"{wall / 60:.1f} min"))
            rows.append(("  ok / failed", f"{len(ok)} / {len(cat) - len(ok)}"))
            rows.append(
                ("  counted on cpu (meta failed)", str(int((ok.count_device == "cpu").sum())))
            )
            rows.append(
                (
                    "  per-model count time, median / max",
                    f"{ok.count_duration_s.median():.2f} s / {ok.count_duration_s.max():.1f} s",
                )
            )
            for _, r in cat[cat.status != "ok"].iterrows():
                print(f"failed: {r.model}: {r.reason[:160]}", file=sys.stderr)
            slow = ok.nlargest(5, "count_duration_s")[["model", "count_device", "count_duration_s"]]
            print(slow.to_string(index=False), file=sys.stderr)

    cpu = platform.processor() or platform.machine()
    print(f"{time.strftime('%Y-%m-%d')}, {platform.node()}, {os.cpu_count()} cores, {cpu}")
    print("| measure | result |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
