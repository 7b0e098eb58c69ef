"""Leases on a pool's GPUs (schedule/lease.py): two leases never hold one GPU, and a job
killed with SIGKILL frees its GPU for the next one (the kernel drops its lock)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from joulebench.schedule.lease import held_by, lease_gpu, lock_path, try_lease

POOL = [
    {"device": "sim:h100:0", "uuid": "GPU-aaaa", "index": 0},
    {"device": "sim:h100:1", "uuid": "GPU-bbbb", "index": 1},
]

# A job in another process: it leases a GPU of the pool, says which, and holds it.
HOLDER = """
import json, sys, time
from joulebench.schedule.lease import lease_gpu
lease = lease_gpu(json.loads(sys.argv[1]), folder=sys.argv[2], holder="h100 resnet18")
print(lease.member["device"], flush=True)
time.sleep(600)
"""


def test_two_leases_never_hold_one_gpu(tmp_path):
    first = lease_gpu(POOL, folder=tmp_path)
    second = lease_gpu(POOL, folder=tmp_path)
    assert {first.member["device"], second.member["device"]} == {"sim:h100:0", "sim:h100:1"}
    assert try_lease(POOL[0], tmp_path) is None and try_lease(POOL[1], tmp_path) is None
    with pytest.raises(TimeoutError, match="no GPU of the pool was free"):
        lease_gpu(POOL, folder=tmp_path, timeout_s=0.3)
    second.release()
    with lease_gpu(POOL, folder=tmp_path) as third:  # the freed one, at once
        assert third.member == second.member
    assert lock_path("GPU-aaaa", tmp_path).parent == tmp_path
    first.release()


def _start_holder(tmp_path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    job = subprocess.Popen(
        [sys.executable, "-c", HOLDER, json.dumps(POOL), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    return job, job.stdout.readline().strip()


def test_a_job_killed_with_sigkill_frees_its_gpu_for_the_next(tmp_path):
    job, taken = _start_holder(tmp_path)
    try:
        assert taken == "sim:h100:0"  # the first free one
        held = next(m for m in POOL if m["device"] == taken)
        assert held_by(held, tmp_path) == f"{job.pid} h100 resnet18"  # who, for status
        with lease_gpu(POOL, folder=tmp_path) as mine:  # the other GPU, not the held one
            assert mine.member["device"] == "sim:h100:1"
            with pytest.raises(TimeoutError):
                lease_gpu(POOL, folder=tmp_path, timeout_s=0.3)
            os.kill(job.pid, signal.SIGKILL)  # no cleanup runs in the job
            job.wait(timeout=30)
            start = time.monotonic()
            with lease_gpu(POOL, folder=tmp_path, timeout_s=10) as next_job:
                assert next_job.member["device"] == taken  # freed by the kernel
            assert time.monotonic() - start < 5
        assert held_by(held, tmp_path) is None  # the stale file stays, unlocked: free
        assert lock_path(held["uuid"], tmp_path).exists()
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
