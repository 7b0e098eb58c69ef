"""A job process's long-lived objects kept out of the cyclic collector's way.

torch and timm leave ~420,000 objects that live as long as the process, and each full
collection walks them all: ~0.2-0.4 s on a 2-core host. The jobs collect after every
configuration (BoundDevice.free_memory) and Python collects on its own while they build
models and tables. A process that freezes what its imports made (gc.freeze) then collects
in under a millisecond (docs/benchmarks.md, issue 43's "fourth session"). Only for a
process that is joulebench's own (a profile or catalog worker, `plan --calibrate`), never a
user's (the Python API): a frozen object is never collected, so it is done once, before any
model is built.
"""

from __future__ import annotations

import gc


def freeze_imports(*, timm_too: bool = True) -> None:
    """Import torch (and timm, which every catalog model needs), then freeze every object
    alive: the collector no longer walks them."""
    import torch  # noqa: F401

    if timm_too:
        import timm  # noqa: F401
    gc.collect()
    gc.freeze()
