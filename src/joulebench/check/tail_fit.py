"""The board's power tail after a load stops, from what its sensor reads (core.tail).

The check runs its standard load for a while, stops it (a sync), and reads the power as fast
as the library answers while the board idles, a few times. The reading is constant between
refreshes and each refresh reports the mean power over the sensor's averaging window before
it, so each change of the reading is one boxcar mean of the power after the stop. Two
shapes of the excess over idle are fitted by least squares, the protocol's own and a wider
one (issue 40 item 11: a fall that is not a step):

    plateau:   excess x (1 up to hold_s, then exp(-(t - hold) / tau))
    two-part:  the same plus a part decaying from the stop with fast_tau_s

a grid over the shapes' times with idle and the excesses linear for each, then a compass
search; the smaller BIC gives the estimate. The board's own fall from the load to that (its
response time, the sensor fit's: the part a phase shift's restart gives back) is modelled
as first order; before it is known, readings whose window starts within SETTLE_S of the
stop are left out instead. The uncertainty is a 95 % profile over every shape of both
(where the residual stays within its noise: wide where the shapes do not fit, or where a
fast part could hide between the readings), and over the sensor fit's own intervals on the
window and the response time: `share_low`, `share_high` (the excess at the stop), and
`rel_uncertainty` (the mean excess over a phase shift, what the protocol takes out).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np

from joulebench.check.sensor_fit import _pattern_search
from joulebench.core.tail import TailShape

HOLDS_S = np.linspace(0.0, 1.5, 61)
TAUS_S = np.geomspace(0.02, 8.0, 60)  # faster than 20 ms a plateau's tail is the fast part's
FAST_TAUS_S = np.geomspace(0.01, 0.1, 8)  # the two-part shape's fast part: faster than
# 10 ms, a 20-30 ms window cannot tell it from the board's fall (the response time's interval
# spans that), and at least FAST_OVER_RISE times the board's response
FAST_OVER_RISE = 2.0
MIN_READINGS = 12
SETTLE_S = 0.02  # readings whose window starts sooner after the stop are left out: the
# board's own fall (a rise time of up to 16 ms, check.sensor_fit) is not its tail
FIRST_SETTLE_S = 0.04  # the same before the sensor fit, whose latency (up to 20 ms) is unknown
NO_TAIL_SHARE = 0.01  # an excess below this share of the load's dynamic power reads as none,
FALL_LIKE_SHARE = 0.05  # and below this one where it decays as fast as TAUS_S allows: that is
# what is left of the board's own fall, not a tail
SHIFTS_S = np.linspace(0.003, 0.009, 7)  # a phase shift's length (the protocol's: about 6 ms)
CHI2_95 = 3.84  # a 95 % interval: the residual may grow by this many noise variances
NEAR_STOP_S = 0.3  # the readings where the shape is decided: their misfit is the noise's floor
SLICE_VALUES = 2**18  # the values of a stack of columns solved at once (2 MiB a temporary)
NUISANCE_STEPS = 5  # the joint profile's steps across the sensor fit's window and response
LAG_SLACK_S = 0.001  # and the lag +- this (the reading's sampling)
MAX_SETTINGS = 12  # settings whose intervals the profile joins, the best first


@dataclass(frozen=True)
class TailFit:
    excess_w: float  # above idle, right after the load stopped
    load_dynamic_w: float  # the load's power above idle
    hold_s: float
    tau_s: float
    idle_w: float
    rms_w: float
    readings: int
    fast_share: float = 0.0  # of the excess decaying from the stop with fast_tau_s
    fast_tau_s: float = 0.02
    share_low: float = math.nan  # the excess at the stop over the load's dynamic power: 95 %
    share_high: float = math.nan
    rel_uncertainty: float = math.nan  # of a phase shift's mean excess (95 %, half-width)
    model: str = "plateau"  # the estimate's shape (two-part only where no plateau fits)
    preferred: str = "plateau"  # the shape the BIC prefers: two-part, a fast part it leaves
    # to the interval (see _best_shape)

    @property
    def share(self) -> float:
        return self.excess_w / self.load_dynamic_w if self.load_dynamic_w > 0 else math.nan

    @property
    def shape(self) -> TailShape:
        return TailShape(self.hold_s, self.tau_s, self.fast_share, self.fast_tau_s)

    def as_dict(self) -> dict:
        return {**asdict(self), "share": self.share}


def readings_after(
    times,
    watts,
    stops,
    window_s: float,
    lag_s: float,
    span_s: float,
    settle_s: float,
    select_s: float | None = None,
):
    """(elapsed window starts, ends, values): each change of the reading within `span_s`
    after a stop, as the boxcar [end - window_s, end] before it (lag_s earlier than it was
    seen), in seconds after its stop; only windows starting `settle_s` or more after it
    (reckoned with a lag + window of `select_s` where given: one set of readings for
    several windows and lags)."""
    t, w = np.asarray(times, dtype=float), np.asarray(watts, dtype=float)
    ok = np.isfinite(t) & np.isfinite(w)
    t, w = t[ok], w[ok]
    changed = np.flatnonzero(w[1:] != w[:-1]) + 1
    seen, values = t[changed], w[changed]
    reach = lag_s + window_s if select_s is None else select_s
    ends, out = [], []
    for stop in stops:
        after = (seen - reach >= stop + settle_s) & (seen < stop + span_s)
        ends.extend(seen[after] - lag_s - stop)
        out.extend(values[after])
    ends = np.asarray(ends, dtype=float)
    return ends - window_s, ends, np.asarray(out, dtype=float)


def _shape_means(starts, ends, hold_s: float, tau_s: float) -> np.ndarray:
    """The mean of the tail's shape over each [start, end] after the stop."""
    return TailShape(float(hold_s), float(tau_s)).integral_s(starts, ends) / (ends - starts)


