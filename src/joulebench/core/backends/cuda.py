"""NVIDIA GPUs (`cuda`, `cuda:N` with a CUDA build of torch), read through NVML.

`devices: auto` picks every GPU both torch and NVML see, matched by UUID (else PCI bus id).
A job is pinned to its GPU by UUID (CUDA_VISIBLE_DEVICES=GPU-<uuid>: it then sees it as
cuda:0). `nvml_state` reads what `joulebench check` reports (persistence, power limit,
clocks, ECC, MIG, temperature) through the meter's NVML handle; the simulated GPUs
(sim.backend) share it, as they are read through a fake NVML. Its native precisions
follow from its compute capability (`cuda_native`), as do a simulated GPU's.
"""

from __future__ import annotations

from joulebench.core.backends.base import (
    DeviceIdentity,
    DeviceState,
    KnobControl,
    KnobRefused,
    Libraries,
    NativePrecisions,
)
from joulebench.core.backends.torch_gpu import (
    TorchGpuBackend,
    TorchGpuDevice,
    cuda_ordinal,
    match_torch,
    optional_call,
    torch_label,
    visible_setting,
)
from joulebench.core.methods import PRECISIONS, TORCH_TENSORRT

PERSISTENCE_FIX = "nvidia-smi -pm 1"
# What NVML needs to change a board's settings, and how to grant it.
KNOB_PERMISSION = (
    "setting a GPU's power limit or clocks needs root (NVML: no permission): run the profile "
    "job as root, or set it yourself (sudo nvidia-smi -pl WATTS / -lgc MHZ) and measure a "
    "method without the key"
)
# bf16 in hardware from Ampere's tensor cores (torch.cuda.is_bf16_supported(
# including_emulation=False) draws the same line); fp16 from Volta's, and before them only
# on the GPUs that run it at twice fp32's rate: Jetson TX1 (5.3), P100 (6.0), Jetson TX2
# (6.2). Other Pascal GPUs (GTX 10xx, P40: 6.1) run fp16 at 1/64 of fp32's rate.
# TF32 (fp32 tensors, a 10-bit mantissa in the tensor cores) from Ampere too.
BF16_FROM = TF32_FROM = (8, 0)
FP16_FROM = (7, 0)
FAST_FP16_BEFORE_VOLTA = ((5, 3), (6, 0), (6, 2))


def cuda_native(major: int, minor: int) -> NativePrecisions:
    """The precisions an NVIDIA GPU of compute capability major.minor runs natively."""
    capability, text = (major, minor), f"compute capability {major}.{minor}"
    native, why_not = ["fp32"], {}
    if capability >= FP16_FROM or capability in FAST_FP16_BEFORE_VOLTA:
        native.append("fp16")
    else:
        why_not["fp16"] = f"{text}, without fast fp16 (from Volta, 7.0; P100, Jetson)"
    if capability >= BF16_FROM:
        native.append("bf16")
    else:
        why_not["bf16"] = f"{text}, before Ampere's bf16 (8.0)"
    if capability >= TF32_FROM:
        native.append("tf32")
    else:
        why_not["tf32"] = f"{text}, before Ampere's TF32 tensor cores (8.0)"
    ordered = tuple(p for p in PRECISIONS if p in native)
    return NativePrecisions(ordered, why_not, basis=text)


def nvml_devices(nvml) -> tuple[list[tuple[str | None, str | None, str]], str]:
    """[(uuid, pci bus id, name)] of every GPU NVML sees, and why there are none."""
    from joulebench.core.meters.nvml import bus_id

    try:
        nvml.nvmlInit()
    except nvml.NVMLError as err:
        return [], f"NVML: {err} (no NVIDIA driver)"
    try:
        out = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(handle)
            name = name.decode() if isinstance(name, bytes) else str(name)
            out.append(
                (nvml.nvmlDeviceGetUUID(handle), bus_id(nvml.nvmlDeviceGetPciInfo(handle)), name)
            )
        return out, "" if out else "NVML sees no GPU"
    finally:
        nvml.nvmlShutdown()


