"""TensorRT natively, through torch-tensorrt: `runtime: torch-tensorrt`.

Beside ONNX Runtime's TensorRT provider (`runtime: ort-tensorrt`, joulebench.core.runtimes),
this builds a TensorRT engine from the PyTorch model itself with torch-tensorrt's dynamo
path (`torch_tensorrt.compile(model, ir="dynamo", ...)`), once per model, input shape,
precision, weights digest, GPU and torch / torch-tensorrt / TensorRT versions, and caches it
(`torch_tensorrt.save`, an ExportedProgram file) under `<onnx_cache>/torch-tensorrt/` with
the same atomic build-once logic as the ONNX exports. The build's time is recorded apart from
the measurement (`engine_build_s`). Before anything is measured the engine's output on the
measured batch is checked against PyTorch's (fp32) within the method's tolerance: a
mismatch is a row with status "mismatch". Where torch-tensorrt is not installed, is not the
release for this torch, or no supported CUDA GPU is there, the row is "skipped" and its
reason says how to fix it. Nothing here imports torch-tensorrt until a method needs it.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from joulebench.core.methods import TORCH_TENSORRT
from joulebench.core.runtimes import (
    cached_build,
    check_output,
    shape_key,
    stdout_to_stderr,
    weights_digest,
)
from joulebench.safe_text import file_name
from joulebench.tables import short_reason

if TYPE_CHECKING:
    from joulebench.core.backends import BoundDevice

EXTRA = "torch-tensorrt"  # pyproject's optional extra: pip install 'joulebench[torch-tensorrt]'
ENGINE_FOLDER = "torch-tensorrt"  # under profile.onnx_cache, beside the ONNX exports
PROGRAM = "engine.pt2"  # torch_tensorrt.save's ExportedProgram, holding the TensorRT engines
RECORD = "build.json"  # written last: a folder with it is a whole build
# The CUDA 13 that this torch-tensorrt's TensorRT (tensorrt-cu13 11.1) is built on supports
# Turing (compute capability 7.5) and newer; Volta and older were dropped.
MIN_CAPABILITY = (7, 5)
PROVIDER = "TensorRT"  # runtime_provider of a torch-tensorrt row


def major_minor(version: str) -> str:
    return ".".join(version.split("+", 1)[0].split(".")[:2])


def install_hint() -> str:
    """How to get the torch-tensorrt release that matches this torch (same major.minor)."""
    import torch

    series = major_minor(torch.__version__)
    return f"pip install 'joulebench[{EXTRA}]' (torch-tensorrt {series}.*, for torch {series})"


def gpu_target(device: BoundDevice) -> tuple[dict, str]:
    """({"gpu": name, "arch": "sm90"}, "") for a CUDA GPU TensorRT can build for, else
    ({}, why not and how to fix it)."""
    import torch

    if TORCH_TENSORRT not in device.native_runtimes:
        return {}, f"torch-tensorrt runs on CUDA GPUs only, not {device}: use a cuda device"
    if not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        return {}, (
            f"no CUDA GPU is visible to torch {torch.__version__} ({build}); torch-tensorrt "
            "needs one: run on a GPU node with a CUDA build of torch"
        )
    where = device.tensor_device
    major, minor = torch.cuda.get_device_capability(where)
    name = torch.cuda.get_device_name(where)
    if (major, minor) < MIN_CAPABILITY:
        low = ".".join(map(str, MIN_CAPABILITY))
        return {}, (
            f"{name} (compute capability {major}.{minor}) is not supported by this TensorRT "
            f"(needs {low} or newer): measure on a newer GPU, or use runtime ort-tensorrt "
            "with a TensorRT that still supports it"
        )
    return {"gpu": name, "arch": f"sm{major}{minor}"}, ""


def _import_reason() -> str:
    """Why torch_tensorrt cannot be used with this torch, or "" when it can."""
    import torch

    try:
        import torch_tensorrt
    except ModuleNotFoundError:
        return f"torch-tensorrt is not installed: {install_hint()}"
    except Exception as exc:  # it raises a bare Exception when TensorRT's libraries are missing
        return f"torch-tensorrt does not import ({short_reason(exc, 200)}): {install_hint()}"
    got, want = major_minor(torch_tensorrt.__version__), major_minor(torch.__version__)
    if got != want:
        return (
            f"torch-tensorrt {torch_tensorrt.__version__} is the release for torch {got}, "
            f"not this torch {torch.__version__}: {install_hint()}"
        )
    return ""


def unavailable_reason(runtime: str, device: BoundDevice) -> str | None:
    """Why torch-tensorrt cannot run on `device` here, or None when it can."""
    if runtime != TORCH_TENSORRT:
        raise ValueError(f"trt_native runs runtime {TORCH_TENSORRT}, not {runtime}")
    _, reason = gpu_target(device)
    return reason or _import_reason() or None


def versions() -> dict:
    """The versions an engine is built by: it is rebuilt when any of them changes."""
    import torch
    import torch_tensorrt

    tensorrt = sys.modules.get("tensorrt")  # torch_tensorrt's import puts TensorRT there
    return {
        "torch_version": torch.__version__,
        "torch_tensorrt_version": torch_tensorrt.__version__,
        "tensorrt_version": getattr(tensorrt, "__version__", "unknown"),
    }


def precision_mode(method) -> str:
    """fp32; fp16 (TensorRT's autocast picks fp16 kernels, input and output stay fp32); or
    fp16-cast (`autocast: false`: weights and input cast to fp16, the engine strongly typed)."""
    if method.precision == "fp32":
        return "fp32"
    return method.precision if method.autocast else f"{method.precision}-cast"


def _blocks(compiled) -> dict:
    """How much of the graph TensorRT runs: torch-tensorrt names its TensorRT engines
    `_run_on_acc_N` and the parts it leaves to PyTorch `_run_on_gpu_N`."""
    names = [name for name, _ in compiled.named_children()]
    return {
        "trt_engines": sum("_run_on_acc" in n for n in names),
        "pytorch_blocks": sum("_run_on_gpu" in n for n in names),
    }


def build_engine(model, x, method, device: BoundDevice, folder: Path) -> dict:
    """Compile `model` for the static shape and dtype of `x` and save it into `folder`;
    returns the build's record (engine_build_s: the compile's seconds, the save excluded)."""
    import torch
    import torch_tensorrt

    mode = precision_mode(method)
    options = {}
    if mode == method.precision != "fp32":  # TensorRT's autocast; a cast model needs none
        options = {"enable_autocast": True, "autocast_low_precision_type": method.dtype}
    start = time.perf_counter()
    with torch.no_grad(), warnings.catch_warnings(), stdout_to_stderr():
        warnings.simplefilter("ignore")
        compiled = torch_tensorrt.compile(
            model,
            ir="dynamo",
            arg_inputs=[torch_tensorrt.Input(shape=tuple(x.shape), dtype=x.dtype)],
            device=device.tensor_device,
            timing_cache_path=str(folder / "timing.cache"),  # a cold cache: comparable builds
            **options,
        )
        engine_build_s = time.perf_counter() - start
        blocks = _blocks(compiled)
        if not blocks["trt_engines"]:
            raise RuntimeError("torch-tensorrt built no TensorRT engine: every op fell to PyTorch")
        torch_tensorrt.save(compiled, str(folder / PROGRAM), arg_inputs=[x])
    return {"engine_build_s": engine_build_s, "precision_mode": mode, **blocks}


def _load(folder: Path):
    """The cached engine as a module to call (ValueError for a file that is not one)."""
    import torch_tensorrt

    with warnings.catch_warnings(), stdout_to_stderr():
        warnings.simplefilter("ignore")
        return torch_tensorrt.load(str(folder / PROGRAM)).module()


class TrtStep:
    """One batch through the engine, as the protocol's `step()`: input and output stay on
    the GPU, as in a PyTorch step."""

    def __init__(self, module, x):
        self.module, self.x = module, x

    def __call__(self):
        return self.module(self.x)

    def output(self):
        import torch

        with torch.inference_mode():
            out = self.module(self.x)
        out = out[0] if isinstance(out, tuple | list) else out
        return out.float().cpu().numpy()


def engine_folder(model, x, mode: str, model_name: str, target: dict, cache_dir) -> Path:
    """Where the engine of this configuration is cached: model / shape-precision-weights-
    GPU architecture-a digest of the GPU's name and the versions (in build.json in full)."""
    built_by = json.dumps({**target, **versions()}, sort_keys=True)
    env = hashlib.sha256(built_by.encode()).hexdigest()[:8]
    key = f"{shape_key(x)}-{mode}-{weights_digest(model)}-{target['arch']}-{env}"
    return Path(cache_dir) / ENGINE_FOLDER / file_name(model_name) / file_name(key)


