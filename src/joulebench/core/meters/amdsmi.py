"""AMD GPU energy from AMD SMI (the `amdsmi` package of ROCm), for ROCm builds of torch.

On a ROCm build of torch, its `cuda` devices are AMD GPUs. The meter reads
the GPU's energy accumulator (amdsmi_get_energy_count: a count and its resolution in µJ per
count) at begin and end, and samples power (amdsmi_get_power_info: current_socket_power,
else average_socket_power) for a trace that cross-checks it. As with NVML, AMD SMI numbers
GPUs in its own order: the torch device is matched by UUID, else PCI bus id (BDF), never by
index. The same flags as NVML: `other-process` (another pid on the GPU), `partition` (a
compute partition other than SPX, or memory other than NPS1: the counter is the whole
device's, as NVML's is under MIG).

Modelled on amdsmi of ROCm 6.2-6.4 (tests/fake_amdsmi, docs/measurement.md#amd-gpus);
NOT YET RUN ON AMD HARDWARE: the first AMD run should be checked against an external meter.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import math
import os
import time
from collections.abc import Callable

from joulebench.core.meters.base import MeterUnavailable
from joulebench.core.meters.gpu_window import GpuWindowMeter
from joulebench.core.meters.nvml import match_nvml_index, other_pids, torch_has_cuda_context
from joulebench.core.meters.sampler import Sampler
from joulebench.flags import FLAG_OTHER_PROCESS, FLAG_PARTITION, FLAG_PROCESS_CHECK_FAILED

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 0.015
STATE_KEYS = ("temperature_c", "sm_clock_mhz", "power_w")


def load_amdsmi():
    """Import amdsmi (ROCm's AMD SMI Python package) only when an AMD meter is made.

    The package loads ROCm's libamd_smi.so when imported: installed without it, the import
    prints a line and raises KeyError. That is MeterUnavailable too, with what it printed."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            return importlib.import_module("amdsmi")
    except ImportError as err:
        raise MeterUnavailable(
            "not-installed",
            "AMD GPU meter needs the amdsmi package of ROCm (pip install amdsmi, matching "
            "the ROCm version; or /opt/rocm/share/amd_smi)",
        ) from err
    except Exception as err:  # KeyError 'libamd_smi.so', OSError: ROCm's library is missing
        said = (printed.getvalue().strip().splitlines() or [repr(err)])[-1]
        raise MeterUnavailable(
            "no-library", f"amdsmi is installed but cannot load ROCm's libamd_smi.so ({said})"
        ) from err


def energy_uj(counts: dict) -> float:
    """µJ from amdsmi_get_energy_count: the accumulator ("energy_accumulator"; "power"
    before ROCm 6.1) times its resolution (µJ per count)."""
    value = counts.get("energy_accumulator", counts.get("power"))
    return float(value) * float(counts["counter_resolution"])


def _watts(value) -> float:
    """A power field: W as a number, NaN for "N/A"."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def amd_devices(amdsmi) -> list[tuple[object, str | None, str | None, str]]:
    """[(handle, uuid, bdf, market name)] of every AMD GPU amdsmi sees (initialised)."""
    out = []
    for handle in amdsmi.amdsmi_get_processor_handles():
        uuid = amdsmi.amdsmi_get_gpu_device_uuid(handle)
        bdf = amdsmi.amdsmi_get_gpu_device_bdf(handle)
        try:
            name = amdsmi.amdsmi_get_gpu_asic_info(handle).get("market_name", "AMD GPU")
        except amdsmi.AmdSmiException:
            name = "AMD GPU"
        out.append((handle, uuid, bdf, str(name)))
    return out


class AmdSmiMeter(GpuWindowMeter):
    """Energy of one AMD GPU over a window, from AMD SMI.

    The caller synchronizes the device before begin() and end(). `amdsmi` is the module
    (tests pass the fake); `uuid` / `pci_bus_id` identify the torch device (from torch for
    `cuda_index` when both are None). `sample_interval_s=None`: no power trace.
    """

    name = "amdsmi"
    is_estimate = False
    refresh_s = None  # the accumulator counts continuously (about every ms); no phase shifts
    has_energy_counter = True  # amdsmi_get_energy_count, on every GPU amdsmi supports
    sensor = None  # no published sensor characterisation (NVIDIA's: nvidia_sensors)

    def __init__(
        self,
        cuda_index: int = 0,
        *,
        amdsmi=None,
        uuid: str | None = None,
        pci_bus_id: str | None = None,
        sample_interval_s: float | None = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        has_cuda_context: Callable[[], bool] = torch_has_cuda_context,
    ):
        self.amdsmi = amdsmi if amdsmi is not None else load_amdsmi()
        self.clock, self.has_cuda_context = clock, has_cuda_context
        self._closed = False
        try:
            self.amdsmi.amdsmi_init()
        except self.amdsmi.AmdSmiException as err:
            raise MeterUnavailable("no-driver", f"AMD SMI could not start: {err}") from err
        try:
            self._open(cuda_index, uuid, pci_bus_id)
        except BaseException:
            self.close()
            raise
        self.sampler = Sampler(
            self._sample_row, sample_interval_s, clock=clock, name="joulebench-sampler-amdsmi"
        )
        self._t0: float | None = None

    def _open(self, cuda_index, uuid, pci_bus_id) -> None:
        if uuid is None and pci_bus_id is None:
            from joulebench.core.meters.nvml import cuda_identity

            try:
                uuid, pci_bus_id = cuda_identity(cuda_index)
            except Exception as err:
                raise MeterUnavailable("no-device", f"no ROCm device {cuda_index}: {err}") from err
        devices = amd_devices(self.amdsmi)
        try:
            index, self.matched_by = match_nvml_index(
                uuid, pci_bus_id, [(u, b) for _, u, b, _ in devices]
            )
        except LookupError as err:
            raise MeterUnavailable("no-device", str(err).replace("NVML", "AMD SMI")) from err
        self.handle, self.uuid, self.pci_bus_id, self.device_name = devices[index]
        self.cuda_index, self.amd_index = cuda_index, index
        self.other_pids: list[int] = []

    # -- reading --

    COUNTER_UNITS_PER_J = 1e6  # the accumulator times its resolution is in microjoules
    state_keys = STATE_KEYS

    def _counter(self) -> float:
        return self._energy_uj()

    def _energy_uj(self) -> float:
        return energy_uj(self.amdsmi.amdsmi_get_energy_count(self.handle))

    def _call(self, fn, *args) -> float:
        try:
            return _watts(fn(*args))
        except self.amdsmi.AmdSmiException:
            return math.nan

    def _power(self) -> tuple[float, float]:
        """(current socket power, its average) in W; NaN where "N/A" or unreadable."""
        try:
            power = self.amdsmi.amdsmi_get_power_info(self.handle)
        except self.amdsmi.AmdSmiException:
            power = {}
        instant = _watts(power.get("socket_power", power.get("current_socket_power")))
        return instant, _watts(power.get("average_socket_power"))

    def read_power_w(self) -> float:
        """The GPU's power reading now (W): current socket power, else its average."""
        instant, avg = self._power()
        return instant if math.isfinite(instant) else avg

    def _read_sample(self) -> dict:
        a, h = self.amdsmi, self.handle
        instant, avg = self._power()
        clock = self._call(lambda: a.amdsmi_get_clock_info(h, a.AmdSmiClkType.GFX)["clk"])
        temp = self._call(
            a.amdsmi_get_temp_metric,
            h,
            a.AmdSmiTemperatureType.HOTSPOT,
            a.AmdSmiTemperatureMetric.CURRENT,
        )
        return {
            "power_w": instant if math.isfinite(instant) else avg,
            "power_avg_w": avg,
            "sm_clock_mhz": clock,
            "mem_clock_mhz": math.nan,
            "temperature_c": temp,
            "utilization_pct": math.nan,
        }

    def _pids(self) -> set[int] | None:
        try:
            listed = self.amdsmi.amdsmi_get_gpu_process_list(self.handle)
        except self.amdsmi.AmdSmiException:
            return None
        pids = set()
        for item in listed:  # dicts (ROCm 6.2+), or handles for amdsmi_get_gpu_process_info
            if not isinstance(item, dict):
                item = self.amdsmi.amdsmi_get_gpu_process_info(self.handle, item)
            pids.add(int(item["pid"]))
        return pids

    def _flags(self) -> list[str]:
        flags = []
        pids = self._pids()
        if pids is None:
            flags.append(FLAG_PROCESS_CHECK_FAILED)
            self.other_pids = []
        else:
            self.other_pids = other_pids(pids, os.getpid(), self.has_cuda_context())
        if self.other_pids:
            flags.append(FLAG_OTHER_PROCESS)
        partitions = []
        for fn, whole in (
            ("amdsmi_get_gpu_compute_partition", "SPX"),
            ("amdsmi_get_gpu_memory_partition", "NPS1"),
        ):
            try:
                mode = str(getattr(self.amdsmi, fn)(self.handle))
            except (self.amdsmi.AmdSmiException, AttributeError):
                continue  # not partitionable
            partitions.append(mode not in ("", whole, "N/A"))
        if any(partitions):
            flags.append(FLAG_PARTITION)  # the counter is the whole device's
        return flags

    def current_flags(self) -> list[str]:
        return self._flags()

    def describe(self) -> dict:
        a, h = self.amdsmi, self.handle
        try:
            driver = a.amdsmi_get_gpu_driver_info(h).get("driver_version")
        except a.AmdSmiException:
            driver = None
        try:
            resolution = a.amdsmi_get_energy_count(h)["counter_resolution"]
        except a.AmdSmiException:
            resolution = None
        return {
            "meter": self.name,
            "device_name": self.device_name,
            "driver_version": driver,
            "uuid": self.uuid,
            "pci_bus_id": self.pci_bus_id,
            "cuda_index": self.cuda_index,
            "amd_index": self.amd_index,
            "matched_by": self.matched_by,
            "counter_resolution_uj": resolution,
            "sample_interval_s": self.sampler.interval_s,
            "validated_on_hardware": False,
        }

    def _shut_down(self) -> None:
        try:
            self.amdsmi.amdsmi_shut_down()
        except self.amdsmi.AmdSmiException:
            pass
