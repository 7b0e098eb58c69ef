"""Reading image sources: which files, with which labels, in timm's ImageNet class order.

A source is a small dict from the config (`dataset:`):
    kind       synthetic | imagefolder | imagenet-val
    path       the folder with the images
    labels     (imagenet-val, flat layout) a CSV: LOC_val_solution.csv or `file,label`
    per_class  keep N images per class (seeded)
    max_images keep N images in all (seeded; after per_class)
    seed       the subset's seed (default 0)

Listing only names files and labels; nothing is decoded here (see `shards` for that).
ImageNet labels are indices into timm's class order (the sorted WordNet ids of
`timm.data.ImageNetInfo`), which is the order of every timm ImageNet-1k classifier head.
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("synthetic", "imagefolder", "imagenet-val")
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"}
# Where the Kaggle ImageNet download keeps its labels, relative to the flat image folder.
SOLUTION_NAMES = ("LOC_val_solution.csv",)
SOLUTION_SEARCH_DEPTH = 4  # parent folders searched for SOLUTION_NAMES


class DatasetError(ValueError):
    """The configured source cannot be read (missing folder, unknown class, no labels)."""


@dataclass
class Listing:
    """The images a source yields, before decoding: relative paths and integer labels."""

    root: Path
    files: list[str]  # relative to root, posix style
    labels: list[int]
    classes: list[str]  # label index -> class name (wnid for ImageNet)
    label_space: str  # "imagenet-1k" (timm's class order) or "folder" (sorted folder names)
    skipped: list[dict] = field(default_factory=list)  # {"file", "reason"} found but unusable
    ignored_files: int = 0  # files that are not images by suffix (READMEs, ...)
    missing_files: int = 0  # labels in a CSV whose file is absent


def imagenet_wnids() -> list[str]:
    """The 1,000 ImageNet-1k WordNet ids in timm's class order."""
    from timm.data import ImageNetInfo

    return list(ImageNetInfo("imagenet-1k").label_names())


def normalize_source(source_cfg: dict | None) -> dict:
    """The source config with defaults filled and the path made absolute (it keys the cache)."""
    cfg = dict(source_cfg or {})
    kind = cfg.get("kind", "synthetic")
    if kind not in KINDS:
        raise DatasetError(f"dataset kind '{kind}' is not one of {', '.join(KINDS)}")
    out = {"kind": kind}
    if kind == "synthetic":
        return out
    if not cfg.get("path"):
        raise DatasetError(f"dataset kind '{kind}' needs a path")
    out["path"] = str(Path(cfg["path"]).expanduser().resolve())
    out["labels"] = str(Path(cfg["labels"]).expanduser().resolve()) if cfg.get("labels") else None
    out["per_class"] = _positive_or_none(cfg.get("per_class"), "per_class")
    out["max_images"] = _positive_or_none(cfg.get("max_images"), "max_images")
    out["seed"] = int(cfg.get("seed", 0) or 0)
    return out


def _positive_or_none(value, name: str) -> int | None:
    if value is None:
        return None
    if int(value) < 1:
        raise DatasetError(f"dataset {name} must be >= 1, got {value}")
    return int(value)


