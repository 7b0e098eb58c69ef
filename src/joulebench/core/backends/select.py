"""The meter of a device, as its backend picks it, and the whole node's beside it.

select_meter asks the device's backend (cpu: RAPL else the labelled estimate with the
reason; cuda: NVML, or AMD SMI on a ROCm build of torch; sim: NVML over the simulator);
`prefer` forces one of the backend's meters and then never falls back. select_node_meter
adds the host's meter (meters.node): every readable meter of the node in one window.
"""

from __future__ import annotations

from joulebench.core.backends.base import Libraries
from joulebench.core.backends.registry import backend_for, host_backend, kind_of
from joulebench.core.meters.base import Meter, MeterUnavailable
from joulebench.core.meters.node import NodeMeter
from joulebench.core.meters.registry import METERS, unknown_options

HOST_OPTIONS = ("root", "read", "tdp_w", "idle_w")  # the host meter's (RAPL, the estimate)


def select_meter(
    device: str, *, prefer: str | None = None, label: str = "", rocm: bool = False, **kw
) -> tuple[Meter, list[str]]:
    """Return (meter, reasons the better ones were not used). Keyword options go to the
    meters that accept them (e.g. nvml=, uuid=, sample_interval_s=, root= for RAPL, tdp_w= /
    idle_w= for the estimate). `label` names a `sim:` device's board (one per label and
    process); `rocm` says torch is a ROCm build (found from torch when not given)."""
    if prefer is not None and prefer not in METERS:
        raise ValueError(f"prefer must be one of {sorted(METERS)}, not {prefer!r}")
    if unknown_options(kw):
        raise TypeError(f"no meter takes the option(s) {unknown_options(kw)}")
    libs = Libraries(nvml=kw.pop("nvml", None), amdsmi=kw.pop("amdsmi", None), rocm=rocm or None)
    backend = backend_for(device, libs, prefer)
    return backend.meter(device, prefer=prefer, label=label, libs=libs, **kw)


def select_node_meter(
    device: str,
    *,
    prefer: str | None = None,
    label: str = "",
    concurrent=lambda: 1,
    **kw,
) -> tuple[NodeMeter, list[str]]:
    """The device's meter with the host's beside it. The host's CPU is its own host meter
    (wrapped in the contention guard: other busy processes share what it reads); any other
    device's host is RAPL, else the labelled estimate, with the reason."""
    from joulebench.core.meters.contention import ContentionGuard

    meter, reasons = select_meter(device, prefer=prefer, label=label, **kw)
    backend = kind_of(device)
    if backend.is_host:
        guarded = ContentionGuard(meter)
        host_reason = "; ".join(reasons)  # why RAPL was not used, on the CPU part too
        node = NodeMeter(guarded, backend.node_part, host_reason=host_reason, concurrent=concurrent)
        return node, reasons
    host_options = {k: v for k, v in kw.items() if k in HOST_OPTIONS}
    host = host_backend()
    try:
        host_meter, host_reasons = host.meter(host.kind, **host_options)
    except MeterUnavailable as err:  # a forced meter that cannot read: no host part
        host_meter, host_reasons = None, [f"{err.reason}: {err}"]
    node = NodeMeter(
        meter,
        backend.node_part,
        host_meter,
        host_reason="; ".join(host_reasons),
        concurrent=concurrent,
    )
    return node, reasons
