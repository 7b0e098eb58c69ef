"""A stand-in for torch.cuda's graph API that runs on the CPU, for core.cuda_graphs.

Only what that module calls, with torch 2.14's names and arguments (tests/sim/test_fakes.py
holds them against the real signatures): `CUDAGraph(keep_graph=False)` with
`capture_begin(pool=None, capture_error_mode="global", check_input_liveness=False)`,
`capture_end()`, `replay()` and `reset()`; the context manager `graph(cuda_graph, pool=None,
stream=None, capture_error_mode="global", ...)`; `Stream(device=None, priority=0)` with
`wait_stream(stream)`; `stream(stream)`, `current_stream(device=None)`,
`synchronize(device=None)` and `empty_cache()`.

Its physics, as CUDA's:
- a capture records the kernels (here: every aten op, through a TorchDispatchMode) and runs
  none of them: what the captured region returns holds garbage (NaN) until a replay;
- the graph keeps the memory it allocated during the capture (its pool: activations, the
  static output), but only the addresses of tensors from before it (the model's weights, the
  static input): a replay after those were freed is an illegal memory access, so whoever
  replays must keep the model alive;
- `replay()` runs the recorded ops again on the same memory: the static input's current
  values in, the static output's memory out, so mutating the static input changes the
  output, and every replay costs the recorded work again;
- a capture on the default (legacy) stream is refused, as `cudaStreamBeginCapture` refuses
  it (torch.cuda.graph captures on a side stream of its own);
- inside a capture, a host sync is refused: `synchronize()`, and the ops that read a value
  back (`.item()`, `_local_scalar_dense`, `nonzero`, `equal`, `is_nonzero`), raise CUDA's
  "operation not permitted when stream is capturing";
- with `torch.backends.cudnn.benchmark` on, cuDNN times a convolution on its first call of
  a shape, which allocates and syncs: a convolution first seen inside a capture raises the
  same error. Calls made under `stream(s)` on a side stream (the warm-up torch documents)
  count as seen.
"""

from __future__ import annotations

import contextlib
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

CAPTURE_ERROR = "CUDA error: operation not permitted when stream is capturing"
SYNCING_OPS = ("item", "_local_scalar_dense", "nonzero", "equal", "is_nonzero")


class Stream:
    """A CUDA stream: an id, and the streams it was told to wait for."""

    _next = 0

    def __init__(self, device=None, priority=0, **kwargs):
        Stream._next += 1
        self.id, self.waited = Stream._next, []

    def wait_stream(self, stream) -> None:
        self.waited.append(stream)


DEFAULT_STREAM = Stream()
_state = {"current": DEFAULT_STREAM, "capturing": None, "seen": set(), "syncs": 0}


def _is_conv(func) -> bool:
    """aten's convolutions (conv2d, convolution, _convolution, ...: which one reaches a
    dispatch mode depends on autograd and inference mode)."""
    return func.__name__.lstrip("_").startswith("conv")


def _conv_key(func, args) -> tuple:
    tensors = [a for a in tree_flatten(args)[0] if isinstance(a, torch.Tensor)]
    return (str(func), tuple((tuple(t.shape), t.dtype) for t in tensors))


class _Watch(TorchDispatchMode):
    """Outside a capture, on a side stream: convolutions run (and, autotuning, are timed)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if _is_conv(func):
            _state["seen"].add(_conv_key(func, args))
        return func(*args, **(kwargs or {}))


class _Pooled:
    """A tensor made during the capture: it lives in the graph's private memory pool, which
    the graph keeps (the static output among them)."""

    def __init__(self, tensor):
        self.tensor = tensor


class _Borrowed:
    """A tensor from before the capture (a weight, the static input): the graph holds its
    address only, never the tensor, as CUDA's does."""

    def __init__(self, tensor):
        self.ref = weakref.ref(tensor)


class _Alias:
    """A view made during the capture: metadata, made again from its base on replay."""

    def __init__(self, key):
        self.key = key


class _Record(TorchDispatchMode):
    """Inside a capture: every op recorded with what its arguments and outputs are to the
    graph (executed here only to make outputs of the right shape, then made garbage)."""

    def __init__(self, ops: list):
        super().__init__()
        self.ops, self.pooled, self.views = ops, {}, {}

    def _spec(self, value):
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) in self.pooled:
            return _Pooled(value)
        if id(value) in self.views:
            return _Alias(id(value))
        return _Borrowed(value)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.__name__.split(".")[0]
        if name in SYNCING_OPS:
            raise RuntimeError(f"{CAPTURE_ERROR} ({name} reads a value back to the host)")
        if _is_conv(func) and torch.backends.cudnn.benchmark:
            if _conv_key(func, args) not in _state["seen"]:
                raise RuntimeError(f"{CAPTURE_ERROR} (cuDNN benchmark ran inside the capture)")
        spec_args, spec_kwargs = tree_map(self._spec, args), tree_map(self._spec, kwargs)
        out, kind = func(*args, **kwargs), _kind(func)
        made = {"compute": self.pooled, "view": self.views}.get(kind, {})
        for t in _tensors(out):
            made[id(t)] = t  # views too, until the capture ends: their ids stay unique
        self.ops.append((func, spec_args, spec_kwargs, tree_map(self._spec, out), kind))
        return out


