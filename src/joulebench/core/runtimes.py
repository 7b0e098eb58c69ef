"""Runtimes other than PyTorch: ONNX Runtime, and TensorRT through ONNX Runtime's provider.

A method with `runtime: onnxruntime` (or `ort-tensorrt`) runs the same random-weight model as
the PyTorch methods, exported once to ONNX and cached under a folder keyed by model name,
input shape, opset and a digest of the weights. Before anything is measured, the runtime's
output on the measured batch is compared with PyTorch's on that same batch: a mismatch is a
row with status "mismatch" and the error, never a measurement. A runtime that is not
installed, or a provider this ONNX Runtime lacks, is a row with status "skipped" and why.
ONNX Runtime is an optional dependency: nothing here imports it until a method needs it.

What every runtime shares lives here too (`NotMeasured`, `check_output`, `cached_build`,
`weights_digest`): native TensorRT through torch-tensorrt (joulebench.core.trt_native)
builds, caches and checks its engines with them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from joulebench.core.methods import ONNX_RUNTIMES, ORT_TENSORRT, PYTORCH
from joulebench.safe_text import file_name
from joulebench.tables import REASON_MAX_CHARS, short_reason

if TYPE_CHECKING:
    from joulebench.core.backends import BoundDevice

STATUS_SKIPPED = "skipped"
STATUS_MISMATCH = "mismatch"
STATUS_ERROR = "error"  # failed while running, or its output is no answer (check_forward)
# Largest |runtime - PyTorch| / max |PyTorch| accepted on the same batch. On CUDA both sides
# may use TF32 for fp32 matrix products; TensorRT fp16 is compared with PyTorch's fp32.
DEFAULT_TOLERANCE = {("fp32", "cpu"): 1e-3, ("fp32", "cuda"): 1e-2, ("fp16", "cuda"): 5e-2}


# How out-of-memory errors read (the last one is ONNX Runtime's allocator).
OOM_PHRASES = ("out of memory", "can't allocate memory", "not enough memory", "failed to allocate")


def is_oom(exc: BaseException) -> bool:
    """Whether `exc` is running out of memory (a configuration retried at half the batch)."""
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc).lower()
    return any(phrase in text for phrase in OOM_PHRASES)


class NotMeasured(Exception):
    """A configuration that is reported as a row without a measurement (status, reason)."""

    def __init__(self, status: str, reason: str, fields: dict | None = None):
        super().__init__(reason)
        self.status, self.reason, self.fields = status, short_reason(reason), fields or {}


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost cause: exporters wrap the specific error (a missing op) in general ones."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def _providers(runtime: str, precision: str, device: BoundDevice, cache_dir) -> list:
    """ONNX Runtime's providers for `runtime` on the device, best first (its backend's);
    DeviceError when the device has none for it (TensorRT off CUDA)."""
    engines = str(Path(cache_dir) / "tensorrt")
    return device.execution_providers(runtime, precision, engines)


def _provider_name(provider) -> str:
    return provider if isinstance(provider, str) else provider[0]


def unavailable_reason(runtime: str, device: BoundDevice) -> str | None:
    """Why `runtime` cannot run on `device` here, or None when it can."""
    if runtime == PYTORCH:
        return None
    if runtime not in ONNX_RUNTIMES:  # torch-tensorrt: joulebench.core.trt_native
        raise ValueError(f"runtimes runs {ONNX_RUNTIMES}, not {runtime}")
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime is not installed (pip install onnxruntime, or onnxruntime-gpu)"
    for package in ("onnx", "onnxscript"):  # torch.onnx.export needs both
        try:
            __import__(package)
        except ImportError:
            return f"{package} is not installed; torch.onnx.export needs it (pip install {package})"
    from joulebench.core.backends import DeviceError

    available = ort.get_available_providers()
    try:
        wanted = _provider_name(_providers(runtime, "fp32", device, cache_dir="")[0])
    except DeviceError as err:
        return str(err)
    if wanted not in available:
        gpu = device.onnx_device() is not None
        hint = " (install onnxruntime-gpu and its CUDA/TensorRT libraries)" if gpu else ""
        return f"this onnxruntime {ort.__version__} has no {wanted}; it has {available}{hint}"
    return None


def weights_digest(model) -> str:
    """A short digest of every parameter and buffer: a cached export matches these weights."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        tensor = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)};".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def stdout_to_stderr():
    """Send what C++ code prints to stdout (the TorchScript exporter's graph dumps) to stderr,
    so it lands in the job's log and never in a table printed on stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _flush_native() -> None:
    """Python's and C's buffered output written out (C++ prints through C's stdio)."""
    import ctypes

    sys.stdout.flush()
    sys.stderr.flush()
    with contextlib.suppress(OSError, AttributeError, TypeError):  # no C library here
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def native_output_dropped():
    """Whatever native code prints to stdout or stderr while the block runs, dropped: the
    TorchScript exporter dumps a model it cannot export ("Torch IR graph at exception", a
    screen of IR: its ONNX log, once turned on by an export, stays on), which reached the
    terminal of `joulebench profile` and of `make test`. The row's reason says why an
    export failed, so the dump is nobody's news."""
    _flush_native()
    saved = os.dup(1), os.dup(2)
    try:
        with tempfile.TemporaryFile() as held:
            os.dup2(held.fileno(), 1)
            os.dup2(held.fileno(), 2)
            try:
                yield
            finally:
                _flush_native()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        os.close(saved[0])
        os.close(saved[1])


def _export(model, x, path: Path, opset: int) -> str:
    """Export with torch's ONNX exporter; the TorchScript one where that fails. Returns which."""
    import torch

    errors = []
    for exporter, dynamo in (("dynamo", True), ("torchscript", False)):
        try:
            with warnings.catch_warnings(), torch.no_grad(), native_output_dropped():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    model,
                    (x,),
                    str(path),
                    input_names=["input"],
                    output_names=["logits"],
                    opset_version=opset,
                    dynamo=dynamo,
                    verbose=False,
                )
            return exporter
        except Exception as exc:
            errors.append(
                f"{exporter}: {short_reason(_root_cause(exc), REASON_MAX_CHARS // 2 - 40)}"
            )
            shutil.rmtree(path.parent)  # a failed export's partial files
            path.parent.mkdir()
    raise RuntimeError("ONNX export failed: " + " | ".join(errors))


