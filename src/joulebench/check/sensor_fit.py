"""Measure a power sensor's refresh period and averaging window from a square-wave load.

The method of Yang, Adamek, Armour (SC24): run a load whose busy and idle stretches are known
on the host clock, read the power as fast as the driver allows, and fit a boxcar sensor model
to what comes back. The refresh period comes from the instants the reading changes (a
least-squares line through them); the averaging window, the driver's latency and the board's
response from a least-squares fit of each reading as idle + (busy - idle) x (the smoothed
busy share of its window) - a slow part of the rise: a coarse grid, then a compass search.
The start and stop edges are fitted apart (issue 40 item 11): a rise time at the starts, a
fall time at the stops, and the share of the rise that comes slowly (clocks ramping up
under load, `ramp_s`), so a slow start is never read as a slow fall or a narrow window. The
window's interval is where the fit's residual stays within what its noise allows
(`window_low_s`, `window_high_s`: wide where the model does not fit).
docs/measurement.md#joulebench-check-your-machine-before-a-study (the sensor fit).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

MIN_CHANGES = 6
MAX_RISE_S = 0.016  # the longest response time constant tried (the board's own)
RAMPS_S = (0.01, 0.03, 0.1, 0.3)  # the slow part of the rise: its coarse time constants
RAMP_BOUNDS_S = (0.003, 1.0)
RAMP_TAUS_S = (0.0, 0.003, 0.008)  # the response times the coarse grid tries a ramp with
TAUS_S = (0.0, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.008, 0.012, MAX_RISE_S)  # coarse
CHI2_95 = 3.84  # a 95 % interval: the residual may grow by this many noise variances


@dataclass
class SensorFit:
    refresh_s: float
    window_s: float
    lag_s: float  # the window ends this long before the change is seen
    rise_s: float  # the board's rise time constant that fitted best (its fast part)
    idle_w: float
    busy_w: float
    rms_w: float  # residual of the boxcar model
    refreshes: int  # refresh periods fitted
    changes: int  # changes of the reading seen
    ramp_s: float = math.nan  # the slow part of the rise: its time constant...
    ramp_w: float = 0.0  # ...and how far short of busy it starts (0: none)
    window_low_s: float = math.nan  # the window's 95 % interval (see the module doc)
    window_high_s: float = math.nan
    rise_low_s: float = math.nan  # the response time's
    rise_high_s: float = math.nan
    window_source: str = "fit"  # or "published": inside the interval, the published stands

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


def _edges_area(x: np.ndarray, busy: np.ndarray, rise_s: float, fall_s: float) -> np.ndarray:
    """The integral up to each x of the busy indicator through the board's response: a first
    order of `rise_s` at each start, of `fall_s` at each stop (each edge settled before the
    next: the stretches are 0.3 s and more)."""
    x = np.asarray(x, dtype=float)[:, None]
    starts, stops = busy[None, :, 0], busy[None, :, 1]
    return (_ramp_integral(x - starts, rise_s) - _ramp_integral(x - stops, fall_s)).sum(axis=1)


def _slow_rise_area(x: np.ndarray, busy: np.ndarray, ramp_s: float, tau: float) -> np.ndarray:
    """The integral up to each x of the slow part of the rise: inside each busy stretch the
    board's response (tau) times exp(-(t - start) / ramp_s), the clocks short of their
    level; after the stop what was left of it falls with the response."""
    x = np.asarray(x, dtype=float)[:, None]
    starts, stops = busy[None, :, 0], busy[None, :, 1]
    inside = np.clip(np.minimum(x, stops) - starts, 0.0, None)
    area = ramp_s * -np.expm1(-inside / ramp_s)
    if tau > 0:
        k = tau * ramp_s / (tau + ramp_s)  # the response and the ramp's product decays so
        area = area - k * -np.expm1(-inside / k)
        length = stops - starts
        left = -np.expm1(-length / tau) * np.exp(-length / ramp_s)  # at the stop
        area = area + left * _ramp_integral(x - stops, 0.0) - left * _ramp_integral(x - stops, tau)
    return area.sum(axis=1)


def _window_means(grid, area, ends, windows) -> np.ndarray:
    """Mean over [end - W, end] of what `area` integrates (on `grid`): rows W, columns ends."""
    x1 = np.broadcast_to(ends[None, :], (len(windows), len(ends)))
    x0 = x1 - np.asarray(windows)[:, None]
    return (np.interp(x1, grid, area) - np.interp(x0, grid, area)) / np.asarray(windows)[:, None]


def _levels_ramp(base: np.ndarray, slow: np.ndarray | None, r: np.ndarray):
    """(sse, idle, busy, ramp_w) of readings ~ idle + (busy - idle) base - ramp_w slow, for
    each row of the (rows, K) shares at once (centred normal equations); a ramp that would
    raise the start (ramp_w < 0) is no ramp: fitted without."""
    rc = r - r.mean()
    bc = base - base.mean(axis=-1, keepdims=True)
    s_bb, s_br, s_rr = (bc**2).sum(axis=-1), (bc * rc).sum(axis=-1), float((rc**2).sum())
    slope = np.where(s_bb > 0, s_br / np.where(s_bb > 0, s_bb, 1.0), 0.0)
    sse = s_rr - slope * s_br
    idle = r.mean() - slope * base.mean(axis=-1)
    out = [sse, idle, idle + slope, np.zeros_like(sse)]
    if slow is None:
        return tuple(out)
    sc = slow - slow.mean(axis=-1, keepdims=True)
    s_ss, s_bs, s_sr = (sc**2).sum(axis=-1), (bc * sc).sum(axis=-1), (sc * rc).sum(axis=-1)
    det = s_bb * s_ss - s_bs**2
    ok = det > 1e-12 * np.maximum(s_bb * s_ss, 1e-300)
    det = np.where(ok, det, 1.0)
    b2, c2 = (s_ss * s_br - s_bs * s_sr) / det, (s_bb * s_sr - s_bs * s_br) / det
    sse2 = s_rr - b2 * s_br - c2 * s_sr
    better = ok & (c2 < 0) & (sse2 < sse)
    idle2 = r.mean() - b2 * base.mean(axis=-1) - c2 * slow.mean(axis=-1)
    return (np.where(better, sse2, sse), np.where(better, idle2, idle),
            np.where(better, idle2 + b2, idle + slope), np.where(better, -c2, 0.0))  # fmt: skip


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


class _TailAreas:
    """The tail's part of the busy indicator's integral (a TailCalibration: its shape after
    each stretch at its share of the busy level above idle, through the fall), on a fine
    grid for each coarse response time, between them by interpolation: the compass search
    reads it at any response time without recomputing it."""

    def __init__(self, grid: np.ndarray, busy: np.ndarray, tail):
        self.grid, self.taus = grid, np.asarray(TAUS_S)
        zero = np.zeros_like(grid)
        self.areas = [
            tail.share * _tail_area(grid, busy, tail.shape, tau) if tail else zero for tau in TAUS_S
        ]

    def at(self, x: np.ndarray, tau: float) -> np.ndarray:
        i = int(np.clip(np.searchsorted(self.taus, tau) - 1, 0, len(self.taus) - 2))
        w = (tau - self.taus[i]) / (self.taus[i + 1] - self.taus[i])
        low, high = (
            np.interp(x, self.grid, self.areas[i]),
            np.interp(x, self.grid, self.areas[i + 1]),
        )
        return (1 - w) * low + w * high


def _grid_fit(seen, readings, busy, tails: _TailAreas, period):
    """The coarse grid over (window, lag) for each (response time, slow rise): the best
    (sse, (window, lag, response, log ramp)) of each pair, best first: distinct basins."""
    grid = tails.grid
    windows = np.linspace(period / 30, period, 30)
    lags = np.linspace(-period / 10, period, 34, endpoint=False)
    starts = []
    for tau, tail_area in zip(TAUS_S, tails.areas, strict=True):
        area = _edges_area(grid, busy, tau, tau) + tail_area
        ramps = RAMPS_S if tau in RAMP_TAUS_S else ()  # a ramp masks the response's detail
        slows = {None: None, **{r: _slow_rise_area(grid, busy, r, tau) for r in ramps}}
        for ramp, slow_area in slows.items():
            best = (math.inf, None)
            for lag in lags:
                base = _window_means(grid, area, seen - lag, windows)
                slow = None if ramp is None else _window_means(grid, slow_area, seen - lag, windows)
                sse = _levels_ramp(base, slow, readings)[0]
                i = int(np.argmin(sse))
                if sse[i] < best[0]:
                    log_ramp = math.log(ramp or RAMPS_S[1])
                    best = (float(sse[i]), (windows[i], lag, tau, log_ramp))
            starts.append(best)
    return sorted(starts, key=lambda item: item[0])


class _Square:
    """The square wave's readings and the model's parameters x = (window, lag, response
    time, log ramp): the shares each reading sees, the residual, its noise and intervals."""

    def __init__(self, seen, readings, busy, tails: _TailAreas, period):
        self.seen, self.readings, self.busy, self.tails = seen, readings, busy, tails
        self.period = period
        self.lower = (period / 1000, -period / 10, 0.0, math.log(RAMP_BOUNDS_S[0]))
        self.upper = (period, period, MAX_RISE_S, math.log(RAMP_BOUNDS_S[1]))
        self.steps = (period / 30, period * 1.1 / 34, 0.001, 0.5)
        self.min_steps = (1e-5, 1e-5, 1e-5, 0.005)

    def shares(self, x) -> tuple[np.ndarray, np.ndarray]:
        """(base, slow) shares of each reading: exact but the tail's (_TailAreas)."""
        window, lag, tau, log_ramp = x
        ends, busy, ramp = self.seen - lag, self.busy, math.exp(log_ramp)

        def mean(area):
            return (area(ends) - area(ends - window)) / window

        base = mean(lambda e: _edges_area(e, busy, tau, tau) + self.tails.at(e, tau))
        return base, mean(lambda e: _slow_rise_area(e, busy, ramp, tau))

    def levels(self, x) -> tuple[float, float, float, float]:
        """(sse, idle, busy, ramp_w) at x."""
        base, slow = self.shares(x)
        return tuple(float(v[0]) for v in _levels_ramp(base[None], slow[None], self.readings))

    def cost(self, x) -> float:
        return self.levels(x)[0]

    def search(self, x, free=(0, 1, 2, 3), max_iter=400):
        """(sse, x) of the compass search over the coordinates `free` from x."""
        x, free = np.array(x, dtype=float), list(free)

        def sse_of_all(ys):
            out = []
            for y in ys:
                full = x.copy()
                full[free] = y
                out.append(self.cost(full))
            return out

        pick = lambda v: [v[i] for i in free]  # noqa: E731
        best, y = _pattern_search(sse_of_all, x[free], pick(self.steps), pick(self.lower),
                                  pick(self.upper), pick(self.min_steps), max_iter)  # fmt: skip
        x[free] = y
        return best, x

    def noise(self, x, sse_min: float) -> float:
        """The readings' noise variance: the residual's, or where the edges move the
        reading (a model that does not fit there) its mean square there, the larger."""
        base, slow = self.shares(x)
        _, idle, busy_w, ramp_w = self.levels(x)
        fitted = idle + (busy_w - idle) * base - ramp_w * slow
        moved = (np.abs(base - np.round(base)) > 0.02) | (slow > 0.02)
        misfit = float(((self.readings - fitted)[moved] ** 2).mean()) if moved.any() else 0.0
        return max(sse_min / max(len(self.readings) - 7, 1), misfit)

    def interval(self, x, sse_min: float, index: int, step: float) -> tuple[float, float]:
        """The values of x[index] whose best fit (the others but the ramp searched briefly)
        keeps the residual within CHI2_95 noise variances of the best: walked outwards from
        x in `step`s to the first beyond, and one step more (the walk's resolution)."""
        limit = sse_min + CHI2_95 * self.noise(x, sse_min)
        free = [i for i in (0, 1, 2) if i != index]
        ends = []
        for sign in (-1.0, 1.0):
            value = x[index]
            while self.lower[index] <= value + sign * step <= self.upper[index]:
                y = np.array(x, dtype=float)
                y[index] = value + sign * step
                if self.search(y, free, max_iter=40)[0] > limit:
                    break
                value = y[index]
            ends.append(min(max(value + sign * step, self.lower[index]), self.upper[index]))
        return ends[0], ends[1]


