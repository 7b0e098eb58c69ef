"""The data contract: column names (units in the name), dtypes, and atomic read/write.

Every stage writes its tables through `write_table`, so a killed run never leaves a
half-written parquet behind and Snakemake can resume from what exists.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd

# Catalog: static properties of each model (one row per model).
CATALOG_COLUMNS: dict[str, str] = {
    "model": "string",  # timm name as resolved, `arch.tag` (tag empty for untagged archs)
    "architecture": "string",
    "pretrained_tag": "string",
    "family": "string",  # the timm module that defines the architecture
    "status": "string",  # "ok" or "failed"
    "reason": "string",  # why a row failed; empty when ok
    "count_device": "string",  # "meta" or "cpu": where FLOPs/activations were counted
    "num_classes": "Int64",
    "params": "Int64",
    "input_channels": "Int64",
    "input_height": "Int64",
    "input_width": "Int64",
    "crop_pct": "float64",
    "crop_mode": "string",
    "interpolation": "string",
    "mean": "object",  # list of 3 floats
    "std": "object",
    "flops_per_image": "float64",
    "macs_per_image": "float64",
    "activations_per_image": "float64",
    "count_duration_s": "float64",
    "timm_version": "string",
    "torch_version": "string",
}


def empty_frame(columns: dict[str, str]) -> pd.DataFrame:
    """A zero-row frame with the declared dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in columns.items()})


def conform(df: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """Order and type `df` by the contract; a missing column is an error, not a silent NaN."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"table lacks declared columns: {missing}")
    extra = [c for c in df.columns if c not in columns]
    if extra:
        raise ValueError(f"table has undeclared columns: {extra}")
    out = df[list(columns)].copy()
    for col, dtype in columns.items():
        if dtype != "object":
            out[col] = out[col].astype(dtype)
    return out.reset_index(drop=True)


def _atomic(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table(df: pd.DataFrame, path: str | os.PathLike, columns: dict[str, str] | None = None):
    """Write a parquet (or .csv) atomically: temp file in the same folder, then rename."""
    path = Path(path)
    if columns is not None:
        df = conform(df, columns)
    if path.suffix == ".csv":
        _atomic(path, lambda tmp: df.to_csv(tmp, index=False))
    else:
        _atomic(path, lambda tmp: df.to_parquet(tmp, index=False))


def write_text(text: str, path: str | os.PathLike) -> None:
    """Write a text file atomically."""
    _atomic(Path(path), lambda tmp: Path(tmp).write_text(text))


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    path = Path(path)
    if path.suffix == ".csv":
        return pd.read_csv(path)
    return pd.read_parquet(path)
