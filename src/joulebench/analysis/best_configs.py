"""The energy-optimal configuration of each model: least energy per image over methods,
runtimes and batch sizes, overall and under each configured constraint.

Constraints (`CONSTRAINTS`): `max_latency_ms` (latency per batch: the p95 where per-step
timing measured it, else the mean time per batch; `latency_kind` says which),
`min_throughput_img_s` and `max_batch_size`. Which rows count follows the score stage exactly
(score.measured_mask), and estimated energies are never compared with measured ones:
`energy_is_estimate` is part of the `KEY`. A simulated GPU's rows count only when asked for
(`include_simulated`), and then only beside each other: `is_simulated` is in the key too, and
the configuration's words end in "(simulated)".
docs/decisions.md#best-configuration-per-model-resultsbest_configsparquet.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from joulebench.analysis.score import (
    DEFAULT_ENERGY,
    DEFAULT_ENERGY_SCOPE,
    DEFAULT_INVALID_FLAGS,
    DEFAULT_MAX_ENERGY_CV,
    ENERGY_COLUMNS,
    in_scope,
    invalidating_flag,
    measured_mask,
)
from joulebench.analysis.summary import read_summary
from joulebench.config_schema import default
from joulebench.safe_text import quantity
from joulebench.table_io import conform, write_table
from joulebench.tables import BEST_CONFIGS, KNOB_COLUMNS, energy_is_estimate

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
KEY = ("phase", "device_label", "model", "energy_is_estimate", "is_simulated")
SIMULATED_MARK = " (simulated)"  # after the words of a simulated GPU's configuration


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
    include_simulated: bool = False,
) -> pd.DataFrame:
    """The summary with the columns every decision reads, decided once here:

    `valid` (the score's measured_mask; a simulated GPU's rows too with `include_simulated`),
    `simulated` (is_simulated: such rows are ranked only beside each other),
    `estimate` (tables.energy_is_estimate), the compared
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

    rules = (energy, invalid_flags, max_energy_cv, include_simulated)
    df["valid"] = measured_mask(df, *rules).to_numpy()
    df["simulated"] = number("is_simulated").fillna(0).astype(bool)
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
    flag = invalidating_flag(df, *rules).to_numpy(object)
    status = df["status"].fillna("?").astype(str).to_numpy(object)
    why = np.where(status != "ok", "status " + status, "no energy")
    df["why_not"] = np.where(df["valid"], "", np.where(flag != "", "flagged " + flag, why))
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


# a best configuration's own columns, carried into its row
BEST_FROM_ROW = (
    "method",
    "runtime",
    "batch_size_requested",
    "batch_size",
    "meter",
    "latency_ms",
    "latency_kind",
    "throughput_img_s",
    *KNOB_COLUMNS,  # the method's power limit and locked clock (docs/power.md)
)


def _number(row, column: str) -> float:
    """A row's value as a float, NaN where missing (or the column absent)."""
    try:
        value = float(row.get(column))
    except (TypeError, ValueError):  # None, NA, text
        return math.nan
    return value if math.isfinite(value) else math.nan


def _with_readback(text: str, asked: float, read: float, unit: str) -> str:
    """`text` with the value the device read back: '= 420 W' for a relative or named ask,
    '(read back 248 W)' where it differs from an absolute one."""
    if not math.isfinite(read):
        return text
    if not math.isfinite(asked):
        return f"{text} = {read:.0f} {unit}"
    return text if abs(read - asked) < 0.5 else f"{text} (read back {read:.0f} {unit})"


def knob_text(row) -> str:
    """A row's device settings in words ('power limit 60 % of default = 420 W', 'power
    limit 250 W', 'SM clock 1410 MHz', 'SM clock max = 1980 MHz'); '' when it sets none."""
    parts = []
    fraction = _number(row, "power_limit_requested_fraction")
    watts = _number(row, "power_limit_requested_w")
    if math.isfinite(fraction) or math.isfinite(watts):
        asked = f"{fraction * 100:.3g} % of default" if math.isfinite(fraction) else f"{watts:g} W"
        read = _number(row, "power_limit_readback_w")
        parts.append(_with_readback(f"power limit {asked}", watts, read, "W"))
    mhz = _number(row, "sm_clock_requested_mhz")
    preset = row.get("sm_clock_requested_preset")
    preset = preset if isinstance(preset, str) else ""
    if math.isfinite(mhz) or preset:
        asked = f"{mhz:.0f} MHz" if math.isfinite(mhz) else preset
        read = _number(row, "sm_clock_readback_mhz")
        parts.append(_with_readback(f"SM clock {asked}", mhz, read, "MHz"))
    return ", ".join(parts)


