"""core.knobs: a method's power limit and locked clock set on the device, read back and
always restored (success, error, SIGTERM, kill -9), against a fake control and against the
simulated GPUs' NVML (the same calls a real board takes)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import FAST_PROTOCOL

from joulebench.core.backends import KnobControl, KnobRefused
from joulebench.core.backends.cuda import KNOB_PERMISSION
from joulebench.core.knobs import STATE_ENV, Record, applied, restore_leftover
from joulebench.core.methods import Method

REPO = Path(__file__).resolve().parents[2]
TINY = f"{REPO}/tests/workloads/tiny_net.py:build"


class FakeBoard(KnobControl):
    """A board's settings in memory: range 200-700 W, default 700 W, clocks up to 1980 MHz."""

    def __init__(self, uuid="GPU-fake-0"):
        self.uuid, self.limit_w, self.locked, self.calls = uuid, 700.0, None, []

    def power_limit_w(self):
        return self.limit_w

    def default_power_limit_w(self):
        return 700.0

    def power_limit_range_w(self):
        return 200.0, 700.0

    def set_power_limit_w(self, watts):
        self.calls.append(("limit", watts))
        self.limit_w = watts

    def sm_clock_mhz(self, preset=None):
        return {"max": 1980.0, "base": 1755.0}.get(preset, self.locked or 1980.0)

    def lock_sm_clock_mhz(self, mhz):
        self.calls.append(("lock", mhz))
        self.locked = mhz

    def reset_sm_clock(self):
        self.calls.append(("reset",))
        self.locked = None


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    """Records (and simulated boards' settings) in this test's own folder."""
    folder = tmp_path / "state"
    monkeypatch.setenv(STATE_ENV, str(folder))
    return folder


def test_a_fraction_is_set_read_back_and_restored():
    board = FakeBoard()
    with applied(board, Method("m", power_limit=0.6), print) as readback:
        assert board.limit_w == pytest.approx(420.0)
        assert Record.read(board.uuid).power_limit_w == 700.0  # written before the change
    assert readback.power_limit_w == pytest.approx(420.0) and math.isnan(readback.sm_clock_mhz)
    assert board.limit_w == 700.0 and Record.read(board.uuid) is None


def test_a_locked_clock_by_name_is_locked_and_reset_after_an_error():
    board = FakeBoard()
    with pytest.raises(RuntimeError), applied(board, Method("m", sm_clock_mhz="base"), print) as r:
        assert (board.locked, r.sm_clock_mhz) == (1755, 1755.0)
        raise RuntimeError("the model failed to build")
    assert board.locked is None and board.limit_w == 700.0
    assert ("limit", 700.0) not in board.calls  # the limit was not asked for: left alone
    assert Record.read(board.uuid) is None


def test_a_limit_outside_the_board_s_range_changes_nothing():
    board = FakeBoard()
    for method in (Method("low", power_limit=0.2), Method("high", power_limit_w=900)):
        with pytest.raises(KnobRefused, match=r"outside this board's range \[200, 700\] W"):
            with applied(board, method, print):
                pass
    assert board.calls == [] and Record.read(board.uuid) is None


def test_what_a_dead_process_left_is_restored_and_a_live_one_s_refused():
    board = FakeBoard()
    board.limit_w = 250.0  # what a killed job left
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    Record(board.uuid, 700.0, True, dead.pid).write()
    said = restore_leftover(board)
    assert said.startswith("restored SM clock unlocked, power limit 700 W left by process")
    assert board.limit_w == 700.0 and Record.read(board.uuid) is None
    assert restore_leftover(board) is None  # nothing left now
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        Record(board.uuid, 700.0, False, live.pid).write()
        with pytest.raises(KnobRefused, match=f"process {live.pid} .* is still running"):
            restore_leftover(board)
    finally:
        live.kill()
        live.wait()


def test_a_supervisor_restores_what_its_dead_worker_left_and_closes_the_control(monkeypatch):
    """After its workers, a job's supervisor opens the device's control for the restore
    (profile.restore_after_workers), and closes it again."""
    from joulebench.jobs.profile import restore_after_workers
    from joulebench.sim.backend import SimDevice

    board, closed = FakeBoard(), []
    board.close = lambda: closed.append(True)
    board.limit_w = 250.0  # what the worker killed in the job's last configuration left
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    Record(board.uuid, 700.0, True, dead.pid).write()
    monkeypatch.setattr(SimDevice, "knob_control", lambda self: board)
    said = restore_after_workers(sim_job({"capped": {"power_limit_w": 300}}, "test-supervisor"))
    assert said.startswith("restored") and f"left by process {dead.pid}" in said
    assert board.limit_w == 700.0 and closed == [True]


def test_a_job_session_opens_the_control_once_and_closes_it_on_exit(monkeypatch):
    from joulebench.jobs.profile import JobSession
    from joulebench.sim.backend import SimDevice

    board, opened, closed = FakeBoard(), [], []
    board.close = lambda: closed.append(True)
    monkeypatch.setattr(SimDevice, "knob_control", lambda self: opened.append(1) or board)
    job = sim_job({"capped": {"power_limit_w": 300}}, "test-session")
    with JobSession(job, job.bind_device()) as session:
        assert session.knob_control() is board and session.knob_control() is board
        assert closed == []
    assert opened == [1] and closed == [True]


