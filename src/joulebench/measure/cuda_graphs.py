"""CUDA graphs: a method that removes the host's launch overhead (`cuda_graphs: true`).

At batch 1 and 8 a recent GPU finishes most timm models' kernels faster than Python and the
driver launch them, so an eager row measures the host as much as the model (issue 33). A
CUDA graph records the forward's kernels once and replays them with one launch per step,
as a deployment that cares about latency would run it. Here, for the inference phase of a
PyTorch method on a GPU:

1. the forward runs WARMUP_ITERS times on a side stream (torch's recipe for
   `torch.cuda.graph`: lazy initialisation, cuBLAS workspaces and cuDNN's autotuning happen
   there, never inside a capture), under the method's autocast, its weight cache off;
2. it is captured once into a graph with the measured batch as its static input;
3. the graph is replayed once and its output compared with the eager forward's on the same
   batch, within the method's tolerance (runtimes.check_output, as the exported runtimes
   are checked): above it the row is a `mismatch`;
4. each protocol step is one `replay()`. All of this happens before the protocol's warm-up;
   its seconds are the row's `cuda_graph_capture_s`, never inside a window.

A capture that fails (a forward that syncs with the host, changes shape or branches on a
value) is a `skipped` row with the capture's error (out of memory stays out of memory: the
job retries at half the batch). `cuda` is torch.cuda (`torch_cuda`), or a stand-in with its
API (tests/helpers/fake_cuda_graphs.py runs the same code on a CPU).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from joulebench.measure.runtimes import STATUS_SKIPPED, NotMeasured, check_output, is_oom
from joulebench.tables import short_reason

if TYPE_CHECKING:
    from joulebench.measure.backends import BoundDevice

WARMUP_ITERS = 3  # forward passes on a side stream before the capture (torch's example: 3)
PROVIDER = "cuda-graph"  # runtime_provider of a row measured by replaying a graph


@dataclass
class GraphStep:
    """One protocol step: a replay of the captured forward. It holds what the graph reads
    and writes by address only: the model (its weights), the static input and output. A
    graph keeps none of them alive, so without this the weights would be freed (and their
    memory reused) under it as soon as the model went out of scope."""

    graph: object
    model: object
    static_input: object
    static_output: object

    def __call__(self) -> None:
        self.graph.replay()


def capture(forward: Callable[[], object], cuda, warmup_iters: int = WARMUP_ITERS):
    """(graph, eager output, static output): `forward` warmed up on a side stream, then
    captured. The static output is only written by a replay."""
    side = cuda.Stream()
    side.wait_stream(cuda.current_stream())
    eager = None
    with cuda.stream(side):
        for _ in range(warmup_iters):
            eager = forward()
    cuda.current_stream().wait_stream(side)
    graph = cuda.CUDAGraph()
    with cuda.graph(graph):
        static_output = forward()
    return graph, eager, static_output


def torch_cuda():
    """torch.cuda: the API captured through (tests put a stand-in here)."""
    import torch

    return torch.cuda


def _numpy(tensor):
    return tensor.detach().float().cpu().numpy()


def graph_step(
    model, x, method, device: BoundDevice, *, cuda=None, clock=time.perf_counter
) -> tuple[GraphStep, dict]:
    """The replaying step of `model` on the batch `x` (on the GPU `device`) and its
    row fields: capture seconds and the output check (NotMeasured: a capture that failed,
    `skipped`; outputs that differ, `mismatch`)."""
    import torch

    cuda = cuda or torch_cuda()
    context = method.context(device.torch_type, cache_enabled=False)

    def forward():
        with context:
            return model(x)

    start = clock()
    with torch.inference_mode():
        try:
            graph, eager, static_output = capture(forward, cuda)
            graph.replay()
            cuda.synchronize()
        except Exception as exc:
            if is_oom(exc):
                raise
            raise NotMeasured(
                STATUS_SKIPPED, f"CUDA graph capture failed: {short_reason(exc)}"
            ) from exc
        capture_s = clock() - start
        fields = check_output(
            _numpy(static_output),
            _numpy(eager),
            method,
            device,
            PROVIDER,
            {"warmup_iters": WARMUP_ITERS, "checked_against": "eager"},
            known={"cuda_graph_capture_s": capture_s},
        )
    return GraphStep(graph, model, x, static_output), fields
