"""A profile job finishes whatever its model does (core.supervise, core.job_runner):
hangs, exits, signals, each a row with a status and a reason (issue 35)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import FAST_PROTOCOL, REPO

from joulebench.core import supervise
from joulebench.core.job_runner import Orphaned, supervised_job

BAD = str(REPO / "tests" / "workloads" / "bad.py")


def _spec(entry: str, batch_sizes=(1, 4), **profile) -> dict:
    return {
        "torch_device": "cpu",
        "methods": {"fp32": {"precision": "fp32"}},
        "batch_sizes": list(batch_sizes),
        "protocol": {**FAST_PROTOCOL, "repeats": 2},
        "workload": entry,
        "idle_pre_s": 0.05,
        "quiet_wait_s": 0,
        **profile,
    }


def _run(function: str, tmp_path, batch_sizes=(1, 4), **profile):
    lines = []
    entry = f"{BAD}:{function}"
    outputs = tuple(tmp_path / f"{n}.parquet" for n in ("rows", "repeats", "trace"))
    rows, repeats, _ = supervised_job(
        f"bad.{function}", "cpu", _spec(entry, batch_sizes, **profile), idle=None, threads=1,
        log=lines.append, outputs=outputs,
    )  # fmt: skip
    assert all(p.exists() for p in outputs) and not (tmp_path / "rows.parquet.parts").exists()
    return rows, repeats, lines


def test_a_good_model_is_measured_by_its_workers(tmp_path):
    rows, repeats, _ = _run("good", tmp_path)
    assert rows["status"].tolist() == ["ok", "ok"]
    assert rows["batch_size_requested"].tolist() == [1, 4]  # the configurations' own order
    assert len(repeats) == 4


@pytest.mark.parametrize(
    ("function", "reason"),
    [
        ("exits", "exit 3"),
        ("killed", "SIGKILL (out of memory?"),
        ("segfault", "SIGSEGV"),
    ],
)
def test_a_worker_that_dies_leaves_a_crashed_row_and_the_job_goes_on(function, reason, tmp_path):
    rows, _, lines = _run(function, tmp_path)
    assert rows["status"].tolist() == ["crashed", "crashed"]  # one each, the second too
    # the model's first forward: its output checked before warm-up (runtimes.check_forward)
    assert all(r.startswith(reason) and "checking its output" in r for r in rows["reason"])
    assert any("going on with the next" in line for line in lines)


def test_only_the_configuration_that_dies_is_lost(tmp_path):
    rows, _, _ = _run("big_batch_exits", tmp_path, batch_sizes=(1, 2, 4, 8))
    assert dict(zip(rows["batch_size_requested"], rows["status"], strict=True)) == {
        1: "ok", 2: "ok", 4: "crashed", 8: "crashed"
    }  # fmt: skip


def test_a_hang_is_stopped_as_a_timeout_row(tmp_path):
    start = time.monotonic()
    rows, _, _ = _run("sleeps", tmp_path, batch_sizes=(1,), timeout_s=3)
    (row,) = rows.to_dict("records")
    assert row["status"] == "timeout"
    assert row["reason"] == "no progress for 3 s: stopped (fp32 bs1: checking its output)"
    assert time.monotonic() - start < 120


def test_a_worker_that_never_starts_twice_ends_the_job_with_not_measured_rows(tmp_path):
    spec = _spec(f"{BAD}:good")
    spec["torch_device"] = "cpu"
    spec["idle_pre_s"] = -1.0  # the worker's job refuses it before any configuration
    rows, _, _ = supervised_job("bad.good", "cpu", spec, idle=None, threads=1, log=print)
    assert rows["status"].tolist() == ["not-measured", "not-measured"]
    assert "2 workers in a row ended before their first" in rows["reason"].iloc[0]


def test_a_job_stops_measuring_when_its_snakemake_dies(tmp_path, monkeypatch):
    """kill -9 of Snakemake leaves its jobs' shells: the job notices and ends, unattended
    never (D12)."""
    fake = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    monkeypatch.setattr(supervise, "snakemake_ancestor", lambda pid=None: fake.pid)
    os.kill(fake.pid, signal.SIGKILL)
    fake.wait()
    with pytest.raises(Orphaned, match=f"its Snakemake \\(pid {fake.pid}\\) is gone"):
        _run("sleeps", tmp_path, batch_sizes=(1,), timeout_s=300)


def test_events_and_deadlines():
    assert supervise.deadline_s(10.0) == 300.0 and supervise.deadline_s(100.0) == 1000.0
    assert supervise.parse_event('JOULEBENCH_EVENT {"event": "done", "position": 2}') == {
        "event": "done", "position": 2
    }  # fmt: skip
    assert supervise.parse_event("config 1/2 m fp32 bs1") is None
    assert supervise.death_reason(3) == "exit 3" and supervise.death_reason(-11) == "SIGSEGV"
    assert supervise.death_reason(-9).startswith("SIGKILL (out of memory?")


def test_a_new_job_ends_an_orphan_measuring_on_this_host(tmp_path, monkeypatch):
    """A measurement whose Snakemake died (its marker names it) is ended before the next
    job measures beside it; one no Snakemake started is left alone."""
    from joulebench.core import concurrency
    from joulebench.core.job_runner import end_orphans

    monkeypatch.setenv(concurrency.RUNNING_DIR_ENV, str(tmp_path / "running"))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    adhoc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    folder = concurrency.running_dir()
    folder.mkdir(parents=True)
    host = concurrency.socket.gethostname()
    (folder / f"{host}-{orphan.pid}-cpu").write_text(str(dead.pid))
    (folder / f"{host}-{adhoc.pid}-cpu").write_text("")
    try:
        assert concurrency.orphans() == [orphan.pid]
        lines = []
        end_orphans(lines.append)
        assert orphan.wait(timeout=30) == -signal.SIGTERM
        assert f"ending pid {orphan.pid}" in lines[0] and adhoc.poll() is None
    finally:
        for proc in (orphan, adhoc):
            proc.kill()
            proc.wait()
