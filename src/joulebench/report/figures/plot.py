"""What every figure draws with: the style, a figure of a paper column's width, the atomic
PDF + PNG writer, the "No data" figure, energy units, plain-number log ticks, labels and
legends. Figure modules call these as `plot.<name>` (tests watch `plot.save`)."""

from __future__ import annotations

import functools
import math
import os
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib import patheffects
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from joulebench.report.figures.rows import is_true
from joulebench.report.palettes import OKABE_ITO
from joulebench.table_io import atomic_write

COLUMN_WIDTH_IN = 3.5
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
STYLE = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 6.5,
    "legend.frameon": False,
    "axes.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.0,
    "lines.markersize": 3.5,
    "grid.linewidth": 0.4,
    "grid.alpha": 0.35,
    "pdf.fonttype": 42,  # embed TrueType: text stays text in the PDF
    "savefig.dpi": 300,
    # Labels are text: a model, method or device named "$x^$" must print as written, never
    # go through mathtext (which raises on it). Log axes get plain-number ticks below.
    "text.parse_math": False,
}
# Energies are shown in the unit in which the typical (median) value is at least 1.
ENERGY_UNITS = (("J", 1.0), ("mJ", 1e3), ("µJ", 1e6))
LABEL_CHARS = 28  # user strings (models, methods, devices, families) longer than this are cut
NO_DATA_CHARS = 66  # a no-data reason's line: inside a column-wide figure at 7 pt
EDGE = "#333333"  # a thin edge around filled points: a pale colour (grade D) shows on white
TITLE_PT = 7  # a legend's title (what the figure shows)
LINE_SPACING = 1.45  # a legend line's height, in font sizes (text, padding, marker)
LEGEND_ALLOWANCE_IN = 0.75  # a legend up to this tall fits the figure's own height


def styled(func):
    """Draw and save under STYLE, without touching the caller's matplotlib settings."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(STYLE):
            return func(*args, **kwargs)

    return wrapper


def new_figure(height_in: float, width_in: float = COLUMN_WIDTH_IN, **subplots):
    """A figure (no pyplot state) and its axes: one, or the grid `subplots` asks for."""
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(**subplots) if subplots else fig.add_subplot()
    return fig, axes


def save(fig: Figure, stem) -> list[Path]:
    """Write <stem>.pdf and <stem>.png, each to a temp file in the folder, then rename."""
    paths = []
    for fmt in ("pdf", "png"):
        path = Path(f"{os.fspath(stem)}.{fmt}")  # stems may contain dots (model names)
        meta = {"CreationDate": None} if fmt == "pdf" else {"Software": "joulebench"}
        atomic_write(path, lambda tmp, f=fmt, m=meta: fig.savefig(tmp, format=f, metadata=m))
        paths.append(path)
    return paths


class NotMade(list):
    """The files of a figure that was not made (they say why instead), and why: render_all
    lists it so in the figures' manifest (report.figure_manifest)."""

    def __init__(self, paths, why: str):
        super().__init__(paths)
        self.why = why


@styled
def no_data(stem, title: str, reason: str, lead: str = "No data") -> NotMade:
    """A figure that says there is nothing to draw and why; `lead` "Not drawn" where there is
    data but drawing it would show an assumption as a finding."""
    fig, ax = new_figure(1.6)
    ax.set_axis_off()
    ax.text(0.5, 0.62, title, ha="center", va="center", fontsize=8, weight="bold")
    said = textwrap.fill(f"{lead}: {reason}", NO_DATA_CHARS)  # inside the figure's edges
    ax.text(0.5, 0.38, said, ha="center", va="center", fontsize=7)
    return NotMade(save(fig, stem), f"{lead}: {reason}")


def short(text, n: int = LABEL_CHARS) -> str:
    """A user string cut to `n` characters with an ellipsis: a 10,000-character family name
    must not push the legend off the figure (the full name is in the data and on the page)."""
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def two_lines(name, n: int = 30) -> str:
    """A model name for a list: whole up to `n` characters, else its architecture and its
    pretrained tag on two lines (each cut to `n`), so a long name is read, not cut off."""
    name = str(name)
    head, dot, tail = name.partition(".")
    if len(name) <= n or not dot:
        return short(name, n)
    return f"{short(head, n)}\n{short(dot + tail, n)}"


