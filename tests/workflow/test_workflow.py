"""The workflow end to end on a tiny study: outputs, rerun does nothing, lint."""

import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import timm
from conftest import REPO, SMOKE, snakemake

from joulebench.report.figure_manifest import read_manifest
from joulebench.report.figure_names import FIGURE_NAMES as FIGURES

pytestmark = pytest.mark.slow


TINY_STUDY = {
    "models": ["resnet18.a1_in1k", "convnext_atto.d2_in1k", "mobilenetv3_small_100"],
    "catalog": {"models_per_job": 2},
    "devices": {"cpu": "cpu"},  # the assertions are the CPU's (auto would take a GPU)
    # bf16 measured on every CPU, also where it is only emulated (test_emulation: skipping)
    "methods": {
        "fp32": {"precision": "fp32"},
        "bf16": {"precision": "bf16", "allow_emulated": True},
    },
    "batch_sizes": [1, 2],
    "protocol": SMOKE,
    "profile": {"idle_pre_s": 0.1, "quiet_wait_s": 0},
    "idle": {"duration_s": 0.5},
}


@pytest.mark.slow
def test_study_end_to_end_and_noop_rerun(run_workflow, tmp_path_factory):
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

    results = run_workflow.workdir / "results"
    summary = pd.read_parquet(results / "summary.parquet")
    assert len(summary) == len(profile) and (results / "summary.csv").is_file()
    # Random weights: no measured accuracy; timm's published accuracy, labelled as such.
    assert (summary["accuracy_source"] == "reference").all()
    resnet18 = summary[summary["model"] == "resnet18.a1_in1k"]
    assert (resnet18["top1"] == 71.504).all()
    # From the copy shipped in the repository: no network, no folder outside it.
    assert summary["accuracy_dataset"].str.contains("timm@aa4b585, shipped copy").all()
    scores = pd.read_parquet(results / "scores.parquet")
    assert len(scores) == len(summary)
    for name in FIGURES:
        for suffix in (".pdf", ".png"):
            assert (results / "figures" / f"{name}{suffix}").stat().st_size > 1000, name
    # A CPU estimate, inference only, no power limit: four figures only say why they are not
    why_not = {
        n: why for n, why in read_manifest(results / "figures" / "figures.tsv").items() if why
    }
    no_data = {"power_trace", "throughput_vs_energy", "train_vs_inference", "power_limit_sweep"}
    assert no_data <= set(why_not)
    # a busy host (other tests beside this one) flags rows other-load: nothing comparable left
    assert all("other-load" in why_not[n] for n in set(why_not) - no_data), why_not
    page = (results / "webapp" / "index.html").read_text()
    assert "resnet18.a1_in1k" in page and "estimated" in page

    # Progress in each job's log; the cost first and the outputs and best models last.
    log = (run_workflow.workdir / "logs/profile/cpu/resnet18.a1_in1k.log").read_text()
    lines = [line for line in log.splitlines() if line.startswith("config ")]
    assert re.fullmatch(r"config 1/4 resnet18.a1_in1k \w+ bs\d, elapsed 0 s, ETA .+", lines[0])
    assert re.fullmatch(r"config 4/4 resnet18.a1_in1k \w+ bs\d, elapsed .+, ETA .+", lines[3])
    out = first.stdout + first.stderr
    assert "joulebench: 12 configurations = 1 device x 3 models x 2 methods x 2 batch" in out
    assert out.index("12 configurations") < out.index("rule profile")
    assert f"web page: {results.resolve()}/webapp/index.html" in out
    assert "Most accurate model per energy band" in out
    assert f"Figures not made ({len(why_not)} of {len(FIGURES)}; each file says why" in out
    ok = summary[summary["status"] == "ok"]
    if ok["flags"].fillna("").str.contains("other-load").all():  # a host busy with others
        assert "  throughput_vs_energy: No data: " in out and "flagged other-load" in out
    else:
        assert "  throughput_vs_energy: Not drawn: every energy here is estimated" in out

    again = run_workflow(config)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stderr + again.stdout

    # The README's replot in the run's own folder: its summary is this run's, and nothing the
    # run measured may be rebuilt from no models (and deleted when that fails). It draws what
    # the run drew (savings against fp32, the run's trace): nothing to do, before or after.
    drawn = {p.name: p.read_bytes() for p in (results / "figures").glob("*.png")}
    own = run_workflow({**config, "from_summary": "results/summary.parquet"})
    assert own.returncode == 0, own.stdout[-3000:] + own.stderr[-3000:]
    assert "Nothing to be done" in own.stderr + own.stdout, own.stderr[-3000:]
    assert (results / "profile.parquet").is_file() and (results / "catalog.parquet").is_file()
    assert drawn == {p.name: p.read_bytes() for p in (results / "figures").glob("*.png")}
    assert "Nothing to be done" in _stdout_err(run_workflow(config, "-n"))

    report = run_workflow.workdir / "report.html"
    made = run_workflow(config, "--report", str(report))
    assert made.returncode == 0, made.stderr[-3000:]
    assert report.stat().st_size > 10_000
    filed = report.read_text()  # the report files the figures not made apart, saying why
    assert '"Figures not made"' in filed and '"made": "no: No data: the study measured' in filed

    # Figures from existing data: a summary anywhere on disk, and torch cannot be imported.
    published = tmp_path_factory.mktemp("published") / "summary.parquet"
    shutil.copy(results / "summary.parquet", published)
    poison = tmp_path_factory.mktemp("poison")
    (poison / "torch").mkdir()
    (poison / "torch" / "__init__.py").write_text("raise ImportError('torch is not allowed')")
    replot = tmp_path_factory.mktemp("replot")
    rerun = snakemake(replot, {"from_summary": str(published)}, env={"PYTHONPATH": str(poison)})
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert not (replot / "results" / "catalog.parquet").exists()
    replotted = pd.read_parquet(replot / "results" / "scores.parquet")
    assert len(replotted) == len(scores)
    # The study's first method is the baseline, as in the run (bf16 sorts first: never it).
    savings = pd.read_parquet(replot / "results" / "fits" / "method_savings.parquet")
    assert set(savings["baseline_method"]) == {"fp32"}
    for name in FIGURES:
        assert (replot / "results" / "figures" / f"{name}.png").is_file()
    assert (replot / "results" / "webapp" / "index.html").is_file()


