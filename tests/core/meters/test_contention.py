"""CPU windows shared with other processes are flagged."""

import os
import subprocess
import sys
import time

import pytest

from joulebench.core.meters.base import Meter, Reading
from joulebench.core.meters.contention import DEFAULT_THRESHOLD, ContentionGuard, system_busy_s


class _Fixed(Meter):
    name, is_estimate = "estimate:test", True

    def begin(self):
        pass

    def end(self):
        return Reading(energy_j=10.0, duration_s=1.0, flags=["estimate"])


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def guard_after(window_s, busy_delta_s, own_delta_s, n_cpus=2):
    clock, busy, own = _Clock(), _Clock(), _Clock()
    guard = ContentionGuard(_Fixed(), busy_s=busy, own_cpu_s=own, n_cpus=n_cpus, clock=clock)
    guard.begin()
    clock.now, busy.now, own.now = window_s, busy_delta_s, own_delta_s
    return guard.end()


def test_alone_on_the_machine_is_not_flagged():
    reading = guard_after(window_s=10, busy_delta_s=20, own_delta_s=19.5)  # 2.5% others
    assert reading.flags == ["estimate"]
    assert reading.end_state["other_cpu_share"] == pytest.approx(0.025)
    assert reading.energy_j == 10.0


def test_other_load_is_flagged():
    reading = guard_after(window_s=10, busy_delta_s=20, own_delta_s=10)  # half the CPUs
    assert "other-load" in reading.flags
    assert reading.end_state["other_cpu_share"] == pytest.approx(0.5)


def test_proc_stat_parsing(monkeypatch):
    monkeypatch.setattr("os.sysconf", lambda name: 100)
    text = "cpu  100 20 30 5000 40 5 5 10 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
    assert system_busy_s(lambda: text) == pytest.approx((100 + 20 + 30 + 5 + 5 + 10) / 100)


# A child that spins until it has used this much CPU, then reports it.
_SPIN = """
import time
while time.process_time() < {cpu_s}:
    pass
"""


def _spin_child(cpu_s: float) -> float:
    """Run a busy child process to the end; its CPU time (user + system) in seconds."""
    child = subprocess.Popen([sys.executable, "-c", _SPIN.format(cpu_s=cpu_s)])
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0
    return usage.ru_utime + usage.ru_stime


def test_reads_this_machine():
    """/proc/stat for real: a child's known CPU time shows in the machine's busy time, and the
    busy time never exceeds what the CPUs could have done in the window (other processes on
    this machine may add to it, so only these bounds can be checked)."""
    n_cpus, tick_s = os.cpu_count(), 1 / os.sysconf("SC_CLK_TCK")
    wall0, busy0 = time.monotonic(), system_busy_s()
    child_s = _spin_child(0.5)
    busy_s, wall_s = system_busy_s() - busy0, time.monotonic() - wall0
    assert child_s >= 0.5
    assert busy_s >= 0.9 * child_s - 2 * n_cpus * tick_s, (busy_s, child_s)
    assert busy_s <= wall_s * n_cpus + 2 * n_cpus * tick_s, (busy_s, wall_s, n_cpus)


def test_guard_counts_another_process_as_others_share():
    """The guard with its real readers: a child's work is others' share of the machine, at
    least the child's CPU time over the window's CPU capacity, and it flags what it counts."""
    guard = ContentionGuard(_Fixed())
    wall0 = time.monotonic()
    guard.begin()
    child_s = _spin_child(0.5)
    reading = guard.end()
    wall_s = time.monotonic() - wall0
    share = reading.end_state["other_cpu_share"]
    tick_s = 1 / os.sysconf("SC_CLK_TCK")
    low = (0.9 * child_s - 2 * guard.n_cpus * tick_s) / (wall_s * guard.n_cpus)
    assert low <= share <= 1.05, (share, low, child_s, wall_s)
    assert ("other-load" in reading.flags) == (share > DEFAULT_THRESHOLD)
    if low > DEFAULT_THRESHOLD:  # one child is enough on a machine with few CPUs
        assert "other-load" in reading.flags
