"""joulebench: energy per image of image-classification models, beside their accuracy.

The package is split by stage: catalog/, measure/, accuracy/, analysis/, report/, with the
data contract (tables), the config path (study) and the command line (cli) at the top. The
map: docs/design.md; every output column: docs/columns.md. The Python API (api/,
docs/api.md): `joulebench.measure(step, ...)`, `joulebench.profile(model, ...)`,
`joulebench.Monitor(device)`.
"""

import importlib

__version__ = "0.1.0"

# The API's names, imported on first use so that `import joulebench` stays cheap (the CLI's
# start-up); named, not imported: the root is the lowest layer, the API above the stages.
# `joulebench.measure` is the measuring stage's package, callable as the API's measure.
_API = ("Measurement", "MeasurementError", "Monitor", "ShortWindowWarning", "Window", "profile")


def __getattr__(name: str):
    if name in _API:
        return getattr(importlib.import_module("joulebench.api"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
