"""(2) energy_vs_factors: energy per image against GFLOPs, parameters and activations, one
log-log panel each, with the fits' line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

import joulebench.report.figures.plot as plot
from joulebench.analysis.score import (
    DEFAULT_MAX_ENERGY_CV,
    ENERGY_COLUMNS,
    SCORE_GROUP,
    measured_mask,
)
from joulebench.core.host_bound import HOST_BOUND_BELOW
from joulebench.flags import FLAG_HOST_BOUND, has_flag
from joulebench.report.figures.registry import Inputs, figure
from joulebench.report.figures.rows import (
    describe,
    empty_because,
    energy_base,
    is_estimated,
    matches,
    not_comparable,
    pick_group,
    placed,
    selectors,
)
from joulebench.report.palettes import OKABE_ITO, OTHER_GREY

FACTOR_AXES = {  # column -> (scale, axis label)
    "flops_per_image": (1e-9, "GFLOPs per image"),
    "params": (1e-6, "Parameters (millions)"),
    "activations_per_image": (1e-6, "Activations per image (millions)"),
}


@plot.styled
def energy_vs_factors(
    summary: pd.DataFrame,
    factor_fits: pd.DataFrame,
    stem,
    *,
    factors: Sequence[str] = tuple(FACTOR_AXES),
    phase: str | None = None,
    device_label: str | None = None,
    method: str | None = None,
    batch_size: int | None = None,
    max_families: int = 5,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> list[Path]:
    """Log-log energy against each factor (one panel each), the overall fit line with slope
    and R² in the legend; the largest families coloured, the rest grey."""
    title = "Energy per image vs model size"
    want = selectors(phase=phase, device_label=device_label, method=method)
    want["batch_size_requested"] = batch_size
    kind = "total"
    if factor_fits is not None and len(factor_fits):
        kind = str(factor_fits["energy_kind"].iloc[0])
    comparable = measured_mask(summary, kind, max_energy_cv=max_energy_cv)
    simulated = not comparable.any()  # a study of simulated GPUs only: drawn, and said so
    if simulated:
        comparable = measured_mask(
            summary, kind, max_energy_cv=max_energy_cv, include_simulated=True
        )
    g = pick_group(placed(summary[comparable]), SCORE_GROUP, want)
    if g.empty:
        why = not_comparable(summary, kind, max_energy_cv)
        where = f" ({describe(want)})" if describe(want) != "all groups" else ""
        return plot.no_data(stem, title, empty_because(f"no comparable energy{where}", why))
    row = g.iloc[0]
    est = is_estimated(g)
    fam = g["family"].astype("string").fillna("unknown")
    top = list(fam.value_counts().index[:max_families])
    height_in = 1.85 * len(factors) + 0.7
    fig, axes = plot.new_figure(height_in, nrows=len(factors), ncols=1, squeeze=False)
    axes = axes[:, 0]
    unit, e_scale = plot.energy_unit(g[ENERGY_COLUMNS[kind]])
    e = g[ENERGY_COLUMNS[kind]].to_numpy(float) * e_scale
    host = host_bound(g)
    for ax, factor in zip(axes, factors, strict=True):
        x_scale, xlabel = FACTOR_AXES[factor]
        x = pd.to_numeric(g[factor], errors="coerce").to_numpy(float)
        ok = np.isfinite(x) & (x > 0)
        _by_family(ax, x * x_scale, e, fam, top, est.to_numpy(), ok=ok)
        ring = _ring_host_bound(ax, x * x_scale, e, host & ok)
        x_ok = x[np.isfinite(x) & (x > 0)]
        fit = _fit_line(ax, factor_fits, row, factor, x_ok, x_scale, e_scale)
        ax.set_xscale("log")
        ax.set_yscale("log")
        plot.plain_log(ax.xaxis, ax.yaxis)
        # the fit under its axis, not in a legend over points and their names
        ax.set_xlabel(xlabel if fit is None else f"{xlabel}\n{fit.get_label()}")
        ax.grid(True, which="major")
    base = energy_base(g.assign(energy_kind=kind))
    fig.supylabel(plot.energy_label(est, base, unit), fontsize=plot.STYLE["axes.labelsize"])
    handles, labels = axes[0].get_legend_handles_labels()
    keep = [
        h
        for h, lab in zip(handles, labels, strict=True)
        if not lab.startswith(("dashed: fit", "host-bound"))  # the ring: once, last
    ]
    keep += [ring] if ring is not None else []
    head = f"{plot.group_title(row)} · {plot.models_text(len(g))}, by family"
    if simulated:
        head += "\nSIMULATED GPU: the sensor simulator's energy, not a measurement"
    plot.top_legend(fig, keep, head, ncol=3)
    _name_panels(fig, axes, g, factors, e)
    return plot.save(fig, stem)


def _name_panels(fig, axes, g: pd.DataFrame, factors: Sequence[str], e: np.ndarray) -> None:
    """Each panel's points named where the names fit, least energy first."""
    order = np.argsort(e, kind="stable")
    names = np.array(plot.point_names(g["model"]), dtype=object)[order]
    for ax, factor in zip(axes, factors, strict=True):
        x_scale = FACTOR_AXES[factor][0]
        x = pd.to_numeric(g[factor], errors="coerce").to_numpy(float)[order] * x_scale
        ok = np.isfinite(x) & (x > 0)
        plot.name_points(fig, ax, x[ok], e[order][ok], names[ok])


