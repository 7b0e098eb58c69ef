"""A small synthetic study for the figures' tests (and the tests and benches that draw or
score one): plausible energies, accuracies and power traces, nothing measured."""

from __future__ import annotations

import numpy as np
import pandas as pd

from joulebench.analysis.fits import all_fits
from joulebench.analysis.score import score_summary
from joulebench.analysis.summary import build_summary
from joulebench.tables import PROFILE_COLUMNS, TRACE_TABLE_COLUMNS

FAMILIES = ["resnet", "efficientnet", "vision_transformer", "convnext", "mobilenetv3", "regnet"]


def synthetic_study(
    n_models=30,
    methods=("fp32", "bf16"),
    batch_sizes=(1, 8, 32),
    estimated=True,
    seed=0,
    failures=2,
):
    """A plausible study: E ~ FLOPs^0.9, accuracy saturating in energy, bf16 ~35 % cheaper,
    batching cheaper per image; the first `failures` models fail at the largest batch.
    Returns profile, catalog, accuracy and trace tables (the trace is empty for an
    estimating meter, as in the real one)."""
    rng = np.random.default_rng(seed)
    catalog, accuracy, profile, trace = [], [], [], []
    meter = "estimate:tdp-linear" if estimated else "nvml"
    for i in range(n_models):
        fam = FAMILIES[i % len(FAMILIES)]
        name = f"{fam}_{i}.in1k"
        flops = 10 ** rng.uniform(8.3, 11.3)
        catalog.append(
            {
                "model": name,
                "architecture": f"{fam}_{i}",
                "pretrained_tag": "in1k",
                "family": fam,
                "status": "ok",
                "reason": "",
                "params": int(flops / 10 ** rng.uniform(1.7, 2.7)),
                "flops_per_image": flops,
                "macs_per_image": flops / 2,
                "activations_per_image": flops / 10 ** rng.uniform(2.5, 3.1),
                "input_height": 224,
                "input_width": 224,
                "num_classes": 1000,
            }
        )
        e_model = 1.8e-10 * flops**0.9 * 10 ** rng.normal(0, 0.12)
        top1 = 88 - 25 * (e_model / 0.01) ** -0.3 + rng.normal(0, 1.5) + FAMILIES.index(fam) * 0.3
        accuracy.append(
            {
                "model": name,
                "img_size": 224,
                "top1": top1,
                "top5": min(top1 + 12, 99.5),
                "accuracy_source": "reference",
            }
        )
        for m in methods:
            for b in batch_sizes:
                failed = i < failures and m == methods[0] and b == batch_sizes[-1]
                e = e_model * (0.65 if m != methods[0] else 1.0) * (0.55 + 0.45 / b**0.5)
                e *= 10 ** rng.normal(0, 0.02)
                power = 40 + 60 * rng.uniform()
                profile.append(
                    {
                        "device_label": "cpu" if estimated else "h200",
                        "model": name,
                        "method": m,
                        "batch_size_requested": b,
                        "batch_size": b,
                        "status": "oom" if failed else "ok",
                        "reason": "out of memory" if failed else "",
                        "meter": meter,
                        "is_estimate": None if failed else estimated,
                        "energy_per_image_j": np.nan if failed else e,
                        "dynamic_energy_per_image_j": np.nan if failed else e * 0.7,
                        "throughput_img_s": np.nan if failed else power / e,
                        "idle_power_w": 20.0,
                        "flags": "",
                    }
                )
                if not estimated and not failed and i < 2:
                    for r in range(4):
                        t = np.arange(0, 5.0, 0.02)
                        trace.append(
                            pd.DataFrame(
                                {
                                    "device_label": "h200",
                                    "model": name,
                                    "method": m,
                                    "batch_size_requested": b,
                                    "batch_size": b,
                                    "repeat": r,
                                    "t_s": t,
                                    "power_w": power
                                    + 5 * np.sin(7 * t + r)
                                    + rng.normal(0, 2, len(t)),
                                    "power_avg_w": power,
                                }
                            )
                        )
    prof = pd.DataFrame(profile).reindex(columns=list(PROFILE_COLUMNS))
    tr = pd.concat(trace) if trace else pd.DataFrame(columns=list(TRACE_TABLE_COLUMNS))
    tr = tr.reindex(columns=list(TRACE_TABLE_COLUMNS))
    return prof, pd.DataFrame(catalog), pd.DataFrame(accuracy), tr


