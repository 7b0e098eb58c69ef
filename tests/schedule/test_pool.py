"""GPU pools (issue 24 item 1): identical GPUs of a host are one label whose GPUs share the
study's models. `devices: auto` groups them (checked with the fake NVML), a study may name a
pool, the pool's measuring slot admits one job per GPU, each job leases a free GPU and pins
to it, every row names its GPU, and the workflow measures each model once across the pool
(simulated GPUs)."""

from __future__ import annotations

import dataclasses
import json
import re

import pandas as pd
import pytest
from conftest import SMOKE, snakemake
from helpers.fake_gpus import A100, H200, fake_torch
from helpers.fake_nvml import FakeNvml

from joulebench.analysis.boards import read_records
from joulebench.analysis.summary import build_summary, gpu_spread
from joulebench.schedule.devices import (
    AUTO,
    RESOLVED_ENV,
    DeviceError,
    auto_devices,
    check_devices,
    describe_devices,
    format_devices,
    pool_of,
    resolve_devices,
    resolve_pools,
)
from joulebench.schedule.slots import (
    lease_from_pool,
    measure_threads,
    measuring_resources,
    pool_leases,
    slot_limits,
    slots_taken,
)

H200_B = dataclasses.replace(
    H200, uuid="GPU-33333333-aaaa-4bbb-8ccc-000000000000", pci_bus_id="00000000:5D:00.0"
)
H200_C = dataclasses.replace(
    H200, uuid="GPU-44444444-aaaa-4bbb-8ccc-000000000000", pci_bus_id="00000000:9A:00.0"
)
A100_PCIE = dataclasses.replace(
    A100,
    uuid="GPU-55555555-aaaa-4bbb-8ccc-000000000000",
    pci_bus_id="00000000:AF:00.0",
    name="NVIDIA A100-PCIE-40GB",
)
SIM_POOL = {"h100": {"pool": ["sim:h100:0", "sim:h100:1"]}}


# ------------------------------------------------------------------ auto and explicit pools


def test_auto_makes_identical_gpus_one_pool_and_one_pool_per_product():
    # NVML's order differs from torch's: the pools follow torch's devices, matched by UUID
    nvml = FakeNvml([A100, H200_B, H200, H200_C])
    torch = fake_torch([H200, A100, H200_B, H200_C])
    pools, why = auto_devices(torch=torch, nvml=nvml)
    assert pools == {"h200": ["cuda:0", "cuda:2", "cuda:3"], "a100": ["cuda:1"]} and why == ""
    assert resolve_devices(AUTO, env={}, torch=torch, nvml=nvml) == {
        "h200": "cuda:0",
        "a100": "cuda:1",
    }


def test_two_products_of_one_short_name_keep_apart():
    torch = fake_torch([A100, A100_PCIE])
    pools, _ = auto_devices(torch=torch, nvml=FakeNvml([A100, A100_PCIE]))
    assert pools == {"a100-0": ["cuda:0"], "a100-1": ["cuda:1"]}


def test_a_study_names_pools_and_a_cluster_job_reuses_the_planned_ones():
    spec = {**SIM_POOL, "cpu": "cpu"}
    assert resolve_pools(spec, env={}) == {"h100": ["sim:h100:0", "sim:h100:1"], "cpu": ["cpu"]}
    assert resolve_devices(spec, env={}) == {"h100": "sim:h100:0", "cpu": "cpu"}
    planned = {"h200": ["cuda:0", "cuda:1"]}
    env = {RESOLVED_ENV: json.dumps(planned)}
    assert resolve_pools(AUTO, env=env, nvml=FakeNvml([])) == planned


def test_a_pool_that_cannot_be_one_says_why():
    assert check_devices(SIM_POOL) == []
    (twice,) = check_devices({"g": {"pool": ["sim:h100:0", "sim:h100:0"]}})
    assert "names a device twice" in twice
    (cpu,) = check_devices({"g": {"pool": ["cpu", "sim:h100:0"]}})
    assert "the CPU measures alone" in cpu
    torch, nvml = fake_torch([H200]), FakeNvml([H200])
    mixed = check_devices({"g": {"pool": ["cuda:0", "sim:h100:0"]}}, torch=torch, nvml=nvml)
    assert any("one kind of device (cuda and sim here)" in p for p in mixed), mixed


# ------------------------------------------------------------------ slots, threads, leases


