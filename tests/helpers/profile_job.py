"""A fast profile job on this CPU, for every test that profiles a model (no torch here: a
test that builds one imports the tiny models of helpers.tiny_models, which need it)."""

from dataclasses import fields

from conftest import FAST_PROTOCOL

from joulebench.core.methods import parse_methods
from joulebench.core.protocol import ProtocolSettings
from joulebench.jobs.job_spec import JobSpec, job_spec
from joulebench.jobs.profile import ProfileJob

FAST = ProtocolSettings(**FAST_PROTOCOL, warmup_max_s=2.0)
# a test's short spec: the study's top-level keys, the profile section's, and these
_STUDY_KEYS = ("methods", "batch_sizes", "protocol", "phases", "train")
_OWN_KEYS = ("torch_device", "workload", "device_pool")
_JOB_FIELDS = {f.name for f in fields(ProfileJob)} - {"spec"}


def job(model, methods=("fp32",), batch_sizes=(1, 4), specs=None, **kw):
    """A fast CPU ProfileJob; `specs` names the methods (default fp32 and bf16, measured
    also where this CPU only emulates bf16: test_emulation tests the skipping); `kw` sets
    fields of its JobSpec (torch_device: cpu unless given) or of the job itself
    (device_label: cpu unless given, check_dir, ...). It never waits for a quiet host
    (quiet_wait_s 0 unless given): in the suite the host is never quiet."""
    specs = specs or {
        "fp32": {"precision": "fp32"},
        "bf16": {"precision": "bf16", "allow_emulated": True},
    }
    own = {k: kw.pop(k) for k in [k for k in kw if k in _JOB_FIELDS]}
    spec = JobSpec(
        methods=list(parse_methods({m: specs[m] for m in methods}).values()),
        batch_sizes=list(batch_sizes),
        settings=FAST,
        idle_pre_s=0.05,
        **{"torch_device": "cpu", "quiet_wait_s": 0, **kw},
    )
    own = {"device_label": "cpu", "idle_power_w": 1.0, "threads": 1, **own}
    return ProfileJob(model=model, spec=spec, **own)


def spec_of(keys: dict) -> JobSpec:
    """The JobSpec of a test's short spec, one mapping of the study's top-level keys
    (methods, batch_sizes, protocol, phases, train), its `profile:` keys (idle_pre_s,
    quiet_wait_s, timeout_s, ...) and the job's torch_device, workload and device_pool,
    made as the workflow makes one (jobs.job_spec.job_spec); quiet_wait_s 0 unless given."""
    study = {k: v for k, v in keys.items() if k in _STUDY_KEYS}
    study["profile"] = {
        "quiet_wait_s": 0,
        **{k: v for k, v in keys.items() if k not in _STUDY_KEYS and k not in _OWN_KEYS},
    }
    own = {k: v for k, v in keys.items() if k in _OWN_KEYS and k != "torch_device"}
    return job_spec(keys["torch_device"], study, **own)


def job_of(model: str, label: str, keys: dict, **job_kw) -> ProfileJob:
    """The ProfileJob of a test's short spec (spec_of)."""
    return ProfileJob(model, label, spec_of(keys), **job_kw)