def study_tables(**kw):
    """(summary, scores, fits, trace) of synthetic_study(**kw), scored against resnet_0."""
    profile, catalog, accuracy, trace = synthetic_study(**kw)
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary, reference_model="resnet_0.in1k")
    fits = all_fits(summary, baseline_method="fp32")
    return summary, scores, fits, trace


def default_like_study(flag: str = ""):
    """The default study's shape: 5 models, fp32 and bf16, batch 1 and 8, a CPU estimate."""
    profile, catalog, accuracy, trace = synthetic_study(
        n_models=5, batch_sizes=(1, 8), failures=0, estimated=True
    )
    profile["flags"] = flag
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary, reference_model="resnet_0.in1k")
    return summary, scores, all_fits(summary, baseline_method="fp32"), trace


DEFAULT_MODELS = {  # config.yaml's five, with their families
    "resnet18.a1_in1k": "resnet",
    "mobilenetv3_small_100.lamb_in1k": "mobilenetv3",
    "efficientnet_b0.ra_in1k": "efficientnet",
    "deit_tiny_patch16_224.fb_in1k": "deit",
    "convnext_atto.d2_in1k": "convnext",
}
DEFAULT_METHODS = ("fp32", "fp32-channels-last", "bf16")
# (model, method, batch size) -> flag: the rows a busy neighbour spoiled in issue 34's run, so
# each method's set of comparable models differs (3, 4, 3 at batch 8)
AS_RUN_FLAGS = {
    ("efficientnet_b0.ra_in1k", "bf16", 1): "other-load",
    ("efficientnet_b0.ra_in1k", "bf16", 8): "other-load",
    ("deit_tiny_patch16_224.fb_in1k", "fp32", 8): "other-load",
    ("convnext_atto.d2_in1k", "fp32", 8): "other-load",
    ("deit_tiny_patch16_224.fb_in1k", "bf16", 8): "other-load",
}


def default_study_as_run(flags=AS_RUN_FLAGS):
    """The default study as a first run makes it: config.yaml's five models by name, its three
    methods at batch 1 and 8 on a CPU estimate, a 95% CI on every energy, and `flags` on a
    few rows (a busy host). Returns (summary, scores, fits, trace)."""
    profile, catalog, accuracy, trace = synthetic_study(
        n_models=5, methods=DEFAULT_METHODS, batch_sizes=(1, 8), failures=0, estimated=True
    )
    rename = dict(zip(catalog["model"], DEFAULT_MODELS, strict=True))
    for table in (profile, catalog, accuracy):
        table["model"] = table["model"].map(rename)
    catalog["family"] = catalog["model"].map(DEFAULT_MODELS)
    catalog["architecture"] = catalog["model"].str.split(".").str[0]
    catalog["pretrained_tag"] = catalog["model"].str.split(".", n=1).str[1]
    e = profile["energy_per_image_j"]
    profile["energy_per_image_ci95_low_j"] = e * 0.985
    profile["energy_per_image_ci95_high_j"] = e * 1.015
    profile["energy_per_image_cv"] = 0.006
    profile["repeats"] = 3
    key = zip(profile["model"], profile["method"], profile["batch_size_requested"], strict=True)
    profile["flags"] = [flags.get(k, "") for k in key]
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary, reference_model="resnet18.a1_in1k")
    return summary, scores, all_fits(summary, baseline_method="fp32"), trace
