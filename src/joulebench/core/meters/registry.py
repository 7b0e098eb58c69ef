"""Meters by name, and building one from the options it accepts.

nvml (NVIDIA GPUs), amdsmi (AMD GPUs), rapl (CPU packages and DRAM) and estimate (the
labelled model of CPU power). Which meter a device gets, and why a better one was not used,
is its backend's choice (joulebench.core.backends.select_meter); options meant for other
meters (uuid= for NVML, root= for RAPL, tdp_w= for the estimate) pass through unused.
"""

from __future__ import annotations

import inspect

from joulebench.core.meters.amdsmi import AmdSmiMeter
from joulebench.core.meters.base import Meter
from joulebench.core.meters.estimate import EstimateMeter
from joulebench.core.meters.nvml import NvmlMeter
from joulebench.core.meters.rapl import RaplMeter

METERS = {
    "nvml": NvmlMeter,
    "amdsmi": AmdSmiMeter,
    "rapl": RaplMeter,
    "estimate": EstimateMeter,
}


def meter_options(cls) -> list[str]:
    """The keyword options a meter class's constructor takes."""
    return [name for name in inspect.signature(cls.__init__).parameters if name != "self"]


def unknown_options(options) -> list[str]:
    """The options no meter takes (a typo, e.g. tdpw=): sorted."""
    known = {key for cls in METERS.values() for key in meter_options(cls)}
    return sorted(set(options) - known)


def make_meter(name: str, **options) -> Meter:
    """Build meter `name` from the options its constructor accepts (others are for others)."""
    cls = METERS[name]
    accepted = meter_options(cls)
    return cls(**{key: value for key, value in options.items() if key in accepted})
