"""Resume: a study killed (SIGKILL) in the middle of profiling reruns to a whole result.

Finished jobs are kept (their files untouched), the killed job is redone, and nothing
half-written is left under results/.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, cpu_study, path_without_venv, snakemake

from joulebench.core.protocol import ProtocolSettings
from joulebench.status.progress import status_of

pytestmark = pytest.mark.slow

MODELS = [
    "resnet18.a1_in1k",
    "mobilenetv3_small_100.lamb_in1k",
    "convnext_atto.d2_in1k",
    "efficientnet_b0.ra_in1k",
]
STUDY = cpu_study(MODELS)
TARGETS = ["results/catalog.parquet", "results/profile.parquet"]
OUTPUTS = ("rows", "repeats", "trace")  # results/profile/cpu/<output>/<model>.parquet


def profile_state(workdir: Path) -> tuple[set[str], set[str]]:
    """(models whose profile job finished, models whose job is running): jobs run one at
    a time (the CPU's measuring slot, limit 1), so a job that started (its log exists)
    without rows is the running one, and every model with rows finished before it started."""
    done = {p.stem for p in (workdir / "results/profile/cpu/rows").glob("*.parquet")}
    started = {p.stem for p in (workdir / "logs/profile/cpu").glob("*.log")}
    return done, started - done


def group_gone(pgid: int, timeout_s: float = 15) -> bool:
    """Wait until no process of the group is left (killed ones take a moment to go)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_killed_study_resumes_to_whole_results(tmp_path):
    config = tmp_path / "test-config.yaml"
    config.write_text(yaml.safe_dump(STUDY))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]
    cmd += ["--directory", str(tmp_path), "--cores", "2", *TARGETS]
    cmd += ["--configfile", str(config)]  # last: it takes every word after it
    env = dict(os.environ, PATH=path_without_venv())

    # Run in its own process group, and SIGKILL the whole group (snakemake and the running
    # job, like a power cut or scancel) once a profile job is running and one has finished.
    log = (tmp_path / "first-run.log").open("w")
    first = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and first.poll() is None:
            done, running = profile_state(tmp_path)
            if done and running:
                break
            time.sleep(0.1)
    finally:
        with contextlib.suppress(ProcessLookupError):  # gone already: asserted below
            os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        log.close()
    assert first.returncode == -signal.SIGKILL, (tmp_path / "first-run.log").read_text()[-3000:]
    assert done and running and len(done) < len(MODELS), (done, running)
    assert group_gone(first.pid), "processes of the killed run live on"

    # What status says of the killed run (issue 40 item 6): stopped, its lock stale, the
    # killed job stopped without rows, never measuring now.
    seen = status_of(tmp_path, str(config))
    assert seen["snakemake"]["locked"] and seen["snakemake"]["stale_lock"], seen["snakemake"]
    assert seen["running"] == [] and {job["model"] for job in seen["stopped"]} == running

    results = tmp_path / "results"
    kept = [results / "idle" / "cpu.parquet"]
    kept += [results / "profile" / "cpu" / out / f"{m}.parquet" for m in done for out in OUTPUTS]
    mtimes = {path: path.stat().st_mtime_ns for path in kept}

    # Resume as a user would: release the dead run's lock, run the same command again.
    unlock = snakemake(tmp_path, STUDY, "--unlock")
    assert unlock.returncode == 0, unlock.stderr[-3000:]
    again = snakemake(tmp_path, STUDY, *TARGETS)
    assert again.returncode == 0, again.stderr[-3000:]

    # Finished jobs were not redone; the killed one and those never started were.
    assert {path: path.stat().st_mtime_ns for path in kept} == mtimes
    for model in running:
        assert f"job={model}" in again.stdout + again.stderr
    for model in done:
        assert f"job={model}" not in again.stdout + again.stderr

    # Every artifact whole: all parquet readable, no temp files, rows as expected.
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    tables = {p: pd.read_parquet(p) for p in results.rglob("*.parquet")}
    for model in MODELS:
        # One row: 1 method x 1 batch size (the study's own; a study replaces config.yaml,
        # it is not merged into it).
        rows = tables[results / "profile" / "cpu" / "rows" / f"{model}.parquet"]
        assert rows["method"].tolist() == ["fp32"], (model, rows["method"].tolist())
        assert rows["status"].eq("ok").all(), model
        repeats = tables[results / "profile" / "cpu" / "repeats" / f"{model}.parquet"]
        assert len(repeats) == ProtocolSettings.from_dict(STUDY["protocol"]).repeats, model
        # The trace is readable too; it may have no rows (a CPU estimate has no sampler).
        assert results / "profile" / "cpu" / "trace" / f"{model}.parquet" in tables
    catalog = tables[results / "catalog.parquet"]
    assert catalog["model"].tolist() == MODELS and catalog["status"].eq("ok").all()
    profile = tables[results / "profile.parquet"]
    assert len(profile) == len(MODELS) * 1 * 1  # models x methods x batch sizes
    assert sorted(profile["model"]) == sorted(MODELS)
    assert profile["status"].eq("ok").all()

    # And the resumed study is complete: nothing left to do.
    noop = snakemake(tmp_path, STUDY, "-n", *TARGETS)
    assert noop.returncode == 0 and "Nothing to be done" in noop.stdout + noop.stderr
