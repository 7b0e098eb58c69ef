"""The column registry (joulebench.tables): every output column declared once, with a
producer grep can find, docs/columns.md generated from it, and real outputs that match it."""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
import subprocess
import sys

import pandas as pd
import pytest
from conftest import FAST_PROTOCOL, REPO
from helpers.dotted import resolve
from helpers.profile_job import job_of

from joulebench import tables
from joulebench.accuracy.reference import reference_accuracy
from joulebench.analysis.fits import all_fits
from joulebench.analysis.score import score_summary
from joulebench.analysis.summary import build_summary
from joulebench.catalog.build import build_catalog
from joulebench.check.report import CheckReport, Row
from joulebench.jobs.profile import run_profile
from joulebench.report.webapp import page_table

SRC = REPO / "src" / "joulebench"
ENTRY = f"{REPO}/tests/workloads/tiny_net.py:build"


def test_docs_columns_is_generated_from_the_registry():
    text = (REPO / "docs" / "columns.md").read_text()
    assert text == tables.columns_markdown(), (
        "docs/columns.md is stale: run `joulebench columns --markdown > docs/columns.md`"
    )


def test_the_cli_prints_the_same_markdown():
    res = subprocess.run(
        [sys.executable, "-m", "joulebench", "columns", "--markdown"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == tables.columns_markdown()


def test_every_table_of_the_workflow_is_declared():
    assert list(tables.TABLES) == [
        "catalog",
        "idle",
        "profile",
        "repeats",
        "trace",
        "accuracy",
        "summary",
        "predicted",
        "scores",
        "factor_fits",
        "accuracy_fits",
        "accuracy_law",
        "method_savings",
        "batch_scaling",
        "best_configs",
        "page",
        "check",
        "check_results",
    ]
    for table in tables.TABLES.values():
        for column in table.columns:
            assert column.meaning and column.producer.startswith("joulebench."), column
            assert column.unit != "-", column


@pytest.mark.parametrize("table", list(tables.TABLES))
def test_every_producer_exists_and_names_its_column(table):
    """grep finds where a number is computed: the producer's source names the column."""
    for column in tables.TABLES[table].columns:
        if column.renamed_from and column.origin == table:
            # grep finds the rename in tables.py, and the value's producer by its first name
            source, _, name = column.renamed_from.partition(".")
            column = dataclasses.replace(tables.TABLES[source][name], name=name)
        producer = resolve(column.producer)
        assert callable(producer), column.producer
        source = inspect.getsource(producer)
        assert re.search(rf"(?<![\w.]){re.escape(column.name)}(?!\w)", source), (
            f"{table}.{column.name}: not named in {column.producer}"
        )


def test_a_producer_that_does_not_name_its_column_is_caught():
    column = tables.Column("no_such_column_j", "float64", "J", "x", "joulebench.table_io.conform")
    source = inspect.getsource(resolve(column.producer))
    assert not re.search(rf"(?<![\w.]){re.escape(column.name)}(?!\w)", source)


# f"{stem}_ci95_low_j" and the like: a column name grep cannot find.
_BUILT_NAME = re.compile(
    r"""f["'][^"']*\{[^}]+\}_(?:std_j|cv|ci95_low_j|ci95_high_j|ci95_rel|unfused|j|w|s)["']"""
)


def test_column_names_are_written_literally():
    found = []
    for path in SRC.rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if _BUILT_NAME.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
    assert _BUILT_NAME.search('summary[f"{stem}_ci95_low_j"] = s.ci95_low')


def test_renames_between_stages_are_declared():
    renamed = {
        f"{t.name}.{c.name}": c.renamed_from
        for t in tables.TABLES.values()
        for c in t.columns
        if c.renamed_from and c.origin == t.name
    }
    assert renamed == {
        "summary.energy_is_estimate": "profile.is_estimate",
        "summary.catalog_status": "catalog.status",
        "summary.catalog_reason": "catalog.reason",
        "summary.accuracy_img_size": "accuracy.img_size",
        "page.scored_energy_per_image_j": "scores.energy_per_image_j",
    }
    for source in renamed.values():
        table, _, column = source.partition(".")
        assert column in tables.TABLES[table].names


def test_a_column_carried_into_a_later_table_keeps_its_declaration():
    assert (
        tables.SUMMARY["energy_per_image_ci95_low_j"]
        is tables.PROFILE["energy_per_image_ci95_low_j"]
    )
    assert tables.SUMMARY["params"].origin == "catalog"
    assert tables.PAGE["flags"].origin == "scores"


def test_a_table_refuses_a_column_declared_twice():
    col = tables.Column("a", "string", "", "a", "joulebench.table_io.conform")
    with pytest.raises(ValueError, match="declared twice"):
        tables.Table("t", "p", "r", (col, col))
    with pytest.raises(ValueError, match="dtype"):
        tables.Column("a", "str", "", "a", "joulebench.table_io.conform")


def test_the_estimate_rule_reads_the_row_and_the_meter():
    df = pd.DataFrame(
        {
            "energy_is_estimate": pd.array([True, False, None, None, False], dtype="boolean"),
            "meter": ["nvml", "rapl", "estimate:tdp-linear", None, "estimate:tdp-linear"],
        }
    )
    got = tables.energy_is_estimate(df).tolist()
    assert got == [True, False, True, pd.NA, True]  # an estimate meter is never "measured"


def test_short_reason_is_one_line():
    exc = RuntimeError("line one\n\x1b[31mline two\x1b[0m " + "x" * 900)
    text = tables.short_reason(exc)
    assert text.startswith("RuntimeError: line one line two")
    assert len(text) == tables.REASON_MAX_CHARS and "\n" not in text and "\x1b" not in text


# --- a small real run: what the stages make has exactly the registry's columns -----------


@pytest.fixture(scope="module")
def small_run():
    """A custom workload measured on this CPU (estimated), catalogued, summarised, scored,
    fitted and put on the page, by the stages' own functions."""
    spec = {
        "torch_device": "cpu",
        "methods": {"fp32": {"precision": "fp32"}},
        "batch_sizes": [1, 2],
        "protocol": {**FAST_PROTOCOL, "warmup_max_s": 2.0},
        "idle_pre_s": 0.05,
        "workload": ENTRY,
    }
    job = job_of("tiny_net.build", "cpu", spec, idle_power_w=1.0, threads=1)
    out = run_profile(job, log=lambda s: None)
    catalog = build_catalog([ENTRY], log=lambda s: None)
    accuracy = reference_accuracy(list(catalog["model"]), {}, {})
    summary = build_summary(out.rows, catalog, accuracy)
    scores = score_summary(summary)
    return {
        "profile": out.rows,
        "repeats": out.repeats,
        "trace": out.trace,
        "catalog": catalog,
        "accuracy": accuracy,
        "summary": summary,
        "scores": scores,
        **all_fits(summary, baseline_method="fp32"),
        "page": page_table(summary, scores),
    }


def test_a_small_real_run_has_the_registry_columns(small_run):
    for name, frame in small_run.items():
        assert list(frame.columns) == tables.TABLES[name].names, name
    summary = small_run["summary"]
    assert (summary["status"] == "ok").all()
    ok = summary.iloc[0]
    for column in ("energy_per_image_j", "energy_per_image_ci95_high_j", "throughput_img_s"):
        assert math.isfinite(ok[column]) and ok[column] > 0, column
    assert ok["energy_is_estimate"] == (ok["meter"].startswith("estimate:"))
    assert ok["catalog_status"] == "ok" and ok["params"] > 0


def test_the_profile_rows_hold_only_declared_fields(small_run):
    row = small_run["profile"].iloc[0]
    assert row["phase"] == "inference" and row["workload"] == ENTRY
    assert row["input_kind"] == "random" and row["weights"] == "random"


def test_the_check_report_has_the_registry_fields():
    report = CheckReport("cpu", [Row("idle", "power", "pass", 1.0, "W")], {"meter": "rapl"})
    assert list(report.as_dict()) == tables.CHECK.names
    assert [f.name for f in dataclasses.fields(Row)] == tables.CHECK_RESULTS.names


def test_every_status_a_row_can_say_is_declared_once():
    """tables.PROFILE_STATUSES names every status the measuring code gives a row (its
    constants and the literals it hands Outcome); the status column lists them all."""
    import re

    from joulebench.core import runtimes
    from joulebench.jobs import supervise
    from joulebench.tables import PROFILE, PROFILE_STATUSES

    constants = {
        value
        for module in (runtimes, supervise)
        for name, value in vars(module).items()
        if name.startswith("STATUS_")
    }
    measuring = [REPO / "src" / "joulebench" / name for name in ("core", "jobs")]
    literals = {
        status
        for folder in measuring
        for path in folder.rglob("*.py")
        for call in re.findall(r"Outcome\(([^,]+),", path.read_text())
        for status in re.findall(r'"([a-z-]+)"', call)
    }
    assert {"ok", "oom", "build-error", "timeout"} <= constants | literals
    assert constants | literals <= set(PROFILE_STATUSES), (constants | literals) - set(
        PROFILE_STATUSES
    )
    (described,) = [c.meaning for c in PROFILE.columns if c.name == "status"]
    assert all(status in described for status in PROFILE_STATUSES)
    columns_md = (REPO / "docs" / "columns.md").read_text()
    assert all(f"| `{s}` | {m} |" in columns_md for s, m in PROFILE_STATUSES.items())
