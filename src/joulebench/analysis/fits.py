"""Fits and comparisons: what energy grows with, how accuracy pays for it, what methods save.

Plain numpy least squares (scipy is not a dependency), in the score stage's groups
(score.SCORE_GROUP: measured and estimated energies are never fitted together), on the rows
the score compares: factor fits (log10 energy against log10 FLOPs, params or activations per
image, overall and per family, groups under MIN_MODELS skipped); accuracy fits in two forms,
"log-linear" and "saturating" (which becomes log-linear as its exponent c -> 0, so c > 0 with
a better fit says returns diminish even per decade of energy); the accuracy-energy law
(`LAW_FORMS`, compared by k-fold RMSE); method savings against the baseline method; batch
scaling. Formulas and columns: docs/scoring.md#fits-and-comparisons-joulebenchanalysisfits.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from joulebench.analysis.score import (
    DEFAULT_ENERGY,
    DEFAULT_ENERGY_SCOPE,
    DEFAULT_INVALID_FLAGS,
    DEFAULT_MAX_ENERGY_CV,
    ENERGY_COLUMNS,
    SCORE_GROUP,
    in_scope,
    measured_mask,
    pareto_front,
)
from joulebench.analysis.summary import read_summary
from joulebench.config_schema import default
from joulebench.flags import FLAG_HOST_BOUND, has_flag
from joulebench.safe_text import printable
from joulebench.table_io import conform, read_table, write_table
from joulebench.tables import (
    ACCURACY_FITS,
    ACCURACY_LAW,
    BATCH_SCALING,
    FACTOR_FITS,
    FIT_TABLE_COLUMNS,
    METHOD_SAVINGS,
)

MIN_MODELS = default("fits.min_models")  # fewer models than this: no fit
FACTORS = ("flops_per_image", "params", "activations_per_image")
# An energy per image outside 1 nJ - 1 MJ is no measurement (the smallest models on a GPU
# spend tens of uJ, training a large one on a CPU tens of J): fits leave it out and say so,
# so their exponentials of log-energy ratios stay finite.
PLAUSIBLE_ENERGY_J = (1e-9, 1e6)
IMPLAUSIBLE = "energy per image outside {:g} to {:g} J".format(*PLAUSIBLE_ENERGY_J)
ACCURACY_FORMS = ("log-linear", "saturating")
# The tables' columns (declared in tables.py).
FACTOR_FIT_COLUMNS = FACTOR_FITS.dtypes
ACCURACY_FIT_COLUMNS = ACCURACY_FITS.dtypes
SAVINGS_COLUMNS = METHOD_SAVINGS.dtypes
BATCH_COLUMNS = BATCH_SCALING.dtypes


# --- the regressions themselves ------------------------------------------------------------


def _line_fits(z, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares y = a + b * z for each row of z (closed form on centred sums: far
    cheaper than lstsq for two parameters): (SSE, a, b), one of each per row."""
    z = np.atleast_2d(np.asarray(z, float))
    y = np.asarray(y, float)
    z_mean, y_mean = z.mean(axis=1), y.mean()
    zc, yc = z - z_mean[:, None], y - y_mean
    sxx = np.einsum("ij,ij->i", zc, zc)
    b = np.divide(zc @ yc, sxx, out=np.zeros_like(sxx), where=sxx > 0)
    resid = yc - b[:, None] * zc
    return np.einsum("ij,ij->i", resid, resid), y_mean - b * z_mean, b


GRID_POINTS = 121
GOLDEN_STEPS = 60


