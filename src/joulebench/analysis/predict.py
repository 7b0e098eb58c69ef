"""Predictions, with checked intervals, for the models a study did not measure (issue 42).

A model's energy and time per image are largely set by what the catalog knows of it (MACs,
parameters, activations, input size) and by its kind (a depthwise-conv net spends more per
MAC than a ResNet). For each group of measured rows (phase, device, method, batch size) the
point prediction is a ridge line in the logs of those sizes, fitted to the group's measured
models, plus the measured models' residuals smoothed over kin: the same architecture at the
same input size (another weight of it: nearly its twin), the same stem (resnet50d beside
resnet26), the same timm module (its family).

The interval is CV+ (Barber et al. 2021, "Predictive inference with the jackknife+"): the
measured models are split in FOLDS folds; each fold's residuals are taken from the fit made
without it, and a model's interval is the quantiles of the held-out fits' predictions of it
minus and plus those residuals. It is distribution-free and uses every measured row to fit
and to calibrate (split conformal would fit on half). Residuals are pooled by the model's
closest kin among the measured (Mondrian: a twin's residual says nothing of a stranger's),
a pool of fewer than MIN_POOL borrowing the next looser one. Each group checks itself: the
coverage of its own intervals over the measured models by cross-validation is a column.
Everything in logs: intervals are factors (x/÷). docs/predictions.md.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from joulebench.safe_text import quantity
from joulebench.table_io import conform
from joulebench.tables import PREDICTED

PI_LEVEL = 0.90  # the intervals' stated level
PI_METHOD = "cv+ (10 folds) over a ridge line in log sizes and kin-smoothed residuals"
FOLDS = 10
MIN_MEASURED = 10  # models measured in a group before it predicts the others (CV+ at 90 %
# needs 9 for a finite interval; with few, the intervals are wide and say so)
MIN_POOL = 30  # held-out residuals a kin pool needs, else it borrows the next looser pool's
KINS = ("arch", "stem", "family", "none")  # closest kin measured, closest first
KIN_WEIGHT = {"arch": 30.0, "stem": 3.0, "family": 1.0}  # a measured kin's say in a residual
PRIOR = 1.0  # the residual shrinks towards the line as if this many kin said 0
RIDGE = 1.0  # keeps correlated sizes (MACs, parameters) from trading wild coefficients
NEAR = ("log_macs", "log_activations")  # the sizes whose nearness weighs a kin's residual
BANDWIDTH = 0.6  # in standard deviations of those sizes
NAME_WEIGHT, NAME_POWER = 3.0, 3.0  # a likeness of names (Jaccard of tokens, cubed) as kin
TAU = 0.25  # the interval's scale: sqrt(TAU + 1 / (PRIOR + kin weight)); TAU: evidence's floor
SIZES = ("log_macs", "log_params", "log_activations", "log_pixels")
GROUP = ("phase", "device_label", "method", "batch_size_requested", "energy_is_estimate")
_STEM = re.compile(r"[a-z]+")


def features(catalog: pd.DataFrame) -> pd.DataFrame:
    """One row per catalog model (ok rows): its kin keys and the logs of its sizes."""
    cat = catalog.drop_duplicates("model")
    if "status" in cat:
        cat = cat[cat["status"].fillna("ok") == "ok"]
    arch = cat.get("architecture", pd.Series(dtype="string")).reindex(cat.index)
    arch = arch.fillna(cat["model"].str.split(".").str[0]).astype(str)
    pixels = _num(cat, "input_height") * _num(cat, "input_width")
    out = pd.DataFrame({"model": cat["model"].astype(str).to_numpy()})
    out["arch"] = (arch + "@" + pixels.fillna(0).astype("int64").astype(str)).to_numpy()
    out["stem"] = [_stem(a) for a in arch]
    family = cat.get("family", pd.Series(dtype="string")).reindex(cat.index)
    out["family"] = family.fillna("").astype(str).where(lambda f: f != "", out["stem"].values)
    out["family"] = out["family"].to_numpy()
    for name, values in (
        ("log_macs", _num(cat, "macs_per_image")),
        ("log_params", _num(cat, "params")),
        ("log_activations", _num(cat, "activations_per_image")),
        ("log_pixels", pixels),
    ):
        out[name] = np.log(values.where(values > 0)).to_numpy(float)
    return out


def _num(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame[column], errors="coerce").astype(float)


def _stem(arch: str) -> str:
    """resnet50d -> resnet, convnext_tiny -> convnext: the leading letters of the name."""
    found = _STEM.match(arch.lower())
    return found.group() if found else arch


class Kinship:
    """How much each model's measured residual says of each other's: its kinship (the same
    architecture and input size, stem, family; a likeness of names) times their nearness in
    size; and the closest kin level between them (an index into KINS). Made once per catalog."""

    def __init__(self, feats: pd.DataFrame):
        x = _filled(feats[list(NEAR)].to_numpy(float), np.ones(len(feats), bool))
        spread = x.std(axis=0)
        x = x / np.where(spread > 0, spread, 1.0)
        near = np.exp(-((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2) / (2 * BANDWIDTH**2))
        weight = NAME_WEIGHT * _name_likeness(feats["arch"]) ** NAME_POWER
        self.level = np.full((len(x), len(x)), len(KINS) - 1, dtype=np.int8)
        for i, level in reversed(list(enumerate(KINS[:-1]))):  # closer kin overwrite
            keys = feats[level].to_numpy()
            same = keys[:, None] == keys[None, :]
            weight = weight + KIN_WEIGHT[level] * same
            self.level[same] = i
        self.weight = weight * near
        np.fill_diagonal(self.weight, 0.0)  # a model says nothing of itself
        np.fill_diagonal(self.level, len(KINS) - 1)


def _filled(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """A missing size as the mean of `rows`' known ones; a size no row knows as 0 (a column
    the catalog lacks then says nothing, rather than NaN in every prediction)."""
    known = np.isfinite(x) & rows[:, None]
    count = known.sum(axis=0)
    mean = np.where(count > 0, np.where(known, x, 0.0).sum(axis=0) / np.maximum(count, 1), 0.0)
    return np.where(np.isfinite(x), x, mean)


def _name_likeness(arch: pd.Series) -> np.ndarray:
    """Jaccard likeness of the architectures' name tokens (vit, base, patch, 16, 224)."""
    tokens = [frozenset(re.findall(r"[a-z]+|\d+", a.split("@")[0].lower())) for a in arch]
    vocab = {t: i for i, t in enumerate(sorted(set().union(*tokens)))}
    onehot = np.zeros((len(tokens), len(vocab)))
    for i, ts in enumerate(tokens):
        onehot[i, [vocab[t] for t in ts]] = 1.0
    both = onehot @ onehot.T
    sizes = onehot.sum(axis=1)
    either = sizes[:, None] + sizes[None, :] - both
    return np.where(either > 0, both / np.maximum(either, 1), 0.0)


