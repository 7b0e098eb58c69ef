"""Methods a device only emulates, and whether they are measured.

A precision the hardware has no instructions for is converted to fp32 and back: its energy
and time say nothing of the precision. So such a method is not measured by default: its rows
are `skipped`, the reason naming what the device lacks and the key that forces it
(`allow_emulated: true` on the method; `joulebench profile --allow-emulated`). A forced one
is measured and flagged `emulated`: shown, not invalidating. tf32 is not emulated but absent:
where a device has no TF32, torch runs IEEE fp32 without a word, so tf32 is skipped, never
forced, also where the device's answer is not known. What a device runs natively is its
bound device's answer (BoundDevice.native_precisions). docs/profiling.md#emulated-precisions.
"""

from __future__ import annotations

from dataclasses import dataclass

from joulebench.core.backends import (
    BoundDevice,
    DeviceError,
    Libraries,
    NativePrecisions,
    bound_device,
)
from joulebench.core.methods import NATIVE_ONLY, Method
from joulebench.flags import FLAG_EMULATED

FORCE_KEY = "allow_emulated"  # the method key that forces it (Method.allow_emulated)
FORCE_OPTION = "--allow-emulated"  # joulebench profile's


@dataclass(frozen=True)
class Verdict:
    """Whether a method is measured on a device: `skip_reason` when not, `flag` when it is
    measured in emulation."""

    skip_reason: str = ""
    flag: str = ""

    @property
    def fields(self) -> dict:
        """Row fields of a measured configuration: its flag, when it has one."""
        return {"flags": self.flag} if self.flag else {}


def verdict(method: Method, native: NativePrecisions | None) -> Verdict:
    """The verdict for `method` where `native` was read (None: not known, so measured)."""
    if native is None or not native.emulated(method.precision):
        return Verdict()
    why = native.why_not.get(method.precision) or native.basis
    if method.precision in NATIVE_ONLY:
        return Verdict(skip_reason=absent_reason(method, why))
    if method.allow_emulated:
        return Verdict(flag=FLAG_EMULATED)
    return Verdict(
        skip_reason=f"{method.precision} is only emulated here: {why}; not measured "
        f"({FORCE_KEY}: true on method {method.name} measures it; joulebench profile: "
        f"{FORCE_OPTION})"
    )


def absent_reason(method: Method, why: str) -> str:
    """Why a NATIVE_ONLY precision (tf32) is not measured here, and why nothing forces it."""
    return (
        f"{method.precision} does not run here: {why}; not measured, and {FORCE_KEY} does not "
        f"force it (torch would run IEEE fp32 under the name {method.precision})"
    )


def method_verdict(device: BoundDevice, method: Method) -> Verdict:
    """The verdict for `method` on `device`, asking it (the profile job): as `verdict`, but
    a NATIVE_ONLY precision where the answer is not known is skipped."""
    native = device.native_precisions()
    if native is None and method.precision in NATIVE_ONLY:
        why = f"what {device} runs natively is not known here"
        return Verdict(skip_reason=absent_reason(method, why))
    return verdict(method, native)


def native_by_label(
    devices: dict[str, str], libs: Libraries | None = None
) -> dict[str, NativePrecisions | None]:
    """label -> what each device runs natively here (the plan); None where not known."""
    libs = libs or Libraries()
    out = {}
    for label, device in devices.items():
        try:
            out[label] = bound_device(device, label, libs).native_precisions()
        except (DeviceError, ValueError):  # a device no backend serves, an unknown sim GPU
            out[label] = None
    return out
