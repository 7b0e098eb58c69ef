"""`joulebench recommend`: which model and configuration for this accuracy and latency budget,
ranked by energy per image, and what it saves against the configuration run today.

Rows count by the score's rules (best_configs.comparable: score.measured_mask), inference only;
an estimated energy is ranked only beside estimated ones (its own section per device), a
simulated GPU's only when asked (`include_simulated`) and then only beside simulated ones,
and a saving is computed only between two energies of the same kind on the same device.

The saving against the current configuration is s = 1 - E / E_cur. Its uncertainty comes from
the two 95% confidence intervals by first-order propagation for a ratio of independent
measurements: with h and h_cur the CI half-widths (upper bound minus mean; the lower bound may
be clipped at 0), the half-width of s is (E / E_cur) * sqrt((h / E)^2 + (h_cur / E_cur)^2).
docs/decisions.md says when that is a fair reading.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from joulebench.analysis.best_configs import (
    DecisionError,
    comparable,
    configuration_text,
    knob_text,
    method_text,
    simulated_text,
)
from joulebench.analysis.score import DEFAULT_INVALID_FLAGS, DEFAULT_MAX_ENERGY_CV
from joulebench.core.host_bound import HOST_BOUND_BELOW
from joulebench.flags import FLAG_HOST_BOUND, FLAG_SIMULATED, has_flag
from joulebench.safe_text import printable, quantity

CLOSEST_SHOWN = 5
CELL_MAX_CHARS = 60  # a table's widest cell; a longer name ends in "…"
SIMULATED_HINT = (
    "; a simulated GPU's energy is the sensor simulator's, ranked only when asked "
    "(--include-simulated) and only beside other simulated rows"
)


@dataclass(frozen=True)
class Current:
    """The configuration run today: MODEL:METHOD:BATCH (batch = the batch size requested)."""

    model: str
    method: str
    batch: int

    @classmethod
    def parse(cls, text: str) -> Current:
        parts = str(text).rsplit(":", 2)
        if len(parts) != 3 or not all(parts):
            raise DecisionError(f"--current must be MODEL:METHOD:BATCH, got {text!r}")
        try:
            batch = int(parts[2])
        except ValueError:
            raise DecisionError(
                f"--current: batch must be a whole number, got {parts[2]!r}"
            ) from None
        if batch < 1:
            raise DecisionError(f"--current: batch must be >= 1, got {batch}")
        return cls(parts[0], parts[1], batch)

    def __str__(self) -> str:
        return f"{self.model}:{self.method}:{self.batch}"


@dataclass(frozen=True)
class Limits:
    """The constraints asked for (None: not asked), checked on the way in."""

    min_top1: float | None = None
    max_latency_ms: float | None = None
    min_throughput_img_s: float | None = None

    def __post_init__(self):
        for name in ("min_top1", "max_latency_ms", "min_throughput_img_s"):
            v = getattr(self, name)
            if v is not None and not math.isfinite(float(v)):
                raise DecisionError(f"{name} must be a finite number, got {v!r}")
        if self.min_top1 is not None and not 0 <= self.min_top1 <= 100:
            raise DecisionError(f"min top-1 is a percentage (0-100), got {self.min_top1}")
        for name in ("max_latency_ms", "min_throughput_img_s"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise DecisionError(f"{name} must be > 0, got {v}")

    def text(self) -> str:
        parts = []
        if self.min_top1 is not None:
            parts.append(f"top-1 >= {self.min_top1:g} %")
        if self.max_latency_ms is not None:
            parts.append(f"latency <= {self.max_latency_ms:g} ms per batch")
        if self.min_throughput_img_s is not None:
            parts.append(f"throughput >= {self.min_throughput_img_s:g} img/s")
        return ", ".join(parts) or "no constraint"

    def misses(self, row) -> list[str]:
        """What one row misses, each with by how much ([] when it meets them all)."""
        out = []
        top1, lat, thr = row["top1"], row["latency_ms"], row["throughput_img_s"]
        if self.min_top1 is not None:
            if not np.isfinite(top1):
                out.append("top-1 unknown")
            elif top1 < self.min_top1:
                out.append(f"top-1 {top1:.1f} % ({self.min_top1 - top1:.1f} points short)")
        if self.max_latency_ms is not None:
            if not np.isfinite(lat):
                out.append("latency unknown")
            elif lat > self.max_latency_ms:
                over = lat - self.max_latency_ms
                out.append(f"latency {lat:.3g} ms ({over:.3g} ms over)")
        if self.min_throughput_img_s is not None:
            if not np.isfinite(thr):
                out.append("throughput unknown")
            elif thr < self.min_throughput_img_s:
                short = self.min_throughput_img_s - thr
                out.append(f"throughput {thr:.3g} img/s ({short:.3g} short)")
        return out

    def _asked(self) -> list[tuple[float, str, bool]]:
        """(limit, column, is it a maximum) of each constraint asked, in misses' order."""
        pairs = (
            (self.min_top1, "top1", False),
            (self.max_latency_ms, "latency_ms", True),
            (self.min_throughput_img_s, "throughput_img_s", False),
        )
        return [(limit, column, is_max) for limit, column, is_max in pairs if limit is not None]

    def meets(self, df: pd.DataFrame) -> np.ndarray:
        """Rows meeting every constraint (those misses() finds nothing in), all at once."""
        ok = np.ones(len(df), bool)
        for limit, column, is_max in self._asked():
            x = df[column].to_numpy(float)
            ok &= np.isfinite(x) & ((x <= limit) if is_max else (x >= limit))
        return ok

    def shortfalls(self, df: pd.DataFrame) -> np.ndarray:
        """Each row's relative distance to meeting every constraint: the sum of each
        relative miss (inf where a value asked about is unknown)."""
        total = np.zeros(len(df))
        for limit, column, is_max in self._asked():
            x = df[column].to_numpy(float)
            with np.errstate(divide="ignore", invalid="ignore"):
                relative = x / limit - 1.0 if is_max else limit / x - 1.0
            known = np.isfinite(x) & (x > 0)
            total = np.where(known, total + np.maximum(0.0, relative), np.inf)
        return total


