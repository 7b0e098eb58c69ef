"""The study's figures: matplotlib (Agg, no pyplot state), PDF + PNG, sized for a paper column.

Every function takes DataFrames and an output path stem and writes `<stem>.pdf` and
`<stem>.png` atomically, returning both paths. Empty or degenerate input gives a figure that
says "No data" and why, never an exception: a study where everything failed still gets
its report. Colours are the Okabe–Ito palette (series) and viridis (ordered grades), both
readable with the common colour-vision deficiencies, from palettes.py (shared with the page).
Energies from an estimating meter are labelled "estimated" on the axis that shows them.

Only numpy, pandas and matplotlib are imported: figures are made from published summaries
on machines without torch.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

from joulebench.analysis.score import (
    DEFAULT_INVALID_FLAGS,
    DEFAULT_MAX_ENERGY_CV,
    ENERGY_COLUMNS,
    GRADES,
    SCORE_GROUP,
    measured_mask,
    pareto_front,
    row_flags,
)
from joulebench.analysis.summary import SUMMARY_KEY
from joulebench.report.palettes import GRADE_COLORS, OKABE_ITO, OTHER_GREY
from joulebench.tables import atomic_write, energy_is_estimate, read_table

COLUMN_WIDTH_IN = 3.5
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
STYLE = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 6.5,
    "legend.frameon": False,
    "axes.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.0,
    "lines.markersize": 3.5,
    "grid.linewidth": 0.4,
    "grid.alpha": 0.35,
    "pdf.fonttype": 42,  # embed TrueType: text stays text in the PDF
    "savefig.dpi": 300,
    # Labels are text: a model, method or device named "$x^$" must print as written, never
    # go through mathtext (which raises on it). Log axes get plain-number ticks below.
    "text.parse_math": False,
}
# Energies are shown in the unit in which the typical (median) value is at least 1.
ENERGY_UNITS = (("J", 1.0), ("mJ", 1e3), ("µJ", 1e6))
LABEL_CHARS = 28  # user strings (models, methods, devices, families) longer than this are cut
FACTOR_AXES = {  # column -> (scale, axis label)
    "flops_per_image": (1e-9, "GFLOPs per image"),
    "params": (1e-6, "Parameters (millions)"),
    "activations_per_image": (1e-6, "Activations per image (millions)"),
}


# --- shared helpers ---------------------------------------------------------------------------


def _styled(func):
    """Draw and save under STYLE, without touching the caller's matplotlib settings."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(STYLE):
            return func(*args, **kwargs)

    return wrapper


def _figure(height_in: float, width_in: float = COLUMN_WIDTH_IN, **subplots):
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(**subplots) if subplots else fig.add_subplot()
    return fig, axes


def _save(fig: Figure, stem) -> list[Path]:
    """Write <stem>.pdf and <stem>.png, each to a temp file in the folder, then rename."""
    paths = []
    for fmt in ("pdf", "png"):
        path = Path(f"{os.fspath(stem)}.{fmt}")  # stems may contain dots (model names)
        meta = {"CreationDate": None} if fmt == "pdf" else {"Software": "joulebench"}
        atomic_write(path, lambda tmp, f=fmt, m=meta: fig.savefig(tmp, format=f, metadata=m))
        paths.append(path)
    return paths


@_styled
def no_data(stem, title: str, reason: str) -> list[Path]:
    """A figure that says there is nothing to draw and why."""
    fig, ax = _figure(1.6)
    ax.set_axis_off()
    ax.text(0.5, 0.62, title, ha="center", va="center", fontsize=8, weight="bold")
    ax.text(0.5, 0.38, f"No data: {reason}", ha="center", va="center", fontsize=7, wrap=True)
    return _save(fig, stem)


