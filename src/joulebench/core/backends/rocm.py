"""AMD GPUs: `cuda`, `cuda:N` on a ROCm build of torch (torch.version.hip), read through AMD SMI.

`devices: auto` picks them when no NVIDIA GPU is found. HIP's UUIDs are not AMD SMI's, so
a GPU is matched by PCI bus id, and jobs keep `cuda:N` (no pinning by UUID). Tested against
a fake of amdsmi (tests/fake_amdsmi), not yet on AMD hardware (docs/measurement.md#amd-gpus).
Its native precisions follow from its gfx architecture (`rocm_native`; torch's
is_bf16_supported() is True on every ROCm GPU, so it cannot tell).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from joulebench.core.backends.base import (
    DeviceIdentity,
    DeviceState,
    KnobRefused,
    Libraries,
    NativePrecisions,
)
from joulebench.core.backends.torch_gpu import (
    TorchGpuBackend,
    TorchGpuDevice,
    match_torch,
    optional_call,
    torch_label,
)

UNTESTED = (
    "AMDSMI: the AMD meter is tested against a fake of amdsmi only, not yet run "
    "on AMD hardware (docs/measurement.md#amd-gpus)"
)
# bf16 in hardware: the matrix cores of CDNA 1-4 (gfx908 MI100, gfx90a MI200, gfx94x MI300,
# gfx95x MI350) and the WMMA units of RDNA 3-4 (gfx11xx, gfx12xx); MI25/MI50/MI60 (gfx900,
# gfx906) and RDNA 1-2 (gfx10xx) convert it to fp32. fp16 (packed math) from Vega (gfx9).
# From AMD's ISA documents: assumed, not measured on AMD hardware.
# tf32 is measured on NVIDIA GPUs only: MI300's xf32 is another format, reached through
# other switches (hipBLASLt's), and not wired here.
NO_TF32 = "tf32 is measured on NVIDIA GPUs only (compute capability 8.0+), not with ROCm"
BF16_GFX9 = ("908", "90a", "94", "95")  # the gfx9 parts with bf16 (prefixes)
_GFX = re.compile(r"gfx(\d{1,2})([0-9a-f]{2})")
# Where an AMD GPU shows without any AMD software: the PCI bus (Linux), vendor 0x1002 (AMD's
# graphics; its CPUs' bridges are 0x1022) in a display (0x03) or accelerator (0x12, Instinct)
# class.
PCI_DEVICES = Path("/sys/bus/pci/devices")
AMD_GPU_VENDOR = "0x1002"
GPU_CLASSES = ("0x03", "0x12")
_WHOLE = {"amdsmi_get_gpu_compute_partition": "SPX", "amdsmi_get_gpu_memory_partition": "NPS1"}


def _amd(amdsmi, fn_name: str, *args):
    """An AMD SMI call that may not exist or not be supported: its value or None."""
    return optional_call(amdsmi, amdsmi.AmdSmiException, fn_name, *args)


def _number(value) -> float | None:
    """A reported number; None for "N/A" and the like."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def amdsmi_state(meter) -> DeviceState:
    """The GPU's settings and state, read through an AmdSmiMeter's handle."""
    a, h = meter.amdsmi, meter.handle
    info = meter.describe()
    cap = _amd(a, "amdsmi_get_power_cap_info", h) or {}
    power_cap, default_cap = _number(cap.get("power_cap")), _number(cap.get("default_power_cap"))
    low, high = _number(cap.get("min_power_cap")), _number(cap.get("max_power_cap"))
    partitions = [_amd(a, fn, h) for fn in _WHOLE]
    modes = [(str(p), whole) for p, whole in zip(partitions, _WHOLE.values(), strict=True) if p]
    temperature = _amd(
        a,
        "amdsmi_get_temp_metric",
        h,
        a.AmdSmiTemperatureType.HOTSPOT,
        a.AmdSmiTemperatureMetric.CURRENT,
    )
    version = _amd(a, "amdsmi_get_lib_version") or {}
    return DeviceState(
        device_name=info.get("device_name"),
        driver_version=info.get("driver_version"),
        library=f"AMD SMI {version.get('build', '')}".strip(),
        power_limit_w=None if power_cap is None else power_cap / 1e6,  # µW
        default_power_limit_w=None if default_cap is None else default_cap / 1e6,
        power_limit_range_w=None if low is None or high is None else (low / 1e6, high / 1e6),
        partitioned=any(mode not in ("", whole, "N/A") for mode, whole in modes) if modes else None,
        partition_name="partition",
        temperature_c=_number(temperature),
        energy_source="amdsmi_get_energy_count",
        power_fields=["power_w", "power_avg_w"],
        power_source="amdsmi_get_power_info",
    )


