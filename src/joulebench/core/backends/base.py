"""What every kind of device provides (the Backend interface), and the records it answers with.

A backend owns one kind of device: the device strings it serves (`cpu`, `cuda:N`, ...), how
its devices are found and named, why one cannot be measured (and the command that fixes
it), how a job is pinned to one device, and how a device string is bound once into the
object a job asks (`bind`: its meter, where the model runs, how work on it is synchronised
and its memory freed, the runtimes' execution providers, its knobs, the state `joulebench
check` reports; core.backends.bound). Code above the backends asks them; it never tests a
device string (tests/test_package.py). Modelled on Zeus's zeus/device/gpu (an ABC per vendor,
`get_gpus()` picking one); adding a kind is one module (docs/devices.md).

`Libraries` carries the libraries a backend reads the machine through (torch, pynvml,
amdsmi; the CPU's flags file), loaded on first use; tests pass fakes.
"""

from __future__ import annotations

import abc
import re
import sys
from dataclasses import dataclass, field

# Words of product names that say nothing about the GPU.
_VENDOR_WORDS = {"nvidia", "geforce", "tesla", "quadro", "amd", "instinct", "radeon"}


class DeviceError(ValueError):
    """A device cannot be measured here, or is no device joulebench knows; the message says
    which and what to do (one line, no traceback)."""


@dataclass
class Libraries:
    """torch, pynvml and amdsmi as a backend reads them; None: imported when first needed.
    `rocm` forces (True/False) whether torch's cuda devices are AMD GPUs."""

    torch: object = None
    nvml: object = None
    amdsmi: object = None
    rocm: bool | None = None
    cpuinfo: str | None = None  # the CPU's flags file (None: /proc/cpuinfo, backends.cpu)
    environ: dict | None = None  # the environment a backend reads (None: os.environ)

    def get_torch(self):
        if self.torch is None:
            import torch

            self.torch = torch
        return self.torch

    def get_nvml(self):
        """pynvml; MeterUnavailable when nvidia-ml-py is not installed."""
        if self.nvml is None:
            from joulebench.core.meters.nvml import load_pynvml

            self.nvml = load_pynvml()
        return self.nvml

    def get_amdsmi(self):
        """amdsmi; MeterUnavailable when it is not installed (or ROCm's library is missing)."""
        if self.amdsmi is None:
            from joulebench.core.meters.amdsmi import load_amdsmi

            self.amdsmi = load_amdsmi()
        return self.amdsmi

    def is_rocm(self) -> bool:
        """Whether torch is a ROCm build (torch.version.hip): its cuda devices are AMD's."""
        if self.rocm is not None:
            return self.rocm
        torch = self.torch or sys.modules.get("torch") or self.get_torch()
        return bool(getattr(getattr(torch, "version", None), "hip", None))


@dataclass
class DeviceIdentity:
    """One device as its backend finds it. `device` is the string a study names it by
    (`cuda:1`); `ordinal` its position among the devices of its kind as torch numbers them;
    `index` the management library's own index (NVML's, AMD SMI's), which is not torch's."""

    device: str
    name: str
    uuid: str | None = None
    bus_id: str | None = None
    ordinal: int = 0
    index: int | None = None
    serial: str | None = None


@dataclass
class DeviceInfo:
    """What `joulebench devices` prints for one device."""

    label: str
    device: str  # the device string (`cuda:1`)
    name: str = ""
    meter: str = ""  # the meter a job would use; empty when none can read this device
    not_better: list[str] = field(default_factory=list)  # why a better meter is not used
    problems: list[str] = field(default_factory=list)  # why it cannot be measured at all
    is_host: bool = False  # the host's CPU (it measures alone)
    precisions: NativePrecisions | None = None  # what it runs natively; None: not known


