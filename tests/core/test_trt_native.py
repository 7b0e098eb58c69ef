"""TensorRT natively (runtime torch-tensorrt) against a stand-in for torch_tensorrt 2.14.0
that runs the model on this CPU (tests/fake_torch_tensorrt, checked against the real API's
names below): the engine is built once per key and reused, rebuilt when the key changes, and
a corrupt cached engine is rebuilt; a build that fails leaves nothing under the cache's name;
the build time is a row column apart from the measurement; an engine that disagrees with
PyTorch is a "mismatch" row; and every reason it cannot run is a "skipped" row saying how
to fix it. What only a real GPU can confirm is listed in docs/runtimes.md."""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import REPO
from helpers.profile_job import job
from helpers.timm_models import register
from helpers.tiny_models import Tiny

from joulebench.core import trt_native
from joulebench.core.backends import bound_device
from joulebench.core.methods import PRESETS, Method, parse_methods
from joulebench.core.runtimes import NotMeasured
from joulebench.jobs.profile import run_profile
from joulebench.table_io import conform
from joulebench.tables import PROFILE_COLUMNS

FAKE = Path(__file__).parents[1] / "fake_torch_tensorrt" / "torch_tensorrt" / "__init__.py"
TARGET = {"gpu": "NVIDIA H200 (stand-in)", "arch": "sm90"}

# The real API, read from torch_tensorrt 2.14.0's source (_compile.py, dynamo/_compiler.py):
# parameter names of the functions joulebench calls, and the dynamo compile's options.
REAL_API = {
    "compile": [
        "module",
        "ir",
        "inputs",
        "arg_inputs",
        "kwarg_inputs",
        "enabled_precisions",
        "kwargs",
    ],
    "save": [
        "module",
        "file_path",
        "extra_files",
        "output_format",
        "inputs",
        "arg_inputs",
        "kwarg_inputs",
        "retrace",
        "use_legacy_exporter",
        "pickle_protocol",
        "dynamic_shapes",
        "kwargs",
    ],
    "load": ["file_path", "extra_files", "format", "kwargs"],
}
REAL_DYNAMO_OPTIONS = {
    "device",
    "disable_tf32",
    "require_full_compilation",
    "min_block_size",
    "optimization_level",
    "timing_cache_path",
    "cache_built_engines",
    "reuse_cached_engines",
    "engine_cache_dir",
    "use_fp32_acc",
    "enable_autocast",
    "autocast_low_precision_type",
    "autocast_max_output_threshold",
}  # 13 of its 59; none of them is enabled_precisions, which 2.14's dynamo path ignores

SPECS = {
    "fp32": {"precision": "fp32"},
    "torchtrt": {"runtime": "torch-tensorrt"},
    "torchtrt-fp16": {"runtime": "torch-tensorrt", "precision": "fp16"},
    "torchtrt-fp16-cast": {"runtime": "torch-tensorrt", "precision": "fp16", "autocast": False},
}

register("jbtrt_tiny", Tiny)


