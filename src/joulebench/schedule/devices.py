"""Which devices a study measures, and whether they can be measured here.

`devices: auto` (the default) picks every GPU of the first GPU kind that finds some (NVIDIA
through NVML, else AMD through AMD SMI), matched by UUID as the meter does, identical ones
(one product name) one pool under one label (`h200`); without a GPU, the CPU. An explicit
map is used as written (a device or a `pool`). `check_devices` says what is missing before
any job starts, `describe_devices` which meter each device gets and why (`joulebench
devices`). Every answer about a kind of device comes from its backend; scheduling jobs on
the devices is joulebench.schedule's. torch is imported only when a GPU library sees a GPU
or a device names one, so a CPU-only machine resolves `auto` without it. `torch`, `nvml` and
`amdsmi` can be passed in (tests). docs/devices.md#pools.
"""

from __future__ import annotations

import json
import os

from joulebench.core.backends import (
    Backend,
    DeviceError,
    DeviceIdentity,
    DeviceInfo,
    Libraries,
    backend_for,
    backends,
    host_backend,
    kind_of,
    spellings,
)
from joulebench.core.emulation import FORCE_KEY
from joulebench.core.methods import NATIVE_ONLY

AUTO = "auto"
# The devices `auto` resolved to in the process that planned the run, passed to its jobs:
# a cluster job re-reads the workflow on a GPU node, which must not resolve `auto` anew.
RESOLVED_ENV = "JOULEBENCH_AUTO_DEVICES"

POOL = "pool"  # devices: {h200: {pool: [cuda:0, cuda:1]}}
# devices: {h200: {pool: [...], each_model_on: k}}: each model measured on k distinct GPUs
EACH_MODEL_ON = "each_model_on"

__all__ = ["AUTO", "EACH_MODEL_ON", "POOL", "RESOLVED_ENV", "DeviceError", "DeviceInfo"]


def pool_members(entry) -> list[str]:
    """The devices of one `devices:` value: a device string alone, or a pool's list."""
    if isinstance(entry, dict):
        return [str(d) for d in entry[POOL]]
    if isinstance(entry, list | tuple):
        return [str(d) for d in entry]
    return [str(entry)]


def replicas(label: str, entry) -> dict[str, list[str]]:
    """A pool measured `each_model_on: k` distinct GPUs as k labels (`h200-0` ..), label r
    a pool of the GPUs r, r + k, ...: each model is measured once under each label, so on
    k distinct GPUs (k = the pool's size: one GPU per label, each measuring every model)."""
    members = pool_members(entry)
    k = int(entry.get(EACH_MODEL_ON, 1)) if isinstance(entry, dict) else 1
    if k <= 1:
        return {label: members}
    if k > len(members):
        raise DeviceError(
            f"devices: '{label}' asks {EACH_MODEL_ON}: {k}, but its pool has {len(members)} GPUs"
        )
    return {f"{label}-{r}": members[r::k] for r in range(k)}


def as_pools(devices: dict) -> dict[str, list[str]]:
    """label -> its devices, from a map of devices, of pools, or of both (a pool measured
    on k GPUs per model as its k labels: replicas)."""
    pools: dict[str, list[str]] = {}
    for label, entry in devices.items():
        for name, members in replicas(label, entry).items():
            if name in pools or (name != label and name in devices):
                raise DeviceError(f"devices: the label '{name}' is given twice")
            pools[name] = members
    return pools


def pool_of(devices: dict) -> dict[str, str]:
    """label -> the study's label of its pool: a replica's (`h200-1` -> `h200`), else its own."""
    return {name: label for label, entry in devices.items() for name in replicas(label, entry)}


def representatives(pools: dict) -> dict[str, str]:
    """label -> its first device: what a pool's kind, name, checks and plan are read from."""
    return {label: members[0] for label, members in as_pools(pools).items()}


def group_pools(backend: Backend, found: list[DeviceIdentity]) -> dict[str, list[str]]:
    """Identical devices (one pool_key: the product name) as one pool under one label
    (`h200`); two products of one short name keep their first device's own label (`a100-0`)."""
    groups: dict[str, list[DeviceIdentity]] = {}
    for identity in found:
        groups.setdefault(backend.pool_key(identity), []).append(identity)
    labels = [backend.pool_label(members[0]) for members in groups.values()]
    pools = {}
    for label, members in zip(labels, groups.values(), strict=True):
        if labels.count(label) > 1:
            label = backend.label(members[0])
        pools[label] = [identity.device for identity in members]
    return pools


def auto_devices(*, torch=None, nvml=None, amdsmi=None) -> tuple[dict[str, list[str]], str]:
    """label -> the devices (a pool) that `auto` picks, and why a GPU was not picked (or "")."""
    libs = Libraries(torch=torch, nvml=nvml, amdsmi=amdsmi)
    whys = []
    for backend in backends(simulated=False):
        if not backend.auto:
            continue
        found, why = backend.discover(libs)
        if found:
            return group_pools(backend, found), why
        whys.append(why)
    host = host_backend()
    (identity,), _ = host.discover(libs)
    return {host.label(identity): [identity.device]}, "; ".join(w for w in whys if w)