def test_a_pools_slot_admits_one_job_per_gpu_and_the_cpu_takes_it_whole():
    node = {**SIM_POOL, "cpu": "cpu"}
    assert slot_limits(node) == {"measuring_h100": 2, "measuring_cpu": 1}
    assert slots_taken(node, "h100") == {"measuring_h100": 1}
    assert slots_taken(node, "cpu") == {"measuring_h100": 2, "measuring_cpu": 1}
    resources = measuring_resources(node)
    assert resources["measuring_h100"]({"device": "h100"}) == 1
    assert resources["measuring_h100"]({"device": "cpu"}) == 2
    assert measure_threads(node, "h100", 8) == 4  # 8 cores shared by the pool's 2 GPUs
    assert measure_threads(node, "cpu", 8) == 8


def test_a_pools_gpus_are_leased_by_uuid_with_nvmls_index_and_serial(tmp_path):
    a = dataclasses.replace(H200, serial="1650924060001")
    b = dataclasses.replace(H200_B, serial="1650924060002")
    torch, nvml = fake_torch([a, b]), FakeNvml([b, a])  # NVML numbers them the other way
    (records,) = pool_leases({"h200": ["cuda:0", "cuda:1"]}, torch=torch, nvml=nvml).values()
    assert [(r["device"], r["uuid"], r["index"], r["serial"]) for r in records] == [
        ("cuda:0", a.uuid, 1, "1650924060001"),  # as NVML writes it
        ("cuda:1", b.uuid, 0, "1650924060002"),
    ]
    assert [r["pin"] for r in records] == [a.uuid, b.uuid]
    assert pool_leases({"h200": "cuda:0"}, torch=torch, nvml=nvml) == {}  # one GPU: no pool
    env = {}
    first, device, gpu = lease_from_pool(records, "h200 m1", env=env, folder=tmp_path)
    assert env["CUDA_VISIBLE_DEVICES"] == a.uuid and device == "cuda:0"
    assert gpu == {"uuid": records[0]["uuid"], "index": 1, "serial": "1650924060001"}
    second, device, gpu = lease_from_pool(records, "h200 m2", env=env, folder=tmp_path)
    assert env["CUDA_VISIBLE_DEVICES"] == b.uuid and gpu["index"] == 0  # the free one
    first.release()
    second.release()


def test_simulated_gpus_form_a_pool_of_distinct_boards(tmp_path):
    (records,) = pool_leases(SIM_POOL).values()
    assert [r["index"] for r in records] == [0, 1] and records[0]["pin"] is None
    assert len({r["uuid"] for r in records}) == 2
    lease, device, gpu = lease_from_pool(records, "x", folder=tmp_path)
    with lease:
        assert device == "sim:h100:0" and gpu["uuid"] == records[0]["uuid"]
    from joulebench.sim.backend import wall_sim_gpu

    board = wall_sim_gpu("sim:h100:1", "test-pool-board")
    assert board.board.uuid == records[1]["uuid"]  # the job's meter reads the leased board


# ------------------------------------------------------------------ the workflow


POOL_STUDY = {
    "models": ["resnet18.a1_in1k", "mobilenetv3_small_100.lamb_in1k", "efficientnet_b0.ra_in1k"],
    "catalog": {"models_per_job": 3},
    "devices": SIM_POOL,
    "methods": {"fp32": {"precision": "fp32"}},
    "batch_sizes": [1],
    "protocol": {**SMOKE, "min_repeat_s": 1.0},
    "profile": {"idle_pre_s": 0.1, "quiet_wait_s": 0},
    "idle": {"duration_s": 0.5},
}


def test_the_dag_of_a_pool_leases_one_gpu_per_job(tmp_path):
    """One label, one job per model (not one per GPU), each taking one unit of the pool's
    slot (its limit: 2) and leasing from the pool's GPUs."""
    done = snakemake(tmp_path, POOL_STUDY, "-n", "-p", "results/profile.parquet")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^profile\s+3$", out, re.MULTILINE) and re.search(r"^idle\s+1$", out, re.M)
    assert out.count("measuring_h100=1") == 4  # idle + 3 profile jobs, one GPU each
    assert out.count("--pool=") == 4 and "sim:h100:1" in out
    assert "results/profile/h100/rows/" in out and "h100-0" not in out


SPLIT_STUDY = {
    **POOL_STUDY,
    "models": POOL_STUDY["models"][:2],
    "methods": {"fp32": {"precision": "fp32"}, "cl": {"precision": "fp32", "channels_last": True}},
    # each simulated board reads its reference levels first (board factors, issue 41)
    "profile": {**POOL_STUDY["profile"], "board_reference": "on"},
}


