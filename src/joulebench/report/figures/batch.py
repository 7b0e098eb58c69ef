"""(4) energy_vs_batch_size: energy per image against the batch size run, a thin line per
model (at most MAX_THIN_MODELS, spread over the energies) and each method's geometric mean
over one set of models: those measured with every method at every batch size shown, so the
bold lines compare like with like. The bold lines are drawn over the thin ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import NullLocator

import joulebench.report.figures.plot as plot
from joulebench.report.figures.registry import Inputs, figure
from joulebench.report.figures.rows import (
    empty_because,
    energy_base,
    is_estimated,
    one_device,
    placed,
)

MAX_THIN_MODELS = 40  # thin lines (one model each) at most: more hide the bold means


@plot.styled
def energy_vs_batch_size(
    batch: pd.DataFrame, stem, *, device_label: str | None = None, why: str = ""
):
    """Energy per image against the batch size run: a thin line per model, coloured by method,
    and each method's geometric mean over the same models (`common_models`)."""
    title = "Energy per image vs batch size"
    e_all = pd.to_numeric(batch["energy_per_image_j"], errors="coerce")
    placing = ("device_label", "method", "model", "batch_size")  # the batch size run
    b = placed(batch[np.isfinite(e_all) & (e_all > 0)], placing)
    b = one_device(b, device_label)
    if b.empty or b["batch_size"].nunique() < 2:
        what = "fewer than two batch sizes with a comparable energy"
        return plot.no_data(stem, title, empty_because(what, why))
    methods = sorted(b["method"].unique())
    colors = plot.series_colors(methods)
    unit, scale = plot.energy_unit(b["energy_per_image_j"])
    common = common_models(b)
    fig, ax = plot.new_figure(2.9)
    thin = thin_models(b)
    for m in methods:
        bm = b[b["method"] == m]
        for _, one in bm[bm["model"].isin(thin)].groupby("model"):
            one = one.sort_values("batch_size")
            x, y = one["batch_size"], one["energy_per_image_j"] * scale
            ax.plot(x, y, color=colors[m], lw=0.4, alpha=0.35, zorder=1)
        wide = bm.pivot_table(index="model", columns="batch_size", values="energy_per_image_j")
        wide = wide.loc[wide.index.isin(common)]
        if len(wide):
            gmean = np.exp(np.log(wide).mean())
            x, y = gmean.index, gmean.to_numpy() * scale
            label = plot.short(m)
            ax.plot(x, y, color=colors[m], lw=1.8, marker="o", ms=3, label=label, zorder=3)
    sizes = sorted(b["batch_size"].unique())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    plot.plain_log(ax.yaxis)
    ax.set_xticks(sizes, [str(int(v)) for v in sizes])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("Batch size (images)")
    ax.set_ylabel(plot.energy_label(is_estimated(b), energy_base(b), unit))
    ax.grid(True, which="major")
    device = plot.short(b["device_label"].iloc[0], 20)
    n_models = b["model"].nunique()
    thin_said = "one model" if len(thin) == n_models else f"{len(thin)} of them, spread"
    head = f"{device} · {plot.models_text(n_models)} · thin: {thin_said}\n"
    head += _means_said(len(common), n_models)
    plot.top_legend(fig, ax.get_legend_handles_labels()[0], head, ncol=3)
    return plot.save(fig, stem)


def thin_models(b: pd.DataFrame) -> list:
    """The models drawn thin: all up to MAX_THIN_MODELS, else that many spread evenly over
    the models ranked by their least energy (1,875 thin lines hide the means and show one
    band of ink; 40 show the spread)."""
    least = b.groupby("model")["energy_per_image_j"].min().sort_values(kind="stable")
    if len(least) <= MAX_THIN_MODELS:
        return list(least.index)
    picks = np.unique(np.linspace(0, len(least) - 1, MAX_THIN_MODELS).round().astype(int))
    return list(least.index[picks])


def common_models(b: pd.DataFrame) -> list:
    """The models with an energy for every method at every batch size shown: the one set each
    method's mean is taken over (a mean over 3 models beside one over 4 compares nothing)."""
    cells = b.groupby(["method", "batch_size"]).ngroups
    have = b.drop_duplicates(["model", "method", "batch_size"]).groupby("model").size()
    return sorted(have[have == cells].index)


def _means_said(n_common: int, n_all: int) -> str:
    """What the bold lines are over: 'bold: geometric mean of the same 3 models (measured with
    every method at every batch size; 2 others thin only)'."""
    if not n_common:
        return "no model was measured with every method at every batch size: no means"
    rest = f"; {n_all - n_common} other{'s' if n_all - n_common > 1 else ''} thin only"
    every = "measured with every method at every batch size"
    return (
        f"bold: geometric mean of the same {plot.models_text(n_common)}\n({every}"
        f"{rest if n_all > n_common else ''})"
    )


@figure("energy_vs_batch_size", needs=("fits",))
def _draw(inputs: Inputs, stem) -> list[Path]:
    return energy_vs_batch_size(
        inputs.fits["batch_scaling"], stem, device_label=inputs.device_label, why=inputs.why
    )
