"""The order a study measures its models in, so that what users decide settles first (issue 42,
`order: informative`).

Users pick models from the front of accuracy against energy; most models are far from it.
So the study measures, first, a seed slice spread over sizes, accuracies and families (what
any prediction needs), then the models most likely to be on the front: each model's energy is
predicted from what the catalog says of it (log-linear in its size, calibrated on the rows
measured so far), and a model's chance to be on the front is the chance that it spends less
than every more accurate model. A wide prediction raises a model's turn a little (measuring it
says the most). The ranking is made again whenever the study is read (each run, each resume),
from the rows measured by then. A budget (`budget: {gpu_h: ...}`) measures the ranking's head;
the rest is predicted. docs/predictions.md#the-order-of-measuring.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

SEED_SHARE = 0.05  # the seed slice: this share of the models...
SEED_MIN = 8  # ...and at least this many
PROXY_SIGMA = 0.8  # how far (log) a size-only guess may be off before any row is measured
FIT_MIN = 5  # measured models before the guess is fitted to them
WIDTH_WEIGHT = 0.1  # how much a wide prediction adds to a model's turn (its chance: 0-1)
RIDGE = 1.0  # keeps correlated sizes (MACs, parameters) from trading wild coefficients
FAMILY_PRIOR = 2.0  # a family's offset counts as if this many more members showed none
TAIL_QUANTILE, TAIL_Z = 0.95, 1.0  # the guess's spread: its 95th percentile miss, as 1 sigma
_FAMILY = re.compile(r"[a-z]+")


def family_of(model: str) -> str:
    """A model's family from its name where the catalog gives none: its leading letters."""
    found = _FAMILY.match(model.lower())
    return found.group() if found else model


def features(models, reference: pd.DataFrame, catalog: pd.DataFrame | None = None) -> pd.DataFrame:
    """model, family, log_size (log of MACs where the catalog has them, else of parameters x
    pixels from the reference table) and top1 (the reference table's), per model."""
    ref = reference.drop_duplicates("model").set_index("model")
    out = pd.DataFrame({"model": list(models)})
    out["family"] = [family_of(m) for m in out["model"]]
    params = _number(out["model"].map(ref["param_count"])) * 1e6
    pixels = _number(out["model"].map(ref["img_size"])) ** 2
    out["log_size"] = _log(params * pixels)
    out["top1"] = _number(out["model"].map(ref["top1"]))
    out["log_params"] = _log(params)
    out["log_activations"] = np.nan
    if catalog is not None and len(catalog):
        cat = catalog.drop_duplicates("model").set_index("model")
        macs = _number(out["model"].map(cat["macs_per_image"]))
        acts = _number(out["model"].map(cat["activations_per_image"]))
        out["log_size"] = _log(macs).fillna(out["log_size"])
        out["log_activations"] = _log(acts)
        out["family"] = out["model"].map(cat["family"]).fillna(out["family"])
    return out


def _log(values: pd.Series) -> pd.Series:
    """The log where positive, NaN elsewhere (an unknown size is no size)."""
    v = values.astype(float)
    return np.log(v.where(v > 0))


def _number(values: pd.Series) -> pd.Series:
    """Numbers as timm's tables write them too ("1,014.45"); NaN where none."""
    return pd.to_numeric(values.astype("string").str.replace(",", ""), errors="coerce")


def seed_slice(feats: pd.DataFrame, k: int, taken=()) -> list[str]:
    """`k` models spread over sizes, accuracies and families: each next one the farthest (in
    standardised size and top-1) from those taken, a family not yet taken first."""
    pool = feats.dropna(subset=["log_size"]).reset_index(drop=True)
    if pool.empty:
        return []
    x = np.column_stack([_z(pool["log_size"]), _z(pool["top1"].fillna(pool["top1"].median()))])
    chosen = [i for i, m in enumerate(pool["model"]) if m in set(taken)]
    if not chosen:
        chosen = [int(np.argmin(np.abs(x[:, 0])))]  # the median size
    families = set(pool.loc[chosen, "family"])
    while len(chosen) < min(k + len(taken), len(pool)):
        dist = np.min(np.linalg.norm(x[:, None, :] - x[None, chosen, :], axis=2), axis=1)
        new_family = ~pool["family"].isin(families).to_numpy()
        dist = dist + np.where(new_family, dist.max() + 1.0, 0.0)
        dist[chosen] = -1.0
        best = int(np.argmax(dist))
        chosen.append(best)
        families.add(pool.loc[best, "family"])
    return [pool.loc[i, "model"] for i in chosen if pool.loc[i, "model"] not in set(taken)]


