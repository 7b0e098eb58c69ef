"""A configuration's energy brought to one thermal state: its own sustained one.

A GPU's power grows with its die temperature (leakage) and the die follows the load slowly,
so a configuration measured straight after a hotter one reads higher than the same one
measured first. Every configuration is therefore stated at one defined state,
**sustained**: the die at the temperature this configuration settles at when it runs for
ever, which is what it costs in service. The state is computed, not reached: from a window's
mean power and temperature, the cold idle baseline (`IdleState`) and the board's
`HeatCalibration` (`c_per_w`, `leakage_per_c`: what `joulebench check` measures;
`sustained_c`); without them a row says `as-run`, uncorrected. Dynamic energy and the phase
shifts' idle energy take out the idle power at the window's temperature. docs/protocol.md#heat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

READ_STEP_C = 1.0  # NVML reads the die's temperature in whole degrees
SUSTAINED = "sustained"  # thermal_state: brought to the configuration's sustained temperature
AS_RUN = "as-run"  # thermal_state: the windows' own temperatures, uncorrected
DRIFT_C = 3.0  # a window whose temperature moved more than this is flagged (thermal-drift)


@dataclass(frozen=True)
class HeatCalibration:
    """A board's heat: degrees C per watt above ambient, and leakage as a share of power per
    degree C. Measured by `joulebench check` (its report), or given."""

    c_per_w: float
    leakage_per_c: float
    source: str = "given"
    rel_uncertainty: float = 0.10  # how far off each value may be (check's acceptance: 10 %)

    def __post_init__(self):
        if not (self.c_per_w >= 0 and self.leakage_per_c >= 0 and self.rel_uncertainty >= 0):
            raise ValueError(f"need c_per_w, leakage_per_c, rel_uncertainty >= 0, got {self}")

    def correction_bound(self, mean_abs_correction: float) -> float:
        """How far off a corrected energy may be (relative): both values off by
        rel_uncertainty move the correction by up to that share each, and the window's
        temperature by up to a degree (NVML reads whole degrees, rounded or truncated)."""
        return 2.0 * self.rel_uncertainty * mean_abs_correction + self.leakage_per_c * READ_STEP_C


def from_report(report: dict | None) -> tuple[HeatCalibration | None, float]:
    """(the board's heat, its idle temperature) from a `joulebench check` report's
    protocol.heat; (None, NaN) where the check did not measure it."""
    heat = ((report or {}).get("protocol") or {}).get("heat")
    if not heat:
        return None, math.nan
    source = f"check {report.get('check_id', '')}".strip()
    cal = HeatCalibration(float(heat["c_per_w"]), float(heat["leakage_per_c"]), source)
    return cal, float(heat.get("idle_temperature_c", math.nan))


@dataclass(frozen=True)
class IdleState:
    """The cold idle baseline: its power and the die temperature it was taken at."""

    power_w: float
    temperature_c: float

    def known(self) -> bool:
        return math.isfinite(self.power_w) and math.isfinite(self.temperature_c)


def leakage(cal: HeatCalibration, idle: IdleState, temp_c: float) -> float:
    """Power at `temp_c` over power at the idle temperature, at the same load."""
    return max(1e-6, 1.0 + cal.leakage_per_c * (temp_c - idle.temperature_c))


def sustained_c(cal: HeatCalibration, idle: IdleState, window_c: float, power_w: float) -> float:
    """The die temperature a load that drew `power_w` at `window_c` settles at: the T that
    solves T = T_amb + c_per_w x power_w x L(T) / L(window_c), with L the `leakage` factor
    (linear in T, so T has a closed form) and T_amb = T_idle - c_per_w x P_idle. NaN where
    leakage would run away (no steady state)."""
    a, k = cal.leakage_per_c, cal.c_per_w
    ambient_c = idle.temperature_c - k * idle.power_w
    d = leakage(cal, idle, window_c)
    gain = 1.0 - k * a * power_w / d
    if gain <= 0:  # leakage would run away: no steady state to state energy at
        return math.nan
    return (ambient_c + k * power_w * (1.0 - a * idle.temperature_c) / d) / gain


@dataclass(frozen=True)
class WindowHeat:
    """One window's thermal state and the factor that brings its energy to the sustained."""

    state: str
    window_c: float  # mean of the window's start and end temperature
    sustained_c: float  # NaN as run
    factor: float  # energy at the stated state / energy as measured (1 as run)
    idle_power_w: float  # the idle power at the window's temperature (the cold one as run)
    idle_sustained_w: float  # ... at the stated state


def window_heat(
    cal: HeatCalibration | None,
    idle: IdleState,
    start_c: float,
    end_c: float,
    work_power_w: float,
    mean_c: float = math.nan,
) -> WindowHeat:
    """The state a window is stated at: sustained where the board's heat is known (and the
    window's temperatures were read), else as run. The window's temperature is `mean_c`
    (the mean of its trace's samples: whole degrees, but a moving die dithers them), else
    the mean of its start and end."""
    window_c = mean_c if math.isfinite(mean_c) else 0.5 * (start_c + end_c)
    known = cal is not None and idle.known() and math.isfinite(window_c)
    if not known or not math.isfinite(work_power_w):
        return WindowHeat(AS_RUN, window_c, math.nan, 1.0, idle.power_w, idle.power_w)
    target_c = sustained_c(cal, idle, window_c, work_power_w)
    if not math.isfinite(target_c):
        return WindowHeat(AS_RUN, window_c, math.nan, 1.0, idle.power_w, idle.power_w)
    at_window = leakage(cal, idle, window_c)
    at_target = leakage(cal, idle, target_c)
    return WindowHeat(
        SUSTAINED,
        window_c,
        target_c,
        at_target / at_window,
        idle.power_w * at_window,
        idle.power_w * at_target,
    )
