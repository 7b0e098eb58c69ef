"""Measure a power sensor's refresh period and averaging window from a square-wave load.

The method of Yang, Adamek, Armour (SC24): run a load whose busy and idle stretches are known
on the host clock, read the power as fast as the driver allows, and fit a boxcar sensor model
to what comes back. The refresh period comes from the instants the reading changes (a
least-squares line through them); the averaging window, the driver's latency and the board's
rise/fall time constant from a least-squares fit of each reading as idle + (busy - idle) x
(the smoothed busy share of its window): a coarse grid, then a compass search.
docs/measurement.md#joulebench-check-your-machine-before-a-study (the sensor fit).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

MIN_CHANGES = 6
MAX_RISE_S = 0.016  # the longest rise/fall time constant tried


@dataclass
class SensorFit:
    refresh_s: float
    window_s: float
    lag_s: float  # the window ends this long before the change is seen
    rise_s: float  # the board's rise/fall time constant that fitted best
    idle_w: float
    busy_w: float
    rms_w: float  # residual of the boxcar model
    refreshes: int  # refresh periods fitted
    changes: int  # changes of the reading seen

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def quality(self) -> float:
        """Residual relative to the busy-idle contrast (small is good)."""
        contrast = abs(self.busy_w - self.idle_w)
        return self.rms_w / contrast if contrast > 0 else math.inf


def change_times(t_s, power_w) -> np.ndarray:
    """Midpoints between the samples where the reading changed value."""
    t, w = np.asarray(t_s, dtype=float), np.asarray(power_w, dtype=float)
    ok = np.isfinite(t) & np.isfinite(w)
    t, w = t[ok], w[ok]
    changed = np.flatnonzero(w[1:] != w[:-1]) + 1
    return (t[changed - 1] + t[changed]) / 2


def fit_refresh(changes: np.ndarray) -> tuple[float, float] | None:
    """(period, phase) from change instants, or None if there are too few."""
    if len(changes) < MIN_CHANGES:
        return None
    gaps = np.diff(changes)
    gaps = gaps[gaps > 0]
    if not len(gaps):
        return None
    shortest = gaps[gaps <= 1.5 * np.percentile(gaps, 10)]
    period = float(np.median(shortest))
    n = np.round((changes - changes[0]) / period)
    design = np.vstack([np.ones_like(n), n]).T
    (phase, period), *_ = np.linalg.lstsq(design, changes, rcond=None)
    return float(period), float(phase)


def _ramp_integral(x: np.ndarray, tau: float) -> np.ndarray:
    """Integral from 0 to x of a unit step passed through a first-order system (0 for x < 0)."""
    xp = np.maximum(x, 0.0)
    if tau <= 0:
        return xp
    return xp - tau * -np.expm1(-xp / tau)


class _SmoothedLoad:
    """The busy indicator of the known load through a first-order system of time constant tau,
    integrated over time on a fine grid, so any window's mean is two interpolations. With a
    tail (a Tail: core.tail's shape after each busy stretch, until the next, at its share
    of the busy level above idle), the indicator holds it too."""

    def __init__(
        self, busy: np.ndarray, tau: float, start: float, stop: float, dt: float, tail=None
    ):
        self.grid = np.arange(start, stop + dt, dt)
        area = np.zeros_like(self.grid)
        for b0, b1 in busy:
            area += _ramp_integral(self.grid - b0, tau) - _ramp_integral(self.grid - b1, tau)
        if tail is not None:
            area += tail.share * _tail_area(self.grid, busy, tail.shape, tau)
        self.area = area

    def share(self, ends: np.ndarray, window_s: np.ndarray) -> np.ndarray:
        """Mean smoothed busy indicator over [end - W, end]: rows W, columns refreshes."""
        x1 = np.broadcast_to(ends[None, :], (len(window_s), len(ends)))
        x0 = x1 - window_s[:, None]
        a1 = np.interp(x1, self.grid, self.area)
        a0 = np.interp(x0, self.grid, self.area)
        return (a1 - a0) / window_s[:, None]


def _tail_area(x: np.ndarray, busy: np.ndarray, tail, rise_s: float = 0.0) -> np.ndarray:
    """The integral up to each x of the tail indicator (the tail's shape after every busy
    stretch's end, until the next stretch starts: work ends a tail) through the board's
    first-order response of `rise_s`: the indicator's integral less rise_s times the
    response (tau y' = u - y), the response being the indicator but near its jumps."""
    x = np.asarray(x, dtype=float)[:, None]
    ends, next_starts = busy[None, :, 1], np.append(busy[1:, 0], np.inf)[None, :]
    area = tail.integral_s(0.0, np.minimum(x, next_starts) - ends).sum(axis=1)
    if not rise_s > 0:
        return area
    inside = (x >= ends) & (x < next_starts)
    value = np.where(inside, tail.at(x - ends), 0.0).sum(axis=1)
    last = tail.at(next_starts - ends)  # where the tail stood when the next stretch began
    lagging = _settling(x - ends, 1.0, rise_s) - _settling(x - next_starts, last, rise_s)
    return area - rise_s * (value - lagging.sum(axis=1))


def _settling(since: np.ndarray, jump, rise_s: float) -> np.ndarray:
    """What is left of a jump `since` seconds ago in a first-order response (0 before it)."""
    with np.errstate(invalid="ignore"):
        left = jump * np.exp(-np.maximum(since, 0.0) / rise_s)
    return np.where(since >= 0, np.nan_to_num(left), 0.0)


def _grid_fit(ends, readings, loads: dict, windows, lags):
    """Best (sse, W, s, tau, idle, busy) over the grid; readings ~ a + b * share."""
    best = (math.inf,) + (math.nan,) * 5
    r = readings
    r_mean = r.mean()
    for tau, load in loads.items():
        for lag in lags:
            share = load.share(ends - lag, windows)  # (W, K)
            f_mean = share.mean(axis=1, keepdims=True)
            fc = share - f_mean
            var = (fc**2).sum(axis=1)
            cov = (fc * (r - r_mean)).sum(axis=1)
            slope = np.where(var > 0, cov / np.where(var > 0, var, 1.0), 0.0)
            intercept = r_mean - slope * f_mean[:, 0]
            sse = ((r[None, :] - intercept[:, None] - slope[:, None] * share) ** 2).sum(axis=1)
            i = int(np.argmin(sse))
            if sse[i] < best[0]:
                a, b = float(intercept[i]), float(intercept[i] + slope[i])
                best = (float(sse[i]), float(windows[i]), float(lag), float(tau), a, b)
    return best


def _levels(share: np.ndarray, r: np.ndarray) -> tuple[float, float, float]:
    """Least squares r ~ idle + (busy - idle) * share: (sse, idle, busy)."""
    f_mean, r_mean = share.mean(), r.mean()
    fc = share - f_mean
    var = float((fc**2).sum())
    slope = float((fc * (r - r_mean)).sum()) / var if var > 0 else 0.0
    idle = r_mean - slope * f_mean
    sse = float(((r - idle - slope * share) ** 2).sum())
    return sse, float(idle), float(idle + slope)


def _share_direct(
    ends: np.ndarray, window_s: float, busy: np.ndarray, tau: float, tail=None
) -> np.ndarray:
    """Mean smoothed busy indicator over [end - W, end], computed exactly (no grid); with a
    tail (see _SmoothedLoad), its part too."""
    x1 = ends[:, None]
    x0 = x1 - window_s
    b0, b1 = busy[None, :, 0], busy[None, :, 1]
    area = (
        _ramp_integral(x1 - b0, tau)
        - _ramp_integral(x0 - b0, tau)
        - _ramp_integral(x1 - b1, tau)
        + _ramp_integral(x0 - b1, tau)
    ).sum(axis=1)
    if tail is not None:
        upper = _tail_area(ends, busy, tail.shape, tau)
        area = area + tail.share * (upper - _tail_area(ends - window_s, busy, tail.shape, tau))
    return area / window_s


def _pattern_search(sse, start, steps, lower, upper, min_step=1e-5, max_iter=400):
    """Minimise sse(x) from `start` by compass search: try +-step on each coordinate, move
    to the best improvement, halve the steps when none improves."""
    x = np.array(start, dtype=float)
    steps = np.array(steps, dtype=float)
    best = sse(x)
    for _ in range(max_iter):
        if steps.max() < min_step:
            break
        trials = []
        for i in range(len(x)):
            for sign in (1.0, -1.0):
                y = x.copy()
                y[i] = min(max(y[i] + sign * steps[i], lower[i]), upper[i])
                if y[i] != x[i]:
                    trials.append((sse(y), y))
        value, y = min(trials, key=lambda t: t[0]) if trials else (math.inf, x)
        if value < best:
            best, x = value, y
        else:
            steps /= 2
    return best, x


def fit_sensor(t_s, power_w, busy_intervals, tail=None) -> SensorFit | None:
    """Fit refresh period and boxcar window to readings taken under a known square-wave load.

    `busy_intervals`: (start, end) host times of the busy stretches, on the same clock as t_s.
    `tail`: the board's power tail after work (a core.tail.TailCalibration, from the
    check's tail step: its shape and its excess as a share of the load's power above idle),
    drawn into the model between the two levels: a board that stays above idle after each
    stretch would otherwise read as a narrow window (docs/protocol.md).
    None when the reading changed too rarely to tell (e.g. a driver that never refreshes).
    """
    t, w = np.asarray(t_s, dtype=float), np.asarray(power_w, dtype=float)
    ok = np.isfinite(t) & np.isfinite(w)
    t, w = t[ok], w[ok]
    changes = change_times(t, w)
    refresh = fit_refresh(changes)
    if refresh is None:
        return None
    period, phase = refresh
    # refresh instants (as seen) with a whole period of samples after them
    k0 = math.ceil((t[0] - phase) / period)
    k1 = math.floor((t[-1] - phase) / period) - 1
    if k1 - k0 < MIN_CHANGES:
        return None
    seen = phase + period * np.arange(k0, k1 + 1)
    readings = w[np.clip(np.searchsorted(t, seen + period / 2), 0, len(w) - 1)]
    busy = np.asarray(busy_intervals, dtype=float).reshape(-1, 2)
    dt = min(period / 400, 0.0002)
    span = (seen[0] - 2 * period, seen[-1] + period)

    def loads(taus):
        return {float(tau): _SmoothedLoad(busy, float(tau), *span, dt, tail) for tau in taus}

    # 1. a coarse grid over (window, lag, rise time), vectorised over windows
    coarse_w = np.linspace(period / 30, period, 30)
    coarse_s = np.linspace(-period / 10, period, 34, endpoint=False)
    taus = [0.0, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.008, 0.012, MAX_RISE_S]
    starts = []
    for tau, load in loads(taus).items():  # the best point of each rise time: distinct basins
        sse, w0, s0, *_ = _grid_fit(seen, readings, {tau: load}, coarse_w, coarse_s)
        starts.append((sse, (w0, s0, tau)))
    starts.sort(key=lambda item: item[0])

    # 2. a compass search from the best few: the minimum is narrow in lag and window
    def cost(x) -> float:
        return _levels(_share_direct(seen - x[1], x[0], busy, x[2], tail), readings)[0]

    lower, upper = (period / 1000, -period / 10, 0.0), (period, period, MAX_RISE_S)
    steps = (coarse_w[1] - coarse_w[0], coarse_s[1] - coarse_s[0], 0.001)
    results = [_pattern_search(cost, x, steps, lower, upper) for _, x in starts[:4]]
    _, (window, lag, tau) = min(results, key=lambda item: item[0])
    sse, idle, busy_w = _levels(_share_direct(seen - lag, window, busy, tau, tail), readings)
    return SensorFit(
        refresh_s=period,
        window_s=window,
        lag_s=lag,
        rise_s=tau,
        idle_w=float(idle),
        busy_w=float(busy_w),
        rms_w=math.sqrt(sse / len(readings)),
        refreshes=len(readings),
        changes=len(changes),
    )
