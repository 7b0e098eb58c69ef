"""The score stage: Pareto front, efficiency index, letter grade and energy index.

Within each comparison group (same phase, device, method, requested batch size and kind of
meter, so measured and estimated energies never share a front) a model is on the front when
no other model is at least as accurate for at most the same energy, and better in one.
The efficiency index says how far above the front a model's energy lies:

    front_energy(a) = min { E_j : model j in the group with top1_j >= a }   (a staircase)
    efficiency_index = front_energy(top1_i) / E_i                          in (0, 1]

It is 1 exactly on the front. docs/scoring.md works an example by hand. Rows that cannot
be scored (failed, no energy, no accuracy, flagged as invalid) stay in the table with an
empty index and a note saying why.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from joulebench.analysis.carbon import carbon_columns
from joulebench.analysis.summary import read_summary
from joulebench.config_schema import default
from joulebench.flags import (
    FLAG_HIGH_SPREAD,
    FLAG_SIMULATED,
    INVALIDATING,
    add_flag,
    canonical_names,
    first_flag,
)
from joulebench.safe_text import quantity
from joulebench.table_io import conform, write_table
from joulebench.tables import SCORE_COLUMNS

GRADES = ("A", "B", "C", "D", "E", "F", "G")
# Lower bounds of the efficiency index for A..F; below F's bound is G. In energy terms a
# model graded A spends at most 1.25x the front's energy at its accuracy, B 1.67x, C 2.2x,
# D 3.3x, E 5x, F 10x; G more than 10x. See docs/scoring.md for why.
DEFAULT_GRADE_THRESHOLDS = dict(zip(GRADES[:-1], default("score.grade_thresholds"), strict=True))
DEFAULT_REFERENCE_MODEL = default("score.reference_model")
# Which rows count, for the score, the fits and the best configurations alike (the config's
# score section): the energy compared (total, or dynamic: above idle), the CV limit, the flags.
DEFAULT_ENERGY = default("score.energy")
# A row whose energy varies more than this between repeats (CV = std / mean) is flagged
# `high-spread`: at CV 0.25 and 4 windows the 95% CI is the mean +-40 %, wider
# than two grade bands, so its grade would say nothing. See docs/scoring.md.
DEFAULT_MAX_ENERGY_CV = default("score.max_energy_cv")
# Flags that make a measurement unusable for comparison: the registry's invalidating ones
# (joulebench.flags; the schema's default of score.invalid_flags is the same list).
DEFAULT_INVALID_FLAGS = INVALIDATING
# A simulated GPU's row (is_simulated; devices `sim:<gpu>`, flag FLAG_SIMULATED) is never
# scored, whatever the config's invalid_flags say: its energy is the sensor simulator's. Only
# the decisions may rank such rows, among themselves, when asked to (include_simulated).
ENERGY_COLUMNS = {"total": "energy_per_image_j", "dynamic": "dynamic_energy_per_image_j"}
# `energy_scope`: device (its own meter) or node (GPU + CPU packages + DRAM, meters.node)
ENERGY_SCOPES = ("device", "node")
DEFAULT_ENERGY_SCOPE = default("energy_scope")
NODE_ENERGY_COLUMN = "energy_node_per_image_j"
ENERGY_CV_COLUMNS = {"total": "energy_per_image_cv", "dynamic": "dynamic_energy_per_image_cv"}
SCORE_GROUP = ("phase", "device_label", "method", "batch_size_requested", "energy_is_estimate")


def parse_grade_thresholds(value: Mapping[str, float] | Sequence[float] | None) -> dict:
    """Thresholds from the config: {"A": 0.8, ..., "F": 0.1} or six numbers for A..F.

    They must strictly decrease and lie in (0, 1]: every index then gets exactly one grade.
    """
    if value is None:
        return dict(DEFAULT_GRADE_THRESHOLDS)
    if isinstance(value, Mapping):
        if set(value) != set(GRADES[:-1]):
            raise ValueError(f"grade thresholds need exactly the keys {GRADES[:-1]}: {value}")
        bounds = [float(value[g]) for g in GRADES[:-1]]
    else:
        bounds = [float(v) for v in value]
        if len(bounds) != len(GRADES) - 1:
            raise ValueError(f"grade thresholds need {len(GRADES) - 1} numbers (A..F): {value}")
    if not all(0.0 < b <= 1.0 for b in bounds):
        raise ValueError(f"grade thresholds must lie in (0, 1]: {bounds}")
    if any(a <= b for a, b in zip(bounds, bounds[1:], strict=False)):
        raise ValueError(f"grade thresholds must strictly decrease from A to F: {bounds}")
    return dict(zip(GRADES, bounds, strict=False))


def grade_of(index: float, thresholds: Mapping[str, float] = DEFAULT_GRADE_THRESHOLDS):
    """The letter for one efficiency index; None for NaN (no index, no grade)."""
    if index is None or not np.isfinite(index):
        return None
    for letter in GRADES[:-1]:
        if index >= thresholds[letter]:
            return letter
    return GRADES[-1]


def pareto_front(top1: np.ndarray, energy: np.ndarray) -> np.ndarray:
    """True where no other point has top1 >= and energy <=, with at least one strict.

    Ties (same top1 and energy) are all on the front; a point with a NaN is on it and
    dominates nothing (no comparison with NaN holds). O(n log n): point i is dominated when
    the least energy among points more accurate is <= E_i, or among points at least as
    accurate is < E_i.
    """
    a, e = np.asarray(top1, float), np.asarray(energy, float)
    on = np.ones(len(a), bool)
    known = np.isfinite(a) & np.isfinite(e)
    a_k, e_k = a[known], e[known]
    order = np.argsort(-a_k, kind="stable")
    neg_a, running_min = -a_k[order], np.minimum.accumulate(e_k[order])
    more = np.searchsorted(neg_a, -a_k, side="left")  # points with top1 > a_i
    at_least = np.searchsorted(neg_a, -a_k, side="right")  # points with top1 >= a_i
    least_more = np.where(more > 0, running_min[np.maximum(more - 1, 0)], np.inf)
    least_at_least = np.where(at_least > 0, running_min[np.maximum(at_least - 1, 0)], np.inf)
    on[known] = ~((least_more <= e_k) | (least_at_least < e_k))
    return on


def front_energy(top1: np.ndarray, energy: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The staircase: least energy among points with top1 >= each value of `at` (NaN: none).

    Taking the minimum over all points equals taking it over the front alone, since any
    point off the front is dominated by a front point that is at least as accurate and
    spends no more energy.
    """
    a, e = np.asarray(top1, float), np.asarray(energy, float)
    order = np.argsort(-a, kind="stable")
    a_desc, running_min = a[order], np.minimum.accumulate(e[order])
    # points with top1 >= x are the first k of a_desc, k = count of a_desc >= x
    k = np.searchsorted(-a_desc, -np.asarray(at, float), side="right")
    out = np.full(len(k), np.nan)
    out[k > 0] = running_min[k[k > 0] - 1]
    return out


