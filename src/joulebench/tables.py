"""The data contract: column names (units in the name), dtypes, and atomic read/write.

Every stage writes its tables through `write_table`, so a killed run never leaves a
half-written parquet behind and Snakemake can resume from what exists.
"""

from __future__ import annotations

import glob
import os
import shlex
import tempfile
import time
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
    # True: params and counts above are of timm's fused inference (deploy) form, which
    # differs from the model as built; the *_unfused columns hold those of the model as built
    # (equal to the above when False).
    "reparameterized": "boolean",
    "params_unfused": "Int64",
    "flops_per_image_unfused": "float64",
    "macs_per_image_unfused": "float64",
    "activations_per_image_unfused": "float64",
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Temp files older than this process were left by a write that was killed (kill -9, a node
# lost): nobody will rename them, so the next write of the same file removes them.
_PROCESS_START = time.time()


def remove_stale_temps(path: str | os.PathLike) -> list[Path]:
    """Delete the temp files that interrupted writes of `path` left behind (`.<name>.*.tmp`
    made before this process started); returns what was removed."""
    path = Path(path)
    removed = []
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        try:
            if tmp.stat().st_mtime < _PROCESS_START:
                tmp.unlink()
                removed.append(tmp)
        except FileNotFoundError:
            pass  # gone meanwhile
    return removed


def _atomic(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        # mkstemp makes the file private (0600); results get the usual permissions.
        os.chmod(tmp, 0o666 & ~_umask())
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


class TableError(ValueError):
    """A table that cannot be read; the message names the file and what to do."""


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """A parquet (or .csv) table; TableError naming the file if it is not one, or is damaged."""
    path = Path(path)
    if path.is_dir() or not path.exists():
        raise TableError(f"no such file: {path}")
    if path.suffix == ".csv":
        try:
            return pd.read_csv(path)
        except UnicodeDecodeError as err:
            raise TableError(
                f"{path}: not UTF-8 text (it holds the byte {err.object[err.start]:#04x}). "
                "Save it as UTF-8, e.g. iconv -f latin1 -t utf-8 "
                f"{_sh(path)} > utf8.csv"
            ) from None
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
            raise TableError(f"{path}: not a readable CSV table: {err}") from None
    import pyarrow as pa

    try:
        return pd.read_parquet(path)
    except (pa.ArrowException, OSError) as err:
        kind = "truncated or damaged" if _looks_parquet(path) else "not a parquet file"
        hint = "" if path.suffix == ".parquet" else " (a summary may also be a .csv)"
        raise TableError(f"{path}: {kind}{hint}: {str(err).splitlines()[0]}") from None


def _looks_parquet(path: Path) -> bool:
    """A parquet file starts with the magic bytes PAR1 (and ends with them, when whole)."""
    with open(path, "rb") as fh:
        return fh.read(4) == b"PAR1"


def _sh(path: Path) -> str:
    return shlex.quote(str(path))


# Profile: one row per (device, model, method, batch size). Energies are per image, in J.
_IDENTITY = {
    "device_label": "string",  # the config's name for the device (`cpu`, `h200`)
    "model": "string",
    "method": "string",
    "batch_size_requested": "Int64",
    "batch_size": "Int64",  # smaller than requested after an out-of-memory retry
}
_SPREAD = ("", "_std", "_cv", "_ci95_low", "_ci95_high")


def _spread_columns(stem: str) -> dict[str, str]:
    return {f"{stem}{s}{'' if s == '_cv' else '_j'}": "float64" for s in _SPREAD}


PROFILE_COLUMNS: dict[str, str] = {
    **_IDENTITY,
    "torch_device": "string",
    "device_name": "string",
    "precision": "string",
    "autocast": "boolean",
    "channels_last": "boolean",
    "compile": "string",
    "reparameterized": "boolean",  # True: measured in timm's fused inference (deploy) form
    "threads": "Int64",
    "status": "string",  # ok, oom, build-error, error
    "reason": "string",
    "meter": "string",  # nvml, nvml:power-integration, rapl, estimate:<model>
    "is_estimate": "boolean",  # True: the energy is modelled, not read from a counter
    "meter_reasons": "string",  # why a better meter was not used
    "meter_detail": "string",  # JSON: the meter's own description (zones, TDP, uuid...)
    # mean, std, CV and 95% CI of the repeats; the summary raises a CI lower bound below 0 J
    # to 0 and flags the row ci-clipped (docs/scoring.md)
    **_spread_columns("energy_per_image"),
    **_spread_columns("dynamic_energy_per_image"),  # above idle_power_w
    "throughput_img_s": "float64",
    "throughput_img_s_cv": "float64",
    "latency_ms_mean": "float64",
    "latency_ms_p50": "float64",
    "latency_ms_p95": "float64",
    "power_mean_w": "float64",
    "power_max_w": "float64",
    "idle_power_w": "float64",  # the device's idle baseline (results/idle)
    "idle_power_pre_w": "float64",  # a short idle read just before this model
    "trace_disagreement_max": "float64",  # |counter - trace| / counter, worst repeat
    "repeats": "Int64",
    "images": "Int64",
    "measured_s": "float64",  # time inside measurement windows
    "warmup_iters": "Int64",
    "warmup_s": "float64",
    "warmup_steady": "boolean",
    "start_temperature_c": "float64",
    "end_temperature_c": "float64",
    "start_sm_clock_mhz": "float64",
    "end_sm_clock_mhz": "float64",
    "flags": "string",  # ;-joined: other-process, mig, warmup_not_steady, ...
    "weights": "string",  # random or pretrained
    "input_kind": "string",  # random (default) or zeros: what the measured batches held
    "check_id": "string",  # the latest `joulebench check` of the device; empty when none
    "check_verdict": "string",  # its verdict: pass, warn or fail; empty when none
    "driver_version": "string",
    "cuda_version": "string",
    "torch_version": "string",
    "timm_version": "string",
    "host": "string",
    "start_time_utc": "string",
    # Phases, runtimes and workloads (docs/training.md, docs/runtimes.md, docs/workloads.md).
    "phase": "string",  # inference, or train: energy_per_image_j is then per training sample
    "runtime": "string",  # pytorch, onnxruntime or tensorrt
    "runtime_provider": "string",  # the ONNX Runtime execution provider that ran it
    "runtime_check_rel_err": "float64",  # max |runtime - PyTorch| / max |PyTorch|, same batch
    "runtime_detail": "string",  # JSON: onnx path, opset, exporter, cache hit, tolerance
    "optimizer": "string",  # train: sgd or adamw
    "optimizer_lr": "float64",
    "train_loss_first": "float64",  # cross-entropy of the first and the last step measured
    "train_loss_last": "float64",
    "workload": "string",  # timm, or the custom workload entry (module:function)
}


def _with_identity(columns: list[str], dtype: str = "float64") -> dict[str, str]:
    out = {**_IDENTITY, "phase": "string"}  # train and inference rows of one configuration
    for c in columns:
        out.setdefault(c, dtype)
    return out


def _repeat_columns() -> dict[str, str]:
    from joulebench.measure.protocol import REPEAT_COLUMNS

    cols = _with_identity(REPEAT_COLUMNS)
    cols.update(repeat="Int64", batches="Int64", images="Int64", flags="string")
    return cols


def _trace_columns() -> dict[str, str]:
    from joulebench.measure.protocol import PROTOCOL_TRACE_COLUMNS

    cols = _with_identity(PROTOCOL_TRACE_COLUMNS)
    cols["repeat"] = "Int64"
    return cols


REPEAT_TABLE_COLUMNS = _repeat_columns()
TRACE_TABLE_COLUMNS = _trace_columns()

# Idle baseline: one row per device.
IDLE_COLUMNS: dict[str, str] = {
    "device_label": "string",
    "torch_device": "string",
    "device_name": "string",
    "meter": "string",
    "is_estimate": "boolean",
    "meter_reasons": "string",
    "idle_power_w": "float64",
    "duration_s": "float64",
    "energy_j": "float64",
    "flags": "string",
    "host": "string",
    "start_time_utc": "string",
}

# Accuracy: one row per model; every value carries its source.
ACCURACY_COLUMNS: dict[str, str] = {
    "model": "string",
    "img_size": "Int64",  # the resolution the accuracy belongs to (the model's input size)
    "top1": "float64",  # percent
    "top5": "float64",  # percent
    "accuracy_source": "string",  # measured, reference or none
    "accuracy_dataset": "string",  # e.g. imagenet-val (50000 images), timm results-imagenet.csv
    "accuracy_images": "Int64",  # images evaluated (measured only)
    "top1_real": "float64",  # timm's reference on ImageNet-ReaL labels, where published
    "top1_v2": "float64",  # timm's reference on ImageNetV2 matched-frequency
    "accuracy_note": "string",  # why a value is missing (no weights, offline, not published)
}
