"""The host's CPU (`cpu`): RAPL where its counters are readable, else the labelled estimate.

The CPU is the host: it measures alone (a CPU job takes every measuring slot and core), is
its own host meter in the whole-node reading, and `devices: auto` falls back to it. Where
RAPL is not used, the reason (missing, permission denied and the command that grants read
access) goes into every row's `meter_reasons`.

Its native precisions come from the instructions Linux lists in /proc/cpuinfo (below);
torch cannot say: `torch.ops.mkldnn._is_mkldnn_bf16_supported()` is True on any AVX-512
CPU, where oneDNN emulates bf16 without avx512_bf16. oneDNN's own cap on the instructions
it uses (ONEDNN_MAX_CPU_ISA, older DNNL_MAX_CPU_ISA) takes precedence: with it at AVX2, bf16
ran 22x slower than fp32 on a Xeon VM whose flags list amx_bf16 (docs/benchmarks.md).
"""

from __future__ import annotations

import os
from pathlib import Path

from joulebench.core.backends.base import (
    Backend,
    DeviceIdentity,
    DeviceInfo,
    DeviceState,
    Libraries,
    NativePrecisions,
)
from joulebench.core.backends.bound import BoundDevice
from joulebench.core.methods import PRECISIONS

CPUINFO = "/proc/cpuinfo"  # Libraries.cpuinfo replaces it (tests: a fake CPU's text)
# The instructions that compute in a precision, as Linux names them: x86's `flags` line
# (avx512_bf16: Cooper Lake, Zen 4+; amx_*: Sapphire / Granite Rapids; avx512_fp16:
# Sapphire Rapids), aarch64's `Features` (bf16: BFDOT/BFMMLA; asimdhp: fp16 arithmetic; ARM
# is assumed from the architecture, not measured). Without one, bf16 and fp16 are converted
# to fp32 and back: on an AVX2 EPYC bf16 ran 15x slower than fp32 (issue 24).
NATIVE_FLAGS = {
    "flags": {"bf16": ("avx512_bf16", "amx_bf16"), "fp16": ("avx512_fp16", "amx_fp16")},
    "features": {"bf16": ("bf16",), "fp16": ("asimdhp",)},
}


# oneDNN's ISA caps as its documentation numbers them (dnnl_cpu_isa_t: each a bit mask that
# holds the masks of the ISAs it includes), and the masks a precision's instructions need:
# bf16 from avx512_core_bf16 (or avx2_vnni_2), fp16 from avx512_core_fp16 (or avx2_vnni_2).
ISA_CAP_VARIABLES = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")  # the first set wins
ONEDNN_ISA_MASK = {
    "SSE41": 0x1,
    "AVX": 0x3,
    "AVX2": 0x7,
    "AVX2_VNNI": 0xF,
    "AVX2_VNNI_2": 0x1F,
    "AVX512_CORE": 0x27,
    "AVX512_CORE_VNNI": 0x67,
    "AVX512_CORE_BF16": 0xE7,
    "AVX10_1_512": 0x1EF,
    "AVX512_CORE_FP16": 0x1EF,
    "AVX10_1_512_AMX": 0xFEF,
    "AVX512_CORE_AMX": 0xFEF,
    "AVX10_1_512_AMX_FP16": 0x1FEF,
    "AVX512_CORE_AMX_FP16": 0x1FEF,
}
ISA_NEEDS = {"bf16": (0xE7, 0x1F), "fp16": (0x1EF, 0x1F)}


def isa_cap(environ) -> tuple[str, str] | None:
    """(variable, value) of a oneDNN ISA cap that the table knows; None: no cap (unset,
    ALL, DEFAULT, or a value oneDNN would not take either)."""
    for name in ISA_CAP_VARIABLES:
        value = str(environ.get(name, "")).strip().upper()
        if value:
            return (name, value) if value in ONEDNN_ISA_MASK else None
    return None


def capped(native: NativePrecisions, environ) -> NativePrecisions:
    """`native` less the precisions whose instructions a oneDNN ISA cap switches off."""
    cap = isa_cap(environ)
    if cap is None:
        return native
    name, value = cap
    mask = ONEDNN_ISA_MASK[value]
    why_not, kept = dict(native.why_not), []
    for precision in native.native:
        needs = ISA_NEEDS.get(precision)
        if needs and not any(mask & need == need for need in needs):
            why_not[precision] = f"{name}={value} keeps oneDNN from its {precision} instructions"
        else:
            kept.append(precision)
    return NativePrecisions(tuple(kept), why_not, basis=f"{native.basis} and {name}")


