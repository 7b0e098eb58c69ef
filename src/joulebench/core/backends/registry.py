"""The registry of device kinds: which backend serves a device string.

Backends are found by module name, as entry points are: BACKEND_MODULES (one line per
kind; `devices: auto` tries the GPU kinds in this order), then the modules named in the
JOULEBENCH_BACKENDS environment variable (comma-separated, for kinds outside the package),
each exposing `BACKEND`, are imported on first use. So no production module imports a
backend (the simulated one imports the simulator; production code never does). `register`
adds one in process (tests).
"""

from __future__ import annotations

import importlib
import os
import re

from joulebench.core.backends.base import Backend, DeviceError, Libraries

BACKEND_MODULES = (
    "joulebench.core.backends.cpu",
    "joulebench.core.backends.cuda",
    "joulebench.core.backends.rocm",
    "joulebench.sim.backend",
)
EXTRA_ENV = "JOULEBENCH_BACKENDS"

_REGISTERED: list[Backend] = []
_LOADED = False


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    extra = [m.strip() for m in os.environ.get(EXTRA_ENV, "").split(",") if m.strip()]
    for module in (*BACKEND_MODULES, *extra):
        backend = importlib.import_module(module).BACKEND
        if backend not in _REGISTERED:
            _REGISTERED.append(backend)
    _LOADED = True


def register(backend: Backend) -> Backend:
    """Add a kind of device (after the built-in ones); returns it."""
    _load()
    if backend.kind in {b.kind for b in _REGISTERED}:
        raise ValueError(f"a backend of kind {backend.kind!r} is registered already")
    _REGISTERED.append(backend)
    return backend


def unregister(backend: Backend) -> None:
    """Remove a kind `register` added."""
    _REGISTERED.remove(backend)


def backends(*, simulated: bool = True) -> list[Backend]:
    """Every registered backend in order; without the simulated ones when `simulated` is False."""
    _load()
    return [b for b in _REGISTERED if simulated or not b.simulated]


def _serving(device: object) -> list[Backend]:
    if not isinstance(device, str):
        return []
    return [b for b in backends() if re.fullmatch(b.pattern, device)]


def unknown_device(device: object) -> DeviceError:
    """The error for a string no backend serves, naming the ones that are served."""
    return DeviceError(f"{device!r} is not a device joulebench measures; use {spellings()}")


def kind_of(device: str) -> Backend:
    """The backend by the string alone, loading no library: for what every backend serving
    that spelling shares (is it the host, simulated, its node part, its siblings)."""
    serving = _serving(device)
    if not serving:
        raise unknown_device(device)
    return serving[0]


def backend_for(device: str, libs: Libraries | None = None, prefer: str | None = None) -> Backend:
    """The backend that serves `device` here. When several serve its spelling (cuda: NVIDIA
    or AMD), a forced meter (`prefer`) picks the one it belongs to, else each is asked."""
    serving = _serving(device)
    if not serving:
        raise unknown_device(device)
    if len(serving) == 1:
        return serving[0]
    forced = [b for b in serving if prefer in b.meters]
    if prefer is not None and len(forced) == 1:
        return forced[0]
    libs = libs or Libraries()
    return next((b for b in serving if b.claims(device, libs)), serving[-1])


def host_backend() -> Backend:
    """The backend of the host's CPU: `devices: auto` falls back to it."""
    return next(b for b in backends() if b.is_host)


def device_pattern(*, simulated: bool = True) -> str:
    """The anchored regex of every device string served (the config schema's)."""
    patterns = list(dict.fromkeys(b.pattern for b in backends(simulated=simulated)))
    return "^(" + "|".join(patterns) + ")$"


def spellings(*, simulated: bool = True) -> str:
    """'cpu, cuda, cuda:N or sim:<gpu>': the device strings, as a user writes them."""
    names = list(dict.fromkeys(s for b in backends(simulated=simulated) for s in b.spellings))
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)


def meter_names() -> tuple[str, ...]:
    """Every meter a backend can be forced to (the CLI's --meter and the schema's meter)."""
    return tuple(dict.fromkeys(m for b in backends() for m in b.meters))
