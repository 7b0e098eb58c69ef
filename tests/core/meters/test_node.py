"""One node, all of it: measuring slots per device, GPU pinning, the whole-node meter (GPU,
CPU packages, DRAM in one window, host energy shared by CPU time), the concurrency count and
simulated GPU devices; and the workflow measuring two simulated GPUs at once."""

from __future__ import annotations

import math
import os

import pandas as pd
import pytest
from conftest import FAST_PROTOCOL, SMOKE
from helpers.fake_gpus import A100, H200, fake_torch
from helpers.fake_nvml import ManualClock
from helpers.fake_powercap import FakePowercap

from joulebench.core.backends import kind_of, select_meter
from joulebench.core.meters.estimate import EstimateMeter
from joulebench.core.meters.node import ESTIMATE_NO_DRAM, NO_GPU, NodeMeter
from joulebench.core.protocol import BoardState, ProtocolSettings, expected_cv, measure
from joulebench.flags import FLAG_HOST_SHARED
from joulebench.jobs.concurrency import NodeMeasurements
from joulebench.schedule.devices import check_devices
from joulebench.schedule.slots import (
    measure_threads,
    measuring_resources,
    pin_to_gpu,
    pinned_uuids,
    slots_taken,
)
from joulebench.sim import simulated_gpu
from joulebench.sim.backend import sim_generation, wall_sim_gpu

NODE = {"h200-0": "cuda:0", "h200-1": "cuda:1", "cpu": "cpu"}


# ------------------------------------------------------------------ slots, threads, pinning


def test_each_gpu_takes_its_own_slot_and_the_cpu_takes_every_slot():
    assert slots_taken(NODE, "h200-0") == {"measuring_h200_0": 1}
    assert slots_taken(NODE, "h200-1") == {"measuring_h200_1": 1}
    assert slots_taken(NODE, "cpu") == {
        "measuring_h200_0": 1,
        "measuring_h200_1": 1,
        "measuring_cpu": 1,
    }
    assert len(slots_taken(NODE, None)) == 3  # a job of no device (measured accuracy)
    local = measuring_resources(NODE)
    used = {label: {slot for slot, fn in local.items() if fn({"device": label})} for label in NODE}
    assert used["h200-0"].isdisjoint(used["h200-1"])  # the two GPUs may run at once
    assert used["cpu"] >= used["h200-0"] | used["h200-1"]  # the CPU never overlaps them


def test_gpu_jobs_share_the_cores_and_the_cpu_takes_them_all():
    assert measure_threads(NODE, "cpu", 16) == 16
    assert measure_threads(NODE, "h200-0", 16) == 8
    assert measure_threads({"a": "cuda:0", "b": "cuda:1", "c": "cuda:2"}, "a", 2) == 1


def test_gpu_jobs_are_pinned_by_uuid():
    torch = fake_torch([A100, H200])
    uuids = pinned_uuids({"a100": "cuda:0", "h200": "cuda:1", "cpu": "cpu"}, torch=torch)
    assert uuids == {"a100": A100.uuid, "h200": H200.uuid}  # as CUDA_VISIBLE_DEVICES takes it
    env = {}
    assert pin_to_gpu("cuda:1", uuids["h200"], env=env) == "cuda:0"  # the only GPU it sees
    assert env["CUDA_VISIBLE_DEVICES"] == H200.uuid
    assert pin_to_gpu("cpu", None, env=env) == "cpu"


# ------------------------------------------------------------------ the whole-node meter


def _gpu_and_rapl(tmp_path, dram=True):
    rig = simulated_gpu("hopper", noise_w=0.0)
    cap = FakePowercap(tmp_path / "powercap", dram=dram)
    return rig, cap, cap.meter(clock=rig.clock)