def _kind(func) -> str:
    """mutating (in place), view (aliases an input) or compute (writes new memory)."""
    schema = func._schema
    if schema.is_mutable:
        return "mutating"
    if any(r.alias_info is not None for r in schema.returns):
        return "view"
    return "compute"


ILLEGAL_ACCESS = "CUDA error: an illegal memory access was encountered"


class CUDAGraph:
    """A graph: the ops recorded between capture_begin and capture_end, replayed in order."""

    def __new__(cls, keep_graph: bool = False):
        return super().__new__(cls)

    def __init__(self, keep_graph: bool = False):
        self.ops: list = []
        self.replays = 0
        self._mode = None
        self._inference = False

    def capture_begin(self, pool=None, capture_error_mode="global", check_input_liveness=False):
        if _state["current"] is DEFAULT_STREAM:
            raise RuntimeError(
                "CUDA error: operation not permitted when stream is capturing (cannot "
                "capture on the legacy default stream)"
            )
        self.ops, self._inference = [], torch.is_inference_mode_enabled()
        _state["capturing"] = self
        self._mode = _Record(self.ops)
        self._mode.__enter__()

    def capture_end(self) -> None:
        self._mode.__exit__(None, None, None)
        pooled = self._mode.pooled.values()
        self._mode, _state["capturing"] = None, None
        with torch.inference_mode(self._inference):
            for t in pooled:  # nothing ran: the pool holds garbage
                if t.is_floating_point():
                    t.fill_(float("nan"))

    def replay(self) -> None:
        if _state["capturing"] is not None:
            raise RuntimeError(CAPTURE_ERROR)
        self.replays += 1
        views: dict = {}

        def resolve(spec):
            if isinstance(spec, _Pooled):
                return spec.tensor
            if isinstance(spec, _Alias):
                return views[spec.key]
            if isinstance(spec, _Borrowed):
                tensor = spec.ref()
                if tensor is None:
                    raise RuntimeError(f"{ILLEGAL_ACCESS} (a tensor the graph reads was freed)")
                return tensor
            return spec

        with torch.inference_mode(self._inference):
            for func, args, kwargs, out, kind in self.ops:
                result = func(*tree_map(resolve, args), **tree_map(resolve, kwargs))
                pairs = zip(tree_flatten(out)[0], tree_flatten(result)[0], strict=True)
                for spec, new in pairs:
                    if kind == "view" and isinstance(spec, _Alias):
                        views[spec.key] = new
                    elif kind == "compute" and isinstance(spec, _Pooled):
                        spec.tensor.copy_(new)

    def reset(self) -> None:
        self.ops = []


def _tensors(out) -> list:
    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


class graph:  # noqa: N801 (torch.cuda.graph's own name)
    """Capture into `cuda_graph` on a side stream (its own, or `stream`), as torch does."""

    default_capture_stream = None

    def __init__(
        self,
        cuda_graph,
        pool=None,
        stream=None,
        capture_error_mode="global",
        enable_annotations=False,
        check_input_liveness=False,
    ):
        if stream is None and graph.default_capture_stream is None:
            graph.default_capture_stream = Stream()
        self.capture_stream = stream or graph.default_capture_stream
        self.cuda_graph, self.pool = cuda_graph, pool
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        synchronize()
        empty_cache()
        self._previous, _state["current"] = _state["current"], self.capture_stream
        self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)

    def __exit__(self, *args):
        try:
            self.cuda_graph.capture_end()
        finally:
            _state["current"] = self._previous


@contextlib.contextmanager
def stream(stream):
    """Make `stream` current; work on a side stream outside a capture is watched (seen)."""
    previous, _state["current"] = _state["current"], stream
    watch = stream is not DEFAULT_STREAM and _state["capturing"] is None
    try:
        with _Watch() if watch else contextlib.nullcontext():
            yield
    finally:
        _state["current"] = previous


def current_stream(device=None):
    return _state["current"]


def synchronize(device=None) -> None:
    if _state["capturing"] is not None:
        raise RuntimeError(CAPTURE_ERROR)
    _state["syncs"] += 1


def empty_cache() -> None:
    if _state["capturing"] is not None:
        raise RuntimeError(CAPTURE_ERROR)


def reset() -> None:
    """A fresh device: nothing seen, no capture under way (between tests)."""
    _state.update(current=DEFAULT_STREAM, capturing=None, seen=set(), syncs=0)
