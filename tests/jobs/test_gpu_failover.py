"""A GPU that fails leaves the pool and its job goes on on another (jobs.gpu_failover,
issue 35 item 4): the simulated GPUs fail in each way (sim.faults), the GPU is
marked bad with its evidence, the job's configurations from the failed one on are measured
on the other GPU of a pool of 2, once; where none is left they are `not-measured` rows."""

from __future__ import annotations

import time

import pandas as pd
import pytest
from conftest import FAST_PROTOCOL, REPO, SMOKE, snakemake

from joulebench.jobs.gpu_failover import Failover, failover_for
from joulebench.jobs.gpu_faults import FAULT_KINDS, fault_kind
from joulebench.jobs.job_runner import supervised_job
from joulebench.jobs.job_spec import JobSpec, job_spec
from joulebench.jobs.profile import ProfileJob
from joulebench.jobs.supervise import WorkerRun
from joulebench.schedule.bad_gpus import bad_gpus, mark_bad
from joulebench.schedule.lease import lease_gpu
from joulebench.schedule.slots import pool_leases
from joulebench.sim import faults
from joulebench.sim.backend import wall_sim_gpu

SIM_POOL = {"h100": {"pool": ["sim:h100:0", "sim:h100:1"]}}
BAD = REPO / "tests" / "workloads" / "bad.py"


