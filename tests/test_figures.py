"""Figures: every one is drawn from a small synthetic study, degenerate input included, and
estimated energies say so on the axis."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from joulebench import figures
from joulebench.fits import all_fits
from joulebench.score import score_summary
from joulebench.summary import build_summary
from joulebench.tables import PROFILE_COLUMNS, TRACE_TABLE_COLUMNS

FAMILIES = ["resnet", "efficientnet", "vision_transformer", "convnext", "mobilenetv3", "regnet"]


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
    real_save = figures._save

    def spy(fig, stem):
        seen.extend([fig.get_supxlabel(), fig.get_supylabel()])
        for ax in fig.axes:
            seen.extend([ax.get_xlabel(), ax.get_ylabel()])
        return real_save(fig, stem)

    monkeypatch.setattr(figures, "_save", spy)
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
    assert "Energy per image (J)" in labels


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
    real_save = figures._save

    def spy(fig, stem):
        texts.extend(t.get_text() for ax in fig.axes for t in ax.texts)
        return real_save(fig, stem)

    monkeypatch.setattr(figures, "_save", spy)
    out = figures.render_all(summary, scores, fits, None, tmp_path)
    for paths in out.values():
        _assert_written(paths)
    assert sum(t.startswith("No data") for t in texts) == len(figures.FIGURE_NAMES)


def test_one_model_still_draws(tmp_path, monkeypatch):
    summary, scores, fits, _ = study_tables(
        n_models=1, batch_sizes=(8,), methods=("fp32",), failures=0
    )
    drawn = []
    real_save = figures._save

    def spy(fig, stem):
        drawn.append((stem.name, any(t.get_text().startswith("No data") for t in fig.texts)))
        drawn[-1] += (any(ax.collections or ax.lines for ax in fig.axes),)
        return real_save(fig, stem)

    monkeypatch.setattr(figures, "_save", spy)
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
        "import joulebench.figures, joulebench.score, joulebench.fits, joulebench.summary\n"
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
    assert "Energy above idle per image (J, estimated)" in labels


def test_figures_from_a_published_summary_without_torch(tmp_path):
    """The figures-from-data path, end to end in a fresh interpreter: torch never loads."""
    from joulebench.summary import write_summary

    profile, catalog, accuracy, _ = synthetic_study(n_models=6)
    write_summary(build_summary(profile, catalog, accuracy), tmp_path / "published.parquet")
    code = (
        "import sys\n"
        "from joulebench.summary import read_summary\n"
        "from joulebench.score import score_summary\n"
        "from joulebench.fits import all_fits\n"
        "from joulebench.figures import render_all\n"
        f"s = read_summary({str(tmp_path / 'published.parquet')!r})\n"
        "out = render_all(s, score_summary(s), all_fits(s, baseline_method='fp32'), None,\n"
        f"                 {str(tmp_path / 'figs')!r})\n"
        f"assert len(out) == {len(figures.FIGURE_NAMES)}\n"
        "assert 'torch' not in sys.modules and 'timm' not in sys.modules\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert len(list((tmp_path / "figs").glob("*.png"))) == len(figures.FIGURE_NAMES)


def test_train_vs_inference(tmp_path, monkeypatch):
    summary, _, _, _ = study_tables(estimated=True)
    assert figures.train_vs_inference(summary, tmp_path / "none")  # inference only: no data
    train = summary.assign(phase="train", energy_per_image_j=summary["energy_per_image_j"] * 3)
    both = pd.concat([summary, train], ignore_index=True)
    labels = _axis_labels(monkeypatch, lambda: figures.train_vs_inference(both, tmp_path / "tv"))
    assert "Training energy per sample (J, estimated)" in labels
    assert "Inference energy per image (J, estimated)" in labels
    _assert_written([tmp_path / "tv.pdf", tmp_path / "tv.png"])
