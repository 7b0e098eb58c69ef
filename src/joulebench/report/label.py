"""An energy label per model: a small card (SVG and PNG) to share, like an A-G energy label
but with the measurement's uncertainty and provenance.

The card shows model, device, method and batch size, energy per 1,000 images with its 95% CI,
the grade (within the score's comparison group), top-1, the date measured, the joulebench
version and the meter, with "ESTIMATE" where the energy is modelled. Its lines are declared
once (LINES: where, how big, and a template over the card's fields) beside the A-G scale;
`layout` turns them into boxes and texts, drawn twice: as SVG text, every string escaped, and
as PNG through matplotlib with math parsing off, so labels are always text. Every string
from data is made printable first (safe_text: no control or bidi character reaches the card,
so the SVG is valid XML for any name), and the default file names go through
safe_text.file_name (a label never lands outside results/labels). The page builds the same card
in the browser (webapp_assets/data.js, labelItems). docs/decisions.md shows one.
"""

from __future__ import annotations

import html
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from joulebench import __version__
from joulebench.analysis.best_configs import DecisionError, comparable
from joulebench.analysis.score import GRADES, score_summary
from joulebench.report.palettes import GRADE_COLORS, GRADE_INK, INK
from joulebench.safe_text import file_name, printable
from joulebench.table_io import atomic_write

WIDTH, HEIGHT = 380, 236
NAME_CHARS = 44
ESTIMATE_COLOR = "#b45309"
MUTED = "#5c6675"


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


@dataclass(frozen=True)
class Box:
    """A rounded box on the card, in px from the top left."""

    x: int
    y: int
    w: int
    h: int
    fill: str
    stroke: str = "none"


@dataclass(frozen=True)
class Text:
    """A line of text on the card: its baseline's start in px, size in px."""

    x: int
    y: int
    text: str
    size: int
    color: str = INK
    weight: str = "normal"


@dataclass(frozen=True)
class Line:
    """One line of the card: where, how, and what it says (a template over card_fields),
    cut to `chars`; drawn in `estimate_color` when the energy is an estimate."""

    x: int
    y: int
    size: int
    template: str
    color: str = INK
    weight: str = "normal"
    chars: int | None = None
    estimate_color: str | None = None


FOOTER = "{date} · joulebench {version} · grade within its device, method and batch"
LINES = (
    Line(14, 22, 10, "ENERGY LABEL · joulebench", MUTED, "bold"),
    Line(14, 44, 15, "{model}", INK, "bold", chars=NAME_CHARS),
    Line(14, 62, 11, "{device_label} · {method} · batch {batch_size}", chars=56),
    Line(150, 90, 10, "Energy per 1,000 images", MUTED),
    Line(150, 114, 18, "{energy} ± {ci95_half}", INK, "bold"),
    Line(150, 131, 10, "({wh} Wh; ± is the 95% CI)", MUTED),
    Line(150, 154, 11, "Top-1 {top1} % ({accuracy_source})", chars=34),
    Line(150, 176, 10, "{kind}", INK, "bold", estimate_color=ESTIMATE_COLOR),
    Line(150, 192, 9, "meter {meter}", MUTED, chars=38),
    Line(150, 206, 9, "{device_name}", MUTED, chars=38),
    Line(14, 226, 9, FOOTER, MUTED),
)
GRADE_X, GRADE_Y, GRADE_STEP = 14, 74, 17  # the A-G scale: one bar per grade, 10 px longer each


def card_fields(card: Card) -> dict[str, str]:
    """What the lines say, as text: every string from data made printable (no control,
    bidi or other invisible character: safe as XML and as what a reader sees)."""
    return {
        "model": printable(card.model),
        "device_label": printable(card.device_label),
        "method": printable(card.method),
        "batch_size": str(card.batch_size),
        "energy": energy_text(card.energy_per_1k_j),
        "ci95_half": energy_text(card.ci95_half_per_1k_j),
        "wh": f"{card.energy_per_1k_j / 3600:.3g}",
        "top1": f"{card.top1:.1f}",
        "accuracy_source": printable(card.accuracy_source),
        "kind": "ESTIMATE (power model)" if card.estimate else "measured (energy counter)",
        "meter": printable(card.meter),
        "device_name": printable(card.device_name or card.device_label),
        "date": printable(card.date),
        "version": printable(card.version),
    }


