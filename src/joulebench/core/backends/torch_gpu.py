"""What the two kinds of GPU torch calls `cuda` share: NVIDIA's (backends.cuda) and, on a
ROCm build of torch, AMD's (backends.rocm).

Both are `cuda` / `cuda:N` to torch and to a study; each is matched to its management
library's device (NVML, AMD SMI) by UUID, else PCI bus id, never by index (those libraries
number GPUs in their own order). The model runs on the device itself, work is synchronised
with torch.cuda.synchronize, and a finished configuration's cache is emptied.
"""

from __future__ import annotations

import gc
import os
from functools import cached_property

from joulebench.core.backends.base import (
    Backend,
    DeviceError,
    DeviceIdentity,
    DeviceInfo,
    Libraries,
)
from joulebench.core.backends.bound import BoundDevice

CUDA_PATTERN = r"cuda(:[0-9]+)?"
VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"  # HIP honours it too


def cuda_ordinal(device: str) -> int:
    """'cuda:2' -> 2, 'cuda' -> 0."""
    _, _, index = device.partition(":")
    return int(index or 0)


def torch_label(torch) -> str:
    """'torch 2.14.1, CUDA 12.8' (or ROCm, or 'built without CUDA'): for messages."""
    version = getattr(torch, "version", None)
    cuda, hip = getattr(version, "cuda", None), getattr(version, "hip", None)
    if hip:
        return f"torch {torch.__version__}, ROCm {hip}"
    return f"torch {torch.__version__}" + (f", CUDA {cuda}" if cuda else ", built without CUDA")


def visible_setting() -> str:
    """ "CUDA_VISIBLE_DEVICES='1,0'" when it is set (it hides and renumbers GPUs), else ""."""
    visible = os.environ.get(VISIBLE_ENV)
    return f"{VISIBLE_ENV}={visible!r}" if visible is not None else ""


