"""The aggregate stage: one tidy table that joins catalog, profile and accuracy rows.

`results/summary.parquet` is what scores, fits, figures and the web page read, and what a
study publishes. It has one row per (phase, device_label, method, model,
batch_size_requested); `batch_size` is the batch actually run (smaller after an
out-of-memory retry). Failed configurations stay in as rows with their status and reason,
and a catalogued model that no profile row mentions is kept with status "not-profiled", so
nothing disappears silently between stages.

This module imports neither torch nor timm: summaries published by others are read and
checked (`read_summary`, `validate_summary`) on machines without either.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pandas as pd

from joulebench.analysis.boards import apply_board_factors, read_records
from joulebench.analysis.release_files import verified_summary
from joulebench.flags import FLAG_CI_CLIPPED, add_flag, canonical_flags
from joulebench.safe_text import quantity
from joulebench.table_io import conform, read_table, write_table
from joulebench.tables import (
    ACCURACY_COLUMNS,
    CATALOG_COLUMNS,
    KNOB_COLUMNS,
    MAX_NAME_CHARS,
    PHASES,
    POWER_LIMIT_FRACTION_MAX,
    PROFILE_COLUMNS,
    RUNTIME_ALIASES,
    STATUS_INVALID,
    STATUS_NOT_PROFILED,
    SUMMARY,
    SUMMARY_COLUMNS,
    UNFUSED,
    energy_is_estimate,
    is_estimate_meter,
    protocol_fingerprint,
    sensor_uncertainty,
)

# "unknown": a summary from elsewhere gave top-1 without saying where it came from.
ACCURACY_SOURCES = ("measured", "reference", "none", "unknown")
CI_LOW_COLUMNS = ("energy_per_image_ci95_low_j", "dynamic_energy_per_image_ci95_low_j")
SPREAD_COLUMNS = (
    "energy_per_image_std_j",
    "energy_per_image_cv",
    "dynamic_energy_per_image_std_j",
    "dynamic_energy_per_image_cv",
)
# Percentages that must lie in [0, 100] wherever they are given.
PERCENT_COLUMNS = ("top1", "top5", "top1_real", "top1_v2")
# A method's knobs in watts and MHz, asked for or read back: > 0 where set (docs/power.md).
POSITIVE_KNOB_COLUMNS = tuple(c for c in KNOB_COLUMNS if SUMMARY[c].unit in ("W", "MHz"))
# A configuration is identified by these; batch_size (the batch run) may differ after OOM.
SUMMARY_KEY = SUMMARY.key

# How the summary takes its columns from the tables it joins: the registry says (tables.py).
_PROFILE_RENAME = SUMMARY.renamed("profile")  # is_estimate -> energy_is_estimate
_PROFILE_DROP = [
    c for c in PROFILE_COLUMNS if c not in SUMMARY_COLUMNS and c not in _PROFILE_RENAME
]
_CATALOG_KEEP = [c.name for c in SUMMARY.columns if c.origin == "catalog" and not c.renamed_from]
_CATALOG_RENAME = SUMMARY.renamed("catalog")  # status, reason -> catalog_status, _reason
_ACCURACY_RENAME = SUMMARY.renamed("accuracy")  # img_size -> accuracy_img_size


class SummaryError(ValueError):
    """A summary table does not match the declared schema; the message lists every problem."""


def _empty(index: pd.Index, dtype: str) -> pd.Series:
    """An all-missing column of the declared dtype (NaN for floats, NA otherwise)."""
    return pd.Series([None] * len(index), index=index, dtype=object).astype(dtype)


def _dedupe_accuracy(accuracy: pd.DataFrame, catalog: pd.DataFrame | None) -> pd.DataFrame:
    """One accuracy row per model; where several exist, the one at the model's input size."""
    if not accuracy["model"].duplicated().any():
        return accuracy
    acc = accuracy.copy()
    if catalog is not None and len(catalog):
        size = catalog.drop_duplicates("model").set_index("model")["input_height"]
        acc["_match"] = acc["img_size"].astype("Float64") == acc["model"].map(size)
        acc = acc.sort_values("_match", ascending=False, kind="stable").drop(columns="_match")
    return acc.drop_duplicates("model", keep="first")


