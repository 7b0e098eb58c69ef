"""Fits recover known laws from synthetic data; savings and batch scaling by hand."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from joulebench.analysis.fits import (
    FIT_TABLE_COLUMNS,
    IMPLAUSIBLE,
    LAW_FORMS,
    accuracy_fits,
    accuracy_law,
    all_fits,
    batch_scaling,
    compare_laws,
    factor_fits,
    fit_log_linear,
    fit_loglog,
    fit_saturating,
    law_fit,
    method_savings,
    pick_baseline,
    read_fits,
    write_fits,
)
from joulebench.analysis.summary import build_summary
from joulebench.table_io import read_table
from joulebench.tables import ACCURACY_LAW, PROFILE_COLUMNS


def _study(rows, catalog=None, accuracy=None):
    profile = pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))
    return build_summary(profile, catalog, accuracy)


def _row(model, energy, method="fp32", batch=32, status="ok", meter="nvml", **kw):
    return {
        "device_label": "gpu",
        "model": model,
        "method": method,
        "batch_size_requested": batch,
        "batch_size": batch,
        "status": status,
        "meter": meter,
        "is_estimate": meter.startswith("estimate:") if status == "ok" else None,
        "energy_per_image_j": energy if status == "ok" else np.nan,
        "flags": "",
        **kw,
    }


def test_loglog_recovers_a_known_power_law():
    rng = np.random.default_rng(1)
    flops = 10 ** rng.uniform(8, 12, 300)
    energy = 3e-12 * flops**0.9 * np.exp(rng.normal(0, 0.1, 300))
    f = fit_loglog(flops, energy)
    assert f["slope"] == pytest.approx(0.9, abs=0.02)
    assert 10 ** f["intercept"] == pytest.approx(3e-12, rel=0.3)
    assert f["r2"] > 0.98 and f["n"] == 300
    assert 0 < f["slope_se"] < 0.02


def test_loglog_is_exact_without_noise_and_drops_non_positive():
    x = np.array([1e9, 1e10, 1e11, 0.0, -5.0])
    y = 2e-11 * np.abs(x) ** 1.1
    f = fit_loglog(x, y)
    assert f["slope"] == pytest.approx(1.1) and f["r2"] == pytest.approx(1.0) and f["n"] == 3


def _factor_study(seed=2):
    """Two families with their own slopes (0.8 and 1.1) in FLOPs, and a family of two."""
    rng = np.random.default_rng(seed)
    rows, cat = [], []
    for family, slope, n in (("resnet", 0.8, 40), ("vit", 1.1, 40), ("tiny", 1.0, 2)):
        for i in range(n):
            flops = 10 ** rng.uniform(8.5, 11.5)
            name = f"{family}{i}"
            energy = 1e-11 * flops**slope * np.exp(rng.normal(0, 0.05))
            rows.append(_row(name, energy))
            cat.append(
                {
                    "model": name,
                    "family": family,
                    "status": "ok",
                    "flops_per_image": flops,
                    "params": int(flops / 100),
                    "activations_per_image": flops / 300,
                }
            )
    return _study(rows, pd.DataFrame(cat))


def test_factor_fits_overall_and_per_family():
    fits = factor_fits(_factor_study())
    flops = fits[fits["factor"] == "flops_per_image"].set_index("family")
    assert flops.loc["resnet", "slope"] == pytest.approx(0.8, abs=0.03)
    assert flops.loc["vit", "slope"] == pytest.approx(1.1, abs=0.03)
    assert flops.loc["all", "n"] == 82
    assert "tiny" not in flops.index  # n = 2 < 3: skipped
    assert set(fits["factor"]) == {"flops_per_image", "params", "activations_per_image"}
    assert (fits["energy_kind"] == "total").all()


def test_log_linear_accuracy_fit_is_exact_on_its_own_law():
    e = np.geomspace(1e-3, 1.0, 20)
    f = fit_log_linear(e, 90 + 5 * np.log10(e))
    assert f["intercept_pct"] == pytest.approx(90) and f["slope_pct_per_decade"] == pytest.approx(5)
    assert f["r2"] == pytest.approx(1.0) and f["rmse_pct"] == pytest.approx(0, abs=1e-9)


def test_saturating_fit_recovers_ceiling_and_exponent():
    rng = np.random.default_rng(3)
    e = np.geomspace(1e-3, 3.0, 60)
    e0 = float(np.exp(np.mean(np.log(e))))
    top1 = 86.0 - 6.0 * (e / e0) ** -0.4
    f = fit_saturating(e, top1)
    assert f["ceiling_pct"] == pytest.approx(86.0, abs=1e-3)
    assert f["amplitude_pct"] == pytest.approx(6.0, abs=1e-3)
    assert f["exponent"] == pytest.approx(0.4, abs=1e-4)
    assert f["energy_scale_j"] == pytest.approx(e0)
    noisy = fit_saturating(e, top1 + rng.normal(0, 0.3, len(e)))
    assert noisy["exponent"] == pytest.approx(0.4, abs=0.08) and noisy["r2"] > 0.95
    assert fit_saturating(e[:3], top1[:3])["note"].startswith("too few")


def test_accuracy_fits_table_has_both_forms_and_subsets():
    e = np.geomspace(1e-3, 1.0, 12)
    rows = [_row(f"m{i}", v) for i, v in enumerate(e)]
    acc = pd.DataFrame(
        {
            "model": [f"m{i}" for i in range(12)],
            "top1": 90 + 5 * np.log10(e),
            "accuracy_source": "reference",
        }
    )
    t = accuracy_fits(_study(rows, accuracy=acc))
    assert set(zip(t["subset"], t["form"], strict=True)) == {
        (s, f) for s in ("all", "front") for f in ("log-linear", "saturating")
    }
    ll = t[(t["subset"] == "all") & (t["form"] == "log-linear")].iloc[0]
    assert ll["slope_pct_per_decade"] == pytest.approx(5) and ll["n"] == 12
    # every point of a strictly rising law is on the front
    assert t.loc[t["subset"] == "front", "n"].eq(12).all()


def _savings_study():
    rows = [
        _row("a", 0.10, "fp32"),
        _row("a", 0.06, "bf16"),
        _row("b", 0.20, "fp32", status="oom"),
        _row("b", 0.10, "bf16"),
        _row("c", 0.05, "bf16"),  # no fp32 row at all
        _row("d", 0.10, "fp32"),
        _row("d", 0.05, "bf16", meter="estimate:tdp-linear"),  # not comparable
        _row("a", 0.04, "fp32", batch=128),
        _row("a", 0.03, "bf16", batch=128, batch_size=64),  # OOM retry at half the batch
    ]
    return _study(rows)


def test_method_savings_by_hand():
    s = method_savings(_savings_study(), "fp32").set_index(["model", "batch_size_requested"])
    assert len(s) == 5  # one per non-baseline row: nothing dropped
    assert s.loc[("a", 32), "saving"] == pytest.approx(0.4)
    assert s.loc[("a", 32), "note"] == ""
    assert np.isnan(s.loc[("b", 32), "saving"]) and "fp32: status oom" in s.loc[("b", 32), "note"]
    assert "no fp32 row" in s.loc[("c", 32), "note"]
    assert np.isnan(s.loc[("d", 32), "saving"]) and "estimated" in s.loc[("d", 32), "note"]
    assert s.loc[("a", 128), "saving"] == pytest.approx(0.25)
    assert "differ" in s.loc[("a", 128), "note"]


def _methods_study(*methods: tuple[str, dict]):
    """Model a, batch 32, one row per (method name, its columns)."""
    return _study([_row("a", 0.1 * (i + 1), name, **kw) for i, (name, kw) in enumerate(methods)])


def test_the_baseline_is_the_one_asked_else_the_plain_method_never_the_first_by_name():
    """A summary without the asked baseline (a published one; bf16 sorts before fp32) is
    compared against its plain fp32 eager method, never against whichever sorts first."""
    fp32 = {"precision": "fp32", "runtime": "pytorch", "channels_last": False}
    study = _methods_study(
        ("bf16", {**fp32, "precision": "bf16"}),
        ("a-channels-last", {**fp32, "channels_last": True}),
        ("a-compiled", {**fp32, "compile": "default"}),
        ("a-capped", {**fp32, "power_limit_requested_fraction": 0.6}),
        ("eager", fp32),
    )
    assert pick_baseline(study, "bf16") == "bf16"
    assert pick_baseline(study, None) == "eager"
    assert pick_baseline(study, "fp16") == "eager"
    # No column says what a method runs (an old published summary): the one named fp32.
    bare = _methods_study(("bf16", {}), ("fp32", {}))
    assert pick_baseline(bare, None) == "fp32"
    assert pick_baseline(_methods_study(("b", {}), ("c", {})), None) == "b"
    assert pick_baseline(_study([]), "fp32") is None


def test_the_fits_command_says_the_baseline_it_took_instead(tmp_path, capsys):
    from joulebench.analysis.fits import run_fits

    path = tmp_path / "summary.parquet"
    plain = {"precision": "fp32", "runtime": "pytorch"}
    _methods_study(("bf16", {**plain, "precision": "bf16"}), ("fp32", plain)).to_parquet(path)
    run_fits(path, tmp_path / "fits")
    savings = read_table(tmp_path / "fits" / "method_savings.parquet")
    assert savings["baseline_method"].tolist() == ["fp32"]
    assert "fits: savings against 'fp32'" in capsys.readouterr().err
    run_fits(path, tmp_path / "fits", baseline_method="tf32")
    err = capsys.readouterr().err
    assert "fits: baseline method 'tf32' not in the summary; savings against 'fp32'" in err


def test_the_fits_fit_the_energy_the_score_grades(tmp_path):
    """energy_scope node: the fits compare the whole node's energies, as the score and the
    figures do (a fit drawn beside node points was of the device's before)."""
    from joulebench.analysis.fits import run_fits

    plain = {"precision": "fp32", "runtime": "pytorch"}
    summary = _methods_study(("bf16", {**plain, "precision": "bf16"}), ("fp32", plain))
    host_j = summary["method"].map({"bf16": 0.3, "fp32": 0.0})  # bf16 costs the host more
    summary["energy_node_per_image_j"] = summary["energy_per_image_j"] + host_j
    summary["host_is_estimate"] = False
    path = tmp_path / "summary.parquet"
    summary.to_parquet(path)
    savings = {}
    for scope in ("device", "node"):
        run_fits(path, tmp_path / scope, baseline_method="fp32", energy_scope=scope)
        table = read_table(tmp_path / scope / "method_savings.parquet")
        savings[scope] = table.set_index("method").loc["bf16", "saving"]
    assert savings["device"] == pytest.approx(1 - 0.1 / 0.2)  # bf16 0.1 J, fp32 0.2 J
    assert savings["node"] == pytest.approx(1 - 0.4 / 0.2)  # 0.1 + 0.3 against 0.2
    with pytest.raises(ValueError, match="total energy"):
        run_fits(path, tmp_path / "x", energy="dynamic", energy_scope="node")


def test_batch_scaling_relative_to_the_smallest_batch():
    rows = [_row("a", e, batch=b) for b, e in ((1, 0.4), (8, 0.1), (64, 0.05))]
    rows.append(_row("a", 0.1, batch=256, status="oom"))
    t = batch_scaling(_study(rows)).set_index("batch_size")
    assert t["energy_vs_smallest_batch"].to_dict() == pytest.approx({1: 1.0, 8: 0.25, 64: 0.125})


def test_all_fits_write_with_declared_columns(tmp_path):
    tables = all_fits(_factor_study(), baseline_method="fp32")
    paths = write_fits(tables, tmp_path)
    assert {p.name for p in paths} == {f"{n}.parquet" for n in FIT_TABLE_COLUMNS}
    for name, cols in FIT_TABLE_COLUMNS.items():
        assert list(read_table(tmp_path / f"{name}.parquet").columns) == list(cols)
    back = read_fits(tmp_path)
    pd.testing.assert_frame_equal(back["factor_fits"], tables["factor_fits"])


def test_empty_summary_gives_empty_tables():
    empty = _study([_row("a", 0.1, status="error")])
    tables = all_fits(empty, baseline_method="fp32")
    assert tables["factor_fits"].empty and tables["accuracy_fits"].empty
    assert tables["batch_scaling"].empty


# --- the accuracy-energy law: the comparison recovers the form the data came from -------------


def law_data(form: str, seed: int, n: int = 60, noise_pct: float = 0.3):
    """Synthetic (energy, top-1) from one form: energies log-uniform over four decades,
    Gaussian noise of `noise_pct` points on top-1."""
    rng = np.random.default_rng(seed)
    e = 10 ** rng.uniform(-3, 1, n)
    if form == "log-linear":
        y = 75 + 6 * np.log10(e)
    elif form == "power-law":
        y = 85 - 10 * (e / 0.1) ** (-0.5)
    else:  # energy grows double-exponentially with accuracy
        y = 60 + 8 * np.log(np.log(e / 2e-4))
    return e, y + rng.normal(0, noise_pct, n)


def _winner(rows, criterion: str) -> str:
    return next(r["form"] for r in rows if r[f"best_by_{criterion}"])


@pytest.mark.parametrize("form", LAW_FORMS)
def test_the_comparison_picks_the_generating_form(form):
    picked = {c: 0 for c in ("aic", "bic", "cv")}
    for seed in range(10):
        rows = compare_laws(*law_data(form, seed))
        for c in picked:
            picked[c] += _winner(rows, c) == form
    # BIC, the criterion the figure draws by, picks it nearly always. Both 3-parameter forms
    # contain the log-linear one as a limit, so on log-linear data AIC and held-out error,
    # which penalise an extra parameter less, prefer a bigger form by chance more often
    # (AIC alone: P(chi2_1 > 2) = 16 % for each nesting form); elsewhere they agree.
    assert picked["bic"] >= 9, picked
    floor = 6 if form == "log-linear" else 9
    assert picked["cv"] >= floor and picked["aic"] >= floor, picked


@pytest.mark.parametrize("form", LAW_FORMS)
def test_each_form_recovers_its_coefficients_without_noise(form):
    e, y = law_data(form, 0, noise_pct=0.0)
    fit = law_fit(form, e, y)
    want = {  # (a, b): the power law's amplitude is at E0, the fit's geometric mean energy
        "log-linear": (75, 6),
        "power-law": (85, 10 * (np.exp(np.mean(np.log(e))) / 0.1) ** -0.5),
    }.get(form)
    if form == "double-exponential":  # top1 = a + b ln ln(E/c): a = 60 at c = 2e-4 J
        assert fit["b"] == pytest.approx(8, rel=1e-3) and fit["c"] == pytest.approx(2e-4, rel=1e-2)
        assert fit["a"] == pytest.approx(60, abs=0.05)
    else:
        assert fit["a"] == pytest.approx(want[0], rel=1e-3)
        assert fit["b"] == pytest.approx(want[1], rel=1e-3)
        if form == "power-law":
            assert fit["c"] == pytest.approx(0.5, rel=1e-3)
    assert fit["rss"] == pytest.approx(0.0, abs=1e-6)


def test_accuracy_law_table_per_group_and_subset():
    e, y = law_data("power-law", 3, n=12)
    rows = [
        {
            "device_label": "gpu",
            "model": f"m{i}",
            "method": "fp32",
            "batch_size_requested": 64,
            "batch_size": 64,
            "status": "ok",
            "meter": "nvml",
            "is_estimate": False,
            "energy_per_image_j": e[i],
            "flags": "",
        }
        for i in range(12)
    ]
    rows.append({**rows[0], "model": "few", "method": "fp16"})  # a group of one: a note
    profile = pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))
    acc = pd.DataFrame(
        {"model": [*(f"m{i}" for i in range(12)), "few"], "top1": [*y, 70.0]}
    ).assign(accuracy_source="reference")
    table = accuracy_law(build_summary(profile, None, acc))
    assert list(table.columns) == list(ACCURACY_LAW.names)
    full = table[(table["method"] == "fp32") & (table["subset"] == "all")]
    assert list(full["form"]) == list(LAW_FORMS) and set(full["n"]) == {12}
    assert full["best_by_bic"].sum() == 1 and (full["delta_bic"] >= 0).all()
    few = table[table["method"] == "fp16"]
    assert few["note"].str.contains("too few to compare forms").all()
    assert few["bic"].isna().all()


