"""Flag CPU windows that other processes shared.

On a CPU, another busy process corrupts the numbers the way another process on a GPU does:
RAPL's package counter includes its work, and it slows ours. This wrapper reads the
system-wide busy time (/proc/stat) and this process's own CPU time around each window and
flags `other-load` when other processes used more than `threshold` of the machine's CPUs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from joulebench.core.meters.base import Meter, Reading
from joulebench.flags import FLAG_OTHER_LOAD

PROC_STAT_ALL = "cpu"  # the label of /proc/stat's first line: every CPU's time summed
DEFAULT_THRESHOLD = 0.10  # share of all CPUs' time used by other processes in the window


def system_busy_s(read: Callable[[], str] = lambda: Path("/proc/stat").read_text()) -> float:
    """CPU-seconds all CPUs spent busy since boot (user, nice, system, irq, softirq, steal)."""
    fields = read().splitlines()[0].split()
    assert fields[0] == PROC_STAT_ALL, "the first line of /proc/stat sums all CPUs"
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class ContentionGuard(Meter):
    """Wraps a CPU meter: same readings, plus the `other-load` flag and its share."""

    def __init__(
        self,
        meter: Meter,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        busy_s: Callable[[], float] = system_busy_s,
        own_cpu_s: Callable[[], float] = time.process_time,
        n_cpus: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.meter = meter
        self.name, self.is_estimate = meter.name, meter.is_estimate
        self.refresh_s = meter.refresh_s
        self.threshold = threshold
        self.busy_s, self.own_cpu_s, self.clock = busy_s, own_cpu_s, clock
        self.n_cpus = n_cpus or os.cpu_count() or 1
        self._start: tuple[float, float, float] | None = None

    def begin(self) -> None:
        self._start = (self.clock(), self.busy_s(), self.own_cpu_s())
        self.meter.begin()

    def end(self) -> Reading:
        reading = self.meter.end()
        wall0, busy0, own0 = self._start
        wall_s = max(self.clock() - wall0, 1e-9)
        others_s = (self.busy_s() - busy0) - (self.own_cpu_s() - own0)
        share = max(others_s, 0.0) / (wall_s * self.n_cpus)
        reading.end_state = {**reading.end_state, "other_cpu_share": share}
        if share > self.threshold:
            reading.flags = [*reading.flags, FLAG_OTHER_LOAD]
        return reading

    def describe(self) -> dict:
        return {**self.meter.describe(), "contention_threshold": self.threshold}

    def close(self) -> None:
        self.meter.close()
