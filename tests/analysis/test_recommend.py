"""`joulebench recommend`: ranking, savings with their propagated uncertainty, and clear errors,
on the hand-made summary of tests/helpers/decision_rows.py (answers worked beside its rows)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.decision_rows import decision_summary, profile_row, sweep_summary

from joulebench.analysis.best_configs import DecisionError, comparable
from joulebench.analysis.recommend import (
    Current,
    Limits,
    format_recommendation,
    recommend,
    saving,
)


def _ranked(rec) -> list[tuple]:
    return [
        (r["model"], r["method"], int(r["batch_size_requested"])) for _, r in rec.ranked.iterrows()
    ]


def test_ranked_by_energy_one_row_per_model_meeting_every_limit():
    rec = recommend(decision_summary(), min_top1=75, max_latency_ms=100)
    # mid: fp16/64 (9 mJ, 90 ms); big: fp16/1 (60 mJ, 20 ms); small is below 75 %
    assert _ranked(rec) == [("mid", "fp16", 64), ("big", "fp16", 1)]
    rec = recommend(decision_summary(), max_latency_ms=10, all_configs=True)
    assert _ranked(rec) == [
        ("small", "fp16", 1),
        ("small", "fp32", 1),
        ("mid", "fp16", 1),
        ("mid", "fp32", 1),
    ]
    rec = recommend(decision_summary(), min_throughput_img_s=700)
    assert _ranked(rec) == [("small", "fp16", 64), ("mid", "fp16", 64)]


def test_saving_and_its_propagated_uncertainty_by_hand():
    # against big fp32/1 (90 +-9 mJ): mid fp16/64 is 9 +-1 mJ
    rec = recommend(decision_summary(), min_top1=75, current="big:fp32:1")
    mid = rec.ranked.set_index("model").loc["mid"]
    ratio = 0.009 / 0.090
    assert mid["saving"] == pytest.approx(1 - ratio)
    half = ratio * math.sqrt((0.001 / 0.009) ** 2 + (0.009 / 0.090) ** 2)
    assert mid["saving_half"] == pytest.approx(half)
    assert saving(2.0, 0.0, 4.0, 0.0) == (0.5, 0.0)
    text = format_recommendation(rec)
    assert "saving vs big:fp32:1" in text and "+90 % ±1" in text, text


def test_the_current_configuration_itself_saves_exactly_nothing():
    rec = recommend(decision_summary(), current="small:fp16:64")
    small = rec.ranked.set_index("model").loc["small"]
    assert (small["saving"], small["saving_half"], small["saving_note"]) == (0.0, 0.0, "current")


def test_estimated_rows_rank_apart_and_are_never_compared_with_measured():
    est = profile_row(
        "cheap", "fp32", 1, 0.0001, 0.00001, 1.0, 999.0, meter="estimate:tdp", is_estimate=True
    )
    rec = recommend(decision_summary([est], top1={"cheap": 90.0}), current="big:fp32:1")
    cheap = rec.ranked.set_index("model").loc["cheap"]
    assert bool(cheap["estimate"]) and math.isnan(cheap["saving"])
    assert cheap["saving_note"] == "one energy estimated, one measured: not compared"
    text = format_recommendation(rec)
    assert "device gpu, energy ESTIMATED (estimate:tdp):" in text
    assert "device gpu, measured (nvml):" in text


def test_flagged_rows_are_left_out_and_counted():
    flagged = profile_row("small", "int8", 64, 0.0001, 0.0, 10.0, 5000.0, flags="other-load")
    rec = recommend(decision_summary([flagged]))
    assert ("small", "int8", 64) not in _ranked(rec)
    assert rec.left_out == {"flagged other-load": 1}
    assert "left out by the score's rules: flagged other-load (1)" in format_recommendation(rec)


def test_impossible_limits_name_the_closest_configurations_and_their_misses():
    with pytest.raises(DecisionError) as err:
        recommend(decision_summary(), min_top1=80, max_latency_ms=10)
    text = str(err.value)
    assert text.startswith("no configuration meets top-1 >= 80 %, latency <= 10 ms per batch")
    lines = text.splitlines()[1:]
    # big fp16/1 is 1 point over and 10 ms (x2) over; mid fp16/1 is 4 points (5 %) short
    assert lines[0].startswith("  mid fp16 batch 1 on gpu: top-1 76.0 % (4.0 points short)")
    assert any("big fp16 batch 1 on gpu: latency 20 ms (10 ms over)" in line for line in lines)
    assert len(lines) == 5


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"device": "h100"}, "unknown device 'h100'; devices in the summary: gpu"),
        ({"current": "smal:fp32:1"}, "unknown model 'smal'; closest: small"),
        (
            {"current": "small:bf16:1"},
            "small:bf16:1 was not run; this model was run as: small:fp16:1",
        ),
        ({"current": "small:fp32"}, "--current must be MODEL:METHOD:BATCH"),
        ({"current": "small:fp32:x"}, "batch must be a whole number"),
        ({"min_top1": 120}, "min top-1 is a percentage"),
        ({"max_latency_ms": -1}, "max_latency_ms must be > 0"),
    ],
)
def test_clear_errors(kw, message):
    with pytest.raises(DecisionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        recommend(decision_summary(), **kw)


def test_nothing_comparable_says_why():
    rows = [profile_row("a", "fp32", 1, 0.01, 0.001, 5.0, 100.0, flags="mig")]
    with pytest.raises(
        DecisionError, match=r"no comparable configuration in the summary: flagged mig \(1\)"
    ):
        recommend(decision_summary(rows, configs=[]))


def test_command_prints_the_table_and_exits_2_on_impossible_limits(tmp_path, capsys):
    from joulebench.cli import main

    summary = tmp_path / "summary.parquet"
    decision_summary().to_parquet(summary)
    args = ["recommend", "--summary", str(summary), "--min-top1", "75", "--max-latency-ms", "100"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.index("mid") < out.index("big") and "small" not in out.split("device gpu")[1]
    assert main([*args[:3], "--min-top1", "99"]) == 2
    err = capsys.readouterr().err
    assert "no configuration meets top-1 >= 99 %; closest:" in err and "Traceback" not in err
    assert Current.parse("a.b:fp16:8") == Current("a.b", "fp16", 8)
    assert isinstance(recommend(decision_summary()).ranked, pd.DataFrame)


# A published summary's names may carry terminal sequences: clear screen, window title, a fake
# link, a carriage return that overwrites the line, an 8-bit CSI, a bidi override (issue 21).
SEQUENCES = ["\x1b[2J", "\x1b]0;owned\x07", "\x1b]8;;http://x\x1b\\", "\rFAKE", "\x9b2J", "\u202e"]


def _only_printable(text: str) -> bool:
    return all(ch.isprintable() or ch == "\n" for ch in text)


def _escaped(text: str) -> str:
    """What a reader should see: each unprintable character as its escape (ESC as \\x1b)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


