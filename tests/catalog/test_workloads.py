"""Custom workloads: a user's model from a file (tests/workloads/tiny_net.py) or a module,
loaded with clear errors, catalogued, and profiled end to end like any timm model."""

import importlib.util
from dataclasses import replace

import pandas as pd
import pytest
import torch
from conftest import REPO
from helpers.profile_job import FAST, job_of

from joulebench.catalog.build import workload_row as catalog_row
from joulebench.catalog.workloads import (
    WorkloadError,
    WorkloadSpec,
    check_entry,
    is_workload,
    load_workload,
    named_entry,
    workload_entries,
    workload_name,
)
from joulebench.jobs.profile import run_profile
from joulebench.table_io import conform
from joulebench.tables import CATALOG_COLUMNS, PROFILE_COLUMNS

FILE = "tests/workloads/tiny_net.py"
ENTRY = f"{REPO / FILE}:build"


def test_which_entries_are_workloads_and_their_names():
    assert is_workload("tests/workloads/tiny_net.py:build")
    assert is_workload("my_pkg.nets:build_net") and is_workload("mine=my_pkg.nets:build_net")
    for timm_name in ("resnet50.a1_in1k", "convnext_*", "hf-hub:timm/resnet18.a1_in1k"):
        assert not is_workload(timm_name)
    assert workload_name("tests/workloads/tiny_net.py:build") == "tiny_net.build"
    assert workload_name("my_pkg.nets:build_net") == "nets.build_net"
    assert workload_name("paper-net = tests/workloads/tiny_net.py:build") == "paper-net"
    assert named_entry(f"{FILE}:build") == f"tiny_net.build={FILE}:build"
    assert workload_name(named_entry("x=my_pkg.nets:make")) == "x"
    entries = ["resnet18.a1_in1k", f"{FILE}:build", "other=my_pkg.nets:make"]
    assert workload_entries(entries) == {"tiny_net.build": f"{FILE}:build", "other": entries[2]}
    with pytest.raises(WorkloadError, match="may only use"):
        workload_name("my net=x.py:build")
    with pytest.raises(WorkloadError, match="expected 'module:function'"):
        workload_name("x.py:")


@pytest.mark.parametrize("entry", ["--help=models/m.py:f", "-x.py:build", "-o=pkg.mod:f"])
def test_a_name_that_reads_as_an_option_is_refused(entry):
    with pytest.raises(WorkloadError, match="may not start with '-'"):
        workload_name(entry)


def test_load_from_a_file_and_from_a_module(monkeypatch):
    model, spec = load_workload(ENTRY)
    assert isinstance(model, torch.nn.Module)
    assert spec == WorkloadSpec(input_size=(3, 24, 24), num_classes=5)
    assert model(torch.zeros(2, *spec.input_size)).shape == (2, 5)
    monkeypatch.syspath_prepend(str(REPO / "tests" / "workloads"))
    model, spec = load_workload("tiny_net:build")
    assert type(model).__name__ == "TinyNet" and spec.num_classes == 5


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("tests/workloads/no_such_file.py:build", "file not found"),
        (f"{REPO / FILE}:no_such_function", "has no function no_such_function"),
        (f"{REPO / FILE}:NOT_A_FUNCTION", "has no function NOT_A_FUNCTION"),
        (f"{REPO / FILE}:returns_a_model_only", r"returned TinyNet; expected \(model, spec\)"),
        (f"{REPO / FILE}:returns_no_module", "expected a torch.nn.Module"),
        (f"{REPO / FILE}:spec_without_classes", r"missing \['num_classes'\]"),
        ("no_such_package_jb.nets:build", "module no_such_package_jb.nets not found"),
    ],
)
def test_a_broken_workload_says_what_is_wrong(entry, message):
    with pytest.raises(WorkloadError, match=message):
        load_workload(entry)


def test_spec_values_are_checked():
    with pytest.raises(WorkloadError, match="input_size"):
        WorkloadSpec(input_size=(24, 24), num_classes=5)
    with pytest.raises(WorkloadError, match="num_classes"):
        WorkloadSpec.from_value({"input_size": (3, 8, 8), "num_classes": 0})
    with pytest.raises(WorkloadError, match="unknown"):
        WorkloadSpec.from_value({"input_size": (3, 8, 8), "num_classes": 2, "colour": "red"})
    check_entry(ENTRY)  # exists; checked without importing anything


def test_a_custom_workload_is_profiled_end_to_end(tmp_path):
    methods = {"fp32": {"precision": "fp32"}, "ort": {"runtime": "onnxruntime"}}
    spec = {"phases": ["inference", "train"], "workload": ENTRY, "onnx_cache": str(tmp_path)}
    spec.update(torch_device="cpu", methods=methods, batch_sizes=[4])
    job = job_of(workload_name(ENTRY), "cpu", spec, idle_power_w=1.0, threads=1)
    job = replace(
        job,
        spec=replace(
            job.spec,
            settings=FAST,
            protocol=None,  # FAST as given, not sized to the meter
            idle_pre_s=0.05,
        ),
    )
    out = run_profile(job, log=lambda s: None)
    rows = conform(out.rows, PROFILE_COLUMNS)
    got = list(zip(rows.phase, rows.method, rows.status, strict=True))
    ort_status = "ok" if importlib.util.find_spec("onnxruntime") else "skipped"
    assert got == [
        ("inference", "fp32", "ok"),
        ("inference", "ort", ort_status),
        ("train", "fp32", "ok"),
        ("train", "ort", "skipped"),  # training runs in PyTorch only
    ], rows.reason.tolist()
    assert (rows.model == "tiny_net.build").all() and (rows.workload == ENTRY).all()
    ok = rows[rows.status == "ok"]
    assert (ok.weights == "random").all() and (ok.energy_per_image_j > 0).all()
    if ort_status == "ok":
        assert list(tmp_path.glob("tiny_net.build/4x3x24x24-opset18-*/model.onnx"))


def test_a_custom_workload_is_catalogued():
    row = catalog_row("tiny_net.build", ENTRY)
    df = conform(pd.DataFrame([row]).reindex(columns=list(CATALOG_COLUMNS)), CATALOG_COLUMNS)
    r = df.iloc[0]
    assert (r.status, r.family, r.count_device) == ("ok", "custom", "cpu")
    assert (r.input_channels, r.input_height, r.input_width, r.num_classes) == (3, 24, 24, 5)
    model, _ = load_workload(ENTRY)
    assert r.params == sum(p.numel() for p in model.parameters())
    # conv1: 8 out x 12 x 12 positions x 27 MACs; conv2: 16 x 6 x 6 x 72; head: 16 x 5.
    assert r.macs_per_image == 8 * 12 * 12 * 27 + 16 * 6 * 6 * 72 + 16 * 5
    broken = catalog_row("x", f"{REPO / FILE}:returns_no_module")
    assert broken["status"] == "failed" and "torch.nn.Module" in broken["reason"]
