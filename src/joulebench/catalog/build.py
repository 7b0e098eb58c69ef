"""The catalog stage: static properties of each model (params, input config, FLOPs...).

Models are built with random weights (nothing is downloaded). Many models run in one
process, because a process per model would pay seconds of imports each. Counts are of the
deploy form (timm's re-parameterisation, joulebench.catalog.deploy_form) where it differs
from the model as built, whose counts are kept in the `*_unfused` columns (tables.UNFUSED).
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Iterable

import pandas as pd

from joulebench.catalog.models import split_name
from joulebench.catalog.workloads import FAMILY, is_workload, load_workload, workload_name
from joulebench.safe_text import quantity
from joulebench.tables import CATALOG_COLUMNS, UNFUSED, short_reason


def _family(arch: str) -> str:
    from timm.models import model_entrypoint

    return model_entrypoint(arch).__module__.rsplit(".", 1)[-1]


def counted(model, input_size, device) -> dict:
    from joulebench.catalog.counting import count

    counts = count(model, input_size, device=device)
    return {
        "params": sum(p.numel() for p in model.parameters()),
        "flops_per_image": float(counts.flops),
        "macs_per_image": float(counts.macs),
        "activations_per_image": float(counts.activations),
    }


def _build_and_count(name: str, device: str):
    """(model, data config, counts as built, counts of the deploy form or None, why not).

    The deploy form is counted only where timm's re-parameterisation changes the model.
    """
    import timm
    import torch

    from joulebench.catalog.deploy_form import to_deploy_form

    with torch.device(device):
        model = timm.create_model(name, pretrained=False)
    model.eval()
    data_cfg = timm.data.resolve_model_data_config(model)
    input_size = tuple(data_cfg["input_size"])
    unfused = counted(model, input_size, device)
    try:
        model, changed = to_deploy_form(model)
    except Exception as exc:
        if device == "meta":
            raise  # a real CPU tensor may fuse where meta cannot
        # the counts as built stand; the row says why
        return model, data_cfg, unfused, None, f"reparameterize failed: {short_reason(exc)}"
    return model, data_cfg, unfused, counted(model, input_size, device) if changed else None, ""


def blank_row(model: str, architecture: str, pretrained_tag: str) -> dict:
    """A catalog row with its identity and versions set and nothing counted yet."""
    import timm
    import torch

    row = {c: None for c in CATALOG_COLUMNS}
    row.update(
        model=model,
        architecture=architecture,
        pretrained_tag=pretrained_tag,
        status="ok",
        reason="",
        reparameterized=False,
        timm_version=timm.__version__,
        torch_version=torch.__version__,
    )
    return row


def catalog_row(name: str) -> dict:
    """One catalog row; failures (build or count) become a row with status and reason."""
    arch, tag = split_name(name)
    row = blank_row(name, arch, tag)
    start = time.perf_counter()
    try:
        row["family"] = _family(arch)
    except Exception as exc:  # an architecture timm does not know
        row.update(status="failed", reason=short_reason(exc), family="")
        return row

    errors = []
    for device in ("meta", "cpu"):
        try:
            model, data_cfg, unfused, fused, why_unfused = _build_and_count(name, device)
            break
        except Exception as exc:
            errors.append(f"{device}: {short_reason(exc)}")
    else:
        row.update(status="failed", reason=short_reason(" | ".join(errors)))
        row["count_duration_s"] = time.perf_counter() - start
        return row

    channels, height, width = data_cfg["input_size"]
    row.update(
        count_device=device,
        num_classes=int(getattr(model, "num_classes", 0) or 0),
        input_channels=channels,
        input_height=height,
        input_width=width,
        crop_pct=float(data_cfg["crop_pct"]),
        crop_mode=str(data_cfg.get("crop_mode", "center")),
        interpolation=str(data_cfg["interpolation"]),
        mean=[float(v) for v in data_cfg["mean"]],
        std=[float(v) for v in data_cfg["std"]],
        reparameterized=fused is not None,
        **(fused or unfused),
        params_unfused=unfused["params"],
        flops_per_image_unfused=unfused["flops_per_image"],
        macs_per_image_unfused=unfused["macs_per_image"],
        activations_per_image_unfused=unfused["activations_per_image"],
        count_duration_s=time.perf_counter() - start,
    )
    reasons = [f"meta failed, counted on cpu ({errors[0]})"] if errors else []
    reasons += [why_unfused] if why_unfused else []
    row["reason"] = short_reason("; ".join(reasons))  # the row is ok all the same
    return row


def workload_row(name: str, entry: str) -> dict:
    """A catalog row (CATALOG_COLUMNS) for a custom workload, counted on the CPU.

    Nothing is known of its preprocessing, so crop, interpolation, mean and std stay empty.
    A failure (file, function, counting) becomes a row with status "failed" and the reason.
    """
    row = {**blank_row(name, name, ""), "family": FAMILY}
    start = time.perf_counter()
    try:
        model, spec = load_workload(entry)
        counts = counted(model.eval(), spec.input_size, "cpu")
    except Exception as exc:
        duration_s = time.perf_counter() - start
        row.update(status="failed", reason=short_reason(exc), count_duration_s=duration_s)
        return row
    channels, height, width = spec.input_size
    row.update(count_device="cpu", num_classes=spec.num_classes, **counts)
    row.update(input_channels=channels, input_height=height, input_width=width)
    row["count_duration_s"] = time.perf_counter() - start
    return row


def failed_row(entry: str, reason: str) -> dict:
    """A catalog row with status `failed` and `reason`, nothing counted (no torch needed:
    a supervisor writes it for a model whose worker hung or died, jobs.catalog_job)."""
    name = workload_name(entry) if is_workload(entry) else entry
    arch, tag = split_name(name)
    row = {c: None for c in CATALOG_COLUMNS}
    row.update(model=name, architecture=arch, pretrained_tag=tag, status="failed")
    row.update(reason=short_reason(reason), family=FAMILY if is_workload(entry) else "")
    return row


def entry_row(entry: str) -> dict:
    """The catalog row of one entry (a timm name, or a custom workload as
    `name=path.py:function`); a failure is a row with status `failed`, never an error."""
    import warnings

    name = workload_name(entry) if is_workload(entry) else entry
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            row = workload_row(name, entry) if is_workload(entry) else catalog_row(name)
        except Exception as exc:  # never let one model take the job down
            row = failed_row(entry, short_reason(exc))
            row["family"] = None
            traceback.print_exc()
    for column, unfused in UNFUSED.items():  # custom workloads: as given
        if row.get(unfused) is None:
            row[unfused] = row.get(column)
    return row


def row_line(i: int, total: int, row: dict) -> str:
    """A model's progress line: `[i/total] name: status detail`."""
    if row["status"] == "ok":
        detail = f"{row['macs_per_image'] / 1e9:.3f} GMACs on {row['count_device']}"
        if row["reparameterized"]:
            detail += f" (deploy form; {row['macs_per_image_unfused'] / 1e9:.3f} as built)"
    else:
        detail = row["reason"]
    return f"[{i}/{total}] {row['model']}: {row['status']} {detail}"


def build_catalog(
    models: Iterable[str], log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)
) -> pd.DataFrame:
    """Catalog rows for `models`, printing one progress line per model, in this process
    (jobs.catalog_job runs them under a supervisor instead).

    A custom workload comes as its entry (`name=path.py:function`, docs/workloads.md).
    """
    models = list(models)
    rows = []
    for i, entry in enumerate(models, 1):
        rows.append(entry_row(entry))
        log(row_line(i, len(models), rows[-1]))
    return pd.DataFrame(rows, columns=list(CATALOG_COLUMNS))


def catalog_entries(models: Iterable[str], models_file: str | None = None) -> list[str]:
    """`models` and the names of a file with one a line (`joulebench catalog`'s)."""
    models = list(models)
    if models_file:
        with open(models_file) as fh:
            models += [line.strip() for line in fh if line.strip()]
    return models


def catalog_line(df: pd.DataFrame, output) -> str:
    """The catalog command's last line: models, how many failed, where they went."""
    failed = int((df["status"] != "ok").sum())
    return f"catalog: {quantity(len(df), 'model')}, {failed} failed -> {output}"
