"""A small study's stage tables for the summary: catalog, profile rows and accuracy of two
models on the CPU, a model that failed to build and a configuration out of memory."""

from __future__ import annotations

import pandas as pd

from joulebench.tables import CATALOG_COLUMNS, PROFILE_COLUMNS


def small_catalog() -> pd.DataFrame:
    """Two models catalogued and one that failed to build."""
    rows = [
        ("resnet18.a1_in1k", "resnet", "ok", "", 11_689_512, 3.64e9),
        ("vit_tiny_patch16_224.augreg_in21k_ft_in1k", "vision_transformer", "ok", "", 5.7e6, 2.5e9),
        ("broken.none", "broken", "failed", "RuntimeError: cannot build", None, None),
    ]
    df = pd.DataFrame(
        rows, columns=["model", "family", "status", "reason", "params", "flops_per_image"]
    )
    df["macs_per_image"] = df["flops_per_image"] / 2
    df["activations_per_image"] = df["flops_per_image"] / 500
    df["input_height"] = df["input_width"] = 224
    df["architecture"] = df["model"].str.split(".").str[0]
    return df.reindex(columns=list(CATALOG_COLUMNS))


def small_profile() -> pd.DataFrame:
    """The two models on the CPU (estimated), three configurations each, and one out of memory."""
    base = {"device_label": "cpu", "reason": "", "flags": ""}
    rows = []
    for model in ("resnet18.a1_in1k", "vit_tiny_patch16_224.augreg_in21k_ft_in1k"):
        for method, batch in (("fp32", 1), ("fp32", 8), ("bf16", 8)):
            rows.append(
                {
                    **base,
                    "model": model,
                    "method": method,
                    "batch_size_requested": batch,
                    "batch_size": batch,
                    "status": "ok",
                    "meter": "estimate:tdp-linear",
                    "is_estimate": True,
                    "energy_per_image_j": 0.1 / batch,
                    "throughput_img_s": 100.0 * batch,
                }
            )
    # an out-of-memory row: no energy, and is_estimate unknown -> from the meter name
    rows.append(
        {
            **base,
            "model": "resnet18.a1_in1k",
            "method": "fp32",
            "batch_size_requested": 512,
            "batch_size": 1,
            "status": "oom",
            "reason": "out of memory",
            "meter": "estimate:tdp-linear",
            "is_estimate": None,
        }
    )
    return pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))


def small_accuracy() -> pd.DataFrame:
    """resnet18's published top-1 at two resolutions (the catalog's input size wins)."""
    return pd.DataFrame(
        {
            "model": ["resnet18.a1_in1k", "resnet18.a1_in1k"],
            "img_size": [288, 224],  # two resolutions: the catalog's input size wins
            "top1": [73.2, 71.5],
            "top5": [91.0, 90.1],
            "accuracy_source": ["reference", "reference"],
            "accuracy_dataset": ["timm results-imagenet.csv"] * 2,
        }
    )