def nvml_index_serial(nvml, uuid: str | None) -> tuple[int | None, str | None]:
    """NVML's index and serial number of the GPU of `uuid` (None where NVML does not say)."""
    from joulebench.core.meters.nvml import normalize_uuid

    try:
        nvml.nvmlInit()
    except nvml.NVMLError:
        return None, None
    try:
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            if normalize_uuid(nvml.nvmlDeviceGetUUID(handle)) == normalize_uuid(uuid):
                serial = _nv(nvml, "nvmlDeviceGetSerial", handle)
                serial = serial.decode() if isinstance(serial, bytes) else serial
                return index, (str(serial) if serial else None)
        return None, None
    finally:
        nvml.nvmlShutdown()


def _nv(nvml, fn_name: str, *args):
    """An NVML call that may not exist or not be supported: its value or None."""
    return optional_call(nvml, nvml.NVMLError, fn_name, *args)


def _watts(milliwatts) -> float | None:
    return None if milliwatts is None else milliwatts / 1000.0


def nvml_state(meter) -> DeviceState:
    """The GPU's settings and state, read through an NvmlMeter's handle."""
    nv, h = meter.nvml, meter.handle
    info = meter.describe()
    persistence = _nv(nv, "nvmlDeviceGetPersistenceMode", h)
    limit = _nv(nv, "nvmlDeviceGetPowerManagementLimit", h) or _nv(
        nv, "nvmlDeviceGetEnforcedPowerLimit", h
    )
    limits = _nv(nv, "nvmlDeviceGetPowerManagementLimitConstraints", h)
    sm = getattr(nv, "NVML_CLOCK_SM", 1)
    target_id = getattr(nv, "NVML_CLOCK_ID_APP_CLOCK_TARGET", 1)
    default_id = getattr(nv, "NVML_CLOCK_ID_APP_CLOCK_DEFAULT", 2)
    ecc = _nv(nv, "nvmlDeviceGetEccMode", h)
    mig = _nv(nv, "nvmlDeviceGetMigMode", h)
    counter = bool(meter.has_energy_counter)
    return DeviceState(
        device_name=info.get("device_name"),
        driver_version=info.get("driver_version"),
        library=f"NVML {info.get('nvml_version')}",
        persistence_mode=None
        if persistence is None
        else persistence == getattr(nv, "NVML_FEATURE_ENABLED", 1),
        power_limit_w=_watts(limit),
        default_power_limit_w=_watts(_nv(nv, "nvmlDeviceGetPowerManagementDefaultLimit", h)),
        power_limit_range_w=None if limits is None else (limits[0] / 1000.0, limits[1] / 1000.0),
        app_clock_mhz=_nv(nv, "nvmlDeviceGetClock", h, sm, target_id),
        default_app_clock_mhz=_nv(nv, "nvmlDeviceGetClock", h, sm, default_id),
        ecc=None if ecc is None else bool(ecc[0]),
        partitioned=None if mig is None else mig[0] == getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1),
        partition_name="MIG",
        temperature_c=_nv(
            nv, "nvmlDeviceGetTemperature", h, getattr(nv, "NVML_TEMPERATURE_GPU", 0)
        ),
        energy_counter=counter,
        energy_source="nvmlDeviceGetTotalEnergyConsumption"
        if counter
        else "not supported (pre-Volta): energy is the integrated power trace "
        "(meter nvml:power-integration)",
        power_fields=sorted(meter.power_fields),
        instant_power="power_w" in meter.power_fields,
        power_source=str(info.get("power_source")),
        fixes={"persistence_mode": PERSISTENCE_FIX},
    )


class NvmlKnobs(KnobControl):
    """Power limit and locked SM clock through NVML, on an NvmlMeter's handle (a real GPU's
    or a simulated one's: the fake pynvml has the same calls)."""

    def __init__(self, meter):
        self.meter, self.nvml, self.handle = meter, meter.nvml, meter.handle
        self.uuid = str(meter.uuid)

    def _call(self, fn_name: str, *args):
        try:
            return getattr(self.nvml, fn_name)(self.handle, *args)
        except self.nvml.NVMLError as err:
            if isinstance(err, getattr(self.nvml, "NVMLError_NoPermission", ())):
                raise KnobRefused(KNOB_PERMISSION) from None
            raise KnobRefused(f"NVML {fn_name}: {err}") from None

    def power_limit_w(self) -> float:
        return self._call("nvmlDeviceGetPowerManagementLimit") / 1000.0

    def default_power_limit_w(self) -> float:
        return self._call("nvmlDeviceGetPowerManagementDefaultLimit") / 1000.0

    def power_limit_range_w(self) -> tuple[float, float]:
        low_mw, high_mw = self._call("nvmlDeviceGetPowerManagementLimitConstraints")
        return low_mw / 1000.0, high_mw / 1000.0

    def set_power_limit_w(self, watts: float) -> None:
        self._call("nvmlDeviceSetPowerManagementLimit", int(round(watts * 1000)))

    def sm_clock_mhz(self, preset: str | None = None) -> float:
        sm = self.nvml.NVML_CLOCK_SM
        if preset == "max":
            return float(self._call("nvmlDeviceGetMaxClockInfo", sm))
        if preset == "base":
            default_id = self.nvml.NVML_CLOCK_ID_APP_CLOCK_DEFAULT
            return float(self._call("nvmlDeviceGetClock", sm, default_id))
        return float(self._call("nvmlDeviceGetClockInfo", sm))

    def lock_sm_clock_mhz(self, mhz: int) -> None:
        self._call("nvmlDeviceSetGpuLockedClocks", int(mhz), int(mhz))

    def reset_sm_clock(self) -> None:
        self._call("nvmlDeviceResetGpuLockedClocks")

    def close(self) -> None:
        self.meter.close()


