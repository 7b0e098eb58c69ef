"""Two GPUs as NVML and torch see them: FakeGpus for the fake NVML, and a fake torch with the
attributes the code reads from the real one (torch.version.cuda, torch.cuda.is_available,
device_count, get_device_properties with name, uuid and PCI ids)."""

from __future__ import annotations

from types import SimpleNamespace

from helpers.fake_nvml import FakeGpu

A100 = FakeGpu(
    uuid="GPU-11111111-aaaa-4bbb-8ccc-000000000000",
    pci_bus_id="00000000:18:00.0",
    name="NVIDIA A100-SXM4-80GB",
    compute_capability=(8, 0),
)
H200 = FakeGpu(
    uuid="GPU-22222222-aaaa-4bbb-8ccc-000000000000",
    pci_bus_id="00000000:3B:00.0",
    name="NVIDIA H200",
)


def cuda_props(gpu: FakeGpu):
    """What torch.cuda.get_device_properties returns for a GPU (torch's uuid has no GPU-)."""
    _, bus, rest = gpu.pci_bus_id.split(":")
    return SimpleNamespace(
        name=gpu.name,
        uuid=gpu.uuid.removeprefix("GPU-"),
        pci_domain_id=0,
        pci_bus_id=int(bus, 16),
        pci_device_id=int(rest.split(".")[0], 16),
        major=gpu.compute_capability[0],
        minor=gpu.compute_capability[1],
    )


def fake_torch(visible: list[FakeGpu], cuda_version: str | None = "12.8", available=True):
    """torch as CUDA_VISIBLE_DEVICES shows it: `visible` in CUDA order."""
    props = [cuda_props(g) for g in visible]
    cuda = SimpleNamespace(
        is_available=lambda: available and bool(props),
        device_count=lambda: len(props) if available else 0,
        get_device_properties=lambda i: props[i],
    )
    version = "2.14.1+cu128" if cuda_version else "2.14.1+cpu"
    return SimpleNamespace(
        __version__=version, version=SimpleNamespace(cuda=cuda_version), cuda=cuda
    )
