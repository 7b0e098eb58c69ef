"""The API's argument checks: a bad argument is a ValueError that says what to pass."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from joulebench.core.backends import BoundDevice, bound_device
from joulebench.core.protocol import ProtocolSettings
from joulebench.jobs.adhoc import adhoc_label


def measurable_device(device: str) -> BoundDevice:
    """The device bound to its backend, labelled as rows of a model measured now are
    (adhoc_label), where it can be measured here; DeviceError (a ValueError) naming what is
    missing otherwise (an unknown string, no CUDA, NVML unreadable)."""
    from joulebench.schedule.devices import require_measurable

    if not isinstance(device, str):
        raise ValueError(f"device must be a string such as 'cpu', got {device!r}")
    bound = bound_device(device, adhoc_label(device))  # an unknown string, named as such
    require_measurable(device, device)
    return bound


def positive_int(name: str, value: Any, maximum: int | None = None) -> int:
    """A whole number >= 1 (and <= `maximum`): a batch that no row could hold is refused
    before anything runs."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value!r}")
    return value


def batch(name: str, value: Any) -> int:
    """A batch of images: 1 to tables.MAX_BATCH_SIZE, as the CLI and a study take it."""
    from joulebench.tables import MAX_BATCH_SIZE

    return positive_int(name, value, MAX_BATCH_SIZE)


def seconds(name: str, value: Any, key: str, *, positive: bool = True) -> float:
    """A finite number of seconds (> 0, or >= 0 where not `positive`), at most the schema's
    maximum of the config key it stands for (`key`)."""
    from joulebench.config_schema import maximum

    number = isinstance(value, int | float) and not isinstance(value, bool)
    low_ok = number and (value > 0 if positive else value >= 0)
    if not (low_ok and math.isfinite(value)):
        word = "positive" if positive else "non-negative"
        raise ValueError(f"{name} must be a {word} finite number of seconds, got {value!r}")
    if value > maximum(key):
        raise ValueError(f"{name} must be at most {maximum(key)} s, got {value!r}")
    return float(value)


def threads_count(value: Any) -> int | None:
    """None (the job's default) or a positive number of threads."""
    return None if value is None else positive_int("threads", value)


def workload_name(value: Any) -> str:
    """A name rows, files and figures can carry (catalog.workloads.NAME_PATTERN)."""
    from joulebench.catalog.workloads import NAME_PATTERN

    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value) or value.startswith("-"):
        raise ValueError(
            f"name {value!r:.80} may only use letters, digits, '_', '.', '-' (not first)"
        )
    return value


def window_name(value: Any) -> str:
    """A measurement's or a window's name: a text no longer than a row's names may be."""
    from joulebench.tables import MAX_NAME_CHARS

    if not isinstance(value, str) or not value or len(value) > MAX_NAME_CHARS:
        raise ValueError(
            f"name must be a text of 1 to {MAX_NAME_CHARS} characters, got {value!r:.60}"
        )
    return value


def step_callable(step: Any, sync: Any = None) -> None:
    if not callable(step):
        raise ValueError(f"step must be a callable that runs one batch, got {type(step).__name__}")
    if sync is not None and not callable(sync):
        raise ValueError(f"sync must be None or a callable, got {type(sync).__name__}")


def protocol_config(preset: str, overrides: Mapping[str, Any]) -> dict:
    """The protocol section (preset and settings over it), checked now: an unknown preset or
    setting, or a value out of range, is a ValueError (protocol.SettingsError)."""
    config = {"preset": preset, **overrides}
    ProtocolSettings.from_dict(config)
    return config