def test_a_pool_with_few_models_shares_their_methods(tmp_path):
    """2 models on 2 GPUs (fewer than 4 a GPU): one job per model and method, each given
    that method alone; `split: model` keeps whole models."""
    done = snakemake(tmp_path, SPLIT_STUDY, "-n", "-p", "results/profile.parquet")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^profile\s+4$", out, re.MULTILINE)
    assert "results/profile/h100/rows/resnet18.a1_in1k+cl.parquet" in out
    assert "logs/profile/h100/resnet18.a1_in1k+fp32.log" in out
    for line in [x for x in out.splitlines() if x.startswith("joulebench profile-job")]:
        part = re.search(r"rows/[^ ]+\+(\w+)\.parquet", line)[1]
        methods = json.loads(re.search(r"--spec='([^']*)'", line)[1])["methods"]
        assert list(methods) == [part] and line.endswith(".log 2>&1")
        assert re.search(r" -- (resnet18\.a1_in1k|mobilenetv3_small_100\.lamb_in1k) >", line)
    whole = {**SPLIT_STUDY, "profile": {**SPLIT_STUDY["profile"], "split": "model"}}
    done = snakemake(tmp_path, whole, "-n", "results/profile.parquet")
    assert re.search(r"^profile\s+2$", done.stdout, re.MULTILINE), done.stderr[-2000:]


