"""What a failure says about the GPU (issue 35 item 4): a fault of the board, or not.

A configuration's error (or a worker's) whose text names one of these is the GPU's, not the
model's, and the GPU is not to be trusted for the rest of the run (schedule.bad_gpus):

- `xid`: the kernel's Xid, "GPU has fallen off the bus";
- `ecc`: an uncorrectable ECC error;
- `nvml`: NVML cannot reach the GPU: NVMLError_GpuIsLost ("GPU is lost"),
  NVMLError_Unknown, a GPU that needs a reset;
- `cuda`: a CUDA error that poisons the context: an illegal memory access or address, an
  unspecified launch failure, a kernel that timed out, cuBLAS's execution failure.

Errors a model makes on any GPU (out of memory, a device-side assert, a shape mismatch) are
not faults. The first kind whose pattern matches wins, in the order above.
"""

from __future__ import annotations

import re

FAULT_PATTERNS = {
    "xid": re.compile(r"fallen off the bus|\bXid\b", re.IGNORECASE),
    "ecc": re.compile(r"uncorrectable ECC|ECC error", re.IGNORECASE),
    "nvml": re.compile(
        r"NVMLError_(GpuIsLost|Unknown|ResetRequired)|GPU is lost|GPU requires reset",
        re.IGNORECASE,
    ),
    "cuda": re.compile(
        r"illegal memory access|illegal address|unspecified launch failure|"
        r"launch timed out|CUBLAS_STATUS_EXECUTION_FAILED|cudaErrorIllegalAddress",
        re.IGNORECASE,
    ),
}
FAULT_KINDS = tuple(FAULT_PATTERNS)


def fault_kind(text: str) -> str | None:
    """The kind of GPU fault `text` (an error's message) reports, or None."""
    for kind, pattern in FAULT_PATTERNS.items():
        if pattern.search(text or ""):
            return kind
    return None