def test_sigterm_while_capped_restores_before_the_process_ends():
    board = FakeBoard()
    with pytest.raises(SystemExit) as ended, applied(board, Method("m", power_limit_w=300), print):
        assert board.limit_w == 300.0
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
    assert ended.value.code == 128 + signal.SIGTERM
    assert board.limit_w == 700.0 and Record.read(board.uuid) is None
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is gone again


# --- through a profile job on a simulated GPU (the fake pynvml's set and get calls) ---------


def sim_job(methods: dict, label: str, **protocol):
    from helpers.profile_job import job_of

    spec = {
        "torch_device": "sim:h100",
        "methods": methods,
        "batch_sizes": [1],
        "protocol": {**FAST_PROTOCOL, **protocol},
        "idle_pre_s": 0.05,
        "workload": TINY,
    }
    return job_of("tiny_net.build", label, spec, idle_power_w=60.0, threads=1)


@pytest.fixture
def board():
    """A fresh simulated board per test (the process keeps one per label)."""
    from joulebench.sim.backend import _BOARDS, wall_sim_gpu

    label = f"knobs-{os.getpid()}-{time.monotonic_ns()}"
    yield label, wall_sim_gpu("sim:h100", label).board
    _BOARDS.pop(label, None)


@pytest.mark.slow
def test_a_sweep_on_a_simulated_gpu_measures_at_each_limit_and_restores(board):
    from joulebench.jobs.profile import run_profile

    label, sim = board
    methods = {"full": {}, "capped": {"power_limit_w": [250, 200]}}
    rows = run_profile(sim_job(methods, label), log=lambda s: None).rows.set_index("method")
    assert list(rows.status) == ["ok", "ok", "ok"], rows.reason.tolist()
    assert rows.loc["capped@250W", "power_limit_readback_w"] == 250.0
    assert rows.loc["capped@200W", "power_limit_readback_w"] == 200.0
    assert pd.isna(rows.loc["full", "power_limit_readback_w"])
    power = rows.power_mean_w
    assert power["capped@200W"] < power["capped@250W"] < power["full"]  # the board throttles
    assert sim.power_limit_mw == 700_000  # restored
    assert not list((Path(os.environ[STATE_ENV]) / "knobs").glob("*.json"))


def test_without_permission_the_rows_are_skipped_with_the_fix(board):
    from joulebench.jobs.profile import run_profile

    label, sim = board
    sim.settable = False  # not root: NVML answers NoPermission
    job = sim_job({"capped": {"power_limit": 0.5}, "locked": {"sm_clock_mhz": 1410}}, label)
    rows = run_profile(job, log=lambda s: None).rows
    assert rows.status.tolist() == ["skipped", "skipped"]
    assert (rows.reason == KNOB_PERMISSION).all()
    assert rows.energy_per_image_j.isna().all() and sim.power_limit_mw == 700_000


KILLED_JOB = """
import sys
from joulebench.jobs.job_spec import job_spec
from joulebench.jobs.profile import ProfileJob, run_profile
study = {"methods": {"capped": {"power_limit_w": 250}}, "batch_sizes": [1],
         "profile": {"idle_pre_s": 0.05, "quiet_wait_s": 0},
         "protocol": {"repeats": 3, "min_repeat_s": 60, "warmup_min_s": 0.05}}
spec = job_spec("sim:h100", study, workload=sys.argv[2])
run_profile(ProfileJob("tiny_net.build", sys.argv[1], spec, idle_power_w=60.0, threads=1))
"""


@pytest.mark.slow
def test_after_a_kill_9_mid_configuration_the_next_job_restores_before_it_measures(board, state):
    from joulebench.jobs.profile import run_profile
    from joulebench.sim.backend import _BOARDS

    label, _ = board
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    job = subprocess.Popen([sys.executable, "-c", KILLED_JOB, label, TINY], env=env)
    try:
        deadline = time.monotonic() + 120
        while not list((state / "knobs").glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2.0)  # measuring at the cap now
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait()
    _BOARDS.pop(label, None)  # the next job's process meets the board as the killed one left it
    from joulebench.sim.backend import wall_sim_gpu

    assert wall_sim_gpu("sim:h100", label).board.power_limit_mw == 250_000  # left capped
    lines = []
    rows = run_profile(sim_job({"full": {}}, label), log=lines.append).rows
    restored = [line for line in lines if "restored" in line]
    assert restored and f"power limit 700 W left by process {job.pid}" in restored[0]
    assert lines.index(restored[0]) < min(i for i, s in enumerate(lines) if "idle" in s)
    assert rows.status.tolist() == ["ok"]
    assert wall_sim_gpu("sim:h100", label).board.power_limit_mw == 700_000
