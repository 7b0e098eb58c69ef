"""Meters: where energy is read (NVML for NVIDIA GPUs, RAPL for CPUs, or a labelled estimate).

All share the interface in base.py; select_meter picks one for a device and records why.
Nothing here imports pynvml or torch until an NVML meter is made.
"""

from joulebench.measure.meters.base import TRACE_COLUMNS, Meter, MeterUnavailable, Reading
from joulebench.measure.meters.estimate import EstimateMeter
from joulebench.measure.meters.nvml import NvmlMeter, match_nvml_index
from joulebench.measure.meters.rapl import RaplMeter
from joulebench.measure.meters.select import select_meter

__all__ = [
    "TRACE_COLUMNS",
    "EstimateMeter",
    "Meter",
    "MeterUnavailable",
    "NvmlMeter",
    "RaplMeter",
    "Reading",
    "match_nvml_index",
    "select_meter",
]