class CudaDevice(TorchGpuDevice):
    """An NVIDIA GPU, bound: read, and its knobs set, through NVML."""

    def native_precisions(self) -> NativePrecisions | None:
        props = self.properties()
        return None if props is None else cuda_native(int(props.major), int(props.minor))

    def state(self, meter) -> DeviceState:
        return nvml_state(meter)

    def knob_control(self) -> NvmlKnobs:
        """Its power limit and clocks through an NVML handle of its own, held until closed."""
        meter, _ = self.meter()
        return NvmlKnobs(meter)


class CudaBackend(TorchGpuBackend):
    """NVIDIA GPUs through NVML; the energy counter where the GPU has one (Volta and newer)."""

    kind = "cuda"
    meters = ("nvml",)
    library, library_option = "NVML", "nvml"
    uses_check_refresh = True  # NVIDIA's sensors refresh slowly: the check measures how slowly
    native_runtimes = (TORCH_TENSORRT,)  # TensorRT builds for NVIDIA GPUs only
    device_class = CudaDevice

    def claims(self, device: str, libs: Libraries) -> bool:
        return not libs.is_rocm()

    def discover(self, libs: Libraries) -> tuple[list[DeviceIdentity], str]:
        try:
            nvml = libs.get_nvml()
        except Exception as err:  # MeterUnavailable: nvidia-ml-py not installed
            return [], f"NVML: {err}"
        found, why = nvml_devices(nvml)
        if not found:
            return [], why
        torch = libs.get_torch()
        names = ", ".join(name for _, _, name in found)
        if not getattr(torch.version, "cuda", None):
            return [], f"NVML sees {names}, but {torch_label(torch)}: install a CUDA build of torch"
        if not torch.cuda.is_available():
            hint = f" ({visible_setting()})" if visible_setting() else ""
            return [], f"NVML sees {names}, but torch sees no CUDA device{hint}"
        return match_torch(torch, found, "NVML")

    def not_better(self, meter) -> list[str]:
        if meter.has_energy_counter:
            return []
        return [
            "nvml: no total-energy counter on this GPU (older than Volta): energy is "
            "the sampled power integrated"
        ]

    def pool_member(self, device: str, libs: Libraries) -> DeviceIdentity:
        """torch's UUID of `device` as NVML writes it (`GPU-...`), with NVML's index and
        serial of the GPU of that UUID."""
        from joulebench.core.meters.nvml import cuda_identity, normalize_uuid

        uuid, bus = cuda_identity(cuda_ordinal(device), cuda=libs.get_torch().cuda)
        uuid = "GPU-" + normalize_uuid(uuid) if normalize_uuid(uuid) else None
        index, serial = nvml_index_serial(libs.get_nvml(), uuid)
        name = str(libs.get_torch().cuda.get_device_properties(cuda_ordinal(device)).name)
        return DeviceIdentity(device, name, uuid, bus, cuda_ordinal(device), index, serial)

    def pin_value(self, device: str, libs: Libraries) -> str | None:
        from joulebench.core.meters.nvml import cuda_identity, normalize_uuid

        uuid, _ = cuda_identity(cuda_ordinal(device), cuda=libs.get_torch().cuda)
        return "GPU-" + normalize_uuid(uuid) if normalize_uuid(uuid) else None


BACKEND = CudaBackend()
