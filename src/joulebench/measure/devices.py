"""Which devices a study measures, and whether they can be measured here.

`devices: auto` (the default) picks every NVIDIA GPU that both torch (CUDA) and NVML see,
each under its own label (the GPU's short name and CUDA index, `h200-0`), matched to its
NVML device by UUID as the meter does; without one it picks the CPU. An explicit map
(`{gpu: cuda:1}`) is used as written. `check_devices` says, per device, what is missing
before any job starts, and `describe_devices` which meter each device would get and why a
better one is not used (the `joulebench devices` command).

torch is imported only when NVML sees a GPU or a device names CUDA, so a CPU-only machine
resolves `auto` in milliseconds. `torch` and `nvml` can be passed in (tests: a fake
torch.cuda and tests/fake_nvml.py).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from joulebench.measure.sim.wall import BOARD, is_simulated, sim_generation

AUTO = "auto"
# The devices `auto` resolved to in the process that planned the run, passed to its jobs:
# a cluster job re-reads the workflow on a GPU node, which must not resolve `auto` anew.
RESOLVED_ENV = "JOULEBENCH_AUTO_DEVICES"
CUDA_PATTERN = re.compile(r"cuda(?::(\d+))?")
# Words of NVIDIA's product names that say nothing about the GPU.
_VENDOR_WORDS = {"nvidia", "geforce", "tesla", "quadro", "amd", "instinct", "radeon"}


class DeviceError(ValueError):
    """A device of the study cannot be measured here; the message names it and the fix."""


@dataclass
class Gpu:
    """One GPU as `auto` sees it."""

    cuda_index: int
    name: str
    uuid: str | None
    nvml_index: int

    @property
    def label(self) -> str:
        return f"{short_gpu_name(self.name)}-{self.cuda_index}"


@dataclass
class DeviceInfo:
    """What `joulebench devices` prints for one device."""

    label: str
    torch_device: str
    name: str = ""
    meter: str = ""  # the meter a job would use; empty when none can read this device
    not_better: list[str] = field(default_factory=list)  # why a better meter is not used
    problems: list[str] = field(default_factory=list)  # why it cannot be measured at all


def short_gpu_name(name: str) -> str:
    """'NVIDIA H200' -> 'h200', 'NVIDIA GeForce RTX 4090' -> 'rtx4090',
    'NVIDIA A100-SXM4-80GB' -> 'a100': the words up to the first with a digit."""
    words = [w for w in re.split(r"[\s\-_]+", name.lower()) if w and w not in _VENDOR_WORDS]
    kept = []
    for word in words:
        kept.append(word)
        if any(c.isdigit() for c in word):
            break
    short = re.sub(r"[^a-z0-9]", "", "".join(kept))
    return short or "gpu"


def _load_torch():
    import torch

    return torch


def _load_nvml():
    from joulebench.measure.meters.nvml import load_pynvml

    return load_pynvml()


def _nvml_devices(nvml) -> tuple[list[tuple[str | None, str | None, str]], str]:
    """[(uuid, pci bus id, name)] of every GPU NVML sees, and why there are none."""
    from joulebench.measure.meters.nvml import _bus_id

    try:
        nvml.nvmlInit()
    except nvml.NVMLError as err:
        return [], f"NVML: {err} (no NVIDIA driver)"
    try:
        out = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(handle)
            name = name.decode() if isinstance(name, bytes) else str(name)
            bus_id = _bus_id(nvml.nvmlDeviceGetPciInfo(handle))
            out.append((nvml.nvmlDeviceGetUUID(handle), bus_id, name))
        return out, "" if out else "NVML sees no GPU"
    finally:
        nvml.nvmlShutdown()


def _torch_label(torch) -> str:
    version = getattr(torch, "version", None)
    cuda, hip = getattr(version, "cuda", None), getattr(version, "hip", None)
    if hip:
        return f"torch {torch.__version__}, ROCm {hip}"
    return f"torch {torch.__version__}" + (f", CUDA {cuda}" if cuda else ", built without CUDA")


def _load_amdsmi():
    from joulebench.measure.meters.amdsmi import load_amdsmi

    return load_amdsmi()


def find_amd_gpus(*, torch=None, amdsmi=None) -> tuple[list[Gpu], str]:
    """The AMD GPUs (AMD SMI) a ROCm build of torch can measure here, and, if none, why."""
    from joulebench.measure.meters.amdsmi import amd_devices

    if amdsmi is None:
        try:
            amdsmi = _load_amdsmi()
        except Exception as err:  # MeterUnavailable: amdsmi not installed
            return [], f"AMD SMI: {err}"
    try:
        amdsmi.amdsmi_init()
    except amdsmi.AmdSmiException as err:
        return [], f"AMD SMI: {err} (no amdgpu driver)"
    try:
        found = [(uuid, bdf, name) for _, uuid, bdf, name in amd_devices(amdsmi)]
    finally:
        amdsmi.amdsmi_shut_down()
    if not found:
        return [], "AMD SMI sees no GPU"
    torch = torch or _load_torch()
    names = ", ".join(name for _, _, name in found)
    if not getattr(torch.version, "hip", None):
        return [], f"AMD SMI sees {names}, but {_torch_label(torch)}: install a ROCm build of torch"
    return _match_torch(torch, found, "AMD SMI")


def _match_torch(torch, found, source: str) -> tuple[list[Gpu], str]:
    """Each torch cuda device matched to `found` [(uuid, bus id, name)] by UUID or bus id."""
    from joulebench.measure.meters.nvml import cuda_identity, match_nvml_index

    pairs = [(uuid, bus) for uuid, bus, _ in found]
    gpus, unmatched = [], []
    for index in range(torch.cuda.device_count()):
        uuid, bus = cuda_identity(index, cuda=torch.cuda)
        try:
            device_index, _ = match_nvml_index(uuid, bus, pairs)
        except LookupError:
            unmatched.append(f"cuda:{index}")
            continue
        gpus.append(Gpu(index, found[device_index][2], uuid, device_index))
    why = ""
    if unmatched:
        why = f"no {source} device matches {', '.join(unmatched)} by UUID or PCI bus id"
    return gpus, why


def find_gpus(*, torch=None, nvml=None, amdsmi=None) -> tuple[list[Gpu], str]:
    """The NVIDIA GPUs (else AMD GPUs) that can be measured here, and, if none, why."""
    gpus, why = _find_nvidia_gpus(torch=torch, nvml=nvml)
    if gpus:
        return gpus, why
    amd, why_amd = find_amd_gpus(torch=torch, amdsmi=amdsmi)
    return amd, why_amd if amd else f"{why}; {why_amd}"


def _find_nvidia_gpus(*, torch=None, nvml=None) -> tuple[list[Gpu], str]:
    """The NVIDIA GPUs that can be measured here, and, when there are none, why."""
    if nvml is None:
        try:
            nvml = _load_nvml()
        except Exception as err:  # MeterUnavailable: nvidia-ml-py not installed
            return [], f"NVML: {err}"
    nvml_gpus, why = _nvml_devices(nvml)
    if not nvml_gpus:
        return [], why
    torch = torch or _load_torch()
    names = ", ".join(name for _, _, name in nvml_gpus)
    if not getattr(torch.version, "cuda", None):
        return [], f"NVML sees {names}, but {_torch_label(torch)}: install a CUDA build of torch"
    if not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        hint = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        return [], f"NVML sees {names}, but torch sees no CUDA device{hint}"
    return _match_torch(torch, nvml_gpus, "NVML")


def auto_devices(*, torch=None, nvml=None, amdsmi=None) -> tuple[dict[str, str], str]:
    """label -> torch device that `auto` picks, and why a GPU was not picked (or "")."""
    gpus, why = find_gpus(torch=torch, nvml=nvml, amdsmi=amdsmi)
    if gpus:
        return {gpu.label: f"cuda:{gpu.cuda_index}" for gpu in gpus}, why
    return {"cpu": "cpu"}, why


def resolve_devices(spec, *, env=None, torch=None, nvml=None) -> dict[str, str]:
    """The config's `devices:` as label -> torch device (`auto` resolved, see the module doc)."""
    if spec != AUTO:
        return dict(spec)
    env = os.environ if env is None else env
    if env.get(RESOLVED_ENV):
        return json.loads(env[RESOLVED_ENV])
    return auto_devices(torch=torch, nvml=nvml)[0]


