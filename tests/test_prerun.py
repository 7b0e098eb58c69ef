"""A study checked whole before any job (joulebench.prerun): what each stage's own validator
would refuse, named by key and file, and a published summary read once."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import REPO

from joulebench.prerun import (
    DRAWN_TRACE,
    RUN_SUMMARY,
    check_published,
    check_settings,
    load_study,
    replot_inputs,
    study_baseline,
)
from joulebench.study import ConfigError

# --- what a stage would refuse hours later, refused when the study is read -------------------


@pytest.mark.parametrize(
    ("section", "value", "line"),
    [
        (
            "protocol",
            {"repeats": 30},
            "config: protocol: repeats must be <= max_repeats (the cap on repeats), got 30 > 12",
        ),
        (
            "score",
            {"grade_thresholds": [0.1, 0.2, 0.3, 0.45, 0.6, 0.8]},
            "config: score.grade_thresholds: grade thresholds must strictly decrease",
        ),
        (
            "methods",
            {"ort": {"runtime": "onnxruntime", "precision": "bf16"}},
            "config: methods: method ort: runtime onnxruntime runs precision",
        ),
        (
            "methods",
            {"ort": {"runtime": "onnxruntime", "channels_last": True}},
            "config: methods: method ort: channels_last applies to runtime pytorch only",
        ),
        (
            "reference",
            {"local_dir": "timm/results", "commit": "a" * 40},
            "config: reference: set local_dir or commit, not both",
        ),
        ("dataset", {"kind": "imagefolder"}, "config: dataset: dataset kind 'imagefolder' needs"),
        ("train", {"lr": 0.0}, "config: train: lr must be > 0"),
        ("decisions", {"max_latency_ms": [float("inf")]}, "config: decisions: max_latency_ms:"),
    ],
)
def test_settings_a_stage_would_refuse_are_refused_naming_the_key(section, value, line):
    config = load_study(None, REPO)
    config[section] = {**config[section], **value}
    with pytest.raises(ConfigError) as err:
        check_settings(config)
    assert line in str(err.value)
    assert len(str(err.value).splitlines()) == 1


def test_node_energy_scope_needs_total_energy_before_any_job():
    config = load_study(None, REPO)
    config["energy_scope"] = "node"
    config["score"] = {**config["score"], "energy": "dynamic"}
    with pytest.raises(ConfigError, match="config: energy_scope: energy_scope node scores total"):
        check_settings(config)


def test_each_problem_is_its_own_line_with_the_file_that_set_it(tmp_path):
    """A study is read whole (plan, devices and the workflow alike): every problem at once."""
    study = tmp_path / "study.yaml"
    study.write_text(
        "protocol: {repeats: 30}\nscore: {grade_thresholds: [0.1, 0.2, 0.3, 0.45, 0.6, 0.8]}\n"
    )
    with pytest.raises(ConfigError) as err:
        load_study(study, REPO)
    lines = str(err.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"config: protocol (set in {study}): repeats must be <=")
    assert lines[1].startswith(f"config: score.grade_thresholds (set in {study}): ")


def test_the_stages_own_validator_decides():
    """Declared once: the message is the stage's own (ProtocolSettings), not a copy's."""
    from joulebench.core.protocol import ProtocolSettings

    with pytest.raises(ValueError) as stage:
        ProtocolSettings(repeats=30)
    config = load_study(None, REPO)
    config["protocol"] = {**config["protocol"], "repeats": 30}
    with pytest.raises(ConfigError) as study:
        check_settings(config)
    assert stage.value.problems[0] in str(study.value)


def test_the_default_study_and_every_shipped_study_pass():
    check_settings(load_study(None, REPO))
    for study in sorted((REPO / "studies").glob("*.yaml")):
        check_settings(load_study(study, REPO))


# --- a published summary, read once before any job ------------------------------------------


def _published(tmp_path, name="summary.parquet", **changes):
    """A valid summary (decision_rows) with `changes` to its first row, as a file."""
    from helpers.decision_rows import decision_summary

    from joulebench.analysis.summary import write_summary

    df = decision_summary()
    for column, value in changes.items():
        df.loc[0, column] = value
    path = tmp_path / name
    if changes:
        df.to_parquet(path)  # as published: not checked on the way out
    else:
        write_summary(df, path)
    return path


def test_a_published_summary_is_checked_once_with_every_problem(tmp_path):
    path = _published(tmp_path, top1=150.0, energy_per_image_j=-1.0)
    with pytest.raises(ConfigError) as err:
        check_published({"from_summary": str(path)})
    message = str(err.value)
    assert message.startswith(f"from_summary: {path}: summary does not match")
    assert "top1 must lie in [0, 100]" in message and "energy_per_image_j" in message
    assert check_published({"from_summary": str(_published(tmp_path, "ok.parquet"))}) == []
    assert check_published({"from_summary": None}) == []


def test_a_published_summary_with_extra_columns_reads_with_a_note(tmp_path):
    from helpers.decision_rows import decision_summary

    path = tmp_path / "newer.parquet"
    decision_summary().assign(from_the_future=1).to_parquet(path)
    notes = check_published({"from_summary": str(path)})
    assert notes == [
        f"from_summary: note: {path}: ignoring undeclared summary columns ['from_the_future']"
    ]


def test_a_trace_table_that_is_no_trace_is_refused(tmp_path):
    summary = _published(tmp_path)
    config = {"from_summary": str(summary), "figures": {"trace_table": str(summary)}}
    with pytest.raises(ConfigError, match=r"figures.trace_table: .*not a power trace, it lacks"):
        check_published(config)
    config["figures"]["trace_table"] = str(tmp_path / "missing.parquet")
    with pytest.raises(ConfigError, match="figures.trace_table: no such file: "):
        check_published(config)


def test_braces_in_an_input_path_are_named(tmp_path):
    path = _published(tmp_path, "summary{v2}.parquet")
    with pytest.raises(ConfigError) as err:
        check_published({"from_summary": str(path)})
    assert str(err.value).startswith(f"from_summary: {path}: Snakemake reads {{ and }}")


# --- a replot: the baseline and the trace the run drew, never changed silently ---------------


def test_a_published_summarys_baseline_is_the_studys_or_said_or_refused(tmp_path):
    """decision_rows' methods are fp16 and fp32 (no precision column: the one named fp32)."""
    path = str(_published(tmp_path))
    study = {"from_summary": path, "methods": {"fp32": {}, "bf16": {}}}
    assert check_published(study) == []  # the study's first method is in it: nothing to say
    study["methods"] = {"tf32": {}, "fp32": {}}
    assert check_published(study) == [
        "from_summary: note: the summary has no method 'tf32' (the study's first): method "
        "savings against 'fp32'; fits.baseline_method picks another (fp16, fp32)"
    ]
    study["fits"] = {"baseline_method": "fp16"}
    assert check_published(study) == [] and study_baseline(study) == "fp16"
    study["fits"] = {"baseline_method": "bf16"}
    with pytest.raises(ConfigError) as err:
        check_published(study)
    assert str(err.value) == (
        "fits.baseline_method: 'bf16' is no method of the summary (its methods: fp16, fp32)"
    )