class Fit:
    """The point prediction fitted to some measured models (`train`): a ridge line in the
    sizes plus the measured residuals smoothed over kin (shrunk by PRIOR), and the scale of
    its interval (narrower where more kin weigh in)."""

    def __init__(self, feats: pd.DataFrame, kinship: Kinship, y: np.ndarray, train: np.ndarray):
        x = _design(feats, train)
        a = x[train]
        ridge = RIDGE * np.eye(a.shape[1])
        ridge[-1, -1] = 0.0  # the intercept is not shrunk
        self.line = x @ np.linalg.solve(a.T @ a + ridge, a.T @ y[train])
        weight = kinship.weight[:, train]
        evidence = weight.sum(axis=1)
        self.correction = weight @ (y[train] - self.line[train]) / (PRIOR + evidence)
        kin = kinship.level[:, train].min(axis=1) if train.any() else len(KINS) - 1
        self.kin = np.asarray(KINS, dtype=object)[kin]
        self.scale = np.sqrt(TAU + 1.0 / (PRIOR + evidence))

    def predict(self) -> np.ndarray:
        return self.line + self.correction


def _design(feats: pd.DataFrame, train: np.ndarray) -> np.ndarray:
    """The sizes standardised on the training models (a missing one: their mean), the
    squares and product of MACs and activations (a sum of their costs, not a product), 1."""
    x = _filled(feats[list(SIZES)].to_numpy(float), train)
    spread = x[train].std(axis=0)
    x = (x - x[train].mean(axis=0)) / np.where(spread > 0, spread, 1.0)
    m, a = x[:, 0], x[:, 2]
    return np.column_stack([x, m * m, a * a, m * a, np.ones(len(x))])


