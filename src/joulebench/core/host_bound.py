"""Whether a configuration measures its model or the host that launches it.

A small model at a small batch keeps a fast GPU waiting: each step is hundreds of kernel
launches from Python, so the step takes the host's time and the GPU idles between kernels.
Such a row's energy is real (it is what running the model that way costs), but it says more
about the host and the launch overhead than about the model. `gpu_busy_fraction` is the
share of a step during which the GPU executes kernels, measured by the device's backend
after the configuration's windows (never inside them) from a short trace of a few steps.
Below HOST_BOUND_BELOW the row is flagged `host-bound`: shown, not invalidating; the fits
leave such rows out where `score.invalid_flags` lists the flag.
docs/profiling.md#the-host-gpu_busy_fraction-and-host-bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from joulebench.flags import FLAG_HOST_BOUND

HOST_BOUND_BELOW = 0.5  # the GPU busy less than half of each step: the host sets the pace
TRACE_S = 0.2  # the trace's length: enough steps for a steady share, at least TRACE_STEPS
TRACE_STEPS = 10
MAX_TRACE_STEPS = 500


def busy_share(intervals: Iterable[tuple[float, float]]) -> float:
    """The union of (start, end) intervals over the span from the first start to the last
    end: the share of that time the device was busy; NaN without intervals."""
    spans = sorted((float(a), float(b)) for a, b in intervals if b >= a)
    if not spans:
        return math.nan
    busy, (open_a, open_b) = 0.0, spans[0]
    for a, b in spans[1:]:
        if a > open_b:  # a gap: close the busy stretch so far
            busy += open_b - open_a
            open_a, open_b = a, b
        else:
            open_b = max(open_b, b)
    busy += open_b - open_a
    total = max(b for _, b in spans) - spans[0][0]
    return busy / total if total > 0 else math.nan


def trace_steps(step_s: float) -> int:
    """Steps to trace: TRACE_S worth, at least TRACE_STEPS, at most MAX_TRACE_STEPS."""
    if not (math.isfinite(step_s) and step_s > 0):
        return TRACE_STEPS
    return int(min(max(TRACE_STEPS, math.ceil(TRACE_S / step_s)), MAX_TRACE_STEPS))


def kernel_intervals(events, device_type) -> list[tuple[float, float]]:
    """(start, end) of the profiler's events on `device_type` (its kernels), in its units."""
    return [(e.time_range.start, e.time_range.end) for e in events if e.device_type == device_type]


def traced_busy_fraction(
    step: Callable[[], object], sync: Callable[[], object], steps: int
) -> float:
    """The GPU's busy share over `steps` steps, from the CUDA kernels torch's profiler
    records (CUPTI: the host's launches slow a little under it, so the share reads a little
    low, never high)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as traced:
        for _ in range(steps):
            step()
        sync()
    return busy_share(kernel_intervals(traced.events(), torch.autograd.DeviceType.CUDA))


def host_bound_fields(fraction: float) -> dict:
    """Row fields: the busy share and, below HOST_BOUND_BELOW, the flag."""
    fields = {"gpu_busy_fraction": fraction}
    if math.isfinite(fraction) and fraction < HOST_BOUND_BELOW:
        fields["flags"] = FLAG_HOST_BOUND
    return fields