@dataclass
class DeviceState:
    """A device's settings and state that change (or invalidate) what is measured, as
    `joulebench check` reports them. None: this device or driver does not report it.
    `fixes` maps a field to the command that sets it as a study wants it."""

    device_name: str | None = None
    driver_version: str | None = None
    library: str = ""  # the management library and its version, e.g. "NVML 12.570"
    persistence_mode: bool | None = None
    power_limit_w: float | None = None
    default_power_limit_w: float | None = None
    power_limit_range_w: tuple[float, float] | None = None  # what a limit may be set to
    app_clock_mhz: int | None = None  # application (target) SM clock
    default_app_clock_mhz: int | None = None
    ecc: bool | None = None
    partitioned: bool | None = None  # MIG on, or an AMD compute/memory partition
    partition_name: str = "MIG"
    temperature_c: float | None = None
    energy_counter: bool = True  # a hardware energy counter (else the integrated trace)
    energy_source: str = ""  # the counter's function, or how energy is had without one
    power_fields: list[str] = field(default_factory=list)  # trace power columns read
    instant_power: bool = True  # the trace reads instant power (not a 1 s average)
    power_source: str = ""
    fixes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NativePrecisions:
    """The precisions a device computes in its own hardware (`native`), and why each other
    one is only emulated there (converted to and from fp32: slower, and its energy says
    nothing of the precision). What was read to decide is in `basis`."""

    native: tuple[str, ...]
    why_not: dict[str, str] = field(default_factory=dict)  # precision -> why it is emulated
    basis: str = ""  # e.g. "the flags of /proc/cpuinfo", "compute capability 7.0"

    def emulated(self, precision: str) -> bool:
        return precision not in self.native


def short_gpu_name(name: str) -> str:
    """'NVIDIA H200' -> 'h200', 'NVIDIA GeForce RTX 4090' -> 'rtx4090',
    'NVIDIA A100-SXM4-80GB' -> 'a100': the words up to the first with a digit."""
    words = [w for w in re.split(r"[\s\-_]+", name.lower()) if w and w not in _VENDOR_WORDS]
    kept = []
    for word in words:
        kept.append(word)
        if any(c.isdigit() for c in word):
            break
    short = re.sub(r"[^a-z0-9]", "", "".join(kept))
    return short or "gpu"


class KnobRefused(Exception):
    """A device setting (power limit, locked clock) cannot be set here: the message says
    why and how to fix it (a permission, a value outside the board's range)."""


class KnobControl(abc.ABC):
    """The settings of one device that a method may ask for (docs/power.md), as its
    management library sets and reads them. `uuid` names the device across processes (the
    record a killed job leaves is found by it). Setting calls raise KnobRefused."""

    uuid: str = ""

    @abc.abstractmethod
    def power_limit_w(self) -> float:
        """The power limit in force, in watts."""

    @abc.abstractmethod
    def default_power_limit_w(self) -> float:
        """The board's default limit: `power_limit` fractions are of this."""

    @abc.abstractmethod
    def power_limit_range_w(self) -> tuple[float, float]:
        """The lowest and highest limit the board accepts, in watts."""

    @abc.abstractmethod
    def set_power_limit_w(self, watts: float) -> None:
        """Set the power limit (the board's own range is the caller's check)."""

    @abc.abstractmethod
    def sm_clock_mhz(self, preset: str | None = None) -> float:
        """The SM clock now, or a named one: `max` (highest supported), `base` (default
        application clock)."""

    @abc.abstractmethod
    def lock_sm_clock_mhz(self, mhz: int) -> None:
        """Lock the SM clock at `mhz`."""

    @abc.abstractmethod
    def reset_sm_clock(self) -> None:
        """Undo a lock: the board picks its clocks again."""

    def close(self) -> None:  # noqa: B027 (optional: a control may hold nothing to release)
        """Release the management library (the settings stay as they are)."""


