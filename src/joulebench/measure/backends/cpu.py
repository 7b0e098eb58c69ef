"""The host's CPU (`cpu`): RAPL where its counters are readable, else the labelled estimate.

The CPU is the host: it measures alone (a CPU job takes every measuring slot and core), is
its own host meter in the whole-node reading, and `devices: auto` falls back to it. Where
RAPL is not used, the reason (missing, permission denied and the command that grants read
access) goes into every row's `meter_reasons`.
"""

from __future__ import annotations

from joulebench.measure.backends.base import (
    Backend,
    DeviceIdentity,
    DeviceInfo,
    DeviceState,
    Libraries,
)


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