def short(text, n: int = LABEL_CHARS) -> str:
    """A user string cut to `n` characters with an ellipsis: a 10,000-character family name
    must not push the legend off the figure (the full name is in the data and on the page)."""
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def energy_unit(values) -> tuple[str, float]:
    """(unit, factor from joules) in which the median positive energy is at least 1."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return ENERGY_UNITS[0]
    middle = float(np.median(v))
    for unit, scale in ENERGY_UNITS:
        if middle * scale >= 1.0:
            return unit, scale
    return ENERGY_UNITS[-1]


def plain_number(value: float) -> str:
    """A tick value as people write it: 0.002, 0.5, 20, 1,000 (never 2 x 10^-3)."""
    if not np.isfinite(value):
        return ""
    if value == 0:
        return "0"
    k = math.floor(math.log10(abs(value)))
    for digits in (1, 2, 3):
        decimals = max(0, digits - 1 - k)
        if abs(round(value, decimals) - value) <= 1e-9 * abs(value):
            break
    return f"{value:,.{decimals}f}"


class _LogTicks(LogLocator):
    """Decades on wide axes; 1-2-5 or finer steps when an axis spans only a decade or two, so
    a log axis always has a few labelled ticks."""

    def tick_values(self, vmin, vmax):
        lo, hi = sorted((vmin, vmax))
        span = math.log10(hi / lo) if lo > 0 and np.isfinite(hi / lo) else 3.0
        if span > 2.2:
            subs = (1.0,)
        elif span > 0.9:
            subs = (1.0, 2.0, 5.0)
        elif span > 0.35:
            subs = (1.0, 2.0, 3.0, 5.0, 7.0)
        else:
            subs = tuple(np.arange(1.0, 10.0))
        self.set_params(subs=subs)
        return super().tick_values(vmin, vmax)


def _plain_log(*axes) -> None:
    """Log-scaled axes labelled with plain numbers at major ticks only."""
    for axis in axes:
        axis.set_major_locator(_LogTicks(base=10.0))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: plain_number(v)))
        axis.set_minor_formatter(NullFormatter())


def group_title(row) -> str:
    """A comparison group for a figure: device · method · batch, user strings cut short."""
    est = " (estimated)" if _is_true(row.get("energy_is_estimate")) else ""
    dev, method = short(row["device_label"], 20), short(row["method"], 20)
    return f"{dev} · {method} · batch {row['batch_size_requested']}{est}"


def is_estimated(df: pd.DataFrame) -> pd.Series:
    """Per row: is the energy an estimate (tables.energy_is_estimate; unknown: no)."""
    return energy_is_estimate(df).fillna(False).astype(bool)


def energy_base(df: pd.DataFrame) -> str:
    """The name of the energy a table holds: total, or above idle (energy_kind "dynamic");
    the device's (the default), or the whole node's (energy_scope "node")."""
    kinds = set(df["energy_kind"].dropna()) if "energy_kind" in df.columns else set()
    scopes = set(df["energy_scope"].dropna()) if "energy_scope" in df.columns else set()
    if scopes == {"node"}:
        return f"Energy per image, {NODE_SCOPE_WORDS}"
    return "Energy above idle per image" if kinds == {"dynamic"} else "Energy per image"


# energy_scope node, on every energy axis that shows it
NODE_SCOPE_WORDS = "whole node: GPU+CPU+DRAM"
# figures.secondary_unit: a second energy axis in the units people use (analysis.carbon)
SECONDARY_UNITS = {
    "wh_per_1k_images": ("energy_per_1k_images_wh", "Wh per 1,000 images"),
    "gco2e_per_1k_images": ("co2e_per_1k_images_g", "gCO2e per 1,000 images (estimate)"),
}


def secondary_axis(ax, shown: pd.DataFrame, scale: float, unit_name: str | None) -> str:
    """A top axis in `unit_name` (SECONDARY_UNITS) over an energy x axis drawn at `scale`
    (J x scale); returns why there is none ("" when drawn or not asked for)."""
    if not unit_name:
        return ""
    column, label = SECONDARY_UNITS[unit_name]
    values = pd.to_numeric(shown.get(column), errors="coerce") if column in shown else None
    e = pd.to_numeric(shown["energy_per_image_j"], errors="coerce")
    ratio = (values / e).replace([np.inf, -np.inf], np.nan).dropna() if values is not None else []
    if not len(ratio):
        return "no CO2e axis: set carbon.grid_gco2e_per_kwh"
    per_j = float(ratio.median())  # a constant of the config (carbon.py): the same on every row
    top = ax.secondary_xaxis(
        "top", functions=(lambda x: x / scale * per_j, lambda y: y / per_j * scale)
    )
    top.set_xlabel(label, fontsize=STYLE["axes.labelsize"])
    _plain_log(top.xaxis)  # tick labels as plain text (no mathtext), as on every axis
    return ""


def energy_label(estimated: pd.Series, base: str = "Energy per image", unit: str = "J") -> str:
    """'Energy per image (J)', '(J, estimated)', or '(J, partly estimated: open markers)'."""
    if len(estimated) and estimated.all():
        return f"{base} ({unit}, estimated)"
    if estimated.any():
        return f"{base} ({unit}, partly estimated: open markers)"
    return f"{base} ({unit})"


def _pick_group(df: pd.DataFrame, keys: Sequence[str], want: dict) -> pd.DataFrame:
    """Rows of one comparison group: the requested one, else the group with the most rows."""
    for k, v in want.items():
        if v is not None:
            df = df[matches(df[k], v)]
    if df.empty:
        return df
    sizes = df.groupby(list(keys), dropna=False, sort=True).size()
    best = sizes.index[int(np.argmax(sizes.to_numpy()))]
    best = best if isinstance(best, tuple) else (best,)
    mask = np.ones(len(df), bool)
    for k, v in zip(keys, best, strict=True):
        mask &= matches(df[k], v)
    return df[mask]


def _legend_columns(fig: Figure, handles, ncol: int) -> int:
    """At most `ncol` columns, as many as fit the figure's width: a column takes about
    0.55 em per character of its longest label, plus the marker and the spacing."""
    if not handles:
        return 1
    em_pt = float(matplotlib.rcParams["legend.fontsize"])
    longest = max(len(h.get_label()) for h in handles)
    column_pt = em_pt * (0.55 * longest + 3.5)
    width_pt = fig.get_figwidth() * 72 - 12
    return max(1, min(ncol, len(handles), int(width_pt // column_pt)))


def _top_legend(fig: Figure, handles, title: str, ncol: int = 3) -> None:
    """The legend above the axes, titled with what the figure shows: never over the data."""
    fig.legend(
        handles=handles,
        loc="outside upper left",
        ncol=_legend_columns(fig, handles, ncol),
        title=title,
        title_fontsize=7,
        alignment="left",
        handletextpad=0.3,
        columnspacing=1.0,
    )


def _models(n: int) -> str:
    return f"{n} model{'' if n == 1 else 's'}"


def _series_colors(labels: Sequence) -> dict:
    return {lab: OKABE_ITO[i % len(OKABE_ITO)] for i, lab in enumerate(labels)}


def _scatter(ax, x, y, est, **kw):
    """Filled markers for measured points, open markers for estimated ones (mixed figures)."""
    est = np.asarray(est, bool)
    color = kw.pop("color")
    if (~est).any():
        ax.scatter(x[~est], y[~est], color=color, **kw)
    if est.any():
        mixed = (~est).any()
        face = "none" if mixed else color
        ax.scatter(x[est], y[est], facecolors=face, edgecolors=color, **kw)


def _selectors(**kw) -> dict:
    return {k: v for k, v in kw.items() if v is not None}


# What places a row in a group or a series. A row without one of these (the summary's own
# not-profiled rows have no device, method or batch size) cannot be placed: figures leave it
# out, and count it ("without device_label") where they say why they are empty.
PLACE_KEYS = ("device_label", "method", "model", "batch_size_requested")


def matches(values: pd.Series, value) -> np.ndarray:
    """`values == value` as a plain bool array, NA-safe: NA matches NA (as the score's groups,
    grouped with dropna=False, do) and nothing else, never a "boolean value of NA" error."""
    if pd.isna(value):
        return values.isna().to_numpy(bool)
    return (values == value).fillna(False).to_numpy(bool)


def missing_key(df: pd.DataFrame, keys: Sequence[str] = PLACE_KEYS) -> pd.Series:
    """Per row, the first of `keys` it lacks ('' when it has them all)."""
    out = pd.Series("", index=df.index, dtype=object)
    for k in reversed([k for k in keys if k in df.columns]):
        out = out.mask(df[k].isna().to_numpy(bool), k)
    return out


def placed(df: pd.DataFrame, keys: Sequence[str] = PLACE_KEYS) -> pd.DataFrame:
    """The rows that have every one of `keys`: the rows a figure can put somewhere."""
    return df[(missing_key(df, keys) == "").to_numpy(bool)]


def _one_device(df: pd.DataFrame, device_label: str | None) -> pd.DataFrame:
    """The rows of `device_label`, else of the device with the most rows."""
    if device_label is None and not df.empty:
        device_label = df["device_label"].value_counts().index[0]
    return df if device_label is None else df[matches(df["device_label"], device_label)]


def _is_true(value) -> bool:
    """A flag of one row, NA (unknown) as False."""
    return bool(value) if pd.notna(value) else False


# --- (1) accuracy vs energy, the front and the grades -----------------------------------------


_FLAGGED_NOTE = re.compile(r"flagged ([^\s:(;]+)")


def unscored_reasons(scores: pd.DataFrame) -> pd.Series:
    """Why each row is not on the plot, from its score note: "failed", "without <key>" (no
    device, method, model or batch size), "flagged <flag>", "without energy" or "without
    top-1"; "" for scored rows."""
    scored = scores["scored"].fillna(False).astype(bool)
    lacks = missing_key(scores)
    notes = scores["score_note"].astype("string").fillna("") if "score_note" in scores else None
    status = scores["status"].astype("string").fillna("missing")
    e = pd.to_numeric(scores["energy_per_image_j"], errors="coerce")
    a = pd.to_numeric(scores["top1"], errors="coerce")
    out = []
    for i in range(len(scores)):
        flag = _FLAGGED_NOTE.search(notes.iloc[i]) if notes is not None else None
        if status.iloc[i] != "ok":
            out.append("failed")
        elif lacks.iloc[i]:
            out.append(f"without {lacks.iloc[i]}")
        elif scored.iloc[i]:
            out.append("")
        elif flag:
            out.append(f"flagged {flag.group(1)}")
        elif not (np.isfinite(e.iloc[i]) and e.iloc[i] > 0):
            out.append("without energy")
        elif not np.isfinite(a.iloc[i]):
            out.append("without top-1")
        else:
            out.append("not scored")
    return pd.Series(out, index=scores.index, dtype=object)


