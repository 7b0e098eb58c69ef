"""Score: the front, efficiency index, grades and energy index of a hand-made table, worked by
hand in tests/helpers/hand_scores.py (the same example as docs/scoring.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.hand_scores import EXPECTED, HAND, by_model, hand_row, hand_summary

from joulebench.analysis.score import (
    DEFAULT_GRADE_THRESHOLDS,
    SCORE_COLUMNS,
    front_energy,
    grade_of,
    grades_of,
    pareto_front,
    parse_grade_thresholds,
    score_summary,
)


def test_front_index_and_grades_by_hand():
    scores = score_summary(hand_summary(), reference_model="m2")
    s = by_model(scores)
    for model, (on, fe, index, grade) in EXPECTED.items():
        row = s.loc[model]
        assert bool(row["on_front"]) is on, model
        assert row["front_energy_per_image_j"] == pytest.approx(fe), model
        assert row["efficiency_index"] == pytest.approx(index), model
        assert row["grade"] == grade, model
    assert set(s.loc[list(EXPECTED), "front_models"]) == {3}
    assert set(s.loc[list(EXPECTED), "group_models"]) == {9}
    # best top1 for at most m3's energy (0.03 J) is m2's 75 %: 3 points lost
    assert s.loc["m3", "top1_gap_pct"] == pytest.approx(3.0)
    assert s.loc["m4", "top1_gap_pct"] == pytest.approx(0.0)


def test_energy_index_against_the_reference():
    s = by_model(score_summary(hand_summary(), reference_model="m2"))
    assert s.loc["m2", "energy_index"] == pytest.approx(1.0)
    assert s.loc["m4", "energy_index"] == pytest.approx(2.5)
    # needs no accuracy: given for the row without top1 too
    assert s.loc["no_acc", "energy_index"] == pytest.approx(3.0)
    assert np.isnan(s.loc["failed", "energy_index"])


def test_missing_reference_gives_nan_and_a_note():
    s = by_model(score_summary(hand_summary(), reference_model="resnet50.a1_in1k"))
    assert s["energy_index"].isna().all()
    assert "reference resnet50.a1_in1k not measured" in s.loc["m1", "score_note"]
    assert s.loc["m1", "grade"] == "A"  # the efficiency index does not need it


def test_unscorable_rows_stay_with_a_reason():
    summary = hand_summary()
    scores = score_summary(summary)
    assert len(scores) == len(summary)  # nothing dropped
    s = by_model(scores)
    for model, words in (("failed", "status oom"), ("no_acc", "no top1")):
        assert np.isnan(s.loc[model, "efficiency_index"])
        assert pd.isna(s.loc[model, "grade"])
        assert pd.isna(s.loc[model, "on_front"])
        assert words in s.loc[model, "score_note"]
    assert not s.loc["failed", "scored"] and not s.loc["no_acc", "scored"]


def test_invalid_flags_keep_a_row_off_the_front():
    extra = [hand_row("cheap_but_shared", 0.001, flags="other-process")]
    s = by_model(score_summary(hand_summary(extra, {"cheap_but_shared": 99.0})))
    assert "flagged other-process" in s.loc["cheap_but_shared", "score_note"]
    assert bool(s.loc["m1", "on_front"])  # the flagged row would have dominated everything


def test_a_simulated_gpu_is_never_scored_even_with_no_invalid_flags():
    """Rows of a `sim:` device (is_simulated) never reach a score: no front, no grade, a note,
    even from a published summary whose flags lost the word, and with invalid_flags emptied."""
    extra = [hand_row("sim_row", 0.001, is_simulated=True)]  # flags left empty
    summary = hand_summary(extra, {"sim_row": 99.0})
    s = by_model(score_summary(summary, invalid_flags=()))
    assert "flagged simulated: not scored" in s.loc["sim_row", "score_note"]
    assert not s.loc["sim_row", "scored"] and pd.isna(s.loc["sim_row", "grade"])
    assert "simulated" in s.loc["sim_row", "flags"]
    assert bool(s.loc["m1", "on_front"])


def test_groups_are_scored_apart():
    # the same models at another batch size, all 10x cheaper except m3 (now the cheapest)
    extra = [hand_row(m, e / 10, batch=8) for m, _, e in HAND if m != "m3"]
    extra.append(hand_row("m3", 0.0005, batch=8))
    # and an estimate on the same device / method / batch: never on the measured front
    extra.append(hand_row("est", 0.0001, meter="estimate:tdp-linear", is_estimate=True))
    scores = score_summary(hand_summary(extra, {"est": 99.0}))
    b64 = by_model(scores, batch_size_requested=64, energy_is_estimate=False)
    b8 = by_model(scores, batch_size_requested=8)
    assert b64.loc["m3", "efficiency_index"] == pytest.approx(2 / 3)
    assert bool(b8.loc["m3", "on_front"]) and not bool(b8.loc["m1", "on_front"])
    assert bool(b64.loc["m1", "on_front"])
    est = by_model(scores, energy_is_estimate=True)
    assert list(est.index) == ["est"] and bool(est.loc["est", "on_front"])


def test_dynamic_energy_can_be_scored():
    s = by_model(score_summary(hand_summary(), energy="dynamic"))
    assert s.loc["m3", "energy_per_image_j"] == pytest.approx(0.015)
    assert s.loc["m3", "efficiency_index"] == pytest.approx(2 / 3)  # halving all: same index
    assert set(s["energy_kind"]) == {"dynamic"}


def test_output_matches_declared_columns():
    scores = score_summary(hand_summary())
    assert list(scores.columns) == list(SCORE_COLUMNS)
    assert str(scores["grade"].dtype).startswith("string")


def test_front_helpers_on_ties_and_order():
    a = np.array([70.0, 70.0, 75.0, 60.0])
    e = np.array([1.0, 1.0, 2.0, 1.5])
    assert pareto_front(a, e).tolist() == [True, True, True, False]
    assert front_energy(a, e, np.array([60.0, 71.0, 80.0])).tolist()[:2] == [1.0, 2.0]
    assert np.isnan(front_energy(a, e, np.array([80.0]))[0])


def test_grade_boundaries_are_inclusive():
    t = DEFAULT_GRADE_THRESHOLDS
    assert [grade_of(t[g]) for g in "ABCDEF"] == list("ABCDEF")
    assert grade_of(1.0) == "A" and grade_of(0.0999) == "G" and grade_of(np.nan) is None


def test_grade_thresholds_from_config():
    assert parse_grade_thresholds([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])["F"] == 0.4
    assert parse_grade_thresholds(None) == DEFAULT_GRADE_THRESHOLDS
    for bad in ([0.9, 0.8], [0.5, 0.6, 0.4, 0.3, 0.2, 0.1], [1.5, 0.8, 0.7, 0.6, 0.5, 0.4]):
        with pytest.raises(ValueError):
            parse_grade_thresholds(bad)
    with pytest.raises(ValueError, match="keys"):
        parse_grade_thresholds({"A": 0.9})
    strict = score_summary(hand_summary(), grade_thresholds=[0.99, 0.9, 0.8, 0.7, 0.6, 0.5])
    assert by_model(strict).loc["m3", "grade"] == "E"  # 0.667: >= 0.6, < 0.7


def test_high_spread_rows_are_flagged_and_kept_off_the_front():
    extra = [
        hand_row("noisy_cheap", 0.001, energy_per_image_cv=1.04),  # CV 104 %
        hand_row("just_under", 0.300, energy_per_image_cv=0.25),  # at the bound: kept
    ]
    scores = score_summary(hand_summary(extra, {"noisy_cheap": 99.0, "just_under": 60.0}))
    s = by_model(scores)
    assert "high-spread" in s.loc["noisy_cheap", "flags"]
    assert not s.loc["noisy_cheap", "scored"] and pd.isna(s.loc["noisy_cheap", "grade"])
    note = s.loc["noisy_cheap", "score_note"]
    assert "flagged high-spread (energy CV 104% > 25%): not scored" in note
    assert bool(s.loc["m1", "on_front"])  # the noisy row would have dominated everything
    assert bool(s.loc["just_under", "scored"]) and "high-spread" not in (
        s.loc["just_under", "flags"] or ""
    )
    # the threshold is a setting; None turns the check off
    loose = by_model(score_summary(hand_summary(extra, {"noisy_cheap": 99.0}), max_energy_cv=2.0))
    assert bool(loose.loc["noisy_cheap", "on_front"])
    off = by_model(score_summary(hand_summary(extra, {"noisy_cheap": 99.0}), max_energy_cv=None))
    assert bool(off.loc["noisy_cheap", "scored"])
    # or the flag is taken off the list of invalidating flags: flagged, still scored
    kept = by_model(
        score_summary(hand_summary(extra, {"noisy_cheap": 99.0}), invalid_flags=("mig",))
    )
    assert "high-spread" in kept.loc["noisy_cheap", "flags"] and kept.loc["noisy_cheap", "scored"]
    with pytest.raises(ValueError, match="max_energy_cv"):
        score_summary(hand_summary(), max_energy_cv=-1)


def test_spread_of_the_scored_energy_is_the_one_checked():
    extra = [hand_row("dyn_noisy", 0.001, dynamic_energy_per_image_cv=0.9)]
    total = by_model(score_summary(hand_summary(extra, {"dyn_noisy": 99.0})))
    dynamic = by_model(score_summary(hand_summary(extra, {"dyn_noisy": 99.0}), energy="dynamic"))
    assert bool(total.loc["dyn_noisy", "scored"])
    assert not dynamic.loc["dyn_noisy", "scored"]


def test_package_defaults_match_the_config_schema():
    import yaml
    from conftest import REPO

    from joulebench.analysis.score import (
        DEFAULT_ENERGY,
        DEFAULT_INVALID_FLAGS,
        DEFAULT_MAX_ENERGY_CV,
    )

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    props = schema["properties"]["score"]["properties"]  # which rows count: one section
    assert tuple(props["invalid_flags"]["default"]) == DEFAULT_INVALID_FLAGS
    assert props["max_energy_cv"]["default"] == DEFAULT_MAX_ENERGY_CV
    assert props["energy"]["default"] == DEFAULT_ENERGY
    fits = schema["properties"]["fits"]["properties"]
    assert not {"energy", "invalid_flags", "max_energy_cv"} & set(fits)  # the score's, read


def test_front_by_sorting_equals_the_definition_pairwise():
    """pareto_front sorts (O(n log n)); it must agree with the definition checked pair by
    pair, on coarse grids (many exact ties in top-1, energy or both) and with NaNs."""
    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(1, 40))
        a = rng.integers(60, 60 + int(rng.integers(1, 8)), n).astype(float)
        e = rng.integers(1, 1 + int(rng.integers(1, 8)), n) / 100
        if trial % 4 == 0:
            a[rng.uniform(size=n) < 0.2] = np.nan
            e[rng.uniform(size=n) < 0.1] = np.nan
        want = [
            not any(
                a[j] >= a[i] and e[j] <= e[i] and (a[j] > a[i] or e[j] < e[i]) for j in range(n)
            )
            for i in range(n)
        ]
        assert pareto_front(a, e).tolist() == want, (a, e)


def test_grades_of_an_array_equal_grade_of_each_value():
    t = DEFAULT_GRADE_THRESHOLDS
    x = np.array([*t.values(), *np.nextafter(list(t.values()), 0), 1.0, 0.0, np.nan, np.inf])
    assert grades_of(x).tolist() == [grade_of(v) for v in x]


def test_a_high_spread_flag_carried_by_the_summary_is_a_note_without_the_check():
    """A published summary may carry high-spread itself; with the check off (no CV limit)
    the note says so without a limit to quote."""
    extra = [hand_row("noisy", 0.001, flags="high-spread", energy_per_image_cv=0.9)]
    s = by_model(score_summary(hand_summary(extra, {"noisy": 99.0}), max_energy_cv=None))
    assert s.loc["noisy", "score_note"].startswith("flagged high-spread: not scored")
    assert not s.loc["noisy", "scored"]