def cv_plus(
    feats: pd.DataFrame,
    kinship: Kinship,
    y: np.ndarray,
    measured: np.ndarray,
    level: float = PI_LEVEL,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Point prediction, interval (CV+) and closest kin of every model from the measured
    ones (`measured`: a boolean mask, y finite there)."""
    idx = np.flatnonzero(measured)
    folds = np.random.default_rng(seed).permutation(len(idx)) % min(FOLDS, len(idx))
    preds, scores, pools = [], [], []
    for k in range(folds.max() + 1):
        held = idx[folds == k]
        train = measured.copy()
        train[held] = False
        fit = Fit(feats, kinship, y, train)
        p = fit.predict()
        preds.append(np.broadcast_to(p[:, None], (len(p), len(held))))
        scores.append(np.abs(y[held] - p[held]) / fit.scale[held])
        pools.append(fit.kin[held])
    mu = np.concatenate(preds, axis=1)  # model x held-out model: the fit without its fold
    r, pool = np.concatenate(scores), np.concatenate(pools)
    full = Fit(feats, kinship, y, measured)
    lo, hi = _intervals(mu, r, pool, full.kin, full.scale, level)
    point = np.clip(full.predict(), lo, hi)
    return {"point": point, "low": lo, "high": hi, "kin": full.kin}


def _intervals(mu, r, pool, kin, scale, level) -> tuple[np.ndarray, np.ndarray]:
    """CV+ ends for each model from the held-out residuals of its kin pool (or looser)."""
    lo, hi = np.full(len(kin), np.nan), np.full(len(kin), np.nan)
    for i, mine in enumerate(KINS):
        rows = kin == mine
        if not rows.any():
            continue
        use = np.isin(pool, KINS[i:]) if (pool == mine).sum() < MIN_POOL else pool == mine
        if (pool == mine).sum() < MIN_POOL and use.sum() < MIN_POOL:
            use = np.ones(len(pool), bool)  # too few of any kin: every residual
        n = int(use.sum())
        q = min(math.ceil((1 - level) * (n + 1)) / n, 1.0)  # the finite-sample quantile
        spread = scale[rows][:, None] * r[use][None, :]
        lo[rows] = np.quantile(mu[rows][:, use] - spread, q, axis=1, method="lower")
        hi[rows] = np.quantile(mu[rows][:, use] + spread, 1 - q, axis=1, method="higher")
    return lo, hi


def cv_coverage(
    feats: pd.DataFrame, kinship: Kinship, y: np.ndarray, measured: np.ndarray, level: float
) -> float:
    """The share of the measured models inside the interval made without them (5-fold):
    the group's own check of its stated level."""
    idx = np.flatnonzero(measured)
    folds = np.random.default_rng(1).permutation(len(idx)) % 5
    inside = []
    for k in range(5):
        held = idx[folds == k]
        train = measured.copy()
        train[held] = False
        if train.sum() < MIN_MEASURED // 2:
            return math.nan
        got = cv_plus(feats, kinship, y, train, level, seed=k)
        inside.append((got["low"][held] <= y[held]) & (y[held] <= got["high"][held]))
    return float(np.concatenate(inside).mean())


def predict(rows: pd.DataFrame, catalog: pd.DataFrame, level: float = PI_LEVEL) -> pd.DataFrame:
    """`joulebench predict`: for each group of `rows` (GROUP: a profile or summary table; its
    `ok` rows with a positive energy are the measured ones), one row per catalog model not
    measured there: its predicted energy and throughput with their intervals at `level`, or
    empty values and the reason. Columns: tables.PREDICTED."""
    if not 0.5 <= level < 1:
        raise ValueError(f"level {level!r}: an interval's level is between 0.5 and 1")
    feats = features(catalog)
    kinship = Kinship(feats) if len(feats) else None
    ok = _measured_rows(rows)
    parts = [
        _group(dict(zip(GROUP, key, strict=True)), group, feats, kinship, level)
        for key, group in ok.groupby(list(GROUP), dropna=False, sort=True)
    ]
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return conform(frame.reindex(columns=PREDICTED.names), PREDICTED.dtypes)


def _measured_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows that measured: ok, a positive finite energy; a missing key column empty."""
    ok = rows[(rows.get("status") == "ok")].copy()
    energy = pd.to_numeric(ok["energy_per_image_j"], errors="coerce")
    ok = ok[np.isfinite(energy) & (energy > 0)]
    for column in GROUP:
        if column not in ok:
            ok[column] = False if column == "energy_is_estimate" else ""
    ok["energy_is_estimate"] = ok["energy_is_estimate"].fillna(False).astype(bool)
    return ok


def _group(key: dict, group: pd.DataFrame, feats, kinship, level: float) -> pd.DataFrame:
    """The predicted rows of one group (see predict)."""
    logs = (
        group.assign(
            e=np.log(pd.to_numeric(group["energy_per_image_j"], errors="coerce")),
            t=-np.log(pd.to_numeric(group.get("throughput_img_s"), errors="coerce")),
        )
        .groupby("model")[["e", "t"]]
        .median()
    )  # a model measured on several boards: its median
    out = feats.loc[~feats["model"].isin(logs.index), ["model"]].reset_index(drop=True)
    if out.empty:  # the group measured every catalogued model
        return out
    out = out.assign(**key, source="predicted", pi_level=level, pi_method=PI_METHOD)
    known = feats["model"].isin(logs.index).to_numpy()
    sized = np.isfinite(feats["log_macs"].to_numpy()) | np.isfinite(feats["log_params"].to_numpy())
    out["n_measured"] = int((known & sized).sum())
    if (known & sized).sum() < MIN_MEASURED:
        n = quantity(int((known & sized).sum()), "model")
        out["note"] = f"not predicted: {n} with catalog sizes measured here, {MIN_MEASURED} needed"
        return out
    rest = ~known
    for target in ("e", "t"):
        y = feats["model"].map(logs[target]).to_numpy(float)
        has = known & sized & np.isfinite(y)
        if has.sum() < MIN_MEASURED:
            continue
        got = cv_plus(feats, kinship, y, has, level)
        _fill(out, target, got, rest, cv_coverage(feats, kinship, y, has, level))
        out["kin"] = got["kin"][rest]
    unsized = ~sized[rest]
    out.loc[unsized, [c for c in _PREDICTION_COLUMNS if c in out]] = np.nan
    out.loc[unsized, "note"] = "not predicted: the catalog has no size for it"
    return out


def _fill(out: pd.DataFrame, target: str, got: dict, rest: np.ndarray, coverage: float) -> None:
    """Write one target's point, interval, factor and checked coverage (`got` holds logs of
    energy, `e`, or of time per image, `t`: throughput is its inverse)."""
    names = {
        "e": ("energy_per_image_j", "energy_per_image_j_pi_low", "energy_per_image_j_pi_high",
              "energy_pi_factor", "energy_cv_coverage"),
        "t": ("throughput_img_s", "throughput_img_s_pi_low", "throughput_img_s_pi_high",
              "throughput_pi_factor", "throughput_cv_coverage"),
    }[target]  # fmt: skip
    sign = -1.0 if target == "t" else 1.0
    point, low, high = (np.exp(sign * got[k][rest]) for k in ("point", "low", "high"))
    low, high = (high, low) if target == "t" else (low, high)
    out[names[0]], out[names[1]], out[names[2]] = point, low, high
    out[names[3]] = np.sqrt(high / low)
    out[names[4]] = coverage


_PREDICTION_COLUMNS = [
    *(c.name for c in PREDICTED.columns if c.producer == "joulebench.analysis.predict._fill"),
    "kin",
]


def run_predict(rows_path, catalog_path, output, level: float = PI_LEVEL) -> pd.DataFrame:
    """`joulebench predict` and the workflow's predict rule: read, predict, write atomically;
    TableError (one line) for a rows or catalog table without the columns it needs."""
    from pathlib import Path

    from joulebench.analysis.summary import read_summary
    from joulebench.table_io import TableError, read_table, write_table

    rows = read_summary(rows_path) if Path(rows_path).is_dir() else read_table(rows_path)
    catalog = read_table(catalog_path)
    for path, frame, need in (
        (rows_path, rows, ("model", "status", "energy_per_image_j")),
        (catalog_path, catalog, ("model",)),
    ):
        missing = [c for c in need if c not in frame]
        if missing:
            raise TableError(f"{path}: no column {', '.join(missing)} (docs/predictions.md)")
    if not any(c in catalog for c in ("macs_per_image", "params")):
        raise TableError(f"{catalog_path}: neither macs_per_image nor params: no sizes to learn")
    out = predict(rows, catalog, level)
    write_table(out, output, PREDICTED.dtypes)
    return out
