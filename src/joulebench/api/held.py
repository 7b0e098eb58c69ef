"""Module objects handed to joulebench.profile, reachable by name as custom workload entries
(`name=joulebench.api.held:<key>`, catalog.workloads), so a profile job builds a user's
module object as it builds a user's own model file; each build gets a copy, as each
configuration gets a fresh model (a method's cast never changes the user's module)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

_HELD: dict[str, Callable[[], tuple]] = {}
_KEYS = itertools.count()


def hold(model, spec) -> str:
    """Hold `model` with its WorkloadSpec; the key its entry names."""
    key = f"module_{next(_KEYS)}"
    _HELD[key] = lambda: (copy.deepcopy(model), spec)
    return key


def release(key: str) -> None:
    _HELD.pop(key, None)


def __getattr__(name: str) -> Callable[[], tuple]:
    """A held module's workload function, as catalog.workloads looks it up."""
    try:
        return _HELD[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} holds no {name!r}") from None
