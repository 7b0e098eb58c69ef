"""Calibration for `joulebench plan --calibrate`: each configuration of a model run for a
moment on the study's device, to learn its build time and its step time.

The plan's estimate of a configuration follows the protocol's rules (config_time.config_cost),
and those rules turn on the step time: a window is `min_repeat_s` long only while a batch
takes less than min_repeat_s / min_repeat_batches; past that, 32 batches of a slow step
(bf16 emulated on a CPU: 2.5 s per batch of 8) make a window of minutes. Constants cannot
see that; a few batches can. It is cheap by design: one build per configuration (as the
profile does), one untimed step (first-call work: allocation, oneDNN/cuDNN autotuning), then
single synced steps until CALIBRATE_MIN_STEPS and CALIBRATE_MIN_S are both reached, at most
CALIBRATE_MAX_STEPS; the fastest is the step time. A precision the device only emulates is
skipped, as the profile skips it, and costs nothing. A configuration that fails here (out of
memory, a runtime not installed) is left out: the plan counts it as one nothing is known of
(windows bounded by time).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from joulebench.core.arithmetic import applied, arithmetic_for
from joulebench.core.backends import BoundDevice
from joulebench.core.methods import parse_methods
from joulebench.core.protocol import ProtocolSettings
from joulebench.jobs.job_spec import JobSpec
from joulebench.jobs.profile import ProfileJob, prepare

CALIBRATE_MIN_STEPS = 3
CALIBRATE_MIN_S = 0.2
CALIBRATE_MAX_STEPS = 20


@dataclass
class StepTime:
    """What a moment of one configuration showed: seconds per batch and to build it."""

    step_s: float
    build_s: float


def calibrate_model(
    model: str,
    label: str,
    device: str,
    methods: dict,
    batch_sizes: dict[str, list[int]],
    *,
    workload: str | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[tuple[str, str, int], StepTime]:
    """(phase, method, batch size) -> StepTime for every configuration of `model` that runs
    here; `methods`: name -> spec (the study's, expanded); `batch_sizes`: phase -> sizes."""
    job = ProfileJob(
        model=model,
        device_label=label,
        spec=JobSpec(
            torch_device=device,
            methods=list(parse_methods(methods).values()),
            batch_sizes=[],
            settings=ProtocolSettings(),
            phases=list(batch_sizes),
            workload=workload,
        ),
    )
    bound = job.bind_device()
    out = {}
    for phase, sizes in batch_sizes.items():
        for method in job.spec.methods:
            for batch in sizes:
                timed = _one(job, bound, phase, method, batch, clock)
                if timed is not None:
                    out[(phase, method.name, batch)] = timed
    return out


def _fastest_step_s(step, sync, clock) -> float:
    """The fastest of single synced steps: the step a quiet device runs. On a CPU shared
    with other work, steps wait for descheduled threads, by seconds where the step takes
    tens of ms, and two calibrations minutes apart disagreed by 5 x on their medians
    (docs/benchmarks.md); other load is not the plan's to foresee (the ETA lines see it).
    A step slow by itself (bf16 emulated) is slow in every sample, so the fastest keeps it."""
    times: list[float] = []
    start = clock()
    while len(times) < CALIBRATE_MAX_STEPS and (
        len(times) < CALIBRATE_MIN_STEPS or clock() - start < CALIBRATE_MIN_S
    ):
        t0 = clock()
        step()
        sync()
        times.append(clock() - t0)
    return min(times)


def _one(
    job: ProfileJob, device: BoundDevice, phase: str, method, batch: int, clock
) -> StepTime | None:
    """Build one configuration and time a few of its steps; None where it does not run
    (skipped, emulated, failed): the profile's own checks decide, as for a measurement,
    and it runs in the method's arithmetic (TF32 or not, cuDNN autotuned or not)."""
    from joulebench.core.emulation import method_verdict

    if method_verdict(device, method).skip_reason:
        return None
    with applied(arithmetic_for(method, device.runs_on_gpu)):
        return _timed(job, device, phase, method, batch, clock)


def _timed(
    job: ProfileJob, device: BoundDevice, phase: str, method, batch: int, clock
) -> StepTime | None:
    """`_one`'s build and timed steps, in the arithmetic it set."""
    import torch

    sync = device.sync
    start = clock()
    try:
        runner = prepare(job, device, phase, method, batch)
        build_s = clock() - start
        with torch.enable_grad() if runner.grad else torch.inference_mode():
            runner.step()  # first-call work is warm-up's, not a step's
            sync()
            return StepTime(_fastest_step_s(runner.step, sync, clock), build_s)
    except Exception:  # a failed configuration: the profile reports it; the plan guesses
        return None
    finally:
        runner = None
        device.free_memory()
