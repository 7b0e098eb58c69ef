"""A fake of the pynvml module (nvidia-ml-py) for tests on machines without an NVIDIA GPU.

It mirrors the real module where the meter touches it: function names and signatures, return
types (str from name/UUID/version getters, bytes in the PCI info struct, [current, pending]
from nvmlDeviceGetMigMode, field values with per-field nvmlReturn), units (mW, mJ), the
NVMLError class hierarchy with value-mapped subclasses, and NVMLError_Uninitialized before
nvmlInit. Each FakeNvml instance is an independent "driver", so tests do not share state.

A FakeGpu's power is a function of time; its energy counter is the integral of that power
(in whole mJ, from an arbitrary offset, as the real one counts since the driver loaded).
Pass a clock (e.g. ManualClock) to make time, and so energy, deterministic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

# --- constants, with the values of pynvml ---
NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1

NVML_VALUE_TYPE_DOUBLE = 0
NVML_VALUE_TYPE_UNSIGNED_INT = 1
NVML_FI_DEV_POWER_AVERAGE = 185
NVML_FI_DEV_POWER_INSTANT = 186


class NVMLError(Exception):
    """Like pynvml.NVMLError: NVMLError(value) returns the subclass for that error code."""

    _value_class: dict[int, type] = {}
    _strings = {
        NVML_ERROR_UNINITIALIZED: "Uninitialized",
        NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
        NVML_ERROR_NOT_SUPPORTED: "Not Supported",
        NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
        NVML_ERROR_NOT_FOUND: "Not Found",
        NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
        NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    }

    def __new__(cls, value=None):
        if cls is NVMLError:
            cls = NVMLError._value_class.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value if value is not None else cls._code
        return obj

    def __init__(self, value=None):
        super().__init__(self.value)

    def __str__(self):
        return self._strings.get(self.value, f"NVML Error with code {self.value}")


def _error_class(name: str, code: int) -> type:
    cls = type(name, (NVMLError,), {"_code": code})
    NVMLError._value_class[code] = cls
    return cls


NVMLError_Uninitialized = _error_class("NVMLError_Uninitialized", NVML_ERROR_UNINITIALIZED)
NVMLError_InvalidArgument = _error_class("NVMLError_InvalidArgument", NVML_ERROR_INVALID_ARGUMENT)
NVMLError_NotSupported = _error_class("NVMLError_NotSupported", NVML_ERROR_NOT_SUPPORTED)
NVMLError_NoPermission = _error_class("NVMLError_NoPermission", NVML_ERROR_NO_PERMISSION)
NVMLError_NotFound = _error_class("NVMLError_NotFound", NVML_ERROR_NOT_FOUND)
NVMLError_DriverNotLoaded = _error_class("NVMLError_DriverNotLoaded", NVML_ERROR_DRIVER_NOT_LOADED)
NVMLError_LibraryNotFound = _error_class("NVMLError_LibraryNotFound", NVML_ERROR_LIBRARY_NOT_FOUND)


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


class _Handle:
    """Stands in for pynvml's opaque c_nvmlDevice_t pointer."""

    def __init__(self, index: int):
        self.index = index

    def __repr__(self):
        return f"<fake nvmlDevice {self.index}>"


def integrate(power_w: Callable[[float], float], a: float, b: float, step_s: float = 1e-3) -> float:
    """Joules of power_w over [a, b], trapezoid rule on a fine grid (the fake's ground truth)."""
    if b <= a:
        return 0.0
    n = max(1, math.ceil((b - a) / step_s))
    h = (b - a) / n
    inner = sum(power_w(a + i * h) for i in range(1, n))
    return h * (inner + (power_w(a) + power_w(b)) / 2)