def _load_fake():
    spec = importlib.util.spec_from_file_location("torch_tensorrt", FAKE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fake(monkeypatch):
    """A fresh stand-in as `torch_tensorrt` (and its `tensorrt`), and a supported GPU."""
    monkeypatch.setitem(sys.modules, "tensorrt", None)  # the fake's import replaces it
    module = _load_fake()
    monkeypatch.setitem(sys.modules, "torch_tensorrt", module)
    monkeypatch.setattr(trt_native, "gpu_target", lambda device: (dict(TARGET), ""))
    return module


def tiny(seed=0):
    torch.manual_seed(seed)
    return Tiny().eval(), torch.randn(2, 3, 64, 64)


def prepare(model, x, method="torchtrt", cache=None, name="jbtrt_tiny"):
    m = parse_methods({method: SPECS[method]})[method]
    return trt_native.prepare_exported(
        model, x, m, model_name=name, device=bound_device("cpu"), threads=1, cache_dir=cache
    )


def rows_of(tmp_path, methods, **kw):
    out = run_profile(
        job("jbtrt_tiny", methods, (2,), specs=SPECS, onnx_cache_dir=str(tmp_path), **kw),
        log=lambda s: None,
    )
    return out, conform(out.rows, PROFILE_COLUMNS).set_index("method")


def test_the_stand_in_has_the_real_api():
    fake = _load_fake()
    for name, params in REAL_API.items():
        assert list(inspect.signature(getattr(fake, name)).parameters) == params, name
    assert set(fake.DYNAMO_OPTIONS) <= REAL_DYNAMO_OPTIONS
    assert fake.Input((1, 3, 8, 8)).shape == fake.Input(shape=[1, 3, 8, 8]).shape == (1, 3, 8, 8)
    if importlib.util.find_spec("torch_tensorrt") is None:
        return  # where it is installed (a GPU machine), the recorded API is held to it
    import torch_tensorrt
    from torch_tensorrt.dynamo import compile as dynamo_compile

    for name, params in REAL_API.items():
        assert list(inspect.signature(getattr(torch_tensorrt, name)).parameters) == params
    assert REAL_DYNAMO_OPTIONS <= set(inspect.signature(dynamo_compile).parameters)


def test_every_option_joulebench_passes_is_a_real_one(fake, tmp_path):
    for method in ("torchtrt", "torchtrt-fp16", "torchtrt-fp16-cast"):
        prepare(*tiny(), method=method, cache=tmp_path)
    assert len(fake.COMPILED) == 3
    for call in fake.COMPILED:
        options = set(call) - {"ir", "arg_inputs"}
        assert call["ir"] == "dynamo" and options <= REAL_DYNAMO_OPTIONS, options
        assert [type(i).__name__ for i in call["arg_inputs"]] == ["Input"]
    fp32, autocast, cast = fake.COMPILED
    assert "enable_autocast" not in fp32 and "enable_autocast" not in cast
    assert autocast["enable_autocast"] and autocast["autocast_low_precision_type"] == torch.float16
    assert autocast["arg_inputs"][0].dtype == torch.float32  # autocast: fp32 in and out
    assert cast["arg_inputs"][0].dtype == torch.float16  # a cast model: fp16 in


@pytest.mark.slow
def test_a_row_is_checked_then_measured_with_its_build_time_apart(fake, tmp_path):
    out, rows = rows_of(tmp_path, ("fp32", "torchtrt"))
    assert (rows.status == "ok").all(), rows.reason.tolist()
    trt = rows.loc["torchtrt"]
    assert trt.runtime == "torch-tensorrt" and trt.runtime_provider == "TensorRT"
    detail = json.loads(trt.runtime_detail)
    assert detail["cached"] is False and detail["precision_mode"] == "fp32"
    assert detail["tensorrt_version"] == "11.1.0" and detail["torch_tensorrt_version"] == "2.14.0"
    assert detail["trt_engines"] == 1 and detail["pytorch_blocks"] == 0
    assert 0 <= trt.runtime_check_rel_err <= detail["tolerance"] == 1e-3
    assert trt.engine_build_s > 0 and trt.energy_per_image_j > 0 and trt.images > 0
    # the build is not in the measurement: the windows ran the engine only
    assert trt.engine_build_s == detail["engine_build_s"]
    assert rows.loc["fp32"].runtime == "pytorch" and pd.isna(rows.loc["fp32"].engine_build_s)
    assert set(out.repeats.method) == {"fp32", "torchtrt"}
    engines = list(tmp_path.glob("torch-tensorrt/jbtrt_tiny/2x3x224x224-fp32-*-sm90-*/engine.pt2"))
    assert [str(p) for p in engines] == [detail["engine_path"]]


def test_the_engine_is_built_once_and_rebuilt_when_its_key_changes(fake, tmp_path):
    model, x = tiny()
    _, first = prepare(model, x, cache=tmp_path)
    _, again = prepare(model, x, cache=tmp_path)
    assert len(fake.COMPILED) == 1  # reused: no second build
    d1, d2 = json.loads(first["runtime_detail"]), json.loads(again["runtime_detail"])
    assert (d1["cached"], d2["cached"]) == (False, True)
    assert again["engine_build_s"] == first["engine_build_s"]  # the build's time, kept
    prepare(model, torch.randn(4, 3, 64, 64), cache=tmp_path)  # another batch size
    prepare(model, x, method="torchtrt-fp16", cache=tmp_path)  # another precision
    prepare(tiny(seed=1)[0], x, cache=tmp_path)  # other weights
    prepare(model, x, cache=tmp_path, name="jbtrt_other")  # another model
    assert len(fake.COMPILED) == 5
    fake.__version__ = "2.14.1"  # another torch-tensorrt (or TensorRT, torch, GPU)
    prepare(model, x, cache=tmp_path)
    assert len(fake.COMPILED) == 6
    folders = [p for p in (tmp_path / "torch-tensorrt").rglob("build.json")]
    assert len(folders) == 6 and not list(tmp_path.rglob(".*"))  # no temporary left over


@pytest.mark.parametrize("broken", ["engine.pt2", "build.json"])
def test_a_corrupt_cached_engine_is_rebuilt(fake, tmp_path, broken):
    model, x = tiny()
    _, first = prepare(model, x, cache=tmp_path)
    path = Path(json.loads(first["runtime_detail"])["engine_path"]).parent / broken
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 3])  # a truncated write
    step, fields = prepare(model, x, cache=tmp_path)
    assert len(fake.COMPILED) == 2 and json.loads(fields["runtime_detail"])["cached"] is False
    assert fields["runtime_check_rel_err"] <= 1e-3 and step().shape == (2, 10)
    _, third = prepare(model, x, cache=tmp_path)  # the rebuilt one is whole again
    assert len(fake.COMPILED) == 2 and json.loads(third["runtime_detail"])["cached"] is True
    assert not list(tmp_path.rglob(".*"))


