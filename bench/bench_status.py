"""How long `joulebench status` takes on a big run's working directory
(src/joulebench/status/): N models' rows files (each written by table_io.write_table with
every profile column, 20 configurations a file as in studies/hidden-joules.yaml: 5 methods
x 4 batch sizes), a log per model, a few running jobs' logs.

    .venv/bin/python bench/bench_status.py [--files 2000] [--rounds 3]

Prints markdown to paste into docs/benchmarks.md: reading the rows (observe.read_rows,
only the columns status needs) and the whole status (status_of: rows, logs, markers,
.snakemake/), median and range of `rounds`, in a fresh temp folder.
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
sys.path.insert(0, str(REPO / "src"))

METHODS = ("fp32", "fp16-amp", "bf16", "fp16-amp-channels-last", "fp16-amp-compile")
BATCHES = (1, 8, 64, 256)
RUNNING = 8  # models being measured: a log without rows


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"


def make_run(folder: Path, files: int) -> None:
    import pandas as pd
    import yaml

    from joulebench.table_io import write_table
    from joulebench.tables import PROFILE_COLUMNS

    models = [f"model{i:04d}.tag" for i in range(files + RUNNING)]
    study = {
        "models": models,
        "devices": {"h200": "cuda"},
        "methods": {m: {"precision": "fp16" if "fp16" in m else "fp32"} for m in METHODS},
        "batch_sizes": list(BATCHES),
    }
    (folder / "study.yaml").write_text(yaml.safe_dump(study))
    t0 = pd.Timestamp("2026-12-01T00:00:00Z")
    for i, model in enumerate(models):
        log = folder / "logs" / "profile" / "h200" / f"{model}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"config 3/20 {model} fp32 bs64, elapsed 1 min 10 s, ETA 6 min\n")
        if i >= files:
            continue
        rows = []
        for j, (method, batch) in enumerate((m, b) for m in METHODS for b in BATCHES):
            start = t0 + pd.Timedelta(seconds=(i * 20 + j) * 30)
            rows.append(
                {
                    "device_label": "h200",
                    "torch_device": "cuda",
                    "model": model,
                    "phase": "inference",
                    "method": method,
                    "batch_size_requested": batch,
                    "status": "oom" if batch == 256 and i % 7 == 0 else "ok",
                    "reason": "CUDA out of memory" if batch == 256 and i % 7 == 0 else "",
                    "energy_per_image_j": 0.01 * (j + 1),
                    "start_time_utc": start.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    "end_time_utc": (start + pd.Timedelta(seconds=28)).strftime(
                        "%Y-%m-%dT%H:%M:%S.%fZ"
                    ),
                }
            )
        frame = pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))
        write_table(
            frame, folder / "results/profile/h200/rows" / f"{model}.parquet", PROFILE_COLUMNS
        )


def timed(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from joulebench.status import observe
    from joulebench.status.progress import status_of

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        make_run(folder, args.files)
        made_s = time.perf_counter() - start
        rows = timed(lambda: observe.read_rows(folder), args.rounds)
        whole = timed(lambda: status_of(folder, "study.yaml", markers=[]), args.rounds)
        cache: dict = {}
        status_of(folder, "study.yaml", markers=[], cache=cache)
        again = timed(lambda: status_of(folder, "study.yaml", markers=[], cache=cache), args.rounds)
        status = status_of(folder, "study.yaml", markers=[])
    (h200,) = status["devices"]
    print(
        f"{time.strftime('%Y-%m-%d')}, {machine()}; {args.files} rows files made in {made_s:.0f} s"
    )
    print(f"(ok {h200['ok']}, not ok {h200['not_ok']}, running {len(status['running'])})\n")
    print("| measure | median | min-max |")
    print("|---|---|---|")
    for name, times in (
        ("read the rows (observe.read_rows)", rows),
        ("whole status (status_of)", whole),
        ("a --watch refresh, nothing changed (rows cached in memory)", again),
    ):
        print(
            f"| {name} | {statistics.median(times):.2f} s | {min(times):.2f}-{max(times):.2f} s |"
        )


if __name__ == "__main__":
    main()
