"""One device bound once: its backend and its string, asked without the string again.

`bound_device("cuda:1", label)` (the registry's answer for a device string) is made once per
job; code below the job asks it (`device.sync()`, `device.knob_control()`) instead of
finding the backend again and passing the string on, as Zeus hands out `GPU(index)` and
never passes the index again. Every method forwards to the backend's, which keeps the
device string argument (a backend is one stateless object per kind).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from joulebench.core.backends.base import Backend, Libraries
from joulebench.core.backends.registry import backend_for


@dataclass(frozen=True)
class BoundDevice:
    """A device string with the backend that serves it, and the study's label for it."""

    backend: Backend
    device: str  # the string the study names it by (`cuda:1`, `sim:h100:0`)
    label: str = ""  # the study's label (a `sim:` board is one per label and process)

    def __str__(self) -> str:
        return self.device

    # -- what the kind is

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

    @property
    def compute(self) -> BoundDevice:
        """Where torch runs the model: this device, or the CPU for a simulated GPU."""
        device = self.backend.compute_device(self.device)
        return self if device == self.device else bound_device(device, self.label)

    @property
    def torch_type(self) -> str:
        """torch's device type of the string (`cuda`, `cpu`), as torch.device(...).type."""
        import torch

        return torch.device(self.device).type

    # -- naming, measuring, settings: the backend's, for this device

    def name(self, libs: Libraries | None = None) -> str:
        return self.backend.name(self.device, libs)

    def canonical(self) -> str:
        return self.backend.canonical(self.device)

    def meter(self, *, prefer: str | None = None, libs: Libraries | None = None, **options):
        return self.backend.meter(self.device, prefer=prefer, label=self.label, libs=libs,
                                  **options)  # fmt: skip

    def open_context(self, libs: Libraries | None = None) -> None:
        return self.backend.open_context(self.device, libs)

    def sync(self) -> None:
        return self.backend.sync(self.device)

    def free_memory(self) -> None:
        return self.backend.free_memory(self.device)

    def wrap_step(self, step: Callable[[], object]) -> Callable:
        return self.backend.wrap_step(self.device, self.label, step)

    def busy_fraction(self, step, sync, step_s: float) -> float:
        return self.backend.busy_fraction(self.device, step, sync, step_s)

    def grad_scaler_device(self) -> str | None:
        return self.backend.grad_scaler_device(self.device)

    def onnx_device(self) -> tuple[str, int] | None:
        return self.backend.onnx_device(self.device)

    def execution_providers(self, runtime: str, precision: str, engines_dir: str) -> list:
        return self.backend.execution_providers(self.device, runtime, precision, engines_dir)

    def native_precisions(self, libs: Libraries | None = None):
        return self.backend.native_precisions(self.device, libs or Libraries())

    def knob_control(self, libs: Libraries | None = None):
        """The device's KnobControl (None: its kind has none; KnobRefused: unreachable)."""
        return self.backend.knob_control(self.device, self.label, libs)

    def meter_options_from_check(self, report: dict | None) -> dict:
        return self.backend.meter_options_from_check(report)

    def check_target(self, prefer: str | None = None, libs: Libraries | None = None):
        """What `joulebench check` drives on this device, as the job's own board (label)."""
        return self.backend.check_target(self.device, prefer, libs, label=self.label)

    def state(self, meter):
        return self.backend.state(meter)


def bound_device(
    device: str, label: str = "", libs: Libraries | None = None, prefer: str | None = None
) -> BoundDevice:
    """The device `device` names, bound to the backend that serves it here (DeviceError for
    a string none serves); `prefer`: a forced meter, which picks among backends sharing a
    spelling (registry.backend_for)."""
    return BoundDevice(backend_for(device, libs, prefer), device, label)
