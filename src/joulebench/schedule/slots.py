"""Scheduling a study's jobs on its devices: Snakemake's measuring slots (one device, one
measuring job at a time), the CPU threads a job gets, and pinning a job to its GPU or
leasing one of a pool (schedule.lease). Device discovery is schedule.devices'."""

import os
import re

from joulebench.core.backends import DeviceError, Libraries, backend_for, kind_of
from joulebench.schedule.devices import as_pools, check_devices, representatives


def measuring_slot(label: str) -> str:
    """The resource a device's (or pool's) measuring jobs take."""
    return "measuring_" + re.sub(r"[^A-Za-z0-9_]", "_", label)


def measuring_slots(devices: dict) -> dict[str, str]:
    """label -> its slot's name; two labels that would share a slot are an error."""
    slots = {label: measuring_slot(label) for label in devices}
    if len(set(slots.values())) < len(slots):
        raise DeviceError(f"device labels {sorted(devices)} collide once '-' becomes '_'")
    return slots


def slot_limits(devices: dict) -> dict[str, int]:
    """slot -> how many jobs may hold it at once: a device's 1, a pool's its GPU count."""
    slots = measuring_slots(devices)
    return {slots[label]: len(members) for label, members in as_pools(devices).items()}


def slots_taken(devices: dict, label: str | None) -> dict[str, int]:
    """slot -> units a measuring job holds: one of its own device's (or pool's). A CPU
    measurement (and a job of no device, e.g. measured accuracy) takes every unit of every
    slot: it would load the CPUs every other measurement shares, and read the host's energy
    they share."""
    slots, limits = measuring_slots(devices), slot_limits(devices)
    if label is None or kind_of(representatives(devices)[label]).is_host:
        return dict(limits)
    return {slots[label]: 1}


def measuring_resources(devices: dict) -> dict:
    """A measuring rule's `resources:`: the slots it takes (see slots_taken), as functions of
    the job's wildcards. The workflow declares each slot with its limit (slot_limits), scoped
    local, so a cluster run submits every allocation at once and each allocation measures
    one job at a time per device."""

    def taking(slot):
        return lambda wildcards: slots_taken(devices, wildcards.get("device")).get(slot, 0)

    return {slot: taking(slot) for slot in measuring_slots(devices).values()}


def measure_threads(devices: dict, label: str, cores: int) -> int:
    """torch threads of a measuring job: every core for the CPU, else an equal share of the
    cores among the GPUs, every GPU of every pool counted (simulated ones included: they
    run the model on the CPU)."""
    pools = as_pools(devices)
    if kind_of(pools[label][0]).is_host:
        return cores
    gpus = sum(len(m) for m in pools.values() if not kind_of(m[0]).is_host)
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


def pool_leases(devices: dict, *, torch=None, nvml=None) -> dict[str, list[dict]]:
    """label -> its GPUs as a job leases them, for every pool of more than one device:
    device, uuid (the lease's key), index and serial (what rows record), pin (pin_value).
    A pool that cannot be measured here is left out (check_devices says why, before any job)."""
    libs = Libraries(torch=torch, nvml=nvml)
    out = {}
    for label, members in as_pools(devices).items():
        if len(members) < 2 or check_devices({label: members}, torch=torch, nvml=nvml):
            continue
        out[label] = [_lease_record(device, libs) for device in members]
    return out


def _lease_record(device: str, libs: Libraries) -> dict:
    backend = backend_for(device, libs)
    identity = backend.pool_member(device, libs)
    return {
        "device": device,
        "uuid": identity.uuid,
        "index": identity.index,
        "serial": identity.serial,
        "pin": backend.pin_value(device, libs),
    }


def pin_to_gpu(device: str, uuid: str | None, env=None) -> str:
    """Before torch starts: pin the job to its device by `uuid` (pinned_uuids' value); the
    device string the job then uses (the one GPU it sees)."""
    if not uuid:
        return device
    env = os.environ if env is None else env
    return kind_of(device).pin(device, uuid, env)


def lease_from_pool(pool: list[dict], holder: str, env=None, **kw) -> tuple:
    """Before torch starts: lease a free GPU of `pool` (pool_leases' records) and pin the
    job to it. Returns (the lease, to hold for the job's whole run; the GPU's device string
    as the job sees it; its `gpu`: uuid, index, serial, for the rows)."""
    from joulebench.schedule.lease import lease_gpu

    lease = lease_gpu(pool, holder=holder, **kw)
    member = lease.member
    device = pin_to_gpu(member["device"], member.get("pin"), env)
    return lease, device, {k: member.get(k) for k in ("uuid", "index", "serial")}