def _cuda_problem(label: str, device: str, torch) -> str:
    """Why `device` (cuda or cuda:N) cannot run here, or "" when it can."""
    index = int(CUDA_PATTERN.fullmatch(device)[1] or 0)
    prefix = f"devices: '{label}' is {device}, but"
    if not getattr(torch.version, "cuda", None) and not getattr(torch.version, "hip", None):
        return (
            f"{prefix} this torch has no CUDA ({_torch_label(torch)}). Install a CUDA build "
            "of torch, or measure the CPU (devices: {cpu: cpu}, or devices: auto)."
        )
    if not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        hint = f"; CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else ""
        return (
            f"{prefix} no CUDA device is visible (torch.cuda.is_available() is False{hint}). "
            "Check the driver with `nvidia-smi`, or use devices: auto."
        )
    count = torch.cuda.device_count()
    if index >= count:
        return f"{prefix} only {count} CUDA device(s) are visible (cuda:0..cuda:{count - 1})."
    return ""


def _meter_info(
    label: str, device: str, *, torch=None, nvml=None, amdsmi=None, meter_options=None
) -> DeviceInfo:
    """The meter a job would use for this device, and why a better one is not used."""
    from joulebench.measure.meters import MeterUnavailable, select_meter

    info = DeviceInfo(label, device)
    if is_simulated(device):
        try:
            info.name = f"{BOARD[sim_generation(device)]} (simulated)"
        except ValueError as err:
            info.problems.append(f"devices: '{label}' is {device}, but {err}")
            return info
        info.meter = "nvml:sim"
        info.not_better = ["SIM: a simulated GPU: the model runs on the CPU; never scored"]
        return info
    if device == "cpu":
        from joulebench.measure.provenance import cpu_name

        info.name = cpu_name()
        meter, reasons = select_meter("cpu", **(meter_options or {}))
        with meter:
            info.meter = meter.name
        info.not_better = [_readable_reason(r) for r in reasons]
        return info
    torch = torch or _load_torch()
    problem = _cuda_problem(label, device, torch)
    if problem:
        info.problems.append(problem)
        return info
    from joulebench.measure.meters.nvml import cuda_identity

    index = int(CUDA_PATTERN.fullmatch(device)[1] or 0)
    uuid, bus = cuda_identity(index, cuda=torch.cuda)
    info.name = str(torch.cuda.get_device_properties(index).name)
    options = {"uuid": uuid, "pci_bus_id": bus, "sample_interval_s": None}
    rocm = bool(getattr(torch.version, "hip", None))
    source = "AMD SMI" if rocm else "NVML"
    try:
        meter, _ = select_meter(device, nvml=nvml, amdsmi=amdsmi, rocm=rocm, **options)
    except MeterUnavailable as err:
        info.problems.append(f"devices: '{label}' is {device}, but {source} cannot read it: {err}")
        return info
    with meter:
        info.meter = meter.name
        if rocm:
            info.not_better.append(
                "AMDSMI: the AMD meter is tested against a fake of amdsmi only, not yet run "
                "on AMD hardware (docs/measurement.md#amd-gpus)"
            )
        elif not meter.has_energy_counter:
            info.not_better.append(
                "nvml: no total-energy counter on this GPU (older than Volta): energy is "
                "the sampled power integrated"
            )
    return info


