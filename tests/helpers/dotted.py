"""The object a registry's producer names by dotted path (a module's function, or a class's
method), for the tests that check each producer's source names what it produces."""

from __future__ import annotations

import importlib


def resolve(dotted: str):
    """The object `dotted` names: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise LookupError(dotted)
