"""The chaos study at a larger size (issue 35 item 5; tests/workflow/test_chaos.py runs the small
one): on a pool of simulated GPUs, `--good` well-behaved models and one of each fault (a
hang, an exit, an out-of-memory kill, NaN, the wrong shape, out of memory), one GPU that
fails in its first configuration, and Snakemake killed (-9) once after `--kill-after` jobs
and resumed. Prints a markdown table for docs/benchmarks.md: configurations, faults by
kind, rows by status, wall time, rows lost and duplicated.

    PYTHONPATH=src .venv/bin/python bench/bench_chaos.py --good 12 --gpus 3 --batch-sizes 1 2 4
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from helpers.chaos import FAILING_GPU, FAULTS, chaos_study, outcome, run_chaos  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--good", type=int, default=12)
    parser.add_argument("--gpus", type=int, default=3)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--kill-after", type=int, default=4, help="jobs done before kill -9")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="chaos-"))
    study = chaos_study(args.good, args.gpus, args.batch_sizes)
    run = run_chaos(workdir, study, kill_after_rows=args.kill_after)
    seen = outcome(workdir, study)
    per_model = len(args.batch_sizes)
    faults = {name: per_model for name in FAULTS}
    print(f"{date.today()}, {platform.machine()}, workdir {workdir}, rc {run['returncode']}\n")
    print("| quantity | value |\n|---|---|")
    print(f"| models (good + faulty) | {args.good} + {len(FAULTS)} |")
    print(f"| simulated GPUs in the pool | {args.gpus} (GPU {FAILING_GPU} fails: xid) |")
    print(f"| configurations | {seen['configurations']} |")
    print(f"| injected faults (configurations) | {faults} + 1 GPU |")
    print(f"| Snakemake killed -9 after | {run['killed_after_jobs']} jobs |")
    print(f"| rows by status | {seen['by_status']} |")
    print(f"| rows lost / duplicated / unasked | {seen['lost']} / {seen['duplicated']} / "
          f"{seen['unasked']} |")  # fmt: skip
    print(f"| GPUs marked bad | {[(g['index'], g['kind']) for g in seen['bad_gpus']]} |")
    print(f"| ok rows by GPU index | {seen['measured_on']} |")
    print(f"| boards left with a changed limit | {len(seen['limits_left_changed'])} |")
    print(f"| configurations measured at once on one GPU | {seen['overlapping']} |")
    print(f"| summary rows, page | {seen['summary_rows']}, {seen['page']} |")
    print(f"| wall time | {run['wall_s']:.0f} s |")
    if run["returncode"] != 0:
        print(run["tail"], file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
