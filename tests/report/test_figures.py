"""Figures: every one is drawn from a small synthetic study, degenerate input included, and
estimated energies say so on the axis.

The studies drawn whole (estimated, measured, default-like, all flagged, 2,000 rows) are
drawn once per module (`drawn_*` fixtures keep each saved figure and its texts); a test of
one property of a drawn figure looks at it there. Tests of other inputs draw their own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO
from helpers.figure_study import (
    DEFAULT_MODELS,
    default_like_study,
    default_study_as_run,
    study_tables,
    synthetic_study,
)

from joulebench.analysis.fits import all_fits
from joulebench.analysis.score import score_summary
from joulebench.analysis.summary import build_summary
from joulebench.report import figures
from joulebench.report.figures import plot, registry


def _watch_saves(monkeypatch, look) -> None:
    """Call `look(fig, stem)` on every figure just before a figure module saves it."""
    real_save = plot.save

    def spy(fig, stem):
        look(fig, stem)
        return real_save(fig, stem)

    monkeypatch.setattr(plot, "save", spy)


def _assert_written(paths):
    assert sorted(p.suffix for p in paths) == [".pdf", ".png"]
    for p in paths:
        assert p.stat().st_size > 1000, p
        head = p.read_bytes()[:8]
        assert head.startswith(b"%PDF") if p.suffix == ".pdf" else head == b"\x89PNG\r\n\x1a\n"
    assert not [q for q in paths[0].parent.iterdir() if q.name.endswith(".tmp")]


# --- what a figure shows: its texts with their extents, as saved ------------------------------


def _drawn_texts(fig) -> list:
    """Every piece of text the saved figure shows, with its extent in pixels: tick labels of
    ticks in view, axis labels, titles, legend entries and titles, annotations."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    tick_labels, in_view = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            slack = 1e-9 * max(abs(lo), abs(hi), 1e-300)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for label in (tick.label1, tick.label2):
                    tick_labels.add(id(label))
                    if lo - slack <= tick.get_loc() <= hi + slack:
                        in_view.add(id(label))
    texts = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        if id(t) in tick_labels and id(t) not in in_view:
            continue
        texts.append((t, t.get_window_extent(renderer)))
    return texts


@dataclass
class Drawn:
    """Figures drawn by render_all from `tables`: their paths, and each figure and its texts
    as saved."""

    tables: tuple
    paths: dict
    figs: dict
    texts: dict

    def strings(self, name: str) -> list[str]:
        return [t.get_text() for t, _ in self.texts[name]]

    def said(self, name: str) -> list[str]:
        """The figure's own texts (what a "No data" figure writes), not legends or ticks."""
        fig = self.figs[name]
        return [t.get_text() for t in [*fig.texts, *(t for ax in fig.axes for t in ax.texts)]]

    def no_data(self, name: str) -> bool:
        return any(s.startswith("No data") for s in self.said(name))


def _draw_all(tables, outdir, *, texts: bool = False, write: bool = True, **kw) -> Drawn:
    """render_all(*tables, outdir, **kw), keeping each figure (and, with `texts`, the texts
    it shows, measured before it is saved; without `write`, figures are drawn, not saved)."""
    figs, shown = {}, {}

    def keep(fig, stem):
        figs[Path(stem).name] = fig
        if texts:
            shown[Path(stem).name] = _drawn_texts(fig)

    with pytest.MonkeyPatch.context() as mp:
        _watch_saves(mp, keep)
        if not write:
            mp.setattr(plot, "save", lambda fig, stem: keep(fig, stem) or [])
        paths = figures.render_all(*tables, outdir, **kw)
    return Drawn(tuple(tables), paths, figs, shown)


def _axis_labels(fig) -> list[str]:
    seen = [fig.get_supxlabel(), fig.get_supylabel()]
    for ax in fig.axes:
        seen.extend([ax.get_xlabel(), ax.get_ylabel()])
    return seen


@pytest.fixture(scope="module")
def estimated():
    return study_tables(estimated=True)


@pytest.fixture(scope="module")
def measured():
    return study_tables(estimated=False)


@pytest.fixture(scope="module")
def drawn_estimated(estimated, tmp_path_factory):
    return _draw_all(estimated, tmp_path_factory.mktemp("estimated"))


@pytest.fixture(scope="module")
def drawn_measured(measured, tmp_path_factory):
    return _draw_all(measured, tmp_path_factory.mktemp("measured"))


@pytest.fixture(scope="module")
def drawn_default(tmp_path_factory):
    return _draw_all(default_like_study(""), tmp_path_factory.mktemp("default"), texts=True)


@pytest.fixture(scope="module")
def drawn_flagged(tmp_path_factory):
    """The default study's shape with every row flagged other-load (a busy CPU)."""
    tables = default_like_study("other-load")
    return _draw_all(tables, tmp_path_factory.mktemp("flagged"), texts=True)


BIG_METHODS = ("fp32", "bf16", "fp16-amp", "channels_last-compile")


@pytest.fixture(scope="module")
def drawn_big(tmp_path_factory):
    tables = study_tables(n_models=250, methods=BIG_METHODS, batch_sizes=(1, 8), estimated=False)
    assert len(tables[0]) == 2000
    return _draw_all(tables, tmp_path_factory.mktemp("big"), texts=True)


def many_devices_study():
    """Issue 35's 300,000-row probe in miniature: an estimated CPU listed first, then seven
    measured GPUs with as many rows each, 60 models (more than are drawn thin), failures, rows
    flagged four ways and models without a top-1. Returns (summary, scores, fits, trace)."""
    profile, catalog, accuracy, trace = synthetic_study(
        n_models=60, methods=("fp32", "bf16"), batch_sizes=(1, 8, 32), failures=3
    )
    for start, step, flag in [(0, 7, "other-load"), (3, 11, "other-process"), (5, 13, "mig")]:
        profile.loc[start::step, "flags"] = flag  # the same rows of every device
    profile.loc[2::17, "energy_per_image_cv"] = 0.9  # high-spread
    measured = profile["is_estimate"].where(profile["is_estimate"].isna(), False)
    gpus = [
        profile.assign(device_label=f"h200-{k}", meter="nvml", is_estimate=measured)
        for k in range(7)
    ]
    profile = pd.concat([profile, *gpus], ignore_index=True)
    accuracy.loc[::9, "top1"] = np.nan
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary, reference_model="resnet_0.in1k")
    return summary, scores, all_fits(summary, baseline_method="fp32"), trace


@pytest.fixture(scope="module")
def drawn_many_devices(tmp_path_factory):
    return _draw_all(many_devices_study(), tmp_path_factory.mktemp("many"), texts=True)


@pytest.fixture(scope="module")
def drawn_as_run(tmp_path_factory):
    """The default study as a first run makes it: its models by name, three methods, a few
    rows flagged other-load (helpers.figure_study.AS_RUN_FLAGS)."""
    return _draw_all(default_study_as_run(), tmp_path_factory.mktemp("as_run"), texts=True)


# --- every figure, and what its axes say ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("drawn", ["drawn_estimated", "drawn_measured"])
def test_every_figure_is_written(drawn, request):
    out = request.getfixturevalue(drawn)
    assert set(out.paths) == set(figures.FIGURE_NAMES)
    for paths in out.paths.values():
        _assert_written(paths)


def test_estimated_energies_are_labelled(drawn_estimated):
    names = [
        "accuracy_vs_energy",
        "energy_vs_factors",
        "method_savings",
        "energy_vs_batch_size",
    ]  # throughput_vs_energy: not drawn for an estimate (test_throughput_is_not_drawn_...)
    for name in names:
        labels = _axis_labels(drawn_estimated.figs[name])
        energy_axes = [lab for lab in labels if "Energy" in lab or "Saving" in lab]
        assert energy_axes, (name, labels)
        assert all("estimated" in lab for lab in energy_axes), (name, labels)


