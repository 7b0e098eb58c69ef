"""One measuring window of a GPU meter: its energy counter read at both ends (where it has
one; else the sampled power trace's integral), the trace, the flags at both ends and the
clocks and temperatures at the start and end. NVML and AMD SMI meters differ only in how they
read the counter, the flags and the state (docs/measurement.md)."""

from __future__ import annotations

import math

from joulebench.core.meters.base import Meter, Reading
from joulebench.core.meters.counter_edges import edge_corrected
from joulebench.core.meters.sampler import trace_frame, trapezoid_energy_j


class GpuWindowMeter(Meter):
    """begin/end for a subclass that sets `sampler`, `clock`, `state_keys` and `_closed`,
    and defines `_counter()` (raw counter units, None without a counter), `_flags()` and
    `COUNTER_UNITS_PER_J`, and `_shut_down()`; close() is shared too."""

    COUNTER_UNITS_PER_J = 1000.0
    _t0: float | None = None
    _COUNTER_KEY = "_counter"  # the sampler's rows carry the counter here (not a trace column)

    def _sample_row(self) -> dict:
        """The subclass's trace row plus the counter: the sampler then sees each refresh
        (counter_edges). Subclasses hand this, not `_read_sample`, to their Sampler."""
        row = self._read_sample()
        counter = self._counter()
        if counter is not None:
            row[self._COUNTER_KEY] = counter
        return row

    def _read_sample(self) -> dict:
        raise NotImplementedError

    def _counter(self) -> float | None:
        raise NotImplementedError

    def _flags(self) -> list[str]:
        raise NotImplementedError

    def _shut_down(self) -> None:
        """Release the management library (nvmlShutdown, amdsmi_shut_down)."""
        raise NotImplementedError

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        sampler = getattr(self, "sampler", None)  # None when __init__ failed before it
        if sampler is not None:
            sampler.stop()
        self._shut_down()

    def begin(self) -> None:
        if self._closed:
            raise RuntimeError("meter is closed")
        self.sampler.stop()
        self._begin_flags = self._flags()
        self._t0 = self.clock()
        self._c0 = self._counter()
        self.sampler.start(self._t0)
        first = self.sampler.sample() or {}
        self._start_state = {key: first.get(key, math.nan) for key in self.state_keys}

    def end(self) -> Reading:
        if self._t0 is None:
            raise RuntimeError("end() without begin()")
        c1 = self._counter()
        duration_s = self.clock() - self._t0
        self.sampler.stop()
        last = self.sampler.sample() or {}
        rows = self.sampler.stop()
        trace = trace_frame(rows)
        energy_trace_j = trapezoid_energy_j(trace["t_s"], trace["power_w"])
        counter_j = edges_j = math.nan
        if c1 is None or self._c0 is None:
            energy_j = energy_trace_j
        else:
            counter_j = energy_j = (c1 - self._c0) / self.COUNTER_UNITS_PER_J
            edges_j = self._edges_j(rows, c1, duration_s)
        flags = list(dict.fromkeys(self._begin_flags + self._flags()))
        self._t0 = None
        return Reading(
            energy_j=energy_j,
            duration_s=duration_s,
            energy_trace_j=energy_trace_j,
            energy_counter_j=counter_j,
            energy_edges_j=edges_j,
            trace=trace,
            flags=flags,
            start_state=self._start_state,
            end_state={key: last.get(key, math.nan) for key in self.state_keys},
        )

    def _edges_j(self, rows: list[dict], c1: float, duration_s: float) -> float:
        """The window's energy from the counter's refreshes inside it, scaled to its own
        time, where the counter moves once a refresh (counter_edges); NaN where it does not.
        The protocol decides whether to use it (it knows the batch's length)."""
        key = self._COUNTER_KEY
        inside = sorted(
            (row["t_s"], row[key]) for row in rows if key in row and 0 < row["t_s"] < duration_s
        )
        samples = [(0.0, self._c0), *inside, (duration_s, c1)]
        corrected = edge_corrected(samples, getattr(self, "refresh_s", None))
        return math.nan if corrected is None else corrected / self.COUNTER_UNITS_PER_J
