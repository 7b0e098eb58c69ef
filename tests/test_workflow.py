"""The workflow end to end on a tiny study: outputs, rerun does nothing, lint."""

import math
import re

import pandas as pd
import pytest
import timm
from conftest import REPO, snakemake

pytestmark = pytest.mark.slow


def test_catalog_end_to_end_and_noop_rerun(run_workflow):
    config = {
        "models": ["resnet18.a1_in1k", "convnext_atto.d2_in1k", "mobilenetv3_small_100"],
        "catalog": {"models_per_job": 2},
    }
    first = run_workflow(config)
    assert first.returncode == 0, first.stderr[-3000:]
    catalog = pd.read_parquet(run_workflow.workdir / "results" / "catalog.parquet")
    assert catalog["model"].tolist() == [
        "resnet18.a1_in1k",
        "convnext_atto.d2_in1k",
        "mobilenetv3_small_100.lamb_in1k",
    ]
    assert (catalog["status"] == "ok").all()
    assert len(list((run_workflow.workdir / "results" / "catalog").glob("part-*.parquet"))) == 2

    again = run_workflow(config)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stderr + again.stdout


def test_all_pretrained_dry_run(tmp_path):
    result = snakemake(tmp_path, {"models": ["all-pretrained"]}, "-n")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = math.ceil(len(timm.list_pretrained()) / 100)  # models_per_job defaults to 100
    assert re.search(rf"^catalog_part\s+{jobs}$", result.stdout, re.MULTILINE)


def test_lint_is_clean(tmp_path):
    result = snakemake(REPO, None, "--lint")
    assert result.returncode == 0
    assert "Congratulations" in result.stdout + result.stderr
