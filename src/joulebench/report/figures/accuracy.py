"""(1) accuracy_vs_energy: top-1 against energy per image in one score group, coloured by
grade, with the front, the accuracy-energy law and the flagged rows named."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

import joulebench.report.figures.plot as plot
from joulebench.analysis.grade_ranges import compares_predicted_energy
from joulebench.analysis.score import GRADES, SCORE_GROUP
from joulebench.report.figures.registry import Inputs, figure
from joulebench.report.figures.rows import (
    counted,
    describe,
    energy_base,
    is_true,
    matches,
    missing_key,
    pick_group,
    status_reason,
)
from joulebench.report.palettes import GRADE_COLORS, OFF_FRONT_GREY, PREDICTED_COLOR

_FLAGGED_NOTE = re.compile(r"flagged ([^\s:(;]+)")


def unscored_reasons(scores: pd.DataFrame) -> pd.Series:
    """Why each row is not on the plot, from its score note: "failed" (or "skipped": no
    failure, rows.status_reason), "without <key>" (no
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
            out.append(status_reason(status.iloc[i]))
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


@plot.styled
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
    predicted: pd.DataFrame | None = None,
) -> list[Path]:
    """Top-1 against energy per image (log x) in one score group, coloured by grade, with the
    front as the staircase 'best accuracy for at most this energy', and (given `law`, the
    fits' accuracy_law table) the form of the accuracy-energy law BIC picks for the group,
    the others listed with how much worse they fit; `secondary_unit` (a key of
    plot.SECONDARY_UNITS) adds a top axis in Wh or gCO2e per 1,000 images; `predicted`
    (joulebench predict's table) adds the group's predictions, hollow with their interval as
    a horizontal bar, never joined to the front (predicted_in_group).

    Rows kept off the front by a flag (other-load, high-spread, ...) but holding energy and
    top-1 are drawn hollow and named in the legend; when every row is flagged the figure
    shows them and says so, rather than claiming there is no data."""
    title = "Accuracy vs energy per image"
    want = {"phase": phase, "device_label": device_label, "method": method}
    want["batch_size_requested"] = batch_size
    reasons = unscored_reasons(scores)
    g, drawn = _group_drawn(scores, reasons, want)
    if g.empty:
        why = counted(reasons[_in_scope(scores, want)]) or "no rows"
        where = f" ({describe(want)})" if describe(want) != "all groups" else ""
        return plot.no_data(stem, title, f"no model to plot{where}: {why}")
    row = g.iloc[0]
    shown = scores[drawn]
    unit, scale = plot.energy_unit(shown["energy_per_image_j"])
    fig, ax = plot.new_figure(2.9)
    graded = shown[shown["scored"].fillna(False).astype(bool)]
    handles = _draw_graded(ax, graded, scale)
    by_flag = reasons[shown.index[~shown["scored"].fillna(False).astype(bool)]]
    handles += _draw_flagged(ax, shown, by_flag, scale)
    guessed = predicted_in_group(predicted, scores, row)
    handles += _draw_predicted(ax, guessed, scale)
    law_note = ""
    if law is not None and len(graded):
        law_note = _draw_law(ax, law, row, graded["energy_per_image_j"], scale, handles)
    ax.set_xscale("log")
    plot.plain_log(ax.xaxis)
    est = pd.Series([is_true(row["energy_is_estimate"])])
    ax.set_xlabel(plot.energy_label(est, energy_base(g), unit))
    ax.set_ylabel("Top-1 accuracy (%)")
    ax.grid(True, which="major")
    ax.margins(y=plot.NAME_ROOM)  # room for a name above the top point
    lines = [f"{plot.group_title(row)} · {plot.models_text(len(graded))} graded"]
    lines.append(plot.secondary_axis(ax, shown, scale, secondary_unit))
    if graded.empty:
        lines.append(f"none graded: {counted(by_flag)} (score.invalid_flags)")
    elif len(by_flag):
        lines.append("hollow: flagged, not graded (score.invalid_flags)")
    if len(guessed):
        lines.append(f"predicted, not measured: {plot.models_text(len(guessed))} (no grade)")
    hidden = counted(reasons[_same_setting(scores, row) & ~drawn])
    lines += [f"not shown: {hidden}" if hidden else "", law_note]
    plot.top_legend(fig, handles, "\n".join(x for x in lines if x), ncol=8)
    named = _naming_order(shown)
    plot.name_points(
        fig,
        ax,
        named["energy_per_image_j"] * scale,
        named["top1"],
        plot.point_names(named["model"]),
    )
    return plot.save(fig, stem)


def _naming_order(shown: pd.DataFrame) -> pd.DataFrame:
    """The points in the order they are named: the front by energy, then the other graded
    ones, then the flagged ones (a name that fits nowhere is left out)."""
    front = shown["on_front"].fillna(False).astype(bool) if "on_front" in shown else False
    graded = shown["scored"].fillna(False).astype(bool)
    rank = np.where(front, 0, np.where(graded, 1, 2))
    return shown.assign(_rank=rank).sort_values(["_rank", "energy_per_image_j"], kind="stable")


