"""A window's energy from a counter that moves only at the sensor's refreshes, with its two
edges counted to the window's own instants.

Read at a window's two ends, such a counter covers from the refresh before the window opened
to the last refresh before it closed: up to one period off at each end, which alone makes
windows disagree. The meter's sampler sees each refresh (the counter moves) to within one
sample. The refreshes after the first each add their reading times the period for a period
inside the window, so their sum per second of the time they span (a line fitted through
their instants) times the window's duration is the window's energy, edges and all. Where the
counter does not move once a refresh, the raw difference is kept.
docs/measurement.md#nvml-nvidia-gpus (window edges).
"""

from __future__ import annotations

import numpy as np

# The counter's observed refreshes must come this close to the expected period (a share of
# it) for the edges to be moved; else it does not move once a refresh and is left as read.
PERIOD_TOLERANCE = 0.25
MIN_TICKS = 3  # fewer refreshes seen: no period to check against


def counter_ticks(samples: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(instant, increment) of each change in a time-ordered list of (t_s, counter) samples;
    the instant is the middle between the last sample before the change and the first after."""
    ticks = []
    for (t_a, c_a), (t_b, c_b) in zip(samples[:-1], samples[1:], strict=True):
        if c_b != c_a:
            ticks.append(((t_a + t_b) / 2, c_b - c_a))
    return ticks


def edge_corrected(samples: list[tuple[float, float]], refresh_s: float | None) -> float | None:
    """The counter's difference over the window from samples[0] to samples[-1] (its two
    ends), from the refreshes inside it alone, scaled to the window's time; None where the
    counter does not move once every `refresh_s` (the raw difference is then the caller's)."""
    if not refresh_s or len(samples) < 2:
        return None
    ticks = counter_ticks(samples)
    if len(ticks) < MIN_TICKS:
        return None
    times = [t for t, _ in ticks]
    gaps = [b - a for a, b in zip(times[:-1], times[1:], strict=True)]
    period_s = (times[-1] - times[0]) / len(gaps)
    if abs(period_s - refresh_s) > PERIOD_TOLERANCE * refresh_s or max(gaps) > 1.5 * period_s:
        return None  # not once a refresh, or a refresh the sampler did not see
    # the refreshes after the first: each adds its reading x period for a period that lies
    # inside the window (the first one's reaches back before it opened)
    inside_j = (samples[-1][1] - samples[0][1]) - ticks[0][1]
    return inside_j * (samples[-1][0] - samples[0][0]) / _span_s(times)


def _span_s(times: list[float]) -> float:
    """Time from the first refresh seen to the last: the slope of the refresh instants
    against their index, times the last index. Each instant is known to half a sample
    (they fall on the sampler's grid); the fit over all of them is far closer."""
    index = np.arange(len(times))
    slope = np.polyfit(index, np.asarray(times), 1)[0]
    return float(slope * index[-1])