def _fast_means(starts, ends, tau_s: float) -> np.ndarray:
    """The mean of exp(-t / tau_s) over each [start, end] after the stop (0 before it)."""
    a, b = np.maximum(starts, 0.0), np.maximum(ends, 0.0)
    return tau_s * (np.exp(-a / tau_s) - np.exp(-b / tau_s)) / (ends - starts)


def _fall_means(starts, ends, rise_s: float) -> np.ndarray:
    """The mean of exp(-t / rise_s) over each [start, end] after the stop: what is left of
    the board's own fall from the load (0 without a rise time)."""
    if not rise_s > 0:
        return np.zeros_like(starts)
    return _fast_means(starts, ends, rise_s)


def _plateau_means(starts, ends) -> np.ndarray:
    """The plateau shape's mean over each window on the whole grid (HOLDS_S x TAUS_S,
    flattened): the same whatever the board's response time, so made once per window and
    lag that the joint profile tries, not once per setting (most of the check's time)."""
    start, end = np.maximum(starts, 0.0), np.maximum(ends, 0.0)
    out = np.empty((len(HOLDS_S), len(TAUS_S), len(starts)))
    tau = TAUS_S[:, None]
    for i, hold in enumerate(HOLDS_S):  # a hold at a time: no temporary is the grid's size
        flat = np.clip(np.minimum(end, hold) - start, 0.0, None)
        a, b = np.maximum(start, hold), np.maximum(end, hold)
        area = flat + tau * (np.exp(-(a - hold) / tau) - np.exp(-(b - hold) / tau))
        out[i] = area / (ends - starts)
    return out.reshape(-1, len(starts))


