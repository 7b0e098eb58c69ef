"""CPU windows shared with other processes are flagged."""

import pytest

from joulebench.measure.meters.base import Meter, Reading
from joulebench.measure.meters.contention import ContentionGuard, system_busy_s


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


def test_reads_this_machine():
    assert system_busy_s() > 0
