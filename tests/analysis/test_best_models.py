"""The end of a run: outputs and the most accurate model per energy band."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers.figure_study import study_tables

from joulebench.analysis.best_models import (
    best_per_energy_band,
    end_of_run,
    energy_band,
    format_best,
)
from joulebench.table_io import write_table


@pytest.mark.parametrize(
    ("energy_j", "band"),
    [(0.00042, "100 uJ-1 mJ"), (0.0042, "1 mJ-10 mJ"), (0.042, "10 mJ-100 mJ"), (4.2, "1 J-10 J")],
)
def test_energy_bands_are_decades(energy_j, band):
    assert energy_band(energy_j) == band


def scores_frame(rows):
    base = {
        "phase": "inference",
        "device_label": "h200",
        "method": "fp32",
        "batch_size": 8,
        "status": "ok",
        "scored": True,
        "grade": "A",
        "energy_is_estimate": False,
        "score_note": pd.NA,
    }
    return pd.DataFrame([{**base, **row} for row in rows])


def test_most_accurate_per_band_at_its_least_energy():
    scores = scores_frame(
        [
            {"model": "small", "energy_per_image_j": 0.002, "top1": 70.0},
            {"model": "small", "energy_per_image_j": 0.004, "top1": 70.0, "method": "bf16"},
            {"model": "mid", "energy_per_image_j": 0.008, "top1": 75.0},
            {"model": "big", "energy_per_image_j": 0.03, "top1": 82.0, "grade": "C"},
            {"model": "failed", "energy_per_image_j": None, "top1": 90.0, "status": "oom"},
            {"model": "train", "energy_per_image_j": 0.02, "top1": 99.0, "phase": "train"},
        ]
    )
    best, note = best_per_energy_band(scores)
    assert best["model"].tolist() == ["mid", "big"]  # 1-10 mJ: mid beats small; 10-100 mJ
    assert note == ""
    text = format_best(best)
    header, first, second = text.splitlines()
    assert header.split() == [
        "energy", "band", "model", "top-1", "%", "mJ/image", "device", "method", "batch",
        "energy", "is", "grade",
    ]  # fmt: skip
    assert first.split()[:5] == ["1", "mJ-10", "mJ", "mid", "75.0"]
    assert second.split()[-1] == "C"


def test_flagged_rows_are_shown_only_when_nothing_is_clean_and_say_so():
    scores = scores_frame(
        [
            {
                "model": "a",
                "energy_per_image_j": 0.5,
                "top1": 70.0,
                "scored": False,
                "grade": pd.NA,
                "score_note": "flagged other-load: not scored",
                "energy_is_estimate": True,
            }
        ]
    )
    best, note = best_per_energy_band(scores)
    assert best["model"].tolist() == ["a"]
    assert "flagged other-load" in note and "ESTIMATED" not in note  # said on its row
    assert format_best(best).splitlines()[1].split()[-2:] == ["ESTIMATED", "-"]


def test_no_accuracy_no_table():
    scores = scores_frame([{"model": "a", "energy_per_image_j": 0.5, "top1": None}])
    best, note = best_per_energy_band(scores)
    assert best.empty and note.startswith("no model has a top-1 (accuracy missing")
    scores = scores_frame([{"model": "a", "energy_per_image_j": None, "top1": 70.0}])
    assert best_per_energy_band(scores)[1] == "no model has both a measured energy and a top-1"


def test_end_of_run_names_the_page_figures_and_best_models(tmp_path):
    summary, scores, _, _ = study_tables(n_models=12)
    results = tmp_path / "results"
    write_table(scores, results / "scores.parquet")
    (results / "webapp").mkdir()
    (results / "webapp" / "index.html").write_text("<html></html>")
    (results / "figures").mkdir()
    (results / "figures" / "accuracy_vs_energy.png").write_bytes(b"png")
    text = end_of_run(results)
    assert f"web page: {results.resolve()}/webapp/index.html" in text
    assert f"figures:  {results.resolve()}/figures/ (1 figure, PNG" in text
    assert "Most accurate model per energy band" in text
    assert "energy ESTIMATED (no hardware counter)" not in text  # each row says which


def test_end_of_run_before_scores_exist(tmp_path):
    assert end_of_run(tmp_path / "results") == "joulebench: done."


@pytest.mark.parametrize(
    "seq", ["\x1b[2J", "\x1b]0;owned\x07", "\x1b]8;;http://x\x1b\\", "\rFAKE", "\x9b2J", "\u202e"]
)
def test_end_of_run_prints_names_from_the_scores_as_escapes(tmp_path, seq):
    scores = scores_frame(
        [
            {"model": f"a{seq}", "energy_per_image_j": 0.002, "top1": 70.0, "method": seq},
            {"model": "b", "energy_per_image_j": 0.02, "top1": 75.0, "device_label": seq},
        ]
    )
    write_table(scores, tmp_path / "results" / "scores.parquet")
    text = end_of_run(tmp_path / "results")
    assert all(ch.isprintable() or ch == "\n" for ch in text)
    shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in seq)
    assert f"a{shown}" in text
    header, first, second = text.splitlines()[-3:]
    assert first.index("70.0") == second.index("75.0")  # still one cell per name


def test_measured_energies_are_ranked_apart_from_estimates_and_each_row_says_which():
    """An estimated CPU row never beats a measured GPU row in its band, and the table says
    per row which energy is an estimate, not one note over measured rows."""
    scores = scores_frame(
        [
            {"model": "gpu-a", "energy_per_image_j": 0.002, "top1": 75.0},
            {"model": "gpu-a", "energy_per_image_j": 0.0001, "top1": 75.0, "device_label": "cpu",
             "energy_is_estimate": True},
            {"model": "cpu-b", "energy_per_image_j": 0.003, "top1": 80.0, "device_label": "cpu",
             "energy_is_estimate": True},
            {"model": "cpu-c", "energy_per_image_j": 0.03, "top1": 70.0, "device_label": "cpu",
             "energy_is_estimate": True},
        ]
    )  # fmt: skip
    best, note = best_per_energy_band(scores)
    assert best["model"].tolist() == ["gpu-a", "cpu-c"]  # gpu-a at its measured energy
    assert best["device_label"].tolist() == ["h200", "cpu"]
    assert note == ""
    rows = format_best(best).splitlines()[1:]
    assert [row.split()[-2] for row in rows] == ["measured", "ESTIMATED"]


def test_a_summary_without_the_batch_run_shows_the_batch_asked_for():
    scores = scores_frame(
        [
            {"model": "a", "energy_per_image_j": 0.002, "top1": 70.0, "batch_size": float("nan"),
             "batch_size_requested": 16},
            {"model": "b", "energy_per_image_j": 0.02, "top1": 75.0, "batch_size": float("nan")},
        ]
    )  # fmt: skip
    text = format_best(best_per_energy_band(scores)[0])
    assert "nan" not in text
    first, second = (row.split() for row in text.splitlines()[1:])
    assert first[first.index("fp32") + 1] == "16" and second[second.index("fp32") + 1] == "-"


def test_the_end_of_a_run_counts_the_predicted_configurations(tmp_path):
    from joulebench.analysis.best_models import predicted_lines

    assert predicted_lines(tmp_path / "predicted.parquet") == []  # none made
    pd.DataFrame(
        {
            "model": ["a", "b", "c"],
            "energy_per_image_j": [0.1, 0.2, float("nan")],
            "pi_level": [0.9, 0.9, 0.9],
        }
    ).to_parquet(tmp_path / "predicted.parquet")
    (line,) = predicted_lines(tmp_path / "predicted.parquet")
    assert "2 configurations of 2 models not measured, with 90% intervals" in line
    assert "1 not predicted" in line