def resolve_pools(spec, *, env=None, torch=None, nvml=None) -> dict[str, list[str]]:
    """The config's `devices:` as label -> its devices (`auto` resolved, see the module doc)."""
    if spec != AUTO:
        return as_pools(spec)
    env = os.environ if env is None else env
    if env.get(RESOLVED_ENV):
        return as_pools(json.loads(env[RESOLVED_ENV]))
    return auto_devices(torch=torch, nvml=nvml)[0]


def resolve_devices(spec, *, env=None, torch=None, nvml=None) -> dict[str, str]:
    """label -> one device string per label (a pool's first; see resolve_pools)."""
    return representatives(resolve_pools(spec, env=env, torch=torch, nvml=nvml))


def _describe(label: str, device: str, libs: Libraries, meter_options=None) -> DeviceInfo:
    """Its backend's description of the device, with what it runs natively; an unknown
    device string is a problem."""
    try:
        backend = backend_for(device, libs)
    except DeviceError:
        return DeviceInfo(label, str(device), problems=[_unknown(label, device)])
    info = backend.describe(label, device, libs, meter_options)
    if not info.problems:
        info.precisions = backend.bind(device, label, libs).native_precisions()
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
        pools, why_not = auto_devices(torch=torch, nvml=nvml, amdsmi=amdsmi)
    else:
        pools = as_pools(spec)
    libs = Libraries(torch=torch, nvml=nvml, amdsmi=amdsmi)
    infos = [
        _describe(label, device, libs, meter_options)
        for label, members in pools.items()
        for device in members
    ]
    return infos, why_not


def pool_problems(label: str, members: list[str]) -> list[str]:
    """Why devices cannot be one pool: a device twice, the host's CPU, or mixed kinds."""
    if len(members) < 2:
        return []
    where = f"devices: '{label}' is a pool of {', '.join(members)}, but"
    if len(set(members)) < len(members):
        return [f"{where} it names a device twice"]
    try:
        kinds = {kind_of(device).kind: kind_of(device) for device in members}
    except DeviceError:
        return []  # the unknown device is said per device
    if any(backend.is_host for backend in kinds.values()):
        return [f"{where} the CPU measures alone: give it its own label"]
    if len(kinds) > 1:
        return [f"{where} a pool is of one kind of device ({' and '.join(kinds)} here)"]
    return []


def check_devices(devices: dict, *, torch=None, nvml=None) -> list[str]:
    """What makes a study's devices (or pools) unmeasurable here (one line per device);
    [] when fine."""
    libs = Libraries(torch=torch, nvml=nvml)
    problems = []
    for label, members in as_pools(devices).items():
        problems += pool_problems(label, members)
        for device in members:
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


def _pool_text(label: str, members: list[str]) -> str:
    """'h200 (cuda:0)', or 'h200 (a pool of 2: cuda:0, cuda:1)'."""
    if len(members) == 1:
        return f"{label} ({members[0]})"
    return f"{label} (a pool of {len(members)}: {', '.join(members)})"


def _format_info(info: DeviceInfo) -> list[str]:
    lines = ["", f"{info.label}: {info.device}, {info.name or 'unknown device'}"]
    if info.problems:
        return lines + [f"  cannot measure: {p}" for p in info.problems]
    lines.append(f"  meter: {info.meter}")
    for reason in info.not_better:
        first, *rest = reason.splitlines()
        lines.append(f"  not better: {first}")
        lines += [f"    {line.strip()}" for line in rest if line.strip()]
    return lines + _precision_lines(info.precisions)


def _precision_lines(native) -> list[str]:
    """What a device runs natively, why each other precision is only emulated, and which it
    does not run at all (tf32: nothing forces it, core.emulation)."""
    if native is None:
        return [
            "  native precisions: not known here (every method is measured, but "
            f"{', '.join(NATIVE_ONLY)}: skipped)"
        ]
    lines = [f"  native precisions: {', '.join(native.native)}"]
    emulated = {p: why for p, why in native.why_not.items() if p not in NATIVE_ONLY}
    absent = {p: why for p, why in native.why_not.items() if p in NATIVE_ONLY}
    if emulated:
        lines.append(
            f"  emulated: {', '.join(emulated)} (skipped rows, unless the method "
            f"sets {FORCE_KEY}: true)"
        )
        lines += [f"    {precision}: {why}" for precision, why in emulated.items()]
    if absent:
        lines.append(
            f"  not run: {', '.join(absent)} (skipped rows, even with {FORCE_KEY}: torch "
            "would run IEEE fp32)"
        )
        lines += [f"    {precision}: {why}" for precision, why in absent.items()]
    return lines


def format_devices(
    infos: list[DeviceInfo], why_not: str = "", spec=AUTO, simulated: list | None = None
) -> str:
    """The table `joulebench devices` prints (and the simulated devices, when given)."""
    lines = []
    if spec == AUTO:
        pools: dict[str, list[str]] = {}
        for info in infos:
            pools.setdefault(info.label, []).append(info.device)
        picked = ", ".join(_pool_text(label, members) for label, members in pools.items())
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


# --- measuring slots: every GPU of a host at once, never two jobs on one GPU -------------
