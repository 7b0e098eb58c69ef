"""A configuration's energy stated at its sustained temperature (joulebench.core.heat)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from joulebench.core.heat import (
    AS_RUN,
    SUSTAINED,
    HeatCalibration,
    IdleState,
    leakage,
    sustained_c,
    window_heat,
)

CAL = HeatCalibration(c_per_w=0.1, leakage_per_c=0.008)
IDLE = IdleState(power_w=60.0, temperature_c=36.0)  # ambient 30 C


def test_sustained_temperature_is_the_fixed_point_of_power_and_heat():
    # 250 W drawn at 40 C: at T the load draws 250 x L(T) / L(40), and settles where
    # T = 30 + 0.1 x that power
    target = sustained_c(CAL, IDLE, 40.0, 250.0)
    drawn_w = 250.0 * leakage(CAL, IDLE, target) / leakage(CAL, IDLE, 40.0)
    assert target == pytest.approx(30.0 + 0.1 * drawn_w, abs=1e-9)
    assert target > 30.0 + 0.1 * 250.0  # leakage adds its own heat
    # idle is its own sustained state
    assert sustained_c(CAL, IDLE, 36.0, 60.0) == pytest.approx(36.0)


def test_a_window_is_brought_to_the_sustained_state_from_colder_or_hotter():
    cold = window_heat(CAL, IDLE, 40.0, 42.0, 250.0)
    assert cold.state == SUSTAINED and cold.window_c == 41.0
    assert cold.factor == pytest.approx(
        leakage(CAL, IDLE, cold.sustained_c) / leakage(CAL, IDLE, 41.0)
    )
    assert cold.factor > 1.0  # measured cold, stated hotter
    # the same load measured hotter, drawing what leakage says it draws there: same state
    hot_w = 250.0 * leakage(CAL, IDLE, 70.0) / leakage(CAL, IDLE, 41.0)
    hot = window_heat(CAL, IDLE, 69.0, 71.0, hot_w)
    assert hot.factor < 1.0
    assert hot.sustained_c == pytest.approx(cold.sustained_c)
    assert hot_w * hot.factor == pytest.approx(250.0 * cold.factor)
    # idle power at the window's temperature, and at the stated one
    assert cold.idle_power_w == pytest.approx(60.0 * leakage(CAL, IDLE, 41.0))
    assert cold.idle_sustained_w == pytest.approx(60.0 * leakage(CAL, IDLE, cold.sustained_c))


def test_without_the_boards_heat_or_temperatures_a_window_is_as_run():
    for cal, idle, start in (
        (None, IDLE, 40.0),
        (CAL, IdleState(60.0, math.nan), 40.0),
        (CAL, IDLE, math.nan),
    ):
        state = window_heat(cal, idle, start, 42.0, 250.0)
        assert state.state == AS_RUN and state.factor == 1.0
        assert state.idle_power_w == 60.0 and math.isnan(state.sustained_c)
    # leakage that would run away has no sustained state
    runaway = HeatCalibration(c_per_w=1.0, leakage_per_c=0.01)
    assert window_heat(runaway, IDLE, 40.0, 40.0, 250.0).state == AS_RUN


def test_calibration_refuses_negative_values():
    with pytest.raises(ValueError):
        HeatCalibration(c_per_w=-0.1, leakage_per_c=0.01)


def test_the_corrections_bound_grows_with_the_correction_and_the_calibrations_error():
    cal = HeatCalibration(c_per_w=0.1, leakage_per_c=0.008, rel_uncertainty=0.1)
    assert cal.correction_bound(0.0) == pytest.approx(0.008)  # a degree of reading
    assert cal.correction_bound(0.1) == pytest.approx(0.02 + 0.008)
    exact = HeatCalibration(c_per_w=0.1, leakage_per_c=0.008, rel_uncertainty=0.0)
    assert exact.correction_bound(0.1) == pytest.approx(0.008)


def test_the_boards_heat_is_read_from_its_check_report():
    from joulebench.core.heat import from_report

    report = {
        "check_id": "cuda0-1",
        "protocol": {
            "heat": {
                "tau_s": 61.0,
                "c_per_w": 0.09,
                "leakage_per_c": 0.006,
                "idle_temperature_c": 34.0,
            }
        },
    }
    cal, idle_c = from_report(report)
    assert (cal.c_per_w, cal.leakage_per_c, idle_c) == (0.09, 0.006, 34.0)
    assert cal.source == "check cuda0-1"
    for missing in (None, {"protocol": {}}, {"protocol": {"heat": None}}):
        cal, idle_c = from_report(missing)
        assert cal is None and math.isnan(idle_c)


def test_the_check_s_fit_reads_a_real_h200_s_heat():
    """A real H200's step (bench/gpu_physics.py, 2026-12-04: NVML every 55 ms, 5 s idle,
    then a memory-bound load at ~630 W for 50 s; docs/benchmarks.md): the die warms within
    about a second, so leakage is fitted where the load is held, not while it comes on (the
    whole step read 22 %/C)."""
    from joulebench.check.thermal_fit import fit_heat

    trace = pd.read_csv(Path(__file__).parents[1] / "data" / "h200_heat_step.csv")
    idle = trace[(trace.phase == "idle") & (trace.t_s > 1)]
    step = trace[trace.phase == "heat-memory"]
    fit = fit_heat(
        (step.t_s - step.t_s.min()).to_numpy(),
        step.power_w.to_numpy(),
        step.temperature_c.to_numpy(),
        idle.power_w.mean(),
        idle.temperature_c.mean(),
    )
    assert 0.003 < fit.leakage_per_c < 0.006  # 2.7 W/C at ~620 W
    assert 0.02 < fit.c_per_w < 0.03 and 0.3 < fit.tau_s < 3.0
    assert fit.sustained_c == pytest.approx(54.0, abs=0.5)