def test_measured_energies_are_not_labelled_estimated(drawn_measured):
    labels = _axis_labels(drawn_measured.figs["accuracy_vs_energy"])
    assert [lab for lab in labels if re.fullmatch(r"Energy per image \((J|mJ|µJ)\)", lab)]


def test_mixed_meters_say_partly_estimated():
    est = pd.Series([True, False])
    assert "partly estimated" in figures.energy_label(est)
    assert figures.energy_label(pd.Series([True, True])).endswith("(J, estimated)")


def test_estimated_power_trace_is_labelled(measured, tmp_path, monkeypatch):
    trace = measured[3]
    saved = []
    _watch_saves(monkeypatch, lambda fig, stem: saved.append(fig))
    figures.power_trace(trace, tmp_path / "p", idle_power_w=20.0, estimated=True)
    (fig,) = saved
    assert any("Power" in lab and "estimated" in lab for lab in _axis_labels(fig))


def test_degenerate_input_draws_no_data(tmp_path):
    profile, catalog, accuracy, _ = synthetic_study(n_models=1, batch_sizes=(8,))
    profile["status"] = "error"
    profile["energy_per_image_j"] = np.nan
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary)
    fits = all_fits(summary, baseline_method="fp32")
    out = _draw_all((summary, scores, fits, None), tmp_path)
    for paths in out.paths.values():
        _assert_written(paths)
    assert set(out.figs) == set(figures.FIGURE_NAMES)
    said = [s for name in out.figs for s in out.said(name) if s.startswith("No data")]
    assert len(said) == len(figures.FIGURE_NAMES)  # one each


def test_one_model_still_draws(tmp_path):
    tables = study_tables(
        n_models=1, batch_sizes=(8,), methods=("fp32",), failures=0, estimated=False
    )
    out = _draw_all((*tables[:3], None), tmp_path)
    for paths in out.paths.values():
        _assert_written(paths)
    points = {
        name for name, fig in out.figs.items() if any(ax.collections or ax.lines for ax in fig.axes)
    }
    assert {"accuracy_vs_energy", "energy_vs_factors", "throughput_vs_energy"} <= points


def test_stem_with_dots_keeps_its_name(estimated, tmp_path):
    paths = figures.accuracy_vs_energy(estimated[1], tmp_path / "resnet50.a1_in1k")
    assert {p.name for p in paths} == {"resnet50.a1_in1k.pdf", "resnet50.a1_in1k.png"}


def test_no_torch_on_the_figures_path():
    code = (
        "import sys\n"
        "import joulebench.report.figures, joulebench.analysis.score\n"
        "import joulebench.analysis.fits, joulebench.analysis.summary\n"
        "bad = [m for m in ('torch', 'timm') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_dynamic_energy_is_named_on_the_axis(tmp_path, monkeypatch):
    profile, catalog, accuracy, _ = synthetic_study(n_models=6)
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary, energy="dynamic")
    saved = []
    _watch_saves(monkeypatch, lambda fig, stem: saved.append(fig))
    figures.accuracy_vs_energy(scores, tmp_path / "a")
    pattern = r"Energy above idle per image \((J|mJ|µJ), estimated\)"
    labels = _axis_labels(saved[0])
    assert [lab for lab in labels if re.fullmatch(pattern, lab)], labels


