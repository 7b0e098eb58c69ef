"""A fast profile job on this CPU, for every test that profiles a model (no torch here: a
test that builds one imports the tiny models of helpers.tiny_models, which need it)."""

from conftest import FAST_PROTOCOL

from joulebench.core.methods import parse_methods
from joulebench.core.profile import ProfileJob
from joulebench.core.protocol import ProtocolSettings

FAST = ProtocolSettings(**FAST_PROTOCOL, warmup_max_s=2.0)


def job(model, methods=("fp32",), batch_sizes=(1, 4), specs=None, **kw):
    """A fast CPU ProfileJob; `specs` names the methods (default fp32 and bf16, measured
    also where this CPU only emulates bf16: test_emulation tests the skipping)."""
    specs = specs or {
        "fp32": {"precision": "fp32"},
        "bf16": {"precision": "bf16", "allow_emulated": True},
    }
    return ProfileJob(
        model=model,
        device_label="cpu",
        torch_device="cpu",
        methods=list(parse_methods({m: specs[m] for m in methods}).values()),
        batch_sizes=list(batch_sizes),
        settings=FAST,
        idle_power_w=1.0,
        idle_pre_s=0.05,
        threads=1,
        **kw,
    )
