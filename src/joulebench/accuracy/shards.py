"""Prepared datasets: each image decoded and resized once, stored as uint8 shards.

A shard folder `<out_root>/<key>/` holds, per shard i, `images-iiiii.npy` (uint8, N x 3 x H x W),
`labels-iiiii.npy` (int64, N) and `shard-iiiii.json` (its files and skipped files), and, once
every shard is done, `manifest.json`. The pixels are exactly what timm's eval transform makes
before ToTensor/Normalize (resize, crop, `PIL.Image.convert("RGB")` as timm's loader does);
/255 and mean/std are applied at load time, so models that differ only in mean/std share
shards and see tensors identical to `timm.data.create_transform(..., is_training=False)`.

The key hashes what changes the pixels (size, crop_pct, crop_mode, interpolation; the
padding fill for crop_mode "border") and the source (kind, path, labels, subset, seed).
It keys on the config, not on the files: delete the folder after changing the images.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from joulebench.accuracy.datasets import DatasetError, Listing, list_source, normalize_source
from joulebench.config_schema import default
from joulebench.table_io import atomic_write

SHARD_FORMAT = 1  # bump when the stored bytes change meaning: it is part of every key
MANIFEST = "manifest.json"
DEFAULT_CROP_PCT = 0.875  # timm's default when a config has none
# A spawned worker pays seconds of imports (torch, timm) before its first image; at ~300
# images/s per core it earns that back only on thousands of images (docs/datasets.md).
MIN_IMAGES_PER_WORKER = 2000


# ---------------------------------------------------------------- configuration and keys


def _get(cfg, key):
    """cfg[key], or None when absent or missing (a pandas catalog row holds NA or NaN)."""
    value = cfg.get(key)
    if value is None or type(value).__name__ == "NAType":
        return None
    if isinstance(value, float | np.floating) and value != value:
        return None
    return value


def input_config(cfg) -> dict:
    """The pixel-relevant part of a catalog row, a timm data config, or an input config."""
    if _get(cfg, "img_size") is not None:
        size = cfg["img_size"]
        height, width = (size, size) if np.ndim(size) == 0 else size
    elif _get(cfg, "input_size") is not None:
        height, width = cfg["input_size"][-2:]
    elif _get(cfg, "input_height") is not None and _get(cfg, "input_width") is not None:
        height, width = cfg["input_height"], cfg["input_width"]
    else:
        raise DatasetError(
            "an input config needs img_size, input_size, or input_height and input_width"
        )
    crop_mode = str(_get(cfg, "crop_mode") or "center")
    out = {
        "img_size": [int(height), int(width)],
        "crop_pct": round(float(_get(cfg, "crop_pct") or DEFAULT_CROP_PCT), 6),
        "crop_mode": crop_mode,
        "interpolation": str(_get(cfg, "interpolation") or "bilinear"),
    }
    if crop_mode == "border":  # timm pads with the mean colour: then the mean changes pixels
        fill = _get(cfg, "fill")
        out["fill"] = (
            list(fill) if fill is not None else [round(255 * float(v)) for v in cfg["mean"]]
        )
    return out


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def input_config_key(cfg: dict) -> tuple[dict, str]:
    """(input config, its hash): models with the same hash can share a shard folder."""
    inp = input_config(cfg)
    return inp, _digest(inp)


def shard_key(source_cfg: dict, cfg: dict) -> str:
    """The shard folder's name: source (with subset) + input config + storage format."""
    src = normalize_source(source_cfg)
    return _digest({"format": SHARD_FORMAT, "source": src, "input": input_config(cfg)})


def shard_dir(out_root: str | Path, source_cfg: dict, cfg: dict) -> Path:
    return Path(out_root) / shard_key(source_cfg, cfg)


def eval_transform(inp: dict):
    """timm's eval transform up to (not including) ToTensor/Normalize: PIL -> uint8 CHW."""
    from timm.data import IMAGENET_DEFAULT_MEAN, create_transform

    mean = [v / 255 for v in inp["fill"]] if "fill" in inp else IMAGENET_DEFAULT_MEAN
    return create_transform(
        input_size=(3, *inp["img_size"]),
        is_training=False,
        interpolation=inp["interpolation"],
        crop_pct=inp["crop_pct"],
        crop_mode=inp["crop_mode"],
        mean=mean,
        use_prefetcher=True,  # stop before ToTensor/Normalize: uint8 out
    )


# ---------------------------------------------------------------- writing


def _save_npy(path: Path, array: np.ndarray) -> None:
    def write(tmp):
        with open(tmp, "wb") as fh:  # a file object: np.save would append .npy to a name
            np.save(fh, array)

    atomic_write(path, write)


