"""A kind of device added in one file: this module is a backend (an "NPU" read through an
NVML-like library, its model run on the CPU) and the tests that joulebench then finds it,
names it, meters it, checks it before a run and profiles on it, with no other file changed
(docs/devices.md). In process it is registered with `register`; a command in a subprocess
loads it by module name (JOULEBENCH_BACKENDS), as the built-in kinds are loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.fake_nvml import FakeGpu, FakeNvml

from joulebench.core.backends import (
    Backend,
    BoundDevice,
    DeviceError,
    DeviceIdentity,
    DeviceInfo,
    backend_for,
    bound_device,
    device_pattern,
    kind_of,
    register,
    spellings,
    unregister,
)
from joulebench.core.meters import NvmlMeter

HERE = Path(__file__).parent  # this module, loaded by name in a subprocess
TESTS = HERE.parents[1]
UUID = "GPU-0e0e0e0e-1111-4222-8333-444455556666"
NAME = "Example NPU 1"
POWER_W = 200.0
NVML = FakeNvml([FakeGpu(uuid=UUID, name=NAME, power_w=lambda t: POWER_W)])


class NpuDevice(BoundDevice):
    """One NPU, bound: its meter, read through NVML's API; its model runs on the CPU."""

    def name(self):
        return NAME

    def build_meter(self, prefer, **options):
        interval = options.get("sample_interval_s", 0.015)
        meter = NvmlMeter(
            0, nvml=NVML, uuid=UUID, sample_interval_s=interval, has_cuda_context=lambda: True
        )
        return meter, []

    @property
    def compute(self):
        return bound_device("cpu", self.label)


class NpuBackend(Backend):
    """Devices `npu`, `npu:N`: one board, read through NVML's API, the model on the CPU."""

    kind = "npu"
    pattern = r"npu(:[0-9]+)?"
    spellings = ("npu", "npu:N")
    meters = ("nvml",)
    device_class = NpuDevice

    def discover(self, libs):
        return [DeviceIdentity("npu:0", NAME, uuid=UUID)], ""

    def describe(self, label, device, libs, meter_options=None):
        info = DeviceInfo(label, device, name=NAME)
        meter, _ = self.bind(device, label, libs).meter()
        with meter:
            info.meter = meter.name
        return info


BACKEND = NpuBackend()  # what the registry takes from a module it loads by name


@pytest.fixture
def npu():
    register(BACKEND)
    yield BACKEND
    unregister(BACKEND)


def test_the_registry_serves_the_new_kind(npu):
    assert backend_for("npu:1") is npu and kind_of("npu") is npu
    assert "npu(:[0-9]+)?" in device_pattern() and "npu:N" in spellings()
    assert not npu.is_host and not npu.simulated
    with pytest.raises(DeviceError, match="use cpu, cuda, cuda:N, sim:<gpu>, npu or npu:N"):
        backend_for("npu:x")


def test_a_device_is_bound_once_and_asked_without_its_string(npu):
    device = bound_device("npu:1", "npu-a")
    assert device.backend is npu and str(device) == "npu:1" and device.label == "npu-a"
    assert isinstance(device, NpuDevice)
    assert device.name() == NAME and device.knob_control() is None and not device.is_host
    assert device.compute == bound_device("cpu", "npu-a")  # its model runs on the CPU
    cpu = bound_device("cpu")
    assert cpu.compute is cpu and cpu.is_host and cpu.torch_type == "cpu"
    with pytest.raises(DeviceError, match="'npu:x' is not a device joulebench measures"):
        bound_device("npu:x")


def test_without_it_the_kind_is_unknown():
    with pytest.raises(DeviceError, match="'npu:0' is not a device joulebench measures"):
        backend_for("npu:0")


def test_devices_and_slots_treat_it_as_a_device_of_its_own(npu):
    from joulebench.schedule.devices import check_devices, describe_devices
    from joulebench.schedule.slots import measure_threads, pinned_uuids, slots_taken

    (info,), _ = describe_devices({"n0": "npu:0"})
    assert (info.name, info.meter, info.problems) == (NAME, "nvml", [])
    node = {"n0": "npu:0", "cpu": "cpu"}
    assert check_devices(node) == []
    assert slots_taken(node, "n0") == {"measuring_n0": 1} and len(slots_taken(node, "cpu")) == 2
    assert measure_threads(node, "n0", 8) == 8 and pinned_uuids(node) == {}


@pytest.mark.slow
def test_a_profile_on_the_new_kind_reads_its_meter(npu):
    from conftest import FAST_PROTOCOL

    from joulebench.core.methods import parse_methods
    from joulebench.core.protocol import ProtocolSettings
    from joulebench.jobs.job_spec import JobSpec
    from joulebench.jobs.profile import ProfileJob, run_profile

    job = ProfileJob(
        model="tiny_net",
        device_label="n0",
        spec=JobSpec(
            torch_device="npu:0",
            methods=list(parse_methods({"fp32": {"precision": "fp32"}}).values()),
            batch_sizes=[2],
            settings=ProtocolSettings(**FAST_PROTOCOL),
            idle_pre_s=0.05,
            quiet_wait_s=0,
            workload=str(TESTS / "workloads" / "tiny_net.py") + ":build",
        ),
        check_dir=str(TESTS / "no-checks-here"),
    )
    (row,) = run_profile(job, log=lambda line: None).rows.to_dict("records")
    assert row["status"] == "ok" and row["meter"] == "nvml"
    assert row["device_name"] == NAME and row["is_simulated"] is False
    assert row["power_mean_w"] == pytest.approx(POWER_W, rel=0.05)  # the board's constant draw
    assert row["energy_gpu_per_image_j"] == row["energy_per_image_j"]  # it is the node's "gpu"


@pytest.mark.slow
def test_a_command_loads_the_kind_by_module_name(tmp_path):
    env = {
        **os.environ,
        "JOULEBENCH_BACKENDS": "test_device_kinds",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    workload = str(TESTS / "workloads" / "tiny_net.py") + ":build"
    argv = ["profile", workload, "--device", "npu:0", "--preset", "smoke"]
    done = subprocess.run(
        [sys.executable, "-m", "joulebench", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert " ok " in done.stdout and "nvml" in done.stdout
