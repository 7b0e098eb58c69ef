"""timm's published ImageNet accuracy: shipped with joulebench, checked by sha256.

Three tables from the timm repository's `results/` folder: ImageNet-1k val, the same images
with ReaL labels, and ImageNetV2 matched-frequency. The copies pinned at `TIMM_COMMIT` ship
inside the package (`reference_data/`, Apache-2.0, with SOURCE.md), so accuracy needs no
network: compute nodes rarely have one. Other sources are options: a local folder
(`local_dir`), or another timm commit fetched once into a cache (`commit`). A table that
cannot be had (a changed shipped file, offline, checksum mismatch) gives a warning and its
accuracy is left missing: energy results never wait on it.

The join key is (`arch.tag`, img_size): a different resolution is a different accuracy,
so a model published only at other sizes gets NaN and a note naming those sizes.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
import sys
import urllib.request
import warnings
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import pandas as pd

from joulebench.config_schema import default
from joulebench.safe_text import quantity
from joulebench.table_io import atomic_write, write_table
from joulebench.table_io import read_table as read_any_table
from joulebench.tables import ACCURACY_COLUMNS

TIMM_REPO = "huggingface/pytorch-image-models"
# The snapshot the shipped files were copied from (reference_data/SOURCE.md); the three files
# last changed in 4e5207c7bb6592474ca56e28b2cf85be8f1a550f and are identical here.
TIMM_COMMIT = "aa4b5850c1543fa488abf260f18390eda46cf85d"
COMMIT_PATTERN = re.compile(r"[0-9a-f]{40}")  # a full commit: a branch name would move
URL = "https://raw.githubusercontent.com/{repo}/{commit}/results/{file}"
TIMEOUT_S = default("reference.timeout_s")
CACHE_DIR = default("reference.cache_dir")
SHIPPED_PACKAGE_DIR = "reference_data"  # inside joulebench.accuracy


@dataclass(frozen=True)
class TableSpec:
    file: str
    sha256: str
    description: str


TABLES: dict[str, TableSpec] = {
    "imagenet": TableSpec(
        "results-imagenet.csv",
        "30972bf7c7ab451bbd4480ec6116b13d0a84441c57bbc946896fd312264acfcd",
        "ImageNet-1k val, 50000 images",
    ),
    "imagenet-real": TableSpec(
        "results-imagenet-real.csv",
        "e94696aed665475e4d0235195733775c5e1b3f36d6f5f7de99f4386e7ed11630",
        "ImageNet-1k val with ReaL labels",
    ),
    "imagenetv2": TableSpec(
        "results-imagenetv2-matched-frequency.csv",
        "1d066d8897c40224b14f3cf1d02029c49ebdc56b761ba9a3841bd3bdd3bd0a8e",
        "ImageNetV2 matched-frequency, 10000 images",
    ),
}


class ReferenceWarning(UserWarning):
    """A reference table is unavailable or not the pinned one; the run goes on without it."""


@dataclass
class ReferenceTables:
    """The tables that could be had (name -> DataFrame or None) and why others are missing."""

    frames: dict[str, pd.DataFrame | None] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    origin: str = ""  # "timm@aa4b585, shipped copy", "timm@<commit>, fetched" or the folder
    sha256: dict[str, str] = field(default_factory=dict)  # of each file read


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _warn(message: str) -> str:
    warnings.warn(message, ReferenceWarning, stacklevel=3)
    return message


def check_commit(commit: str) -> str:
    """A full 40-digit lowercase commit hash (it goes into a URL; a branch name would move)."""
    if not isinstance(commit, str) or not COMMIT_PATTERN.fullmatch(commit):
        raise ValueError(
            f"reference.commit must be a full 40-hex-digit timm commit, got {commit!r}"
        )
    return commit


def shipped_dir():
    """The folder of the copies shipped inside the package (a Traversable)."""
    return resources.files("joulebench.accuracy").joinpath(SHIPPED_PACKAGE_DIR)


def _download(url: str, timeout_s: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return response.read()


def _cache_folder(cache_dir: Path, commit: str) -> Path:
    """The pinned commit's files live in cache_dir itself; any other commit's in a subfolder."""
    return cache_dir if commit == TIMM_COMMIT else cache_dir / commit


def _cached(path: Path, spec: TableSpec, pinned: bool) -> bool:
    if not path.is_file():
        return False
    return not pinned or sha256_of(path.read_bytes()) == spec.sha256


def fetch_tables(
    cache_dir: str | Path = CACHE_DIR,
    *,
    commit: str = TIMM_COMMIT,
    timeout_s: float = TIMEOUT_S,
    offline: bool = False,
) -> tuple[dict[str, Path | None], dict[str, str]]:
    """Make each table of `commit` present in the cache; ({name: path or None}, {name: note}).

    The pinned commit's files are checked against their sha256, cached or downloaded; another
    commit's cannot be (its hashes are unknown), so they are used as fetched and their sha256
    is recorded by `load_tables`. Downloads come from raw.githubusercontent.com and are written
    atomically, so a killed run never leaves half a file. Failures warn.
    """
    commit = check_commit(commit)
    pinned = commit == TIMM_COMMIT
    folder = _cache_folder(Path(cache_dir), commit)
    paths: dict[str, Path | None] = {}
    notes: dict[str, str] = {}
    for name, spec in TABLES.items():
        path = folder / spec.file
        if _cached(path, spec, pinned):
            paths[name] = path
            continue
        paths[name] = None
        url = URL.format(repo=TIMM_REPO, commit=commit, file=spec.file)
        if offline:
            notes[name] = _warn(f"{spec.file}: not cached and offline; reference accuracy missing")
            continue
        try:
            data = _download(url, timeout_s)
        except Exception as exc:  # offline, DNS, HTTP error, timeout
            notes[name] = _warn(
                f"{spec.file}: could not fetch {url} ({type(exc).__name__}: {exc}); "
                "reference accuracy missing. Leave reference.commit unset to use the shipped "
                "copy, or set reference.local_dir to a folder with the file."
            )
            continue
        if pinned and sha256_of(data) != spec.sha256:
            notes[name] = _warn(
                f"{spec.file}: sha256 {sha256_of(data)[:12]}... is not the pinned "
                f"{spec.sha256[:12]}...; not used, reference accuracy missing"
            )
            continue
        atomic_write(path, lambda tmp, data=data: Path(tmp).write_bytes(data))
        paths[name] = path
    return paths, notes


def parse_table(data: bytes) -> pd.DataFrame:
    """A timm results CSV with numeric columns (param_count is written as "1,013.01")."""
    df = pd.read_csv(io.BytesIO(data), thousands=",")
    df["model"] = df["model"].astype(str)
    df["img_size"] = df["img_size"].astype(int)
    return df


def read_table(path: str | Path) -> pd.DataFrame:
    return parse_table(Path(path).read_bytes())


def load_shipped() -> ReferenceTables:
    """The copies shipped with joulebench, each used only if its sha256 is the pinned one."""
    tables = ReferenceTables(origin=f"timm@{TIMM_COMMIT[:7]}, shipped copy")
    folder = shipped_dir()
    for name, spec in TABLES.items():
        tables.frames[name] = None
        try:
            data = folder.joinpath(spec.file).read_bytes()
            tables.sha256[name] = sha256_of(data)
            problem = (
                f"has sha256 {tables.sha256[name][:12]}..., not the pinned {spec.sha256[:12]}...: "
                "the copy was changed; not used, reference accuracy missing. Restore it (git "
                "checkout / reinstall) or set reference.local_dir."
                if tables.sha256[name] != spec.sha256
                else ""
            )
        except OSError as exc:
            problem = (
                f"is missing from this joulebench install ({type(exc).__name__}: {exc}); "
                "reference accuracy missing. Reinstall joulebench, or set reference.local_dir "
                "or reference.commit."
            )
        if problem:
            tables.notes[name] = _warn(f"shipped {spec.file} {problem}")
        else:
            tables.frames[name] = parse_table(data)
    return tables


def _load_local(local_dir: str | Path, tables: ReferenceTables) -> ReferenceTables:
    """Local copies are used as given; one that is not the pinned file is flagged."""
    tables.origin = str(local_dir)
    for name, spec in TABLES.items():
        path = Path(local_dir) / spec.file
        if not path.is_file():
            tables.frames[name] = None
            tables.notes[name] = _warn(f"{spec.file} not in {local_dir}; accuracy missing")
            continue
        data = path.read_bytes()
        tables.sha256[name] = sha256_of(data)
        if tables.sha256[name] != spec.sha256:
            _warn(f"{path} is not the pinned timm@{TIMM_COMMIT[:7]} file")
        tables.frames[name] = parse_table(data)
    return tables


def check_source(local_dir: str | Path | None = None, commit: str | None = None) -> None:
    """One source of tables at most: a local folder or a commit (the study checks it before
    any job: prerun.check_settings)."""
    if local_dir is not None and commit is not None:
        raise ValueError("reference: set local_dir or commit, not both")
    if commit is not None:
        check_commit(commit)


def load_tables(
    cache_dir: str | Path = CACHE_DIR,
    *,
    local_dir: str | Path | None = None,
    commit: str | None = None,
    timeout_s: float = TIMEOUT_S,
    offline: bool = False,
) -> ReferenceTables:
    """The reference tables: the shipped copy unless `local_dir` or `commit` names another.

    `local_dir`: a folder holding the three files, used as given (one that is not the pinned
    file, e.g. from a newer timm checkout, is used with a warning). `commit`: a timm commit
    fetched once into `cache_dir` (never when `offline`: then only what is cached).
    """
    check_source(local_dir, commit)
    tables = ReferenceTables()
    if local_dir is not None:
        return _load_local(local_dir, tables)
    if commit is None:
        return load_shipped()
    commit = check_commit(commit)
    pinned = commit == TIMM_COMMIT
    tables.origin = f"timm@{commit[:7]}, fetched" + ("" if pinned else " (not the pinned commit)")
    if not pinned:
        _warn(
            f"reference.commit {commit[:7]} is not the pinned timm@{TIMM_COMMIT[:7]}: its "
            "tables cannot be checked by sha256 (accuracy_dataset records theirs)"
        )
    paths, tables.notes = fetch_tables(
        cache_dir, commit=commit, timeout_s=timeout_s, offline=offline
    )
    for name, path in paths.items():
        data = path.read_bytes() if path else None
        tables.sha256.update({name: sha256_of(data)} if data is not None else {})
        tables.frames[name] = parse_table(data) if data is not None else None
    return tables


def _lookup(frame: pd.DataFrame | None, model: str, img_size) -> pd.Series | None:
    if frame is None or img_size is None:
        return None
    hit = frame[(frame["model"] == model) & (frame["img_size"] == int(img_size))]
    return None if hit.empty else hit.iloc[0]


def reference_row(model: str, img_size, tables: ReferenceTables) -> dict:
    row = {c: None for c in ACCURACY_COLUMNS}
    row.update(model=model, img_size=img_size, accuracy_source="none", accuracy_dataset="")
    row.update(top1=math.nan, top5=math.nan, top1_real=math.nan, top1_v2=math.nan)
    real = _lookup(tables.frames.get("imagenet-real"), model, img_size)
    v2 = _lookup(tables.frames.get("imagenetv2"), model, img_size)
    row["top1_real"] = float(real["top1"]) if real is not None else math.nan
    row["top1_v2"] = float(v2["top1"]) if v2 is not None else math.nan
    frame = tables.frames.get("imagenet")
    spec = TABLES["imagenet"]
    if frame is None:
        row["accuracy_note"] = f"{spec.file} unavailable: {tables.notes.get('imagenet', '')}"
        return row
    hit = _lookup(frame, model, img_size)
    if hit is not None:
        row.update(top1=float(hit["top1"]), top5=float(hit["top5"]), accuracy_source="reference")
        row["accuracy_dataset"] = (
            f"{spec.file} ({_provenance(tables, 'imagenet')}; {spec.description})"
        )
        row["accuracy_note"] = ""
        return row
    sizes = sorted(frame.loc[frame["model"] == model, "img_size"].unique())
    if sizes:
        row["accuracy_note"] = (
            f"timm publishes {model} at img_size {', '.join(map(str, sizes))}, not {img_size}"
        )
    elif img_size is None:
        row["accuracy_note"] = "no img_size for this model"
    else:
        row["accuracy_note"] = f"{model} is not in timm's {spec.file}"
    return row


def _provenance(tables: ReferenceTables, name: str) -> str:
    """Where a table came from; its sha256 too when it is not the pinned file."""
    digest = tables.sha256.get(name, "")
    if not digest or digest == TABLES[name].sha256:
        return tables.origin
    return f"{tables.origin}, sha256 {digest[:12]}, not the pinned file"


def img_sizes_from_catalog(catalog: pd.DataFrame) -> dict[str, int | None]:
    """model -> its input height from the catalog (timm's tables key on one size)."""
    return {
        m: None if pd.isna(h) else int(h)
        for m, h in zip(catalog["model"], catalog["input_height"], strict=True)
    }


def reference_accuracy(
    models: list[str], img_sizes: dict[str, int], tables: ReferenceTables | dict
) -> pd.DataFrame:
    """ACCURACY_COLUMNS rows: timm's top-1/top-5 at each model's own input size, or NaN + why."""
    if not isinstance(tables, ReferenceTables):
        tables = ReferenceTables(frames=dict(tables), origin="given tables")
    rows = []
    for model in models:
        size = img_sizes.get(model)
        size = None if size is None or pd.isna(size) else int(size)
        rows.append(reference_row(model, size, tables))
    return _frame(rows)


def _frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(ACCURACY_COLUMNS))
    return df.astype({c: d for c, d in ACCURACY_COLUMNS.items() if d != "object"})


