"""Energy in the units people use: Wh per 1,000 images, grams of CO2e per 1,000 images and
the cost of a million images (issue 16).

From the scored energy per image E (J; the device's or the whole node's, `energy_scope`):

    energy_per_1k_images_wh = E x 1000 / 3600
    co2e_per_1k_images_g    = energy_per_1k_images_wh / 1000 x PUE x grid_gco2e_per_kwh
    cost_per_1m_images      = E x 1e6 / 3.6e6 x PUE x price_per_kwh

PUE (the data centre's total power over its IT power, >= 1) defaults to 1 (IT energy only).
With no `grid_gco2e_per_kwh` (or `price_per_kwh`) the CO2e (or cost) column stays empty. Both
are estimates built on the config's figures, which `carbon_note` repeats on every row; an
estimated energy stays an estimate (`energy_is_estimate`). Computed in the score stage, so a
published summary gets them too. docs/scoring.md#carbon-and-cost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

J_PER_WH = 3600.0
J_PER_KWH = 3.6e6
KEYS = ("grid_gco2e_per_kwh", "pue", "price_per_kwh")
LIMITS = {"grid_gco2e_per_kwh": (0.0, 2000.0), "pue": (1.0, 3.0), "price_per_kwh": (0.0, 100.0)}


def check_carbon(carbon: Mapping | None) -> dict:
    """The config's `carbon:` with every key (None where unset), range-checked."""
    carbon = dict(carbon or {})
    unknown = sorted(set(carbon) - set(KEYS))
    if unknown:
        raise ValueError(f"carbon: unknown key(s) {unknown}; known: {list(KEYS)}")
    out = {}
    for key in KEYS:
        value = carbon.get(key)
        if value is not None:
            value = float(value)
            lo, hi = LIMITS[key]
            if not (math.isfinite(value) and lo <= value <= hi):
                raise ValueError(f"carbon.{key} must be in [{lo:g}, {hi:g}], got {value}")
        out[key] = value
    return out


def carbon_note(carbon: Mapping) -> str:
    """What the CO2e and cost columns assume, in words."""
    parts = []
    pue = carbon["pue"] or 1.0
    if carbon["grid_gco2e_per_kwh"] is not None:
        parts.append(f"estimate: grid {carbon['grid_gco2e_per_kwh']:g} gCO2e/kWh")
    if carbon["price_per_kwh"] is not None:
        parts.append(f"price {carbon['price_per_kwh']:g} per kWh")
    if parts:
        parts.append(f"PUE {pue:g}" + (" (not set: IT energy only)" if not carbon["pue"] else ""))
    return ", ".join(parts)


def carbon_columns(energy_per_image_j: pd.Series, carbon: Mapping | None) -> pd.DataFrame:
    """energy_per_1k_images_wh, co2e_per_1k_images_g, cost_per_1m_images and carbon_note."""
    carbon = check_carbon(carbon)
    e = pd.to_numeric(energy_per_image_j, errors="coerce").astype(float)
    pue = carbon["pue"] or 1.0
    wh_1k = e * 1000.0 / J_PER_WH
    grid, price = carbon["grid_gco2e_per_kwh"], carbon["price_per_kwh"]
    nan = pd.Series(math.nan, index=e.index)
    return pd.DataFrame(
        {
            "energy_per_1k_images_wh": wh_1k,
            "co2e_per_1k_images_g": nan if grid is None else wh_1k / 1000.0 * pue * grid,
            "cost_per_1m_images": nan if price is None else e * 1e6 / J_PER_KWH * pue * price,
            "carbon_note": carbon_note(carbon),
        },
        index=e.index,
    )
