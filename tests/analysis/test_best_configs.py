"""Best configurations: least energy per model, overall and under each constraint, against
answers worked by hand (tests/helpers/decision_rows.py); flagged and estimated rows follow
the score."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers.decision_rows import decision_summary, profile_row, sweep_summary

from joulebench.analysis.best_configs import (
    DecisionError,
    best_configs,
    configuration_text,
    knob_text,
    parse_constraints,
    run_best_configs,
)
from joulebench.analysis.summary import read_summary
from joulebench.table_io import read_table
from joulebench.tables import BEST_CONFIGS, KNOB_COLUMNS


def _pick(table, model, constraint="none", **where) -> pd.Series:
    sel = (table["model"] == model) & (table["constraint"] == constraint)
    for k, v in where.items():
        sel &= table[k] == v
    rows = table[sel.fillna(False).astype(bool)]
    assert len(rows) == 1, (model, constraint, rows)
    return rows.iloc[0]


def test_best_overall_and_under_each_constraint_by_hand():
    table = best_configs(
        decision_summary(), max_latency_ms=[10, 100], min_throughput_img_s=[500], max_batch_size=[1]
    )
    expect = {  # (model, constraint) -> (method, batch) or None (nothing meets it)
        ("small", "none"): ("fp16", 64),
        ("mid", "none"): ("fp16", 64),
        ("big", "none"): ("fp16", 64),
        ("small", "latency_ms<=10"): ("fp16", 1),
        ("mid", "latency_ms<=10"): ("fp16", 1),
        ("big", "latency_ms<=10"): None,
        ("small", "latency_ms<=100"): ("fp16", 64),
        ("mid", "latency_ms<=100"): ("fp16", 64),
        ("big", "latency_ms<=100"): ("fp16", 1),
        ("small", "throughput_img_s>=500"): ("fp16", 64),
        ("mid", "throughput_img_s>=500"): ("fp16", 64),
        ("big", "throughput_img_s>=500"): None,
        ("big", "batch_size<=1"): ("fp16", 1),
    }
    for (model, constraint), want in expect.items():
        row = _pick(table, model, constraint)
        if want is None:
            assert not row["met"] and pd.isna(row["method"]), (model, constraint)
            assert row["note"].startswith("no configuration meets"), row["note"]
            continue
        assert row["met"], (model, constraint)
        assert (row["method"], row["batch_size"]) == want, (model, constraint)
    big = _pick(table, "big", "latency_ms<=100")
    assert big["energy_per_image_j"] == pytest.approx(0.060)
    assert big["energy_per_image_ci95_low_j"] == pytest.approx(0.054)
    assert big["energy_per_image_ci95_high_j"] == pytest.approx(0.066)
    assert big["latency_ms"] == pytest.approx(20.0) and big["latency_kind"] == "mean"
    assert big["configurations"] == 4 and big["configurations_meeting"] == 2  # 30 and 20 ms
    # the closest big configuration to 10 ms is fp16 batch 1 at 20 ms
    note = _pick(table, "big", "latency_ms<=10")["note"]
    assert "closest: fp16 batch 1: latency_ms 20 ms (over by 10)" in note, note


def test_p95_latency_where_measured_takes_the_place_of_the_mean():
    rows = [profile_row("p", "fp32", 1, 0.01, 0.001, 5.0, 200.0, latency_ms_p95=12.0)]
    rows += [profile_row("p", "fp16", 1, 0.02, 0.001, 6.0, 160.0, latency_ms_p95=8.0)]
    table = best_configs(decision_summary(rows, configs=[]), max_latency_ms=[10])
    row = _pick(table, "p", "latency_ms<=10")
    assert row["method"] == "fp16" and row["latency_kind"] == "p95"  # fp32's p95 is 12 ms


def test_ties_within_ci_count_configurations_not_told_apart():
    # small fp16/64 at 3 mJ +-0.3; fp32/64 at 4 +-0.4 does not reach 3.3; a 3.2 one does
    rows = [profile_row("small", "bf16", 64, 0.0032, 0.0003, 40.0, 1600.0)]
    table = best_configs(decision_summary(rows))
    assert _pick(table, "small")["ties_within_ci"] == 1
    assert _pick(table, "mid")["ties_within_ci"] == 0


def test_flagged_rows_follow_the_score_rules():
    # a cheaper small config flagged other-load, one with a high spread: neither counts
    rows = [
        profile_row("small", "int8", 64, 0.001, 0.0001, 30.0, 2000.0, flags="other-load"),
        profile_row("small", "int4", 64, 0.0005, 0.0001, 30.0, 2000.0, energy_per_image_cv=0.5),
        profile_row("lone", "fp32", 1, 0.01, 0.001, 5.0, 200.0, flags="other-process"),
    ]
    table = best_configs(decision_summary(rows))
    assert _pick(table, "small")["method"] == "fp16"
    lone = _pick(table, "lone")
    assert not lone["met"] and lone["configurations"] == 0
    assert lone["note"] == "no comparable configuration (flagged other-process)"
    # without the spread check (max_energy_cv None) the int4 row counts
    relaxed = best_configs(decision_summary(rows), max_energy_cv=None)
    assert _pick(relaxed, "small")["method"] == "int4"


def test_estimated_and_measured_are_never_one_best():
    rows = [
        profile_row(
            "small", "est", 64, 0.0001, 0.0, 1.0, 9999.0, meter="estimate:tdp", is_estimate=True
        )
    ]
    table = best_configs(decision_summary(rows))
    measured = _pick(table, "small", energy_is_estimate=False)
    estimated = _pick(table, "small", energy_is_estimate=True)
    assert measured["method"] == "fp16" and measured["meter"] == "nvml"
    assert estimated["method"] == "est" and estimated["meter"] == "estimate:tdp"


def test_dynamic_energy_and_its_ci():
    table = best_configs(decision_summary(), energy="dynamic")
    row = _pick(table, "mid")
    assert row["energy_kind"] == "dynamic"
    assert row["energy_per_image_j"] == pytest.approx(0.0045)
    assert row["energy_per_image_ci95_high_j"] == pytest.approx(0.0055)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"max_latency_ms": [0]}, "decisions.max_latency_ms: values must be numbers > 0"),
        ({"min_throughput_img_s": [float("nan")]}, "min_throughput_img_s: values must"),
        ({"max_batch_size": [1.5]}, "max_batch_size: whole numbers only"),
    ],
)
def test_bad_constraints_are_refused(kw, message):
    with pytest.raises(DecisionError, match=message):
        parse_constraints(**kw)


def test_command_writes_the_registered_table(tmp_path):
    from joulebench.cli import main

    summary = tmp_path / "summary.parquet"
    decision_summary().to_parquet(summary)
    out = tmp_path / "best_configs.parquet"
    assert main(["best-configs", str(summary), "--output", str(out)]) == 0
    table = read_table(out)
    assert list(table.columns) == BEST_CONFIGS.names
    # the defaults: overall, latency <= 10 and <= 100 ms, batch <= 1
    assert set(table["constraint"]) == {
        "none",
        "latency_ms<=10",
        "latency_ms<=100",
        "batch_size<=1",
    }
    assert len(table) == 3 * 4
    assert main(["best-configs", str(summary), "--output", str(out), "--settings", '{"x": 1}']) == 2


def test_run_writes_atomically_and_reads_a_csv(tmp_path):
    summary = tmp_path / "summary.csv"
    decision_summary().to_csv(summary, index=False)
    out = tmp_path / "b.parquet"
    table = run_best_configs(summary, out, max_latency_ms=[], max_batch_size=[])
    assert set(table["constraint"]) == {"none"}
    assert not list(tmp_path.glob("*.tmp*"))


def test_latency_from_throughput_where_a_summary_has_no_latency():
    rows = [profile_row("q", "fp32", 8, 0.01, 0.001, float("nan"), 400.0)]  # 8 / 400 = 20 ms
    table = best_configs(decision_summary(rows, configs=[]), max_latency_ms=[25])
    row = _pick(table, "q", "latency_ms<=25")
    assert row["latency_kind"] == "derived" and row["latency_ms"] == pytest.approx(20.0)


def test_node_scope_compares_the_whole_nodes_energy(tmp_path):
    """energy_scope node (as the score): the host's part can change which configuration is
    best; node scope with dynamic energy is refused (the node has no idle baseline)."""
    from joulebench.analysis.best_configs import scoped

    summary = decision_summary()
    fp16 = summary["method"] == "fp16"
    host_j = pd.Series(0.0, index=summary.index).where(~fp16, 1.0)  # fp16 costs the host 1 J
    summary["energy_node_per_image_j"] = summary["energy_per_image_j"] + host_j
    summary["host_is_estimate"] = False
    device = _pick(best_configs(summary), "small")
    node = _pick(best_configs(scoped(summary, "node")), "small")
    assert device["method"] == "fp16" and node["method"] == "fp32"
    path = tmp_path / "s.parquet"
    summary.to_parquet(path)
    written = run_best_configs(path, tmp_path / "b.parquet", energy_scope="node")
    assert _pick(written, "small")["method"] == "fp32"
    with pytest.raises(DecisionError, match="total energy"):
        scoped(summary, "node", "dynamic")
    with pytest.raises(DecisionError, match="energy_scope"):
        scoped(summary, "rack")


FIXTURE = Path(__file__).parents[1] / "data" / "best_configs"
CASES = {
    "expected_total.parquet": {
        "max_latency_ms": [5, 50],
        "min_throughput_img_s": [200],
        "max_batch_size": [1, 8],
    },
    "expected_dynamic.parquet": {
        "energy": "dynamic",
        "max_energy_cv": None,
        "max_latency_ms": [20],
        "min_throughput_img_s": [1000],
    },
}


@pytest.mark.filterwarnings("ignore:.*summary from another joulebench version lacks")
@pytest.mark.parametrize("name", sorted(CASES))
def test_same_table_as_the_per_group_implementation(name):
    """The vectorised table equals, value for value, what the per-group implementation
    (commit c6071b4, before vectorising) wrote for decision_rows.varied_summary(): ties in
    energy and within CIs, closest misses, unknown and derived latencies, estimated and
    measured on one device, two phases and two GPUs, groups with nothing comparable."""
    summary = read_summary(FIXTURE / "summary.parquet")  # a valid summary, read as a job does
    expected = pd.read_parquet(FIXTURE / name)
    got = best_configs(summary, **CASES[name])
    newer = [c for c in got.columns if c not in expected.columns]  # columns it predates
    assert newer == ["is_simulated", *KNOB_COLUMNS, "configuration"]
    pd.testing.assert_frame_equal(got[list(expected.columns)], expected, check_exact=True)
    assert not got["is_simulated"].any()  # no simulated row: nothing of the fixture's moves
    assert got[list(KNOB_COLUMNS)].isna().all().all()  # no method of the fixture sets a knob
    met = got["met"].to_numpy(bool)
    plain = got["method"] + ", batch " + got["batch_size"].astype("string")
    assert (got.loc[met, "configuration"] == plain[met]).all()
    assert got.loc[~met, "configuration"].isna().all()


def test_fixture_covers_the_cases_it_claims():
    expected = pd.read_parquet(FIXTURE / "expected_total.parquet")
    notes = expected["note"]
    assert (expected["ties_within_ci"] > 0).any()
    assert notes.str.contains("closest: .* unknown").any()  # a closest miss of unknown latency
    assert notes.str.contains("over by").any() and notes.str.contains("under by").any()
    assert notes.str.startswith("no comparable configuration").any()
    assert set(expected["latency_kind"].dropna()) >= {"p95", "mean", "derived"}
    assert set(expected["phase"]) == {"inference", "train"}
    assert set(expected["energy_is_estimate"]) == {True, False}
    assert expected["family"].isna().any() and expected["top1"].isna().any()


def test_empty_summary_gives_an_empty_table():
    summary = decision_summary().iloc[:0]
    table = best_configs(summary, max_latency_ms=[10])
    assert table.empty and list(table.columns) == BEST_CONFIGS.names


def test_a_power_limit_sweep_names_the_cheapest_limit_with_the_batch_size():
    """decision_rows.SWEEP: small's least energy is at 0.6 of the default limit, big's at 0.8;
    under a throughput floor small's is the tightest cap still fast enough (0.8)."""
    table = best_configs(sweep_summary(), min_throughput_img_s=[1800])
    small = _pick(table, "small")
    assert small["method"] == "fp16@0.6" and small["batch_size"] == 64
    assert small["power_limit_requested_fraction"] == 0.6
    assert small["power_limit_readback_w"] == pytest.approx(420.0)
    assert pd.isna(small["power_limit_requested_w"]) and pd.isna(small["sm_clock_readback_mhz"])
    assert small["configuration"] == "fp16@0.6 (power limit 60 % of default = 420 W), batch 64"
    assert _pick(table, "big")["method"] == "fp16@0.8"
    fast = _pick(table, "small", "throughput_img_s>=1800")
    assert fast["configuration"] == "fp16@0.8 (power limit 80 % of default = 560 W), batch 64"
    assert _pick(table, "big", "throughput_img_s>=1800")["note"].startswith(
        "no configuration meets throughput >= 1800 img/s; closest: fp16@1.0 (power limit 100 % "
        "of default = 700 W) batch 64"
    )