def _by_family(ax, x, e, fam: pd.Series, top: list, est, ok: np.ndarray) -> None:
    """The points of one panel: the `top` families coloured, the rest grey ("other")."""
    colors = {f: OKABE_ITO[i] for i, f in enumerate(top)}
    for f in [*top, None]:
        sel = (~fam.isin(top)).to_numpy() if f is None else (fam == f).to_numpy()
        sel = sel & ok
        if sel.any():
            color = OTHER_GREY if f is None else colors[f]
            label = "other" if f is None else plot.short(f, 20)
            plot.scatter(
                ax, x[sel], e[sel], est[sel], color=color, s=9, lw=0.3, alpha=0.85, label=label
            )


def host_bound(rows: pd.DataFrame) -> np.ndarray:
    """Which rows are flagged host-bound (core.host_bound): the GPU waited on the host."""
    flags = rows["flags"] if "flags" in rows else pd.Series("", index=rows.index)
    return np.array([has_flag(f, FLAG_HOST_BOUND) for f in flags.fillna("")], dtype=bool)


def _ring_host_bound(ax, x, e, mask: np.ndarray):
    """A black ring around each host-bound point; its legend handle (None: none here)."""
    if not mask.any():
        return None
    return ax.scatter(
        x[mask], e[mask], s=34, facecolors="none", edgecolors="black", lw=0.6, zorder=4,
        label=f"host-bound (GPU busy < {HOST_BOUND_BELOW:.0%} of a step)",
    )  # fmt: skip


def _fit_line(ax, fits, row, factor: str, x_raw: np.ndarray, x_scale: float, e_scale: float):
    """The overall fit of `factor` in `row`'s group as a dashed line (None: not fitted)."""
    if fits is None or fits.empty or not len(x_raw):
        return None
    sel = matches(fits["factor"], factor) & matches(fits["family"], "all")
    for k in SCORE_GROUP:
        sel &= matches(fits[k], row[k])
    hit = fits[sel]
    if hit.empty or not np.isfinite(hit["slope"].iloc[0]):
        return None
    f = hit.iloc[0]
    xs = np.geomspace(x_raw.min(), x_raw.max(), 50)
    ys = 10 ** (f["intercept_log10"] + f["slope"] * np.log10(xs))
    label = f"dashed: fit, slope {f['slope']:.2f}, R² = {f['r2']:.2f} (n = {f['n']})"
    (line,) = ax.plot(
        xs * x_scale, ys * e_scale, color="black", lw=0.9, ls="--", zorder=3, label=label
    )
    return line


@figure("energy_vs_factors", needs=("summary", "fits"))
def _draw(inputs: Inputs, stem) -> list[Path]:
    return energy_vs_factors(
        inputs.summary,
        inputs.fits.get("factor_fits"),
        stem,
        max_energy_cv=inputs.max_energy_cv,
        **inputs.group,
    )
