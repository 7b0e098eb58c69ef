"""The workflow end to end on a tiny study: outputs, rerun does nothing, lint."""

import math
import re

import pandas as pd
import pytest
import timm
from conftest import REPO, snakemake

pytestmark = pytest.mark.slow


FAST_PROTOCOL = {
    "warmup_min_iters": 2,
    "warmup_min_s": 0.05,
    "warmup_chunk_s": 0.05,
    "steady_tolerance": 0.5,
    "repeats": 2,
    "min_repeat_s": 0.1,
    "min_repeat_batches": 2,
    "pause_s": [0.0, 0.01],
}
TINY_STUDY = {
    "models": ["resnet18.a1_in1k", "convnext_atto.d2_in1k", "mobilenetv3_small_100"],
    "catalog": {"models_per_job": 2},
    "methods": {"fp32": {"precision": "fp32"}, "bf16": {"precision": "bf16"}},
    "batch_sizes": [1, 2],
    "protocol": FAST_PROTOCOL,
    "profile": {"idle_pre_s": 0.1},
    "idle": {"duration_s": 0.5},
}


def test_study_end_to_end_and_noop_rerun(run_workflow):
    config = TINY_STUDY
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

    profile = pd.read_parquet(run_workflow.workdir / "results" / "profile.parquet")
    assert len(profile) == 3 * 2 * 2  # models x methods x batch sizes
    assert (profile["status"] == "ok").all()
    assert profile["is_estimate"].all()  # no RAPL, no GPU here: labelled estimates
    idle = pd.read_parquet(run_workflow.workdir / "results" / "idle" / "cpu.parquet")
    assert (profile["idle_power_w"] == idle["idle_power_w"].iloc[0]).all()

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
