"""(8) energy_optimal_front and (9) method_value: the decisions' figures, each model at its
best configuration (results/best_configs.parquet) and what each method costs against it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

import joulebench.report.figures.plot as plot
from joulebench.analysis.score import pareto_front
from joulebench.report.figures.registry import Inputs, figure
from joulebench.report.figures.rows import (
    empty_because,
    energy_base,
    is_estimated,
    matches,
    one_device,
    one_method,
    placed,
)

NAMES_MAX = 12  # points named in the figure (the front first), where their names fit
METHOD_VALUE_MODELS = 20  # models shown in the method-value figure (least best energy first)


def _best_group(best: pd.DataFrame, device_label: str | None) -> pd.DataFrame:
    """Found overall-best rows of one device (the asked one, else the one with most models)
    and one kind of meter (measured where there is any; a simulated GPU's, ranked only when
    decisions.include_simulated asked, where there is nothing else): never mixed on one axis."""
    b = best[matches(best["constraint"], "none") & best["met"].fillna(False).to_numpy(bool)].copy()
    b = b[b["phase"].fillna("inference") == "inference"]
    b = placed(b[np.isfinite(pd.to_numeric(b["top1"], errors="coerce"))])
    b = one_device(b, device_label)
    if b.empty:
        return b
    if "is_simulated" in b.columns:
        sim = b["is_simulated"].astype("boolean").fillna(False).astype(bool)
        b = b[~sim] if (~sim).any() else b
    est = b["energy_is_estimate"].fillna(False).astype(bool)
    return b[~est] if (~est).any() else b


@plot.styled
def energy_optimal_front(best: pd.DataFrame, stem, *, device_label: str | None = None, why=""):
    """Top-1 against energy per image, each model once: at its least-energy configuration over
    methods, runtimes and batch sizes (results/best_configs.parquet, constraint none), with
    its 95% CI as a horizontal bar, and the front of these best configurations."""
    title = "Energy-optimal front"
    b = _best_group(best, device_label)
    if b.empty:
        what = "no model has a comparable configuration and a top-1"
        return plot.no_data(stem, title, empty_because(what, why))
    e = pd.to_numeric(b["energy_per_image_j"]).to_numpy(float)
    a = pd.to_numeric(b["top1"]).to_numpy(float)
    lo = pd.to_numeric(b["energy_per_image_ci95_low_j"]).to_numpy(float)
    hi = pd.to_numeric(b["energy_per_image_ci95_high_j"]).to_numpy(float)
    unit, scale = plot.energy_unit(e)
    methods = sorted(b["method"].astype(str).unique())
    colors = plot.series_colors(methods)
    fig, ax = plot.new_figure(3.0)
    est = is_estimated(b).to_numpy()
    xerr = np.vstack([np.clip(e - lo, 0, None), np.clip(hi - e, 0, None)]) * scale
    ok = np.isfinite(xerr).all(axis=0)
    ax.errorbar(
        (e * scale)[ok], a[ok], xerr=xerr[:, ok], fmt="none", ecolor="#555555", lw=0.8,
        capsize=2.0, capthick=0.8, zorder=1,
    )  # fmt: skip
    for m in methods:
        sel = (b["method"].astype(str) == m).to_numpy()
        plot.scatter(
            ax,
            e[sel] * scale,
            a[sel],
            est[sel],
            color=colors[m],
            s=14,
            zorder=3,
            label=plot.short(m, 20),
        )
    on = pareto_front(a, e)
    order = np.argsort(e[on])
    fx, fy = (e[on] * scale)[order], a[on][order]
    ax.step(fx, fy, where="post", color="black", lw=0.9, zorder=2, label="front")
    ax.set_xscale("log")
    plot.plain_log(ax.xaxis)
    ax.set_xlabel(plot.energy_label(pd.Series(est), energy_base(b), unit))
    ax.set_ylabel("Top-1 accuracy (%)")
    ax.grid(True, which="major")
    ax.margins(y=plot.NAME_ROOM)  # room for a name above the top point
    handles = [plot.dot(colors[m], plot.short(m, 20)) for m in methods]  # one kind of meter: filled
    handles.append(Line2D([], [], color="black", lw=0.9, label="front"))
    dev = plot.short(b["device_label"].iloc[0], 20)
    if "is_simulated" in b.columns and b["is_simulated"].astype("boolean").fillna(False).all():
        dev += " (simulated)"
    head = f"{dev} · {plot.models_text(len(b))} at their best configuration"
    plot.top_legend(
        fig, handles, f"{head}\n{_ci_said(fig, ax, (e * scale)[ok], xerr[:, ok])}", ncol=3
    )
    rank = np.where(on, 0, 1)  # the front first, then by energy
    first = np.lexsort((e, rank))
    names = plot.point_names(b["model"].to_numpy()[first])
    plot.name_points(fig, ax, (e * scale)[first], a[first], names, most=NAMES_MAX)
    return plot.save(fig, stem)


def _ci_said(fig, ax, x, xerr: np.ndarray) -> str:
    """What the bars are, and how many hide behind their marker (a CI narrower than it):
    'bar: 95% CI; 5 of 5 within their marker (half-width at most 1.5%)'."""
    if not xerr.shape[1]:
        return "no 95% CI in the table"
    fig.canvas.draw()
    to_px = ax.transData.transform
    lo = to_px(np.column_stack([np.maximum(x - xerr[0], 1e-300), np.ones(len(x))]))[:, 0]
    hi = to_px(np.column_stack([x + xerr[1], np.ones(len(x))]))[:, 0]
    marker_px = fig.canvas.get_renderer().points_to_pixels(np.sqrt(14.0))
    hidden = (hi - lo) < marker_px
    if not hidden.any():
        return "bar: 95% CI"
    widest = float(np.max(np.maximum(xerr[0], xerr[1])[hidden] / x[hidden]))
    n = f"{int(hidden.sum())} of {xerr.shape[1]}"
    return f"bar: 95% CI; {n} within their marker (half-width at most {widest:.1%})"


# --- (9) what each method buys, relative to the model's best configuration ----------------------


def method_value_table(summary: pd.DataFrame, *, energy: str = "total", max_energy_cv=None):
    """Per (device, kind of meter, model, method): the method's least energy over batch sizes
    and runtimes, and its ratio to the model's least energy over every method (1: the best)."""
    from joulebench.analysis.best_configs import comparable

    df = comparable(summary, energy=energy, max_energy_cv=max_energy_cv)
    df = df[df["valid"] & (df["phase"].fillna("inference") == "inference")]
    if df.empty:
        return pd.DataFrame(
            columns=["device_label", "estimate", "model", "method", "energy_j", "best_j", "ratio"]
        )
    keys = ["device_label", "estimate", "model"]
    per = df.groupby([*keys, "method"], as_index=False)["energy_j"].min()
    per["best_j"] = per.groupby(keys)["energy_j"].transform("min")
    per["ratio"] = per["energy_j"] / per["best_j"]
    return per


