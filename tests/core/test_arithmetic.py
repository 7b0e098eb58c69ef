"""core.arithmetic: the fp32 math and cuDNN autotuning of a configuration, set through
torch's current API (the flags are settable on this CPU-only machine) and always restored;
the profile job's rows say what ran, and the flags are in force inside the model's forward."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from helpers.profile_job import job
from helpers.timm_models import register
from torch import nn

from joulebench.core.arithmetic import (
    AUTOTUNE_PATH,
    CPU_PRECISIONS,
    GPU_PRECISIONS,
    IEEE,
    TF32,
    Arithmetic,
    applied,
    arithmetic_for,
    current,
)
from joulebench.core.backends import backend_for
from joulebench.core.backends.cuda import cuda_native
from joulebench.core.methods import Method, parse_methods
from joulebench.jobs import profile as profile_module
from joulebench.jobs.profile import ProfileJob, run_profile

SEEN: list[dict] = []  # what the model's forward saw in torch.backends


class _Spy(nn.Module):
    """A tiny conv net whose forward records the arithmetic torch is set to."""

    def __init__(self, num_classes=10, **kwargs):
        super().__init__()
        self.num_classes = num_classes
        self.conv = nn.Conv2d(3, 4, 3, stride=4)
        self.fc = nn.Linear(4, num_classes)

    def forward(self, x):
        SEEN.append(current())
        return self.fc(self.conv(x).mean((2, 3)))


register("jbarith_spy", _Spy)


@pytest.fixture
def defaults():
    """torch's flags as this process has them, checked unchanged after the test."""
    before = current()
    yield before
    assert current() == before


@pytest.mark.parametrize(
    ("spec", "on_gpu", "fields"),
    [
        ({"precision": "fp32"}, True, {"fp32_math": IEEE, "cudnn_autotune": True}),
        ({"precision": "tf32"}, True, {"fp32_math": TF32, "cudnn_autotune": True}),
        ({"precision": "fp16"}, True, {"fp32_math": IEEE, "cudnn_autotune": True}),
        ({"precision": "bf16", "cudnn_autotune": False}, True, {"cudnn_autotune": False}),
        ({"precision": "tf32"}, False, {"fp32_math": IEEE, "cudnn_autotune": False}),
        ({"precision": "fp32"}, False, {"fp32_math": IEEE, "cudnn_autotune": False}),
        ({"runtime": "onnxruntime"}, True, {"fp32_math": "", "cudnn_autotune": False}),
        ({"runtime": "torch-tensorrt"}, True, {"fp32_math": "", "cudnn_autotune": False}),
    ],
)
def test_a_methods_arithmetic_follows_its_precision_and_where_its_model_runs(spec, on_gpu, fields):
    """tf32 is TF32 only where the model runs on a GPU (a simulated Ampere's runs on the CPU:
    IEEE, as its rows say); an exported runtime's engine picks its own math (empty)."""
    method = parse_methods({"m": spec})["m"]
    got = arithmetic_for(method, on_gpu).fields()
    assert {k: got[k] for k in fields} == fields


def test_applied_sets_torchs_current_api_and_restores_it(defaults):
    with applied(Arithmetic(TF32, True)) as arithmetic:
        assert arithmetic.fp32_math == TF32
        now = current()
        assert {now[p] for p in GPU_PRECISIONS} == {TF32}
        assert {now[p] for p in CPU_PRECISIONS} == {IEEE}  # oneDNN never bf16 or TF32
        assert now[AUTOTUNE_PATH] is True
        assert torch.backends.cudnn.benchmark is True
    assert current() == defaults
    with applied(Arithmetic(IEEE, False)):
        assert torch.backends.cuda.matmul.fp32_precision == IEEE
        assert torch.backends.cudnn.conv.fp32_precision == IEEE  # torch's default: tf32
        assert torch.backends.cudnn.benchmark is False
    # the legacy flags read as before (reading one while the new API differs would raise)
    assert torch.backends.cudnn.allow_tf32 == (defaults["cudnn.conv"] == TF32)


def test_an_exported_runtimes_configuration_leaves_torch_as_it_is(defaults):
    """torch.export (ONNX's dynamo exporter, torch-tensorrt) reads the legacy cuDNN flag,
    which raises while the new API says IEEE and the legacy value TF32: so nothing is set
    where the engine decides its own math anyway."""
    conv = nn.Conv2d(3, 4, 3)
    x = torch.randn(1, 3, 8, 8)
    with applied(Arithmetic("", False)):
        assert current() == defaults
        torch.export.export(conv, (x,))
    with applied(Arithmetic(IEEE, False)), pytest.raises(RuntimeError, match="allow_tf32"):
        torch.export.export(conv, (x,))  # why: torch's own legacy read (2.14)


def test_applied_restores_when_the_configuration_fails(defaults):
    with pytest.raises(RuntimeError, match="out of memory"), applied(Arithmetic(TF32, True)):
        raise RuntimeError("CUDA out of memory")
    assert current() == defaults


class _Flag:
    def __init__(self, value, refuse=None):
        self._value, self.refuse = value, refuse

    @property
    def fp32_precision(self):
        return self._value

    @fp32_precision.setter
    def fp32_precision(self, value):
        if value == self.refuse:
            raise RuntimeError(f"Unknown precision: {value}")
        self._value = value


def _fake_backends(refuse_conv=None):
    """torch.backends as far as `applied` reads it: each path's fp32_precision, benchmark."""
    cudnn = _Flag("none")
    cudnn.conv, cudnn.rnn, cudnn.benchmark = _Flag("tf32", refuse_conv), _Flag("tf32"), False
    mkldnn = _Flag("none")
    mkldnn.matmul, mkldnn.conv = _Flag("none"), _Flag("none")
    return SimpleNamespace(cuda=SimpleNamespace(matmul=_Flag("none")), cudnn=cudnn, mkldnn=mkldnn)


