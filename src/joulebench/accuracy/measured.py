"""The accuracy stage: measured top-1/top-5 on prepared shards, only with real weights.

Weights are looked for on this machine only, in this order: the config's `checkpoints:`
folder, the Hugging Face cache, torch.hub's cache (timm weights hosted by URL). Nothing is
downloaded unless `allow_download` is set. A model without local weights gets a row with
source "none" and the reason: an accuracy of random weights is never reported. A model timm
can re-parameterise is evaluated in its fused deploy form, the form its energy is measured in.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd

from joulebench.accuracy.shards import input_config, read_manifest, shard_batches
from joulebench.config_schema import default
from joulebench.safe_text import file_name
from joulebench.table_io import write_table
from joulebench.tables import ACCURACY_COLUMNS, short_reason

CHECKPOINT_SUFFIXES = (".safetensors", ".pth", ".pth.tar", ".pt", ".bin")
HF_FILENAMES = ("model.safetensors", "pytorch_model.bin")  # timm's order on the Hub
IMAGENET_CLASSES = 1000
NOTE_MAX_CHARS = 300


def evaluate(
    model, shard_dir, mean, std, batch_size: int = 64, device: str = "cpu", progress: bool = False
) -> tuple[float, float, int]:
    """(top-1 %, top-5 %, images) of `model` on a shard folder; top-k caps at the class count."""
    import torch
    from tqdm import tqdm

    model.eval().to(device)
    hits1 = hits5 = n = 0
    total = read_manifest(shard_dir).get("counts", {}).get("images")
    with torch.inference_mode(), tqdm(total=total, disable=not progress, file=sys.stderr) as bar:
        for x, y in shard_batches(shard_dir, batch_size, mean, std, device):
            logits = model(x)
            top = logits.topk(min(5, logits.shape[1]), dim=1).indices
            hit = top == y[:, None]
            hits1 += int(hit[:, 0].sum())
            hits5 += int(hit.any(dim=1).sum())
            n += len(y)
            bar.update(len(y))
    if n == 0:
        raise ValueError(f"{shard_dir} holds no images")
    return 100.0 * hits1 / n, 100.0 * hits5 / n, n


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache, read from the environment at call time."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(
        os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface"
    )
    return Path(home).expanduser() / "hub"


def _in_checkpoints(name: str, checkpoints: Path) -> Path | None:
    name = file_name(name)  # never a path outside the folder
    for suffix in CHECKPOINT_SUFFIXES:
        if (checkpoints / f"{name}{suffix}").is_file():
            return checkpoints / f"{name}{suffix}"
    for filename in HF_FILENAMES:  # a downloaded Hub folder: <checkpoints>/<name>/model.safetensors
        if (checkpoints / name / filename).is_file():
            return checkpoints / name / filename
    return None


def _in_hf_cache(cfg) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    if not cfg.hf_hub_id:
        return None
    names = [cfg.hf_hub_filename] if cfg.hf_hub_filename else HF_FILENAMES
    for filename in names:
        hit = try_to_load_from_cache(cfg.hf_hub_id, filename, cache_dir=hf_cache_dir())
        if isinstance(hit, str) and Path(hit).is_file():
            return Path(hit)
    return None


def _in_torch_hub(cfg) -> Path | None:
    import torch

    if not cfg.url:
        return None
    path = Path(torch.hub.get_dir()) / "checkpoints" / Path(urlparse(cfg.url).path).name
    return path if path.is_file() else None


def find_weights(name: str, checkpoints: str | Path | None = None) -> tuple[Path | None, str]:
    """(weights file, where it was found) or (None, why not); never touches the network."""
    from timm.models import get_pretrained_cfg

    if checkpoints is not None:
        hit = _in_checkpoints(name, Path(checkpoints))
        if hit is not None:
            return hit, "checkpoints"
    cfg = get_pretrained_cfg(name)
    if cfg is None or "." not in name:
        return None, f"{name} has no pretrained weights in timm"
    for where, look in (("hf-cache", _in_hf_cache), ("torch-hub-cache", _in_torch_hub)):
        hit = look(cfg)
        if hit is not None:
            return hit, where
    places = ([f"{checkpoints}/"] if checkpoints is not None else []) + [
        f"the Hugging Face cache ({hf_cache_dir()})",
        "the torch.hub cache",
    ]
    return None, f"no local pretrained weights (looked in {', '.join(places)})"


def load_pretrained(
    name: str, checkpoints: str | Path | None = None, allow_download: bool = False
) -> tuple[object | None, str]:
    """(model with its pretrained weights, where from) or (None, why not)."""
    import timm

    path, where = find_weights(name, checkpoints)
    try:
        if path is not None:
            # Through timm's pretrained path, so the model's checkpoint filter applies.
            overlay = {"file": str(path)}
            model = timm.create_model(name, pretrained=True, pretrained_cfg_overlay=overlay)
            return model, f"{where}: {path}"
        if allow_download:  # huggingface_hub itself honours HF_HUB_OFFLINE here
            return timm.create_model(name, pretrained=True), "downloaded"
    except Exception as exc:
        return None, f"loading weights failed ({where}): {type(exc).__name__}: {exc}"
    return None, where


def _row(name: str, img_size, **values) -> dict:
    row = {c: None for c in ACCURACY_COLUMNS}
    row.update(model=name, img_size=img_size, top1=math.nan, top5=math.nan)
    row.update(top1_real=math.nan, top1_v2=math.nan, accuracy_source="none")
    row.update(accuracy_dataset="", accuracy_note="")
    row.update(values)
    row["accuracy_note"] = short_reason(str(row["accuracy_note"]), NOTE_MAX_CHARS)
    return row


def _default_img_size(name: str):
    from timm.models import get_pretrained_cfg

    cfg = get_pretrained_cfg(name)
    return int(cfg.input_size[-2]) if cfg is not None and cfg.input_size else None


def dataset_label(manifest: dict) -> str:
    """E.g. 'imagenet-val (1000 images, per_class=1, seed=0)'."""
    src = manifest.get("source", {})
    subset = [f"{k}={src[k]}" for k in ("per_class", "max_images") if src.get(k)]
    if subset:
        subset.append(f"seed={src.get('seed', 0)}")
    n = manifest.get("counts", {}).get("images", 0)
    return f"{manifest.get('kind', '')} ({', '.join([f'{n} images', *subset])})"


def why_not_measurable(manifest: dict) -> str:
    """Why a shard folder cannot give ImageNet-1k accuracy; empty when it can."""
    if manifest.get("kind") == "synthetic":
        return "dataset is synthetic: no labels"
    if manifest.get("label_space") != "imagenet-1k":
        return "dataset classes are not ImageNet-1k wnids"
    if not manifest.get("counts", {}).get("images"):
        return "dataset holds no readable images"
    return ""


def measure_one(name, shard_dir, manifest, *, checkpoints, batch_size, device, allow_download):
    """One ACCURACY_COLUMNS row: measured, or none with the reason."""
    from timm.data import resolve_model_data_config

    img_size = _default_img_size(name)
    why = why_not_measurable(manifest)
    if why:
        return _row(name, img_size, accuracy_note=why)
    model, origin = load_pretrained(name, checkpoints, allow_download)
    if model is None:
        return _row(name, img_size, accuracy_note=origin)
    data_cfg = resolve_model_data_config(model)
    img_size = int(data_cfg["input_size"][-2])
    if getattr(model, "num_classes", None) != IMAGENET_CLASSES:
        note = f"model has {model.num_classes} classes, ImageNet-1k needs {IMAGENET_CLASSES}"
        return _row(name, img_size, accuracy_note=note)
    wanted = input_config(data_cfg)
    if manifest.get("input") != wanted:
        note = f"shards were prepared for {manifest.get('input')}, the model needs {wanted}"
        return _row(name, img_size, accuracy_note=note)
    model, form = _deploy_form(model, name, checkpoints, allow_download)
    top1, top5, n = evaluate(
        model, shard_dir, data_cfg["mean"], data_cfg["std"], batch_size, device
    )
    return _row(
        name,
        img_size,
        top1=top1,
        top5=top5,
        accuracy_source="measured",
        accuracy_dataset=dataset_label(manifest),
        accuracy_images=n,
        accuracy_note=f"weights from {origin}" + (f"; {form}" if form else ""),
    )


def _deploy_form(model, name, checkpoints, allow_download):
    """(model, note): the fused deploy form the energy is measured in, where timm has one.

    Fusing folds BatchNorm into convolutions: the same function up to float rounding. Where
    it fails, the weights are loaded again and the model is evaluated as built.
    """
    from joulebench.catalog.deploy_form import to_deploy_form

    model.eval()
    try:
        model, fused = to_deploy_form(model)
    except Exception as exc:
        model, _ = load_pretrained(name, checkpoints, allow_download)
        return model.eval(), f"evaluated as built (reparameterize failed: {exc})"
    return model, "evaluated in deploy form (reparameterized)" if fused else ""


def measure_models(
    models: Iterable[str],
    shard_dir: str | Path,
    *,
    checkpoints: str | Path | None = None,
    batch_size: int = default("accuracy.batch_size"),
    device: str = default("accuracy.device"),
    allow_download: bool = False,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
) -> pd.DataFrame:
    """ACCURACY_COLUMNS rows for models sharing one shard folder; a failure is a row."""
    from joulebench.core.backends import bound_device

    bound = bound_device(device)
    manifest = read_manifest(shard_dir)
    rows = []
    for name in models:
        try:
            row = measure_one(
                name,
                shard_dir,
                manifest,
                checkpoints=checkpoints,
                batch_size=batch_size,
                device=device,
                allow_download=allow_download,
            )
        except Exception as exc:  # one model never takes the job down
            row = _row(name, None, accuracy_note=f"evaluation failed: {type(exc).__name__}: {exc}")
        rows.append(row)
        bound.free_memory()  # and the device's cached memory (a CUDA GPU's)
        shown = f"top1 {row['top1']:.3f}" if row["accuracy_source"] == "measured" else "none"
        log(f"accuracy {name}: {shown} ({row['accuracy_note']})")
    return pd.DataFrame(rows, columns=list(ACCURACY_COLUMNS)).astype(
        {c: d for c, d in ACCURACY_COLUMNS.items() if d != "object"}
    )


def run_accuracy(models: Iterable[str], shard_dir, output, **options) -> pd.DataFrame:
    """`joulebench accuracy`: measured top-1/top-5 of models sharing one shard folder, where
    their weights are on this machine (measure_models' options), written to `output`."""
    rows = measure_models(models, shard_dir, **options)
    write_table(rows, output, ACCURACY_COLUMNS)
    return rows
