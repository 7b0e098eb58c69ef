"""The meter interface: what every energy source (NVML, RAPL, estimate) provides.

A meter knows *where* energy is read; the measurement protocol (joulebench.core.protocol)
decides *when* windows open and close and knows nothing of NVML or RAPL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from joulebench.tables import TRACE_SAMPLE

# Columns of a power trace (one row per sample; declared in tables.TRACE_SAMPLE). Missing: NaN.
TRACE_COLUMNS = [c.name for c in TRACE_SAMPLE]


@dataclass
class Reading:
    """What one measurement window produced."""

    energy_j: float  # from the meter's counter (or its estimate / integration)
    duration_s: float
    energy_trace_j: float = math.nan  # the trace integrated over the window, a cross-check
    # a counter that moves once a refresh: its difference as read, and from the refreshes
    # inside the window scaled to the window's own time (meters.counter_edges; NaN: not known)
    energy_counter_j: float = math.nan
    energy_edges_j: float = math.nan
    trace: pd.DataFrame | None = None  # TRACE_COLUMNS
    flags: list[str] = field(default_factory=list)  # e.g. "other-process", "mig"
    start_state: dict = field(default_factory=dict)  # temperature_c, sm_clock_mhz... at begin
    end_state: dict = field(default_factory=dict)  # the same at end
    # energy_j per part the meter reads separately, e.g. RAPL {"package-0": 41.2, "dram-0": 6.3};
    # energy_j above is the documented sum of some of them (RAPL: the package zones only).
    components: dict[str, float] = field(default_factory=dict)
    # the node's parts read in the same window (meters.node.NodeMeter): "gpu", "cpu", "dram"
    # -> joules (NaN where not read), and which of them is the device's own energy_j
    node_j: dict[str, float] = field(default_factory=dict)
    device_component: str = ""


class MeterUnavailable(RuntimeError):
    """A meter cannot read on this machine; the message says why and, where there is one, the fix.

    `reason` is a short code ("missing", "permission-denied", "no-driver", "no-device", ...) so
    a selector can record it in every row instead of silently using another meter.
    """

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class Meter:
    """Begin a window, end it, get a Reading. Subclasses read one kind of source."""

    #: "nvml", "nvml:power-integration", "rapl", or "estimate:<power model>"
    name: str = "abstract"
    #: True when the energy is modelled, not read from a hardware counter.
    is_estimate: bool = False
    #: Seconds between updates of the reading, where that is slow enough to bias a window
    #: (NVIDIA's power sensors: 20-100 ms); None: updates fast enough not to matter (RAPL).
    refresh_s: float | None = None

    def begin(self) -> None:
        raise NotImplementedError

    def end(self) -> Reading:
        raise NotImplementedError

    def describe(self) -> dict:
        """Provenance of this meter: device name, driver version, zones, power model..."""
        return {"meter": self.name}

    def close(self) -> None:
        """Stop background samplers; safe to call twice."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