@dataclass
class Recommendation:
    """The ranked configurations (one section per device, simulated or not and kind of
    meter) and notes."""

    limits: Limits
    ranked: pd.DataFrame
    current: Current | None = None
    current_rows: pd.DataFrame | None = None
    left_out: dict[str, int] = field(default_factory=dict)
    energy: str = "total"
    all_configs: bool = False
    predicted: pd.DataFrame | None = None  # predicted contenders (predicted_contenders)


def _close(name: str, choices: Sequence[str]) -> str:
    near = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    return f"; closest: {printable(', '.join(near))}" if near else ""


def _check_current(df: pd.DataFrame, current: Current, device: str | None) -> pd.DataFrame:
    """The current configuration's rows (one per device), or a DecisionError saying what
    the summary has instead."""
    models = sorted(df["model"].dropna().unique())
    if current.model not in models:
        raise DecisionError(
            f"--current: unknown model {current.model!r}{_close(current.model, models)}"
        )
    mine = df[df["model"] == current.model]
    configs = sorted(
        {
            f"{current.model}:{m}:{b}"
            for m, b in zip(mine["method"], mine["batch_size_requested"], strict=True)
        }
    )
    hit = mine[(mine["method"] == current.method) & (mine["batch_size_requested"] == current.batch)]
    if device is not None:
        hit = hit[hit["device_label"] == device]
    if hit.empty:
        where = f" on device {printable(device)}" if device else ""
        raise DecisionError(
            f"--current: {printable(current)} was not run{where}; this model was run as: "
            + printable(", ".join(configs))
        )
    return hit


