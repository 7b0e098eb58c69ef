"""Predictions with checked intervals for the models a run did not measure (issue 42)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from joulebench.analysis.predict import (
    MIN_MEASURED,
    PI_LEVEL,
    Kinship,
    cv_plus,
    features,
    predict,
    run_predict,
)
from joulebench.cli import main
from joulebench.table_io import read_table
from joulebench.tables import PREDICTED

FAMILIES = ("resnet", "convnext", "vit", "efficientnet", "regnet", "mobilenet")


def _catalog(n: int, seed: int = 0) -> pd.DataFrame:
    """n models of six families: sizes spread over three decades, two tags of some archs."""
    rng = np.random.default_rng(seed)
    family = [FAMILIES[i % len(FAMILIES)] for i in range(n)]
    arch = [f"{f}{i // 2 if i % 5 == 0 else i}" for i, f in enumerate(family)]
    macs = 10 ** rng.uniform(8.5, 11.5, n)
    return pd.DataFrame(
        {
            "model": [f"{a}.tag{i}" for i, a in enumerate(arch)],
            "architecture": arch,
            "family": family,
            "status": "ok",
            "macs_per_image": macs,
            "params": macs / 100 * 10 ** rng.normal(0, 0.2, n),
            "activations_per_image": macs / 300 * 10 ** rng.normal(0, 0.2, n),
            "input_height": 224,
            "input_width": 224,
        }
    )


def _truth(catalog: pd.DataFrame, seed: int = 1) -> np.ndarray:
    """log energy per image: a power law in MACs, a family offset, noise (sigma 0.12)."""
    rng = np.random.default_rng(seed)
    offset = {f: rng.normal(0, 0.3) for f in FAMILIES}
    return (
        0.8 * np.log(catalog["macs_per_image"] / 1e9)
        + catalog["family"].map(offset).to_numpy()
        - 3.0
        + rng.normal(0, 0.12, len(catalog))
    )


def _rows(catalog: pd.DataFrame, y: np.ndarray, measured: np.ndarray, **key) -> pd.DataFrame:
    rows = pd.DataFrame(
        {
            "phase": "inference",
            "device_label": "cpu",
            "method": "pytorch",
            "batch_size_requested": 1,
            "energy_is_estimate": False,
            "model": catalog["model"],
            "status": "ok",
            "energy_per_image_j": np.exp(y),
            "throughput_img_s": 50.0 / np.exp(y),
        }
    )
    return rows.assign(**key)[measured].reset_index(drop=True)


def test_the_intervals_cover_their_level_on_models_not_measured():
    catalog = _catalog(600)
    feats = features(catalog)
    y = _truth(catalog)
    inside, factors = [], []
    for seed in range(3):
        measured = np.zeros(len(y), bool)
        measured[np.random.default_rng(seed).choice(len(y), 150, replace=False)] = True
        got = cv_plus(feats, Kinship(feats), y, measured, PI_LEVEL, seed=seed)
        rest = ~measured
        inside.append((got["low"][rest] <= y[rest]) & (y[rest] <= got["high"][rest]))
        factors.append(np.exp((got["high"][rest] - got["low"][rest]) / 2))
    coverage = np.concatenate(inside).mean()
    assert 0.85 <= coverage <= 0.97, coverage
    # the noise is x/÷ exp(1.645 * 0.12) = 1.22 at 90 %: the interval is about that, not wider
    assert 1.15 < np.median(np.concatenate(factors)) < 1.45


def test_predict_writes_every_unmeasured_model_per_group_and_says_so(tmp_path):
    catalog = _catalog(200)
    y = _truth(catalog)
    measured = np.arange(len(y)) % 4 == 0  # 50 measured
    rows = pd.concat(
        [
            _rows(catalog, y, measured),
            _rows(catalog, y + 0.7, measured, method="fp16", status="ok"),
            _rows(catalog, y, measured & (np.arange(len(y)) < 24), batch_size_requested=64),
            _rows(catalog, y, ~measured, status="failed"),  # failed rows measure nothing
        ]
    )
    out = predict(rows, catalog)
    assert list(out.columns) == PREDICTED.names
    assert (out["source"] == "predicted").all()
    groups = out.groupby(["method", "batch_size_requested"]).size()
    assert groups.to_dict() == {("fp16", 1): 150, ("pytorch", 1): 150, ("pytorch", 64): 194}
    assert not set(out["model"]) & set(catalog["model"][measured & (np.arange(200) < 24)])
    ok = out[(out["method"] == "pytorch") & (out["batch_size_requested"] == 1)]
    assert ok["energy_per_image_j"].notna().all() and ok["note"].isna().all()
    assert (ok["energy_per_image_j_pi_low"] <= ok["energy_per_image_j"]).all()
    assert (ok["energy_per_image_j"] <= ok["energy_per_image_j_pi_high"]).all()
    assert (ok["throughput_img_s_pi_low"] <= ok["throughput_img_s_pi_high"]).all()
    assert ok["energy_cv_coverage"].between(0.75, 1).all()
    assert (ok["n_measured"] == 50).all() and (ok["pi_level"] == PI_LEVEL).all()
    # a fp16 group spends exp(0.7) more: its predictions follow its own rows
    fp16 = out[out["method"] == "fp16"].set_index("model")["energy_per_image_j"]
    ratio = fp16 / ok.set_index("model")["energy_per_image_j"]
    assert ratio.between(1.8, 2.2).all()
    few = out[out["batch_size_requested"] == 64]
    assert few["energy_per_image_j"].isna().all()
    assert few["note"].str.contains(f"6 models .* {MIN_MEASURED} needed").all()


def test_a_model_without_catalog_sizes_is_not_predicted_and_says_why():
    catalog = _catalog(120)
    catalog.loc[5, ["macs_per_image", "params", "activations_per_image"]] = np.nan
    y = _truth(catalog)
    out = predict(_rows(catalog, y, np.arange(120) % 3 == 0), catalog)
    row = out.set_index("model").loc[catalog.loc[5, "model"]]
    assert np.isnan(row["energy_per_image_j"]) and "no size" in row["note"]
    with pytest.raises(ValueError, match="level"):
        predict(_rows(catalog, y, np.ones(120, bool)), catalog, level=1.5)


def test_the_command_reads_a_summary_and_writes_the_table(tmp_path, capsys):
    catalog = _catalog(150)
    y = _truth(catalog)
    _rows(catalog, y, np.arange(150) % 3 == 0).to_parquet(tmp_path / "rows.parquet")
    catalog.to_parquet(tmp_path / "catalog.parquet")
    out = tmp_path / "predicted.parquet"
    argv = ["predict", "--rows", str(tmp_path / "rows.parquet"), "--catalog"]
    assert main([*argv, str(tmp_path / "catalog.parquet"), "--output", str(out)]) == 0
    assert "predicted 100 of 100 rows in 1 group" in capsys.readouterr().out
    assert len(read_table(out)) == 100
    catalog[["model"]].to_parquet(tmp_path / "bare.parquet")
    assert main([*argv, str(tmp_path / "bare.parquet"), "--output", str(out)]) == 2
    assert "no sizes" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, str(tmp_path / "catalog.parquet"), "-o", str(out), "--level", "nan"])
    assert run_predict(tmp_path / "rows.parquet", tmp_path / "catalog.parquet", out).shape[0]


def test_a_thin_catalog_with_parameters_only_still_predicts():
    catalog = _catalog(80).drop(columns=["macs_per_image", "activations_per_image"])
    y = _truth(_catalog(80))
    out = predict(_rows(catalog, y, np.arange(80) % 2 == 0), catalog)
    assert out["energy_per_image_j"].notna().all() and out["note"].isna().all()
    assert np.isfinite(out["energy_pi_factor"]).all()


def test_a_study_that_measured_everything_predicts_nothing_and_a_small_one_says_why():
    catalog = _catalog(12)
    y = _truth(catalog)
    out = predict(_rows(catalog, y, np.ones(12, bool)), catalog)
    assert out.empty and list(out.columns) == PREDICTED.names
    out = predict(_rows(catalog, y, np.arange(12) < 4), catalog)
    assert len(out) == 8 and out["energy_per_image_j"].isna().all()
    assert out["note"].str.startswith("not predicted: 4 models").all()
    assert predict(_rows(catalog, y, np.zeros(12, bool)), catalog).empty  # no group at all