def test_gpu_cpu_and_dram_are_read_in_one_window(tmp_path):
    rig, cap, rapl = _gpu_and_rapl(tmp_path)
    node = NodeMeter(rig.meter(sample_interval_s=None), "gpu", rapl)
    node.begin()
    rig.gpu.busy(2.0, 300.0)
    cap.add("intel-rapl:0", 80_000_000)  # 80 J of packages
    cap.add("intel-rapl:0:1", 12_000_000)  # 12 J of DRAM
    reading = node.end()
    assert reading.node_j["gpu"] == reading.energy_j
    assert reading.energy_j == pytest.approx(600.0, rel=0.03)  # 2 s at 300 W
    assert reading.node_j["cpu"] == pytest.approx(80.0)
    assert reading.node_j["dram"] == pytest.approx(12.0)
    assert FLAG_HOST_SHARED not in reading.flags
    assert node.component_reasons == {} and node.host_meter_name == "rapl"


def test_overlapping_measurements_share_the_host_by_cpu_time(tmp_path):
    rig, cap, rapl = _gpu_and_rapl(tmp_path)
    busy, own = iter([100.0, 108.0]), iter([10.0, 12.0])  # 8 CPU-s busy, 2 of them ours
    node = NodeMeter(
        rig.meter(sample_interval_s=None),
        "gpu",
        rapl,
        concurrent=lambda: 2,
        busy_s=lambda: next(busy),
        own_cpu_s=lambda: next(own),
    )
    node.begin()
    rig.gpu.busy(1.0, 300.0)
    cap.add("intel-rapl:0", 80_000_000)
    cap.add("intel-rapl:0:1", 12_000_000)
    reading = node.end()
    assert reading.end_state["host_cpu_share"] == pytest.approx(0.25)
    assert reading.node_j["cpu"] == pytest.approx(20.0)
    assert reading.node_j["dram"] == pytest.approx(3.0)
    assert FLAG_HOST_SHARED in reading.flags
    assert reading.end_state["concurrent_measurements"] == 2


def test_a_missing_part_is_nan_with_its_reason_never_zero(tmp_path):
    cap = FakePowercap(tmp_path / "powercap", dram=False)
    clock = ManualClock()
    node = NodeMeter(cap.meter(clock=clock), "cpu")
    node.begin()
    clock.advance(1.0)
    cap.add("intel-rapl:0", 30_000_000)
    reading = node.end()
    assert reading.node_j["cpu"] == pytest.approx(30.0)
    assert math.isnan(reading.node_j["gpu"]) and node.component_reasons["gpu"] == NO_GPU
    assert math.isnan(reading.node_j["dram"])
    assert "no DRAM zone" in node.component_reasons["dram"]


def test_an_estimated_host_is_labelled_and_has_no_dram():
    rig = simulated_gpu("hopper", noise_w=0.0)
    cpu_s = iter([0.0, 0.5])
    host = EstimateMeter(
        tdp_w=100.0, idle_w=10.0, n_cpus=1, clock=rig.clock, cpu_time=lambda: next(cpu_s)
    )
    node = NodeMeter(rig.meter(sample_interval_s=None), "gpu", host, host_reason="rapl: missing")
    node.begin()
    rig.gpu.busy(1.0, 300.0)
    reading = node.end()
    assert node.host_is_estimate
    assert node.component_reasons["cpu"].startswith("estimate (estimate:tdp-linear)")
    assert node.component_reasons["dram"] == ESTIMATE_NO_DRAM
    assert reading.node_j["cpu"] == pytest.approx(10.0 + 90.0 * 0.5)  # idle + share of TDP
    assert math.isnan(reading.node_j["dram"])


