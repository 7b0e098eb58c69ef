"""Models for bench_pool.py `--waiting`: each step waits a fixed time, as a host waits on a
GPU while its kernels run, instead of computing the model on the host's cores. So two pool
jobs on a 2-core host compete for the cores only where a real node's jobs would (process
start, build, Python), not while the simulated GPU "runs" the batch."""

from __future__ import annotations

import time

import torch
from torch import nn

SPEC = {"input_size": (3, 8, 8), "num_classes": 10}


class Waiting(nn.Module):
    """Logits from a tiny layer, after waiting `step_s` (the device's time for the batch)."""

    def __init__(self, step_s: float):
        super().__init__()
        self.step_s = step_s
        self.head = nn.Linear(3 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.step_s)
        return self.head(x.flatten(1).float()).to(x.dtype)


def wait_5ms():
    return Waiting(0.005), SPEC


def wait_10ms():
    return Waiting(0.010), SPEC


def wait_20ms():
    return Waiting(0.020), SPEC


def wait_40ms():
    return Waiting(0.040), SPEC