def energy_unit(values) -> tuple[str, float]:
    """(unit, factor from joules) in which the median positive energy is at least 1."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return ENERGY_UNITS[0]
    middle = float(np.median(v))
    for unit, scale in ENERGY_UNITS:
        if middle * scale >= 1.0:
            return unit, scale
    return ENERGY_UNITS[-1]


def plain_number(value: float) -> str:
    """A tick value as people write it: 0.002, 0.5, 20, 1,000 (never 2 x 10^-3)."""
    if not np.isfinite(value):
        return ""
    if value == 0:
        return "0"
    k = math.floor(math.log10(abs(value)))
    for digits in (1, 2, 3):
        decimals = max(0, digits - 1 - k)
        if abs(round(value, decimals) - value) <= 1e-9 * abs(value):
            break
    return f"{value:,.{decimals}f}"


class LogTicks(LogLocator):
    """Decades on wide axes; 1-2-5 or finer steps when an axis spans only a decade or two, so
    a log axis always has a few labelled ticks."""

    def tick_values(self, vmin, vmax):
        lo, hi = sorted((vmin, vmax))
        span = math.log10(hi / lo) if lo > 0 and np.isfinite(hi / lo) else 3.0
        if span > 2.2:
            subs = (1.0,)
        elif span > 0.9:
            subs = (1.0, 2.0, 5.0)
        elif span > 0.35:
            subs = (1.0, 2.0, 3.0, 5.0, 7.0)
        else:
            subs = tuple(np.arange(1.0, 10.0))
        self.set_params(subs=subs)
        return super().tick_values(vmin, vmax)


def plain_log(*axes) -> None:
    """Log-scaled axes labelled with plain numbers at major ticks only."""
    for axis in axes:
        axis.set_major_locator(LogTicks(base=10.0))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: plain_number(v)))
        axis.set_minor_formatter(NullFormatter())


def group_title(row) -> str:
    """A comparison group for a figure: device · method · batch, user strings cut short; a
    simulated GPU's device says so."""
    est = " (estimated)" if is_true(row.get("energy_is_estimate")) else ""
    dev, method = short(row["device_label"], 20), short(row["method"], 20)
    dev += " (simulated)" if is_true(row.get("is_simulated")) else ""
    return f"{dev} · {method} · batch {row['batch_size_requested']}{est}"


# figures.secondary_unit: a second energy axis in the units people use (analysis.carbon)
SECONDARY_UNITS = {
    "wh_per_1k_images": ("energy_per_1k_images_wh", "Wh per 1,000 images"),
    "gco2e_per_1k_images": ("co2e_per_1k_images_g", "gCO2e per 1,000 images (estimate)"),
}


def secondary_axis(ax, shown: pd.DataFrame, scale: float, unit_name: str | None) -> str:
    """A top axis in `unit_name` (SECONDARY_UNITS) over an energy x axis drawn at `scale`
    (J x scale); returns why there is none ("" when drawn or not asked for)."""
    if not unit_name:
        return ""
    column, label = SECONDARY_UNITS[unit_name]
    values = pd.to_numeric(shown.get(column), errors="coerce") if column in shown else None
    e = pd.to_numeric(shown["energy_per_image_j"], errors="coerce")
    ratio = (values / e).replace([np.inf, -np.inf], np.nan).dropna() if values is not None else []
    if not len(ratio):
        return "no CO2e axis: set carbon.grid_gco2e_per_kwh"
    per_j = float(ratio.median())  # a constant of the config (carbon.py): the same on every row
    top = ax.secondary_xaxis(
        "top", functions=(lambda x: x / scale * per_j, lambda y: y / per_j * scale)
    )
    top.set_xlabel(label, fontsize=STYLE["axes.labelsize"])
    plain_log(top.xaxis)  # tick labels as plain text (no mathtext), as on every axis
    return ""