# --- absurd energies: left out with a reason, never a traceback or a numpy warning -----------


def _absurd_study(value: float):
    """12 models on a clean law (fp32 and bf16), the first three bf16 rows at `value`."""
    e = np.geomspace(1e-3, 1.0, 12)
    rows = [_row(f"m{i}", v, "fp32", flops_per_image=1e9 * (i + 1)) for i, v in enumerate(e)]
    rows += [_row(f"m{i}", value if i < 3 else v / 2, "bf16") for i, v in enumerate(e)]
    acc = pd.DataFrame({"model": [f"m{i}" for i in range(12)], "top1": 90 + 5 * np.log10(e)})
    return _study(rows, accuracy=acc.assign(accuracy_source="reference"))


@pytest.mark.parametrize("value", [1e300, 1e-300, 1e308, 5e-324, 1e7])
def test_implausible_energies_are_left_out_with_a_reason(value):
    summary = _absurd_study(value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning fails the test
        tables = all_fits(summary, baseline_method="fp32")
    acc = tables["accuracy_fits"]
    bf16 = acc[acc["method"] == "bf16"]
    assert bf16["note"].str.contains(f"3 rows left out: {IMPLAUSIBLE}", regex=False).all()
    assert (bf16.loc[bf16["subset"] == "all", "n"] == 9).all()
    assert not acc.loc[acc["method"] == "fp32", "note"].str.contains("left out").any()
    law = tables["accuracy_law"]
    assert law.loc[law["method"] == "bf16", "note"].str.contains("3 rows left out").all()
    savings = tables["method_savings"].set_index("model")
    assert savings.loc["m0", "note"] == f"bf16: {IMPLAUSIBLE}"
    assert np.isnan(savings.loc["m0", "saving"]) and savings.loc["m5", "saving"] == 0.5
    assert len(tables["batch_scaling"]) == 21  # 24 rows, 3 left out


@pytest.mark.parametrize("value", [np.inf, -1.0, 0.0])
def test_impossible_energies_never_reach_a_fit(value):
    """The summary makes them status invalid (a published one is refused on reading)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # build_summary's 'marked invalid' warning
        summary = _absurd_study(value)
    assert (summary.loc[summary["method"] == "bf16", "status"] == "invalid").sum() == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tables = all_fits(summary, baseline_method="fp32")
    bf16 = tables["accuracy_fits"].query("method == 'bf16' and subset == 'all'")
    assert (bf16["n"] == 9).all() and not bf16["note"].str.contains("left out").any()


def test_fits_command_names_implausible_rows_and_refuses_impossible_ones(tmp_path, capsys):
    from joulebench.cli import main

    path = tmp_path / "summary.parquet"
    _absurd_study(1e300).to_parquet(path)
    assert main(["fits", str(path), "--outdir", str(tmp_path / "fits")]) == 0
    err = capsys.readouterr().err
    assert f"fits: 3 rows left out: {IMPLAUSIBLE}, e.g. m0 bf16 batch 32 on gpu: 1e+300 J" in err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad = _absurd_study(1.0)
    bad.loc[bad["model"] == "m0", "energy_per_image_j"] = -1.0
    bad.to_parquet(path)
    assert main(["fits", str(path), "--outdir", str(tmp_path / "fits")]) == 2
    err = capsys.readouterr().err
    assert "energy_per_image_j must be > 0" in err and "Traceback" not in err
