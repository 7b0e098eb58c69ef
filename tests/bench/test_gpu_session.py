"""bench/gpu_session.sh, the one script a session lent a GPU runs: it parses, and the steps of
its own that can run without a GPU do, on a simulated one (the GPU numbers themselves come
from a real GPU only: docs/benchmarks.md)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO

BENCH = REPO / "bench"


def _run(*args, cwd=REPO) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_session_script_parses_and_names_its_steps():
    assert subprocess.run(["bash", "-n", str(BENCH / "gpu_session.sh")]).returncode == 0
    text = (BENCH / "gpu_session.sh").read_text()
    for step in ("check", "host", "arithmetic", "study"):
        assert f"step {step} " in text


def test_the_check_step_keeps_its_report_for_the_profile_jobs(tmp_path):
    """On a simulated H100 (simulated time: seconds): the report, its table, and the kept
    copy a profile job finds (jobs.first_check) with the heat and tail measured."""
    out, keep = tmp_path / "out", tmp_path / "check"
    args = ["--out", str(out), "--device", "sim:h100", "--heat-s", "40", "--heat-idle-s", "5"]
    res = _run(str(BENCH / "gpu_check.py"), *args, "--keep", str(keep))
    assert res.returncode == 0, res.stderr
    report = json.loads((out / "check-simh100.json").read_text())
    assert report["protocol"]["tail"]["excess_w"] > 0 and report["protocol"]["heat"]
    (kept,) = (keep / "gpus").glob("*.json")
    assert json.loads(kept.read_text())["check_id"] == report["check_id"]
    assert "tail excess" in (out / "check-simh100.txt").read_text()


def test_the_host_step_writes_its_busy_shares(tmp_path):
    res = _run(
        str(BENCH / "gpu_host.py"), "--out", str(tmp_path), "--device", "sim:h100",
        "--models", "mobilenetv3_small_100.lamb_in1k", "--batches", "1", "--methods", "fp32",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    md = (tmp_path / "host.md").read_text()
    assert "gpu_busy_fraction" in md and "True" in md  # mobilenetv3 at batch 1: host-bound