def _counted(reasons: pd.Series) -> str:
    """'3 flagged other-load, 2 failed': the reasons, most common first."""
    counts = reasons[reasons != ""].value_counts()
    return ", ".join(f"{n} {why}" for why, n in counts.items())


def _same_setting(scores: pd.DataFrame, row) -> np.ndarray:
    """Rows run like `row` (same phase, device, method, requested batch), whatever the meter."""
    same = np.ones(len(scores), bool)
    for k in SCORE_GROUP[:-1]:
        same &= matches(scores[k], row[k])
    return same


@_styled
def accuracy_vs_energy(
    scores: pd.DataFrame,
    stem,
    *,
    phase: str | None = None,
    device_label: str | None = None,
    method: str | None = None,
    batch_size: int | None = None,
    law: pd.DataFrame | None = None,
    secondary_unit: str | None = None,
) -> list[Path]:
    """Top-1 against energy per image (log x) in one score group, coloured by grade, with the
    front as the staircase 'best accuracy for at most this energy', and (given `law`, the
    fits' accuracy_law table) the form of the accuracy-energy law BIC picks for the group,
    the others listed with how much worse they fit; `secondary_unit` (a key of
    SECONDARY_UNITS) adds a top axis in Wh or gCO2e per 1,000 images.

    Rows kept off the front by a flag (other-load, high-spread, ...) but holding energy and
    top-1 are drawn hollow and named in the legend; when every row is flagged the figure
    shows them and says so, rather than claiming there is no data."""
    title = "Accuracy vs energy per image"
    want = {"phase": phase, "device_label": device_label, "method": method}
    want["batch_size_requested"] = batch_size
    reasons = unscored_reasons(scores)
    scored = scores["scored"].fillna(False).astype(bool)
    drawable = reasons.str.startswith("flagged") & _has_point(scores)
    g = _pick_group(scores[scored & (reasons == "")], SCORE_GROUP, want)
    if g.empty:  # nothing scored: show the flagged rows, if any, as such
        g = _pick_group(scores[drawable], SCORE_GROUP, want)
        if g.empty:
            scope = _in_scope(scores, want)
            why = _counted(reasons[scope]) or "no rows"
            where = f" ({_describe(want)})" if _describe(want) != "all groups" else ""
            return no_data(stem, title, f"no model to plot{where}: {why}")
    row = g.iloc[0]
    group = np.ones(len(scores), bool)
    for k in SCORE_GROUP:
        group &= matches(scores[k], row[k])
    drawn = group & (scored | drawable).to_numpy()
    shown = scores[drawn]
    unit, scale = energy_unit(shown["energy_per_image_j"])
    fig, ax = _figure(2.9)
    graded = shown[shown["scored"].fillna(False).astype(bool)]
    front = graded[graded["on_front"].fillna(False).astype(bool)].sort_values("energy_per_image_j")
    handles = []
    if len(front):
        ax.step(
            front["energy_per_image_j"] * scale,
            front["top1"],
            where="post",
            color="#444444",
            lw=0.8,
            zorder=1,
        )
        handles.append(Line2D([], [], color="#444444", lw=0.8, label="front"))
    for letter in GRADES:
        sel = graded[(graded["grade"] == letter).fillna(False).astype(bool)]
        if len(sel):
            ax.scatter(
                sel["energy_per_image_j"] * scale,
                sel["top1"],
                color=GRADE_COLORS[letter],
                s=14,
                lw=0.4,
                zorder=2,
            )
            handles.append(_dot(GRADE_COLORS[letter], letter))
    flagged = shown[~shown["scored"].fillna(False).astype(bool)]
    by_flag = reasons[flagged.index]
    for k, why in enumerate(sorted(by_flag.unique())):
        sel = flagged[by_flag == why]
        marker = MARKERS[k % len(MARKERS)]
        ax.scatter(
            sel["energy_per_image_j"] * scale,
            sel["top1"],
            facecolors="none",
            edgecolors=OTHER_GREY,
            marker=marker,
            s=16,
            lw=0.7,
            zorder=2,
        )
        handles.append(_dot(OTHER_GREY, f"{short(why)} ({len(sel)}, not graded)", marker, True))
    law_note = ""
    if law is not None and len(graded):
        law_note = _draw_law(ax, law, row, graded["energy_per_image_j"], scale, handles)
    ax.set_xscale("log")
    _plain_log(ax.xaxis)
    est = pd.Series([_is_true(row["energy_is_estimate"])])
    ax.set_xlabel(energy_label(est, energy_base(g), unit))
    ax.set_ylabel("Top-1 accuracy (%)")
    ax.grid(True, which="major")
    head = f"{group_title(row)} · {_models(len(graded))} graded"
    no_second = secondary_axis(ax, shown, scale, secondary_unit)
    if no_second:
        head += f"\n{no_second}"
    if graded.empty:
        head += f"\nnone graded: {_counted(by_flag)} (score.invalid_flags)"
    hidden = _counted(reasons[_same_setting(scores, row) & ~drawn])
    if hidden:
        head += f"\nnot shown: {hidden}"
    if law_note:
        head += f"\n{law_note}"
    _top_legend(fig, handles, head, ncol=5)
    return _save(fig, stem)


