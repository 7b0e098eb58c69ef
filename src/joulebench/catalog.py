"""The catalog stage: static properties of each model (params, input config, FLOPs...).

Models are built with random weights (nothing is downloaded). Many models run in one
process, because a process per model would pay seconds of imports each.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Iterable

import pandas as pd

from joulebench.models import split_name
from joulebench.tables import CATALOG_COLUMNS

REASON_MAX_CHARS = 500


def _family(arch: str) -> str:
    from timm.models import model_entrypoint

    return model_entrypoint(arch).__module__.rsplit(".", 1)[-1]


def _short_reason(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    return text[:REASON_MAX_CHARS]


def _build_and_count(name: str, device: str):
    import timm
    import torch

    from joulebench.counting import count

    with torch.device(device):
        model = timm.create_model(name, pretrained=False)
    model.eval()
    data_cfg = timm.data.resolve_model_data_config(model)
    counts = count(model, tuple(data_cfg["input_size"]), device=device)
    params = sum(p.numel() for p in model.parameters())
    return model, data_cfg, counts, params


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
            model, data_cfg, counts, params = _build_and_count(name, device)
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
        params=params,
        input_channels=channels,
        input_height=height,
        input_width=width,
        crop_pct=float(data_cfg["crop_pct"]),
        crop_mode=str(data_cfg.get("crop_mode", "center")),
        interpolation=str(data_cfg["interpolation"]),
        mean=[float(v) for v in data_cfg["mean"]],
        std=[float(v) for v in data_cfg["std"]],
        flops_per_image=float(counts.flops),
        macs_per_image=float(counts.macs),
        activations_per_image=float(counts.activations),
        count_duration_s=time.perf_counter() - start,
    )
    if errors:  # counted on CPU after meta failed: keep why, but the row is ok
        row["reason"] = f"meta failed, counted on cpu ({errors[0]})"[:REASON_MAX_CHARS]
    return row


def build_catalog(
    models: Iterable[str], log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)
) -> pd.DataFrame:
    """Catalog rows for `models`, printing one progress line per model.

    A custom workload comes as its entry (`name=path.py:function`, docs/workloads.md).
    """
    import warnings

    from joulebench.workloads import catalog_row as workload_row
    from joulebench.workloads import is_workload, workload_name

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
        rows.append(row)
        if row["status"] == "ok":
            detail = f"{row['macs_per_image'] / 1e9:.3f} GMACs on {row['count_device']}"
        else:
            detail = row["reason"]
        log(f"[{i}/{len(models)}] {name}: {row['status']} {detail}")
    return pd.DataFrame(rows, columns=list(CATALOG_COLUMNS))
