"""The catalog stage: static properties of each model (params, input config, FLOPs...).

Models are built with random weights (nothing is downloaded). Many models run in one
process, because a process per model would pay seconds of imports each. Counts are of the
deploy form (timm's re-parameterisation, joulebench.catalog.deploy_form) where it differs from the
model as built, whose counts are kept in the `*_unfused` columns.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Iterable

import pandas as pd

from joulebench.catalog.models import split_name
from joulebench.tables import CATALOG_COLUMNS

REASON_MAX_CHARS = 500


def _family(arch: str) -> str:
    from timm.models import model_entrypoint

    return model_entrypoint(arch).__module__.rsplit(".", 1)[-1]


def _short_reason(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    return text[:REASON_MAX_CHARS]


# Counts of the model as built; the main columns hold the deploy form's
# (joulebench.catalog.deploy_form).
UNFUSED_COLUMNS = {
    c: f"{c}_unfused"
    for c in ("params", "flops_per_image", "macs_per_image", "activations_per_image")
}


def _counted(model, input_size, device) -> dict:
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
    unfused = _counted(model, input_size, device)
    try:
        model, changed = to_deploy_form(model)
    except Exception as exc:
        if device == "meta":
            raise  # a real CPU tensor may fuse where meta cannot
        # the counts as built stand; the row says why
        return model, data_cfg, unfused, None, f"reparameterize failed: {_short_reason(exc)}"
    return model, data_cfg, unfused, _counted(model, input_size, device) if changed else None, ""


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
        row.update(status="failed", reason=_short_reason(exc), family="")
        return row

    errors = []
    for device in ("meta", "cpu"):
        try:
            model, data_cfg, unfused, fused, why_unfused = _build_and_count(name, device)
            break
        except Exception as exc:
            errors.append(f"{device}: {_short_reason(exc)}")
    else:
        row.update(status="failed", reason=" | ".join(errors)[:REASON_MAX_CHARS])
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
        **{UNFUSED_COLUMNS[c]: v for c, v in unfused.items()},
        count_duration_s=time.perf_counter() - start,
    )
    reasons = [f"meta failed, counted on cpu ({errors[0]})"] if errors else []
    reasons += [why_unfused] if why_unfused else []
    row["reason"] = "; ".join(reasons)[:REASON_MAX_CHARS]  # the row is ok all the same
    return row


def build_catalog(
    models: Iterable[str], log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)
) -> pd.DataFrame:
    """Catalog rows for `models`, printing one progress line per model.

    A custom workload comes as its entry (`name=path.py:function`, docs/workloads.md).
    """
    import warnings

    from joulebench.catalog.workloads import catalog_row as workload_row
    from joulebench.catalog.workloads import is_workload, workload_name

    models = list(models)
    rows = []
    for i, entry in enumerate(models, 1):
        name = workload_name(entry) if is_workload(entry) else entry
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                row = workload_row(name, entry) if is_workload(entry) else catalog_row(name)
            except Exception as exc:  # never let one model take the job down
                row = {c: None for c in CATALOG_COLUMNS}
                arch, tag = split_name(name)
                row.update(model=name, architecture=arch, pretrained_tag=tag, status="failed")
                row["reason"] = _short_reason(exc)
                traceback.print_exc()
        for column, unfused in UNFUSED_COLUMNS.items():  # custom workloads: as given
            if row.get(unfused) is None:
                row[unfused] = row.get(column)
        rows.append(row)
        if row["status"] == "ok":
            detail = f"{row['macs_per_image'] / 1e9:.3f} GMACs on {row['count_device']}"
            if row["reparameterized"]:
                detail += f" (deploy form; {row['macs_per_image_unfused'] / 1e9:.3f} as built)"
        else:
            detail = row["reason"]
        log(f"[{i}/{len(models)}] {name}: {row['status']} {detail}")
    return pd.DataFrame(rows, columns=list(CATALOG_COLUMNS))