def _is_image(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES


def _visible_files(folder: Path, recursive: bool) -> list[Path]:
    pattern = folder.rglob("*") if recursive else folder.iterdir()
    files = [p for p in pattern if p.is_file() and not p.name.startswith(".")]
    return sorted(files, key=lambda p: p.relative_to(folder).as_posix())


def _class_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def _from_class_folders(root: Path, class_dirs: list[Path], imagenet: bool) -> Listing:
    names = [d.name for d in class_dirs]
    if imagenet:
        wnids = imagenet_wnids()
        index = {w: i for i, w in enumerate(wnids)}
        unknown = [n for n in names if n not in index]
        if unknown:
            raise DatasetError(
                f"{root}: class folders that are not ImageNet-1k wnids: {unknown[:5]}"
                f"{' ...' if len(unknown) > 5 else ''}"
            )
        classes, label_of = wnids, index
    else:
        classes, label_of = names, {n: i for i, n in enumerate(names)}
    listing = Listing(root, [], [], classes, "imagenet-1k" if imagenet else "folder")
    for d in class_dirs:
        for f in _visible_files(d, recursive=True):
            if not _is_image(f):
                listing.ignored_files += 1
                continue
            listing.files.append(f.relative_to(root).as_posix())
            listing.labels.append(label_of[d.name])
    return listing


def _list_imagefolder(root: Path) -> Listing:
    dirs = _class_dirs(root)
    if not dirs:
        raise DatasetError(f"{root}: no class folders (expected <root>/<class>/<image>)")
    wnids = set(imagenet_wnids())
    # Folders named by ImageNet wnids get timm's class indices, so pretrained heads line up.
    return _from_class_folders(root, dirs, imagenet=all(d.name in wnids for d in dirs))


def _find_solution(root: Path) -> Path | None:
    for folder in [root, *list(root.parents)[:SOLUTION_SEARCH_DEPTH]]:
        for name in SOLUTION_NAMES:
            if (folder / name).is_file():
                return folder / name
    return None


def read_label_csv(path: Path) -> dict[str, str]:
    """File stem -> label token, from LOC_val_solution.csv or a `file,label` CSV.

    LOC_val_solution.csv (`ImageId,PredictionString`): the wnid is the first token of
    PredictionString. A `file,label` CSV (header optional): file with or without suffix,
    label a wnid or an integer index in timm's class order.
    """
    with open(path, newline="") as fh:
        rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    if not rows:
        raise DatasetError(f"{path}: empty labels file")
    header = [c.strip().lower() for c in rows[0]]
    if "imageid" in header and "predictionstring" in header:
        i, j = header.index("imageid"), header.index("predictionstring")
        return {Path(r[i].strip()).stem: r[j].split()[0] for r in rows[1:] if r[j].strip()}
    if len(header) < 2:
        raise DatasetError(f"{path}: expected two columns (file,label)")
    if not _is_label_token(rows[0][1].strip()):
        rows = rows[1:]  # a header row
    return {Path(r[0].strip()).stem: r[1].strip() for r in rows}


def _is_label_token(token: str) -> bool:
    return token.isdigit() or (len(token) == 9 and token[0] == "n" and token[1:].isdigit())


def _list_flat(root: Path, labels_csv: Path) -> Listing:
    wnids = imagenet_wnids()
    index = {w: i for i, w in enumerate(wnids)}
    by_stem = read_label_csv(labels_csv)
    listing = Listing(root, [], [], wnids, "imagenet-1k")
    seen = set()
    for f in _visible_files(root, recursive=False):
        rel = f.relative_to(root).as_posix()
        if not _is_image(f):
            listing.ignored_files += 1
            continue
        token = by_stem.get(f.stem)
        if token is None:
            listing.skipped.append({"file": rel, "reason": f"no label in {labels_csv.name}"})
            continue
        label = int(token) if token.isdigit() else index.get(token)
        if label is None or not 0 <= label < len(wnids):
            listing.skipped.append({"file": rel, "reason": f"unknown label '{token}'"})
            continue
        seen.add(f.stem)
        listing.files.append(rel)
        listing.labels.append(label)
    unusable = {Path(s["file"]).stem for s in listing.skipped}
    listing.missing_files = len(set(by_stem) - seen - unusable)
    return listing


def _list_imagenet_val(root: Path, labels: str | None) -> Listing:
    dirs = _class_dirs(root)
    flat_images = any(_is_image(f) for f in _visible_files(root, recursive=False))
    if labels is None and dirs and not flat_images:
        return _from_class_folders(root, dirs, imagenet=True)  # raises on non-wnid folders
    labels_csv = Path(labels) if labels else _find_solution(root)
    if labels_csv is None:
        raise DatasetError(
            f"{root}: neither <wnid>/ class folders nor a labels CSV; set dataset.labels "
            f"(LOC_val_solution.csv or a file,label CSV)"
        )
    if not labels_csv.is_file():
        raise DatasetError(f"labels file {labels_csv} does not exist")
    return _list_flat(root, labels_csv)


def apply_subset(listing: Listing, per_class: int | None, max_images: int | None, seed: int):
    """Keep a seeded random subset; the kept files stay in listing order."""
    rng = random.Random(seed)
    keep = list(range(len(listing.files)))
    if per_class is not None:
        by_class: dict[int, list[int]] = {}
        for i in keep:
            by_class.setdefault(listing.labels[i], []).append(i)
        keep = sorted(
            i for idx in by_class.values() for i in rng.sample(idx, min(per_class, len(idx)))
        )
    if max_images is not None and len(keep) > max_images:
        keep = sorted(rng.sample(keep, max_images))
    listing.files = [listing.files[i] for i in keep]
    listing.labels = [listing.labels[i] for i in keep]
    return listing


def list_source(source_cfg: dict) -> Listing:
    """The files and labels of a configured source (subset applied); raises DatasetError."""
    cfg = normalize_source(source_cfg)
    if cfg["kind"] == "synthetic":
        raise DatasetError("a synthetic source has no files")
    root = Path(cfg["path"])
    if not root.is_dir():
        raise DatasetError(f"dataset path {root} is not a folder")
    if cfg["kind"] == "imagefolder":
        listing = _list_imagefolder(root)
    else:
        listing = _list_imagenet_val(root, cfg["labels"])
    if not listing.files:
        raise DatasetError(f"{root}: no images found")
    return apply_subset(listing, cfg["per_class"], cfg["max_images"], cfg["seed"])
