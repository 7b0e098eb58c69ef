"""The energy-optimal configuration of each model: least energy per image over methods,
runtimes and batch sizes, overall and under each configured constraint.

A constraint is one of
    max_latency_ms        latency per batch <= L ms (the p95 where per-step timing measured
                          it, else the mean time per batch; `latency_kind` says which)
    min_throughput_img_s  images per second >= T
    max_batch_size        the batch size run <= B
Which rows count follows the score stage exactly (score.measured_mask: status ok, energy > 0,
no invalidating flag, high-spread included), and estimated energies are never compared with
measured ones: `energy_is_estimate` is part of the key, so a model measured and estimated on
one device gets one best configuration of each kind. docs/scoring.md explains the table.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from joulebench.analysis.score import (
    DEFAULT_INVALID_FLAGS,
    DEFAULT_MAX_ENERGY_CV,
    ENERGY_COLUMNS,
    in_scope,
    invalidating_flag,
    measured_mask,
)
from joulebench.analysis.summary import read_summary
from joulebench.tables import BEST_CONFIGS, conform, energy_is_estimate, write_table

BEST_CONFIG_COLUMNS = BEST_CONFIGS.dtypes
# constraint kind -> (column compared, sense, how it reads)
CONSTRAINTS = {
    "max_latency_ms": ("latency_ms", "<=", "latency {op} {v:g} ms"),
    "min_throughput_img_s": ("throughput_img_s", ">=", "throughput {op} {v:g} img/s"),
    "max_batch_size": ("batch_size", "<=", "batch {op} {v:g}"),
}
OVERALL = "none"
CI_COLUMNS = {
    "total": ("energy_per_image_ci95_low_j", "energy_per_image_ci95_high_j"),
    "dynamic": ("dynamic_energy_per_image_ci95_low_j", "dynamic_energy_per_image_ci95_high_j"),
}
KEY = ("phase", "device_label", "model", "energy_is_estimate")


class DecisionError(ValueError):
    """Bad input to a decision (unknown model or device, impossible constraint): one line."""


def parse_constraints(
    max_latency_ms: Sequence[float] = (),
    min_throughput_img_s: Sequence[float] = (),
    max_batch_size: Sequence[int] = (),
) -> list[tuple[str, float]]:
    """[(kind, value)] in config order; every value must be a finite number > 0."""
    out = []
    for kind, values in (
        ("max_latency_ms", max_latency_ms),
        ("min_throughput_img_s", min_throughput_img_s),
        ("max_batch_size", max_batch_size),
    ):
        for v in values or ():
            value = float(v)
            if not (math.isfinite(value) and value > 0):
                raise DecisionError(f"decisions.{kind}: values must be numbers > 0, got {v!r}")
            if kind == "max_batch_size" and value != int(value):
                raise DecisionError(f"decisions.max_batch_size: whole numbers only, got {v!r}")
            out.append((kind, value))
    return out


def constraint_label(kind: str, value: float) -> str:
    """`latency_ms<=50`: the name a constraint has in the table."""
    column, op, _ = CONSTRAINTS[kind]
    return f"{column}{op}{value:g}"


def constraint_text(kind: str, value: float) -> str:
    _, op, text = CONSTRAINTS[kind]
    return text.format(op=op, v=value)


def comparable(
    summary: pd.DataFrame,
    *,
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> pd.DataFrame:
    """The summary with the columns every decision reads, decided once here:

    `valid` (the score's measured_mask), `estimate` (tables.energy_is_estimate), the compared
    `energy_j` with its 95% CI (`ci_low_j`, `ci_high_j`) and half-width `ci_half_j` (from the
    upper bound: the lower one may be clipped at 0), `latency_ms` (p95 where measured, else
    the mean per batch, else batch_size / throughput for a summary without latencies) with
    `latency_kind`, and `why_not` (why a row is not valid).
    """
    if energy not in ENERGY_COLUMNS:
        raise DecisionError(f"energy must be one of {tuple(ENERGY_COLUMNS)}, got {energy!r}")
    df = summary.reset_index(drop=True).copy()

    def number(column):
        if column not in df.columns:
            return pd.Series(np.nan, index=df.index)
        return pd.to_numeric(df[column], errors="coerce").astype(float)

    df["valid"] = measured_mask(df, energy, invalid_flags, max_energy_cv).to_numpy()
    df["estimate"] = energy_is_estimate(df).fillna(False).astype(bool)
    df["energy_j"] = number(ENERGY_COLUMNS[energy])
    low, high = CI_COLUMNS[energy]
    df["ci_low_j"], df["ci_high_j"] = number(low), number(high)
    df["ci_half_j"] = df["ci_high_j"] - df["energy_j"]
    p95, mean = number("latency_ms_p95"), number("latency_ms_mean")
    df["throughput_img_s"] = number("throughput_img_s")
    # a published summary without latency columns: the mean time per batch is batch / rate
    derived = 1e3 * number("batch_size") / df["throughput_img_s"]
    df["latency_kind"] = np.select(
        [np.isfinite(p95), np.isfinite(mean), np.isfinite(derived)], ["p95", "mean", "derived"], ""
    )
    df["latency_ms"] = p95.where(np.isfinite(p95), mean.where(np.isfinite(mean), derived))
    df["top1"] = number("top1")
    flag = invalidating_flag(df, energy, invalid_flags, max_energy_cv)
    df["why_not"] = [
        "" if ok else (f"flagged {f}" if f else f"status {s}" if s != "ok" else "no energy")
        for ok, f, s in zip(df["valid"], flag, df["status"].fillna("?"), strict=True)
    ]
    return df


def meets(df: pd.DataFrame, kind: str, value: float) -> pd.Series:
    """Rows meeting one constraint (a missing latency or throughput meets none)."""
    column, op, _ = CONSTRAINTS[kind]
    x = pd.to_numeric(df[column], errors="coerce").astype(float)
    return (x <= value) if op == "<=" else (x >= value)


def miss(row, kind: str, value: float) -> str:
    """How far one row misses one constraint, in words ('' when it meets it)."""
    column, op, _ = CONSTRAINTS[kind]
    x = float(row[column]) if pd.notna(row[column]) else math.nan
    if not math.isfinite(x):
        return f"{column} unknown"
    if (x <= value) if op == "<=" else (x >= value):
        return ""
    unit = {"latency_ms": " ms", "throughput_img_s": " img/s", "batch_size": ""}[column]
    return f"{column} {x:.3g}{unit} ({'over' if op == '<=' else 'under'} by {abs(x - value):.3g})"


def _best_row(group: pd.DataFrame, base: dict, label: str, kind: str, value: float) -> dict:
    ok = group[group["valid"]]
    sel = ok if kind == OVERALL else ok[meets(ok, kind, value).to_numpy()]
    row = {
        **base,
        "constraint": label,
        "constraint_kind": kind,
        "constraint_value": value,
        "configurations": len(ok),
        "configurations_meeting": len(sel),
        "met": len(sel) > 0,
    }
    if not len(ok):
        why = sorted(set(group["why_not"]) - {""})
        row["note"] = "no comparable configuration (" + "; ".join(why) + ")"
        return row
    if not len(sel):
        closest = ok.loc[ok.apply(lambda r: _shortfall(r, kind, value), axis=1).idxmin()]
        row["note"] = (
            f"no configuration meets {constraint_text(kind, value)}; closest: "
            f"{closest['method']} batch {closest['batch_size']}: {miss(closest, kind, value)}"
        )
        return row
    best = sel.loc[sel["energy_j"].idxmin()]
    overlaps = (sel["ci_low_j"] <= best["ci_high_j"]) & (sel.index != best.name)
    row.update(
        {
            c: best[c]
            for c in (
                "method",
                "runtime",
                "batch_size_requested",
                "batch_size",
                "meter",
                "latency_ms",
                "latency_kind",
                "throughput_img_s",
            )
            if c in best.index
        }
    )
    row.update(
        energy_per_image_j=best["energy_j"],
        energy_per_image_ci95_low_j=best["ci_low_j"],
        energy_per_image_ci95_high_j=best["ci_high_j"],
        ties_within_ci=int(overlaps.sum()),
        note="",
    )
    return row


def _shortfall(row, kind: str, value: float) -> float:
    """Relative distance to meeting a constraint (0 when met; inf when unknown)."""
    column, op, _ = CONSTRAINTS[kind]
    x = float(row[column]) if pd.notna(row[column]) else math.nan
    if not (math.isfinite(x) and x > 0):
        return math.inf
    return max(0.0, x / value - 1.0) if op == "<=" else max(0.0, value / x - 1.0)


def best_configs(
    summary: pd.DataFrame,
    *,
    max_latency_ms: Sequence[float] = (),
    min_throughput_img_s: Sequence[float] = (),
    max_batch_size: Sequence[int] = (),
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> pd.DataFrame:
    """One row per (phase, device, model, estimated or not) and constraint (`none` first):
    the least-energy configuration meeting it, or an empty one whose note says why."""
    constraints = [(OVERALL, math.nan)] + parse_constraints(
        max_latency_ms, min_throughput_img_s, max_batch_size
    )
    df = comparable(
        summary, energy=energy, invalid_flags=invalid_flags, max_energy_cv=max_energy_cv
    )
    df = df[df["model"].notna() & df["device_label"].notna()]
    df["energy_is_estimate"] = df["estimate"]
    rows = []
    for key, group in df.groupby(list(KEY), sort=True, dropna=False):
        base = dict(zip(KEY, key, strict=True))
        base.update(
            energy_kind=energy,
            family=next(iter(group["family"].dropna()), None) if "family" in group else None,
            top1=next(iter(group["top1"].dropna()), math.nan),
        )
        for kind, value in constraints:
            label = OVERALL if kind == OVERALL else constraint_label(kind, value)
            rows.append(_best_row(group, base, label, kind, value))
    out = pd.DataFrame(rows).reindex(columns=list(BEST_CONFIG_COLUMNS))
    return conform(out, BEST_CONFIG_COLUMNS)


def scoped(summary: pd.DataFrame, energy_scope: str, energy: str = "total") -> pd.DataFrame:
    """The summary with the headline energy the score ranks (score.in_scope), so decisions
    and grades compare the same energies; a bad scope is a DecisionError."""
    try:
        return in_scope(summary, energy_scope, energy)
    except ValueError as err:
        raise DecisionError(str(err)) from err


def run_best_configs(
    summary,
    output,
    *,
    max_latency_ms: Sequence[float] = (10, 100),
    min_throughput_img_s: Sequence[float] = (),
    max_batch_size: Sequence[int] = (1,),
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
    energy_scope: str = "device",
) -> pd.DataFrame:
    """`joulebench best-configs`: the table for a summary (path), written atomically; with
    energy_scope node the energies compared are the whole node's, as the score's are."""
    table = best_configs(
        scoped(read_summary(summary), energy_scope, energy),
        max_latency_ms=max_latency_ms,
        min_throughput_img_s=min_throughput_img_s,
        max_batch_size=max_batch_size,
        energy=energy,
        invalid_flags=invalid_flags,
        max_energy_cv=max_energy_cv,
    )
    write_table(table, output, BEST_CONFIG_COLUMNS)
    found = int(table["met"].fillna(False).sum())
    print(f"best configurations: {found} of {len(table)} rows found -> {output}", file=sys.stderr)
    return table
