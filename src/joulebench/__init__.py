"""joulebench: energy per image of image-classification models, beside their accuracy.

The package is split by stage: catalog/, core/, accuracy/, analysis/, report/, with the
data contract (tables), the config path (study) and the command line (cli) at the top. The
map: docs/design.md; every output column: docs/columns.md. The Python API (api/,
docs/api.md): `joulebench.measure(step, ...)`, `joulebench.profile(model, ...)`,
`joulebench.Monitor(device)`; `joulebench.load(path)` reads a release or a summary.
"""

import importlib

__version__ = "0.1.0"

# The API's names, imported on first use so that `import joulebench` stays cheap (the CLI's
# start-up); named, not imported: the root is the lowest layer, the API above the stages.
# The measuring stage's package is `joulebench.core`, so `joulebench.measure` is only the API's.
_API = (
    "load",
    "Measurement",
    "MeasurementError",
    "Monitor",
    "ShortWindowWarning",
    "Window",
    "measure",
    "profile",
)


def __getattr__(name: str):
    if name == "load":  # a release or a summary as a table (no torch: analysis.release)
        return importlib.import_module("joulebench.analysis.release").load
    if name in _API:
        return getattr(importlib.import_module("joulebench.api"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
