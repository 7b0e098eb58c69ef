"""Methods: named ways of running a model (precision, memory format, compilation).

A method is a small spec resolved once from the config's `methods:` mapping, the way timm
gives every model a pretrained config: `bf16: {precision: bf16}` names a preset.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass

PRECISIONS = ("fp32", "fp16", "bf16")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclass(frozen=True)
class Method:
    name: str
    precision: str = "fp32"  # fp32, fp16 or bf16
    autocast: bool = True  # fp16/bf16 by autocast (mixed precision), else weights cast
    channels_last: bool = False
    compile: str | None = None  # a torch.compile mode, or None for eager

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f"method {self.name}: precision must be one of {PRECISIONS}")
        if self.compile not in (None, *COMPILE_MODES):
            raise ValueError(f"method {self.name}: compile must be one of {COMPILE_MODES}")

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
