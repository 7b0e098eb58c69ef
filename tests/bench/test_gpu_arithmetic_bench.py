"""bench/gpu_arithmetic.py, the GPU session's arithmetic and CUDA-graphs bench: it runs its
help and, without CUDA, stops with one clear line (its measurements need a GPU; a dry run
on a simulated one is in its docstring), and it plans the configurations the issue asks."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
import torch
from conftest import REPO

SCRIPT = REPO / "bench" / "gpu_arithmetic.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env
    )


def test_help_runs():
    result = _run("--help")
    assert result.returncode == 0 and "--out" in result.stdout and "--device" in result.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is visible here")
def test_without_cuda_it_stops_with_one_line(tmp_path):
    result = _run("--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"gpu_arithmetic: error: no CUDA GPU visible to torch {torch.__version__} "
        "(torch.cuda.is_available() is False): run on one NVIDIA GPU, or --device sim:h100 "
        "for a dry run"
    ]
    assert not (tmp_path / "out").exists()


def test_it_plans_the_issues_configurations():
    spec = importlib.util.spec_from_file_location("gpu_arithmetic", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    jobs = bench.jobs(bench.arguments(["--out", "x"]))
    configs = sum(len(methods) * len(batches) for _, _, methods, batches in jobs)
    assert configs == 28
    resnet50, vit = jobs[0], jobs[1]
    assert resnet50[1] == "resnet50.a1_in1k" and resnet50[3] == [64, 8]
    assert {"fp32", "tf32", "fp16-amp", "tf32-no-autotune"} <= set(resnet50[2])
    assert vit[1] == "vit_base_patch16_224.augreg2_in21k_ft_in1k" and set(vit[2]) == {
        "fp32",
        "tf32",
        "fp16-amp",
    }
    graphs = [j for j in jobs if j[0] == "graphs"]
    assert [j[3] for j in graphs] == [[1, 8]] * 3
    assert all(j[2]["fp16-amp-graphs"]["cuda_graphs"] for j in graphs)
