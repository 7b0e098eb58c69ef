"""Which devices a study measures, and whether they can be measured here.

`devices: auto` (the default) picks every GPU of the first GPU kind that finds some (NVIDIA
through NVML, else AMD through AMD SMI; measure.backends), each under its own label (the
GPU's short name and CUDA index, `h200-0`), matched to its management library's device by
UUID as the meter does; without one it picks the CPU. An explicit map (`{gpu: cuda:1}`) is
used as written. `check_devices` says, per device, what is missing before any job starts,
and `describe_devices` which meter each device would get and why a better one is not used
(the `joulebench devices` command; simulated devices only when asked). Every answer about a
kind of device comes from its backend: nothing here tests a device string.

torch is imported only when a GPU library sees a GPU or a device names one, so a CPU-only
machine resolves `auto` in milliseconds. `torch`, `nvml` and `amdsmi` can be passed in
(tests: a fake torch.cuda, tests/helpers/fake_nvml.py, tests/fake_amdsmi).
"""

from __future__ import annotations

import json
import os
import re

from joulebench.measure.backends import (
    DeviceError,
    DeviceInfo,
    Libraries,
    backend_for,
    backends,
    host_backend,
    kind_of,
    spellings,
)
from joulebench.measure.emulation import FORCE_KEY

AUTO = "auto"
# The devices `auto` resolved to in the process that planned the run, passed to its jobs:
# a cluster job re-reads the workflow on a GPU node, which must not resolve `auto` anew.
RESOLVED_ENV = "JOULEBENCH_AUTO_DEVICES"

__all__ = ["AUTO", "RESOLVED_ENV", "DeviceError", "DeviceInfo"]


def auto_devices(*, torch=None, nvml=None, amdsmi=None) -> tuple[dict[str, str], str]:
    """label -> device string that `auto` picks, and why a GPU was not picked (or "")."""
    libs = Libraries(torch=torch, nvml=nvml, amdsmi=amdsmi)
    whys = []
    for backend in backends(simulated=False):
        if not backend.auto:
            continue
        found, why = backend.discover(libs)
        if found:
            return {backend.label(identity): identity.device for identity in found}, why
        whys.append(why)
    host = host_backend()
    (identity,), _ = host.discover(libs)
    return {host.label(identity): identity.device}, "; ".join(w for w in whys if w)


def resolve_devices(spec, *, env=None, torch=None, nvml=None) -> dict[str, str]:
    """The config's `devices:` as label -> device string (`auto` resolved, see the module doc)."""
    if spec != AUTO:
        return dict(spec)
    env = os.environ if env is None else env
    if env.get(RESOLVED_ENV):
        return json.loads(env[RESOLVED_ENV])
    return auto_devices(torch=torch, nvml=nvml)[0]


def _describe(label: str, device: str, libs: Libraries, meter_options=None) -> DeviceInfo:
    """Its backend's description of the device, with what it runs natively; an unknown
    device string is a problem."""
    try:
        backend = backend_for(device, libs)
    except DeviceError:
        return DeviceInfo(label, str(device), problems=[_unknown(label, device)])
    info = backend.describe(label, device, libs, meter_options)
    if not info.problems:
        info.precisions = backend.native_precisions(device, libs)
    return info


def _unknown(label: str, device) -> str:
    return f"devices: '{label}' is {device!r}: no device joulebench measures; use {spellings()}"


def simulated_devices() -> list[DeviceInfo]:
    """The simulated devices the registry knows (`joulebench devices --sim`)."""
    libs, infos = Libraries(), []
    for backend in backends():
        if backend.simulated:
            for identity in backend.discover(libs)[0]:
                infos.append(_describe(backend.label(identity), identity.device, libs))
    return infos


def describe_devices(
    spec, *, torch=None, nvml=None, amdsmi=None, meter_options=None
) -> tuple[list[DeviceInfo], str]:
    """Per device of `spec` (a map or `auto`): meter and reasons; and why `auto` took no GPU."""
    why_not = ""
    if spec == AUTO:
        devices, why_not = auto_devices(torch=torch, nvml=nvml, amdsmi=amdsmi)
    else:
        devices = dict(spec)
    libs = Libraries(torch=torch, nvml=nvml, amdsmi=amdsmi)
    infos = [_describe(label, device, libs, meter_options) for label, device in devices.items()]
    return infos, why_not


def check_devices(devices: dict[str, str], *, torch=None, nvml=None) -> list[str]:
    """What makes a study's devices unmeasurable here (one line per device); [] when fine."""
    libs = Libraries(torch=torch, nvml=nvml)
    problems = []
    for label, device in devices.items():
        try:
            backend = backend_for(device, libs)
        except DeviceError:
            problems.append(_unknown(label, device))
            continue
        problems += backend.problems(label, device, libs)
    return problems


def require_measurable(label: str, device: str, *, torch=None, nvml=None) -> None:
    """Raise DeviceError saying what is missing when `device` cannot be measured here (one
    line, no traceback): what measuring commands check first."""
    problems = check_devices({label: device}, torch=torch, nvml=nvml)
    if problems:
        raise DeviceError("\n".join(problems))