def optional_call(library, error: type[Exception], fn_name: str, *args):
    """A management library's call that may not exist in this version or not be supported
    by this GPU (raising `error`): its value, or None."""
    fn = getattr(library, fn_name, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except error:
        return None


def match_torch(torch, found, source: str) -> tuple[list[DeviceIdentity], str]:
    """Each torch cuda device matched to `found` [(uuid, bus id, name)] by UUID or bus id."""
    from joulebench.core.meters.nvml import cuda_identity, match_nvml_index

    pairs = [(uuid, bus) for uuid, bus, _ in found]
    gpus, unmatched = [], []
    for ordinal in range(torch.cuda.device_count()):
        uuid, bus = cuda_identity(ordinal, cuda=torch.cuda)
        try:
            index, _ = match_nvml_index(uuid, bus, pairs)
        except LookupError:
            unmatched.append(f"cuda:{ordinal}")
            continue
        name = found[index][2]
        gpus.append(DeviceIdentity(f"cuda:{ordinal}", name, uuid, bus, ordinal, index))
    why = ""
    if unmatched:
        why = f"no {source} device matches {', '.join(unmatched)} by UUID or PCI bus id"
    return gpus, why


class TorchGpuDevice(BoundDevice):
    """A GPU torch drives as `cuda:N`, bound: its ordinal and torch device, held once;
    its kind's management library (the Libraries' NVML or AMD SMI) reads its meter."""

    def __init__(self, backend, device: str, label: str = "", libs: Libraries | None = None):
        super().__init__(backend, device, label, libs)
        self.ordinal = cuda_ordinal(device)  # torch's index (not the library's own)

    @cached_property
    def tensor_device(self):
        import torch

        return torch.device("cuda", self.ordinal)

    def name(self) -> str:
        return str(self.libs.get_torch().cuda.get_device_name(self.ordinal))

    def properties(self):
        """torch's properties of the GPU (name, compute capability, gfx arch), or None when
        torch cannot run it here."""
        torch = self.libs.get_torch()
        if self.backend.torch_problem("", self.device, torch):
            return None
        return torch.cuda.get_device_properties(self.ordinal)

    def build_meter(self, prefer: str | None, **options):
        """The kind's meter of this GPU, matched by its UUID or bus id (given in `options`,
        else torch's), through the library the device holds (a fake in tests)."""
        from joulebench.core.meters.registry import make_meter

        option = self.backend.library_option
        options.setdefault(option, getattr(self.libs, option))
        return make_meter(self.backend.meters[0], cuda_index=self.ordinal, **options), []

    def open_context(self) -> None:
        self.libs.get_torch().zeros(1, device=self.tensor_device)  # as during profiling

    def sync(self) -> None:
        import torch

        torch.cuda.synchronize(self.tensor_device)

    def free_memory(self) -> None:
        import torch

        gc.collect()
        torch.cuda.empty_cache()

    def grad_scaler_device(self) -> str | None:
        return "cuda"

    def busy_fraction(self, step, sync, step_s: float) -> float:
        """From the kernels torch's profiler records over a short trace (host_bound)."""
        from joulebench.core.host_bound import trace_steps, traced_busy_fraction

        return traced_busy_fraction(step, sync, trace_steps(step_s))

    def onnx_device(self) -> tuple[str, int] | None:
        return "cuda", self.ordinal

    def execution_providers(self, runtime: str, precision: str, engines_dir: str) -> list:
        from joulebench.core.methods import ONNXRUNTIME, ORT_TENSORRT

        cuda = ("CUDAExecutionProvider", {"device_id": self.ordinal})
        if runtime == ONNXRUNTIME:
            return [cuda, "CPUExecutionProvider"]
        if runtime != ORT_TENSORRT:
            raise DeviceError(f"no ONNX Runtime provider for runtime {runtime!r}")
        trt_options = {
            "device_id": self.ordinal,
            "trt_fp16_enable": precision == "fp16",
            "trt_engine_cache_enable": True,  # built on the first run (the check), then reused
            "trt_engine_cache_path": engines_dir,
        }
        return [("TensorrtExecutionProvider", trt_options), cuda, "CPUExecutionProvider"]

    def check_target(self, prefer: str | None = None):
        from joulebench.core.targets import TorchGpuTarget

        def make_meter(**kw):
            return self.meter(prefer=prefer, **kw)[0]

        return TorchGpuTarget(self.backend.canonical(self.device), make_meter)


class TorchGpuBackend(Backend):
    """A GPU torch drives as `cuda:N`; subclasses read it through their library."""

    pattern = CUDA_PATTERN
    spellings = ("cuda", "cuda:N")
    auto = True
    runs_on_gpu = True
    library = ""  # "NVML", "AMD SMI": for messages
    library_option = ""  # the meter's option (and Libraries' field) for it: "nvml", "amdsmi"
    device_class = TorchGpuDevice

    def canonical(self, device: str) -> str:
        return f"cuda:{cuda_ordinal(device)}"

    def sibling(self, device: str, ordinal: int) -> str:
        return f"cuda:{ordinal}"

    def torch_problem(self, label: str, device: str, torch) -> str:
        """Why torch cannot run `device` here (no GPU build, none visible, too few), or ""."""
        prefix = f"devices: '{label}' is {device}, but"
        if not getattr(torch.version, "cuda", None) and not getattr(torch.version, "hip", None):
            return (
                f"{prefix} this torch has no CUDA ({torch_label(torch)}). Install a CUDA build "
                "of torch, or measure the CPU (devices: {cpu: cpu}, or devices: auto)."
            )
        if not torch.cuda.is_available():
            hint = f"; {visible_setting()}" if visible_setting() else ""
            return (
                f"{prefix} no CUDA device is visible (torch.cuda.is_available() is False{hint}). "
                "Check the driver with `nvidia-smi`, or use devices: auto."
            )
        count = torch.cuda.device_count()
        if cuda_ordinal(device) >= count:
            return f"{prefix} only {count} CUDA device(s) are visible (cuda:0..cuda:{count - 1})."
        return ""

    def describe(
        self, label: str, device: str, libs: Libraries, meter_options: dict | None = None
    ) -> DeviceInfo:
        from joulebench.core.meters import MeterUnavailable
        from joulebench.core.meters.nvml import cuda_identity

        info = DeviceInfo(label, device)
        torch = libs.get_torch()
        problem = self.torch_problem(label, device, torch)
        if problem:
            info.problems.append(problem)
            return info
        ordinal = cuda_ordinal(device)
        uuid, bus = cuda_identity(ordinal, cuda=torch.cuda)
        info.name = str(torch.cuda.get_device_properties(ordinal).name)
        options = {"uuid": uuid, "pci_bus_id": bus, "sample_interval_s": None}
        try:
            meter, _ = self.bind(device, label, libs).meter(**options)
        except MeterUnavailable as err:
            info.problems.append(
                f"devices: '{label}' is {device}, but {self.library} cannot read it: {err}"
            )
            return info
        with meter:
            info.meter = meter.name
            info.not_better = self.not_better(meter)
        return info

    def not_better(self, meter) -> list[str]:
        """Why a job on this GPU gets a worse reading than the best this kind offers."""
        return []

    def pin(self, device: str, value: str, env) -> str:
        """Make `value` (a UUID) the only visible GPU: the job's device is cuda:0."""
        env[VISIBLE_ENV] = value
        return "cuda:0"
