"""joulebench.Monitor: the energy of any block of code, in begin/end windows as Zeus's
ZeusMonitor measures it, read by the meter a profile job would use, with its honesty: the
meter's flags, an estimate said so, and a window too short for the meter flagged."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from joulebench.api.arguments import measurable_device, window_name
from joulebench.core.protocol import (
    DEFAULT_PRESET,
    ProtocolSettings,
    meter_kind,
    preset_values,
)
from joulebench.flags import FLAG_SHORT_WINDOW, FLAG_SIMULATED, join_flags, split_flags

# RAPL's and AMD SMI's energy counters move about every millisecond (the estimate reads the
# process's CPU time as finely); a window of fewer than 100 such steps is off by over 1 %
# from the steps alone
COUNTER_STEP_S = 1e-3
COUNTER_STEPS = 100


class ShortWindowWarning(UserWarning):
    """A window shorter than its meter reads faithfully (flag short-window)."""


@dataclass(frozen=True)
class Window:
    """One window's energy on the device, as its meter read it."""

    name: str
    energy_j: float
    duration_s: float
    power_w: float  # energy_j / duration_s
    meter: str
    is_estimate: bool  # modelled (estimate:tdp-linear), not read from a counter
    flags: tuple[str, ...]  # the meter's (other-process, other-load, estimate, ...) and ours
    shortest_s: float  # the shortest window this meter reads faithfully

    @property
    def too_short(self) -> bool:
        return FLAG_SHORT_WINDOW in self.flags


def shortest_window_s(meter, preset: str = DEFAULT_PRESET) -> float:
    """A sensor that refreshes slowly (NVML) needs the preset's min_window_refreshes refreshes
    in a window, as the protocol sizes its windows; a counter, COUNTER_STEPS of its steps."""
    kind = meter_kind(meter)
    if kind == "sensor":
        settings = ProtocolSettings.from_dict({"preset": preset}, kind)
        return settings.min_window_refreshes * float(meter.refresh_s)
    return COUNTER_STEPS * COUNTER_STEP_S


def window_flags(meter_flags: Iterable[str], duration_s: float, shortest_s: float) -> tuple:
    """The meter's flags, and FLAG_SHORT_WINDOW where the window was shorter than its meter
    reads faithfully."""
    ours = [FLAG_SHORT_WINDOW] if duration_s < shortest_s else []
    return tuple(split_flags(join_flags(list(meter_flags), ours)))


class Monitor:
    """Energy of code blocks on one device: `begin_window(name)`, then `end_window(name)`
    returns a Window. Windows may overlap (each reads a meter of its own); the device's
    queued work is waited for at both ends. As a context manager it closes what is left
    open. On a simulated GPU only work run through `wrap` draws the board's busy power."""

    def __init__(
        self, device: str = "cpu", *, meter: str | None = None, preset: str = DEFAULT_PRESET
    ):
        self.device = device
        self._device = measurable_device(device)
        self.label = self._device.label
        preset_values(preset)  # an unknown preset: ValueError naming the known ones
        self._preset, self._prefer = preset, meter
        self._open: dict[str, tuple[object, float]] = {}
        self._meter().close()  # a meter this device has not: said now, not at the first window

    def _meter(self):
        return self._device.node_meter(prefer=self._prefer)[0]

    def begin_window(self, name: str) -> None:
        window_name(name)
        if name in self._open:
            raise ValueError(f"window {name!r} is open already")
        meter = self._meter()
        self._device.sync()
        meter.begin()
        self._open[name] = (meter, time.perf_counter())

    def end_window(self, name: str) -> Window:
        """The window's Window; a too-short one is flagged and warned of (ShortWindowWarning)."""
        if name not in self._open:
            raise ValueError(f"no window {name!r} is open; open: {sorted(self._open)}")
        meter, started = self._open.pop(name)
        self._device.sync()
        try:
            reading = meter.end()
        finally:
            meter.close()
        duration_s = reading.duration_s
        if not (math.isfinite(duration_s) and duration_s > 0):
            duration_s = time.perf_counter() - started
        window = _window(name, meter, reading, duration_s, shortest_window_s(meter, self._preset))
        if self._device.simulated:  # the sensor simulator's energy, as a profile row says
            window = replace(
                window, flags=tuple(split_flags(join_flags(window.flags, [FLAG_SIMULATED])))
            )
        return window

    def wrap(self, fn: Callable) -> Callable:
        """`fn` as the device runs a step: on a simulated GPU the board works while it runs;
        elsewhere `fn` itself."""
        if not callable(fn):
            raise ValueError(f"wrap takes a callable (the step to run), got {type(fn).__name__}")
        return self._device.wrap_step(fn)

    def close(self) -> None:
        for meter, _ in self._open.values():
            meter.close()
        self._open.clear()

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _window(name: str, meter, reading, duration_s: float, shortest_s: float) -> Window:
    energy_j = float(reading.energy_j)
    flags = window_flags(reading.flags, duration_s, shortest_s)
    if FLAG_SHORT_WINDOW in flags:
        warnings.warn(
            f"window {name!r} lasted {duration_s:.3g} s, shorter than the {shortest_s:.3g} s "
            f"the meter {meter.name} reads faithfully: its energy is a guess; measure a "
            "longer block (repeat it) and divide",
            ShortWindowWarning,
            stacklevel=3,
        )
    return Window(
        name, energy_j, duration_s, energy_j / duration_s, meter.name,
        bool(meter.is_estimate), flags, shortest_s,
    )  # fmt: skip
