"""Methods: named ways of running a model (precision, memory format, compilation, runtime).

A method is a small spec resolved once from the config's `methods:` mapping (`bf16:
{precision: bf16}`, `ort: {runtime: onnxruntime}`), so every later stage (rows, savings,
best configurations, recommend, the page) sees methods only, and a method's energy saving
against the baseline comes out of the method savings like any other. A method may also ask
the device for a knob (`KNOBS`: a power limit, a locked SM clock; docs/power.md); a knob
given a list is a sweep, expanded here into ordinary named methods (`fp16@1.0`, `fp16@0.6`).
A precision is also an arithmetic (core.arithmetic); inference runs a timm model in its
deploy form unless `reparameterize: false`; `cudnn_autotune` and `cuda_graphs`
(core.cuda_graphs) say how a GPU runs it. docs/profiling.md#what-a-job-does.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from joulebench.config_schema import default
from joulebench.tables import (
    POWER_LIMIT_FRACTION_MAX,
    POWER_LIMIT_W_MAX,
    RUNTIME_ALIASES,
    RUNTIMES,
    SM_CLOCK_MHZ_MAX,
    SM_CLOCK_PRESETS,
)

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
# Precisions a device runs natively or not at all: where torch has no TF32 (a CPU, a GPU before
# Ampere, ROCm) it runs IEEE fp32 without a word, so a forced row would be a lie; such a
# method is skipped, and allow_emulated does not force it (core.emulation).
NATIVE_ONLY = ("tf32",)
HALF_PRECISIONS = ("fp16", "bf16")  # by autocast, or cast weights (autocast: false)
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
PYTORCH, ONNXRUNTIME, ORT_TENSORRT, TORCH_TENSORRT = RUNTIMES  # tables.RUNTIMES, named
# What each runtime outside PyTorch can run: ONNX Runtime the fp32 graph as exported; its
# TensorRT provider builds fp16 kernels from that same graph when asked (trt_fp16_enable);
# torch-tensorrt builds fp32 or fp16 engines (fp16 by TensorRT's autocast, or cast weights).
# None runs tf32 as a method: an engine picks its own fp32 math (TensorRT's builder uses TF32
# unless told not to), which PyTorch's flags do not reach.
RUNTIME_PRECISIONS = {
    ONNXRUNTIME: ("fp32",),
    ORT_TENSORRT: ("fp32", "fp16"),
    TORCH_TENSORRT: ("fp32", "fp16"),
}
ONNX_RUNTIMES = (ONNXRUNTIME, ORT_TENSORRT)  # those that run an ONNX export (`opset`)
# a method's keys left out take the schema's defaults (config_schema), in Python as in a study
_DEFAULTS = {
    k: default(f"methods.*.{k}")
    for k in ("precision", "autocast", "runtime", "opset", "reparameterize", "cudnn_autotune")
}
DEFAULT_OPSET = _DEFAULTS["opset"]
# The device settings a method may ask for, declared once: each is a Method field and a key
# of `methods:`; Method.knob_fields gives their row columns, knob_label their part of a
# swept method's name. In this order in a name: fp16@0.6@1410MHz.
KNOBS = ("power_limit_w", "power_limit", "sm_clock_mhz")
SWEEP_MARK = "@"  # <name>@<value>: no config key has one (the schema's pattern), so no clash


def config_key(name: str) -> str:
    """The `methods:` key a method's name comes from: a swept name's part before SWEEP_MARK."""
    return name.split(SWEEP_MARK, 1)[0]


# Methods known by name: `joulebench profile --method` (a study names its own in `methods:`).
PRESETS: dict[str, dict] = {
    "fp32": {"precision": "fp32"},
    "tf32": {"precision": "tf32"},
    "fp16-amp": {"precision": "fp16"},
    "bf16": {"precision": "bf16"},
    "fp32-channels-last": {"precision": "fp32", "channels_last": True},
    "fp16-amp-channels-last": {"precision": "fp16", "channels_last": True},
    "fp32-compile": {"precision": "fp32", "compile": "default"},
    "tf32-graphs": {"precision": "tf32", "cuda_graphs": True},
    "fp16-amp-graphs": {"precision": "fp16", "cuda_graphs": True},
    "ort": {"runtime": "onnxruntime"},
    "trt": {"runtime": ORT_TENSORRT},
    "trt-fp16": {"runtime": ORT_TENSORRT, "precision": "fp16"},
    "torchtrt": {"runtime": TORCH_TENSORRT},
    "torchtrt-fp16": {"runtime": TORCH_TENSORRT, "precision": "fp16"},
}


@dataclass(frozen=True)
class Method:
    name: str
    precision: str = _DEFAULTS["precision"]  # fp32 (IEEE), tf32, fp16 or bf16
    autocast: bool = _DEFAULTS["autocast"]  # fp16/bf16 by autocast, else weights cast
    channels_last: bool = False
    compile: str | None = None  # a torch.compile mode, or None for eager
    runtime: str = _DEFAULTS["runtime"]  # tables.RUNTIMES (or an old name: RUNTIME_ALIASES)
    opset: int = DEFAULT_OPSET  # ONNX opset of the export (ONNX runtimes only)
    tolerance: float | None = None  # max relative output error vs PyTorch; None: by precision
    # inference in timm's fused deploy form (joulebench.catalog.deploy_form)
    reparameterize: bool = _DEFAULTS["reparameterize"]
    power_limit_w: float | None = None  # a power limit in watts, set by the device's backend
    power_limit: float | None = None  # or one as a fraction of the board's default limit
    sm_clock_mhz: int | str | None = None  # a locked SM clock: MHz, or max / base
    allow_emulated: bool = False  # measure it where the device only emulates its precision
    # cuDNN times its convolution algorithms (a GPU's; in warm-up)
    cudnn_autotune: bool = _DEFAULTS["cudnn_autotune"]
    cuda_graphs: bool = False  # inference replays a CUDA graph of the forward (pytorch)

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
        for key in ("allow_emulated", "cudnn_autotune", "cuda_graphs"):
            if not isinstance(getattr(self, key), bool):
                raise ValueError(f"method {self.name}: {key} must be true or false")
        if self.tolerance is not None and not _number(self.tolerance) > 0:
            raise ValueError(f"method {self.name}: tolerance must be > 0")
        if self.cuda_graphs and self.compile:
            raise ValueError(
                f"method {self.name}: cuda_graphs and compile do not go together (torch.compile "
                "mode reduce-overhead already captures CUDA graphs)"
            )
        if self.runtime != PYTORCH:
            self._check_exported()
        self._check_knobs()

    def _check_exported(self):
        """Options that only mean something in PyTorch are errors, not silently dropped."""
        allowed = RUNTIME_PRECISIONS[self.runtime]
        if self.precision not in allowed:
            why = " (its engine decides its own fp32 math)" if self.precision == "tf32" else ""
            raise ValueError(
                f"method {self.name}: runtime {self.runtime} runs precision {allowed}, "
                f"not {self.precision}{why}"
            )
        pytorch_only = [
            key
            for key, on in (
                ("compile", self.compile),
                ("channels_last", self.channels_last),
                ("cuda_graphs", self.cuda_graphs),
                ("cudnn_autotune: false", not self.cudnn_autotune),
            )
            if on
        ]
        if pytorch_only:
            raise ValueError(
                f"method {self.name}: {', '.join(pytorch_only)} applies to runtime pytorch "
                f"only, not {self.runtime}"
            )
        if self.runtime in ONNX_RUNTIMES and not self.autocast and self.precision != "fp32":
            raise ValueError(
                f"method {self.name}: autocast false (cast weights) applies to runtime pytorch "
                f"and {TORCH_TENSORRT}, not {self.runtime}"
            )
        if self.runtime not in ONNX_RUNTIMES and self.opset != DEFAULT_OPSET:
            raise ValueError(
                f"method {self.name}: opset applies to {ONNX_RUNTIMES} only, not {self.runtime}"
            )

    def _check_knobs(self):
        """Each knob range-checked (and normalised: watts and fractions as floats, MHz as an
        int), so a unit slip is one line at parse time, not a refused call hours later."""
        if self.power_limit_w is not None and self.power_limit is not None:
            raise ValueError(
                f"method {self.name}: set power_limit_w (watts) or power_limit (a fraction of "
                "the default limit), not both"
            )
        watts, fraction = _number(self.power_limit_w), _number(self.power_limit)
        if self.power_limit_w is not None and not 0 < watts <= POWER_LIMIT_W_MAX:
            hint = " (NVML counts milliwatts; give watts)" if watts > POWER_LIMIT_W_MAX else ""
            raise ValueError(
                f"method {self.name}: power_limit_w is watts in (0, {POWER_LIMIT_W_MAX:g}], "
                f"got {self.power_limit_w!r}{hint}"
            )
        if self.power_limit is not None and not 0 < fraction <= POWER_LIMIT_FRACTION_MAX:
            raise ValueError(
                f"method {self.name}: power_limit is a fraction of the board's default limit "
                f"in (0, {POWER_LIMIT_FRACTION_MAX:g}] (0.6 for 60 %), got "
                f"{self.power_limit!r}; watts go in power_limit_w"
            )
        clock = self.sm_clock_mhz
        mhz = _number(clock)
        whole = math.isfinite(mhz) and mhz == int(mhz) and 1 <= mhz <= SM_CLOCK_MHZ_MAX
        if clock is not None and clock not in SM_CLOCK_PRESETS and not whole:
            raise ValueError(
                f"method {self.name}: sm_clock_mhz is a whole number of MHz in "
                f"[1, {SM_CLOCK_MHZ_MAX}] or one of {SM_CLOCK_PRESETS}, got {clock!r}"
            )
        for key, value in (("power_limit_w", watts), ("power_limit", fraction)):
            if getattr(self, key) is not None:
                object.__setattr__(self, key, value)
        if whole:
            object.__setattr__(self, "sm_clock_mhz", int(mhz))

    @property
    def knobs(self) -> dict:
        """The device settings this method asks for ({} when none), from its description."""
        described = self.describe()
        return {k: described[k] for k in KNOBS if described[k] is not None}

    def knob_fields(self, readback: KnobReadback | None = None) -> dict:
        """The row columns of this method's knobs: what it asks for (NaN or empty where it
        asks none), and what the device's backend read back after setting them (`readback`;
        NaN where nothing was read back: no knob, or a device side that sets none)."""
        read = readback or KnobReadback()
        clock = self.sm_clock_mhz
        return {
            "power_limit_requested_w": _or_nan(self.power_limit_w),
            "power_limit_requested_fraction": _or_nan(self.power_limit),
            "power_limit_readback_w": read.power_limit_w,
            "sm_clock_requested_mhz": math.nan if isinstance(clock, str) else _or_nan(clock),
            "sm_clock_requested_preset": clock if isinstance(clock, str) else "",
            "sm_clock_readback_mhz": read.sm_clock_mhz,
        }

    @property
    def exported(self) -> bool:
        """True when the model runs outside PyTorch: from an ONNX export or a TensorRT engine
        (built from the fp32 model, and checked against it)."""
        return self.runtime != PYTORCH

    def describe(self) -> dict:
        return asdict(self)

    @property
    def half(self) -> bool:
        """fp16 or bf16: autocast, or weights and inputs cast (fp32 and tf32: fp32 tensors)."""
        return self.precision in HALF_PRECISIONS

    @property
    def dtype(self):
        """The tensors' dtype: float32 for fp32 and tf32 (TF32 is a math mode, not a dtype)."""
        import torch

        return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(self.precision, torch.float32)

    def prepare(self, model, x):
        """Return (model, x) converted for this method; compilation happens lazily."""
        import torch

        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        if self.half and not self.autocast:
            model, x = model.to(self.dtype), x.to(self.dtype)
        if self.compile:
            model = torch.compile(model, mode=self.compile)
        return model, x

    def context(self, device_type: str, cache_enabled: bool = True):
        """The autocast context a step runs in (a no-op for fp32, tf32 or cast weights).
        `cache_enabled=False` for a CUDA graph's capture (torch's advice: the cast weights
        autocast caches are freed when its context ends, under a captured graph's feet)."""
        import torch

        if not self.half or not self.autocast:
            return contextlib.nullcontext()
        return torch.autocast(
            device_type=device_type, dtype=self.dtype, cache_enabled=cache_enabled
        )


