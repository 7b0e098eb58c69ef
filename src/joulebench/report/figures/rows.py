"""Which rows a figure shows, and why the others are not there (pandas only, no matplotlib).

Key columns may be NA: the summary's own not-profiled rows (a model whose build failed) have
no device, method or batch size. Comparisons here never turn an NA into a truth value
(`matches`), and a row lacking a key that places it (`PLACE_KEYS`) is left out and counted
("without device_label") where a figure says why it is empty.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from joulebench.analysis.score import (
    DEFAULT_MAX_ENERGY_CV,
    ENERGY_COLUMNS,
    invalidating_flag,
)
from joulebench.tables import STATUS_NOT_PROFILED, energy_is_estimate

# What places a row in a group or a series. A row without one of these (the summary's own
# not-profiled rows have no device, method or batch size) cannot be placed: figures leave it
# out, and count it ("without device_label") where they say why they are empty.
PLACE_KEYS = ("device_label", "method", "model", "batch_size_requested")
# energy_scope node, on every energy axis that shows it
NODE_SCOPE_WORDS = "whole node: GPU+CPU+DRAM"


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


def one_device(df: pd.DataFrame, device_label: str | None) -> pd.DataFrame:
    """The rows of `device_label`, else of the device `busiest_device` picks."""
    if device_label is None and not df.empty:
        device_label = busiest_device(df)
    return df if device_label is None else df[matches(df["device_label"], device_label)]


def busiest_device(df: pd.DataFrame):
    """The device with the most rows, a measured one before any whose energies are all
    estimated (a CPU's estimate never stands for a study whose GPUs were measured), ties by
    label; None where no row names a device."""
    per = pd.DataFrame({"device": df["device_label"], "estimated": is_estimated(df)}).dropna()
    if per.empty:
        return None
    counts = per.groupby("device", sort=True)["estimated"].agg(["size", "all"])
    ranked = counts.sort_values(["all", "size"], ascending=[True, False], kind="stable")
    return ranked.index[0]


def is_true(value) -> bool:
    """A flag of one row, NA (unknown) as False."""
    return bool(value) if pd.notna(value) else False


def selectors(**kw) -> dict:
    """The keyword arguments that were given (not None)."""
    return {k: v for k, v in kw.items() if v is not None}


def pick_group(df: pd.DataFrame, keys: Sequence[str], want: dict) -> pd.DataFrame:
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


# Statuses that are no failure: not run here by design (an emulated precision, tf32 or CUDA
# graphs where the device has none), or a catalogued model the study did not measure (its
# budget, or its list: predicted where the run predicts); a note counts them by their word.
NOT_FAILED = {"skipped": "skipped", STATUS_NOT_PROFILED: "not measured"}


def status_reason(status: str) -> str:
    """Why a row that is not ok is left out, in a note's words: 'skipped', 'failed', ..."""
    return NOT_FAILED.get(status, "failed")


def counted(reasons: pd.Series) -> str:
    """'3 flagged other-load, 2 failed': the reasons, most common first."""
    counts = reasons[reasons != ""].value_counts()
    return ", ".join(f"{n} {why}" for why, n in counts.items())


def not_comparable(
    summary: pd.DataFrame,
    energy: str = "total",
    max_energy_cv=DEFAULT_MAX_ENERGY_CV,
    include_simulated: bool = False,
) -> str:
    """Why rows of a summary have no comparable energy, counted: '20 flagged other-load, 2
    failed' (empty when every row is comparable): the reason a figure is empty, or what it
    left out (`include_simulated`: by the rules a simulated device's rows are drawn by)."""
    e = pd.to_numeric(summary[ENERGY_COLUMNS[energy]], errors="coerce")
    hits = invalidating_flag(
        summary, energy, max_energy_cv=max_energy_cv, include_simulated=include_simulated
    )
    status = summary["status"].astype("string").fillna("missing")
    lacks = missing_key(summary)
    reasons = []
    for st, lack, value, hit in zip(status, lacks, e, hits, strict=True):
        if st != "ok":
            reasons.append(status_reason(st))
        elif lack:
            reasons.append(f"without {lack}")
        elif not (np.isfinite(value) and value > 0):
            reasons.append("without energy")
        elif hit:
            reasons.append(f"flagged {hit}")
        else:
            reasons.append("")
    return counted(pd.Series(reasons, dtype=object))


def one_method(summary: pd.DataFrame | None, device_label: str | None) -> str:
    """'the study measured one method (fp32)' where the device's rows hold a single method
    (a comparison of methods has nothing to compare: no row is to blame), else ''."""
    if summary is None:
        return ""
    methods = one_device(placed(summary), device_label)["method"].dropna().astype(str).unique()
    return f"the study measured one method ({methods[0]})" if len(methods) == 1 else ""


def empty_because(what: str, why: str) -> str:
    """'what: why', or just `what` when there is no why."""
    return f"{what}: {why}" if why else what


def describe(want: dict) -> str:
    """The selection asked for, as 'device_label=h200, method=fp16' ('all groups': none)."""
    chosen = {k: v for k, v in want.items() if v is not None}
    return ", ".join(f"{k}={v}" for k, v in chosen.items()) or "all groups"
