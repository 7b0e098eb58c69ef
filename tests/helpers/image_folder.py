"""A small generated ImageNet-style image folder (three classes, odd formats, corrupt files)
for the dataset, shard and accuracy tests."""

from __future__ import annotations

import numpy as np
from PIL import Image

from joulebench.accuracy.datasets import imagenet_wnids

# Three ImageNet classes far apart, so folder order (0, 1, 2) differs from timm's indices.
WNID_INDEX = (1, 500, 999)
CORRUPT = ("c/garbage.JPEG", "c/truncated.jpg")


def natural_image(seed: int, width: int, height: int) -> np.ndarray:
    """Smooth colour gradients plus noise: resizing and JPEG have real work to do."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width] / max(width, height)
    phase = rng.uniform(0, 6, size=3)
    base = np.stack([np.sin(6 * xx + 4 * yy + p) for p in phase], axis=-1)
    pixels = 128 + 90 * base + rng.normal(0, 12, size=(height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8)


def make_image_folder(root, wnids=None):
    """<root>/<wnid>/...: PNG and JPEG, grayscale, CMYK, RGBA, two corrupt files, a README.

    Returns {relative path: class folder} of the readable images.
    """
    all_wnids = imagenet_wnids()
    wnids = wnids or [all_wnids[i] for i in WNID_INDEX]
    a, b, c = wnids
    rgb = lambda seed, w, h: Image.fromarray(natural_image(seed, w, h))  # noqa: E731
    images = {
        f"{a}/a0.JPEG": rgb(0, 500, 375),
        f"{a}/a1.png": rgb(1, 300, 400),
        f"{a}/gray.png": rgb(2, 320, 240).convert("L"),
        f"{b}/b0.jpg": rgb(3, 256, 256),
        f"{b}/cmyk.jpg": rgb(4, 400, 300).convert("CMYK"),
        f"{b}/rgba.png": rgb(5, 240, 330).convert("RGBA"),
        f"{c}/c0.jpeg": rgb(6, 640, 480),
        f"{c}/sub/c1.png": rgb(7, 180, 260),  # nested folders belong to their class
    }
    for rel, img in images.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        img.save(path, quality=90) if path.suffix.lower() != ".png" else img.save(path)
    (root / c / "garbage.JPEG").write_bytes(b"this is not an image" * 50)
    whole = (root / f"{a}/a0.JPEG").read_bytes()
    (root / c / "truncated.jpg").write_bytes(whole[: len(whole) // 3])
    (root / c / "README.txt").write_text("not an image")
    return {rel: rel.split("/")[0] for rel in images}