@dataclass(frozen=True)
class KnobReadback:
    """What a device's backend read back after setting a method's knobs (core/backends):
    the power limit and locked SM clock in force while the configuration was measured."""

    power_limit_w: float = math.nan
    sm_clock_mhz: float = math.nan


def _number(value) -> float:
    """A real number as a float, anything else (a bool, text, a list) NaN: range checks fail."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def _or_nan(value) -> float:
    return math.nan if value is None else float(value)


def knob_label(key: str, value) -> str:
    """A knob value as it reads in a swept method's name: 0.6 (a fraction of the default
    limit), 250W, 1410MHz, max-clock. Fractions keep a decimal point (1.0, not 1)."""
    number = _number(value)
    if key == "power_limit" and math.isfinite(number):
        return repr(number)
    if key == "power_limit_w" and math.isfinite(number):
        return f"{number:g}W"
    if key == "sm_clock_mhz" and math.isfinite(number) and number == int(number):
        return f"{int(number)}MHz"
    if key == "sm_clock_mhz" and value in SM_CLOCK_PRESETS:
        return f"{value}-clock"
    return str(value)  # not a number: Method refuses it, naming the value


def expand_methods(config: Mapping) -> dict[str, dict]:
    """The config's `methods:` with every sweep expanded: a knob given a list becomes one
    method per value, named <name>@<value> (fp16@0.6, fp16@250W, fp16@1410MHz,
    fp16@max-clock; a power and a clock list give every pair, fp16@0.6@1410MHz), in the
    list's order; a method with no list keeps its name. No torch: the plan reads it too."""
    out: dict[str, dict] = {}
    for name, spec in config.items():
        spec = dict(spec or {})
        swept = [k for k in KNOBS if isinstance(spec.get(k), list | tuple)]
        for key in swept:
            labels = [knob_label(key, v) for v in spec[key]]
            if not labels or len(set(labels)) < len(labels):
                raise ValueError(
                    f"method {name}: a {key} sweep needs at least one value, each once, "
                    f"got {spec[key]!r}"
                )
        for values in itertools.product(*(spec[k] for k in swept)):
            named = name + "".join(
                SWEEP_MARK + knob_label(k, v) for k, v in zip(swept, values, strict=True)
            )
            if named in out:
                raise ValueError(
                    f"method {named}: two methods have this name (a sweep of {name} names "
                    f"its methods {name}{SWEEP_MARK}<value>)"
                )
            out[named] = {**spec, **dict(zip(swept, values, strict=True))}
    return out


def parse_methods(config: Mapping) -> dict[str, Method]:
    """The config's `methods:` mapping -> Method objects, sweeps expanded (expand_methods);
    unknown keys and out-of-range knobs are errors."""
    methods = {}
    for name, spec in expand_methods(config).items():
        if spec.get("compile") is False:
            spec["compile"] = None
        if spec.get("compile") is True:
            spec["compile"] = "default"
        try:
            methods[name] = Method(name=name, **spec)
        except TypeError as exc:
            raise ValueError(f"method {name}: {exc}") from exc
    return methods