def test_out_of_memory_loading_a_cached_engine_keeps_it(fake, tmp_path, monkeypatch):
    model, x = tiny()
    prepare(model, x, cache=tmp_path)
    with monkeypatch.context() as m:
        m.setattr(fake, "load", lambda *a, **k: (_ for _ in ()).throw(torch.OutOfMemoryError()))
        with pytest.raises(torch.OutOfMemoryError):  # an oom row, retried at half the batch
            prepare(model, x, cache=tmp_path)
    _, fields = prepare(model, x, cache=tmp_path)
    assert json.loads(fields["runtime_detail"])["cached"] is True and len(fake.COMPILED) == 1


@pytest.mark.slow
def test_a_failed_build_is_a_build_error_and_leaves_nothing(fake, tmp_path, monkeypatch):
    def save_dies_halfway(module, file_path="", **kw):
        Path(file_path).write_bytes(b"PK half an engine")
        raise RuntimeError("[TensorRT] engine serialization failed (simulated)")

    monkeypatch.setattr(fake, "save", save_dies_halfway)
    _, rows = rows_of(tmp_path, ("torchtrt",))
    assert rows.status.tolist() == ["build-error"]
    assert "engine serialization failed" in rows.reason.iloc[0]
    assert not list(tmp_path.rglob("*.pt2")) and not list(tmp_path.rglob(".*"))


def test_a_graph_left_all_to_pytorch_is_a_build_error(fake, tmp_path, monkeypatch):
    real_compile = fake.compile

    def nothing_converted(module, **kw):  # torch-tensorrt would name its blocks _run_on_gpu_N
        compiled = real_compile(module, **kw)
        compiled._run_on_gpu_0 = compiled._run_on_acc_0
        del compiled._run_on_acc_0
        return compiled

    monkeypatch.setattr(fake, "compile", nothing_converted)
    with pytest.raises(RuntimeError, match="built no TensorRT engine"):
        prepare(*tiny(), cache=tmp_path)
    assert not list(tmp_path.rglob("build.json")) and not list(tmp_path.rglob(".*"))


