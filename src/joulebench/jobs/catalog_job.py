"""A catalog part that finishes whatever its models do (issue 35, items 1 and 2 for the
catalog): `joulebench catalog` runs its models in workers (`joulebench catalog-worker`)
under the profile jobs' supervisor (jobs.supervise, jobs.job_runner).

Each worker counts the part's models from a position on (catalog.build.entry_row), says
which model it is in (an event with its deadline: `--timeout-s`, else TIMEOUT_FLOOR_S) and
writes each finished row to a parts folder beside the output at once. A model whose build
or count makes no progress past its deadline, or whose worker dies (`os._exit(3)` in a
workload's build, a segfault, the out-of-memory killer), gets a row with status `failed`
and the reason (`timeout: no progress for 300 s: stopped (...)`, `crashed: exit 3 (...)`);
the next worker goes on with the next model, so the part keeps every other model's row.

It lives in `core` beside the supervisor it reuses (catalog, a lower layer, imports no
measuring code).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd

from joulebench.catalog.build import entry_row, failed_row, row_line
from joulebench.jobs import supervise
from joulebench.jobs.job_runner import (
    IN_PROCESS_ENV,
    fresh_parts,
    joined_parts,
    parts_folder,
    supervise_positions,
)
from joulebench.table_io import write_table
from joulebench.tables import CATALOG_COLUMNS

DOING = "build and count"


def catalog_worker_argv(models, parts, start_at: int, threads: int, timeout_s) -> list[str]:
    argv = [*supervise.worker_python(), "catalog-worker", f"--parts={parts}",
            f"--start-at={start_at}", f"--threads={threads}"]  # fmt: skip
    argv += [f"--timeout-s={timeout_s}"] if timeout_s else []
    return [*argv, "--", *models]


def supervised_catalog(
    models: list[str], output, *, threads: int = 1, timeout_s: float | None = None, log=print
) -> pd.DataFrame:
    """The catalog rows of `models`, counted by supervised workers, written to `output`.
    Raises job_runner.Orphaned where its Snakemake died (nothing written then)."""
    parts = fresh_parts(parts_folder(output))
    if os.environ.get(IN_PROCESS_ENV):
        catalog_worker(models, parts, threads=threads, timeout_s=timeout_s, log=log)
    else:

        def argv_for(start: int) -> list[str]:
            return catalog_worker_argv(models, parts, start, threads, timeout_s)

        def failed(positions, status: str, reason: str) -> None:
            for position in positions:
                row = failed_row(models[position], f"{status}: {reason}")
                _write_part(parts, position, row)
                log(row_line(position + 1, len(models), row))

        supervise_positions(len(models), argv_for, failed, log, "catalog")
    frame = joined_parts(parts, "*.parquet", CATALOG_COLUMNS)
    write_table(frame, output, CATALOG_COLUMNS)
    shutil.rmtree(parts, ignore_errors=True)
    return frame


def catalog_worker(models, parts, *, start_at=0, threads=1, timeout_s=None, log=print) -> None:
    """`joulebench catalog-worker`: the rows of `models` from `start_at` on, each written to
    `parts` as it is counted, each model announced with its deadline."""
    import torch

    torch.set_num_threads(threads)
    limit_s = timeout_s or supervise.TIMEOUT_FLOOR_S
    for position in range(start_at, len(models)):
        label = models[position].partition("=")[0]  # a workload's name, else the timm name
        supervise.emit("config", position=position, label=label, doing=DOING, deadline_s=limit_s)
        row = entry_row(models[position])
        _write_part(Path(parts), position, row)
        log(row_line(position + 1, len(models), row))
        supervise.emit("done", position=position)


def _write_part(parts: Path, position: int, row: dict) -> None:
    frame = pd.DataFrame([row], columns=list(CATALOG_COLUMNS))
    write_table(frame, Path(parts) / f"{position:05d}.parquet", CATALOG_COLUMNS)
