"""A labelled CPU energy *estimate* for machines where no counter can be read.

Power model "tdp-linear" (the shape of CodeCarbon's CPU-load fallback, with an idle floor):
power_w = idle_w + (tdp_w - idle_w) * utilisation, utilisation being this process's CPU time
over (wall time * CPUs available to it). Linear in utilisation, so a window's energy is exact
for the model without sampling. tdp_w is `tdp_w=` from the config, else a spec-sheet TDP
(CPU_TDP) scaled to the CPUs this process may use, else DEFAULT_W_PER_CPU per logical CPU;
idle_w defaults to IDLE_FRACTION of tdp_w. Neither constant is a measurement;
docs/measurement.md#the-estimate-estimatetdp-linear says how far off such models can be.
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from joulebench.core.meters.base import TRACE_COLUMNS, Meter, Reading
from joulebench.flags import FLAG_ESTIMATE

POWER_MODEL = "tdp-linear"
DEFAULT_W_PER_CPU = 4.0  # CodeCarbon DEFAULT_POWER_PER_CORE (codecarbon/core/cpu.py), per thread
IDLE_FRACTION = 0.1  # CodeCarbon machine-mode load model: 0.1 + 0.9 * load**3 of TDP

# CPU model substring -> (TDP of one package in W, hardware threads per package), from the
# manufacturers' spec pages (Intel ARK, AMD product pages). The longest matching key wins.
CPU_TDP: dict[str, tuple[float, int]] = {
    "Xeon(R) Platinum 8592": (350.0, 128),
    "Xeon(R) Platinum 8480": (350.0, 112),
    "Xeon(R) Platinum 8468": (350.0, 96),
    "Xeon(R) Platinum 8380": (270.0, 80),
    "Xeon(R) Platinum 8358": (250.0, 64),
    "Xeon(R) Gold 6248R": (205.0, 48),
    "Xeon(R) Gold 6248": (150.0, 40),
    "Core(TM) i9-13900K": (125.0, 32),
    "AMD EPYC 9654": (360.0, 192),
    "AMD EPYC 9534": (280.0, 128),
    "AMD EPYC 7763": (280.0, 128),
    "AMD EPYC 7742": (225.0, 128),
    "AMD EPYC 7713": (225.0, 128),
}


def detect_cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The 'model name' of the first CPU, or what the platform module knows, or 'unknown'."""
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def available_cpus(cgroup_cpu_max: Path = Path("/sys/fs/cgroup/cpu.max")) -> int:
    """Logical CPUs this process may use: its affinity mask, capped by a cgroup v2 CPU quota."""
    try:
        n_cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        n_cpus = os.cpu_count() or 1
    try:
        quota, period = cgroup_cpu_max.read_text().split()
        if quota != "max":
            n_cpus = min(n_cpus, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return n_cpus


def lookup_tdp(cpu_model: str) -> tuple[str, float, int] | None:
    """(table key, package TDP W, threads per package) for a CPU model string, if known."""
    matches = [key for key in CPU_TDP if key.lower() in cpu_model.lower()]
    if not matches:
        return None
    key = max(matches, key=len)
    return key, *CPU_TDP[key]


class EstimateMeter(Meter):
    """Modelled CPU energy of this process's CPUs; every Reading is flagged "estimate"."""

    name = f"estimate:{POWER_MODEL}"
    is_estimate = True

    def __init__(
        self,
        *,
        tdp_w: float | None = None,
        idle_w: float | None = None,
        n_cpus: int | None = None,
        cpu_model: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        cpu_time: Callable[[], float] = time.process_time,
    ):
        self.cpu_model = cpu_model or detect_cpu_model()
        self.n_cpus = n_cpus or available_cpus()
        self.clock = clock
        self.cpu_time = cpu_time  # all threads of this process; not its child processes
        if tdp_w is not None:
            self.tdp_w, self.tdp_source = float(tdp_w), "config"
        elif (found := lookup_tdp(self.cpu_model)) is not None:
            key, package_w, threads = found
            self.tdp_w = package_w * self.n_cpus / threads
            self.tdp_source = f"table:{key} ({package_w:g} W / {threads} threads)"
        else:
            self.tdp_w = DEFAULT_W_PER_CPU * self.n_cpus
            self.tdp_source = f"default:{DEFAULT_W_PER_CPU:g} W per logical CPU (CodeCarbon)"
        self.idle_w = float(idle_w) if idle_w is not None else IDLE_FRACTION * self.tdp_w
        if not 0 <= self.idle_w <= self.tdp_w:
            raise ValueError(f"need 0 <= idle_w <= tdp_w, got {self.idle_w} and {self.tdp_w}")
        self._start: tuple[float, float] | None = None

    def power_w(self, utilisation: float) -> float:
        """The power model itself."""
        return self.idle_w + (self.tdp_w - self.idle_w) * min(max(utilisation, 0.0), 1.0)

    def begin(self) -> None:
        self._start = (self.clock(), self.cpu_time())

    def end(self) -> Reading:
        if self._start is None:
            raise RuntimeError("end() without begin()")
        t1, c1 = self.clock(), self.cpu_time()
        (t0, c0), self._start = self._start, None
        duration_s, cpu_s = t1 - t0, c1 - c0
        utilisation = cpu_s / (duration_s * self.n_cpus) if duration_s > 0 else 0.0
        power_w = self.power_w(utilisation)
        return Reading(
            energy_j=power_w * duration_s,
            duration_s=duration_s,
            trace=pd.DataFrame(columns=TRACE_COLUMNS, dtype=float),  # nothing was sampled
            flags=[FLAG_ESTIMATE],
            end_state={"power_w": power_w, "utilization_pct": 100.0 * min(utilisation, 1.0)},
        )

    def describe(self) -> dict:
        return {
            "meter": self.name,
            "power_model": "power_w = idle_w + (tdp_w - idle_w) * process CPU utilisation",
            "cpu_model": self.cpu_model,
            "n_cpus": self.n_cpus,
            "tdp_w": self.tdp_w,
            "idle_w": self.idle_w,
            "tdp_source": self.tdp_source,
        }
