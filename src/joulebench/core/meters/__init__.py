"""Meters: where energy is read (NVML and AMD SMI for GPUs, RAPL for CPUs, or a labelled
estimate).

All share the interface in base.py; `registry` builds one by name. Which meter a device
gets is its backend's choice (joulebench.core.backends.select_meter). Nothing here
imports pynvml, amdsmi or torch until a meter of theirs is made.
"""

from joulebench.core.meters.base import TRACE_COLUMNS, Meter, MeterUnavailable, Reading
from joulebench.core.meters.estimate import EstimateMeter
from joulebench.core.meters.nvml import NvmlMeter, match_nvml_index
from joulebench.core.meters.rapl import RaplMeter

__all__ = [
    "TRACE_COLUMNS",
    "EstimateMeter",
    "Meter",
    "MeterUnavailable",
    "NvmlMeter",
    "RaplMeter",
    "Reading",
    "match_nvml_index",
]