@pytest.mark.slow
def test_a_pool_of_two_simulated_gpus_measures_each_model_once(tmp_path):
    # this run's own GPU locks and markers: other runs on this host neither wait nor count
    env = {"JOULEBENCH_LOCK_DIR": str(tmp_path / "locks")}
    env["JOULEBENCH_RUNNING_DIR"] = str(tmp_path / "running")
    done = snakemake(tmp_path, SPLIT_STUDY, "results/profile.parquet", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = pd.read_parquet(tmp_path / "results" / "profile.parquet")
    assert len(rows) == 4 and (rows["status"] == "ok").all()  # 2 models x 2 methods, 4 jobs
    assert (rows["device_label"] == "h100").all()
    assert not rows.duplicated(["model", "method"]).any()
    assert sorted(p.name for p in (tmp_path / "results/profile/h100/rows").iterdir()) == sorted(
        f"{m}+{k}.parquet" for m in SPLIT_STUDY["models"] for k in SPLIT_STUDY["methods"]
    )
    (records,) = pool_leases(SIM_POOL).values()
    uuids = {r["uuid"]: r["index"] for r in records}
    assert set(rows["gpu_uuid"]) <= set(uuids)  # every row names a GPU of the pool
    assert [uuids[u] for u in rows["gpu_uuid"]] == rows["gpu_index"].tolist()
    assert rows["gpu_serial"].str.startswith("SIM-").all()
    assert rows["threads"].eq(1).all()  # 2 cores shared by the pool's 2 GPUs
    spans = rows.assign(
        start=pd.to_datetime(rows["start_time_utc"]), end=pd.to_datetime(rows["end_time_utc"])
    )
    # one GPU: its jobs one after the other; the two GPUs: some at the same time
    for _, jobs in spans.sort_values("start").groupby("gpu_uuid"):
        assert (jobs["start"].iloc[1:].to_numpy() >= jobs["end"].iloc[:-1].to_numpy()).all()
    assert rows["gpu_uuid"].nunique() == 2
    assert rows["concurrent_measurements"].max() == 2
    # each board read its reference levels once; the summary states board 1 by board 0
    records = read_records(tmp_path / "results" / "boards")
    assert set(records) == set(rows["gpu_uuid"])
    summary = build_summary(rows, boards=records)
    by_index = summary.set_index("gpu_index")
    assert set(by_index.loc[0, "board_factor_source"]) == {"reference"}
    assert set(by_index.loc[1, "board_factor_source"]) == {"fitted"}
    assert (by_index.loc[1, "board_reference_uuid"] == uuids_by_index(uuids)[0]).all()
    assert summary["pool_board_spread_fraction"].gt(0.005).all()  # the boards differ
    assert summary["protocol_fingerprint"].nunique() == 1  # one setup, one reference board


def uuids_by_index(uuids: dict) -> dict:
    return {index: uuid for uuid, index in uuids.items()}


# ------------------------------------------------------------------ each model on k GPUs


def test_each_model_on_k_gpus_makes_k_labels_of_distinct_gpus():
    gpus = [f"cuda:{i}" for i in range(4)]
    spec = {"h200": {"pool": gpus, "each_model_on": 2}}
    assert resolve_pools(spec, env={}) == {
        "h200-0": ["cuda:0", "cuda:2"],
        "h200-1": ["cuda:1", "cuda:3"],
    }
    assert pool_of(spec) == {"h200-0": "h200", "h200-1": "h200"}
    # as many as its GPUs: one GPU per label, each measuring every model (as before pools)
    every = resolve_pools({"h200": {"pool": gpus, "each_model_on": 4}}, env={})
    assert every == {f"h200-{i}": [f"cuda:{i}"] for i in range(4)}
    with pytest.raises(DeviceError, match="each_model_on: 5, but its pool has 4 GPUs"):
        resolve_pools({"h200": {"pool": gpus, "each_model_on": 5}}, env={})
    with pytest.raises(DeviceError, match="'h200-0' is given twice"):
        resolve_pools({**spec, "h200-0": "cpu"}, env={})
    assert pool_of({"cpu": "cpu", **SIM_POOL}) == {"cpu": "cpu", "h100": "h100"}


def test_the_summary_reports_the_spread_between_a_pools_gpus():
    key = {"phase": "inference", "method": "fp32", "batch_size_requested": 1, "status": "ok"}
    rows = pd.DataFrame(
        [
            {**key, "device_pool": "h200", "model": "m", "energy_per_image_j": 0.9},
            {**key, "device_pool": "h200", "model": "m", "energy_per_image_j": 1.1},
            {**key, "device_pool": "h200", "model": "n", "energy_per_image_j": 2.0},
            {**key, "device_pool": "cpu", "model": "m", "energy_per_image_j": 5.0},
        ]
    )
    spread = gpu_spread(rows)
    assert spread.iloc[0] == pytest.approx(0.2) and spread.iloc[1] == pytest.approx(0.2)
    assert spread.iloc[2:].isna().all()  # measured on one GPU: no spread
    failed = rows.assign(status=["ok", "failed", "ok", "ok"])
    assert gpu_spread(failed).isna().all()  # a failed row is no measurement


def test_the_dag_of_a_pool_measured_on_two_gpus_per_model(tmp_path):
    devices = {"h100": {**SIM_POOL["h100"], "each_model_on": 2}}
    done = snakemake(tmp_path, {**POOL_STUDY, "devices": devices}, "-n", "-p")
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^profile\s+6$", done.stdout, re.MULTILINE)  # 3 models x 2 GPUs
    assert "results/profile/h100-1/rows/resnet18.a1_in1k.parquet" in done.stdout
    assert '"device_pool": "h100"' in done.stdout and "--pool=" not in done.stdout


def test_a_pool_that_is_not_here_is_left_to_the_check():
    """No GPU here: no lease records (and no traceback); the check says what is missing."""
    torch, nvml = fake_torch([], available=False), FakeNvml([])
    pools = {"h200": {"pool": ["cuda:0", "cuda:1"]}}
    assert pool_leases(pools, torch=torch, nvml=nvml) == {}
    assert "no CUDA device is visible" in check_devices(pools, torch=torch, nvml=nvml)[0]


def test_the_devices_command_shows_a_pool():
    torch, nvml = fake_torch([H200, H200_B]), FakeNvml([H200, H200_B])
    infos, why = describe_devices(AUTO, torch=torch, nvml=nvml)
    assert [(i.label, i.device) for i in infos] == [("h200", "cuda:0"), ("h200", "cuda:1")]
    text = format_devices(infos, why)
    assert text.startswith("devices: auto picks h200 (a pool of 2: cuda:0, cuda:1)")


def test_the_idle_row_of_a_pool_names_the_gpu_it_read(tmp_path):
    from joulebench.jobs.idle import run_idle

    (records,) = pool_leases(SIM_POOL).values()
    lease, device, _ = lease_from_pool(records, "x", folder=tmp_path)
    with lease:
        row = run_idle("h100", device, tmp_path / "idle.parquet", duration_s=0.3)
    assert row["gpu_uuid"] == records[0]["uuid"]
    assert pd.read_parquet(tmp_path / "idle.parquet")["gpu_uuid"].tolist() == [row["gpu_uuid"]]


def test_a_label_that_moved_to_another_board_of_its_pool_reads_that_board():
    """After a failover the job's label names another GPU of the pool: the process's
    simulated board follows the device, not the label (the CI caught the idle row of
    sim:h100:0 naming sim:h100:1's UUID after the failover tests)."""
    from joulebench.sim.backend import wall_sim_gpu

    moved = wall_sim_gpu("sim:h100:1", "h100").board.uuid
    assert wall_sim_gpu("sim:h100:0", "h100").board.uuid != moved
    assert wall_sim_gpu("sim:h100:1", "another label").board.uuid == moved  # one board
