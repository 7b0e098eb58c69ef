"""A study that meets every fault at once (issue 35 item 5): models that hang, crash, exit,
are killed as by the out-of-memory killer, answer NaN or the wrong shape, run out of memory,
on a pool of simulated GPUs one of which fails; Snakemake killed (-9) once mid-run and the
run resumed. Used by tests/workflow/test_chaos.py (small) and bench/bench_chaos.py (larger)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[2]
BAD = REPO / "tests" / "workloads" / "bad.py"
TINY = REPO / "tests" / "workloads" / "tiny_net.py"
# model -> the status each of its configurations must end with
FAULTS = {
    "sleeps": "timeout",
    "exits": "crashed",
    "killed": "crashed",
    "nan": "error",
    "wrong_shape": "error",
    "oom": "ok",  # measured at half the batch, and half again
}
FAST = {"preset": "smoke"}  # seconds a configuration: the study runs, its numbers no matter
# The pool's first board fails at its first step (the sim's fault hook, sim/faults.py). A job
# leases the first free GPU (schedule.lease), so the study's first profile job takes it, and
# the good models' jobs come first (--prioritize): the fault is met whatever order Snakemake
# picks among the rest. (A faulty model fails before any step, so a board that only ever got
# faulty models would never show its fault, and nothing would be marked bad.)
FAILING_GPU = 0


def chaos_study(good: int = 2, gpus: int = 2, batch_sizes=(1, 2)) -> dict:
    """`good` well-behaved models first (their jobs start first: one meets the failing GPU),
    then one of each fault; one method that caps the power limit (restored, whatever happens)."""
    models = [
        f"good{i}={TINY if i % 2 else BAD}:{'build' if i % 2 else 'good'}" for i in range(good)
    ]
    models += [f"{name}={BAD}:{name}" for name in FAULTS]
    return {
        "models": models,
        "catalog": {"models_per_job": len(models), "timeout_s": 5},
        "devices": {"h100": {"pool": [f"sim:h100:{i}" for i in range(gpus)]}},
        "methods": {"capped": {"precision": "fp32", "power_limit": 0.8}},
        "batch_sizes": list(batch_sizes),
        "protocol": FAST,
        "profile": {"idle_pre_s": 0.05, "quiet_wait_s": 0, "timeout_s": 5, "split": "model"},
        "idle": {"duration_s": 0.3},
    }


def chaos_env(workdir: Path) -> dict:
    """This run's own locks, markers and device state, and the failing GPU: its first step."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "JOULEBENCH_LOCK_DIR": str(workdir / "locks"),
        "JOULEBENCH_RUNNING_DIR": str(workdir / "running"),
        "JOULEBENCH_STATE_DIR": str(workdir / "state"),
        "JOULEBENCH_SIM_FAULT": f"{FAILING_GPU}:xid:0",
    }


def _snakemake(workdir: Path, *args: str) -> list[str]:
    snakefile, config = str(REPO / "Snakefile"), str(workdir / "chaos.yaml")
    return [sys.executable, "-m", "snakemake", "-s", snakefile, "--directory", str(workdir),
            "--cores", "2", *args, "--configfile", config]  # fmt: skip


def _good_first(study: dict) -> list[str]:
    """Snakemake's option that starts the good models' jobs before the faulty ones'."""
    good = [m.split("=")[0] for m in study["models"] if m.startswith("good")]
    return ["--prioritize", *(f"results/profile/h100/rows/{name}.parquet" for name in good)]


