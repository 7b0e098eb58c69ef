"""Meters: NVML against a faithful fake of pynvml, RAPL against a fake powercap tree, the
estimate against its own power model, and the selector's choices and reasons.

Time is a ManualClock wherever a number is compared, so no assertion depends on how fast this
machine runs; only the sampler-thread tests use real time, and they wait for events, not for
durations.
"""

from __future__ import annotations

import math
import os
import threading
import time

import pytest
from helpers.fake_nvml import FakeGpu, FakeNvml, ManualClock, integrate
from helpers.fake_powercap import FakePowercap

from joulebench.core.backends import select_meter
from joulebench.core.meters import (
    TRACE_COLUMNS,
    EstimateMeter,
    MeterUnavailable,
    NvmlMeter,
    RaplMeter,
)
from joulebench.core.meters.estimate import DEFAULT_W_PER_CPU, available_cpus, lookup_tdp
from joulebench.core.meters.nvml import (
    match_nvml_index,
    normalize_pci_bus_id,
    normalize_uuid,
    other_pids,
)
from joulebench.core.meters.rapl import wrapped_delta_uj
from joulebench.core.meters.sampler import trapezoid_energy_j

UUIDS = [
    "GPU-11111111-aaaa-4bbb-8ccc-000000000000",
    "GPU-22222222-aaaa-4bbb-8ccc-000000000000",
    "GPU-33333333-aaaa-4bbb-8ccc-000000000000",
]
BUS_IDS = ["00000000:18:00.0", "00000000:3B:00.0", "00000000:86:00.0"]


def wavy_power(t: float) -> float:
    """A power that changes on the scale of the sampler, so the trace has work to do."""
    return 300.0 + 80.0 * math.sin(2 * math.pi * t / 0.7) + 20.0 * math.cos(2 * math.pi * t / 3.1)


def make_nvml(clock, **gpu_kw) -> FakeNvml:
    return FakeNvml([FakeGpu(uuid=UUIDS[1], pci_bus_id=BUS_IDS[1], **gpu_kw)], clock=clock)


def meter_for(nvml, uuid=UUIDS[1], **kw) -> NvmlMeter:
    return NvmlMeter(0, nvml=nvml, uuid=uuid, sample_interval_s=None, clock=nvml.clock, **kw)


def run_window(meter, clock, duration_s: float, steps: int):
    """begin, `steps` manual samples over `duration_s` of fake time, end."""
    meter.begin()
    for _ in range(steps):
        clock.advance(duration_s / steps)
        meter.sampler.sample()
    return meter.end()


def sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("joulebench-sampler")]


# ---------------------------------------------------------------- NVML: UUID / PCI mapping


def test_normalize_uuid_strips_nvml_prefixes_and_case():
    assert normalize_uuid("GPU-2B0F5A3E-7c1d") == "2b0f5a3e-7c1d"
    assert normalize_uuid("2b0f5a3e-7c1d") == "2b0f5a3e-7c1d"
    assert normalize_uuid(b"GPU-2b0f5a3e-7c1d") == "2b0f5a3e-7c1d"
    assert normalize_uuid("MIG-GPU-2b0f/1/0") == "2b0f/1/0"
    assert normalize_uuid(None) is None


def test_normalize_pci_bus_id_accepts_nvml_and_cuda_forms():
    assert normalize_pci_bus_id("00000000:3B:00.0") == normalize_pci_bus_id("0000:3b:00.0")
    assert normalize_pci_bus_id(b"00000000:3B:00.0") == (0, 0x3B, 0, 0)
    assert normalize_pci_bus_id("not a bus id") is None


def test_match_by_uuid_not_by_index():
    devices = list(zip(UUIDS, BUS_IDS, strict=True))
    # torch reports the UUID without 'GPU-'; CUDA device 0 is NVML device 2
    assert match_nvml_index(UUIDS[2][4:], None, devices) == (2, "uuid")
    assert match_nvml_index(None, "0000:18:00.0", devices) == (0, "pci-bus-id")
    # UUID wins over a bus id that points elsewhere
    assert match_nvml_index(UUIDS[1], "0000:18:00.0", devices) == (1, "uuid")
    with pytest.raises(LookupError):
        match_nvml_index("GPU-99999999", "0000:99:00.0", devices)


