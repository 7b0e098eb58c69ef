"""A profile job finishes whatever its model does (jobs.supervise, jobs.job_runner):
hangs, exits, signals, each a row with a status and a reason (issue 35)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import FAST_PROTOCOL, REPO
from helpers.profile_job import spec_of

from joulebench.jobs import supervise
from joulebench.jobs.hangs import HUNG_FLOOR_S, HangRule, parse_hangs, worst_case_s
from joulebench.jobs.job_runner import Orphaned, _why, supervised_job
from joulebench.jobs.profile import ProfileJob, run_job

BAD = str(REPO / "tests" / "workloads" / "bad.py")


def _spec(entry: str, batch_sizes=(1, 4), **profile):
    return spec_of(
        {
            "torch_device": "cpu",
            "methods": {"fp32": {"precision": "fp32"}},
            "batch_sizes": list(batch_sizes),
            "protocol": {**FAST_PROTOCOL, "repeats": 2},
            "workload": entry,
            "idle_pre_s": 0.05,
            "quiet_wait_s": 0,
            **profile,
        }
    )


def _run(function: str, tmp_path, batch_sizes=(1, 4), **profile):
    lines = []
    entry = f"{BAD}:{function}"
    outputs = tuple(tmp_path / f"{n}.parquet" for n in ("rows", "repeats", "trace"))
    job = ProfileJob(f"bad.{function}", "cpu", _spec(entry, batch_sizes, **profile), threads=1)
    rows, repeats, _ = supervised_job(job, idle=None, log=lines.append, outputs=outputs)
    assert all(p.exists() for p in outputs) and not (tmp_path / "rows.parquet.parts").exists()
    return rows, repeats, lines


def test_a_good_model_is_measured_by_its_workers(tmp_path):
    rows, repeats, _ = _run("good", tmp_path)
    assert rows["status"].tolist() == ["ok", "ok"]
    assert rows["batch_size_requested"].tolist() == [1, 4]  # the configurations' own order
    assert len(repeats) == 4


def test_a_worker_measures_in_a_frozen_heap(tmp_path):
    """The worker froze its imports before building (jobs.heap): collecting between
    configurations walks only what they made."""
    rows, _, _ = _run("in_a_frozen_heap", tmp_path, batch_sizes=(1,))
    assert rows["status"].tolist() == ["ok"], rows["reason"].tolist()


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_model_that_hangs_at_a_big_batch_costs_two_hangs_and_keeps_its_small_batches(
    tmp_path,
):
    """Issue 40 item 9: after a hang the job goes on cheaply. The model hangs above batch 2;
    its measuring order is c8, c1, a8, a1, b1, b8: c8 and a8 hang (two methods at batch 8),
    so b8 is not tried, and every batch 1 is measured."""
    methods = {name: {"precision": "fp32"} for name in ("a", "b", "c")}
    start = time.monotonic()
    rows, _, lines = _run("big_batch_sleeps", tmp_path, (1, 8), methods=methods, timeout_s=3)
    took_s = time.monotonic() - start
    got = {(m, b): (s, r) for m, b, s, r in rows[["method", "batch_size_requested", "status",
                                                  "reason"]].itertuples(index=False)}  # fmt: skip
    assert {key: status for key, (status, _) in got.items()} == {
        ("a", 1): "ok", ("a", 8): "timeout", ("b", 1): "ok", ("b", 8): "not-measured",
        ("c", 1): "ok", ("c", 8): "timeout",
    }  # fmt: skip
    assert got[("b", 8)][1] == (
        "not tried: two methods hung at a batch no larger (c bs8 hung (no progress for 3 s); "
        "a bs8 hung (no progress for 3 s))"
    )
    assert "[6/6] bad.big_batch_sleeps b bs8: not-measured not tried:" in "\n".join(lines)
    assert took_s < 120  # two hangs of 3 s and three workers' starts


def test_the_hang_rule_rules_out_what_would_hang_too():
    """Which configurations a job's hangs rule out (jobs.hangs), in measuring order."""
    configs = [("fp32", 64), ("fp32", 1), ("bf16", 256), ("fp32", 256), ("bf16", 1),
               ("tf32", 64), ("tf32", 8), ("bf16", 64)]  # fmt: skip
    rule = HangRule(configs)
    assert [rule.not_tried(p) for p in range(8)] == [""] * 8 and rule.next_tried(0) == 0
    rule.record(0, 300.0)  # fp32 bs64 hung: fp32's larger batches would too
    assert rule.not_tried(3) == (
        "not tried: fp32 bs64 hung (no progress for 300 s), and a larger batch would too"
    )
    assert not rule.not_tried(1) and not rule.not_tried(5) and rule.next_tried(1) == 1
    rule.record(5, 120.0)  # tf32 bs64 too: two methods at 64, so any method's 64 and up
    assert rule.not_tried(2).startswith("not tried: two methods hung at a batch no larger")
    assert rule.not_tried(7).startswith("not tried: two methods") and not rule.not_tried(6)
    rule.record(6, 120.0)  # tf32 hung twice: not tried at any batch; and three hangs: none
    assert rule.not_tried(4).startswith("not tried: the model hung 3 times in this job")
    assert rule.next_tried(1) == len(configs)
    assert HangRule(configs, parse_hangs(rule.as_arg())).hangs == rule.hangs
    for bad in ("[[0, -1]]", "[[-1, 3]]", "{}", "[1]", "nope"):  # a usage error, one line
        with pytest.raises((ValueError, TypeError)):
            parse_hangs(bad)
    twice = HangRule([("fp32", 64), ("fp32", 8), ("fp32", 1)], [(0, 300.0), (1, 120.0)])
    assert twice.not_tried(2).startswith("not tried: its method hung twice (fp32 bs64 hung")


