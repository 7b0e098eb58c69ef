"""An energy label per model: a small card (SVG and PNG) to share, like an A-G energy label
but with the measurement's uncertainty and provenance.

The card shows model, device, method and batch size, energy per 1,000 images with its 95% CI,
the grade (within the score's comparison group), top-1, the date measured, the joulebench
version and the meter, with "ESTIMATE" where the energy is modelled. One layout (a list of
boxes and texts) is drawn twice: as SVG text, every string escaped, and as PNG through
matplotlib with math parsing off, so labels are always text. The page builds the same card
in the browser (webapp_assets/app.js, labelSvg). docs/decisions.md shows one.
"""

from __future__ import annotations

import html
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from joulebench import __version__
from joulebench.analysis.best_configs import DecisionError, comparable
from joulebench.analysis.score import GRADES, score_summary
from joulebench.report.palettes import GRADE_COLORS
from joulebench.tables import atomic_write

WIDTH, HEIGHT = 380, 236
NAME_CHARS = 44
ESTIMATE_COLOR = "#b45309"
INK, MUTED = "#1d2330", "#5c6675"


@dataclass(frozen=True)
class Card:
    """What one label says."""

    model: str
    device_label: str
    device_name: str
    method: str
    batch_size: int
    energy_per_1k_j: float
    ci95_half_per_1k_j: float
    grade: str | None
    top1: float
    accuracy_source: str
    meter: str
    estimate: bool
    date: str
    version: str = __version__


def pick_row(summary: pd.DataFrame, model: str, *, device=None, method=None, batch_size=None):
    """The configuration a label shows: the one asked for, else the model's least-energy
    comparable inference configuration (score's rules). Flagged ones get no label."""
    df = comparable(summary)
    df = df[df["phase"].fillna("inference") == "inference"]
    if model not in set(df["model"].dropna()):
        import difflib

        near = difflib.get_close_matches(model, sorted(df["model"].dropna().unique()), n=3)
        hint = f"; closest: {', '.join(near)}" if near else ""
        raise DecisionError(f"unknown model {model!r}{hint}")
    rows = df[df["model"] == model]
    for column, value in (("device_label", device), ("method", method)):
        if value is not None:
            if value not in set(rows[column].dropna()):
                have = ", ".join(sorted(rows[column].dropna().astype(str).unique()))
                raise DecisionError(f"{model} has no {column} {value!r}; it has: {have}")
            rows = rows[rows[column] == value]
    if batch_size is not None:
        rows = rows[rows["batch_size_requested"] == int(batch_size)]
        if rows.empty:
            raise DecisionError(f"{model} was not run at batch size {batch_size} there")
    ok = rows[rows["valid"]]
    if ok.empty:
        why = "; ".join(sorted(set(rows["why_not"]) - {""}))
        raise DecisionError(f"{model}: no comparable configuration to label ({why})")
    return ok.loc[ok["energy_j"].idxmin()]


def card_for(summary: pd.DataFrame, model: str, **where) -> Card:
    """The card of one model (see pick_row), graded by the score stage's rules."""
    row = pick_row(summary, model, **where)
    match = score_summary(summary)
    for k in ("phase", "device_label", "method", "model", "batch_size_requested"):
        match = match[(match[k] == row[k]).fillna(False).astype(bool)]
    grade = match["grade"].iloc[0] if len(match) else None

    def text(column: str) -> str:
        value = row.get(column)
        return "" if value is None or pd.isna(value) else str(value)

    start = text("start_time_utc")
    return Card(
        model=str(row["model"]),
        device_label=str(row["device_label"]),
        device_name=text("device_name"),
        method=str(row["method"]),
        batch_size=int(row["batch_size_requested"]),
        energy_per_1k_j=1000 * float(row["energy_j"]),
        ci95_half_per_1k_j=1000 * float(row["ci_half_j"]),
        grade=grade if isinstance(grade, str) and grade else None,
        top1=float(row["top1"]),
        accuracy_source=text("accuracy_source"),
        meter=text("meter"),
        estimate=bool(row["estimate"]),
        date=start[:10] or "date unknown",
    )