def shape_key(x) -> str:
    """The input shape as a cache key: 64x3x224x224."""
    return "x".join(str(d) for d in x.shape)


def _discard(folder: Path) -> None:
    """Remove a cached build that does not load: renamed aside first, so no process ever
    reads a half-removed folder."""
    aside = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.bad."))
    with contextlib.suppress(OSError):  # already gone: another process discarded it
        os.replace(folder, aside / "old")
    shutil.rmtree(aside, ignore_errors=True)


def _build_into(folder: Path, record_name: str, build: Callable[[Path], dict]) -> dict:
    """Run `build(tmp)` in a temporary folder, write its record last, rename it into place."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        record = build(tmp)
        (tmp / record_name).write_text(json.dumps(record, default=str))
        try:
            os.replace(tmp, folder)
        except OSError:  # another process finished the same build first: use theirs
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return record


def cached_build(folder: Path, record_name: str, build: Callable[[Path], dict], load):
    """`load(folder)` of something built once: (what load returns, its record, cached).

    `build(tmp)` writes its files into a temporary folder and returns a JSON-able record;
    the record is written last and the folder renamed into place, so a killed build never
    leaves a half-written file under the cache's name, and two processes building at once
    both end well. A cached folder whose record or files do not load (truncated, corrupt,
    from an incompatible version) is discarded and built again; out of memory while
    loading is raised as it is (the build is whole; the batch is too big).
    """
    record_path = folder / record_name
    if record_path.is_file():
        try:
            record = json.loads(record_path.read_text())
            return load(folder), record, True
        except Exception as exc:
            if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
                raise  # torch.OutOfMemoryError: the cached build may well be whole
            _discard(folder)
    record = _build_into(folder, record_name, build)
    return load(folder), record, False


def _onnx_file(folder: Path) -> Path:
    path = folder / "model.onnx"
    if not path.is_file():
        raise FileNotFoundError(path)
    return path


def export_onnx(model, x, model_name: str, opset: int, cache_dir) -> tuple[Path, dict]:
    """The ONNX file of `model` at the shape of `x`: from the cache, else exported once."""
    key = f"{shape_key(x)}-opset{opset}-{weights_digest(model)}"
    folder = Path(cache_dir) / file_name(model_name) / key

    def build(tmp: Path) -> dict:
        return {"exporter": _export(model, x, tmp / "model.onnx", opset), "model": model_name}

    path, record, cached = cached_build(folder, "export.json", build, _onnx_file)
    detail = {"onnx_path": str(path), "opset": opset}
    return path, {**detail, "exporter": record.get("exporter", ""), "cached": cached}


def make_session(path: Path, method, device: BoundDevice, threads: int | None, cache_dir):
    """An InferenceSession on the method's provider; a silent fallback to another is refused."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: warnings would fill every job's log
    if threads:
        options.intra_op_num_threads = threads  # the same thread count as the PyTorch methods
    providers = _providers(method.runtime, method.precision, device, cache_dir)
    if method.runtime == ORT_TENSORRT:
        (Path(cache_dir) / "tensorrt").mkdir(parents=True, exist_ok=True)  # its engine cache
    session = ort.InferenceSession(str(path), sess_options=options, providers=providers)
    wanted = _provider_name(providers[0])
    got = session.get_providers()
    if got[0] != wanted:
        raise NotMeasured(
            STATUS_SKIPPED, f"{wanted} did not load; ONNX Runtime fell back to {got[0]}"
        )
    return session


