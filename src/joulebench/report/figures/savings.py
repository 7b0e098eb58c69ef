"""(3) method_savings: each method's energy saving against the baseline method, one box per
batch size, the models as points."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

import joulebench.report.figures.plot as plot
from joulebench.report.figures.registry import Inputs, figure
from joulebench.report.figures.rows import empty_because, is_estimated, one_device, placed


@plot.styled
def method_savings(savings: pd.DataFrame, stem, *, device_label: str | None = None, why: str = ""):
    """Distribution of each method's saving against the baseline, one box per batch size."""
    title = "Energy saving of methods"
    s = placed(savings[np.isfinite(pd.to_numeric(savings["saving"], errors="coerce"))])
    s = one_device(s, device_label)
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
    for i, m in enumerate(methods):
        for j, b in enumerate(batches):
            v = 100 * s.loc[(s["method"] == m) & (s["batch_size_requested"] == b), "saving"]
            if v.empty:
                continue
            pos = i + (j - (len(batches) - 1) / 2) * width
            ax.boxplot(
                v.to_numpy(float),
                positions=[pos],
                widths=width * 0.8,
                showfliers=False,
                medianprops={"color": "black", "lw": 1.0},
                boxprops={"color": colors[b], "lw": 0.8},
                whiskerprops={"color": colors[b], "lw": 0.8},
                capprops={"color": colors[b], "lw": 0.8},
            )
            jitter = rng.uniform(-0.25, 0.25, len(v)) * width
            ax.scatter(pos + jitter, v, s=4, color=colors[b], alpha=0.6, lw=0, zorder=3)
    ax.axhline(0, color="#444444", lw=0.6, ls=":")
    _method_ticks(ax, [plot.short(m, 20) for m in methods])
    ax.set_xlabel("Method")
    est = is_estimated(s)
    label = plot.energy_label(est, f"Energy saving vs {plot.short(baseline, 20)}", "%")
    ax.set_ylabel(label.replace(": open markers", ""))
    handles = [Line2D([], [], color=colors[b], lw=2, label=f"batch {b}") for b in batches]
    n = plot.models_text(s["model"].nunique())
    head = f"{plot.short(s['device_label'].iloc[0], 20)} · {n} · saving = 1 − E/E(baseline)"
    plot.top_legend(fig, handles, head, ncol=min(len(batches), 4))
    ax.grid(True, axis="y")
    return plot.save(fig, stem)


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


@figure("method_savings", needs=("fits",))
def _draw(inputs: Inputs, stem) -> list[Path]:
    return method_savings(
        inputs.fits["method_savings"], stem, device_label=inputs.device_label, why=inputs.why
    )