def recommend(
    summary: pd.DataFrame,
    *,
    min_top1: float | None = None,
    max_latency_ms: float | None = None,
    min_throughput_img_s: float | None = None,
    device: str | None = None,
    current: str | Current | None = None,
    energy: str = "total",
    invalid_flags: Sequence[str] = DEFAULT_INVALID_FLAGS,
    max_energy_cv: float | None = DEFAULT_MAX_ENERGY_CV,
    all_configs: bool = False,
    include_simulated: bool = False,
    predicted: pd.DataFrame | None = None,
) -> Recommendation:
    """Rank the comparable inference configurations meeting the limits by energy per image;
    with `include_simulated` a simulated GPU's too, in a section of their own. `predicted`
    (tables.PREDICTED): the predicted configurations that might spend less than the best
    measured one are named apart, as predictions, never ranked (predicted_contenders).

    Raises DecisionError for an unknown device or current configuration, and for limits no
    configuration meets (naming the closest configurations and what each misses by how much).
    """
    limits = Limits(min_top1, max_latency_ms, min_throughput_img_s)
    df = comparable(
        summary,
        energy=energy,
        invalid_flags=invalid_flags,
        max_energy_cv=max_energy_cv,
        include_simulated=include_simulated,
    )
    df = df[(df["phase"].fillna("inference") == "inference") & df["model"].notna()]
    devices = sorted(df["device_label"].dropna().unique())
    if device is not None and device not in devices:
        raise DecisionError(
            f"unknown device {device!r}; devices in the summary: "
            + (printable(", ".join(devices)) or "none")
        )
    if device is not None:
        df = df[df["device_label"] == device]
    if isinstance(current, str):
        current = Current.parse(current)
    current_rows = _check_current(df, current, device) if current else None

    left_out = df.loc[~df["valid"], "why_not"].value_counts().to_dict()
    ok = df[df["valid"]]
    if ok.empty:
        reasons = ", ".join(f"{why} ({n})" for why, n in left_out.items()) or "no rows"
        hint = SIMULATED_HINT if f"flagged {FLAG_SIMULATED}" in left_out else ""
        raise DecisionError(f"no comparable configuration in the summary: {reasons}{hint}")
    meet = ok[limits.meets(ok)]
    if meet.empty:
        raise DecisionError(_impossible(limits, ok))
    ranked = meet.sort_values(["device_label", "simulated", "estimate", "energy_j", "model"])
    if not all_configs:
        ranked = ranked.drop_duplicates(["device_label", "simulated", "estimate", "model"])
    ranked = _with_savings(ranked, current_rows)
    contenders = (
        predicted_contenders(predicted, summary, ranked, limits) if energy == "total" else None
    )
    return Recommendation(
        limits, ranked, current, current_rows, left_out, energy, all_configs, contenders
    )


def predicted_contenders(
    predicted: pd.DataFrame | None, summary: pd.DataFrame, ranked: pd.DataFrame, limits: Limits
) -> pd.DataFrame | None:
    """The predicted inference configurations (not measured) meeting the limits whose 90 %
    interval reaches below the least measured energy of their device and kind of meter: a
    measurement could change the answer. Their top-1 is the summary's (catalog and accuracy
    rows hold every model); their latency comes from the predicted throughput."""
    if predicted is None or predicted.empty:
        return None
    rows = predicted[(predicted["phase"] == "inference") & predicted["energy_per_image_j"].notna()]
    top1 = summary.dropna(subset=["top1"]).drop_duplicates("model").set_index("model")["top1"]
    rows = rows.assign(
        top1=rows["model"].map(top1).astype(float),
        latency_ms=1000.0 * rows["batch_size_requested"] / rows["throughput_img_s"],
        estimate=rows["energy_is_estimate"].fillna(False).astype(bool),
    )
    rows = rows[limits.meets(rows)]
    best = ranked[~ranked["simulated"]].groupby(["device_label", "estimate"])["energy_j"].min()
    reach = rows.set_index(["device_label", "estimate"]).index.map(best.to_dict())
    rows = rows[rows["energy_per_image_j_pi_low"].to_numpy(float) < reach.to_numpy(float)]
    return rows.sort_values(["device_label", "estimate", "energy_per_image_j", "model"])


def _impossible(limits: Limits, ok: pd.DataFrame) -> str:
    dist = pd.Series(limits.shortfalls(ok), index=ok.index).sort_values(kind="stable")
    lines = [f"no configuration meets {limits.text()}; closest:"]
    for i in dist.index[:CLOSEST_SHOWN]:
        r = ok.loc[i]
        where = (
            f"{r['model']} {method_text(r)} batch {r['batch_size_requested']} "
            f"on {r['device_label']}{simulated_text(r)}"
        )
        lines.append(f"  {printable(where)}: " + "; ".join(limits.misses(r)))
    return "\n".join(lines)


def saving(e_j, h_j, e_cur_j, h_cur_j) -> tuple[float, float]:
    """(1 - E / E_cur, its 95% half-width by first-order propagation of both CIs)."""
    s, half = savings(*(np.float64(v) for v in (e_j, h_j, e_cur_j, h_cur_j)))
    return float(s), float(half)


