"""A stand-in for the pynvml module (nvidia-ml-py) that serves simulated GPUs.

The real meter code (joulebench.core.meters.nvml) runs against it unchanged: pass an instance as
`nvml=`. It mirrors pynvml where joulebench touches it: function names and signatures, return
types (str from name/UUID/version getters, bytes in the PCI info struct, [current, pending]
from the MIG and ECC mode getters, field values with a per-field nvmlReturn), units (mW, mJ,
MHz), the NVMLError hierarchy with value-mapped subclasses, and NVMLError_Uninitialized
before nvmlInit. Each instance is an independent "driver".

`NvmlModule` is the part every fake shares (devices, identity, processes, MIG, limits); the
tests' smooth-power fake (tests/helpers/fake_nvml.py) builds on it too. `SimNvml` answers power and
energy from a `SimSensor` per board (joulebench.sim.sensor): readings that refresh and
average like the generation's real sensor.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

from joulebench.core.meters.nvidia_sensors import SensorSpec
from joulebench.sim.sensor import SimSensor
from joulebench.sim.workload import SimGpu

# --- constants, with the values of pynvml ---
NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_GPU_IS_LOST = 15

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_CLOCK_ID_CURRENT = 0
NVML_CLOCK_ID_APP_CLOCK_TARGET = 1
NVML_CLOCK_ID_APP_CLOCK_DEFAULT = 2
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1

NVML_VALUE_TYPE_DOUBLE = 0
NVML_VALUE_TYPE_UNSIGNED_INT = 1
NVML_FI_DEV_POWER_AVERAGE = 185
NVML_FI_DEV_POWER_INSTANT = 186

nvmlClocksEventReasonGpuIdle = 0x1
nvmlClocksEventReasonApplicationsClocksSetting = 0x2
nvmlClocksEventReasonSwPowerCap = 0x4
nvmlClocksEventReasonNone = 0x0


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
        NVML_ERROR_GPU_IS_LOST: "GPU is lost",
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
NVMLError_GpuIsLost = _error_class("NVMLError_GpuIsLost", NVML_ERROR_GPU_IS_LOST)


class Handle:
    """Stands in for pynvml's opaque c_nvmlDevice_t pointer."""

    def __init__(self, index: int):
        self.index = index

    def __repr__(self):
        return f"<fake nvmlDevice {self.index}>"


def pci_info(bus_id: str) -> SimpleNamespace:
    """Like nvmlPciInfo_t: char-array fields come back as bytes."""
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


def field_record(field_id: int, now_s: float, value_mw: int | None) -> SimpleNamespace:
    """Like c_nvmlFieldValue_t; value_mw=None gives a per-field NOT_SUPPORTED."""
    value = SimpleNamespace(dVal=0.0, uiVal=0, ulVal=0, ullVal=0, sllVal=0, siVal=0, usVal=0)
    record = SimpleNamespace(
        fieldId=field_id,
        scopeId=0,
        timestamp=int(now_s * 1e6),
        latencyUsec=0,
        valueType=NVML_VALUE_TYPE_UNSIGNED_INT,
        nvmlReturn=NVML_SUCCESS,
        value=value,
    )
    if value_mw is None:
        record.nvmlReturn = NVML_ERROR_NOT_SUPPORTED
    else:
        value.uiVal = int(value_mw)
    return record


def process_info(pid: int) -> SimpleNamespace:
    return SimpleNamespace(
        pid=pid, usedGpuMemory=512 << 20, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF
    )


