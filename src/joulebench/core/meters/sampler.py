"""A background thread that reads a source every few milliseconds, and the trace helpers.

Meters use it for the power trace that cross-checks their counter (NVML) or that gives the
power over time (RAPL). One sampler per meter; it runs only inside a window.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

import pandas as pd

from joulebench.core.meters.base import TRACE_COLUMNS

log = logging.getLogger(__name__)

THREAD_PREFIX = "joulebench-sampler"


class Sampler:
    """Calls `read()` every `interval_s` on a daemon thread and keeps the rows.

    `read()` returns a dict of trace columns; the sampler adds `t_s` (seconds since `start`,
    from `clock`). `sample()` takes one row now, so a window always has its two end points
    even when the window is shorter than one interval, and tests can drive it by hand.
    `interval_s=None` means no thread: only the rows taken with `sample()`.
    `timer(interval_s, callback) -> stop` replaces the thread where time is not real: the
    sensor simulator's clock (joulebench.sim) calls `sample` at exact simulated instants.
    """

    def __init__(
        self,
        read: Callable[[], dict],
        interval_s: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        name: str = THREAD_PREFIX,
        timer: Callable[[float, Callable[[], object]], Callable[[], None]] | None = None,
    ):
        if interval_s is not None and interval_s <= 0:
            raise ValueError(f"interval_s must be positive or None, not {interval_s}")
        self.read = read
        self.interval_s = interval_s
        self.clock = clock
        self.name = name
        self.timer = timer
        self._stop_timer: Callable[[], None] | None = None
        self.errors = 0  # unexpected exceptions from read(); the row is skipped, not the window
        self._rows: list[dict] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    @property
    def running(self) -> bool:
        if self._stop_timer is not None:
            return True
        return self._thread is not None and self._thread.is_alive()

    def start(self, t0: float) -> None:
        """Forget old rows, take t0 as time zero, and start the thread (if an interval is set)."""
        self.stop()
        with self._lock:
            self._rows = []
        self._t0 = t0
        self.errors = 0
        if self.interval_s is not None and self.timer is not None:
            self._stop_timer = self.timer(self.interval_s, self.sample)
        elif self.interval_s is not None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def sample(self) -> dict | None:
        """Read once now and keep the row; returns it (None if read() failed)."""
        try:
            row = dict(self.read())
        except Exception:  # a sensor hiccup must not kill the window; count it instead
            self.errors += 1
            if self.errors == 1:
                log.warning("sampler %s: read failed", self.name, exc_info=True)
            return None
        row["t_s"] = self.clock() - self._t0
        with self._lock:
            self._rows.append(row)
        return row

    def stop(self) -> list[dict]:
        """Stop the thread (waits for it) and return the rows so far; safe to call twice."""
        stop_timer, self._stop_timer = self._stop_timer, None
        if stop_timer is not None:
            stop_timer()
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join()
        with self._lock:
            return list(self._rows)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()


def trace_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows of samples -> a DataFrame with exactly TRACE_COLUMNS (float, missing = NaN)."""
    frame = pd.DataFrame(rows, columns=TRACE_COLUMNS, dtype=float)
    return frame.sort_values("t_s", kind="stable").reset_index(drop=True)


def trapezoid_energy_j(t_s, power_w) -> float:
    """Integrate power over time with the trapezoid rule, skipping NaN samples.

    NaN when fewer than two valid samples exist: no number is better than a made-up one.
    """
    points = sorted(
        (float(t), float(p))
        for t, p in zip(t_s, power_w, strict=True)
        if not (math.isnan(float(t)) or math.isnan(float(p)))
    )
    if len(points) < 2:
        return math.nan
    return sum(
        (t1 - t0) * (p0 + p1) / 2
        for (t0, p0), (t1, p1) in zip(points[:-1], points[1:], strict=True)
    )