def test_figures_from_a_published_summary_without_torch(tmp_path):
    """The figures-from-data path, end to end in a fresh interpreter: torch never loads."""
    from joulebench.analysis.summary import write_summary

    profile, catalog, accuracy, _ = synthetic_study(n_models=6)
    write_summary(build_summary(profile, catalog, accuracy), tmp_path / "published.parquet")
    code = (
        "import sys\n"
        "from joulebench.analysis.summary import read_summary\n"
        "from joulebench.analysis.score import score_summary\n"
        "from joulebench.analysis.fits import all_fits\n"
        "from joulebench.report.figures import render_all\n"
        f"s = read_summary({str(tmp_path / 'published.parquet')!r})\n"
        "out = render_all(s, score_summary(s), all_fits(s, baseline_method='fp32'), None,\n"
        f"                 {str(tmp_path / 'figs')!r})\n"
        f"assert len(out) == {len(figures.FIGURE_NAMES)}\n"
        "assert 'torch' not in sys.modules and 'timm' not in sys.modules\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert len(list((tmp_path / "figs").glob("*.png"))) == len(figures.FIGURE_NAMES)


def test_train_vs_inference_without_training_rows_says_so(drawn_estimated):
    fig = drawn_estimated.figs["train_vs_inference"]  # the study is inference only
    _assert_written(drawn_estimated.paths["train_vs_inference"])
    assert not [ax for ax in fig.axes if ax.collections or ax.lines]
    assert [t for t in fig.texts + fig.axes[0].texts if t.get_text().startswith("No data")]


def test_train_vs_inference_draws_each_model_at_its_two_energies(estimated, tmp_path, monkeypatch):
    """One point per (device, method, model, batch size) measured in both phases, at
    (inference energy, training energy) in the unit its axes name, in its method's colour;
    rows that failed in either phase or have no partner are left out."""
    from matplotlib.colors import to_rgba

    summary = estimated[0]
    # training costs a different multiple per row, so swapped or mismatched pairs show
    factor = 2.0 + (np.arange(len(summary)) % 7) / 3
    train = summary.assign(phase="train", energy_per_image_j=summary["energy_per_image_j"] * factor)
    train = train[train["model"] != summary["model"].iloc[-1]]  # a model never trained
    ok_in_inference = train.index[train["status"] == "ok"][3]
    train.loc[ok_in_inference, ["status", "energy_per_image_j"]] = ["oom", np.nan]
    both = pd.concat([summary, train], ignore_index=True)
    saved = []
    _watch_saves(monkeypatch, lambda fig, stem: saved.append(fig))
    _assert_written(figures.train_vs_inference(both, tmp_path / "tv"))

    key = ["device_label", "method", "model", "batch_size_requested"]
    ok = [d[(d["status"] == "ok") & (d["energy_per_image_j"] > 0)] for d in (summary, train)]
    want = ok[0].merge(ok[1], on=key, suffixes=("_inference", "_train"))
    # 2 rows failed in both phases, 6 of the untrained model, 1 failed in training only
    assert len(want) == len(summary) - 2 - 6 - 1
    (fig,) = saved
    (ax,) = fig.axes
    for label, base in (
        (ax.get_xlabel(), "Inference energy per image"),
        (ax.get_ylabel(), "Training energy per sample"),
    ):
        assert re.fullmatch(base + r" \((J|mJ|µJ), estimated\)", label), label
    unit = re.search(r"\((J|mJ|µJ),", ax.get_xlabel()).group(1)
    scale = dict(figures.ENERGY_UNITS)[unit]
    colours = dict(zip(sorted(want["method"].unique()), figures.OKABE_ITO, strict=False))
    drawn = []
    for points in ax.collections:
        (method,) = [
            m for m, c in colours.items() if np.allclose(points.get_edgecolor(), to_rgba(c))
        ]
        drawn += [(method, x / scale, y / scale) for x, y in points.get_offsets()]
    drawn.sort()
    expected = sorted(
        zip(
            want["method"],
            want["energy_per_image_j_inference"],
            want["energy_per_image_j_train"],
            strict=True,
        )
    )
    assert [d[0] for d in drawn] == [e[0] for e in expected]
    np.testing.assert_allclose([d[1:] for d in drawn], [e[1:] for e in expected], rtol=1e-9)
    (diagonal,) = ax.lines  # the dotted line of equal energy spans the points
    x, y = diagonal.get_data()
    np.testing.assert_allclose(x, y)
    values = np.array([d[1:] for d in drawn]) * scale
    np.testing.assert_allclose([min(x), max(x)], [values.min(), values.max()])


# --- readable text: plain numbers, nothing overlapping, nothing cut off ---------------------

PLAIN_NUMBER = re.compile(r"^−?[0-9][0-9,]*(\.[0-9]+)?$")


def _text_problems(fig, name: str, texts=None) -> list[str]:
    """Text cut off by the figure's edge, or overlapping other text (`texts`: _drawn_texts)."""
    problems = []
    texts = _drawn_texts(fig) if texts is None else texts
    page = fig.bbox
    for t, box in texts:
        if (
            box.x0 < page.x0 - 1
            or box.x1 > page.x1 + 1
            or box.y0 < page.y0 - 1
            or box.y1 > page.y1 + 1
        ):
            problems.append(f"{name}: {t.get_text()!r} is cut off by the figure's edge")
    for i, (a, box_a) in enumerate(texts):
        for b, box_b in texts[i + 1 :]:
            if box_a.shrunk(0.98, 0.9).overlaps(box_b.shrunk(0.98, 0.9)):
                problems.append(f"{name}: {a.get_text()!r} overlaps {b.get_text()!r}")
    return problems


def _energy_axes(fig) -> list:
    """(axis, label) of every axis whose label says it shows an energy in joules."""
    out = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            label = axis.get_label().get_text()
            if re.search(r"\((µJ|mJ|J)\b", label):
                out.append((axis, label))
    if re.search(r"\((µJ|mJ|J)\b", fig.get_supylabel()):
        out += [(ax.yaxis, fig.get_supylabel()) for ax in fig.axes]
    return out


def _readability(drawn: Drawn) -> dict:
    """{figure: [problems]}: overlapping or cut-off text, energy ticks that are not plain
    numbers or missing, mathtext."""
    found = {}
    for name, fig in drawn.figs.items():
        texts = drawn.texts[name]
        problems = _text_problems(fig, name, texts)
        for axis, label in _energy_axes(fig):
            ticks = axis.get_ticklabels(which="both")
            shown = [t.get_text() for t, _ in texts if t in ticks]
            bad = [s for s in shown if not PLAIN_NUMBER.match(s)]
            if bad:
                problems.append(f"{name}: energy axis {label!r} has tick labels {bad}")
            if not [s for s in shown if s]:
                problems.append(f"{name}: energy axis {label!r} has no tick label")
        for t, _ in texts:
            if re.search(r"\\mathdefault|\d\^\{|×\s*10", t.get_text()):
                problems.append(f"{name}: mathtext in {t.get_text()!r}")
        found[name] = problems
    return found


@pytest.mark.parametrize(
    "drawn", ["drawn_default", "drawn_flagged", "drawn_big", "drawn_as_run", "drawn_many_devices"]
)
@pytest.mark.slow
def test_figure_text_is_plain_and_never_overlaps(drawn, request):
    found = _readability(request.getfixturevalue(drawn))
    assert set(found) == set(figures.FIGURE_NAMES)
    problems = [p for ps in found.values() for p in ps]
    assert not problems, "\n".join(problems)


HOSTILE_LABELS = {
    "device_label": "gpu $x^$",
    "method": "fp16 $\\frac{1}{0}$",
    "family": "fam_$x^$_" + "w" * 10_000,
}


@pytest.mark.slow
def test_hostile_labels_print_as_text(tmp_path):
    """Mathtext-breaking and 10,000-character labels: every figure is written, the labels
    appear as written (cut short with an ellipsis, never parsed), nothing leaves the page."""
    profile, catalog, accuracy, trace = synthetic_study(n_models=8, estimated=False)
    profile["device_label"] = HOSTILE_LABELS["device_label"]
    profile.loc[profile["method"] == "bf16", "method"] = HOSTILE_LABELS["method"]
    catalog.loc[:3, "family"] = HOSTILE_LABELS["family"]
    trace["device_label"] = HOSTILE_LABELS["device_label"]
    trace.loc[trace["method"] == "bf16", "method"] = HOSTILE_LABELS["method"]
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary)
    fits = all_fits(summary, baseline_method="fp32")
    drawn = _draw_all((summary, scores, fits, trace), tmp_path, texts=True)
    found = _readability(drawn)
    assert set(found) == set(figures.FIGURE_NAMES)
    assert not [p for ps in found.values() for p in ps]
    for name in figures.FIGURE_NAMES:
        _assert_written([tmp_path / f"{name}.pdf", tmp_path / f"{name}.png"])
    text = "\n".join(s for name in drawn.figs for s in drawn.strings(name))
    assert "gpu $x^$" in text and "fp16 $\\frac{1}{0}$" in text
    assert "fam_$x^$_ww" in text and "…" in text and "w" * 100 not in text


def test_the_text_check_finds_overlaps_and_cut_off_text():
    fig, ax = plot.new_figure(2.0)
    ax.text(0.5, 0.5, "first label")
    ax.text(0.52, 0.5, "second label")
    off = ax.text(0.9, 0.2, "runs off the right edge")
    off.set_in_layout(False)  # else constrained layout shrinks the axes to make room
    problems = _text_problems(fig, "probe")
    assert any("overlaps" in p for p in problems)
    assert any("cut off" in p for p in problems)


def _figure_texts(monkeypatch, call) -> tuple[list[str], list]:
    """Texts and scatter collections of the figure `call` saves."""
    texts, collections = [], []

    def spy(fig, stem):
        texts.extend(t.get_text() for t, _ in _drawn_texts(fig))
        collections.extend(c for ax in fig.axes for c in ax.collections)

    _watch_saves(monkeypatch, spy)
    call()
    return texts, collections


def test_all_rows_flagged_are_drawn_hollow_and_named(drawn_flagged):
    """A busy CPU flags every row other-load: the headline figure shows them as flagged and
    says so, instead of "no model with both energy and top-1"."""
    scores = drawn_flagged.tables[1]
    assert not scores["scored"].any() and scores["top1"].notna().all()
    joined = "\n".join(drawn_flagged.strings("accuracy_vs_energy"))
    dots = [c for ax in drawn_flagged.figs["accuracy_vs_energy"].axes for c in ax.collections]
    assert "No data" not in joined and "failed or no top-1" not in joined
    assert "none graded: 5 flagged other-load" in joined
    assert "flagged other-load (5)" in joined
    assert sum(len(c.get_offsets()) for c in dots) == 5
    assert all(len(c.get_facecolors()) == 0 for c in dots)  # hollow: no face colour


def test_some_rows_flagged_beside_graded_ones(tmp_path, monkeypatch):
    profile, catalog, accuracy, _ = synthetic_study(n_models=6, batch_sizes=(8,), failures=0)
    profile.loc[profile["model"] == "resnet_0.in1k", "flags"] = "other-load"
    profile.loc[profile["model"] == "regnet_5.in1k", "energy_per_image_cv"] = 0.9
    accuracy.loc[accuracy["model"] == "convnext_3.in1k", "top1"] = np.nan
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary)
    texts, dots = _figure_texts(
        monkeypatch,
        lambda: figures.accuracy_vs_energy(scores, tmp_path / "a", method="fp32"),
    )
    joined = "\n".join(texts)
    assert "3 models graded" in joined
    assert "flagged other-load (1)" in joined and "hollow: flagged, not graded" in joined
    assert "flagged high-spread (1)" in joined
    assert "not shown: 1 without top-1" in joined
    assert sum(len(c.get_offsets()) for c in dots) == 5


