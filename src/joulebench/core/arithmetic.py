"""The arithmetic a configuration runs in, set on purpose around it and restored after.

Left to torch's defaults, an `fp32` row of a CNN on an Ampere or newer GPU would run its
convolutions in TF32 and a ViT's matmuls in IEEE fp32, with cuDNN autotuning off, and
nothing would say so. So every configuration states its arithmetic (`Arithmetic`, from its
method and where its model runs) and `applied` sets it through torch's `fp32_precision` API
(never the legacy `allow_tf32` flags) around its build, warm-up and windows, putting back
what was there, also when it fails; rows record it (`fp32_math`, `cudnn_autotune`). An
exported runtime's configuration leaves torch's flags alone (its engine picks its math).
What each value means and the corners of torch that still read the legacy flags:
docs/profiling.md#arithmetic. The backends are passed in, so the logic is tested on a CPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

IEEE, TF32 = "ieee", "tf32"
FP32_MATH = (IEEE, TF32)  # the values of the `fp32_math` column (or empty)
# torch.backends.<path>.fp32_precision set around a configuration: a GPU's (cuBLAS, cuDNN)
# to the method's math, and oneDNN's (CPU) always to IEEE. A parent first (setting it sets
# its children too), then its children: torch's kernels read the children, Inductor's conv
# templates the parent (torch.backends.cudnn.fp32_precision).
GPU_PRECISIONS = ("cuda.matmul", "cudnn", "cudnn.conv", "cudnn.rnn")
CPU_PRECISIONS = ("mkldnn", "mkldnn.matmul", "mkldnn.conv")
AUTOTUNE_PATH = "cudnn.benchmark"


@dataclass(frozen=True)
class Arithmetic:
    """What a configuration runs in: `fp32_math` (ieee, tf32, or "" where PyTorch does not
    decide it) and whether cuDNN autotunes its convolutions."""

    fp32_math: str = IEEE
    cudnn_autotune: bool = False

    def __post_init__(self):
        if self.fp32_math not in (*FP32_MATH, ""):
            raise ValueError(f"fp32_math must be one of {FP32_MATH} or empty")

    def fields(self) -> dict:
        """The row's columns."""
        return {"fp32_math": self.fp32_math, "cudnn_autotune": self.cudnn_autotune}

    @property
    def sets_torch(self) -> bool:
        """Whether torch's flags are set: not for an exported runtime (module doc)."""
        return bool(self.fp32_math)


def arithmetic_for(method, on_gpu: bool) -> Arithmetic:
    """The arithmetic of `method` where its model runs on a GPU (`on_gpu`: torch's CUDA or
    ROCm device; a simulated GPU's model runs on the CPU, so False). tf32 is TF32 only on a
    GPU (the emulation verdict keeps a tf32 method off devices without TF32 hardware;
    a simulated Ampere runs it on the CPU, in IEEE, and its rows say so)."""
    if method.exported:
        return Arithmetic("", False)
    math_ = TF32 if method.precision == TF32 and on_gpu else IEEE
    return Arithmetic(math_, bool(method.cudnn_autotune and on_gpu))


def _owner(backends, path: str):
    """torch.backends.<path>'s object: 'cuda.matmul' -> backends.cuda.matmul."""
    obj = backends
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def current(backends=None) -> dict[str, object]:
    """What is in force now: each fp32_precision by its path, and cudnn.benchmark."""
    backends = _backends(backends)
    out: dict[str, object] = {
        p: _owner(backends, p).fp32_precision for p in (*GPU_PRECISIONS, *CPU_PRECISIONS)
    }
    out[AUTOTUNE_PATH] = bool(backends.cudnn.benchmark)
    return out


def _put(backends, values: dict[str, object]) -> None:
    for path, value in values.items():
        if path == AUTOTUNE_PATH:
            backends.cudnn.benchmark = bool(value)
        else:
            _owner(backends, path).fp32_precision = value


def wanted(arithmetic: Arithmetic) -> dict[str, object]:
    """The settings `arithmetic` asks of torch, by path (as `current` reads them)."""
    out: dict[str, object] = {p: arithmetic.fp32_math for p in GPU_PRECISIONS}
    out.update({p: IEEE for p in CPU_PRECISIONS})
    out[AUTOTUNE_PATH] = arithmetic.cudnn_autotune
    return out


@contextlib.contextmanager
def applied(arithmetic: Arithmetic, backends=None) -> Iterator[Arithmetic]:
    """Set `arithmetic` in torch for the block, then restore what was in force before (also
    when the block raises, and when setting one value fails half-way). An exported
    runtime's (fp32_math empty) sets nothing."""
    if not arithmetic.sets_torch:
        yield arithmetic
        return
    backends = _backends(backends)
    saved = current(backends)
    try:
        _put(backends, wanted(arithmetic))
        yield arithmetic
    finally:
        _put(backends, saved)


def _backends(backends):
    if backends is None:
        import torch

        return torch.backends
    return backends