def test_permuted_cuda_visible_devices_reads_the_right_gpu():
    """CUDA_VISIBLE_DEVICES=2,0,1: CUDA device 0 is NVML device 2, and its energy is read."""
    clock = ManualClock()
    gpus = [
        FakeGpu(uuid=u, pci_bus_id=b, power_w=lambda t, w=w: w)
        for u, b, w in zip(UUIDS, BUS_IDS, (100.0, 200.0, 300.0), strict=True)
    ]
    nvml = FakeNvml(gpus, clock=clock)
    with NvmlMeter(0, nvml=nvml, uuid=UUIDS[2][4:], sample_interval_s=None, clock=clock) as meter:
        reading = run_window(meter, clock, 5.0, 10)
        info = meter.describe()
    assert info["uuid"] == UUIDS[2] and info["nvml_index"] == 2 and info["cuda_index"] == 0
    assert info["matched_by"] == "uuid"
    assert reading.energy_j == pytest.approx(300.0 * 5.0, abs=0.002)


def test_unknown_cuda_device_is_refused():
    nvml = make_nvml(ManualClock())
    with pytest.raises(MeterUnavailable) as err:
        meter_for(nvml, uuid="GPU-deadbeef", pci_bus_id="0000:99:00.0")
    assert err.value.reason == "no-device"
    assert nvml.refcount == 0  # nvmlInit was undone


# ---------------------------------------------------------------- NVML: energy


def test_counter_energy_is_power_times_duration():
    clock = ManualClock()
    with meter_for(make_nvml(clock, power_w=lambda t: 250.0)) as meter:
        assert meter.name == "nvml" and not meter.is_estimate
        clock.advance(3.0)  # energy before the window must not count
        meter.begin()
        clock.advance(5.0)
        reading = meter.end()
    assert reading.duration_s == pytest.approx(5.0)
    assert reading.energy_j == pytest.approx(250.0 * 5.0, abs=0.002)  # counter is whole mJ


def test_counter_and_trace_agree():
    clock = ManualClock()
    with meter_for(make_nvml(clock, power_w=wavy_power)) as meter:
        start = clock()
        reading = run_window(meter, clock, 6.0, 600)  # 10 ms samples
    exact_j = integrate(wavy_power, start, start + 6.0)
    assert reading.energy_j == pytest.approx(exact_j, abs=0.002)
    assert reading.energy_trace_j == pytest.approx(reading.energy_j, rel=1e-3)
    trace = reading.trace
    assert list(trace.columns) == TRACE_COLUMNS
    assert len(trace) == 602  # begin + 600 + end
    assert trace["t_s"].iloc[0] == 0.0 and trace["t_s"].iloc[-1] == pytest.approx(6.0)
    assert trace["power_avg_w"].notna().all()
    assert (trace["sm_clock_mhz"] == 1980).all() and (trace["temperature_c"] == 41).all()
    assert reading.start_state == {
        "temperature_c": 41.0,
        "sm_clock_mhz": 1980.0,
        "mem_clock_mhz": 3201.0,
        "power_w": pytest.approx(wavy_power(start), abs=0.001),
    }
    assert reading.flags == []


def test_without_energy_counter_power_is_integrated():
    clock = ManualClock()
    nvml = make_nvml(clock, power_w=wavy_power, energy_counter=False)
    with meter_for(nvml) as meter:
        assert meter.name == "nvml:power-integration"
        assert meter.describe()["energy_counter"] is False
        start = clock()
        reading = run_window(meter, clock, 6.0, 600)
    assert reading.energy_j == reading.energy_trace_j
    assert reading.energy_j == pytest.approx(integrate(wavy_power, start, start + 6.0), rel=1e-3)


