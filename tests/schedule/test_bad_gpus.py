"""A GPU that fails is known by its error and leaves the pool (jobs.gpu_faults,
schedule.bad_gpus, schedule.lease; issue 35 item 4)."""

from __future__ import annotations

import json

import pytest

from joulebench.jobs.gpu_faults import FAULT_KINDS, fault_kind
from joulebench.schedule.bad_gpus import NoGoodGpu, bad_gpus, fault_text, folder, mark_bad
from joulebench.schedule.lease import lease_gpu
from joulebench.schedule.slots import pool_leases

SIM_POOL = {"h100": {"pool": ["sim:h100:0", "sim:h100:1"]}}


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("RuntimeError: CUDA error: unspecified launch failure (Xid 79)", "xid"),
        ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.", "xid"),
        ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "ecc"),
        ("NVMLError_GpuIsLost: GPU is lost", "nvml"),
        ("NVMLError_Unknown: Unknown Error", "nvml"),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda"),
        ("RuntimeError: CUDA error: the launch timed out and was terminated", "cuda"),
        ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", None),
        ("RuntimeError: CUDA error: device-side assert triggered", None),
        ("RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x3 and 4x4)", None),
        ("NVMLError_NoPermission: Insufficient Permissions", None),
        ("", None),
    ],
)
def test_a_fault_of_the_gpu_is_told_from_a_fault_of_the_model(text, kind):
    assert fault_kind(text) == kind
    assert set(FAULT_KINDS) == {"nvml", "xid", "ecc", "cuda"}


def test_a_bad_gpu_is_recorded_with_its_evidence(tmp_path):
    gpu = {"uuid": "GPU-aaaa", "index": 1, "device": "cuda:1"}
    record = mark_bad(gpu, "ecc", "CUDA error: uncorrectable ECC error encountered",
                      directory=tmp_path, device_label="h200", job="h200 resnet50")  # fmt: skip
    (path,) = (tmp_path / "results" / "bad-gpus").iterdir()
    assert folder(tmp_path) == path.parent and json.loads(path.read_text()) == record
    assert path.name.startswith("GPU-aaaa") and path.suffix == ".json"
    assert record["time_utc"].endswith("Z") and record["job"] == "h200 resnet50"
    (tmp_path / "results" / "bad-gpus" / "cut.json").write_text('{"uuid": ')  # half-written
    assert bad_gpus(tmp_path) == {"GPU-aaaa": record}
    assert fault_text(record) == (
        "GPU-aaaa (index 1) failed: ecc: CUDA error: uncorrectable ECC error encountered"
    )


def test_a_bad_gpu_is_never_leased_again(tmp_path):
    (records,) = pool_leases(SIM_POOL).values()
    locks = tmp_path / "locks"
    mark_bad(records[0], "xid", "GPU has fallen off the bus", directory=tmp_path)
    for _ in range(2):  # free, and still never given
        with lease_gpu(records, folder=locks, run_dir=tmp_path) as lease:
            assert lease.member["uuid"] == records[1]["uuid"]
    mark_bad(records[1], "nvml", "GPU is lost", directory=tmp_path)
    with pytest.raises(NoGoodGpu, match="every GPU of the pool failed in this run"):
        lease_gpu(records, folder=locks, run_dir=tmp_path)
    with lease_gpu(records, folder=locks, run_dir=tmp_path / "another-run") as lease:
        assert lease.member["uuid"] == records[0]["uuid"]  # another run's record is its own
