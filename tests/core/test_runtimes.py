"""Runtimes as methods on this CPU: ONNX Runtime's output is checked against PyTorch's before
anything is measured (a model whose export differs is a "mismatch" row, never measured), the
export is cached, and a runtime or provider that is not there is a "skipped" row. The runtime
names are declared once (tables.RUNTIMES; the schema's enum follows), and the old name
`tensorrt` reads as ONNX Runtime's TensorRT provider, in configs and published summaries.
(Native TensorRT through torch-tensorrt: tests/core/test_trt_native.py.)"""

import json
import sys

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from conftest import REPO
from helpers.decision_rows import decision_summary, profile_row
from helpers.profile_job import job
from helpers.timm_models import register
from helpers.tiny_models import Tiny

from joulebench.analysis.summary import read_summary, write_summary
from joulebench.core.backends import bound_device
from joulebench.core.methods import PRESETS, Method, parse_methods
from joulebench.core.runtimes import relative_error, unavailable_reason
from joulebench.jobs.profile import run_profile
from joulebench.table_io import conform
from joulebench.tables import PROFILE_COLUMNS, RUNTIME_ALIASES, RUNTIMES

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

METHODS = {
    "fp32": {"precision": "fp32"},
    "ort": {"runtime": "onnxruntime"},
    "trt": {"runtime": "tensorrt"},  # the old name of ONNX Runtime's TensorRT provider
    "trt-fp16": {"runtime": "ort-tensorrt", "precision": "fp16"},
}


class _ExportsSomethingElse(Tiny):
    """Deliberately exports a different graph than it runs: the check must catch it."""

    def forward(self, x):
        out = super().forward(x)
        return out * 2 if torch.onnx.is_in_onnx_export() else out


class _CannotExport(Tiny):
    """Singular values: an op ONNX has no operator for, in either exporter."""

    def forward(self, x):
        return torch.linalg.svdvals(super().forward(x).reshape(-1, 2, 5))


register("jbrt_cannot_export", _CannotExport)
register("jbrt_tiny", Tiny)
register("jbrt_exports_something_else", _ExportsSomethingElse)


def rt_job(model, cache, methods=("fp32", "ort"), batch_sizes=(2,), **kw):
    return job(model, methods, batch_sizes, specs=METHODS, onnx_cache_dir=str(cache), **kw)


@pytest.mark.slow
def test_onnxruntime_is_checked_then_measured(tmp_path):
    out = run_profile(rt_job("jbrt_tiny", tmp_path), log=lambda s: None)
    rows = conform(out.rows, PROFILE_COLUMNS).set_index("method")
    assert (rows.status == "ok").all(), rows.reason.tolist()
    ort = rows.loc["ort"]
    assert ort.runtime == "onnxruntime" and ort.runtime_provider == "CPUExecutionProvider"
    # Checked on the measured batch before measuring: same outputs within the tolerance.
    detail = json.loads(ort.runtime_detail)
    assert 0 <= ort.runtime_check_rel_err <= detail["tolerance"] == 1e-3
    assert ort.energy_per_image_j > 0 and ort.images > 0
    assert rows.loc["fp32"].runtime == "pytorch" and pd.isna(rows.loc["fp32"].runtime_provider)
    assert set(out.repeats.method) == {"fp32", "ort"}
    # Exported once, into a folder keyed by model, input shape, opset and weights digest.
    assert detail["cached"] is False
    exported = list(tmp_path.glob("jbrt_tiny/2x3x224x224-opset18-*/model.onnx"))
    assert [str(p) for p in exported] == [detail["onnx_path"]]
    again = run_profile(rt_job("jbrt_tiny", tmp_path, methods=("ort",)), log=lambda s: None)
    assert json.loads(again.rows.runtime_detail.iloc[0])["cached"] is True
    assert again.rows.status.tolist() == ["ok"]


def test_an_export_that_differs_is_a_mismatch_row_never_measured(tmp_path):
    out = run_profile(rt_job("jbrt_exports_something_else", tmp_path), log=lambda s: None)
    rows = out.rows.set_index("method")
    assert rows.loc["fp32", "status"] == "ok"  # PyTorch itself is fine
    bad = rows.loc["ort"]
    assert bad.status == "mismatch" and "differs from PyTorch" in bad.reason
    assert bad.runtime_check_rel_err > json.loads(bad.runtime_detail)["tolerance"]
    assert np.isnan(bad.energy_per_image_j) and np.isnan(bad.throughput_img_s)
    assert set(out.repeats.method) == {"fp32"}  # no window was opened for it


