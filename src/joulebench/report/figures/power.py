"""(10) power_limit_sweep: energy per image and throughput against the power limit in force,
one line per model, method and batch size of a power-limit sweep (docs/power.md): where the
energy stops falling (the knee) is the cap to serve at.

A simulated GPU's rows are never scored, but a sweep on one is the only one a machine
without a GPU can draw: it is drawn when no real device swept, and its header says
"simulated".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import joulebench.report.figures.plot as plot
from joulebench.analysis.score import DEFAULT_MAX_ENERGY_CV, invalidating_flag
from joulebench.core.methods import config_key
from joulebench.flags import FLAG_SIMULATED
from joulebench.report.figures.registry import Inputs, figure
from joulebench.report.figures.rows import (
    empty_because,
    is_estimated,
    not_comparable,
    one_device,
    placed,
)

MAX_LINES = 6  # lines drawn: the models with the most limits swept, then by name
# A line's legend label (model · method · batch): whole up to a column's width (one column
# where they are long: plot.legend_columns), cut with "…" only past it.
SERIES_CHARS = 60
TITLE = "Energy and throughput against the power limit"


def sweep_rows(summary: pd.DataFrame, max_energy_cv: float | None) -> pd.DataFrame:
    """Comparable rows measured at a read-back power limit, with their line (`series`:
    model, method without its sweep value, batch size); simulated rows only where no real
    device swept, by the same rules as best_configs' include_simulated (a high-spread one
    is left out there and here, so the ringed limit is the one best_configs names)."""
    s = placed(summary)
    if "power_limit_readback_w" not in s.columns or s.empty:
        return s.iloc[:0]
    limit = pd.to_numeric(s["power_limit_readback_w"], errors="coerce")
    energy = pd.to_numeric(s["energy_per_image_j"], errors="coerce")
    flag = invalidating_flag(s, max_energy_cv=max_energy_cv)
    ok = (s["status"] == "ok").fillna(False) & np.isfinite(limit) & (energy > 0)
    real = ok & (flag == "")
    if not real.any():  # simulated rows by the rules best_configs ranks them with
        sim_flag = invalidating_flag(s, max_energy_cv=max_energy_cv, include_simulated=True)
        real = ok & (flag == FLAG_SIMULATED) & (sim_flag == "")
    s = s[real]
    base = s["method"].astype(str).map(config_key)
    series = s["model"].astype(str) + " · " + base + " · b" + s["batch_size"].astype(str)
    return s.assign(series=series, limit_w=limit[s.index])


def _asked(summary: pd.DataFrame) -> bool:
    """Whether any row asked for a power limit (then why none is drawn is counted)."""
    asked = ("power_limit_requested_w", "power_limit_requested_fraction")
    return any(c in summary and summary[c].notna().any() for c in asked)


def _lines(s: pd.DataFrame) -> list[str]:
    counts = s.groupby("series")["limit_w"].nunique()
    counts = counts[counts >= 2]
    ranked = sorted(counts.index, key=lambda k: (-counts[k], k))
    return ranked[:MAX_LINES]


@plot.styled
def power_limit_sweep(
    summary: pd.DataFrame,
    stem,
    *,
    device_label: str | None = None,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
):
    """Two panels sharing the power-limit axis: energy per image (the least-energy limit of
    each line ringed) and throughput."""
    s = one_device(sweep_rows(summary, max_energy_cv), device_label)
    lines = _lines(s) if not s.empty else []
    if not lines:
        if not _asked(summary):
            what = "the study sweeps no power limit (a method with power_limit: [1.0, 0.8, 0.6]"
            return plot.no_data(stem, TITLE, what + ", or power_limit_w, does)")
        what = "no power-limit sweep with comparable energies at two or more limits"
        why = not_comparable(summary, max_energy_cv=max_energy_cv)
        return plot.no_data(stem, TITLE, empty_because(what, why))
    colors = plot.series_colors(lines)
    est = bool(is_estimated(s).any())
    unit, scale = plot.energy_unit(s["energy_per_image_j"])
    fig, (ax_e, ax_t) = plot.new_figure(3.6, nrows=2, sharex=True)
    for key in lines:
        line = s[s["series"] == key].sort_values("limit_w")
        x, e = line["limit_w"].to_numpy(float), line["energy_per_image_j"].to_numpy(float)
        ax_e.plot(x, e * scale, marker="o", ms=3, lw=1, color=colors[key])
        best = int(np.argmin(e))
        ax_e.plot(x[best], e[best] * scale, "o", ms=7, mfc="none", mew=1, color=colors[key])
        ax_t.plot(
            x, line["throughput_img_s"].to_numpy(float), marker="o", ms=3, lw=1, color=colors[key]
        )
    ax_e.set_ylabel(plot.energy_label(pd.Series([est]), "Energy per image", unit))
    ax_t.set_ylabel("Throughput (images/s)")
    ax_t.set_xlabel("Power limit in force (W, read back)")
    for ax in (ax_e, ax_t):
        ax.grid(True, which="major")
    device = plot.short(s["device_label"].iloc[0], 20) + (" (simulated)" if _simulated(s) else "")
    handles = [plot.dot(colors[k], plot.short(k, SERIES_CHARS)) for k in lines]
    title = f"{device} · ringed: least energy per line" + _left_out(summary, s, max_energy_cv)
    plot.top_legend(fig, handles, title, ncol=2)
    return plot.save(fig, stem)


def _simulated(rows: pd.DataFrame) -> bool:
    return bool(rows["is_simulated"].fillna(False).any()) if "is_simulated" in rows else False


def _left_out(summary: pd.DataFrame, drawn: pd.DataFrame, max_energy_cv) -> str:
    """A line 'left out: 2 flagged high-spread' under the title: the drawn device's capped
    rows not drawn, and why (a simulated sweep's by the rules it is drawn by), so no limit
    vanishes unsaid."""
    s = placed(summary)
    capped = pd.to_numeric(s.get("power_limit_readback_w"), errors="coerce").notna()
    same = s["device_label"].astype(str) == str(drawn["device_label"].iloc[0])
    rest = s[capped & same & ~s.index.isin(drawn.index)]
    why = not_comparable(rest, max_energy_cv=max_energy_cv, include_simulated=_simulated(drawn))
    return f"\nleft out: {why}" if why else ""


@figure("power_limit_sweep", needs=("summary",))
def _draw(inputs: Inputs, stem) -> list[Path]:
    return power_limit_sweep(
        inputs.summary, stem, device_label=inputs.device_label, max_energy_cv=inputs.max_energy_cv
    )
