"""Figures: every one is drawn from a small synthetic study, degenerate input included, and
estimated energies say so on the axis."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from joulebench.analysis.fits import all_fits
from joulebench.analysis.score import score_summary
from joulebench.analysis.summary import build_summary
from joulebench.report import figures
from joulebench.tables import PROFILE_COLUMNS, TRACE_TABLE_COLUMNS

FAMILIES = ["resnet", "efficientnet", "vision_transformer", "convnext", "mobilenetv3", "regnet"]


def _watch_saves(monkeypatch, look) -> None:
    """Call `look(fig, stem)` on every figure just before the figures module saves it."""
    real_save = figures._save

    def spy(fig, stem):
        look(fig, stem)
        return real_save(fig, stem)

    monkeypatch.setattr(figures, "_save", spy)


def synthetic_study(
    n_models=30,
    methods=("fp32", "bf16"),
    batch_sizes=(1, 8, 32),
    estimated=True,
    seed=0,
    failures=2,
):
    """A plausible study: E ~ FLOPs^0.9, accuracy saturating in energy, bf16 ~35 % cheaper,
    batching cheaper per image; the first `failures` models fail at the largest batch.
    Returns profile, catalog, accuracy and trace tables (the trace is empty for an
    estimating meter, as in the real one)."""
    rng = np.random.default_rng(seed)
    catalog, accuracy, profile, trace = [], [], [], []
    meter = "estimate:tdp-linear" if estimated else "nvml"
    for i in range(n_models):
        fam = FAMILIES[i % len(FAMILIES)]
        name = f"{fam}_{i}.in1k"
        flops = 10 ** rng.uniform(8.3, 11.3)
        catalog.append(
            {
                "model": name,
                "architecture": f"{fam}_{i}",
                "pretrained_tag": "in1k",
                "family": fam,
                "status": "ok",
                "reason": "",
                "params": int(flops / 10 ** rng.uniform(1.7, 2.7)),
                "flops_per_image": flops,
                "macs_per_image": flops / 2,
                "activations_per_image": flops / 10 ** rng.uniform(2.5, 3.1),
                "input_height": 224,
                "input_width": 224,
                "num_classes": 1000,
            }
        )
        e_model = 1.8e-10 * flops**0.9 * 10 ** rng.normal(0, 0.12)
        top1 = 88 - 25 * (e_model / 0.01) ** -0.3 + rng.normal(0, 1.5) + FAMILIES.index(fam) * 0.3
        accuracy.append(
            {
                "model": name,
                "img_size": 224,
                "top1": top1,
                "top5": min(top1 + 12, 99.5),
                "accuracy_source": "reference",
            }
        )
        for m in methods:
            for b in batch_sizes:
                failed = i < failures and m == methods[0] and b == batch_sizes[-1]
                e = e_model * (0.65 if m != methods[0] else 1.0) * (0.55 + 0.45 / b**0.5)
                e *= 10 ** rng.normal(0, 0.02)
                power = 40 + 60 * rng.uniform()
                profile.append(
                    {
                        "device_label": "cpu" if estimated else "h200",
                        "model": name,
                        "method": m,
                        "batch_size_requested": b,
                        "batch_size": b,
                        "status": "oom" if failed else "ok",
                        "reason": "out of memory" if failed else "",
                        "meter": meter,
                        "is_estimate": None if failed else estimated,
                        "energy_per_image_j": np.nan if failed else e,
                        "dynamic_energy_per_image_j": np.nan if failed else e * 0.7,
                        "throughput_img_s": np.nan if failed else power / e,
                        "idle_power_w": 20.0,
                        "flags": "",
                    }
                )
                if not estimated and not failed and i < 2:
                    for r in range(4):
                        t = np.arange(0, 5.0, 0.02)
                        trace.append(
                            pd.DataFrame(
                                {
                                    "device_label": "h200",
                                    "model": name,
                                    "method": m,
                                    "batch_size_requested": b,
                                    "batch_size": b,
                                    "repeat": r,
                                    "t_s": t,
                                    "power_w": power
                                    + 5 * np.sin(7 * t + r)
                                    + rng.normal(0, 2, len(t)),
                                    "power_avg_w": power,
                                }
                            )
                        )
    prof = pd.DataFrame(profile).reindex(columns=list(PROFILE_COLUMNS))
    tr = pd.concat(trace) if trace else pd.DataFrame(columns=list(TRACE_TABLE_COLUMNS))
    tr = tr.reindex(columns=list(TRACE_TABLE_COLUMNS))
    return prof, pd.DataFrame(catalog), pd.DataFrame(accuracy), tr


def study_tables(**kw):
    profile, catalog, accuracy, trace = synthetic_study(**kw)
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary, reference_model="resnet_0.in1k")
    fits = all_fits(summary, baseline_method="fp32")
    return summary, scores, fits, trace


def _assert_written(paths):
    assert sorted(p.suffix for p in paths) == [".pdf", ".png"]
    for p in paths:
        assert p.stat().st_size > 1000, p
        head = p.read_bytes()[:8]
        assert head.startswith(b"%PDF") if p.suffix == ".pdf" else head == b"\x89PNG\r\n\x1a\n"
    assert not [q for q in paths[0].parent.iterdir() if q.name.endswith(".tmp")]


@pytest.mark.parametrize("estimated", [True, False])
def test_every_figure_is_written(tmp_path, estimated):
    summary, scores, fits, trace = study_tables(estimated=estimated)
    out = figures.render_all(summary, scores, fits, trace, tmp_path)
    assert set(out) == set(figures.FIGURE_NAMES)
    for paths in out.values():
        _assert_written(paths)


def _axis_labels(monkeypatch, call) -> list[str]:
    """Run a figure function and collect every axis label of the figure it saves."""
    seen = []

    def spy(fig, stem):
        seen.extend([fig.get_supxlabel(), fig.get_supylabel()])
        for ax in fig.axes:
            seen.extend([ax.get_xlabel(), ax.get_ylabel()])

    _watch_saves(monkeypatch, spy)
    call()
    return seen


def test_estimated_energies_are_labelled(tmp_path, monkeypatch):
    summary, scores, fits, _ = study_tables(estimated=True)
    calls = {
        "accuracy": lambda: figures.accuracy_vs_energy(scores, tmp_path / "a"),
        "factors": lambda: figures.energy_vs_factors(summary, fits["factor_fits"], tmp_path / "f"),
        "savings": lambda: figures.method_savings(fits["method_savings"], tmp_path / "s"),
        "batch": lambda: figures.energy_vs_batch_size(fits["batch_scaling"], tmp_path / "b"),
        "throughput": lambda: figures.throughput_vs_energy(summary, tmp_path / "t"),
    }
    for name, call in calls.items():
        labels = _axis_labels(monkeypatch, call)
        energy_axes = [lab for lab in labels if "Energy" in lab or "Saving" in lab]
        assert energy_axes, (name, labels)
        assert all("estimated" in lab for lab in energy_axes), (name, labels)


def test_measured_energies_are_not_labelled_estimated(tmp_path, monkeypatch):
    summary, scores, _, _ = study_tables(estimated=False, n_models=8)
    labels = _axis_labels(monkeypatch, lambda: figures.accuracy_vs_energy(scores, tmp_path / "a"))
    assert [lab for lab in labels if re.fullmatch(r"Energy per image \((J|mJ|µJ)\)", lab)]


def test_mixed_meters_say_partly_estimated():
    est = pd.Series([True, False])
    assert "partly estimated" in figures.energy_label(est)
    assert figures.energy_label(pd.Series([True, True])).endswith("(J, estimated)")


def test_estimated_power_trace_is_labelled(tmp_path, monkeypatch):
    _, _, _, trace = synthetic_study(estimated=False, n_models=3)
    labels = _axis_labels(
        monkeypatch,
        lambda: figures.power_trace(trace, tmp_path / "p", idle_power_w=20.0, estimated=True),
    )
    assert any("Power" in lab and "estimated" in lab for lab in labels)


def test_degenerate_input_draws_no_data(tmp_path, monkeypatch):
    profile, catalog, accuracy, _ = synthetic_study(n_models=1, batch_sizes=(8,))
    profile["status"] = "error"
    profile["energy_per_image_j"] = np.nan
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary)
    fits = all_fits(summary, baseline_method="fp32")
    texts = []

    def spy(fig, stem):
        texts.extend(t.get_text() for ax in fig.axes for t in ax.texts)

    _watch_saves(monkeypatch, spy)
    out = figures.render_all(summary, scores, fits, None, tmp_path)
    for paths in out.values():
        _assert_written(paths)
    assert sum(t.startswith("No data") for t in texts) == len(figures.FIGURE_NAMES)


def test_one_model_still_draws(tmp_path, monkeypatch):
    summary, scores, fits, _ = study_tables(
        n_models=1, batch_sizes=(8,), methods=("fp32",), failures=0
    )
    drawn = []

    def spy(fig, stem):
        drawn.append((stem.name, any(t.get_text().startswith("No data") for t in fig.texts)))
        drawn[-1] += (any(ax.collections or ax.lines for ax in fig.axes),)

    _watch_saves(monkeypatch, spy)
    out = figures.render_all(summary, scores, fits, None, tmp_path)
    for paths in out.values():
        _assert_written(paths)
    points = {name for name, _, has_artists in drawn if has_artists}
    assert {"accuracy_vs_energy", "energy_vs_factors", "throughput_vs_energy"} <= points


def test_stem_with_dots_keeps_its_name(tmp_path):
    summary, scores, _, _ = study_tables(n_models=4)
    paths = figures.accuracy_vs_energy(scores, tmp_path / "resnet50.a1_in1k")
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
    labels = _axis_labels(monkeypatch, lambda: figures.accuracy_vs_energy(scores, tmp_path / "a"))
    pattern = r"Energy above idle per image \((J|mJ|µJ), estimated\)"
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


def _saved_figures(monkeypatch) -> list:
    """Every figure the figure functions save from now on (they are still written)."""
    saved = []
    _watch_saves(monkeypatch, lambda fig, stem: saved.append(fig))
    return saved


def test_train_vs_inference_without_training_rows_says_so(tmp_path, monkeypatch):
    summary, _, _, _ = study_tables(estimated=True)
    saved = _saved_figures(monkeypatch)
    _assert_written(figures.train_vs_inference(summary, tmp_path / "none"))  # inference only
    (fig,) = saved
    assert not [ax for ax in fig.axes if ax.collections or ax.lines]
    assert [t for t in fig.texts + fig.axes[0].texts if t.get_text().startswith("No data")]


def test_train_vs_inference_draws_each_model_at_its_two_energies(tmp_path, monkeypatch):
    """One point per (device, method, model, batch size) measured in both phases, at
    (inference energy, training energy) in the unit its axes name, in its method's colour;
    rows that failed in either phase or have no partner are left out."""
    from matplotlib.colors import to_rgba

    summary, _, _, _ = study_tables(estimated=True)
    # training costs a different multiple per row, so swapped or mismatched pairs show
    factor = 2.0 + (np.arange(len(summary)) % 7) / 3
    train = summary.assign(phase="train", energy_per_image_j=summary["energy_per_image_j"] * factor)
    train = train[train["model"] != summary["model"].iloc[-1]]  # a model never trained
    ok_in_inference = train.index[train["status"] == "ok"][3]
    train.loc[ok_in_inference, ["status", "energy_per_image_j"]] = ["oom", np.nan]
    both = pd.concat([summary, train], ignore_index=True)
    saved = _saved_figures(monkeypatch)
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


def _text_problems(fig, name: str) -> list[str]:
    problems = []
    texts = _drawn_texts(fig)
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


def _check_readable(monkeypatch, render) -> dict:
    """Render figures through `render`; return {figure: [problems]} for every figure saved."""
    found = {}

    def spy(fig, stem):
        name = Path(stem).name
        problems = _text_problems(fig, name)
        for axis, label in _energy_axes(fig):
            shown = [
                t.get_text() for t, _ in _drawn_texts(fig) if t in axis.get_ticklabels(which="both")
            ]
            bad = [s for s in shown if not PLAIN_NUMBER.match(s)]
            if bad:
                problems.append(f"{name}: energy axis {label!r} has tick labels {bad}")
            if not [s for s in shown if s]:
                problems.append(f"{name}: energy axis {label!r} has no tick label")
        for t, _ in _drawn_texts(fig):
            if re.search(r"\\mathdefault|\d\^\{|×\s*10", t.get_text()):
                problems.append(f"{name}: mathtext in {t.get_text()!r}")
        found[name] = problems

    _watch_saves(monkeypatch, spy)
    render()
    return found


def default_like_study(flag: str = ""):
    """The default study's shape: 5 models, fp32 and bf16, batch 1 and 8, a CPU estimate."""
    profile, catalog, accuracy, trace = synthetic_study(
        n_models=5, batch_sizes=(1, 8), failures=0, estimated=True
    )
    profile["flags"] = flag
    summary = build_summary(profile, catalog, accuracy)
    scores = score_summary(summary, reference_model="resnet_0.in1k")
    return summary, scores, all_fits(summary, baseline_method="fp32"), trace