def test_a_failed_export_is_a_build_error_row_and_leaves_nothing(tmp_path, capfd):
    """...and prints nothing: the TorchScript exporter's "Torch IR graph at exception" dump
    of a model it cannot export reached the terminal of `joulebench profile` (and of
    `make test`, after its pass line); the row's reason says why."""
    out = run_profile(rt_job("jbrt_cannot_export", tmp_path), log=lambda s: None)
    printed = capfd.readouterr()
    assert "graph" not in printed.out + printed.err, (printed.out + printed.err)[:300]
    assert out.rows.status.tolist() == ["ok", "build-error"]
    reason = out.rows.reason.iloc[1]
    assert reason.startswith("RuntimeError: ONNX export failed: dynamo: ")
    assert "svd" in reason and "torchscript: " in reason and "\x1b" not in reason
    assert not list(tmp_path.rglob("*.onnx")) and not list(tmp_path.rglob(".*"))


def test_tensorrt_is_skipped_with_a_reason_where_it_cannot_run(tmp_path):
    out = run_profile(
        rt_job("jbrt_tiny", tmp_path, methods=("trt", "trt-fp16")), log=lambda s: None
    )
    assert out.rows.status.tolist() == ["skipped", "skipped"]
    assert out.rows.reason.str.contains("TensorRT runs on CUDA devices only").all()
    assert (out.rows.runtime == "ort-tensorrt").all() and len(out.repeats) == 0
    # On a CUDA device, this onnxruntime (CPU build) lacks the providers: named in the reason.
    assert "TensorrtExecutionProvider" in unavailable_reason("ort-tensorrt", bound_device("cuda:0"))
    assert "CUDAExecutionProvider" in unavailable_reason("onnxruntime", bound_device("cuda"))
    assert unavailable_reason("onnxruntime", bound_device("cpu")) is None
    assert unavailable_reason("pytorch", bound_device("cuda")) is None


def test_onnxruntime_not_installed_is_a_skipped_row(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    out = run_profile(rt_job("jbrt_tiny", tmp_path), log=lambda s: None)
    assert out.rows.status.tolist() == ["ok", "skipped"]
    assert "onnxruntime is not installed" in out.rows.reason.iloc[1]


def test_training_with_an_exported_runtime_is_skipped(tmp_path):
    job = rt_job("jbrt_tiny", tmp_path, methods=("ort",), phases=["train"])
    out = run_profile(job, log=lambda s: None)
    assert out.rows.status.tolist() == ["skipped"]
    assert "training runs in PyTorch only" in out.rows.reason.iloc[0]
    assert not list(tmp_path.iterdir())  # nothing was exported for it


def test_runtime_method_specs():
    m = parse_methods({"ort": {"runtime": "onnxruntime", "opset": 17, "tolerance": 1e-4}})["ort"]
    assert m.exported and m.opset == 17 and m.tolerance == 1e-4
    assert not Method("fp32").exported
    with pytest.raises(ValueError, match="runtime must be one of"):
        Method("x", runtime="openvino")
    with pytest.raises(ValueError, match="runs precision"):
        Method("x", runtime="onnxruntime", precision="bf16")
    with pytest.raises(ValueError, match="pytorch only"):
        Method("x", runtime="onnxruntime", compile="default")
    with pytest.raises(ValueError, match="pytorch only"):
        Method("x", runtime="tensorrt", channels_last=True)
    # the old name is ONNX Runtime's TensorRT provider, and rows say its name today
    assert Method("x", runtime="tensorrt").runtime == "ort-tensorrt"
    assert parse_methods({"t": PRESETS["trt-fp16"]})["t"].runtime == "ort-tensorrt"
    assert parse_methods({"t": PRESETS["torchtrt-fp16"]})["t"].runtime == "torch-tensorrt"


def test_the_schema_names_the_runtimes_the_code_declares():
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    method = schema["properties"]["methods"]["additionalProperties"]["properties"]
    assert method["runtime"]["enum"] == [*RUNTIMES, *RUNTIME_ALIASES]
    assert set(RUNTIME_ALIASES.values()) <= set(RUNTIMES)


def test_a_published_summary_with_the_old_name_reads_as_ort_tensorrt(tmp_path):
    old = profile_row("small", "trt-fp16", 64, 0.002, 0.0002, 30.0, 2100.0, runtime="tensorrt")
    path = tmp_path / "published.parquet"
    write_summary(decision_summary([old]), path)
    back = read_summary(path).set_index(["model", "method", "batch_size_requested"])
    assert back.loc[("small", "trt-fp16", 64), "runtime"] == "ort-tensorrt"
    assert back.loc[("small", "fp16", 64), "runtime"] == "pytorch"


def test_relative_error():
    ref = np.array([[1.0, -2.0], [0.5, 4.0]])
    assert relative_error(ref, ref) == 0.0
    assert relative_error(ref + 0.04, ref) == pytest.approx(0.01)
    assert relative_error(ref[:1], ref) == float("inf")  # shape differs
    assert relative_error(np.full_like(ref, np.nan), ref) == float("inf")
