"""Sources and shards on a small generated image folder: labels, skips, pixels, the cache."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.image_folder import CORRUPT, WNID_INDEX, make_image_folder
from PIL import Image

from joulebench.accuracy import shards
from joulebench.accuracy.datasets import DatasetError, imagenet_wnids, list_source


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "val"
    return root, make_image_folder(root)


def timm_cfg(**overrides) -> dict:
    from timm.data import resolve_data_config
    from timm.models import get_pretrained_cfg

    cfg = get_pretrained_cfg("resnet18.a1_in1k").to_dict()
    return resolve_data_config(args=overrides, pretrained_cfg=cfg)


def read_shards(shard_dir):
    """{relative file: (uint8 image, label)} from a shard folder."""
    manifest = shards.read_manifest(shard_dir)
    out = {}
    for shard in manifest["shards"]:
        index = json.loads((shard_dir / shard["index"]).read_text())
        images = np.load(shard_dir / shard["images"])
        labels = np.load(shard_dir / shard["labels"])
        assert len(index["files"]) == len(images) == len(labels) == shard["n"]
        out.update(zip(index["files"], zip(images, labels.tolist(), strict=True), strict=True))
    return out


def test_shards_hold_exactly_the_readable_images_with_timm_labels(folder, tmp_path):
    root, readable = folder
    src = {"kind": "imagenet-val", "path": str(root)}
    out = shards.prepare(src, timm_cfg(), tmp_path / "prepared", progress=False, shard_size=3)
    manifest = shards.read_manifest(out)
    stored = read_shards(out)

    index = {w: i for i, w in enumerate(imagenet_wnids())}
    assert sorted(stored) == sorted(readable)
    assert {f: lab for f, (_, lab) in stored.items()} == {f: index[w] for f, w in readable.items()}
    assert sorted(set(lab for _, lab in stored.values())) == list(WNID_INDEX)
    assert manifest["counts"]["images"] == 8
    assert manifest["counts"]["skipped"] == 2
    assert manifest["counts"]["ignored_files"] == 1
    assert sorted(s["file"].split("/", 1)[1] for s in manifest["skipped"]) == sorted(
        c.split("/")[1] for c in CORRUPT
    )
    assert all(s["reason"] for s in manifest["skipped"])
    assert sorted(manifest["per_class"].values()) == [2, 3, 3]
    assert manifest["label_space"] == "imagenet-1k" and manifest["num_classes"] == 1000
    assert manifest["hash"] == out.name and manifest["source_path"] == str(root.resolve())
    assert manifest["timm_version"] and manifest["torch_version"]
    assert out.parent == tmp_path / "prepared"


@pytest.mark.parametrize(
    "overrides",
    [
        {},  # resnet18.a1_in1k: bicubic, crop_pct 0.95, 224
        {"input_size": (3, 96, 128), "crop_pct": 1.0, "interpolation": "bilinear"},
        {"input_size": (3, 112, 112), "crop_mode": "squash", "crop_pct": 0.9},
        {"input_size": (3, 120, 120), "crop_mode": "border", "mean": (0.5, 0.25, 0.75)},
    ],
    ids=["resnet18", "non-square", "squash", "border"],
)
def test_loaded_shards_equal_timm_eval_transform(folder, tmp_path, overrides):
    from timm.data import create_transform

    root, readable = folder
    data_cfg = timm_cfg(**overrides)
    out = shards.prepare(
        {"kind": "imagefolder", "path": str(root)}, data_cfg, tmp_path / "p", progress=False
    )
    reference = create_transform(**data_cfg, is_training=False)
    for rel, (image, _) in read_shards(out).items():
        with Image.open(root / rel) as im:
            want = reference(im.convert("RGB"))
        got = shards.normalize(torch.from_numpy(image[None]), data_cfg["mean"], data_cfg["std"])[0]
        assert got.shape == want.shape == (3, *data_cfg["input_size"][1:])
        assert torch.equal(got, want), f"{rel}: max diff {(got - want).abs().max():.2e}"


def test_shard_batches_span_shard_ends_and_keep_order(folder, tmp_path):
    root, _ = folder
    cfg = timm_cfg(input_size=(3, 32, 32))
    out = shards.prepare({"kind": "imagefolder", "path": str(root)}, cfg, tmp_path, shard_size=3)
    stored = read_shards(out)
    batches = list(shards.iter_uint8(out, batch_size=5))
    assert [len(y) for _, y in batches] == [5, 3]
    assert np.array_equal(
        np.concatenate([x for x, _ in batches]), np.stack([i for i, _ in stored.values()])
    )


def test_second_prepare_reuses_the_cache(folder, tmp_path, monkeypatch):
    root, _ = folder
    src = {"kind": "imagenet-val", "path": str(root)}
    first = shards.prepare(src, timm_cfg(), tmp_path, progress=False)
    mtime = (first / "manifest.json").stat().st_mtime_ns

    def no_rework(*args, **kwargs):
        raise AssertionError("prepared again")

    monkeypatch.setattr(shards, "encode", no_rework)
    monkeypatch.setattr(shards, "list_source", no_rework)
    assert shards.prepare(src, timm_cfg(), tmp_path, progress=False) == first
    assert (first / "manifest.json").stat().st_mtime_ns == mtime


def test_interrupted_prepare_keeps_finished_shards(folder, tmp_path, monkeypatch):
    root, _ = folder
    src = {"kind": "imagenet-val", "path": str(root)}
    out = shards.prepare(src, timm_cfg(), tmp_path, progress=False, shard_size=4)
    before = read_shards(out)
    (out / "manifest.json").unlink()  # as if killed before the manifest was written

    monkeypatch.setattr(shards, "encode", lambda *a: (_ for _ in ()).throw(AssertionError))
    again = shards.prepare(src, timm_cfg(), tmp_path, progress=False, shard_size=4)
    assert again == out and shards.read_manifest(out)["counts"]["images"] == 8
    assert {k: lab for k, (_, lab) in read_shards(out).items()} == {
        k: lab for k, (_, lab) in before.items()
    }


def test_key_covers_what_changes_pixels_and_only_that(tmp_path):
    src = {"kind": "imagenet-val", "path": str(tmp_path)}
    base = timm_cfg()
    key = shards.shard_key(src, base)
    assert shards.shard_key(src, timm_cfg(crop_pct=0.875)) != key
    assert shards.shard_key(src, timm_cfg(interpolation="bilinear")) != key
    assert shards.shard_key(src, timm_cfg(input_size=(3, 256, 256))) != key
    assert shards.shard_key(src, timm_cfg(crop_mode="squash")) != key
    assert shards.shard_key({**src, "per_class": 5}, base) != key
    assert shards.shard_key({**src, "path": str(tmp_path / "x")}, base) != key
    # mean/std are applied at load time: models differing only there share shards ...
    assert shards.shard_key(src, timm_cfg(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))) == key
    # ... except with crop_mode border, where timm pads with the mean colour.
    border = timm_cfg(crop_mode="border")
    assert shards.shard_key(src, border) != shards.shard_key(src, {**border, "mean": (0.5,) * 3})
    # A catalog row and the timm data config of the same model give the same key.
    row = {
        "input_height": 224,
        "input_width": 224,
        "crop_pct": 0.95,
        "crop_mode": "center",
        "interpolation": "bicubic",
        "mean": [0.485, 0.456, 0.406],
        "std": [0.229, 0.224, 0.225],
    }
    assert shards.input_config_key(row) == shards.input_config_key(base)
    assert shards.input_config_key(pd.Series(row)) == shards.input_config_key(base)
    assert shards.shard_dir(tmp_path, src, row) == tmp_path / key


def _flatten(root, readable, flat):
    """Copy the wnid-folder images into one flat folder, renamed as ImageNet val files."""
    flat.mkdir(parents=True)
    names = {}
    for i, rel in enumerate(sorted(readable), 1):
        name = f"ILSVRC2012_val_{i:08d}{(root / rel).suffix}"
        (flat / name).write_bytes((root / rel).read_bytes())
        names[name] = rel
    return names


def test_flat_layout_with_solution_csv_gives_folder_labels(folder, tmp_path):
    root, readable = folder
    # The Kaggle download: LOC_val_solution.csv four folders above ILSVRC/Data/CLS-LOC/val/.
    kaggle = tmp_path / "kaggle"
    flat = kaggle / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    names = _flatten(root, readable, flat)
    (flat / "ILSVRC2012_val_99999999.JPEG").write_bytes((root / sorted(readable)[0]).read_bytes())
    with open(kaggle / "LOC_val_solution.csv", "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["ImageId", "PredictionString"])
        for name, rel in names.items():
            wnid = readable[rel]
            out.writerow([name.split(".")[0], f"{wnid} 10 20 30 40 {wnid} 1 2 3 4"])
        out.writerow(["ILSVRC2012_val_00012345", "n01440764 1 2 3 4"])  # a file we lack

    folder_listing = list_source({"kind": "imagenet-val", "path": str(root)})
    by_file = dict(zip(folder_listing.files, folder_listing.labels, strict=True))
    flat_listing = list_source({"kind": "imagenet-val", "path": str(flat)})
    assert dict(zip(flat_listing.files, flat_listing.labels, strict=True)) == {
        n: by_file[rel] for n, rel in names.items()
    }
    assert [s["file"] for s in flat_listing.skipped] == ["ILSVRC2012_val_99999999.JPEG"]
    assert flat_listing.missing_files == 1

    # A plain file,label CSV (header, suffixes, integer labels in timm's order) agrees.
    labels_csv = tmp_path / "labels.csv"
    lines = ["file,label"] + [f"{n},{by_file[rel]}" for n, rel in names.items()]
    labels_csv.write_text("\n".join(lines) + "\n")
    plain = list_source({"kind": "imagenet-val", "path": str(flat), "labels": str(labels_csv)})
    assert plain.files[: len(names)] == flat_listing.files
    assert plain.labels == flat_listing.labels

    # And the prepared shards hold the same pixels under the same labels.
    cfg = timm_cfg(input_size=(3, 64, 64))
    a = read_shards(shards.prepare({"kind": "imagenet-val", "path": str(root)}, cfg, tmp_path))
    b = read_shards(shards.prepare({"kind": "imagenet-val", "path": str(flat)}, cfg, tmp_path))
    for name, rel in names.items():
        assert b[name][1] == a[rel][1] and np.array_equal(b[name][0], a[rel][0])


def test_seeded_subsets(folder):
    root, _ = folder
    src = {"kind": "imagenet-val", "path": str(root)}
    one = list_source({**src, "per_class": 1, "seed": 3})
    assert sorted(one.labels) == list(WNID_INDEX)
    assert list_source({**src, "per_class": 1, "seed": 3}).files == one.files
    seeds = {tuple(list_source({**src, "per_class": 1, "seed": s}).files) for s in range(8)}
    assert len(seeds) > 1
    total = list_source({**src, "max_images": 4, "seed": 0})
    assert len(total.files) == 4 and total.files == sorted(total.files)
    with pytest.raises(DatasetError):
        list_source({**src, "per_class": 0})


def test_imagefolder_with_own_class_names(tmp_path):
    readable = make_image_folder(tmp_path / "pets", wnids=["zebra", "cat", "dog"])
    listing = list_source({"kind": "imagefolder", "path": str(tmp_path / "pets")})
    assert listing.label_space == "folder" and listing.classes == ["cat", "dog", "zebra"]
    assert dict(zip(listing.files, listing.labels, strict=True)) == {
        rel: ["cat", "dog", "zebra"].index(c) for rel, c in readable.items()
    } | {c: 1 for c in ["dog/garbage.JPEG", "dog/truncated.jpg"]}
    with pytest.raises(DatasetError, match="not ImageNet-1k wnids"):
        list_source({"kind": "imagenet-val", "path": str(tmp_path / "pets")})
    with pytest.raises(DatasetError, match="neither"):
        list_source({"kind": "imagenet-val", "path": str(tmp_path / "pets" / "cat")})


def test_synthetic_needs_no_shards(tmp_path):
    out = shards.prepare({"kind": "synthetic"}, timm_cfg(), tmp_path)
    manifest = shards.read_manifest(out)
    assert manifest["kind"] == "synthetic" and manifest["counts"]["images"] == 0
    assert not list(out.glob("*.npy"))


def test_worker_processes_store_the_same_shards(folder, tmp_path, monkeypatch):
    root, _ = folder
    monkeypatch.setattr(shards, "MIN_IMAGES_PER_WORKER", 1)  # use workers even for 8 images
    import concurrent.futures

    pools = []

    class CountingPool(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, workers, **kwargs):
            pools.append(workers)
            super().__init__(workers, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", CountingPool)
    src, cfg = {"kind": "imagefolder", "path": str(root)}, timm_cfg(input_size=(3, 48, 48))
    one = read_shards(shards.prepare(src, cfg, tmp_path / "one", shard_size=3))
    two = read_shards(shards.prepare(src, cfg, tmp_path / "two", workers=2, shard_size=3))
    assert pools == [2]
    assert list(one) == list(two)
    assert all(np.array_equal(one[k][0], two[k][0]) and one[k][1] == two[k][1] for k in one)
