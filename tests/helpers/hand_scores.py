"""The score's hand-made table (the example of docs/scoring.md): nine models on one device,
method and batch size, the answers worked by hand, and the summary built from them, for the
score's tests and the carbon columns computed on top of it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from joulebench.analysis.summary import build_summary
from joulebench.tables import PROFILE_COLUMNS

# (model, top1 %, energy per image J) on one device / method / batch size.
HAND = [
    ("m1", 70.0, 0.010),
    ("m2", 75.0, 0.020),
    ("m3", 72.0, 0.030),
    ("m4", 80.0, 0.050),
    ("m5", 78.0, 0.150),
    ("m6", 74.0, 0.080),
    ("m7", 71.0, 0.040),
    ("m8", 73.0, 0.250),
    ("m9", 79.0, 0.400),
]
# Worked by hand. Front: m1, m2, m4 (nothing at least as accurate is cheaper).
# front_energy(a) = least energy among models with top1 >= a:
#   m3 72 -> m2 0.02 -> 0.02/0.03 = 0.667 B     m5 78 -> m4 0.05 -> 0.05/0.15 = 0.333 D
#   m6 74 -> m2 0.02 -> 0.02/0.08 = 0.25  E     m7 71 -> m2 0.02 -> 0.02/0.04 = 0.5   C
#   m8 73 -> m2 0.02 -> 0.02/0.25 = 0.08  G     m9 79 -> m4 0.05 -> 0.05/0.40 = 0.125 F
EXPECTED = {
    "m1": (True, 0.010, 1.0, "A"),
    "m2": (True, 0.020, 1.0, "A"),
    "m3": (False, 0.020, 2 / 3, "B"),
    "m4": (True, 0.050, 1.0, "A"),
    "m5": (False, 0.050, 1 / 3, "D"),
    "m6": (False, 0.020, 0.25, "E"),
    "m7": (False, 0.020, 0.5, "C"),
    "m8": (False, 0.020, 0.08, "G"),
    "m9": (False, 0.050, 0.125, "F"),
}


def hand_row(model, energy, *, method="fp32", batch=64, device="gpu", status="ok", **kw):
    """A profile row of `model` (a failed status has no energy); `kw` sets other columns."""
    row = {
        "device_label": device,
        "model": model,
        "method": method,
        "batch_size_requested": batch,
        "batch_size": batch,
        "status": status,
        "reason": "" if status == "ok" else "boom",
        "meter": "nvml",
        "is_estimate": False if status == "ok" else None,
        "energy_per_image_j": energy if status == "ok" else np.nan,
        "dynamic_energy_per_image_j": energy * 0.5 if status == "ok" else np.nan,
        "flags": "",
    }
    row.update(kw)
    return row


def hand_summary(extra_rows=(), top1=None) -> pd.DataFrame:
    rows = [hand_row(m, e) for m, _, e in HAND]
    rows += [
        hand_row("failed", 0.01, status="oom"),
        hand_row("no_acc", 0.060),
        *extra_rows,
    ]
    profile = pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))
    acc = {m: a for m, a, _ in HAND} | {"failed": 90.0} | (top1 or {})
    accuracy = pd.DataFrame(
        {"model": list(acc), "top1": list(acc.values()), "accuracy_source": "reference"}
    )
    return build_summary(profile, None, accuracy)


def by_model(scores: pd.DataFrame, **where) -> pd.DataFrame:
    """The rows of `scores` where each column equals its value in `where`, by model."""
    sel = np.ones(len(scores), bool)
    for k, v in where.items():
        sel &= (scores[k] == v).to_numpy(bool)
    return scores[sel].set_index("model")
