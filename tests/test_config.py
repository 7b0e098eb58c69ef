"""Config validation: the schema's defaults and messages, and errors before any job runs."""

import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

SCHEMA = str(REPO / "workflow" / "schemas" / "config.schema.yaml")


def check(config):
    validate(config, SCHEMA)
    return config


def test_default_config_is_valid_and_gets_defaults():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config.pop("catalog", None)
    check(config)
    assert config["catalog"]["models_per_job"] == 100


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"models": ["resnet18"], "bogus": 1}, "'bogus' was unexpected"),
        ({"models": "resnet18"}, "is not of type 'array'"),
        ({"models": []}, "should be non-empty"),
        ({"models": ["resnet18"], "catalog": {"models_per_job": 0}}, "minimum of 1"),
        ({"models": ["resnet18"], "catalog": {"models_per_job": "x"}}, "not of type 'integer'"),
    ],
)
def test_schema_errors(config, message):
    with pytest.raises(WorkflowError) as err:
        check(config)
    assert message in str(err.value.args[0])


def test_workflow_stops_on_unknown_model_before_any_job(run_workflow):
    result = run_workflow({"models": ["resnet18.a1_in1k", "resnet5O"]}, "-n")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "'resnet5O' is no timm model" in output
    assert "Closest valid names: resnet50" in output
    assert not Path(run_workflow.workdir, "results").exists()


def test_workflow_stops_on_unknown_key(run_workflow):
    result = run_workflow({"models": ["resnet18"], "modles": ["x"]}, "-n")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "'modles' was unexpected" in output
    config = run_workflow.workdir / "test-config.yaml"
    assert f"unknown key 'modles' at the top level (set in {config})" in output
    assert "closest valid key: 'models'" in output
    assert len(output.splitlines()) < 20, output  # the key, not the 900-line schema


def test_workflow_refuses_a_model_entry_that_reads_as_an_option(run_workflow):
    result = run_workflow({"models": ["--help=models/m.py:f"]}, "-n")
    assert result.returncode != 0
    assert "'--help=models/m.py:f' starts with '-'" in result.stdout + result.stderr


def test_workflow_stops_on_a_device_it_cannot_measure_before_any_job(run_workflow):
    """cuda:99 exists nowhere: the run stops before its first job, naming what is missing."""
    config = {"models": ["resnet18.a1_in1k"], "devices": {"gpu": "cuda:99"}, "batch_sizes": [1]}
    result = run_workflow(config)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "devices: 'gpu' is cuda:99, but" in output
    assert "Traceback" not in output
    assert not Path(run_workflow.workdir, "results").exists()
    assert not Path(run_workflow.workdir, "logs").exists()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("summary.parquet", b"PK\x03\x04 a spreadsheet", "not a parquet file"),
        ("summary.xlsx", b"PK\x03\x04 a spreadsheet", "not a parquet file"),
        ("summary.csv", "model,top1\nr\xe9snet,70\n".encode("latin-1"), "not UTF-8 text"),
    ],
)
def test_from_summary_that_is_no_table_is_one_clear_error(run_workflow, name, content, message):
    path = run_workflow.workdir / name
    path.write_bytes(content)
    result = run_workflow({"from_summary": str(path)}, "-n")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert f"from_summary: {path}: {message}" in output
    assert "Traceback" not in output and "UnicodeDecodeError" not in output


def test_a_study_file_extends_the_default_config(run_workflow):
    """Keys a study leaves out come from config.yaml (here: the five default models)."""
    result = run_workflow({"batch_sizes": [1]}, "-n")
    assert result.returncode == 0, result.stdout[-2000:]
    assert re.search(r"^profile\s+5$", result.stdout, re.MULTILINE)


def test_from_summary_must_exist(run_workflow):
    result = run_workflow({"from_summary": "/nonexistent/summary.parquet"}, "-n")
    assert result.returncode != 0
    assert "no such file: /nonexistent/summary.parquet" in result.stdout + result.stderr