def test_a_replot_of_a_runs_own_summary_draws_from_what_the_run_drew(tmp_path):
    (tmp_path / "results").mkdir()
    own = str(tmp_path / "results" / "summary.parquet")
    for given in ("results/summary.parquet", "./results/../results/summary.parquet", own):
        assert replot_inputs({"from_summary": given}, tmp_path) == (RUN_SUMMARY, None)
    (tmp_path / DRAWN_TRACE).write_bytes(b"")
    assert replot_inputs({"from_summary": own}, tmp_path) == (RUN_SUMMARY, DRAWN_TRACE)
    chosen = {"from_summary": own, "figures": {"trace_table": "t.parquet"}}
    assert replot_inputs(chosen, tmp_path) == (RUN_SUMMARY, "t.parquet")
    # A summary from elsewhere draws no trace of this folder's run.
    assert replot_inputs({"from_summary": "p/summary.parquet"}, tmp_path) == (
        "p/summary.parquet",
        None,
    )


@pytest.mark.parametrize("column", ["phase", "device_label", "model", "batch_size_requested"])
def test_a_measured_row_without_part_of_its_key_is_refused_naming_it(tmp_path, column):
    path = _published(tmp_path, **{column: None})
    with pytest.raises(ConfigError) as err:
        check_published({"from_summary": str(path)})
    message = str(err.value)
    assert "rows lack part of their key" in message and f"row 0 (ok: no {column})" in message


def test_a_not_profiled_row_may_lack_a_device_method_and_batch_and_is_never_graded(tmp_path):
    from helpers.decision_rows import decision_summary

    from joulebench.analysis.score import score_summary
    from joulebench.analysis.summary import read_summary

    df = decision_summary()
    extra = df.iloc[[0]].assign(model="never-profiled", status="not-profiled")
    keys = ("device_label", "method", "batch_size_requested", "batch_size")
    for column in keys:
        extra[column] = None
    both = pd.concat([df, extra], ignore_index=True).astype({c: df[c].dtype for c in keys})
    path = tmp_path / "with-unprofiled.parquet"
    both.to_parquet(path)
    assert check_published({"from_summary": str(path)}) == []
    scores = score_summary(read_summary(path))
    assert scores.loc[scores["model"] == "never-profiled", "grade"].isna().all()


def test_a_header_only_summary_is_refused(tmp_path):
    from helpers.decision_rows import decision_summary

    path = tmp_path / "header.csv"
    decision_summary().iloc[:0].to_csv(path, index=False)
    with pytest.raises(ConfigError) as err:
        check_published({"from_summary": str(path)})
    assert str(err.value) == f"from_summary: {path} has no rows (a header only): nothing to score"


@pytest.mark.parametrize(
    ("config", "sources"),
    [
        ({"from_summary": None}, [("--config", {"from_summary": None})]),  # from_summary=
        ({"from_summary": " "}, []),
    ],
)
def test_an_empty_from_summary_is_refused_not_the_measuring_study(config, sources):
    with pytest.raises(ConfigError) as err:
        check_published(config, sources)
    assert str(err.value) == (
        "from_summary: empty; give a summary's path, or leave the key out to measure"
    )
