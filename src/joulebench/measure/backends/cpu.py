"""The host's CPU (`cpu`): RAPL where its counters are readable, else the labelled estimate.

The CPU is the host: it measures alone (a CPU job takes every measuring slot and core), is
its own host meter in the whole-node reading, and `devices: auto` falls back to it. Where
RAPL is not used, the reason (missing, permission denied and the command that grants read
access) goes into every row's `meter_reasons`.

Its native precisions come from the instructions Linux lists in /proc/cpuinfo (below);
torch cannot say: `torch.ops.mkldnn._is_mkldnn_bf16_supported()` is True on any AVX-512
CPU, where oneDNN emulates bf16 without avx512_bf16.
"""

from __future__ import annotations

from pathlib import Path

from joulebench.measure.backends.base import (
    Backend,
    DeviceIdentity,
    DeviceInfo,
    DeviceState,
    Libraries,
    NativePrecisions,
)
from joulebench.measure.methods import PRECISIONS

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


def cpu_flags(text: str) -> tuple[str, set[str]]:
    """('flags' on x86 or 'features' on aarch64, the flags) of a /proc/cpuinfo text's first
    processor; ('', set()) when it lists none (not Linux's format)."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key in NATIVE_FLAGS:
            return key, set(value.split())
    return "", set()


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
    ordered = tuple(p for p in PRECISIONS if p in native)
    return NativePrecisions(ordered, why_not, basis=f"the {key} of {source}")


def readable_reason(reason: str) -> str:
    """'rapl: missing: /sys/class/powercap does not exist: ...' -> one readable line."""
    name, _, rest = reason.partition(": ")
    code, _, text = rest.partition(": ")
    if code == "missing":
        return f"{name.upper()}: {text.split(':')[0]}"
    return f"{name.upper()}: {text or rest}"


class CpuBackend(Backend):
    """The host's CPU packages (and DRAM), read by RAPL or modelled by the estimate."""

    kind = "cpu"
    pattern = "cpu"
    spellings = ("cpu",)
    meters = ("rapl", "estimate")  # best first
    node_part = "cpu"
    is_host = True

    def discover(self, libs: Libraries) -> tuple[list[DeviceIdentity], str]:
        return [DeviceIdentity("cpu", self.name("cpu"))], ""

    def label(self, identity: DeviceIdentity) -> str:
        return "cpu"

    def name(self, device: str, libs: Libraries | None = None) -> str:
        from joulebench.measure.provenance import cpu_name

        return cpu_name()

    def describe(
        self, label: str, device: str, libs: Libraries, meter_options: dict | None = None
    ) -> DeviceInfo:
        info = DeviceInfo(label, device, name=self.name(device), is_host=True)
        meter, reasons = self.meter(device, **(meter_options or {}))
        with meter:
            info.meter = meter.name
        info.not_better = [readable_reason(r) for r in reasons]
        return info

    def problems(self, label: str, device: str, libs: Libraries) -> list[str]:
        return []  # always measurable: by RAPL, or by the labelled estimate

    def native_precisions(self, device: str, libs: Libraries) -> NativePrecisions | None:
        """By the flags file's instructions; None where it cannot be read (not Linux)."""
        path = libs.cpuinfo or CPUINFO
        try:
            text = Path(path).read_text(errors="replace")
        except OSError:
            return None
        return native_from_cpuinfo(text, path)

    def meter(self, device, *, prefer=None, label="", libs=None, **options):
        """RAPL, else the estimate with the reason; `prefer` forces one and never falls back."""
        from joulebench.measure.meters import MeterUnavailable
        from joulebench.measure.meters.registry import make_meter

        self.check_prefer(device, prefer)
        if prefer is not None:
            others = [name for name in self.meters if name != prefer]
            return make_meter(prefer, **options), [
                f"{n}: not tried, prefer={prefer!r}" for n in others
            ]
        try:
            return make_meter("rapl", **options), []
        except MeterUnavailable as err:
            reason = f"rapl: {err.reason}: {err}"
        return make_meter("estimate", **options), [reason]

    def state(self, meter) -> DeviceState:
        return DeviceState(device_name=self.name("cpu"), energy_counter=not meter.is_estimate)


BACKEND = CpuBackend()
