"""The catalog stage: rows of models that work, fall back to CPU, or fail."""

import pandas as pd
import pytest
import timm
from helpers.timm_models import register
from torch import nn

from joulebench.catalog.build import build_catalog, catalog_row
from joulebench.table_io import conform, read_table, write_table
from joulebench.tables import CATALOG_COLUMNS


class _NeedsRealTensors(nn.Module):
    """Calls .item() in forward, which a meta tensor cannot do: counted on CPU."""

    def __init__(self, num_classes=1000, **kwargs):
        super().__init__()
        self.num_classes = num_classes
        self.conv = nn.Conv2d(3, 4, 1)
        self.fc = nn.Linear(4, num_classes)

    def forward(self, x):
        scale = float(x.abs().max().item() + 1.0)
        return self.fc(self.conv(x).mean((2, 3)) * scale)


class _Broken(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        raise RuntimeError("this architecture cannot be built")


register("jbtest_needs_real_tensors", _NeedsRealTensors)
register("jbtest_broken", _Broken)


def test_row_of_a_real_model():
    row = catalog_row("resnet18.a1_in1k")
    model = timm.create_model("resnet18.a1_in1k")
    assert row["status"] == "ok" and row["count_device"] == "meta"
    assert row["params"] == sum(p.numel() for p in model.parameters())
    assert (row["architecture"], row["pretrained_tag"], row["family"]) == (
        "resnet18",
        "a1_in1k",
        "resnet",
    )
    cfg = timm.data.resolve_model_data_config(model)
    assert (row["input_channels"], row["input_height"], row["input_width"]) == cfg["input_size"]
    assert row["crop_pct"] == cfg["crop_pct"] and row["interpolation"] == cfg["interpolation"]
    assert row["mean"] == list(cfg["mean"]) and row["num_classes"] == 1000
    assert row["flops_per_image"] == 2 * row["macs_per_image"]


def test_head_follows_the_pretrained_tag():
    row = catalog_row("convnext_tiny.fb_in22k")  # an ImageNet-22k head
    assert row["num_classes"] == 21841


def test_model_that_fails_on_meta_is_counted_on_cpu():
    row = catalog_row("jbtest_needs_real_tensors")
    assert row["status"] == "ok" and row["count_device"] == "cpu"
    assert "meta failed" in row["reason"]
    assert row["macs_per_image"] == 224 * 224 * 3 * 4 + 4 * 1000


def test_model_that_fails_is_a_row_with_reason():
    df = build_catalog(["jbtest_broken", "resnet18.a1_in1k"], log=lambda s: None)
    broken = df.set_index("model").loc["jbtest_broken"]
    assert broken["status"] == "failed"
    assert "cannot be built" in broken["reason"]
    assert pd.isna(broken["params"])
    assert df.set_index("model").loc["resnet18.a1_in1k", "status"] == "ok"


def test_unknown_architecture_is_a_failed_row():
    row = catalog_row("no_such_arch_xyz")
    assert row["status"] == "failed" and row["reason"]


def test_catalog_table_round_trip(tmp_path):
    df = build_catalog(["jbtest_broken", "resnet18.a1_in1k"], log=lambda s: None)
    path = tmp_path / "catalog.parquet"
    write_table(df, path, CATALOG_COLUMNS)
    back = read_table(path)
    assert list(back.columns) == list(CATALOG_COLUMNS)
    assert back["params"].dtype == "Int64"
    assert list(back["mean"].iloc[1]) == pytest.approx([0.485, 0.456, 0.406])
    assert not list(tmp_path.glob(".*tmp"))  # no temp file left behind


def test_conform_rejects_missing_and_extra_columns():
    df = build_catalog(["resnet18.a1_in1k"], log=lambda s: None)
    with pytest.raises(ValueError, match="lacks"):
        conform(df.drop(columns=["params"]), CATALOG_COLUMNS)
    with pytest.raises(ValueError, match="undeclared"):
        conform(df.assign(extra=1), CATALOG_COLUMNS)


def test_atomic_write_leaves_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "t.parquet"
    write_table(pd.DataFrame({"a": [1]}), path)
    with pytest.raises(Exception):  # noqa: B017 - any failure of the writer
        write_table(pd.DataFrame({"a": [object()]}), path)
    assert read_table(path)["a"].tolist() == [1]
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]


# Run in a fresh interpreter: there the peak RSS before counting is what imports and a first
# small model took (~0.9 GB), so 1.2 GB of weights would raise it. In the test process the
# peak may already be higher (earlier tests build models), and the check would pass whatever
# counting allocates. The small model first, so its one-off imports (~0.2 GB) are not counted.
_PEAK_RSS_AROUND_CATALOG = """
import json, resource, sys
import torch
from joulebench.catalog.build import catalog_row
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
catalog_row("resnet18.a1_in1k")
before = peak()
row = catalog_row(sys.argv[1])
print(json.dumps({"grown_b": peak() - before, "before_b": before, "params": row["params"],
                  "count_device": row["count_device"],
                  "default_device": torch.get_default_device().type}))
"""


def test_counting_does_not_touch_real_memory():
    """A 300M-parameter model catalogs on meta without allocating its weights."""
    import json
    import subprocess
    import sys

    model = "vit_large_patch16_224.augreg_in21k_ft_in1k"
    res = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS_AROUND_CATALOG, model], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.splitlines()[-1])
    assert out["count_device"] == "meta" and out["params"] > 300e6
    weights_b = 4 * out["params"]  # fp32: 1.2 GB
    assert out["grown_b"] < weights_b / 10, out  # measured: a few MB
    assert out["default_device"] == "cpu"


def test_custom_workload_entries_are_catalogued():
    from joulebench.catalog.build import build_catalog

    df = build_catalog(["jb=tests/workloads/tiny_net.py:build"], log=lambda s: None)
    assert df["model"].tolist() == ["jb"] and df["status"].tolist() == ["ok"]
    assert df["family"].tolist() == ["custom"] and df["flops_per_image"].iloc[0] > 0


def test_written_files_get_the_usual_permissions(tmp_path):
    import os

    old = os.umask(0o022)
    try:
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "t.parquet")
    finally:
        os.umask(old)
    assert (tmp_path / "t.parquet").stat().st_mode & 0o777 == 0o644
