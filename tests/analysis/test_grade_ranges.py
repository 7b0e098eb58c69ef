"""Grade ranges of predicted rows against the measured front of their score group."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from joulebench.analysis.grade_ranges import grade_ranges, index_at, range_text
from joulebench.analysis.score import score_summary

GROUP = {
    "phase": "inference",
    "device_label": "gpu",
    "method": "fp32",
    "batch_size_requested": 64,
    "energy_is_estimate": False,
}


def _scores(**over) -> pd.DataFrame:
    """Three graded measured models: (top-1, J) = (70, 1), (80, 2), (90, 4), all on the front,
    and one failed row that must not count."""
    rows = pd.DataFrame(
        {
            "model": ["a", "b", "c", "failed"],
            "top1": [70.0, 80.0, 90.0, 95.0],
            "energy_per_image_j": [1.0, 2.0, 4.0, 0.1],
            "scored": [True, True, True, False],
            "energy_kind": "total",
            "energy_scope": "device",
        }
    ).assign(**GROUP)
    return rows.assign(**over)


def _predicted(top1, low, high, **over) -> pd.DataFrame:
    n = len(top1)
    rows = pd.DataFrame(
        {
            "model": [f"p{i}" for i in range(n)],
            "top1": top1,
            "energy_per_image_j_pi_low": low,
            "energy_per_image_j_pi_high": high,
        }
    ).assign(**GROUP)
    return rows.assign(**over)


def test_index_at_is_the_score_index_had_the_model_been_measured():
    got = index_at([2.0, 2.0, np.nan, 2.0], [1.0, 4.0, 9.0, 0.0])
    np.testing.assert_allclose(got[:3], [1.0, 0.5, 1.0])  # below the front: on it; none: on it
    assert np.isnan(got[3])  # no energy, no index


def test_the_range_runs_from_the_low_energy_grade_to_the_high_energy_grade():
    # top-1 75: the front spends 2 J (model b). 1.5 J -> index 1 (A); 3 J -> 0.67 (B);
    # 5 J -> 0.4 (D); 2.5..3 J -> 0.8..0.67: A..B; 3.6..3.9 -> 0.56..0.51: C
    pred = _predicted([75.0, 75.0, 75.0, 75.0], [1.5, 1.5, 2.5, 3.6], [3.0, 5.0, 3.0, 3.9])
    got = grade_ranges(pred, _scores())
    assert got["grade_range"].tolist() == ["A–B", "A–D", "A–B", "C"]
    assert (got["grade_range_note"] == "").all()


def test_a_model_more_accurate_than_every_measured_one_would_be_on_the_front():
    got = grade_ranges(_predicted([92.0], [40.0], [80.0]), _scores())
    assert got["grade_range"].tolist() == ["A"]


def test_the_range_agrees_with_the_score_at_the_interval_ends():
    """Scoring the measured rows with the predicted model measured at its interval's ends
    gives the grades the range names."""
    pred = _predicted([85.0], [3.0], [12.0])
    (best, worst) = grade_ranges(pred, _scores())["grade_range"].iloc[0].split("–")
    for energy, want in ((3.0, best), (12.0, worst)):
        summary = _summary_with(energy)
        scored = score_summary(summary, reference_model=None, max_energy_cv=None)
        assert scored.loc[scored["model"] == "p", "grade"].iloc[0] == want


def _summary_with(energy_p: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": ["a", "b", "c", "p"],
            "top1": [70.0, 80.0, 90.0, 85.0],
            "energy_per_image_j": [1.0, 2.0, 4.0, energy_p],
            "status": "ok",
            "flags": "",
            "accuracy_source": "reference",
            "meter": "nvml",
        }
    ).assign(**GROUP)


@pytest.mark.parametrize(
    "pred, scores, note",
    [
        (_predicted([np.nan], [1.0], [2.0]), _scores(), "no top1"),
        (_predicted([75.0], [np.nan], [np.nan]), _scores(), "no prediction interval"),
        (_predicted([75.0], [1.0], [2.0], method="fp16"), _scores(), "no graded measured"),
        (_predicted([75.0], [1.0], [2.0]), _scores(scored=False), "no graded measured"),
        (_predicted([75.0], [1.0], [2.0]), _scores(energy_kind="dynamic"), "no graded measured"),
        (_predicted([75.0], [1.0], [2.0]), _scores(energy_scope="node"), "no graded measured"),
        (_predicted([75.0], [1.0], [2.0], energy_is_estimate=True), _scores(), "no graded"),
    ],
)
def test_no_range_without_top1_interval_or_a_measured_front_of_the_same_energy(pred, scores, note):
    got = grade_ranges(pred, scores)
    assert got["grade_range"].tolist() == [""]
    assert got["grade_range_note"].iloc[0].startswith(note)


def test_group_keys_match_whatever_their_dtypes():
    scores = _scores().astype({"batch_size_requested": "Int64", "energy_is_estimate": "boolean"})
    pred = _predicted([75.0], [1.5], [3.0]).astype({"batch_size_requested": "int32"})
    assert grade_ranges(pred, scores)["grade_range"].tolist() == ["A–B"]


def test_range_text():
    assert range_text("B", "D") == "B–D"
    assert range_text("C", "C") == "C"
    assert range_text(None, "C") == ""


def test_thresholds_are_the_scores():
    pred = _predicted([75.0], [1.5], [3.0])
    got = grade_ranges(pred, _scores(), grade_thresholds=[0.9, 0.7, 0.5, 0.3, 0.2, 0.1])
    assert got["grade_range"].tolist() == ["A–C"]  # 0.67 is C under these bands