def cpu_flags(text: str) -> tuple[str, set[str]]:
    """('flags' on x86 or 'features' on aarch64, the flags) of a /proc/cpuinfo text's first
    processor; ('', set()) when it lists none (not Linux's format)."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key in NATIVE_FLAGS:
            return key, set(value.split())
    return "", set()


# TF32 is NVIDIA's tensor-core math; torch's CPU kernels run a tf32 method's fp32 in IEEE.
NO_TF32 = "a CPU has no TF32 (NVIDIA tensor cores from Ampere, compute capability 8.0)"


def native_from_cpuinfo(text: str, source: str = CPUINFO) -> NativePrecisions | None:
    """The precisions a CPU computes natively, by its /proc/cpuinfo flags; None: no flags."""
    key, flags = cpu_flags(text)
    if not key:
        return None
    native, why_not = {"fp32"}, {}
    for precision, names in NATIVE_FLAGS[key].items():
        if flags & set(names):
            native.add(precision)
        else:
            why_not[precision] = f"this CPU has no {' or '.join(names)} in {source}"
    why_not["tf32"] = NO_TF32
    ordered = tuple(p for p in PRECISIONS if p in native)
    return NativePrecisions(ordered, why_not, basis=f"the {key} of {source}")


def readable_reason(reason: str) -> str:
    """'rapl: missing: /sys/class/powercap does not exist: ...' -> one readable line."""
    name, _, rest = reason.partition(": ")
    code, _, text = rest.partition(": ")
    if code == "missing":
        return f"{name.upper()}: {text.split(':')[0]}"
    return f"{name.upper()}: {text or rest}"


class CpuDevice(BoundDevice):
    """The host's CPU, bound: its meter (RAPL, else the estimate) and its flags file."""

    def name(self) -> str:
        from joulebench.core.provenance import cpu_name

        return cpu_name()

    def native_precisions(self) -> NativePrecisions | None:
        """By the flags file's instructions; None where it cannot be read (not Linux)."""
        libs = self.libs
        path = libs.cpuinfo or CPUINFO
        try:
            text = Path(path).read_text(errors="replace")
        except OSError:
            return None
        native = native_from_cpuinfo(text, path)
        return native and capped(native, os.environ if libs.environ is None else libs.environ)

    def build_meter(self, prefer: str | None, **options):
        """RAPL, else the estimate with the reason; `prefer` forces one and never falls back."""
        from joulebench.core.meters import MeterUnavailable
        from joulebench.core.meters.registry import make_meter

        if prefer is not None:
            others = [name for name in self.backend.meters if name != prefer]
            return make_meter(prefer, **options), [
                f"{n}: not tried, prefer={prefer!r}" for n in others
            ]
        try:
            return make_meter("rapl", **options), []
        except MeterUnavailable as err:
            reason = f"rapl: {err.reason}: {err}"
        return make_meter("estimate", **options), [reason]

    def state(self, meter) -> DeviceState:
        return DeviceState(device_name=self.name(), energy_counter=not meter.is_estimate)


class CpuBackend(Backend):
    """The host's CPU packages (and DRAM), read by RAPL or modelled by the estimate."""

    kind = "cpu"
    pattern = "cpu"
    spellings = ("cpu",)
    meters = ("rapl", "estimate")  # best first
    node_part = "cpu"
    is_host = True
    device_class = CpuDevice

    def discover(self, libs: Libraries) -> tuple[list[DeviceIdentity], str]:
        return [DeviceIdentity("cpu", self.bind("cpu").name())], ""

    def label(self, identity: DeviceIdentity) -> str:
        return "cpu"

    def describe(
        self, label: str, device: str, libs: Libraries, meter_options: dict | None = None
    ) -> DeviceInfo:
        bound = self.bind(device, label, libs)
        info = DeviceInfo(label, device, name=bound.name(), is_host=True)
        meter, reasons = bound.meter(**(meter_options or {}))
        with meter:
            info.meter = meter.name
        info.not_better = [readable_reason(r) for r in reasons]
        return info

    def problems(self, label: str, device: str, libs: Libraries) -> list[str]:
        return []  # always measurable: by RAPL, or by the labelled estimate


BACKEND = CpuBackend()
