"""Wait for a busy host or GPU to quiet down before a configuration is measured (issue 34).

Another process on the measured CPU (or on the GPU) corrupts the numbers: its work is in the
energy and it slows ours. The meters flag such windows (`other-load`, `other-process`) and
the score keeps them off the front; better still is not to measure beside it. So before
each configuration a profile job asks its device whether something else is using it
(`Backend`-specific: a CPU's other processes' share of its cores over a short sample, a
GPU's other processes) and, if so, waits for it to stop, polling, at most WAIT_S, logging
what it waits for. A neighbour that is still there after a wait is a lasting one: the job
stops waiting for the rest of its configurations (one log line says so), measures beside
it, and the rows say so in their flags, as before. The plan counts the wait where the host
is busy when it plans (plan.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from joulebench.config_schema import default
from joulebench.core.meters.contention import DEFAULT_THRESHOLD, system_busy_s
from joulebench.flags import FLAG_OTHER_PROCESS

WAIT_S = default("profile.quiet_wait_s")  # the longest wait before one configuration
POLL_S = 1.0
SAMPLE_S = 0.2  # how long a CPU's other load is sampled (10 ms ticks: 2.5 % on 2 CPUs)


def cpu_others_share(
    sample_s: float = SAMPLE_S,
    *,
    busy_s: Callable[[], float] = system_busy_s,
    own_cpu_s: Callable[[], float] = time.process_time,
    sleep: Callable[[float], object] = time.sleep,
    n_cpus: int | None = None,
) -> float:
    """Other processes' share of the machine's CPUs over `sample_s` (this process idles)."""
    n = n_cpus or os.cpu_count() or 1
    busy0, own0, t0 = busy_s(), own_cpu_s(), time.monotonic()
    sleep(sample_s)
    wall = max(time.monotonic() - t0, 1e-9)
    others = (busy_s() - busy0) - (own_cpu_s() - own0)
    return max(others, 0.0) / (wall * n)


def cpu_busy(threshold: float = DEFAULT_THRESHOLD, share=cpu_others_share) -> str:
    """What keeps the CPU busy ('' when quiet): other processes above `threshold` of it."""
    used = share()
    if used <= threshold:
        return ""
    n = os.cpu_count() or 1
    return f"other processes use {used:.0%} of the {n} CPUs ({used * n:.1f} cores)"


def meter_busy(meter_factory) -> str:
    """What else uses a GPU ('' when nothing): its meter's other-process flag (NVML, AMD
    SMI: other processes with a context on it), on a meter opened for the question."""
    meter, _ = meter_factory()
    try:
        device = getattr(meter, "device", meter)  # a node meter's device part
        flags = device.current_flags() if hasattr(device, "current_flags") else []
        pids = getattr(device, "other_pids", [])
    finally:
        meter.close()
    if FLAG_OTHER_PROCESS not in flags:
        return ""
    return f"other processes on the GPU (pids {', '.join(map(str, pids)) or '?'})"


@dataclass
class QuietGate:
    """Before each configuration: wait (bounded, logged) for the device to be left alone."""

    probe: Callable[[], str]  # '' when quiet, else what is busy
    log: Callable[[str], object]
    wait_s: float = WAIT_S
    sleep: Callable[[float], object] = time.sleep
    clock: Callable[[], float] = time.monotonic
    lasting: str = ""  # a neighbour that outlasted a wait: measured beside from then on
    waited_s: list[float] = field(default_factory=list)

    def wait(self, label: str) -> float:
        """Seconds waited before `label`; 0 where quiet, or once a neighbour proved lasting
        (or with wait_s 0: never waits)."""
        if self.lasting or not self.wait_s > 0:
            return 0.0
        busy = self.probe()
        if not busy:
            return 0.0
        self.log(f"{label}: waiting up to {self.wait_s:g} s for the device to quiet: {busy}")
        start = self.clock()
        while busy and self.clock() - start < self.wait_s:
            self.sleep(POLL_S)
            busy = self.probe()
        waited = self.clock() - start
        self.waited_s.append(waited)
        if busy:
            self.lasting = busy
            self.log(
                f"{label}: still busy after {waited:.0f} s ({busy}): measuring beside it from "
                "now on; its rows are flagged where it shows"
            )
        else:
            self.log(f"{label}: quiet after {waited:.0f} s")
        return waited