def test_nothing_to_draw_names_the_reason(tmp_path, monkeypatch):
    profile, catalog, accuracy, _ = synthetic_study(n_models=4, batch_sizes=(8,), failures=0)
    accuracy["top1"] = np.nan
    accuracy["accuracy_source"] = "none"
    scores = score_summary(build_summary(profile, catalog, accuracy))
    texts, _ = _figure_texts(
        monkeypatch, lambda: figures.accuracy_vs_energy(scores, tmp_path / "a")
    )
    assert "No data: no model to plot: 8 without top-1" in texts


def test_impossible_throughput_does_not_take_the_figures_down(measured, tmp_path):
    summary = measured[0].copy()
    summary.loc[summary.index[:3], "throughput_img_s"] = -1.0
    summary.loc[summary.index[3], "throughput_img_s"] = 0.0
    _assert_written(figures.throughput_vs_energy(summary, tmp_path / "t"))


def test_energy_units_and_plain_tick_numbers():
    assert figures.energy_unit([2.0, 5.0, 0.5]) == ("J", 1.0)
    assert figures.energy_unit([0.002, 0.02, 0.2]) == ("mJ", 1e3)
    assert figures.energy_unit([3e-6, 4e-5]) == ("µJ", 1e6)
    assert figures.energy_unit([]) == ("J", 1.0)
    assert [figures.plain_number(v) for v in (0.002, 0.5, 1.0, 20.0, 1500.0, 3e4)] == [
        "0.002",
        "0.5",
        "1",
        "20",
        "1,500",
        "30,000",
    ]
    assert figures.plain_number(1.5e-4) == "0.00015"


def test_a_killed_figure_write_leaves_nothing_after_the_next_run(estimated, tmp_path):
    """kill -9 during savefig leaves a 0-byte temp file; the next run removes it."""
    estimated[1].to_parquet(tmp_path / "scores.parquet")
    out = tmp_path / "figs"
    draw = (
        "import pandas as pd\n"
        "from joulebench.report import figures\n"
        f"scores = pd.read_parquet({str(tmp_path / 'scores.parquet')!r})\n"
        f"figures.accuracy_vs_energy(scores, {str(out / 'accuracy_vs_energy')!r})\n"
    )
    die = (
        "import os, signal\n"
        "from matplotlib.figure import Figure\n"
        "def dying(self, fname, **kw):\n"
        "    open(fname, 'wb').close()\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "Figure.savefig = dying\n"
    )
    killed = subprocess.run([sys.executable, "-c", die + draw], capture_output=True)
    assert killed.returncode == -9
    left = [p.name for p in out.iterdir()]
    assert len(left) == 1 and left[0].startswith(".accuracy_vs_energy.pdf.")
    assert left[0].endswith(".tmp") and (out / left[0]).stat().st_size == 0
    rerun = subprocess.run([sys.executable, "-c", draw], capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "accuracy_vs_energy.pdf",
        "accuracy_vs_energy.png",
    ]


def test_temp_files_of_a_write_in_progress_are_left_alone(tmp_path):
    from joulebench.table_io import remove_stale_temps

    target = tmp_path / "figure.png"
    old = tmp_path / ".figure.png.abc123.tmp"
    fresh = tmp_path / ".figure.png.def456.tmp"  # another writer, started after us
    other = tmp_path / ".other.png.abc123.tmp"
    for p in (old, fresh, other):
        p.write_bytes(b"")
    os.utime(old, (1e9, 1e9))
    os.utime(other, (1e9, 1e9))
    assert remove_stale_temps(target) == [old]
    assert not old.exists() and fresh.exists() and other.exists()


def test_figures_emptied_by_flags_say_so(drawn_flagged):
    """All rows flagged other-load: the figures that then have nothing to draw say why."""
    said = {name: " ".join(drawn_flagged.strings(name)) for name in drawn_flagged.figs}
    said = {name: " ".join(text.split()) for name, text in said.items()}  # wrapped lines
    for name in ("energy_vs_factors", "method_savings", "energy_vs_batch_size"):
        assert "No data" in said[name] and "20 flagged other-load" in said[name], said[name]
    assert "20 flagged other-load" in said["throughput_vs_energy"]
    assert "no measured energy" not in "\n".join(said.values())


def test_grade_colours_are_the_shared_palette():
    """One palette for figures and page (palettes.py; tests/report/test_palettes.py holds its
    colours apart for every vision): the figures draw grades in exactly those colours."""
    from joulebench.report import palettes

    assert figures.GRADE_COLORS is palettes.GRADE_COLORS
    assert palettes.page_palettes()["grade"] == palettes.GRADE_COLORS
    assert palettes.page_palettes()["series"][:6] == list(figures.OKABE_ITO[:6])


# --- decisions: the energy-optimal front and what each method buys ----------------------------


def test_energy_optimal_front_draws_each_model_once_at_its_best(tmp_path, monkeypatch):
    from helpers.decision_rows import decision_summary

    from joulebench.analysis.best_configs import best_configs

    best = best_configs(decision_summary())
    drawn = []

    def spy(fig, stem):
        from matplotlib.collections import PathCollection

        for coll in fig.axes[0].collections:  # the scatter markers, not the CI bars
            if isinstance(coll, PathCollection):
                drawn.extend(map(tuple, coll.get_offsets()))

    _watch_saves(monkeypatch, spy)
    paths = figures.energy_optimal_front(best, tmp_path / "front")
    _assert_written(paths)
    points = sorted((round(x, 6), y) for x, y in drawn)  # mJ: fp16 batch 64 of each model
    assert points == [(3.0, 70.0), (9.0, 76.0), (25.0, 81.0)]


def test_method_value_is_each_method_against_the_models_best():
    from helpers.decision_rows import decision_summary

    t = figures.method_value_table(decision_summary()).set_index(["model", "method"])
    assert t.loc[("small", "fp16"), "ratio"] == pytest.approx(1.0)
    assert t.loc[("small", "fp32"), "ratio"] == pytest.approx(0.004 / 0.003)
    assert t.loc[("big", "fp32"), "ratio"] == pytest.approx(0.040 / 0.025)


def test_decision_figures_say_why_they_are_empty(tmp_path, monkeypatch):
    from helpers.decision_rows import decision_summary

    summary = decision_summary()
    summary["flags"] = "other-load"
    said = []
    monkeypatch.setattr(plot, "no_data", lambda stem, title, why: said.append(why) or [])
    figures.energy_optimal_front(figures.best_from(summary, summary, None), tmp_path / "f")
    figures.method_value(summary, tmp_path / "m")
    assert said == [
        "no model has a comparable configuration and a top-1",
        "no model has comparable energies for two methods",
    ]


def test_accuracy_figure_draws_the_law_the_comparison_picks(measured, drawn_measured):
    fig = drawn_measured.figs["accuracy_vs_energy"]
    legend = fig.legends[0]
    labels = [t.get_text() for t in legend.get_texts()]
    full_title = legend.get_title().get_text()
    dashed = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]
    law = measured[2]["accuracy_law"]
    title = full_title.splitlines()[0]  # "h200 · bf16 · batch 1 · 30 models graded"
    method, batch = title.split(" · ")[1], int(title.split(" · ")[2].split()[1])
    mine = law[(law["method"] == method) & (law["batch_size_requested"] == batch)]
    mine = mine[mine["subset"] == "all"]
    winner = mine.loc[mine["best_by_bic"].astype(bool), "form"].iloc[0]
    assert f"law: {winner}" in labels and len(dashed) == 1
    for form in set(mine["form"]) - {winner}:
        assert form in full_title


