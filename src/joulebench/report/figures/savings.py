"""(3) method_savings: each method's energy saving against the baseline method, one box per
batch size, the models as points; fewer than BOX_MIN models are points and their median only
(a box of 3 points draws quartiles that are not there)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

import joulebench.report.figures.plot as plot
from joulebench.report.figures.registry import Inputs, figure
from joulebench.report.figures.rows import (
    empty_because,
    is_estimated,
    one_device,
    one_method,
    placed,
)

BOX_MIN = 8  # models a box needs; fewer are drawn as points with their median


@plot.styled
def method_savings(
    savings: pd.DataFrame, stem, *, device_label: str | None = None, why: str = "", only: str = ""
):
    """Distribution of each method's saving against the baseline, per batch size; `only`:
    the study measured a single method (rows.one_method), which is then why it is empty."""
    title = "Energy saving of methods"
    s = placed(savings[np.isfinite(pd.to_numeric(savings["saving"], errors="coerce"))])
    s = one_device(s, device_label)
    if s.empty and only:
        return plot.no_data(stem, title, f"{only}: a saving needs a second one")
    if s.empty:
        what = "no model measured with both a method and the baseline"
        return plot.no_data(stem, title, empty_because(what, why))
    baseline = s["baseline_method"].iloc[0]
    methods = sorted(s["method"].unique())
    batches = sorted(s["batch_size_requested"].dropna().unique())
    colors = plot.series_colors(batches)
    fig, ax = plot.new_figure(2.8)
    width = 0.8 / len(batches)
    rng = np.random.default_rng(0)
    boxes = False
    for i, m in enumerate(methods):
        for j, b in enumerate(batches):
            v = 100 * s.loc[(s["method"] == m) & (s["batch_size_requested"] == b), "saving"]
            if v.empty:
                continue
            pos = i + (j - (len(batches) - 1) / 2) * width
            boxes |= _distribution(ax, v.to_numpy(float), pos, width, colors[b], rng)
    ax.axhline(0, color="#444444", lw=0.6, ls=":")
    _method_ticks(ax, [plot.short(m, 20) for m in methods])
    ax.set_xlabel("Method")
    est = is_estimated(s)
    label = plot.energy_label(est, f"Energy saving vs {plot.short(baseline, 20)}", "%")
    ax.set_ylabel(label.replace(": open markers", ""))
    handles = [Line2D([], [], color=colors[b], lw=2, label=f"batch {b}") for b in batches]
    n = plot.models_text(s["model"].nunique())
    head = f"{plot.short(s['device_label'].iloc[0], 20)} · {n} · saving = 1 − E/E(baseline)"
    head += f"\npoint: a model · black line: median{' · box: quartiles' if boxes else ''}"
    plot.top_legend(fig, handles, head, ncol=min(len(batches), 4))
    ax.grid(True, axis="y")
    return plot.save(fig, stem)


def _distribution(ax, v: np.ndarray, pos: float, width: float, color, rng) -> bool:
    """One method and batch size: its models as points and their median; a box of the
    quartiles too where there are BOX_MIN or more. Returns whether a box was drawn."""
    boxed = len(v) >= BOX_MIN
    if boxed:
        line = {"color": color, "lw": 0.8}
        ax.boxplot(
            v, positions=[pos], widths=width * 0.8, showfliers=False, boxprops=line,
            whiskerprops=line, capprops=line, medianprops={"color": "black", "lw": 1.0},
        )  # fmt: skip
    else:
        half = width * 0.3
        ax.plot([pos - half, pos + half], [np.median(v)] * 2, color="black", lw=1.0, zorder=2)
    jitter = rng.uniform(-0.25, 0.25, len(v)) * width
    size, alpha = (4, 0.6) if boxed else (12, 0.9)
    ax.scatter(pos + jitter, v, s=size, color=color, alpha=alpha, lw=0, zorder=3)
    return boxed


def _method_ticks(ax, names: list[str]) -> None:
    """One tick per method: side by side the names must fit the axis (~40 characters at
    7 pt); else they are slanted."""
    slant = sum(len(n) + 2 for n in names) > 40
    ax.set_xticks(range(len(names)), names)
    if slant:
        ax.tick_params(axis="x", labelrotation=30)
        for t in ax.get_xticklabels():
            t.set(ha="right", rotation_mode="anchor")
    ax.set_xlim(-0.6, len(names) - 0.4)


@figure("method_savings", needs=("fits", "summary"))
def _draw(inputs: Inputs, stem) -> list[Path]:
    return method_savings(
        inputs.fits["method_savings"],
        stem,
        device_label=inputs.device_label,
        why=inputs.why,
        only=one_method(inputs.summary, inputs.device_label),
    )