class OrtStep:
    """One batch through an ONNX Runtime session, as the protocol's `step()`.

    Input and output stay bound to the device (IOBinding), so a step copies nothing
    between host and GPU, as a PyTorch step on the same batch does not.
    """

    def __init__(self, session, x, device: BoundDevice):
        self.session, self.x = session, x  # x must outlive the binding (it points into x)
        self.binding = session.io_binding()
        input_name = session.get_inputs()[0].name
        output_name = session.get_outputs()[0].name
        bound = device.onnx_device()
        if bound is not None:  # on the device: bound where the tensor already is
            place, index = bound
            self.binding.bind_input(
                input_name, place, index, np.float32, tuple(x.shape), x.data_ptr()
            )
            self.binding.bind_output(output_name, place, index)
        else:
            self._array = x.detach().cpu().numpy()
            self.binding.bind_cpu_input(input_name, self._array)
            self.binding.bind_output(output_name, "cpu")

    def __call__(self) -> None:
        self.session.run_with_iobinding(self.binding)

    def output(self) -> np.ndarray:
        return self.binding.copy_outputs_to_cpu()[0]


def relative_error(output: np.ndarray, reference: np.ndarray) -> float:
    """max |output - reference| / max |reference|; inf for a shape mismatch or non-finite."""
    output, reference = np.asarray(output, dtype=np.float64), np.asarray(reference, np.float64)
    if output.shape != reference.shape or not np.isfinite(output).all():
        return float("inf")
    scale = max(float(np.abs(reference).max(initial=0.0)), 1e-12)
    return float(np.abs(output - reference).max(initial=0.0)) / scale


def tolerance_for(method, device: BoundDevice) -> float:
    if method.tolerance is not None:
        return float(method.tolerance)
    place = (device.onnx_device() or ("cpu", 0))[0]  # keyed by ONNX Runtime's device
    return DEFAULT_TOLERANCE.get((method.precision, place), 5e-2)


def check_forward(forward: Callable[[], object], batch_size: int) -> None:
    """The model's output on the measured batch, once before warm-up: a tensor with one row
    per image and every value finite; else NotMeasured("error") saying what is wrong (a
    workload returning NaN, inf or the wrong shape is a row with a reason, never `ok`).
    Running out of memory is raised as it is (the job retries at half the batch); any other
    failure of the forward is an "error" row too."""
    try:
        output = forward()
    except Exception as exc:
        if is_oom(exc):
            raise
        raise NotMeasured(STATUS_ERROR, short_reason(exc)) from exc
    problem = output_problem(output, batch_size)
    if problem:
        raise NotMeasured(STATUS_ERROR, f"the model's output is no answer: {problem}")


def output_problem(output, batch_size: int) -> str:
    """What is wrong with a forward's output ("" where nothing is): the first tensor of a
    tuple, list or dict is checked; an output that holds no tensor is not."""
    import torch

    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, tuple | list):
        output = next((o for o in output if isinstance(o, torch.Tensor)), None)
    if not isinstance(output, torch.Tensor):
        return ""
    if output.ndim == 0 or output.shape[0] != batch_size:
        return f"shape {tuple(output.shape)}, not one row per image of the batch of {batch_size}"
    bad = ~torch.isfinite(output.detach())
    if bool(bad.any()):
        kinds = [k for k, hit in (("NaN", output.isnan()), ("inf", output.isinf())) if hit.any()]
        return f"{int(bad.sum())} of {output.numel()} values are {' and '.join(kinds)}"
    return ""


def check_output(
    output, reference, method, device: BoundDevice, provider: str, detail: dict, known=None
) -> dict:
    """The row fields of a runtime's output check against PyTorch's on the same batch, with
    the `known` fields (kept on a mismatch too); above the method's tolerance,
    NotMeasured("mismatch") carrying them."""
    error, tolerance = relative_error(output, reference), tolerance_for(method, device)
    fields = {
        **(known or {}),
        "runtime_provider": provider,
        "runtime_check_rel_err": error,
        "runtime_detail": json.dumps({**detail, "tolerance": tolerance}, default=str),
    }
    if not error <= tolerance:
        raise NotMeasured(
            STATUS_MISMATCH,
            f"{provider} output differs from PyTorch's on the same batch: "
            f"max relative error {error:.3g} > tolerance {tolerance:.3g}",
            fields,
        )
    return fields


def prepare_exported(
    model, x, method, *, model_name: str, device: BoundDevice, threads, cache_dir
) -> tuple[OrtStep, dict]:
    """Export (or reuse) `model`, open a session, check its output against PyTorch's.

    `model` is the fp32 PyTorch model in eval mode and `x` the measured batch, both on the
    device. Returns the step to measure and the row fields that describe the runtime.
    """
    import onnxruntime as ort
    import torch

    with torch.inference_mode():
        reference = model(x).float().cpu().numpy()
    path, detail = export_onnx(model, x, model_name, method.opset, cache_dir)
    session = make_session(path, method, device, threads, cache_dir)
    step = OrtStep(session, x, device)
    step()  # the first run also builds TensorRT engines
    providers = session.get_providers()
    detail.update(ort_version=ort.__version__, providers=providers)
    return step, check_output(step.output(), reference, method, device, providers[0], detail)
