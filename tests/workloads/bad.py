"""Workloads that misbehave on purpose, one way each (issue 35): the profile job's
supervisor (jobs.supervise) must end each with a row and go on.

`good` runs; `sleeps` never returns from its forward; `exits` ends its process; `killed` is
killed as the kernel's out-of-memory killer would (SIGKILL); `segfault` dies of SIGSEGV;
`big_batch_exits` dies only at batch sizes above 2 (its other configurations measure),
`big_batch_sleeps` hangs only there.
`exits_in_build` ends its process while the model is built (the catalog counts it in a
part with other models: D2), `sleeps_in_build` never returns from its build. `nan` answers
NaN, `wrong_shape` two rows an image; `oom` runs out of memory above batch 1 (as CUDA
says it), so its larger batches are measured halved. `in_a_frozen_heap` runs only in a process
that froze its imports (a worker: jobs.heap).
"""

import os
import signal
import time

import torch
from torch import nn

INPUT_SIZE = (3, 8, 8)
SPEC = {"input_size": INPUT_SIZE, "num_classes": 4}


class Net(nn.Module):
    def __init__(self, mode: str = "good"):
        super().__init__()
        self.mode = mode
        self.fc = nn.Linear(3 * 8 * 8, 4)

    def forward(self, x):
        if self.mode == "sleeps":
            time.sleep(10**9)
        elif self.mode == "exits":
            os._exit(3)
        elif self.mode == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        elif self.mode == "segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif self.mode == "big_batch_exits" and x.shape[0] > 2:
            os._exit(4)
        elif self.mode == "big_batch_sleeps" and x.shape[0] > 2:
            time.sleep(10**9)
        elif self.mode == "oom" and x.shape[0] > 1:
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")
        out = self.fc(x.flatten(1))
        if self.mode == "nan":
            return torch.full_like(out, float("nan"))
        return torch.cat([out, out]) if self.mode == "wrong_shape" else out


def good():
    return Net(), SPEC


def in_a_frozen_heap():
    """Good, where its process froze what its imports made (a worker: jobs.heap)."""
    import gc

    if gc.get_freeze_count() < 100_000:  # torch alone leaves ~190,000 objects
        raise RuntimeError(f"the heap is not frozen ({gc.get_freeze_count()} objects)")
    return Net(), SPEC


def sleeps():
    return Net("sleeps"), SPEC


def exits():
    return Net("exits"), SPEC


def killed():
    return Net("killed"), SPEC


def segfault():
    return Net("segfault"), SPEC


def big_batch_exits():
    return Net("big_batch_exits"), SPEC


def big_batch_sleeps():
    return Net("big_batch_sleeps"), SPEC


def exits_in_build():
    os._exit(3)


def sleeps_in_build():
    time.sleep(10**9)


def nan():
    return Net("nan"), SPEC


def wrong_shape():
    return Net("wrong_shape"), SPEC


def oom():
    return Net("oom"), SPEC
