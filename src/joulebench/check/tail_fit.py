"""The board's power tail after a load stops, from what its sensor reads (core.tail).

The check runs its standard load for a while, stops it (a sync), and reads the power as fast
as the library answers while the board idles, a few times. The reading is constant between
refreshes and each refresh reports the mean power over the sensor's averaging window before
it, so each change of the reading is one boxcar mean of the power after the stop. The model:

    P(t) = idle + excess x shape(t - stop),  shape = 1 up to hold_s, then exp(-(t - hold) / tau)

fitted by least squares: a grid over (hold_s, tau_s), with idle and excess linear for each.
The board's own fall from the load to that (its rise time, from the sensor fit) is modelled
as first order; before the rise time is known, readings whose window starts within SETTLE_S
of the stop are left out instead. The excess at the stop is the fitted curve's value there.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from joulebench.check.sensor_fit import _pattern_search
from joulebench.core.tail import TailShape

HOLDS_S = np.linspace(0.0, 1.5, 61)
TAUS_S = np.geomspace(0.02, 8.0, 60)  # faster than 20 ms a tail is the board's own fall
MIN_READINGS = 12
SETTLE_S = 0.02  # readings whose window starts sooner after the stop are left out: the
# board's own fall (a rise time of up to 16 ms, check.sensor_fit) is not its tail
NO_TAIL_SHARE = 0.01  # an excess below this share of the load's dynamic power reads as none,
FALL_LIKE_SHARE = 0.05  # and below this one where it decays as fast as TAUS_S allows: that is
# what is left of the board's own fall, not a tail


@dataclass(frozen=True)
class TailFit:
    excess_w: float  # above idle, right after the load stopped
    load_dynamic_w: float  # the load's power above idle
    hold_s: float
    tau_s: float
    idle_w: float
    rms_w: float
    readings: int

    @property
    def share(self) -> float:
        return self.excess_w / self.load_dynamic_w if self.load_dynamic_w > 0 else math.nan

    def as_dict(self) -> dict:
        return {**asdict(self), "share": self.share}


def readings_after(
    times, watts, stops, window_s: float, lag_s: float, span_s: float, settle_s: float
):
    """(elapsed window starts, ends, values): each change of the reading within `span_s`
    after a stop, as the boxcar [end - window_s, end] before it (lag_s earlier than it was
    seen), in seconds after its stop; only windows starting `settle_s` or more after it."""
    t, w = np.asarray(times, dtype=float), np.asarray(watts, dtype=float)
    ok = np.isfinite(t) & np.isfinite(w)
    t, w = t[ok], w[ok]
    changed = np.flatnonzero(w[1:] != w[:-1]) + 1
    seen, values = t[changed], w[changed]
    ends, out = [], []
    for stop in stops:
        after = (seen - lag_s - window_s >= stop + settle_s) & (seen < stop + span_s)
        ends.extend(seen[after] - lag_s - stop)
        out.extend(values[after])
    ends = np.asarray(ends, dtype=float)
    return ends - window_s, ends, np.asarray(out, dtype=float)


def _shape_means(starts, ends, hold_s: float, tau_s: float) -> np.ndarray:
    """The mean of the tail's shape over each [start, end] after the stop."""
    return TailShape(float(hold_s), float(tau_s)).integral_s(starts, ends) / (ends - starts)


def _fall_means(starts, ends, rise_s: float) -> np.ndarray:
    """The mean of exp(-t / rise_s) over each [start, end] after the stop: what is left of
    the board's own fall from the load (0 without a rise time)."""
    if not rise_s > 0:
        return np.zeros_like(starts)
    return rise_s * (np.exp(-starts / rise_s) - np.exp(-ends / rise_s)) / (ends - starts)


def _best(starts, ends, values, busy_w: float, rise_s: float):
    """(sse, hold, tau, idle, excess) of the least-squares fit: a grid over (hold, tau),
    then a compass search from its best point. The board falls from the load to idle + the
    tail with its rise time: a reading is idle (1 - f) + excess (s - f) + busy f, f the
    fall's mean and s the tail's."""
    fall = _fall_means(starts, ends, rise_s)
    target = values - busy_w * fall

    def levels(hold: float, tau: float) -> tuple[float, float, float]:
        design = np.column_stack([1.0 - fall, _shape_means(starts, ends, hold, tau) - fall])
        coef, *_ = np.linalg.lstsq(design, target, rcond=None)
        sse = float(((design @ coef - target) ** 2).sum())
        return (sse if coef[1] >= 0 else math.inf), float(coef[0]), float(coef[1])

    grid = [(levels(h, t)[0], h, t) for h in HOLDS_S for t in TAUS_S]
    _, hold, tau = min(grid)
    step = np.array([HOLDS_S[1] - HOLDS_S[0], np.log(TAUS_S[1] / TAUS_S[0])])
    _, (hold, log_tau) = _pattern_search(
        lambda x: levels(x[0], math.exp(x[1]))[0],
        (hold, math.log(tau)),
        step,
        (0.0, math.log(TAUS_S[0])),
        (HOLDS_S[-1], math.log(TAUS_S[-1])),
    )
    sse, idle, excess = levels(hold, math.exp(log_tau))
    if not math.isfinite(sse):  # no tail above idle fits: none
        return float(((target - target.mean()) ** 2).sum()), 0.0, TAUS_S[0], target.mean(), 0.0
    return sse, float(hold), math.exp(log_tau), idle, excess


def fit_tail(
    times,
    watts,
    stops,
    busy_w: float,
    *,
    window_s: float,
    lag_s: float = 0.0,
    span_s: float,
    rise_s: float | None = None,
) -> TailFit | None:
    """The tail after each of `stops` (host times the load ended, on the readings' clock),
    the load having drawn `busy_w`; None with too few readings to fit. With the board's rise
    time (`rise_s`, the sensor fit's) its fall is modelled and the readings right after the
    stop count; without it they are left out (SETTLE_S)."""
    settle_s = SETTLE_S if rise_s is None else 0.0
    starts, ends, values = readings_after(times, watts, stops, window_s, lag_s, span_s, settle_s)
    if len(values) < MIN_READINGS:
        return None
    sse, hold, tau, idle, excess = _best(starts, ends, values, busy_w, rise_s or 0.0)
    dynamic = busy_w - idle
    if not dynamic > 0:
        return None
    fall_like = tau <= TAUS_S[0] * 1.01 and excess < FALL_LIKE_SHARE * dynamic
    if excess < NO_TAIL_SHARE * dynamic or fall_like:  # no tail: its shape means nothing
        hold, tau, excess = 0.0, TAUS_S[0], 0.0
    return TailFit(excess, dynamic, hold, tau, idle, math.sqrt(sse / len(values)), len(values))
