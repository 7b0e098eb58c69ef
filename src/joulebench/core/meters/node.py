"""The whole node in one window: the device's meter and the host's (CPU packages, DRAM) together.

A row's energy is its device's. Beside it every readable meter of the node is read over the
same window and kept per component (`COMPONENTS`: gpu, cpu, dram; node is the sum of those
that were read). A missing component is NaN with its reason (`component_reasons`), never
zero. RAPL reads the whole host, so while other measurements run on the node the host's
energy is attributed to this job by its share of the host's busy CPU time in the window
(/proc/stat), and the window is flagged `host-shared`; the estimate models this process
alone, so it is never scaled. docs/measurement.md#whole-node-energy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from joulebench.core.meters.base import Meter, Reading
from joulebench.core.meters.contention import system_busy_s
from joulebench.flags import FLAG_HOST_SHARED

GPU_PART, CPU_PART = "gpu", "cpu"  # the node's parts a device's own reading can be
COMPONENTS = (GPU_PART, CPU_PART, "dram")
NO_GPU = "no GPU in this measurement (the device is the CPU)"
ESTIMATE_NO_DRAM = "the CPU estimate models the packages only; DRAM needs RAPL"


def dram_j(components: dict[str, float]) -> float:
    """The DRAM zones of a RAPL reading, summed; NaN when there are none."""
    values = [j for key, j in components.items() if key.startswith("dram")]
    return float(sum(values)) if values else math.nan


class NodeMeter(Meter):
    """Wraps the device's meter; `host` (a CPU meter, or None with `host_reason`) is read too.

    `device_component` is "gpu" or "cpu": which part the device's own reading is (a CPU
    device is its own host meter). `concurrent()` counts the node's live measurements.
    """

    def __init__(
        self,
        device: Meter,
        device_component: str,
        host: Meter | None = None,
        *,
        host_reason: str = "",
        concurrent: Callable[[], int] = lambda: 1,
        busy_s: Callable[[], float] = system_busy_s,
        own_cpu_s: Callable[[], float] = time.process_time,
    ):
        if device_component not in (GPU_PART, CPU_PART):
            raise ValueError(f"device_component must be gpu or cpu, not {device_component!r}")
        self.device, self.host = device, host
        self.device_component = device_component
        self.name, self.is_estimate = device.name, device.is_estimate
        self.refresh_s = device.refresh_s
        self.concurrent = concurrent
        self.busy_s, self.own_cpu_s = busy_s, own_cpu_s
        host_meter = device if device_component == CPU_PART else host
        self.host_meter_name = host_meter.name if host_meter is not None else ""
        self.host_is_estimate = bool(host_meter is not None and host_meter.is_estimate)
        self.component_reasons = self._reasons(host_meter, host_reason)
        self._start: tuple[int, float, float] | None = None

    def _reasons(self, host_meter: Meter | None, host_reason: str) -> dict[str, str]:
        reasons = {}
        if self.device_component == CPU_PART:
            reasons["gpu"] = NO_GPU
        if host_meter is None:
            reasons["cpu"] = reasons["dram"] = host_reason or "no CPU meter"
        elif host_meter.is_estimate:
            reasons["cpu"] = f"estimate ({host_meter.name})" + (
                f": {host_reason}" if host_reason else ""
            )
            reasons["dram"] = ESTIMATE_NO_DRAM
        return reasons

    def begin(self) -> None:
        self._start = (self.concurrent(), self.busy_s(), self.own_cpu_s())
        if self.host is not None:
            self.host.begin()
        self.device.begin()

    def end(self) -> Reading:
        reading = self.device.end()
        host = self.host.end() if self.host is not None else None
        running0, busy0, own0 = self._start
        running = max(running0, self.concurrent())
        node = dict.fromkeys(COMPONENTS, math.nan)
        node[self.device_component] = float(reading.energy_j)
        source = reading if self.device_component == CPU_PART else host
        if source is not None:
            if self.device_component == "gpu":
                node["cpu"] = float(source.energy_j)
            if "dram" not in self.component_reasons:
                node["dram"] = dram_j(source.components)
                if math.isnan(node["dram"]):
                    self.component_reasons["dram"] = "RAPL has no DRAM zone on this machine"
        share = 1.0
        shared = running > 1 and host is not None and not self.host_is_estimate
        if shared:  # whole-host counters: this job's share of the host's busy CPU time
            own_s = max(self.own_cpu_s() - own0, 0.0)
            busy = max(self.busy_s() - busy0, own_s, 1e-9)
            share = min(own_s / busy, 1.0)
            node["cpu"] *= share
            node["dram"] *= share
            reading.flags = [*reading.flags, FLAG_HOST_SHARED]
        reading.node_j = node
        reading.device_component = self.device_component
        reading.end_state = {
            **reading.end_state,
            "host_cpu_share": share,
            "concurrent_measurements": running,
        }
        return reading

    def describe(self) -> dict:
        info = self.device.describe()
        info["host_meter"] = self.host_meter_name
        if self.host is not None:
            info["host"] = self.host.describe()
        return info

    def close(self) -> None:
        self.device.close()
        if self.host is not None:
            self.host.close()
