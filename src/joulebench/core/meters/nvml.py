"""NVIDIA GPU energy from NVML: the total-energy counter, cross-checked by a sampled power trace.

The counter (nvmlDeviceGetTotalEnergyConsumption, mJ since the driver loaded, Volta and newer)
is read at begin and end. GPUs without it get the trapezoid integral of the sampled power and
the name "nvml:power-integration", so a row always says which it was.

NVML numbers GPUs in its own (PCI) order and ignores CUDA_VISIBLE_DEVICES, so the CUDA device is
matched to its NVML handle by UUID (or PCI bus id), never by index.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Sequence

from joulebench.core.meters.base import MeterUnavailable
from joulebench.core.meters.gpu_window import GpuWindowMeter
from joulebench.core.meters.nvidia_sensors import DEFAULT_REFRESH_S, expected_sensor
from joulebench.core.meters.sampler import Sampler
from joulebench.flags import FLAG_MIG, FLAG_OTHER_PROCESS, FLAG_PROCESS_CHECK_FAILED

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 0.015
STATE_KEYS = ("temperature_c", "sm_clock_mhz", "mem_clock_mhz", "power_w")

# c_nvmlValue_t member for each NVML_VALUE_TYPE_* (0 double, 1 uint, 2 ulong, 3 ulonglong, ...)
_VALUE_MEMBER = {
    0: "dVal",
    1: "uiVal",
    2: "ulVal",
    3: "ullVal",
    4: "sllVal",
    5: "siVal",
    6: "usVal",
}


# --- mapping a CUDA device to its NVML device (pure, testable without a GPU) ---


def normalize_uuid(uuid: str | bytes | None) -> str | None:
    """'GPU-8f3e...' / '8F3E...' / b'GPU-...' -> '8f3e...' (NVML prefixes, torch does not)."""
    if uuid is None:
        return None
    if isinstance(uuid, bytes):
        uuid = uuid.decode()
    text = uuid.strip().lower()
    for prefix in ("mig-", "gpu-"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text or None


def normalize_pci_bus_id(bus_id: str | bytes | None) -> tuple[int, int, int, int] | None:
    """'00000000:3B:00.0' (NVML) or '0000:3b:00.0' (CUDA) -> (domain, bus, device, function)."""
    if bus_id is None:
        return None
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode()
    try:
        domain, bus, rest = bus_id.strip().split(":")
        device, _, function = rest.partition(".")
        return int(domain, 16), int(bus, 16), int(device, 16), int(function or "0", 16)
    except ValueError:
        return None


def match_nvml_index(
    cuda_uuid: str | None,
    cuda_pci_bus_id: str | None,
    nvml_devices: Sequence[tuple[str | None, str | None]],
) -> tuple[int, str]:
    """Find the NVML index of a CUDA device; returns (index, "uuid" | "pci-bus-id").

    `nvml_devices[i]` is (uuid, pci_bus_id) of NVML device i. UUID wins; the PCI bus id is the
    fallback (a MIG slice has its own UUID but its parent's bus id). LookupError if neither
    matches: guessing by index would silently measure the wrong GPU.
    """
    want_uuid = normalize_uuid(cuda_uuid)
    if want_uuid is not None:
        for index, (uuid, _) in enumerate(nvml_devices):
            if normalize_uuid(uuid) == want_uuid:
                return index, "uuid"
    want_pci = normalize_pci_bus_id(cuda_pci_bus_id)
    if want_pci is not None:
        for index, (_, bus_id) in enumerate(nvml_devices):
            if normalize_pci_bus_id(bus_id) == want_pci:
                return index, "pci-bus-id"
    raise LookupError(
        f"no NVML device has uuid {cuda_uuid!r} or PCI bus id {cuda_pci_bus_id!r}; "
        f"NVML sees {list(nvml_devices)}"
    )


def cuda_identity(cuda_index: int, cuda=None) -> tuple[str | None, str | None]:
    """(uuid, pci bus id) of torch's CUDA device `cuda_index` (after CUDA_VISIBLE_DEVICES).

    `cuda` is torch.cuda (tests pass a fake)."""
    if cuda is None:
        import torch  # lazy: the package must import on machines without torch.cuda

        cuda = torch.cuda
    props = cuda.get_device_properties(cuda_index)
    uuid = str(props.uuid) if getattr(props, "uuid", None) is not None else None
    pci = None
    if getattr(props, "pci_bus_id", None) is not None:
        pci = f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
    return uuid, pci


def load_pynvml():
    """Import pynvml (the nvidia-ml-py package) only when an NVML meter is made."""
    try:
        return importlib.import_module("pynvml")
    except ImportError as err:
        raise MeterUnavailable(
            "not-installed", "NVML meter needs nvidia-ml-py: pip install nvidia-ml-py"
        ) from err


def other_pids(gpu_pids: set[int], own_pid: int, own_context: bool) -> list[int]:
    """Pids on the GPU that are not this process.

    NVML reports pids in the host's PID namespace. Inside a container with its own namespace our
    pid is not in the list even though we hold a context: then one listed pid is ours (which one
    cannot be told), so only a second pid means another process. Returns [] when alone.
    """
    if own_pid in gpu_pids or not own_context:
        return sorted(gpu_pids - {own_pid})
    return sorted(gpu_pids) if len(gpu_pids) > 1 else []


def torch_has_cuda_context() -> bool:
    """True when torch is already imported and has initialised CUDA in this process."""
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_initialized())


# --- the meter ---


class NvmlMeter(GpuWindowMeter):
    """Energy of one NVIDIA GPU over a window, from NVML.

    The caller synchronizes the device before begin() and end(); the meter only reads.
    `nvml` is the pynvml module (tests pass a fake). `uuid` / `pci_bus_id` identify the CUDA
    device; when both are None they come from torch for `cuda_index`.
    `sample_interval_s=None` turns the background sampler off (only begin/end samples).
    `has_cuda_context` tells whether this process holds a context on the GPU (see other_pids).
    `refresh_s` is how often the GPU's power reading refreshes, as `joulebench check` measured
    it; None takes the published value for the GPU's generation (nvidia_sensors), else 100 ms.
    The protocol sizes windows and shifts the workload's phase by it. `timer` drives the
    sampler instead of a thread (the sensor simulator's clock).
    """

    def __init__(
        self,
        cuda_index: int = 0,
        *,
        nvml=None,
        uuid: str | None = None,
        pci_bus_id: str | None = None,
        sample_interval_s: float | None = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        has_cuda_context: Callable[[], bool] = torch_has_cuda_context,
        refresh_s: float | None = None,
        timer: Callable | None = None,
    ):
        if refresh_s is not None and not 0 < refresh_s <= 10:
            raise ValueError(f"refresh_s must be in (0, 10] seconds, got {refresh_s}")
        self.nvml = nvml if nvml is not None else load_pynvml()
        self.clock = clock
        self.has_cuda_context = has_cuda_context
        self._closed = False
        try:
            self.nvml.nvmlInit()
        except self.nvml.NVMLError as err:
            raise MeterUnavailable("no-driver", f"NVML could not start: {err}") from err
        try:
            self._open(cuda_index, uuid, pci_bus_id)
        except BaseException:
            self.close()
            raise
        self.sensor = self._expected_sensor()
        if refresh_s is not None:
            self.refresh_s, self.refresh_source = float(refresh_s), "given"
        elif self.sensor is not None:
            self.refresh_s, self.refresh_source = self.sensor.refresh_s, "published"
        else:
            self.refresh_s, self.refresh_source = DEFAULT_REFRESH_S, "default"
        self.sampler = Sampler(
            self._sample_row,
            sample_interval_s,
            clock=clock,
            name="joulebench-sampler-nvml",
            timer=timer,
        )
        self._t0: float | None = None

    def _open(self, cuda_index, uuid, pci_bus_id) -> None:
        nv = self.nvml
        if uuid is None and pci_bus_id is None:
            try:
                uuid, pci_bus_id = cuda_identity(cuda_index)
            except Exception as err:  # torch without CUDA, no such device, ...
                raise MeterUnavailable("no-device", f"no CUDA device {cuda_index}: {err}") from err
        devices = []
        for index in range(nv.nvmlDeviceGetCount()):
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            devices.append((nv.nvmlDeviceGetUUID(handle), bus_id(nv.nvmlDeviceGetPciInfo(handle))))
        try:
            self.nvml_index, self.matched_by = match_nvml_index(uuid, pci_bus_id, devices)
        except LookupError as err:
            raise MeterUnavailable("no-device", str(err)) from err
        self.cuda_index = cuda_index
        self.uuid, self.pci_bus_id = devices[self.nvml_index]
        self.handle = nv.nvmlDeviceGetHandleByIndex(self.nvml_index)
        self._unsupported: set[str] = set()  # trace columns this GPU answered NotSupported for
        self.power_fields = self._probe_power_fields()
        self.has_energy_counter = self._probe_energy_counter()
        self.name = "nvml" if self.has_energy_counter else "nvml:power-integration"
        self.other_pids: list[int] = []
        self._warned_pids: list[int] = []

    # -- probing what this GPU supports, once --

    def _expected_sensor(self):
        """The published sensor behaviour of this GPU's generation (None when unknown)."""
        name = _or_none(self.nvml, lambda: self.nvml.nvmlDeviceGetName(self.handle))
        get_arch = getattr(self.nvml, "nvmlDeviceGetArchitecture", None)
        arch = _or_none(self.nvml, lambda: get_arch(self.handle)) if get_arch else None
        return expected_sensor(name, arch)

    def _probe_energy_counter(self) -> bool:
        try:
            self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
            return True
        except self.nvml.NVMLError as err:
            if _not_supported(self.nvml, err):
                return False
            raise

    def _probe_power_fields(self) -> dict[str, int]:
        """Trace column -> NVML field id, for the power fields this driver and GPU answer."""
        wanted = {
            "power_w": getattr(self.nvml, "NVML_FI_DEV_POWER_INSTANT", None),
            "power_avg_w": getattr(self.nvml, "NVML_FI_DEV_POWER_AVERAGE", None),
        }
        wanted = {column: field for column, field in wanted.items() if field is not None}
        if not wanted:
            return {}
        try:
            values = self.nvml.nvmlDeviceGetFieldValues(self.handle, list(wanted.values()))
        except self.nvml.NVMLError:  # old driver: no field API at all
            return {}
        ok = self.nvml.NVML_SUCCESS
        return {
            column: v.fieldId
            for column, v in zip(wanted, values, strict=True)
            if v.nvmlReturn == ok
        }

    # -- reading --

    def _call(self, column: str, fn, *args) -> float:
        """One NVML read for a trace column; NaN (not a crash) when the GPU lacks it."""
        if column in self._unsupported:
            return math.nan
        try:
            return float(fn(*args))
        except self.nvml.NVMLError as err:
            if _not_supported(self.nvml, err):
                self._unsupported.add(column)
            return math.nan

    def _read_power_fields(self) -> dict[str, float]:
        if not self.power_fields:
            return {}
        try:
            values = self.nvml.nvmlDeviceGetFieldValues(
                self.handle, list(self.power_fields.values())
            )
        except self.nvml.NVMLError:
            return {}
        out = {}
        for column, value in zip(self.power_fields, values, strict=True):
            if value.nvmlReturn == self.nvml.NVML_SUCCESS:
                member = _VALUE_MEMBER.get(value.valueType, "uiVal")
                out[column] = float(getattr(value.value, member)) / 1000.0  # mW -> W
        return out

    def read_power_w(self) -> float:
        """The GPU's power reading now (W), as directly as NVML gives it: the instant field,
        else nvmlDeviceGetPowerUsage (`joulebench check` samples it as fast as NVML answers)."""
        nv, h = self.nvml, self.handle
        field_id = self.power_fields.get("power_w")
        if field_id is None:
            return nv.nvmlDeviceGetPowerUsage(h) / 1000.0
        value = nv.nvmlDeviceGetFieldValues(h, [field_id])[0]
        if value.nvmlReturn != nv.NVML_SUCCESS:
            return math.nan
        return float(getattr(value.value, _VALUE_MEMBER.get(value.valueType, "uiVal"))) / 1000.0

    def _read_sample(self) -> dict:
        nv, h = self.nvml, self.handle
        row = {"power_avg_w": math.nan, **self._read_power_fields()}
        if math.isnan(row.get("power_w", math.nan)):
            # Instant field missing: nvmlDeviceGetPowerUsage (instant on Volta..GA100,
            # a 1 s average on newer GPUs; describe() says which source the trace used).
            row["power_w"] = self._call("power_w", nv.nvmlDeviceGetPowerUsage, h) / 1000.0
        row["sm_clock_mhz"] = self._call(
            "sm_clock_mhz", nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM
        )
        row["mem_clock_mhz"] = self._call(
            "mem_clock_mhz", nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM
        )
        row["temperature_c"] = self._call(
            "temperature_c", nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU
        )
        row["utilization_pct"] = self._call(
            "utilization_pct", lambda: nv.nvmlDeviceGetUtilizationRates(h).gpu
        )
        return row

    def _compute_pids(self) -> set[int] | None:
        """Pids with a compute context on this GPU; None if NVML cannot say."""
        nv = self.nvml
        mismatch = getattr(nv, "NVMLLibraryMismatchError", nv.NVMLError)
        for fn_name in (
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetComputeRunningProcesses_v2",
        ):
            fn = getattr(nv, fn_name, None)
            if fn is None:
                continue
            try:
                return {p.pid for p in fn(self.handle)}
            except (nv.NVMLError, mismatch):  # driver older than this pynvml's default version
                continue
        log.warning("cannot list the processes on GPU %s", self.uuid)
        return None

    COUNTER_UNITS_PER_J = 1000.0  # NVML's counter is in millijoules
    state_keys = STATE_KEYS

    def _counter(self) -> int | None:
        return self._energy_mj() if self.has_energy_counter else None

    def _energy_mj(self) -> int:
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)

    def _flags(self) -> list[str]:
        """Conditions that make the window's energy not this process's alone."""
        flags = []
        pids = self._compute_pids()
        if pids is None:
            flags.append(FLAG_PROCESS_CHECK_FAILED)
            self.other_pids = []
        else:
            self.other_pids = other_pids(pids, os.getpid(), self.has_cuda_context())
        if self.other_pids:
            if self.other_pids != self._warned_pids:  # once per change, not every window
                log.warning("GPU %s is also used by pids %s", self.uuid, self.other_pids)
                self._warned_pids = list(self.other_pids)
            flags.append(FLAG_OTHER_PROCESS)
        try:
            current_mode, _pending = self.nvml.nvmlDeviceGetMigMode(self.handle)
            if current_mode == getattr(self.nvml, "NVML_DEVICE_MIG_ENABLE", 1):
                flags.append(FLAG_MIG)  # power and energy are the whole GPU's, not the slice's
        except self.nvml.NVMLError:
            pass  # not MIG-capable
        return flags

    def current_flags(self) -> list[str]:
        """The flags a window opened now would get (other-process, mig, ...); sets other_pids."""
        return self._flags()

    def describe(self) -> dict:
        nv, h = self.nvml, self.handle
        power_limit_mw = _or_none(nv, lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
        return {
            "meter": self.name,
            "device_name": _or_none(nv, lambda: nv.nvmlDeviceGetName(h)),
            "driver_version": _or_none(nv, nv.nvmlSystemGetDriverVersion),
            "nvml_version": _or_none(nv, nv.nvmlSystemGetNVMLVersion),
            "uuid": self.uuid,
            "pci_bus_id": self.pci_bus_id,
            "cuda_index": self.cuda_index,
            "nvml_index": self.nvml_index,
            "matched_by": self.matched_by,
            "power_limit_w": None if power_limit_mw is None else power_limit_mw / 1000.0,
            "energy_counter": self.has_energy_counter,
            "power_source": (
                "field:NVML_FI_DEV_POWER_INSTANT"
                if "power_w" in self.power_fields
                else "nvmlDeviceGetPowerUsage"
            ),
            "sample_interval_s": self.sampler.interval_s,
            "sensor_generation": self.sensor.generation if self.sensor else None,
            "sensor_refresh_s": self.refresh_s,
            "sensor_refresh_source": self.refresh_source,  # given (a check), published, default
        }

    def _shut_down(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except self.nvml.NVMLError:
            pass


def _not_supported(nvml, err) -> bool:
    return getattr(err, "value", None) == getattr(nvml, "NVML_ERROR_NOT_SUPPORTED", 3)


def bus_id(pci_info) -> str | None:
    """The PCI bus id string from nvmlDeviceGetPciInfo (pynvml gives bytes)."""
    for name in ("busId", "busIdLegacy"):
        value = getattr(pci_info, name, None)
        if value:
            return value.decode() if isinstance(value, bytes) else str(value)
    return None


def _or_none(nvml, fn):
    try:
        return fn()
    except nvml.NVMLError:
        return None
