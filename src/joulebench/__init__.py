"""joulebench: energy per image of image-classification models, beside their accuracy."""

__version__ = "0.1.0"