def _counts_of_measured_form(out: pd.DataFrame) -> pd.DataFrame:
    """Params, FLOPs, MACs and activations of the form each row measured.

    The catalog's are of the deploy form; a row that ran the model as built
    (`reparameterized` False) takes the `*_unfused` counts. Rows that measured nothing keep
    the catalog's. A catalog from before the deploy form existed has no unfused counts.
    """
    as_built = (out["reparameterized"] == False).fillna(False).astype(bool)  # noqa: E712
    for column, unfused in UNFUSED.items():
        out[column] = out[column].mask(as_built & out[unfused].notna(), out[unfused])
    return out.drop(columns=list(UNFUSED.values()))


def build_summary(
    profile: pd.DataFrame,
    catalog: pd.DataFrame | None = None,
    accuracy: pd.DataFrame | None = None,
    *,
    phase: str = "inference",
    boards: dict[str, dict] | None = None,
) -> pd.DataFrame:
    """Join profile rows (PROFILE_COLUMNS) with catalog and accuracy rows, by model.

    `boards`: the GPUs' reference readings by UUID (analysis.boards.read_records): a pool's
    rows are stated as its reference board reads them (board_factor); the summary's
    fingerprint says so.

    Rows carry their own phase (inference or train); `phase` fills it where a profile table
    written before phases existed has none, and names the phase of "not-profiled" rows.

    A missing catalog or accuracy table gives NaN properties / accuracy_source "none"
    with a note; catalogued models without any profile row become "not-profiled" rows.
    A row holding an impossible value (top-1 outside [0, 100], energy or throughput <= 0)
    is kept with status "invalid" and the value in its reason; CI lower bounds below 0 J
    are raised to 0 and flagged `ci-clipped`.
    """
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    prof = conform(profile.reindex(columns=list(PROFILE_COLUMNS)), PROFILE_COLUMNS)
    prof = prof.drop(columns=list(_PROFILE_DROP))
    prof["is_estimate"] = energy_is_estimate(prof)
    prof = prof.rename(columns=_PROFILE_RENAME)
    prof["phase"] = prof["phase"].fillna(phase)
    prof["flags"] = canonical_flags(prof["flags"])  # a part written before the names changed

    if catalog is not None and len(catalog):
        cat = conform(catalog.reindex(columns=list(CATALOG_COLUMNS)), CATALOG_COLUMNS)
        keep = ["model", *_CATALOG_KEEP, *UNFUSED.values(), *_CATALOG_RENAME]
        cat = cat.drop_duplicates("model")[keep]
        cat = cat.rename(columns=_CATALOG_RENAME)
        unprofiled = cat.loc[~cat["model"].isin(prof["model"]), ["model", "catalog_reason"]]
        if len(unprofiled):
            extra = pd.DataFrame(
                {
                    "phase": phase,
                    "model": unprofiled["model"].to_numpy(),
                    "status": STATUS_NOT_PROFILED,
                    "reason": [
                        f"catalog: {r}" if isinstance(r, str) and r else "no profile row"
                        for r in unprofiled["catalog_reason"]
                    ],
                }
            )
            prof = pd.concat([prof, extra.reindex(columns=prof.columns)], ignore_index=True)
        out = _counts_of_measured_form(
            prof.merge(cat, on="model", how="left", validate="many_to_one")
        )
        out["catalog_status"] = out["catalog_status"].fillna("missing")
    else:
        out = prof.copy()
        for c in _CATALOG_KEEP:
            out[c] = _empty(out.index, CATALOG_COLUMNS[c])
        out["catalog_status"], out["catalog_reason"] = "missing", "no catalog table"

    acc_cols = [c for c in ACCURACY_COLUMNS if c != "model"]
    if accuracy is not None and len(accuracy):
        acc = conform(accuracy.reindex(columns=list(ACCURACY_COLUMNS)), ACCURACY_COLUMNS)
        acc = _dedupe_accuracy(acc, catalog)
        out = out.merge(acc, on="model", how="left", validate="many_to_one")
        absent = out["accuracy_source"].isna()
        out.loc[absent, "accuracy_note"] = "model not in the accuracy table"
    else:
        for c in acc_cols:
            out[c] = _empty(out.index, ACCURACY_COLUMNS[c])
        out["accuracy_note"] = "no accuracy table"
    out["accuracy_source"] = out["accuracy_source"].fillna("none")
    out = out.rename(columns=_ACCURACY_RENAME)
    return _stated(out, boards)


