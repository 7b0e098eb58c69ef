"""Fits and comparisons: what energy grows with, how accuracy pays for it, what methods save.

All regressions are plain numpy least squares (scipy is not a dependency):

- factor fits: log10(E) = intercept + slope * log10(x), x = FLOPs, params or activations per
  image, over all models and per family (groups with n < min_n are skipped);
- accuracy fits (diminishing returns), two forms, both reported:
    "log-linear":  top1 = a + b * log10(E)            b = points of top1 per decade of energy
    "saturating":  top1 = A - B * (E / E0) ** (-c)    A = the ceiling, E0 = geometric mean of E
  As c -> 0 the saturating form becomes log-linear, so c > 0 with a better fit says returns
  diminish even per decade of energy;
- method savings: saving = 1 - E_method / E_baseline per model and batch size;
- batch scaling: energy per image against batch size, relative to the smallest batch run.

Groups are those of the score stage (score.SCORE_GROUP): measured and estimated energies are
never fitted together.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from joulebench.analysis.score import (
    DEFAULT_INVALID_FLAGS,
    DEFAULT_MAX_ENERGY_CV,
    ENERGY_COLUMNS,
    SCORE_GROUP,
    measured_mask,
    pareto_front,
)
from joulebench.analysis.summary import read_summary
from joulebench.tables import (
    ACCURACY_FITS,
    BATCH_SCALING,
    FACTOR_FITS,
    FIT_TABLE_COLUMNS,
    METHOD_SAVINGS,
    conform,
    read_table,
    write_table,
)

FACTORS = ("flops_per_image", "params", "activations_per_image")
ACCURACY_FORMS = ("log-linear", "saturating")
# The tables' columns (declared in tables.py).
FACTOR_FIT_COLUMNS = FACTOR_FITS.dtypes
ACCURACY_FIT_COLUMNS = ACCURACY_FITS.dtypes
SAVINGS_COLUMNS = METHOD_SAVINGS.dtypes
BATCH_COLUMNS = BATCH_SCALING.dtypes


# --- the regressions themselves ------------------------------------------------------------


def linear_fit(x, y) -> dict:
    """y = intercept + slope * x by least squares: slope, its standard error, intercept, R², n."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    nan = {"slope": np.nan, "slope_se": np.nan, "intercept": np.nan, "r2": np.nan, "n": n}
    if n < 2 or np.ptp(x) == 0:
        return nan
    design = np.column_stack([np.ones(n), x])
    (intercept, slope), *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - (intercept + slope * x)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid**2).sum()) / ss_tot if ss_tot > 0 else np.nan
    sxx = float(((x - x.mean()) ** 2).sum())
    se = np.sqrt(float((resid**2).sum()) / (n - 2) / sxx) if n > 2 else np.nan
    return {"slope": slope, "slope_se": se, "intercept": intercept, "r2": r2, "n": n}


