"""The AMD SMI meter against a faithful fake of the amdsmi package (tests/fake_amdsmi, modelled
on amdsmi of ROCm 6.2-6.4), its selection for ROCm builds of torch, and `devices: auto` and
`joulebench devices` finding AMD GPUs. Not yet run on AMD hardware (docs/measurement.md)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.fake_nvml import ManualClock

from joulebench.check.environment import environment_rows
from joulebench.check.report import FAIL, PASS, SKIP, WARN
from joulebench.core.backends import Libraries, backend_for, bound_device, select_meter
from joulebench.core.meters import MeterUnavailable
from joulebench.core.meters.amdsmi import AmdSmiMeter, energy_uj, load_amdsmi
from joulebench.schedule.devices import auto_devices, describe_devices

FAKE_DIR = Path(__file__).parents[2] / "fake_amdsmi"


def _load_fake():
    """The fake, under its own name: `import amdsmi` elsewhere in the session finds nothing."""
    spec = importlib.util.spec_from_file_location(
        "fake_amdsmi", FAKE_DIR / "amdsmi" / "__init__.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["fake_amdsmi"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


amdsmi = _load_fake()

MI300X = dict(uuid="6aff74a1-0000-1000-8000-c1a2b3c4d5e6", bdf="0000:c1:00.0")
OTHER = dict(uuid="6aff74a1-0000-1000-8000-c1a2b3c4d5e7", bdf="0000:e1:00.0")


@pytest.fixture
def gpus():
    amdsmi.FAKE.gpus = [amdsmi.FakeAmdGpu(**OTHER), amdsmi.FakeAmdGpu(**MI300X)]
    amdsmi.FAKE.legacy_energy_key = False
    amdsmi.FAKE.initialised = 0
    yield amdsmi.FAKE.gpus
    assert amdsmi.FAKE.initialised == 0, "every amdsmi_init is shut down"
    amdsmi.FAKE.gpus = []


def meter(**kw) -> AmdSmiMeter:
    kw.setdefault("uuid", MI300X["uuid"])
    kw.setdefault("sample_interval_s", None)
    return AmdSmiMeter(0, amdsmi=amdsmi, clock=kw.pop("clock", ManualClock()), **kw)


def test_energy_is_the_accumulator_times_its_resolution(gpus):
    clock = ManualClock()
    with meter(clock=clock) as m:
        assert m.name == "amdsmi" and not m.is_estimate and m.amd_index == 1
        m.begin()
        clock.advance(2.0)
        gpus[1].add_energy_j(400.0)
        gpus[0].add_energy_j(999.0)  # another GPU: not ours
        reading = m.end()
    # the counter counts in steps of 15.259 µJ: exact to one step
    assert reading.energy_j == pytest.approx(400.0, abs=16e-6)
    assert reading.duration_s == 2.0 and reading.flags == []
    assert energy_uj({"power": 10, "counter_resolution": 15.259}) == pytest.approx(152.59)


def test_amdsmi_before_rocm_6_1_named_the_accumulator_power(gpus):
    amdsmi.FAKE.legacy_energy_key = True
    with meter() as m:
        m.begin()
        gpus[1].add_energy_j(50.0)
        assert m.end().energy_j == pytest.approx(50.0, abs=16e-6)


def test_matched_by_uuid_else_bus_id_never_by_index(gpus):
    with meter(uuid=None, pci_bus_id="0000:e1:00.0") as m:
        assert m.amd_index == 0 and m.matched_by == "pci-bus-id"
    with meter(uuid="gpu-" + MI300X["uuid"].upper()) as m:  # spelling differs, same GPU
        assert m.amd_index == 1 and m.matched_by == "uuid"
    with pytest.raises(MeterUnavailable, match="no AMD SMI device"):
        meter(uuid="00000000-0000-0000-0000-000000000000", pci_bus_id="0000:99:00.0")


def test_other_processes_and_partitions_are_flagged(gpus):
    gpus[1].pids = [os.getpid(), 4242]
    gpus[1].compute_partition = "CPX"
    with meter() as m:
        m.begin()
        reading = m.end()
    assert "other-process" in reading.flags and "partition" in reading.flags
    assert m.other_pids == [4242]
    gpus[1].pids, gpus[1].compute_partition = [os.getpid()], "SPX"
    gpus[1].memory_partition = "NPS4"
    with meter() as m:
        m.begin()
        assert m.end().flags == ["partition"]
    gpus[1].memory_partition, gpus[1].processes_readable = "NPS1", False
    with meter() as m:
        m.begin()
        assert m.end().flags == ["process-check-failed"]


def test_the_trace_reads_socket_power_and_na_is_nan(gpus):
    clock = ManualClock()
    with meter(clock=clock) as m:
        m.begin()
        clock.advance(1.0)
        gpus[1].power_w = 300.0
        gpus[1].add_energy_j(300.0)
        reading = m.end()
        info = m.describe()
    assert reading.trace["power_w"].tolist() == [150.0, 300.0]
    assert reading.trace["power_avg_w"].isna().all()  # "N/A" on MI300
    assert reading.energy_trace_j == pytest.approx(225.0)  # the trapezoid: a cross-check
    assert reading.start_state["sm_clock_mhz"] == 2100 and reading.end_state["temperature_c"] == 45
    assert info["counter_resolution_uj"] == pytest.approx(15.259)
    assert info["validated_on_hardware"] is False and info["device_name"] == "AMD Instinct MI300X"


def test_a_rocm_torch_gets_the_amd_meter(gpus):
    m, reasons = select_meter("cuda:0", rocm=True, amdsmi=amdsmi, uuid=MI300X["uuid"])
    with m:
        assert isinstance(m, AmdSmiMeter) and reasons == []
    amdsmi.FAKE.driver_loaded = False
    try:
        with pytest.raises(MeterUnavailable, match="AMD SMI could not start"):
            select_meter("cuda:0", rocm=True, amdsmi=amdsmi, uuid=MI300X["uuid"])
    finally:
        amdsmi.FAKE.driver_loaded = True


def rocm_torch(*gpus_):
    """torch as a ROCm build shows AMD GPUs: cuda devices, version.hip set, no CUDA."""
    props = []
    for g in gpus_:
        _, bus, rest = g["bdf"].split(":")
        props.append(
            SimpleNamespace(
                name="AMD Instinct MI300X",
                uuid=None,  # HIP's UUID is not amdsmi's: matched by bus id
                pci_domain_id=0,
                pci_bus_id=int(bus, 16),
                pci_device_id=int(rest.split(".")[0], 16),
            )
        )
    cuda = SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: len(props),
        get_device_properties=lambda i: props[i],
    )
    version = SimpleNamespace(cuda=None, hip="6.2.41133")
    return SimpleNamespace(__version__="2.14.1+rocm6.2", version=version, cuda=cuda)


class NoNvidia:
    """pynvml on a machine without the NVIDIA driver."""

    class NVMLError(Exception):
        pass

    def nvmlInit(self):
        raise self.NVMLError("Driver Not Loaded")


def test_auto_picks_every_amd_gpu_of_a_rocm_torch(gpus):
    torch = rocm_torch(MI300X, OTHER)  # torch's order differs from amdsmi's
    devices, why = auto_devices(torch=torch, nvml=NoNvidia(), amdsmi=amdsmi)
    assert devices == {"mi300x": ["cuda:0", "cuda:1"]} and why == ""  # one pool
    infos, _ = describe_devices("auto", torch=torch, nvml=NoNvidia(), amdsmi=amdsmi)
    assert [i.meter for i in infos] == ["amdsmi", "amdsmi"]
    assert "not yet run on AMD hardware" in infos[0].not_better[0]
    cpu_torch = SimpleNamespace(
        __version__="2.14.1+cpu", version=SimpleNamespace(cuda=None, hip=None)
    )
    devices, why = auto_devices(torch=cpu_torch, nvml=NoNvidia(), amdsmi=amdsmi)
    assert devices == {"cpu": ["cpu"]}
    assert "AMD SMI sees AMD Instinct MI300X, AMD Instinct MI300X" in why
    assert "install a ROCm build of torch" in why


def test_the_devices_command_lists_amd_gpus_when_amdsmi_is_installed(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(FAKE_DIR), "FAKE_AMDSMI_GPUS": "2"}
    done = subprocess.run(
        [sys.executable, "-m", "joulebench", "devices"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    # this machine's torch has no ROCm: auto keeps the CPU and says which AMD GPUs it saw
    assert "AMD SMI sees AMD Instinct MI300X, AMD Instinct MI300X" in done.stdout, done
    assert "install a ROCm build of torch" in done.stdout
    assert done.returncode == 0  # the CPU can always be measured


def test_amdsmi_can_be_forced_on_a_cuda_device(gpus):
    """--meter amdsmi (profile.meter: amdsmi) picks the AMD backend whatever torch says."""
    m, reasons = select_meter("cuda:0", prefer="amdsmi", amdsmi=amdsmi, uuid=MI300X["uuid"])
    with m:
        assert isinstance(m, AmdSmiMeter) and reasons == []
    assert backend_for("cuda:0", prefer="amdsmi").kind == "rocm"
    assert backend_for("cuda:0", Libraries(rocm=False)).kind == "cuda"


def test_check_reads_the_amd_gpus_state_through_its_backend(gpus):
    rocm = bound_device("cuda:0", libs=Libraries(rocm=True))
    with meter() as m:
        state = rocm.state(m)
        rows = {r.name: r for r in environment_rows(m, state)}
        assert m.read_power_w() == 150.0
    assert (state.power_limit_w, state.default_power_limit_w) == (750.0, 750.0)
    assert state.partitioned is False and state.temperature_c == 45.0
    assert state.library.startswith("AMD SMI")
    assert rows["power limit"].status == PASS and rows["partition"].value == "off"
    assert rows["persistence mode"].status == SKIP  # AMD SMI has none: not reported
    gpus[1].compute_partition, gpus[1].power_cap_w = "CPX", 500.0
    with meter() as m:
        rows = {r.name: r for r in environment_rows(m, rocm.state(m))}
    assert rows["partition"].status == FAIL and rows["power limit"].status == WARN


def test_an_amdsmi_without_rocms_library_is_unavailable(tmp_path, monkeypatch):
    """pip's amdsmi without ROCm prints a line and raises KeyError when imported."""
    package = tmp_path / "amdsmi"
    package.mkdir()
    (package / "__init__.py").write_text(
        "print('Unable to find libamd_smi.so library')\nraise KeyError('libamd_smi.so')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
    with pytest.raises(MeterUnavailable, match="cannot load ROCm's libamd_smi.so") as err:
        load_amdsmi()
    assert err.value.reason == "no-library" and "Unable to find" in str(err.value)


def _pci(root: Path, *devices: tuple[str, str]) -> Path:
    """A /sys/bus/pci/devices of (vendor, class) devices."""
    for i, (vendor, kind) in enumerate(devices):
        folder = root / f"0000:00:{i:02x}.0"
        folder.mkdir(parents=True)
        (folder / "vendor").write_text(vendor + "\n")
        (folder / "class").write_text(kind + "\n")
    return root


def no_amdsmi():
    """Libraries.get_amdsmi where amdsmi cannot load ROCm's library."""
    raise MeterUnavailable("no-library", "amdsmi is installed but cannot load ROCm's library")


def test_a_cpu_only_host_hears_nothing_of_amd_smi(tmp_path, monkeypatch):
    """No AMD GPU on the PCI bus (an AMD CPU's bridges are vendor 0x1022): AMD SMI's missing
    library is no news; an AMD GPU there, or a bus that cannot be read, keeps the hint."""
    from joulebench.core.backends import rocm

    cpu_torch = SimpleNamespace(__version__="2.14.1+cpu", version=SimpleNamespace(hip=None))
    libs = Libraries(torch=cpu_torch, nvml=NoNvidia())
    libs.get_amdsmi = no_amdsmi
    cpu_only = _pci(tmp_path / "cpu", ("0x1022", "0x060000"), ("0x1af4", "0x020000"))
    with_gpu = _pci(tmp_path / "gpu", ("0x1022", "0x060000"), ("0x1002", "0x038000"))
    instinct = _pci(tmp_path / "mi300", ("0x1002", "0x120000"))
    expected = {cpu_only: False, with_gpu: True, instinct: True, tmp_path / "none": None}
    for root, present in expected.items():
        assert rocm.amd_gpu_present(root) is present, root
    for root, said in ((cpu_only, False), (with_gpu, True), (tmp_path / "none", True)):
        monkeypatch.setattr(rocm, "PCI_DEVICES", root)
        _, why = rocm.RocmBackend().discover(libs)
        assert ("AMD SMI" in why) is said, (root, why)