@pytest.mark.parametrize("seq", SEQUENCES)
def test_names_from_the_summary_reach_the_terminal_as_escapes(tmp_path, capsys, seq):
    from joulebench.cli import main

    model, device = f"net{seq}x", f"gpu{seq}"
    rows = [
        profile_row(model, f"fp32{seq}", 1, 0.01, 0.001, 5.0, 200.0, device_label=device),
        profile_row("other", "fp32", 1, 0.02, 0.001, 5.0, 200.0, device_label=device),
    ]
    summary = tmp_path / "summary.parquet"
    decision_summary(rows, configs=[], top1={model: 70.0, "other": 71.0}).to_parquet(summary)
    assert main(["recommend", "--summary", str(summary), "--current", "other:fp32:1"]) == 0
    out = capsys.readouterr().out
    assert _only_printable(out) and f"net{_escaped(seq)}x" in out
    lines = out.splitlines()  # the table still lines up: a name is one cell, escapes counted
    header = next(line for line in lines if line.lstrip().startswith("#"))
    row = next(line for line in lines if "net" in line)
    assert row.index("fp32") == header.index("method")
    assert main(["recommend", "--summary", str(summary), "--min-top1", "99"]) == 2  # errors too
    err = capsys.readouterr().err
    assert _only_printable(err) and "closest:" in err
    assert main(["recommend", "--summary", str(summary), "--device", "nope"]) == 2
    err = capsys.readouterr().err
    assert _only_printable(err) and "devices in the summary: gpu\\" in err


