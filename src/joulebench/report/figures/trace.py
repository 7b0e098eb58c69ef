"""(5) power_trace: power over the measurement windows of one configuration, repeats
overlaid, with the idle baseline; and which configuration it shows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import joulebench.report.figures.plot as plot
from joulebench.report.figures.registry import Inputs, figure
from joulebench.report.figures.rows import (
    counted,
    is_estimated,
    matches,
    missing_key,
    placed,
    selectors,
)

TRACE_KEY = ["device_label", "model", "method", "batch_size_requested"]


@plot.styled
def power_trace(
    trace: pd.DataFrame,
    stem,
    *,
    device_label: str | None = None,
    model: str | None = None,
    method: str | None = None,
    batch_size: int | None = None,
    idle_power_w: float | None = None,
    estimated: bool = False,
    simulated: bool = False,
) -> list[Path]:
    """Power over each measurement window of one configuration, repeats overlaid, with the
    idle baseline; the first configuration in the table unless one is named. A simulated
    GPU's trace (the sensor simulator's readings) says so in its header and axis."""
    title = "Power during measurement"
    t = placed(trace)
    want = selectors(device_label=device_label, model=model, method=method)
    want["batch_size_requested"] = batch_size
    for k, v in want.items():
        if v is not None:
            t = t[matches(t[k], v)]
    power_col = "power_w"
    if t.empty or not np.isfinite(t[power_col]).any():
        power_col = "power_avg_w"
    if t.empty or not np.isfinite(t[power_col].astype(float)).any():
        unplaced = counted(missing_key(trace).map(lambda k: f"samples without {k}" if k else ""))
        why = f"no power samples to plot: {unplaced}" if unplaced else ""
        estimated = "the meter estimates energy (modelled power × time) and records no power"
        return plot.no_data(stem, title, why or f"{estimated} samples")
    first = t[TRACE_KEY].drop_duplicates().sort_values(TRACE_KEY).iloc[0]
    t = t[(t[TRACE_KEY] == first).all(axis=1)]
    fig, ax = plot.new_figure(2.6)
    repeats = sorted(t["repeat"].dropna().unique())
    colors = plot.series_colors(repeats)
    for r in repeats:
        one = t[t["repeat"] == r].sort_values("t_s")
        ax.plot(one["t_s"], one[power_col], color=colors[r], lw=0.7, label=f"repeat {int(r) + 1}")
    if idle_power_w is not None and np.isfinite(idle_power_w):
        _idle_line(ax, idle_power_w)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("Time in measurement window (s)")
    what = "Power" if power_col == "power_w" else "Power, device-averaged"
    kind = ", estimated" if estimated else ", simulated" if simulated else ""
    ax.set_ylabel(f"{what} (W{kind})")
    ax.grid(True)
    bs = first["batch_size_requested"]
    dev = plot.short(first["device_label"], 20) + (" (simulated)" if simulated else "")
    setting = f"{plot.short(first['method'], 20)} · batch {bs} · {dev}"
    head = f"{plot.short(first['model'], 48)}\n{setting}"
    plot.top_legend(fig, ax.get_legend_handles_labels()[0], head, ncol=min(len(repeats), 4))
    return plot.save(fig, stem)


def _idle_line(ax, idle_power_w: float) -> None:
    ax.axhline(idle_power_w, color="#444444", ls=":", lw=0.8)
    ax.text(
        0.99,
        idle_power_w,
        f"idle {idle_power_w:.0f} W",
        transform=ax.get_yaxis_transform(),
        ha="right",
        va="bottom",
        fontsize=6,
        color="#444444",
    )


def choose_trace_config(trace: pd.DataFrame | None, want: dict) -> dict:
    """The configuration figure (5) shows: `want` completed from the first matching trace."""
    chosen = {k: want.get(k) for k in ("device_label", "model", "method", "batch_size")}
    if trace is None or trace.empty:
        return chosen
    t = placed(trace)
    for k, v in chosen.items():
        if v is not None:
            t = t[matches(t["batch_size_requested" if k == "batch_size" else k], v)]
    if t.empty:
        return chosen
    first = t[TRACE_KEY].drop_duplicates().sort_values(TRACE_KEY).iloc[0]
    return {k: first["batch_size_requested" if k == "batch_size" else k] for k in chosen}


def trace_context(summary: pd.DataFrame, tc: dict) -> tuple[float | None, bool, bool]:
    """The idle power, whether the meter estimates, and whether the device is simulated, for
    the configuration traced."""
    rows = summary
    for k, v in tc.items():
        if v is not None:
            rows = rows[matches(rows["batch_size_requested" if k == "batch_size" else k], v)]
    if rows.empty:
        return None, False, False
    idle = pd.to_numeric(rows["idle_power_w"], errors="coerce").iloc[0]
    sim = rows["is_simulated"].iloc[0] if "is_simulated" in rows else False
    estimated = bool(is_estimated(rows).iloc[0])
    return (float(idle) if pd.notna(idle) else None), estimated, bool(pd.notna(sim) and sim)


@figure("power_trace", needs=("trace",))
def _draw(inputs: Inputs, stem) -> list[Path]:
    return power_trace(
        inputs.trace,
        stem,
        idle_power_w=inputs.idle_power_w,
        estimated=inputs.trace_estimated,
        simulated=inputs.trace_simulated,
        **inputs.trace_config,
    )
