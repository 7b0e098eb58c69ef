"""A fake of the pynvml module (nvidia-ml-py) with smooth power, for the NVML meter's API tests.

The parts every fake driver shares (constants, the NVMLError hierarchy, device identity, PCI
info as bytes, MIG and process queries, NVMLError_Uninitialized before nvmlInit) come from
joulebench.sim.fake_pynvml.NvmlModule. Here a FakeGpu's power is any function of time
and its energy counter the exact integral of that power (in whole mJ, from an arbitrary offset,
as the real one counts since the driver loaded), so counter-vs-trace arithmetic can be checked
exactly. The per-generation sensor behaviour (refresh period, averaging window) is
joulebench.sim's job, not this fake's. Pass a clock (e.g. ManualClock) for
deterministic time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

from joulebench.sim.fake_pynvml import (  # noqa: F401 (re-exported for the tests)
    NVML_CLOCK_GRAPHICS,
    NVML_CLOCK_MEM,
    NVML_CLOCK_SM,
    NVML_DEVICE_MIG_DISABLE,
    NVML_DEVICE_MIG_ENABLE,
    NVML_ERROR_INVALID_ARGUMENT,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_FI_DEV_POWER_AVERAGE,
    NVML_FI_DEV_POWER_INSTANT,
    NVML_TEMPERATURE_GPU,
    NVMLError,
    NvmlModule,
    field_record,
)


class ManualClock:
    """A clock that moves only when told to: time.monotonic's stand-in for deterministic tests."""

    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


@dataclass
class FakeGpu:
    """One physical GPU as NVML would describe it."""

    uuid: str = "GPU-2b0f5a3e-7c1d-4e8a-9b6f-0d1c2e3f4a5b"
    pci_bus_id: str = "00000000:3B:00.0"  # NVML's 8-digit-domain form
    name: str = "NVIDIA H200"
    power_w: Callable[[float], float] = lambda t: 250.0
    energy_counter: bool = True  # False: pre-Volta, nvmlDeviceGetTotalEnergyConsumption unsupported
    power_fields: bool = True  # False: driver without NVML_FI_DEV_POWER_INSTANT / _AVERAGE
    sensors: bool = True  # False: clocks, temperature, utilisation all raise NotSupported
    processes: list[int] | None = field(default_factory=list)  # compute pids; None: NoPermission
    mig_mode: int | None = NVML_DEVICE_MIG_DISABLE  # None: not MIG-capable (NotSupported)
    power_limit_mw: int = 700_000
    sm_clock_mhz: int = 1980
    mem_clock_mhz: int = 3201
    temperature_c: int = 41
    utilization_pct: int = 97
    energy_offset_mj: int = 987_654_321  # counter value when the fake driver "loaded"
    compute_capability: tuple[int, int] = (9, 0)  # torch's props.major/minor (H200's)
    serial: str | None = None  # nvmlDeviceGetSerial's answer; None: NotSupported

    def compute_pids(self) -> list[int] | None:
        return None if self.processes is None else list(self.processes)


def integrate(power_w: Callable[[float], float], a: float, b: float, step_s: float = 1e-3) -> float:
    """Joules of power_w over [a, b], trapezoid rule on a fine grid (the fake's ground truth)."""
    if b <= a:
        return 0.0
    n = max(1, math.ceil((b - a) / step_s))
    h = (b - a) / n
    inner = sum(power_w(a + i * h) for i in range(1, n))
    return h * (inner + (power_w(a) + power_w(b)) / 2)


class FakeNvml(NvmlModule):
    """An instance is a pynvml-like module: pass it as `nvml=` to the meter."""

    def __init__(self, gpus: list[FakeGpu], *, clock: Callable[[], float] = time.monotonic, **kw):
        super().__init__(gpus, clock=clock, **kw)
        self.gpus = gpus
        t = clock()
        self._energy = [(t, 0.0) for _ in gpus]  # (time of last update, joules since load)

    def _energy_j(self, index: int) -> float:
        """Advance GPU `index`'s energy integral to now (monotonic, like the hardware counter)."""
        t_last, joules = self._energy[index]
        now = self.clock()
        joules += integrate(self.gpus[index].power_w, t_last, now)
        self._energy[index] = (max(now, t_last), joules)
        return joules

    # --- power and energy ---

    def nvmlDeviceGetPowerUsage(self, handle) -> int:
        gpu = self._dev(handle, "nvmlDeviceGetPowerUsage")
        return int(round(gpu.power_w(self.clock()) * 1000))  # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, handle) -> int:
        gpu = self._dev(handle, "nvmlDeviceGetTotalEnergyConsumption")
        if not gpu.energy_counter:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return gpu.energy_offset_mj + int(self._energy_j(handle.index) * 1000)  # mJ

    def nvmlDeviceGetFieldValues(self, handle, fieldIds):
        """A list of c_nvmlFieldValue_t-like records; unsupported fields fail one by one."""
        gpu = self._dev(handle, "nvmlDeviceGetFieldValues")
        now = self.clock()
        out = []
        for field_id in fieldIds:
            value = None
            if gpu.power_fields and field_id == NVML_FI_DEV_POWER_INSTANT:
                value = int(round(gpu.power_w(now) * 1000))
            elif gpu.power_fields and field_id == NVML_FI_DEV_POWER_AVERAGE:
                value = int(round(integrate(gpu.power_w, now - 1.0, now, 0.01) * 1000))
            out.append(field_record(field_id, now, value))
        return out

    # --- sensors ---

    def _sensor(self, fn: str, handle) -> FakeGpu:
        gpu = self._dev(handle, fn)
        if not gpu.sensors:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return gpu

    def nvmlDeviceGetClockInfo(self, handle, type):  # noqa: A002 (pynvml's parameter name)
        gpu = self._sensor("nvmlDeviceGetClockInfo", handle)
        clocks = {
            NVML_CLOCK_GRAPHICS: gpu.sm_clock_mhz,
            NVML_CLOCK_SM: gpu.sm_clock_mhz,
            NVML_CLOCK_MEM: gpu.mem_clock_mhz,
        }
        if type not in clocks:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return clocks[type]

    def nvmlDeviceGetTemperature(self, handle, sensor):
        gpu = self._sensor("nvmlDeviceGetTemperature", handle)
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return gpu.temperature_c

    def nvmlDeviceGetUtilizationRates(self, handle):
        gpu = self._sensor("nvmlDeviceGetUtilizationRates", handle)
        return SimpleNamespace(gpu=gpu.utilization_pct, memory=gpu.utilization_pct // 2)
