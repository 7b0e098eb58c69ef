"""Which models a study measures, in what order (joulebench.selection, issue 42)."""

from __future__ import annotations

import pandas as pd
from conftest import REPO

from joulebench.plan import model_costs_s
from joulebench.prerun import load_study
from joulebench.selection import budget_s, select

MODELS = [
    "resnet18.a1_in1k",
    "resnet50.a1_in1k",
    "mobilenetv3_small_100.lamb_in1k",
    "efficientnet_b0.ra_in1k",
    "convnext_atto.d2_in1k",
    "deit_tiny_patch16_224.fb_in1k",
    "vit_base_patch16_224.augreg2_in21k_ft_in1k",
    "regnety_040.ra3_in1k",
    "resnet101.a1h_in1k",
    "levit_128.fb_dist_in1k",
]
POOLS = {"cpu": ["cpu"]}


def _study(**keys) -> dict:
    config = load_study(None, REPO)
    config.update(keys)
    return config


def test_the_config_order_measures_every_model_as_listed(tmp_path):
    chosen = select(_study(), MODELS, POOLS, tmp_path, model_costs_s)
    assert chosen.models == MODELS and chosen.left == 0


def test_a_budget_buys_the_informative_orders_head_and_a_larger_one_goes_on(tmp_path):
    config = _study(order="informative", budget={"gpu_h": None})
    everything = select(config, MODELS, POOLS, tmp_path, model_costs_s)
    assert sorted(everything.models) == sorted(MODELS) and everything.left == 0
    model_s = everything.model_s
    small = select(
        {**config, "budget": {"gpu_h": 3.5 * model_s / 3600}},
        MODELS,
        POOLS,
        tmp_path,
        model_costs_s,
    )
    assert len(small.models) == 3 and small.left == 7
    assert small.models == everything.models[:3]  # the order's head
    assert small.priority(small.models[0]) > small.priority(small.models[2]) > 0
    # two of them measured (rows on disk): kept, and a larger budget measures the next ones
    rows = tmp_path / "profile" / "cpu" / "rows"
    rows.mkdir(parents=True)
    for model, energy in zip(small.models[:2], (0.5, 2.0), strict=True):
        pd.DataFrame(
            {"model": [model], "status": ["ok"], "energy_per_image_j": [energy]}
        ).to_parquet(rows / f"{model}.parquet")
    larger = select(
        {**config, "budget": {"gpu_h": 6.5 * model_s / 3600}},
        MODELS,
        POOLS,
        tmp_path,
        model_costs_s,
    )
    assert larger.models[:2] == small.models[:2] and len(larger.models) == 6
    assert larger.measured == small.models[:2]
    assert budget_s({"budget": {"gpu_h": 2}}) == 7200 and budget_s({}) is None


def test_plan_says_what_a_budget_buys(tmp_path, monkeypatch, capsys):
    import yaml

    from joulebench.cli import main

    monkeypatch.chdir(tmp_path)
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump({"models": MODELS, "order": "informative"}))
    assert main(["plan", "--configfile", str(study), "--budget", "3m"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("budget: "))
    assert line.startswith("budget: 0.05 device-hours buy ") and " of 10 models " in line
    assert "in the informative order" in line and "predicted with their intervals" in line
    assert "the front: about " in out and "an estimate" in out
    assert "the predictions: 90 % intervals of about x/÷" in out


def test_the_expected_interval_narrows_as_more_is_measured():
    from joulebench.selection import INTERVAL_FACTOR, interval_factor

    assert interval_factor(0.01) == interval_factor(0.10) == INTERVAL_FACTOR[0][1]
    assert interval_factor(0.10) > interval_factor(0.15) > interval_factor(0.20)
    assert interval_factor(0.9) == INTERVAL_FACTOR[-1][1]


def test_a_duration_is_hours_minutes_seconds_or_days():
    import argparse

    import pytest

    from joulebench.cli.common import hours_type

    assert hours_type("8h") == 8 and hours_type("90m") == 1.5 and hours_type("3600s") == 1
    assert hours_type("2d") == 48 and hours_type("0.5") == 0.5
    for bad in ("soon", "-1h", "0", "inf"):
        with pytest.raises(argparse.ArgumentTypeError):
            hours_type(bad)