@pytest.fixture
def pool(tmp_path, monkeypatch):
    """The pool's lease records, in a run folder of this test's own (bad GPUs, locks)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(REPO / "src"))  # workers start in tmp_path
    monkeypatch.setenv("JOULEBENCH_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("JOULEBENCH_RUNNING_DIR", str(tmp_path / "running"))
    monkeypatch.setenv("JOULEBENCH_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    (records,) = pool_leases(SIM_POOL).values()
    return records


# ------------------------------------------------------------------ the simulated faults


def test_the_chaos_hook_is_read_in_one_way():
    assert faults.parse_faults("1:xid:2, GPU-ab12:nvml") == {
        "1": faults.SimFault("xid", 2), "GPU-ab12": faults.SimFault("nvml", 0)
    }  # fmt: skip
    for bad in ("1", "1:melts", "1:ecc:x"):
        with pytest.raises(ValueError, match="<board index or uuid>:<kind>"):
            faults.parse_faults(bad)
    env = {faults.ENV: "1:ecc:3"}
    assert faults.sim_fault(1, "GPU-x", env) == faults.SimFault("ecc", 3)
    assert faults.sim_fault(0, "GPU-x", env) is None and faults.sim_fault(None, "GPU-x", {}) is None


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_a_simulated_gpu_fails_in_its_configuration_after_n(kind, monkeypatch):
    from joulebench.sim.backend import _BOARDS

    monkeypatch.setenv(faults.ENV, f"1:{kind}:1")
    monkeypatch.delitem(_BOARDS, "sim:h100:1", raising=False)  # a fresh board: this fault's
    board = wall_sim_gpu("sim:h100:1", f"test-fault-{kind}")
    board.run(lambda: None)()  # its first configuration runs
    step = board.run(lambda: None)  # the second fails
    meter = board.meter()
    if kind == "nvml":
        step()
        with pytest.raises(Exception, match="GPU is lost") as err:
            meter.begin()
    else:
        with pytest.raises(RuntimeError, match="CUDA error") as err:
            step()
    assert fault_kind(f"{type(err.value).__name__}: {err.value}") == kind


# ------------------------------------------------------------------ the supervisor's move


def _run(position: int, kind="xid", done=()) -> WorkerRun:
    fault = {"event": "gpu-fault", "position": position, "kind": kind, "evidence": f"{kind}!"}
    return WorkerRun("crashed", position=position, done=list(done), fault=fault)


def _collector():
    rows = []

    def failed(positions, status, reason):
        rows.extend((p, status, reason) for p in positions)

    return rows, failed


def test_a_job_moves_once_and_then_gives_up_what_is_left(pool):
    lines, (a, b) = [], pool
    failover = failover_for(_device("sim:h100:0"), pool, "h100 m", "h100", lines.append)
    rows, failed = _collector()
    with failover:
        assert failover.spec.gpu["uuid"] == a["uuid"]
        assert failover.on_fault(_run(1, done=[0]), 0, 4, failed, lines.append) == 1
        assert failover.spec.gpu["uuid"] == b["uuid"] and rows == []
        assert set(bad_gpus()) == {a["uuid"]}
        assert failover.on_fault(_run(2, "ecc", done=[1]), 1, 4, failed, lines.append) == 4
    assert [(p, s) for p, s, _ in rows] == [(2, "not-measured"), (3, "not-measured")]
    moved = "the job moved to another GPU already (1 move a job)"
    assert rows[0][2] == f"{b['uuid']} (index 1) failed: ecc: ecc!; {moved}"
    assert set(bad_gpus()) == {a["uuid"], b["uuid"]}
    frame = pd.DataFrame({"config_order": [1, 2, 3, 4]})
    noted = failover.noted(frame)["gpu_failed"].fillna("").tolist()
    assert noted[0] == "" and noted[1].startswith(a["uuid"]) and noted[3].startswith(b["uuid"])
    later = failover_for(_device("sim:h100:0"), pool, "h100 n", "h100", lines.append)
    assert later.start_reason().startswith("every GPU of the pool failed in this run")


def test_a_configuration_that_fails_on_the_next_gpu_too_is_its_own_fault(pool):
    failover = failover_for(_device("sim:h100:0"), pool, "h100 m", "h100", print)
    rows, failed = _collector()
    with failover:
        assert failover.on_fault(_run(0, "cuda"), 0, 2, failed, print) == 0
        assert failover.on_fault(_run(0, "cuda"), 0, 2, failed, print) == 1
    assert rows == [(0, "error", "cuda again on the next GPU: the configuration's fault, "
                                 "not a GPU's: cuda!")]  # fmt: skip
    assert set(bad_gpus()) == {pool[0]["uuid"]}  # the second GPU is kept


def test_a_lone_gpu_that_fails_leaves_its_jobs_not_measured(pool):
    rows, failed = _collector()
    lone = Failover(_device("sim:h100"), holder="g m", label="g")
    assert lone.start_reason() == ""
    fault = {**_run(0).fault, "uuid": "GPU-lone", "index": 0}
    run = WorkerRun(
        "crashed", position=-1, fault={k: v for k, v in fault.items() if k != "position"}
    )
    assert lone.on_fault(run, 3, 5, failed, print) == 5  # before its first: from where it began
    assert [p for p, _, _ in rows] == [3, 4] and rows[0][2].endswith("the device has no other GPU")
    again = Failover(_device("sim:h100"), holder="g n", label="g")
    assert again.start_reason().startswith("GPU-lone (index 0) failed: xid: xid!")


# ------------------------------------------------------------------ a job on a pool of 2


def _spec() -> JobSpec:
    study = {
        "methods": {"fp32": {"precision": "fp32"}},
        "batch_sizes": [1, 2],
        "protocol": FAST_PROTOCOL,
        "profile": {"idle_pre_s": 0.05, "quiet_wait_s": 0},
    }
    return job_spec("sim:h100:0", study, workload=f"{BAD}:good")


def _device(torch_device: str) -> JobSpec:
    """A spec of nothing to measure on `torch_device`: what failover reads of it."""
    return JobSpec(torch_device=torch_device, methods=(), batch_sizes=())


@pytest.mark.slow
@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_a_gpu_that_fails_leaves_the_pool_and_the_job_goes_on(kind, pool, monkeypatch):
    monkeypatch.setenv(faults.ENV, f"0:{kind}:1")  # GPU 0 fails in its second configuration
    a, b = pool
    lines, start = [], time.monotonic()
    with failover_for(_spec(), pool, "h100 bad.good", "h100", lines.append) as failover:
        job = ProfileJob("bad.good", "h100", failover.spec, threads=1)
        rows, _, _ = supervised_job(job, idle=None, log=lines.append, failover=failover)
    rows = rows.sort_values("config_order")
    assert rows["status"].tolist() == ["ok", "ok"], rows["reason"].tolist()
    assert rows["gpu_uuid"].tolist() == [a["uuid"], b["uuid"]]  # the second: measured again
    failed = rows["gpu_failed"].fillna("").tolist()
    assert failed[0] == "" and failed[1].startswith(f"{a['uuid']} (index 0) failed: {kind}: ")
    (record,) = bad_gpus().values()
    assert (record["uuid"], record["kind"], record["device_label"]) == (a["uuid"], kind, "h100")
    assert fault_kind(record["evidence"]) == kind
    with lease_gpu(pool) as lease:  # no model is handed to it again
        assert lease.member["uuid"] == b["uuid"]
    assert time.monotonic() - start < 240


def test_a_job_on_a_pool_with_no_good_gpu_left_measures_nothing(pool):
    for record in pool:
        mark_bad(record, "nvml", "GPU is lost", device_label="h100")
    with failover_for(_spec(), pool, "h100 bad.good", "h100", print) as failover:
        job = ProfileJob("bad.good", "h100", failover.spec, threads=1)
        rows, _, _ = supervised_job(job, idle=None, log=print, failover=failover)
    assert rows["status"].tolist() == ["not-measured", "not-measured"]
    assert rows["reason"].str.startswith("every GPU of the pool failed in this run").all()


# ------------------------------------------------------------------ the workflow


@pytest.mark.slow
def test_a_study_on_a_pool_whose_gpu_fails_finishes_on_the_other(tmp_path):
    """Snakemake, a pool of 2 simulated GPUs, GPU 0 lost from its first configuration:
    every configuration is measured once, on GPU 1; GPU 0 is marked bad with its evidence."""
    study = {
        "models": [
            f"good={BAD}:good",
            f"tiny={REPO / 'tests' / 'workloads' / 'tiny_net.py'}:build",
        ],
        "catalog": {"models_per_job": 2},
        "devices": SIM_POOL,
        "methods": {"fp32": {"precision": "fp32"}},
        "batch_sizes": [1, 2],
        "protocol": SMOKE,
        "profile": {"idle_pre_s": 0.05, "quiet_wait_s": 0, "split": "model"},
        "idle": {"duration_s": 0.3},
    }
    env = {"JOULEBENCH_LOCK_DIR": str(tmp_path / "locks"), faults.ENV: "0:xid:0"}
    env["JOULEBENCH_RUNNING_DIR"] = str(tmp_path / "running")
    done = snakemake(tmp_path, study, "results/profile.parquet", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = pd.read_parquet(tmp_path / "results" / "profile.parquet")
    (a, b) = pool_leases(SIM_POOL)["h100"]
    assert len(rows) == 4 and (rows["status"] == "ok").all(), rows["reason"].tolist()
    assert not rows.duplicated(["model", "method", "batch_size_requested"]).any()
    assert (rows["gpu_uuid"] == b["uuid"]).all()
    assert rows["gpu_failed"].fillna("").str.startswith(f"{a['uuid']} (index 0) failed: xid").any()
    (record,) = bad_gpus(tmp_path).values()
    assert record["uuid"] == a["uuid"] and "fallen off the bus" in record["evidence"]