def test_a_value_refused_half_way_leaves_torch_as_it_was():
    backends = _fake_backends(refuse_conv=TF32)
    before = current(backends)
    with pytest.raises(RuntimeError, match="Unknown precision"):
        with applied(Arithmetic(TF32, True), backends):
            pass  # never reached: cudnn.conv refuses
    assert current(backends) == before
    assert backends.cuda.matmul.fp32_precision == "none"  # set before the refusal, put back


def test_fp32_math_is_checked():
    with pytest.raises(ValueError, match="fp32_math"):
        Arithmetic("bf16")


# --- the profile job: rows say what ran, the forward ran in it ------------------------------


def _job(methods: dict, torch_device: str = "cpu") -> ProfileJob:
    return job(
        "jbarith_spy", list(methods), (2,), methods, torch_device=torch_device, device_label="dev"
    )


@pytest.mark.slow
def test_cpu_rows_say_ieee_without_autotuning_and_the_forward_ran_so(defaults):
    SEEN.clear()
    rows = run_profile(_job({"fp32": {}, "bf16": {"precision": "bf16"}}), log=lambda s: None)
    rows = rows.rows.set_index("method")
    assert list(rows["fp32_math"]) == [IEEE, IEEE]
    assert not rows["cudnn_autotune"].any() and not rows["cuda_graphs"].any()
    assert SEEN and all(s["mkldnn.matmul"] == IEEE and s["cudnn.conv"] == IEEE for s in SEEN)
    assert not any(s[AUTOTUNE_PATH] for s in SEEN)


def test_on_a_gpu_tf32_and_autotuning_are_in_force_in_the_forward(monkeypatch, defaults):
    """The CPU backend made to say its model runs on an Ampere GPU: what a GPU's job sets
    around each configuration (the flags are torch's, so the forward sees them on a CPU)."""
    backend = backend_for("cpu")
    monkeypatch.setattr(type(backend), "runs_on_gpu", True)
    monkeypatch.setattr(backend.device_class, "native_precisions", lambda self: cuda_native(8, 0))
    methods = {"tf32": {"precision": "tf32"}, "fp32-heur": {"cudnn_autotune": False}}
    SEEN.clear()
    calls = []
    real = profile_module.prepare

    def noting(job, device, phase, method, batch_size):
        calls.append((method.name, len(SEEN)))
        return real(job, device, phase, method, batch_size)

    monkeypatch.setattr(profile_module, "prepare", noting)
    rows = run_profile(_job(methods), log=lambda s: None).rows.set_index("method")
    assert rows.loc["tf32", ["fp32_math", "cudnn_autotune"]].tolist() == [TF32, True]
    assert rows.loc["fp32-heur", ["fp32_math", "cudnn_autotune"]].tolist() == [IEEE, False]
    by_method = _seen_by_method(calls)
    assert all(s["cuda.matmul"] == TF32 and s["cudnn.conv"] == TF32 for s in by_method["tf32"])
    assert all(s[AUTOTUNE_PATH] for s in by_method["tf32"])
    assert all(s["cudnn.conv"] == IEEE for s in by_method["fp32-heur"])
    assert not any(s[AUTOTUNE_PATH] for s in by_method["fp32-heur"])


def _seen_by_method(calls: list[tuple[str, int]]) -> dict[str, list[dict]]:
    """SEEN split by the configuration that was being measured (calls: name, start)."""
    out = {}
    bounds = [start for _, start in calls[1:]] + [len(SEEN)]
    for (name, start), end in zip(calls, bounds, strict=True):
        out[name] = SEEN[start:end]
        assert out[name], name
    return out


def test_a_skipped_tf32_row_records_no_arithmetic(defaults):
    rows = run_profile(_job({"tf32": {"precision": "tf32"}}), log=lambda s: None).rows
    assert rows["status"].tolist() == ["skipped"]
    assert rows["fp32_math"].isna().all() and rows["cudnn_autotune"].isna().all()


def test_method_keys_are_checked_at_parse_time():
    assert Method("m").cudnn_autotune is True and Method("m").cuda_graphs is False
    with pytest.raises(ValueError, match="method m: cudnn_autotune must be true or false"):
        Method("m", cudnn_autotune="no")
    with pytest.raises(ValueError, match=r"runs precision \('fp32',\), not tf32 \(its engine"):
        Method("m", runtime="onnxruntime", precision="tf32")
    for runtime in ("ort-tensorrt", "torch-tensorrt"):
        with pytest.raises(ValueError, match="not tf32"):
            Method("m", runtime=runtime, precision="tf32")
    with pytest.raises(ValueError, match="cudnn_autotune: false applies to runtime pytorch"):
        Method("m", runtime="onnxruntime", cudnn_autotune=False)
    assert Method("m", precision="tf32").dtype == torch.float32  # a math mode, not a dtype


@pytest.mark.slow
def test_a_simulated_ampere_measures_tf32_in_ieee_on_the_cpu(defaults):
    """sim:a100 runs tf32 natively (its generation's capability), but its model runs on the
    CPU: the row says what torch ran there, IEEE without autotuning."""
    rows = run_profile(_job({"tf32": {"precision": "tf32"}}, "sim:a100"), log=lambda s: None)
    row = rows.rows.iloc[0]
    assert row["status"] == "ok" and bool(row["is_simulated"])
    assert (row["fp32_math"], bool(row["cudnn_autotune"])) == (IEEE, False)