def _text(value) -> str:
    return "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def _join(*parts) -> str:
    return "; ".join(t for t in map(_text, parts) if t)


def combine(measured: pd.DataFrame | None, reference: pd.DataFrame) -> pd.DataFrame:
    """One row per model: measured top-1/top-5 where present, else the reference values.

    A measured row keeps timm's ReaL and V2 numbers (always reference) and names the
    reference top-1 in its note for comparison; any other row says why it was not measured.
    """
    by_model = {} if measured is None else {r["model"]: r for r in measured.to_dict("records")}
    rows = []
    for ref in reference.to_dict("records"):
        mine = by_model.pop(ref["model"], None)
        if mine is not None and mine["accuracy_source"] == "measured":
            row = dict(mine, top1_real=ref["top1_real"], top1_v2=ref["top1_v2"])
            if ref["accuracy_source"] == "reference":
                extra = f"reference top1 {ref['top1']:.3f} at {ref['img_size']}"
                row["accuracy_note"] = _join(row["accuracy_note"], extra)
        else:
            row = dict(ref)
            if mine is not None:
                why = f"not measured: {_text(mine['accuracy_note'])}"
                row["accuracy_note"] = _join(ref["accuracy_note"], why)
        rows.append(row)
    rows += list(by_model.values())  # measured models the reference frame did not list
    return _frame(rows)


def run_reference(catalog, output, **settings) -> pd.DataFrame:
    """`joulebench reference`: timm's published accuracy for the catalog's models (path),
    from the config's reference section (load_tables' keys; the shipped copy unless set)."""
    catalog = read_any_table(catalog)
    tables = load_tables(**settings)
    rows = reference_accuracy(list(catalog["model"]), img_sizes_from_catalog(catalog), tables)
    write_table(rows, output, ACCURACY_COLUMNS)
    found = int(rows["top1"].notna().sum())
    print(
        f"reference accuracy ({tables.origin}): {found} of {quantity(len(rows), 'model')} "
        f"-> {output}",
        file=sys.stderr,
    )
    return rows


def run_accuracy_table(reference, measured, output) -> pd.DataFrame:
    """`joulebench accuracy-table`: measured accuracy where there is one, else the reference
    (paths): every value with its source."""
    parts = [read_any_table(p) for p in measured]
    reference = read_any_table(reference)
    rows = combine(pd.concat(parts, ignore_index=True) if parts else None, reference)
    write_table(rows, output, ACCURACY_COLUMNS)
    counts = rows["accuracy_source"].value_counts().to_dict()
    print(f"accuracy: {counts} -> {output}", file=sys.stderr)
    return rows