def _by_slices(shape: tuple[int, ...], solve_rows) -> tuple:
    """`solve_rows(rows)`'s arrays for a stack of `shape`, made about SLICE_VALUES values
    of it at a time (a slice of its first axis) and joined: each row is its own least
    squares, so the numbers are the same and no temporary is the whole stack's size."""
    rows = max(1, SLICE_VALUES // max(math.prod(shape[1:]), 1))
    if len(shape) < 2 or rows >= shape[0]:
        return solve_rows(slice(None))
    parts = [solve_rows(slice(i, i + rows)) for i in range(0, shape[0], rows)]
    return tuple(np.concatenate(part) for part in zip(*parts, strict=True))


class _Readings:
    """The readings after the stops, and the linear least squares of the tail's excesses
    given its shape: a reading is idle (1 - f) + sum_j excess_j (s_j - f) + busy f, f the
    board's fall's mean over its window and s_j each part's shape's. An excess is never
    negative, nor all of them more than the load's power above idle."""

    def __init__(self, starts, ends, values, busy_w: float, rise_s: float, plateau):
        self.starts, self.ends, self.values = starts, ends, values
        self.plateau = plateau  # _plateau_means of these windows (shared by response times)
        self.fall = _fall_means(starts, ends, rise_s)
        self.target = values - busy_w * self.fall
        self.busy_w = busy_w
        self.fast_taus = FAST_TAUS_S[FAST_TAUS_S >= FAST_OVER_RISE * rise_s]

    def slow(self, hold_s: float, tau_s: float) -> np.ndarray:
        return _shape_means(self.starts, self.ends, hold_s, tau_s) - self.fall

    @functools.cached_property
    def grid(self) -> np.ndarray:
        """`slow` on the whole plateau grid (HOLDS_S x TAUS_S, flattened), at once."""
        return self.plateau - self.fall

    def fast(self, tau_s: float) -> np.ndarray:
        return _fast_means(self.starts, self.ends, tau_s) - self.fall

    def grid_sse(self) -> np.ndarray:
        """`solve`'s sse on the whole plateau grid, made a slice at a time and not kept:
        the joint profile asks it of every setting, and keeping each setting's grid took
        gigabytes."""
        sse, _, _ = _by_slices(
            self.plateau.shape, lambda rows: self._solve([self.plateau[rows] - self.fall])
        )
        return sse

    def solve(self, cols: list[np.ndarray]):
        """(sse, coefficients (idle, excesses...), inverse normal matrix) for stacks of
        columns at once (each (..., n), broadcast together); sse inf where infeasible.
        A big stack is solved a slice at a time (_by_slices)."""
        cols = np.broadcast_arrays(*cols)
        return _by_slices(cols[0].shape, lambda r: self._solve([c[r] for c in cols]))

    def _solve(self, cols: list[np.ndarray]):
        design = [np.broadcast_to(1.0 - self.fall, cols[0].shape), *cols]
        gram = np.stack([np.stack([(u * v).sum(-1) for v in design], -1) for u in design], -1)
        rhs = np.stack([(u * self.target).sum(-1) for u in design], -1)
        inverse = np.linalg.pinv(gram)
        coef = np.einsum("...pq,...q->...p", inverse, rhs)
        sse = np.maximum(float((self.target**2).sum()) - (coef * rhs).sum(-1), 0.0)
        excess = coef[..., 1:]
        ok = (excess >= 0).all(-1) & (excess.sum(-1) <= self.busy_w - coef[..., 0])
        return np.where(ok, sse, np.inf), coef, inverse

    def sse(self, cols: list[np.ndarray]) -> float:
        return float(self.solve(cols)[0])


def _search(data: _Readings, cols, x0, lower, upper, step):
    """(sse, x) of the compass search over a shape's times x (log where a time constant)."""

    def sse_of_all(xs):
        stacked = [np.stack(parts) for parts in zip(*(cols(x) for x in xs), strict=True)]
        return [float(v) for v in data.solve(stacked)[0]]

    return _pattern_search(sse_of_all, x0, step, lower, upper)


def _fit_shapes(data: _Readings) -> list[dict]:
    """The plateau's and the two-part shape's best fits (a grid, then a compass search):
    each its sse, times, columns and model name."""
    grid = [(h, t) for h in HOLDS_S for t in TAUS_S]
    sse = data.grid_sse()
    hold, tau = grid[int(np.argmin(sse))]
    step = (HOLDS_S[1] - HOLDS_S[0], float(np.log(TAUS_S[1] / TAUS_S[0])))
    low, high = (0.0, math.log(TAUS_S[0])), (HOLDS_S[-1], math.log(TAUS_S[-1]))

    def plateau(x):
        return [data.slow(x[0], math.exp(x[1]))]

    sse, x = _search(data, plateau, (hold, math.log(tau)), low, high, step)
    out = [{"sse": sse, "x": x, "cols": plateau(x), "model": "plateau"}]
    if not len(data.fast_taus):
        return out

    def two(y):
        return [data.slow(y[0], math.exp(y[1])), data.fast(math.exp(y[2]))]

    firsts = [(data.sse(two((x[0], x[1], math.log(f)))), f) for f in data.fast_taus]
    low2, high2 = (*low, math.log(data.fast_taus[0])), (*high, math.log(FAST_TAUS_S[-1]))
    sse2, y = _search(data, two, (x[0], x[1], math.log(min(firsts)[1])), low2, high2,
                      (*step, 0.3))  # fmt: skip
    return out + [{"sse": sse2, "x": y, "cols": two(y), "model": "two-part"}]


def _shift_means(hold_s: float, tau_s: float, fast_tau_s: float | None = None) -> np.ndarray:
    """Each part's mean over a phase shift (SHIFTS_S's mean): the plateau's, the fast's."""
    shift = np.asarray(SHIFTS_S)
    out = [np.mean(_shape_means(0 * shift, shift, hold_s, tau_s))]
    if fast_tau_s is not None:
        out.append(np.mean(_fast_means(0 * shift, shift, fast_tau_s)))
    return np.array(out)


@functools.cache
def _grid_shifts(fast_taus: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Each part's mean over a phase shift on the plateau grid: alone (grid, 1), and every
    other point with each fast part (grid / 2, fast, 2). The same for every check."""
    grid = [(h, t) for h in HOLDS_S for t in TAUS_S]
    alone = np.stack([_shift_means(h, t) for h, t in grid])
    fast = np.array([_shift_means(0.0, 1.0, f)[1] for f in fast_taus])
    pairs = np.stack(np.broadcast_arrays(alone[::2, :1][:, None, :], fast[None, :, None]), -1)
    return alone, pairs[..., 0, :]


def _candidates(data: _Readings, fits: list[dict]):
    """Every shape the profile spans, as (stacked columns, each part's mean over a shift):
    the plateau grid, its every other point with each fast part, and the best fits."""
    slow = data.grid
    alone, pairs = _grid_shifts(tuple(data.fast_taus))
    yield [slow], alone
    if len(data.fast_taus):
        fast = np.stack([data.fast(f) for f in data.fast_taus])
        yield [slow[::2][:, None, :], fast[None, :, :]], pairs
    for fit in fits:
        x = [fit["x"][0], math.exp(fit["x"][1]), *[math.exp(v) for v in fit["x"][2:]]]
        yield [c[None] for c in fit["cols"]], _shift_means(*x)[None]


def _profile(data: _Readings, fits: list[dict], limit: float, dynamic_w: float):
    """The 95 % profile intervals of (the excess at the stop, a phase shift's mean excess),
    both over the load's dynamic power: at each candidate shape whose residual is within
    `limit` (a grid's coarseness allowed for), a linear excess's own interval is
    q +- sqrt((limit - sse) x c' (X'X)^-1 c); the union over the shapes, within [0, 1]."""
    lows, highs = [math.inf, math.inf], [-math.inf, -math.inf]
    best = min(fit["sse"] for fit in fits)
    for cols, shifts in _candidates(data, fits):
        sse, coef, inverse = data.solve(cols)
        allowed = limit + max(float(np.min(sse)) - best, 0.0)
        ok = sse <= allowed
        if not ok.any():
            continue
        for k, weights in enumerate((np.ones_like(shifts), shifts)):
            c = np.concatenate([np.zeros(weights.shape[:-1] + (1,)), weights], -1) / dynamic_w
            q = (c * coef).sum(-1)
            spread = np.maximum(np.einsum("...p,...pq,...q->...", c, inverse, c), 0.0)
            with np.errstate(invalid="ignore"):
                room = np.where(np.isfinite(sse), allowed - sse, 0.0)
            half = np.sqrt(np.maximum(room, 0.0) * spread)
            lows[k] = min(lows[k], float((q - half)[ok].min()))
            highs[k] = max(highs[k], float((q + half)[ok].max()))
    return tuple(
        (min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0)) for lo, hi in zip(lows, highs, strict=True)
    )


def _noise_limit(data: _Readings, fit: dict) -> float:
    """The residual allowed: CHI2_95 noise variances above the best, the noise being the
    residual's or the mean square misfit near the stop (where the shape is decided), the
    larger: a shape that does not fit there widens every interval."""
    _, coef, _ = data.solve([c[None] for c in fit["cols"]])
    design = np.column_stack([1.0 - data.fall, *fit["cols"]])
    residual = data.target - design @ coef[0]
    near = data.ends < NEAR_STOP_S
    misfit = float((residual[near] ** 2).mean()) if near.any() else 0.0
    noise = max(fit["sse"] / max(len(data.values) - 6, 1), misfit)
    return fit["sse"] + CHI2_95 * noise


def _bic(sse: float, n: int, k: int) -> float:
    return n * math.log(max(sse, 1e-12) / n) + k * math.log(n)


def _best_shape(data: _Readings, fits: list[dict]) -> dict | None:
    """The estimate, as a TailFit's fields: the plateau's fit (the protocol's own shape),
    the two-part's only where no plateau fits; `preferred` the shape the BIC prefers (the
    plateau has 4 parameters, the two-part 6): a two-part's fast part is left to the
    interval, as the part-time sensor sees it too poorly to take its value (a timing error
    of a millisecond reads as one). None where no tail above idle fits."""
    n = len(data.values)
    ok = [f for f in fits if math.isfinite(f["sse"])]
    if not ok:
        return None
    preferred = min(ok, key=lambda f: _bic(f["sse"], n, 4 if f["model"] == "plateau" else 6))
    fit = ok[0]  # the plateau's where it fits
    _, coef, _ = data.solve([c[None] for c in fit["cols"]])
    idle, excesses, x = float(coef[0][0]), [float(e) for e in coef[0][1:]], fit["x"]
    total = sum(excesses)
    fast = excesses[1] / total if len(excesses) > 1 and total > 0 else 0.0
    return {"fit": preferred, "sse": fit["sse"], "hold_s": float(x[0]),
            "tau_s": math.exp(x[1]), "idle_w": idle, "excess_w": total, "fast_share": fast,
            "fast_tau_s": math.exp(x[2]) if len(x) > 2 else FAST_TAUS_S[0],
            "model": fit["model"], "preferred": preferred["model"]}  # fmt: skip


def _shift_mean(shape: TailShape) -> float:
    """The shape's mean over a phase shift (SHIFTS_S's mean)."""
    shifts = np.asarray(SHIFTS_S)
    return float(np.mean(shape.integral_s(0.0, shifts) / shifts))


def _no_tail(data: _Readings) -> dict:
    """The fields of no tail at all: the readings' mean is idle."""
    idle = float(np.mean(data.target))
    return {"sse": float(((data.target - idle) ** 2).sum()), "hold_s": 0.0, "tau_s": TAUS_S[0],
            "idle_w": idle, "excess_w": 0.0, "fast_share": 0.0, "fast_tau_s": FAST_TAUS_S[0],
            "model": "plateau", "preferred": "plateau"}  # fmt: skip


def _settings(window_s, lag_s, rise_s, window_range_s, rise_range_s) -> list[tuple]:
    """The (window, lag, response time) the joint profile tries: the sensor fit's, and
    across its intervals (and the lag +- LAG_SLACK_S: the reading's sampling), its first
    the sensor fit's own."""
    windows = (
        [window_s, *np.linspace(*window_range_s, NUISANCE_STEPS)] if window_range_s else [window_s]
    )
    rises = [rise_s, *np.linspace(*rise_range_s, NUISANCE_STEPS)] if rise_range_s else [rise_s]
    lags = [lag_s, lag_s - LAG_SLACK_S, lag_s + LAG_SLACK_S] if window_range_s else [lag_s]
    return [(w, lag, r) for w in windows for lag in lags for r in rises]


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
    window_range_s: tuple[float, float] | None = None,
    rise_range_s: tuple[float, float] | None = None,
) -> TailFit | None:
    """The tail after each of `stops` (host times the load ended, on the readings' clock),
    the load having drawn `busy_w`; None with too few readings to fit. With the board's
    response time (`rise_s`, the sensor fit's) its fall is modelled and the readings right
    after the stop count; without it they are left out (FIRST_SETTLE_S). With the sensor
    fit's intervals on the window and the response time, a joint profile: every setting
    across them that the tail's own readings allow (their residual within the limit of the
    best's) spans the intervals, and the best of them gives the estimate."""
    if rise_s is None:
        window_range_s = rise_range_s = None
    settings = _settings(window_s, lag_s, rise_s, window_range_s, rise_range_s)
    select_s = max(w + lag for w, lag, _ in settings)
    settle_s = FIRST_SETTLE_S if rise_s is None else 0.0
    datas, seen = [], {}  # (window, lag) -> its readings and their plateau grid
    for window, lag, rise in settings:
        if (window, lag) not in seen:
            found = readings_after(times, watts, stops, window, lag, span_s, settle_s, select_s)
            if len(found[2]) < MIN_READINGS:
                return None
            seen[window, lag] = found, _plateau_means(found[0], found[1])
        found, plateau = seen[window, lag]
        data = _Readings(*found, busy_w, rise or 0.0, plateau)
        datas.append((float(np.min(data.grid_sse())), data))
    return _joint(datas, busy_w)


def _joint(datas: list[tuple[float, _Readings]], busy_w: float) -> TailFit | None:
    """The estimate at the sensor fit's own setting (the first); the intervals the union
    over it and the settings whose plateau grid fits within the limit of the best one's
    (at most MAX_SETTINGS of them, the best first): where the tail's readings would choose
    their own, a slow fall reads as a plateau (issue 40 item 11)."""
    data = datas[0][1]
    fits = _fit_shapes(data)
    best = _best_shape(data, fits)
    if best is None:
        return _tail_fit(_no_tail(data), (0.0, 0.0), (0.0, 0.0), busy_w, len(data.values))
    if not busy_w - best["idle_w"] > 0:
        return None
    order = sorted(range(len(datas)), key=lambda i: datas[i][0])
    lowest = datas[order[0]][1]
    low_fits = _fit_shapes(lowest) if order[0] else fits
    low_best = _best_shape(lowest, low_fits) if order[0] else best
    limit = _noise_limit(lowest, low_best["fit"]) if low_best else math.inf
    slack = max(datas[order[0]][0] - (low_best or best)["sse"], 0.0)  # the grid's coarseness
    at_stop, over_shift = _profile(data, fits, max(limit, best["sse"]), busy_w - best["idle_w"])
    for i in [i for i in order if i][: MAX_SETTINGS - 1]:
        grid_sse, other = datas[i]
        if grid_sse > limit + slack:
            break
        other_fits = _fit_shapes(other)
        dynamic = busy_w - (_best_shape(other, other_fits) or _no_tail(other))["idle_w"]
        (lo, hi), (slo, shi) = _profile(other, other_fits, limit, dynamic)
        at_stop = (min(at_stop[0], lo), max(at_stop[1], hi))
        over_shift = (min(over_shift[0], slo), max(over_shift[1], shi))
    best.pop("fit")
    return _tail_fit(best, at_stop, over_shift, busy_w, len(data.values))


def _tail_fit(best: dict, at_stop, over_shift, busy_w: float, n: int) -> TailFit:
    """The TailFit of the best shape: none where its excess is below NO_TAIL_SHARE (or
    FALL_LIKE_SHARE, decaying as fast as TAUS_S allows), with its intervals."""
    dynamic = busy_w - best["idle_w"]
    excess, tau = best["excess_w"], best["tau_s"]
    fall_like = tau <= TAUS_S[0] * 1.01 and excess < FALL_LIKE_SHARE * dynamic
    if excess < NO_TAIL_SHARE * dynamic or (fall_like and best["model"] == "plateau"):
        best.update(excess_w=0.0, hold_s=0.0, tau_s=TAUS_S[0], fast_share=0.0)
    share = best["excess_w"] / dynamic
    fit = TailFit(best["excess_w"], dynamic, best["hold_s"], best["tau_s"], best["idle_w"],
                  math.sqrt(best["sse"] / n), n, best["fast_share"], best["fast_tau_s"],
                  min(at_stop[0], share), max(at_stop[1], share), math.nan, best["model"],
                  best["preferred"])  # fmt: skip
    shift = fit.share * _shift_mean(fit.shape) if fit.excess_w else 0.0
    half = max(shift - over_shift[0], over_shift[1] - shift)
    rel = half / shift if shift > 0 else math.nan
    return TailFit(**{**asdict(fit), "rel_uncertainty": rel})
