"""How far apart two colours look, to people with normal colour vision and with each of the
common colour-vision deficiencies: the check that the shared palettes (report/palettes.py)
stay distinguishable.

Deficiencies are simulated with Machado, Oliveira and Fernandes (2009, IEEE TVCG 15(6)), at
severity 1 (protanopia, deuteranopia, tritanopia), in linear sRGB; differences are CIEDE2000
(Sharma, Wu and Dalal 2005) in CIELAB under D65. numpy only.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

# Machado et al. (2009), severity 1.0: linear-RGB matrices.
CVD = {
    "normal": np.eye(3),
    "protanopia": np.array(
        [
            [0.152286, 1.052583, -0.204868],
            [0.114503, 0.786281, 0.099216],
            [-0.003882, -0.048116, 1.051998],
        ]
    ),
    "deuteranopia": np.array(
        [
            [0.367322, 0.860646, -0.227968],
            [0.280085, 0.672501, 0.047413],
            [-0.011820, 0.042940, 0.968881],
        ]
    ),
    "tritanopia": np.array(
        [
            [1.255528, -0.076749, -0.178779],
            [-0.078411, 0.930809, 0.147602],
            [0.004733, 0.691367, 0.303900],
        ]
    ),
}
_RGB_TO_XYZ = np.array(
    [
        [0.4124564, 0.3575761, 0.1804375],
        [0.2126729, 0.7151522, 0.0721750],
        [0.0193339, 0.1191920, 0.9503041],
    ]
)
_WHITE = np.array([0.95047, 1.0, 1.08883])


def _linear(hex_colour: str) -> np.ndarray:
    c = np.array([int(hex_colour[k : k + 2], 16) / 255 for k in (1, 3, 5)])
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab(hex_colour: str, vision: str = "normal") -> np.ndarray:
    """CIELAB (D65) of a '#rrggbb' colour as seen with `vision` (a key of CVD)."""
    rgb = np.clip(CVD[vision] @ _linear(hex_colour), 0, 1)
    xyz = _RGB_TO_XYZ @ rgb / _WHITE
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def ciede2000(lab1: np.ndarray, lab2: np.ndarray) -> float:
    """The CIEDE2000 colour difference (kL = kC = kH = 1)."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_bar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_bar**7 / (c_bar**7 + 25**7)))
    a1p, a2p = a1 * (1 + g), a2 * (1 + g)
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = math.degrees(math.atan2(b2, a2p)) % 360 if c2p else 0.0
    dl, dc = l2 - l1, c2p - c1p
    dh = 0.0
    if c1p * c2p:
        dh = h2p - h1p
        dh = dh - 360 if dh > 180 else dh + 360 if dh < -180 else dh
    d_big_h = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    l_bar, cp_bar = (l1 + l2) / 2, (c1p + c2p) / 2
    h_bar = h1p + h2p
    if c1p * c2p:
        if abs(h1p - h2p) <= 180:
            h_bar = (h1p + h2p) / 2
        else:
            h_bar = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(h_bar - 30))
        + 0.24 * math.cos(math.radians(2 * h_bar))
        + 0.32 * math.cos(math.radians(3 * h_bar + 6))
        - 0.20 * math.cos(math.radians(4 * h_bar - 63))
    )
    s_l = 1 + 0.015 * (l_bar - 50) ** 2 / math.sqrt(20 + (l_bar - 50) ** 2)
    s_c = 1 + 0.045 * cp_bar
    s_h = 1 + 0.015 * cp_bar * t
    r_c = 2 * math.sqrt(cp_bar**7 / (cp_bar**7 + 25**7))
    r_t = -math.sin(math.radians(2 * 30 * math.exp(-(((h_bar - 275) / 25) ** 2)))) * r_c
    return math.sqrt(
        (dl / s_l) ** 2
        + (dc / s_c) ** 2
        + (d_big_h / s_h) ** 2
        + r_t * (dc / s_c) * (d_big_h / s_h)
    )


def difference(c1: str, c2: str, vision: str = "normal") -> float:
    """CIEDE2000 between two '#rrggbb' colours as seen with `vision`."""
    return ciede2000(lab(c1, vision), lab(c2, vision))


def closest_pair(colours, pairs=None) -> tuple[float, str, str, str]:
    """(difference, vision, colour, colour) of the two colours that look most alike under any
    vision; `pairs` limits which pairs count (default: every pair)."""
    pairs = list(pairs) if pairs is not None else list(combinations(colours, 2))
    return min((difference(a, b, v), v, a, b) for a, b in pairs for v in CVD)