def _best_top1_within(top1: np.ndarray, energy: np.ndarray) -> np.ndarray:
    """For each point, the best top1 of any point with energy <= its own."""
    a, e = np.asarray(top1, float), np.asarray(energy, float)
    order = np.argsort(e, kind="stable")
    e_asc, running_max = e[order], np.maximum.accumulate(a[order])
    k = np.searchsorted(e_asc, e, side="right")
    return running_max[k - 1]


def _flagged(
    flags: pd.Series, invalid: Sequence[str], include_simulated: bool = False
) -> pd.Series:
    """Each row's first flag of `invalid` (or simulated, unless `include_simulated`), '' for
    none; worked out once per distinct flags text (a study has a handful), not once per row."""
    names = tuple(canonical_names(invalid))
    if include_simulated:
        return first_flag(flags, tuple(n for n in names if n != FLAG_SIMULATED))
    return first_flag(flags, (*names, FLAG_SIMULATED))


def energy_cv(df: pd.DataFrame, energy: str = "total") -> pd.Series:
    """The CV over repeats of the energy compared (NaN where unknown)."""
    col = ENERGY_CV_COLUMNS[energy]
    if col not in df.columns:
        return pd.Series(np.nan, index=df.index)
    return pd.to_numeric(df[col], errors="coerce").astype(float)


def check_energy(energy) -> str:
    """Which energy is compared: "total" or "dynamic" (above idle)."""
    if not isinstance(energy, str) or energy not in ENERGY_COLUMNS:
        raise ValueError(f"energy must be one of {tuple(ENERGY_COLUMNS)}, got {energy!r}")
    return energy


