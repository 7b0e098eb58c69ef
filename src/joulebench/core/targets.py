"""What `joulebench check` drives: a standard load on the device, on real time.

A target has `device`, `cuda_index` (None off CUDA), `clock`, `sleep`, `timer` (None: real
threads), `meter(**kw)` (GPU: its backend's meter), `busy(seconds, input_kind)` (GPU),
`step(input_kind)` (one unit of the standard load, for the protocol) and `sync()`. The
simulator's (joulebench.sim.rig.SimCheckTarget) has the same shape on simulated time;
each device's backend builds its target (Backend.check_target).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


class TorchGpuTarget:
    """A GPU torch drives as `cuda:N`, loaded by fp16 matmuls, read by `make_meter(**kw)`
    (its backend's meter: NVML, AMD SMI)."""

    def __init__(self, device: str, make_meter: Callable[..., object], size: int = 8192):
        import torch

        self.torch = torch
        self.make_meter = make_meter
        self.device = device
        self.dev = torch.device(device)
        self.cuda_index = self.dev.index or 0
        self.clock = time.perf_counter
        self.sleep = time.sleep
        self.timer = None  # real threads
        torch.cuda.init()
        gen = torch.Generator(device=self.dev).manual_seed(0)
        shape = (size, size)
        self.inputs = {
            "random": torch.randn(shape, device=self.dev, dtype=torch.float16, generator=gen),
            "zeros": torch.zeros(shape, device=self.dev, dtype=torch.float16),
        }
        self.out = torch.empty(shape, device=self.dev, dtype=torch.float16)
        self.sync()
        start = self.clock()
        for _ in range(10):
            torch.mm(self.inputs["random"], self.inputs["random"], out=self.out)
        self.sync()
        self.matmul_s = (self.clock() - start) / 10
        self.chunk = max(1, round(0.005 / max(self.matmul_s, 1e-6)))  # ~5 ms between syncs

    def sync(self) -> None:
        self.torch.cuda.synchronize(self.dev)

    def meter(self, **kw):
        return self.make_meter(**kw)

    def busy(self, seconds: float, input_kind: str = "random") -> None:
        a = self.inputs[input_kind]
        end = self.clock() + seconds
        while self.clock() < end:
            for _ in range(self.chunk):
                self.torch.mm(a, a, out=self.out)
            self.sync()

    def step(self, input_kind: str = "random"):
        a, out, mm = self.inputs[input_kind], self.out, self.torch.mm
        return lambda: mm(a, a, out=out)


class CpuTarget:
    """The CPU's standard load: float32 matmuls (numpy), synchronous."""

    device = "cpu"
    cuda_index = None
    timer = None

    def __init__(self, size: int = 256):
        rng = np.random.default_rng(0)
        self.inputs = {
            "random": rng.standard_normal((size, size), dtype=np.float32),
            "zeros": np.zeros((size, size), dtype=np.float32),
        }
        self.out = np.empty((size, size), dtype=np.float32)
        self.clock = time.perf_counter
        self.sleep = time.sleep

    def sync(self) -> None:
        """Numpy is synchronous."""

    def step(self, input_kind: str = "random"):
        a, out = self.inputs[input_kind], self.out
        return lambda: np.matmul(a, a, out=out)
