"""Simulated GPUs that fail on request: a chaos hook for tests and benches only.

    JOULEBENCH_SIM_FAULT="<board>:<kind>[:<after>]"   (several: comma-separated)

makes the simulated board `<board>` (its index in a pool, `1` for `sim:h100:1`, or its UUID)
fail from the first step of its (`<after>` + 1)-th configuration in a process on (default
0: its first), and stay failed in that process, as a real GPU does: `nvml` loses the board
(every NVML call raises NVMLError_GpuIsLost), `xid`, `ecc` and `cuda` make its step raise
what torch raises on such a GPU (`cuda` poisons the context: every later step fails too).
Nothing in a study sets it. docs/profiling.md#when-a-model-or-a-gpu-misbehaves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ENV = "JOULEBENCH_SIM_FAULT"
STEP_ERRORS = {
    "xid": "CUDA error: unspecified launch failure (NVRM: Xid (PCI:0000:3b:00): 79, "
    "GPU has fallen off the bus)",
    "ecc": "CUDA error: uncorrectable ECC error encountered",
    "cuda": "CUDA error: an illegal memory access was encountered",
}
KINDS = ("nvml", *STEP_ERRORS)


@dataclass(frozen=True)
class SimFault:
    kind: str  # one of KINDS
    after: int = 0  # configurations the board measures in a process before it fails


def parse_faults(text: str) -> dict[str, SimFault]:
    """board (index or UUID) -> its fault, from the hook's value; ValueError in one line."""
    out = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        board, sep, rest = item.partition(":")  # a UUID (GPU-...) has no colon
        kind, _, after = rest.partition(":")
        if not sep or kind not in KINDS or (after and not after.isdigit()):
            raise ValueError(
                f"{ENV}={text!r}: each fault is <board index or uuid>:<kind>[:<after n "
                f"configurations>], kind one of {', '.join(KINDS)}"
            )
        out[board] = SimFault(kind, int(after or 0))
    return out


def sim_fault(index: int | None, uuid: str, env=None) -> SimFault | None:
    """The fault the hook sets for the board of pool index `index` or UUID `uuid`."""
    faults = parse_faults((os.environ if env is None else env).get(ENV, ""))
    return faults.get(uuid) or (faults.get(str(index)) if index is not None else None)


def step_error(kind: str) -> RuntimeError:
    """What torch raises on a board that failed this way (not `nvml`: NVML fails instead)."""
    return RuntimeError(STEP_ERRORS[kind])