def energy_text(j: float) -> str:
    """'243 J' or '1.2 kJ' (with its Wh in brackets for the card's second line)."""
    if not math.isfinite(j):
        return "–"
    return f"{j / 1000:.3g} kJ" if j >= 1000 else f"{j:.3g} J"


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def layout(card: Card) -> list[dict]:
    """The card as boxes and texts in px (origin top left): what both renderers draw."""
    items: list[dict] = [
        {
            "kind": "rect",
            "x": 1,
            "y": 1,
            "w": WIDTH - 2,
            "h": HEIGHT - 2,
            "fill": "#ffffff",
            "stroke": "#aab3c0",
        },
        {
            "kind": "text",
            "x": 14,
            "y": 22,
            "text": "ENERGY LABEL · joulebench",
            "size": 10,
            "color": MUTED,
            "weight": "bold",
        },
        {
            "kind": "text",
            "x": 14,
            "y": 44,
            "text": _cut(card.model, NAME_CHARS),
            "size": 15,
            "color": INK,
            "weight": "bold",
        },
        {
            "kind": "text",
            "x": 14,
            "y": 62,
            "size": 11,
            "color": INK,
            "text": _cut(f"{card.device_label} · {card.method} · batch {card.batch_size}", 56),
        },
    ]
    for i, letter in enumerate(GRADES):  # the A-G scale, the model's grade marked
        y = 74 + i * 17
        mine = letter == card.grade
        items.append(
            {
                "kind": "rect",
                "x": 14,
                "y": y,
                "w": 34 + 10 * i,
                "h": 14,
                "fill": GRADE_COLORS[letter],
                "stroke": INK if mine else "none",
            }
        )
        items.append(
            {
                "kind": "text",
                "x": 18,
                "y": y + 11,
                "text": letter,
                "size": 10,
                "color": "#ffffff" if i >= 3 else INK,
                "weight": "bold",
            }
        )
        if mine:
            items.append(
                {
                    "kind": "text",
                    "x": 54 + 10 * i,
                    "y": y + 11,
                    "text": "◀",
                    "size": 11,
                    "color": INK,
                    "weight": "bold",
                }
            )
    if card.grade is None:
        items.append(
            {
                "kind": "text",
                "x": 14,
                "y": 206,
                "text": "no grade",
                "size": 9,
                "color": MUTED,
                "weight": "normal",
            }
        )
    wh = card.energy_per_1k_j / 3600
    items += [
        {
            "kind": "text",
            "x": 150,
            "y": 90,
            "text": "Energy per 1,000 images",
            "size": 10,
            "color": MUTED,
            "weight": "normal",
        },
        {
            "kind": "text",
            "x": 150,
            "y": 114,
            "size": 18,
            "color": INK,
            "weight": "bold",
            "text": f"{energy_text(card.energy_per_1k_j)} ± {energy_text(card.ci95_half_per_1k_j)}",
        },
        {
            "kind": "text",
            "x": 150,
            "y": 131,
            "size": 10,
            "color": MUTED,
            "weight": "normal",
            "text": f"({wh:.3g} Wh; ± is the 95% CI)",
        },
        {
            "kind": "text",
            "x": 150,
            "y": 154,
            "size": 11,
            "color": INK,
            "weight": "normal",
            "text": _cut(f"Top-1 {card.top1:.1f} % ({card.accuracy_source})", 34),
        },
        {
            "kind": "text",
            "x": 150,
            "y": 176,
            "size": 10,
            "color": ESTIMATE_COLOR if card.estimate else INK,
            "weight": "bold",
            "text": "ESTIMATE (power model)" if card.estimate else "measured (energy counter)",
        },
        {
            "kind": "text",
            "x": 150,
            "y": 192,
            "size": 9,
            "color": MUTED,
            "weight": "normal",
            "text": _cut(f"meter {card.meter}", 38),
        },
        {
            "kind": "text",
            "x": 150,
            "y": 206,
            "size": 9,
            "color": MUTED,
            "weight": "normal",
            "text": _cut(card.device_name or card.device_label, 38),
        },
        {
            "kind": "text",
            "x": 14,
            "y": 226,
            "size": 9,
            "color": MUTED,
            "weight": "normal",
            "text": f"{card.date} · joulebench {card.version} · grade within its "
            "device, method and batch",
        },
    ]
    return items


def label_svg(card: Card) -> str:
    """The card as SVG: every string escaped, drawn as <text> (selectable, never markup)."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Arial, sans-serif">'
    ]
    for it in layout(card):
        if it["kind"] == "rect":
            out.append(
                f'<rect x="{it["x"]}" y="{it["y"]}" width="{it["w"]}" height="{it["h"]}" '
                f'rx="3" fill="{it["fill"]}" stroke="{it["stroke"]}"/>'
            )
        else:
            out.append(
                f'<text x="{it["x"]}" y="{it["y"]}" font-size="{it["size"]}" '
                f'font-weight="{it.get("weight", "normal")}" fill="{it["color"]}">'
                f"{html.escape(it['text'], quote=True)}</text>"
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def label_png(card: Card, path) -> Path:
    """The same layout through matplotlib (math parsing off), 2x for sharp text."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch

    dpi = 200
    with matplotlib.rc_context({"text.parse_math": False, "font.family": "DejaVu Sans"}):
        fig = Figure(figsize=(WIDTH / 100, HEIGHT / 100), dpi=dpi)
        FigureCanvasAgg(fig)
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(0, WIDTH)
        ax.set_ylim(HEIGHT, 0)
        ax.set_axis_off()
        pt = 72 / 100  # px of the layout (100 per inch) to points
        for it in layout(card):
            if it["kind"] == "rect":
                ax.add_patch(
                    FancyBboxPatch(
                        (it["x"], it["y"]),
                        it["w"],
                        it["h"],
                        boxstyle="round,pad=0,rounding_size=3",
                        facecolor=it["fill"],
                        edgecolor="none" if it["stroke"] == "none" else it["stroke"],
                        lw=0.8,
                    )
                )
            else:
                ax.text(
                    it["x"],
                    it["y"],
                    it["text"],
                    fontsize=it["size"] * pt,
                    fontweight=it.get("weight", "normal"),
                    color=it["color"],
                    va="baseline",
                )
        path = Path(path)
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi))
    return path


def run_label(
    summary, model: str, *, device=None, method=None, batch_size=None, output=None
) -> list[Path]:
    """`joulebench label`: <output>.svg and <output>.png (default results/labels/<device>/
    <model>) for one model of a summary (path)."""
    from joulebench.analysis.summary import read_summary

    card = card_for(
        read_summary(summary), model, device=device, method=method, batch_size=batch_size
    )
    stem = Path(output) if output else Path("results/labels") / card.device_label / card.model
    stem = stem.with_suffix("") if stem.suffix in (".svg", ".png") else stem
    svg = stem.parent / f"{stem.name}.svg"
    atomic_write(svg, lambda tmp: Path(tmp).write_text(label_svg(card), encoding="utf-8"))
    png = label_png(card, stem.parent / f"{stem.name}.png")
    print(f"label -> {svg}, {png}", file=sys.stderr)
    return [svg, png]
