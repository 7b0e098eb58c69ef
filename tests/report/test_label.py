"""Energy labels: what the card says (worked by hand on tests/helpers/decision_rows.py), that every
string is text (escaped in the SVG, not parsed in the PNG), and the command's files."""

from __future__ import annotations

import dataclasses
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.decision_rows import decision_summary, profile_row

from joulebench import __version__
from joulebench.analysis.best_configs import DecisionError
from joulebench.report.label import Card, card_for, label_png, label_svg, run_label

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


# --- names from a published summary: files stay in results/, text stays text (issue 21) -------

ESCAPES = "\x1b]0;owned\x07\x1b[2J\r\x00\x9b\u202e"


def _summary_with(tmp_path, model: str, device_label: str = "gpu"):
    rows = [profile_row(model, "fp32", 1, 0.01, 0.001, 5.0, 200.0, device_label=device_label)]
    path = tmp_path / "summary.parquet"
    decision_summary(rows, configs=[], top1={model: 70.0}).to_parquet(path)
    return path


# "{tmp}" is the test's folder: an absolute name points into it, and ".." climbs at most to it,
# so even a regression writes nothing outside tmp_path.
@pytest.mark.parametrize(
    ("model", "device_label"),
    [
        ("m", "{tmp}/elsewhere/x"),
        ("m", "../../x"),
        ("../../../m", "gpu"),
        ("org/model", "gpu"),
        ("{tmp}/abs/m", ".."),
        ("m\x00", "gpu"),
        ("", "gpu"),
    ],
)
def test_the_default_path_stays_in_results_labels(tmp_path, monkeypatch, model, device_label):
    model, device_label = (s.replace("{tmp}", str(tmp_path)) for s in (model, device_label))
    summary = _summary_with(tmp_path, model, device_label)
    work = tmp_path / "a" / "b" / "c" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    svg, png = run_label(summary, model)
    labels = (work / "results" / "labels").resolve()
    assert [p.resolve().parent.parent for p in (svg, png)] == [labels, labels]
    written = sorted(p.resolve() for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted([summary.resolve(), (work / svg).resolve(), (work / png).resolve()])


def test_ordinary_names_keep_todays_path(tmp_path, monkeypatch):
    summary = _summary_with(tmp_path, "resnet18.a1_in1k", "h200-0")
    monkeypatch.chdir(tmp_path)
    svg, png = run_label(summary, "resnet18.a1_in1k")
    assert svg == Path("results/labels/h200-0/resnet18.a1_in1k.svg")
    assert png == Path("results/labels/h200-0/resnet18.a1_in1k.png")


def test_output_naming_a_folder_writes_inside_it(tmp_path):
    summary = _summary_with(tmp_path, "small.a1")
    paths = run_label(summary, "small.a1", output=f"{tmp_path / 'new'}/")  # not there yet
    assert paths == [tmp_path / "new" / "small.a1.svg", tmp_path / "new" / "small.a1.png"]
    (tmp_path / "there").mkdir()
    paths = run_label(summary, "small.a1", output=tmp_path / "there")  # a folder, no slash
    assert [p.parent for p in paths] == [tmp_path / "there"] * 2
    assert not (tmp_path / "new.svg").exists() and not (tmp_path / "there.svg").exists()
    assert all(p.is_file() for p in paths)


def test_an_unwritable_output_is_one_clear_line(tmp_path, capsys):
    from joulebench.cli import main

    summary = _summary_with(tmp_path, "small.a1")
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    assert main(["label", "small.a1", "--summary", str(summary), "-o", f"{blocker}/x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("joulebench: error: cannot write the label ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and str(blocker) in err


def test_an_output_that_is_a_special_file_is_refused_not_suffixed(tmp_path, capsys):
    """`-o /dev/null` once wrote /dev/null.svg and /dev/null.png."""
    from joulebench.cli import main

    summary = _summary_with(tmp_path, "small.a1")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for special in ("/dev/null", str(fifo)):
        assert main(["label", "small.a1", "--summary", str(summary), "-o", special]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"joulebench: error: --output {special}: not a file path (it is a device or other "
            "special file); give a path stem or a folder\n"
        )
    assert not (tmp_path / "pipe.svg").exists() and not (tmp_path / "pipe.png").exists()


def _card(**fields) -> Card:
    return dataclasses.replace(card_for(decision_summary(), "mid"), **fields)


def _code_points():
    """Every code point XML or a terminal might choke on, with ordinary ones around them."""
    ranges = [(0, 0x300), (0x2000, 0x2070), (0xD800, 0xD810), (0xDFF0, 0xE010)]
    ranges += [(0xFDD0, 0xFDF0), (0xFFF0, 0x10010), (0xE0000, 0xE0080), (0x10FFF0, 0x110000)]
    return "".join(chr(c) for lo, hi in ranges for c in range(lo, hi))


def test_the_svg_is_valid_xml_for_any_character():
    chars = _code_points()
    for i in range(0, len(chars), 20):
        chunk = chars[i : i + 20]
        card = _card(model=chunk, device_label=chunk, method=chunk, meter=chunk, date=chunk)
        texts = _texts(label_svg(card))  # parses: no character XML forbids
        assert all(t.isprintable() for t in texts), chunk


def test_control_and_bidi_characters_are_shown_as_escapes(tmp_path):
    card = _card(model="ab\u202egnp.exe", device_label="g\x00pu", meter=ESCAPES)
    texts = _texts(label_svg(card))
    assert "ab\\u202egnp.exe" in texts  # the override is visible, not obeyed
    assert any(t.startswith("g\\x00pu · fp16") for t in texts)
    assert any(t.startswith("meter \\x1b]0;owned\\x07") for t in texts)
    assert all(t.isprintable() for t in texts)  # no control or bidi character left
    png = label_png(card, tmp_path / "l.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_function_of_the_label_is_long():
    import inspect

    import joulebench.report.label as label

    lengths = {
        name: len(inspect.getsource(f).splitlines())
        for name, f in inspect.getmembers(label, inspect.isfunction)
        if f.__module__ == label.__name__
    }
    assert max(lengths.values()) <= 60, lengths
