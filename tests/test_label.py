"""Energy labels: what the card says (worked by hand on tests/decision_rows.py), that every
string is text (escaped in the SVG, not parsed in the PNG), and the command's files."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from decision_rows import decision_summary, profile_row

from joulebench import __version__
from joulebench.analysis.best_configs import DecisionError
from joulebench.report.label import card_for, label_png, label_svg, run_label

HOSTILE = "<script>alert(1)</script>&$x^$"


def _texts(svg: str) -> list[str]:
    return [t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]


def test_the_card_shows_the_least_energy_configuration_with_its_ci():
    card = card_for(decision_summary(), "mid")
    assert (card.method, card.batch_size, card.device_label) == ("fp16", 64, "gpu")
    assert card.energy_per_1k_j == pytest.approx(9.0)  # 9 mJ per image
    assert card.ci95_half_per_1k_j == pytest.approx(1.0)
    assert card.top1 == 76.0 and card.grade == "A" and not card.estimate
    texts = _texts(label_svg(card))
    assert "mid" in texts and "gpu · fp16 · batch 64" in texts
    assert "9 J ± 1 J" in texts and "measured (energy counter)" in texts
    assert any(f"joulebench {__version__}" in t for t in texts)


def test_a_chosen_configuration_and_its_errors():
    card = card_for(decision_summary(), "big", method="fp32", batch_size=1)
    assert card.energy_per_1k_j == pytest.approx(90.0)
    with pytest.raises(DecisionError, match="unknown model 'bgi'; closest: big"):
        card_for(decision_summary(), "bgi")
    with pytest.raises(DecisionError, match="big has no method 'int8'; it has: fp16, fp32"):
        card_for(decision_summary(), "big", method="int8")
    flagged = [profile_row("f", "fp32", 1, 0.01, 0.001, 5.0, 200.0, flags="other-load")]
    with pytest.raises(DecisionError, match=r"no comparable configuration to label \(flagged"):
        card_for(decision_summary(flagged, top1={"f": 70.0}), "f")


def test_an_estimate_says_so():
    rows = [
        profile_row(
            "e", "fp32", 1, 0.01, 0.001, 5.0, 200.0, meter="estimate:tdp-linear", is_estimate=True
        )
    ]
    card = card_for(decision_summary(rows, top1={"e": 70.0}), "e")
    assert card.estimate and "ESTIMATE (power model)" in _texts(label_svg(card))


def test_hostile_names_are_text_in_both_renderings(tmp_path):
    rows = [profile_row(HOSTILE, "fp32", 1, 0.01, 0.001, 5.0, 200.0)]
    card = card_for(decision_summary(rows, top1={HOSTILE: 70.0}), HOSTILE)
    svg = label_svg(card)
    assert "<script" not in svg and HOSTILE in _texts(svg)  # escaped, and reads back as text
    png = label_png(card, tmp_path / "l.png")  # mathtext would raise on "$x^$"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_command_writes_svg_and_png(tmp_path, capsys):
    from joulebench.cli import main

    summary = tmp_path / "summary.parquet"
    decision_summary().to_parquet(summary)
    out = tmp_path / "labels" / "small.a1"
    assert main(["label", "small", "--summary", str(summary), "--output", str(out)]) == 0
    svg, png = tmp_path / "labels" / "small.a1.svg", tmp_path / "labels" / "small.a1.png"
    assert svg.is_file() and png.stat().st_size > 5000
    assert main(["label", "nope", "--summary", str(summary)]) == 2
    assert "unknown model 'nope'" in capsys.readouterr().err
    paths = run_label(summary, "small", output=tmp_path / "x.svg")
    assert [p.name for p in paths] == ["x.svg", "x.png"]