@pytest.mark.slow
def test_an_engine_that_disagrees_with_pytorch_is_a_mismatch_row(fake, tmp_path):
    fake.PERTURB = 0.2  # the engine's outputs are 20 % off, as a wrong engine's would be
    out, rows = rows_of(tmp_path, ("fp32", "torchtrt"))
    bad = rows.loc["torchtrt"]
    assert rows.loc["fp32"].status == "ok" and bad.status == "mismatch"
    assert "TensorRT output differs from PyTorch's" in bad.reason
    assert bad.runtime_check_rel_err == pytest.approx(0.2, rel=1e-3)
    assert bad.runtime_check_rel_err > json.loads(bad.runtime_detail)["tolerance"]
    assert bad.engine_build_s > 0  # the build happened and is recorded, the measurement not
    assert set(out.repeats.method) == {"fp32"}  # no window was opened for it
    fake.PERTURB = 0.0  # a cached wrong engine stays wrong: the check runs on every use
    _, rows = rows_of(tmp_path, ("torchtrt",))
    assert rows.status.tolist() == ["mismatch"]


def test_fp16_engines_run_in_fp16_within_the_tolerance(fake, tmp_path):
    for method in ("torchtrt-fp16", "torchtrt-fp16-cast"):
        step, fields = prepare(*tiny(), method=method, cache=tmp_path)  # a fresh model each
        detail = json.loads(fields["runtime_detail"])
        assert detail["precision_mode"] == method.removeprefix("torchtrt-")
        assert 1e-6 < fields["runtime_check_rel_err"] < detail["tolerance"] == 5e-2
    assert step.x.dtype == torch.float16  # a cast engine is fed fp16


def test_a_tolerance_the_engine_misses_is_a_mismatch(fake, tmp_path):
    model, x = tiny()
    method = Method("strict", runtime="torch-tensorrt", precision="fp16", tolerance=1e-7)
    with pytest.raises(NotMeasured) as err:
        trt_native.prepare_exported(
            model,
            x,
            method,
            model_name="m",
            device=bound_device("cpu"),
            threads=1,
            cache_dir=tmp_path,
        )
    assert err.value.status == "mismatch" and err.value.fields["engine_build_s"] > 0


# --- skipped: each reason says how to fix it ------------------------------------------------


@pytest.mark.slow
def test_not_installed_is_a_skipped_row_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(trt_native, "gpu_target", lambda device: (dict(TARGET), ""))
    monkeypatch.setitem(sys.modules, "torch_tensorrt", None)  # import -> ModuleNotFoundError
    out, rows = rows_of(tmp_path, ("fp32", "torchtrt"))
    assert rows.status.tolist() == ["ok", "skipped"]
    reason = rows.loc["torchtrt"].reason
    assert reason.startswith("torch-tensorrt is not installed: pip install")
    assert "'joulebench[torch-tensorrt]'" in reason and "torch-tensorrt 2.14.*" in reason
    assert set(out.repeats.method) == {"fp32"} and not list(tmp_path.iterdir())


def test_a_torch_tensorrt_for_another_torch_is_refused(fake):
    fake.__version__ = "2.13.0"
    reason = trt_native.unavailable_reason("torch-tensorrt", bound_device("cuda:0"))
    assert "torch-tensorrt 2.13.0 is the release for torch 2.13" in reason
    assert "joulebench[torch-tensorrt]" in reason
    fake.__version__ = "2.14.0"
    assert trt_native.unavailable_reason("torch-tensorrt", bound_device("cuda:0")) is None


