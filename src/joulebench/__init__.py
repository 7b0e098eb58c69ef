"""joulebench: energy per image of image-classification models, beside their accuracy.

The package is split by stage: catalog/, measure/, accuracy/, analysis/, report/, with the
data contract (tables), the config path (study) and the command line (cli) at the top. The
map: docs/design.md; every output column: docs/columns.md.
"""

__version__ = "0.1.0"