def _draw_law(ax, law: pd.DataFrame, row, energy_j: pd.Series, scale: float, handles) -> str:
    """The winning form (lowest BIC, fitted on every scored model of the group) as a dashed
    curve over the group's energies, with a legend entry; returns the line naming the forms
    it beat and by how much ('' when the group has no law fitted)."""
    from joulebench.analysis.fits import law_predict

    sel = (law["subset"] == "all").fillna(False).to_numpy(bool)
    for k in SCORE_GROUP:
        sel &= matches(law[k], row[k])
    fits = law[sel & np.isfinite(pd.to_numeric(law["bic"], errors="coerce")).to_numpy()]
    won = fits[fits["best_by_bic"].fillna(False).astype(bool)]
    if won.empty:
        return ""
    w = won.iloc[0]
    e = pd.to_numeric(energy_j).to_numpy(float)
    x = np.geomspace(e.min(), e.max(), 200)
    y = law_predict(w["form"], w["coef_a"], w["coef_b"], w["coef_c"], x, e)
    ax.plot(x * scale, y, color="black", lw=0.9, ls="--", zorder=1)
    handles.append(Line2D([], [], color="black", lw=0.9, ls="--", label=f"law: {w['form']}"))
    others = fits[~fits["best_by_bic"].fillna(False).astype(bool)].sort_values("delta_bic")
    rest = ", ".join(f"{r['form']} +{r['delta_bic']:.1f}" for _, r in others.iterrows())
    return f"law: the lowest BIC of the forms\nothers: ΔBIC {rest}" if rest else ""


def not_comparable(
    summary: pd.DataFrame, energy: str = "total", max_energy_cv=DEFAULT_MAX_ENERGY_CV
) -> str:
    """Why rows of a summary have no comparable energy, counted: '20 flagged other-load, 2
    failed' (empty when every row is comparable): the reason a figure is empty."""
    e = pd.to_numeric(summary[ENERGY_COLUMNS[energy]], errors="coerce")
    flags = row_flags(summary, energy, max_energy_cv).fillna("")
    invalid = set(DEFAULT_INVALID_FLAGS)
    status = summary["status"].astype("string").fillna("missing")
    lacks = missing_key(summary)
    reasons = []
    for st, lack, value, fl in zip(status, lacks, e, flags, strict=True):
        hit = next((f.strip() for f in fl.split(";") if f.strip() in invalid), "")
        if st != "ok":
            reasons.append("failed")
        elif lack:
            reasons.append(f"without {lack}")
        elif not (np.isfinite(value) and value > 0):
            reasons.append("without energy")
        elif hit:
            reasons.append(f"flagged {hit}")
        else:
            reasons.append("")
    return _counted(pd.Series(reasons, dtype=object))


def _empty_because(what: str, why: str) -> str:
    return f"{what}: {why}" if why else what


def _has_point(scores: pd.DataFrame) -> pd.Series:
    e = pd.to_numeric(scores["energy_per_image_j"], errors="coerce")
    a = pd.to_numeric(scores["top1"], errors="coerce")
    return (np.isfinite(e) & (e > 0) & np.isfinite(a) & (scores["status"] == "ok")).fillna(False)


def _in_scope(scores: pd.DataFrame, want: dict) -> pd.Series:
    scope = pd.Series(True, index=scores.index)
    for k, v in want.items():
        if v is not None:
            scope &= (scores[k] == v).fillna(False)
    return scope


def _dot(color, label: str, marker: str = "o", hollow: bool = False) -> Line2D:
    face = "none" if hollow else color
    return Line2D([], [], ls="", marker=marker, ms=4, mfc=face, mec=color, label=label)


def _describe(want: dict) -> str:
    chosen = {k: v for k, v in want.items() if v is not None}
    return ", ".join(f"{k}={v}" for k, v in chosen.items()) or "all groups"


# --- (2) energy vs FLOPs / params / activations -------------------------------------------------


@_styled
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
    want = _selectors(phase=phase, device_label=device_label, method=method)
    want["batch_size_requested"] = batch_size
    kind = "total"
    if factor_fits is not None and len(factor_fits):
        kind = str(factor_fits["energy_kind"].iloc[0])
    comparable = measured_mask(summary, kind, max_energy_cv=max_energy_cv)
    g = _pick_group(placed(summary[comparable]), SCORE_GROUP, want)
    if g.empty:
        why = not_comparable(summary, kind, max_energy_cv)
        where = f" ({_describe(want)})" if _describe(want) != "all groups" else ""
        return no_data(stem, title, _empty_because(f"no comparable energy{where}", why))
    row = g.iloc[0]
    est = is_estimated(g)
    fam = g["family"].astype("string").fillna("unknown")
    top = list(fam.value_counts().index[:max_families])
    colors = {f: OKABE_ITO[i] for i, f in enumerate(top)}
    fig, axes = _figure(1.75 * len(factors) + 0.7, nrows=len(factors), ncols=1, squeeze=False)
    axes = axes[:, 0]
    unit, e_scale = energy_unit(g[ENERGY_COLUMNS[kind]])
    e = g[ENERGY_COLUMNS[kind]].to_numpy(float) * e_scale
    for ax, factor in zip(axes, factors, strict=True):
        x_scale, xlabel = FACTOR_AXES[factor]
        x = pd.to_numeric(g[factor], errors="coerce").to_numpy(float)
        for f in [*top, None]:
            sel = (fam.isin(top) == False).to_numpy() if f is None else (fam == f).to_numpy()  # noqa: E712
            ok = sel & np.isfinite(x) & (x > 0)
            if ok.any():
                color = OTHER_GREY if f is None else colors[f]
                label = "other" if f is None else short(f, 20)
                _scatter(
                    ax,
                    x[ok] * x_scale,
                    e[ok],
                    est.to_numpy()[ok],
                    color=color,
                    s=9,
                    lw=0.3,
                    alpha=0.85,
                    label=label,
                )
        x_ok = x[np.isfinite(x) & (x > 0)]
        fit = _fit_line(ax, factor_fits, row, factor, x_ok, x_scale, e_scale)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log(ax.xaxis, ax.yaxis)
        ax.set_xlabel(xlabel)
        ax.grid(True, which="major")
        if fit is not None:
            ax.legend(handles=[fit], loc="lower right", handlelength=1.8)
    base = energy_base(g.assign(energy_kind=kind))
    fig.supylabel(energy_label(est, base, unit), fontsize=STYLE["axes.labelsize"])
    handles, labels = axes[0].get_legend_handles_labels()
    keep = [h for h, lab in zip(handles, labels, strict=True) if not lab.startswith("fit")]
    _top_legend(fig, keep, f"{group_title(row)} · {_models(len(g))}, by family", ncol=3)
    return _save(fig, stem)


