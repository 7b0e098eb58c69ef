"""Pick the meter for a device, and say why the better ones were not used.

cuda / cuda:N -> NVML, or AMD SMI on a ROCm build of torch (its cuda devices are AMD GPUs),
                 or MeterUnavailable (there is no GPU estimate to fall back to).
sim:<gpu>     -> NVML over the sensor simulator, on the wall clock (measure.sim.wall).
cpu           -> RAPL where its counters are readable, else the labelled estimate, with the
                 reason RAPL was not used (missing, permission denied + the fix) in `reasons`.
`prefer` forces one meter ("nvml", "rapl", "estimate") and then never falls back.
"""

from __future__ import annotations

import inspect
import re

from joulebench.measure.meters.amdsmi import AmdSmiMeter, torch_is_rocm
from joulebench.measure.meters.base import Meter, MeterUnavailable
from joulebench.measure.meters.estimate import EstimateMeter
from joulebench.measure.meters.node import NodeMeter
from joulebench.measure.meters.nvml import NvmlMeter
from joulebench.measure.meters.rapl import RaplMeter
from joulebench.measure.sim.wall import is_simulated, wall_sim_gpu

METERS = {
    "nvml": NvmlMeter,
    "amdsmi": AmdSmiMeter,
    "rapl": RaplMeter,
    "estimate": EstimateMeter,
}
GPU_METERS = ("nvml", "amdsmi")
CPU_ORDER = ("rapl", "estimate")  # best first


def select_meter(
    device: str, *, prefer: str | None = None, label: str = "", rocm: bool = False, **kw
) -> tuple[Meter, list[str]]:
    """Return (meter, reasons). Keyword options go to the meters that accept them
    (e.g. nvml=, uuid=, sample_interval_s=, root= for RAPL, tdp_w= / idle_w= for the estimate).
    `label` names a `sim:` device's board (one per label and process); `rocm` says torch
    is a ROCm build (found from the imported torch when not given).
    """
    if is_simulated(device):
        if prefer not in (None, "nvml"):
            raise ValueError(f"device {device!r} can only be measured with NVML, not {prefer!r}")
        options = {k: v for k, v in kw.items() if k in ("sample_interval_s", "refresh_s")}
        return wall_sim_gpu(device, label or device).meter(**options), []
    if prefer is not None and prefer not in METERS:
        raise ValueError(f"prefer must be one of {sorted(METERS)}, not {prefer!r}")
    unknown = set(kw) - {key for cls in METERS.values() for key in _options(cls)}
    if unknown:
        raise TypeError(f"no meter takes the option(s) {sorted(unknown)}")
    match = re.fullmatch(r"cuda(?::(\d+))?", device)
    if match:
        if prefer not in (None, *GPU_METERS):
            raise ValueError(
                f"device {device!r} can only be measured with NVML or AMD SMI, not {prefer!r}"
            )
        gpu_meter = prefer or ("amdsmi" if rocm or torch_is_rocm() else "nvml")
        return _make(gpu_meter, cuda_index=int(match[1] or 0), **kw), []
    if device != "cpu":
        raise ValueError(f"no meter for device {device!r}; expected 'cpu', 'cuda' or 'cuda:N'")
    if prefer in GPU_METERS:
        raise ValueError(f"{prefer} measures GPUs; device 'cpu' needs 'rapl' or 'estimate'")
    if prefer is not None:
        skipped = [f"{name}: not tried, prefer={prefer!r}" for name in CPU_ORDER if name != prefer]
        return _make(prefer, **kw), skipped
    try:
        return _make("rapl", **kw), []
    except MeterUnavailable as err:
        reason = f"rapl: {err.reason}: {err}"
    return _make("estimate", **kw), [reason]


def _options(cls) -> list[str]:
    return [name for name in inspect.signature(cls.__init__).parameters if name != "self"]


def _make(name: str, **kw) -> Meter:
    """Build meter `name` from the options its constructor accepts (others are for other meters)."""
    cls = METERS[name]
    accepted = _options(cls)
    return cls(**{key: value for key, value in kw.items() if key in accepted})


def select_node_meter(
    device: str,
    *,
    prefer: str | None = None,
    label: str = "",
    concurrent=lambda: 1,
    **kw,
) -> tuple[NodeMeter, list[str]]:
    """The device's meter with the host's beside it (meters.node): every readable meter of
    the node in one window. A CPU device is its own host meter (wrapped in the contention
    guard: other busy processes share what it reads); a GPU's host is RAPL, else the
    labelled estimate, with the reason."""
    from joulebench.measure.meters.contention import ContentionGuard

    meter, reasons = select_meter(device, prefer=prefer, label=label, **kw)
    if device == "cpu":
        guarded = ContentionGuard(meter)
        host_reason = "; ".join(reasons)  # why RAPL was not used, on the CPU part too
        return NodeMeter(guarded, "cpu", host_reason=host_reason, concurrent=concurrent), reasons
    host_options = {k: v for k, v in kw.items() if k in ("root", "read", "tdp_w", "idle_w")}
    try:
        host, host_reasons = select_meter("cpu", **host_options)
    except MeterUnavailable as err:  # a forced meter that cannot read: no host part
        host, host_reasons = None, [f"{err.reason}: {err}"]
    node = NodeMeter(meter, "gpu", host, host_reason="; ".join(host_reasons), concurrent=concurrent)
    return node, reasons