def check_max_cv(max_energy_cv) -> float | None:
    """The configured spread threshold: a positive number, or None for no spread check."""
    if max_energy_cv is None:
        return None
    value = float(max_energy_cv)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"max_energy_cv must be a positive number or null, got {max_energy_cv!r}")
    return value


def row_flags(
    df: pd.DataFrame, energy: str = "total", max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV
) -> pd.Series:
    """Each row's flags: those it carries, plus `high-spread` where the CV of the compared
    energy exceeds `max_energy_cv` (None: no spread check)."""
    flags = df["flags"] if "flags" in df.columns else pd.Series(pd.NA, index=df.index)
    flags = flags.astype("string")
    if "is_simulated" in df.columns:
        flags = add_flag(flags, df["is_simulated"].astype("boolean").fillna(False), FLAG_SIMULATED)
    limit = check_max_cv(max_energy_cv)
    if limit is None:
        return flags
    return add_flag(flags, (energy_cv(df, energy) > limit).fillna(False), FLAG_HIGH_SPREAD)


def measured_mask(
    df: pd.DataFrame,
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
    include_simulated: bool = False,
) -> pd.Series:
    """Rows whose energy can be compared: status ok, energy > 0, no invalidating flag
    (high-spread included, where the energy CV exceeds `max_energy_cv`). A simulated GPU's
    row never is, unless `include_simulated` (the decisions' opt-in: they then rank it
    only beside other simulated rows, best_configs.comparable)."""
    e = pd.to_numeric(df[ENERGY_COLUMNS[energy]], errors="coerce").astype(float)
    ok = (df["status"] == "ok").fillna(False).astype(bool)
    flag = invalidating_flag(df, energy, invalid_flags, max_energy_cv, include_simulated)
    return ok & np.isfinite(e) & (e > 0) & (flag == "")


def invalidating_flag(
    df: pd.DataFrame,
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
    include_simulated: bool = False,
) -> pd.Series:
    """Each row's first flag that keeps its energy from being compared ('' for none): the
    flag half of measured_mask, for saying why a row was left out."""
    flags = row_flags(df, energy, max_energy_cv)
    return _flagged(flags, tuple(invalid_flags), include_simulated)


def score_notes(
    df: pd.DataFrame, energy_ok: pd.Series, flag: pd.Series, cv: pd.Series, max_cv
) -> np.ndarray:
    """Why each row gets no score or grade ('' where it gets both): the first reason of
    status, flag, energy, top-1; worded only for the rows that have one."""
    notes = np.full(len(df), "", dtype=object)
    f = np.asarray(flag, dtype=object)
    bad_status = (df["status"] != "ok").fillna(True).to_numpy(bool)
    rest = ~bad_status
    spread = rest & (f == FLAG_HIGH_SPREAD) & (max_cv is not None)
    flagged = rest & ~spread & (f != "")
    no_energy = rest & (f == "") & ~np.asarray(energy_ok, bool)
    no_top1 = rest & (f == "") & ~no_energy & ~np.isfinite(np.asarray(df["top1"], float))
    notes[bad_status] = [f"status {x}: not scored" for x in df["status"][bad_status]]
    notes[spread] = [
        f"flagged {FLAG_HIGH_SPREAD} (energy CV {c:.0%} > {max_cv:.0%}): not scored"
        for c in np.asarray(cv, float)[spread]
    ]
    notes[flagged] = [f"flagged {x}: not scored" for x in f[flagged]]
    notes[no_energy] = "no energy: not scored"
    notes[no_top1] = [
        f"no top1 (accuracy_source {x}): no efficiency index or grade"
        for x in df["accuracy_source"][no_top1]
    ]
    return notes


def note_reason(note) -> str:
    """A score note's reason, without its numbers: 'flagged high-spread (energy CV 30% >
    25%): not scored' -> 'flagged high-spread'; '' where there is none."""
    if not isinstance(note, str) or not note:
        return ""
    return re.sub(r"\s*\(.*?\)", "", note.split(":")[0]).strip()


def left_out_of_grades(rows: pd.DataFrame) -> dict[str, int]:
    """How many measured rows were left out of grades, by reason, most first: from the
    scores' notes where `rows` are scores, else from the invalidating flags of ok rows (a
    run's profile rows before it is scored: `joulebench status`)."""
    if "score_note" in rows:
        ok = rows[(rows["status"] == "ok").fillna(False).astype(bool)]
        ungraded = ok[ok["grade"].isna()] if "grade" in ok else ok
        reasons = [note_reason(n) for n in ungraded["score_note"]]
    else:
        ok = rows[(rows["status"] == "ok").fillna(False).astype(bool)]
        reasons = [f"flagged {f}" for f in invalidating_flag(ok) if f]
    counts = pd.Series([r for r in reasons if r], dtype="string").value_counts()
    return {str(k): int(v) for k, v in counts.items()}