def prepare_exported(
    model, x, method, *, model_name: str, device: BoundDevice, threads, cache_dir
) -> tuple[TrtStep, dict]:
    """Build (or reuse) the engine of `model`, check its output against PyTorch's.

    `model` is the fp32 PyTorch model in eval mode and `x` the measured batch, both on the
    GPU (runtimes.prepare_exported's arguments; `threads` means nothing here). Returns the
    step to measure and the row fields that describe the runtime.
    """
    import torch

    target, reason = gpu_target(device)
    if reason:
        raise RuntimeError(reason)
    with torch.inference_mode():
        reference = model(x).float().cpu().numpy()
    mode = precision_mode(method)
    folder = engine_folder(model, x, mode, model_name, target, cache_dir)
    if mode.endswith("-cast"):
        model, x = model.to(method.dtype), x.to(method.dtype)
    module, record, cached = cached_build(
        folder,
        RECORD,
        lambda tmp: {
            **build_engine(model, x, method, device, tmp),
            **target,
            **versions(),
            "model": model_name,
        },
        _load,
    )
    step = TrtStep(module, x)
    detail = {"engine_path": str(folder / PROGRAM), "cached": cached, **record}
    known = {"engine_build_s": record["engine_build_s"]}
    return step, check_output(step.output(), reference, method, device, PROVIDER, detail, known)
