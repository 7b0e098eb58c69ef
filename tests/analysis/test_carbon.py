"""Energy in the units people use (analysis.carbon) and the headline scope (energy_scope)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from helpers.hand_scores import by_model, hand_row, hand_summary

from joulebench.analysis.carbon import carbon_columns, check_carbon
from joulebench.analysis.score import score_summary


def test_wh_co2e_and_cost_by_hand():
    e = pd.Series([3.6, 0.36])  # J per image
    out = carbon_columns(e, {"grid_gco2e_per_kwh": 400, "pue": 1.5, "price_per_kwh": 0.2})
    # 3.6 J x 1000 = 3600 J = 1 Wh per 1k images; x PUE 1.5 = 1.5 Wh -> 0.6 g at 400 g/kWh
    assert out["energy_per_1k_images_wh"].tolist() == pytest.approx([1.0, 0.1])
    assert out["co2e_per_1k_images_g"].tolist() == pytest.approx([0.6, 0.06])
    # 1e6 images x 3.6 J = 1 kWh; x 1.5 x 0.2 = 0.3
    assert out["cost_per_1m_images"].tolist() == pytest.approx([0.3, 0.03])
    assert out["carbon_note"].iloc[0] == (
        "estimate: grid 400 gCO2e/kWh, price 0.2 per kWh, PUE 1.5"
    )


def test_nothing_set_leaves_co2e_and_cost_empty():
    out = carbon_columns(pd.Series([3.6]), {})
    assert out["energy_per_1k_images_wh"].iloc[0] == pytest.approx(1.0)
    assert math.isnan(out["co2e_per_1k_images_g"].iloc[0])
    assert math.isnan(out["cost_per_1m_images"].iloc[0])
    assert out["carbon_note"].iloc[0] == ""
    only_grid = carbon_columns(pd.Series([3.6]), {"grid_gco2e_per_kwh": 100})
    assert only_grid["co2e_per_1k_images_g"].iloc[0] == pytest.approx(0.1)  # PUE 1
    assert "PUE 1 (not set: IT energy only)" in only_grid["carbon_note"].iloc[0]


@pytest.mark.parametrize(
    ("carbon", "words"),
    [
        ({"pue": 0.5}, "carbon.pue must be in"),
        ({"grid_gco2e_per_kwh": -1}, "grid_gco2e_per_kwh must be in"),
        ({"grid": 400}, "unknown key"),
    ],
)
def test_carbon_values_are_range_checked(carbon, words):
    with pytest.raises(ValueError, match=words):
        check_carbon(carbon)


def test_scores_carry_the_units_and_the_scope():
    scores = score_summary(hand_summary(), carbon={"grid_gco2e_per_kwh": 400})
    s = by_model(scores)
    assert (scores["energy_scope"] == "device").all()
    e = s.loc["m1", "energy_per_image_j"]
    assert s.loc["m1", "energy_per_1k_images_wh"] == pytest.approx(e * 1000 / 3600)
    assert s.loc["m1", "co2e_per_1k_images_g"] == pytest.approx(e * 1000 / 3600 * 0.4)
    assert scores["cost_per_1m_images"].isna().all()


def test_node_scope_scores_the_node_and_labels_an_estimated_host():
    node = {"energy_node_per_image_j": 1.0, "host_is_estimate": False}
    extra = [
        hand_row("gpu_only_cheap", 0.002, energy_node_per_image_j=0.5, host_is_estimate=False),
        hand_row("estimated_host", 0.002, energy_node_per_image_j=0.004, host_is_estimate=True),
    ]
    summary = hand_summary(extra, {"gpu_only_cheap": 90.0, "estimated_host": 90.0})
    summary.loc[summary["model"].str.startswith("m"), list(node)] = list(node.values())
    s = by_model(score_summary(summary, energy_scope="node"))
    assert (s["energy_scope"] == "node").all()
    assert s.loc["gpu_only_cheap", "energy_per_image_j"] == pytest.approx(0.5)
    assert bool(s.loc["estimated_host", "energy_is_estimate"])  # never mixed with measured
    assert (
        pd.isna(s.loc["estimated_host", "on_front"]) or s.loc["estimated_host", "group_models"] == 1
    )
    with pytest.raises(ValueError, match="total"):
        score_summary(summary, energy_scope="node", energy="dynamic")
    with pytest.raises(ValueError, match="predates"):
        score_summary(summary.drop(columns=["energy_node_per_image_j"]), energy_scope="node")
    assert np.isfinite(s.loc["m1", "energy_per_image_j"])