def test_unsupported_sensors_give_nan_not_a_crash():
    clock = ManualClock()
    nvml = make_nvml(clock, power_fields=False, sensors=False)
    with meter_for(nvml) as meter:
        assert meter.describe()["power_source"] == "nvmlDeviceGetPowerUsage"
        reading = run_window(meter, clock, 5.0, 5)
    trace = reading.trace
    assert trace["power_w"].eq(250.0).all()
    for column in ("power_avg_w", "sm_clock_mhz", "mem_clock_mhz", "temperature_c"):
        assert trace[column].isna().all(), column
    assert math.isnan(reading.end_state["temperature_c"])
    # NotSupported is remembered: the clock is not asked again on every sample
    assert nvml.calls["nvmlDeviceGetClockInfo"] == 2


def test_instant_power_field_is_preferred():
    clock = ManualClock()
    with meter_for(make_nvml(clock)) as meter:
        assert meter.describe()["power_source"] == "field:NVML_FI_DEV_POWER_INSTANT"
        run_window(meter, clock, 1.0, 2)
    assert "nvmlDeviceGetPowerUsage" not in meter.nvml.calls


# ---------------------------------------------------------------- NVML: flags, describe, close


def test_other_compute_process_is_flagged():
    clock = ManualClock()
    with meter_for(make_nvml(clock, processes=[os.getpid(), 4242])) as meter:
        reading = run_window(meter, clock, 1.0, 1)
        assert meter.other_pids == [4242]
    assert "other-process" in reading.flags
    with meter_for(make_nvml(clock, processes=[os.getpid()])) as meter:
        assert run_window(meter, clock, 1.0, 1).flags == []


def test_other_pids_in_a_container_pid_namespace():
    # host namespace: our pid is listed
    assert other_pids({10, 11}, own_pid=10, own_context=True) == [11]
    # container: NVML lists host pids, ours among them under another number
    assert other_pids({5001}, own_pid=7, own_context=True) == []
    assert other_pids({5001, 5002}, own_pid=7, own_context=True) == [5001, 5002]
    # no context of ours (e.g. idle power before the model is loaded): every pid is another's
    assert other_pids({5001}, own_pid=7, own_context=False) == [5001]
    clock = ManualClock()
    nvml = make_nvml(clock, processes=[5001])
    with meter_for(nvml, has_cuda_context=lambda: True) as meter:
        assert run_window(meter, clock, 1.0, 1).flags == []
    with meter_for(nvml, has_cuda_context=lambda: False) as meter:
        assert run_window(meter, clock, 1.0, 1).flags == ["other-process"]


def test_unreadable_process_list_is_flagged():
    clock = ManualClock()
    with meter_for(make_nvml(clock, processes=None)) as meter:
        assert run_window(meter, clock, 1.0, 1).flags == ["process-check-failed"]


def test_mig_mode_is_flagged():
    clock = ManualClock()
    with meter_for(make_nvml(clock, mig_mode=1)) as meter:
        assert run_window(meter, clock, 1.0, 1).flags == ["mig"]
    with meter_for(make_nvml(clock, mig_mode=None)) as meter:  # not MIG-capable
        assert run_window(meter, clock, 1.0, 1).flags == []


def test_describe_has_the_provenance():
    with meter_for(make_nvml(ManualClock())) as meter:
        info = meter.describe()
    assert info["meter"] == "nvml"
    assert info["device_name"] == "NVIDIA H200"
    assert info["driver_version"] == "570.124.06"
    assert info["nvml_version"].startswith("12.")
    assert info["uuid"] == UUIDS[1] and info["pci_bus_id"] == BUS_IDS[1]
    assert info["power_limit_w"] == 700.0
    assert info["energy_counter"] is True


def test_close_shuts_nvml_down_once():
    nvml = make_nvml(ManualClock())
    meter = meter_for(nvml)
    assert nvml.refcount == 1
    meter.close()
    meter.close()
    assert nvml.refcount == 0
    with pytest.raises(RuntimeError):
        meter.begin()