BIG_METHODS = ("fp32", "bf16", "fp16-amp", "channels_last-compile")


@pytest.mark.parametrize("which", ["default", "default-all-flagged", "2000-rows"])
def test_figure_text_is_plain_and_never_overlaps(which, tmp_path, monkeypatch):
    if which == "2000-rows":
        tables = study_tables(
            n_models=250, methods=BIG_METHODS, batch_sizes=(1, 8), estimated=False
        )
        assert len(tables[0]) == 2000
    else:
        tables = default_like_study("other-load" if which.endswith("flagged") else "")
    found = _check_readable(monkeypatch, lambda: figures.render_all(*tables, tmp_path))
    assert set(found) == set(figures.FIGURE_NAMES)
    problems = [p for ps in found.values() for p in ps]
    assert not problems, "\n".join(problems)


HOSTILE_LABELS = {
    "device_label": "gpu $x^$",
    "method": "fp16 $\\frac{1}{0}$",
    "family": "fam_$x^$_" + "w" * 10_000,
}


def test_hostile_labels_print_as_text(tmp_path, monkeypatch):
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
    shown = []

    def keep_texts(fig, stem):
        shown.extend(t.get_text() for t, _ in _drawn_texts(fig))

    _watch_saves(monkeypatch, keep_texts)
    found = _check_readable(
        monkeypatch, lambda: figures.render_all(summary, scores, fits, trace, tmp_path)
    )
    assert set(found) == set(figures.FIGURE_NAMES)
    assert not [p for ps in found.values() for p in ps]
    for name in figures.FIGURE_NAMES:
        _assert_written([tmp_path / f"{name}.pdf", tmp_path / f"{name}.png"])
    text = "\n".join(shown)
    assert "gpu $x^$" in text and "fp16 $\\frac{1}{0}$" in text
    assert "fam_$x^$_ww" in text and "…" in text and "w" * 100 not in text