def _search(design, y, bounds) -> tuple[float, int]:
    """The parameter p in `bounds` whose line fit of y on design(p) has the least SSE: a log
    grid (every point in one array pass), then golden section between the best point's
    neighbours. Returns (p, index of the best grid point)."""
    grid = np.geomspace(*bounds, GRID_POINTS)
    z = design(grid[:, None])
    zc, yc = z - z.mean(axis=1)[:, None], y - y.mean()
    sxx, sxy = np.einsum("ij,ij->i", zc, zc), zc @ yc
    # SSE = Syy - Sxy^2 / Sxx: good enough to rank grid points (the minimum is refined below)
    i = int(np.argmin(yc @ yc - np.divide(sxy * sxy, sxx, out=np.zeros_like(sxx), where=sxx > 0)))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]

    def sse(p):  # _line_fits for one p, without its 2-D bookkeeping (called 62 times)
        zc = design(p)
        zc = zc - zc.mean()
        sxx = zc @ zc
        r = yc - (zc @ yc / sxx if sxx > 0 else 0.0) * zc
        return float(r @ r)

    g = (np.sqrt(5) - 1) / 2
    p1, p2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = sse(p1), sse(p2)
    for _ in range(GOLDEN_STEPS):  # one new evaluation per step
        if f1 < f2:
            hi, p2, f2 = p2, p1, f1
            p1 = hi - g * (hi - lo)
            f1 = sse(p1)
        else:
            lo, p1, f1 = p1, p2, f2
            p2 = lo + g * (hi - lo)
            f2 = sse(p2)
    return 0.5 * (lo + hi), i


def linear_fit(x, y) -> dict:
    """y = intercept + slope * x by least squares: slope, its standard error, intercept, R², n."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    nan = {"slope": np.nan, "slope_se": np.nan, "intercept": np.nan, "r2": np.nan, "n": n}
    if n < 2 or np.ptp(x) == 0:
        return nan
    _, (intercept,), (slope,) = _line_fits(x, y)
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


def fit_saturating(energy_j, top1, c_bounds=(1e-3, 3.0)) -> dict:
    """top1 = A - B * (E/E0)**(-c), E0 the geometric mean energy; A is the accuracy ceiling.

    Variable projection: for each c, A and B are linear least squares; c is found by a log
    grid then golden-section refinement (_search). Needs n >= 4 (three parameters plus one).
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

    def design(c):  # for a fixed c the model is a line in -(E/E0)**(-c): A + B * z
        return -np.exp(-c * u)

    c, _ = _search(design, a, c_bounds)
    (sse_c,), (ceiling,), (amplitude,) = _line_fits(design(c), a)
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


# --- the accuracy-energy law: competing forms, compared -------------------------------------

LAW_FORMS = ("log-linear", "power-law", "double-exponential")
LAW_PARAMS = {"log-linear": 2, "power-law": 3, "double-exponential": 3}
LAW_MIN_MODELS = 6  # three parameters, and k-fold training sets that still exceed them
LAW_FOLDS = 5


def _fit_double_exponential(energy_j, top1, d_bounds=(1e-3, 1e3)) -> dict:
    """top1 = a + b * ln(ln(E / E_s)), E_s < min E: energy grows double-exponentially with
    accuracy, E = E_s * exp(exp((top1 - a) / b)). For a fixed offset d = ln(E_min / E_s) it is
    linear in (a, b); d is found on a log grid, then golden section. As d grows the form
    becomes log-linear, so the log-linear form is its limit (as for the power law)."""
    u, y = np.log(np.asarray(energy_j, float)), np.asarray(top1, float)
    u0 = float(u.min())

    def design(d):
        return np.log(u - u0 + d)

    d, i = _search(design, y, d_bounds)
    (rss,), (a,), (b,) = _line_fits(design(d), y)
    note = f"offset at the edge of its search range {d_bounds}" if i in (0, GRID_POINTS - 1) else ""
    return {"a": a, "b": b, "c": float(np.exp(u0 - d)), "rss": rss, "note": note}


