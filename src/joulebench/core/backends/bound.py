"""One device bound once: an object that holds what it is read and driven through.

`bound_device("cuda:1", label)` (the registry's answer for a device string) asks the
device's backend to bind it (`Backend.bind`), once per job; the backend answers with its
own kind of BoundDevice (`CudaDevice`, `SimDevice`, ...), which holds the device's state:
its torch device, its management library and knob control, a simulated GPU's board. Code
below the job asks that object (`device.sync()`, `device.meter()`, `device.knob_control()`)
and never passes a device string again, as Zeus hands out `NVIDIAGPU(index)` objects that
take their NVML handle once. The string stays on the object as the device's name: the rows'
`torch_device`, the check report's file name, messages.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable
from functools import cached_property

from joulebench.core.backends.base import Backend, DeviceError, DeviceState, Libraries
from joulebench.core.backends.registry import backend_for, host_backend

HOST_OPTIONS = ("root", "read", "tdp_w", "idle_w")  # the host meter's (RAPL, the estimate)


class BoundDevice:
    """One device of a kind, bound once. The defaults are a device with nothing to wait for
    or free (the CPU's); each kind's class overrides what its devices hold and do."""

    def __init__(
        self, backend: Backend, device: str, label: str = "", libs: Libraries | None = None
    ):
        self.backend = backend
        self.device = device  # the string the study names it by (`cuda:1`, `sim:h100:0`)
        self.label = label  # the study's label (a `sim:` board is one per label and process)
        self.libs = libs or Libraries()  # the libraries it is read through (fakes in tests)

    def __str__(self) -> str:
        return self.device

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.device!r}, label={self.label!r})"

    def __eq__(self, other) -> bool:
        same = (type(self), self.backend, self.device, self.label)
        return isinstance(other, BoundDevice) and same == (
            type(other), other.backend, other.device, other.label
        )  # fmt: skip

    def __hash__(self) -> int:
        return hash((type(self), self.device, self.label))

    # -- what the kind is (its backend's class attributes)

    @property
    def kind(self) -> str:
        return self.backend.kind

    @property
    def is_host(self) -> bool:
        return self.backend.is_host

    @property
    def simulated(self) -> bool:
        return self.backend.simulated

    @property
    def runs_on_gpu(self) -> bool:
        return self.backend.runs_on_gpu

    @property
    def native_runtimes(self) -> tuple[str, ...]:
        return self.backend.native_runtimes

    # -- where torch runs the model

    @property
    def compute(self) -> BoundDevice:
        """Where torch runs the model: this device (a simulated GPU's is the CPU)."""
        return self

    @cached_property
    def tensor_device(self):
        """The torch.device tensors of the model go to, made once."""
        import torch

        return torch.device(self.device)

    @property
    def torch_type(self) -> str:
        """torch's device type (`cuda`, `cpu`), as torch.device(...).type."""
        return self.tensor_device.type

    # -- naming and measuring

    def name(self) -> str:
        """The device's product name for provenance (`device_name` in every row)."""
        return self.device

    def meter(self, *, prefer: str | None = None, **options) -> tuple[object, list[str]]:
        """(a fresh meter of the device, reasons the better meters were not used). `prefer`
        forces one of the kind's meters and never falls back; options go to the meters
        that accept them (meters.registry: uuid=, sample_interval_s=, root=, tdp_w=...)."""
        from joulebench.core.meters.registry import METERS, unknown_options

        if prefer is not None and prefer not in METERS:
            raise ValueError(f"prefer must be one of {sorted(METERS)}, not {prefer!r}")
        if unknown_options(options):
            raise TypeError(f"no meter takes the option(s) {unknown_options(options)}")
        self.check_prefer(prefer)
        return self.build_meter(prefer, **options)

    def build_meter(self, prefer: str | None, **options) -> tuple[object, list[str]]:
        """The kind's meter factory (meter() has checked `prefer` and the options)."""
        raise DeviceError(f"{self.device} has no meter (kind {self.kind})")

    def check_prefer(self, prefer: str | None) -> None:
        """DeviceError unless `prefer` is None or a meter of this kind."""
        meters = self.backend.meters
        if prefer is not None and prefer not in meters:
            raise DeviceError(
                f"device {self.device!r} is measured with {' or '.join(meters)}, not {prefer!r}"
            )

    def node_meter(self, *, prefer: str | None = None, concurrent=lambda: 1, **options):
        """(the device's meter with the host's beside it, reasons). The host's CPU is its
        own host meter (in the contention guard: other busy processes share what it reads);
        any other device's host is RAPL, else the labelled estimate, with the reason."""
        from joulebench.core.meters.base import MeterUnavailable
        from joulebench.core.meters.contention import ContentionGuard
        from joulebench.core.meters.node import NodeMeter

        meter, reasons = self.meter(prefer=prefer, **options)
        part = self.backend.node_part
        if self.is_host:
            reason = "; ".join(reasons)  # why RAPL was not used, on the CPU part too
            return NodeMeter(ContentionGuard(meter), part, host_reason=reason,
                             concurrent=concurrent), reasons  # fmt: skip
        host_options = {k: v for k, v in options.items() if k in HOST_OPTIONS}
        host = host_backend()
        try:
            host_meter, host_reasons = host.bind(host.kind).meter(**host_options)
        except MeterUnavailable as err:  # a forced meter that cannot read: no host part
            host_meter, host_reasons = None, [f"{err.reason}: {err}"]
        node = NodeMeter(meter, part, host_meter, host_reason="; ".join(host_reasons),
                         concurrent=concurrent)  # fmt: skip
        return node, reasons

    def meter_options_from_check(self, report: dict | None) -> dict:
        """Meter options from the device's latest `joulebench check` report: its measured
        sensor refresh period, where the kind's windows are sized by it."""
        refresh = (report or {}).get("protocol", {}).get("sensor_refresh_s")
        return {"refresh_s": float(refresh)} if self.backend.uses_check_refresh and refresh else {}

    def native_precisions(self):
        """The precisions the device runs natively, and why not the others (core.emulation
        skips methods of those); None: not known here, and every method is measured."""
        return None

    # -- running work on it

    def open_context(self) -> None:
        """Bring the device to the state jobs measure it in (a CUDA context) before idle."""
        return None

    def sync(self) -> None:
        """Wait until the work queued on the device is done (windows open and close after)."""
        return None

    def free_memory(self) -> None:
        """Free what a finished configuration left (and the device's cached memory)."""
        gc.collect()

    def wrap_step(self, step: Callable[[], object]) -> Callable:
        """The protocol's step as this device runs it (a simulated board draws while it runs)."""
        return step

    def busy_fraction(self, step, sync, step_s: float) -> float:
        """The share of a step (as wrap_step made it, about `step_s` long) during which the
        device executes kernels, traced outside the windows (core.host_bound); NaN where
        that does not apply (a CPU)."""
        return math.nan

    def grad_scaler_device(self) -> str | None:
        """The torch device type whose GradScaler fp16 training uses here; None: unscaled."""
        return None

    # -- runtimes (ONNX Runtime)

    def onnx_device(self) -> tuple[str, int] | None:
        """ONNX Runtime's device name and index where inputs and outputs stay bound
        (IOBinding), e.g. ("cuda", 0); None: in host memory."""
        return None

    def execution_providers(self, runtime: str, precision: str, engines_dir: str) -> list:
        """ONNX Runtime's providers for `runtime` here, best first; DeviceError with the
        reason when this device has none for it."""
        from joulebench.core.methods import ORT_TENSORRT

        if runtime == ORT_TENSORRT:
            raise DeviceError(f"TensorRT runs on CUDA devices only, not {self.device}")
        return ["CPUExecutionProvider"]

    # -- settings a method may ask for (docs/power.md), and joulebench check

    def knob_control(self):
        """The device's KnobControl, or None where its kind has no power limit or clock to
        set (a CPU); KnobRefused where it has, but they cannot be reached here."""
        return None

    def check_target(self, prefer: str | None = None):
        """What `joulebench check` drives on this device, as the job's own board (label)."""
        raise DeviceError(f"joulebench check cannot drive {self.device} (kind {self.kind})")

    def state(self, meter) -> DeviceState:
        """The device's settings and state, read through `meter`'s management library."""
        return DeviceState()


def bound_device(
    device: str, label: str = "", libs: Libraries | None = None, prefer: str | None = None
) -> BoundDevice:
    """The device `device` names, bound by the backend that serves it here (DeviceError for
    a string none serves); `prefer`: a forced meter, which picks among backends sharing a
    spelling (registry.backend_for)."""
    return backend_for(device, libs, prefer).bind(device, label, libs)