class FakeNvml:
    """An instance is a pynvml-like module: pass it as `nvml=` to the meter."""

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        clock: Callable[[], float] = time.monotonic,
        driver_loaded: bool = True,
        driver_version: str = "570.124.06",
    ):
        self.gpus = gpus
        self.clock = clock
        self.driver_loaded = driver_loaded
        self.driver_version = driver_version
        self.refcount = 0  # nvmlInit / nvmlShutdown pairs, as the real library counts them
        self.calls: dict[str, int] = {}
        t = clock()
        self._energy = [(t, 0.0) for _ in gpus]  # (time of last update, joules since load)

    # --- helpers ---

    def _check(self, fn: str) -> None:
        self.calls[fn] = self.calls.get(fn, 0) + 1
        if self.refcount <= 0:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def _gpu(self, handle) -> FakeGpu:
        if not isinstance(handle, _Handle) or not 0 <= handle.index < len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[handle.index]

    def _energy_j(self, index: int) -> float:
        """Advance GPU `index`'s energy integral to now (monotonic, like the hardware counter)."""
        t_last, joules = self._energy[index]
        now = self.clock()
        joules += integrate(self.gpus[index].power_w, t_last, now)
        self._energy[index] = (max(now, t_last), joules)
        return joules

    # --- init / system ---

    def nvmlInit(self):
        if not self.driver_loaded:
            raise NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND)
        self.refcount += 1

    def nvmlShutdown(self):
        self._check("nvmlShutdown")
        self.refcount -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._check("nvmlSystemGetDriverVersion")
        return self.driver_version

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._check("nvmlSystemGetNVMLVersion")
        return "12." + self.driver_version

    # --- devices ---

    def nvmlDeviceGetCount(self) -> int:
        self._check("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        self._check("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return _Handle(index)

    def nvmlDeviceGetHandleByUUID(self, uuid):
        self._check("nvmlDeviceGetHandleByUUID")
        uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
        for index, gpu in enumerate(self.gpus):
            if gpu.uuid == uuid:  # exact, 'GPU-' prefix included, as NVML wants it
                return _Handle(index)
        raise NVMLError(NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetHandleByPciBusId(self, pciBusId):
        self._check("nvmlDeviceGetHandleByPciBusId")
        bus_id = pciBusId.decode() if isinstance(pciBusId, bytes) else pciBusId
        for index, gpu in enumerate(self.gpus):
            if gpu.pci_bus_id.lower() == bus_id.lower():
                return _Handle(index)
        raise NVMLError(NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetName(self, handle) -> str:
        self._check("nvmlDeviceGetName")
        return self._gpu(handle).name

    def nvmlDeviceGetUUID(self, handle) -> str:
        self._check("nvmlDeviceGetUUID")
        return self._gpu(handle).uuid

    def nvmlDeviceGetPciInfo(self, handle):
        """Like nvmlPciInfo_t: char-array fields come back as bytes."""
        self._check("nvmlDeviceGetPciInfo")
        bus_id = self._gpu(handle).pci_bus_id
        domain, bus, rest = bus_id.split(":")
        return SimpleNamespace(
            busId=bus_id.encode(),
            busIdLegacy=f"{int(domain, 16):04X}:{bus}:{rest}".encode(),
            domain=int(domain, 16),
            bus=int(bus, 16),
            device=int(rest.split(".")[0], 16),
            pciDeviceId=0x233510DE,
            pciSubSystemId=0x18BE10DE,
        )

    def nvmlDeviceGetEnforcedPowerLimit(self, handle) -> int:
        self._check("nvmlDeviceGetEnforcedPowerLimit")
        return self._gpu(handle).power_limit_mw

    # --- power and energy ---

    def nvmlDeviceGetPowerUsage(self, handle) -> int:
        self._check("nvmlDeviceGetPowerUsage")
        return int(round(self._gpu(handle).power_w(self.clock()) * 1000))  # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, handle) -> int:
        self._check("nvmlDeviceGetTotalEnergyConsumption")
        gpu = self._gpu(handle)
        if not gpu.energy_counter:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return gpu.energy_offset_mj + int(self._energy_j(handle.index) * 1000)  # mJ

    def nvmlDeviceGetFieldValues(self, handle, fieldIds):
        """A list of c_nvmlFieldValue_t-like records; unsupported fields fail one by one."""
        self._check("nvmlDeviceGetFieldValues")
        gpu = self._gpu(handle)
        now = self.clock()
        out = []
        for field_id in fieldIds:
            value = SimpleNamespace(
                dVal=0.0, uiVal=0, ulVal=0, ullVal=0, sllVal=0, siVal=0, usVal=0
            )
            record = SimpleNamespace(
                fieldId=field_id,
                scopeId=0,
                timestamp=int(now * 1e6),
                latencyUsec=0,
                valueType=NVML_VALUE_TYPE_UNSIGNED_INT,
                nvmlReturn=NVML_SUCCESS,
                value=value,
            )
            if gpu.power_fields and field_id == NVML_FI_DEV_POWER_INSTANT:
                value.uiVal = int(round(gpu.power_w(now) * 1000))
            elif gpu.power_fields and field_id == NVML_FI_DEV_POWER_AVERAGE:
                value.uiVal = int(round(integrate(gpu.power_w, now - 1.0, now, 0.01) * 1000))
            else:
                record.nvmlReturn = NVML_ERROR_NOT_SUPPORTED
            out.append(record)
        return out

    # --- sensors ---

    def _sensor(self, fn: str, handle) -> FakeGpu:
        self._check(fn)
        gpu = self._gpu(handle)
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

    # --- who else is there ---

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        self._check("nvmlDeviceGetComputeRunningProcesses")
        if self._gpu(handle).processes is None:
            raise NVMLError(NVML_ERROR_NO_PERMISSION)
        return [
            SimpleNamespace(
                pid=pid,
                usedGpuMemory=512 << 20,
                gpuInstanceId=0xFFFFFFFF,
                computeInstanceId=0xFFFFFFFF,
            )
            for pid in self._gpu(handle).processes
        ]

    def nvmlDeviceGetMigMode(self, device):
        self._check("nvmlDeviceGetMigMode")
        mode = self._gpu(device).mig_mode
        if mode is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return [mode, mode]


# constants and error classes are module attributes of pynvml: make them attributes of the fake
for _name, _value in list(globals().items()):
    if _name.startswith(("NVML_", "NVMLError")):
        setattr(FakeNvml, _name, _value)