def _stated(out: pd.DataFrame, boards: dict[str, dict] | None) -> pd.DataFrame:
    """The joined rows as the summary states them: by their pool's reference board, the
    spread between GPUs, the interval against true power, the fingerprint; in key order, in
    declared form, impossible values invalid and CIs clipped at 0."""
    out = apply_board_factors(out, boards or {})
    out["gpu_spread_fraction"] = gpu_spread(out)
    out = absolute_ci(out)
    out["protocol_fingerprint"] = protocol_fingerprint(out)
    out = out.sort_values(list(SUMMARY_KEY), kind="stable", na_position="last")
    out = conform(out.reindex(columns=list(SUMMARY_COLUMNS)), SUMMARY_COLUMNS)
    return clip_ci_low(_invalidate_impossible(out))


def absolute_ci(rows: pd.DataFrame) -> pd.DataFrame:
    """The sensor's own calibration uncertainty (tables.sensor_uncertainty) and the energy's
    interval against true power: its CI's half-widths and that uncertainty added in
    quadrature (energy_per_image_abs_ci95_low_j / _high_j; empty where it is not known)."""
    out = rows.copy()
    said = [sensor_uncertainty(m) for m in out["meter"]]
    given = out.get("sensor_uncertainty_source", pd.Series("", index=out.index))
    calibrated = given.fillna("").astype(str).ne("").to_numpy()  # a calibration's (boards)
    rel = np.array([u for u, _ in said], dtype=float)
    source = np.array([w for _, w in said], dtype=object)
    if calibrated.any():
        rel[calibrated] = out.loc[calibrated, "sensor_uncertainty_rel"].astype(float)
        source[calibrated] = given[calibrated].astype(str)
    out["sensor_uncertainty_rel"] = rel
    out["sensor_uncertainty_source"] = pd.Series(source, index=out.index, dtype="string")
    energy = out["energy_per_image_j"].astype("float64")
    extra = energy * out["sensor_uncertainty_rel"].astype("float64")
    low = energy - out["energy_per_image_ci95_low_j"].astype("float64")
    high = out["energy_per_image_ci95_high_j"].astype("float64") - energy
    out["energy_per_image_abs_ci95_low_j"] = energy - np.hypot(low, extra)
    out["energy_per_image_abs_ci95_high_j"] = energy + np.hypot(high, extra)
    return out


def gpu_spread(rows: pd.DataFrame) -> pd.Series:
    """Per row, (max - min) / mean energy per image between the GPUs of its pool that
    measured the same configuration (a pool's labels of each_model_on); NaN where one did."""
    key = ["phase", "device_pool", "method", "model", "batch_size_requested"]
    ok = rows["status"].eq("ok") & rows["device_pool"].notna() & rows["device_pool"].ne("")
    energy = rows["energy_per_image_j"].where(ok).astype("float64")
    groups = energy.groupby([rows[k] for k in key], dropna=False)
    spread = (groups.transform("max") - groups.transform("min")) / groups.transform("mean")
    return spread.where(groups.transform("count") > 1)


