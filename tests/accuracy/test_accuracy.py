"""Measured accuracy: the evaluation arithmetic, and weights found only where they really are."""

from __future__ import annotations

import math
import socket

import numpy as np
import pytest
import torch
from torch import nn

from joulebench.accuracy import measured as accuracy
from joulebench.accuracy import shards
from joulebench.tables import ACCURACY_COLUMNS

MEAN, STD = (0.5, 0.4, 0.3), (0.25, 0.2, 0.3)
TINY = "test_vit.r160_in1k"  # a 0.4 M-parameter timm model with a pretrained config


def separable_data(n: int, classes: int = 10, seed: int = 0):
    """uint8 3x8x8 images: a fixed pattern per class plus noise that hides it in ~40 % of cases."""
    prototypes = 128 + np.random.default_rng(1234).normal(0, 10, size=(classes, 3, 8, 8))
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=n)
    noisy = prototypes[labels] + rng.normal(0, 60, size=(n, 3, 8, 8))
    return np.clip(noisy, 0, 255).astype(np.uint8), labels


def direct_normalize(images: np.ndarray) -> torch.Tensor:
    x = torch.from_numpy(images).float() / 255
    return (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)


def train_tiny_model(classes: int = 10) -> nn.Module:
    torch.manual_seed(0)
    images, labels = separable_data(1000, classes, seed=1)
    x, y = direct_normalize(images), torch.from_numpy(labels)
    model = nn.Sequential(nn.Flatten(), nn.Linear(192, 32), nn.ReLU(), nn.Linear(32, classes))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only contend with each other
    try:
        for _ in range(80):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    return model.eval()


@pytest.fixture(scope="module")
def tiny_model():
    return train_tiny_model()


def test_evaluate_equals_a_direct_topk_computation(tmp_path, tiny_model):
    model = tiny_model
    images, labels = separable_data(301, seed=2)
    # Shards of 37 read in batches of 16: batches span shard ends, the last one is short.
    shards.save_arrays(tmp_path, images, labels, shard_size=37)
    top1, top5, n = accuracy.evaluate(model, tmp_path, MEAN, STD, batch_size=16)

    with torch.no_grad():
        logits = model(direct_normalize(images))
    y = torch.from_numpy(labels)
    want1 = 100 * (logits.argmax(1) == y).sum().item() / len(y)
    want5 = 100 * (logits.topk(5, 1).indices == y[:, None]).any(1).sum().item() / len(y)
    assert n == 301
    assert top1 == pytest.approx(want1, abs=1e-9) and top5 == pytest.approx(want5, abs=1e-9)
    assert 40 < top1 < 99 and top1 < top5 < 100  # neither trivial nor saturated


def test_evaluate_uses_the_given_mean_and_std(tmp_path, tiny_model):
    model = tiny_model
    images, labels = separable_data(301, seed=2)
    shards.save_arrays(tmp_path, images, labels)
    right = accuracy.evaluate(model, tmp_path, MEAN, STD)[0]
    wrong = accuracy.evaluate(model, tmp_path, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0))[0]
    assert wrong < right - 10


def test_top5_caps_at_the_class_count(tmp_path):
    model = nn.Sequential(nn.Flatten(), nn.Linear(192, 3))  # any 3-class model
    images, labels = separable_data(50, classes=3, seed=4)
    shards.save_arrays(tmp_path, images, labels)
    assert accuracy.evaluate(model, tmp_path, MEAN, STD)[1] == 100.0


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """Empty weight caches, and any connection attempt fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-empty"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-empty"))


@pytest.fixture
def tiny_shards(tmp_path):
    """The generated image folder (wnids 1, 500, 999) prepared for TINY's input config."""
    import timm
    from helpers.image_folder import make_image_folder

    make_image_folder(tmp_path / "val")
    pretrained_cfg = timm.models.get_pretrained_cfg(TINY).to_dict()
    data_cfg = timm.data.resolve_data_config(pretrained_cfg=pretrained_cfg)
    src = {"kind": "imagenet-val", "path": str(tmp_path / "val")}
    return shards.prepare(src, data_cfg, tmp_path / "prepared", progress=False)