def energy_label(estimated: pd.Series, base: str = "Energy per image", unit: str = "J") -> str:
    """'Energy per image (J)', '(J, estimated)', or '(J, partly estimated: open markers)'."""
    if len(estimated) and estimated.all():
        return f"{base} ({unit}, estimated)"
    if estimated.any():
        return f"{base} ({unit}, partly estimated: open markers)"
    return f"{base} ({unit})"


def legend_columns(fig: Figure, handles, ncol: int) -> int:
    """At most `ncol` columns, as many as fit the figure's width. Entries fill the columns
    as matplotlib fills them (in order, split into `n` near-equal runs); a column takes
    about 0.55 em per character of its longest label, plus the marker and the spacing, so
    short labels (grades A-G) share a line and one long label does not make every column
    as wide as itself."""
    if not handles:
        return 1
    em_pt = float(matplotlib.rcParams["legend.fontsize"])
    lengths = [len(h.get_label()) for h in handles]
    width_pt = fig.get_figwidth() * 72 - 12
    for n in range(min(ncol, len(handles)), 1, -1):
        columns = np.array_split(np.array(lengths), n)
        if sum(em_pt * (0.55 * c.max() + 3.5) for c in columns) <= width_pt:
            return n
    return 1


def wrapped_title(fig: Figure, title: str) -> str:
    """A legend title's lines wrapped to the figure's width (at TITLE_PT), never cut by its
    edge."""
    chars = max(20, int((fig.get_figwidth() * 72 - 12) / (0.55 * TITLE_PT)))
    return "\n".join(textwrap.fill(line, chars) for line in title.splitlines())


def top_legend(fig: Figure, handles, title: str, ncol: int = 3) -> None:
    """The legend above the axes, titled with what the figure shows: never over the data.
    Its title is wrapped to the figure's width; a legend taller than LEGEND_ALLOWANCE_IN
    makes the figure taller by the difference, so the axes keep their height however many
    entries and header lines a study gives it."""
    title = wrapped_title(fig, title)
    columns = legend_columns(fig, handles, ncol)
    fig.legend(
        handles=handles,
        loc="outside upper left",
        ncol=columns,
        title=title,
        title_fontsize=TITLE_PT,
        alignment="left",
        handletextpad=0.3,
        columnspacing=1.0,
    )
    rows = math.ceil(len(handles) / columns) if handles else 0
    em_pt = float(matplotlib.rcParams["legend.fontsize"])
    legend_in = (len(title.splitlines()) * TITLE_PT + rows * em_pt) * LINE_SPACING / 72
    fig.set_figheight(fig.get_figheight() + max(0.0, legend_in - LEGEND_ALLOWANCE_IN))


def models_text(n: int) -> str:
    """'1 model', '3 models'."""
    return f"{n} model{'' if n == 1 else 's'}"


def series_colors(labels: Sequence) -> dict:
    """One Okabe–Ito colour per series label, in the order given (cycling past the end)."""
    return {lab: OKABE_ITO[i % len(OKABE_ITO)] for i, lab in enumerate(labels)}


def scatter(ax, x, y, est, **kw):
    """Filled markers for measured points, open markers for estimated ones (mixed figures)."""
    est = np.asarray(est, bool)
    color = kw.pop("color")
    if (~est).any():
        ax.scatter(x[~est], y[~est], color=color, **kw)
    if est.any():
        mixed = (~est).any()
        face = "none" if mixed else color
        ax.scatter(x[est], y[est], facecolors=face, edgecolors=color, **kw)


def dot(color, label: str, marker: str = "o", hollow: bool = False, edge=None) -> Line2D:
    """A legend entry: one marker (`edge`: its outline, where the points have one)."""
    face = "none" if hollow else color
    mew = 0.5 if edge else None
    return Line2D(
        [], [], ls="", marker=marker, ms=4, mfc=face, mec=edge or color, mew=mew, label=label
    )


# --- names beside points, where they fit ------------------------------------------------------