class Backend(abc.ABC):
    """One kind of device. Class attributes say what the kind is; methods take a device
    string (one of `pattern`'s) only where a study's string is read (finding, naming,
    describing and pinning devices) and `bind` it into a device of `device_class`, which
    is what measures, runs work and sets knobs (core.backends.bound)."""

    #: short name of the kind: "cpu", "cuda", "rocm", "sim"
    kind: str = ""
    #: regex (without anchors) of the device strings served; the schema's pattern joins them
    pattern: str = ""
    #: how a user writes them, for messages: ("cuda", "cuda:N")
    spellings: tuple[str, ...] = ()
    #: meters that can read this kind, best first (the first is the default)
    meters: tuple[str, ...] = ()
    #: which part of the node the device's own reading is (meters.node): "gpu" or "cpu"
    node_part: str = "gpu"
    #: the host's CPU: it measures alone (every measuring slot and core) and is its own host
    is_host: bool = False
    #: `devices: auto` picks devices of this kind (in registration order)
    auto: bool = False
    #: simulated: rows say is_simulated and are never scored; listed only when asked
    simulated: bool = False
    #: a `joulebench check` report's measured sensor refresh period sizes this kind's windows
    uses_check_refresh: bool = False
    #: runtimes beyond PyTorch and ONNX Runtime that build for this kind (torch-tensorrt)
    native_runtimes: tuple[str, ...] = ()
    #: the model runs on a torch GPU (CUDA or ROCm): TF32, cuDNN autotuning and CUDA graphs
    #: apply there (core.arithmetic, core.cuda_graphs); a simulated GPU's runs on the CPU
    runs_on_gpu: bool = False
    #: the class of this kind's bound devices (core.backends.bound.BoundDevice's)
    device_class: type = None  # type: ignore[assignment]

    def claims(self, device: str, libs: Libraries) -> bool:
        """Whether this backend serves `device` here, when several serve its spelling (cuda
        strings are NVIDIA's or, on a ROCm build of torch, AMD's)."""
        return True

    # -- finding and naming devices

    @abc.abstractmethod
    def discover(self, libs: Libraries) -> tuple[list[DeviceIdentity], str]:
        """The devices of this kind that can be measured here, and, when none, why."""

    def label(self, identity: DeviceIdentity) -> str:
        """The label `devices: auto` gives a device: short name and ordinal (`h200-0`)."""
        return f"{short_gpu_name(identity.name)}-{identity.ordinal}"

    def pool_key(self, identity: DeviceIdentity) -> str:
        """What groups identical devices of a host into one pool: the product name."""
        return identity.name

    def pool_label(self, identity: DeviceIdentity) -> str:
        """The label `devices: auto` gives a pool of devices like this one (`h200`)."""
        return short_gpu_name(identity.name)

    def pool_member(self, device: str, libs: Libraries) -> DeviceIdentity:
        """The device as a pool leases it: its UUID (the lease's key), the management
        library's index and serial where known. Default: the device string alone."""
        return DeviceIdentity(device, "")

    def canonical(self, device: str) -> str:
        """The one spelling of `device` (`cuda` -> `cuda:0`): report file names use it."""
        return device

    def sibling(self, device: str, ordinal: int) -> str:
        """The device string of device `ordinal` of a node with several like `device`."""
        return device

    @abc.abstractmethod
    def describe(
        self, label: str, device: str, libs: Libraries, meter_options: dict | None = None
    ) -> DeviceInfo:
        """Its name, the meter a job would use and why a better one is not, or why it
        cannot be measured at all (problems, each naming the device and the fix)."""

    def problems(self, label: str, device: str, libs: Libraries) -> list[str]:
        """Why `device` cannot be measured here, one line each; [] when it can."""
        return self.describe(label, device, libs).problems

    # -- binding: the one object a job asks from here on

    def bind(self, device: str, label: str = "", libs: Libraries | None = None):
        """`device` bound once (a BoundDevice of this kind's `device_class`), holding what
        it is read and driven through; `label`: the study's name for it."""
        return self.device_class(self, device, label, libs)

    # -- pinning a job to one device (before torch starts)

    def pin_value(self, device: str, libs: Libraries) -> str | None:
        """What pins a job to this device (`GPU-<uuid>` for CUDA_VISIBLE_DEVICES), or None."""
        return None

    def pin(self, device: str, value: str, env) -> str:
        """Apply `pin_value` to the job's environment; returns the device the job then uses."""
        return device
