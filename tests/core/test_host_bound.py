"""Whether a row measures its model or the host (core.host_bound), on a simulated GPU's
host model (sim.host) and against torch's profiler events."""

from __future__ import annotations

import math
from dataclasses import replace

import helpers.profile_job as profile_job
import helpers.tiny_models  # noqa: F401  (registers jbtest_tiny)
import pytest
import torch
from helpers.timm_models import register
from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent

from joulebench.core.host_bound import (
    HOST_BOUND_BELOW,
    busy_share,
    host_bound_fields,
    kernel_intervals,
    trace_steps,
)
from joulebench.flags import FLAG_HOST_BOUND, has_flag
from joulebench.jobs.profile import run_profile
from joulebench.sim.clock import SimClock
from joulebench.sim.host import KERNEL_FLOOR_S, LAUNCH_S, StepWork, count_step
from joulebench.sim.workload import SimGpu, Workload


def test_the_busy_share_is_the_union_of_kernels_over_their_span():
    assert busy_share([(0, 1), (2, 3)]) == pytest.approx(2 / 3)
    assert busy_share([(0, 2), (1, 3), (5, 6)]) == pytest.approx(4 / 6)  # overlaps once
    assert busy_share([(3, 4), (0, 1)]) == pytest.approx(0.5)  # any order
    assert busy_share([(0, 5)]) == 1.0
    assert math.isnan(busy_share([]))


def _kernel(start_us: float, end_us: float, device=DeviceType.CUDA) -> FunctionEvent:
    return FunctionEvent(
        id=0, name="k", thread=0, start_us=start_us, end_us=end_us, device_type=device
    )


def test_the_profilers_kernels_are_read_from_torchs_own_events():
    """torch's FunctionEvent, as `profile().events()` lists them: CUDA kernels only."""
    events = [_kernel(0, 10), _kernel(30, 40), _kernel(5, 50, DeviceType.CPU)]
    spans = kernel_intervals(events, DeviceType.CUDA)
    assert spans == [(0, 10), (30, 40)]
    assert busy_share(spans) == pytest.approx(0.5)


def test_a_row_below_half_busy_is_flagged_host_bound():
    assert host_bound_fields(0.3) == {"gpu_busy_fraction": 0.3, "flags": FLAG_HOST_BOUND}
    assert host_bound_fields(HOST_BOUND_BELOW) == {"gpu_busy_fraction": HOST_BOUND_BELOW}
    assert "flags" not in host_bound_fields(math.nan)  # a CPU: nothing to say
    assert trace_steps(0.001) == 200 and trace_steps(1.0) == 10 and trace_steps(1e-6) == 500
    assert trace_steps(math.nan) == 10


# ---------------------------------------------------------------- the simulated host


def test_small_steps_wait_on_the_host_and_large_ones_do_not():
    small = StepWork(kernels=150, flops=0.11e9)  # mobilenetv3_small at batch 1
    large = StepWork(kernels=70, flops=64 * 3.6e9)  # resnet18 at batch 64
    assert small.busy_fraction("hopper") < HOST_BOUND_BELOW < large.busy_fraction("hopper")
    assert large.busy_fraction("hopper") == 1.0
    # a kernel-launch floor: no step of n kernels is busier than its floor allows
    assert small.busy_fraction("hopper") == pytest.approx(
        (150 * KERNEL_FLOOR_S + 0.11e9 / 33.5e12) / (150 * LAUNCH_S), rel=1e-6
    )
    # faster arithmetic leaves the GPU idler: fp16 is more host-bound than fp32
    half = StepWork(kernels=70, flops=3.6e9, precision="fp16")
    full = StepWork(kernels=70, flops=3.6e9, precision="fp32")
    assert half.busy_fraction("hopper") < full.busy_fraction("hopper")


def test_a_steps_kernels_and_flops_are_counted_once():
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    x = torch.randn(8, 64)
    with torch.inference_mode():
        out, work = count_step(lambda: model(x))
    assert out.shape == (8, 10)
    assert work.kernels == 3  # two matrix products and the ReLU; views are not kernels
    assert work.flops == pytest.approx(2 * 8 * (64 * 128 + 128 * 10))
    assert work.precision == "fp32"
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        _, work = count_step(lambda: model(x))
    assert work.precision == "bf16"


def test_a_host_bound_loop_jitters_with_its_host_not_its_kernels():
    gpu = SimGpu(SimClock(0.0))
    work = Workload(period_s=0.01, duty=0.3, host_jitter=0.05)
    starts = []
    for _ in range(2000):
        starts.append(gpu.clock())
        gpu.batch(work)
    periods = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    mean = sum(periods) / len(periods)
    std = (sum((p - mean) ** 2 for p in periods) / len(periods)) ** 0.5
    assert mean == pytest.approx(0.01, rel=0.01) and std / mean == pytest.approx(0.05, rel=0.15)
    steady = SimGpu(SimClock(0.0))
    starts = []
    for _ in range(50):
        starts.append(steady.clock())
        steady.batch(Workload(period_s=0.01, duty=0.3))
    assert max(b - a for a, b in zip(starts, starts[1:], strict=False)) == pytest.approx(0.01)


class Wide(torch.nn.Module):
    """One large matrix product a step: the GPU's time, not the host's."""

    def __init__(self, num_classes=10, **kwargs):
        super().__init__()
        self.num_classes = num_classes
        self.fc = torch.nn.Linear(3 * 32 * 32, 2048)

    def forward(self, x):
        return self.fc(x[:, :, :32, :32].flatten(1))


register("jbtest_wide", Wide)


@pytest.mark.slow
def test_a_simulated_gpu_row_says_its_busy_share_and_flags_a_host_bound_one():
    """On a simulated H100: a tiny net at batch 1 (a few kernels of almost nothing) is
    host-bound, one large matrix product at batch 64 is not; a CPU row says nothing."""
    rows = {}
    for model, batch in (("jbtest_tiny", 1), ("jbtest_wide", 64)):
        cpu_job = profile_job.job(model, batch_sizes=(batch,))
        spec = replace(cpu_job.spec, torch_device="sim:h100")
        job = replace(cpu_job, spec=spec, device_label="test-host-bound")
        (row,) = run_profile(job).rows.to_dict("records")
        assert row["status"] == "ok", row["reason"]
        rows[model] = row
    tiny, wide = rows["jbtest_tiny"], rows["jbtest_wide"]
    assert tiny["gpu_busy_fraction"] < HOST_BOUND_BELOW and has_flag(tiny["flags"], FLAG_HOST_BOUND)
    assert wide["gpu_busy_fraction"] == 1.0 and not has_flag(wide["flags"], FLAG_HOST_BOUND)
    cpu = run_profile(profile_job.job("jbtest_tiny", batch_sizes=(1,))).rows.iloc[0]
    assert math.isnan(cpu["gpu_busy_fraction"]) and not has_flag(cpu["flags"], FLAG_HOST_BOUND)