def _pattern_search(sse_of_all, start, steps, lower, upper, min_step=1e-5, max_iter=400):
    """Minimise sse(x) from `start` by compass search: try +-step on each coordinate, move
    to the best improvement, halve the steps when none improves, until every step is below
    `min_step` (a number, or one per coordinate). `sse_of_all`: the sse of a list of points
    (a step's trial points at once: a caller can solve them as one stack)."""
    x = np.array(start, dtype=float)
    steps = np.array(steps, dtype=float)
    min_steps = np.broadcast_to(np.asarray(min_step, dtype=float), steps.shape)
    best = sse_of_all([x])[0]
    for _ in range(max_iter):
        if (steps < min_steps).all():
            break
        ys = []
        for i in range(len(x)):
            for sign in (1.0, -1.0):
                y = x.copy()
                y[i] = min(max(y[i] + sign * steps[i], lower[i]), upper[i])
                if y[i] != x[i]:
                    ys.append(y)
        values = sse_of_all(ys) if ys else []
        trials = list(zip(values, ys, strict=True))
        value, y = min(trials, key=lambda t: t[0]) if trials else (math.inf, x)
        if value < best:
            best, x = value, y
        else:
            steps /= 2
    return best, x


def _readings(t_s, power_w):
    """(refresh period, refresh instants as seen, the reading after each, changes seen), or
    None where the reading changed too rarely to tell."""
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
    return period, seen, readings, len(changes)


