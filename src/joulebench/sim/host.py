"""A host that launches a simulated GPU's kernels, and what that leaves the GPU to do.

A simulated GPU (`sim:<gpu>`) runs its model on the CPU; what it stands for is a GPU fed by
a Python host. For one step this model gives the share the GPU would spend executing
kernels (`gpu_busy_fraction`), from what the step really runs: its kernels (each torch op
that computes, counted once by a dispatch mode: `count_step`) and its FLOPs, at the
precision its matrix products ran in. Assumptions, not published figures: a launch every
LAUNCH_S; a kernel takes at least KERNEL_FLOOR_S, else its FLOPs at EFFICIENCY of the
generation's PEAK_TFLOPS; launches run ahead of the kernels, so busy = GPU time / max(GPU
time, host time). So small models at batch 1 are host-bound here as on a real GPU, and large
batches are not. docs/profiling.md#simulated-gpus-simgpu.
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass

LAUNCH_S = 8e-6
KERNEL_FLOOR_S = 3e-6
EFFICIENCY = 0.5
# dense peak TFLOP/s by precision (data sheets: P100 PCIe, V100 SXM2, T4, A100 SXM, H100 SXM)
_HOPPER = {"fp32": 67.0, "tf32": 495.0, "fp16": 990.0, "bf16": 990.0}
PEAK_TFLOPS = {
    "pascal": {"fp32": 9.3, "fp16": 18.7},
    "volta": {"fp32": 15.7, "fp16": 125.0},
    "turing": {"fp32": 8.1, "fp16": 65.0},
    "a100": {"fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "bf16": 312.0},
    "hopper": _HOPPER,
    "gh200": _HOPPER,
}
_MATRIX_OPS = ("conv", "linear", "mm", "matmul", "bmm", "addmm", "scaled_dot_product")
_DTYPES = {"torch.float16": "fp16", "torch.bfloat16": "bf16"}


@dataclass(frozen=True)
class StepWork:
    """What one step runs: kernels launched, FLOPs, and the precision of its matrix ops."""

    kernels: int
    flops: float
    precision: str = "fp32"

    def busy_fraction(self, generation: str) -> float:
        """The share of the step the generation's GPU would spend executing kernels."""
        peaks = PEAK_TFLOPS[generation]
        peak = peaks.get(self.precision, peaks["fp32"]) * 1e12 * EFFICIENCY
        gpu_s = self.kernels * KERNEL_FLOOR_S + self.flops / peak
        host_s = self.kernels * LAUNCH_S
        if not gpu_s > 0:
            return math.nan
        return gpu_s / max(gpu_s, host_s)


def count_step(step) -> tuple[object, StepWork]:
    """Run `step` once, counting its kernels and FLOPs; returns (its result, the work)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = _Kernels()
    with FlopCounterMode(display=False) as flops, counter:
        out = step()
    dtypes = counter.matrix_dtypes
    precision = _DTYPES.get(dtypes.most_common(1)[0][0], "fp32") if dtypes else "fp32"
    return out, StepWork(counter.kernels, float(flops.get_total_flops()), precision)


def _kernels_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Kernels(TorchDispatchMode):
        """Counts the ops that compute (not views, not ops that hand back an input)."""

        def __init__(self):
            super().__init__()
            self.kernels = 0
            self.matrix_dtypes: collections.Counter = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.is_view or any(out is a for a in args):
                return out
            self.kernels += 1
            name = func.__name__
            if any(op in name for op in _MATRIX_OPS) and hasattr(out, "dtype"):
                self.matrix_dtypes[str(out.dtype)] += 1
            return out

    return Kernels


def _Kernels():  # noqa: N802 (a class made on first use: torch is imported only here)
    return _kernels_mode()()