class NvmlModule:
    """What every fake driver shares. Devices need `uuid`, `pci_bus_id`, `name`, `mig_mode`
    (None: not MIG-capable), `power_limit_mw` and `compute_pids()` (None: no permission)."""

    def __init__(
        self,
        devices: list,
        *,
        clock: Callable[[], float],
        driver_loaded: bool = True,
        driver_version: str = "570.124.06",
    ):
        self.devices = devices
        self.clock = clock
        self.driver_loaded = driver_loaded
        self.driver_version = driver_version
        self.refcount = 0  # nvmlInit / nvmlShutdown pairs, as the real library counts them
        self.calls: dict[str, int] = {}

    def _check(self, fn: str) -> None:
        self.calls[fn] = self.calls.get(fn, 0) + 1
        if self.refcount <= 0:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def _dev(self, handle, fn: str):
        self._check(fn)
        if not isinstance(handle, Handle) or not 0 <= handle.index < len(self.devices):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        device = self.devices[handle.index]
        if getattr(device, "lost", False):  # a board that fell off the bus (sim.faults)
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        return device

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
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index):
        self._check("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.devices):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return Handle(index)

    def nvmlDeviceGetHandleByUUID(self, uuid):
        self._check("nvmlDeviceGetHandleByUUID")
        uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
        return self._handle_where(lambda d: d.uuid == uuid)  # exact, 'GPU-' prefix included

    def nvmlDeviceGetHandleByPciBusId(self, pciBusId):
        self._check("nvmlDeviceGetHandleByPciBusId")
        bus_id = pciBusId.decode() if isinstance(pciBusId, bytes) else pciBusId
        return self._handle_where(lambda d: d.pci_bus_id.lower() == bus_id.lower())

    def _handle_where(self, matches) -> Handle:
        """The first device that matches, as NVML's lookups answer; NOT_FOUND where none."""
        for index, device in enumerate(self.devices):
            if matches(device):
                return Handle(index)
        raise NVMLError(NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetName(self, handle) -> str:
        return self._dev(handle, "nvmlDeviceGetName").name

    def nvmlDeviceGetUUID(self, handle) -> str:
        return self._dev(handle, "nvmlDeviceGetUUID").uuid

    def nvmlDeviceGetSerial(self, handle) -> str:
        serial = getattr(self._dev(handle, "nvmlDeviceGetSerial"), "serial", None)
        if serial is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return serial

    def nvmlDeviceGetPciInfo(self, handle):
        return pci_info(self._dev(handle, "nvmlDeviceGetPciInfo").pci_bus_id)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle) -> int:
        return self._dev(handle, "nvmlDeviceGetEnforcedPowerLimit").power_limit_mw

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        pids = self._dev(handle, "nvmlDeviceGetComputeRunningProcesses").compute_pids()
        if pids is None:
            raise NVMLError(NVML_ERROR_NO_PERMISSION)
        return [process_info(pid) for pid in pids]

    def nvmlDeviceGetMigMode(self, device):
        mode = self._dev(device, "nvmlDeviceGetMigMode").mig_mode
        if mode is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return [mode, mode]


# constants and error classes are module attributes of pynvml: make them attributes of the fakes
for _name, _value in list(globals().items()):
    if _name.startswith(("NVML_", "NVMLError", "nvmlClocksEventReason")):
        setattr(NvmlModule, _name, _value)


@dataclass
class SimBoard:
    """One simulated GPU board as NVML describes it: its work, its sensor, its settings."""

    gpu: SimGpu
    sensor: SimSensor
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-5e1a2b3c-0d4e-4f50-8a6b-7c8d9e0f1a2b"
    pci_bus_id: str = "00000000:3B:00.0"
    other_pids: list[int] = field(default_factory=list)  # other processes with a context
    own_pid: int | None = field(default_factory=os.getpid)  # ours, listed (None: not listed)
    processes_readable: bool = True
    mig_mode: int | None = NVML_DEVICE_MIG_DISABLE
    persistence_mode: int = NVML_FEATURE_ENABLED
    ecc_mode: int | None = NVML_FEATURE_ENABLED
    default_power_limit_mw: int = 700_000
    power_limit_mw: int = 700_000  # the current (enforced) limit
    power_limit_range_mw: tuple[int, int] = (200_000, 700_000)  # H100 SXM's, as NVML says
    app_clock_mhz: int | None = None  # None: the default application clock
    default_app_clock_mhz: int = 1980
    mem_clock_mhz: int = 2619
    locked_sm_clock_mhz: int | None = None  # nvmlDeviceSetGpuLockedClocks (min = max here)
    settable: bool = field(default_factory=lambda: os.geteuid() == 0)  # NVML: root only
    on_change: Callable[[SimBoard], None] | None = None  # the wall board keeps its settings
    lost: bool = False  # fallen off the bus: every NVML call on it fails (sim.faults)

    def __post_init__(self):
        self.gpu.power_limit_w = self.power_limit_mw / 1000.0
        self.gpu.locked_sm_clock_mhz = self.locked_sm_clock_mhz

    def set_power_limit_mw(self, milliwatts: int) -> None:
        self.power_limit_mw = int(milliwatts)
        self.gpu.power_limit_w = self.power_limit_mw / 1000.0
        if self.on_change:
            self.on_change(self)

    def lock_sm_clock_mhz(self, mhz: int | None) -> None:
        self.locked_sm_clock_mhz = self.gpu.locked_sm_clock_mhz = mhz
        if self.on_change:
            self.on_change(self)

    @property
    def spec(self) -> SensorSpec:
        return self.sensor.spec

    def compute_pids(self) -> list[int] | None:
        if not self.processes_readable:
            return None
        own = [] if self.own_pid is None else [self.own_pid]
        return own + list(self.other_pids)


class SimNvml(NvmlModule):
    """A pynvml-like module over simulated boards; pass it as `nvml=` to NvmlMeter."""

    def __init__(self, boards: list[SimBoard], *, clock, **kw):
        super().__init__(boards, clock=clock, **kw)

    # --- what kind of GPU ---

    def nvmlDeviceGetArchitecture(self, device) -> int:
        return self._dev(device, "nvmlDeviceGetArchitecture").spec.arch

    # --- power and energy: from the simulated sensor ---

    def nvmlDeviceGetPowerUsage(self, handle) -> int:
        return self._dev(handle, "nvmlDeviceGetPowerUsage").sensor.power_usage_mw()

    def nvmlDeviceGetTotalEnergyConsumption(self, handle) -> int:
        board = self._dev(handle, "nvmlDeviceGetTotalEnergyConsumption")
        if not board.spec.energy_counter:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return board.sensor.energy_mj()

    def nvmlDeviceGetFieldValues(self, handle, fieldIds):
        board = self._dev(handle, "nvmlDeviceGetFieldValues")
        out = []
        for field_id in fieldIds:
            value = None
            if field_id == NVML_FI_DEV_POWER_INSTANT:
                value = board.sensor.instant_mw()
            elif field_id == NVML_FI_DEV_POWER_AVERAGE and board.spec.average_field:
                value = board.sensor.average_mw()
            out.append(field_record(field_id, self.clock(), value))
        return out

    # --- settings ---

    def nvmlDeviceGetPowerManagementLimit(self, handle) -> int:
        return self._dev(handle, "nvmlDeviceGetPowerManagementLimit").power_limit_mw

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle) -> int:
        return self._dev(handle, "nvmlDeviceGetPowerManagementDefaultLimit").default_power_limit_mw

    def nvmlDeviceGetPersistenceMode(self, handle) -> int:
        return self._dev(handle, "nvmlDeviceGetPersistenceMode").persistence_mode

    def nvmlDeviceGetEccMode(self, handle):
        mode = self._dev(handle, "nvmlDeviceGetEccMode").ecc_mode
        if mode is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return [mode, mode]

    def _clock(self, board: SimBoard, type_: int) -> int:
        if type_ in (NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM):
            return int(round(board.gpu.sm_clock_mhz))
        if type_ == NVML_CLOCK_MEM:
            return board.mem_clock_mhz
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetClockInfo(self, handle, type):  # noqa: A002 (pynvml's parameter name)
        return self._clock(self._dev(handle, "nvmlDeviceGetClockInfo"), type)

    def nvmlDeviceGetMaxClockInfo(self, handle, type):  # noqa: A002
        board = self._dev(handle, "nvmlDeviceGetMaxClockInfo")
        if type in (NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM):
            return int(board.gpu.max_sm_clock_mhz)
        return self._clock(board, type)

    def nvmlDeviceGetClock(self, handle, type, id):  # noqa: A002
        board = self._dev(handle, "nvmlDeviceGetClock")
        if id == NVML_CLOCK_ID_CURRENT:
            return self._clock(board, type)
        if type == NVML_CLOCK_MEM:
            return board.mem_clock_mhz
        if id == NVML_CLOCK_ID_APP_CLOCK_TARGET:
            return board.app_clock_mhz or board.default_app_clock_mhz
        if id == NVML_CLOCK_ID_APP_CLOCK_DEFAULT:
            return board.default_app_clock_mhz
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle) -> int:
        board = self._dev(handle, "nvmlDeviceGetCurrentClocksEventReasons")
        reasons = nvmlClocksEventReasonNone
        if board.gpu.sm_clock_mhz < 0.99 * board.gpu.max_sm_clock_mhz:
            if board.sensor.reading_w >= 0.98 * board.power_limit_mw / 1000.0:
                reasons |= nvmlClocksEventReasonSwPowerCap
            elif board.sensor.reading_w <= board.gpu.idle_w * 1.1:
                reasons |= nvmlClocksEventReasonGpuIdle
        if board.app_clock_mhz and board.app_clock_mhz != board.default_app_clock_mhz:
            reasons |= nvmlClocksEventReasonApplicationsClocksSetting
        return reasons

    def nvmlDeviceGetTemperature(self, handle, sensor):
        board = self._dev(handle, "nvmlDeviceGetTemperature")
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return int(round(board.gpu.temperature_c()))

    # --- setting a power limit and locked clocks (root only, as on a real board) ---

    def _settable(self, handle, fn: str) -> SimBoard:
        board = self._dev(handle, fn)
        if not board.settable:
            raise NVMLError(NVML_ERROR_NO_PERMISSION)
        return board

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle):
        low, high = self._dev(
            handle, "nvmlDeviceGetPowerManagementLimitConstraints"
        ).power_limit_range_mw
        return [low, high]

    def nvmlDeviceSetPowerManagementLimit(self, handle, limit):
        board = self._settable(handle, "nvmlDeviceSetPowerManagementLimit")
        low, high = board.power_limit_range_mw
        if not low <= limit <= high:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        board.set_power_limit_mw(limit)

    def nvmlDeviceSetGpuLockedClocks(self, handle, minGpuClockMHz, maxGpuClockMHz):
        board = self._settable(handle, "nvmlDeviceSetGpuLockedClocks")
        top = board.gpu.max_sm_clock_mhz
        if not 0 < minGpuClockMHz <= maxGpuClockMHz or maxGpuClockMHz > top:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        board.lock_sm_clock_mhz(int(maxGpuClockMHz))

    def nvmlDeviceResetGpuLockedClocks(self, handle):
        self._settable(handle, "nvmlDeviceResetGpuLockedClocks").lock_sm_clock_mhz(None)

    def nvmlDeviceGetUtilizationRates(self, handle):
        board = self._dev(handle, "nvmlDeviceGetUtilizationRates")
        busy = board.sensor.reading_w > board.gpu.idle_w * 1.2
        return SimpleNamespace(gpu=97 if busy else 0, memory=40 if busy else 0)