def test_missing_driver_is_unavailable():
    with pytest.raises(MeterUnavailable) as err:
        NvmlMeter(0, nvml=FakeNvml([], driver_loaded=False), uuid=UUIDS[0])
    assert err.value.reason == "no-driver"


def wait_for(condition, timeout_s: float = 20.0) -> bool:
    """Poll until condition() holds; the timeout only guards against a hang."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_sampler_thread_samples_and_stops_on_close():
    nvml = FakeNvml([FakeGpu(uuid=UUIDS[0])])  # real clock
    meter = NvmlMeter(0, nvml=nvml, uuid=UUIDS[0], sample_interval_s=0.005)
    meter.begin()
    assert len(sampler_threads()) == 1
    assert wait_for(lambda: len(meter.sampler._rows) >= 4)
    meter.close()  # without end(): close alone must stop the thread
    assert sampler_threads() == []
    assert nvml.refcount == 0


def test_sampler_thread_stops_at_end_of_window():
    nvml = FakeNvml([FakeGpu(uuid=UUIDS[0])])
    with NvmlMeter(0, nvml=nvml, uuid=UUIDS[0], sample_interval_s=0.005) as meter:
        meter.begin()
        assert wait_for(lambda: len(meter.sampler._rows) >= 4)
        reading = meter.end()
        assert sampler_threads() == []
    assert len(reading.trace) >= 5
    assert reading.trace["t_s"].is_monotonic_increasing


# ---------------------------------------------------------------- RAPL: a fake powercap tree


def test_wrapped_delta():
    assert wrapped_delta_uj(100, 350, 1000) == 250
    assert wrapped_delta_uj(900, 150, 1000) == 250


def test_rapl_package_energy_with_dram_separate(tmp_path):
    cap = FakePowercap(tmp_path)
    clock = ManualClock()
    with cap.meter(clock) as meter:
        assert meter.name == "rapl" and not meter.is_estimate
        meter.begin()
        cap.add("intel-rapl:0", 40_000_000)  # 40 J package
        cap.add("intel-rapl:0:0", 25_000_000)  # 25 J cores (inside the package)
        cap.add("intel-rapl:0:1", 6_000_000)  # 6 J DRAM
        cap.add("intel-rapl-mmio:0", 40_000_000)
        clock.advance(2.0)
        reading = meter.end()
        assert "intel-rapl-mmio" not in meter.describe()["zones"]
    assert reading.energy_j == pytest.approx(40.0)
    assert reading.components == {"package-0": 40.0, "core-0": 25.0, "dram-0": 6.0}
    assert reading.duration_s == pytest.approx(2.0)
    assert list(reading.trace.columns) == TRACE_COLUMNS
    assert reading.trace["power_w"].iloc[-1] == pytest.approx(20.0)


def test_rapl_counter_wraparound(tmp_path):
    cap = FakePowercap(tmp_path, max_uj=262_143_328_850)
    cap.set("intel-rapl:0", 262_143_000_000)  # close to the top
    with cap.meter() as meter:
        meter.begin()
        cap.add("intel-rapl:0", 5_000_000)  # wraps: the end value is below the begin value
        end_value = int((tmp_path / "intel-rapl:0" / "energy_uj").read_text())
        assert end_value < 262_143_000_000
        reading = meter.end()
    assert reading.energy_j == pytest.approx(5.0)


def test_rapl_sampler_polls_catch_more_than_one_wrap(tmp_path):
    """Begin/end alone would see one wrap at most; a poll per wrap keeps the total right."""
    cap = FakePowercap(tmp_path, max_uj=10_000_000, dram=False)
    clock = ManualClock()
    with cap.meter(clock) as meter:
        meter.begin()
        for _ in range(5):
            cap.add("intel-rapl:0", 7_000_000)  # 35 J in total: three wraps of the 10 J counter
            clock.advance(0.1)
            meter.sampler.sample()
        reading = meter.end()
    assert reading.energy_j == pytest.approx(35.0)
    assert reading.trace["power_w"].iloc[1:-1].tolist() == pytest.approx([70.0] * 5)


def test_rapl_two_packages_are_summed(tmp_path):
    cap = FakePowercap(tmp_path, packages=2)
    with cap.meter() as meter:
        meter.begin()
        cap.add("intel-rapl:0", 30_000_000)
        cap.add("intel-rapl:1", 33_000_000)
        cap.add("intel-rapl:1:1", 4_000_000)
        reading = meter.end()
    assert reading.energy_j == pytest.approx(63.0)
    assert reading.components["package-1"] == pytest.approx(33.0)
    assert reading.components["dram-1"] == pytest.approx(4.0)
    assert reading.components["dram-0"] == 0.0


def test_rapl_permission_denied_says_how_to_fix(tmp_path):
    cap = FakePowercap(tmp_path)
    cap.denied = {"intel-rapl:0"}
    with pytest.raises(MeterUnavailable) as err:
        cap.meter()
    assert err.value.reason == "permission-denied"
    assert "chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj" in str(err.value)


def test_rapl_unreadable_counter_is_unavailable_not_a_crash(tmp_path):
    cap = FakePowercap(tmp_path)

    def read(path):
        if path.name == "energy_uj":
            raise OSError(61, "No data available", str(path))
        return path.read_text()

    with pytest.raises(MeterUnavailable) as err:
        RaplMeter(root=cap.root, read=read)
    assert err.value.reason == "unreadable"


def test_rapl_missing_or_without_packages(tmp_path):
    with pytest.raises(MeterUnavailable) as err:
        RaplMeter(root=tmp_path / "nowhere")
    assert err.value.reason == "missing"
    (tmp_path / "empty").mkdir()
    with pytest.raises(MeterUnavailable) as err:
        RaplMeter(root=tmp_path / "empty")
    assert err.value.reason == "no-zones"


def test_rapl_sampler_thread_stops_on_close(tmp_path):
    cap = FakePowercap(tmp_path)
    meter = RaplMeter(root=cap.root, read=cap.read, sample_interval_s=0.005)
    meter.begin()
    assert wait_for(lambda: len(meter.sampler._rows) >= 3)
    meter.close()
    assert sampler_threads() == []


# ---------------------------------------------------------------- the estimate


class FakeCpuTime:
    def __init__(self):
        self.s = 0.0

    def __call__(self) -> float:
        return self.s


def test_estimate_follows_its_power_model():
    clock, cpu = ManualClock(), FakeCpuTime()
    meter = EstimateMeter(tdp_w=100.0, idle_w=10.0, n_cpus=2, clock=clock, cpu_time=cpu)
    assert meter.name.startswith("estimate:") and meter.is_estimate
    meter.begin()
    clock.advance(2.0)
    cpu.s += 3.0  # 3 CPU-seconds in 2 s on 2 CPUs: 75 % utilisation
    reading = meter.end()
    assert reading.energy_j == pytest.approx((10.0 + 90.0 * 0.75) * 2.0)
    assert reading.end_state["utilization_pct"] == pytest.approx(75.0)
    assert "estimate" in reading.flags
    # idle: only the floor
    meter.begin()
    clock.advance(4.0)
    assert meter.end().energy_j == pytest.approx(10.0 * 4.0)


def test_estimate_with_real_cpu_burn():
    """Burn ~0.3 s of CPU: energy = idle * t + (tdp - idle) * cpu_time / n_cpus."""
    meter = EstimateMeter(tdp_w=100.0, idle_w=10.0, n_cpus=2)
    cpu0 = time.process_time()
    meter.begin()
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        sum(i * i for i in range(1000))
    reading = meter.end()
    cpu_s = time.process_time() - cpu0  # brackets the meter's own window
    expected_j = 10.0 * reading.duration_s + 90.0 * cpu_s / 2
    assert reading.energy_j == pytest.approx(expected_j, rel=0.05)
    assert 10.0 * reading.duration_s < reading.energy_j <= 100.0 * reading.duration_s


def test_estimate_tdp_sources():
    epyc = EstimateMeter(cpu_model="AMD EPYC 7763 64-Core Processor", n_cpus=16)
    assert epyc.tdp_w == pytest.approx(280.0 * 16 / 128)
    assert epyc.tdp_source.startswith("table:AMD EPYC 7763")
    assert epyc.idle_w == pytest.approx(0.1 * epyc.tdp_w)
    unknown = EstimateMeter(cpu_model="Some CPU", n_cpus=3)
    assert unknown.tdp_w == DEFAULT_W_PER_CPU * 3 and unknown.tdp_source.startswith("default")
    forced = EstimateMeter(cpu_model="AMD EPYC 7763", n_cpus=3, tdp_w=50.0)
    assert forced.tdp_source == "config"
    info = forced.describe()
    assert {"cpu_model", "tdp_w", "idle_w", "tdp_source"} <= set(info)
    # the longest key wins: 6248R is not a 6248
    assert lookup_tdp("Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz")[1] == 205.0
    with pytest.raises(ValueError):
        EstimateMeter(tdp_w=10.0, idle_w=20.0, n_cpus=1)


def test_available_cpus_respects_cgroup_quota(tmp_path):
    cpu_max = tmp_path / "cpu.max"
    cpu_max.write_text("150000 100000\n")
    assert available_cpus(cpu_max) == min(len(os.sched_getaffinity(0)), 2)
    cpu_max.write_text("max 100000\n")
    assert available_cpus(cpu_max) == len(os.sched_getaffinity(0))


# ---------------------------------------------------------------- the selector


def test_cpu_uses_rapl_when_readable(tmp_path):
    cap = FakePowercap(tmp_path)
    meter, reasons = select_meter("cpu", root=cap.root, read=cap.read, sample_interval_s=None)
    assert isinstance(meter, RaplMeter) and reasons == []


def test_cpu_falls_back_to_estimate_with_the_reason(tmp_path):
    meter, reasons = select_meter("cpu", root=tmp_path / "nowhere", tdp_w=50.0)
    assert isinstance(meter, EstimateMeter) and meter.tdp_w == 50.0
    assert len(reasons) == 1 and reasons[0].startswith("rapl: missing")

    cap = FakePowercap(tmp_path / "cap")
    cap.denied = {"intel-rapl:0"}
    meter, reasons = select_meter("cpu", root=cap.root, read=cap.read)
    assert isinstance(meter, EstimateMeter)
    assert "permission-denied" in reasons[0] and "chmod" in reasons[0]


def test_prefer_forces_a_meter_and_never_falls_back(tmp_path):
    cap = FakePowercap(tmp_path)
    meter, reasons = select_meter("cpu", prefer="estimate", root=cap.root, read=cap.read)
    assert isinstance(meter, EstimateMeter) and "prefer='estimate'" in reasons[0]
    with pytest.raises(MeterUnavailable):
        select_meter("cpu", prefer="rapl", root=tmp_path / "nowhere")


def test_cuda_uses_nvml_and_never_an_estimate():
    nvml = FakeNvml([FakeGpu(uuid=u, pci_bus_id=b) for u, b in zip(UUIDS, BUS_IDS, strict=True)])
    meter, reasons = select_meter("cuda:1", nvml=nvml, uuid=UUIDS[2], sample_interval_s=None)
    with meter:
        assert isinstance(meter, NvmlMeter) and meter.cuda_index == 1 and meter.nvml_index == 2
    assert reasons == []
    with pytest.raises(MeterUnavailable):
        select_meter("cuda", nvml=FakeNvml([], driver_loaded=False), uuid=UUIDS[0])
    with pytest.raises(ValueError):
        select_meter("cuda", prefer="estimate")


def test_selector_rejects_unknown_devices_and_options():
    with pytest.raises(ValueError):
        select_meter("mps")
    with pytest.raises(TypeError):
        select_meter("cpu", tdpw=10.0)


def test_trapezoid_skips_nan_and_needs_two_points():
    assert trapezoid_energy_j([0, 1, 2], [10, math.nan, 10]) == pytest.approx(20.0)
    assert math.isnan(trapezoid_energy_j([0], [10]))