def test_after_a_hang_the_deadline_is_short_and_the_worst_case_is_bounded():
    """A fifth of a configuration's own deadline, at least 120 s and twice the longest
    warm-up, never longer than its own; the paper-size study's worst case (docs/profiling.md)
    from its deadlines: 16 configurations of 300 s and 4 compiled ones of ~550 s."""
    assert HangRule([("fp32", 1)]).deadline_s(300.0, 60.0) == 300.0  # no hang yet
    hung = HangRule([("fp32", 1), ("fp32", 8)], [(0, 300.0)])
    assert hung.deadline_s(300.0, 60.0) == 120.0 and hung.deadline_s(1800.0, 60.0) == 360.0
    assert hung.deadline_s(3.0, 60.0) == 3.0 and hung.deadline_s(600.0, 100.0) == 200.0
    before, after = worst_case_s([300.0] * 16 + [566.7, 547.7, 547.7, 547.7], 60.0)
    assert before == pytest.approx(7009.8) and after == pytest.approx(566.7 + 2 * 120.0)


def test_after_a_hang_a_worker_measures_under_the_short_deadline(tmp_path, monkeypatch, capsys):
    """A worker handed the job's hangs (--hangs) says its configuration's short deadline and
    the configuration that hung, so a timeout's reason can name it."""
    monkeypatch.setenv(supervise.WORKER_ENV, "1")
    spec = _spec(f"{BAD}:good", (1,), methods={m: {"precision": "fp32"} for m in ("a", "b")})
    # its measuring order is b1, a1: b1 hung in an earlier worker (no timeout_s: the default)
    out = run_job("bad.good", "cpu", spec, idle=None, threads=1, parts=tmp_path, start_at=1,
                  hangs=parse_hangs("[[0, 300.0]]"))  # fmt: skip
    assert out.rows["status"].tolist() == ["ok"]
    said = capsys.readouterr()
    # its ETA counts from where it starts: what is left of the job, not 0 s
    (line,) = [line for line in said.err.splitlines() if line.startswith("config 2/2")]
    assert line.startswith("config 2/2 bad.good a bs1, elapsed ") and "ETA 0 s" not in line
    events = [supervise.parse_event(line) for line in said.out.splitlines()]
    (config,) = [e for e in events if e and e["event"] == "config"]
    assert config["label"] == "a bs1" and config["after_hang"] == "b bs1"
    assert config["deadline_s"] == HUNG_FLOOR_S  # quiet_wait_s 0 + the floor
    run = supervise.WorkerRun("timeout", deadline_s=120.0)
    supervise._follow(run, config)
    assert _why(run) == "no progress for 120 s (the short deadline after b bs1 hung): stopped"


def test_a_worker_that_never_starts_twice_ends_the_job_with_not_measured_rows(tmp_path):
    job = ProfileJob("bad.good", "cpu", _spec(f"{BAD}:good"), threads=1)
    missing = str(tmp_path / "no-idle.parquet")  # each worker fails before any configuration
    rows, _, _ = supervised_job(job, idle=missing, log=print)
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
    from joulebench.jobs import concurrency
    from joulebench.jobs.job_runner import end_orphans

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


def test_a_worker_process_freezes_what_its_imports_made():
    """jobs.heap, as a worker runs it (a process of its own): after freeze_imports the
    collector walks only the objects made later (~400,000 fewer with torch and timm), and
    a cycle made later is still collected."""
    code = (
        "import gc, weakref\n"
        "from joulebench.jobs.heap import freeze_imports\n"
        "freeze_imports(timm_too=False)\n"
        "assert gc.get_freeze_count() > 100_000, gc.get_freeze_count()\n"
        "class Node: pass\n"
        "node, gone = Node(), []\n"
        "node.me = node\n"
        "weakref.finalize(node, gone.append, 'collected')\n"
        "del node\n"
        "gc.collect()\n"
        "assert gone == ['collected'], gone\n"
        "assert len(gc.get_objects()) < 20_000, len(gc.get_objects())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
