"""CUDA graphs: a method that removes the host's launch overhead (`cuda_graphs: true`).

At small batches a recent GPU finishes most timm models' kernels faster than Python and the
driver launch them, so an eager row measures the host as much as the model. A CUDA graph
records the forward's kernels once and replays them with one launch per step, as a
latency-minded deployment would run it. Before the protocol's warm-up the forward runs
WARMUP_ITERS times on a side stream (so nothing lazy happens inside the capture), is
captured with the measured batch as its static input, and one replay is checked against the
eager output (runtimes.check_output; above the tolerance: `mismatch`); each protocol step is
then one `replay()`; a failed capture is a `skipped` row with its error. `cuda` is torch.cuda
or a stand-in (tests/helpers/fake_cuda_graphs.py). docs/profiling.md#cuda-graphs-cuda_graphs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from joulebench.core.runtimes import STATUS_SKIPPED, NotMeasured, check_output, is_oom
from joulebench.tables import short_reason

if TYPE_CHECKING:
    from joulebench.core.backends import BoundDevice

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