NAME_FONT_PT = 5.5
NAME_ROOM = 0.1  # y margin of an axes whose points are named: a name fits above the top one
HALO = [patheffects.withStroke(linewidth=2.4, foreground="white")]  # lines pass behind a name
# Where a name may sit, tried in order: offset from its point (points), alignment.
NAME_SPOTS = (
    ((4, 2), "left", "bottom"),
    ((-4, 2), "right", "bottom"),
    ((4, -2), "left", "top"),
    ((-4, -2), "right", "top"),
    ((0, 5), "center", "bottom"),
    ((0, -5), "center", "top"),
)


def point_names(models) -> list[str]:
    """What to write beside each point: the architecture (the name before its pretrained tag)
    where that alone tells the models shown apart, else the whole name, cut to LABEL_CHARS."""
    names = [str(m) for m in models]
    arch = [n.split(".", 1)[0] for n in names]
    unique = len(set(arch)) == len(set(names))
    return [short(a if unique else n) for a, n in zip(arch, names, strict=True)]


def _obstacles(fig: Figure, renderer, axes) -> tuple[list, list]:
    """Boxes a name must not cover: every text and legend already drawn; and every marker of
    `axes` (its size around its centre), kept apart so a name may touch its own."""
    from matplotlib.collections import PathCollection
    from matplotlib.legend import Legend
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    boxes = [t.get_window_extent(renderer) for t in fig.findobj(Text) if _shown(t)]
    boxes += [lg.get_window_extent(renderer) for lg in fig.findobj(Legend)]
    markers = []
    for coll in axes.collections:
        if not isinstance(coll, PathCollection) or not len(coll.get_offsets()):
            continue
        sizes = coll.get_sizes() if len(coll.get_sizes()) else [20.0]
        r = renderer.points_to_pixels(np.sqrt(max(sizes)) / 2 + 0.5)
        for x, y in coll.get_offset_transform().transform(coll.get_offsets()):
            markers.append(Bbox([[x - r, y - r], [x + r, y + r]]))
    return boxes, markers


def _gap(box, x: float, y: float) -> float:
    """Distance from a point to a box (0 inside it)."""
    return float(np.hypot(max(box.x0 - x, 0, x - box.x1), max(box.y0 - y, 0, y - box.y1)))


def _nearer_another(box, x: float, y: float, markers) -> bool:
    """Whether a name's box sits about as near another marker as its own point: a reader
    would not know whose it is."""
    own = _gap(box, x, y)
    return any(_gap(box, *m.get_points().mean(axis=0)) < 1.5 * own + 1 for m in markers)


def _shown(text) -> bool:
    return text.get_visible() and bool(text.get_text().strip())


def name_points(fig: Figure, ax, xs, ys, names, *, most: int = 12) -> int:
    """Write `names` beside their points (data coordinates, first ones first), each where it
    covers no text, legend, marker or other name and stays inside the axes; a name that fits
    nowhere is left out (the page and the tables list every model). Call it last: it reads
    the figure's layout as drawn. Returns how many were written."""
    fig.canvas.draw()
    fig.set_layout_engine("none")  # names must not move the axes they were placed in
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    taken, markers = _obstacles(fig, renderer, ax)
    written = 0
    for x, y, name in list(zip(xs, ys, names, strict=True))[:most]:
        px, py = ax.transData.transform((x, y))
        others = [m for m in markers if not m.contains(px, py)]  # its own marker may be touched
        for offset, ha, va in NAME_SPOTS:
            t = ax.annotate(
                name, (x, y), xytext=offset, textcoords="offset points", ha=ha, va=va,
                fontsize=NAME_FONT_PT, color="#333333", annotation_clip=True, path_effects=HALO,
            )  # fmt: skip
            box = t.get_window_extent(renderer).expanded(1.04, 1.1)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0
            inside = inside and box.y1 <= frame.y1 and not _nearer_another(box, px, py, others)
            if inside and not any(box.overlaps(b) for b in [*taken, *others]):
                taken.append(box)
                written += 1
                break
            t.remove()
    return written
