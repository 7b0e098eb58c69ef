"""Methods: named ways of running a model (precision, memory format, compilation, runtime).

A method is a small spec resolved once from the config's `methods:` mapping, the way timm
gives every model a pretrained config: `bf16: {precision: bf16}` names a preset,
`ort: {runtime: onnxruntime}` runs the same model through ONNX Runtime, and
`torchtrt-fp16: {runtime: torch-tensorrt, precision: fp16}` through a TensorRT engine.
The energy saving of any method against the baseline method then comes out of the method
savings like any other.
Inference runs a timm model in its deploy form (timm's re-parameterisation,
joulebench.catalog.deploy_form) unless the method says `reparameterize: false`.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass

from joulebench.tables import RUNTIME_ALIASES, RUNTIMES

PRECISIONS = ("fp32", "fp16", "bf16")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
PYTORCH, ONNXRUNTIME, ORT_TENSORRT, TORCH_TENSORRT = RUNTIMES  # tables.RUNTIMES, named
# What each runtime outside PyTorch can run: ONNX Runtime the fp32 graph as exported; its
# TensorRT provider builds fp16 kernels from that same graph when asked (trt_fp16_enable);
# torch-tensorrt builds fp32 or fp16 engines (fp16 by TensorRT's autocast, or cast weights).
RUNTIME_PRECISIONS = {
    ONNXRUNTIME: ("fp32",),
    ORT_TENSORRT: ("fp32", "fp16"),
    TORCH_TENSORRT: ("fp32", "fp16"),
}
ONNX_RUNTIMES = (ONNXRUNTIME, ORT_TENSORRT)  # those that run an ONNX export (`opset`)
DEFAULT_OPSET = 18
# Methods known by name: `joulebench profile --method` (a study names its own in `methods:`).
PRESETS: dict[str, dict] = {
    "fp32": {"precision": "fp32"},
    "fp16-amp": {"precision": "fp16"},
    "bf16": {"precision": "bf16"},
    "fp32-channels-last": {"precision": "fp32", "channels_last": True},
    "fp16-amp-channels-last": {"precision": "fp16", "channels_last": True},
    "fp32-compile": {"precision": "fp32", "compile": "default"},
    "ort": {"runtime": "onnxruntime"},
    "trt": {"runtime": ORT_TENSORRT},
    "trt-fp16": {"runtime": ORT_TENSORRT, "precision": "fp16"},
    "torchtrt": {"runtime": TORCH_TENSORRT},
    "torchtrt-fp16": {"runtime": TORCH_TENSORRT, "precision": "fp16"},
}


@dataclass(frozen=True)
class Method:
    name: str
    precision: str = "fp32"  # fp32, fp16 or bf16
    autocast: bool = True  # fp16/bf16 by autocast (mixed precision), else weights cast
    channels_last: bool = False
    compile: str | None = None  # a torch.compile mode, or None for eager
    runtime: str = PYTORCH  # tables.RUNTIMES (or an old name in tables.RUNTIME_ALIASES)
    opset: int = DEFAULT_OPSET  # ONNX opset of the export (ONNX runtimes only)
    tolerance: float | None = None  # max relative output error vs PyTorch; None: by precision
    reparameterize: bool = (
        True  # inference in timm's fused deploy form (joulebench.catalog.deploy_form)
    )
    allow_emulated: bool = False  # measure it where the device only emulates its precision

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f"method {self.name}: precision must be one of {PRECISIONS}")
        if self.compile not in (None, *COMPILE_MODES):
            raise ValueError(f"method {self.name}: compile must be one of {COMPILE_MODES}")
        runtime = RUNTIME_ALIASES.get(self.runtime, self.runtime)
        object.__setattr__(self, "runtime", runtime)  # rows name the runtime, never an alias
        if self.runtime not in RUNTIMES:
            raise ValueError(f"method {self.name}: runtime must be one of {RUNTIMES}")
        if not isinstance(self.reparameterize, bool):
            raise ValueError(f"method {self.name}: reparameterize must be true or false")
        if not isinstance(self.allow_emulated, bool):
            raise ValueError(f"method {self.name}: allow_emulated must be true or false")
        if self.runtime != PYTORCH:
            self._check_exported()

    def _check_exported(self):
        """Options that only mean something in PyTorch are errors, not silently dropped."""
        allowed = RUNTIME_PRECISIONS[self.runtime]
        if self.precision not in allowed:
            raise ValueError(
                f"method {self.name}: runtime {self.runtime} runs precision {allowed}, "
                f"not {self.precision}"
            )
        if self.compile or self.channels_last:
            raise ValueError(
                f"method {self.name}: compile and channels_last apply to runtime pytorch only"
            )
        if self.tolerance is not None and not self.tolerance > 0:
            raise ValueError(f"method {self.name}: tolerance must be > 0")
        if self.runtime in ONNX_RUNTIMES and not self.autocast and self.precision != "fp32":
            raise ValueError(
                f"method {self.name}: autocast false (cast weights) applies to runtime pytorch "
                f"and {TORCH_TENSORRT}, not {self.runtime}"
            )
        if self.runtime not in ONNX_RUNTIMES and self.opset != DEFAULT_OPSET:
            raise ValueError(
                f"method {self.name}: opset applies to {ONNX_RUNTIMES} only, not {self.runtime}"
            )

    @property
    def exported(self) -> bool:
        """True when the model runs outside PyTorch: from an ONNX export or a TensorRT engine
        (built from the fp32 model, and checked against it)."""
        return self.runtime != PYTORCH

    def describe(self) -> dict:
        return asdict(self)

    @property
    def dtype(self):
        import torch

        return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[
            self.precision
        ]

    def prepare(self, model, x):
        """Return (model, x) converted for this method; compilation happens lazily."""
        import torch

        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        if self.precision != "fp32" and not self.autocast:
            model, x = model.to(self.dtype), x.to(self.dtype)
        if self.compile:
            model = torch.compile(model, mode=self.compile)
        return model, x

    def context(self, device_type: str):
        """The autocast context a step runs in (a no-op for fp32 or cast weights)."""
        import torch

        if self.precision == "fp32" or not self.autocast:
            return contextlib.nullcontext()
        return torch.autocast(device_type=device_type, dtype=self.dtype)


def parse_methods(config: dict) -> dict[str, Method]:
    """The config's `methods:` mapping -> Method objects (unknown keys are errors)."""
    methods = {}
    for name, spec in config.items():
        spec = dict(spec or {})
        if spec.get("compile") is False:
            spec["compile"] = None
        if spec.get("compile") is True:
            spec["compile"] = "default"
        try:
            methods[name] = Method(name=name, **spec)
        except TypeError as exc:
            raise ValueError(f"method {name}: {exc}") from exc
    return methods