def law_fit(form: str, energy_j, top1) -> dict:
    """One form fitted by least squares on top-1: coefficients a, b, c (meaning per form, in
    tables.ACCURACY_LAW), the residual sum of squares, and a predict(E) function."""
    e, y = np.asarray(energy_j, float), np.asarray(top1, float)
    if form == "log-linear":
        f = linear_fit(np.log10(e), y)
        a, b, c = f["intercept"], f["slope"], np.nan

        def predict(x):
            return a + b * np.log10(np.asarray(x, float))

        note = ""
    elif form == "power-law":
        f = fit_saturating(e, y)
        a, b, c, e0 = f["ceiling_pct"], f["amplitude_pct"], f["exponent"], f["energy_scale_j"]

        def predict(x):
            return a - b * (np.asarray(x, float) / e0) ** (-c)

        note = f["note"]
    elif form == "double-exponential":
        f = _fit_double_exponential(e, y)
        a, b, c = f["a"], f["b"], f["c"]

        def predict(x):
            x = np.asarray(x, float)
            with np.errstate(invalid="ignore", divide="ignore"):
                return a + b * np.log(np.log(x / c))

        note = f["note"]
    else:
        raise ValueError(f"unknown form {form!r}; forms: {LAW_FORMS}")
    resid = y - predict(e)
    return {"a": a, "b": b, "c": c, "rss": float(resid @ resid), "predict": predict, "note": note}


def _folds(n: int, k: int) -> np.ndarray:
    """Fold of each point, interleaved along the energy order so each fold spans the range."""
    return np.arange(n) % k


def kfold_rmse(form: str, energy_j, top1, k: int = LAW_FOLDS) -> float:
    """Root mean square held-out error of top-1: fit on k-1 folds, predict the one left out."""
    e, y = np.asarray(energy_j, float), np.asarray(top1, float)
    order = np.argsort(e, kind="stable")
    e, y = e[order], y[order]
    fold = _folds(len(e), k)
    errors = []
    for j in range(k):
        train, test = fold != j, fold == j
        if not test.any():
            continue
        pred = law_fit(form, e[train], y[train])["predict"](e[test])
        errors.append(y[test] - pred)
    err = np.concatenate(errors)
    return float(np.sqrt(np.mean(err**2))) if np.isfinite(err).all() else np.inf


def compare_laws(energy_j, top1, forms: Sequence[str] = LAW_FORMS) -> list[dict]:
    """Every form on one set of models: AIC, BIC (Gaussian errors; parameters + the error
    variance), k-fold held-out RMSE, and which form each criterion picks."""
    e, y = np.asarray(energy_j, float), np.asarray(top1, float)
    n = len(e)
    rows = []
    for form in forms:
        fit = law_fit(form, e, y)
        k = LAW_PARAMS[form] + 1
        ll_term = n * np.log(max(fit["rss"], 1e-300) / n)
        rows.append(
            {
                "form": form,
                "n": n,
                "params": LAW_PARAMS[form],
                "coef_a": fit["a"],
                "coef_b": fit["b"],
                "coef_c": fit["c"],
                "rmse_pct": float(np.sqrt(fit["rss"] / n)),
                "aic": ll_term + 2 * k,
                "bic": ll_term + k * np.log(n),
                "cv_rmse_pct": kfold_rmse(form, e, y, min(LAW_FOLDS, n)),
                "note": fit["note"],
            }
        )
    for crit, col in (
        ("aic", "best_by_aic"),
        ("bic", "best_by_bic"),
        ("cv_rmse_pct", "best_by_cv"),
    ):
        best = min(rows, key=lambda r: r[crit])[crit]
        for r in rows:
            r[col] = r[crit] == best
    best_bic = min(r["bic"] for r in rows)
    for r in rows:
        r["delta_bic"] = r["bic"] - best_bic
    return rows