def biased_tiny():
    """TINY with weights that answer class 500 (3 of the 8 images): 37.5 % top-1."""
    import timm

    torch.manual_seed(0)
    model = timm.create_model(TINY)
    with torch.no_grad():
        model.head.bias[500] = 1e4
    return model


def _save(model, path):
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(model.state_dict(), str(path))


def test_weights_from_the_checkpoints_folder(tiny_shards, tmp_path, no_network):
    model = biased_tiny()
    _save(model, tmp_path / "ckpt" / f"{TINY}.safetensors")
    rows = accuracy.measure_models([TINY], tiny_shards, checkpoints=tmp_path / "ckpt")
    assert list(rows.columns) == list(ACCURACY_COLUMNS)
    row = rows.iloc[0]
    assert row.accuracy_source == "measured" and "checkpoints" in row.accuracy_note
    assert row.top1 == 37.5 and row.top5 == 37.5 and row.accuracy_images == 8
    assert row.img_size == 160 and "imagenet-val (8 images" in row.accuracy_dataset
    assert (row.top1, row.top5, 8) == accuracy.evaluate(model, tiny_shards, (0.5,) * 3, (0.5,) * 3)


def test_weights_from_the_hugging_face_cache(tiny_shards, tmp_path, no_network, monkeypatch):
    hub = tmp_path / "hf"
    repo = hub / f"models--timm--{TINY}"
    revision = "0123456789abcdef0123456789abcdef01234567"
    _save(biased_tiny(), repo / "snapshots" / revision / "model.safetensors")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    row = accuracy.measure_models([TINY], tiny_shards).iloc[0]
    assert row.accuracy_source == "measured" and "hf-cache" in row.accuracy_note
    assert row.top1 == 37.5


def test_no_local_weights_means_no_accuracy(tiny_shards, tmp_path, no_network):
    rows = accuracy.measure_models([TINY, "resnet18.a1_in1k"], tiny_shards, checkpoints=tmp_path)
    assert (rows.accuracy_source == "none").all()
    assert rows.top1.isna().all() and rows.top5.isna().all()
    assert rows.accuracy_note.str.contains("no local pretrained weights").all()
    assert rows.img_size.tolist() == [160, 224]


def test_weights_in_the_torch_hub_cache_are_found(tmp_path, no_network):
    # resnet18.a1_in1k's pretrained config has a URL: torch.hub caches it by file name.
    cached = tmp_path / "torch-empty" / "hub" / "checkpoints" / "resnet18_a1_0-d63eafa0.pth"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"")
    assert accuracy.find_weights("resnet18.a1_in1k") == (cached, "torch-hub-cache")


def test_shards_for_another_input_config_are_refused(tiny_shards, tmp_path, no_network):
    import timm

    torch.manual_seed(0)
    # test_resnet uses bilinear resizing; the shards were made bicubic for test_vit.
    model = timm.create_model("test_resnet.r160_in1k")
    _save(model, tmp_path / "c" / "test_resnet.r160_in1k.safetensors")
    row = accuracy.measure_models(
        ["test_resnet.r160_in1k"], tiny_shards, checkpoints=tmp_path / "c"
    ).iloc[0]
    assert row.accuracy_source == "none" and "prepared for" in row.accuracy_note
    assert math.isnan(row.top1)


def test_synthetic_and_non_imagenet_data_give_no_accuracy(tmp_path, no_network):
    synthetic = shards.prepare({"kind": "synthetic"}, {"img_size": 160}, tmp_path)
    row = accuracy.measure_models([TINY], synthetic).iloc[0]
    assert row.accuracy_source == "none" and "synthetic" in row.accuracy_note
    arrays = shards.save_arrays(tmp_path / "a", *separable_data(10))
    row = accuracy.measure_models([TINY], arrays).iloc[0]
    assert row.accuracy_source == "none" and "not ImageNet-1k" in row.accuracy_note
