"""The page's "How it was measured": what read the energies and how the protocol measured them,
in sentences built from the study itself, never typed by hand.

Two sources: the protocol section the study ran with (`protocol`, handed to `joulebench
webapp` as a setting; None for a summary read from elsewhere, whose protocol is not known) and
the rows (which meters read them, how many energies are estimates, how many windows and images
each configuration took, how wide the intervals came out, which hit the cap on windows). The
page shows each paragraph as text (`meta.how`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from joulebench.analysis.boards import spread_lines
from joulebench.flags import FLAG_CI_TARGET_NOT_MET, has_flag
from joulebench.tables import energy_is_estimate

# What each kind of meter reads (its name before ":", or the whole name): words, no numbers.
METER_WORDS = {
    "nvml": "NVML's total-energy counter on NVIDIA GPUs, read in windows that open and close "
    "right after a device synchronize",
    "nvml:power-integration": "NVML's sampled power, integrated over each window (the GPU has "
    "no energy counter)",
    "amdsmi": "AMD SMI's energy counter on AMD GPUs",
    "rapl": "the CPU's RAPL energy counters",
    "estimate": "a power model, not an energy counter: the CPU's modelled power (its idle power "
    "plus its rated power times this process's share of CPU time) times each window's time",
}
ESTIMATE_CAVEAT = (
    "Such an energy is modelled power times step time: its uncertainty is the power model's, "
    "far wider than the confidence interval shown, which covers the timing only."
)


def how_measured(table: pd.DataFrame, protocol: Mapping | None) -> list[dict]:
    """The paragraphs, each {"title", "text"}: the meters, the protocol (as configured), and
    what the rows say of it."""
    rows = _measured(table)
    out = [{"title": "Energy per image", "text": _meters(rows)}]
    out.append({"title": "Protocol", "text": _protocol(protocol, rows)})
    said = _as_measured(rows)
    if said:
        out.append({"title": "As measured", "text": said})
    return out


def how_comparable(summary: pd.DataFrame) -> list[dict]:
    """The paragraph on what an interval covers and how a pool's boards were made
    comparable (analysis.boards), from the summary's own rows; none for a summary without
    those columns (from before them)."""
    if "sensor_uncertainty_source" not in summary.columns:
        return []
    rows = _measured(summary)
    text = (
        "Each interval is the 95 % confidence interval of one configuration's windows: how "
        "well its own sensor was read, not whether that sensor reads true."
    )
    lines = spread_lines(summary)
    if lines:
        text += (
            " Boards of one product read the same work differently (their sensors' gain and "
            "offset, their silicon); each board read the same reference levels once, and its "
            "rows are stated as its pool's reference board reads them, the interval widened by "
            "what that may be off: " + "; ".join(lines) + "."
        )
    sources = rows["sensor_uncertainty_source"].dropna().unique().tolist()
    if sources:
        text += (
            " The sensor's own calibration is not in the interval: "
            + "; ".join(sources)
            + ". Against true power (another lab's meter, a datasheet) the wider interval "
            "energy_per_image_abs_ci95_low_j to _high_j holds it."
        )
    return [{"title": "What the intervals cover", "text": text}]


def _measured(table: pd.DataFrame) -> pd.DataFrame:
    """The rows that hold an energy (status ok, above 0)."""
    e = pd.to_numeric(table["energy_per_image_j"], errors="coerce")
    ok = (table["status"] == "ok").fillna(False) & (e > 0).fillna(False)
    return table[ok.to_numpy(bool)]


PLURAL = {"energy": "energies", "configuration": "configurations"}


def _share(n: int, of: int, what: str) -> str:
    """'All 30 energies', 'The one energy', '12 of 30 energies'."""
    if n == of:
        return f"The one {what}" if of == 1 else f"All {of:,} {PLURAL[what]}"
    return f"{n:,} of {of:,} {PLURAL[what]}"


def _meters(rows: pd.DataFrame) -> str:
    """Energy per image, and which meters read how many of the energies."""
    head = (
        "Energy per image is the energy drawn while running batches of images, divided by the "
        "images."
    )
    if rows.empty:
        return f"{head} No configuration of this study holds an energy."
    meters = rows["meter"].astype("string").fillna("unknown")
    said = [head]
    for meter, n in meters.value_counts().items():
        kind = meter if meter in METER_WORDS else meter.split(":", 1)[0]
        words = METER_WORDS.get(kind, "a meter this page does not describe")
        said.append(f"{_share(int(n), len(rows), 'energy')} came from {meter}: {words}.")
    estimated = energy_is_estimate(rows).fillna(False).astype(bool)
    if estimated.any():
        said.append(ESTIMATE_CAVEAT)
    simulated = rows["is_simulated"].astype("boolean").fillna(False).astype(bool)
    if simulated.any():
        said.append(
            f"{_share(int(simulated.sum()), len(rows), 'energy')} came from a simulated GPU "
            "(the sensor simulator's energy, not a measurement; never graded)."
        )
    return " ".join(said)


def _protocol(protocol: Mapping | None, rows: pd.DataFrame) -> str:
    """The protocol's settings in words, as each kind of meter among the rows sized them
    (protocol.METER_SIZED: an estimate's windows are not a sensor's); the preset named."""
    if protocol is None:
        return (
            "This page was built from a summary measured elsewhere, so the protocol's settings "
            "are not known here; what the rows say of it follows."
        )
    from joulebench.core.protocol import DEFAULT_PRESET

    preset = protocol.get("preset") or DEFAULT_PRESET
    changed = sorted(k for k in protocol if k != "preset")
    name = f"preset {preset}" + (f" with {', '.join(changed)} set" if changed else "")
    kinds = _meter_kinds(rows)
    said = [f"Measured with the protocol's {name}, its windows sized to the meter."]
    for kind in kinds:
        lead = f"{KIND_WORDS[kind]}: " if len(kinds) > 1 else ""
        said.append(lead + _settings_said(protocol, kind))
    return " ".join(said)


KIND_WORDS = {
    "sensor": "On a GPU's power sensor (NVML)",
    "counter": "On an energy counter (RAPL, AMD SMI)",
    "estimate": "For an estimated energy (timing only)",
}


def _meter_kinds(rows: pd.DataFrame) -> list[str]:
    """The kinds of meter (protocol.METER_KINDS) the measured rows were read with."""
    meter = rows["meter"].astype("string").fillna("")
    estimate = energy_is_estimate(rows).fillna(False).astype(bool)
    kind = pd.Series("counter", index=rows.index).mask(meter.str.startswith("nvml"), "sensor")
    kind = kind.mask(estimate.to_numpy(bool), "estimate")
    return [k for k in KIND_WORDS if k in set(kind)] or ["sensor"]


def _settings_said(protocol: Mapping, kind: str) -> str:
    from joulebench.core.protocol import ProtocolSettings

    p = ProtocolSettings.from_dict(protocol, kind)
    cap = (
        ""
        if p.min_batches_max_s is None
        else f", the batches stretching it to at most {_s(p.min_batches_max_s)}"
    )
    said = (
        f"Each configuration warms up until its throughput is steady (at least "
        f"{p.warmup_min_iters} steps and {_s(p.warmup_min_s)}, at most {_s(p.warmup_max_s)}), "
        f"then runs in measurement windows of at least {_s(p.min_repeat_s)} and "
        f"{p.min_repeat_batches} batches{cap}, {_repeats(p)}, with random pauses of "
        f"{_s(p.pause_s[0])} to {_s(p.pause_s[1])} between them."
    )
    return said + (" " + _nvml(p) if kind == "sensor" else "")


def _repeats(p) -> str:
    if p.ci_target is None:
        return f"{p.repeats} windows"
    return (
        f"repeated until the 95% confidence interval is within {p.ci_target:.1%} of the mean "
        f"({p.min_repeats} to {p.max_repeats} windows; flag {FLAG_CI_TARGET_NOT_MET} where "
        "the cap came first)"
    )


def _nvml(p) -> str:
    """What the protocol does about NVML's slow sensor."""
    said = f"With NVML, a window spans at least {p.min_window_refreshes} sensor refreshes"
    if p.phase_shifts:
        said += (
            f" and holds {p.phase_shifts} short idle delays that move the work across the "
            "sensor's refresh"
        )
    if p.lead_in:
        said += "; one refresh period of work runs right before each window"
    return said + "."


