"""The arithmetic a configuration runs in, set on purpose around it and restored after.

torch 2.14's defaults on an Ampere or newer GPU run fp32 convolutions in TF32
(`torch.backends.cudnn.conv.fp32_precision` reads "tf32") and fp32 matrix products in IEEE
fp32 (`torch.backends.cuda.matmul.fp32_precision` reads "none"), and leave cuDNN's
autotuning off (`torch.backends.cudnn.benchmark`): left alone, an `fp32` row of a CNN
would be mostly TF32 and one of a ViT full fp32, and nothing would say so. So every
configuration states its arithmetic (`Arithmetic`, from its method and where its model
runs) and `applied` sets it through torch's current API (the `fp32_precision` attributes;
never the legacy `allow_tf32` flags: reading one after the new API set its value raises)
around the configuration's build, warm-up and windows, then puts back what was there, also
when the configuration fails. Rows record it (`fp32_math`, `cudnn_autotune`).

torch's own code still reads the legacy flags in a few corners, and a legacy read raises
while the new API disagrees with the legacy value (IEEE convolutions, TF32 matmuls):
torch.export (`torch.backends.cudnn.set_flags`, under ONNX's dynamo exporter and
torch-tensorrt) and Inductor's max-autotune Triton templates of a convolution's backward.
So an exported runtime's configuration leaves torch's flags as they are (its engine decides
its math; its PyTorch reference runs at torch's defaults), and a PyTorch training method
with compile max-autotune fails with torch's message, never silently.

- `fp32_math` "ieee": fp32 matmuls, convolutions and RNNs in IEEE fp32 (methods fp32, and the
  fp32 operations fp16 / bf16 autocast leaves); "tf32": in TF32 on the tensor cores
  (method tf32, where its model runs on a GPU); "": not PyTorch's to decide (an exported
  runtime's engine picks its own math; nothing is set). On a CPU oneDNN is held at IEEE too
  (`torch.backends.mkldnn.*.fp32_precision`), so no CPU silently runs fp32 in bf16 or TF32.
- `cudnn_autotune`: cuDNN (MIOpen on ROCm) times its convolution algorithms on a shape's
  first call and keeps the fastest; on where the method says (`cudnn_autotune`, default
  true) and its model runs on a GPU. The search happens on the first step of a new shape:
  the protocol's first warm-up chunk is that one step (CUDA graphs: their capture's warm-up
  iterations), so it never falls inside a window.

The backends are passed in (`torch.backends` by default), so the logic is tested on a CPU.
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
