"""(7) train_vs_inference: energy per training sample against energy per inference image,
per model, for the configurations measured in both phases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import joulebench.report.figures.plot as plot
from joulebench.analysis.score import DEFAULT_MAX_ENERGY_CV, measured_mask
from joulebench.report.figures.registry import Inputs, figure
from joulebench.report.figures.rows import (
    empty_because,
    is_estimated,
    matches,
    not_comparable,
    placed,
)


@plot.styled
def train_vs_inference(
    summary: pd.DataFrame,
    stem,
    *,
    device_label: str | None = None,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
):
    """Energy per training sample against energy per inference image, per model, for the
    configurations (device, method, batch size) measured in both phases; dotted: equal."""
    title = "Training vs inference energy per sample"
    both = _both_phases(summary, device_label, max_energy_cv)
    if both.empty:
        phases = sorted(set(summary["phase"].dropna()))
        if len(phases) < 2:
            only = phases[0] if phases else "no phase"
            what = f"the study measured {only} only (phases: [inference, train] adds training)"
            return plot.no_data(stem, title, what)
        what = "no model measured in both phases"
        why = not_comparable(summary, max_energy_cv=max_energy_cv)
        return plot.no_data(stem, title, empty_because(what, why))
    est = is_estimated(both)
    methods = sorted(both["method"].unique())
    colors = plot.series_colors(methods)
    unit, scale = plot.energy_unit(pd.concat([both["inference_j"], both["energy_per_image_j"]]))
    fig, ax = plot.new_figure(3.0)
    x = both["inference_j"].to_numpy(float) * scale
    y = both["energy_per_image_j"].to_numpy(float) * scale
    for m in methods:
        sel = (both["method"] == m).to_numpy(bool)
        plot.scatter(ax, x[sel], y[sel], est.to_numpy()[sel], color=colors[m], s=10, lw=0.4)
    low, high = min(x.min(), y.min()), max(x.max(), y.max())
    ax.plot([low, high], [low, high], ls=":", color="#444444", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plot.plain_log(ax.xaxis, ax.yaxis)
    ax.set_xlabel(plot.energy_label(est, "Inference energy per image", unit))
    ax.set_ylabel(plot.energy_label(est, "Training energy per sample", unit))
    ax.grid(True, which="major")
    handles = [plot.dot(colors[m], plot.short(m, 20)) for m in methods]
    head = f"{plot.models_text(both['model'].nunique())} · dotted: equal"
    plot.top_legend(fig, handles, head, ncol=4)
    return plot.save(fig, stem)


def _both_phases(summary: pd.DataFrame, device_label, max_energy_cv) -> pd.DataFrame:
    """The comparable training rows, each with its inference twin's energy (inference_j)."""
    s = placed(summary[measured_mask(summary, max_energy_cv=max_energy_cv)])
    if device_label is not None:
        s = s[matches(s["device_label"], device_label)]
    key = ["device_label", "method", "model", "batch_size_requested"]
    infer = s[matches(s["phase"], "inference")].drop_duplicates(key)
    infer = infer[key].assign(inference_j=infer["energy_per_image_j"])
    train = s[matches(s["phase"], "train")]
    both = train.merge(infer, on=key, how="inner")  # merge: a MultiIndex join fails on NA
    return both[np.isfinite(both["inference_j"].astype(float))]


@figure("train_vs_inference", needs=("summary",))
def _draw(inputs: Inputs, stem) -> list[Path]:
    return train_vs_inference(
        inputs.summary, stem, device_label=inputs.device_label, max_energy_cv=inputs.max_energy_cv
    )