def fit_loglog(x, y) -> dict:
    """log10(y) = intercept + slope * log10(x); points with x or y <= 0 are dropped."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    return linear_fit(np.log10(x[keep]), np.log10(y[keep]))


def fit_log_linear(energy_j, top1) -> dict:
    """top1 = a + b * log10(E): a, b, R², RMSE (percentage points)."""
    e, a = np.asarray(energy_j, float), np.asarray(top1, float)
    f = linear_fit(np.log10(e), a)
    pred = f["intercept"] + f["slope"] * np.log10(e)
    return {
        "intercept_pct": f["intercept"],
        "slope_pct_per_decade": f["slope"],
        "r2": f["r2"],
        "rmse_pct": float(np.sqrt(np.mean((a - pred) ** 2))) if f["n"] >= 2 else np.nan,
        "n": f["n"],
    }


def _saturating_sse(c: float, u: np.ndarray, a: np.ndarray):
    """For a fixed exponent c the model is linear in (A, B): solve it, return SSE and (A, B)."""
    design = np.column_stack([np.ones_like(u), -np.exp(-c * u)])
    coef, *_ = np.linalg.lstsq(design, a, rcond=None)
    resid = a - design @ coef
    return float(resid @ resid), coef


def fit_saturating(energy_j, top1, c_bounds=(1e-3, 3.0)) -> dict:
    """top1 = A - B * (E/E0)**(-c), E0 the geometric mean energy; A is the accuracy ceiling.

    Variable projection: for each c, A and B are linear least squares; c is found by a log
    grid then golden-section refinement. Needs n >= 4 (three parameters plus one).
    """
    e, a = np.asarray(energy_j, float), np.asarray(top1, float)
    n = len(e)
    out = dict.fromkeys(("ceiling_pct", "amplitude_pct", "exponent", "energy_scale_j"), np.nan)
    out.update(r2=np.nan, rmse_pct=np.nan, n=n, note="")
    if n < 4 or np.ptp(np.log(e)) == 0:
        out["note"] = "too few distinct points (need 4)"
        return out
    e0 = float(np.exp(np.mean(np.log(e))))
    u = np.log(e / e0)
    grid = np.geomspace(*c_bounds, 121)
    sse = [_saturating_sse(c, u, a)[0] for c in grid]
    i = int(np.argmin(sse))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (np.sqrt(5) - 1) / 2
    for _ in range(60):  # golden section on [lo, hi]
        c1, c2 = hi - g * (hi - lo), lo + g * (hi - lo)
        if _saturating_sse(c1, u, a)[0] < _saturating_sse(c2, u, a)[0]:
            hi = c2
        else:
            lo = c1
    c = 0.5 * (lo + hi)
    sse_c, (ceiling, amplitude) = _saturating_sse(c, u, a)
    ss_tot = float(((a - a.mean()) ** 2).sum())
    out.update(
        ceiling_pct=ceiling,
        amplitude_pct=amplitude,
        exponent=c,
        energy_scale_j=e0,
        r2=1.0 - sse_c / ss_tot if ss_tot > 0 else np.nan,
        rmse_pct=float(np.sqrt(sse_c / n)),
    )
    if amplitude <= 0:
        out["note"] = "accuracy does not rise with energy here (B <= 0)"
    elif c <= c_bounds[0] * 1.01 or c >= c_bounds[1] * 0.99:
        out["note"] = f"exponent at the edge of its search range {c_bounds}"
    return out


# --- tables over a summary -------------------------------------------------------------------


def _energy(df: pd.DataFrame, energy: str) -> pd.Series:
    return pd.to_numeric(df[ENERGY_COLUMNS[energy]], errors="coerce").astype(float)


def _groups(df: pd.DataFrame, mask: pd.Series):
    for key, g in df[mask].groupby(list(SCORE_GROUP), dropna=False, sort=True):
        yield dict(zip(SCORE_GROUP, key, strict=True)), g


def factor_fits(
    summary: pd.DataFrame,
    *,
    energy: str = "total",
    factors: Sequence[str] = FACTORS,
    min_models: int = 3,
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> pd.DataFrame:
    """Log-log fits of energy per image on each factor, overall ("all") and per family."""
    rows = []
    e_all = _energy(summary, energy)
    for key, g in _groups(summary, measured_mask(summary, energy, invalid_flags, max_energy_cv)):
        for factor in factors:
            x = pd.to_numeric(g[factor], errors="coerce").astype(float)
            ok = np.isfinite(x) & (x > 0)
            parts = [("all", ok)]
            fam = g["family"].astype("string").fillna("")
            parts += [(f, ok & (fam == f)) for f in sorted(set(fam[ok])) if f]
            for family, sel in parts:
                if int(sel.sum()) < min_models:
                    continue
                f = fit_loglog(x[sel], e_all[g.index][sel])
                rows.append(
                    {
                        **key,
                        "energy_kind": energy,
                        "factor": factor,
                        "family": family,
                        "n": f["n"],
                        "slope": f["slope"],
                        "slope_se": f["slope_se"],
                        "intercept_log10": f["intercept"],
                        "prefactor_j": 10.0 ** f["intercept"],
                        "r2": f["r2"],
                    }
                )
    return conform(pd.DataFrame(rows, columns=list(FACTOR_FIT_COLUMNS)), FACTOR_FIT_COLUMNS)


def accuracy_fits(
    summary: pd.DataFrame,
    *,
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> pd.DataFrame:
    """Both diminishing-returns forms, on every scored model and on the front alone."""
    rows = []
    e_all = _energy(summary, energy)
    a_all = pd.to_numeric(summary["top1"], errors="coerce").astype(float)
    mask = measured_mask(summary, energy, invalid_flags, max_energy_cv) & np.isfinite(a_all)
    for key, g in _groups(summary, mask):
        e, a = e_all[g.index].to_numpy(), a_all[g.index].to_numpy()
        front = pareto_front(a, e)
        for subset, sel in (("all", np.ones(len(e), bool)), ("front", front)):
            for form in ACCURACY_FORMS:
                fit = fit_log_linear if form == "log-linear" else fit_saturating
                res = fit(e[sel], a[sel]) if sel.sum() >= 2 else {"n": int(sel.sum())}
                note = res.pop("note", "") or ("" if sel.sum() >= 2 else "fewer than 2 models")
                rows.append(
                    {
                        **key,
                        "energy_kind": energy,
                        "subset": subset,
                        "form": form,
                        "n": res["n"],
                        "intercept_pct": res.get("intercept_pct", np.nan),
                        "slope_pct_per_decade": res.get("slope_pct_per_decade", np.nan),
                        "ceiling_pct": res.get("ceiling_pct", np.nan),
                        "amplitude_pct": res.get("amplitude_pct", np.nan),
                        "exponent": res.get("exponent", np.nan),
                        "energy_scale_j": res.get("energy_scale_j", np.nan),
                        "r2": res.get("r2", np.nan),
                        "rmse_pct": res.get("rmse_pct", np.nan),
                        "note": note,
                    }
                )
    frame = pd.DataFrame(rows).reindex(columns=list(ACCURACY_FIT_COLUMNS))
    return conform(frame, ACCURACY_FIT_COLUMNS)


def method_savings(
    summary: pd.DataFrame,
    baseline_method: str,
    *,
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> pd.DataFrame:
    """Saving of every other method against the baseline, per model and requested batch size.

    Every non-baseline row of the summary gives one row; where no saving can be computed
    (either side failed or missing, or one energy estimated and the other measured) the
    saving is NaN and `note` says why.
    """
    key = ["phase", "device_label", "model", "batch_size_requested"]
    df = summary.dropna(subset=key + ["method"]).copy()
    df["_e"] = _energy(df, energy).where(measured_mask(df, energy, invalid_flags, max_energy_cv))
    base = df[df["method"] == baseline_method].drop_duplicates(key)
    base = base[key + ["batch_size", "_e", "energy_is_estimate", "status"]].rename(
        columns={
            "batch_size": "baseline_batch_size",
            "_e": "_eb",
            "energy_is_estimate": "_est_b",
            "status": "_status_b",
        }
    )
    other = df[df["method"] != baseline_method]
    m = other.merge(base, on=key, how="left")
    m["baseline_method"] = baseline_method
    m["energy_kind"] = energy
    m["energy_per_image_j"] = m["_e"]
    m["baseline_energy_per_image_j"] = m["_eb"]
    m["saving"] = 1.0 - m["_e"] / m["_eb"]
    mixed = m["energy_is_estimate"].astype("boolean") != m["_est_b"].astype("boolean")
    mixed = mixed.fillna(False).astype(bool)
    m.loc[mixed, "saving"] = np.nan
    m["note"] = [
        saving_note(r, baseline_method, mx)
        for r, mx in zip(m.to_dict("records"), mixed, strict=True)
    ]
    return conform(m.reindex(columns=list(SAVINGS_COLUMNS)), SAVINGS_COLUMNS)


def saving_note(r: dict, baseline: str, mixed: bool) -> str:
    if pd.isna(r["_status_b"]):
        return f"no {baseline} row for this model and batch size"
    if mixed:
        return "one energy measured, the other estimated: not compared"
    if pd.isna(r["_e"]):
        return f"{r['method']}: status {r['status']}, no comparable energy"
    if pd.isna(r["_eb"]):
        return f"{baseline}: status {r['_status_b']}, no comparable energy"
    if pd.notna(r["batch_size"]) and r["batch_size"] != r["baseline_batch_size"]:
        return f"batch sizes run differ ({r['batch_size']} vs {r['baseline_batch_size']})"
    return ""


def batch_scaling(
    summary: pd.DataFrame,
    *,
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> pd.DataFrame:
    """Energy per image against the batch size run, per (device, method, model); measured rows."""
    df = summary[measured_mask(summary, energy, invalid_flags, max_energy_cv)].copy()
    df["energy_kind"] = energy
    df["energy_per_image_j"] = _energy(df, energy)
    df = df.sort_values(["phase", "device_label", "method", "model", "batch_size"])
    keys = ["phase", "device_label", "method", "model", "energy_is_estimate"]
    first = df.groupby(keys, dropna=False)["energy_per_image_j"].transform("first")
    df["energy_vs_smallest_batch"] = df["energy_per_image_j"] / first
    return conform(df.reindex(columns=list(BATCH_COLUMNS)), BATCH_COLUMNS)


def all_fits(
    summary: pd.DataFrame,
    *,
    baseline_method: str,
    energy: str = "total",
    min_models: int = 3,
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> dict[str, pd.DataFrame]:
    """Every table of this module, by the name `write_fits` gives its file."""
    kw = {"energy": energy, "invalid_flags": invalid_flags, "max_energy_cv": max_energy_cv}
    return {
        "factor_fits": factor_fits(summary, min_models=min_models, **kw),
        "accuracy_fits": accuracy_fits(summary, **kw),
        "method_savings": method_savings(summary, baseline_method, **kw),
        "batch_scaling": batch_scaling(summary, **kw),
    }


def write_fits(tables: dict[str, pd.DataFrame], outdir) -> list:
    """Write each table as <outdir>/<name>.parquet atomically; returns the paths."""
    paths = []
    for name, df in tables.items():
        path = Path(outdir) / f"{name}.parquet"
        write_table(df, path, FIT_TABLE_COLUMNS[name])
        paths.append(path)
    return paths


def read_fits(outdir) -> dict[str, pd.DataFrame]:
    """The tables `write_fits` wrote, by name (for the figures)."""
    return {name: read_table(Path(outdir) / f"{name}.parquet") for name in FIT_TABLE_COLUMNS}


def run_fits(
    summary,
    outdir,
    *,
    baseline_method: str | None = None,
    energy: str = "total",
    min_models: int = 3,
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> list:
    """`joulebench fits`: every fit of a summary (path), written to `outdir`.

    The baseline of method savings is `baseline_method` where the summary has it, else (unset,
    or a published summary without it) the summary's first method, said on stderr.
    """
    summary = read_summary(summary)
    methods = list(summary["method"].dropna().unique())
    if baseline_method not in methods:
        if baseline_method:
            print(f"fits: baseline method {baseline_method!r} not in the summary", file=sys.stderr)
        baseline_method = methods[0] if methods else None
    tables = all_fits(
        summary,
        baseline_method=baseline_method,
        energy=energy,
        min_models=int(min_models),
        invalid_flags=invalid_flags,
        max_energy_cv=max_energy_cv,
    )
    paths = write_fits(tables, outdir)
    for path in paths:
        print(f"fits -> {path}", file=sys.stderr)
    return paths
