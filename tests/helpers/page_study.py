"""A synthetic study's summary for the web page's tests and bench (shaped like a real one,
nothing measured), and the headless chromium that opens the page."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from joulebench.analysis.summary import build_summary
from joulebench.tables import ACCURACY_COLUMNS, CATALOG_COLUMNS, PREDICTED, PROFILE_COLUMNS

CHROMIUM = Path(os.environ.get("JOULEBENCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-quic",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
]
FAMILIES = ("resnet", "convnext", "vit", "efficientnet", "mobilenetv3", "regnet", "deit", "swin")
DEVICES = (("gpu", "nvml", "NVIDIA H200", "cuda:0"), ("cpu", "estimate:tdp-linear", "EPYC", "cpu"))


def synthetic_summary(
    n_models: int = 60,
    *,
    devices=DEVICES,
    methods=("fp32",),
    extra_names=(),
    failed: bool = True,
    seed: int = 0,
    unmeasured: int = 0,
) -> pd.DataFrame:
    """A summary shaped like a real study: accuracy rising with energy plus noise, one row per
    (device, method, model), an estimated CPU device, one model without top-1 and (`failed`)
    a failed and a never-profiled model; the `unmeasured` models before the last have no
    profile row (not-profiled: synthetic_predictions predicts them). Energies are made up;
    nothing here is a measurement."""
    rng = np.random.default_rng(seed)
    names = ["resnet50.a1_in1k", *extra_names]
    families = ["resnet", *["vit"] * len(extra_names)]
    for i in range(n_models - len(names)):
        families.append(FAMILIES[i % len(FAMILIES)])
        names.append(f"{families[-1]}{i:04d}.syn_in1k")
    log_e = rng.uniform(-3.3, -0.7, len(names))
    top1 = np.clip(62 + 9 * (log_e + 3.3) + rng.normal(0, 3, len(names)), 40, 90)
    catalog = pd.DataFrame(
        {
            "model": names,
            "architecture": [n.split(".")[0] for n in names],
            "pretrained_tag": "syn_in1k",
            "family": families,
            "status": "ok",
            "params": (10 ** (8.6 + 0.8 * (log_e + 2))).astype(int),
            "input_height": 224,
            "input_width": 224,
            "flops_per_image": 10 ** (10.5 + (log_e + 2)),
        }
    ).reindex(columns=list(CATALOG_COLUMNS))
    accuracy = pd.DataFrame(
        {"model": names, "img_size": 224, "top1": top1, "top5": np.minimum(top1 + 12, 99.5)}
    ).assign(accuracy_source="reference")
    accuracy.loc[len(names) - 1, ["top1", "top5", "accuracy_source"]] = [np.nan, np.nan, "none"]
    rows = []
    for d, (label, meter, device_name, torch_device) in enumerate(devices):
        for m, method in enumerate(methods):
            for i, name in enumerate(names):
                if len(names) - 1 - unmeasured <= i < len(names) - 1:
                    continue
                e = 10 ** log_e[i] * (25 if d else 1) * (0.6**m) * rng.uniform(0.95, 1.05)
                cv = rng.uniform(0.004, 0.04)
                half = 1.96 * cv * e / 2
                rows.append(
                    {
                        "device_label": label,
                        "model": name,
                        "method": method,
                        "batch_size_requested": 64,
                        "batch_size": 64 if i % 17 else 32,
                        "torch_device": torch_device,
                        "device_name": device_name,
                        "status": "ok",
                        "reason": "",
                        "meter": meter,
                        "is_estimate": meter.startswith("estimate:"),
                        "energy_per_image_j": e,
                        "energy_per_image_std_j": cv * e,
                        "energy_per_image_cv": cv,
                        "energy_per_image_ci95_low_j": e - half,
                        "energy_per_image_ci95_high_j": e + half,
                        "dynamic_energy_per_image_j": 0.7 * e,
                        "throughput_img_s": 250 / e,
                        "repeats": 4,
                        "flags": "",
                        "weights": "pretrained",
                        "driver_version": "570.86",
                        "torch_version": "2.14.1",
                        "timm_version": "1.0.31",
                        "host": "node-7",
                        "start_time_utc": f"2025-06-01T12:{i % 60:02d}:00Z",
                    }
                )
    if failed:
        rows.append({**rows[1], "model": "broken.syn_in1k", "status": "oom", "reason": "OOM"})
        rows[-1].update(energy_per_image_j=np.nan, is_estimate=None)
        broken = {"model": "broken.syn_in1k", "architecture": "broken"}
        catalog.loc[len(catalog)] = {**catalog.iloc[1].to_dict(), **broken}
        skipped = {"model": "skipped.syn_in1k", "architecture": "skipped"}  # not profiled
        catalog.loc[len(catalog)] = {**catalog.iloc[1].to_dict(), **skipped}
    profile = pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))
    return build_summary(profile, catalog, accuracy.reindex(columns=list(ACCURACY_COLUMNS)))


def synthetic_predictions(summary: pd.DataFrame, factor: float = 1.4) -> pd.DataFrame:
    """tables.PREDICTED rows for the summary's not-profiled models in each of its measured
    groups: the energy its params imply in synthetic_summary's world (x 25 on an estimated
    device), the interval x/÷ `factor`. Made up, and made by hand: no fit is run."""
    ok = summary[summary["status"] == "ok"]
    lost = summary[summary["status"] == "not-profiled"].drop_duplicates("model")
    lost = lost[~lost["model"].isin(["broken.syn_in1k", "skipped.syn_in1k"])]
    log_e = (np.log10(lost["params"].astype(float)) - 8.6) / 0.8 - 2
    keys = ["phase", "device_label", "method", "batch_size_requested", "energy_is_estimate"]
    parts = []
    for key, _ in ok.groupby(keys):
        e = 10 ** log_e.to_numpy() * (25 if key[4] else 1)
        t = 250 / e
        part = pd.DataFrame(
            {
                **dict(zip(keys, key, strict=True)),
                "model": lost["model"].to_numpy(),
                "source": "predicted",
                "energy_per_image_j": e,
                "energy_per_image_j_pi_low": e / factor,
                "energy_per_image_j_pi_high": e * factor,
                "energy_pi_factor": factor,
                "throughput_img_s": t,
                "throughput_img_s_pi_low": t / factor,
                "throughput_img_s_pi_high": t * factor,
                "throughput_pi_factor": factor,
                "pi_level": 0.9,
                "pi_method": "by hand",
                "kin": "family",
                "n_measured": ok["model"].nunique(),
                "energy_cv_coverage": 0.9,
                "throughput_cv_coverage": 0.9,
                "note": pd.NA,
            }
        )
        parts.append(part)
    out = pd.concat(parts, ignore_index=True).reindex(columns=PREDICTED.names)
    return out.astype(PREDICTED.dtypes)
