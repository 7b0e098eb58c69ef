"""A stand-in for torch_tensorrt 2.14.0 (TensorRT 11.1) that runs the model on the CPU.

Only what joulebench.core.trt_native uses, with the real names and arguments
(tests/core/test_trt_native.py holds them against signatures read from the real package's
source): `compile(module, ir="dynamo", arg_inputs=[Input(shape=..., dtype=...)], ...)`,
`save(module, file_path, arg_inputs=[x])`, `load(file_path)`, `Input`, `__version__`, and
`tensorrt` (with its `__version__`) put in sys.modules at import, as the real package's
TensorRT proxy does.

What it does, as the real dynamo path does it: `compile` traces the module with
torch.export (a model torch.export cannot trace fails here as there), and returns a
torch.fx.GraphModule whose "engine" is a child named `_run_on_acc_0`; TensorRT's autocast
(`enable_autocast=True, autocast_low_precision_type=torch.float16`) runs that engine in real
fp16 arithmetic with fp32 input and output; a model already cast to fp16 runs in fp16. `save`
writes an ExportedProgram file with torch.export.save, and `load` reads one back with
torch.export.load (a file that is none raises ValueError, as the real one does). Options the
real dynamo compile does not have are refused (TypeError), so a misspelt option fails here.

For tests: `COMPILED` lists the options of every compile call (counting builds), and
`PERTURB` (a relative error) makes the engines built while it is set disagree with PyTorch,
as a wrong engine would; it is part of the saved engine, so a cached wrong engine stays wrong.
"""

from __future__ import annotations

import copy
import sys
import types

import torch
from torch import nn

__version__ = "2.14.0"
__cuda_version__ = "13.2"

tensorrt = types.ModuleType("tensorrt")  # what the real package's proxy puts in sys.modules
tensorrt.__version__ = "11.1.0"
sys.modules["tensorrt"] = tensorrt

# The keyword options of torch_tensorrt.dynamo.compile (2.14.0) this fake understands; the
# real one has many more (tests/core/test_trt_native.py lists the real names).
DYNAMO_OPTIONS = (
    "device",
    "timing_cache_path",
    "enable_autocast",
    "autocast_low_precision_type",
    "min_block_size",
    "require_full_compilation",
)
COMPILED: list[dict] = []
PERTURB = 0.0


class Input:
    """A static input spec: `Input(shape)` or `Input(shape=..., dtype=..., format=...)`."""

    def __init__(self, *args, **kwargs):
        shape = args[0] if args else kwargs.get("shape")
        if shape is None or "min_shape" in kwargs:
            raise NotImplementedError("the fake takes static shapes only")
        self.shape = tuple(shape)
        self.dtype = kwargs.get("dtype", torch.float32)
        self.format = kwargs.get("format", torch.contiguous_format)
        self.name = kwargs.get("name", "")

    def example_tensor(self, optimization_profile_field=None) -> torch.Tensor:
        return torch.rand(self.shape).to(dtype=self.dtype)  # as the real one makes it


class _Engine(nn.Module):
    """What TensorRT would run: the traced graph, in fp16 under autocast, maybe wrong."""

    def __init__(self, graph: nn.Module, low_precision, perturb: float):
        super().__init__()
        # a copy: TensorRT's engine holds its own weights; the caller's model stays fp32
        self.graph = copy.deepcopy(graph).to(low_precision) if low_precision else graph
        self.low_precision = low_precision
        self.register_buffer("scale", torch.tensor(1.0 + perturb))

    def forward(self, x):
        inner = x.to(self.low_precision) if self.low_precision is not None else x
        return (self.graph(inner) * self.scale.to(inner.dtype)).to(x.dtype)


class _Compiled(nn.Module):
    def __init__(self, engine: _Engine):
        super().__init__()
        self._run_on_acc_0 = engine

    def forward(self, x):
        return self._run_on_acc_0(x)


class _KeepEngines(torch.fx.Tracer):
    def is_leaf_module(self, m, qualname) -> bool:
        return isinstance(m, _Engine) or super().is_leaf_module(m, qualname)


def compile(
    module,
    ir="default",
    inputs=None,
    arg_inputs=None,
    kwarg_inputs=None,
    enabled_precisions=None,
    **kwargs,
):
    """The dynamo path: trace with torch.export, "build" the engine, return a GraphModule."""
    if ir not in ("default", "dynamo"):
        raise NotImplementedError(f"the fake runs the dynamo path only, not ir={ir!r}")
    if inputs is not None and arg_inputs is not None:
        raise AssertionError("'arg_inputs' and 'inputs' should not be used at the same time.")
    unknown = sorted(set(kwargs) - set(DYNAMO_OPTIONS))
    if unknown:
        raise TypeError(f"compile() got unexpected keyword arguments {unknown}")
    specs = list(inputs if inputs is not None else arg_inputs)
    COMPILED.append({"ir": ir, "arg_inputs": specs, **kwargs})
    device = torch.device(kwargs.get("device", "cpu"))
    examples = tuple(
        s.example_tensor().to(device) if isinstance(s, Input) else s.to(device) for s in specs
    )
    graph = torch.export.export(module, examples).module()  # fails where the real one fails
    low = kwargs.get("autocast_low_precision_type") if kwargs.get("enable_autocast") else None
    if low not in (None, torch.float16, torch.bfloat16):
        raise ValueError(f"autocast_low_precision_type must be float16 or bfloat16, got {low}")
    wrapper = _Compiled(_Engine(graph, low, PERTURB))
    return torch.fx.GraphModule(wrapper, _KeepEngines().trace(wrapper))


def save(
    module,
    file_path="",
    *,
    extra_files=None,
    output_format="exported_program",
    inputs=None,
    arg_inputs=None,
    kwarg_inputs=None,
    retrace=True,
    use_legacy_exporter=None,
    pickle_protocol=2,
    dynamic_shapes=None,
    **kwargs,
):
    """Write an ExportedProgram file of the compiled module (re-exported with its inputs)."""
    if output_format != "exported_program":
        raise NotImplementedError(f"the fake saves exported_program only, not {output_format}")
    args = inputs if inputs is not None else arg_inputs
    if args is None:
        raise ValueError("Provided model is a torch.fx.GraphModule, inputs are required")
    program = torch.export.export(module, tuple(args))
    torch.export.save(program, file_path, extra_files=extra_files)


def load(file_path="", extra_files=None, *, format=None, **kwargs):
    """The ExportedProgram in `file_path`; ValueError when the file is none."""
    try:
        return torch.export.load(file_path, extra_files=extra_files)
    except Exception:
        raise ValueError(
            f"The file {file_path} doesn't correspond to a valid Torchscript module or "
            "ExportedProgram. Please verify the file path."
        ) from None
