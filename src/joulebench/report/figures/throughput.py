"""(6) throughput_vs_energy: throughput against energy per image, with lines of constant
mean power (energy per image = power / throughput).

Measured energies only. An estimating meter's energy is its modelled power times the step
time (estimate:tdp-linear), so each point would sit on its power model's constant-power line
by construction: the figure would draw the model's assumption as a finding. Such rows are left
out, and a study with nothing else does not make the figure (it says why).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import joulebench.report.figures.plot as plot
from joulebench.analysis.score import DEFAULT_MAX_ENERGY_CV, measured_mask
from joulebench.report.figures.registry import Inputs, figure
from joulebench.report.figures.rows import (
    empty_because,
    energy_base,
    is_estimated,
    not_comparable,
    one_device,
    placed,
)


@plot.styled
def throughput_vs_energy(
    summary: pd.DataFrame,
    stem,
    *,
    device_label: str | None = None,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
):
    """Throughput against energy per image; since E = P / throughput, dotted lines mark
    constant mean power, so distance across them is a difference in power draw."""
    title = "Throughput vs energy per image"
    s = placed(summary[measured_mask(summary, max_energy_cv=max_energy_cv)])
    throughput = pd.to_numeric(s["throughput_img_s"], errors="coerce")
    s = one_device(s[np.isfinite(throughput) & (throughput > 0)], device_label)
    if s.empty:
        why = not_comparable(summary, max_energy_cv=max_energy_cv)
        what = "no configuration with both a comparable energy and a throughput"
        return plot.no_data(stem, title, empty_because(what, why))
    modelled = is_estimated(s)
    if modelled.all():
        return plot.no_data(stem, title, estimate_is_the_model(s), lead="Not drawn")
    left_out = int(modelled.sum())
    s = s[~modelled.to_numpy()]
    methods = sorted(s["method"].unique())
    batches = sorted(s["batch_size_requested"].dropna().unique())
    colors = plot.series_colors(methods)
    markers = {b: plot.MARKERS[i % len(plot.MARKERS)] for i, b in enumerate(batches)}
    est = is_estimated(s)  # all False: measured only
    unit, scale = plot.energy_unit(s["energy_per_image_j"])
    fig, ax = plot.new_figure(3.0)
    x = s["energy_per_image_j"].to_numpy(float) * scale
    y = s["throughput_img_s"].to_numpy(float)
    for m in methods:
        for b in batches:
            sel = ((s["method"] == m) & (s["batch_size_requested"] == b)).to_numpy(bool)
            if sel.any():
                plot.scatter(
                    ax,
                    x[sel],
                    y[sel],
                    est.to_numpy()[sel],
                    color=colors[m],
                    s=9,
                    lw=0.4,
                    alpha=0.85,
                    marker=markers[b],
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    plot.plain_log(ax.xaxis, ax.yaxis)
    _iso_power(ax, x / scale, y, scale)
    ax.set_xlabel(plot.energy_label(est, energy_base(s), unit))
    ax.set_ylabel("Throughput (images/s)")
    ax.grid(True, which="major")
    handles = [plot.dot(colors[m], plot.short(m, 20)) for m in methods]
    handles += [plot.dot("#555555", f"batch {b}", markers[b]) for b in batches]
    device = plot.short(s["device_label"].iloc[0], 20)
    head = f"{device} · {plot.models_text(s['model'].nunique())} · dotted: constant power"
    if left_out:
        head += f"\n{left_out} estimated configurations left out (modelled power × time)"
    plot.top_legend(fig, handles, head, ncol=5)
    return plot.save(fig, stem)


def estimate_is_the_model(rows: pd.DataFrame) -> str:
    """Why throughput against an estimated energy is not drawn, naming the meters."""
    meters = ", ".join(sorted(set(rows["meter"].dropna().astype(str)))) or "an estimate"
    return (
        f"every energy here is estimated ({meters}): modelled power × step time, so each point "
        "lies on its power model's constant-power line by construction, and the figure "
        "would show the model, not a finding"
    )


def _iso_power(ax, energy_j: np.ndarray, throughput: np.ndarray, scale: float = 1.0) -> None:
    """Dotted lines of constant power P = E * throughput at each decade of watts in view,
    labelled near where they leave the plot, at the angle they are drawn. The x axis shows
    energy in joules times `scale` (mJ: 1e3)."""
    power = energy_j * throughput
    power = power[np.isfinite(power) & (power > 0)]
    if not power.size:
        return
    xlim, ylim = ax.get_xlim(), ax.get_ylim()
    xs = np.geomspace(*xlim, 20)
    decades = np.arange(np.floor(np.log10(power.min())), np.ceil(np.log10(power.max())) + 1)
    for p in 10.0**decades:
        k = p * scale  # in axis units: throughput = k / x
        ax.plot(xs, k / xs, color="#b0b0b0", lw=0.5, ls=":", zorder=0)
        x_end = min(xlim[1], k / ylim[0])  # leaves through the right edge or the bottom
        xt = x_end / 10 ** (0.12 * np.log10(xlim[1] / xlim[0]))
        if not (xlim[0] < xt < xlim[1] and ylim[0] < k / xt < ylim[1]):
            continue
        (x0, y0), (x1, y1) = ax.transData.transform([(xt, k / xt), (xt * 2, k / xt / 2)])
        angle = np.degrees(np.arctan2(y1 - y0, x1 - x0))
        ax.text(
            xt,
            k / xt,
            f"{plot.plain_number(p)} W",
            fontsize=5.5,
            color="#808080",
            rotation=angle,
            rotation_mode="anchor",
            ha="center",
            va="bottom",
        )
    ax.set_xlim(xlim)
    ax.set_ylim(ylim)


@figure("throughput_vs_energy", needs=("summary",))
def _draw(inputs: Inputs, stem) -> list[Path]:
    return throughput_vs_energy(
        inputs.summary, stem, device_label=inputs.device_label, max_energy_cv=inputs.max_energy_cv
    )
