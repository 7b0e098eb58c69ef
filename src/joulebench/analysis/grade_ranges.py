"""Grade ranges of predicted rows (issue 42): a prediction is not a measurement, so it never
gets a grade; its interval says which grades it could have.

A predicted model at top-1 `a` with an energy interval [low, high] is placed against the
front of the measured, scored rows of its score group (SCORE_GROUP) as the score would
place it had it been measured at an energy E: the front with it in is min(front_energy(a),
E), so its efficiency index would be

    index(E) = min(1, front_energy(a) / E)     (1 where no measured model reaches a)

Its best grade is that of index(low), its worst that of index(high): "B–D", or one letter
where both ends agree. A model more accurate than every measured one would be on the front
whatever its energy, as the most accurate measured model is: "A". No range where it has no
top-1, no interval, or its group has no graded measured row, or where the scores compared
another energy than the one predicted (dynamic energy, or the whole node's: predictions
are of the device's total energy). Measured grades are never changed by a prediction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from joulebench.analysis.score import SCORE_GROUP, front_energy, grades_of, parse_grade_thresholds
from joulebench.table_io import TableError, conform, read_table
from joulebench.tables import PREDICTED

RANGE_DASH = "–"  # between the best and the worst grade: "B–D"
# The energy a prediction is of (analysis.predict: the summary's energy_per_image_j)
PREDICTED_ENERGY = {"energy_kind": "total", "energy_scope": "device"}


def compares_predicted_energy(scores: pd.DataFrame) -> bool:
    """Whether `scores` compare the energy a prediction is of (PREDICTED_ENERGY): only then
    may a prediction be drawn on their energy axis or placed against their front."""
    for column, value in PREDICTED_ENERGY.items():
        if column in scores and set(scores[column].dropna()) - {value}:
            return False
    return True


def index_at(front_e, energy) -> np.ndarray:
    """The efficiency index a model would have at `energy` where the measured front at its
    top-1 spends `front_e` (NaN: no measured model is as accurate, it would be the front)."""
    fe, e = np.asarray(front_e, float), np.asarray(energy, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(np.isfinite(fe), np.minimum(1.0, fe / e), 1.0)
    return np.where(np.isfinite(e) & (e > 0), out, np.nan)


def range_text(best, worst) -> str:
    """'B–D', 'B' where both ends agree, '' where either is missing."""
    if not isinstance(best, str) or not isinstance(worst, str):
        return ""
    return best if best == worst else f"{best}{RANGE_DASH}{worst}"


def group_key(row) -> tuple:
    """A score group's key as plain Python values (None for a missing one), so a predicted
    row's key and a score row's compare equal whatever their dtypes."""
    out = []
    for v in row:
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
            out.append(None)
        else:
            out.append(v.item() if hasattr(v, "item") else v)
    return tuple(out)


def measured_fronts(scores: pd.DataFrame) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    """Each score group's graded rows (scored: measured, comparable, with top-1) as arrays
    (top-1, energy), by group_key; only where the scores compared the energy predicted."""
    if scores.empty:
        return {}
    ok = scores["scored"].astype("boolean").fillna(False).astype(bool)
    for column, value in PREDICTED_ENERGY.items():
        if column in scores:
            ok &= (scores[column] == value).fillna(False).astype(bool)
    graded = scores[ok]
    fronts = {}
    for key, g in graded.groupby(list(SCORE_GROUP), dropna=False, sort=False):
        a = pd.to_numeric(g["top1"], errors="coerce").to_numpy(float)
        e = pd.to_numeric(g["energy_per_image_j"], errors="coerce").to_numpy(float)
        fronts[group_key(key)] = (a, e)
    return fronts


def grade_ranges(
    predicted: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    grade_thresholds: Mapping[str, float] | Sequence[float] | None = None,
) -> pd.DataFrame:
    """`grade_range` and `grade_range_note` for each row of `predicted` (tables.PREDICTED's
    group columns, its energy interval, and a `top1` column the caller joined by model),
    against the measured fronts of `scores` (SCORE_COLUMNS). Same index as `predicted`."""
    thresholds = parse_grade_thresholds(grade_thresholds)
    fronts = measured_fronts(scores)
    low = pd.to_numeric(predicted["energy_per_image_j_pi_low"], errors="coerce").to_numpy(float)
    high = pd.to_numeric(predicted["energy_per_image_j_pi_high"], errors="coerce").to_numpy(float)
    top1 = pd.to_numeric(predicted["top1"], errors="coerce").to_numpy(float)
    keys = [group_key(k) for k in predicted[list(SCORE_GROUP)].itertuples(index=False)]
    fe = np.full(len(predicted), np.nan)
    notes = np.full(len(predicted), "", dtype=object)
    for i, key in enumerate(keys):
        if not np.isfinite(top1[i]):
            notes[i] = "no top1: no grade range"
        elif not (np.isfinite(low[i]) and np.isfinite(high[i])):
            notes[i] = "no prediction interval: no grade range"
        elif key not in fronts:
            notes[i] = "no graded measured model in its group (of this energy): no grade range"
        else:
            fe[i] = front_energy(*fronts[key], [top1[i]])[0]
    best = grades_of(index_at(fe, low), thresholds)
    worst = grades_of(index_at(fe, high), thresholds)
    ranged = notes == ""
    pairs = zip(best, worst, ranged, strict=True)
    grade_range = [range_text(b, w) if r else "" for b, w, r in pairs]
    return pd.DataFrame(
        {"grade_range": grade_range, "grade_range_note": notes}, index=predicted.index
    ).astype("string")


def read_predicted(path) -> pd.DataFrame:
    """`joulebench predict`'s table (tables.PREDICTED), as the page and the figures read it:
    TableError (one line) where it lacks a column they draw from."""
    table = read_table(path)
    need = [*SCORE_GROUP, "model", "energy_per_image_j", "energy_per_image_j_pi_low"]
    need += ["energy_per_image_j_pi_high", "pi_level"]
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise TableError(f"{path}: no column {', '.join(missing)} (joulebench predict's table)")
    return conform(table.reindex(columns=PREDICTED.names), PREDICTED.dtypes)