@pytest.mark.parametrize(
    ("knobs", "text"),
    [
        ({}, ""),
        ({"power_limit_requested_fraction": 0.6}, "power limit 60 % of default"),
        ({"power_limit_requested_w": 250.0}, "power limit 250 W"),
        ({"power_limit_requested_w": 250.0, "power_limit_readback_w": 250.2}, "power limit 250 W"),
        (
            {"power_limit_requested_w": 250.0, "power_limit_readback_w": 240.0},
            "power limit 250 W (read back 240 W)",
        ),
        ({"sm_clock_requested_mhz": 1410.0}, "SM clock 1410 MHz"),
        (
            {"sm_clock_requested_preset": "max", "sm_clock_readback_mhz": 1980.0},
            "SM clock max = 1980 MHz",
        ),
        (
            {"power_limit_requested_fraction": 0.55, "sm_clock_requested_preset": "base"},
            "power limit 55 % of default, SM clock base",
        ),
        ({"power_limit_requested_w": float("nan"), "sm_clock_requested_preset": pd.NA}, ""),
    ],
)
def test_knobs_in_words(knobs, text):
    row = {"method": "m", "batch_size": 8, **knobs}
    assert knob_text(row) == text
    assert configuration_text(row) == (f"m ({text}), batch 8" if text else "m, batch 8")