def test_node_scope_is_named_and_a_secondary_axis_shows_the_units_people_use(
    measured, tmp_path, monkeypatch
):
    """energy_scope node: the axis says whole node; figures.secondary_unit: a top axis in Wh
    or gCO2e per 1,000 images whose ticks follow the bottom's J (here 1 J = 0.2778 Wh/1k)."""
    summary = measured[0].copy()
    summary["energy_node_per_image_j"] = summary["energy_per_image_j"] * 1.5
    summary["host_is_estimate"] = False
    scores = score_summary(
        summary,
        reference_model="resnet_0.in1k",
        energy_scope="node",
        carbon={"grid_gco2e_per_kwh": 400},
    )
    seen = []

    def spy(fig, stem):
        for ax in fig.axes:
            seen.extend((a.get_xlabel(), a) for a in (ax, *ax.child_axes))  # top axis: a child

    _watch_saves(monkeypatch, spy)
    figures.accuracy_vs_energy(scores, tmp_path / "a", secondary_unit="gco2e_per_1k_images")
    labels = [label for label, _ in seen]
    assert any("whole node: GPU+CPU+DRAM" in lab for lab in labels), labels
    assert "gCO2e per 1,000 images (estimate)" in labels
    seen.clear()
    figures.accuracy_vs_energy(scores, tmp_path / "b", secondary_unit="wh_per_1k_images")
    (_, bottom), (_, top) = seen[0], next(x for x in seen if x[0] == "Wh per 1,000 images")
    scale = 1e3 if "(mJ" in bottom.get_xlabel() else (1e6 if "(µJ" in bottom.get_xlabel() else 1)
    assert top._functions[0](1.0 * scale) == pytest.approx(1000 / 3600)
    # without a grid intensity the CO2e axis is not drawn, and the figure says why
    plain = score_summary(summary, reference_model="resnet_0.in1k", energy_scope="node")
    seen.clear()
    figures.accuracy_vs_energy(plain, tmp_path / "c", secondary_unit="gco2e_per_1k_images")
    assert "gCO2e per 1,000 images (estimate)" not in [lab for lab, _ in seen]


def test_node_scope_names_the_fits_figures_whole_node_too(measured, tmp_path):
    """The fits fit the energy the score grades (energy_scope node: the node's), so the
    figures drawn from them (energy vs factors, energy vs batch size) say whole node too."""
    from joulebench.analysis.score import in_scope

    summary, _, _, trace = measured
    summary = summary.assign(
        energy_node_per_image_j=summary["energy_per_image_j"] * 1.5, host_is_estimate=False
    )
    scores = score_summary(summary, reference_model="resnet_0.in1k", energy_scope="node")
    fits = all_fits(in_scope(summary, "node"), baseline_method="fp32")
    drawn = _draw_all((summary, scores, fits, trace), tmp_path, write=False)
    for name in ("energy_vs_factors", "energy_vs_batch_size"):
        labels = _axis_labels(drawn.figs[name])
        assert any("whole node: GPU+CPU+DRAM" in lab for lab in labels), (name, labels)


# --- rows without a key: the summary's own not-profiled rows have no device, method, batch ----


def _study_with_an_unprofiled_model():
    """A study where one catalogued model never got a profile row (its build failed): the
    summary keeps it as a not-profiled row with NA device, method and batch size."""
    profile, catalog, accuracy, trace = synthetic_study(n_models=6, estimated=False)
    broken = catalog.iloc[[0]].assign(model="broken.in1k", status="error", reason="build failed")
    catalog = pd.concat([catalog, broken], ignore_index=True)
    summary = build_summary(profile, catalog, accuracy)
    return summary, trace


def _points(fig) -> list:
    return sorted(
        tuple(np.round(xy, 9))
        for ax in fig.axes
        for c in ax.collections
        for xy in np.asarray(c.get_offsets())
    )


def test_a_model_that_never_ran_keeps_the_figures(tmp_path):
    """Not-profiled rows (NA keys) and rows lacking a device, method, batch size or model are
    left out; every figure is still drawn from the rest, with the same points as without
    them. A row without a phase is drawn where the phase does not place it (throughput)."""
    summary, trace = _study_with_an_unprofiled_model()
    lone = summary[summary["status"] == "not-profiled"]
    assert len(lone) == 1
    assert lone[["device_label", "method", "batch_size_requested"]].isna().all(axis=None)
    extra = summary[summary["model"] == "convnext_3.in1k"].copy()  # copies with one key missing
    extra["model"] = [f"nokey_{i}.in1k" for i in range(len(extra))]
    for i, key in enumerate(["phase", "device_label", "method", "batch_size_requested", "model"]):
        extra.iloc[i, extra.columns.get_loc(key)] = pd.NA
    dirty = pd.concat([summary, extra.iloc[:5]], ignore_index=True)
    clean = pd.concat(
        [summary[summary["status"] != "not-profiled"], extra.iloc[[0]]], ignore_index=True
    )

    def draw(table, out, write):
        scores = score_summary(table, reference_model="resnet_0.in1k")
        fits = all_fits(table, baseline_method="fp32")
        return _draw_all((table, scores, fits, trace), tmp_path / out, write=write)

    with_na, without = draw(dirty, "dirty", True), draw(clean, "clean", False)
    for paths in with_na.paths.values():
        _assert_written(paths)
    assert set(with_na.figs) == set(figures.FIGURE_NAMES)
    no_sweep = {"train_vs_inference", "power_limit_sweep"}  # inference only; no power limits
    assert {n for n in with_na.figs if with_na.no_data(n)} == no_sweep
    for name in ("accuracy_vs_energy", "energy_vs_factors", "throughput_vs_energy"):
        assert _points(with_na.figs[name]) == _points(without.figs[name]), name


def test_figures_without_any_placeable_row_say_why(tmp_path, monkeypatch):
    """Every row lacks its device: each figure says "No data" and counts the rows so."""
    summary, trace = _study_with_an_unprofiled_model()
    summary["device_label"] = pd.NA
    trace["device_label"] = pd.NA
    scores = score_summary(summary, reference_model="resnet_0.in1k")
    said = {}  # (the "No data" figures themselves are drawn in test_degenerate_input_...)
    monkeypatch.setattr(
        plot, "no_data", lambda stem, title, why, **_: said.update({stem.name: why})
    )
    figures.render_all(summary, scores, all_fits(summary, baseline_method="fp32"), trace, tmp_path)
    assert set(said) == set(figures.FIGURE_NAMES)
    n_ok = int((summary["status"] == "ok").sum())
    n_failed = int((~summary["status"].isin(["ok", "not-profiled"])).sum())
    n_not = int((summary["status"] == "not-profiled").sum())
    for name, why in said.items():
        if name == "train_vs_inference":
            assert (
                why
                == "the study measured inference only (phases: [inference, train] adds training)"
            )
        elif name == "power_limit_sweep":  # the study asked for no power limit
            assert why.startswith("the study sweeps no power limit"), why
        elif name == "power_trace":
            assert why == f"no power samples to plot: {len(trace)} samples without device_label"
        else:
            counts = f"{n_ok} without device_label, {n_failed} failed, {n_not} not measured"
            assert counts in why, (name, why)


def test_skipped_rows_are_counted_as_skipped_not_failed():
    """Issue 40 item 10: tf32 and CUDA graphs on a device without them are `skipped` rows by
    design; the notes called them "failed"."""
    from joulebench.report.figures.rows import not_comparable

    summary, _ = _study_with_an_unprofiled_model()
    ok = summary.index[summary["status"] == "ok"]
    summary.loc[ok[:2], "status"] = "skipped"
    summary.loc[ok[2:3], "status"] = "oom"
    why = not_comparable(summary)
    assert "2 skipped" in why and "failed" in why
    not_measured = int((summary["status"] == "not-profiled").sum())
    assert not_measured and f"{not_measured} not measured" in why, why  # a budget's, not failed
    n_failed = int((~summary["status"].isin(["ok", "skipped", "not-profiled"])).sum())
    assert f"{n_failed} failed" in why, why


