"""joulebench.measure and joulebench.profile: the protocol over any callable, and a model
measured the way a profile job measures it (docs/api.md)."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from joulebench.api.arguments import (
    batch,
    measurable_device,
    protocol_config,
    seconds,
    step_callable,
    threads_count,
    window_name,
    workload_name,
)
from joulebench.api.measurement import Measurement
from joulebench.core.protocol import DEFAULT_PRESET, ProtocolSettings, meter_kind
from joulebench.core.quiet import WAIT_S as QUIET_WAIT_S
from joulebench.flags import FLAG_SIMULATED, join_flags
from joulebench.study import IDLE_PRE_S

if TYPE_CHECKING:
    import torch

    from joulebench.catalog.workloads import WorkloadSpec
    from joulebench.core.backends import BoundDevice

LOG = logging.getLogger("joulebench")
CALLABLE = "callable"  # the `workload` of a row joulebench.measure made


class MeasurementError(RuntimeError):
    """A configuration that was not measured (out of memory, a build error, a precision the
    device only emulates...): `row` is its profile row, with status and reason."""

    def __init__(self, message: str, row: dict):
        super().__init__(message)
        self.row = row


def measure(
    step: Callable[[], object],
    *,
    images_per_step: int,
    device: str = "cpu",
    preset: str = DEFAULT_PRESET,
    name: str = "step",
    meter: str | None = None,
    sync: Callable[[], object] | None = None,
    idle_s: float = IDLE_PRE_S,
    quiet_wait_s: float = QUIET_WAIT_S,
    **protocol: Any,
) -> Measurement:
    """Energy per image of `step()`, one batch of `images_per_step` images on `device`, under
    the protocol: an idle read, warm-up until steady, windows sized to the device's meter
    (`preset` and any ProtocolSettings over it) until the 95 % CI is met. `sync()` waits
    for the device's queued work (default: the device's own); `meter` forces one."""
    step_callable(step, sync)
    batch("images_per_step", images_per_step)
    window_name(name)
    _waits(idle_s, quiet_wait_s)
    config = protocol_config(preset, protocol)
    bound = measurable_device(device)
    sync = sync or bound.sync
    from joulebench.jobs.concurrency import NodeMeasurements

    with NodeMeasurements(bound.label) as node:
        meters = _meter_factory(bound, meter, node.count)
        idle = _idle(meters, idle_s)
        _gate(bound, meters, quiet_wait_s).wait(name)
        step = bound.wrap_step(step)
        row = _run(step, sync, meters, config, images_per_step, idle.power_w)
    known = {"name": name, "images": images_per_step, "preset": preset}
    measured = callable_row(bound, known, idle, *row)
    if measured["status"] != "ok":  # a value no measurement can have
        raise MeasurementError(
            f"{name} on {device}: {measured['status']}: {measured['reason']}", measured
        )
    return Measurement.from_row(measured)


def _waits(idle_s, quiet_wait_s) -> None:
    """The idle read's and the quiet wait's seconds, as a study's profile section takes them."""
    seconds("idle_s", idle_s, "profile.idle_pre_s")
    seconds("quiet_wait_s", quiet_wait_s, "profile.quiet_wait_s", positive=False)


def _meter_factory(device: BoundDevice, prefer: str | None, concurrent) -> Callable:
    """A fresh meter of the device with the host's beside it, as a profile job makes it."""
    return functools.partial(device.node_meter, prefer=prefer, concurrent=concurrent)


def _idle(meters: Callable, idle_s: float):
    """The short idle read before measuring: the baseline dynamic energy is above."""
    from joulebench.core.protocol import measure_idle

    meter, _ = meters()
    with meter:
        return measure_idle(meter, idle_s)


def _gate(device: BoundDevice, meters: Callable, wait_s: float):
    from joulebench.jobs.profile import device_gate

    return device_gate(device, meters, LOG.info, wait_s)


def _run(step, sync, meters: Callable, config: dict, images_per_step: int, idle_w: float):
    """(protocol result, meter description, start time): windows sized to this meter."""
    from joulebench.core.protocol import BoardState
    from joulebench.core.protocol import measure as run_protocol
    from joulebench.core.provenance import utc_now

    meter, reasons = meters()
    with meter:
        settings = ProtocolSettings.from_dict(config, meter_kind(meter))
        started = utc_now(precise=True)
        result = run_protocol(
            step, sync, meter, images_per_step=images_per_step, settings=settings,
            board=BoardState(idle_w),
        )  # fmt: skip
        return result, {**meter.describe(), "meter_reasons": reasons}, started


def callable_row(device: BoundDevice, known: dict, idle, result, info: dict, started: str) -> dict:
    """The profile row of a measured callable (`known`: its name and images per step): the
    protocol's columns, the device's and the software's; a simulated GPU's flagged so
    (FLAG_SIMULATED), as a profile row is."""
    import torch

    from joulebench.core.provenance import software, utc_now
    from joulebench.jobs.profile import gpu_fields, result_fields, setup_fields
    from joulebench.tables import fingerprint_of

    row = {
        "device_label": device.label,
        "device_pool": device.label,
        "torch_device": device.device,
        "device_name": device.name(),
        "is_simulated": device.simulated,
        "model": known["name"],
        "workload": CALLABLE,
        "batch_size_requested": known["images"],
        "batch_size": known["images"],
        "threads": torch.get_num_threads(),
        "status": "ok",
        "reason": "",
        "idle_power_pre_w": idle.power_w,
        "start_time_utc": started,
        "end_time_utc": utc_now(precise=True),
        **software(),
        **gpu_fields({}, info),
        **result_fields(result, info),
    }
    row["flags"] = join_flags(row["flags"], [FLAG_SIMULATED] if device.simulated else [])
    row["protocol_preset"] = known["preset"]
    row.update(setup_fields(row, info))
    row["protocol_fingerprint"] = fingerprint_of(row)
    return row