def run_chaos(workdir: Path, study: dict, kill_after_rows: int = 2, timeout_s: int = 1500) -> dict:
    """Run the study, kill -9 Snakemake once `kill_after_rows` profile jobs have finished,
    unlock and resume it to the end. Returns what happened: the two runs' return codes and
    seconds, and how many jobs had finished when Snakemake was killed."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "chaos.yaml").write_text(yaml.safe_dump(study))
    env, start = chaos_env(workdir), time.monotonic()
    rows = workdir / "results" / "profile" / "h100" / "rows"
    log = (workdir / "first.log").open("w")
    first = subprocess.Popen(
        _snakemake(workdir, *_good_first(study)), stdout=log, stderr=subprocess.STDOUT, env=env
    )
    while first.poll() is None and len(list(rows.glob("*.parquet"))) < kill_after_rows:
        if time.monotonic() - start > timeout_s:
            break
        time.sleep(0.5)
    killed_at = len(list(rows.glob("*.parquet")))
    first.send_signal(signal.SIGKILL)  # Snakemake alone: its jobs must notice and stop
    first.wait()
    time.sleep(3)  # the orphaned jobs see their Snakemake gone (they poll every second)
    subprocess.run(_snakemake(workdir, "--unlock"), env=env, capture_output=True, check=True)
    again = subprocess.run(
        _snakemake(workdir, *_good_first(study)),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    (workdir / "second.log").write_text(again.stdout + again.stderr)
    return {
        "killed_after_jobs": killed_at,
        "returncode": again.returncode,
        "wall_s": time.monotonic() - start,
        "tail": (again.stdout + again.stderr)[-3000:],
    }


def _overlaps(rows: pd.DataFrame) -> int:
    """Configurations measured on one GPU at the same time as another (0 where none)."""
    n = 0
    for _, gpu in rows.dropna(subset=["gpu_uuid"]).groupby("gpu_uuid"):
        spans = sorted(
            zip(
                pd.to_datetime(gpu["start_time_utc"]),
                pd.to_datetime(gpu["end_time_utc"]),
                strict=True,
            )
        )
        n += sum(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False))
    return n


def outcome(workdir: Path, study: dict) -> dict:
    """What the finished study holds, against what it asked for."""
    results = workdir / "results"
    rows = pd.read_parquet(results / "profile.parquet")
    names = [m.split("=")[0] for m in study["models"]]
    wanted = {(m, k, b) for m in names for k in study["methods"] for b in study["batch_sizes"]}
    keys = list(zip(rows["model"], rows["method"], rows["batch_size_requested"], strict=True))
    counts = Counter(keys)
    ok = rows[rows["status"] == "ok"]
    boards = sorted((workdir / "state" / "sim-boards").glob("*.json"))
    pool = study["devices"]["h100"]["pool"]
    changed = [b.name for b in boards if _limit_changed(b, pool)]
    bad = sorted((results / "bad-gpus").glob("*.json"))
    return {
        "configurations": len(wanted),
        "rows": len(rows),
        "lost": len(wanted - set(counts)),
        "duplicated": sum(n - 1 for n in counts.values() if n > 1),
        "unasked": len(set(counts) - wanted),
        "by_status": dict(Counter(rows["status"])),
        "status_of": {m: sorted(set(rows.loc[rows["model"] == m, "status"])) for m in names},
        "bad_gpus": [json.loads(p.read_text()) for p in bad],
        "measured_on": dict(Counter(ok["gpu_index"].astype("Int64").astype(str))),
        "limits_left_changed": changed,
        "overlapping": _overlaps(ok),
        "summary_rows": len(pd.read_parquet(results / "summary.parquet")),
        "page": (results / "webapp" / "index.html").is_file(),
    }


def _limit_changed(board: Path, devices: list[str]) -> bool:
    """A simulated board left with another power limit than its default, or a locked clock
    (sim/wall.py keeps what any process left it with, as a real board would)."""
    from joulebench.sim.backend import board_key, sim_generation
    from joulebench.sim.wall import WallSimGpu

    defaults = {}
    for device in devices:
        sim = WallSimGpu(sim_generation(device), board_key(device, "h100")).board
        defaults[sim.uuid] = sim.default_power_limit_mw
    saved = json.loads(board.read_text())
    limit = saved.get("power_limit_mw")
    return limit != defaults.get(board.stem) or saved.get("locked_sm_clock_mhz") is not None