def _with_simulated_rows() -> pd.DataFrame:
    """The hand-made summary with small also run on a simulated GPU under the same label (as
    two studies' summaries joined would have it), cheaper than anything measured."""
    sim = {"meter": "nvml:sim", "is_simulated": True}
    rows = [
        profile_row("small", "fp16", 1, 0.0005, 0.00005, 3.0, 333.0, **sim),  # sim's best
        profile_row("small", "fp32", 1, 0.0009, 0.00009, 4.0, 250.0, **sim),
    ]
    return decision_summary(rows)


def test_a_simulated_gpu_is_ranked_only_when_asked_and_only_beside_its_own_kind():
    plain = dict(max_latency_ms=(), max_batch_size=())
    table = best_configs(_with_simulated_rows(), **plain)
    measured = _pick(table, "small", is_simulated=False)
    assert (measured["method"], measured["batch_size"]) == ("fp16", 64)  # as without them
    sim = _pick(table, "small", is_simulated=True)
    assert not sim["met"] and sim["note"] == "no comparable configuration (flagged simulated)"
    table = best_configs(_with_simulated_rows(), **plain, include_simulated=True)
    measured = _pick(table, "small", is_simulated=False)
    assert (measured["method"], measured["batch_size"]) == ("fp16", 64)  # never mixed
    assert measured["configuration"] == "fp16, batch 64"
    sim = _pick(table, "small", is_simulated=True)
    assert sim["met"] and (sim["method"], sim["batch_size"]) == ("fp16", 1)
    assert sim["configuration"] == "fp16, batch 1 (simulated)" and sim["configurations"] == 2
    assert not table.loc[table["model"] != "small", "is_simulated"].any()


def test_a_simulated_sweep_s_configuration_says_so_beside_its_power_limit():
    summary = sweep_summary().assign(is_simulated=True)
    assert not best_configs(summary)["met"].any()
    table = best_configs(summary, include_simulated=True)
    best = _pick(table, "small")  # least energy at 0.6 of the limit (decision_rows.SWEEP)
    assert best["configuration"] == (
        "fp16@0.6 (power limit 60 % of default = 420 W), batch 64 (simulated)"
    )
    assert best["is_simulated"] and _pick(table, "big")["method"] == "fp16@0.8"
    assert configuration_text({**best, "is_simulated": False}).endswith("batch 64")