def _z(values: pd.Series) -> np.ndarray:
    v = values.to_numpy(float)
    spread = np.nanstd(v)
    return (v - np.nanmean(v)) / (spread if spread > 0 else 1.0)


def guess(feats: pd.DataFrame, measured: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """(log energy, its spread) of every model: a line in log_size fitted to the measured
    models' log energies (their own for them, spread 0), else the size itself with
    PROXY_SIGMA (only the ranking matters before anything is measured)."""
    x = feats["log_size"].to_numpy(float)
    known = feats["model"].map(measured).to_numpy(float)
    ok = np.isfinite(known) & np.isfinite(x)
    if ok.sum() >= FIT_MIN:
        mu = _line(feats, known, ok)
        mu = mu + _family_offsets(feats["family"], known - mu, ok)
        resid = np.abs(known[ok] - mu[ok])
        # the tails, not the middle: a model faster than its kind is what the front is made of
        sigma = max(float(np.quantile(resid, TAIL_QUANTILE)) / TAIL_Z, 0.05)
    else:
        mu, sigma = x.copy(), PROXY_SIGMA
    sigmas = np.full(len(x), sigma)
    mu[ok], sigmas[ok] = known[ok], 0.0
    return mu, sigmas


def _line(feats: pd.DataFrame, known: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Least squares (a little ridge) of the measured log energies on the logs of size,
    parameters and activations, each where known (a missing one: its measured mean)."""
    cols = [c for c in ("log_size", "log_params", "log_activations") if feats[c].notna().any()]
    x = feats[cols].to_numpy(float)
    x = np.where(np.isfinite(x), x, np.nanmean(x[ok], axis=0))
    x = np.column_stack([x, np.ones(len(x))])
    a = x[ok]
    ridge = RIDGE * np.eye(a.shape[1])
    ridge[-1, -1] = 0.0
    coef = np.linalg.solve(a.T @ a + ridge, a.T @ known[ok])
    return x @ coef


def _family_offsets(family: pd.Series, resid: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Each model's family's mean residual, shrunk towards 0 by FAMILY_PRIOR measured
    members' worth: a family of efficient (or slow) models says so once a few are measured."""
    frame = pd.DataFrame({"family": family.to_numpy(), "r": np.where(ok, resid, np.nan)})
    stats = frame.groupby("family")["r"].agg(["sum", "count"])
    shrunk = stats["sum"] / (stats["count"] + FAMILY_PRIOR)
    return frame["family"].map(shrunk).fillna(0.0).to_numpy(float)


def front_chance(top1: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Each model's chance to be on the front: that it spends less than the least energy of
    every more accurate model (their guesses as they stand; 0 without a top-1)."""
    out = np.zeros(len(top1))
    order = np.argsort(-np.nan_to_num(top1, nan=-np.inf), kind="stable")
    best_above = math.inf
    for i in order:
        if not np.isfinite(top1[i]) or not np.isfinite(mu[i]):
            continue
        z = (
            (best_above - mu[i]) / sigma[i]
            if sigma[i] > 0
            else math.copysign(math.inf, best_above - mu[i])
        )
        out[i] = 0.5 * math.erfc(-z / math.sqrt(2)) if np.isfinite(z) else float(z > 0)
        best_above = min(best_above, mu[i])
    return out


def informative_order(feats: pd.DataFrame, measured: dict[str, float]) -> list[str]:
    """The models not measured yet, in the order they are best measured: the seed slice
    (while fewer than it are measured), then by their chance to be on the front, a wide
    guess a little ahead; models the catalog cannot place last."""
    done = [m for m in feats["model"] if m in measured]
    k = max(SEED_MIN, math.ceil(SEED_SHARE * len(feats))) - len(done)
    seeds = seed_slice(feats, k, done) if k > 0 else []
    mu, sigma = guess(feats, measured)
    chance = front_chance(feats["top1"].to_numpy(float), mu, sigma)
    width = sigma / (sigma.max() if sigma.max() > 0 else 1.0)
    value = pd.Series(chance + WIDTH_WEIGHT * width, index=feats["model"])
    rest = value.drop([*done, *seeds], errors="ignore").sort_values(ascending=False, kind="stable")
    return seeds + list(rest.index)