# --- the registry: names declared once, each figure with its caption --------------------------


def test_every_declared_figure_is_registered_with_its_caption():
    assert set(figures.REGISTRY) == set(figures.FIGURE_NAMES)
    assert len(set(figures.FIGURE_NAMES)) == len(figures.FIGURE_NAMES)
    for name, spec in figures.REGISTRY.items():
        assert spec.name == name and set(spec.needs) <= set(registry.TABLES), name
        caption = REPO / "workflow" / "report" / f"{name}.rst"
        assert caption.is_file() and caption.read_text().strip(), caption
    captions = {p.stem for p in (REPO / "workflow" / "report").glob("*.rst")}
    assert captions == set(figures.FIGURE_NAMES)  # no caption of a figure that is gone


def test_a_figure_must_be_declared_and_name_known_tables():
    with pytest.raises(ValueError, match="not declared"):
        registry.figure("energy_vs_mood", needs=("summary",))
    with pytest.raises(ValueError, match="unknown tables"):
        registry.figure("power_trace", needs=("traces",))
    with pytest.raises(ValueError, match="registered twice"):
        registry.figure("power_trace", needs=("trace",))(lambda inputs, stem: [])


def test_a_figure_is_handed_only_the_tables_it_needs(estimated):
    """`needs` is what a figure reads: the others are None in what it is handed."""
    summary, scores, fits, trace = estimated
    inputs = registry.Inputs(
        summary=summary,
        scores=scores,
        fits=fits,
        trace=trace,
        best_configs=None,
        group={},
        trace_config={},
        idle_power_w=None,
        trace_estimated=False,
        trace_simulated=False,
        max_energy_cv=None,
        why="",
        secondary_unit=None,
    )
    only = inputs.only(("fits",))
    assert only.fits is fits
    assert only.summary is None and only.scores is None and only.trace is None


def test_the_workflow_learns_the_figure_names_without_matplotlib():
    """What the Snakefile imports (every parse, every cluster job) loads no matplotlib."""
    sources = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    modules = sorted(
        {
            m
            for p in sources
            for m in re.findall(r"^from (joulebench[\w.]*) import", p.read_text(), re.M)
        }
    )
    assert "joulebench.report.figure_names" in modules
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib')\n"
        "assert not bad, bad[:5]\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def _sweep_summary() -> pd.DataFrame:
    """A measured sweep of two models (made-up energies: a knee at 420 W) beside a plain
    method, a failed cap and a simulated sweep."""
    rows = []
    for model, scale in (("small", 1.0), ("big", 3.0)):
        rows.append(dict(model=model, method="fp16", limit=np.nan, mj=1.2 * scale))
        for w, mj in ((700, 1.14), (560, 1.01), (420, 0.99), (350, 1.05)):
            rows.append(dict(model=model, method=f"fp16@{w}W", limit=float(w), mj=mj * scale))
    df = pd.DataFrame(rows).assign(
        device_label="h200",
        batch_size=64,
        batch_size_requested=64,
        phase="inference",
        status="ok",
        flags="",
        is_simulated=False,
        energy_is_estimate=False,
        energy_per_image_cv=0.01,
    )
    df["energy_per_image_j"] = df.pop("mj") / 1e3
    df["power_limit_readback_w"] = df.pop("limit")
    df["throughput_img_s"] = 600.0 * df["power_limit_readback_w"].fillna(700) / 700
    failed = df.iloc[[2]].assign(method="fp16@200W", status="error", power_limit_readback_w=200.0)
    sim = df.iloc[1:5].assign(device_label="g0", is_simulated=True)
    return pd.concat([df, failed, sim], ignore_index=True)


def test_power_limit_sweep_draws_each_line_with_its_cheapest_limit_ringed(tmp_path, monkeypatch):
    saved = []
    _watch_saves(monkeypatch, lambda fig, stem: saved.append(fig))
    _assert_written(figures.power_limit_sweep(_sweep_summary(), tmp_path / "sweep"))
    (fig,) = saved
    ax_e, ax_t = fig.axes
    drawn = [ln for ln in ax_e.lines if len(ln.get_xdata()) > 1]
    assert len(drawn) == 2  # one per model; the plain method, the failure and the sim are out
    for line in drawn:
        assert list(line.get_xdata()) == [350.0, 420.0, 560.0, 700.0]
    rings = [ln for ln in ax_e.lines if len(ln.get_xdata()) == 1]
    assert sorted(float(r.get_xdata()[0]) for r in rings) == [420.0, 420.0]
    assert ax_t.get_xlabel() == "Power limit in force (W, read back)"
    texts = [t.get_text() for t, _ in _drawn_texts(fig)]
    assert "big · fp16 · b64" in texts and not [t for t in texts if "simulated" in t]
    assert "h200 · ringed: least energy per line\nleft out: 1 failed" in texts


def test_power_limit_sweep_draws_a_simulated_sweep_only_alone_and_says_so(tmp_path, monkeypatch):
    sweep = _sweep_summary()
    texts, _ = _figure_texts(
        monkeypatch,
        lambda: figures.power_limit_sweep(sweep[sweep.is_simulated], tmp_path / "sim"),
    )
    assert "g0 (simulated) · ringed: least energy per line" in texts
    texts, _ = _figure_texts(
        monkeypatch,
        lambda: figures.power_limit_sweep(sweep[sweep.method == "fp16"], tmp_path / "none"),
    )
    assert [t for t in texts if t.startswith("No data")]
    said = {}
    monkeypatch.setattr(plot, "no_data", lambda stem, title, why: said.update(why=why))
    failed = sweep[~sweep.is_simulated].assign(status="error")  # a sweep where nothing ran
    figures.power_limit_sweep(failed.assign(power_limit_requested_w=300.0), tmp_path / "failed")
    assert said["why"].endswith(f": {len(failed)} failed"), said


def test_power_limit_sweep_leaves_out_a_high_spread_simulated_limit_as_best_configs_does(
    tmp_path, monkeypatch
):
    """A simulated sweep's rows follow best_configs' include_simulated rules: a high-spread
    row at the cheapest limit is not ringed (best_configs would not name it)."""
    sweep = _sweep_summary()
    sim = sweep[sweep.is_simulated].copy()
    sim.loc[sim["power_limit_readback_w"] == 420.0, "energy_per_image_cv"] = 0.5
    saved = []
    _watch_saves(monkeypatch, lambda fig, stem: saved.append(fig))
    _assert_written(figures.power_limit_sweep(sim, tmp_path / "sim"))
    (fig,) = saved
    (line,) = [ln for ln in fig.axes[0].lines if len(ln.get_xdata()) > 1]
    assert 420.0 not in list(line.get_xdata())
    (ring,) = [ln for ln in fig.axes[0].lines if len(ln.get_xdata()) == 1]
    assert float(ring.get_xdata()[0]) == 560.0
    texts = [t.get_text() for t, _ in _drawn_texts(fig)]  # the limit left out is said
    assert (
        "g0 (simulated) · ringed: least energy per line\nleft out: 1 flagged high-spread" in texts
    )