def _fit_line(ax, fits, row, factor: str, x_raw: np.ndarray, x_scale: float, e_scale: float):
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
    label = f"fit: slope {f['slope']:.2f}, R² = {f['r2']:.2f} (n = {f['n']})"
    (line,) = ax.plot(
        xs * x_scale, ys * e_scale, color="black", lw=0.9, ls="--", zorder=3, label=label
    )
    return line


# --- (3) method savings ------------------------------------------------------------------------


@_styled
def method_savings(savings: pd.DataFrame, stem, *, device_label: str | None = None, why: str = ""):
    """Distribution of each method's saving against the baseline, one box per batch size."""
    title = "Energy saving of methods"
    s = placed(savings[np.isfinite(pd.to_numeric(savings["saving"], errors="coerce"))])
    s = _one_device(s, device_label)
    if s.empty:
        what = "no model measured with both a method and the baseline"
        return no_data(stem, title, _empty_because(what, why))
    baseline = s["baseline_method"].iloc[0]
    methods = sorted(s["method"].unique())
    batches = sorted(s["batch_size_requested"].dropna().unique())
    colors = _series_colors(batches)
    fig, ax = _figure(2.8)
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
    names = [short(m, 20) for m in methods]
    # Side by side the names must fit the axis (~40 characters at 7 pt); else slant them.
    slant = sum(len(n) + 2 for n in names) > 40
    ax.set_xticks(range(len(methods)), names)
    if slant:
        ax.tick_params(axis="x", labelrotation=30)
        for t in ax.get_xticklabels():
            t.set(ha="right", rotation_mode="anchor")
    ax.set_xlim(-0.6, len(methods) - 0.4)
    ax.set_xlabel("Method")
    est = is_estimated(s)
    label = energy_label(est, f"Energy saving vs {short(baseline, 20)}", "%")
    ax.set_ylabel(label.replace(": open markers", ""))
    handles = [Line2D([], [], color=colors[b], lw=2, label=f"batch {b}") for b in batches]
    n = _models(s["model"].nunique())
    title = f"{short(s['device_label'].iloc[0], 20)} · {n} · saving = 1 − E/E(baseline)"
    _top_legend(fig, handles, title, ncol=min(len(batches), 4))
    ax.grid(True, axis="y")
    return _save(fig, stem)


# --- (4) energy vs batch size -------------------------------------------------------------------


@_styled
def energy_vs_batch_size(
    batch: pd.DataFrame, stem, *, device_label: str | None = None, why: str = ""
):
    """Energy per image against the batch size run: a thin line per model, coloured by method,
    and each method's geometric mean over the models measured at every batch size."""
    title = "Energy per image vs batch size"
    e_all = pd.to_numeric(batch["energy_per_image_j"], errors="coerce")
    b = placed(batch[np.isfinite(e_all) & (e_all > 0)], (*PLACE_KEYS, "batch_size"))
    b = _one_device(b, device_label)
    if b.empty or b["batch_size"].nunique() < 2:
        what = "fewer than two batch sizes with a comparable energy"
        return no_data(stem, title, _empty_because(what, why))
    methods = sorted(b["method"].unique())
    colors = _series_colors(methods)
    unit, scale = energy_unit(b["energy_per_image_j"])
    fig, ax = _figure(2.9)
    for m in methods:
        bm = b[b["method"] == m]
        for _, one in bm.groupby("model"):
            one = one.sort_values("batch_size")
            ax.plot(
                one["batch_size"],
                one["energy_per_image_j"] * scale,
                color=colors[m],
                lw=0.4,
                alpha=0.35,
            )
        wide = bm.pivot_table(index="model", columns="batch_size", values="energy_per_image_j")
        wide = wide.dropna()
        if len(wide):
            gmean = np.exp(np.log(wide).mean())
            ax.plot(
                gmean.index,
                gmean.to_numpy() * scale,
                color=colors[m],
                lw=1.8,
                marker="o",
                ms=3,
                label=f"{short(m)} (geo. mean, {_models(len(wide))})",
            )
    sizes = sorted(b["batch_size"].unique())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _plain_log(ax.yaxis)
    ax.set_xticks(sizes, [str(int(v)) for v in sizes])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("Batch size (images)")
    ax.set_ylabel(energy_label(is_estimated(b), energy_base(b), unit))
    ax.grid(True, which="major")
    device = short(b["device_label"].iloc[0], 20)
    title = f"{device} · {_models(b['model'].nunique())} · thin: one model"
    _top_legend(fig, ax.get_legend_handles_labels()[0], title, ncol=2 if len(methods) > 3 else 1)
    return _save(fig, stem)


# --- (5) the power trace of one configuration ---------------------------------------------------