def _readable_reason(reason: str) -> str:
    """'rapl: missing: /sys/class/powercap does not exist: ...' -> one readable line."""
    name, _, rest = reason.partition(": ")
    code, _, text = rest.partition(": ")
    if code == "missing":
        return f"{name.upper()}: {text.split(':')[0]}"
    return f"{name.upper()}: {text or rest}"


def describe_devices(
    spec, *, torch=None, nvml=None, amdsmi=None, meter_options=None
) -> tuple[list[DeviceInfo], str]:
    """Per device of `spec` (a map or `auto`): meter and reasons; and why `auto` took no GPU."""
    why_not = ""
    if spec == AUTO:
        devices, why_not = auto_devices(torch=torch, nvml=nvml, amdsmi=amdsmi)
    else:
        devices = dict(spec)
    infos = [
        _meter_info(
            label, device, torch=torch, nvml=nvml, amdsmi=amdsmi, meter_options=meter_options
        )
        for label, device in devices.items()
    ]
    return infos, why_not


def check_devices(devices: dict[str, str], *, torch=None, nvml=None) -> list[str]:
    """What makes a study's devices unmeasurable here (one line per device); [] when fine."""
    infos = [  # a CPU is always measurable (with RAPL or the labelled estimate)
        _meter_info(label, device, torch=torch, nvml=nvml)
        for label, device in devices.items()
        if device != "cpu"
    ]
    return [problem for info in infos for problem in info.problems]


