"""Device backends: one module per kind of device, and the registry that finds them.

`base` is the interface every kind implements (Backend: discover, describe, pin, bind)
and the records it answers with; `bound` is a device bound once (BoundDevice: meter, the
node's meter, sync, free memory, execution providers, knobs, check target and state), each
kind's own class holding what it is read through; `registry` says which backend serves a
device string (loaded by module name, as entry points are); `select` a string's meter. The kinds:
`cpu` (RAPL, else the estimate), `cuda` (NVIDIA, NVML), `rocm` (AMD, AMD SMI), and `sim`
(simulated GPUs: joulebench.sim.backend, loaded by name for tests, never imported).
`torch_gpu` is what cuda and rocm share. `bound_device(string, label)` binds a device once:
what a job holds and code below it asks. Adding a kind:
docs/devices.md. The map of the package: docs/design.md.
"""

from joulebench.core.backends.base import (
    Backend,
    DeviceError,
    DeviceIdentity,
    DeviceInfo,
    DeviceState,
    KnobControl,
    KnobRefused,
    Libraries,
    NativePrecisions,
)
from joulebench.core.backends.bound import BoundDevice, bound_device
from joulebench.core.backends.registry import (
    backend_for,
    backends,
    device_pattern,
    host_backend,
    kind_of,
    meter_names,
    register,
    spellings,
    unregister,
)
from joulebench.core.backends.select import select_meter

__all__ = [
    "Backend",
    "BoundDevice",
    "DeviceError",
    "DeviceIdentity",
    "DeviceInfo",
    "DeviceState",
    "KnobControl",
    "KnobRefused",
    "Libraries",
    "NativePrecisions",
    "backend_for",
    "backends",
    "bound_device",
    "device_pattern",
    "host_backend",
    "kind_of",
    "meter_names",
    "register",
    "select_meter",
    "spellings",
    "unregister",
]