def score_summary(
    summary: pd.DataFrame,
    *,
    grade_thresholds: Mapping[str, float] | Sequence[float] | None = None,
    reference_model: str | None = DEFAULT_REFERENCE_MODEL,
    energy: str = DEFAULT_ENERGY,
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
    energy_scope: str = DEFAULT_ENERGY_SCOPE,
    carbon: Mapping | None = None,
) -> pd.DataFrame:
    """Score every row of a summary (SUMMARY_COLUMNS) -> SCORE_COLUMNS, one row per row.

    energy_scope: "device" scores the device's energy; "node" the whole node's
    (energy_node_per_image_j: total only; an estimate where the host's part is, and its
    spread check uses the device's CV). `carbon` (grid_gco2e_per_kwh, pue, price_per_kwh)
    gives the Wh, CO2e and cost columns (analysis.carbon).

    energy: "total" (energy_per_image_j) or "dynamic" (above idle). The energy index needs
    no accuracy, so it is given for every measured row whose group holds the reference.
    Rows whose energy CV exceeds `max_energy_cv` get the flag `high-spread` (in `flags`),
    which keeps them off the front while it is one of `invalid_flags` (the default).
    """
    thresholds = parse_grade_thresholds(grade_thresholds)
    check_energy(energy)
    max_energy_cv = check_max_cv(max_energy_cv)
    df = summary.reset_index(drop=True).copy()
    df = in_scope(df, energy_scope, energy)
    e = pd.to_numeric(df[ENERGY_COLUMNS[energy]], errors="coerce").astype(float)
    a = pd.to_numeric(df["top1"], errors="coerce").astype(float)
    df["flags"] = row_flags(df, energy, max_energy_cv)
    flag = _flagged(df["flags"], tuple(invalid_flags))
    measured = measured_mask(df, energy, invalid_flags, max_energy_cv=None)  # flags already set
    scored = measured & np.isfinite(a)
    cv = energy_cv(df, energy)
    notes = score_notes(df.assign(top1=a), np.isfinite(e) & (e > 0), flag, cv, max_energy_cv)

    out = pd.DataFrame({c: df[c] for c in SCORE_COLUMNS if c in df.columns})
    out["energy_kind"] = energy
    out["energy_scope"] = energy_scope
    out["energy_per_image_j"] = e
    for column, values in carbon_columns(e, carbon).items():
        out[column] = values
    out["top1"] = a
    out["scored"] = scored
    out["reference_model"] = reference_model or ""
    groups = df[measured].groupby(list(SCORE_GROUP), dropna=False, sort=False).groups
    indices = [np.asarray(idx) for idx in groups.values()]
    front = _front_columns(indices, scored, a, e)
    for c in ("on_front", "front_energy_per_image_j", "efficiency_index", "top1_gap_pct"):
        out[c] = front[c]
    out["group_models"], out["front_models"] = front["group_models"], front["front_models"]
    is_ref = (df["model"] == reference_model).fillna(False).to_numpy(bool)
    reference, no_reference = energy_index(indices, is_ref, e)
    out["reference_energy_per_image_j"] = reference
    out["energy_index"] = e / reference
    out["grade"] = grades_of(out["efficiency_index"], thresholds)
    if reference_model:
        notes = _add_note(
            notes, no_reference, f"reference {reference_model} not measured in this group"
        )
    out["score_note"] = notes
    return conform(out.reindex(columns=list(SCORE_COLUMNS)), SCORE_COLUMNS)


def _add_note(notes: np.ndarray, where: np.ndarray, note: str) -> np.ndarray:
    """`notes` with `note` after the one a row has ('; '-joined), on the rows `where`."""
    out = notes.copy()
    both = where & (notes != "")
    out[where & ~both] = note
    out[both] = notes[both] + "; " + note
    return out