def test_the_protocol_gives_each_part_per_image_and_the_node_total(tmp_path):
    rig, cap, rapl = _gpu_and_rapl(tmp_path)
    node = NodeMeter(rig.meter(sample_interval_s=None), "gpu", rapl)

    def step():  # 10 ms at 300 W on the GPU, 0.2 J of packages and 0.05 J of DRAM
        rig.gpu.busy(0.01, 300.0)
        cap.add("intel-rapl:0", 200_000)
        cap.add("intel-rapl:0:1", 50_000)

    # windows of 20 refreshes (2 s), as the default preset's: smoke's 5 are too few to split
    settings = ProtocolSettings.from_dict(
        {**FAST_PROTOCOL, "min_repeat_s": 0.5, "min_window_refreshes": 20}
    )
    result = measure(
        step,
        rig.gpu.sync,
        node,
        images_per_step=2,
        settings=settings,
        board=BoardState(60.0),
        clock=rig.clock,
        sleep=rig.gpu.sleep,
    )
    s = result.summary
    assert s["energy_gpu_per_image_j"] == s["energy_per_image_j"]
    assert s["energy_cpu_per_image_j"] == pytest.approx(0.1, rel=0.1)
    assert s["energy_dram_per_image_j"] == pytest.approx(0.025, rel=0.1)
    parts = s["energy_gpu_per_image_j"] + s["energy_cpu_per_image_j"]
    assert s["energy_node_per_image_j"] == pytest.approx(parts + s["energy_dram_per_image_j"])
    assert s["gpu_reason"] == s["node_reason"] == ""
    assert s["host_meter"] == "rapl" and s["host_is_estimate"] is False


# ------------------------------------------------------------------ concurrency, sim devices


def test_the_node_count_ignores_markers_of_dead_jobs(tmp_path):
    host = os.uname().nodename
    (tmp_path / f"{host}-999999999-gone").write_text("")  # a killed job's marker
    (tmp_path / f"otherhost-{os.getppid()}-g1").write_text("")  # another node's
    with NodeMeasurements("g0", tmp_path) as me:
        assert me.count() == 1
        (tmp_path / f"{host}-{os.getppid()}-g1").write_text("")  # a live neighbour
        assert me.count() == 2
    assert not me.path.exists()


def test_simulated_gpus_are_named_checked_and_metered_by_nvml():
    assert kind_of("sim:h100").simulated and not kind_of("cuda:0").simulated
    assert sim_generation("sim:h100") == "hopper" and sim_generation("sim:a100") == "a100"
    assert check_devices({"g0": "sim:h100"}) == []
    assert "unknown simulated GPU" in check_devices({"g0": "sim:x9"})[0]
    meter, reasons = select_meter("sim:h100", label="test-g0")
    with meter:
        assert meter.name == "nvml:sim" and reasons == []
        assert meter.describe()["uuid"] == wall_sim_gpu("sim:h100", "test-g0").board.uuid
        assert meter.describe()["matched_by"] == "uuid"


def test_a_simulated_gpu_draws_busy_power_while_steps_run():
    import time

    board = wall_sim_gpu("sim:a100", "test-busy")
    meter = board.meter(sample_interval_s=None)

    def work():
        end = time.perf_counter() + 0.01
        while time.perf_counter() < end:
            pass

    # windows of 20 refreshes (2 s, as the bound below says), as the default preset's
    settings = ProtocolSettings.from_dict(
        {**FAST_PROTOCOL, "min_repeat_s": 0.6, "min_window_refreshes": 20}
    )
    with meter:
        result = measure(
            board.run(work),
            lambda: None,
            meter,
            images_per_step=1,
            settings=settings,
            board=BoardState(board.idle_w),  # as the workflow passes its idle baseline
        )
    # A step holds the board at 300 W for at least 10 ms (longer when the host preempts the
    # spin), the gaps between steps draw 60 W: per image at least ~3 J, and the mean power
    # over a window (energy per image x images per second) between the two levels, near the
    # busy one (the phase shifts' idle time is out of both, with their idle energy). The
    # board heats as it works and leaks more (sim.thermal): the busy level is 300 W times
    # the leakage at the hottest the die got, the end, since it only warmed. Above that
    # only by what the A100's sensor leaves in a window (4 x its expected CV over 2 s
    # windows: 3.7 %). Bounds in measured time, so a loaded host cannot fail them.
    energy_j = result.summary["energy_per_image_j"]
    power_w = energy_j * result.summary["throughput_img_s"]
    hottest_busy_w = 300 * board.gpu.thermal.leakage_factor(board.gpu.temperature_c())
    sensor_rel = 4 * expected_cv(0.100, 2.0, edges=True)
    assert energy_j > 0.85 * 300 * 0.010
    assert 150 < power_w <= hottest_busy_w * (1 + sensor_rel), (power_w, hottest_busy_w)