def test_the_text_check_finds_overlaps_and_cut_off_text():
    fig, ax = figures._figure(2.0)
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


def test_all_rows_flagged_are_drawn_hollow_and_named(tmp_path, monkeypatch):
    """A busy CPU flags every row other-load: the headline figure shows them as flagged and
    says so, instead of "no model with both energy and top-1"."""
    _, scores, _, _ = default_like_study("other-load")
    assert not scores["scored"].any() and scores["top1"].notna().all()
    texts, dots = _figure_texts(
        monkeypatch, lambda: figures.accuracy_vs_energy(scores, tmp_path / "a")
    )
    joined = "\n".join(texts)
    assert "No data" not in joined and "failed or no top-1" not in joined
    assert "none graded: 5 flagged other-load" in joined
    assert "flagged other-load (5, not graded)" in joined
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
    assert "flagged other-load (1, not graded)" in joined
    assert "flagged high-spread (1, not graded)" in joined
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


def test_impossible_throughput_does_not_take_the_figures_down(tmp_path):
    summary, _, _, _ = study_tables(n_models=6, estimated=False)
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


def test_a_killed_figure_write_leaves_nothing_after_the_next_run(tmp_path):
    """kill -9 during savefig leaves a 0-byte temp file; the next run removes it."""
    from joulebench.analysis.summary import write_summary

    summary, scores, _, _ = study_tables(n_models=4)
    write_summary(summary, tmp_path / "summary.parquet")
    scores.to_parquet(tmp_path / "scores.parquet")
    out = tmp_path / "figs"
    draw = (
        "import pandas as pd\n"
        "from joulebench.report import figures\n"
        "from joulebench.analysis.summary import read_summary\n"
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
    from joulebench.tables import remove_stale_temps

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


def test_figures_emptied_by_flags_say_so(tmp_path, monkeypatch):
    """All rows flagged other-load: the figures that then have nothing to draw say why."""
    tables = default_like_study("other-load")
    texts = []

    def spy(fig, stem):
        texts.append((Path(stem).name, [t.get_text() for t, _ in _drawn_texts(fig)]))

    _watch_saves(monkeypatch, spy)
    figures.render_all(*tables, tmp_path)
    said = {name: "\n".join(t) for name, t in texts}
    for name in ("energy_vs_factors", "method_savings", "energy_vs_batch_size"):
        assert "No data" in said[name] and "20 flagged other-load" in said[name], said[name]
    assert "20 flagged other-load" in said["throughput_vs_energy"]
    assert "no measured energy" not in "\n".join(said.values())


def test_grade_colours_are_viridis_and_shared_with_the_page():
    """One palette for figures and page (palettes.py): grades are matplotlib's viridis from
    0.92 (A) to 0 (G), and the page's metadata carries the same colours."""
    import matplotlib
    from matplotlib.colors import to_hex

    from joulebench.report import palettes

    cmap = matplotlib.colormaps["viridis"]
    want = {g: to_hex(cmap(v)) for g, v in zip("ABCDEFG", np.linspace(0.92, 0.0, 7), strict=True)}
    assert palettes.GRADE_COLORS == want
    assert figures.GRADE_COLORS is palettes.GRADE_COLORS
    assert palettes.page_palettes()["grade"] == want
    assert palettes.page_palettes()["series"][:6] == list(figures.OKABE_ITO[:6])


# --- decisions: the energy-optimal front and what each method buys ----------------------------


def test_energy_optimal_front_draws_each_model_once_at_its_best(tmp_path, monkeypatch):
    from decision_rows import decision_summary

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
    from decision_rows import decision_summary

    t = figures.method_value_table(decision_summary()).set_index(["model", "method"])
    assert t.loc[("small", "fp16"), "ratio"] == pytest.approx(1.0)
    assert t.loc[("small", "fp32"), "ratio"] == pytest.approx(0.004 / 0.003)
    assert t.loc[("big", "fp32"), "ratio"] == pytest.approx(0.040 / 0.025)


def test_decision_figures_say_why_they_are_empty(tmp_path, monkeypatch):
    from decision_rows import decision_summary

    summary = decision_summary()
    summary["flags"] = "other-load"
    said = []
    monkeypatch.setattr(figures, "no_data", lambda stem, title, why: said.append(why) or [])
    figures.energy_optimal_front(figures._best_from(summary, summary, None), tmp_path / "f")
    figures.method_value(summary, tmp_path / "m")
    assert said == [
        "no model has a comparable configuration and a top-1",
        "no model has comparable energies for two methods",
    ]


def test_accuracy_figure_draws_the_law_the_comparison_picks(tmp_path, monkeypatch):
    summary, scores, fits, _ = study_tables(n_models=30, estimated=False)
    seen = {}

    def spy(fig, stem):
        legend = fig.legends[0]
        seen["labels"] = [t.get_text() for t in legend.get_texts()]
        seen["title"] = legend.get_title().get_text()
        seen["dashed"] = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]

    _watch_saves(monkeypatch, spy)
    figures.accuracy_vs_energy(scores, tmp_path / "a", law=fits["accuracy_law"])
    law = fits["accuracy_law"]
    title = seen["title"].splitlines()[0]  # "h200 · bf16 · batch 1 · 30 models graded"
    method, batch = title.split(" · ")[1], int(title.split(" · ")[2].split()[1])
    mine = law[(law["method"] == method) & (law["batch_size_requested"] == batch)]
    mine = mine[mine["subset"] == "all"]
    winner = mine.loc[mine["best_by_bic"].astype(bool), "form"].iloc[0]
    assert f"law: {winner}" in seen["labels"] and len(seen["dashed"]) == 1
    for form in set(mine["form"]) - {winner}:
        assert form in seen["title"]