def write_summary(df: pd.DataFrame, path: str | os.PathLike, csv_path=None) -> None:
    """Validate, then write the parquet (and optionally a CSV twin) atomically."""
    validate_summary(df)
    write_table(df, path, SUMMARY_COLUMNS)
    if csv_path is not None:
        write_table(df, csv_path, SUMMARY_COLUMNS)


def run_summary(
    profile, output, *, catalog=None, accuracy=None, csv=None, boards=None
) -> pd.DataFrame:
    """`joulebench summary`: join the profile, catalog and accuracy tables (paths; catalog and
    accuracy optional), state a pool's rows by its reference board (`boards`: the folder of
    the GPUs' reference readings, results/boards), write the summary (and its CSV twin)."""
    summary = build_summary(
        read_table(profile),
        read_table(catalog) if catalog else None,
        read_table(accuracy) if accuracy else None,
        boards=read_records(boards) if boards else None,
    )
    write_summary(summary, output, csv)
    print(f"summary: {quantity(len(summary), 'row')} -> {output}", file=sys.stderr)
    return summary


# --- values no measurement can have, and intervals that cannot go below zero -----------


def clip_ci_low(df: pd.DataFrame) -> pd.DataFrame:
    """Raise 95% CI lower bounds below 0 J to 0 and flag those rows `ci-clipped`.

    An energy cannot be negative, but mean - t * s / sqrt(n) is whenever the spread is large
    (CV above about 63 % with 4 repeats, 40 % with 3). The upper bound is left as computed.
    """
    out = df.copy()
    clipped = pd.Series(False, index=out.index)
    for col in CI_LOW_COLUMNS:
        if col not in out.columns:
            continue
        low = pd.to_numeric(out[col], errors="coerce")
        below = (low < 0).fillna(False)
        out.loc[below, col] = 0.0
        clipped |= below
    if clipped.any() and "flags" in out.columns:
        out["flags"] = add_flag(out["flags"], clipped, FLAG_CI_CLIPPED)
    return out


def _rule_problems(df: pd.DataFrame):
    """(column, rule, mask of offending rows) for every range rule of the summary."""

    def values(col):
        return pd.to_numeric(df[col], errors="coerce").astype(float)

    for col in PERCENT_COLUMNS:
        if col in df.columns:
            v = values(col)
            yield col, "must lie in [0, 100] (percent)", v.notna() & ~v.between(0, 100)
    for col in ("energy_per_image_j", "throughput_img_s"):
        if col in df.columns:
            v = values(col)
            rule = "must be > 0 (negative, zero and infinite values are impossible)"
            yield col, rule, v.notna() & ~(np.isfinite(v) & (v > 0))
    for col in SPREAD_COLUMNS:
        if col in df.columns:
            v = values(col)
            yield col, "must not be negative", v.notna() & ~(v >= 0)
    for col in ("power_mean_w", "idle_power_w"):
        if col in df.columns:
            v = values(col)
            yield col, "must not be negative", v.notna() & ~(v >= 0)
    for col in ("batch_size_requested", "batch_size"):
        if col in df.columns:
            v = values(col)
            yield col, "must be at least 1", v.notna() & ~(v >= 1)
    for col in POSITIVE_KNOB_COLUMNS:
        if col in df.columns:
            v = values(col)
            yield col, "must be > 0 where a knob is set", v.notna() & ~(v > 0)
    if "power_limit_requested_fraction" in df.columns:
        v = values("power_limit_requested_fraction")
        rule = f"must lie in (0, {POWER_LIMIT_FRACTION_MAX:g}] (a fraction of the default limit)"
        yield (
            "power_limit_requested_fraction",
            rule,
            v.notna() & ~v.between(0, POWER_LIMIT_FRACTION_MAX, inclusive="right"),
        )