def test_host_bound_points_are_ringed_and_said_in_the_legend(tmp_path):
    """issue 33: energy vs model size rings each host-bound point (the GPU waited on the
    host) and names the flag in its legend; without such rows, no ring and no entry."""
    from joulebench.flags import FLAG_HOST_BOUND, join_flags

    one = {"methods": ("fp32",), "batch_sizes": (1,), "estimated": False, "failures": 0}
    profile, catalog, accuracy, _ = synthetic_study(n_models=12, **one)
    small = profile["model"].isin(profile["model"].unique()[:4])
    flags = profile.loc[small, "flags"].fillna("")
    profile.loc[small, "flags"] = [join_flags(f, [FLAG_HOST_BOUND]) for f in flags]
    profile["gpu_busy_fraction"] = np.where(small, 0.3, 0.95)
    summary = build_summary(profile, catalog, accuracy)
    fits = all_fits(summary, baseline_method="fp32")
    stem = tmp_path / "energy_vs_factors"
    figs = {}
    with pytest.MonkeyPatch.context() as mp:
        _watch_saves(mp, lambda fig, s: figs.update({Path(s).name: fig}))
        figures.energy_vs_factors(summary, fits["factor_fits"], stem)
    fig = figs["energy_vs_factors"]
    legend = " ".join(t.get_text() for leg in fig.legends for t in leg.get_texts())
    assert legend.count("host-bound (GPU busy < 50% of a step)") == 1
    rings = [c for ax in fig.axes for c in ax.collections if c.get_label().startswith("host-bound")]
    assert len(rings) == 3 and all(len(c.get_offsets()) == 4 for c in rings)  # 4 per panel
    counted = fits["factor_fits"].query("family == 'all'")["n_host_bound"]
    assert (counted == 4).all()
    clean = build_summary(profile.assign(flags=""), catalog, accuracy)
    figs.clear()
    with pytest.MonkeyPatch.context() as mp:
        _watch_saves(mp, lambda fig, s: figs.update({Path(s).name: fig}))
        figures.energy_vs_factors(
            clean, all_fits(clean, baseline_method="fp32")["factor_fits"], stem
        )
    legend = " ".join(
        t.get_text() for leg in figs["energy_vs_factors"].legends for t in leg.get_texts()
    )
    assert "host-bound" not in legend


# --- issue 34: what a new user saw in the default study ---------------------------------------


def _names_on(fig) -> list[str]:
    """The names written beside points (annotations)."""
    from matplotlib.text import Annotation

    return [t.get_text() for t in fig.findobj(Annotation) if t.get_visible()]


@pytest.mark.parametrize("name", ["accuracy_vs_energy", "energy_optimal_front"])
def test_every_point_of_the_default_study_is_named(drawn_as_run, name):
    """Five models: each point carries its architecture's name (the tag is not needed to
    tell them apart), inside the axes and over nothing else (the overlap test covers it)."""
    want = sorted(m.split(".")[0] for m in DEFAULT_MODELS)
    assert sorted(_names_on(drawn_as_run.figs[name])) == want


def test_the_factor_panels_name_their_points(drawn_as_run):
    fig = drawn_as_run.figs["energy_vs_factors"]
    named = _names_on(fig)
    assert len(named) >= 12 and set(named) <= {m.split(".")[0] for m in DEFAULT_MODELS}


def test_names_go_where_they_fit_and_no_further(tmp_path, monkeypatch):
    """Names over each other or over another marker are left out; a big group names at most
    `most` points (the front first), never a thicket."""
    shown = {}
    _watch_saves(monkeypatch, lambda fig, stem: shown.update({Path(stem).name: fig}))
    summary, scores, fits, trace = study_tables(n_models=250, batch_sizes=(1,), estimated=False)
    figures.accuracy_vs_energy(scores, tmp_path / "big")
    named = _names_on(shown["big"])
    assert 0 < len(named) <= 12
    problems = _text_problems(shown["big"], "big")
    assert not problems, problems


def test_point_names_drop_the_tag_only_where_the_architectures_tell_models_apart():
    assert plot.point_names(["resnet18.a1_in1k", "vit_b.augreg"]) == ["resnet18", "vit_b"]
    twins = ["resnet50.a1_in1k", "resnet50.tv_in1k"]
    assert plot.point_names(twins) == twins
    assert plot.two_lines("mobilenetv3_small_100.lamb_in1k") == "mobilenetv3_small_100\n.lamb_in1k"
    assert plot.two_lines("resnet18.a1_in1k") == "resnet18.a1_in1k"


def test_method_value_writes_whole_names(drawn_as_run):
    fig = drawn_as_run.figs["method_value"]
    ticks = [t.get_text().replace("\n", "") for t in fig.axes[0].get_yticklabels()]
    assert sorted(ticks) == sorted(DEFAULT_MODELS)


def test_method_savings_draws_few_models_as_points_and_many_as_boxes(tmp_path, monkeypatch):
    """A box of 3 points draws quartiles that are not there: below BOX_MIN models each
    method and batch size is its points and their median; from BOX_MIN on, a box too."""
    from matplotlib.axes import Axes

    boxes = []
    real = Axes.boxplot
    monkeypatch.setattr(
        Axes, "boxplot", lambda self, *a, **k: boxes.append(1) or real(self, *a, **k)
    )
    texts = {}
    _watch_saves(monkeypatch, lambda fig, stem: texts.update({Path(stem).name: _legend_title(fig)}))
    few = default_study_as_run()[2]["method_savings"]
    figures.method_savings(few, tmp_path / "few")
    assert not boxes and "box" not in texts["few"]
    many = study_tables(n_models=12, batch_sizes=(1, 8), estimated=True)[2]["method_savings"]
    figures.method_savings(many, tmp_path / "many")
    assert len(boxes) == 2 and "box: quartiles" in texts["many"]  # bf16 at batch 1 and 8


def _legend_title(fig) -> str:
    return "\n".join(lg.get_title().get_text() for lg in fig.legends)


def test_batch_means_are_over_one_set_of_models(drawn_as_run):
    """In the default study as run, each method's comparable models differ (flagged rows):
    every bold line is the geometric mean of the same models, and the legend says which."""
    from helpers.figure_study import AS_RUN_FLAGS

    batch = drawn_as_run.tables[2]["batch_scaling"]
    common = figures.batch.common_models(batch[batch["device_label"] == "cpu"])
    spoiled = {model for model, _, _ in AS_RUN_FLAGS}
    assert common == sorted(set(DEFAULT_MODELS) - spoiled)
    fig = drawn_as_run.figs["energy_vs_batch_size"]
    assert f"the same {len(common)} models" in _legend_title(fig)
    ax = fig.axes[0]
    bold = [line for line in ax.get_lines() if line.get_linewidth() > 1]
    assert len(bold) == 3
    for line in bold:
        method = line.get_label()
        rows = batch[(batch["method"] == method) & batch["model"].isin(common)]
        want = rows.groupby("batch_size")["energy_per_image_j"].apply(
            lambda v: np.exp(np.log(v).mean())
        )
        got = np.asarray(line.get_ydata(), float)
        assert got / got[0] == pytest.approx(want.to_numpy() / want.to_numpy()[0])


def test_throughput_is_not_drawn_for_estimated_energy(
    drawn_as_run, measured, tmp_path, monkeypatch
):
    """E = modelled power x time puts every point on its model's constant-power line: the
    figure is not made, and says why; beside measured rows, estimated ones are left out."""
    said = " ".join(" ".join(drawn_as_run.said("throughput_vs_energy")).split())
    assert "Not drawn: every energy here is estimated (estimate:tdp-linear)" in said
    assert drawn_as_run.paths["throughput_vs_energy"].why.startswith("Not drawn")
    summary = measured[0]
    guess = {"meter": "estimate:tdp-linear", "energy_is_estimate": True}
    mixed = pd.concat([summary, summary.iloc[:8].assign(**guess)], ignore_index=True)
    shown = {}
    _watch_saves(monkeypatch, lambda fig, stem: shown.update(fig=fig))
    paths = figures.throughput_vs_energy(mixed, tmp_path / "mixed")
    assert not getattr(paths, "why", "")
    assert len(_points(shown["fig"])) == int((summary["status"] == "ok").sum())
    assert "8 estimated configurations left out" in _legend_title(shown["fig"])