def require_measurable(label: str, device: str, *, torch=None, nvml=None) -> None:
    """Raise DeviceError saying what is missing when `device` cannot be measured here (one
    line, no traceback): what measuring commands check first."""
    problems = check_devices({label: device}, torch=torch, nvml=nvml)
    if problems:
        raise DeviceError("\n".join(problems))


def format_devices(infos: list[DeviceInfo], why_not: str = "", spec=AUTO) -> str:
    """The table `joulebench devices` prints."""
    lines = []
    if spec == AUTO:
        picked = ", ".join(f"{i.label} ({i.torch_device})" for i in infos)
        lines.append(f"devices: auto picks {picked}")
        if why_not:
            gpus = any(i.torch_device != "cpu" for i in infos)
            lines.append(f"  {'skipped' if gpus else 'no GPU'}: {why_not}")
    else:
        lines.append("devices: as the study names them")
    for info in infos:
        lines.append("")
        lines.append(f"{info.label}: {info.torch_device}, {info.name or 'unknown device'}")
        if info.problems:
            lines += [f"  cannot measure: {p}" for p in info.problems]
            continue
        lines.append(f"  meter: {info.meter}")
        for reason in info.not_better:
            first, *rest = reason.splitlines()
            lines.append(f"  not better: {first}")
            lines += [f"    {line.strip()}" for line in rest if line.strip()]
    return "\n".join(lines)


def devices_for(configfile: str | None = None) -> tuple[str, bool]:
    """`joulebench devices`: (the table, whether every device can be measured) for the
    study's devices, or for `auto` without a study file."""
    from joulebench.study import load_study

    spec = load_study(configfile)["devices"] if configfile else AUTO
    infos, why_no_gpu = describe_devices(spec)
    return format_devices(infos, why_no_gpu, spec), not any(info.problems for info in infos)


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
    if label is None or devices.get(label) == "cpu":
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
    if devices[label] == "cpu":
        return cores
    gpus = sum(1 for device in devices.values() if device != "cpu")
    return max(1, cores // max(gpus, 1))


def pinned_uuids(devices: dict[str, str], *, torch=None) -> dict[str, str]:
    """label -> `GPU-<uuid>` for each CUDA device: a job sets CUDA_VISIBLE_DEVICES to it and
    sees its one GPU as cuda:0 (the meter then matches it by the same UUID)."""
    from joulebench.measure.meters.nvml import cuda_identity, normalize_uuid

    cuda = {label: d for label, d in devices.items() if CUDA_PATTERN.fullmatch(d)}
    if not cuda:
        return {}
    torch = torch or _load_torch()
    if getattr(torch.version, "hip", None):
        return {}  # ROCm: HIP's UUIDs are not AMD SMI's; jobs keep cuda:N, matched by bus id
    out = {}
    for label, device in cuda.items():
        uuid, _ = cuda_identity(int(CUDA_PATTERN.fullmatch(device)[1] or 0), cuda=torch.cuda)
        if normalize_uuid(uuid):
            out[label] = "GPU-" + normalize_uuid(uuid)
    return out


def pin_to_gpu(spec: dict, uuid: str | None, env=None) -> dict:
    """Before torch starts: make `uuid` the only visible GPU; the job's device is cuda:0."""
    if not uuid:
        return spec
    env = os.environ if env is None else env
    env["CUDA_VISIBLE_DEVICES"] = uuid
    return {**spec, "torch_device": "cuda:0"}