def _shown(value) -> str:
    """A value as a user wrote it: 150.0, -1.0, inf, 0 (no numpy repr)."""
    if isinstance(value, (bool, np.bool_)) or value is None or value is pd.NA:
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return repr(value)


def _row_name(df: pd.DataFrame, i) -> str:
    r = df.loc[i]
    parts = [str(r[c]) for c in ("device_label", "method", "model") if c in df and pd.notna(r[c])]
    if "batch_size_requested" in df and pd.notna(r["batch_size_requested"]):
        parts.append(f"batch {r['batch_size_requested']}")
    return f"row {i}" + (f" ({' · '.join(parts)})" if parts else "")


def _range_problems(df: pd.DataFrame, examples: int = 3) -> list[str]:
    """One line per broken rule: the column, the rule, and the first rows with their value."""
    problems = []
    for col, rule, bad in _rule_problems(df):
        bad = bad.fillna(False).astype(bool)
        if not bad.any():
            continue
        shown = [
            f"{col} = {_shown(df.loc[i, col])} in {_row_name(df, i)}"
            for i in df.index[bad][:examples]
        ]
        more = int(bad.sum()) - len(shown)
        tail = f" (and {more} more rows)" if more > 0 else ""
        problems.append(f"{col} {rule}: " + "; ".join(shown) + tail)
    return problems