def _write_json(path: Path, obj) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(obj, indent=1) + "\n"))


def encode(path: Path, transform) -> np.ndarray:
    """Decode one image as timm's loader does (convert to RGB) and transform it to uint8 CHW."""
    from PIL import Image

    with Image.open(path) as im:
        rgb = im.convert("RGB")  # grayscale, CMYK, palette, RGBA -> RGB; decodes all pixels
    return np.asarray(transform(rgb))


def _names(i: int) -> dict:
    return {
        "images": f"images-{i:05d}.npy",
        "labels": f"labels-{i:05d}.npy",
        "index": f"shard-{i:05d}.json",
    }


def _work_shard(task: dict) -> dict:
    """Decode and store one shard; an existing complete shard with the same files is kept."""
    out, root, names = Path(task["out"]), Path(task["root"]), _names(task["index"])
    index_path = out / names["index"]
    if index_path.exists():
        done = json.loads(index_path.read_text())
        if done.get("planned") == task["files"]:
            return done
    transform = eval_transform(task["input"])
    height, width = task["input"]["img_size"]
    images = np.empty((len(task["files"]), 3, height, width), dtype=np.uint8)
    kept, labels, skipped = [], [], []
    for rel, label in zip(task["files"], task["labels"], strict=True):
        try:
            images[len(kept)] = encode(root / rel, transform)
        except Exception as exc:  # unreadable or corrupt: counted, never fatal
            skipped.append({"file": rel, "reason": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        kept.append(rel)
        labels.append(label)
    _save_npy(out / names["images"], images[: len(kept)])
    _save_npy(out / names["labels"], np.asarray(labels, dtype=np.int64))
    done = {"planned": task["files"], "files": kept, "skipped": skipped, "n": len(kept)}
    _write_json(index_path, done)  # written last: marks the shard complete
    return done


def _worker_init() -> None:
    import torch

    torch.set_num_threads(1)


def _run_tasks(tasks: list[dict], workers: int, bar) -> list[dict]:
    images = sum(len(t["files"]) for t in tasks)
    workers = min(workers, len(tasks), max(1, images // MIN_IMAGES_PER_WORKER))
    if workers <= 1:
        results = []
        for task in tasks:
            results.append(_work_shard(task))
            bar.update(len(task["files"]))
        return results
    import concurrent.futures as cf
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # no fork after torch has started threads
    with cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init) as pool:
        futures = {pool.submit(_work_shard, t): t for t in tasks}
        for fut in cf.as_completed(futures):
            fut.result()
            bar.update(len(futures[fut]["files"]))
        return [f.result() for f in futures]  # in shard order


def _versions() -> dict:
    import PIL
    import timm
    import torch

    return {
        "timm_version": timm.__version__,
        "torch_version": torch.__version__,
        "pillow_version": PIL.__version__,
        "numpy_version": np.__version__,
    }


def _manifest(key, src, inp, listing: Listing, results: list[dict], seconds: float) -> dict:
    skipped = listing.skipped + [s for r in results for s in r["skipped"]]
    label_of = dict(zip(listing.files, listing.labels, strict=True))
    per_class: dict[str, int] = {}
    for name in (listing.classes[label_of[f]] for r in results for f in r["files"]):
        per_class[name] = per_class.get(name, 0) + 1
    return {
        "format": SHARD_FORMAT,
        "hash": key,
        "kind": src["kind"],
        "source": src,
        "source_path": src["path"],
        "input": inp,
        "layout": "uint8 N x 3 x H x W after resize+crop; apply /255 and mean/std at load",
        "label_space": listing.label_space,
        "num_classes": len(listing.classes),
        "classes": listing.classes,
        "counts": {
            "listed": len(listing.files) + len(listing.skipped),
            "images": sum(r["n"] for r in results),
            "skipped": len(skipped),
            "ignored_files": listing.ignored_files,
            "missing_files": listing.missing_files,
        },
        "per_class": per_class,
        "skipped": skipped,
        "shards": [{**_names(i), "n": r["n"]} for i, r in enumerate(results)],
        "prepare_duration_s": round(seconds, 3),
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **_versions(),
    }


def prepare(
    source_cfg: dict,
    input_cfg: dict,
    out_root: str | Path,
    *,
    workers: int = default("dataset.workers"),
    progress: bool = True,
    shard_size: int = 512,
) -> Path:
    """Decode, resize and crop the source once for this input config; return the shard folder.

    A folder whose manifest exists is reused as it is; shards finished by an interrupted
    run are kept. `input_cfg` may be a catalog row, a timm data config or an input config.
    """
    src, inp = normalize_source(source_cfg), input_config(input_cfg)
    key = shard_key(src, inp)
    out = Path(out_root) / key
    manifest_path = out / MANIFEST
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("hash") == key and manifest.get("format") == SHARD_FORMAT:
            return out
    start = time.perf_counter()
    if src["kind"] == "synthetic":  # energy needs no data; accuracy has nothing to measure
        manifest = {"format": SHARD_FORMAT, "hash": key, "kind": "synthetic", "source": src}
        _write_json(manifest_path, manifest | {"input": inp, "counts": {"images": 0}})
        return out
    listing = list_source(src)
    tasks = [
        {
            "index": i,
            "out": str(out),
            "root": str(listing.root),
            "input": inp,
            "files": listing.files[lo : lo + shard_size],
            "labels": listing.labels[lo : lo + shard_size],
        }
        for i, lo in enumerate(range(0, len(listing.files), shard_size))
    ]
    from tqdm import tqdm

    with tqdm(
        total=len(listing.files),
        desc=f"prepare {key}",
        unit="img",
        file=sys.stderr,
        disable=not progress,
    ) as bar:
        results = _run_tasks(tasks, workers, bar)
    manifest = _manifest(key, src, inp, listing, results, time.perf_counter() - start)
    _write_json(manifest_path, manifest)  # written last: its presence means complete
    return out


def save_arrays(out: str | Path, images: np.ndarray, labels, *, classes=None, shard_size=512):
    """Write uint8 N x 3 x H x W images + labels as a shard folder (tests, other sources)."""
    out = Path(out)
    images, labels = np.asarray(images, dtype=np.uint8), np.asarray(labels, dtype=np.int64)
    if images.ndim != 4 or images.shape[1] != 3 or len(images) != len(labels):
        raise ValueError("images must be N x 3 x H x W uint8 with one label each")
    shards = []
    for i, lo in enumerate(range(0, len(images), shard_size)):
        names = _names(i)
        _save_npy(out / names["images"], images[lo : lo + shard_size])
        _save_npy(out / names["labels"], labels[lo : lo + shard_size])
        shards.append({"images": names["images"], "labels": names["labels"]})
        shards[-1]["n"] = len(labels[lo : lo + shard_size])
    classes = classes or [str(c) for c in range(int(labels.max()) + 1)]
    manifest = {
        "format": SHARD_FORMAT,
        "hash": "",
        "kind": "arrays",
        "input": {"img_size": list(images.shape[2:])},
        "label_space": "folder",
        "num_classes": len(classes),
        "classes": list(classes),
        "counts": {"images": len(labels), "skipped": 0},
        "shards": shards,
    }
    _write_json(out / MANIFEST, manifest)
    return out


# ---------------------------------------------------------------- reading


def read_manifest(shard_dir: str | Path) -> dict:
    path = Path(shard_dir) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"{shard_dir} holds no {MANIFEST}: run prepare first")
    return json.loads(path.read_text())


def iter_uint8(shard_dir: str | Path, batch_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Batches of (uint8 images, labels) read memory-mapped, batches spanning shard ends."""
    shard_dir = Path(shard_dir)
    pending_x, pending_y, pending_n = [], [], 0
    for shard in read_manifest(shard_dir).get("shards", []):
        if shard["n"] == 0:
            continue
        x = np.load(shard_dir / shard["images"], mmap_mode="r")
        y = np.load(shard_dir / shard["labels"])
        lo = 0
        while lo < len(y):
            take = min(batch_size - pending_n, len(y) - lo)
            pending_x.append(x[lo : lo + take])
            pending_y.append(y[lo : lo + take])
            pending_n += take
            lo += take
            if pending_n == batch_size:
                yield np.concatenate(pending_x), np.concatenate(pending_y)
                pending_x, pending_y, pending_n = [], [], 0
    if pending_n:
        yield np.concatenate(pending_x), np.concatenate(pending_y)


def normalize(images_u8, mean, std):
    """uint8 N x 3 x H x W -> float32, as timm's ToTensor then Normalize compute it."""
    import torch

    x = torch.as_tensor(images_u8).to(torch.float32).div(255)
    mean_t = torch.as_tensor(mean, dtype=torch.float32, device=x.device).view(-1, 1, 1)
    std_t = torch.as_tensor(std, dtype=torch.float32, device=x.device).view(-1, 1, 1)
    return x.sub(mean_t).div(std_t)


def shard_batches(shard_dir, batch_size: int, mean, std, device: str = "cpu"):
    """Normalised float batches (x on `device`, y int64 on `device`) from a shard folder."""
    import torch

    for images, labels in iter_uint8(shard_dir, batch_size):
        x = torch.from_numpy(np.ascontiguousarray(images)).to(device)
        yield normalize(x, mean, std), torch.from_numpy(labels).to(device)