def _group_drawn(scores: pd.DataFrame, reasons: pd.Series, want: dict):
    """The score group shown (its scored rows; or, when none is scored, its flagged rows
    that have a point) and which rows of the table are drawn in it."""
    scored = scores["scored"].fillna(False).astype(bool)
    drawable = reasons.str.startswith("flagged") & _has_point(scores)
    g = pick_group(scores[scored & (reasons == "")], SCORE_GROUP, want)
    if g.empty:  # nothing scored: show the flagged rows, if any, as such
        g = pick_group(scores[drawable], SCORE_GROUP, want)
    if g.empty:
        return g, np.zeros(len(scores), bool)
    row = g.iloc[0]
    group = np.ones(len(scores), bool)
    for k in SCORE_GROUP:
        group &= matches(scores[k], row[k])
    return g, group & (scored | drawable).to_numpy()


def _draw_graded(ax, graded: pd.DataFrame, scale: float) -> list:
    """The front's staircase and the graded points, one colour per grade; their legend."""
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
                edgecolors=plot.EDGE,
                s=14,
                lw=0.3,
                zorder=2,
            )
            handles.append(plot.dot(GRADE_COLORS[letter], letter, edge=plot.EDGE))
    return handles


def _draw_flagged(ax, shown: pd.DataFrame, by_flag: pd.Series, scale: float) -> list:
    """The ungraded (flagged) points, hollow grey, one marker per flag; their legend."""
    handles = []
    flagged = shown.loc[by_flag.index]
    for k, why in enumerate(sorted(by_flag.unique())):
        sel = flagged[by_flag == why]
        marker = plot.MARKERS[k % len(plot.MARKERS)]
        ax.scatter(
            sel["energy_per_image_j"] * scale,
            sel["top1"],
            facecolors="none",
            edgecolors=OFF_FRONT_GREY,
            marker=marker,
            s=16,
            lw=0.7,
            zorder=2,
        )
        label = f"{plot.short(why)} ({len(sel):,})"  # the header says: not graded
        handles.append(plot.dot(OFF_FRONT_GREY, label, marker, True))
    return handles


def predicted_in_group(predicted: pd.DataFrame | None, scores: pd.DataFrame, row) -> pd.DataFrame:
    """The predictions of `row`'s score group with an energy and a top-1 (the scores' top-1
    of the model: the summary keeps a row of every catalogued model); none where the scores
    compare another energy than the one predicted (dynamic, or the node's)."""
    if predicted is None or predicted.empty or not compares_predicted_energy(scores):
        return pd.DataFrame(columns=[*SCORE_GROUP, "model", "top1", "energy_per_image_j"])
    sel = (pd.to_numeric(predicted["energy_per_image_j"], errors="coerce") > 0).fillna(False)
    sel = sel.to_numpy(bool).copy()
    for k in SCORE_GROUP:
        sel &= matches(predicted[k], row[k])
    known = scores.dropna(subset=["top1"]).drop_duplicates("model").set_index("model")["top1"]
    out = predicted[sel].assign(top1=lambda p: p["model"].map(known).astype(float))
    return out[np.isfinite(out["top1"].to_numpy(float))]


def _draw_predicted(ax, guessed: pd.DataFrame, scale: float) -> list:
    """Predictions: hollow rings with their interval as a horizontal bar, under the measured
    points and joined to nothing; their legend entry names the interval's level."""
    if guessed.empty:
        return []
    e = guessed["energy_per_image_j"].to_numpy(float) * scale
    lo = guessed["energy_per_image_j_pi_low"].to_numpy(float) * scale
    hi = guessed["energy_per_image_j_pi_high"].to_numpy(float) * scale
    bars = np.vstack([np.maximum(e - lo, 0), np.maximum(hi - e, 0)])
    style = {"color": PREDICTED_COLOR, "zorder": 1.5}
    ax.errorbar(e, guessed["top1"], xerr=np.nan_to_num(bars), fmt="none", elinewidth=0.6,
                capsize=1.2, capthick=0.6, alpha=0.85, **style)  # fmt: skip
    ax.scatter(e, guessed["top1"], facecolors="white", edgecolors=PREDICTED_COLOR, s=12, lw=0.7,
               zorder=1.6)  # fmt: skip
    levels = pd.to_numeric(guessed["pi_level"], errors="coerce").dropna().unique()
    level = f"{100 * levels[0]:.3g} % interval" if len(levels) == 1 else "interval"
    marker = {"marker": "o", "mfc": "white", "mec": PREDICTED_COLOR, "ms": 3.5}
    return [Line2D([], [], lw=0.6, label=f"predicted ({level})", **marker, **style)]


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


def _same_setting(scores: pd.DataFrame, row) -> np.ndarray:
    """Rows run like `row` (same phase, device, method, requested batch), whatever the meter."""
    same = np.ones(len(scores), bool)
    for k in SCORE_GROUP[:-1]:
        same &= matches(scores[k], row[k])
    return same


def _has_point(scores: pd.DataFrame) -> pd.Series:
    e = pd.to_numeric(scores["energy_per_image_j"], errors="coerce")
    a = pd.to_numeric(scores["top1"], errors="coerce")
    return (np.isfinite(e) & (e > 0) & np.isfinite(a) & (scores["status"] == "ok")).fillna(False)


def _in_scope(scores: pd.DataFrame, want: dict) -> pd.Series:
    scope = pd.Series(True, index=scores.index)
    for k, v in want.items():
        if v is not None:
            scope &= matches(scores[k], v)
    return scope


@figure("accuracy_vs_energy", needs=("scores", "fits", "predicted"))
def _draw(inputs: Inputs, stem) -> list[Path]:
    return accuracy_vs_energy(
        inputs.scores,
        stem,
        law=inputs.fits.get("accuracy_law"),
        secondary_unit=inputs.secondary_unit,
        predicted=inputs.predicted,
        **inputs.group,
    )