def test_vectorised_limits_agree_with_each_rows_misses():
    """Limits.meets (all rows at once) keeps exactly the rows misses() finds nothing in,
    and shortfalls is 0 there and inf where a value asked about is unknown."""
    summary = pd.read_parquet(
        Path(__file__).parents[1] / "data" / "best_configs" / "summary.parquet"
    )
    df = comparable(summary)
    for limits in (Limits(70), Limits(None, 5), Limits(65, 50, 300), Limits(None, None, 1e4)):
        by_row = [limits.misses(r) for r in df.to_dict("records")]
        assert limits.meets(df).tolist() == [not m for m in by_row]
        far = limits.shortfalls(df)
        assert (far[limits.meets(df)] == 0).all()
        unknown = [any("unknown" in x for x in m) for m in by_row]
        assert np.isinf(far[unknown]).all() and np.isfinite(far[~np.array(unknown)]).all()


def test_a_power_limit_sweep_recommends_the_cheapest_cap_and_says_so():
    """decision_rows.SWEEP: small's least energy is fp16 at 0.6 of the default limit (7.8 mJ
    against 10 mJ at the full limit: 22 % less)."""
    rec = recommend(sweep_summary(), current="small:fp16@1.0:64")
    assert _ranked(rec)[0] == ("small", "fp16@0.6", 64)
    small = rec.ranked.set_index("model").loc["small"]
    assert small["saving"] == pytest.approx(1 - 0.0078 / 0.0100)
    text = format_recommendation(rec)
    header = next(line for line in text.splitlines() if line.lstrip().startswith("#"))
    assert "power limit, SM clock" in header
    assert "power limit 60 % of default = 420 W" in text
    assert "least energy: small fp16@0.6 (power limit 60 % of default = 420 W), batch 64" in text
    plain = format_recommendation(recommend(decision_summary()))
    assert "power limit" not in plain and "least energy" not in plain  # no knob, no column
    with pytest.raises(DecisionError, match=r"small fp16@1\.0 \(power limit 100 % of default"):
        recommend(sweep_summary(), min_throughput_img_s=5000)


def _simulated(model, method, batch, energy, latency_ms, img_s) -> dict:
    sim = {"meter": "nvml:sim", "is_simulated": True}
    return profile_row(model, method, batch, energy, energy / 10, latency_ms, img_s, **sim)


def test_a_simulated_gpu_is_left_out_unless_asked_and_then_ranked_apart():
    only_sim = decision_summary([_simulated("small", "fp16", 1, 0.0005, 3.0, 333.0)], configs=[])
    with pytest.raises(DecisionError, match=r"flagged simulated \(1\).*--include-simulated"):
        recommend(only_sim)
    both = decision_summary([_simulated("small", "fp16", 1, 0.0005, 3.0, 333.0)])
    left = recommend(both)
    assert left.left_out == {"flagged simulated": 1} and not left.ranked["simulated"].any()
    rec = recommend(both, current="small:fp16:64", include_simulated=True)
    ranked = rec.ranked.set_index(["simulated", "model"])
    assert ranked.loc[(False, "small"), "method"] == "fp16"  # the measured best is unchanged
    assert ranked.loc[(False, "small"), "batch_size_requested"] == 64
    sim = ranked.loc[(True, "small")]
    assert (sim["method"], sim["batch_size_requested"]) == ("fp16", 1)
    assert math.isnan(sim["saving"])
    assert sim["saving_note"] == "one energy simulated, one measured: not compared"
    text = format_recommendation(rec)
    measured, simulated = text.split("device gpu, SIMULATED GPU (nvml:sim: ")
    assert "device gpu, measured (nvml):" in measured and "small" in measured
    assert simulated.count("\n  1  small") == 1 and "mid" not in simulated
    assert "one energy simulated, one measured: not compared" in simulated