# ------------------------------------------------------------------ the workflow


SIM_STUDY = {
    "models": ["resnet18.a1_in1k", "mobilenetv3_small_100.lamb_in1k"],
    "catalog": {"models_per_job": 2},
    "devices": {"g0": "sim:h100", "g1": "sim:h100"},
    "methods": {"fp32": {"precision": "fp32"}},
    "batch_sizes": [1],
    "protocol": {**SMOKE, "min_repeat_s": 1.0},
    "profile": {"idle_pre_s": 0.1, "quiet_wait_s": 0},
    "idle": {"duration_s": 0.5},
}


def _intervals(rows: pd.DataFrame) -> pd.DataFrame:
    """Each job's (device, model) span, from its own rows' start and end timestamps."""
    rows = rows.assign(
        start=pd.to_datetime(rows["start_time_utc"]), end=pd.to_datetime(rows["end_time_utc"])
    )
    return rows.groupby(["device_label", "model"]).agg(start=("start", "min"), end=("end", "max"))


@pytest.mark.slow
def test_two_simulated_gpus_measure_at_once_and_each_one_job_at_a_time(run_workflow):
    # this run's own markers: other measurements on this host (other runs) do not count
    env = {"JOULEBENCH_RUNNING_DIR": str(run_workflow.workdir / "running")}
    done = run_workflow(SIM_STUDY, "results/profile.parquet", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = pd.read_parquet(run_workflow.workdir / "results" / "profile.parquet")
    assert len(rows) == 4 and (rows["status"] == "ok").all()
    assert rows["is_simulated"].all() and (rows["meter"] == "nvml:sim").all()
    assert rows["flags"].str.contains("simulated").all()
    assert rows["device_name"].str.endswith("(simulated)").all()
    assert rows["threads"].eq(1).all()  # 2 cores shared by 2 GPUs
    spans = _intervals(rows)
    # each device: its jobs one after the other
    for _, jobs in spans.groupby(level="device_label"):
        jobs = jobs.sort_values("start")
        assert (jobs["start"].iloc[1:].to_numpy() >= jobs["end"].iloc[:-1].to_numpy()).all()
    # the two devices: some jobs ran at the same time
    g0, g1 = spans.loc["g0"], spans.loc["g1"]
    overlaps = [
        min(a.end, b.end) > max(a.start, b.start) for a in g0.itertuples() for b in g1.itertuples()
    ]
    assert any(overlaps), spans
    assert rows["concurrent_measurements"].max() == 2  # the rows say so
    # the GPU part is the row's energy; the host's CPU part is read beside it (estimate here)
    assert (rows["energy_gpu_per_image_j"] == rows["energy_per_image_j"]).all()
    assert (rows["energy_cpu_per_image_j"] > 0).all()
    assert (rows["energy_node_per_image_j"] > rows["energy_per_image_j"]).all()


@pytest.mark.slow
def test_an_ad_hoc_profile_on_a_gpu_takes_its_idle_read_as_the_baseline(tmp_path, monkeypatch):
    """`joulebench profile` has no idle job: its 2 s read before the model is the baseline,
    so the phase shifts' idle time (about 10 % of an NVML window, smoke's short ones too)
    adds no idle energy to the images' (docs/protocol.md) and dynamic energy is given."""
    from joulebench.jobs.adhoc import profile_now

    monkeypatch.chdir(tmp_path)
    rows = profile_now(
        "mobilenetv3_small_100",
        device="sim:a100",
        protocol={"preset": "smoke", "repeats": 1, "min_repeat_s": 0.05},
    )
    row = rows.iloc[0]
    assert row["status"] == "ok", row["reason"]
    assert row["idle_power_w"] == row["idle_power_pre_w"]
    # the simulated board idles at 60 W, up to 13 % more where a test before heated it
    assert 50 < row["idle_power_w"] < 80
    assert 0 < row["dynamic_energy_per_image_j"] < row["energy_per_image_j"]