def test_a_torch_tensorrt_that_does_not_import_is_skipped(tmp_path, monkeypatch):
    broken = tmp_path / "site" / "torch_tensorrt"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text(
        "raise Exception('import error when try to import _TensorRTProxyModule, got error "
        "libnvinfer.so.11: cannot open shared object file')\n"
    )
    monkeypatch.syspath_prepend(str(broken.parent))
    monkeypatch.delitem(sys.modules, "torch_tensorrt", raising=False)
    monkeypatch.setattr(trt_native, "gpu_target", lambda device: (dict(TARGET), ""))
    reason = trt_native.unavailable_reason("torch-tensorrt", bound_device("cuda:0"))
    assert reason.startswith("torch-tensorrt does not import (") and "libnvinfer" in reason
    assert "pip install 'joulebench[torch-tensorrt]'" in reason


def test_no_cuda_gpu_or_an_unsupported_one_is_skipped(monkeypatch):
    assert "CUDA GPUs only, not cpu" in trt_native.gpu_target(bound_device("cpu"))[1]
    assert "CUDA GPUs only" in trt_native.unavailable_reason(
        "torch-tensorrt", bound_device("sim:h100")
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert "no CUDA GPU is visible to torch" in trt_native.gpu_target(bound_device("cuda:0"))[1]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d: "Tesla V100-SXM2-32GB")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d: (7, 0))
    target, reason = trt_native.gpu_target(bound_device("cuda:0"))
    assert target == {} and "compute capability 7.0) is not supported" in reason
    assert "needs 7.5 or newer" in reason
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d: (9, 0))
    assert trt_native.gpu_target(bound_device("cuda:1")) == (
        {"gpu": "NVIDIA H200", "arch": "sm90"},
        "",
    )


def test_a_cpu_job_gives_skipped_rows_and_builds_nothing(tmp_path):
    _, rows = rows_of(tmp_path, ("torchtrt", "torchtrt-fp16"))
    assert rows.status.tolist() == ["skipped", "skipped"]
    assert rows.reason.str.contains("torch-tensorrt runs on CUDA GPUs only").all()
    assert (rows.runtime == "torch-tensorrt").all() and not list(tmp_path.iterdir())


# --- methods and the extra ------------------------------------------------------------------


def test_torch_tensorrt_method_specs():
    assert PRESETS["torchtrt-fp16"] == {"runtime": "torch-tensorrt", "precision": "fp16"}
    assert PRESETS["trt-fp16"] == {"runtime": "ort-tensorrt", "precision": "fp16"}  # as it was
    m = Method("x", runtime="torch-tensorrt", precision="fp16", autocast=False)
    assert m.exported and trt_native.precision_mode(m) == "fp16-cast"
    with pytest.raises(ValueError, match="runs precision"):
        Method("x", runtime="torch-tensorrt", precision="bf16")
    with pytest.raises(ValueError, match="opset applies to"):
        Method("x", runtime="torch-tensorrt", opset=17)
    with pytest.raises(ValueError, match="pytorch only"):
        Method("x", runtime="torch-tensorrt", compile="default")
    with pytest.raises(ValueError, match="autocast false"):
        Method("x", runtime="ort-tensorrt", precision="fp16", autocast=False)
    with pytest.raises(ValueError, match="trt_native runs runtime torch-tensorrt"):
        trt_native.unavailable_reason("ort-tensorrt", bound_device("cuda"))


def test_the_extra_is_the_torch_tensorrt_release_of_the_pinned_torch():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    torch_pin = next(d for d in project["dependencies"] if d.startswith("torch=="))
    (extra,) = project["optional-dependencies"][trt_native.EXTRA]
    name, version = extra.split("==")
    assert name == "torch-tensorrt"
    assert trt_native.major_minor(version) == trt_native.major_minor(torch_pin.split("==")[1])
    assert "torch-tensorrt" not in " ".join(project["optional-dependencies"]["dev"])