def _format_info(info: DeviceInfo) -> list[str]:
    lines = ["", f"{info.label}: {info.torch_device}, {info.name or 'unknown device'}"]
    if info.problems:
        return lines + [f"  cannot measure: {p}" for p in info.problems]
    lines.append(f"  meter: {info.meter}")
    for reason in info.not_better:
        first, *rest = reason.splitlines()
        lines.append(f"  not better: {first}")
        lines += [f"    {line.strip()}" for line in rest if line.strip()]
    return lines + _precision_lines(info.precisions)


def _precision_lines(native) -> list[str]:
    """What a device runs natively, and why each other precision is only emulated."""
    if native is None:
        return ["  native precisions: not known here (every method is measured)"]
    lines = [f"  native precisions: {', '.join(native.native)}"]
    if native.why_not:
        lines.append(
            f"  emulated: {', '.join(native.why_not)} (skipped rows, unless the method "
            f"sets {FORCE_KEY}: true)"
        )
        lines += [f"    {precision}: {why}" for precision, why in native.why_not.items()]
    return lines


def format_devices(
    infos: list[DeviceInfo], why_not: str = "", spec=AUTO, simulated: list | None = None
) -> str:
    """The table `joulebench devices` prints (and the simulated devices, when given)."""
    lines = []
    if spec == AUTO:
        picked = ", ".join(f"{i.label} ({i.torch_device})" for i in infos)
        lines.append(f"devices: auto picks {picked}")
        if why_not:
            gpus = any(not i.is_host for i in infos)
            lines.append(f"  {'skipped' if gpus else 'no GPU'}: {why_not}")
    else:
        lines.append("devices: as the study names them")
    for info in infos:
        lines += _format_info(info)
    if simulated:
        lines += [
            "",
            "simulated devices (for tests and benches; never scored, never picked by auto):",
        ]
        for info in simulated:
            lines += _format_info(info)
    return "\n".join(lines)


def devices_for(study: dict | None = None, simulated: bool = False) -> tuple[str, bool]:
    """`joulebench devices`: (the table, whether every device can be measured) for the
    study's devices (a loaded study: prerun.load_study), or for `auto` without one; with the
    simulated ones if asked."""
    spec = study["devices"] if study else AUTO
    infos, why_no_gpu = describe_devices(spec)
    extra = simulated_devices() if simulated else None
    text = format_devices(infos, why_no_gpu, spec, extra)
    return text, not any(info.problems for info in infos)


# --- measuring slots: every GPU of a host at once, never two jobs on one device -------------


def measuring_slot(label: str) -> str:
    """The resource a device's measuring jobs take (one per device, limit 1)."""
    return "measuring_" + re.sub(r"[^A-Za-z0-9_]", "_", label)


def measuring_slots(devices: dict[str, str]) -> dict[str, str]:
    """label -> its slot's name; two labels that would share a slot are an error."""
    slots = {label: measuring_slot(label) for label in devices}
    if len(set(slots.values())) < len(slots):
        raise DeviceError(f"device labels {sorted(devices)} collide once '-' becomes '_'")
    return slots


def slots_taken(devices: dict[str, str], label: str | None) -> list[str]:
    """The slots a measuring job holds: its own device's. A CPU measurement (and a job of no
    device, e.g. measured accuracy) takes them all: it would load the CPUs every other
    measurement shares, and read the host's energy they share."""
    slots = measuring_slots(devices)
    if label is None or kind_of(devices[label]).is_host:
        return list(slots.values())
    return [slots[label]]


def measuring_resources(devices: dict[str, str]) -> dict:
    """A measuring rule's `resources:`: the slots it takes (see slots_taken), as functions of
    the job's wildcards. The workflow declares each slot with a limit of 1, scoped local, so
    a cluster run submits every allocation at once and each allocation measures one job at
    a time per device."""

    def taking(slot):
        return lambda wildcards: int(slot in slots_taken(devices, wildcards.get("device")))

    return {slot: taking(slot) for slot in measuring_slots(devices).values()}


def measure_threads(devices: dict[str, str], label: str, cores: int) -> int:
    """torch threads of a measuring job: every core for the CPU, else an equal share of the
    cores among the GPUs (simulated ones included: they run the model on the CPU)."""
    if kind_of(devices[label]).is_host:
        return cores
    gpus = sum(1 for device in devices.values() if not kind_of(device).is_host)
    return max(1, cores // max(gpus, 1))


def pinned_uuids(devices: dict[str, str], *, torch=None) -> dict[str, str]:
    """label -> what pins a job to its device (for a CUDA GPU `GPU-<uuid>`: the job sets
    CUDA_VISIBLE_DEVICES to it and sees its one GPU as cuda:0, the meter matching it by the
    same UUID). Devices their backend does not pin (the CPU, simulated GPUs, AMD GPUs, whose
    HIP UUIDs are not AMD SMI's) are left out; torch is loaded only for a GPU."""
    libs = Libraries(torch=torch)
    out = {}
    for label, device in devices.items():
        value = backend_for(device, libs).pin_value(device, libs)
        if value:
            out[label] = value
    return out


def pin_to_gpu(spec: dict, uuid: str | None, env=None) -> dict:
    """Before torch starts: pin the job to its device by `uuid` (pinned_uuids' value)."""
    if not uuid:
        return spec
    env = os.environ if env is None else env
    device = spec["torch_device"]
    return {**spec, "torch_device": kind_of(device).pin(device, uuid, env)}
