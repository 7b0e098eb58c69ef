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


def varied_summary(seed: int = 7, n_models: int = 18) -> pd.DataFrame:
    """A valid summary with every case a decision meets, for comparing implementations: two
    GPUs, estimated rows (own methods) beside measured ones on one, inference and train,
    energies on a coarse grid (exact ties) with overlapping CIs, latencies missing (derived
    from throughput, or unknown), flagged, high-spread and failed rows, models with nothing
    comparable, unknown top-1 and family, and a catalogued model never profiled (NA keys)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_models):
        model = f"m{i:02d}"
        scale = 10 ** rng.uniform(-3, -1)
        for device, meter, phase in [
            ("gpu0", "nvml", "inference"),
            ("gpu1", "nvml", "inference"),
            ("gpu0", "nvml", "train"),
            ("gpu0", "estimate:tdp", "inference"),
        ]:
            if meter.startswith("estimate") and i % 3:
                continue
            prefix = "est-" if meter.startswith("estimate") else ""  # one key, one row
            for method in (prefix + m for m in ("fp32", "bf16", "fp16")):
                for batch in (1, 8, 64):
                    energy = scale * round(rng.uniform(0.5, 1.5), 1)  # grid: exact ties
                    half = energy * rng.choice([0.0, 0.05, 0.2, np.nan])
                    img_s = 1 / (scale * rng.uniform(0.05, 2))  # 5 to 20,000 img/s
                    latency = 1e3 * batch / img_s
                    kw = {"meter": meter, "is_estimate": meter != "nvml", "phase": phase}
                    kw["device_label"] = device
                    r = rng.uniform()
                    if r < 0.06:
                        kw.update(status="oom", reason="OOM")
                        energy = half = latency = img_s = np.nan
                    elif r < 0.1:
                        kw["flags"] = "other-load"
                    elif r < 0.13:
                        kw["energy_per_image_cv"] = 0.4
                    elif r < 0.2:
                        latency = np.nan  # derived from the throughput
                    elif r < 0.24:
                        latency = img_s = np.nan  # latency unknown
                    elif r < 0.4:
                        kw["latency_ms_p95"] = latency * rng.uniform(1.0, 1.5)
                    if i == 5:  # nothing comparable on any device
                        kw["flags"] = "other-process"
                    if i == 7 and batch == 64:  # impossible: status invalid
                        energy = 0.0
                    if i == 9 and device == "gpu1":  # no latency known at all
                        latency = img_s = np.nan
                    rows.append(
                        profile_row(model, method, batch, energy, half, latency, img_s, **kw)
                    )
    profile = pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))
    models = [f"m{i:02d}" for i in range(n_models)] + ["never_profiled"]
    catalog = pd.DataFrame(
        {
            "model": models,
            "family": [None if i % 4 == 1 else f"fam{i % 3}" for i in range(len(models))],
            "status": "ok",
            "reason": "",
        }
    )
    known = [m for i, m in enumerate(models) if i % 5 != 2]
    accuracy = pd.DataFrame(
        {
            "model": known,
            "top1": rng.uniform(60, 85, len(known)).round(1),
            "accuracy_source": "reference",
        }
    )
    return build_summary(profile, catalog, accuracy)


# A power-limit sweep on one GPU whose board's default limit is 700 W: energy per image falls
# as the cap tightens until the slower clocks' longer run costs more than the cap saves (the
# knee). small's least energy is at 0.6 of the limit, big's at 0.8; fp32 sets no knob.
SWEEP_DEFAULT_LIMIT_W = 700.0
# model -> {fraction: (energy J, img/s)} at batch 64
SWEEP = {
    "small": {
        1.0: (0.0100, 2000.0),
        0.8: (0.0086, 1900.0),
        0.6: (0.0078, 1650.0),
        0.5: (0.0081, 1300.0),
    },
    "big": {1.0: (0.0500, 400.0), 0.8: (0.0440, 380.0), 0.6: (0.0460, 300.0), 0.5: (0.0520, 240.0)},
}
SWEEP_METHODS = {"fp32": {}, "fp16": {"precision": "fp16", "power_limit": [1.0, 0.8, 0.6, 0.5]}}


def sweep_summary() -> pd.DataFrame:
    """The summary of that sweep, its rows made as a profile job makes them: the methods
    parsed from SWEEP_METHODS (fp16@1.0 ... fp16@0.5), their knob columns from
    Method.knob_fields with the limit a device would read back (fraction x 700 W)."""
    from joulebench.core.methods import KnobReadback, parse_methods

    rows = []
    for model, points in SWEEP.items():
        fp32_j, fp32_img_s = 2 * points[1.0][0], points[1.0][1] / 2
        for method in parse_methods(SWEEP_METHODS).values():
            fraction = method.power_limit
            energy, img_s = (fp32_j, fp32_img_s) if fraction is None else points[fraction]
            read = (
                KnobReadback(power_limit_w=fraction * SWEEP_DEFAULT_LIMIT_W) if fraction else None
            )
            knobs = method.knob_fields(read)
            latency_ms = 1e3 * 64 / img_s
            row = profile_row(
                model, method.name, 64, energy, energy / 50, latency_ms, img_s, **knobs
            )
            rows.append(row)
    return decision_summary(rows, configs=[])
