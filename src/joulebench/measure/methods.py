"""Methods: named ways of running a model (precision, memory format, compilation, runtime).

A method is a small spec resolved once from the config's `methods:` mapping, the way timm
gives every model a pretrained config: `bf16: {precision: bf16}` names a preset, and
`ort: {runtime: onnxruntime}` runs the same model through ONNX Runtime. The energy saving of
any method against the baseline method then comes out of the method savings like any other.
Inference runs a timm model in its deploy form (timm's re-parameterisation,
joulebench.catalog.deploy_form) unless the method says `reparameterize: false`.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass

PRECISIONS = ("fp32", "fp16", "bf16")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
RUNTIMES = ("pytorch", "onnxruntime", "tensorrt")
# What each exported runtime can run: ONNX Runtime the fp32 graph as exported; TensorRT
# builds fp16 kernels from that same graph when asked (its trt_fp16_enable option).
RUNTIME_PRECISIONS = {"onnxruntime": ("fp32",), "tensorrt": ("fp32", "fp16")}
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
    "trt": {"runtime": "tensorrt"},
    "trt-fp16": {"runtime": "tensorrt", "precision": "fp16"},
}


@dataclass(frozen=True)
class Method:
    name: str
    precision: str = "fp32"  # fp32, fp16 or bf16
    autocast: bool = True  # fp16/bf16 by autocast (mixed precision), else weights cast
    channels_last: bool = False
    compile: str | None = None  # a torch.compile mode, or None for eager
    runtime: str = "pytorch"  # pytorch, onnxruntime or tensorrt (via ONNX Runtime)
    opset: int = DEFAULT_OPSET  # ONNX opset of the export (exported runtimes only)
    tolerance: float | None = None  # max relative output error vs PyTorch; None: by precision
    reparameterize: bool = (
        True  # inference in timm's fused deploy form (joulebench.catalog.deploy_form)
    )

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f"method {self.name}: precision must be one of {PRECISIONS}")
        if self.compile not in (None, *COMPILE_MODES):
            raise ValueError(f"method {self.name}: compile must be one of {COMPILE_MODES}")
        if self.runtime not in RUNTIMES:
            raise ValueError(f"method {self.name}: runtime must be one of {RUNTIMES}")
        if not isinstance(self.reparameterize, bool):
            raise ValueError(f"method {self.name}: reparameterize must be true or false")
        if self.runtime != "pytorch":
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

    @property
    def exported(self) -> bool:
        """True when the model runs outside PyTorch, from an ONNX export."""
        return self.runtime != "pytorch"

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