@_styled
def power_trace(
    trace: pd.DataFrame,
    stem,
    *,
    device_label: str | None = None,
    model: str | None = None,
    method: str | None = None,
    batch_size: int | None = None,
    idle_power_w: float | None = None,
    estimated: bool = False,
) -> list[Path]:
    """Power over each measurement window of one configuration, repeats overlaid, with the
    idle baseline; the first configuration in the table unless one is named."""
    title = "Power during measurement"
    t = placed(trace)
    want = _selectors(device_label=device_label, model=model, method=method)
    want["batch_size_requested"] = batch_size
    for k, v in want.items():
        if v is not None:
            t = t[matches(t[k], v)]
    power_col = "power_w"
    if t.empty or not np.isfinite(t[power_col]).any():
        power_col = "power_avg_w"
    if t.empty or not np.isfinite(t[power_col].astype(float)).any():
        unplaced = _counted(missing_key(trace).map(lambda k: f"samples without {k}" if k else ""))
        why = f"no power samples to plot: {unplaced}" if unplaced else ""
        return no_data(stem, title, why or "no power samples (an estimating meter records none)")
    key = ["device_label", "model", "method", "batch_size_requested"]
    first = t[key].drop_duplicates().sort_values(key).iloc[0]
    t = t[(t[key] == first).all(axis=1)]
    fig, ax = _figure(2.6)
    repeats = sorted(t["repeat"].dropna().unique())
    colors = _series_colors(repeats)
    for r in repeats:
        one = t[t["repeat"] == r].sort_values("t_s")
        ax.plot(one["t_s"], one[power_col], color=colors[r], lw=0.7, label=f"repeat {int(r) + 1}")
    if idle_power_w is not None and np.isfinite(idle_power_w):
        ax.axhline(idle_power_w, color="#444444", ls=":", lw=0.8)
        ax.text(
            0.99,
            idle_power_w,
            f"idle {idle_power_w:.0f} W",
            transform=ax.get_yaxis_transform(),
            ha="right",
            va="bottom",
            fontsize=6,
            color="#444444",
        )
    ax.set_ylim(bottom=0)
    ax.set_xlabel("Time in measurement window (s)")
    what = "Power" if power_col == "power_w" else "Power, device-averaged"
    ax.set_ylabel(f"{what} (W{', estimated' if estimated else ''})")
    ax.grid(True)
    bs = first["batch_size_requested"]
    setting = f"{short(first['method'], 20)} · batch {bs} · {short(first['device_label'], 20)}"
    title = f"{short(first['model'], 48)}\n{setting}"
    _top_legend(fig, ax.get_legend_handles_labels()[0], title, ncol=min(len(repeats), 4))
    return _save(fig, stem)


# --- (6) throughput vs energy -------------------------------------------------------------------