def test_a_simulated_sweep_names_its_cheapest_limit_as_simulated():
    rec = recommend(sweep_summary().assign(is_simulated=True), include_simulated=True)
    text = format_recommendation(rec)
    assert "least energy: small fp16@0.6 (power limit 60 % of default = 420 W), batch 64 " in text
    (line,) = [s for s in text.splitlines() if "least energy:" in s]
    assert line.endswith("batch 64 (simulated)")


def test_a_host_bound_configuration_is_starred_and_explained():
    """issue 33: a row the GPU spent waiting on the host is ranked like any other, and said."""
    from joulebench.analysis.recommend import HOST_BOUND_NOTE

    summary = decision_summary()
    bound = (summary["model"] == "small") & (summary["batch_size_requested"] == 1)
    summary.loc[bound, "flags"] = "host-bound"
    text = format_recommendation(recommend(summary, max_latency_ms=10))
    (line,) = [s for s in text.splitlines() if s.strip().startswith("1  small *")]
    assert "fp16" in line and HOST_BOUND_NOTE in text
    clean = format_recommendation(recommend(decision_summary(), max_latency_ms=10))
    assert HOST_BOUND_NOTE not in clean and " *" not in clean


def test_a_very_long_name_is_cut_and_never_pads_every_line():
    """`recommend --top 100000` with one 5,000-character model name: each line stays short."""
    long_name = "n" * 5000
    rows = [
        profile_row(long_name, "fp32", 1, 0.01, 0.001, 5.0, 200.0),
        *(profile_row(f"m{i}", "fp32", 1, 0.02 + i / 1e4, 0.001, 5.0, 200.0) for i in range(20)),
    ]
    top1 = {long_name: 70.0, **{f"m{i}": 71.0 for i in range(20)}}
    rec = recommend(decision_summary(rows, configs=[], top1=top1))
    text = format_recommendation(rec, top=100000)
    table = [line for line in text.splitlines() if line.startswith("  ")]
    assert len(table) == 22 and max(map(len, table)) < 200
    assert "n" * 59 + "…" in text and "n" * 61 not in text


def test_predicted_configurations_are_named_apart_never_ranked():
    """A predicted configuration whose interval reaches below the best measured one is named
    as a prediction to measure; one out of reach, or missing a limit, is not."""

    def row(model, method, batch, energy, low, high):
        return {
            "phase": "inference",
            "device_label": "gpu",
            "method": method,
            "batch_size_requested": batch,
            "energy_is_estimate": False,
            "model": model,
            "source": "predicted",
            "energy_per_image_j": energy,
            "energy_per_image_j_pi_low": low,
            "energy_per_image_j_pi_high": high,
            "throughput_img_s": 900.0,
            "pi_level": 0.9,
        }

    predicted = pd.DataFrame(
        [
            row("big", "fp16", 256, 0.012, 0.007, 0.020),  # might beat mid fp16/64 (9 mJ)
            row("mid", "int8", 64, 0.020, 0.015, 0.030),  # out of reach
            row("small", "fp16", 256, 0.002, 0.001, 0.003),  # below the top-1 floor
        ]
    )
    rec = recommend(decision_summary(), min_top1=75, predicted=predicted)
    assert _ranked(rec) == [("mid", "fp16", 64), ("big", "fp16", 64)]  # measured only
    assert rec.predicted["model"].tolist() == ["big"]
    text = format_recommendation(rec)
    assert (
        "PREDICTED" in text
        and "big fp16 batch 256: predicted 12 mJ/image (90% interval 7-20)" in text
    ), text
    assert "int8" not in text and "small fp16 batch 256" not in text
    assert recommend(decision_summary(), min_top1=75).predicted is None