def law_predict(form: str, a: float, b: float, c: float, energy_j, fitted_energy_j) -> np.ndarray:
    """Top-1 a fitted form predicts at `energy_j`, from the table's coefficients;
    `fitted_energy_j`: the energies it was fitted on (the power law's E0 is their geometric
    mean)."""
    x = np.asarray(energy_j, float)
    if form == "log-linear":
        return a + b * np.log10(x)
    if form == "power-law":
        e0 = float(np.exp(np.mean(np.log(np.asarray(fitted_energy_j, float)))))
        return a - b * (x / e0) ** (-c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return a + b * np.log(np.log(x / c))


# --- tables over a summary -------------------------------------------------------------------


def _energy(df: pd.DataFrame, energy: str) -> pd.Series:
    return pd.to_numeric(df[ENERGY_COLUMNS[energy]], errors="coerce").astype(float)


def fitted_mask(
    df: pd.DataFrame,
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> pd.Series:
    """Rows a fit uses: the score's (measured_mask) with an energy in PLAUSIBLE_ENERGY_J."""
    plausible = _energy(df, energy).between(*PLAUSIBLE_ENERGY_J)
    return measured_mask(df, energy, invalid_flags, max_energy_cv) & plausible


def _implausible(df: pd.DataFrame, energy: str) -> np.ndarray:
    """Rows with status ok and an energy, outside PLAUSIBLE_ENERGY_J."""
    e = _energy(df, energy)
    ok = (df["status"] == "ok").fillna(False).to_numpy(bool) & e.notna().to_numpy()
    return ok & ~e.between(*PLAUSIBLE_ENERGY_J).to_numpy(bool)


def implausible_note(n: int) -> str:
    """Why n rows of a group are not in its fits ('' for none)."""
    return f"{n} row{'' if n == 1 else 's'} left out: {IMPLAUSIBLE}" if n else ""


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _groups(df: pd.DataFrame, mask: pd.Series, columns: Sequence[str] = ()):
    """(score group's key, its rows of `mask`, with `columns` only: grouping a summary's
    hundred columns would cost more than every fit of it)."""
    keep = [*SCORE_GROUP, *(c for c in columns if c not in SCORE_GROUP)]
    for key, g in df.loc[mask, keep].groupby(list(SCORE_GROUP), dropna=False, sort=True):
        yield dict(zip(SCORE_GROUP, key, strict=True)), g


def _accuracy_subsets(summary, energy, invalid_flags, max_energy_cv):
    """(score group, "all" | "front", energies, top-1s, note) of the models whose energy can
    be compared and that have a top-1: the data every accuracy-energy fit is made on; the
    note says how many were left out for an implausible energy."""
    e_all = _energy(summary, energy)
    a_all = pd.to_numeric(summary["top1"], errors="coerce").astype(float)
    mask = measured_mask(summary, energy, invalid_flags, max_energy_cv) & np.isfinite(a_all)
    for key, g in _groups(summary, mask):
        e, a = e_all[g.index].to_numpy(), a_all[g.index].to_numpy()
        plausible = (e >= PLAUSIBLE_ENERGY_J[0]) & (e <= PLAUSIBLE_ENERGY_J[1])
        e, a, note = e[plausible], a[plausible], implausible_note(int((~plausible).sum()))
        front = pareto_front(a, e)
        yield key, "all", e, a, note
        yield key, "front", e[front], a[front], note


def _flags(rows: pd.DataFrame) -> pd.Series:
    """The rows' flags as text ("" where none, or no flags column: a published summary)."""
    if "flags" not in rows:
        return pd.Series("", index=rows.index)
    return rows["flags"].astype("string").fillna("")


def factor_fits(
    summary: pd.DataFrame,
    *,
    energy: str = "total",
    factors: Sequence[str] = FACTORS,
    min_models: int = MIN_MODELS,
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> pd.DataFrame:
    """Log-log fits of energy per image on each factor, overall ("all") and per family."""
    rows = []
    e_all = _energy(summary, energy)
    mask = fitted_mask(summary, energy, invalid_flags, max_energy_cv)
    flagged = ["flags"] if "flags" in summary else []
    for key, g in _groups(summary, mask, [*factors, "family", *flagged]):
        e = e_all[g.index].to_numpy()
        fam = g["family"].astype("string").fillna("").to_numpy(object)
        host = np.array([has_flag(f, FLAG_HOST_BOUND) for f in _flags(g)], dtype=bool)
        for factor in factors:
            x = pd.to_numeric(g[factor], errors="coerce").astype(float).to_numpy()
            ok = np.isfinite(x) & (x > 0)
            parts = [("all", ok)]
            parts += [(f, ok & (fam == f)) for f in sorted(set(fam[ok])) if f]
            for family, sel in parts:
                if int(sel.sum()) < min_models:
                    continue
                f = fit_loglog(x[sel], e[sel])
                rows.append(
                    {
                        **key,
                        "energy_kind": energy,
                        "factor": factor,
                        "family": family,
                        "n": f["n"],
                        "n_host_bound": int((host & sel).sum()),
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
    for key, subset, e, a, left_out in _accuracy_subsets(
        summary, energy, invalid_flags, max_energy_cv
    ):
        for form in ACCURACY_FORMS:
            fit = fit_log_linear if form == "log-linear" else fit_saturating
            res = fit(e, a) if len(e) >= 2 else {"n": len(e)}
            note = res.pop("note", "") or ("" if len(e) >= 2 else "fewer than 2 models")
            note = _join(note, left_out)
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


def accuracy_law(
    summary: pd.DataFrame,
    *,
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> pd.DataFrame:
    """The accuracy-energy law: every form on every scored model and on the front alone, per
    score group, compared by AIC, BIC and k-fold held-out error (docs/scoring.md)."""
    rows = []
    for key, subset, e, a, left_out in _accuracy_subsets(
        summary, energy, invalid_flags, max_energy_cv
    ):
        base = {**key, "energy_kind": energy, "subset": subset}
        n = len(e)
        if n < LAW_MIN_MODELS or np.ptp(np.log(e)) == 0:
            note = f"{n} model{'' if n == 1 else 's'}: too few to compare forms "
            note = _join(note + f"(need {LAW_MIN_MODELS})", left_out)
            rows += [{**base, "form": f, "n": n, "note": note} for f in LAW_FORMS]
            continue
        rows += [{**base, **r, "note": _join(r["note"], left_out)} for r in compare_laws(e, a)]
    frame = pd.DataFrame(rows).reindex(columns=list(ACCURACY_LAW.dtypes))
    return conform(frame, ACCURACY_LAW.dtypes)


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
    df["_e"] = _energy(df, energy).where(fitted_mask(df, energy, invalid_flags, max_energy_cv))
    df["_implausible"] = _implausible(df, energy)
    base = df[df["method"] == baseline_method].drop_duplicates(key)
    base = base[key + ["batch_size", "_e", "energy_is_estimate", "status", "_implausible"]]
    base = base.rename(
        columns={
            "batch_size": "baseline_batch_size",
            "_e": "_eb",
            "energy_is_estimate": "_est_b",
            "status": "_status_b",
            "_implausible": "_implausible_b",
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
    m["note"] = _saving_notes(m, baseline_method, mixed)
    return conform(m.reindex(columns=list(SAVINGS_COLUMNS)), SAVINGS_COLUMNS)


def _saving_notes(m: pd.DataFrame, baseline: str, mixed: pd.Series) -> list[str]:
    """saving_note of every row, worded only where there is something to say (a study's
    rows are mostly plain savings: '' without a Python call each)."""
    bs, bbs = m["batch_size"], m["baseline_batch_size"]
    differ = (bs.notna() & bbs.notna() & (bs != bbs)).fillna(False).astype(bool)
    known = m["_status_b"].notna() & m["_e"].notna() & m["_eb"].notna()
    odd = (~known | mixed | differ).to_numpy()
    notes = np.full(len(m), "", dtype=object)
    cols = ["method", "status", "_status_b", "_e", "_eb", "batch_size", "baseline_batch_size"]
    cols += ["_implausible", "_implausible_b"]
    records = m.loc[odd, cols].to_dict("records")
    notes[odd] = [saving_note(r, baseline, mx) for r, mx in zip(records, mixed[odd], strict=True)]
    return list(notes)


def saving_note(r: dict, baseline: str, mixed: bool) -> str:
    if pd.isna(r["_status_b"]):
        return f"no {baseline} row for this model and batch size"
    if mixed:
        return "one energy measured, the other estimated: not compared"
    if pd.isna(r["_e"]):
        if r["_implausible"]:
            return f"{r['method']}: {IMPLAUSIBLE}"
        return f"{r['method']}: status {r['status']}, no comparable energy"
    if pd.isna(r["_eb"]):
        if r["_implausible_b"]:  # a baseline row exists here (checked first)
            return f"{baseline}: {IMPLAUSIBLE}"
        return f"{baseline}: status {r['_status_b']}, no comparable energy"
    if (
        pd.notna(r["batch_size"])
        and pd.notna(r["baseline_batch_size"])
        and (r["batch_size"] != r["baseline_batch_size"])
    ):
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
    df = summary[fitted_mask(summary, energy, invalid_flags, max_energy_cv)].copy()
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
    min_models: int = MIN_MODELS,
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
) -> dict[str, pd.DataFrame]:
    """Every table of this module, by the name `write_fits` gives its file."""
    kw = {"energy": energy, "invalid_flags": invalid_flags, "max_energy_cv": max_energy_cv}
    return {
        "factor_fits": factor_fits(summary, min_models=min_models, **kw),
        "accuracy_fits": accuracy_fits(summary, **kw),
        "accuracy_law": accuracy_law(summary, **kw),
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


# What a method that changes nothing runs (a baseline where none is named): its precision,
# and each other column of the method empty or this value.
PLAIN_PRECISION = "fp32"
PLAIN_METHOD = {
    "runtime": "pytorch",
    "channels_last": False,
    "compile": "",
    "cuda_graphs": False,
    "power_limit_requested_w": None,
    "power_limit_requested_fraction": None,
    "sm_clock_requested_mhz": None,
    "sm_clock_requested_preset": None,
}


def pick_baseline(summary: pd.DataFrame, wanted: str | None) -> str | None:
    """The method savings are computed against: `wanted` where the summary has it; else its
    plainest method (every row fp32 in eager PyTorch, nothing else asked), the first by name;
    else one named fp32; else its first. Never one picked by its name's order alone where a
    plain one exists (bf16 sorts before fp32, and read every saving against bf16)."""
    methods = sorted(summary["method"].dropna().unique())
    if wanted in methods or not methods:
        return wanted if wanted in methods else None
    plain = summary["precision"].astype(object).eq(PLAIN_PRECISION)
    for column, value in PLAIN_METHOD.items():
        if column in summary.columns:
            cell = summary[column].astype(object)
            plain &= cell.isna() | (cell.eq(value) if value is not None else False)
    unplain = set(summary.loc[~plain.astype(bool), "method"].dropna())
    named = PLAIN_PRECISION if PLAIN_PRECISION in methods else methods[0]  # no columns say
    return next((m for m in methods if m not in unplain), named)


def run_fits(
    summary,
    outdir,
    *,
    baseline_method: str | None = None,
    energy: str = DEFAULT_ENERGY,
    min_models: int = MIN_MODELS,
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
    energy_scope: str = DEFAULT_ENERGY_SCOPE,
) -> list:
    """`joulebench fits`: every fit of a summary (path), written to `outdir`.

    The baseline of method savings is `baseline_method` where the summary has it, else (unset,
    or a published summary without it) the summary's plainest method (`pick_baseline`), said
    on stderr. The energies fitted are the headline the score grades (`energy_scope`: the
    device's, or the whole node's), so a fit drawn on a figure fits the points beside it.
    """
    summary = in_scope(read_summary(summary), energy_scope, energy)
    picked = pick_baseline(summary, baseline_method)
    if picked != baseline_method:
        said = f"baseline method {baseline_method!r} not in the summary" if baseline_method else ""
        print(f"fits: {said}{'; ' if said else ''}savings against {picked!r}", file=sys.stderr)
    baseline_method = picked
    implausible = _implausible(summary, energy)
    if implausible.any():
        first = summary[implausible].iloc[0]
        example = (
            f"{first['model']} {first['method']} batch {first['batch_size_requested']} on "
            f"{first['device_label']}: {_energy(summary, energy)[implausible].iloc[0]:g} J"
        )
        note = implausible_note(int(implausible.sum()))
        print(f"fits: {note}, e.g. {printable(example)}", file=sys.stderr)
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
