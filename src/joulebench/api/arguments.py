"""The API's argument checks: a bad argument is a ValueError that says what to pass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joulebench.core.adhoc import adhoc_label
from joulebench.core.backends import BoundDevice, bound_device
from joulebench.core.protocol import ProtocolSettings


def measurable_device(device: str) -> BoundDevice:
    """The device bound to its backend, labelled as rows of a model measured now are
    (adhoc_label), where it can be measured here; DeviceError (a ValueError) naming what is
    missing otherwise (an unknown string, no CUDA, NVML unreadable)."""
    from joulebench.core.devices import require_measurable

    if not isinstance(device, str):
        raise ValueError(f"device must be a string such as 'cpu', got {device!r}")
    bound = bound_device(device, adhoc_label(device))  # an unknown string, named as such
    require_measurable(device, device)
    return bound


def positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def positive_s(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


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