def method_text(row) -> str:
    """The method with its knobs: 'fp16@0.6 (power limit 60 % of default = 420 W)'."""
    knobs = knob_text(row)
    return f"{row['method']} ({knobs})" if knobs else str(row["method"])


def simulated_text(row) -> str:
    """' (simulated)' for a simulated GPU's row (is_simulated, or comparable's `simulated`),
    else ''."""
    return (
        SIMULATED_MARK
        if _number(row, "is_simulated") == 1 or _number(row, "simulated") == 1
        else ""
    )


def configuration_text(row) -> str:
    """What to run, in one line: 'fp16@0.6 (power limit 60 % of default), batch 64', with
    ' (simulated)' after a simulated GPU's."""
    batch = _number(row, "batch_size")
    batch_text = int(batch) if math.isfinite(batch) else "?"
    return f"{method_text(row)}, batch {batch_text}{simulated_text(row)}"


def configurations(table: pd.DataFrame) -> pd.Series:
    """configuration_text of each row that names a configuration (`met`), else NA: worded
    row by row only where a knob is set, the rest in one pass."""
    batch = pd.to_numeric(table["batch_size"], errors="coerce").round().astype("Int64")
    simulated = table["is_simulated"].astype("boolean").fillna(False).astype(bool)
    text = table["method"].astype("string") + ", batch " + batch.astype("string")
    text[simulated] = text[simulated] + SIMULATED_MARK
    knobs = table.reindex(columns=list(KNOB_COLUMNS))
    preset = knobs["sm_clock_requested_preset"].fillna("").astype(str) != ""
    knobbed = knobs.drop(columns="sm_clock_requested_preset").notna().any(axis=1) | preset
    knobbed &= table["met"].fillna(False).astype(bool)
    if knobbed.any():
        rows = table.loc[knobbed, ["method", "batch_size", "is_simulated", *KNOB_COLUMNS]]
        text[knobbed] = [configuration_text(r) for r in rows.to_dict("records")]
    return text.where(table["met"].fillna(False).astype(bool))


# the other columns of comparable() a decision reads
USED = ("valid", "estimate", "simulated", "energy_j", "ci_low_j", "ci_high_j", "why_not", "top1")


