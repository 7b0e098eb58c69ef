"""devices: auto, device checks before a run, and `joulebench devices`.

The GPU branches run against the fake NVML (tests/helpers/fake_nvml.py) and a fake torch with
the attributes the code reads from the real one (tests/helpers/fake_gpus.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO
from helpers.fake_gpus import A100, H200, fake_torch
from helpers.fake_nvml import FakeGpu, FakeNvml

from joulebench.core.backends.base import short_gpu_name
from joulebench.schedule.devices import (
    AUTO,
    RESOLVED_ENV,
    auto_devices,
    check_devices,
    describe_devices,
    devices_for,
    format_devices,
    resolve_devices,
)


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("NVIDIA RTX A6000", "rtxa6000"),
        ("Tesla V100-PCIE-32GB", "v100"),
        ("NVIDIA GH200 480GB", "gh200"),
        ("", "gpu"),
    ],
)
def test_short_gpu_names(name, short):
    assert short_gpu_name(name) == short


def test_auto_picks_every_gpu_matched_to_nvml_by_uuid():
    """CUDA order differs from NVML's (CUDA_VISIBLE_DEVICES=1,0): names follow the UUID;
    mixed GPUs are one pool per product."""
    nvml = FakeNvml([A100, H200])
    devices, why = auto_devices(torch=fake_torch([H200, A100]), nvml=nvml)
    assert devices == {"h200": ["cuda:0"], "a100": ["cuda:1"]}
    assert why == ""
    assert nvml.refcount == 0  # NVML shut down again


def test_auto_skips_a_gpu_nvml_cannot_match():
    stranger = FakeGpu(uuid="GPU-99999999-aaaa-4bbb-8ccc-000000000000", pci_bus_id="0:99:00.0")
    devices, why = auto_devices(torch=fake_torch([stranger, H200]), nvml=FakeNvml([H200]))
    assert devices == {"h200": ["cuda:1"]}
    assert "cuda:0" in why


@pytest.mark.parametrize(
    ("nvml", "torch", "reason"),
    [
        (FakeNvml([], driver_loaded=False), None, "NVML: NVML Shared Library Not Found"),
        (FakeNvml([]), None, "NVML sees no GPU"),
        (FakeNvml([H200]), fake_torch([H200], cuda_version=None), "built without CUDA"),
        (FakeNvml([H200]), fake_torch([H200], available=False), "torch sees no CUDA device"),
    ],
)
def test_auto_falls_back_to_the_cpu_and_says_why(nvml, torch, reason):
    devices, why = auto_devices(torch=torch, nvml=nvml)
    assert devices == {"cpu": ["cpu"]}
    assert reason in why


def test_resolve_keeps_explicit_maps_and_reuses_the_planned_auto():
    assert resolve_devices({"gpu": "cuda:1", "cpu": "cpu"}, env={}) == {
        "gpu": "cuda:1",
        "cpu": "cpu",
    }
    nvml = FakeNvml([H200])
    assert resolve_devices(AUTO, env={}, torch=fake_torch([H200]), nvml=nvml) == {"h200": "cuda:0"}
    # A cluster job re-reads the workflow on its node: it takes the planning host's answer.
    planned = {"h200-0": "cuda:0"}
    env = {RESOLVED_ENV: json.dumps(planned)}
    assert resolve_devices(AUTO, env=env, nvml=FakeNvml([])) == planned
    assert resolve_devices({"cpu": "cpu"}, env=env) == {"cpu": "cpu"}  # explicit wins


def test_check_devices_names_the_device_and_what_is_missing():
    assert check_devices({"cpu": "cpu"}) == []
    ok = check_devices({"h200": "cuda"}, torch=fake_torch([H200]), nvml=FakeNvml([H200]))
    assert ok == []
    cases = [
        (fake_torch([H200], cuda_version=None), FakeNvml([H200]), "this torch has no CUDA"),
        (fake_torch([H200], available=False), FakeNvml([H200]), "no CUDA device is visible"),
        (fake_torch([H200]), FakeNvml([H200], driver_loaded=False), "NVML cannot read it"),
    ]
    for torch, nvml, missing in cases:
        (problem,) = check_devices({"gpu": "cuda", "cpu": "cpu"}, torch=torch, nvml=nvml)
        assert problem.startswith("devices: 'gpu' is cuda, but"), problem
        assert missing in problem
    (problem,) = check_devices({"gpu": "cuda:2"}, torch=fake_torch([H200]), nvml=FakeNvml([H200]))
    assert "only 1 CUDA device(s) are visible" in problem


def test_describe_gpu_meters():
    old = FakeGpu(
        uuid=A100.uuid,
        pci_bus_id=A100.pci_bus_id,
        name="Tesla P100",
        energy_counter=False,
        compute_capability=(6, 0),
    )
    torch = fake_torch([H200, old])
    infos, why = describe_devices(AUTO, torch=torch, nvml=FakeNvml([old, H200]))
    assert why == ""
    assert [(i.label, i.device, i.meter) for i in infos] == [
        ("h200", "cuda:0", "nvml"),
        ("p100", "cuda:1", "nvml:power-integration"),
    ]
    assert infos[0].not_better == []
    assert "no total-energy counter" in infos[1].not_better[0]
    text = format_devices(infos, why)
    assert "auto picks h200 (cuda:0), p100 (cuda:1)" in text
    # What each runs natively, by compute capability: the P100 (6.0) emulates bf16, and
    # has no TF32 at all.
    assert [i.precisions.native for i in infos] == [
        ("fp32", "tf32", "fp16", "bf16"),
        ("fp32", "fp16"),
    ]
    assert "native precisions: fp32, fp16\n  emulated: bf16 (skipped rows" in text
    assert "bf16: compute capability 6.0, before Ampere's bf16 (8.0)" in text
    assert "  not run: tf32 (skipped rows, even with allow_emulated" in text
    assert "tf32: compute capability 6.0, before Ampere's TF32 tensor cores (8.0)" in text


def test_describe_the_cpu_says_why_rapl_is_not_used(tmp_path):
    missing = tmp_path / "powercap"
    infos, why = describe_devices(
        AUTO, nvml=FakeNvml([], driver_loaded=False), meter_options={"root": missing}
    )
    (cpu,) = infos
    assert (cpu.label, cpu.meter) == ("cpu", "estimate:tdp-linear")
    assert cpu.not_better == [f"RAPL: {missing} does not exist"]
    text = format_devices(infos, why)
    assert "auto picks cpu (cpu)" in text and "no GPU: NVML:" in text
    assert f"not better: RAPL: {missing} does not exist" in text


def test_describe_an_unusable_explicit_device():
    infos, _ = describe_devices(
        {"gpu": "cuda"}, torch=fake_torch([], available=False), nvml=FakeNvml([])
    )
    assert infos[0].problems and "no CUDA device is visible" in infos[0].problems[0]
    assert "cannot measure: devices: 'gpu' is cuda" in format_devices(infos, spec={"gpu": "cuda"})


def test_devices_command_prints_this_machines_pick():
    result = subprocess.run(
        [sys.executable, "-m", "joulebench", "devices"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("devices: auto picks ")
    assert "meter: " in result.stdout


def test_devices_command_with_a_study_names_the_problem(tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text("devices: {gpu: 'cuda:99'}\n")
    result = subprocess.run(
        [sys.executable, "-m", "joulebench", "devices", "--configfile", str(study)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 2
    assert "cannot measure: devices: 'gpu' is cuda:99, but" in result.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["idle", "--device-label", "gpu", "--device", "cuda:99", "--output", "{out}"],
        ["profile", "resnet18.a1_in1k", "--device", "cuda:99"],
        [
            "profile-job",
            "--device-label",
            "gpu",
            "--spec",
            "{spec}",
            "--output",
            "{out}",
            "--repeats-output",
            "{out}",
            "--trace-output",
            "{out}",
            "--",
            "resnet18.a1_in1k",
        ],
    ],
)
def test_jobs_on_a_device_that_is_not_here_say_what_is_missing(argv, tmp_path, capsys):
    """On a cluster node (or by hand) a measuring command fails in one line, writing nothing."""
    from helpers.profile_job import spec_of

    from joulebench.cli import main

    out = tmp_path / "out.parquet"
    spec = spec_of(
        {"torch_device": "cuda:99", "methods": {"fp32": {"precision": "fp32"}}, "batch_sizes": [1]}
    ).to_json()
    argv = [a.replace("{out}", str(out)).replace("{spec}", spec) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("joulebench: error: devices: ") and "is cuda:99, but" in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("device", ["tpu", "", "cuda:x", "sim:"])
def test_an_unknown_device_string_says_which_are_valid(device, capsys):
    """issue 21: `profile --device tpu` once failed with a TypeError."""
    from joulebench.cli import main

    assert main(["profile", "resnet18.a1_in1k", "--device", device]) == 2
    err = capsys.readouterr().err
    assert "no device joulebench measures; use cpu, cuda, cuda:N or sim:<gpu>" in err, err
    assert "Traceback" not in err
    (problem,) = check_devices({"x": device})
    assert problem.startswith(f"devices: 'x' is {device!r}: no device joulebench measures")


def test_simulated_devices_are_listed_only_when_asked():
    plain, measurable = devices_for()
    assert measurable and "sim:" not in plain and "nvml:sim" not in plain
    with_sim, _ = devices_for(simulated=True)
    assert with_sim.startswith(plain)
    assert "simulated devices" in with_sim and "sim-hopper: sim:hopper, NVIDIA H100" in with_sim
    assert "meter: nvml:sim" in with_sim
    done = subprocess.run(
        [sys.executable, "-m", "joulebench", "devices", "--sim"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "sim:a100" in done.stdout, done.stderr