@plot.styled
def method_value(
    summary: pd.DataFrame, stem, *, device_label: str | None = None, max_energy_cv=None, why=""
):
    """Per model, each method's least energy per image (over batch sizes) relative to the
    model's best configuration: what switching to the best method saves, model by model."""
    title = "What each method costs against the best configuration"
    energy = "dynamic" if energy_base(summary).startswith("Energy above") else "total"
    t = method_value_table(summary, energy=energy, max_energy_cv=max_energy_cv)
    t = one_device(t, device_label)
    if not t.empty:
        measured = ~t["estimate"].astype(bool)
        t = t[measured] if measured.any() else t
    multi = t.groupby("model")["method"].nunique() if not t.empty else pd.Series(dtype=int)
    t = t[t["model"].isin(multi[multi >= 2].index)] if len(multi) else t
    if t.empty and one_method(summary, device_label):
        return plot.no_data(stem, title, f"{one_method(summary, device_label)}: nothing to compare")
    if t.empty:
        what = "no model has comparable energies for two methods"
        return plot.no_data(stem, title, empty_because(what, why))
    order = t.groupby("model")["best_j"].first().sort_values()
    n_all = len(order)
    models = list(order.index[:METHOD_VALUE_MODELS])
    t = t[t["model"].isin(models)]
    methods = sorted(t["method"].astype(str).unique())
    colors = plot.series_colors(methods)
    markers = {m: plot.MARKERS[i % len(plot.MARKERS)] for i, m in enumerate(methods)}
    labels = [plot.two_lines(k) for k in reversed(models)]
    row_in = 0.27 if any("\n" in k for k in labels) else 0.16
    fig, ax = plot.new_figure(1.1 + row_in * len(models))
    y = {m: i for i, m in enumerate(reversed(models))}
    est = bool(t["estimate"].astype(bool).all())
    for m in methods:
        tm = t[t["method"].astype(str) == m]
        ax.scatter(
            tm["ratio"],
            [y[k] for k in tm["model"]],
            marker=markers[m],
            s=14,
            facecolors="none" if est else colors[m],
            edgecolors=colors[m],
            lw=0.8,
            zorder=3,
        )
    for k, g in t.groupby("model"):
        ax.plot([1, g["ratio"].max()], [y[k], y[k]], color="#cccccc", lw=0.6, zorder=1)
    ax.axvline(1, color="#444444", lw=0.6, ls=":")
    if t["ratio"].max() > 4:  # a wide spread reads better on a log scale
        ax.set_xscale("log")
        plot.plain_log(ax.xaxis)
    ax.set_yticks(range(len(models)), labels)
    ax.tick_params(axis="y", labelsize=6)
    ax.set_ylim(-0.7, len(models) - 0.3)
    unit = "ratio, estimated" if est else "ratio"
    ax.set_xlabel(f"Energy per image / model's best\n({unit})")
    ax.grid(True, axis="x", which="major")
    handles = [plot.dot(colors[m], plot.short(m, 20), markers[m], hollow=est) for m in methods]
    dev = plot.short(t["device_label"].iloc[0], 20)
    shown = f"{len(models)} of {n_all}" if n_all > len(models) else plot.models_text(n_all)
    head = f"{dev} · {shown} (least energy first) · 1 = best method"
    plot.top_legend(fig, handles, head, ncol=3)
    return plot.save(fig, stem)


def best_from(summary: pd.DataFrame, scores: pd.DataFrame, cv) -> pd.DataFrame:
    """Best configurations (overall only) by the score's rules, where no table is given."""
    from joulebench.analysis.best_configs import best_configs

    kinds = set(scores["energy_kind"].dropna()) if "energy_kind" in scores else set()
    energy = "dynamic" if kinds == {"dynamic"} else "total"
    return best_configs(
        summary, max_latency_ms=(), max_batch_size=(), energy=energy, max_energy_cv=cv
    )


@figure("energy_optimal_front", needs=("best_configs", "summary", "scores"))
def _draw_front(inputs: Inputs, stem) -> list[Path]:
    best = inputs.best_configs
    if best is None:
        best = best_from(inputs.summary, inputs.scores, inputs.max_energy_cv)
    return energy_optimal_front(best, stem, device_label=inputs.device_label, why=inputs.why)


@figure("method_value", needs=("summary",))
def _draw_value(inputs: Inputs, stem) -> list[Path]:
    return method_value(
        inputs.summary,
        stem,
        device_label=inputs.device_label,
        max_energy_cv=inputs.max_energy_cv,
        why=inputs.why,
    )