def fit_sensor(
    t_s, power_w, busy_intervals, tail=None, published_window_s: float | None = None
) -> SensorFit | None:
    """Fit refresh period and boxcar window to readings taken under a known square-wave load.

    `busy_intervals`: (start, end) host times of the busy stretches, on the same clock as t_s.
    `tail`: the board's power tail after work (a core.tail.TailCalibration, from the
    check's tail step: its shape and its excess as a share of the load's power above idle),
    drawn into the model between the two levels: a board that stays above idle after each
    stretch would otherwise read as a narrow window (docs/protocol.md). Where the window's
    interval holds `published_window_s` (the fit cannot tell them apart) the published one
    stands, with the lag and response time that fit best at it (`window_source`).
    None when the reading changed too rarely to tell (e.g. a driver that never refreshes).
    """
    found = _readings(t_s, power_w)
    if found is None:
        return None
    period, seen, readings, changes = found
    busy = np.asarray(busy_intervals, dtype=float).reshape(-1, 2)
    span = (seen[0] - 2 * period, seen[-1] + period)
    # 1. a coarse grid; 2. a compass search from the best few basins: the minimum is narrow
    dt = min(period / 400, 0.0002)
    tails = _TailAreas(np.arange(span[0], span[1] + dt, dt), busy, tail)
    starts = _grid_fit(seen, readings, busy, tails, period)
    square = _Square(seen, readings, busy, tails, period)
    sse, x = min((square.search(x) for _, x in starts[:3]), key=lambda item: item[0])
    low, high = square.interval(x, sse, 0, period / 50)
    source = "fit"
    if published_window_s is not None and low <= published_window_s <= high:
        x[0], source = published_window_s, "published"
        sse, x = square.search(x, (1, 2, 3))
    rise_low, rise_high = square.interval(x, sse, 2, MAX_RISE_S / 16)
    _, idle, busy_w, ramp_w = square.levels(x)
    return SensorFit(
        refresh_s=period,
        window_s=float(x[0]),
        lag_s=float(x[1]),
        rise_s=float(x[2]),
        idle_w=idle,
        busy_w=busy_w,
        rms_w=math.sqrt(sse / len(readings)),
        refreshes=len(readings),
        changes=changes,
        ramp_s=math.exp(x[3]) if ramp_w > 0 else math.nan,
        ramp_w=ramp_w,
        window_low_s=low,
        window_high_s=high,
        rise_low_s=rise_low,
        rise_high_s=rise_high,
        window_source=source,
    )