def amd_gpu_present(root: Path | None = None) -> bool | None:
    """Whether the PCI bus holds an AMD GPU; None where the bus cannot be read (not Linux).
    AMD SMI's problems (not installed, no ROCm library, no amdgpu driver) are news only
    where there is an AMD GPU: on a CPU-only host they are said nowhere."""
    root = PCI_DEVICES if root is None else root
    try:
        devices = list(root.iterdir())
    except OSError:
        return None
    for device in devices:
        try:
            vendor = (device / "vendor").read_text().strip().lower()
            kind = (device / "class").read_text().strip().lower()
        except OSError:
            continue
        if vendor == AMD_GPU_VENDOR and kind.startswith(GPU_CLASSES):
            return True
    return False


def rocm_native(arch: str) -> NativePrecisions | None:
    """The precisions an AMD GPU runs natively, by torch's gcnArchName ('gfx90a:sramecc+:
    xnack-'); None for a name that is no gfx architecture."""
    match = _GFX.match(arch or "")
    if not match:
        return None
    name, family = match[0], int(match[1])
    text = f"{name} ({arch})" if arch != name else name
    native, why_not = ["fp32"], {}
    if family >= 9:
        native.append("fp16")
    else:
        why_not["fp16"] = f"{text}, before Vega's packed fp16 (gfx9)"
    if family >= 11 or (family == 9 and name[3:].startswith(BF16_GFX9)):
        native.append("bf16")
    else:
        why_not["bf16"] = f"{text}, without bf16 hardware (gfx908, gfx90a, gfx94x+, gfx11+)"
    why_not["tf32"] = NO_TF32
    return NativePrecisions(tuple(native), why_not, basis=f"gfx architecture {name}")


class RocmDevice(TorchGpuDevice):
    """An AMD GPU, bound: read through AMD SMI; its knobs are not wired yet."""

    def native_precisions(self) -> NativePrecisions | None:
        props = self.properties()
        return None if props is None else rocm_native(str(getattr(props, "gcnArchName", "")))

    def state(self, meter) -> DeviceState:
        return amdsmi_state(meter)

    def knob_control(self):
        raise KnobRefused(
            "power limits and locked clocks are set on NVIDIA GPUs only so far (AMD SMI's "
            "amdsmi_set_power_cap is not wired yet, docs/power.md)"
        )


class RocmBackend(TorchGpuBackend):
    """AMD GPUs through AMD SMI's energy accumulator."""

    kind = "rocm"
    meters = ("amdsmi",)
    library, library_option = "AMD SMI", "amdsmi"
    device_class = RocmDevice

    def claims(self, device: str, libs: Libraries) -> bool:
        return libs.is_rocm()

    def discover(self, libs: Libraries) -> tuple[list[DeviceIdentity], str]:
        from joulebench.core.meters.amdsmi import amd_devices

        try:
            amdsmi = libs.get_amdsmi()
        except Exception as err:  # MeterUnavailable: amdsmi not installed
            return [], "" if amd_gpu_present() is False else f"AMD SMI: {err}"
        try:
            amdsmi.amdsmi_init()
        except amdsmi.AmdSmiException as err:
            return [], "" if amd_gpu_present() is False else f"AMD SMI: {err} (no amdgpu driver)"
        try:
            found = [(uuid, bdf, name) for _, uuid, bdf, name in amd_devices(amdsmi)]
        finally:
            amdsmi.amdsmi_shut_down()
        if not found:
            return [], "AMD SMI sees no GPU"
        torch = libs.get_torch()
        names = ", ".join(name for _, _, name in found)
        if not getattr(torch.version, "hip", None):
            return (
                [],
                f"AMD SMI sees {names}, but {torch_label(torch)}: install a ROCm build of torch",
            )
        return match_torch(torch, found, "AMD SMI")

    def not_better(self, meter) -> list[str]:
        return [UNTESTED]


BACKEND = RocmBackend()