def test_render_all_lists_the_figures_not_made(drawn_as_run):
    """The default study makes six figures; the other four only say why (files kept for
    Snakemake), and figures.tsv lists them, as the end of the run and the report read it."""
    from joulebench.report import figure_manifest

    out = drawn_as_run.paths["accuracy_vs_energy"][0].parent
    why = figure_manifest.read_manifest(out / "figures.tsv")
    assert list(why) == list(figures.FIGURE_NAMES)
    not_made = {name for name, w in why.items() if w}
    assert not_made == {
        "power_trace",
        "throughput_vs_energy",
        "train_vs_inference",
        "power_limit_sweep",
    }
    for name in not_made:
        assert why[name] == drawn_as_run.paths[name].why
        assert why[name] in " ".join(" ".join(drawn_as_run.said(name)).split())
    assert why["train_vs_inference"] == (
        "No data: the study measured inference only (phases: [inference, train] adds training)"
    )
    assert why["power_trace"].startswith("No data: the meter estimates energy")


def test_a_study_of_one_method_says_so_where_methods_are_compared(tmp_path):
    """No method to compare is the study's choice, not its rows' fault: the savings and
    method-value figures say "one method", never "4 flagged ..." (the wrong cause)."""
    summary, scores, fits, trace = study_tables(n_models=4, methods=("fp32",), estimated=False)
    summary = summary.assign(flags="other-load")  # would be blamed before
    out = _draw_all((summary, scores, fits, trace), tmp_path, write=True)
    for name in ("method_savings", "method_value"):
        why = out.paths[name].why
        assert why.startswith("No data: the study measured one method (fp32)"), why


def test_a_simulated_gpus_power_trace_says_simulated(measured, tmp_path, monkeypatch):
    summary, scores, fits, trace = measured
    shown = {}
    _watch_saves(monkeypatch, lambda fig, stem: shown.update({Path(stem).name: fig}))
    figures.render_all(summary.assign(is_simulated=True), scores, fits, trace, tmp_path)
    fig = shown["power_trace"]
    assert "(simulated)" in _legend_title(fig)
    assert fig.axes[0].get_ylabel() == "Power (W, simulated)"


def _axes_share(fig) -> float:
    """The height of the figure's data area (its axes together) as a share of the figure."""
    fig.canvas.draw()
    boxes = [ax.get_position() for ax in fig.axes]
    return (max(b.y1 for b in boxes) - min(b.y0 for b in boxes)) if boxes else 0.0


def test_a_busy_studys_accuracy_legend_is_compact_and_its_header_whole(drawn_many_devices):
    """12 legend entries under a long header filled ~80 % of the figure and cut the header
    ("4 without e..."); the legend now shares lines and the figure grows to hold it."""
    fig = drawn_many_devices.figs["accuracy_vs_energy"]
    legend = fig.legends[0]
    assert len(legend.get_texts()) >= 10 and legend._ncols >= 2
    assert _axes_share(fig) >= 0.4
    assert not _text_problems(
        fig, "accuracy_vs_energy", drawn_many_devices.texts["accuracy_vs_energy"]
    )


def test_energy_vs_batch_size_prefers_a_measured_device_and_caps_its_thin_lines(
    drawn_many_devices,
):
    """The estimated CPU ties with seven measured GPUs on rows: a measured GPU is drawn, with at
    most MAX_THIN_MODELS thin lines per method under its bold means."""
    from joulebench.report.figures.batch import MAX_THIN_MODELS

    fig = drawn_many_devices.figs["energy_vs_batch_size"]
    title = _legend_title(fig)
    assert title.startswith("h200-0 · 60 models · thin: 40 of them, spread")
    lines = fig.axes[0].get_lines()
    thin = [ln for ln in lines if ln.get_linewidth() < 1]
    bold = [ln for ln in lines if ln.get_linewidth() >= 1]
    assert len(bold) == 2 and len(thin) <= 2 * MAX_THIN_MODELS
    assert min(ln.get_zorder() for ln in bold) > max(ln.get_zorder() for ln in thin)


def test_a_sweeps_legend_keeps_long_line_labels_whole(tmp_path, monkeypatch):
    from helpers.decision_rows import sweep_summary

    summary = sweep_summary()
    names = {"small": "efficientnet_b3_pruned.in1k", "big": "convnext_xxlarge.clip_laion2b"}
    summary["model"] = summary["model"].map(names)
    texts, _ = _figure_texts(
        monkeypatch, lambda: figures.power_limit_sweep(summary, tmp_path / "p")
    )
    for name in names.values():
        assert f"{name} · fp16 · b64" in texts
    assert not [t for t in texts if t.endswith("…")]


def test_predictions_are_drawn_hollow_with_their_interval_never_on_the_front(tmp_path, monkeypatch):
    """joulebench predict's rows of the group: white rings in the predictions' colour, a
    horizontal bar over each interval, a legend entry naming its level, and the front drawn
    through measured points only; none where the scores compare another energy."""
    from helpers.page_study import synthetic_predictions, synthetic_summary
    from matplotlib.collections import LineCollection, PathCollection

    from joulebench.report.palettes import PREDICTED_COLOR

    summary = synthetic_summary(40, unmeasured=8)
    predicted = synthetic_predictions(summary)
    seen = {}
    _watch_saves(monkeypatch, lambda fig, stem: seen.update(fig=fig))
    scores = score_summary(summary)
    figures.accuracy_vs_energy(scores, tmp_path / "a", device_label="gpu", predicted=predicted)
    ax = seen["fig"].axes[0]
    texts = [t.get_text() for t, _ in _drawn_texts(seen["fig"])]
    assert "predicted (90 % interval)" in texts
    assert any("predicted, not measured: 8 models" in t for t in texts)
    ring_colour = np.array([*bytes.fromhex(PREDICTED_COLOR[1:])]) / 255
    rings = [
        c
        for c in ax.collections
        if isinstance(c, PathCollection)
        and len(c.get_edgecolors())
        and np.allclose(c.get_edgecolors()[0][:3], ring_colour)
    ]
    assert len(rings) == 1 and len(rings[0].get_offsets()) == 8
    assert np.allclose(rings[0].get_facecolors()[0], [1, 1, 1, 1])  # hollow, on white
    gpu = predicted[predicted["device_label"] == "gpu"].sort_values("energy_per_image_j")
    x = np.sort(rings[0].get_offsets()[:, 0])
    scale = x / gpu["energy_per_image_j"].to_numpy()
    assert np.allclose(scale, scale[0])  # the predicted energies, in the axis' unit
    (bars,) = [
        c for c in ax.collections if isinstance(c, LineCollection) and len(c.get_segments()) == 8
    ]
    for (x0, y0), (x1, y1) in (s[:2] for s in bars.get_segments()):
        assert y0 == y1 and x1 / x0 == pytest.approx(1.4**2)  # horizontal, low to high
    front = ax.lines[0].get_xdata()
    assert not np.isin(np.round(x, 9), np.round(front, 9)).any()  # joined to nothing
    seen.clear()
    dynamic = score_summary(summary, energy="dynamic")
    figures.accuracy_vs_energy(dynamic, tmp_path / "b", device_label="gpu", predicted=predicted)
    texts = [t.get_text() for t, _ in _drawn_texts(seen["fig"])]
    assert not any("predicted" in t for t in texts)
