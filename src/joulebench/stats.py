"""Small statistics for repeated measurements: mean, spread and a Student-t confidence interval.

scipy is not a dependency, so the t quantile is computed here: for an integer number of
degrees of freedom the t distribution's CDF is a short finite series, and the quantile is
found by bisection on it. Repeat counts are always integers, so that is all we need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom (integer, exact series)."""
    if int(df) != df or df < 1:
        raise ValueError(f"degrees of freedom must be a positive integer, got {df!r}")
    df = int(df)
    theta = math.atan(abs(t) / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    cos2 = cos * cos
    # A = P(|T| < |t|), written as a finite series in cos^2(theta).
    total = term = 1.0
    if df % 2 == 1:
        for k in range(1, (df - 1) // 2):
            term *= (2 * k) / (2 * k + 1) * cos2
            total += term
        inside = (2.0 / math.pi) * (theta + (sin * cos * total if df > 1 else 0.0))
    else:
        for k in range(1, df // 2):
            term *= (2 * k - 1) / (2 * k) * cos2
            total += term
        inside = sin * total
    return 0.5 + 0.5 * inside if t >= 0 else 0.5 - 0.5 * inside


def t_quantile(p: float, df: int) -> float:
    """The value t with P(T <= t) = p, e.g. t_quantile(0.975, 3) = 3.182..."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie strictly between 0 and 1, got {p!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    hi = 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Spread:
    """Mean, sample standard deviation, CV and 95% CI of a few repeated measurements."""

    n: int
    mean: float
    std: float  # sample standard deviation (ddof=1); NaN for fewer than 2 values
    cv: float  # std / mean
    ci95_low: float
    ci95_high: float

    @property
    def ci95_half_width(self) -> float:
        return 0.5 * (self.ci95_high - self.ci95_low)

    @property
    def ci95_rel(self) -> float:
        """Half-width of the 95% CI relative to the mean: what an early-stop target compares."""
        return self.ci95_half_width / abs(self.mean) if self.mean else math.nan


def spread(values) -> Spread:
    """Summarise repeated values; NaNs are ignored (a repeat whose value is unknown)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return Spread(0, math.nan, math.nan, math.nan, math.nan, math.nan)
    mean = float(x.mean())
    if n < 2:
        return Spread(n, mean, math.nan, math.nan, math.nan, math.nan)
    std = float(x.std(ddof=1))
    half = t_quantile(0.975, n - 1) * std / math.sqrt(n)
    cv = std / abs(mean) if mean else math.nan
    return Spread(n, mean, std, cv, mean - half, mean + half)
