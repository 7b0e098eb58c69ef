"""Waiting for a busy device to quiet down before a configuration (core.quiet, issue 34)."""

from __future__ import annotations

import itertools

import pytest

from joulebench.core.quiet import QuietGate, cpu_busy, cpu_others_share, meter_busy
from joulebench.flags import FLAG_OTHER_PROCESS


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.now += s


def _gate(busy_for_s: float, clock: Clock, lines: list, wait_s: float = 10.0) -> QuietGate:
    """A device busy until `busy_for_s` (on the clock)."""

    def probe():
        return "a neighbour" if clock() < busy_for_s else ""

    return QuietGate(probe, lines.append, wait_s=wait_s, sleep=clock.sleep, clock=clock)


def test_a_quiet_device_is_measured_at_once():
    clock, lines = Clock(), []
    assert _gate(0.0, clock, lines).wait("m fp32 bs1") == 0.0 and lines == []


def test_a_passing_neighbour_is_waited_out_and_logged():
    clock, lines = Clock(), []
    gate = _gate(3.5, clock, lines)
    assert gate.wait("m fp32 bs1") == pytest.approx(4.0)  # polled every second
    assert "waiting up to 10 s for the device to quiet: a neighbour" in lines[0]
    assert lines[1] == "m fp32 bs1: quiet after 4 s"
    assert gate.wait("m fp32 bs8") == 0.0 and not gate.lasting


def test_a_lasting_neighbour_is_waited_for_once_then_measured_beside():
    clock, lines = Clock(), []
    gate = _gate(1e9, clock, lines)
    assert gate.wait("m fp32 bs1") == pytest.approx(10.0)
    assert "still busy after 10 s (a neighbour): measuring beside it" in lines[-1]
    assert gate.wait("m fp32 bs8") == 0.0 and len(lines) == 2  # no second wait, no line


def test_other_processes_share_of_the_cpus():
    busy = itertools.count(step=0.6)  # 0.6 CPU-s more each read: 0.6 of 2 CPUs over 0.5 s
    own = itertools.count(step=0.1)  # of which 0.1 is ours
    share = cpu_others_share(
        0.5, busy_s=lambda: next(busy), own_cpu_s=lambda: next(own), sleep=lambda s: None,
        n_cpus=2,
    )  # fmt: skip
    assert share > 0.4  # (0.6 - 0.1) CPU-s over a wall of ~0 s: far above any threshold
    assert cpu_busy(0.1, share=lambda: 0.05) == ""
    assert "other processes use 50% of the" in cpu_busy(0.1, share=lambda: 0.5)


class Meter:
    def __init__(self, flags, pids=()):
        self.flags, self.other_pids, self.closed = flags, list(pids), False

    def current_flags(self):
        return self.flags

    def close(self):
        self.closed = True


def test_a_gpu_is_busy_while_another_process_uses_it():
    busy = Meter([FLAG_OTHER_PROCESS], [4242])
    assert meter_busy(lambda: (busy, [])) == "other processes on the GPU (pids 4242)"
    assert busy.closed
    assert meter_busy(lambda: (Meter([]), [])) == ""
