"""A faithful fake of AMD's `amdsmi` Python package (ROCm's AMD SMI library), for tests.

Modelled on amdsmi as shipped with ROCm 6.2-6.4 (py-interface/amdsmi_interface.py of
github.com/ROCm/amdsmi): module-level functions, opaque processor handles, dict results,
AmdSmiException / AmdSmiLibraryException(err_code) errors, "N/A" for values a GPU does not
report, and amdsmi_init() before any other call. Energy: amdsmi_get_energy_count returns
{"energy_accumulator", "counter_resolution" (µJ per count), "timestamp" (ns)}; amdsmi
before ROCm 6.1 named the accumulator "power" (FAKE.legacy_energy_key switches to it).
Processes: amdsmi_get_gpu_process_list returns dicts with "pid" (ROCm 6.2+). Partitions:
amdsmi_get_gpu_compute_partition returns "SPX" (whole GPU) .. "CPX".

Not a real GPU: tests set FAKE.gpus (a list of FakeAmdGpu) and advance each GPU's energy.
Put this folder on sys.path (PYTHONPATH=tests/fake_amdsmi) and `import amdsmi` finds it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from enum import IntEnum

NA = "N/A"


# The enums amdsmi exports (only the members joulebench or the tests use).
AmdSmiInitFlags = IntEnum(
    "AmdSmiInitFlags",
    {"INIT_ALL_PROCESSORS": 0xFFFFFFFF, "INIT_AMD_CPUS": 1 << 0, "INIT_AMD_GPUS": 1 << 1},
)
AmdSmiTemperatureType = IntEnum("AmdSmiTemperatureType", {"EDGE": 0, "HOTSPOT": 1, "VRAM": 2})
AmdSmiTemperatureMetric = IntEnum("AmdSmiTemperatureMetric", {"CURRENT": 0})
AmdSmiClkType = IntEnum("AmdSmiClkType", {"SYS": 0, "GFX": 0, "MEM": 4})
AmdSmiStatus = IntEnum(
    "AmdSmiStatus", {"SUCCESS": 0, "INVAL": 1, "NOT_SUPPORTED": 2, "NOT_INIT": 32, "NO_PERM": 10}
)


class AmdSmiException(Exception):
    """Base of every amdsmi error."""


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int):
        super().__init__(f"Error code:\n\t{err_code} | {AmdSmiStatus(err_code).name}")
        self.err_code = err_code
        self.err_info = AmdSmiStatus(err_code).name


class AmdSmiParameterException(AmdSmiException):
    pass


@dataclass
class FakeAmdGpu:
    """One AMD GPU: identity, energy accumulator, power, state."""

    uuid: str = "6aff74a1-0000-1000-8000-c1a2b3c4d5e6"
    bdf: str = "0000:c1:00.0"
    market_name: str = "AMD Instinct MI300X"
    counter_resolution_uj: float = 15.259  # µJ per accumulator count (MI300X)
    energy_accumulator: int = 123_456_789
    power_w: float = 150.0  # current_socket_power
    power_cap_w: float = 750.0
    default_power_cap_w: float = 750.0
    temperature_c: int = 45
    gfx_clock_mhz: int = 2100
    compute_partition: str = "SPX"
    memory_partition: str = "NPS1"
    pids: list[int] = field(default_factory=lambda: [os.getpid()])
    processes_readable: bool = True

    def add_energy_j(self, joules: float) -> None:
        self.energy_accumulator += round(joules * 1e6 / self.counter_resolution_uj)


class _Fake:
    def __init__(self):
        self.gpus: list[FakeAmdGpu] = []
        self.initialised = 0
        self.driver_loaded = True
        self.legacy_energy_key = False
        self.calls: dict[str, int] = {}


FAKE = _Fake()


class _Handle:
    """amdsmi_processor_handle: opaque; only compared and passed back."""

    def __init__(self, index: int):
        self.index = index

    def __repr__(self):
        return f"<amdsmi_processor_handle {self.index}>"


def _check(name: str) -> None:
    FAKE.calls[name] = FAKE.calls.get(name, 0) + 1
    if FAKE.initialised <= 0:
        raise AmdSmiLibraryException(AmdSmiStatus.NOT_INIT)


def _gpu(handle, name: str) -> FakeAmdGpu:
    _check(name)
    if not isinstance(handle, _Handle):
        raise AmdSmiParameterException(f"{handle!r} is not an amdsmi_processor_handle")
    return FAKE.gpus[handle.index]


def amdsmi_init(flag=AmdSmiInitFlags.INIT_AMD_GPUS) -> None:
    if not FAKE.driver_loaded:
        raise AmdSmiLibraryException(AmdSmiStatus.NOT_INIT)  # amdgpu driver not loaded
    FAKE.initialised += 1


def amdsmi_shut_down() -> None:
    _check("amdsmi_shut_down")
    FAKE.initialised -= 1


def amdsmi_get_processor_handles() -> list[_Handle]:
    _check("amdsmi_get_processor_handles")
    return [_Handle(i) for i in range(len(FAKE.gpus))]


def amdsmi_get_gpu_device_uuid(processor_handle) -> str:
    return _gpu(processor_handle, "amdsmi_get_gpu_device_uuid").uuid


def amdsmi_get_gpu_device_bdf(processor_handle) -> str:
    return _gpu(processor_handle, "amdsmi_get_gpu_device_bdf").bdf


def amdsmi_get_gpu_asic_info(processor_handle) -> dict:
    gpu = _gpu(processor_handle, "amdsmi_get_gpu_asic_info")
    return {"market_name": gpu.market_name, "vendor_id": "0x1002", "device_id": "0x74a1"}


def amdsmi_get_gpu_driver_info(processor_handle) -> dict:
    _gpu(processor_handle, "amdsmi_get_gpu_driver_info")
    return {"driver_name": "amdgpu", "driver_version": "6.10.5", "driver_date": "2015/01/01"}


def amdsmi_get_lib_version() -> dict:
    _check("amdsmi_get_lib_version")
    return {"year": 25, "major": 3, "minor": 0, "release": 0, "build": "25.3.0"}


def amdsmi_get_energy_count(processor_handle) -> dict:
    gpu = _gpu(processor_handle, "amdsmi_get_energy_count")
    key = "power" if FAKE.legacy_energy_key else "energy_accumulator"
    return {
        key: gpu.energy_accumulator,
        "counter_resolution": gpu.counter_resolution_uj,
        "timestamp": time.monotonic_ns(),
    }


def amdsmi_get_power_info(processor_handle, sensor_ind=0) -> dict:
    gpu = _gpu(processor_handle, "amdsmi_get_power_info")
    return {
        "current_socket_power": gpu.power_w,
        "average_socket_power": NA,  # not reported by MI300
        "gfx_voltage": NA,
        "soc_voltage": NA,
        "mem_voltage": NA,
        "power_limit": round(gpu.power_cap_w * 1e6),  # µW
    }


def amdsmi_get_power_cap_info(processor_handle) -> dict:
    gpu = _gpu(processor_handle, "amdsmi_get_power_cap_info")
    return {  # µW
        "power_cap": round(gpu.power_cap_w * 1e6),
        "default_power_cap": round(gpu.default_power_cap_w * 1e6),
        "dpm_cap": 0,
        "min_power_cap": 0,
        "max_power_cap": round(gpu.default_power_cap_w * 1e6),
    }


def amdsmi_get_temp_metric(processor_handle, sensor_type, metric) -> int:
    return _gpu(processor_handle, "amdsmi_get_temp_metric").temperature_c


def amdsmi_get_clock_info(processor_handle, clock_type) -> dict:
    gpu = _gpu(processor_handle, "amdsmi_get_clock_info")
    return {"clk": gpu.gfx_clock_mhz, "min_clk": 500, "max_clk": 2100, "clk_locked": False}


def amdsmi_get_gpu_process_list(processor_handle) -> list[dict]:
    gpu = _gpu(processor_handle, "amdsmi_get_gpu_process_list")
    if not gpu.processes_readable:
        raise AmdSmiLibraryException(AmdSmiStatus.NO_PERM)
    return [{"name": "python", "pid": pid, "mem": 0} for pid in gpu.pids]


def amdsmi_get_gpu_compute_partition(processor_handle) -> str:
    return _gpu(processor_handle, "amdsmi_get_gpu_compute_partition").compute_partition


def amdsmi_get_gpu_memory_partition(processor_handle) -> str:
    return _gpu(processor_handle, "amdsmi_get_gpu_memory_partition").memory_partition


def _from_environment() -> None:
    """FAKE_AMDSMI_GPUS=N: N MI300X GPUs at import (for `joulebench devices` in a subprocess)."""
    for i in range(int(os.environ.get("FAKE_AMDSMI_GPUS", "0"))):
        FAKE.gpus.append(
            FakeAmdGpu(
                uuid=f"6aff74a1-0000-1000-8000-c1a2b3c4d5e{i}", bdf=f"0000:{0xC1 + i:02x}:00.0"
            )
        )


_from_environment()
