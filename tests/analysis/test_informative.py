"""The order a study measures its models in (analysis.informative, issue 42)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from joulebench.analysis.informative import (
    family_of,
    features,
    front_chance,
    informative_order,
    seed_slice,
)


def _catalog(n: int = 120, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """Models of 6 families: log energy = log MACs + the family's offset + noise; top-1 up
    with size. Returns (reference-like table, true log energies)."""
    rng = np.random.default_rng(seed)
    fams = [f"fam{chr(97 + i)}" for i in range(6)]
    offsets = dict(zip(fams, rng.normal(0, 0.6, len(fams)), strict=True))
    rows, truth = [], {}
    for i in range(n):
        fam = fams[i % 6]
        log_macs = rng.uniform(18, 25)
        model = f"{fam}{i}.tag"
        truth[model] = log_macs - 30 + offsets[fam] + rng.normal(0, 0.15)
        top1 = 50 + 4 * (log_macs - 18) + rng.normal(0, 3)
        rows.append({"model": model, "param_count": np.exp(log_macs - 14) / 1e6,
                     "img_size": 224, "top1": top1, "macs_per_image": np.exp(log_macs),
                     "family": fam, "activations_per_image": np.nan})  # fmt: skip
    return pd.DataFrame(rows), truth


def _front(table: pd.DataFrame, truth: dict) -> set:
    front, best = set(), np.inf
    for row in table.sort_values("top1", ascending=False).itertuples():
        if truth[row.model] < best:
            front.add(row.model)
            best = truth[row.model]
    return front


def test_the_front_is_measured_first():
    table, truth = _catalog()
    feats = features(table["model"], table, table)
    measured: dict = {}
    while len(measured) < 30:  # a quarter, 6 at a time, re-ranked after each step
        for model in informative_order(feats, measured)[:6]:
            measured[model] = truth[model]
    front = _front(table, truth)
    assert len(front & set(measured)) / len(front) >= 0.9
    rng = np.random.default_rng(1)
    chance = len(front & set(rng.permutation(table["model"])[:30])) / len(front)
    assert chance < 0.6  # at random: about a quarter


def test_the_seed_slice_spans_families_and_sizes():
    table, _ = _catalog()
    feats = features(table["model"], table, table)
    seeds = seed_slice(feats, 8)
    assert len(seeds) == 8 and len(set(feats.set_index("model").loc[seeds, "family"])) == 6
    sizes = feats.set_index("model").loc[seeds, "log_size"]
    assert sizes.max() - sizes.min() > 4  # from small to large
    assert informative_order(feats, {})[:8] == seeds  # nothing measured: the seeds first


def test_a_model_without_top1_comes_last_and_chances_follow_the_guess():
    top1 = np.array([80.0, 75.0, np.nan, 70.0])
    mu = np.array([0.0, -1.0, -5.0, 1.0])
    chance = front_chance(top1, mu, np.full(4, 0.1))
    assert chance[0] == 1.0 and chance[1] > 0.99 and chance[2] == 0.0 and chance[3] < 0.01
    assert family_of("efficientvit_m1.r224_in1k") == "efficientvit"