def _s(seconds: float) -> str:
    return f"{float(seconds):g} s"


def _as_measured(rows: pd.DataFrame) -> str:
    """Windows and images per configuration, interval widths and the cap, from the rows."""
    if rows.empty:
        return ""
    said = []
    windows = pd.to_numeric(rows["repeats"], errors="coerce").dropna()
    if len(windows):
        said.append(f"Windows per configuration: {_spread(windows, _count)}.")
    images = pd.to_numeric(rows["images"], errors="coerce").dropna()
    if len(images):
        said.append(f"Images per configuration: {_spread(images, _count)}.")
    e = pd.to_numeric(rows["energy_per_image_j"], errors="coerce")
    hi = pd.to_numeric(rows["energy_per_image_ci95_high_j"], errors="coerce")
    half = ((hi - e) / e).replace([np.inf, -np.inf], np.nan).dropna()
    if len(half):
        said.append(
            "The 95% confidence interval's half-width, relative to the energy: "
            f"{_spread(100 * half, _percent)}."
        )
    capped = int(sum(has_flag(f, FLAG_CI_TARGET_NOT_MET) for f in rows["flags"].fillna("")))
    if capped:
        said.append(
            f"{_share(capped, len(rows), 'configuration')} reached the cap on windows before "
            f"the interval reached its target ({FLAG_CI_TARGET_NOT_MET})."
        )
    return " ".join(said)


def _spread(values: pd.Series, fmt: Callable[[float], str]) -> str:
    """'3 to 6 (median 4)', or one value where all are equal."""
    lo, mid, hi = (fmt(float(v)) for v in (values.min(), values.median(), values.max()))
    return lo if lo == hi else f"{lo} to {hi} (median {mid})"


def _count(value: float) -> str:
    """A count, or a median between two: 4, 4.5, 1,024."""
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def _percent(value: float) -> str:
    """Two significant digits, never an exponent: 0.61%, 1.5%, 12%, 130%."""
    return f"{value:.0f}%" if abs(value) >= 10 else f"{value:.2g}%"


__all__ = ["ESTIMATE_CAVEAT", "METER_WORDS", "how_measured"]