def _with_savings(ranked: pd.DataFrame, current_rows: pd.DataFrame | None) -> pd.DataFrame:
    """The ranking with each row's saving against the current configuration on its device
    (the last current row of a device counts), or a note saying why there is none."""
    ranked = ranked.copy()
    ranked["saving"] = np.nan
    ranked["saving_half"] = np.nan
    ranked["saving_note"] = ""
    if current_rows is None:
        return ranked
    cur = current_rows.assign(_row=current_rows.index)
    cur = cur.drop_duplicates("device_label", keep="last").set_index("device_label")
    cur = cur.reindex(ranked["device_label"])
    found = cur["_row"].notna().to_numpy()
    valid = found & cur["valid"].fillna(False).to_numpy(bool)
    same_kind = cur["estimate"].fillna(False).to_numpy(bool) == ranked["estimate"].to_numpy(bool)
    same_sim = cur["simulated"].fillna(False).to_numpy(bool) == ranked["simulated"].to_numpy(bool)
    itself = valid & same_kind & same_sim & (cur["_row"].to_numpy() == ranked.index.to_numpy())
    compared = valid & same_kind & same_sim & ~itself
    notes = np.full(len(ranked), "", dtype=object)
    notes[~found] = "current not run on this device"
    notes[found & ~valid] = [
        f"current not comparable ({w})" for w in cur["why_not"][found & ~valid]
    ]
    notes[valid & ~same_kind] = "one energy estimated, one measured: not compared"
    notes[valid & same_kind & ~same_sim] = "one energy simulated, one measured: not compared"
    notes[itself] = "current"
    ranked["saving_note"] = notes
    e, h = ranked["energy_j"].to_numpy(float), ranked["ci_half_j"].to_numpy(float)
    s, half = savings(e, h, cur["energy_j"].to_numpy(float), cur["ci_half_j"].to_numpy(float))
    ranked["saving"] = np.where(itself, 0.0, np.where(compared, s, np.nan))
    ranked["saving_half"] = np.where(itself, 0.0, np.where(compared, half, np.nan))
    return ranked


def savings(e_j, h_j, e_cur_j, h_cur_j) -> tuple[np.ndarray, np.ndarray]:
    """saving() of arrays, element by element (NaN where an energy is missing)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = e_j / e_cur_j
        half = ratio * np.sqrt((h_j / e_j) ** 2 + (h_cur_j / e_cur_j) ** 2)
    return 1.0 - ratio, half


# --- text -------------------------------------------------------------------------------------


def _mj(j: float) -> str:
    return "–" if not np.isfinite(j) else f"{j * 1e3:.3g}"


def _cell_text(text) -> str:
    """A cell as printed: printable, and cut to CELL_MAX_CHARS with an ellipsis (one
    5,000-character name must not pad every line of the table to its width)."""
    text = printable(text)
    return text if len(text) <= CELL_MAX_CHARS else text[: CELL_MAX_CHARS - 1] + "…"


def _table(columns: dict[str, list[str]], numeric: set[str]) -> list[str]:
    """Aligned rows; every cell made printable and cut to CELL_MAX_CHARS first (`_cell_text`:
    a name may hold escape sequences, or be thousands of characters long)."""
    columns = {printable(k): [_cell_text(t) for t in v] for k, v in columns.items()}
    numeric = {printable(k) for k in numeric}
    widths = {k: max(len(k), *map(len, v)) for k, v in columns.items()}

    def cell(k, t):
        return t.rjust(widths[k]) if k in numeric else t.ljust(widths[k])

    n = len(next(iter(columns.values())))
    lines = ["  ".join(cell(k, k) for k in columns)]
    lines += ["  ".join(cell(k, v[i]) for k, v in columns.items()) for i in range(n)]
    return [line.rstrip() for line in lines]


HOST_BOUND_NOTE = (
    f"  * host-bound: the GPU was busy less than {HOST_BOUND_BELOW:.0%} of each step, waiting "
    "on the host's kernel launches (cuda_graphs: true or a larger batch takes that away)"
)


def _saving_text(r) -> str:
    if np.isfinite(r["saving"]):
        if r["saving_note"] == "current":
            return "(current)"
        return f"{r['saving'] * 100:+.0f} % ±{r['saving_half'] * 100:.0f}"
    return r["saving_note"] or "–"


def _contender_lines(predicted: pd.DataFrame | None, device, est, top: int) -> list[str]:
    """The predicted configurations that might beat the section's first, said as such."""
    if predicted is None:
        return []
    mine = predicted[(predicted["device_label"] == device) & (predicted["estimate"] == est)]
    if mine.empty:
        return []
    lines = [
        f"  not measured, PREDICTED (docs/predictions.md): {quantity(len(mine), 'configuration')} "
        "might spend less than the first above (their interval reaches below it); measure "
        "before choosing:"
    ]
    for r in mine.head(top).itertuples():
        lines.append(
            printable(
                f"    {r.model} {r.method} batch {r.batch_size_requested}: predicted "
                f"{_mj(r.energy_per_image_j)} mJ/image ({r.pi_level:.0%} interval "
                f"{_mj(r.energy_per_image_j_pi_low)}-{_mj(r.energy_per_image_j_pi_high)})"
            )
        )
    if len(mine) > top:
        lines.append(f"    ... and {len(mine) - top} more")
    return lines