def _invalidate_impossible(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of our own run that hold an impossible value become status "invalid": the value is
    emptied and the reason names it, so one bad reading never stops the summary."""
    out = df.copy()
    reasons = pd.Series("", index=out.index, dtype=object)
    for col, rule, bad in _rule_problems(out):
        bad = bad.fillna(False).astype(bool)
        for i in out.index[bad]:
            reasons[i] += f"{'; ' if reasons[i] else ''}{col} = {_shown(out.loc[i, col])} {rule}"
            out.loc[i, col] = pd.NA if SUMMARY_COLUMNS.get(col) != "float64" else np.nan
    hit = reasons != ""
    if hit.any():
        warnings.warn(
            f"{int(hit.sum())} summary rows hold impossible values; marked {STATUS_INVALID!r}",
            stacklevel=3,
        )
        was_ok = hit & (out["status"] == "ok").fillna(False).astype(bool)
        before = out["reason"].astype("string").fillna("")
        note = "impossible value: " + reasons.astype("string")
        out.loc[hit, "reason"] = note.where(before == "", before + "; " + note)[hit]
        out.loc[was_ok, "status"] = STATUS_INVALID  # a failed row keeps its own status
    return out


# --- checking a summary read from anywhere ----------------------------------------------


def _is_str_values(s: pd.Series) -> bool:
    values = s.dropna()
    return bool(values.map(lambda v: isinstance(v, str)).all())


def _dtype_ok(s: pd.Series, declared: str) -> bool:
    dt = s.dtype
    if declared == "string":
        return isinstance(dt, pd.StringDtype) or (
            pd.api.types.is_object_dtype(dt) and _is_str_values(s)
        )
    if declared == "Int64":
        return pd.api.types.is_integer_dtype(dt)
    if declared == "float64":
        return pd.api.types.is_float_dtype(dt)
    if declared == "boolean":
        return pd.api.types.is_bool_dtype(dt)
    return True  # "object": anything


def _key_problems(df: pd.DataFrame, examples: int = 3) -> list[str]:
    """Rows no grade or figure can place: any row without its phase or model, and a measured
    (ok) row without any part of its key (SUMMARY_KEY). A not-profiled row has no device,
    method or batch size (nothing was run), and is never graded."""
    missing = pd.DataFrame({c: df[c].isna() for c in SUMMARY_KEY})  # a CSV's empty cell too
    ok = (df["status"] == "ok").fillna(False).astype(bool)
    bad = missing[["phase", "model"]].any(axis=1) | (ok & missing.any(axis=1))
    if not bad.any():
        return []
    shown = []
    for i in df.index[bad][:examples]:
        lacks = ", ".join(missing.columns[missing.loc[i].to_numpy()])
        shown.append(f"row {i} ({'ok' if ok[i] else 'not ok'}: no {lacks})")
    more = int(bad.sum()) - len(shown)
    tail = f" (and {more} more rows)" if more > 0 else ""
    return [
        "rows lack part of their key (a measured row needs every one of "
        f"{', '.join(SUMMARY_KEY)}; every row its phase and model): " + "; ".join(shown) + tail
    ]


def _value_problems(df: pd.DataFrame) -> list[str]:
    problems = _key_problems(df)
    bad_phase = set(df["phase"].dropna()) - set(PHASES)
    if bad_phase:
        problems.append(f"phase has unknown values {sorted(bad_phase)} (allowed: {PHASES})")
    if df["status"].isna().any():
        problems.append(f"status is missing in {quantity(int(df['status'].isna().sum()), 'row')}")
    bad_src = set(df["accuracy_source"].dropna()) - set(ACCURACY_SOURCES)
    if bad_src or df["accuracy_source"].isna().any():
        problems.append(f"accuracy_source must be one of {ACCURACY_SOURCES}, got {bad_src}")
    ok = df["status"] == "ok"
    if df.loc[ok, "energy_is_estimate"].isna().any():
        problems.append("energy_is_estimate is missing on rows with status ok")
    no_energy = (
        ok.fillna(False).astype(bool)
        & pd.to_numeric(df["energy_per_image_j"], errors="coerce").isna()
    )
    if no_energy.any():
        rows = quantity(int(no_energy.sum()), "row")
        problems.append(
            f"energy_per_image_j is missing (empty or NaN) on {rows} with status ok, "
            f"e.g. {_row_name(df, df.index[no_energy][0])}"
        )
    problems += _long_names(df)
    says_estimate = df["meter"].map(is_estimate_meter).astype(bool)
    mixed = says_estimate & (df["energy_is_estimate"].fillna(True) == False)  # noqa: E712
    if mixed.any():
        problems.append(
            f"energy_is_estimate is False beside an estimate meter in "
            f"{quantity(int(mixed.sum()), 'row')}"
        )
    problems += _range_problems(df)
    keyed = df.dropna(subset=list(SUMMARY_KEY))
    dup = keyed.duplicated(list(SUMMARY_KEY), keep=False)
    if dup.any():
        first = keyed.loc[dup, list(SUMMARY_KEY)].iloc[0].to_dict()
        problems.append(
            f"{quantity(int(dup.sum()), 'row')} share a key {SUMMARY_KEY}, e.g. {first}"
        )
    return problems


def _long_names(df: pd.DataFrame) -> list[str]:
    """Names longer than any model, device or method has (a 20 MB name made a 25 MB page)."""
    problems = []
    for col in ("model", "device_label", "method", "phase"):
        length = df[col].astype("string").str.len()
        long = (length > MAX_NAME_CHARS).fillna(False).astype(bool)
        if long.any():
            problems.append(
                f"{col} must be at most {MAX_NAME_CHARS} characters: "
                f"{quantity(int(long.sum()), 'row')} hold longer ones (the longest "
                f"{int(length.max()):,})"
            )
    return problems


def validate_summary(df: pd.DataFrame) -> None:
    """Raise SummaryError listing every missing column, wrong dtype and impossible value.

    Undeclared extra columns are allowed (a newer joulebench may add some); `read_summary`
    drops them with a warning.
    """
    problems = []
    missing = [c for c in SUMMARY_COLUMNS if c not in df.columns]
    if missing:
        problems.append(f"missing columns: {missing}")
    wrong = [
        f"{c} is {df[c].dtype}, expected {d}"
        for c, d in SUMMARY_COLUMNS.items()
        if c in df.columns and not _dtype_ok(df[c], d)
    ]
    if wrong:
        problems.append("wrong dtypes: " + "; ".join(wrong))
    if not missing and not wrong:
        problems += _value_problems(df)
    if problems:
        raise SummaryError(
            "summary does not match SUMMARY_COLUMNS:\n  - " + "\n  - ".join(problems)
        )


def _coerce_csv(df: pd.DataFrame) -> pd.DataFrame:
    """A CSV loses dtypes (all-empty columns come back as float): restore the declared ones."""
    out = df.copy()
    for c, d in SUMMARY_COLUMNS.items():
        if c not in out.columns or d == "object":
            continue
        col = out[c]
        if d == "string":
            out[c] = col.astype("string").where(col.notna(), pd.NA)
        elif d == "boolean" and col.dtype == object:
            out[c] = col.map({"True": True, "False": False, True: True, False: False})
            out[c] = out[c].astype("boolean")
        else:
            try:
                out[c] = col.astype(d)
            except (TypeError, ValueError):
                pass  # left as read: validate_summary names the column
    return out


# A summary lacking any of these cannot be scored or plotted; other missing columns (e.g. from
# an older joulebench that did not have them yet) are left empty with a warning.
ESSENTIAL_COLUMNS = (*SUMMARY_KEY, "status", "energy_per_image_j", "top1", "energy_is_estimate")


def _fill_missing(df: pd.DataFrame, path) -> pd.DataFrame:
    missing = [c for c in SUMMARY_COLUMNS if c not in df.columns]
    if not missing or any(c in ESSENTIAL_COLUMNS for c in missing):
        return df  # nothing to fill, or validate_summary reports what is missing
    warnings.warn(
        f"{path}: summary from another joulebench version lacks {missing}; left empty",
        stacklevel=3,
    )
    df = df.copy()
    for c in missing:
        dtype = SUMMARY_COLUMNS[c]
        df[c] = pd.Series([None] * len(df), index=df.index, dtype=dtype)
    if "accuracy_source" in missing:  # say what is known: no top-1, or top-1 of unknown origin
        has_top1 = pd.to_numeric(df["top1"], errors="coerce").notna()
        df["accuracy_source"] = pd.Series(
            np.where(has_top1, "unknown", "none"), index=df.index, dtype="string"
        )
    return df


def read_summary(path: str | os.PathLike) -> pd.DataFrame:
    """Read a summary (parquet or csv, or a release folder: analysis.release_files) from
    anywhere, check it, return it in declared form.

    Missing optional columns are left empty (accuracy_source: "none", or "unknown" where a
    top-1 is given); an old runtime name reads as today's (tensorrt: ort-tensorrt), an old
    flag name too (warmup_not_steady: warmup-not-steady, joulebench.flags);
    impossible values raise SummaryError naming column, row and value; CI lower bounds
    below 0 J are raised to 0 and flagged `ci-clipped`.
    """
    path = verified_summary(path)  # a release folder: its version and checksums checked
    df = read_table(path)
    if str(path).endswith(".csv"):
        df = _coerce_csv(df)
    df = _fill_missing(df, path)
    if "runtime" in df.columns:  # an old name (tensorrt) reads as the runtime it named
        df = df.assign(runtime=df["runtime"].replace(RUNTIME_ALIASES))
    if "flags" in df.columns:  # old spellings (warmup_not_steady) read as today's
        df = df.assign(flags=canonical_flags(df["flags"]))
    try:
        validate_summary(df)
    except SummaryError as exc:
        raise SummaryError(f"{path}: {exc}") from None
    extra = [c for c in df.columns if c not in SUMMARY_COLUMNS]
    if extra:
        warnings.warn(f"{path}: ignoring undeclared summary columns {extra}", stacklevel=2)
    return clip_ci_low(conform(df[list(SUMMARY_COLUMNS)], SUMMARY_COLUMNS))
