"""Shared helpers: the repository root and a way to run the workflow in a temp folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.forked_snakemake import ForkedSnakemake, needs_fresh_interpreter

from joulebench.core.protocol import PRESETS

REPO = Path(__file__).resolve().parents[1]

# Tests write under tmp_path only. onnxruntime (>= 1.29 on Linux) would keep a telemetry device
# id and database under ~/.cache/Microsoft/DeveloperTools and a session file (.ses) in TMPDIR
# or the working directory; this turns that off, here and in the subprocesses tests start.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

# The smoke preset (seconds per model): SMOKE for a study the workflow runs (a config names
# the preset; its settings are no config keys), FAST_PROTOCOL its settings for tests that build
# ProtocolSettings or a job's spec directly.
SMOKE = {"preset": "smoke"}
FAST_PROTOCOL = dict(PRESETS["smoke"])


def cpu_study(models: list[str]) -> dict:
    """A study of `models` on this CPU with the fast protocol: one catalog job, fp32, batch 1."""
    return {
        "models": models,
        "catalog": {"models_per_job": len(models)},
        "devices": {"cpu": "cpu"},
        "methods": {"fp32": {"precision": "fp32"}},
        "batch_sizes": [1],
        "protocol": SMOKE,
        "profile": {"idle_pre_s": 0.1, "quiet_wait_s": 0},
        "idle": {"duration_s": 0.5},
    }


def snakemake(workdir: Path, config: dict | None, *args: str, timeout: int = 600, env=None):
    """Run the repository's workflow with `workdir` as working directory; return the result
    (a CompletedProcess of `python -m snakemake ...`). It runs in a child forked from one
    warm interpreter (helpers/forked_snakemake.py), unless `env` changes how an interpreter
    starts (PYTHONPATH...): then in a new interpreter."""
    argv = ["-s", str(REPO / "Snakefile"), "--directory", str(workdir), "--cores", "2", *args]
    if config is not None:  # last: --configfile takes every word after it
        path = workdir / "test-config.yaml"
        path.write_text(yaml.safe_dump(config))
        argv += ["--configfile", str(path)]
    full_env = {**os.environ, **(env or {}), "PATH": path_without_venv()}
    if needs_fresh_interpreter(full_env, _SNAKEMAKE.environ):
        cmd = [sys.executable, "-m", "snakemake", *argv]
        return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout)
    return _SNAKEMAKE.run(argv, full_env, Path.cwd(), timeout)


_SNAKEMAKE = ForkedSnakemake(os.environ, REPO)


def pytest_collection_modifyitems(session, config, items):
    """The longest files first (the workflow end to end, then any with a slow test): test
    processes (`make test`: pytest -n 2 --dist loadfile --no-loadscope-reorder, without
    which xdist puts the files with most tests first) take files in this order, so the
    last file to end is a short one and no core waits alone on a long study at the end."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    workflow = REPO / "tests" / "workflow"

    def weight(item) -> int:
        return 0 if workflow in item.path.parents else 1 if item.path in slow_files else 2

    items.sort(key=weight)  # stable: each file's tests, and the files of one weight, in order


def pytest_sessionfinish(session, exitstatus):
    _SNAKEMAKE.close()


def path_without_venv() -> str:
    """PATH without the folder of the interpreter running the tests: jobs must run with the
    interpreter that runs Snakemake, never with a `python` found on PATH."""
    venv_bin = Path(sys.executable).parent.resolve()
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(f for f in folders if f and Path(f).resolve() != venv_bin)


@pytest.fixture
def run_workflow(tmp_path):
    def run(config, *args, **kw):
        return snakemake(tmp_path, config, *args, **kw)

    run.workdir = tmp_path
    return run