def _shortfall(df: pd.DataFrame, kind: str, value: float) -> np.ndarray:
    """Each row's relative distance to meeting a constraint (0 when met; inf when unknown)."""
    column, op, _ = CONSTRAINTS[kind]
    x = pd.to_numeric(df[column], errors="coerce").astype(float).to_numpy()
    known = np.isfinite(x) & (x > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = x / value - 1.0 if op == "<=" else value / x - 1.0
    return np.where(known, np.maximum(0.0, relative), np.inf)


def _first_per_group(rows: pd.DataFrame, by: str) -> pd.DataFrame:
    """Each group's row with the least `by`, indexed by group; a tie goes to the earliest
    row (as idxmin would). `_row` keeps the row's label."""
    ranked = rows.assign(_row=rows.index).sort_values(["_group", by, "_row"], kind="stable")
    return ranked.drop_duplicates("_group").set_index("_group")


def _nothing_comparable(df: pd.DataFrame) -> pd.Series:
    """The note of each group given: why none of its rows counts (distinct reasons, sorted)."""
    why = df.loc[df["why_not"] != "", ["_group", "why_not"]].drop_duplicates()
    joined = why.sort_values(["_group", "why_not"]).groupby("_group")["why_not"].agg("; ".join)
    return ("no comparable configuration (" + joined.astype(object) + ")").astype(object)


def _best_row(df: pd.DataFrame, n_groups: int, kind: str, value: float) -> pd.DataFrame:
    """One constraint over every group at once (df's `_group`: 0..n_groups-1): the row of
    each group, its least-energy configuration meeting it, or a note saying why none."""
    ok = df[df["valid"]]
    sel = ok if kind == OVERALL else ok[meets(ok, kind, value).to_numpy()]
    label = OVERALL if kind == OVERALL else constraint_label(kind, value)
    out = pd.DataFrame(
        {"constraint": label, "constraint_kind": kind, "constraint_value": value},
        index=pd.RangeIndex(n_groups),
    )
    out["configurations"] = np.bincount(ok["_group"], minlength=n_groups)
    out["configurations_meeting"] = np.bincount(sel["_group"], minlength=n_groups)
    out["met"] = out["configurations_meeting"] > 0
    best = _first_per_group(sel, "energy_j")
    for c in BEST_FROM_ROW:
        if c in best.columns:
            out[c] = best[c]
    out["energy_per_image_j"] = best["energy_j"]
    out["energy_per_image_ci95_low_j"] = best["ci_low_j"]
    out["energy_per_image_ci95_high_j"] = best["ci_high_j"]
    group = sel["_group"].to_numpy()
    ties = sel["ci_low_j"].to_numpy() <= best["ci_high_j"].reindex(group).to_numpy()
    ties &= sel.index.to_numpy() != best["_row"].reindex(group).to_numpy()
    count = pd.Series(np.bincount(group[ties], minlength=n_groups))
    out["ties_within_ci"] = count.where(out["met"]).astype("Int64")
    out["note"] = pd.Series("", index=out.index, dtype=object).where(out["met"])
    if kind != OVERALL:
        missed = _closest_misses(ok[~out["met"].to_numpy()[ok["_group"].to_numpy()]], kind, value)
        out.loc[missed.index, "note"] = missed.to_numpy()
    none = _nothing_comparable(df[(out["configurations"] == 0).to_numpy()[df["_group"]]])
    out.loc[none.index, "note"] = none.to_numpy()
    return out


def _closest_misses(rows: pd.DataFrame, kind: str, value: float) -> pd.Series:
    """The note of each group given (none of whose rows meets the constraint): the row
    closest to meeting it, and by how much it misses."""
    closest = _first_per_group(rows.assign(_short=_shortfall(rows, kind, value)), "_short")
    notes = [
        f"no configuration meets {constraint_text(kind, value)}; closest: "
        f"{method_text(r)} batch {r['batch_size']}{simulated_text(r)}: {miss(r, kind, value)}"
        for r in closest.to_dict("records")
    ]
    return pd.Series(notes, index=closest.index, dtype=object)


def best_configs(
    summary: pd.DataFrame,
    *,
    max_latency_ms: Sequence[float] = (),
    min_throughput_img_s: Sequence[float] = (),
    max_batch_size: Sequence[int] = (),
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
    include_simulated: bool = False,
) -> pd.DataFrame:
    """One row per (phase, device, model, estimated or not, simulated or not) and constraint
    (`none` first): the least-energy configuration meeting it, or an empty one whose note
    says why. A simulated GPU's rows count only with `include_simulated`.

    Vectorised: one sort and first-per-group pass per constraint over every group."""
    constraints = [(OVERALL, math.nan)] + parse_constraints(
        max_latency_ms, min_throughput_img_s, max_batch_size
    )
    df = comparable(
        summary,
        energy=energy,
        invalid_flags=invalid_flags,
        max_energy_cv=max_energy_cv,
        include_simulated=include_simulated,
    )
    keep = [*KEY[:3], *BEST_FROM_ROW, *USED, "family"]
    df = df.loc[df["model"].notna() & df["device_label"].notna(), df.columns.isin(keep)]
    df = df.assign(energy_is_estimate=df["estimate"], is_simulated=df["simulated"])
    df["_group"] = df.groupby(list(KEY), sort=True, dropna=False).ngroup().to_numpy()
    n_groups = int(df["_group"].max()) + 1 if len(df) else 0
    base = df.drop_duplicates("_group").set_index("_group").sort_index()[list(KEY)]
    base["energy_kind"] = energy
    by_group = df.groupby("_group")
    base["family"] = by_group["family"].first() if "family" in df.columns else None
    base["top1"] = by_group["top1"].first()  # the first known, as for family
    parts = [
        _best_row(df, n_groups, kind, value).join(base).assign(_constraint=i)
        for i, (kind, value) in enumerate(constraints)
    ]
    out = pd.concat(parts).rename_axis("_group").reset_index()
    out = out.sort_values(["_group", "_constraint"], kind="stable")
    out["configuration"] = configurations(out)
    return conform(out.reindex(columns=list(BEST_CONFIG_COLUMNS)), BEST_CONFIG_COLUMNS)


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
    max_latency_ms: Sequence[float] = default("decisions.max_latency_ms"),
    min_throughput_img_s: Sequence[float] = (),
    max_batch_size: Sequence[int] = default("decisions.max_batch_size"),
    energy: str = DEFAULT_ENERGY,
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
    energy_scope: str = DEFAULT_ENERGY_SCOPE,
    include_simulated: bool = False,
) -> pd.DataFrame:
    """`joulebench best-configs`: the table for a summary (path), written atomically; with
    energy_scope node the energies compared are the whole node's, as the score's are;
    `include_simulated` ranks a simulated GPU's rows too (beside each other only)."""
    table = best_configs(
        scoped(read_summary(summary), energy_scope, energy),
        max_latency_ms=max_latency_ms,
        min_throughput_img_s=min_throughput_img_s,
        max_batch_size=max_batch_size,
        energy=energy,
        invalid_flags=invalid_flags,
        max_energy_cv=max_energy_cv,
        include_simulated=include_simulated,
    )
    write_table(table, output, BEST_CONFIG_COLUMNS)
    found = int(table["met"].fillna(False).sum())
    print(
        f"best configurations: {found} of {quantity(len(table), 'row')} found -> {output}",
        file=sys.stderr,
    )
    return table