def test_node_scope_is_named_and_a_secondary_axis_shows_the_units_people_use(tmp_path, monkeypatch):
    """energy_scope node: the axis says whole node; figures.secondary_unit: a top axis in Wh
    or gCO2e per 1,000 images whose ticks follow the bottom's J (here 1 J = 0.2778 Wh/1k)."""
    summary, _, fits, trace = study_tables(estimated=False, n_models=8)
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


# --- rows without a key: the summary's own not-profiled rows have no device, method, batch ----


def _study_with_an_unprofiled_model():
    """A study where one catalogued model never got a profile row (its build failed): the
    summary keeps it as a not-profiled row with NA device, method and batch size."""
    profile, catalog, accuracy, trace = synthetic_study(n_models=6, estimated=False)
    broken = catalog.iloc[[0]].assign(model="broken.in1k", status="error", reason="build failed")
    catalog = pd.concat([catalog, broken], ignore_index=True)
    summary = build_summary(profile, catalog, accuracy)
    return summary, trace


def test_a_model_that_never_ran_keeps_the_figures(tmp_path, monkeypatch):
    """Not-profiled rows (NA keys) and rows lacking any one key column are left out; every
    figure is still drawn from the rest, with the same points as without them."""
    summary, trace = _study_with_an_unprofiled_model()
    lone = summary[summary["status"] == "not-profiled"]
    assert len(lone) == 1
    assert lone[["device_label", "method", "batch_size_requested"]].isna().all(axis=None)
    extra = summary[summary["model"] == "convnext_3.in1k"].copy()  # copies with one key missing
    extra["model"] = [f"nokey_{i}.in1k" for i in range(len(extra))]
    for i, key in enumerate(["phase", "device_label", "method", "batch_size_requested", "model"]):
        extra.iloc[i, extra.columns.get_loc(key)] = pd.NA
    dirty = pd.concat([summary, extra.iloc[:5]], ignore_index=True)
    clean = summary[summary["status"] != "not-profiled"]

    def draw(table, out):
        seen = {}

        def spy(fig, stem):
            texts = [t.get_text() for t, _ in _drawn_texts(fig)]
            points = sorted(
                tuple(np.round(xy, 9))
                for ax in fig.axes
                for c in ax.collections
                for xy in np.asarray(c.get_offsets())
            )
            seen[Path(stem).name] = (any(t.startswith("No data") for t in texts), points)

        _watch_saves(monkeypatch, spy)
        scores = score_summary(table, reference_model="resnet_0.in1k")
        fits = all_fits(table, baseline_method="fp32")
        out_paths = figures.render_all(table, scores, fits, trace, tmp_path / out)
        for paths in out_paths.values():
            _assert_written(paths)
        return seen

    with_na, without = draw(dirty, "dirty"), draw(clean, "clean")
    assert set(with_na) == set(figures.FIGURE_NAMES)
    assert {n for n, (empty, _) in with_na.items() if empty} == {"train_vs_inference"}
    for name in ("accuracy_vs_energy", "energy_vs_factors", "throughput_vs_energy"):
        assert with_na[name][1] == without[name][1], name


def test_figures_without_any_placeable_row_say_why(tmp_path, monkeypatch):
    """Every row lacks its device: each figure says "No data" and counts the rows so."""
    summary, trace = _study_with_an_unprofiled_model()
    summary["device_label"] = pd.NA
    trace["device_label"] = pd.NA
    scores = score_summary(summary, reference_model="resnet_0.in1k")
    said = {}
    real = figures.no_data

    def spy(stem, title, why):
        said[Path(stem).name] = why
        return real(stem, title, why)

    monkeypatch.setattr(figures, "no_data", spy)
    figures.render_all(summary, scores, all_fits(summary, baseline_method="fp32"), trace, tmp_path)
    assert set(said) == set(figures.FIGURE_NAMES)
    n_ok, n_failed = int((summary["status"] == "ok").sum()), int((summary["status"] != "ok").sum())
    for name, why in said.items():
        if name == "train_vs_inference":
            assert why == "no model measured in both phases (phases: [inference, train])"
        elif name == "power_trace":
            assert why == f"no power samples to plot: {len(trace)} samples without device_label"
        else:
            assert f"{n_ok} without device_label, {n_failed} failed" in why, (name, why)
