"""The workflow on a real SLURM: a tiny study through profiles/slurm.

CI starts a one-node SLURM with fake GPUs first (.ci/start-slurm.sh, as root); without
`sbatch`, or with a SLURM that does not answer, the test is skipped. The test checks the
results and SLURM's own record of the jobs (squeue, no accounting database needed).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid

import pandas as pd
import pytest
from conftest import REPO, cpu_study, snakemake

pytestmark = pytest.mark.slow

MODELS = ["resnet18.a1_in1k", "mobilenetv3_small_100.lamb_in1k", "convnext_atto.d2_in1k"]
STUDY = cpu_study(MODELS)


def slurm_unavailable() -> str | None:
    """Why no SLURM can run jobs here, or None when one answers with a usable node."""
    if shutil.which("sbatch") is None:
        return "no sbatch on PATH (CI starts a SLURM with .ci/start-slurm.sh)"
    try:
        sinfo = subprocess.run(
            ["sinfo", "--noheader", "--format=%T"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"SLURM does not answer: {exc}"
    if sinfo.returncode != 0:
        return "SLURM does not answer: " + " | ".join(sinfo.stderr.strip().splitlines()[-2:])
    if not {"idle", "mixed", "allocated"} & set(sinfo.stdout.split()):
        return f"no SLURM node takes jobs (sinfo: {sinfo.stdout.split()})"
    return None


def squeue(*args: str) -> list[list[str]]:
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    return [line.split("|") for line in out.splitlines() if line.strip()]


@pytest.fixture
def job_prefix():
    """A SLURM that answers (else skip), and a job-name prefix of this test's own: any
    job of ours still there afterwards is cancelled."""
    reason = slurm_unavailable()
    if reason:
        pytest.skip(reason)
    prefix = f"jbtest{uuid.uuid4().hex[:8]}"
    yield prefix
    left = [row[0] for row in squeue("--format=%i|%j|%T") if row[1].startswith(prefix)]
    if left:
        subprocess.run(["scancel", *left], timeout=30)


@pytest.mark.slow
def test_tiny_study_through_the_slurm_profile(tmp_path, job_prefix):
    result = snakemake(
        tmp_path,
        STUDY,
        "results/catalog.parquet",  # targets first: several options take lists
        "results/profile.parquet",
        "--profile",
        str(REPO / "profiles" / "slurm"),
        # No accounting database here: no account, job status from squeue.
        "--slurm-no-account",
        "--slurm-status-command",
        "squeue",
        # Poll every 2 s rather than every 30 s: the jobs take seconds.
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--seconds-between-status-checks",
        "2",
        "--slurm-jobname-prefix",
        job_prefix,
        # Groups of 2 models: one measures two models in a row, and the two groups are
        # in SLURM's queue at the same time (the measuring slots do not serialise submissions).
        "--group-components",
        "measure=2",
        timeout=480,
    )
    logs = "\n".join(
        f"--- {path}\n{path.read_text()[-2000:]}"
        for path in sorted(tmp_path.glob(".snakemake/slurm_logs/**/*.log"))
    )
    assert result.returncode == 0, result.stderr[-4000:] + logs

    results = tmp_path / "results"
    catalog = pd.read_parquet(results / "catalog.parquet")
    assert catalog["model"].tolist() == MODELS
    assert (catalog["status"] == "ok").all()
    profile = pd.read_parquet(results / "profile.parquet")
    # The study's own methods only (a study replaces config.yaml, it is not merged into it).
    assert set(profile["method"]) == {"fp32"}, set(profile["method"])
    assert len(profile) == len(MODELS) * 1 * 1  # models x methods x batch sizes
    assert sorted(profile["model"]) == sorted(MODELS)
    assert (profile["status"] == "ok").all(), profile[["model", "status", "reason"]]

    # SLURM's own record of this run (its job name is the plugin's run id): a catalog
    # job, an idle job and two group jobs for the three models, the last three requesting
    # a GPU and the whole node; all completed.
    run_id = re.search(r"SLURM run ID: (\S+)", result.stdout + result.stderr).group(1)
    assert run_id.startswith(job_prefix)
    jobs = squeue(f"--name={run_id}", "--Format=JobID:|,State:|,tres-per-job:|,OverSubscribe:")
    jobs = {job_id: (state, tres, share) for job_id, state, tres, share, *_ in jobs}
    assert len(jobs) == 4, jobs
    assert all(state == "COMPLETED" for state, _, _ in jobs.values()), jobs
    measuring = {job_id for job_id, (_, tres, _) in jobs.items() if "gpu" in tres}
    assert len(measuring) == 3, jobs
    assert all(jobs[job_id][2] == "NO" for job_id in measuring), jobs  # --exclusive

    # Both groups were submitted before any profile job finished: the device's measuring
    # slot is per allocation (resource scope local), not one for the whole cluster.
    main_log = result.stdout + result.stderr
    submitted = [
        m.start()
        for m in re.finditer(r"submitted with SLURM jobid \d+ \(log: \S*/group_", main_log)
    ]
    first_done = re.search(r"Finished jobid: \d+ \(Rule: profile\)", main_log)
    assert len(submitted) == 2 and submitted[1] < first_done.start(), main_log[-4000:]

    # One group measured two models in its allocation, one after the other (the device's
    # slot, limit 1, holds within a group); the other, the third model.
    group_logs = sorted(tmp_path.glob(".snakemake/slurm_logs/group_*/*.log"))
    assert {path.stem for path in group_logs} <= measuring and len(group_logs) == 2, logs
    texts = [path.read_text() for path in group_logs]
    measured = [[m for m in MODELS if f"job={m}" in text] for text in texts]
    assert sorted(map(len, measured)) == [1, 2] and sorted(sum(measured, [])) == sorted(MODELS)
    pair = texts[[len(m) for m in measured].index(2)]
    starts = [m.start() for m in re.finditer(r"^localrule profile:", pair, re.MULTILINE)]
    finished = [m.start() for m in re.finditer(r"^Finished jobid: .*profile", pair, re.MULTILINE)]
    assert len(starts) == 2 and finished[0] < starts[1], pair[-3000:]


def _submit(tmp_path, study: dict, job_prefix: str):
    """The study's profile table asked of the SLURM profile: (result, its output)."""
    result = snakemake(
        tmp_path,
        study,
        "results/profile.parquet",
        "--profile",
        str(REPO / "profiles" / "slurm"),
        "--slurm-no-account",
        "--slurm-jobname-prefix",
        job_prefix,
        timeout=300,
    )
    return result, result.stdout + result.stderr


def test_devices_auto_is_refused_on_a_cluster(tmp_path, job_prefix):
    """auto would look at the submitting host, not at the nodes: the run stops before any
    job is submitted and says what to write instead."""
    result, output = _submit(tmp_path, {**STUDY, "devices": "auto"}, job_prefix)
    assert result.returncode != 0
    assert "devices: auto looks at this host" in output and "devices: {h200: cuda}" in output
    assert "submitted with SLURM jobid" not in output
    assert not (tmp_path / "results").exists()


def test_a_pool_is_refused_on_a_cluster(tmp_path, job_prefix):
    """A pool shares one host's GPUs; a cluster's allocations measure one GPU each: the run
    stops before any job is submitted (issue 24: on SLURM nothing changes)."""
    study = {**STUDY, "devices": {"h100": {"pool": ["sim:h100:0", "sim:h100:1"]}}}
    result, output = _submit(tmp_path, study, job_prefix)
    assert result.returncode != 0
    assert "a pool shares one host's GPUs" in output
    assert "submitted with SLURM jobid" not in output
