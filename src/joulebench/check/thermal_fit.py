"""A board's heat from one step of load: time constant, degrees per watt, leakage slope.

From idle, the check runs the standard load for `heat_s` while the meter samples power and
die temperature. A first-order die with leakage (joulebench.core.heat) answers a step
with T(t) = T_ss + (T_0 - T_ss) exp(-t / tau_eff), where the leakage's own heat slows it:
tau_eff = tau / (1 - c_per_w x dP/dT). So:
- leakage: power against temperature over the step (the load is fixed; only the die's
  temperature changes), a straight line P = b0 + b1 T; leakage_per_c = b1 / P(T_idle);
- the step: tau_eff and T_ss by least squares (a grid over tau_eff, T_ss and the amplitude
  linear for each);
- c_per_w = (T_ss - T_idle) / (P(T_ss) - P_idle), and tau = tau_eff x (1 - c_per_w x b1).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class ThermalFit:
    tau_s: float
    c_per_w: float
    leakage_per_c: float
    sustained_c: float
    idle_c: float
    rms_c: float  # the step fit's residual

    def as_dict(self) -> dict:
        return asdict(self)


def fit_step(t_s: np.ndarray, temp_c: np.ndarray) -> tuple[float, float, float]:
    """(tau_eff, T_ss, rms) of T(t) = T_ss - A exp(-t / tau_eff), least squares."""
    best = (math.inf, math.nan, math.nan)
    span = max(float(t_s[-1] - t_s[0]), 1e-6)
    for tau in np.geomspace(span / 200.0, span * 5.0, 400):
        x = np.exp(-(t_s - t_s[0]) / tau)
        design = np.column_stack([np.ones_like(x), x])
        coef, *_ = np.linalg.lstsq(design, temp_c, rcond=None)
        rms = float(np.sqrt(np.mean((design @ coef - temp_c) ** 2)))
        if rms < best[0]:
            best = (rms, float(tau), float(coef[0]))
    rms, tau, steady = best
    return tau, steady, rms


def on_plateau(t_s: np.ndarray, power_w: np.ndarray, settle_s: float = 1.0) -> np.ndarray:
    """The samples where the load's power is held: from `settle_s` after the power first
    reaches 95 % of its final level. Leakage is power against temperature at a fixed load;
    the seconds in which the load comes on (power rising while the die warms) would read
    as a slope of tens of % per degree (a real board's first second: docs/benchmarks.md)."""
    final_w = float(np.median(power_w[len(power_w) // 2 :]))
    reached = np.flatnonzero(power_w >= 0.95 * final_w)
    if not reached.size:
        return np.zeros(len(t_s), dtype=bool)
    return t_s >= t_s[reached[0]] + settle_s


def fit_heat(
    t_s, power_w, temp_c, idle_w: float, idle_c: float, min_rise_c: float = 3.0
) -> ThermalFit | None:
    """The board's heat from a load step (samples from its start); None where the die
    barely moved (no slope to fit) or the samples are too few."""
    t, p, c = (np.asarray(v, dtype=float) for v in (t_s, power_w, temp_c))
    ok = np.isfinite(t) & np.isfinite(p) & np.isfinite(c)
    t, p, c = t[ok], p[ok], c[ok]
    if len(t) < 20 or c.max() - c.min() < min_rise_c:
        return None
    held = on_plateau(t, p)
    if held.sum() < 10 or np.ptp(c[held]) == 0:  # no temperature change at a held load
        return None
    b1, b0 = np.polyfit(c[held], p[held], 1)
    at_idle_w = b0 + b1 * idle_c
    tau_eff, steady_c, rms = fit_step(t, c)
    busy_w = b0 + b1 * steady_c
    if not (busy_w > idle_w and at_idle_w > 0):
        return None
    c_per_w = (steady_c - idle_c) / (busy_w - idle_w)
    return ThermalFit(
        tau_s=float(tau_eff * (1.0 - c_per_w * b1)),
        c_per_w=float(c_per_w),
        # power never falls as the die warms at a fixed load: a slope below 0 is noise
        leakage_per_c=max(float(b1 / at_idle_w), 0.0),
        sustained_c=float(steady_c),
        idle_c=float(idle_c),
        rms_c=float(rms),
    )