def format_recommendation(rec: Recommendation, top: int = 10) -> str:
    """The ranked table(s) as plain text, a section per device, simulated or not and kind
    of meter."""
    what = (
        "every configuration" if rec.all_configs else "each model at its least-energy configuration"
    )
    lines = [
        f"Meeting {rec.limits.text()}: {what}, ranked by energy per image ({rec.energy}), "
        "least first. Latency is per batch (p95 where measured, else mean)."
    ]
    sections = rec.ranked.groupby(["device_label", "simulated", "estimate"], sort=True)
    for (device, sim, est), section in sections:
        meters = ", ".join(sorted(set(section["meter"].dropna().astype(str))))
        kind = f"energy ESTIMATED ({meters})" if est else f"measured ({meters})"
        if sim:  # ranked only when asked, never beside a measured row
            kind = f"SIMULATED GPU ({meters}: the sensor simulator's energy, not a measurement)"
        lines += ["", printable(f"device {device}, {kind}:")]
        shown = section.head(top)
        records = shown.to_dict("records")
        knobs = [knob_text(r) for r in records]
        host = [has_flag(r.get("flags"), FLAG_HOST_BOUND) for r in records]
        names = [str(r["model"]) + (" *" if h else "") for r, h in zip(records, host, strict=True)]
        cols = {
            "#": [str(k + 1) for k in range(len(shown))],
            "model": names,
            "method": shown["method"].astype(str).tolist(),
        }
        if any(knobs):  # the power limit and clock, where a method sets them
            cols["power limit, SM clock"] = [k or "–" for k in knobs]
        cols |= {
            "batch": shown["batch_size_requested"].astype(str).tolist(),
            "top-1 %": [("–" if not np.isfinite(v) else f"{v:.1f}") for v in shown["top1"]],
            "mJ/image": [_mj(e) for e in shown["energy_j"]],
            "±95% CI": [_mj(h) for h in shown["ci_half_j"]],
            "ms/batch": [
                f"{v:.3g} {k}" if np.isfinite(v) else "–"
                for v, k in zip(shown["latency_ms"], shown["latency_kind"], strict=True)
            ],
            "img/s": [f"{v:.3g}" if np.isfinite(v) else "–" for v in shown["throughput_img_s"]],
        }
        if rec.current is not None:
            cols[f"saving vs {rec.current}"] = [_saving_text(r) for _, r in shown.iterrows()]
        numeric = {"#", "batch", "top-1 %", "mJ/image", "±95% CI", "img/s"}
        lines += ["  " + line for line in _table(cols, numeric)]
        if len(section) > top:
            lines.append(f"  ... and {len(section) - top} more (--top N)")
        if any(knobs):
            first = records[0]
            lines.append(f"  least energy: {first['model']} {configuration_text(first)}")
        if any(host):
            lines.append(HOST_BOUND_NOTE)
        if not sim:
            lines += _contender_lines(rec.predicted, device, est, top)
    if rec.current is not None:
        for _, cur in rec.current_rows.iterrows():
            note = "" if cur["valid"] else printable(f", not comparable: {cur['why_not']}")
            where = printable(f"{rec.current} on {cur['device_label']}")
            lines.append(
                f"\ncurrent {where}: {_mj(cur['energy_j'])} "
                f"±{_mj(cur['ci_half_j'])} mJ/image{note}. Saving = 1 - E / E_current; its "
                "± is the 95% CI of both energies propagated (docs/decisions.md)."
            )
    if rec.left_out:
        why = printable(", ".join(f"{k} ({v})" for k, v in sorted(rec.left_out.items())))
        lines.append(f"\nleft out by the score's rules: {why} (docs/scoring.md)")
    return printable("\n".join(lines), newlines=True)  # what a flag or reason quotes, too
