"""A study that finishes whatever its models and GPUs do (issue 35 item 5): on a pool of two
simulated GPUs, models that hang, exit, are killed, answer NaN or the wrong shape, run out
of memory, one GPU that fails in its first configuration (the study's first job's), and
Snakemake killed (-9) once and resumed. Every configuration ends with exactly one row and
its status; the failing GPU is marked bad and nothing is measured on it after; no board is
left with a changed power limit; no two configurations measured on one GPU at once.
bench/bench_chaos.py runs it larger."""

from __future__ import annotations

import pytest
from helpers.chaos import FAILING_GPU, FAULTS, chaos_study, outcome, run_chaos


@pytest.mark.slow
def test_a_study_of_faults_finishes_with_one_row_per_configuration(tmp_path):
    study = chaos_study(good=2, gpus=2, batch_sizes=(1, 2))
    run = run_chaos(tmp_path, study, kill_after_rows=1)
    assert run["returncode"] == 0, run["tail"]
    assert run["killed_after_jobs"] >= 1  # Snakemake died with jobs done and jobs running
    seen = outcome(tmp_path, study)
    assert (seen["lost"], seen["duplicated"], seen["unasked"]) == (0, 0, 0), seen
    assert seen["rows"] == seen["configurations"] == len(study["models"]) * 2
    for model, status in FAULTS.items():
        assert seen["status_of"][model] == [status], (model, seen["status_of"])
    assert seen["status_of"]["good0"] == seen["status_of"]["good1"] == ["ok"]
    (bad,) = seen["bad_gpus"]
    assert bad["index"] == FAILING_GPU and bad["kind"] == "xid"
    assert set(seen["measured_on"]) == {"0", "1"} - {str(FAILING_GPU)}  # none on the failed one
    assert seen["limits_left_changed"] == [] and seen["overlapping"] == 0
    assert seen["summary_rows"] >= seen["rows"] and seen["page"]
