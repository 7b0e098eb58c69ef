"""Benchmark the workflow's bookkeeping at full scale (studies/hidden-joules.yaml, every
pretrained timm weight): `snakemake -n` on a fresh folder, plain and with the SLURM
profile (groups), and a no-op rerun of a completed study. Targets: < 30 s each.

The completed study is synthetic: every output of the DAG (from `snakemake --summary`)
written as a tiny valid file (parquet where the name says so), then `snakemake --touch`
to give them the DAG's order of modification times.

Run from the repository root with the project's venv on PATH:
    PATH=.venv/bin:$PATH python bench/bench_dag.py [--repeats 3]
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

REPO = Path(__file__).resolve().parents[1]
STUDY = REPO / "studies" / "hidden-joules.yaml"
TARGET_S = 30


def snakemake(workdir: Path, *args: str) -> tuple[float, str]:
    """Run the workflow on the full study in `workdir`; (wall seconds, stdout + stderr)."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]
    cmd += ["--directory", str(workdir), *args, "--configfile", str(STUDY)]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stderr[-3000:]}")
    return wall, result.stdout + result.stderr


def timed(repeats: int, workdir: Path, *args: str, expect: str | None = None) -> float:
    """Median wall time of `repeats` runs; each output must contain `expect`."""
    walls = []
    for _ in range(repeats):
        wall, out = snakemake(workdir, *args)
        if expect and expect not in out:
            sys.exit(f"expected {expect!r} from snakemake {' '.join(args)}:\n{out[-3000:]}")
        walls.append(wall)
    return statistics.median(walls)


def fake_completed_study(workdir: Path) -> int:
    """Write every output of the DAG as a tiny valid file; return how many."""
    _, summary = snakemake(workdir, "--summary")
    lines = [line.split("\t") for line in summary.splitlines()]
    header = next(i for i, cols in enumerate(lines) if cols[:3] == ["output_file", "date", "rule"])
    outputs = [cols[0] for cols in lines[header + 1 :] if len(cols) >= 5]
    tiny = pd.DataFrame({"x": [0]})
    for name in outputs:
        path = workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".parquet":
            tiny.to_parquet(path)
        else:
            path.write_text("x\n0\n")
    # Modification times in the DAG's order, as a real run leaves them.
    snakemake(workdir, "--touch", "--cores", "1")
    return len(outputs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement")
    args = parser.parse_args()
    slurm = ["--profile", str(REPO / "profiles" / "slurm")]
    rows = []

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        _, out = snakemake(workdir, "-n")
        jobs = next(line.split()[-1] for line in out.splitlines() if line.startswith("total"))
        rows.append(
            (f"`snakemake -n`, fresh folder ({jobs} jobs)", timed(args.repeats, workdir, "-n"))
        )
        rows.append(
            (
                "`snakemake -n --profile profiles/slurm` (groups of profile jobs)",
                timed(args.repeats, workdir, "-n", *slurm),
            )
        )

        files = fake_completed_study(workdir)
        done = "Nothing to be done"
        rows.append(
            (
                f"`snakemake -n`, completed study ({files} outputs)",
                timed(args.repeats, workdir, "-n", expect=done),
            )
        )
        rows.append(
            (
                "no-op rerun `snakemake --cores 2`, completed study",
                timed(args.repeats, workdir, "--cores", "2", expect=done),
            )
        )
        rows.append(
            (
                "no-op rerun `--profile profiles/slurm`, completed study",
                timed(args.repeats, workdir, *slurm, expect=done),
            )
        )

    print(f"Host: {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(
        f"Study: {STUDY.relative_to(REPO)}; median of {args.repeats} runs; target < {TARGET_S} s\n"
    )
    print("| what | wall time | target |")
    print("|---|---|---|")
    for what, wall in rows:
        verdict = "ok" if wall < TARGET_S else "SLOW"
        print(f"| {what} | {wall:.1f} s | {verdict} |")


if __name__ == "__main__":
    main()