def _grade_scale(grade: str | None) -> list[Box | Text]:
    """The A-G bars, the card's grade outlined and pointed at ("no grade" under it if none)."""
    items: list[Box | Text] = []
    for i, letter in enumerate(GRADES):
        y, mine = GRADE_Y + i * GRADE_STEP, letter == grade
        items.append(
            Box(GRADE_X, y, 34 + 10 * i, 14, GRADE_COLORS[letter], INK if mine else "none")
        )
        items.append(Text(GRADE_X + 4, y + 11, letter, 10, GRADE_INK[letter], "bold"))
        if mine:
            items.append(Text(GRADE_X + 40 + 10 * i, y + 11, "◀", 11, INK, "bold"))
    if grade is None:
        items.append(Text(GRADE_X, 206, "no grade", 9, MUTED))
    return items


def layout(card: Card) -> list[Box | Text]:
    """The card as boxes and texts in px (origin top left): what both renderers draw."""
    fields = card_fields(card)
    items: list[Box | Text] = [Box(1, 1, WIDTH - 2, HEIGHT - 2, "#ffffff", "#aab3c0")]
    items += _grade_scale(card.grade)
    for line in LINES:
        text = line.template.format(**fields)
        text = _cut(text, line.chars) if line.chars else text
        color = line.estimate_color if card.estimate and line.estimate_color else line.color
        items.append(Text(line.x, line.y, text, line.size, color, line.weight))
    return items


def label_svg(card: Card) -> str:
    """The card as SVG: every string escaped, drawn as <text> (selectable, never markup)."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Arial, sans-serif">'
    ]
    for it in layout(card):
        if isinstance(it, Box):
            out.append(
                f'<rect x="{it.x}" y="{it.y}" width="{it.w}" height="{it.h}" '
                f'rx="3" fill="{it.fill}" stroke="{it.stroke}"/>'
            )
        else:
            out.append(
                f'<text x="{it.x}" y="{it.y}" font-size="{it.size}" '
                f'font-weight="{it.weight}" fill="{it.color}">'
                f"{html.escape(it.text, quote=True)}</text>"
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
            if isinstance(it, Box):
                ax.add_patch(
                    FancyBboxPatch(
                        (it.x, it.y),
                        it.w,
                        it.h,
                        boxstyle="round,pad=0,rounding_size=3",
                        facecolor=it.fill,
                        edgecolor=it.stroke,
                        lw=0.8,
                    )
                )
            else:
                ax.text(
                    it.x,
                    it.y,
                    it.text,
                    fontsize=it.size * pt,
                    fontweight=it.weight,
                    color=it.color,
                    va="baseline",
                )
        path = Path(path)
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi))
    return path


class LabelError(DecisionError):
    """A label that cannot be written (a folder that cannot be made, no permission): one line."""


LABEL_DIR = Path("results/labels")


def label_stem(card: Card, output=None) -> Path:
    """Where a label goes, without its .svg/.png: `output` (a path stem, or a folder when it
    ends in a separator or is one: the label is written inside it; LabelError for a special
    file such as /dev/null), else results/labels/<device>/<model>, both names through
    safe_text.file_name."""
    default = file_name(card.model)
    if not output:
        return LABEL_DIR / file_name(card.device_label) / default
    text = os.fspath(output)
    if text.endswith(("/", os.sep)) or Path(text).is_dir():
        return Path(text) / default
    stem = Path(text)
    if stem.exists() and not stem.is_file():  # /dev/null, a FIFO: never /dev/null.svg
        raise LabelError(
            f"--output {printable(text)}: not a file path (it is a device or other special "
            "file); give a path stem or a folder"
        )
    return stem.with_suffix("") if stem.suffix in (".svg", ".png") else stem


def run_label(
    summary, model: str, *, device=None, method=None, batch_size=None, output=None
) -> list[Path]:
    """`joulebench label`: <stem>.svg and <stem>.png (label_stem) for one model of a summary
    (path)."""
    from joulebench.analysis.summary import read_summary

    card = card_for(
        read_summary(summary), model, device=device, method=method, batch_size=batch_size
    )
    stem = label_stem(card, output)
    svg, png = stem.parent / f"{stem.name}.svg", stem.parent / f"{stem.name}.png"
    for path in (svg, png):
        if path.exists() and not path.is_file():
            raise LabelError(f"cannot write the label {printable(os.fspath(path))}: not a file")
    try:
        atomic_write(svg, lambda tmp: Path(tmp).write_text(label_svg(card), encoding="utf-8"))
        label_png(card, png)
    except OSError as exc:  # a folder that cannot be made, no permission, a full disk
        raise LabelError(
            f"cannot write the label {printable(os.fspath(svg))} (and .png): {exc.strerror or exc}"
        ) from None
    print(printable(f"label -> {svg}, {png}"), file=sys.stderr)
    return [svg, png]