@_styled
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
    s = _one_device(s[np.isfinite(throughput) & (throughput > 0)], device_label)
    if s.empty:
        why = not_comparable(summary, max_energy_cv=max_energy_cv)
        what = "no configuration with both a comparable energy and a throughput"
        return no_data(stem, title, _empty_because(what, why))
    methods = sorted(s["method"].unique())
    batches = sorted(s["batch_size_requested"].dropna().unique())
    colors = _series_colors(methods)
    markers = {b: MARKERS[i % len(MARKERS)] for i, b in enumerate(batches)}
    est = is_estimated(s)
    unit, scale = energy_unit(s["energy_per_image_j"])
    fig, ax = _figure(3.0)
    x = s["energy_per_image_j"].to_numpy(float) * scale
    y = s["throughput_img_s"].to_numpy(float)
    for m in methods:
        for b in batches:
            sel = ((s["method"] == m) & (s["batch_size_requested"] == b)).to_numpy(bool)
            if sel.any():
                _scatter(
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
    _plain_log(ax.xaxis, ax.yaxis)
    _iso_power(ax, x / scale, y, scale)
    ax.set_xlabel(energy_label(est, energy_base(s), unit))
    ax.set_ylabel("Throughput (images/s)")
    ax.grid(True, which="major")
    handles = [_dot(colors[m], short(m, 20)) for m in methods]
    handles += [_dot("#555555", f"batch {b}", markers[b]) for b in batches]
    device = short(s["device_label"].iloc[0], 20)
    title = f"{device} · {_models(s['model'].nunique())} · dotted: constant power"
    _top_legend(fig, handles, title, ncol=5)
    return _save(fig, stem)


@_styled
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
    s = placed(summary[measured_mask(summary, max_energy_cv=max_energy_cv)])
    if device_label is not None:
        s = s[matches(s["device_label"], device_label)]
    key = ["device_label", "method", "model", "batch_size_requested"]
    infer = s[matches(s["phase"], "inference")].drop_duplicates(key)
    infer = infer[key].assign(inference_j=infer["energy_per_image_j"])
    train = s[matches(s["phase"], "train")]
    both = train.merge(infer, on=key, how="inner")  # merge: a MultiIndex join fails on NA
    both = both[np.isfinite(both["inference_j"].astype(float))]
    if both.empty:
        what = "no model measured in both phases (phases: [inference, train])"
        phases = set(summary["phase"].dropna())
        why = not_comparable(summary, max_energy_cv=max_energy_cv) if len(phases) > 1 else ""
        return no_data(stem, title, _empty_because(what, why))
    est = is_estimated(both)
    methods = sorted(both["method"].unique())
    colors = _series_colors(methods)
    unit, scale = energy_unit(pd.concat([both["inference_j"], both["energy_per_image_j"]]))
    fig, ax = _figure(3.0)
    x = both["inference_j"].to_numpy(float) * scale
    y = both["energy_per_image_j"].to_numpy(float) * scale
    for m in methods:
        sel = (both["method"] == m).to_numpy(bool)
        _scatter(ax, x[sel], y[sel], est.to_numpy()[sel], color=colors[m], s=10, lw=0.4)
    low, high = min(x.min(), y.min()), max(x.max(), y.max())
    ax.plot([low, high], [low, high], ls=":", color="#444444", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log(ax.xaxis, ax.yaxis)
    ax.set_xlabel(energy_label(est, "Inference energy per image", unit))
    ax.set_ylabel(energy_label(est, "Training energy per sample", unit))
    ax.grid(True, which="major")
    handles = [_dot(colors[m], short(m, 20)) for m in methods]
    _top_legend(fig, handles, f"{_models(both['model'].nunique())} · dotted: equal", ncol=4)
    return _save(fig, stem)


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
            f"{plain_number(p)} W",
            fontsize=5.5,
            color="#808080",
            rotation=angle,
            rotation_mode="anchor",
            ha="center",
            va="bottom",
        )
    ax.set_xlim(xlim)
    ax.set_ylim(ylim)


# --- all of them --------------------------------------------------------------------------------

# --- (8) the energy-optimal front: each model at its best configuration ------------------------

FRONT_LABELS_MAX = 12  # front points named in the figure, where their names fit
METHOD_VALUE_MODELS = 20  # models shown in the method-value figure (least best energy first)


def _best_group(best: pd.DataFrame, device_label: str | None) -> pd.DataFrame:
    """Found overall-best rows of one device (the asked one, else the one with most models)
    and one kind of meter (measured where there is any): never mixed on one axis."""
    b = best[(best["constraint"] == "none") & best["met"].fillna(False).astype(bool)].copy()
    b = b[b["phase"].fillna("inference") == "inference"]
    b = placed(b[np.isfinite(pd.to_numeric(b["top1"], errors="coerce"))])
    b = _one_device(b, device_label)
    if b.empty:
        return b
    est = b["energy_is_estimate"].fillna(False).astype(bool)
    return b[~est] if (~est).any() else b


def _place_labels(fig, ax, xs, ys, names) -> None:
    """Name points to their upper right where the name overlaps no name already placed
    (a name that would overlap is left out; the page and best_configs list every model)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    placed = []
    for x, y, name in zip(xs, ys, names, strict=True):
        t = ax.annotate(
            short(name),
            (x, y),
            xytext=(4, 3),
            textcoords="offset points",
            fontsize=6,
            clip_on=True,
            annotation_clip=True,
        )
        box = t.get_window_extent(renderer)
        inside = ax.get_window_extent(renderer).contains(box.x1, box.y1)
        if not inside or any(box.overlaps(other) for other in placed):
            t.remove()
            continue
        placed.append(box)


@_styled
def energy_optimal_front(best: pd.DataFrame, stem, *, device_label: str | None = None, why=""):
    """Top-1 against energy per image, each model once: at its least-energy configuration over
    methods, runtimes and batch sizes (results/best_configs.parquet, constraint none), with
    its 95% CI as a horizontal bar, and the front of these best configurations."""
    title = "Energy-optimal front"
    b = _best_group(best, device_label)
    if b.empty:
        what = "no model has a comparable configuration and a top-1"
        return no_data(stem, title, _empty_because(what, why))
    e = pd.to_numeric(b["energy_per_image_j"]).to_numpy(float)
    a = pd.to_numeric(b["top1"]).to_numpy(float)
    lo = pd.to_numeric(b["energy_per_image_ci95_low_j"]).to_numpy(float)
    hi = pd.to_numeric(b["energy_per_image_ci95_high_j"]).to_numpy(float)
    unit, scale = energy_unit(e)
    methods = sorted(b["method"].astype(str).unique())
    colors = _series_colors(methods)
    fig, ax = _figure(3.0)
    est = is_estimated(b).to_numpy()
    xerr = np.vstack([np.clip(e - lo, 0, None), np.clip(hi - e, 0, None)]) * scale
    ok = np.isfinite(xerr).all(axis=0)
    ax.errorbar(
        (e * scale)[ok], a[ok], xerr=xerr[:, ok], fmt="none", ecolor="#999999", lw=0.6, zorder=1
    )
    for m in methods:
        sel = (b["method"].astype(str) == m).to_numpy()
        _scatter(
            ax,
            e[sel] * scale,
            a[sel],
            est[sel],
            color=colors[m],
            s=14,
            zorder=3,
            label=short(m, 20),
        )
    on = pareto_front(a, e)
    order = np.argsort(e[on])
    fx, fy = (e[on] * scale)[order], a[on][order]
    ax.step(fx, fy, where="post", color="black", lw=0.9, zorder=2, label="front")
    ax.set_xscale("log")
    _plain_log(ax.xaxis)
    ax.set_xlabel(energy_label(pd.Series(est), energy_base(b), unit))
    ax.set_ylabel("Top-1 accuracy (%)")
    ax.grid(True, which="major")
    names = b["model"].astype(str).to_numpy()[on][order][:FRONT_LABELS_MAX]
    _place_labels(fig, ax, fx[:FRONT_LABELS_MAX], fy[:FRONT_LABELS_MAX], names)
    handles = [_dot(colors[m], short(m, 20)) for m in methods]  # one kind of meter: filled
    handles.append(Line2D([], [], color="black", lw=0.9, label="front"))
    dev = short(b["device_label"].iloc[0], 20)
    head = f"{dev} · {_models(len(b))} at their best configuration · bar: 95% CI"
    _top_legend(fig, handles, head, ncol=3)
    return _save(fig, stem)


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


@_styled
def method_value(
    summary: pd.DataFrame, stem, *, device_label: str | None = None, max_energy_cv=None, why=""
):
    """Per model, each method's least energy per image (over batch sizes) relative to the
    model's best configuration: what switching to the best method saves, model by model."""
    title = "What each method costs against the best configuration"
    energy = "dynamic" if energy_base(summary).startswith("Energy above") else "total"
    t = method_value_table(summary, energy=energy, max_energy_cv=max_energy_cv)
    t = _one_device(t, device_label)
    if not t.empty:
        measured = ~t["estimate"].astype(bool)
        t = t[measured] if measured.any() else t
    multi = t.groupby("model")["method"].nunique() if not t.empty else pd.Series(dtype=int)
    t = t[t["model"].isin(multi[multi >= 2].index)] if len(multi) else t
    if t.empty:
        what = "no model has comparable energies for two methods"
        return no_data(stem, title, _empty_because(what, why))
    order = t.groupby("model")["best_j"].first().sort_values()
    n_all = len(order)
    models = list(order.index[:METHOD_VALUE_MODELS])
    t = t[t["model"].isin(models)]
    methods = sorted(t["method"].astype(str).unique())
    colors = _series_colors(methods)
    markers = {m: MARKERS[i % len(MARKERS)] for i, m in enumerate(methods)}
    fig, ax = _figure(1.1 + 0.16 * len(models))
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
        _plain_log(ax.xaxis)
    ax.set_yticks(range(len(models)), [short(k, 24) for k in reversed(models)])
    ax.tick_params(axis="y", labelsize=6)
    ax.set_ylim(-0.7, len(models) - 0.3)
    unit = "ratio, estimated" if est else "ratio"
    ax.set_xlabel(f"Energy per image / model's best\n({unit})")
    ax.grid(True, axis="x", which="major")
    handles = [_dot(colors[m], short(m, 20), markers[m], hollow=est) for m in methods]
    dev = short(t["device_label"].iloc[0], 20)
    shown = f"{len(models)} of {n_all}" if n_all > len(models) else _models(n_all)
    head = f"{dev} · {shown} (least energy first) · 1 = best method"
    _top_legend(fig, handles, head, ncol=3)
    return _save(fig, stem)


FIGURE_NAMES = (
    "accuracy_vs_energy",
    "energy_vs_factors",
    "method_savings",
    "energy_vs_batch_size",
    "power_trace",
    "throughput_vs_energy",
    "train_vs_inference",
    "energy_optimal_front",
    "method_value",
)


def render_all(
    summary: pd.DataFrame,
    scores: pd.DataFrame,
    fits: dict[str, pd.DataFrame],
    trace: pd.DataFrame | None,
    outdir,
    *,
    group: dict | None = None,
    trace_config: dict | None = None,
    best: pd.DataFrame | None = None,
    secondary_unit: str | None = None,
) -> dict[str, list[Path]]:
    """Every figure into `outdir/<name>.{pdf,png}`.

    With scores of energy_scope node, every energy axis shows the whole node's energy
    (the summary's energy_node_per_image_j) and says so.
    `group` picks the score group of figures (1)-(2) (keys phase, device_label, method,
    batch_size; unset keys: the group with the most models); its device_label also picks the
    device of figures (3), (4) and (6). `trace_config` picks the trace of figure (5) (keys
    device_label, model, method, batch_size; unset: the first configuration in the table).
    `best`: the best configurations (results/best_configs.parquet) for figure (8); None:
    computed here from the summary by the same rules.
    """
    out = Path(outdir)
    group = dict(group or {})
    tc = choose_trace_config(trace, trace_config or {})
    idle, est = _trace_context(summary, tc)
    dev = group.get("device_label")
    if "energy_scope" in scores.columns and set(scores["energy_scope"].dropna()) == {"node"}:
        from joulebench.analysis.score import node_headline

        summary = node_headline(summary).assign(energy_scope="node")
    summary, cv = with_score_flags(summary, scores)
    why = not_comparable(summary, max_energy_cv=cv)  # why a fits figure may be empty
    return {
        "accuracy_vs_energy": accuracy_vs_energy(
            scores,
            out / "accuracy_vs_energy",
            law=fits.get("accuracy_law"),
            secondary_unit=secondary_unit,
            **group,
        ),
        "energy_vs_factors": energy_vs_factors(
            summary, fits.get("factor_fits"), out / "energy_vs_factors", max_energy_cv=cv, **group
        ),
        "method_savings": method_savings(
            fits["method_savings"], out / "method_savings", device_label=dev, why=why
        ),
        "energy_vs_batch_size": energy_vs_batch_size(
            fits["batch_scaling"], out / "energy_vs_batch_size", device_label=dev, why=why
        ),
        "power_trace": power_trace(
            trace if trace is not None else pd.DataFrame(columns=[*_TRACE_KEY, "power_w"]),
            out / "power_trace",
            idle_power_w=idle,
            estimated=est,
            **tc,
        ),
        "throughput_vs_energy": throughput_vs_energy(
            summary, out / "throughput_vs_energy", device_label=dev, max_energy_cv=cv
        ),
        "train_vs_inference": train_vs_inference(
            summary, out / "train_vs_inference", device_label=dev, max_energy_cv=cv
        ),
        "energy_optimal_front": energy_optimal_front(
            best if best is not None else _best_from(summary, scores, cv),
            out / "energy_optimal_front",
            device_label=dev,
            why=why,
        ),
        "method_value": method_value(
            summary, out / "method_value", device_label=dev, max_energy_cv=cv, why=why
        ),
    }


def _best_from(summary: pd.DataFrame, scores: pd.DataFrame, cv) -> pd.DataFrame:
    """Best configurations (overall only) by the score's rules, where no table is given."""
    from joulebench.analysis.best_configs import best_configs

    kinds = set(scores["energy_kind"].dropna()) if "energy_kind" in scores else set()
    energy = "dynamic" if kinds == {"dynamic"} else "total"
    return best_configs(
        summary, max_latency_ms=(), max_batch_size=(), energy=energy, max_energy_cv=cv
    )


_TRACE_KEY = ["device_label", "model", "method", "batch_size_requested"]


def with_score_flags(summary: pd.DataFrame, scores: pd.DataFrame):
    """The summary with each row's flags as the score stage set them (high-spread included,
    by the configured threshold), and the spread threshold the figures should still apply:
    None when the scores carried flags, else the default."""
    key = list(SUMMARY_KEY)
    if "flags" not in scores.columns or not set(key) <= set(scores.columns):
        return summary, DEFAULT_MAX_ENERGY_CV
    flags = scores.drop_duplicates(key)[[*key, "flags"]].rename(columns={"flags": "_score_flags"})
    # merge, not join on a MultiIndex: pandas' MultiIndex join raises on NA keys, and the
    # summary's own not-profiled rows have NA device, method and batch size
    joined = summary[key].merge(flags, on=key, how="left", validate="many_to_one")
    score_flags = joined["_score_flags"].astype("string").set_axis(summary.index)
    out = summary.copy()
    out["flags"] = score_flags.fillna(summary["flags"].astype("string"))
    return out, None


def choose_trace_config(trace: pd.DataFrame | None, want: dict) -> dict:
    """The configuration figure (5) shows: `want` completed from the first matching trace."""
    chosen = {k: want.get(k) for k in ("device_label", "model", "method", "batch_size")}
    if trace is None or trace.empty:
        return chosen
    t = placed(trace)
    for k, v in chosen.items():
        if v is not None:
            t = t[matches(t["batch_size_requested" if k == "batch_size" else k], v)]
    if t.empty:
        return chosen
    first = t[_TRACE_KEY].drop_duplicates().sort_values(_TRACE_KEY).iloc[0]
    return {k: first["batch_size_requested" if k == "batch_size" else k] for k in chosen}


def _trace_context(summary: pd.DataFrame, tc: dict) -> tuple[float | None, bool]:
    """The idle power and whether the meter estimates, for the configuration traced."""
    rows = summary
    for k, v in tc.items():
        if v is not None:
            rows = rows[matches(rows["batch_size_requested" if k == "batch_size" else k], v)]
    if rows.empty:
        return None, False
    idle = pd.to_numeric(rows["idle_power_w"], errors="coerce").iloc[0]
    return (float(idle) if pd.notna(idle) else None), bool(is_estimated(rows).iloc[0])


def run_figures(
    summary,
    scores,
    fits_dir,
    outdir,
    *,
    trace_path=None,
    group: dict | None = None,
    trace: dict | None = None,
    trace_table=None,
    best_configs_path=None,
    secondary_unit: str | None = None,
) -> dict[str, list[Path]]:
    """`joulebench figures`: every figure from the tables' paths (summary, scores, the fits'
    folder, optionally a power trace) and the config's figures section: `group` and `trace`
    pick what figures show (null keys: chosen automatically); `trace_table` is the workflow's
    trace with from_summary, given here as `trace_path`."""
    from joulebench.analysis.fits import read_fits
    from joulebench.analysis.summary import read_summary

    paths = render_all(
        read_summary(summary),
        read_table(scores),
        read_fits(fits_dir),
        read_table(trace_path) if trace_path else None,
        outdir,
        group={k: v for k, v in (group or {}).items() if v is not None},
        trace_config={k: v for k, v in (trace or {}).items() if v is not None},
        best=read_table(best_configs_path) if best_configs_path else None,
        secondary_unit=secondary_unit,
    )
    print(f"figures: {len(paths)} -> {outdir}", file=sys.stderr)
    return paths