def _front_columns(indices, scored: pd.Series, a: pd.Series, e: pd.Series) -> dict:
    """The front's columns for every scored row, group by group (`indices`: each group's
    rows), filled in arrays and handed back whole (NaN / NA for rows not scored)."""
    n = len(scored)
    a, e, scored = a.to_numpy(float), e.to_numpy(float), scored.to_numpy(bool)
    cols = {c: np.full(n, np.nan) for c in ("front_energy_per_image_j", "efficiency_index")}
    cols["top1_gap_pct"] = np.full(n, np.nan)
    on_front, group_models, front_models = np.zeros(n, bool), np.zeros(n, int), np.zeros(n, int)
    for idx in indices:
        s = idx[scored[idx]]
        if not len(s):
            continue
        on = pareto_front(a[s], e[s])
        fe = front_energy(a[s], e[s], a[s])
        on_front[s] = on
        cols["front_energy_per_image_j"][s] = fe
        cols["efficiency_index"][s] = np.where(on, 1.0, fe / e[s])
        cols["top1_gap_pct"][s] = _best_top1_within(a[s], e[s]) - a[s]
        group_models[s] = len(s)
        front_models[s] = int(on.sum())
    cols["on_front"] = pd.arrays.BooleanArray(on_front, ~scored)
    cols["group_models"] = pd.arrays.IntegerArray(group_models, ~scored)
    cols["front_models"] = pd.arrays.IntegerArray(front_models, ~scored)
    return cols


def grades_of(index, thresholds: Mapping[str, float] = DEFAULT_GRADE_THRESHOLDS) -> np.ndarray:
    """grade_of for every index at once (None where the index is NaN)."""
    x = np.asarray(index, float)
    finite = np.isfinite(x)
    letters = np.select(
        [finite & (x >= thresholds[g]) for g in GRADES[:-1]], GRADES[:-1], GRADES[-1]
    ).astype(object)
    letters[~finite] = None
    return letters


def in_scope(df: pd.DataFrame, energy_scope: str, energy: str = "total") -> pd.DataFrame:
    """The summary with the headline energy of `energy_scope`: the device's as measured, or
    the whole node's (node_headline); what the score, best_configs and recommend compare."""
    check_scope(energy_scope, energy)
    return node_headline(df) if energy_scope == "node" else df


def check_scope(energy_scope: str, energy: str = "total") -> None:
    """energy_scope is device or node, and node goes with total energy (the study checks
    it before any job: prerun.check_settings)."""
    if energy_scope not in ENERGY_SCOPES:
        raise ValueError(f"energy_scope must be one of {ENERGY_SCOPES}, got {energy_scope!r}")
    if energy_scope == "node" and energy != "total":
        raise ValueError(
            "energy_scope node scores total energy (no idle baseline of the node), "
            f"not score.energy {energy!r}"
        )


def node_headline(df: pd.DataFrame) -> pd.DataFrame:
    """The summary with the node's energy in energy_per_image_j (energy_scope: node), an
    estimate wherever the host's part is (host_is_estimate)."""
    if NODE_ENERGY_COLUMN not in df.columns:
        raise ValueError(
            "energy_scope node needs energy_node_per_image_j: this summary predates "
            "whole-node energy; use energy_scope: device"
        )
    out = df.copy()
    out["energy_per_image_j"] = pd.to_numeric(out[NODE_ENERGY_COLUMN], errors="coerce")
    host = out.get("host_is_estimate", pd.Series(pd.NA, index=out.index)).astype("boolean")
    out["energy_is_estimate"] = (
        out["energy_is_estimate"].astype("boolean") | host.fillna(False)
    ).astype("boolean")
    return out


def energy_index(indices, is_ref: np.ndarray, e: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """reference_energy_per_image_j of each group's measured rows (the reference model's
    first row in the group; energy_index is E / that), and the rows whose group lacks it."""
    e = e.to_numpy(float)
    reference, missing = np.full(len(is_ref), np.nan), np.zeros(len(is_ref), bool)
    for idx in indices:
        ref = idx[is_ref[idx]]
        if len(ref):
            reference[idx] = e[ref[0]]
        else:
            missing[idx] = True
    return reference, missing


def run_score(summary, output, **settings) -> pd.DataFrame:
    """`joulebench score`: score a summary (path: ours or a published one) with the config's
    score section (keys as score_summary's; one left out takes its default) and write it."""
    scores = score_summary(read_summary(summary), **settings)
    write_table(scores, output, SCORE_COLUMNS)
    graded = int(scores["grade"].notna().sum())
    print(f"scores: {quantity(len(scores), 'row')}, {graded} graded -> {output}", file=sys.stderr)
    return scores
