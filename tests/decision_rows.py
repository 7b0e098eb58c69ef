"""A small hand-made summary for the decision tests: three models on one GPU, each run with two
methods at two batch sizes, with energies, CIs, latencies and throughputs chosen so that the
best configuration under each constraint is known by hand (written beside each row)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from joulebench.analysis.summary import build_summary
from joulebench.tables import PROFILE_COLUMNS

# model -> top-1 %
TOP1 = {"small": 70.0, "mid": 76.0, "big": 81.0}
# (model, method, batch, energy J, ci half-width J, latency ms per batch, img/s)
CONFIGS = [
    ("small", "fp32", 1, 0.010, 0.001, 4.0, 250.0),
    ("small", "fp32", 64, 0.004, 0.0004, 60.0, 1067.0),
    ("small", "fp16", 1, 0.008, 0.001, 3.0, 333.0),
    ("small", "fp16", 64, 0.003, 0.0003, 40.0, 1600.0),  # small's best overall
    ("mid", "fp32", 1, 0.030, 0.003, 9.0, 111.0),
    ("mid", "fp32", 64, 0.012, 0.001, 150.0, 427.0),
    ("mid", "fp16", 1, 0.020, 0.002, 7.0, 143.0),  # mid's best under 10 ms
    ("mid", "fp16", 64, 0.009, 0.001, 90.0, 711.0),  # mid's best overall, under 100 ms
    ("big", "fp32", 1, 0.090, 0.009, 30.0, 33.0),
    ("big", "fp32", 64, 0.040, 0.004, 400.0, 160.0),
    ("big", "fp16", 1, 0.060, 0.006, 20.0, 50.0),  # big's best under 100 ms and batch 1
    ("big", "fp16", 64, 0.025, 0.003, 250.0, 256.0),  # big's best overall
]


def profile_row(model, method, batch, energy, half, latency_ms, img_s, **kw) -> dict:
    row = {
        "device_label": "gpu",
        "model": model,
        "method": method,
        "batch_size_requested": batch,
        "batch_size": batch,
        "status": "ok",
        "reason": "",
        "meter": "nvml",
        "is_estimate": False,
        "energy_per_image_j": energy,
        "energy_per_image_ci95_low_j": energy - half,
        "energy_per_image_ci95_high_j": energy + half,
        "energy_per_image_cv": 0.05,
        "dynamic_energy_per_image_j": energy / 2,
        "dynamic_energy_per_image_ci95_low_j": energy / 2 - half,
        "dynamic_energy_per_image_ci95_high_j": energy / 2 + half,
        "latency_ms_mean": latency_ms,
        "throughput_img_s": img_s,
        "runtime": "pytorch",
        "phase": "inference",
        "flags": "",
    }
    row.update(kw)
    return row


def decision_summary(extra_rows=(), configs=CONFIGS, top1=None) -> pd.DataFrame:
    rows = [profile_row(*c) for c in configs] + list(extra_rows)
    profile = pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))
    acc = {**TOP1, **(top1 or {})}
    accuracy = pd.DataFrame(
        {"model": list(acc), "top1": list(acc.values()), "accuracy_source": "reference"}
    )
    return build_summary(profile, None, accuracy)


def nan_row(model, method, batch, **kw) -> dict:
    """A failed configuration."""
    return profile_row(
        model, method, batch, np.nan, np.nan, np.nan, np.nan, status="oom", reason="OOM", **kw
    )