def profile(
    model: str | torch.nn.Module,
    example_input: torch.Tensor | WorkloadSpec | Mapping | tuple[int, ...] | None = None,
    *,
    device: str = "cpu",
    method: str = "fp32",
    batch_size: int = 1,
    preset: str = DEFAULT_PRESET,
    name: str | None = None,
    meter: str | None = None,
    input_kind: str = "random",
    allow_emulated: bool = False,
    threads: int | None = None,
    idle_s: float = IDLE_PRE_S,
    quiet_wait_s: float = QUIET_WAIT_S,
    **protocol: Any,
) -> Measurement:
    """Energy per image of a model's inference, measured as a profile job measures it (a
    fresh copy on the device, prepared for `method`, a synthetic batch of `batch_size`, the
    idle read, the protocol): `model` is a timm name, a workload entry (`file.py:function`)
    or a torch.nn.Module, whose input an example batch (N, C, H, W), image (C, H, W) or
    shape, or a WorkloadSpec, gives. Raises MeasurementError where it was not measured."""
    from joulebench.core.methods import PRESETS as METHODS
    from joulebench.jobs.adhoc import adhoc_profile
    from joulebench.jobs.job_spec import job_spec
    from joulebench.jobs.profile import ProfileJob

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; one of {sorted(METHODS)}")
    batch("batch_size", batch_size)
    _waits(idle_s, quiet_wait_s)
    threads_count(threads)
    if name is not None:
        workload_name(name)
    config = protocol_config(preset, protocol)
    label = measurable_device(device).label
    methods = {method: {**METHODS[method], "allow_emulated": allow_emulated}}
    study = {"methods": methods, "batch_sizes": [batch_size], "protocol": config}
    study["profile"] = adhoc_profile(
        meter=meter, input_kind=input_kind, idle_pre_s=idle_s, quiet_wait_s=quiet_wait_s
    )
    with _as_workload(model, example_input, name) as (model_name, workload):
        spec = job_spec(device, study, workload=workload)
        rows = _profile_rows(ProfileJob(model_name, label, spec, threads=threads))
    row = rows.iloc[0].to_dict()
    if row["status"] != "ok":
        where = f"{row['model']} {method} bs{batch_size} on {device}"
        raise MeasurementError(f"{where}: {row['status']}: {row['reason']}", row)
    return Measurement.from_row(row)


def _profile_rows(job):
    """The rows of a profile job (jobs.profile.ProfileJob) of one configuration, run in this
    process."""
    from joulebench.jobs.profile import run_profile

    return run_profile(job, log=LOG.info).rows


@contextlib.contextmanager
def _as_workload(model, example_input, name: str | None) -> Iterator[tuple[str, str | None]]:
    """(the name rows use, the workload entry or None for timm): a module object is held as
    a custom workload (catalog.workloads.hold) while it is measured."""
    import torch

    from joulebench.catalog.workloads import HELD, hold, is_workload, parse_entry, release

    if isinstance(model, str):
        if example_input is not None:
            raise ValueError(
                "example_input is for a module object: a timm model or a workload entry "
                "says its own input"
            )
        yield _one_model(model), (model if is_workload(model) else None)
        return
    if not isinstance(model, torch.nn.Module):
        raise ValueError(
            f"model must be a timm name, a workload entry or a torch.nn.Module, "
            f"got {type(model).__name__}"
        )
    key = hold(model, input_spec(model, example_input))
    try:
        entry = parse_entry(f"{name or type(model).__name__}={HELD}:{key}")
        yield entry.name, f"{entry.name}={entry.target}:{entry.function}"
    finally:
        release(key)


def _one_model(entry: str) -> str:
    """The exact name of a timm model or workload entry (a glob must name one)."""
    from joulebench.catalog.models import resolve_models
    from joulebench.safe_text import quantity

    names = resolve_models([entry])
    if len(names) != 1:
        raise ValueError(f"model {entry!r} names {quantity(len(names), 'model')}; give one")
    return names[0]


def input_spec(model, example) -> WorkloadSpec:
    """A module's input: a WorkloadSpec (or its dict) as given, else one image's shape from
    an example batch (N, C, H, W), an image (C, H, W) or a shape; the classes from the
    module's `num_classes` (1 where it has none: inference never uses them)."""
    from joulebench.catalog.workloads import WorkloadSpec

    if example is None:
        raise ValueError(
            "a module needs example_input: a batch (N, C, H, W), an image (C, H, W), its "
            "shape, or a spec {'input_size': (C, H, W), 'num_classes': N}"
        )
    if isinstance(example, WorkloadSpec | Mapping):
        return WorkloadSpec.from_value(dict(example) if isinstance(example, Mapping) else example)
    shape = tuple(getattr(example, "shape", example))
    if len(shape) == 4:
        shape = shape[1:]
    classes = getattr(model, "num_classes", None)
    classes = classes if isinstance(classes, int) and classes > 0 else 1
    if len(shape) != 3:
        raise ValueError(f"example_input must be (N, C, H, W) or (C, H, W), got shape {shape}")
    return WorkloadSpec(tuple(int(v) for v in shape), classes)