def _stdout_err(result) -> str:
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout + result.stderr


def test_all_pretrained_dry_run(tmp_path):
    result = snakemake(tmp_path, {"models": ["all-pretrained"]}, "-n")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = math.ceil(len(timm.list_pretrained()) / 100)  # models_per_job defaults to 100
    assert re.search(rf"^catalog_part\s+{jobs}$", result.stdout, re.MULTILINE)


def test_lint_is_clean(tmp_path):
    result = snakemake(tmp_path, None, "--lint")  # its .snakemake/log goes to tmp_path
    assert result.returncode == 0
    assert "Congratulations" in result.stdout + result.stderr


@pytest.mark.slow
def test_imagefolder_dataset_prepared_once_per_input_config(run_workflow):
    from PIL import Image

    images = run_workflow.workdir / "images"
    for wnid in ("n01440764", "n01443537"):
        (images / wnid).mkdir(parents=True)
        for i in range(3):
            Image.new("RGB", (64, 48), (40 * i, 80, 120)).save(images / wnid / f"{i}.png")
    config = {
        # resnet18 and resnet34 (a1) share an input config; mobilenetv3 has its own.
        "models": ["resnet18.a1_in1k", "resnet34.a1_in1k", "mobilenetv3_small_100.lamb_in1k"],
        "dataset": {"kind": "imagefolder", "path": str(images)},
    }
    result = run_workflow(config, "results/accuracy.parquet")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    manifests = list((run_workflow.workdir / "data" / "prepared").glob("*/manifest.json"))
    assert len(manifests) == 2
    accuracy = pd.read_parquet(run_workflow.workdir / "results" / "accuracy.parquet")
    assert len(accuracy) == 3
    # No pretrained weights on this machine: reference accuracy, never a random-weight one.
    assert set(accuracy["accuracy_source"]) == {"reference"}


@pytest.mark.slow
def test_hostile_paths_reach_no_shell(tmp_path):
    """A folder named with a space, $(...), a quote and a `;` holds the published summary,
    the power trace and the working directory: the run succeeds and runs nothing of it."""
    from helpers.figure_study import study_tables

    from joulebench.analysis.summary import write_summary
    from joulebench.table_io import write_table
    from joulebench.tables import TRACE_TABLE_COLUMNS

    hostile = tmp_path / "My Results $(touch MARKER) it's; touch MARKER2 `touch MARKER3`"
    summary, _, _, trace = study_tables(n_models=6, estimated=False)
    write_summary(summary, hostile / "summary $(touch MARKER).parquet")
    write_table(trace, hostile / "trace;touch MARKER.parquet", TRACE_TABLE_COLUMNS)
    config = {
        "from_summary": str(hostile / "summary $(touch MARKER).parquet"),
        "figures": {"trace_table": str(hostile / "trace;touch MARKER.parquet")},
    }
    result = snakemake(hostile, config)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (hostile / "results" / "webapp" / "index.html").is_file()
    assert (hostile / "results" / "figures" / "power_trace.png").stat().st_size > 1000
    markers = [*tmp_path.rglob("MARKER*"), *REPO.glob("MARKER*"), *Path.cwd().glob("MARKER*")]
    assert markers == []


def test_a_published_summary_whose_relative_path_starts_with_a_dash(run_workflow):
    """Every rule passes it as `--summary=PATH` or after `--`: never read as an option."""
    from helpers.decision_rows import decision_summary

    from joulebench.analysis.summary import write_summary

    write_summary(decision_summary(), run_workflow.workdir / "-summary.parquet")
    result = run_workflow({"from_summary": "-summary.parquet"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = run_workflow.workdir / "results"
    for name in FIGURES:
        assert (results / "figures" / f"{name}.png").is_file(), name
    assert "mid" in (results / "webapp" / "index.html").read_text()
