"""A device string's meter, for callers that hold a string and no bound device.

select_meter binds the device (bound.bound_device) and asks it (cpu: RAPL else the
labelled estimate with the reason; cuda: NVML, or AMD SMI on a ROCm build of torch; sim:
NVML over the simulator); `prefer` forces one of the kind's meters and then never falls
back. A job holds its bound device and asks it: `device.meter()`, `device.node_meter()`
(every readable meter of the node in one window, meters.node).
"""

from __future__ import annotations

from joulebench.core.backends.base import Libraries
from joulebench.core.backends.bound import HOST_OPTIONS, bound_device
from joulebench.core.meters.base import Meter

__all__ = ["HOST_OPTIONS", "select_meter"]


def select_meter(
    device: str, *, prefer: str | None = None, label: str = "", rocm: bool = False, **kw
) -> tuple[Meter, list[str]]:
    """Return (meter, reasons the better ones were not used). Keyword options go to the
    meters that accept them (e.g. nvml=, uuid=, sample_interval_s=, root= for RAPL, tdp_w= /
    idle_w= for the estimate). `label` names a `sim:` device's board (one per label and
    process); `rocm` says torch is a ROCm build (found from torch when not given)."""
    libs = Libraries(nvml=kw.pop("nvml", None), amdsmi=kw.pop("amdsmi", None), rocm=rocm or None)
    return bound_device(device, label, libs, prefer).meter(prefer=prefer, **kw)
