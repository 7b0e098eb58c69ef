"""Summary: the join of catalog, profile and accuracy, and the schema a published summary
is checked against."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.summary_inputs import small_accuracy, small_catalog, small_profile

from joulebench.analysis.summary import (
    STATUS_NOT_PROFILED,
    SUMMARY_COLUMNS,
    SUMMARY_KEY,
    SummaryError,
    build_summary,
    read_summary,
    validate_summary,
    write_summary,
)
from joulebench.table_io import read_table


@pytest.fixture
def summary():
    return build_summary(small_profile(), small_catalog(), small_accuracy())


def test_one_row_per_configuration_plus_unprofiled_models(summary):
    assert list(summary.columns) == list(SUMMARY_COLUMNS)
    keyed = summary.dropna(subset=list(SUMMARY_KEY))
    assert not keyed.duplicated(list(SUMMARY_KEY)).any()
    assert len(keyed) == 7  # 6 measured + 1 out of memory
    lost = summary[summary["status"] == STATUS_NOT_PROFILED]
    assert lost["model"].tolist() == ["broken.none"]
    assert lost["reason"].iloc[0] == "catalog: RuntimeError: cannot build"
    assert lost["catalog_status"].iloc[0] == "failed"
    assert set(summary["phase"]) == {"inference"}


def test_failed_rows_are_kept_with_their_status(summary):
    oom = summary[summary["status"] == "oom"].iloc[0]
    assert oom["reason"] == "out of memory" and np.isnan(oom["energy_per_image_j"])
    assert oom["batch_size_requested"] == 512 and oom["batch_size"] == 1
    assert bool(oom["energy_is_estimate"])  # said by the meter's name


def test_catalog_and_accuracy_are_joined(summary):
    r = summary[(summary["model"] == "resnet18.a1_in1k") & (summary["status"] == "ok")].iloc[0]
    assert r["family"] == "resnet" and r["params"] == 11_689_512
    assert r["flops_per_image"] == pytest.approx(3.64e9)
    assert r["top1"] == pytest.approx(71.5) and r["accuracy_img_size"] == 224
    assert r["accuracy_source"] == "reference"
    vit = summary[summary["model"].str.startswith("vit")].iloc[0]
    assert vit["accuracy_source"] == "none" and np.isnan(vit["top1"])
    assert vit["accuracy_note"] == "model not in the accuracy table"
    assert summary.loc[summary["status"] == "ok", "energy_is_estimate"].all()


def test_without_catalog_or_accuracy():
    s = build_summary(small_profile())
    assert set(s["catalog_status"]) == {"missing"}
    assert set(s["accuracy_source"]) == {"none"}
    assert set(s["accuracy_note"]) == {"no accuracy table"}
    validate_summary(s)


def test_training_phase_and_unknown_phase():
    assert set(build_summary(small_profile(), phase="train")["phase"]) == {"train"}
    with pytest.raises(ValueError, match="phase"):
        build_summary(small_profile(), phase="fine-tuning")


def test_round_tripped_parquet_and_csv_are_accepted(summary, tmp_path):
    write_summary(summary, tmp_path / "summary.parquet", tmp_path / "summary.csv")
    back = read_summary(tmp_path / "summary.parquet")
    validate_summary(back)
    pd.testing.assert_frame_equal(back, summary)
    from_csv = read_summary(tmp_path / "summary.csv")
    assert list(from_csv.columns) == list(SUMMARY_COLUMNS)
    assert from_csv["energy_per_image_j"].equals(summary["energy_per_image_j"])
    assert from_csv["energy_is_estimate"].dtype == "boolean"


def test_missing_column_is_rejected(summary):
    with pytest.raises(SummaryError, match=r"missing columns: \['energy_per_image_j'\]"):
        validate_summary(summary.drop(columns=["energy_per_image_j"]))


def test_wrong_dtype_is_rejected(summary, tmp_path):
    bad = summary.copy()
    bad["energy_per_image_j"] = bad["energy_per_image_j"].astype(str)
    bad["batch_size"] = bad["batch_size"].astype(float)
    with pytest.raises(SummaryError) as err:
        validate_summary(bad)
    assert "energy_per_image_j is" in str(err.value) and "expected float64" in str(err.value)
    assert "batch_size is float64, expected Int64" in str(err.value)
    # and from a file: the path is named
    bad.to_parquet(tmp_path / "published.parquet")
    with pytest.raises(SummaryError, match="published.parquet"):
        read_summary(tmp_path / "published.parquet")


def test_impossible_values_are_rejected(summary):
    dup = pd.concat([summary, summary.iloc[[0]]], ignore_index=True)
    with pytest.raises(SummaryError, match="share a key"):
        validate_summary(dup)
    mixed = summary.copy()
    mixed.loc[0, "energy_is_estimate"] = False  # an estimate meter claiming a measurement
    with pytest.raises(SummaryError, match="estimate meter"):
        validate_summary(mixed)
    neg = summary.copy()
    neg.loc[0, "energy_per_image_j"] = -1.0
    with pytest.raises(SummaryError, match="negative"):
        validate_summary(neg)
    src = summary.copy()
    src.loc[0, "accuracy_source"] = "guessed"
    with pytest.raises(SummaryError, match="accuracy_source"):
        validate_summary(src)
    # issue 40 item 10: an ok row without its energy, and a name of megabytes (a page of 25 MB)
    ok = summary.index[summary["status"] == "ok"][0]
    nan = summary.copy()
    nan.loc[ok, "energy_per_image_j"] = float("nan")
    with pytest.raises(SummaryError, match="energy_per_image_j is missing .* with status ok"):
        validate_summary(nan)
    long = summary.copy()
    long["model"] = long["model"].astype(object)
    long.loc[0, "model"] = "m" * 20_000_000
    with pytest.raises(SummaryError, match="model must be at most 200 characters: 1 row"):
        validate_summary(long)


def test_older_summary_missing_optional_columns_is_read(summary, tmp_path):
    summary.drop(columns=["device_name", "warmup_s"]).to_parquet(tmp_path / "old.parquet")
    with pytest.warns(UserWarning, match="lacks"):
        back = read_summary(tmp_path / "old.parquet")
    assert back["device_name"].isna().all() and back["warmup_s"].isna().all()
    summary.drop(columns=["energy_per_image_j"]).to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(SummaryError, match="energy_per_image_j"):
        read_summary(tmp_path / "bad.parquet")


def test_extra_columns_are_dropped_with_a_warning(summary, tmp_path):
    summary.assign(newer_field=1.0).to_parquet(tmp_path / "s.parquet")
    with pytest.warns(UserWarning, match="newer_field"):
        back = read_summary(tmp_path / "s.parquet")
    assert "newer_field" not in back.columns


def test_written_atomically_with_the_declared_schema(summary, tmp_path):
    write_summary(summary, tmp_path / "summary.parquet")
    assert [p.name for p in tmp_path.iterdir()] == ["summary.parquet"]
    assert list(read_table(tmp_path / "summary.parquet").columns) == list(SUMMARY_COLUMNS)


def test_column_names_carry_units():
    for col in SUMMARY_COLUMNS:
        if "energy" in col and not col.endswith(("_cv", "_is_estimate")):
            assert col.endswith("_j"), col
        if "power" in col:  # watts, or a ratio of two powers (a fraction of the default limit)
            assert col.endswith(("_w", "_fraction")), col


def test_rows_carry_their_own_phase():
    infer = small_profile()
    train = infer.assign(phase="train", energy_per_image_j=infer["energy_per_image_j"] * 3)
    s = build_summary(pd.concat([infer, train], ignore_index=True))
    validate_summary(s)
    assert s["phase"].value_counts().to_dict() == {"inference": len(infer), "train": len(infer)}


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [
        ("top1", 150.0, "top1 = 150.0 in row 0 (cpu · bf16 · resnet18.a1_in1k · batch 8)"),
        ("top1", -5.0, "top1 must lie in [0, 100]"),
        ("top5", 100.5, "top5 = 100.5"),
        ("throughput_img_s", -1.0, "throughput_img_s = -1.0"),
        ("throughput_img_s", 0.0, "throughput_img_s must be > 0"),
        ("energy_per_image_j", 0.0, "energy_per_image_j = 0.0"),
        ("energy_per_image_j", np.inf, "energy_per_image_j = inf"),
        ("energy_per_image_cv", -0.1, "energy_per_image_cv must not be negative"),
        ("batch_size", 0, "batch_size must be at least 1"),
        ("power_limit_requested_w", 0.0, "power_limit_requested_w must be > 0 where a knob"),
        ("power_limit_readback_w", -250.0, "power_limit_readback_w = -250.0"),
        ("sm_clock_readback_mhz", 0.0, "sm_clock_readback_mhz must be > 0"),
        ("power_limit_requested_fraction", 60.0, "must lie in (0, 1.5] (a fraction of the"),
        ("power_limit_requested_fraction", 0.0, "power_limit_requested_fraction = 0.0"),
    ],
)
def test_impossible_values_are_named_with_row_and_value(column, value, words, tmp_path):
    s = build_summary(small_profile())  # valid
    s[column] = s[column].astype(object)
    s.loc[0, column] = value
    s[column] = s[column].astype(SUMMARY_COLUMNS[column])
    with pytest.raises(SummaryError) as err:
        validate_summary(s)
    assert words in str(err.value)
    s.to_parquet(tmp_path / "hostile.parquet")
    with pytest.raises(SummaryError, match=r"(?s)hostile\.parquet: .*" + column):
        read_summary(tmp_path / "hostile.parquet")


def test_knob_columns_are_carried_from_the_rows_and_empty_where_no_knob_is_set():
    from joulebench.tables import KNOB_COLUMNS

    profile = small_profile()
    n = len(profile)
    profile["power_limit_requested_fraction"] = [0.6] + [np.nan] * (n - 1)
    profile["power_limit_readback_w"] = [84.0] + [np.nan] * (n - 1)
    profile["sm_clock_requested_preset"] = ["", "max"] + [""] * (n - 2)
    profile["sm_clock_readback_mhz"] = [np.nan, 1980.0] + [np.nan] * (n - 2)
    s = build_summary(profile)
    validate_summary(s)
    assert set(KNOB_COLUMNS) <= set(s.columns)
    row = s[(s["method"] == profile.loc[0, "method"]) & (s["model"] == profile.loc[0, "model"])]
    row = row[row["batch_size_requested"] == profile.loc[0, "batch_size_requested"]].iloc[0]
    assert (row["power_limit_requested_fraction"], row["power_limit_readback_w"]) == (0.6, 84.0)
    assert s["sm_clock_requested_preset"].fillna("").tolist().count("max") == 1
    assert s["power_limit_requested_w"].isna().all()  # no row asked for watts


def test_many_impossible_rows_are_counted_not_listed():
    s = build_summary(small_profile())
    s["top1"] = 150.0
    msg = str(pytest.raises(SummaryError, validate_summary, s).value)
    assert msg.count("top1 = 150.0") == 3 and f"(and {len(s) - 3} more rows)" in msg


def test_our_own_impossible_reading_becomes_an_invalid_row():
    profile = small_profile()
    profile.loc[0, "throughput_img_s"] = -1.0
    profile.loc[1, "energy_per_image_j"] = 0.0
    with pytest.warns(UserWarning, match="impossible"):
        s = build_summary(profile)
    validate_summary(s)  # the summary is still written, with every row
    assert len(s) == len(build_summary(small_profile()))
    bad = s[s["status"] == "invalid"]
    assert len(bad) == 2
    assert bad["reason"].str.contains("throughput_img_s = -1.0").any()
    assert bad["reason"].str.contains("energy_per_image_j = 0.0").any()
    assert bad["throughput_img_s"].isna().any() and bad["energy_per_image_j"].isna().any()


def test_negative_ci_lower_bounds_are_clipped_at_zero_and_flagged(tmp_path):
    profile = small_profile()
    profile.loc[0, ["energy_per_image_ci95_low_j", "energy_per_image_ci95_high_j"]] = [-2.96, 5.1]
    profile.loc[0, "energy_per_image_cv"] = 1.04
    profile.loc[1, "dynamic_energy_per_image_ci95_low_j"] = -0.01
    profile.loc[2, "energy_per_image_ci95_low_j"] = 0.05
    s = build_summary(profile)
    by_key = s.set_index(["model", "method", "batch_size_requested"])
    row0 = by_key.loc[tuple(profile.loc[0, ["model", "method", "batch_size_requested"]])]
    assert row0["energy_per_image_ci95_low_j"] == 0.0
    assert row0["energy_per_image_ci95_high_j"] == 5.1  # the upper bound is left alone
    assert "ci-clipped" in row0["flags"]
    assert (s["energy_per_image_ci95_low_j"].dropna() >= 0).all()
    assert (s["dynamic_energy_per_image_ci95_low_j"].dropna() >= 0).all()
    assert s["flags"].fillna("").str.contains("ci-clipped").sum() == 2
    # a published summary written before clipping is clipped when read
    raw = build_summary(small_profile())
    raw.loc[0, "energy_per_image_ci95_low_j"] = -2.96
    raw.to_parquet(tmp_path / "old.parquet")
    back = read_summary(tmp_path / "old.parquet")
    assert back.loc[0, "energy_per_image_ci95_low_j"] == 0.0
    assert back.loc[0, "flags"] == "ci-clipped"


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_the_minimal_documented_summary_is_read_and_scored(fmt, tmp_path):
    """Exactly the essential columns (docs/scoring.md): read, filled, scored and graded."""
    from joulebench.analysis.score import score_summary
    from joulebench.analysis.summary import ESSENTIAL_COLUMNS

    full = build_summary(small_profile(), small_catalog(), small_accuracy())
    minimal = full[full["status"] != STATUS_NOT_PROFILED][list(ESSENTIAL_COLUMNS)]
    path = tmp_path / f"minimal.{fmt}"
    minimal.to_parquet(path) if fmt == "parquet" else minimal.to_csv(path, index=False)
    with pytest.warns(UserWarning, match="lacks"):
        back = read_summary(path)
    assert list(back.columns) == list(SUMMARY_COLUMNS)
    has_top1 = back["top1"].notna()
    assert set(back.loc[has_top1, "accuracy_source"]) == {"unknown"}
    assert set(back.loc[~has_top1, "accuracy_source"]) == {"none"}
    scores = score_summary(back, reference_model=None)
    assert scores["grade"].notna().sum() == int((has_top1 & (back["status"] == "ok")).sum())
